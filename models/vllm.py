"""The ``vllm`` backend: vLLM's offline ``LLM`` engine, batched, on GPU or (``vllm-cpu``) CPU.

Where it sits: one of the three model backends the judge asks (``models.registry``);
it answers the same closed questions as :mod:`models.hf` and must agree with it.

- One ``llm.generate`` call per :meth:`VllmBackend.score`, all requests together.
- Frames first, question last, through the model's own chat template (the same text
  :mod:`models.hf` builds), so the attempt and success prompts share their image prefix;
  prefix caching is on, so the second reuses the first's KV blocks.
- Exact P(answer): ``logprobs_mode="processed_logprobs"`` with ``temperature=1.0``,
  ``allowed_token_ids`` = every single-token spelling of every answer (``models.answers``)
  and ``logprobs`` = their count: the engine returns the log-softmax over the allowed
  tokens only; each answer is the log-sum-exp of its spellings', renormalised here.
- The answer-token mass (:meth:`VllmBackend.answer_mass`): the same request *without*
  ``allowed_token_ids`` (processed log-probabilities then equal the raw ones at
  temperature 1) and the top ``max_logprobs`` log-probabilities, summed over the answer
  tokens among them: a lower bound of the raw mass (a spelling outside the top k is left
  out; each such one holds less than the k-th largest probability).
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

from models.answers import flat_ids, group_logsumexp, softmax, variant_ids
from models.base import Backend, ModelError, ScoreRequest
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
# Log-probabilities one request may return: every spelling of every answer (26 letters x
# "A"/" A" = 52; yes/no: 12 at most), and the top-k the answer-mass probe reads.
MAX_LOGPROBS = 64
DEFAULT_IMAGES = 8  # images a prompt may carry when the version does not say (cameras apart)
MM_PROCESSOR_CACHE_GB = 1.0  # vLLM's default is 4 GiB a process


def engine_args(spec_device: str, dtype: str, max_pixels: int, gpu_share: float,
                options: dict, model_type: str, images: int | None = None,
                processor=None) -> dict:
    """The ``vllm.LLM`` keyword arguments for a backend spec (pure: no vLLM import).

    ``images``: the most images a prompt carries (the version's ``images_per_question``,
    ``BackendSpec.images_per_prompt``; unknown: 8); ``processor``: the model's, for the
    processor kwargs both backends pass (``models.processing.processor_kwargs``).
    ``options`` may set ``max_model_len``, ``max_images`` (images per prompt, over
    ``images``), ``enforce_eager``, ``mm_processor_kwargs``, ``mm_processor_cache_gb``
    (default 1 GiB), ``seed`` and ``engine`` (any further ``LLM`` keyword arguments,
    applied last).
    """
    on_cpu = spec_device == "cpu"
    side = max(1, int(max_pixels ** 0.5))
    images = int(options.get("max_images", images or DEFAULT_IMAGES))
    args = {
        "dtype": dtype,
        "seed": int(options.get("seed", 0)),
        "max_model_len": int(options.get("max_model_len", 1024 if on_cpu else 8192)),
        "enforce_eager": bool(options.get("enforce_eager", on_cpu)),
        "enable_prefix_caching": True,
        "logprobs_mode": "processed_logprobs",
        "max_logprobs": MAX_LOGPROBS,
        # Profile the worst case the judge can send (no more images than this, none larger
        # than max_pixels, no video: unset, vLLM reserves for its default video count).
        "limit_mm_per_prompt": {"image": {"count": images, "width": side, "height": side},
                                "video": 0},
        # vLLM caches processed images (LRU), by default 4 GiB in each of an engine's two
        # processes (front end and engine core): a bundle's questions share their frames,
        # which is all the reuse there is; 1 GiB holds ~26 bundles of 8 Qwen frames at 448².
        "mm_processor_cache_gb": float(options.get("mm_processor_cache_gb",
                                                   MM_PROCESSOR_CACHE_GB)),
    }
    # the same processor settings the transformers backend passes (models.processing)
    mm_kwargs = processor_kwargs(model_type, max_pixels, options, processor)
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
                                self.spec.gpu_share, self.spec.options, model_type,
                                self.spec.images_per_prompt, self.processor)
        self.llm = LLM(model=str(path), **self.args)
        self.tokenizer = self.llm.get_tokenizer()
        self._ids: dict[tuple[str, ...], tuple[tuple[int, ...], ...]] = {}

    def token_ids(self, choices: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
        """Per answer, the ids of its single-token spellings (cached per answer set)."""
        if choices not in self._ids:
            groups = variant_ids(self.tokenizer, choices, self.spec.name)
            limit = self.args["max_logprobs"]  # -1: vLLM's "no limit"
            if 0 <= limit < len(flat_ids(groups)):
                raise ModelError(f"model {self.spec.name}: {len(choices)} answers have "
                                 f"{len(flat_ids(groups))} answer tokens; at most {limit} "
                                 "(max_logprobs) are read from the engine")
            self._ids[choices] = groups
        return self._ids[choices]

    def _prompt(self, req: ScoreRequest) -> dict:
        images = model_images(req.frames, self.spec.max_pixels, self.spec.options)
        return {"prompt": chat_prompt(self.processor, len(images), req.prompt),
                "multi_modal_data": {"image": images}}

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        from vllm import SamplingParams

        if self.llm is None:
            raise ModelError(f"model {self.spec.name}: score() before load()")
        prompts, params, groups_per = [], [], []
        for req in requests:
            groups = self.token_ids(req.choices)
            ids = flat_ids(groups)
            prompts.append(self._prompt(req))
            params.append(SamplingParams(max_tokens=1, temperature=1.0, logprobs=len(ids),
                                         allowed_token_ids=ids))
            groups_per.append(groups)
        try:
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
        except ValueError as exc:  # vLLM refuses a prompt over max_model_len for the call
            raise ModelError(f"model {self.spec.name}: the engine refused the prompts: "
                             f"{str(exc).strip().splitlines()[0]}") from None
        return [self._probabilities(out, g) for out, g in zip(outputs, groups_per, strict=True)]

    def _probabilities(self, output, groups: tuple[tuple[int, ...], ...]) -> np.ndarray:
        """Per answer, the log-sum-exp of its spellings' log-probabilities at the first
        generated position (over the allowed tokens), softmax-normalised."""
        logprobs = output.outputs[0].logprobs[0]  # token id -> Logprob
        ids = flat_ids(groups)
        missing = [i for i in ids if i not in logprobs]
        if missing:
            raise ModelError(f"model {self.spec.name}: the engine returned no log-probability "
                             f"for answer tokens {missing} (got {sorted(logprobs)})")
        return softmax(group_logsumexp(np.array([logprobs[i].logprob for i in ids]), groups))

    def answer_mass(self, request: ScoreRequest) -> float:
        """A lower bound of the raw next-token probability of the answer tokens: the top
        ``max_logprobs`` of an unrestricted request, summed over the answer tokens among
        them (a token outside the top k is left out)."""
        from vllm import SamplingParams

        if self.llm is None:
            raise ModelError(f"model {self.spec.name}: answer_mass() before load()")
        ids = flat_ids(self.token_ids(request.choices))
        params = SamplingParams(max_tokens=1, temperature=1.0,
                                logprobs=self.args["max_logprobs"])
        out = self.llm.generate([self._prompt(request)], [params], use_tqdm=False)[0]
        logprobs = out.outputs[0].logprobs[0]
        return float(sum(np.exp(logprobs[i].logprob) for i in ids if i in logprobs))

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
