"""Quality-target alerts as a signed webhook event (``acceptance.quality_target_crossed``).

An endpoint subscribes under ``/api/v1``; ``rcjudge acceptance check|report`` (in-process
CLI, on the test-mode database of a real API service) records each crossing once and
delivers it to a real HTTP receiver; the Judge API's own webhook routes never see it.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime

import pytest

from judge.api.outcome_hooks import QualityTargetCrossedEvent, database_mode
from judge.api.webhooks import verify
from judge.outcomes.store import OutcomeStore
from judge.outcomes.validity import all_results, review
from rcjudge.cli import main
from tests.api.conftest import bearer
from tests.api.test_webhooks import Receiver
from tests.integration.test_acceptance_captures import broken_copy

EVENT = "acceptance.quality_target_crossed"


@pytest.fixture(scope="module")
def four(make_bundles, tmp_path_factory):
    """Two healthy bundles and two truncated copies (verdicts accept, accept, reject, reject)."""
    good = make_bundles(2, seed=31, width=96, height=64, fps=10)
    out = tmp_path_factory.mktemp("broken")
    return [*good, *(broken_copy(b, out / b.name) for b in good)]


def avala(key: str) -> dict[str, str]:
    return {"X-Avala-Api-Key": key}


def data(target, value, limit, counts, crossed_at):
    return {"dataset": "tester-test/alerts", "campaign": "campaign.yaml", "target": target,
            "metric": target.split("_", 1)[1], "value": value, "limit": limit, "checked": 4,
            "counts": counts, "crossed_at": crossed_at}


def test_a_crossing_is_one_signed_event_and_recovery_rearms_it(
        client, service, test_key, four, tmp_path, capsys, caplog):
    db = str(service.modes["test"].engine.url)
    assert (database_mode(service.modes["test"].engine),
            database_mode(service.modes["live"].engine)) == ("test", "live")
    other = service.create_key("stranger", "test", ["webhooks:read", "webhooks:write"])[0]
    rx, rx_other = Receiver([]), Receiver([])
    try:
        r = client.post("/api/v1/webhook-endpoints/", headers=avala(test_key),
                        json={"url": rx.url, "events": [EVENT]})
        assert r.status_code == 201, r.text
        ep = r.json()
        assert (ep["events"], ep["enabled"], ep["secret"][:6]) == ([EVENT], True, "whsec_")
        assert client.post("/api/v1/webhook-endpoints/", headers=avala(other), json={
            "url": rx_other.url, "events": [EVENT]}).status_code == 201
        assert client.post("/api/v1/datasets/", headers=avala(test_key), json={
            "owner": "tester-test", "slug": "alerts"}).status_code == 201
        store = OutcomeStore(service.modes["test"].engine)
        for b in four:  # (datasets add would refuse the truncated MCAPs)
            manifest = json.loads((b / "manifest.json").read_text())
            store.add_sequence("tester-test/alerts", manifest["bundle_hash"], str(b))
        campaign = tmp_path / "campaign.yaml"
        campaign.write_text("targets: {min_acceptance_rate: 0.8, max_reject_rate: 0.6, "
                            "max_issue_rate: 0.3}\n")
        capsys.readouterr()
        with caplog.at_level(logging.WARNING, logger="rcjudge.outcomes"):
            assert main(["acceptance", "check", "tester-test/alerts", "--campaign", str(campaign),
                         "--db", db]) == 0
        assert capsys.readouterr().out.splitlines()[-2:] == [
            "ALERT max_issue_rate: 0.5 (limit 0.3)", "ALERT min_acceptance_rate: 0.5 (limit 0.8)"]
        assert [r.getMessage() for r in caplog.records] == [
            "quality target crossed: tester-test/alerts max_issue_rate: issue_rate = 0.5000 "
            "(limit 0.3)",
            "quality target crossed: tester-test/alerts min_acceptance_rate: acceptance_rate = "
            "0.5000 (limit 0.8)"]
        first = list(rx.got)
        assert len(first) == 2  # the CLI waited for the deliveries

        # the same state again: nothing sent, the report still lists both
        assert main(["acceptance", "report", "tester-test/alerts", "--db", db, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert (out["new_alerts"], [a["target"] for a in out["alerts"]]) == (
            [], ["max_issue_rate", "min_acceptance_rate"])
        assert len(rx.got) == 2

        # both rejects reviewed to accept: acceptance recovers (issues are the machine's)
        rejected = sorted(u for u, r in all_results(store, "tester-test/alerts").items()
                          if r["machine_verdict"] == "reject")
        assert len(rejected) == 2
        for u in rejected:
            review(store, "tester-test/alerts", u, "accept", "rev-ana", "re-exported")
        assert main(["acceptance", "report", "tester-test/alerts", "--db", db, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert (out["acceptance_rate"], out["new_alerts"], len(rx.got)) == (1.0, [], 2)
        # one back to reject: crossed again -> alerted again, with the new value
        review(store, "tester-test/alerts", rejected[0], "reject", "rev-ana", "still broken")
        assert main(["acceptance", "report", "tester-test/alerts", "--db", db]) == 0
        assert capsys.readouterr().out.splitlines() == [
            "tester-test/alerts: 4 checked, acceptance 0.75, reject 0.25, issues 0.5",
            "ALERT max_issue_rate: 0.5 (limit 0.3)",
            "ALERT min_acceptance_rate: 0.75 (limit 0.8)"]
        assert main(["acceptance", "report", "tester-test/alerts", "--db", db]) == 0
        deliveries = client.get(f"/api/v1/webhook-endpoints/{ep['endpoint_id']}/deliveries/",
                                headers=avala(test_key))
    finally:
        rx.close()
        rx_other.close()
    assert len(rx.got) == 3 and rx_other.got == []  # the stranger may not read tester-test/alerts
    events = []
    for headers, body in rx.got:
        assert verify(ep["secret"], headers, body)
        events.append(json.loads(body))
        QualityTargetCrossedEvent.model_validate(events[-1])
    assert [(e["type"], e["test"]) for e in events] == [(EVENT, False)] * 3
    at = [e["data"]["crossed_at"] for e in events]
    assert at[0] == at[1] and datetime.fromisoformat(at[2]) > datetime.fromisoformat(at[0])
    half = {"accept": 2, "quarantine": 0, "reject": 2, "issue": 2}
    # the two of one evaluation are delivered concurrently: in either order
    events[:2] = sorted(events[:2], key=lambda e: e["data"]["target"])
    assert [e["data"] for e in events] == [
        data("max_issue_rate", 0.5, 0.3, half, at[0]),
        data("min_acceptance_rate", 0.5, 0.8, half, at[0]),
        data("min_acceptance_rate", 0.75, 0.8,
             {"accept": 3, "quarantine": 0, "reject": 1, "issue": 2}, at[2])]
    assert deliveries.status_code == 200
    assert [(d["event_type"], d["attempt"], d["status"]) for d in deliveries.json()] == [
        (EVENT, 1, 200)] * 3
    assert sorted(d["message_id"] for d in deliveries.json()) == sorted(
        h["webhook-id"] for h, _ in rx.got)
    # the Judge API's webhook routes keep to their four events: this endpoint is not theirs
    assert client.get("/v1/webhook-endpoints", headers=bearer(test_key)).json() == {"data": []}
    assert client.get(f"/v1/webhook-endpoints/{ep['endpoint_id']}/deliveries",
                      headers=bearer(test_key)).status_code == 404


def test_subscription_errors_name_the_field(client, test_key, live_key):
    r = client.post("/api/v1/webhook-endpoints/", headers=avala(test_key),
                    json={"url": "http://127.0.0.1:9/x", "events": ["judgment.completed"]})
    assert r.status_code == 422
    assert r.json()["detail"] == ("events.0: Input should be "
                                  "'acceptance.quality_target_crossed'")
    r = client.post("/api/v1/webhook-endpoints/", headers=avala(live_key),
                    json={"url": "http://127.0.0.1:9/x", "events": [EVENT]})
    assert (r.status_code, r.json()["detail"]) == (422, "url: host '127.0.0.1' resolves to "
                                                   "127.0.0.1, a private/loopback/metadata "
                                                   "address")
    r = client.post("/v1/webhook-endpoints", headers=bearer(test_key),
                    json={"url": "http://127.0.0.1:9/x", "events": [EVENT]})
    assert r.status_code == 422 and r.json()["detail"].startswith("events.0: Input should be")
    r = client.delete("/api/v1/webhook-endpoints/we_nope/", headers=avala(test_key))
    assert (r.status_code, r.json()["detail"]) == (
        404, "webhook endpoint 'we_nope': no such endpoint for this key")


def test_bad_target_limits_are_refused_by_name(service, test_key, tmp_path, capsys):
    db = str(service.modes["test"].engine.url)
    assert main(["datasets", "create", "lab/t", "--db", db]) == 0
    campaign = tmp_path / "c.yaml"
    for text, err in [
            ("targets: {max_reject_rate: 1.5}\n",
             "targets.max_reject_rate: must be a number from 0 to 1 (got 1.5)"),
            ("targets: {max_failure_rate: 0.1}\n",
             "targets: unknown max_failure_rate; known: min_acceptance_rate, max_reject_rate, "
             "max_issue_rate")]:
        campaign.write_text(text)
        capsys.readouterr()
        assert main(["acceptance", "report", "lab/t", "--campaign", str(campaign),
                     "--db", db]) == 2
        assert capsys.readouterr().err == f"rcjudge: error: {err}\n"
