"""Where rc-judge-v1's engines go on a simulated 8-GPU node: Ray's best fit against the plan.

Before: each replica its own placement-group bundle of ``gpu_share`` GPU, placed by Ray's
best fit (a fractional request goes to the GPU with the least room that still holds it).
After: :func:`judge.batch.plan.place_on_gpus` — one bundle per GPU, each GPU's summed
``gpu_memory_utilization`` within 0.92. Both tables are printed (``pytest -s``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from judge.batch.plan import GPU_MEMORY_CAP, PlanError, memory_plan, plan_batch
from judge.ensemble.version import JudgeVersion

REPO = Path(__file__).resolve().parents[2]
OLD_SHARES = {"qwen2.5-vl-7b": 0.45, "gemma3-12b": 0.35, "smolvlm2-2.2b": 0.15}


def rc_judge_v1(shares: dict[str, float] | None = None) -> JudgeVersion:
    """configs/judges/rc-judge-v1.yaml itself; ``shares`` replace its gpu_share values."""
    data = yaml.safe_load((REPO / "configs/judges/rc-judge-v1.yaml").read_text())
    for m in data["models"]:
        m["gpu_share"] = (shares or {}).get(m["name"], m["gpu_share"])
    return JudgeVersion.model_validate(data)


def ray_best_fit(shares: list[float], gpus: int) -> list[list[float]]:
    """Ray's placement of fractional GPU bundles on one node, in request order."""
    used: list[list[float]] = [[] for _ in range(gpus)]
    for s in shares:
        fits = [g for g in range(gpus) if sum(used[g]) + s <= 1.0 + 1e-9]
        used[min(fits, key=lambda g: (1.0 - sum(used[g]), g))].append(s)
    return used


def table(title: str, per_gpu: list[list[float]]) -> str:
    rows = [f"  GPU {g}: {' + '.join(f'{s:.2f}' for s in ss)} = {sum(ss):.2f}"
            for g, ss in enumerate(per_gpu)]
    return "\n".join([title, *rows])


def test_ray_best_fit_packs_a_gpu_to_one_the_plan_keeps_each_within_the_cap():
    old = rc_judge_v1(OLD_SHARES)
    plan = plan_batch(old, {"GPU": 8, "CPU": 64})
    # today's bundles: one per replica, in the version's order, 8 copies (floor(8 / 0.95))
    today = [m.gpu_share for m in old.models for _ in range(8)]
    before = ray_best_fit(today, 8)
    print("\n" + table("before (Ray best fit, 8×0.45 + 8×0.35 + 8×0.15):", before))
    assert [round(sum(ss), 2) for ss in before] == [0.9] * 4 + [1.0] * 4
    assert before[4] == [0.35, 0.35, 0.15, 0.15]
    # after, the same shares: the plan takes the most copies that pack within 0.92 (7)
    after_old = [[old.models[i].gpu_share for i, _ in g.replicas] for g in plan.gpus]
    print(table(f"after, same shares: {plan.replicas[0]} copies split over the GPUs:",
                after_old))
    assert plan.replicas == (7, 7, 7)
    assert [round(sum(ss), 2) for ss in after_old] == [
        0.8, 0.9, 0.8, 0.8, 0.85, 0.9, 0.8, 0.8]
    assert all(sum(ss) <= GPU_MEMORY_CAP + 1e-9 for ss in after_old)
    # after, rc-judge-v1's shares as configured now: one copy of the ensemble per GPU
    v1 = rc_judge_v1()
    slots = memory_plan(v1, 8)
    after = [[v1.models[i].gpu_share for i, _ in g.replicas] for g in slots]
    print(table("after, rc-judge-v1 (0.28 + 0.48 + 0.16), one copy per GPU:", after))
    assert len(slots) == 8
    assert all(sorted(g.models) == sorted(m.name for m in v1.models) for g in slots)
    assert all(round(g.share, 2) == 0.92 and g.cap == 0.92 for g in slots)
    assert {c for g in slots for _, c in g.replicas} == set(range(8))
    assert all(len({c for _, c in g.replicas}) == 1 for g in slots)  # a copy stays together


def test_a_plan_beyond_the_cap_is_refused_in_one_line_before_any_actor():
    old = rc_judge_v1(OLD_SHARES)
    with pytest.raises(PlanError) as err:
        plan_batch(old, {"GPU": 8, "CPU": 64}, replicas=8)
    assert str(err.value) == (
        "judge version 'rc-judge-v1': replicas qwen2.5-vl-7b 8×0.45, gemma3-12b 8×0.35, "
        "smolvlm2-2.2b 8×0.15 do not fit 8 GPU(s) with at most 0.92 of a GPU for its vLLM "
        "engines (gpu_memory_utilization summed per GPU); lower gpu_share or --replicas")
    with pytest.raises(PlanError, match=r"do not fit 1 GPU\(s\) with at most 0\.92"):
        memory_plan(old, 1)  # 0.95 on one GPU


def test_a_vllm_engine_of_share_zero_takes_a_gpu_of_its_own():
    v = rc_judge_v1({"smolvlm2-2.2b": 0.0})  # vLLM's default gpu_memory_utilization, 0.9
    slots = memory_plan(v, 3, replicas=1)
    assert [(g.models, round(g.share, 2)) for g in slots] == [
        (("smolvlm2-2.2b",), 0.9), (("gemma3-12b", "qwen2.5-vl-7b"), 0.76)]
