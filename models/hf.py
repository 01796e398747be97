"""The ``transformers`` backend: any image-text-to-text VLM, on CPU or GPU.

Frames go first and the question last (the chat template's user turn), so the
attempt and success prompts share their image prefix. An answer's logit is the
log-sum-exp of its single-token spellings' next-token logits (``models.answers``);
P(answer) is the softmax of those over the question's answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from models.answers import flat_ids, variant_ids
from models.base import Backend, ModelError, ScoreRequest


def hub_vision_names(path: Path) -> None:
    """Rename ``vision_tower.*`` weights to the hub's ``vision_tower.vision_model.*``.

    transformers 5.x saves LLaVA's CLIP and Gemma 3's SigLIP towers without the
    ``vision_model`` level, while checkpoints on the hub (and vLLM's loader) keep it;
    transformers loads both (``models.tiny`` checks a reload tensor by tensor).
    """
    from safetensors.torch import load_file, save_file

    file = path / "model.safetensors"
    weights = load_file(file)
    renamed = {("vision_tower.vision_model." + k[len("vision_tower."):]
                if k.startswith("vision_tower.") and not k.startswith("vision_tower.vision_model.")
                else k): v for k, v in weights.items()}
    save_file(renamed, file, metadata={"format": "pt"})


def save_checkpoint(model, processor, path: str | Path) -> None:
    """Save a VLM and its processor as a hub-style checkpoint (vLLM-loadable weight names)."""
    path = Path(path)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    if model.config.model_type in ("gemma3", "llava"):
        hub_vision_names(path)


def _model_type(processor) -> str:
    """The model type of a processor handed in without its model (tests, bench)."""
    from models.processing import MODEL_TYPES

    return MODEL_TYPES.get(type(processor).__name__, "")


class TransformersBackend(Backend):
    """A Hugging Face checkpoint loaded with ``AutoModelForImageTextToText``."""

    def load(self) -> None:
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()  # no torchvision fallback notices, no progress bars
        hf_logging.disable_progress_bar()
        if self.spec.device == "cpu":
            torch.set_num_threads(int(self.spec.options.get("threads", 1)))
        try:
            self.processor = AutoProcessor.from_pretrained(self.spec.path)
            self.model = AutoModelForImageTextToText.from_pretrained(
                self.spec.path, dtype=getattr(torch, self.spec.dtype)).to(self.spec.device)
        except (OSError, ValueError) as exc:
            raise ModelError(f"model {self.spec.name}: cannot load {self.spec.path}: "
                             f"{exc}") from None
        self.model.eval()
        self.tokenizer = self.processor.tokenizer
        self._ids: dict[tuple[str, ...], tuple[tuple[int, ...], ...]] = {}
        self.model_config = self.model.config.to_dict()

    def token_ids(self, choices: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
        """Per answer, the ids of its single-token spellings (cached per answer set)."""
        if choices not in self._ids:
            self._ids[choices] = variant_ids(self.tokenizer, choices, self.spec.name)
        return self._ids[choices]

    def answer_logits(self, last, choices: tuple[str, ...]):
        """Per answer, the log-sum-exp of its spellings' logits in ``last`` (the vocabulary's
        next-token logits, (V,)): shape (len(choices),), differentiable."""
        import torch

        return torch.stack([torch.logsumexp(last[list(ids)], dim=0)
                            for ids in self.token_ids(choices)])

    def prompt_text(self, n_images: int, prompt: str) -> str:
        """The chat-templated text (``models.processing.chat_prompt``, as vLLM is sent)."""
        from models.processing import chat_prompt

        return chat_prompt(self.processor, n_images, prompt)

    def inputs(self, req: ScoreRequest, images: list | None = None):
        """The processor's tensors for ``req``: its frames as ``models.processing`` prepares
        them for both backends, the spec's processor kwargs, at most the model's context.

        Raises:
            ModelError: the prompt is longer than the context (one line: tokens, limit).
        """
        from models.processing import (
            check_length,
            context_limit,
            model_images,
            processor_kwargs,
        )

        config = getattr(self, "model_config", None) or {}
        if images is None:
            images = model_images(req.frames, self.spec.max_pixels, self.spec.options)
        kwargs = processor_kwargs(config.get("model_type", _model_type(self.processor)),
                                  self.spec.max_pixels, self.spec.options, self.processor)
        out = self.processor(text=[self.prompt_text(len(images), req.prompt)],
                             images=[images], return_tensors="pt", **kwargs)
        check_length(out["input_ids"].shape[1],
                     context_limit("transformers", self.spec.device, self.spec.options,
                                   config or None), self.spec.name)
        return out

    def next_logits(self, req: ScoreRequest):
        """The next-token logits over the whole vocabulary after ``req``'s prompt, (V,):
        computed at the last position only (``logits_to_keep=1``; every position's would be
        prompt tokens × vocabulary, kept for autograd in training)."""
        inputs = self.inputs(req).to(self.spec.device)
        return self.model(**inputs, logits_to_keep=1).logits[0, -1]

    def choice_logits(self, req: ScoreRequest):
        """One logit per answer (the log-sum-exp of its spellings' next-token logits), shape
        (len(choices),), with autograd; its softmax is P(answer).

        The one path from a request to the model's answer: ``score`` reads it under
        ``inference_mode``, ``rcjudge train`` backpropagates through it.
        """
        return self.answer_logits(self.next_logits(req), req.choices)

    def answer_mass(self, request: ScoreRequest) -> float:
        """The raw next-token probability (softmax over the whole vocabulary) of the answer
        tokens: every spelling of every answer."""
        import torch

        with torch.inference_mode():
            p = torch.softmax(self.next_logits(request).double(), dim=0)
        return float(p[flat_ids(self.token_ids(request.choices))].sum())

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        import torch

        out = []
        for req in requests:
            with torch.inference_mode():
                sel = self.choice_logits(req).double()
            out.append(torch.softmax(sel, dim=0).cpu().numpy())
        return out

    def score_shared_prefix(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        """:meth:`score`, reusing the KV cache of the prefix that requests over the same
        frames share (the images and the question's common start), computed once.

        Requests are grouped by their frames (the same array object, as the judge's
        questions about one bundle are); a group's common token prefix, which must hold
        every image token, is run once with the pixels, and each request continues from a
        copy of its cache with its own suffix. Same answers as :meth:`score` up to float
        rounding (``bench.prefix`` measures the time; ``tests/integration/test_prefix.py``
        the agreement).
        """
        import copy
        import inspect

        import torch

        # transformers 5.x renames the forward's past_key_values to cache (the old name warns)
        params = inspect.signature(self.model.forward).parameters
        cache_kw = "cache" if "cache" in params else "past_key_values"
        out: list[np.ndarray | None] = [None] * len(requests)
        groups: dict[int, list[int]] = {}
        for k, req in enumerate(requests):
            groups.setdefault(id(req.frames), []).append(k)
        for members in groups.values():
            from models.processing import model_images

            images = model_images(requests[members[0]].frames, self.spec.max_pixels,
                                  self.spec.options)
            encoded = [self.inputs(requests[k], images) for k in members]
            ids = [e["input_ids"][0] for e in encoded]
            n = min(len(i) for i in ids)
            common = 0
            while common < n - 1 and all(int(i[common]) == int(ids[0][common]) for i in ids):
                common += 1
            first = {k: v.to(self.spec.device) for k, v in encoded[0].items()}
            prefix = {k: (v[:, :common] if k in ("input_ids", "attention_mask",
                                                  "token_type_ids", "mm_token_type_ids")
                          else v) for k, v in first.items()}
            with torch.inference_mode():
                cache = self.model(**prefix, use_cache=True, logits_to_keep=1).past_key_values
                for last, (k, e) in enumerate(zip(members, encoded, strict=True),
                                              1 - len(members)):
                    suffix = e["input_ids"][:, common:].to(self.spec.device)
                    extra = {}
                    if "token_type_ids" in e:
                        extra["token_type_ids"] = e["token_type_ids"][:, common:].to(
                            self.spec.device)
                    extra[cache_kw] = cache if last == 0 else copy.deepcopy(cache)  # last: own
                    logits = self.model(input_ids=suffix,
                                        attention_mask=e["attention_mask"].to(self.spec.device),
                                        use_cache=True, logits_to_keep=1, **extra).logits
                    sel = self.answer_logits(logits[0, -1].double(), requests[k].choices)
                    out[k] = torch.softmax(sel, dim=0).cpu().numpy()
        return out

    def save(self, path: str | Path) -> None:
        """Write the (trained) model and its processor as a checkpoint folder."""
        save_checkpoint(self.model, self.processor, path)

    def close(self) -> None:
        self.model = None
        self.processor = None
