"""rc-judge-v1's production processors (models.production): token budgets, BOS, pixels.

The fixtures reproduce each model's published processor settings and chat template with a
locally trained tokenizer (no weights, no hub; tests/conftest.py production_fixtures).
"""

from __future__ import annotations

import numpy as np
import pytest

from judge.ensemble.budget import prompt_token_table
from judge.ensemble.version import load_judge_version


@pytest.fixture(scope="module")
def table(production_fixtures) -> list[dict]:
    rows = prompt_token_table(load_judge_version("rc-judge-v1"),
                              production_fixtures["processors"])
    worst: dict[tuple, int] = {}
    for r in rows:
        key = (r["model"], r["cameras"], r["width"], r["height"])
        worst[key] = max(worst.get(key, 0), r["tokens"])
    print("\nmodel            cams  frame      max tokens / max_model_len")
    for (m, n, w, h), t in worst.items():
        print(f"{m:16s} {n}     {w}x{h:<5d} {t:6d} / {rows[0]['max_model_len']}")
    return rows


def test_every_question_fits_every_model_at_every_layout(table):
    # 3 models x 3 camera counts x 3 sizes x 4 questions
    assert len(table) == 108
    assert {r["max_model_len"] for r in table} == {8192}  # vLLM on GPU, no override
    over = [(r["model"], r["cameras"], r["width"], r["height"], r["question"], r["tokens"])
            for r in table if not r["fits"]]
    assert over == []


@pytest.mark.parametrize(("name", "kwargs", "token", "count"), [
    # 320x240 -> smart_resize to 252x308 (multiples of 28) -> 9 x 11 merged patches
    ("qwen2.5-vl-7b", {"max_pixels": 200704}, "<|image_pad|>", 99),
    ("gemma3-12b", {}, "<image_soft_token>", 256),  # whatever the size: 896^2 pooled
    # the hub's settings: upsampled to 1536x1152 -> 4 x 3 tiles + the global image, 81 each
    ("smolvlm2-2.2b", {}, "<image>", 13 * 81),
    ("smolvlm2-2.2b", {"size": {"longest_edge": 768}}, "<image>", 5 * 81),  # rc-judge-v1's
])
def test_image_tokens_of_one_frame_are_the_published_counts(production_fixtures, name, kwargs,
                                                            token, count):
    from PIL import Image

    from models.processing import chat_prompt

    proc = production_fixtures["processors"][name]
    image = Image.fromarray(np.zeros((240, 320, 3), np.uint8))
    ids = proc(text=[chat_prompt(proc, 1, "q")], images=[[image]], **kwargs)["input_ids"][0]
    assert list(ids).count(proc.tokenizer.convert_tokens_to_ids(token)) == count


def test_the_fixture_folders_hold_config_and_processor(production_fixtures):
    import json

    for name, folder in production_fixtures["folders"].items():
        files = {p.name for p in folder.iterdir()}
        assert {"config.json", "processor_config.json", "tokenizer.json",
                "chat_template.jinja"} <= files, name
        assert json.loads((folder / "config.json").read_text())["model_type"] == {
            "qwen2.5-vl-7b": "qwen2_5_vl", "gemma3-12b": "gemma3",
            "smolvlm2-2.2b": "smolvlm"}[name]


def test_the_gemma_fixture_loads_with_autoprocessor_like_the_real_one(production_fixtures):
    # Qwen2.5-VL's and SmolVLM's processors also carry a video processor, which transformers
    # loads only with torchvision (absent here); Gemma 3's has none
    from transformers import AutoProcessor

    proc = AutoProcessor.from_pretrained(production_fixtures["folders"]["gemma3-12b"])
    assert type(proc).__name__ == "Gemma3Processor"
    assert proc.image_processor.size == {"height": 896, "width": 896}
    assert proc.image_seq_length == 256 and proc.chat_template.startswith("{{ bos_token }}")


def test_the_table_loads_each_processor_from_its_checkpoint_folder(production_fixtures, table):
    # processors=None: AutoProcessor on each entry's folder (the Gemma fixture, three times;
    # the other two need torchvision to load here), the same counts as the built processors
    from judge.ensemble.version import JudgeVersion

    folder = str(production_fixtures["folders"]["gemma3-12b"])
    v1 = load_judge_version("rc-judge-v1")
    gemma = next(m for m in v1.models if m.name == "gemma3-12b")
    version = JudgeVersion.model_validate({
        **v1.model_dump(), "name": "t",
        "models": [{**gemma.model_dump(), "name": f"g{i}", "path": folder} for i in range(3)]})
    rows = prompt_token_table(version, cameras=(3,), sizes=((320, 240),))
    expected = {r["question"]: r["tokens"] for r in table
                if (r["model"], r["cameras"], r["width"]) == ("gemma3-12b", 3, 320)}
    assert [(r["model"], r["question"], r["tokens"]) for r in rows] == [
        (f"g{i}", q, expected[q]) for i in range(3) for q in expected]
    assert all(r["max_model_len"] == 8192 and r["fits"] for r in rows)
