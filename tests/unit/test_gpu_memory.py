"""Each vLLM engine's share of a GPU against its weights, overhead and one prompt's KV cache
(``judge.batch.vram``), worked out by hand from rc-judge-v1's published configs:

* Qwen2.5-VL-7B: 8,292,166,656 parameters × 2 B = 16,584,333,312 B (15.45 GiB); 28 layers ×
  2 × 4 KV heads × 128 × 2 B = 57,344 B a token; 8,192 tokens: 469,762,048 B (0.44 GiB);
* Gemma-3-12B: 12,202,563,392 × 2 = 24,405,126,784 B; 2 × 8 × 256 × 2 = 8,192 B a token a
  layer, 8 global layers × 8,192 tokens + 40 sliding ones × 8,208 (one block more):
  3,226,468,352 B (3.00 GiB);
* SmolVLM2-2.2B: 2,246,784,880 × 2 = 4,493,569,760 B; 24 × 2 × 32 × 64 × 2 = 196,608 B a
  token: 1,610,612,736 B (1.50 GiB);
* each with the 4 GiB overhead allowance (4,294,967,296 B).
"""

from __future__ import annotations

import pytest

from judge.batch.plan import PlanError, plan_batch
from judge.batch.vram import GIB, EngineFit, EngineSize, check_engines, engine_fits
from judge.ensemble.version import load_judge_version

SIZES = {
    "qwen2.5-vl-7b": EngineSize("qwen2.5-vl-7b", 8_292_166_656, 2, 28, 0, 2 * 4 * 128 * 2,
                                8192, "hand"),
    "gemma3-12b": EngineSize("gemma3-12b", 12_202_563_392, 2, 8, 40, 2 * 8 * 256 * 2, 8192,
                             "hand"),
    "smolvlm2-2.2b": EngineSize("smolvlm2-2.2b", 2_246_784_880, 2, 24, 0, 2 * 32 * 64 * 2,
                                8192, "hand"),
}


def test_what_each_engine_needs_by_hand():
    q, g, s = (SIZES[n] for n in ("qwen2.5-vl-7b", "gemma3-12b", "smolvlm2-2.2b"))
    assert (q.weights, q.kv_per_token, q.kv_one_prompt) == (16_584_333_312, 57_344, 469_762_048)
    assert q.need == 16_584_333_312 + 4 * GIB + 469_762_048 == 21_349_062_656  # 19.88 GiB
    assert (g.weights, g.kv_one_prompt) == (24_405_126_784, 3_226_468_352)
    assert g.need == 31_926_562_432  # 29.73 GiB
    assert (s.weights, s.kv_one_prompt, s.need) == (4_493_569_760, 1_610_612_736,
                                                    10_399_149_792)  # 9.68 GiB


def test_an_engine_at_its_share_of_80_gib():
    q = EngineFit(SIZES["qwen2.5-vl-7b"], 0.25, 80)
    assert q.fits and q.budget == 21_474_836_480  # 20.00 GiB, 0.12 GiB over its need
    # (21,474,836,480 − 16,584,333,312 − 4,294,967,296) / 57,344 = 10,385.4 tokens
    assert q.kv_tokens == 10_385
    smol = EngineFit(SIZES["smolvlm2-2.2b"], 0.12, 80)
    assert not smol.fits and smol.least_share == 0.13  # 9.68 / 80 = 0.121
    assert smol.detail() == (
        "0.12 × 80.0 GiB = 9.60 GiB < 9.68 GiB needed (weights 4.18 + overhead 4.00 "
        "(allowance) + KV 1.50 for one 8,192-token prompt): raise gpu_share to at least 0.13")
    # what CUDA reports of an 80 GB H100 (79.2 GiB): Qwen at 0.25 no longer fits either
    assert not EngineFit(SIZES["qwen2.5-vl-7b"], 0.25, 79.2).fits


def _with_shares(*shares):
    v = load_judge_version("rc-judge-v1")
    return v.model_copy(update={"models": tuple(
        m.model_copy(update={"gpu_share": s}) for m, s in zip(v.models, shares, strict=True))})


def test_the_batch_refuses_an_engine_that_cannot_start_with_the_numbers():
    old = _with_shares(0.25, 0.45, 0.12)  # rc-judge-v1 until now: Σ 0.82, within the cap
    with pytest.raises(PlanError) as err:
        check_engines(old, 80, SIZES)
    assert str(err.value) == (
        "judge version 'rc-judge-v1' on GPUs of 80 GiB: smolvlm2-2.2b's gpu_share 0.12 × 80 GiB "
        "= 9.60 GiB < the 9.68 GiB it needs (weights 4.18 + overhead 4.00 (allowance) + KV 1.50 "
        "for one 8,192-token prompt); raise its gpu_share to at least 0.13")
    # without the GPUs' memory the plan is what it was: Σ 0.82 <= 0.92, one copy a GPU
    assert len(plan_batch(old, {"GPU": 8, "CPU": 16}).gpus) == 8


@pytest.mark.parametrize("gib", [79.2, 80, 140.4, 141])
def test_rc_judge_v1_as_shipped_starts_on_80_and_141_gib_gpus(gib):
    version = load_judge_version("rc-judge-v1")
    fits = engine_fits(version, gib, SIZES)
    assert [f.size.model for f in fits] == list(SIZES)
    assert all(f.fits for f in fits), [f.detail() for f in fits if not f.fits]
    check_engines(version, gib, SIZES)
    plan = plan_batch(version, {"GPU": 8, "CPU": 16})
    assert [round(g.share, 2) for g in plan.gpus] == [0.92] * 8  # one copy of the ensemble a GPU
