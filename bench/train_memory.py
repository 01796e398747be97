"""Training memory, measured against ``judge.learn.memory``'s estimate; rc-judge-v1's estimate.

    python -m bench.train_memory [--version tiny] [--json]     # measured vs estimated, CPU
    python -m bench.train_memory --production [--json]         # rc-judge-v1 at real size

Measured: one real training step of each model (``train.accumulate`` on the plan's longest
question, gradient clipping, AdamW) on CPU, after a first step has made AdamW's states, as
full fine-tuning and as LoRA, with and without gradient checkpointing. Its peak is the
weights and AdamW's states alive before the step plus the most bytes of tensors the step
had alive at once (:class:`LiveTensors`: every tensor an operator creates, forward,
backward and optimizer alike, counted until torch frees its storage) — torch's tensors,
not the allocator's slack. ``--production``: rc-judge-v1's three models from their
published config sizes (``bench.gpu_check``'s builders, on the meta device: nothing is
allocated) with the version's own settings (bf16 on CUDA: LoRA, checkpointing), the plan's
table (docs/train.md).
"""

from __future__ import annotations

import argparse
import json
import weakref

#: The frame shape (H, W) measured and estimated alike: two 320 x 240 cameras side by side.
FRAME = (240, 640)


class LiveTensors:
    """A torch dispatch mode counting the bytes of tensors alive that were created under it
    (by storage: views and in-place results count once); ``peak`` the most at once."""

    def __new__(cls):
        from torch.utils._python_dispatch import TorchDispatchMode

        class Mode(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.live: dict[int, int] = {}
                self.current = self.peak = 0

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                import torch
                from torch.utils._pytree import tree_flatten

                out = func(*args, **(kwargs or {}))
                for t in tree_flatten(out)[0]:
                    if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                        self._track(t.untyped_storage())
                return out

            def _track(self, storage) -> None:
                key, size = storage.data_ptr(), storage.nbytes()
                if size and key not in self.live:
                    self.live[key] = size
                    self.current += size
                    self.peak = max(self.peak, self.current)
                    weakref.finalize(storage, self._free, key)

            def _free(self, key: int) -> None:
                self.current -= self.live.pop(key, 0)

        return Mode()


def measure(entry, version, lora: bool, checkpointing: bool, rank: int = 8) -> dict:
    """The measured peak bytes of one training step of ``entry``'s model on CPU."""
    import numpy as np
    import torch

    from judge.learn import train
    from judge.learn.memory import longest_request
    from models.registry import create_backend

    spec = train.training_specs(version.model_copy(update={"models": (entry,)}))[0]
    backend = create_backend(spec)
    backend.load()
    if checkpointing:
        train.enable_checkpointing(backend)
    if lora:
        train.add_lora(backend, rank, 0)
    backend.model.train()
    frames = np.random.default_rng(0).integers(
        0, 256, (version.frames.images_per_question, *FRAME, 3), dtype=np.uint8)
    batch = [(longest_request(version, frames), 0)]
    params = [p for p in backend.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-6)

    def step() -> None:
        opt.zero_grad()
        train.accumulate(backend, batch)
        torch.nn.utils.clip_grad_norm_(params, train.CLIP_NORM)
        opt.step()

    step()  # AdamW's states exist from here on, as in every step but the first
    opt.zero_grad()
    held = sum(p.numel() * p.element_size() for p in backend.model.parameters())
    held += sum(t.numel() * t.element_size() for s in opt.state.values()
                for t in s.values() if torch.is_tensor(t) and t.dim() > 0)
    with LiveTensors() as mode:
        step()
    backend.close()
    return {"held": held, "step_peak": mode.peak, "peak": held + mode.peak}


def compare(version_name: str = "tiny") -> list[dict]:
    """Measured and estimated peak of each model of a CPU version, in four configurations."""
    from transformers import AutoConfig, AutoProcessor

    from judge.ensemble.version import load_judge_version
    from judge.learn.memory import estimate as estimated
    from judge.learn.memory import meta_model, prompt_size
    from judge.learn.train import training_specs

    version = load_judge_version(version_name)
    rows = []
    for entry, spec in zip(version.models, training_specs(version), strict=True):
        config = AutoConfig.from_pretrained(spec.path)
        tokens, patches = prompt_size(AutoProcessor.from_pretrained(spec.path), spec, config,
                                      version, (FRAME,))
        model = meta_model(config)
        for lora in (False, True):
            for ckpt in (False, True):
                est = estimated(model, tokens, patches, spec.dtype, 8 if lora else None, ckpt)
                got = measure(entry, version, lora, ckpt)
                rows.append({"model": entry.name, "lora": lora, "checkpointing": ckpt,
                             "tokens": tokens, "patches": patches,
                             "measured_peak": got["peak"], "estimated_peak": est["peak"],
                             "ratio": round(est["peak"] / got["peak"], 2)})
    return rows


def production() -> list[dict]:
    """rc-judge-v1's plan rows from the published config sizes (nothing allocated)."""
    from bench.gpu_check import MODELS
    from judge.ensemble.version import load_judge_version
    from judge.learn.memory import plan_model
    from judge.learn.train import TrainConfig, training_specs

    version = load_judge_version("rc-judge-v1")
    rows = []
    for entry, spec in zip(version.models, training_specs(version), strict=True):
        _, config, processor = MODELS[entry.name](False)
        rows.append(plan_model(entry.name, config, processor, spec, version, TrainConfig()))
    return rows


def main(argv: list[str] | None = None) -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default="tiny")
    ap.add_argument("--production", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.production:
        from judge.learn.memory import format_plan

        rows = production()
        print(json.dumps(rows, indent=2) if args.json else format_plan(
            [{**r, "device_memory": 0, "fits": True} for r in rows]))
        return
    rows = compare(args.version)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print("| model | LoRA | checkpointing | tokens | patches | measured MiB | estimated MiB | "
          "estimate / measured |\n|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['lora']} | {r['checkpointing']} | {r['tokens']} | "
              f"{r['patches']} | {r['measured_peak'] / 2**20:.2f} | "
              f"{r['estimated_peak'] / 2**20:.2f} | {r['ratio']} |")


if __name__ == "__main__":
    main()
