"""What ``rcjudge train`` is asked to do: its knobs (:class:`TrainConfig`) and which models
can train (:func:`training_specs`).

Below ``judge.learn.train`` (the training itself) and ``judge.learn.memory`` (its memory
plan), which both read these; it imports neither, so the two import one way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from judge.ensemble.version import JudgeVersion
from judge.learn.step import TrainError


@dataclass(frozen=True)
class TrainConfig:
    """Knobs of ``rcjudge train`` (the CLI's flags)."""

    seed: int = 0
    split_seed: int | None = None  # the split's own seed (None: ``seed``): members of one split
    epochs: int = 8
    patience: int = 2
    lr: float | None = None  # None: by the model's size and method (:func:`default_lr`)
    warmup_steps: int = 0  # linear learning-rate warm-up (models trained from scratch need it)
    batch: int = 8
    test_fraction: float = 0.2
    val_fraction: float = 0.15
    calib_fraction: float = 0.15
    hold_out_tasks: tuple[str, ...] = ()
    max_steps: int | None = None  # a cap on optimizer steps per model (CI's small run)
    lora: bool | None = None  # LoRA adapters (peft) instead of full fine-tuning; None: on CUDA
    lora_rank: int = 8
    gradient_checkpointing: bool | None = None  # recompute activations in backward; None: CUDA
    blank_images: float = 0.0  # P(a training question is shown blank frames): modality dropout
    travel_jitter: float = 0.0  # each training question's arm travel times [1/(1+J), 1+J]
    blank_text: float = 0.0  # P(a question shown its images is asked without {sensors} {motion})
    small_lr: float | None = None  # lr unset, a model under 1 B parameters: this (None: 2e-3)


#: ``rcjudge train --recipe``: named sets of knobs; a flag given explicitly overrides its knob.
#: ``judge-quality`` (the default) is the recipe behind docs/judge-quality.md's figures
#: (``bench/judge_quality.py``'s defaults); ``demo`` is what ``make demo`` trained with before
#: recipes had names (the old flag defaults, ``--epochs 8 --patience 3``): quick, on CPU.
RECIPES: dict[str, dict[str, float | int]] = {
    "judge-quality": {"epochs": 20, "patience": 5, "small_lr": 5e-4, "warmup_steps": 60,
                      "blank_images": 0.5, "blank_text": 0.0, "travel_jitter": 0.0},
    "demo": {"epochs": 8, "patience": 3, "warmup_steps": 0, "blank_images": 0.0,
             "blank_text": 0.0, "travel_jitter": 0.0},
}


#: Backends whose checkpoints ``rcjudge train`` can load through transformers and fine-tune.
TRAINABLE = ("transformers", "vllm")


def training_specs(parent: JudgeVersion, flag: str = "--from") -> list:
    """Each model's spec as training (and the calibration fitted with it) loads it: the same
    checkpoints, dtype and device, through the transformers backend. vLLM serves a checkpoint
    but cannot train it; it answers as transformers does within 1e-3 (``tests/vllm``).

    Raises:
        TrainError: a model served by a backend without weights to train (``fake``).
    """
    specs = []
    for entry in parent.models:
        if entry.backend not in TRAINABLE:
            raise TrainError(f"{flag} {parent.name}: model {entry.name} is served by the "
                             f"{entry.backend!r} backend, which has no weights to train; "
                             f"rcjudge train trains checkpoints served by "
                             f"{' or '.join(TRAINABLE)}")
        specs.append(replace(entry.spec(), backend="transformers"))
    return specs
