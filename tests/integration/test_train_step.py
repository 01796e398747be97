"""One training step of ``rcjudge train``: the loss's devices, gradient accumulation, the
best-epoch snapshot, gradient checkpointing (real tiny models, float32 on CPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from judge.learn import step
from judge.learn import train as train_module
from models.base import ScoreRequest


class MetaLogits:
    """A backend whose answers live on the "meta" device: another device than the CPU, as
    cuda:0 is on a GPU node (shapes only, no data)."""

    def choice_logits(self, req: ScoreRequest) -> torch.Tensor:
        return torch.zeros(len(req.choices), device="meta", requires_grad=True)


def _requests(n: int) -> list[tuple[ScoreRequest, int]]:
    frames = np.zeros((1, 4, 4, 3), np.uint8)
    return [(ScoreRequest(frames, f"q{i}", ("yes", "no"), "success"), i % 2) for i in range(n)]


def test_the_loss_builds_its_targets_on_the_logits_device():
    # on CUDA the logits are on cuda:0; a target built on the CPU fails the first loss
    loss = step._loss(MetaLogits(), _requests(3))
    assert loss.device.type == "meta" and loss.shape == ()


def tiny_backend(name: str):
    """One model of the `tiny` judge, loaded as `rcjudge train` loads it (float32 on CPU)."""
    from judge.ensemble.version import load_judge_version
    from models.registry import create_backend

    entry = next(m for m in load_judge_version("tiny").models if m.name == name)
    backend = create_backend(train_module.training_specs(
        load_judge_version("tiny").model_copy(update={"models": (entry,)}))[0])
    backend.load()
    return backend


def tiny_questions(n: int) -> list[tuple[ScoreRequest, int]]:
    """``n`` of the tiny judge's success questions over random frames, alternating targets."""
    from judge.ensemble.prompts import yes_no_requests
    from judge.ensemble.version import load_judge_version

    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        frames = rng.integers(0, 256, (6, 48, 64, 3), dtype=np.uint8)  # (K, H, W, 3)
        _, success = yes_no_requests(frames, "put the mug on the tray",
                                     load_judge_version("tiny"))
        out.append((success, i % 2))
    return out


def grads(model) -> dict[str, torch.Tensor]:
    out = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return out


@pytest.mark.parametrize("name", ["gemma3-tiny", "idefics3-tiny", "llava-tiny"])
def test_per_question_backward_accumulates_the_batch_gradient(tiny_models, name):
    backend = tiny_backend(name)
    backend.model.train()
    batch = tiny_questions(4)
    loss = step._loss(backend, batch)  # the batch's mean loss, one backward
    loss.backward()
    whole = grads(backend.model)
    mean = train_module.accumulate(backend, batch)  # a backward per question
    split = grads(backend.model)
    assert mean == pytest.approx(float(loss.detach()), rel=1e-6)
    assert split.keys() == whole.keys() and len(whole) > 10
    for k in whole:
        assert torch.allclose(split[k], whole[k], rtol=1e-4, atol=1e-7), k
    backend.close()


def _count_layer_calls(model) -> dict[str, int]:
    """Calls of each transformer layer (text and vision towers), counted by a forward hook on
    its first submodule."""
    from transformers.modeling_layers import GradientCheckpointingLayer

    calls: dict[str, int] = {}

    def hook(name):
        def count(*_):
            calls[name] = calls.get(name, 0) + 1
        return count

    for name, module in model.named_modules():
        if isinstance(module, GradientCheckpointingLayer):  # its first part: inside the
            calls[name] = 0  # checkpoint, so a recompute calls it again
            next(iter(module.children())).register_forward_hook(hook(name))
    return calls


@pytest.mark.parametrize("name", ["gemma3-tiny", "idefics3-tiny", "llava-tiny"])
def test_gradient_checkpointing_recomputes_both_towers_and_keeps_the_gradients(tiny_models,
                                                                              name):
    batch = tiny_questions(1)
    runs = {}
    for checkpointing in (False, True):
        backend = tiny_backend(name)
        if checkpointing:
            train_module.enable_checkpointing(backend)
        train_module.add_lora(backend, 4, 0)  # as on a GPU node: adapters on both towers
        backend.model.train()
        calls = _count_layer_calls(backend.model)
        train_module.accumulate(backend, batch)
        runs[checkpointing] = (calls, grads(backend.model))
        backend.close()
    (plain_calls, plain), (ckpt_calls, ckpt) = runs[False], runs[True]
    assert any("vision" in n for n in ckpt_calls) and any("language" in n or "text" in n
                                                          for n in ckpt_calls), ckpt_calls
    assert set(plain_calls.values()) == {1}  # each layer once: its activations kept
    assert set(ckpt_calls.values()) == {2}  # each layer again in backward: recomputed
    assert plain.keys() == ckpt.keys() and any("vision" in k for k in plain)
    for k in plain:
        assert torch.allclose(ckpt[k], plain[k], rtol=1e-4, atol=1e-7), k


@pytest.mark.parametrize("lora", [True, False])
def test_the_best_epoch_snapshot_holds_the_trainable_parameters_on_the_cpu(tiny_models, lora):
    backend = tiny_backend("llava-tiny")
    if lora:
        train_module.add_lora(backend, 4, 0)
    model = backend.model
    snap = train_module.snapshot(model)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert set(snap) == trainable and all(v.device.type == "cpu" for v in snap.values())
    everything = {n for n, _ in model.named_parameters()}
    assert (trainable < everything) if lora else (trainable == everything)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(1.0)
    assert all(snap[n].data_ptr() != p.data_ptr() for n, p in model.named_parameters()
               if n in snap)  # copies, not views
    train_module.restore(model, snap)
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    backend.close()


def test_calibration_answers_are_read_through_the_serving_backend_where_it_loads(monkeypatch):
    from judge.ensemble.version import load_judge_version

    tiny = load_judge_version("tiny")
    served = tiny.model_copy(update={"models": tuple(
        m.model_copy(update={"backend": "vllm"}) for m in tiny.models)})
    specs, serving = train_module.answer_specs(tiny)  # served by transformers: those
    assert serving and [s.backend for s in specs] == ["transformers"] * 3
    monkeypatch.setattr(train_module, "serving_importable", lambda b: b == "transformers")
    specs, serving = train_module.answer_specs(served)  # no vLLM: transformers, recorded
    assert not serving and [s.backend for s in specs] == ["transformers"] * 3
    monkeypatch.setattr(train_module, "serving_importable", lambda b: True)
    specs, serving = train_module.answer_specs(served)  # vLLM importable: vLLM
    assert serving and [s.backend for s in specs] == ["vllm"] * 3
    assert [s.path for s in specs] == [m.resolved_path() for m in tiny.models]
