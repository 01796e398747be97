"""What a tiny profile's input size costs in training: one question's forward and backward.

    python -m bench.train_step [--profiles vision,vision-224] [--steps 20] [--json]

For each profile of ``models.tiny`` (built into a temporary folder), each of its three models
is asked the success question about three 320 x 240 camera frames, with the ``{sensors}`` and
``{motion}`` lines, as ``rcjudge train`` asks it (``choice_logits``, its processor included,
then ``backward``), capped by the pixel budget of the profile's judge version (160 x 120 for
``vision``, 320 x 240 for ``vision-224``). Prints ms per step per model and each profile's
sum against the first profile's, measured in the same run (this machine is noisy: read the
ratios). One thread, as the judge versions run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import numpy as np

#: The pixel cap per image of each profile's judge version (configs/judges/*.yaml).
MAX_PIXELS = {"plumbing": 64 * 48, "vision": 160 * 120, "vision-224": 320 * 240}
PROMPT = ("The images show a robot during one try at this task: pick up the puck and place it "
          "at the goal. The force sensors recorded: grasp at 0.5 s; the run lasted 3.0 s. The "
          "arm's joints travelled 7.6 rad and were still at the end. The fingers closed to 40 % "
          "of their widest at 0.5 s, gripping, and ended at 45 %. Did the robot complete the "
          "task successfully by the last image? Answer yes or no.")


def step_ms(path, max_pixels: int, frames: np.ndarray, steps: int) -> float:
    """Mean ms of one training step (forward with autograd, then backward) of one model."""
    from models.base import BackendSpec, ScoreRequest
    from models.hf import TransformersBackend

    backend = TransformersBackend(BackendSpec(name=path.name, backend="transformers",
                                              path=str(path), max_pixels=max_pixels))
    backend.load()
    backend.model.train()
    req = ScoreRequest(frames=frames, prompt=PROMPT, choices=("yes", "no"), kind="success")
    backend.choice_logits(req).sum().backward()  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        backend.choice_logits(req).sum().backward()
    return 1000 * (time.perf_counter() - t0) / steps


def main(argv: list[str] | None = None) -> None:
    from pathlib import Path

    import torch

    from models.tiny import build_tiny

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", default="vision,vision-224")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    frames = np.random.default_rng(0).integers(0, 256, (3, 240, 320, 3), dtype=np.uint8)
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for profile in args.profiles.split(","):
            built = build_tiny(Path(tmp) / profile, profile=profile)
            results[profile] = {m.name: round(step_ms(m.path, MAX_PIXELS[profile], frames,
                                                      args.steps), 1) for m in built}
    base = sum(next(iter(results.values())).values())
    if args.json:
        print(json.dumps({p: {**ms, "sum": round(sum(ms.values()), 1),
                              "ratio": round(sum(ms.values()) / base, 2)}
                          for p, ms in results.items()}, indent=2))
        return
    print("| profile | " + " | ".join(f"{a} ms" for a in next(iter(results.values())))
          + " | sum ms | against the first |")
    print("|---" * (len(next(iter(results.values()))) + 3) + "|")
    for profile, ms in results.items():
        print(f"| {profile} | " + " | ".join(f"{v:.1f}" for v in ms.values())
              + f" | {sum(ms.values()):.1f} | {sum(ms.values()) / base:.2f} |")


if __name__ == "__main__":
    main()
