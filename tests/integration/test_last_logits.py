"""The transformers backend computes the vocabulary's logits at the last position only
(``logits_to_keep=1``): the answers read one position, and the logits of every position of an
8-frame prompt (~2,200 tokens × 152k-262k vocabulary) were computed and kept for nothing."""

from __future__ import annotations

import numpy as np
import pytest

from models.base import BackendSpec, ScoreRequest

pytestmark = pytest.mark.slow


def _qwen_tiny():
    """A transformers backend over a tiny random Qwen2.5-VL (``models.production_configs``,
    test widths), its processor handed in: this environment has no torchvision, without
    which a saved Qwen2.5-VL processor folder does not load (its video processor)."""
    import torch

    from models.hf import TransformersBackend
    from models.production_configs import build

    torch.manual_seed(0)
    cls, cfg, proc = build("qwen2.5-vl-7b", tiny=True)
    b = TransformersBackend(BackendSpec(name="qwen2_5_vl", backend="transformers",
                                        max_pixels=4096))
    b.model, b.processor, b.tokenizer, b._ids = cls(cfg).eval(), proc, proc.tokenizer, {}
    b.model_config = b.model.config.to_dict()
    return b


@pytest.mark.parametrize("arch", ["gemma3", "idefics3", "llava", "qwen2_5_vl"])
def test_only_the_last_positions_logits_are_computed(arch, tiny_models):
    import torch

    from models.registry import create_backend

    if arch == "qwen2_5_vl":
        b = _qwen_tiny()
    else:
        b = create_backend(BackendSpec(name=arch, backend="transformers",
                                       path=str(tiny_models / arch), max_pixels=4096))
        b.load()
    shapes = []
    forward = b.model.forward

    def recording(*args, **kwargs):
        out = forward(*args, **kwargs)
        shapes.append(tuple(out.logits.shape))
        return out

    b.model.forward = recording
    frames = np.random.default_rng(3).integers(0, 256, (4, 48, 64, 3), dtype=np.uint8)
    req = ScoreRequest(frames, "Did the robot attempt the task? Answer yes or no.", ("yes", "no"))
    got = b.score([req])[0]
    vocab = b.model.config.get_text_config().vocab_size
    assert shapes == [(1, 1, vocab)]
    with torch.inference_mode():  # the same answer from every position's logits
        full = forward(**b.inputs(req)).logits
    assert full.shape[1] > 1
    expected = torch.softmax(b.answer_logits(full[0, -1].double(), req.choices), 0).numpy()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
