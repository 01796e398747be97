"""`rcjudge train` on a small labelled ledger: the split, the record, determinism, no overwrite."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import sqlalchemy as sa
import torch
from safetensors.torch import load_file

from judge.ensemble.judge import Judge
from judge.ensemble.version import load_judge_version
from judge.learn import train as train_module
from judge.learn.calibrate import CalibrationError
from judge.learn.train import TrainConfig, TrainError, assign_part, train_version
from judge.ledgers import schema as S
from judge.ledgers.seen import Seen, seen_runs
from judge.ledgers.store import Ledger
from rcjudge.cli import main
from rcjudge.home import models_dir

pytestmark = pytest.mark.slow
SMALL = TrainConfig(seed=3, epochs=1, max_steps=2, batch=4, test_fraction=0.25,
                    val_fraction=0.2, calib_fraction=0.2)


@pytest.fixture
def ledger_url(labelled_tiny_ledger) -> str:
    return labelled_tiny_ledger


def test_parts_are_whole_seed_groups_and_deterministic():
    groups = [f"task.{t}:{s}" for t in range(3) for s in range(200)]
    parts = [assign_part(g, 0, TrainConfig()) for g in groups]
    assert parts == [assign_part(g, 0, TrainConfig()) for g in groups]
    share = Counter(parts)
    assert set(share) == {"train", "validation", "calibration", "test"}
    assert 0.4 < share["train"] / 600 < 0.6 and 0.1 < share["test"] / 600 < 0.3
    assert parts != [assign_part(g, 1, TrainConfig()) for g in groups]  # the seed reshuffles


def test_train_writes_a_version_with_its_record_and_never_overwrites(ledger_url, tmp_path,
                                                                     tiny_models):
    with Ledger.open(ledger_url) as ledger:
        path, report = train_version(ledger, load_judge_version("tiny"), "tiny-t1", SMALL,
                                     config_out=str(tmp_path / "tiny-t1.yaml"), progress=False)
        new = load_judge_version(str(path))
        t = new.training
        assert (t.parent, t.seed) == ("tiny", 3)
        assert t.options == {"split_seed": None, "epochs": 1, "patience": 2, "lr": 2e-3,
                             "warmup_steps": 0,
                             "batch": 4, "test_fraction": 0.25, "val_fraction": 0.2,
                             "calib_fraction": 0.2, "max_steps": 2, "lora": False,
                             "lora_rank": 8, "gradient_checkpointing": False,
                             "blank_images": 0.0, "travel_jitter": 0.0, "blank_text": 0.0,
                             "calibrated_with_serving_backend": True}
        assert sum(t.split.values()) == 24 and t.runs == 24 - t.split["test"]
        assert t.split == report["split"] and min(t.split.values()) >= 1
        used = json.loads((tiny_models.parent / "tiny-t1" / "used_runs.json").read_text())
        assert len(used) == t.runs == len(set(used))
        test_hashes = {ledger.get_run(r).bundle_hash
                       for r in ledger.judged_run_ids("tiny")} - set(used)
        assert len(test_hashes) == t.split["test"]  # the test part is exactly what was not used
        assert t.used_runs == "{models_dir}/tiny-t1/used_runs.json"
        # the ledger records what it saw, by part, with each label's id (issue 37 item 2)
        ids = {ledger.get_run(r).bundle_hash: r for r in ledger.judged_run_ids("tiny")}
        assert seen_runs(ledger, "tiny-t1") == Seen("tiny-t1", frozenset(ids[h] for h in used),
                                                    ("tiny-t1",), True)
        labels = ledger.current_labels()
        with ledger.engine.connect() as conn:
            rows = conn.execute(sa.select(S.training_labels.c.run_id, S.training_labels.c.label_id,
                                          S.training_labels.c.part)
                                .where(S.training_labels.c.judge_version == "tiny-t1")).all()
        assert Counter(part for _, _, part in rows) == {p: t.split[p] for p in
                                                         ("train", "validation", "calibration")}
        assert all(lid == labels[rid].label_id for rid, lid, _ in rows)
        assert [m.path for m in new.models] == [f"{{models_dir}}/tiny-t1/{m.name}"
                                                for m in new.models]
        assert t.fingerprint == Judge(new, load=False).fingerprint.digest
        assert set(report["models"]) == {"gemma3-tiny", "idefics3-tiny", "llava-tiny"}
        assert all(m["steps"] == 2 for m in report["models"].values())
        with pytest.raises(CalibrationError, match="already exists; judge versions are never "
                                                   "overwritten"):
            train_version(ledger, load_judge_version("tiny"), "tiny-t1", SMALL,
                          config_out=str(path), progress=False)
        with pytest.raises(TrainError, match=r"tiny-t1: already exists; a trained version's "
                                             r"weights are never overwritten"):
            train_version(ledger, load_judge_version("tiny"), "tiny-t1", SMALL,
                          config_out=str(tmp_path / "other.yaml"), progress=False)


def test_the_same_seed_trains_the_same_weights(ledger_url, tmp_path, tiny_models):
    reports = {}
    with Ledger.open(ledger_url) as ledger:
        for name in ("tiny-d1", "tiny-d2"):
            _, reports[name] = train_version(ledger, load_judge_version("tiny"), name, SMALL,
                                             config_out=str(tmp_path / f"{name}.yaml"),
                                             progress=False)
    assert reports["tiny-d1"]["models"] == reports["tiny-d2"]["models"]  # losses, epochs
    for arch in ("gemma3-tiny", "idefics3-tiny", "llava-tiny"):
        a = load_file(tiny_models.parent / "tiny-d1" / arch / "model.safetensors")
        b = load_file(tiny_models.parent / "tiny-d2" / arch / "model.safetensors")
        base = load_file(tiny_models / arch.split("-")[0] / "model.safetensors")
        assert a.keys() == b.keys() == base.keys()
        assert all(torch.equal(a[k], b[k]) for k in a)
        # early stopping keeps the best epoch: the initial weights when none improved on them
        kept_initial = reports["tiny-d1"]["models"][arch]["best_epoch"] == 0
        assert all(torch.equal(a[k], base[k]) for k in a) == kept_initial


def test_held_out_tasks_are_never_used_and_errors_are_one_line(ledger_url, tmp_path, capsys):
    with Ledger.open(ledger_url) as ledger:
        tasks = sorted({ledger.get_run(r).attribution.task.id
                        for r in ledger.judged_run_ids("tiny")})
        cfg = TrainConfig(**{**SMALL.__dict__, "hold_out_tasks": (tasks[0],)})
        path, _ = train_version(ledger, load_judge_version("tiny"), "tiny-h1", cfg,
                                config_out=str(tmp_path / "tiny-h1.yaml"), progress=False)
        held = {ledger.get_run(r).bundle_hash for r in ledger.judged_run_ids("tiny")
                if ledger.get_run(r).attribution.task.id == tasks[0]}
    new = load_judge_version(str(path))
    assert new.training.held_out["tasks"] == [tasks[0]]
    used_file = new.training.used_runs.replace("{models_dir}", str(models_dir()))
    used = set(json.loads(open(used_file, encoding="utf-8").read()))
    assert held and used and not used & held
    assert main(["train", "--from", "tiny", "--out", "x", "--db", ledger_url, "--config",
                 str(tmp_path / "x.yaml"), "--hold-out-tasks", ",".join(tasks)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "train: 24 labelled runs of tiny: train 0 / validation 0 / calibration 0 / test 0; 24 "
        "of --hold-out-tasks, never used (--test-fraction 0.2: every other labelled run used)",
        "rcjudge: error: 24 labelled run(s) of 'tiny' leave the train, validation, calibration "
        "part(s) empty; label more runs (need several seed groups per part)"]
    assert main(["train", "--from", "nope-v0", "--out", "x", "--db", ledger_url]) == 2
    assert "unknown judge version 'nope-v0'" in capsys.readouterr().err


def test_lora_trains_only_adapters_and_writes_a_plain_checkpoint(ledger_url, tmp_path,
                                                                 tiny_models):
    # 4 steps: with every spelling of a letter answer read (" A" beside "A"), 2 steps of
    # this seed improved no model's validation loss; the test asks that one does
    cfg = TrainConfig(**{**SMALL.__dict__, "lora": True, "lora_rank": 4, "lr": 5e-2,
                         "max_steps": 4})
    with Ledger.open(ledger_url) as ledger:
        path, report = train_version(ledger, load_judge_version("tiny"), "tiny-lora", cfg,
                                     config_out=str(tmp_path / "tiny-lora.yaml"),
                                     progress=False)
    for name, m in report["models"].items():
        assert m["lora"] is True and 0 < m["trainable_parameters"] < m["parameters"] / 5, name
        weights = load_file(tiny_models.parent / "tiny-lora" / name / "model.safetensors")
        base = load_file(tiny_models / name.split("-")[0] / "model.safetensors")
        assert weights.keys() == base.keys()  # merged: no adapter tensors left
        changed = {k for k in weights if not torch.equal(weights[k], base[k])}
        if m["best_epoch"] > 0:  # only attention projections moved
            assert changed and all(k.rsplit(".", 2)[-2].endswith("proj") for k in changed)
        else:
            assert changed == set()
    assert any(m["best_epoch"] > 0 for m in report["models"].values())  # something moved
    judge = Judge(load_judge_version(str(path)))  # loads as a plain transformers model
    assert len(judge.backends) == 3
    judge.close()


def served_by(version, backend: str):
    """``version`` with every model entry served by ``backend`` (the same checkpoints)."""
    return version.model_copy(update={"models": tuple(
        m.model_copy(update={"backend": backend}) for m in version.models)})


def test_a_version_served_by_vllm_trains_its_checkpoints_through_transformers(
        ledger_url, tmp_path, tiny_models):
    # rc-judge-v1's models are served by vLLM, which cannot train: `rcjudge train --from` such a
    # version trains the same checkpoints through transformers, as it would a transformers-served
    # parent, and the new version is served as its parent was. (No vLLM in this environment.)
    tiny = load_judge_version("tiny")
    with Ledger.open(ledger_url) as ledger:
        _, ref = train_version(ledger, tiny, "tiny-sv-hf", SMALL,
                               config_out=str(tmp_path / "tiny-sv-hf.yaml"), progress=False)
        path, report = train_version(ledger, served_by(tiny, "vllm"), "tiny-sv", SMALL,
                                     config_out=str(tmp_path / "tiny-sv.yaml"), progress=False)
    new = load_judge_version(str(path))
    assert [(m.name, m.backend, m.path) for m in new.models] == [
        (m.name, "vllm", f"{{models_dir}}/tiny-sv/{m.name}") for m in tiny.models]
    assert new.training.parent == "tiny"
    # no vLLM here: its maps were fitted on transformers' answers, and the record says so
    assert new.training.options["calibrated_with_serving_backend"] is False
    assert report["models"] == ref["models"] and report["split"] == ref["split"]
    assert report["validation"] == ref["validation"]  # the calibration maps' inputs too
    for m in tiny.models:
        a = load_file(tiny_models.parent / "tiny-sv" / m.name / "model.safetensors")
        b = load_file(tiny_models.parent / "tiny-sv-hf" / m.name / "model.safetensors")
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), m.name


def test_a_model_without_trainable_weights_is_refused_before_any_work(ledger_url, tmp_path,
                                                                      monkeypatch):
    def prepared(*args, **kwargs):
        raise AssertionError("runs were prepared before the parent was refused")

    monkeypatch.setattr(train_module, "prepare_parts", prepared)
    config = tmp_path / "tiny-fk.yaml"
    with Ledger.open(ledger_url) as ledger, pytest.raises(TrainError) as err:
        train_version(ledger, served_by(load_judge_version("tiny"), "fake"), "tiny-fk", SMALL,
                      config_out=str(config), progress=False)
    assert str(err.value) == (
        "--from tiny: model gemma3-tiny is served by the 'fake' backend, which has no weights to "
        "train; rcjudge train trains checkpoints served by transformers or vllm")
    assert not config.exists() and not (models_dir() / "tiny-fk").exists()


def _attention(prefix: str, layers: int, names: tuple[str, ...]) -> set[str]:
    return {f"{prefix}.{i}.{n}" for i in range(layers) for n in names}


TEXT_ATTENTION = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj")
VISION_ATTENTION = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                    "self_attn.out_proj")
#: rc-judge-v1's architectures at test size (bench.gpu_check --tiny), each with 2 vision and 2
#: text layers: the modules --lora adapts, worked out from their transformers code
ADAPTED = {
    "qwen2.5-vl-7b": _attention("model.visual.blocks", 2, ("attn.qkv", "attn.proj"))
    | _attention("model.language_model.layers", 2, TEXT_ATTENTION),
    "gemma3-12b": _attention("model.vision_tower.encoder.layers", 2, VISION_ATTENTION)
    | {"model.vision_tower.head.attention.out_proj"}
    | _attention("model.language_model.layers", 2, TEXT_ATTENTION),
    "smolvlm2-2.2b": _attention("model.vision_model.encoder.layers", 2, VISION_ATTENTION)
    | _attention("model.text_model.layers", 2, TEXT_ATTENTION),
}


@pytest.mark.parametrize("arch", sorted(ADAPTED))
def test_lora_adapts_every_attention_projection_of_both_towers(arch):
    # what `rcjudge train --from rc-judge-v1` trains on a GPU node: Qwen2.5-VL's vision tower
    # fuses q, k and v into `qkv` and names its output `proj`
    from bench.gpu_check import MODELS, questions
    from models.base import BackendSpec
    from models.hf import TransformersBackend
    from models.tiny import random_image_projection

    cls, cfg, proc = MODELS[arch](True)
    torch.manual_seed(0)
    backend = TransformersBackend(BackendSpec(name=arch, backend="transformers",
                                              max_pixels=112 * 112))
    backend.model = cls._from_config(cfg, dtype=torch.float32)
    random_image_projection(backend.model)  # as build-tiny and bench.gpu_check draw it
    backend.processor, backend.tokenizer, backend._ids = proc, proc.tokenizer, {}
    before = {k: v.clone() for k, v in backend.model.state_dict().items()}
    train_module.add_lora(backend, 4, 0)
    adapted = {n.removeprefix("base_model.model.") for n, m in backend.model.named_modules()
               if hasattr(m, "lora_A")}
    assert adapted == ADAPTED[arch]
    trainable = {n for n, p in backend.model.named_parameters() if p.requires_grad}
    assert trainable == {f"base_model.model.{m}.lora_{ab}.default.weight"
                         for m in adapted for ab in "AB"}
    # one step on the success question reaches the vision tower's adapters
    req = questions(np.random.default_rng(0), 6, 120, 320)[1]
    torch.nn.functional.cross_entropy(backend.choice_logits(req)[None],
                                      torch.tensor([0])).backward()
    vision = [p.grad for n, p in backend.model.named_parameters()
              if "lora_B" in n and ("visual" in n or "vision" in n)]
    assert vision and any(g is not None and bool(g.abs().sum() > 0) for g in vision)
    torch.optim.SGD([p for p in backend.model.parameters() if p.requires_grad], lr=1.0).step()
    train_module.merge_lora(backend)  # a plain checkpoint again, its attention moved
    after = backend.model.state_dict()
    assert after.keys() == before.keys()
    moved = {k.removesuffix(".weight") for k in after if not torch.equal(after[k], before[k])}
    assert moved and moved <= ADAPTED[arch]
    assert any("visual" in k or "vision" in k for k in moved)


def test_blanked_hides_the_frames_of_about_p_of_the_questions_and_keeps_their_targets():
    from judge.learn.train import blanked
    from models.base import ScoreRequest

    frames = np.full((1, 4, 4, 3), 200, np.uint8)
    batch = [(ScoreRequest(frames, f"q{i}", ("yes", "no"), "success"), i % 2) for i in range(8)]
    assert blanked(batch, 0.0, np.random.default_rng(0)) == batch
    hide = np.random.default_rng(5).random(8) < 0.5  # the draws blanked makes, in order
    out = blanked(batch, 0.5, np.random.default_rng(5))
    assert 0 < hide.sum() < 8
    for (req, t), (orig, t0), h in zip(out, batch, hide, strict=True):
        assert (req.prompt, req.choices, t) == (orig.prompt, orig.choices, t0)
        assert int(req.frames.max()) == (0 if h else 200) and req.frames.shape == frames.shape
    assert int(frames.min()) == 200  # the originals are untouched


def test_text_hidden_swaps_questions_that_kept_their_frames_for_their_textless_twins():
    from judge.learn.train import blanked, text_hidden
    from models.base import ScoreRequest

    frames = np.full((1, 4, 4, 3), 200, np.uint8)
    batch = [(ScoreRequest(frames, f"q{i} The force sensors recorded no contact.",
                           ("yes", "no"), "success"), i % 2) for i in range(8)]
    twins = [(ScoreRequest(frames, f"q{i}", ("yes", "no"), "success"), i % 2) for i in range(8)]
    shown = blanked(batch, 0.5, np.random.default_rng(5))
    assert text_hidden(shown, batch, twins, 0.0, np.random.default_rng(1)) == shown
    hide = np.random.default_rng(5).random(8) < 0.5  # blanked's draws, then text_hidden's
    drop = np.random.default_rng(0).random(8) < 0.5
    out = text_hidden(shown, batch, twins, 0.5, np.random.default_rng(0))
    assert (hide & drop).any() and (~hide & drop).any() and (~hide & ~drop).any()
    for i, ((req, t), h, d) in enumerate(zip(out, hide, drop, strict=True)):
        assert t == i % 2
        if h:  # black frames keep their text: never neither
            assert req.prompt == batch[i][0].prompt and int(req.frames.max()) == 0
        elif d:
            assert req is twins[i][0]
        else:
            assert req is batch[i][0]


def test_jittered_scales_each_questions_travel_within_its_range_and_keeps_the_rest():
    from judge.learn.train import jittered
    from models.base import ScoreRequest

    frames = np.zeros((1, 2, 2, 3), np.uint8)
    text = "Task: x. The arm's joints travelled 6.0 rad and were still at the end. Yes or no?"
    batch = [(ScoreRequest(frames, text, ("yes", "no"), "success"), i % 2) for i in range(8)]
    assert jittered(batch, 0.0, np.random.default_rng(0)) == batch
    # the draws jittered makes: J = 0.5, factors log-uniform in [1/1.5, 1.5]
    factors = np.exp(np.random.default_rng(5).uniform(-1, 1, 8) * np.log(1.5))
    out = jittered(batch, 0.5, np.random.default_rng(5))
    travels = []
    for (req, t), (orig, t0), f in zip(out, batch, factors, strict=True):
        assert req.prompt == text.replace("6.0 rad", f"{6.0 * f:.1f} rad")
        assert (req.choices, req.kind, t, req.frames is orig.frames) == (
            orig.choices, orig.kind, t0, True)
        travels.append(float(req.prompt.split("travelled ")[1].split()[0]))
    assert 4.0 <= min(travels) < max(travels) <= 9.0 and len(set(travels)) > 1
    assert batch[0][0].prompt == text  # the originals are untouched


@pytest.mark.parametrize(("flag", "value", "name", "why"), [
    ("--blank-images", "1", "tiny-b1", "--blank-images 1.0: a probability in [0, 1) (at 1 no "
     "question would show its images)"),
    ("--blank-text", "1", "tiny-bt1", "--blank-text 1.0: a probability in [0, 1) (at 1 no "
     "question would show its text)"),
    ("--travel-jitter", "-0.1", "tiny-j", "--travel-jitter -0.1: must be 0 or more (a factor "
     "range [1/(1+J), 1+J])"),
])
def test_a_training_knob_out_of_range_is_refused_before_anything_is_written(
        ledger_url, tmp_path, capsys, flag, value, name, why):
    config = tmp_path / "k.yaml"
    assert main(["train", "--from", "tiny", "--out", name, "--db", ledger_url, "--config",
                 str(config), flag, value]) == 2
    assert capsys.readouterr().err.strip() == f"rcjudge: error: {why}"
    assert not config.exists() and not (models_dir() / name).exists()


def test_each_model_is_trained_read_saved_and_freed_before_the_next_loads(ledger_url, tmp_path,
                                                                          monkeypatch):
    # at real size the three models (~43 GB of weights) never fit beside each other's
    # training state: each is trained, read on the calibration and validation parts, saved
    # and closed before the next one is loaded
    import models.registry

    real, events, resident = models.registry.create_backend, [], set()

    def spied(spec):
        backend = real(spec)
        load, close, save = backend.load, backend.close, backend.save

        def loaded():
            load()
            resident.add(spec.name)
            events.append(("load", spec.name, len(resident)))

        def saved(path):
            save(path)
            events.append(("save", spec.name, len(resident)))

        def closed():
            close()
            resident.discard(spec.name)
            events.append(("close", spec.name, len(resident)))

        backend.load, backend.save, backend.close = loaded, saved, closed
        return backend

    monkeypatch.setattr(models.registry, "create_backend", spied)
    with Ledger.open(ledger_url) as ledger:
        path, _ = train_version(ledger, load_judge_version("tiny"), "tiny-one", SMALL,
                                config_out=str(tmp_path / "tiny-one.yaml"), progress=False)
    assert events == [(what, name, n) for name in ("gemma3-tiny", "idefics3-tiny", "llava-tiny")
                      for what, n in (("load", 1), ("save", 1), ("close", 0))]
    assert load_judge_version(str(path)).training.metrics  # validation read from the saved three


def test_train_json_says_what_it_used_and_shows_progress_on_stderr(ledger_url, tmp_path,
                                                                   monkeypatch, capsys):
    # a lab that keeps its own test set runs `train --json` under a log: stderr says how many
    # labelled runs went to each part, how to keep the test part for training, and a progress
    # line an interval (here 0 s: a line a step), while stdout stays the JSON report alone
    import rcjudge.progress as progress_module

    monkeypatch.setattr(progress_module, "LOG_EVERY_S", 0.0, raising=False)
    def args(name: str) -> list[str]:
        return ["train", "--from", "tiny", "--out", name, "--db", ledger_url, "--config",
                str(tmp_path / f"{name}.yaml"), "--seed", "3", "--epochs", "1",
                "--max-steps", "2", "--batch", "4", "--json"]

    assert main(args("tiny-j1")) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    s = report["labelled"]
    assert s["total"] == 24 and s["held_out_tasks"] == 0
    assert s["train"] + s["validation"] + s["calibration"] + s["test"] == 24 and s["test"] > 0
    lines = err.splitlines()
    assert lines[0] == (
        f"train: 24 labelled runs of tiny: train {s['train']} / validation {s['validation']} / "
        f"calibration {s['calibration']} / test {s['test']} (--test-fraction 0.2: "
        f"{s['test']} kept out of training for `rcjudge eval`; if you hold your own test set, "
        "--test-fraction 0 trains on them too)")
    assert any(ln.startswith("train gemma3-tiny 1/2 ") for ln in lines)
    assert any(ln.startswith("prepare ") for ln in lines)

    assert main([*args("tiny-j0"), "--test-fraction", "0"]) == 0
    out, err = capsys.readouterr()
    s0 = json.loads(out)["labelled"]
    assert s0["test"] == 0 and s0["train"] + s0["validation"] + s0["calibration"] == 24
    assert err.splitlines()[0].endswith("test 0 (--test-fraction 0: every labelled run used)")
