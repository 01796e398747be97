"""GPU check: the judge's questions through three real-architecture VLMs at realistic size.

    python -m bench.gpu_check [--tiny] [--backend auto|vllm|transformers] [--out FILE]
    python -m bench.gpu_check --production [--tiny] ...  # rc-judge-v1 (bench.gpu_production)

Builds Qwen2.5-VL-7B, Gemma-3-12B and SmolVLM2-2.2B from their published config sizes with
random weights in bf16 and their production processors (``models.production``: published
settings and chat templates; nothing is downloaded; a locally trained tokenizer stands in
for theirs, the vocabulary keeps its real size), asks the judge's
attempt and success questions over 8 frames at the production pixel cap, and prints one
JSON object: per model, per-call latency of the attempt+success pair.

- ``vllm`` backend (when vLLM imports): the checkpoint folder holds config + processor only
  and the engine uses ``load_format="dummy"`` (random weights, no 45 GB of safetensors).
  ``pair_cold_ms``: new frames every call (no prefix to reuse); ``pair_warm_ms``: the same
  frames again (image prefix and encoder output reused); ``success_after_attempt_ms``: the
  success question alone right after the attempt on the same frames (the prefix-cache case
  the judge relies on).
- ``transformers`` backend (the lent H200 has no vLLM and nothing installable): the model
  is built directly on the device and handed to :class:`models.hf.TransformersBackend`;
  it has no prefix cache, so only ``pair_cold_ms`` is measured (``prefix_reuse: false``).

``--tiny`` builds the same three architectures at test size on CPU in float32, their
processors at test geometry with the same settings (SmolVLM splits, Gemma's input is a
fixed square): the script's end-to-end check on a machine without a GPU. Numbers are
medians of ``--repeats`` calls.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

from models.base import BackendSpec, ScoreRequest
from models.production import NAMES
from models.production_configs import build
from models.tiny import random_image_projection

MAX_PIXELS = 448 * 448  # rc-judge-v1's max_pixels
#: rc-judge-v1's models, built by models.production_configs.build(name, tiny): the production
#: processors (published settings and templates; at test geometry when tiny) and matching
#: configs at real or test widths. Each builder: tiny -> (model class, config, processor).
MODELS = {name: partial(build, name) for name in NAMES}


def questions(rng: np.random.Generator, n_frames: int, h: int, w: int) -> list[ScoreRequest]:
    """The judge's attempt and success questions (the tiny judge's prompts) over new frames."""
    from judge.ensemble.prompts import yes_no_requests
    from judge.ensemble.version import load_judge_version

    frames = rng.integers(0, 256, (n_frames, h, w, 3), dtype=np.uint8)  # (K, H, W, 3)
    return yes_no_requests(frames, "put the mug on the tray", load_judge_version("tiny"))


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return round(float(np.median(times)) * 1e3, 2)


def run_transformers(name, build, args, device, dtype) -> dict:
    import torch

    from models.hf import TransformersBackend

    cls, cfg, proc = build(args.tiny)
    t0 = time.perf_counter()
    with torch.device(device):
        torch.manual_seed(0)
        model = cls._from_config(cfg, dtype=getattr(torch, dtype)).eval()
        random_image_projection(model)  # Gemma 3's is zeros: its images would not count
    build_s = time.perf_counter() - t0
    backend = TransformersBackend(BackendSpec(name=name, backend="transformers", dtype=dtype,
                                              device=device, max_pixels=args.max_pixels))
    backend.model, backend.processor, backend.tokenizer = model, proc, proc.tokenizer
    backend._ids, backend.model_config = {}, cfg.to_dict()
    rng = np.random.default_rng(0)
    backend.score(questions(rng, args.frames, args.height, args.width))  # warm-up

    def cold():
        backend.score(questions(rng, args.frames, args.height, args.width))
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    out = {"backend": "transformers", "prefix_reuse": False, "build_s": round(build_s, 2),
           "parameters": sum(p.numel() for p in model.parameters()),
           "pair_cold_ms": timed(cold, args.repeats)}
    if device.startswith("cuda"):
        out["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    backend.close()
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return out


def run_vllm(name, build, args, device, dtype, share) -> dict:
    from models.vllm import VllmBackend

    cls, cfg, proc = build(args.tiny)
    folder = Path(tempfile.mkdtemp(prefix=f"gpu-check-{name}-"))
    cfg.architectures = [cls.__name__]
    cfg.save_pretrained(folder)
    proc.save_pretrained(folder)
    engine = {"load_format": "dummy"}
    spec = BackendSpec(name=name, backend="vllm", path=str(folder), dtype=dtype, device=device,
                       max_pixels=args.max_pixels, gpu_share=share,
                       options={"max_images": args.frames, "engine": engine,
                                "max_model_len": 1024 if args.tiny else 8192})
    backend = VllmBackend(spec)
    t0 = time.perf_counter()
    backend.load()
    startup_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    backend.score(questions(rng, args.frames, args.height, args.width))  # warm-up
    fixed = questions(rng, args.frames, args.height, args.width)
    backend.score(fixed)
    out = {"backend": "vllm", "prefix_reuse": True, "startup_s": round(startup_s, 2),
           "pair_cold_ms": timed(lambda: backend.score(
               questions(rng, args.frames, args.height, args.width)), args.repeats),
           "pair_warm_ms": timed(lambda: backend.score(fixed), args.repeats)}

    def attempt_then_success():
        a, s = questions(rng, args.frames, args.height, args.width)
        backend.score([a])
        t0 = time.perf_counter()
        backend.score([s])
        return time.perf_counter() - t0

    out["success_after_attempt_ms"] = round(float(np.median(
        [attempt_then_success() for _ in range(args.repeats)])) * 1e3, 2)
    backend.close()
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--production" in argv:  # rc-judge-v1 itself: bench.gpu_production
        from bench.gpu_production import main as production

        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
        return production(argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tiny", action="store_true", help="test sizes on CPU, float32")
    p.add_argument("--backend", default="auto", choices=("auto", "vllm", "transformers"))
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset")
    p.add_argument("--frames", type=int, default=8)
    p.add_argument("--height", type=int, default=240)
    p.add_argument("--width", type=int, default=640, help="2 cameras of 320×240 tiled")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", help="also write the JSON here")
    args = p.parse_args(argv)
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout: the JSON only
    import torch

    device = "cuda" if torch.cuda.is_available() and not args.tiny else "cpu"
    dtype = "float32" if device == "cpu" else "bfloat16"
    args.max_pixels = 4096 if args.tiny else MAX_PIXELS
    has_vllm = importlib.util.find_spec("vllm") is not None
    backend = ("vllm" if has_vllm else "transformers") if args.backend == "auto" else args.backend
    from judge.ensemble.version import load_judge_version

    shares = {m.name: m.gpu_share for m in load_judge_version("rc-judge-v1").models}
    report = {"backend": backend, "vllm_importable": has_vllm, "device": device,
              "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
              "torch": torch.__version__, "dtype": dtype, "tiny": args.tiny,
              "frames": [args.frames, args.height, args.width], "max_pixels": args.max_pixels,
              "repeats": args.repeats, "models": {}}
    if backend != "vllm" and args.backend == "auto":
        report["note"] = "vLLM is not installed here: the transformers backend was measured"
    for name in args.models.split(","):
        try:
            if backend == "vllm":
                r = run_vllm(name, MODELS[name], args, device, dtype, shares[name])
            else:
                r = run_transformers(name, MODELS[name], args, device, dtype)
        except Exception as exc:  # one model failing must not hide the others' figures
            r = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        report["models"][name] = r
        print(json.dumps({name: r}), file=sys.stderr, flush=True)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0 if all("error" not in r for r in report["models"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
