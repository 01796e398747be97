"""GPU check of the production judge itself: rc-judge-v1's config, real-size models, dummy weights.

    python -m bench.gpu_check --production [--tiny] [--backend auto|vllm|transformers]
        [--cameras 2] [--width 320] [--height 240] [--batch 32] [--repeats 5] [--out FILE]

Reads ``configs/judges/rc-judge-v1.yaml`` (no side config): each model's processor settings
(``options``, through :mod:`models.processing` as both backends apply them), ``max_pixels``,
``gpu_share``, ``frames.images_per_question``, camera tiling and its prompts. Builds each
architecture at its published size (``models.production_configs``) with random weights: vLLM
``load_format="dummy"`` where vLLM imports (engines started one after another on one GPU,
each with its share, all kept running), else transformers from the config on the device.
``--tiny``: test widths on CPU, float32, the same production processors and settings.

Per model it prints: ``prompt_tokens`` (attempt / success, the engine's ``max_model_len``),
``load_s`` and ``startup_s``, memory (``max_memory_gib`` transformers on CUDA;
``reserved_gib`` = share × the GPU's memory for vLLM), ``kv_tokens`` (vLLM: KV-cache
capacity in tokens and in prompts), ``judgments_per_hour`` at saturation (``--batch``
attempt+success pairs in one call), ``p50_s`` of one pair, and ``usd_per_judgment`` at
``configs/pricing.yaml`` (the model's GPU share for an hour over its judgments an hour; on
CPU one vCPU). The ensemble line: the slowest model's rate, the sum of the costs.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np

VERSION = "rc-judge-v1"
INSTRUCTION = "put the mug on the tray"


def pairs(version, rng: np.random.Generator, n: int, cameras: int, h: int, w: int) -> list:
    """``n`` attempt+success pairs, each over new frames tiled as the judge tiles them."""
    from judge.ensemble.prompts import question_images, yes_no_requests

    k = version.frames.images_per_question
    out = []
    for _ in range(n):
        cams = rng.integers(0, 256, (cameras, k, h, w, 3), dtype=np.uint8)  # (n_cams, K, H, W, 3)
        out += yes_no_requests(question_images(cams, version), INSTRUCTION, version)
    return out


def prompt_tokens(proc, model_type: str, spec, requests) -> list[int]:
    """The prompt tokens of ``requests`` as both backends build them."""
    from models.processing import chat_prompt, model_images, processor_kwargs

    kwargs = processor_kwargs(model_type, spec.max_pixels, spec.options, proc)
    counts = []
    for req in requests:
        images = model_images(req.frames, spec.max_pixels, spec.options)
        text = chat_prompt(proc, len(images), req.prompt)
        counts.append(len(proc(text=[text], images=[images], **kwargs)["input_ids"][0]))
    return counts


def throughput(backend, version, args, rng, sync) -> dict:
    """p50 of one pair (new frames each call) and judgments/hour for ``--batch`` pairs."""
    times = []
    for _ in range(args.repeats):
        reqs = pairs(version, rng, 1, args.cameras, args.height, args.width)
        t0 = time.perf_counter()
        backend.score(reqs)
        sync()
        times.append(time.perf_counter() - t0)
    batch = pairs(version, rng, args.batch, args.cameras, args.height, args.width)
    t0 = time.perf_counter()
    backend.score(batch)
    sync()
    wall = time.perf_counter() - t0
    return {"p50_s": round(float(np.median(times)), 4),
            "judgments_per_hour": round(3600 * args.batch / wall)}


def _spec(entry, version, device: str, dtype: str, folder: str = "",
          engine: dict | None = None):
    """The entry's spec on ``device``; for vLLM with ``engine`` added, as many images a
    prompt as the version shows, and (on CPU) the GPU's default context of 8,192."""
    from models.base import BackendSpec

    spec = entry.spec()
    options = dict(spec.options)
    if engine is not None:
        options["engine"] = {**options.get("engine", {}), **engine}
        options.setdefault("max_images", version.frames.images_per_question)
        if device == "cpu":
            options.setdefault("max_model_len", 8192)
    return BackendSpec(name=spec.name, backend=spec.backend, path=folder, dtype=dtype,
                       device=device, max_pixels=spec.max_pixels, gpu_share=spec.gpu_share,
                       options=options)


def run_transformers(entry, version, args, device, dtype, rng) -> dict:
    import torch

    from models.hf import TransformersBackend
    from models.production_configs import build
    from models.tiny import random_image_projection

    cls, cfg, proc = build(entry.name, args.tiny, processor_tiny=False)
    on_cuda = device.startswith("cuda")
    t0 = time.perf_counter()
    with torch.device(device):
        torch.manual_seed(0)
        model = cls._from_config(cfg, dtype=getattr(torch, dtype)).eval()
        random_image_projection(model)
    load_s = time.perf_counter() - t0
    backend = TransformersBackend(_spec(entry, version, device, dtype))
    backend.model, backend.processor, backend.tokenizer = model, proc, proc.tokenizer
    backend._ids, backend.model_config = {}, cfg.to_dict()
    sync = torch.cuda.synchronize if on_cuda else (lambda: None)
    t0 = time.perf_counter()
    backend.score(pairs(version, rng, 1, args.cameras, args.height, args.width))  # warm-up
    sync()
    out = {"backend": "transformers", "load_s": round(load_s, 2),
           "startup_s": round(time.perf_counter() - t0, 2),
           "parameters": sum(p.numel() for p in model.parameters()),
           **throughput(backend, version, args, rng, sync)}
    if on_cuda:
        out["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    out["_proc"], out["_type"] = proc, cfg.model_type
    backend.close()
    del model
    if on_cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return out


def run_vllm(entry, version, args, device, dtype, rng, engines: list) -> dict:
    from models.production_configs import build
    from models.vllm import VllmBackend

    _, cfg, proc = build(entry.name, args.tiny, processor_tiny=False)
    folder = Path(tempfile.mkdtemp(prefix=f"gpu-production-{entry.name}-"))
    cfg.save_pretrained(folder)
    proc.save_pretrained(folder)
    backend = VllmBackend(_spec(entry, version, device, dtype, str(folder),
                                {"load_format": "dummy"}))
    t0 = time.perf_counter()
    backend.load()  # loading the dummy weights is part of the engine's start
    startup_s = time.perf_counter() - t0
    engines.append(backend)  # kept running: the next engine starts beside it
    out = {"backend": "vllm", "load_s": None, "startup_s": round(startup_s, 2),
           "args": {k: v for k, v in backend.args.items() if k != "engine"}}
    cache = getattr(getattr(backend.llm.llm_engine, "vllm_config", None), "cache_config", None)
    blocks = getattr(cache, "num_gpu_blocks", None)
    if blocks:
        out["kv_tokens"] = int(blocks * cache.block_size)
    if device.startswith("cuda"):
        import torch

        total = torch.cuda.get_device_properties(0).total_memory
        out["reserved_gib"] = round(entry.gpu_share * total / 2**30, 2)
    backend.score(pairs(version, rng, 1, args.cameras, args.height, args.width))  # warm-up
    out.update(throughput(backend, version, args, rng, lambda: None))
    out["_proc"], out["_type"] = proc, cfg.model_type
    return out


def cost(r: dict, entry, device: str, price: dict) -> float:
    """USD a judgment: the resource the model holds for an hour over its judgments an hour."""
    hour = entry.gpu_share * price["gpu_hour_usd"] if device.startswith("cuda") \
        else price["cpu_hour_usd"]
    return round(hour / max(r["judgments_per_hour"], 1), 8)


def measure(entry, version, args, device, dtype, backend: str, engines: list) -> dict:
    """One model's figures (see the module docstring)."""
    from judge.ensemble.judge import pricing
    from models.processing import context_limit

    rng = np.random.default_rng(0)
    r = (run_vllm(entry, version, args, device, dtype, rng, engines) if backend == "vllm"
         else run_transformers(entry, version, args, device, dtype, rng))
    proc, mtype = r.pop("_proc"), r.pop("_type")
    spec = _spec(entry, version, device, dtype, engine={} if backend == "vllm" else None)
    attempt, success = prompt_tokens(proc, mtype, spec, pairs(version, rng, 1, args.cameras,
                                                              args.height, args.width))
    limit = context_limit(backend, device, spec.options, {"max_position_embeddings": 8192})
    r["prompt_tokens"] = {"attempt": attempt, "success": success, "max_model_len": limit}
    if "kv_tokens" in r:
        r["kv_prompts"] = r["kv_tokens"] // max(attempt, success)
    r["usd_per_judgment"] = cost(r, entry, device, pricing())
    return r


def main(argv: list[str] | None = None) -> int:
    import argparse
    import importlib.util
    import sys

    import torch

    from judge.ensemble.version import load_judge_version

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--production", action="store_true", help="(this mode)")
    p.add_argument("--tiny", action="store_true", help="test widths on CPU, float32")
    p.add_argument("--backend", default="auto", choices=("auto", "vllm", "transformers"))
    p.add_argument("--cameras", type=int, default=2, help="cameras tiled side by side")
    p.add_argument("--width", type=int, default=320, help="one camera's frame width")
    p.add_argument("--height", type=int, default=240)
    p.add_argument("--batch", type=int, default=32, help="pairs in the saturation call")
    p.add_argument("--repeats", type=int, default=5, help="single-pair calls for the p50")
    p.add_argument("--out", help="also write the JSON here")
    args = p.parse_args(argv)
    version = load_judge_version(VERSION)
    device = "cuda" if torch.cuda.is_available() and not args.tiny else "cpu"
    if device == "cpu":
        torch.set_num_threads(1)  # a shared CPU: one thread is faster than two contending
    has_vllm = importlib.util.find_spec("vllm") is not None
    backend = ("vllm" if has_vllm else "transformers") if args.backend == "auto" else args.backend
    report = {"version": VERSION, "backend": backend, "device": device, "tiny": args.tiny,
              "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
              "images_per_question": version.frames.images_per_question,
              "layout": [args.cameras, args.width, args.height], "batch": args.batch,
              "models": {}}
    engines: list = []
    for entry in version.models:
        dtype = entry.dtype if device == "cuda" else "float32"
        try:
            r = measure(entry, version, args, device, dtype, backend, engines)
        except Exception as exc:  # one model failing must not hide the others' figures
            r = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        report["models"][entry.name] = r
        print(json.dumps({entry.name: r}), file=sys.stderr, flush=True)
    for engine in engines:
        engine.close()
    ok = [r for r in report["models"].values() if "error" not in r]
    if len(ok) == len(version.models):
        report["ensemble"] = {"judgments_per_hour": min(r["judgments_per_hour"] for r in ok),
                              "p50_s_sum": round(sum(r["p50_s"] for r in ok), 4),
                              "usd_per_judgment": round(sum(r["usd_per_judgment"]
                                                            for r in ok), 8)}
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0 if "ensemble" in report else 1
