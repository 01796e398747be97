"""rc-judge-v1's engines on a simulated GPU cluster: where they land, start, fail, cost.

``ray.cluster_utils.Cluster``: two nodes of two CPUs and four GPU resources each (Ray sets
``CUDA_VISIBLE_DEVICES`` for the actors as on real GPUs; the fake backend never touches
CUDA). The version is ``configs/judges/rc-judge-v1.yaml`` itself — its devices and GPU
shares — with the fake backend in place of vLLM (planned as vLLM: ``reserves_memory``):
each load sleeps ``LOAD_S`` and logs its start, end, node and GPU (``models.fake``).
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from tests.conftest import two_node_ray_cluster

pytestmark = [pytest.mark.ray, pytest.mark.slow]

LOAD_S = 1.0
CAP = 0.92
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster():
    yield from two_node_ray_cluster(cpus=2, gpus=4)


def production_with_fake(name: str, **options):
    """rc-judge-v1 (devices, shares) with the fake backend and ``options[model]`` per model."""
    from judge.ensemble.version import JudgeVersion

    data = yaml.safe_load((REPO / "configs/judges/rc-judge-v1.yaml").read_text())
    yes = {"attempt": 0.9, "success": 0.8}
    data["name"] = name
    data["models"] = [{**m, "backend": "fake", "path": "", "options": {
        "script": yes, "reserves_memory": True, **options.get(m["name"], {})}}
                      for m in data["models"]]
    return JudgeVersion.model_validate(data)


def test_engines_sharing_a_gpu_start_one_after_another_where_the_plan_says(
        make_bundles, tmp_path, cluster):
    from judge.batch.run import run_batch
    from judge.ledgers.store import Ledger

    log = tmp_path / "loads.jsonl"
    version = production_with_fake("v1-fake-gpus", **{
        m: {"load_s": LOAD_S, "load_log": str(log)}
        for m in ("qwen2.5-vl-7b", "gemma3-12b", "smolvlm2-2.2b")})
    share = {m.name: m.gpu_share for m in version.models}
    bundles = make_bundles(3, seed=23, width=96, height=64, fps=5)
    with Ledger.open(f"sqlite:///{tmp_path / 'g.db'}") as ledger:
        s = run_batch([str(p) for p in bundles], version, ledger, progress=False, replicas=3)
    assert (s.judged, s.failed) == (3, [])
    loads = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(loads) == 9  # 3 copies of the ensemble
    by_gpu = defaultdict(list)
    for ld in loads:
        by_gpu[(ld["node"], ld["cuda_visible_devices"])].append(ld)
    print("\nloads per GPU (node, CUDA_VISIBLE_DEVICES): model start–end, s after the first")
    t0 = min(ld["start"] for ld in loads)
    for gpu, ls in sorted(by_gpu.items()):
        print(f"  {gpu[0][:8]} {gpu[1]}: " + ", ".join(
            f"{ld['model']} {ld['start'] - t0:.2f}–{ld['end'] - t0:.2f}" for ld in ls))
    for ls in by_gpu.values():  # engines sharing a GPU: one after another
        ls.sort(key=lambda ld: ld["start"])
        for before, after in itertools.pairwise(ls):
            assert after["start"] >= before["end"], (before, after)
    firsts = sorted((ls[0] for ls in by_gpu.values()), key=lambda ld: ld["start"])
    assert firsts[1]["start"] < firsts[0]["end"]  # engines on other GPUs: together
    # where the plan put them: one copy of the ensemble per GPU, ≤ 0.92 of each
    planned = sorted(sorted(g["models"]) for g in s.plan["gpus"])
    landed = sorted(sorted(ld["model"] for ld in ls) for ls in by_gpu.values())
    assert planned == landed == [sorted(share)] * 3
    assert len({ld["node"] for ld in loads}) == 2  # spread over both nodes
    for ls in by_gpu.values():
        assert sum(share[ld["model"]] for ld in ls) <= CAP
    # the cost: 3 whole GPUs, a whole CPU per prepare worker (it decodes on one) and the 9
    # GPU replicas' CPU shares, held from reservation to the end
    from judge.batch.cost import batch_cost
    from judge.ensemble.judge import pricing

    cpus = s.plan["prepare_workers"] * 1.0 + 9 * 0.18
    out = s.as_dict()
    assert (out["cost"]["gpus_held"], out["cost"]["cpus_held"]) == (3, round(cpus, 8))
    want = batch_cost(3, cpus, s.startup_s, s.seconds, s.cost_usd, 3, pricing())
    assert out["cost_usd"] == round(want.usd, 6) and out["busy_cost_usd"] == round(s.cost_usd, 6)
    assert out["cost"]["per_judgment_usd"] == round(want.usd / 3, 8)
    assert s.startup_s >= 3 * LOAD_S  # three engines one after another on each GPU


def test_a_restarted_engine_loads_only_while_the_engines_beside_it_are_idle(
        make_bundles, tmp_path, cluster):
    """One copy of the ensemble on one GPU, every call one bundle (batch size 1), Gemma and
    SmolVLM2 busy 0.3 s a call; Qwen's process ends in its 3rd call. Ray restarts it at
    once, and its engine then profiled the GPU's memory while the other two computed; now
    the restarted replica loads when the driver has let their calls finish and sends them
    none until it is back."""
    from judge.batch.run import run_batch
    from judge.ledgers.store import Ledger

    loads, calls = tmp_path / "loads.jsonl", tmp_path / "calls.jsonl"
    busy = {"delay_s": 0.3, "call_log": str(calls)}
    version = production_with_fake("v1-fake-restart", **{
        "qwen2.5-vl-7b": {"load_s": LOAD_S, "load_log": str(loads),
                          "exit_after": {"calls": 2, "marker": str(tmp_path / "died")}},
        "gemma3-12b": busy, "smolvlm2-2.2b": busy})
    bundles = make_bundles(8, seed=29, width=96, height=64, fps=5)
    with Ledger.open(f"sqlite:///{tmp_path / 'r.db'}") as ledger:
        s = run_batch([str(p) for p in bundles], version, ledger, progress=False, replicas=1,
                      batch_size=1)
    assert (s.judged, s.failed) == (8, [])
    assert s.calls["qwen2.5-vl-7b"]["restarts"] == 1
    qwen = [json.loads(line) for line in loads.read_text().splitlines()]
    assert len(qwen) == 2  # the start, and the restart
    again = qwen[1]
    beside = [json.loads(line) for line in calls.read_text().splitlines()]
    assert {c["model"] for c in beside} == {"gemma3-12b", "smolvlm2-2.2b"}
    overlapping = [c for c in beside if c["start"] < again["end"] and c["end"] > again["start"]]
    assert overlapping == []


def test_engines_whose_share_cannot_hold_them_are_refused_before_ray_starts(make_bundles,
                                                                          tmp_path):
    """rc-judge-v1's shares until now on 80 GiB GPUs (`rcjudge batch --gpu-memory-gib 80`):
    SmolVLM2's 0.12 is 9.60 GiB for 9.68 needed (judge.batch.vram), one line, nothing run."""
    import ray

    from judge.batch.plan import PlanError
    from judge.batch.run import run_batch
    from judge.ensemble.version import JudgeVersion
    from judge.ledgers.store import Ledger

    old = production_with_fake("v1-fake-old").model_dump()
    for m, share in zip(old["models"], (0.25, 0.45, 0.12), strict=True):
        m["gpu_share"] = share
    version = JudgeVersion.model_validate(old)
    bundles = make_bundles(1, seed=23, width=96, height=64, fps=5)
    was = ray.is_initialized()  # the module's cluster may be up: it is not touched
    with Ledger.open(f"sqlite:///{tmp_path / 'm.db'}") as ledger:
        with pytest.raises(PlanError) as err:
            run_batch([str(p) for p in bundles], version, ledger, progress=False,
                      gpu_memory_gib=80)
        assert ledger.counts()["judgments"] == 0
    assert ray.is_initialized() == was  # refused before Ray was started
    assert str(err.value) == (
        "judge version 'v1-fake-old' on GPUs of 80 GiB: smolvlm2-2.2b's gpu_share 0.12 × 80 "
        "GiB = 9.60 GiB < the 9.68 GiB it needs (weights 4.18 + overhead 4.00 (allowance) + "
        "KV 1.50 for one 8,192-token prompt); raise its gpu_share to at least 0.13")


def test_a_failed_engine_start_says_its_root_cause(make_bundles, tmp_path, cluster):
    """vLLM raises "Engine core initialization failed. See root cause above." from the
    cause, and its engine-core process prints the cause on its stderr: both reach the user."""
    from judge.batch.run import BatchError, run_batch
    from judge.ledgers.store import Ledger

    fail = {"error": "Engine core initialization failed. See root cause above. "
                     "Failed core proc(s): {}",
            "cause": "the real cause: 11.2 GiB KV cache needed, 3.1 GiB available",
            "stderr": "ERROR [core.py:708] EngineCore failed to start: not enough KV cache"}
    version = production_with_fake("v1-fake-fail", **{"smolvlm2-2.2b": {"load_fail": fail}})
    bundles = make_bundles(3, seed=23, width=96, height=64, fps=5)
    with Ledger.open(f"sqlite:///{tmp_path / 'f.db'}") as ledger:
        with pytest.raises(BatchError) as err:
            run_batch([str(p) for p in bundles], version, ledger, progress=False, replicas=1)
        assert ledger.counts() == {"runs": 0, "judgments": 0, "operator_labels": 0}
    msg = str(err.value)
    print("\n" + msg)
    assert "\n" not in msg
    assert msg.startswith("model 'smolvlm2-2.2b' could not load: RuntimeError: Engine core "
                          "initialization failed. See root cause above.")
    assert ("root cause: ValueError: the real cause: 11.2 GiB KV cache needed, 3.1 GiB "
            "available") in msg
    assert "last stderr: ERROR [core.py:708] EngineCore failed to start: not enough KV " \
           "cache" in msg
    path = Path(msg.rsplit("full log: ", 1)[1].rstrip(")"))
    text = path.read_text()
    assert "Traceback (most recent call last)" in text
    assert "ValueError: the real cause" in text and "EngineCore failed to start" in text
