"""Let PyPI's CUDA-built ``torchvision`` import beside CPU ``torch`` (``.venv-vllm`` only).

PyPI's ``torchvision`` wheels link their ops library (``torchvision/_C.so``) against
``libtorch_cuda.so``; beside ``torch==2.13.0+cpu`` it cannot load. torchvision itself
tolerates that (``extension._has_ops()`` is False and its pure-PyTorch transforms keep
working) except for two unguarded ``register_fake("torchvision::nms" / "::qnms")`` calls
in ``_meta_registrations.py``, which raise ``operator torchvision::nms does not exist``.
vLLM needs the import: ``vllm.model_executor.models.llava`` imports ``pixtral``, which
imports transformers' Pixtral image processor, which imports ``torchvision.transforms.v2``.

``make test-vllm`` copies this file into the venv as ``_rcjudge_torchvision_cpu.py`` with a
``.pth`` line that calls :func:`install` at interpreter start (so vLLM's model-inspection
subprocess gets it too). ``install`` adds an import hook that, on the first
``import torchvision`` and only when its ops library is unloadable, declares the two
operator schemas the library would have declared, without kernels: the import then
succeeds and calling ``torchvision.ops.nms`` still fails loudly ("Could not run
'torchvision::nms' with arguments from the 'CPU' backend"). torch is not imported until
torchvision is. Nothing in the scoring path calls a torchvision op.
"""

from __future__ import annotations

import importlib.abc
import sys

SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}
_LIBS: list = []  # keep the Library objects alive, or their definitions are dropped


def declare_missing_ops() -> list[str]:
    """Declare the torchvision op schemas that no loaded library provides; returns their names."""
    import torch

    missing = [name for name in SCHEMAS if not hasattr(torch.ops.torchvision, name)]
    if missing:
        lib = torch.library.Library("torchvision", "FRAGMENT")
        for name in missing:
            lib.define(SCHEMAS[name])
        _LIBS.append(lib)
    return missing


class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "torchvision":
            return None
        sys.meta_path.remove(self)
        _try_load_ops()
        declare_missing_ops()
        return None  # let the normal finders import torchvision


def _try_load_ops() -> None:
    """Load torchvision's own ops library when it loads (a CPU build): then nothing is faked."""
    import importlib.util
    from pathlib import Path

    import torch

    spec = importlib.util.find_spec("torchvision")
    so = Path(spec.origin).parent / "_C.so" if spec and spec.origin else None
    if so is not None and so.is_file():
        try:
            torch.ops.load_library(str(so))
        except OSError:
            pass


def install() -> None:
    """Add the import hook once (called from the venv's ``.pth`` file)."""
    if not any(isinstance(h, _Hook) for h in sys.meta_path):
        sys.meta_path.insert(0, _Hook())
