"""GPU check: the judge's questions through three real-architecture VLMs at realistic size.

    python -m bench.gpu_check [--tiny] [--backend auto|vllm|transformers] [--out FILE]

Builds Qwen2.5-VL-7B, Gemma-3-12B and SmolVLM2-2.2B (Idefics3) from their published
config sizes with random weights in bf16 (nothing is downloaded; a locally trained
tokenizer stands in for theirs, the vocabulary keeps its real size), asks the judge's
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

``--tiny`` builds the same three architectures at test size on CPU in float32: the script's
end-to-end check on a machine without a GPU. Numbers are medians of ``--repeats`` calls.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from models.base import BackendSpec, ScoreRequest
from models.tiny import CHAT_TEMPLATE, build_tokenizer, random_image_projection

MAX_PIXELS = 448 * 448  # rc-judge-v1's max_pixels
QWEN_SPECIAL = ["<|vision_start|>", "<|image_pad|>", "<|vision_end|>", "<|video_pad|>"]


def _pil(module: str, name: str):
    """The PIL variant of an image processor (no torchvision); the default class if absent."""
    try:
        short = module.split(".")[-1]
        return getattr(importlib.import_module(f"{module}.image_processing_pil_{short}"),
                       f"{name}Pil")
    except (ImportError, AttributeError):
        import transformers

        return getattr(transformers, name)


def qwen25vl(tiny: bool):
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    from transformers import Qwen2_5_VLProcessor as Proc

    tok = build_tokenizer(QWEN_SPECIAL)
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIAL}
    text = (dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, vocab_size=len(tok)) if tiny else
            dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                 num_attention_heads=28, num_key_value_heads=4, vocab_size=152064))
    text.update(rope_theta=1e6, max_position_embeddings=32768,
                rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24] if not tiny
                              else [4, 6, 6]})
    vision = (dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64,
                   fullatt_block_indexes=[1]) if tiny else
              dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
                   out_hidden_size=3584, fullatt_block_indexes=[7, 15, 23, 31]))
    vision.update(patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112)
    cfg = Qwen2_5_VLConfig(text_config=text, vision_config=vision,
                           image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                           vision_start_token_id=ids["<|vision_start|>"],
                           vision_end_token_id=ids["<|vision_end|>"])
    class Processor(Proc):  # images only: no video processor (it needs torchvision)
        def check_argument_for_proper_class(self, name, arg):
            return None if arg is None and name == "video_processor" else \
                super().check_argument_for_proper_class(name, arg)

    pixels = 56 * 56 if tiny else MAX_PIXELS
    image = _pil("transformers.models.qwen2_vl", "Qwen2VLImageProcessor")(
        min_pixels=56 * 56, max_pixels=pixels)
    try:  # a real video processor where torchvision works (vLLM loads the saved processor)
        from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

        video = Qwen2VLVideoProcessor()
    except Exception:  # no (working) torchvision: images only
        video = None
    template = CHAT_TEMPLATE.replace("@IMAGE@", "<|vision_start|><|image_pad|><|vision_end|>")
    proc = Processor(image_processor=image, tokenizer=tok, video_processor=video,
                     chat_template=template)
    return Qwen2_5_VLForConditionalGeneration, cfg, proc


def gemma3(tiny: bool):
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3Processor

    from models.tiny import EXTRA_TOKENS, EXTRA_WORDS, SPECIAL

    tok = build_tokenizer(SPECIAL["gemma3"], EXTRA_TOKENS["gemma3"], EXTRA_WORDS["gemma3"])
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL["gemma3"]}
    text = (dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, head_dim=32, vocab_size=len(tok), sliding_window=512)
            if tiny else
            dict(hidden_size=3840, intermediate_size=15360, num_hidden_layers=48,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=256, vocab_size=262208,
                 sliding_window=1024))
    size = 64 if tiny else 896
    vision = (dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                   image_size=64, patch_size=16) if tiny else
              dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27,
                   num_attention_heads=16, image_size=896, patch_size=14))
    per_image = 4 if tiny else 256
    cfg = Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=per_image,
                       boi_token_index=ids["<start_of_image>"],
                       eoi_token_index=ids["<end_of_image>"],
                       image_token_index=ids["<image_soft_token>"])
    image = _pil("transformers.models.gemma3", "Gemma3ImageProcessor")(
        size={"height": size, "width": size}, do_pan_and_scan=False)
    proc = Gemma3Processor(image_processor=image, tokenizer=tok, image_seq_length=per_image,
                           chat_template=CHAT_TEMPLATE.replace("@IMAGE@", "<start_of_image>"))
    return Gemma3ForConditionalGeneration, cfg, proc


def idefics3(tiny: bool):
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor

    from models.tiny import SPECIAL

    tok = build_tokenizer(SPECIAL["idefics3"])
    text = (dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, vocab_size=len(tok)) if tiny else
            dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=24,
                 num_attention_heads=32, num_key_value_heads=32, vocab_size=49280))
    size, patch, scale = (64, 16, 2) if tiny else (384, 14, 3)
    vision = (dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
              if tiny else
              dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27,
                   num_attention_heads=16))
    vision.update(image_size=size, patch_size=patch)
    cfg = Idefics3Config(text_config=dict(text, model_type="llama"), vision_config=vision,
                         scale_factor=scale, image_token_id=tok.convert_tokens_to_ids("<image>"))
    image = _pil("transformers.models.idefics3", "Idefics3ImageProcessor")(
        do_image_splitting=False, size={"longest_edge": size},
        max_image_size={"longest_edge": size})
    proc = Idefics3Processor(image_processor=image, tokenizer=tok,
                             image_seq_len=(size // patch) ** 2 // scale**2,
                             chat_template=CHAT_TEMPLATE.replace("@IMAGE@", "<image>"))
    return Idefics3ForConditionalGeneration, cfg, proc


MODELS = {"qwen2.5-vl-7b": qwen25vl, "gemma3-12b": gemma3, "smolvlm2-2.2b": idefics3}


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
    backend._ids = {}
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
    shares = {"qwen2.5-vl-7b": 0.45, "gemma3-12b": 0.35, "smolvlm2-2.2b": 0.15}
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
