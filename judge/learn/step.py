"""One training step of ``rcjudge train`` and what it trains: the loss on the answer logits,
gradient accumulation one question at a time, LoRA adapters (peft), gradient checkpointing,
the best epoch's snapshot, the default learning rates. ``judge.learn.train`` runs the epochs
with these; ``judge.learn.memory`` estimates what they hold.
"""

from __future__ import annotations

from collections.abc import Sequence

from judge.errors import JudgeError
from models.base import ScoreRequest


class TrainError(JudgeError, ValueError):
    """Nothing to train on, a part of the split left empty, or a backend that cannot train."""


def question_loss(logits, target: int):
    """Cross-entropy of one question's answer logits (len(choices),) against the right
    answer's index; the target is made on the logits' device (cuda:0 on a GPU node)."""
    import torch

    target_t = torch.tensor([target], device=logits.device)
    return torch.nn.functional.cross_entropy(logits[None], target_t)


def _loss(backend, batch: Sequence[tuple[ScoreRequest, int]]):
    return sum(question_loss(backend.choice_logits(req), t) for req, t in batch) / len(batch)


def accumulate(backend, batch: Sequence[tuple[ScoreRequest, int]]) -> float:
    """Backpropagate ``batch``'s mean loss one question at a time: each question's
    loss / len(batch) is backpropagated as soon as it is computed, so one question's graph
    is held at a time and the gradients add up to those of :func:`_loss`'s batch (the same
    sum, up to float rounding). Returns the batch's mean loss."""
    total = 0.0
    for req, t in batch:
        loss = question_loss(backend.choice_logits(req), t) / len(batch)
        loss.backward()
        total += float(loss.detach())
    return total


def mean_loss(backend, data: Sequence[tuple[ScoreRequest, int]]) -> float:
    import torch

    if not data:
        return float("nan")
    with torch.inference_mode():
        return float(sum(float(_loss(backend, [d])) for d in data) / len(data))


#: Gradients are clipped to this global norm (one bad batch cannot undo an epoch).
CLIP_NORM = 1.0

#: Attention projections of the text and vision transformers, the modules LoRA adapts, by
#: name; Qwen2.5-VL's vision tower fuses q, k and v into ``qkv`` and names its output ``proj``,
#: which counts inside an attention module (``ATTENTION``) only.
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "out_proj", "qkv")
ATTENTION = ("attn", "attention", "self_attn")


def lora_targets(model) -> list[str]:
    """The full names of ``model``'s linear attention projections (:data:`LORA_TARGETS`)."""
    import torch

    names = []
    for name, module in model.named_modules():
        parent, _, leaf = name.rpartition(".")
        fused = leaf == "proj" and parent.rpartition(".")[2] in ATTENTION
        if isinstance(module, torch.nn.Linear) and (leaf in LORA_TARGETS or fused):
            names.append(name)
    return names


def add_lora(backend, rank: int, seed: int) -> None:
    """Wrap the backend's model with LoRA adapters (peft) on every attention projection of
    its text and vision towers (:func:`lora_targets`); only the adapters train."""
    import torch

    try:
        from peft import LoraConfig, get_peft_model
    except ImportError:
        raise TrainError("--lora needs peft: pip install -e '.[train]'") from None
    torch.manual_seed(seed)
    config = LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0,
                        target_modules=lora_targets(backend.model))
    backend.model = get_peft_model(backend.model, config)


def enable_checkpointing(backend) -> None:
    """Gradient checkpointing on every layer of the backend's model that supports it (the
    text and vision towers' transformer layers): their activations are recomputed in the
    backward pass instead of kept (non-reentrant, so it works with frozen inputs and peft).
    Active in ``train()`` mode only. Call before :func:`add_lora`.

    Raises:
        TrainError: a model whose architecture does not support it.
    """
    model = backend.model
    if not getattr(model, "supports_gradient_checkpointing", False):
        raise TrainError(f"model {backend.spec.name}: {type(model).__name__} does not support "
                         "gradient checkpointing; train it with --no-gradient-checkpointing")
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):  # the newer name (transformers 5.x)
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def snapshot(model) -> dict:
    """The trainable parameters (LoRA: the adapters; full fine-tuning: every weight), copied
    to the CPU: the best epoch kept without a second copy of the model on the GPU."""
    return {n: p.detach().to("cpu", copy=True)
            for n, p in model.named_parameters() if p.requires_grad}


def restore(model, snap: dict) -> None:
    """Copy a :func:`snapshot` back into ``model``'s parameters."""
    import torch

    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in snap.items():
            params[name].copy_(value)


#: Models of at least this many parameters get the large-model learning rates.
LARGE_MODEL = 1_000_000_000


def default_lr(parameters: int, lora: bool, small: float | None = None) -> float:
    """The learning rate when ``--lr`` is unset (docs/train.md): ``small`` (a recipe's;
    else 2e-3) below :data:`LARGE_MODEL` parameters (the tiny models' measured rate), else
    2e-4 for LoRA and 2e-5 for full fine-tuning (LLaVA-1.5's and QLoRA's rates for 7-13 B
    models)."""
    if parameters < LARGE_MODEL:
        return 2e-3 if small is None else small
    return 2e-4 if lora else 2e-5


def merge_lora(backend) -> None:
    """Fold the adapters into the weights: the checkpoint stays a plain model of its kind."""
    if hasattr(backend.model, "merge_and_unload"):
        backend.model = backend.model.merge_and_unload()
