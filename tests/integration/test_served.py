"""The ``openai`` backend against a loopback server shaped like vLLM 0.32 (``tests.served_stub``).

Answers are checked against values worked out by hand from the stub's logits; every fault is
one line naming the member and the endpoint; concurrency stays at ``max_concurrency``; the
API key never leaves the Authorization header. The lines are kept in
``test-artifacts/served_faults.json`` (the fault table of docs/served.md).
"""

from __future__ import annotations

import base64
import io
import json
import math
import socket

import numpy as np
import pytest
from PIL import Image

from models.answers import answer_variants
from models.base import BackendSpec, ScoreRequest
from models.endpoint import Endpoint, ServedClient, ServedError, ServedModelChanged, retry_after
from models.processing import model_images
from models.registry import create_backend
from tests.served_stub import IDS, TOKENS, StubServer

E = math.exp
YES = E(2.0) + E(1.0) + 4  # " Yes" 2, "yes" 1, " yes" "Yes" "YES" " YES" at 0
NO = E(0.5) + 5  # "no" 0.5, " no" "No" " No" "NO" " NO" at 0
P_YES = YES / (YES + NO)  # 0.679673
MASS = (YES + NO) / (YES + NO + len(TOKENS) - 12)  # the other tokens at logit 0
FRAMES = np.random.default_rng(3).integers(0, 256, (3, 40, 60, 3), dtype=np.uint8)
ATTEMPT = ScoreRequest(FRAMES, "Did the robot attempt the task? Answer yes or no.",
                       ("yes", "no"), "attempt")
LETTERS = ScoreRequest(FRAMES, "Which kind of failure was it?\nA. grasp\nB. motion\n"
                       "Answer with one letter.", ("A", "B"), "failure_family")
LINES: dict[str, str] = {}


def served(stub: StubServer, name: str = "m1", model: str = "stub-model", mass: float = 0.0,
           **endpoint) -> object:
    spec = BackendSpec(name=name, backend="openai", max_pixels=1200, min_answer_mass=mass,
                       endpoint=Endpoint(base_url=stub.url, model=model, **endpoint))
    b = create_backend(spec)
    b.load()
    return b


@pytest.fixture
def stub():
    with StubServer() as s:
        yield s


def test_restricted_answers_are_the_hand_values(stub):
    b = served(stub)
    (p_attempt, p_letters), seconds, usd = b.costed_score([ATTEMPT, LETTERS])
    np.testing.assert_allclose(p_attempt, [P_YES, 1 - P_YES], rtol=0, atol=1e-12)
    np.testing.assert_allclose(p_letters, [0.5, 0.5], rtol=0, atol=1e-12)
    assert b.answer_mass(ATTEMPT) == pytest.approx(MASS, abs=1e-12)
    assert usd == [0.0, 0.0] and seconds > 0
    body = next(r["body"] for r in stub.chat_requests()  # the attempt question, restricted
                if "allowed_token_ids" in r["body"]
                and r["body"]["messages"][0]["content"][-1]["text"] == ATTEMPT.prompt)
    ids = [IDS[s] for a in ("yes", "no") for s in answer_variants(a)]
    assert (body["allowed_token_ids"], body["logprob_token_ids"]) == (ids, ids)
    assert (body["max_tokens"], body["temperature"], body["logprobs"]) == (1, 0.0, True)
    assert body["return_tokens_as_token_ids"] is True
    # the frames as PNG, in order, exactly the pixels the in-process backends see
    parts = body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["image_url"] * 3 + ["text"]
    assert parts[-1]["text"] == ATTEMPT.prompt
    sent = [np.asarray(Image.open(io.BytesIO(base64.b64decode(
        p["image_url"]["url"].removeprefix("data:image/png;base64,"))))) for p in parts[:3]]
    want = [np.asarray(im) for im in model_images(FRAMES, 1200, {})]
    assert all(np.array_equal(s, w) for s, w in zip(sent, want, strict=True))
    assert sent[0].shape == (28, 42, 3)  # 40x60 scaled to at most 1200 pixels
    b.close()


def test_processed_logprobs_give_the_same_answers(stub):
    stub.processed = True  # --logprobs-mode processed_logprobs: restricted to the answers
    b = served(stub)
    ans = b.ask(ATTEMPT)
    np.testing.assert_allclose(ans.p, [P_YES, 1 - P_YES], rtol=0, atol=1e-12)
    assert ans.mass == pytest.approx(1.0)  # the restriction sums to 1: no mass per call
    assert b.answer_mass(ATTEMPT) == pytest.approx(MASS, abs=1e-12)  # unrestricted: raw
    b.close()


def test_top_logprobs_path_groups_spellings_by_text():
    with StubServer(owned_by="sglang") as stub:
        b = served(stub)
        assert not b.vllm
        ans = b.ask(ATTEMPT)
        body = stub.chat_requests()[-1]["body"]
        assert "allowed_token_ids" not in body and body["top_logprobs"] == 20
        # every spelling of yes and no is among the top 20 (12 tokens), so both are exact
        np.testing.assert_allclose(ans.p, [P_YES, 1 - P_YES], rtol=0, atol=1e-12)
        assert ans.mass == pytest.approx(MASS, abs=1e-12)
        stub.logits = {t: 5.0 for t in TOKENS[40:60]}  # 20 other tokens above every answer
        with pytest.raises(ServedError) as err:
            b.ask(ATTEMPT)
        LINES["no spelling of an answer among top_logprobs"] = str(err.value)
        top8 = ", ".join(map(repr, TOKENS[40:48]))  # the first 8 of the 20 returned
        assert str(err.value) == (f"model m1 at {stub.url}: attempt: answer(s) 'yes', 'no': "
                                  "none of their spellings is among the 20 returned "
                                  f"log-probabilities ({top8}…); a tail is not read")
        b.close()


def test_usage_times_prices_is_the_cost(stub):
    b = served(stub, usd_per_mtok_in=2.0, usd_per_mtok_out=8.0)
    _, _, usd = b.costed_score([ATTEMPT, LETTERS])
    words = [len(ATTEMPT.prompt.split()), len(LETTERS.prompt.split())]  # 9, 13
    assert usd == pytest.approx([((30 + w) * 2.0 + 1 * 8.0) / 1e6 for w in words], abs=1e-15)
    b.close()


def test_answer_mass_below_the_threshold_is_one_line(stub):
    b = served(stub, mass=0.5)
    with pytest.raises(ServedError) as err:
        b.ask(ATTEMPT)
    LINES["answer mass below min_answer_mass (per call)"] = str(err.value)
    assert str(err.value) == (f"model m1 at {stub.url}: attempt: its answer tokens ('yes', "
                              f"'no') hold {MASS:.4f} of the next-token probability, below "
                              "min_answer_mass 0.5")
    b.close()


def test_requests_in_flight_stay_at_max_concurrency(stub):
    b = served(stub, max_concurrency=3)
    stub.hold_until = 3  # each request waits until three are in flight (at most 5 s)
    answers = b.score([ATTEMPT] * 6)
    assert stub.max_in_flight == 3  # reached, never passed
    assert all(np.allclose(a, answers[0]) for a in answers)
    b.close()


def waits_of(client: ServedClient) -> list[float]:
    return client.waits


@pytest.mark.parametrize(("case", "rule", "waits", "line"), [
    ("429 with Retry-After, then answered", {"do": {"status": 429, "retry_after": "1"},
                                             "times": 2}, [1.0, 1.0], None),
    ("503 without Retry-After, then answered", {"do": {"status": 503}, "times": 3},
     [0.5, 1.0, 2.0], None),
    ("503 past max_retries", {"do": {"status": 503}}, [0.5, 1.0, 2.0, 4.0],
     "POST /chat/completions: HTTP 503 after 5 tries: scripted HTTP 503"),
    ("429 asking for longer than max_wait_s", {"do": {"status": 429, "retry_after": "120"}},
     [], "POST /chat/completions: HTTP 429, Retry-After 120 s is longer than max_wait_s 60"),
    ("400 (not retried)", {"do": {"status": 400}}, [],
     "POST /chat/completions: HTTP 400: scripted HTTP 400"),
    ("timeout", {"do": "sleep", "seconds": 2.0}, [],
     "POST /chat/completions timed out after 0.5 s (timeout_s)"),
    ("body that is not JSON", {"do": "not_json"}, [],
     "POST /chat/completions: the answer is not JSON ('<html>gateway</html>')"),
    ("no logprobs in the answer", {"do": "no_logprobs"}, [],
     "attempt: the response has no logprobs for its first token (does the server support "
     "logprobs: true?)"),
    ("another model answering", {"do": "other_model"}, [],
     "asked for model 'stub-model', 'someone-else' answered"),
])
def test_each_fault_is_one_line(stub, case, rule, waits, line):
    b = served(stub, timeout_s=0.5)
    slept: list[float] = []
    b.client.sleep = slept.append
    stub.faults = [{"model": "stub-model", "when": "attempt the task", **rule}]
    if line is None:
        np.testing.assert_allclose(b.ask(ATTEMPT).p, [P_YES, 1 - P_YES], rtol=0, atol=1e-12)
    else:
        with pytest.raises(ServedError) as err:
            b.ask(ATTEMPT)
        assert str(err.value) == f"model m1 at {stub.url}: {line}"
        assert "\n" not in str(err.value)
        LINES[case] = str(err.value)
    assert slept == waits == b.client.waits
    b.close()


def test_a_changed_served_model_is_its_own_error(stub):
    b = served(stub)
    stub.faults = [{"do": "fingerprint", "value": "vllm-0.32.0-0badc0de"}]
    with pytest.raises(ServedModelChanged) as err:
        b.ask(ATTEMPT)
    LINES["served model changed mid-run (system_fingerprint)"] = str(err.value)
    assert str(err.value) == (
        f"model m1 at {stub.url}: the served model changed: pinned {{'model': 'stub-model', "
        "'system_fingerprint': 'vllm-0.32.0-stub0001'} at load, now {'model': 'stub-model', "
        "'system_fingerprint': 'vllm-0.32.0-0badc0de'}")
    b.close()
    # pinned by the version's fingerprint, the server changed before the load: refused
    spec = BackendSpec(name="m1", backend="openai", endpoint=Endpoint(base_url=stub.url,
                                                                      model="stub-model"),
                       pinned={"model": "stub-model", "root": "/models/stub-model",
                               "system_fingerprint": "vllm-0.32.0-stub0001"})
    stub.faults = []
    stub.fingerprint = "vllm-0.32.0-0badc0de"
    with pytest.raises(ServedModelChanged, match="the server changed since$"):
        create_backend(spec).load()


def test_load_faults_are_one_line(stub, monkeypatch):
    with pytest.raises(ServedError) as err:
        served(stub, model="qwen-7b")
    LINES["model not listed (load)"] = str(err.value)
    assert str(err.value) == (f"model m1 at {stub.url}: model 'qwen-7b' is not listed by GET "
                              "/models (it lists: stub-model)")
    monkeypatch.delenv("RCJ_TEST_KEY", raising=False)
    with pytest.raises(ServedError) as err:
        served(stub, api_key_env="RCJ_TEST_KEY")
    LINES["api_key_env not set (load)"] = str(err.value)
    assert str(err.value) == (f"model m1 at {stub.url}: the environment variable RCJ_TEST_KEY "
                              "(api_key_env) is not set")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = BackendSpec(name="m1", backend="openai", endpoint=Endpoint(
        base_url=f"http://127.0.0.1:{port}/v1", model="stub-model"))
    with pytest.raises(ServedError) as err:
        create_backend(spec).load()
    LINES["server unreachable (load)"] = str(err.value)
    assert str(err.value).startswith(f"model m1 at http://127.0.0.1:{port}/v1: GET /models: "
                                     "cannot reach the server (ConnectError: ")


def test_the_key_is_sent_and_never_echoed(stub, monkeypatch):
    key = "sk-rcjudge-test-0123456789abcdef"
    monkeypatch.setenv("RCJ_TEST_KEY", key)
    b = served(stub, api_key_env="RCJ_TEST_KEY")
    assert {r["headers"].get("Authorization") for r in stub.requests} == {f"Bearer {key}"}
    stub.faults = [{"do": "echo_auth"}]  # a server that repeats the header in its error
    b.client.sleep = lambda s: None
    with pytest.raises(ServedError) as err:
        b.ask(ATTEMPT)
    LINES["a server echoing the key in its error"] = str(err.value)
    assert key not in str(err.value) and "[api key]" in str(err.value)
    b.close()


def test_retry_after_reads_seconds_and_dates():
    assert retry_after("3") == 3.0 and retry_after(" 0.5 ") == 0.5
    assert retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert retry_after("soon") is None and retry_after(None) is None


@pytest.fixture(scope="module", autouse=True)
def keep_lines(artifacts_dir):
    yield
    if LINES:
        path = artifacts_dir / "served_faults.json"
        old = json.loads(path.read_text()) if path.is_file() else {}
        path.write_text(json.dumps({**old, **LINES}, indent=2) + "\n")
