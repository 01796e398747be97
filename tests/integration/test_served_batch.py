"""``rcjudge batch`` with three served models on a real local Ray, against ``tests.served_stub``.

A fault costs only the bundles it hits (the batch goes on and records each with its line); a
served model that changes mid-run stops the batch with one line; the API key reaches the
server and nothing else (not the output, the ledger, or the replicas' logs).
"""

from __future__ import annotations

import json

import pytest
import yaml

from rcjudge.cli import main
from tests.served_stub import StubServer

pytestmark = [pytest.mark.ray, pytest.mark.slow]

MODELS = ("m-a", "m-b", "m-c")
KEY = "sk-batch-test-fedcba9876543210"


def version_file(tmp_path, url: str, name: str) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "frames": {"images_per_question": 4},
                                    "models": [
        {"name": m, "backend": "openai", "max_pixels": 4096, "min_answer_mass": 0,
         "endpoint": {"base_url": url, "model": m, "max_concurrency": 3, "max_retries": 2,
                      "api_key_env": "RCJ_BATCH_KEY", "usd_per_mtok_in": 3.0,
                      "usd_per_mtok_out": 15.0}} for m in MODELS]}))
    return str(path)


@pytest.fixture
def fresh_ray(monkeypatch):
    """No Ray running: the batch starts its own, whose workers see the key's variable."""
    import ray

    monkeypatch.setenv("RCJ_BATCH_KEY", KEY)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    ray.shutdown()
    yield
    ray.shutdown()


def tasks(bundles) -> dict[str, str]:
    return {str(b): json.loads((b / "attribution.json").read_text())["task"]["id"]
            for b in bundles}


def test_faults_cost_only_their_bundles(make_bundles, tmp_path, fresh_ray, capsys):
    from judge.batch.actors import engine_log_dir
    from judge.ensemble.judge import pricing
    from judge.ledgers.store import Ledger

    bundles = make_bundles(9, seed=23, width=96, height=64, fps=5)
    task = tasks(bundles)
    mug = {u for u, t in task.items() if t.endswith("mug_022")}
    can = {u for u, t in task.items() if t.endswith("can_005")}
    assert mug and can and len(mug | can) < len(bundles)  # seed 23: some of each, and cubes
    db = tmp_path / "ledger.db"
    with StubServer(models=MODELS) as stub:
        stub.faults = [
            {"model": "m-a", "when": "the mug", "do": {"status": 500}},  # always
            {"model": "m-b", "when": "the can", "do": "no_logprobs"},
            {"model": "m-c", "do": {"status": 429, "retry_after": "0"}, "times": 2},  # retried
        ]
        code = main(["batch", str(bundles[0].parent), "--judge",
                     version_file(tmp_path, stub.url, "served-batch"), "--db",
                     f"sqlite:///{db}", "--json"])
        out = capsys.readouterr()
        assert {r["headers"].get("Authorization") for r in stub.requests} == {f"Bearer {KEY}"}
        assert stub.max_in_flight <= 3 * len(MODELS)  # each member at most max_concurrency
    summary = json.loads(out.out)
    assert code == 1 and summary["judged"] == len(bundles) - len(mug | can)
    failed = {f["uri"]: f["message"] for f in summary["failures"]}
    assert set(failed) == mug | can
    for uri in mug:
        assert failed[uri] == (f"ServedError: model m-a at {stub.url}: POST /chat/completions: "
                               "HTTP 500 after 3 tries: scripted HTTP 500")
    for uri in can - mug:
        assert failed[uri] == (f"ServedError: model m-b at {stub.url}: attempt: the response "
                               "has no logprobs for its first token (does the server support "
                               "logprobs: true?)")
    with Ledger.open(f"sqlite:///{db}") as ledger:
        assert {f["bundle_uri"] for f in ledger.failures()} == mug | can
        costs = [ledger.get_judgment(r, "served-batch").cost
                 for r in ledger.judged_run_ids("served-batch")]
    cpu_price = pricing()["cpu_hour_usd"] / 3600
    tokens = [c.usd - c.cpu_s * cpu_price for c in costs]  # the servers' part of each
    assert len(costs) == summary["judged"] and min(tokens) > 0 and {c.gpu_s for c in costs} == {0}
    # every answered request was paid for, the failed bundles' too
    assert summary["served_usd"] > sum(tokens)
    assert summary["cost"]["usd"] > summary["served_usd"]  # + the CPUs the batch held
    logs = b"".join(p.read_bytes() for p in engine_log_dir().glob("m-*.log"))
    assert KEY.encode() not in db.read_bytes() + logs
    assert KEY not in out.out + out.err


def test_a_changed_served_model_stops_the_batch(make_bundles, tmp_path, fresh_ray, capsys):
    from judge.ledgers.store import Ledger

    bundles = make_bundles(9, seed=23, width=96, height=64, fps=5)
    db = tmp_path / "ledger.db"
    with StubServer(models=MODELS) as stub:
        # the server restarts with another build while the batch runs: from the first
        # question about a mug on, it answers with another system_fingerprint
        stub.faults = [{"model": "m-b", "when": "the mug", "do": "fingerprint",
                        "value": "vllm-0.32.0-0badc0de"}]
        code = main(["batch", str(bundles[0].parent), "--judge",
                     version_file(tmp_path, stub.url, "served-stop"), "--db",
                     f"sqlite:///{db}", "--max-in-flight", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.endswith(f"rcjudge: error: batch stopped: model m-b at {stub.url}: the served "
                        "model changed: pinned {'model': 'm-b', 'system_fingerprint': "
                        "'vllm-0.32.0-stub0001'} at load, now {'model': 'm-b', "
                        "'system_fingerprint': 'vllm-0.32.0-0badc0de'}\n")
    with Ledger.open(f"sqlite:///{db}") as ledger:
        judged = ledger.judged_run_ids("served-stop")
    first_mug = next(i for i, t in enumerate(tasks(bundles).values()) if t.endswith("mug_022"))
    assert len(judged) < len(bundles) and len(judged) <= first_mug  # none after the change
