"""Real models end to end: three tiny VLMs through transformers on CPU, one real bundle."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from judge.ensemble.judge import Judge
from judge.ensemble.version import Vote, load_judge_version
from models.base import BackendSpec, ModelError, ScoreRequest
from models.registry import create_backend
from rcjudge.cli import main


@pytest.fixture(scope="module")
def bundle(make_bundles):
    return str(make_bundles(1, seed=3, outcome="grasp.slip", width=96, height=64, fps=10)[0])


def test_three_architectures_under_5mb(tiny_models):
    archs = {}
    for name in ("gemma3", "idefics3", "llava"):
        cfg = json.loads((tiny_models / name / "config.json").read_text())
        archs[name] = cfg["architectures"][0]
        size = sum(f.stat().st_size for f in (tiny_models / name).rglob("*") if f.is_file())
        assert size < 5 * 2**20
    assert archs == {"gemma3": "Gemma3ForConditionalGeneration",
                     "idefics3": "Idefics3ForConditionalGeneration",
                     "llava": "LlavaForConditionalGeneration"}


def test_probabilities_from_token_logits(tiny_models):
    b = create_backend(BackendSpec(name="llava", backend="transformers",
                                   path=str(tiny_models / "llava")))
    b.load()
    frames = np.random.default_rng(0).integers(0, 255, (3, 48, 64, 3), dtype=np.uint8)
    p_yes, p_letters = b.score([ScoreRequest(frames, "Did it work? Answer yes or no.",
                                             ("yes", "no")),
                                ScoreRequest(frames, "Which? A) x B) y C) z", ("A", "B", "C"))])
    assert p_yes.shape == (2,) and p_letters.shape == (3,)
    assert p_yes.sum() == pytest.approx(1.0) and p_letters.sum() == pytest.approx(1.0)
    assert len(b.token_ids(("yes", "no"))) == 2
    with pytest.raises(ModelError, match=r"^model llava: answer 'grasp.slip' has no "
                                         r"single-token variant among \['grasp.slip', "):
        b.score([ScoreRequest(frames, "Which class?", ("grasp.slip", "grasp.miss"))])


def test_end_to_end_deterministic(tiny_models, bundle):
    first = Judge("tiny").judge(bundle)
    second = Judge("tiny").judge(bundle)  # fresh models, same weights
    assert first.judge_version == "tiny"
    assert [a.model for a in first.answers] == ["gemma3-tiny", "idefics3-tiny", "llava-tiny"]
    keys = ("attempt", "success", "failure_class", "attempt_confidence", "success_confidence")
    assert {k: getattr(first, k) for k in keys} == {k: getattr(second, k) for k in keys}
    assert first.answers == second.answers
    assert 0.0 <= first.attempt_confidence <= 1.0
    assert first.frames == 6


def test_failure_path_through_real_models(tiny_models, bundle):
    version = load_judge_version("tiny").model_copy(update={"vote": Vote(yes_threshold=0.99)})
    j = Judge(version).judge(bundle)
    assert j.success is False and j.attempt is False
    assert all(a.failure_class and "." in a.failure_class for a in j.answers)
    assert all(0 < a.p_failure_class <= 1 for a in j.answers)
    # the filed class is the plurality's, unless it is exempt and the random-weight models'
    # class vote (P ~ 1/54) falls short of the taxonomy's evidence: then unclassified
    from judge.ensemble.taxonomy import load_taxonomy
    from judge.ensemble.vote import ModelVote, vote

    plain = vote([ModelVote(a.model, a.p_attempt, a.p_success, a.failure_class,
                            a.p_failure_class) for a in j.answers], version.vote)
    tax = load_taxonomy()
    assert plain.failure_class is not None
    assert j.failure_class == tax.file_class(plain.failure_class,
                                             plain.failure_class_confidence)
    assert j.counts_against_policy == tax.counts_against_policy(j.failure_class)


def test_cli_judge_json(tiny_models, bundle, capsys):
    assert main(["judge", bundle, "--judge", "tiny", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 1 and rows[0]["run_id"] == "synth-0003-0000"
    assert set(rows[0]["timings"]) == {"intake_s", "frames_s", "models_s", "vote_s"}
    assert main(["judge", bundle, "--judge", "nope"]) == 2
    assert ("unknown judge version 'nope'; known: rc-judge-v1, rc-judge-v1-served, tiny, "
            "tiny-streams, tiny-vision" in capsys.readouterr().err)


def _cli(args: list[str], cwd, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rcjudge.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_judge_from_any_folder_finds_models_in_rcjudge_home(tiny_models, bundle, tmp_path):
    """The models live under $RCJUDGE_HOME/models; the command runs from an unrelated folder."""
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    (home / "models" / "tiny").symlink_to(tiny_models)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "RCJUDGE_MODELS"}
    env["RCJUDGE_HOME"] = str(home)
    proc = _cli(["judge", bundle, "--judge", "tiny", "--json"], elsewhere, env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["judge_version"] == "tiny"



def test_a_fresh_home_builds_the_tiny_models_on_first_use(tiny_models, bundle, tmp_path):
    """A newcomer's first `rcjudge judge --judge tiny`, from any folder, on a machine where
    nothing was built: the tiny models are built once (offline, seconds) and the call works."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "RCJUDGE_MODELS"}
    env["RCJUDGE_HOME"] = str(tmp_path / "empty-home")
    models = tmp_path / "empty-home" / "models"
    proc = _cli(["judge", bundle, "--judge", "tiny", "--json"], elsewhere, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("[\n"), proc.stdout[:40]  # the JSON alone: no blank lines
    assert json.loads(proc.stdout)[0]["judge_version"] == "tiny"
    assert proc.stderr == (f"rcjudge: building the tiny models (once) under "
                           f"{models / 'tiny'}\n")
    assert sorted(p.name for p in models.iterdir()) == ["tiny"]  # no temporary folder left
    assert sorted(p.name for p in (models / "tiny").iterdir()) == ["gemma3", "idefics3", "llava"]
    again = _cli(["judge", bundle, "--judge", "tiny", "--json"], elsewhere, env)
    assert again.returncode == 0 and again.stderr == ""  # built once
    assert json.loads(again.stdout)[0]["answers"] == json.loads(proc.stdout)[0]["answers"]


def test_a_missing_checkpoint_that_is_not_a_tiny_model_is_named(tmp_path, monkeypatch):
    from judge.ensemble.version import ModelEntry
    from judge.errors import ConfigError

    monkeypatch.setenv("RCJUDGE_MODELS", str(tmp_path))
    entry = ModelEntry(name="gemma3-v2", backend="transformers",
                       path="{models_dir}/tiny-v2/gemma3")
    with pytest.raises(ConfigError) as err:
        entry.checkpoint()
    assert str(err.value) == (f"model 'gemma3-v2': no checkpoint folder at "
                              f"{tmp_path / 'tiny-v2' / 'gemma3'} ({{models_dir}} = {tmp_path}, "
                              f"from $RCJUDGE_MODELS)")
    assert list(tmp_path.iterdir()) == []  # nothing built


@pytest.mark.parametrize(("profile", "version", "side", "expected"), [
    # 128-px inputs in 16-px patches: 8 x 8 = 64, pooled 2 x 2 by Gemma 3 and Idefics3,
    # all 64 + CLS for LLaVA (the plumbing profile: 4, 4, 17)
    ("vision", "tiny-vision", 160, {"gemma3": 16, "idefics3": 16, "llava": 65}),
    # 224 px: 14 x 14 = 196 patches, pooled to 49, or 196 + CLS
    ("vision-224", "tiny-vision-224-streams", 320,
     {"gemma3": 49, "idefics3": 49, "llava": 197}),
])
def test_the_vision_profiles_see_more_and_judge_through_the_same_path(
        tiny_models, bundle, profile, version, side, expected):
    from models.tiny import FOLDERS, build_tiny

    built = {m.name: m for m in build_tiny(tiny_models.parent / FOLDERS[profile],
                                           profile=profile)}
    assert all(m.bytes < 5 * 2**20 for m in built.values())
    frame = np.zeros((1, side * 3 // 4, side, 3), np.uint8)
    tokens = {}
    for name in ("gemma3", "idefics3", "llava"):
        b = create_backend(BackendSpec(name=name, backend="transformers",
                                       path=str(built[name].path), max_pixels=side * side * 3 // 4))
        b.load()
        text = b.prompt_text(1, "q")
        ids = b.processor(text=[text], images=[[Image.fromarray(frame[0])]],
                          return_tensors="pt")["input_ids"][0].tolist()
        image_token = {"gemma3": "<image_soft_token>", "idefics3": "<image>",
                       "llava": "<image>"}[name]
        tokens[name] = ids.count(b.tokenizer.convert_tokens_to_ids(image_token))
    assert tokens == expected
    j = Judge(version).judge(bundle)
    assert [a.model for a in j.answers] == ["gemma3-vision", "idefics3-vision", "llava-vision"]
    assert j.frames == 3  # one image per camera: the last sampled time step


def test_an_unknown_tiny_profile_is_one_line(tmp_path):
    from models.tiny import build_tiny

    with pytest.raises(ModelError,
                       match=r"unknown tiny profile 'huge'; known: plumbing, vision, vision-224$"):
        build_tiny(tmp_path, profile="huge")
