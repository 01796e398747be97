"""Batching across bundles and cost from compute seconds, on a local Ray with one GPU resource.

The fake backend's latency model (``call_s: [a, b]``) sleeps ``a + b·n`` seconds per call
on n requests and reports exactly that as its compute time, so every cost is known to the
digit. The GPU is a Ray resource only: the fake backend never touches CUDA.
"""

from __future__ import annotations

import os

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.slow]

A, B = 0.0625, 0.03125  # seconds per call and per request: exact in binary
SHARES = (0.25, 0.25, 0.5)
YES = {"attempt": 0.9, "success": 0.8}  # every model says success: no class questions


def fake_gpu_version(name: str, call_s=(A, B), **extra):
    from judge.ensemble.version import JudgeVersion

    return JudgeVersion(name=name, models=[
        {"name": n, "backend": "fake", "device": "cuda", "gpu_share": s,
         "options": {"script": YES, "call_s": list(call_s)}, **extra}
        for n, s in zip("abc", SHARES, strict=True)])


@pytest.fixture(scope="module")
def gpu_ray():
    import ray

    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(address="local", num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def eight(make_bundles):
    return [str(p) for p in make_bundles(8, seed=5, width=96, height=64, fps=5)]


def test_each_judgment_costs_its_share_of_the_compute_seconds(eight, tmp_path, gpu_ray):
    """One bundle at a time: every call carries its two questions, a + 2b = 0.125 s."""
    from judge.batch.run import run_batch
    from judge.ensemble.judge import pricing
    from judge.ledgers.store import Ledger

    version = fake_gpu_version("fake-cost")
    with Ledger.open(f"sqlite:///{tmp_path / 'c.db'}") as ledger:
        s = run_batch(eight[:3], version, ledger, max_in_flight=1, progress=False)
        assert (s.judged, len(s.failed)) == (3, 0)
        assert s.calls == {n: {"calls": 3, "requests": 6, "compute_s": 0.375, "restarts": 0,
                               "replicas_lost": 0} for n in "abc"}
        for uri in eight[:3]:
            j = ledger.get_judgment(uri.rsplit("/", 1)[-1], "fake-cost")
            assert j.timings.models_s == 0.375  # 3 models × 0.125 s, no queueing in it
            assert j.cost.gpu_s == 0.125  # 0.125 × (0.25 + 0.25 + 0.5)
            t = j.timings
            assert j.cost.cpu_s == t.intake_s + t.frames_s + t.vote_s
            price = pricing()
            assert j.cost.usd == round(0.125 * price["gpu_hour_usd"] / 3600
                                       + j.cost.cpu_s * price["cpu_hour_usd"] / 3600, 8)
        assert s.cost_usd == pytest.approx(sum(
            ledger.get_judgment(u.rsplit("/", 1)[-1], "fake-cost").cost.usd for u in eight[:3]))


def test_requests_from_many_bundles_share_one_call(eight, tmp_path, gpu_ray):
    """A slow first call (0.5 s) keeps the one replica busy while the other bundles are
    prepared and queued: they go out together. However they were grouped, the bundles'
    shares add up to exactly the compute the replicas reported."""
    from judge.batch.run import run_batch
    from judge.ledgers.store import Ledger

    version = fake_gpu_version("fake-share", call_s=(0.5, B), batch_size=6)
    with Ledger.open(f"sqlite:///{tmp_path / 's.db'}") as ledger:
        s = run_batch(eight, version, ledger, progress=False)
        assert (s.judged, len(s.failed)) == (8, 0)
        assert s.plan["models"] == {n: {"replicas": 1, "batch_size": 6} for n in "abc"}
        assert s.plan["max_in_flight"] == 12  # max(8, 2 × 1 × 6)
        judgments = [ledger.get_judgment(u.rsplit("/", 1)[-1], "fake-share") for u in eight]
    for n in "abc":
        c = s.calls[n]
        assert c["requests"] == 16  # 8 bundles × 2 questions
        assert c["calls"] < 8  # some call carried more than one bundle
        assert c["calls"] >= 3  # at most 6 requests (3 bundles) per call
        assert c["compute_s"] == pytest.approx(0.5 * c["calls"] + B * 16, abs=1e-9)
    assert sum(j.timings.models_s for j in judgments) == pytest.approx(
        sum(c["compute_s"] for c in s.calls.values()), abs=1e-9)
    assert sum(j.cost.gpu_s for j in judgments) == pytest.approx(
        sum(c["compute_s"] * share for c, share in zip(s.calls.values(), SHARES, strict=True)),
        abs=1e-9)


def test_unknown_model_in_replicas_is_refused_before_ray(eight, tmp_path, capsys):
    import ray
    import yaml

    from rcjudge.cli import main

    path = tmp_path / "fake-names.yaml"
    path.write_text(yaml.safe_dump({"name": "fake-names", "models": [
        {"name": n, "backend": "fake"} for n in "abc"]}))
    db = tmp_path / "n.db"
    args = ["batch", eight[0], "--judge", str(path), "--db", f"sqlite:///{db}"]
    was_up = ray.is_initialized()
    assert main([*args, "--replicas", "2", "--replicas", "d=1"]) == 2
    assert capsys.readouterr().err == ("rcjudge: error: --replicas d=…: judge version "
                                       "'fake-names' has no model 'd' (its models: a, b, c)\n")
    assert main([*args, "--batch-size", "0"]) == 2
    assert capsys.readouterr().err == "rcjudge: error: --batch-size 0: expected at least 1\n"
    assert not db.exists() and ray.is_initialized() == was_up


def test_a_replica_that_keeps_dying_is_dropped_and_its_model_fails_the_rest(eight, tmp_path,
                                                                            gpu_ray):
    """Model c dies on every third call, restarted or not; it may restart once.

    One bundle at a time: c answers bundles 1 and 2, dies on 3 (restart), answers the retry
    of 3 and bundle 4, dies on 5: twice dead, it is gone, and with no replica of c left
    bundles 5 to 8 are recorded as failed, one row each.
    """
    from judge.batch.run import run_batch
    from judge.ensemble.version import JudgeVersion
    from judge.ledgers.store import Ledger

    models = fake_gpu_version("x").model_dump()["models"]
    models[2]["options"]["exit_after"] = {"calls": 2}
    version = JudgeVersion(name="fake-lost", models=models)
    with Ledger.open(f"sqlite:///{tmp_path / 'lost.db'}") as ledger:
        s = run_batch(eight, version, ledger, max_in_flight=1, prepare_workers=1,
                      progress=False)
        names = [u.rsplit("/", 1)[-1] for u in eight]
        assert (s.judged, len(s.failed)) == (4, 4)
        assert [f["uri"] for f in s.failed] == eight[4:]
        assert [f["error"] for f in s.failed] == ["ReplicasLost"] * 4
        assert {f["message"] for f in s.failed} == {"model 'c': no live replica left"}
        assert (s.calls["c"]["restarts"], s.calls["c"]["replicas_lost"]) == (1, 1)
        assert ledger.judged_run_ids("fake-lost") == set(names[:4])
        assert len(ledger.failures("fake-lost")) == 4
