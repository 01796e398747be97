"""Webhooks: the Standard Webhooks known answer, target checks, retries, 410, real deliveries."""

from __future__ import annotations

import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from judge.api.protocol import JudgmentCompletedEvent, RejudgeCompletedEvent
from judge.api.webhooks import (
    MAX_ATTEMPTS,
    NO_ANSWER,
    backoff,
    refused_target,
    sign,
    verify,
)
from tests.api.conftest import bearer, request_for


def test_standard_webhooks_known_answer():
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"test": 2432232314}'
    want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    assert sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body) == want
    headers = {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
               "webhook-signature": "v1,bm9wZQ== " + want}
    assert verify(secret, headers, body)
    assert not verify(secret, headers, body + b" ")


@pytest.mark.parametrize(("url", "why"), [
    ("https://127.0.0.1/h", "resolves to 127.0.0.1"),
    ("https://[::1]/h", "resolves to ::1"),
    ("https://10.1.2.3/h", "resolves to 10.1.2.3"),
    ("https://192.168.0.9/h", "resolves to 192.168.0.9"),
    ("https://169.254.169.254/latest/meta-data", "resolves to 169.254.169.254"),
    ("https://metadata.google.internal/", "is loopback or cloud metadata"),
    ("https://localhost:8443/", "is loopback or cloud metadata"),
    ("https://hooks.internal.example/", "resolves to 10.0.0.5"),
    ("ftp://example.com/", "expected http(s)://host/"),
])
def test_private_loopback_and_metadata_targets_are_refused(url, why):
    resolve = {"hooks.internal.example": ["10.0.0.5"]}.get
    assert why in refused_target(url, lambda h: resolve(h) or ["93.184.216.34"])


def test_public_target_is_allowed():
    assert refused_target("https://hooks.example.com/x", lambda h: ["93.184.216.34"]) is None


LOOPBACK = ", which carries 127.0.0.1, a private/loopback/metadata address"


@pytest.mark.parametrize(("host", "why"), [
    # issue 36 item 10: the four forms that passed, by the IPv4 they carry or their range
    ("64:ff9b::7f00:1", "64:ff9b::7f00:1" + LOOPBACK),  # NAT64
    ("::127.0.0.1", "::7f00:1" + LOOPBACK),  # IPv4-compatible
    ("2002:7f00:1::", "2002:7f00:1::" + LOOPBACK),  # 6to4
    ("fec0::1", "fec0::1, in the deprecated or local-use range fec0::/10"),  # site-local
    # the other transition forms
    ("::ffff:10.0.0.1", "::ffff:a00:1, a private/loopback/metadata address"),  # mapped
    ("::ffff:0:a9fe:a9fe", "::ffff:0:a9fe:a9fe, which carries 169.254.169.254, a "
     "private/loopback/metadata address"),  # IPv4-translated (SIIT)
    ("2002:c0a8:1::1", "2002:c0a8:1::1, which carries 192.168.0.1, a private/loopback/"
     "metadata address"),  # 6to4 of a private address
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "2001:0:4136:e378:8000:63bf:80ff:fffe, a "
     "private/loopback/metadata address"),  # Teredo (client 127.0.0.1)
    ("2606:4700::5efe:a00:1", "2606:4700::5efe:a00:1, which carries 10.0.0.1, a private/"
     "loopback/metadata address"),  # ISATAP
    ("64:ff9b:1::5db8:d822", "64:ff9b:1::5db8:d822, in the deprecated or local-use range "
     "64:ff9b:1::/48"),  # local-use NAT64
    ("3ffe::1", "3ffe::1, in the deprecated or local-use range 3ffe::/16"),  # 6bone
])
def test_ipv6_transition_forms_are_decided_by_the_ipv4_they_carry(host, why):
    assert refused_target(f"https://[{host}]/h") == f"url: host {host!r} resolves to {why}"
    # the same when a name resolves to it
    assert refused_target("https://hook.example/h", lambda h: [host]) == \
        f"url: host 'hook.example' resolves to {why}"


@pytest.mark.parametrize("host", ["64:ff9b::5db8:d822", "2002:5db8:d822::1",
                                  "::ffff:93.184.216.34", "2606:4700::1"])
def test_transition_forms_of_public_addresses_are_allowed(host):
    assert refused_target(f"https://[{host}]/h") is None


@pytest.mark.parametrize("host", ["64:ff9b::7f00:1", "::127.0.0.1", "2002:7f00:1::",
                                  "fec0::1"])
def test_live_keys_cannot_target_the_four_forms(client, live_key, host):
    r = client.post("/v1/webhook-endpoints", headers=bearer(live_key),
                    json={"url": f"https://[{host}]/x", "events": ["judgment.completed"]})
    assert r.status_code == 422
    assert r.json()["detail"].startswith(f"url: host {host!r} resolves to ")


def test_backoff_doubles_with_bounded_jitter():
    rng = random.Random(7)
    delays = [backoff(k, 0.5, rng) for k in range(1, 5)]
    for k, d in enumerate(delays, 1):
        assert 0.5 * 2 ** (k - 1) <= d < 0.75 * 2 ** (k - 1)
    rng = random.Random(7)
    assert delays == [0.5 * 2 ** (k - 1) * (1 + rng.uniform(0, 0.5)) for k in range(1, 5)]


class Receiver:
    """A real HTTP receiver on loopback answering scripted statuses, recording requests."""

    def __init__(self, statuses):
        self.statuses, self.got = list(statuses), []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                outer.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                code = outer.statuses.pop(0) if outer.statuses else 200
                self.send_response(code)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def wait_for(fn, n, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = fn()
        if len(got) >= n:
            return got
        time.sleep(0.02)
    return fn()


@pytest.mark.parametrize(("url", "why"), [
    ("http://169.254.169.254/latest/meta-data/", "url: test keys may target loopback only "
     "(host '169.254.169.254' is 169.254.169.254)"),
    ("http://10.0.0.1/x", "url: test keys may target loopback only (host '10.0.0.1' is "
     "10.0.0.1)"),
    ("http://metadata.google.internal/x", "url: host 'metadata.google.internal' is loopback "
     "or cloud metadata"),
    ("https://example.com/x", "url: test keys may target loopback only (host 'example.com' "
     "is 93.184.216.34)")])
def test_test_keys_may_target_loopback_only(client, service, test_key, url, why):
    service.resolve = lambda host: {"example.com": ["93.184.216.34"]}[host]
    r = client.post("/v1/webhook-endpoints", headers=bearer(test_key),
                    json={"url": url, "events": ["judgment.completed"]})
    assert (r.status_code, r.json()["detail"]) == (422, why)
    for ok in ("http://127.0.0.1:9/x", "http://[::1]:9/x", "http://localhost:9/x"):
        r = client.post("/v1/webhook-endpoints", headers=bearer(test_key),
                        json={"url": ok, "events": ["judgment.completed"]})
        assert r.status_code == 201, (ok, r.text)


def test_live_keys_cannot_target_loopback(client, live_key):
    r = client.post("/v1/webhook-endpoints", headers=bearer(live_key),
                    json={"url": "http://127.0.0.1:9/x", "events": ["judgment.completed"]})
    assert r.status_code == 422
    assert r.json()["detail"] == ("url: host '127.0.0.1' resolves to 127.0.0.1, a "
                                  "private/loopback/metadata address")
    r = client.post("/v1/webhook-endpoints", headers=bearer(live_key),
                    json={"url": "https://example.com/x", "events": ["judgment.done"]})
    assert r.status_code == 422
    assert r.json()["detail"] == ("events.0: Input should be 'judgment.completed', "
                                  "'rejudge.completed', 'coefficients.published' or "
                                  "'calibration.disagreement'")


def test_judgment_completed_is_signed_retried_and_recorded(client, service, test_key,
                                                            api_bundles):
    sleeps: list[float] = []
    service.sleep, service.rng, service.retry_base_s = sleeps.append, random.Random(1), 0.25
    rx = Receiver([500, 503, 200])
    try:
        ep = client.post("/v1/webhook-endpoints", headers=bearer(test_key),
                         json={"url": rx.url, "events": ["judgment.completed"]})
        assert ep.status_code == 201
        ep = ep.json()
        assert ep["secret"].startswith("whsec_") and ep["enabled"] is True
        doc = request_for(api_bundles[0])
        j = client.post("/v1/judgments", json=doc, headers=bearer(test_key)).json()
        path = f"/v1/webhook-endpoints/{ep['endpoint_id']}/deliveries"
        got = wait_for(lambda: client.get(path, headers=bearer(test_key)).json()["data"], 3)
    finally:
        rx.close()
    assert [(d["attempt"], d["status"], d["event_type"]) for d in got] == [
        (1, 500, "judgment.completed"), (2, 503, "judgment.completed"),
        (3, 200, "judgment.completed")]
    assert len({d["message_id"] for d in got}) == 1
    rng = random.Random(1)
    assert sleeps == [backoff(1, 0.25, rng), backoff(2, 0.25, rng)]
    headers, body = rx.got[-1]
    assert verify(ep["secret"], headers, body)
    assert headers["webhook-id"] == got[0]["message_id"]
    event = json.loads(body)
    assert (event["type"], event["test"], event["data"]) == ("judgment.completed", False, j)
    JudgmentCompletedEvent.model_validate(event)
    assert doc["task"]["id"] not in body.decode()
    listed = client.get("/v1/webhook-endpoints", headers=bearer(test_key)).json()["data"]
    assert [e["endpoint_id"] for e in listed] == [ep["endpoint_id"]]
    assert "secret" not in listed[0]


def test_410_disables_and_rotation_changes_the_signature(client, service, test_key):
    service.sleep = lambda s: None
    rx = Receiver([410])
    try:
        ep = client.post("/v1/webhook-endpoints", headers=bearer(test_key),
                         json={"url": rx.url, "events": ["rejudge.completed"]}).json()
        eid = ep["endpoint_id"]
        rotated = client.post(f"/v1/webhook-endpoints/{eid}/rotate-secret",
                              headers=bearer(test_key)).json()
        assert rotated["secret"] != ep["secret"]
        sent = client.post(f"/v1/webhook-endpoints/{eid}/test", headers=bearer(test_key))
        assert sent.status_code == 202 and sent.json()["event_type"] == "rejudge.completed"
        path = f"/v1/webhook-endpoints/{eid}/deliveries"
        got = wait_for(lambda: client.get(path, headers=bearer(test_key)).json()["data"], 1)
        time.sleep(0.2)  # a disabled endpoint gets no further attempt
        got = client.get(path, headers=bearer(test_key)).json()["data"]
    finally:
        rx.close()
    assert [(d["attempt"], d["status"]) for d in got] == [(1, 410)]
    headers, body = rx.got[0]
    assert verify(rotated["secret"], headers, body) and not verify(ep["secret"], headers, body)
    sample = json.loads(body)
    assert (sample["type"], sample["test"]) == ("rejudge.completed", True)
    # the test endpoint answered with the exact message it sent (a WebhookEvent)
    assert sent.json()["message"] == sample and sent.json()["message_id"] == got[0]["message_id"]
    assert sample["data"] == {"job_id": "rj_sample", "judge": "rc-judge-v2", "judged": 0,
                              "failed": 0}
    from judge.api.protocol import WebhookEvent

    assert isinstance(WebhookEvent.model_validate(sample).root, RejudgeCompletedEvent)
    RejudgeCompletedEvent.model_validate(sample)  # the shape the schema's webhooks declare
    (listed,) = client.get("/v1/webhook-endpoints", headers=bearer(test_key)).json()["data"]
    assert listed["enabled"] is False
    assert listed["disabled_reason"] == f"410 Gone on message {got[0]['message_id']}"
    assert client.delete(f"/v1/webhook-endpoints/{eid}",
                         headers=bearer(test_key)).status_code == 204
    assert client.get("/v1/webhook-endpoints", headers=bearer(test_key)).json() == {"data": []}
    assert client.delete(f"/v1/webhook-endpoints/{eid}",
                         headers=bearer(test_key)).status_code == 404


def test_unanswered_deliveries_stop_after_max_attempts(service, test_key):
    from judge.api.protocol import WebhookEndpointRequest

    service.sleep = lambda s: None
    caller = service.authenticate(f"Bearer {test_key}")
    ep = service.create_endpoint(caller, WebhookEndpointRequest(
        url="http://127.0.0.1:9/nothing-listens", events=["coefficients.published"]))
    assert service.deliver(caller, ep.endpoint_id, "msg_x", "coefficients.published",
                           b"{}") is None
    got = service.deliveries(caller, ep.endpoint_id)["data"]
    assert [d.attempt for d in got] == list(range(1, MAX_ATTEMPTS + 1))
    # the transport's words ("ConnectError: [Errno 111] Connection refused") stay inside
    assert all(d.status is None and d.error == NO_ANSWER for d in got)
    assert NO_ANSWER == "no HTTP answer from the target (connection failed, timed out or broken)"


def test_a_disagreeing_label_sends_calibration_disagreement(client, service, test_key,
                                                             api_bundles):
    rx = Receiver([])
    try:
        ep = client.post("/v1/webhook-endpoints", headers=bearer(test_key),
                         json={"url": rx.url, "events": ["calibration.disagreement"]}).json()
        j = client.post("/v1/judgments", json=request_for(api_bundles[1]),
                        headers=bearer(test_key)).json()
        label = {"attempt": True, "success": True, "labeled_by": "op"}
        assert client.post(f"/v1/runs/{j['run_id']}/labels", json=label,
                           headers=bearer(test_key)).status_code == 201
        path = f"/v1/webhook-endpoints/{ep['endpoint_id']}/deliveries"
        wait_for(lambda: client.get(path, headers=bearer(test_key)).json()["data"], 1)
    finally:
        rx.close()
    ((_, body),) = rx.got
    event = json.loads(body)
    assert event["type"] == "calibration.disagreement"
    assert (event["data"]["judgment_id"], event["data"]["success_disagrees"]) == (
        j["judgment_id"], True)
