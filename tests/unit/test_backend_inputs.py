"""Both backends build the same inputs from rc-judge-v1's entries: processor kwargs, one BOS,
no video at start-up, Gemma's aspect kept, a prompt over the context refused (no vLLM here:
the vLLM side is its pure parts, engine_args and the prompt text it hands the engine)."""

from __future__ import annotations

import numpy as np
import pytest

from judge.ensemble.version import load_judge_version
from models.base import BackendSpec, ModelError, ScoreRequest
from models.hf import TransformersBackend
from models.vllm import chat_prompt, engine_args

V1 = {m.name: m for m in load_judge_version("rc-judge-v1").models}
TYPES = {"qwen2.5-vl-7b": "qwen2_5_vl", "gemma3-12b": "gemma3", "smolvlm2-2.2b": "smolvlm"}


def _engine(name: str, version=None, processor=None) -> dict:
    e = {m.name: m for m in (version or load_judge_version("rc-judge-v1")).models}[name]
    spec = e.spec()
    return engine_args(e.device, e.dtype, e.max_pixels, e.gpu_share, dict(e.options), TYPES[name],
                       images=spec.images_per_prompt, processor=processor)


def _hf(name: str, processor) -> TransformersBackend:
    """A transformers backend of rc-judge-v1's entry with the fixture's processor (no model)."""
    b = TransformersBackend(V1[name].spec())
    b.processor, b.tokenizer, b._ids = processor, processor.tokenizer, {}
    return b


@pytest.mark.parametrize("name", sorted(V1))
def test_engine_args_profile_no_video(name):
    # vLLM reserves start-up memory for every modality it is not told to skip (999 videos)
    limits = _engine(name)["limit_mm_per_prompt"]
    assert limits == {"image": {"count": 8, "width": 448, "height": 448}, "video": 0}


def test_smolvlm_processor_settings_reach_the_engine(production_fixtures):
    assert _engine("smolvlm2-2.2b")["mm_processor_kwargs"] == {"size": {"longest_edge": 768}}
    # Qwen's pixel cap as `size` (both edges: its image processor refuses a size without a
    # shortest_edge), not the `max_pixels` call kwarg transformers deprecated (removed 5.23)
    qwen = production_fixtures["processors"]["qwen2.5-vl-7b"]
    assert _engine("qwen2.5-vl-7b", processor=qwen)["mm_processor_kwargs"] == {
        "size": {"shortest_edge": 3136, "longest_edge": 200704}}
    assert "mm_processor_kwargs" not in _engine("gemma3-12b")


def test_a_deprecated_pixel_kwarg_in_the_options_becomes_size():
    from models.processing import processor_kwargs

    got = processor_kwargs("qwen2_5_vl", 200704, {"mm_processor_kwargs": {
        "min_pixels": 784, "max_pixels": 50176}})
    assert got == {"size": {"shortest_edge": 784, "longest_edge": 50176}}
    assert processor_kwargs("qwen2_5_vl", 200704, {}) == {
        "size": {"shortest_edge": 3136, "longest_edge": 200704}}  # Qwen2-VL's own minimum


def test_qwen_frames_reach_its_processor_without_the_deprecated_kwarg(production_fixtures):
    import warnings

    hf = _hf("qwen2.5-vl-7b", production_fixtures["processors"]["qwen2.5-vl-7b"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # "deprecated and will be removed"
        out = hf.inputs(ScoreRequest(np.zeros((1, 240, 640, 3), np.uint8), "Did it?",
                                     ("yes", "no")))
    # 240 x 640 px (under the 200,704 cap) -> 252 x 644 (multiples of 28): 18 x 46 patches
    assert out["image_grid_thw"].tolist() == [[1, 18, 46]]


def test_the_engine_is_sized_for_the_versions_images_and_a_bounded_processor_cache():
    from judge.ensemble.version import JudgeVersion

    data = load_judge_version("rc-judge-v1").model_dump()
    data["frames"]["images_per_question"] = 12
    twelve = JudgeVersion.model_validate(data)
    assert _engine("gemma3-12b", twelve)["limit_mm_per_prompt"]["image"]["count"] == 12
    data["frames"]["tile_cameras"] = False  # cameras apart: not known from the version
    apart = JudgeVersion.model_validate(data)
    assert _engine("gemma3-12b", apart)["limit_mm_per_prompt"]["image"]["count"] == 8
    # vLLM's processor cache: 4 GiB by default in each of two processes an engine
    assert _engine("gemma3-12b")["mm_processor_cache_gb"] == 1.0


def test_gemma_prompt_holds_exactly_one_bos_in_both_backends(production_fixtures):
    proc = production_fixtures["processors"]["gemma3-12b"]
    bos = proc.tokenizer.bos_token_id
    frame = np.zeros((1, 240, 320, 3), np.uint8)
    hf = _hf("gemma3-12b", proc)
    ids = hf.inputs(ScoreRequest(frame, "Did it?", ("yes", "no")))["input_ids"][0].tolist()
    assert ids[0] == bos and ids.count(bos) == 1
    # vLLM tokenizes the text prompt with special tokens (its HF processor call, or the
    # tokenizer for text only): the text chat_prompt hands it must not carry a BOS itself
    text = chat_prompt(proc, 1, "Did it?")
    engine_ids = proc.tokenizer(text, add_special_tokens=True)["input_ids"]
    assert engine_ids[0] == bos and engine_ids.count(bos) == 1
    assert text.startswith("<start_of_turn>user\n<start_of_image>")


def test_transformers_backend_passes_the_versions_processor_kwargs(production_fixtures):
    # SmolVLM at longest_edge 768: a 320x240 frame is 2x2 tiles + the global image, 5 x 81
    proc = production_fixtures["processors"]["smolvlm2-2.2b"]
    hf = _hf("smolvlm2-2.2b", proc)
    frames = np.zeros((1, 240, 320, 3), np.uint8)
    ids = hf.inputs(ScoreRequest(frames, "Did it?", ("yes", "no")))["input_ids"][0].tolist()
    assert ids.count(proc.tokenizer.convert_tokens_to_ids("<image>")) == 5 * 81


def test_a_prompt_over_the_context_is_one_line(production_fixtures):
    proc = production_fixtures["processors"]["smolvlm2-2.2b"]
    spec = V1["smolvlm2-2.2b"].spec()
    b = TransformersBackend(BackendSpec(**{**spec.__dict__, "options": {"max_model_len": 1000}}))
    b.processor, b.tokenizer, b._ids = proc, proc.tokenizer, {}
    frames = np.zeros((8, 240, 320, 3), np.uint8)
    with pytest.raises(ModelError, match=r"^model smolvlm2-2.2b: the prompt is \d+ tokens, "
                                         r"over its context of 1000 \(max_model_len\)"):
        b.inputs(ScoreRequest(frames, "Did it?", ("yes", "no")))


def test_gemma_keeps_a_wide_tiled_frames_aspect(production_fixtures):
    # 3 cameras of 320x240 tiled: 960x240, a 120x120 white square drawn in the middle camera
    frame = np.zeros((1, 240, 960, 3), np.uint8)
    frame[0, 60:180, 420:540] = 255
    hf = _hf("gemma3-12b", production_fixtures["processors"]["gemma3-12b"])
    pixels = hf.inputs(ScoreRequest(frame, "Did it?", ("yes", "no")))["pixel_values"]
    white = pixels[0, 0].numpy() > 0.5  # (896, 896), normalised to [-1, 1]
    rows, cols = np.nonzero(white.any(axis=1))[0], np.nonzero(white.any(axis=0))[0]
    h, w = rows[-1] - rows[0] + 1, cols[-1] - cols[0] + 1
    # fitted to 896x224 (200,704 px cap), padded to 896x896: the square is 112 px a side
    assert abs(h - 112) <= 2 and abs(w - 112) <= 2
