"""One set of rules for a model's inputs, shared by the transformers and vLLM backends.

Where it sits: between the judge's frames and a model's processor. :mod:`models.hf` and
:mod:`models.vllm` both call these, so a model sees the same pixels, the same processor
settings and the same prompt text whichever engine serves it:

- :func:`processor_kwargs`: the processor keyword arguments of a spec (vLLM's
  ``mm_processor_kwargs``; the transformers backend passes them to every processor call);
- :func:`model_images`: frames downscaled to the spec's pixel cap, and padded to a square
  for models with a fixed square input (``options.pad_to_square``: Gemma 3 would squash
  a wide tiled frame to 896² otherwise);
- :func:`chat_prompt`: the chat-templated text, without a template's leading BOS when the
  tokenizer adds one itself (Gemma 3's template writes ``<bos>``; its tokenizer adds another);
- :func:`check_length`: a prompt longer than the model's context is refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from models.base import ModelError

# Model types whose HF image processor takes a pixel budget: ``size`` with ``shortest_edge``
# and ``longest_edge`` in pixels (the ``min_pixels``/``max_pixels`` call kwargs are deprecated,
# to be removed in transformers 5.23: ``Qwen2VLImageProcessor._standardize_kwargs``).
PIXEL_BUDGET_TYPES = {"qwen2_vl", "qwen2_5_vl", "qwen3_vl"}
#: Qwen2-VL's own ``min_pixels`` (the image processor's default ``size.shortest_edge``).
QWEN_MIN_PIXELS = 56 * 56
#: Processor class -> model_type, for processors handed in without their checkpoint folder.
MODEL_TYPES = {"Qwen2_5_VLProcessor": "qwen2_5_vl", "Qwen2VLProcessor": "qwen2_vl",
               "Gemma3Processor": "gemma3", "SmolVLMProcessor": "smolvlm",
               "Idefics3Processor": "idefics3", "LlavaProcessor": "llava"}


def processor_kwargs(model_type: str, max_pixels: int, options: dict,
                     processor=None) -> dict:
    """The processor keyword arguments both backends pass for a spec.

    ``options.mm_processor_kwargs`` as written (e.g. SmolVLM's ``size: {longest_edge: 768}``);
    for the pixel-budget processors (Qwen2-VL family) the budget as ``size``: its
    ``longest_edge`` the spec's ``max_pixels`` and its ``shortest_edge`` the processor's own
    minimum (``processor``'s ``size``, else Qwen2-VL's 3,136 px) unless set there — both
    edges, as its image processor refuses a ``size`` without either. A ``min_pixels`` or
    ``max_pixels`` written in the options (the deprecated call kwargs) becomes that edge.
    """
    kwargs = dict(options.get("mm_processor_kwargs", {}))
    if model_type in PIXEL_BUDGET_TYPES:
        size = dict(kwargs.pop("size", None) or {})
        if "min_pixels" in kwargs:
            size.setdefault("shortest_edge", kwargs.pop("min_pixels"))
        if "max_pixels" in kwargs:
            size.setdefault("longest_edge", kwargs.pop("max_pixels"))
        size.setdefault("longest_edge", max_pixels)
        own = getattr(getattr(processor, "image_processor", None), "size", None) or {}
        size.setdefault("shortest_edge", own.get("shortest_edge") or QWEN_MIN_PIXELS)
        kwargs["size"] = {"shortest_edge": size.pop("shortest_edge"),
                          "longest_edge": size.pop("longest_edge"), **size}
    return kwargs


def fit_pixels(frames: np.ndarray, max_pixels: int) -> list:
    """PIL images of ``frames`` (T, H, W, 3), downscaled to at most ``max_pixels`` each."""
    from PIL import Image

    _, h, w, _ = frames.shape
    scale = min(1.0, (max_pixels / (h * w)) ** 0.5)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    images = [Image.fromarray(f) for f in frames]
    return images if scale == 1.0 else [im.resize(size, Image.BILINEAR) for im in images]


def pad_square(image):
    """``image`` (PIL) centred on a black square of its longest side: the aspect is kept when
    a processor resizes to a fixed square."""
    from PIL import Image

    w, h = image.size
    if w == h:
        return image
    side = max(w, h)
    out = Image.new(image.mode, (side, side))
    out.paste(image, ((side - w) // 2, (side - h) // 2))
    return out


def model_images(frames: np.ndarray, max_pixels: int, options: dict) -> list:
    """PIL images of ``frames`` (T, H, W, 3) as a model receives them: at most ``max_pixels``
    each (:func:`fit_pixels`), then padded to a square when ``options.pad_to_square``."""
    images = fit_pixels(frames, max_pixels)
    return [pad_square(im) for im in images] if options.get("pad_to_square") else images


def adds_bos(tokenizer) -> bool:
    """Whether encoding with special tokens puts the tokenizer's BOS first."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return False
    ids = tokenizer("a", add_special_tokens=True)["input_ids"]
    return bool(ids) and ids[0] == bos


def chat_prompt(processor, n_images: int, prompt: str) -> str:
    """The chat-templated text: ``n_images`` image slots first, the question last.

    Both engines tokenize this text with special tokens (the HF processor call; vLLM's
    multimodal processor calls the same), so a template that writes the BOS itself loses it
    here when the tokenizer adds one: exactly one BOS either way.
    """
    content = [{"type": "image"}] * n_images + [{"type": "text", "text": prompt}]
    text = processor.apply_chat_template([{"role": "user", "content": content}],
                                         add_generation_prompt=True, tokenize=False)
    tok = getattr(processor, "tokenizer", processor)
    bos = getattr(tok, "bos_token", None)
    if bos and text.startswith(bos) and adds_bos(tok):
        text = text[len(bos):]
    return text


def model_type(path: str | Path) -> str:
    """``model_type`` of the checkpoint folder's ``config.json``."""
    return json.loads((Path(path) / "config.json").read_text())["model_type"]


def context_limit(backend: str, device: str, options: dict, config: dict | None) -> int | None:
    """The most prompt tokens a model entry takes: ``options.max_model_len``, else vLLM's
    default here (``models.vllm.engine_args``: 8192 on GPU, 1024 on CPU) or the text model's
    ``max_position_embeddings`` (transformers); None when nothing says."""
    if "max_model_len" in options:
        return int(options["max_model_len"])
    if backend == "vllm":
        return 1024 if device == "cpu" else 8192
    text = (config or {}).get("text_config", config or {})
    limit = text.get("max_position_embeddings") if isinstance(text, dict) else None
    return int(limit) if limit else None


def check_length(n_tokens: int, limit: int | None, model: str) -> None:
    """Refuse a prompt of ``n_tokens`` over ``limit`` (one line naming model, tokens, limit)."""
    if limit is not None and n_tokens > limit:
        raise ModelError(f"model {model}: the prompt is {n_tokens} tokens, over its context of "
                         f"{limit} (max_model_len); show fewer or smaller images "
                         "(frames.images_per_question, max_pixels, options.mm_processor_kwargs)")
