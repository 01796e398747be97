"""Whether each vLLM engine's share of a GPU holds what it needs to start, in GiB.

Where it sits: beside ``judge.batch.plan`` (which GPU each replica shares, Σ shares ≤ 0.92)
and before any engine starts: ``rcjudge doctor`` prints a row per engine, ``rcjudge batch``
refuses a plan with an engine that cannot start. vLLM 0.32 (``v1/worker/gpu_worker.py``,
``determine_available_memory``) gives an engine ``gpu_memory_utilization`` (its
``gpu_share``) × the GPU's total memory; out of that come the weights, the activation peak of
its profiling run, its CUDA-graph estimate and non-torch memory, and what is left is KV
cache, which must hold at least one request of ``max_model_len`` tokens or the engine
refuses to start (``v1/core/kv_cache_utils.py``, ``check_enough_kv_cache_memory``). So an
engine needs::

    weights + overhead + KV of one max_model_len prompt  <=  share × GPU memory

* **weights**: every parameter (the model built from its config on the meta device: shapes,
  nothing allocated) × the dtype's bytes;
* **KV per token**: 2 (K and V) × layers × KV heads × head dim × the dtype's bytes (vLLM's
  KV cache is in the model's dtype unless told otherwise), for ``max_model_len`` tokens in
  blocks of 16; a sliding-window layer (Gemma 3's 40 of 48) is counted at the same length
  and one block more: vLLM keeps ``min(window − 1 + tokens in flight, max_model_len)`` + 1
  block for it, the full length at its H100/H200 default of 16,384 tokens in flight;
* **overhead**: :data:`OVERHEAD_GIB` per engine, an allowance, not a measurement (no GPU
  has run these engines here): the profiled activation peak, the CUDA-graph estimate and
  non-torch memory. vLLM prints its measured figures when an engine starts ("model weights
  take …; PyTorch activation peak memory takes …").

The sizes come from the model's ``config.json`` when its folder is present, else, for
rc-judge-v1's three architectures, from their published configs
(``models.production_configs``): so a user without a GPU, or without the weights, can ask.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

from judge.ensemble.version import JudgeVersion, ModelEntry

GIB = 2**30
KV_BLOCK = 16  # tokens per block of vLLM's KV cache on CUDA
OVERHEAD_GIB = 4.0  # activation peak + CUDA graphs + non-torch memory, per engine: allowance
BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class EngineSize:
    """What one engine of a model holds, from its config."""

    model: str
    parameters: int
    dtype_bytes: int
    layers: int  # attention layers at full length
    sliding_layers: int  # sliding-window layers (counted at full length + one block)
    kv_bytes_per_layer_token: int  # K and V of one token in one layer
    max_model_len: int
    source: str  # where the sizes came from
    overhead: int = int(OVERHEAD_GIB * GIB)

    @property
    def weights(self) -> int:
        return self.parameters * self.dtype_bytes

    @property
    def kv_per_token(self) -> int:
        """K and V of one token over every layer (what the KV room is divided by)."""
        return (self.layers + self.sliding_layers) * self.kv_bytes_per_layer_token

    @property
    def kv_one_prompt(self) -> int:
        """The KV cache one ``max_model_len`` prompt takes (vLLM's start-up minimum)."""
        tokens = math.ceil(self.max_model_len / KV_BLOCK) * KV_BLOCK
        return self.kv_bytes_per_layer_token * (self.layers * tokens
                                                + self.sliding_layers * (tokens + KV_BLOCK))

    @property
    def need(self) -> int:
        return self.weights + self.overhead + self.kv_one_prompt


@dataclass(frozen=True)
class EngineFit:
    """One engine's share of a GPU against what it needs."""

    size: EngineSize
    share: float  # gpu_memory_utilization
    gpu_gib: float  # the GPU's total memory

    @property
    def budget(self) -> int:
        return int(self.share * self.gpu_gib * GIB)

    @property
    def fits(self) -> bool:
        return self.budget >= self.size.need

    @property
    def kv_tokens(self) -> int:
        """Tokens the KV room holds (over every layer), 0 when there is none."""
        room = self.budget - self.size.weights - self.size.overhead
        return max(0, room) // self.size.kv_per_token

    @property
    def least_share(self) -> float:
        """The smallest share, in hundredths, that holds what it needs."""
        return math.ceil(100 * self.size.need / (self.gpu_gib * GIB) - 1e-9) / 100

    def parts(self) -> str:
        s = self.size
        return (f"weights {s.weights / GIB:.2f} + overhead {s.overhead / GIB:.2f} (allowance) + "
                f"KV {s.kv_one_prompt / GIB:.2f} for one {s.max_model_len:,}-token prompt")

    def detail(self) -> str:
        """The doctor's row: budget, need and its parts, the KV room in tokens."""
        s = self.size
        head = (f"{self.share:.2f} × {self.gpu_gib:.1f} GiB = {self.budget / GIB:.2f} GiB "
                f"{'>=' if self.fits else '<'} {s.need / GIB:.2f} GiB needed ({self.parts()})")
        if not self.fits:
            return f"{head}: raise gpu_share to at least {self.least_share:.2f}"
        return (f"{head}; KV room {self.kv_tokens:,} tokens = "
                f"{self.kv_tokens / s.max_model_len:.1f} prompts of {s.max_model_len:,} "
                f"(sizes: {s.source})")

    def refusal(self) -> str:
        return (f"{self.size.model}'s gpu_share {self.share:.2f} × {self.gpu_gib:g} GiB = "
                f"{self.budget / GIB:.2f} GiB < the {self.size.need / GIB:.2f} GiB it needs "
                f"({self.parts()}); raise its gpu_share to at least {self.least_share:.2f}")


def engine_fits(version: JudgeVersion, gpu_gib: float,
                sizes: Mapping[str, EngineSize]) -> list[EngineFit]:
    """Each engine that reserves its share (``plan.reserves_memory``) on CUDA and is sized in
    ``sizes``, against ``gpu_gib`` GiB GPUs."""
    from judge.batch.plan import memory_share, on_gpu, reserves_memory

    return [EngineFit(sizes[m.name], memory_share(m), gpu_gib) for m in version.models
            if on_gpu(m) and reserves_memory(m) and m.name in sizes]


def check_engines(version: JudgeVersion, gpu_gib: float,
                  sizes: Mapping[str, EngineSize]) -> None:
    """Refuse, in one line with the numbers, engines whose share cannot hold what they need.

    Raises:
        PlanError: naming each such engine, its share in GiB, its need and the least share.
    """
    from judge.batch.plan import PlanError

    short = [f for f in engine_fits(version, gpu_gib, sizes) if not f.fits]
    if short:
        raise PlanError(f"judge version {version.name!r} on GPUs of {gpu_gib:g} GiB: "
                        + "; ".join(f.refusal() for f in short))


def engine_size(entry: ModelEntry) -> EngineSize | None:
    """``entry``'s sizes from its folder's ``config.json``, else from rc-judge-v1's published
    config of the same repository or name (``models.production_configs``); None when
    neither says."""
    from pathlib import Path

    from models.processing import context_limit

    folder = Path(entry.resolved_path()) if entry.path else None
    if folder is not None and (folder / "config.json").is_file():
        from transformers import AutoConfig

        config, source = AutoConfig.from_pretrained(folder), "its config.json"
    else:
        from models.production_configs import CONFIGS, REPOS

        name = REPOS.get(entry.repo or "") or (entry.name if entry.name in CONFIGS else None)
        if name is None:
            return None
        config, source = _published_config(name), f"the published config of {name}"
    text = config.get_text_config()
    heads = text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    kinds = list(getattr(text, "layer_types", None) or [])
    sliding = sum(k == "sliding_attention" for k in kinds)
    size = BYTES[entry.dtype]
    limit = context_limit("vllm", entry.device, entry.options, config.to_dict())
    return EngineSize(model=entry.name, parameters=parameter_count(config), dtype_bytes=size,
                      layers=text.num_hidden_layers - sliding, sliding_layers=sliding,
                      kv_bytes_per_layer_token=2 * kv_heads * head_dim * size,
                      max_model_len=int(limit), source=source)


@functools.cache
def _published_config(name: str):
    """rc-judge-v1's model ``name`` at its published sizes (built once a process)."""
    from models.production_configs import build

    return build(name, tiny=False)[1]


def parameter_count(config) -> int:
    """Parameters of the architecture of ``config``, built on the meta device (shared
    tensors, e.g. tied embeddings, once)."""
    import torch
    from transformers import AutoModelForImageTextToText

    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    return sum(p.numel() for p in model.parameters())


def version_sizes(version: JudgeVersion) -> dict[str, EngineSize]:
    """The sizes of ``version``'s engines that reserve GPU memory (those that can be sized)."""
    from judge.batch.plan import on_gpu, reserves_memory

    out = {}
    for m in version.models:
        if on_gpu(m) and reserves_memory(m) and (size := engine_size(m)) is not None:
            out[m.name] = size
    return out
