"""Backend registry: names to ``"module:Class"`` strings, imported only when asked for.

Importing this module (or ``judge``, ``models``, ``verdict``) never imports torch,
transformers or vLLM, and never initialises CUDA.
"""

from __future__ import annotations

import importlib
from dataclasses import replace

from models.base import Backend, BackendSpec, ModelError

BACKENDS: dict[str, str] = {
    "fake": "models.fake:FakeBackend",
    "openai": "models.served:ServedBackend",
    "transformers": "models.hf:TransformersBackend",
    "vllm": "models.vllm:VllmBackend",
}


def backend_class(name: str) -> type[Backend]:
    """The backend class registered as ``name``; unknown names list the known ones."""
    if name not in BACKENDS:
        raise ModelError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))}")
    module, _, cls = BACKENDS[name].partition(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except ImportError as exc:
        extra = "gpu" if name == "vllm" else "base"
        raise ModelError(f"backend {name!r} needs {exc.name!r}, which is not installed "
                         f"(pip install -e '.[{extra}]')") from None


def create_backend(spec: BackendSpec) -> Backend:
    """Instantiate (not load) the backend a spec names; a spec with ``members`` gets one per
    checkpoint, answering with their mean (:class:`models.members.MemberMean`)."""
    cls = backend_class(spec.backend)
    if not spec.members:
        return cls(spec)
    from models.members import MemberMean

    return MemberMean(spec, [cls(replace(spec, path=path, members=()))
                             for path in (spec.path, *spec.members)])
