"""Answers read from every spelling, and the load-time answer-mass probe, on real checkpoints.

The models are tiny Idefics3s with hand-set next-token logits (``models.tiny_logits``): their
mass sits on ``" Yes"``, as SmolVLM2's does after its template's ``Assistant:``. Every
expected value is worked out from those logits: ``yes`` and ``no`` have six single-token
spellings each in this vocabulary of 404 tokens, every logit not set is 0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from judge.ensemble.judge import Judge
from judge.ensemble.prompts import REFERENCE_INSTRUCTION, reference_request
from judge.ensemble.version import load_judge_version
from models.base import BackendSpec, ModelError, ScoreRequest
from models.hf import TransformersBackend

VOCAB = 404  # the tiny byte-level BPE: 400 trained + "<image>" and its three neighbours
E = math.e


@pytest.fixture(scope="module")
def logit_models(tmp_path_factory) -> dict[str, str]:
    """``yes``: 10 on " Yes", 1 on "no" (the mass is on a spelling of yes that is not
    "yes"); ``tail``: 3 on " Yes" (the answers hold a few percent of the mass)."""
    from models.tiny_logits import build_logit_model

    root = tmp_path_factory.mktemp("logit-models")
    return {"yes": str(build_logit_model(root / "yes", {" Yes": 10.0, "no": 1.0})),
            "tail": str(build_logit_model(root / "tail", {" Yes": 3.0}))}


def backend(path: str) -> TransformersBackend:
    b = TransformersBackend(BackendSpec(name="m", backend="transformers", path=path,
                                        max_pixels=4096))
    b.load()
    return b


def question() -> ScoreRequest:
    frames = np.random.default_rng(3).integers(0, 256, (2, 48, 64, 3), dtype=np.uint8)
    return ScoreRequest(frames, "Did the robot attempt the task? Answer yes or no.",
                        ("yes", "no"), "attempt")


def test_mass_on_a_capitalised_spelling_reads_as_yes(logit_models):
    b = backend(logit_models["yes"])
    # yes: e^10 + 5 * e^0 over its six spellings; no: e^1 + 5 * e^0
    expected = (E**10 + 5) / (E**10 + 5 + E + 5)  # 0.999650; "yes" vs "no" alone: 0.2689
    p = b.score([question()])[0]
    assert p.shape == (2,)
    assert p[0] == pytest.approx(expected, abs=1e-6)
    assert b.score_shared_prefix([question()])[0][0] == pytest.approx(expected, abs=1e-6)
    logits = b.choice_logits(question())  # what training backpropagates through
    assert logits.shape == (2,) and logits.requires_grad
    np.testing.assert_allclose(logits.detach().numpy(), [math.log(E**10 + 5), math.log(E + 5)],
                               rtol=0, atol=1e-5)
    b.close()


def test_answer_mass_is_the_raw_probability_of_every_spelling(logit_models):
    b = backend(logit_models["yes"])
    # the twelve spellings: e^10 + e^1 + 10 * e^0, over the vocabulary: 402 tokens at 0
    assert b.answer_mass(question()) == pytest.approx((E**10 + E + 10) / (E**10 + E + 402),
                                                      abs=1e-6)  # 0.98262
    b.close()
    tail = backend(logit_models["tail"])
    assert tail.answer_mass(question()) == pytest.approx((E**3 + 11) / (E**3 + 403), abs=1e-6)
    tail.close()


def test_the_reference_prompt_is_the_attempt_question_over_grey_frames():
    version = load_judge_version("rc-judge-v1")
    req = reference_request(version, 200704)
    assert req.frames.shape == (8, 448, 448, 3) and set(np.unique(req.frames)) == {128}
    assert req.choices == ("yes", "no") and req.kind == "attempt"
    assert req.prompt == version.prompts.attempt.format(
        instruction=REFERENCE_INSTRUCTION, sensors="", motion="")
    assert [m.min_answer_mass for m in version.models] == [0.5, 0.5, 0.5]  # the default


def _version(tmp_path, path: str, **entry) -> str:
    """A version of one transformers model and two fake ones (those answer only answers)."""
    models = [{"name": "m", "backend": "transformers", "path": path, "max_pixels": 4096,
               **entry}, {"name": "f1", "backend": "fake"}, {"name": "f2", "backend": "fake"}]
    file = tmp_path / "probe.yaml"
    file.write_text(yaml.safe_dump({"name": "probe", "models": models,
                                    "frames": {"images_per_question": 2}}))
    return str(file)


def test_a_model_whose_answers_are_a_tail_is_refused_at_load(logit_models, tmp_path):
    mass = (E**3 + 11) / (E**3 + 403)
    with pytest.raises(ModelError) as err:
        Judge(_version(tmp_path, logit_models["tail"]))
    assert str(err.value) == (
        f"model m: its answer tokens ('yes', 'no') hold {mass:.4f} of the next-token "
        "probability on the reference prompt, below min_answer_mass 0.5: the answers would be "
        "read from a tail (docs/judging.md)")
    judge = Judge(_version(tmp_path, logit_models["tail"], min_answer_mass=0))  # probe off
    assert len(judge.backends) == 3
    judge.close()
    judge = Judge(_version(tmp_path, logit_models["yes"]))  # 0.983 of the mass: loads
    assert len(judge.backends) == 3
    judge.close()


def test_every_shipped_tiny_version_turns_the_probe_off_and_loads(tiny_models):
    """Random weights spread the next token over the vocabulary: the tiny models' answer
    tokens hold ~2/404 of it, so at the default threshold none would load."""
    for name in ("tiny", "tiny-vision", "tiny-vision-sensors", "tiny-vision-streams",
                 "tiny-vision-224-streams"):
        assert [m.min_answer_mass for m in load_judge_version(name).models] == [0, 0, 0], name
    version = load_judge_version("tiny")
    judge = Judge(version)
    masses = [b.answer_mass(reference_request(version, m.max_pixels))
              for b, m in zip(judge.backends, version.models, strict=True)]
    judge.close()
    assert all(0 < m < 0.05 for m in masses), masses


def test_rcjudge_judge_names_the_refusal_in_one_line(logit_models, make_bundles, tmp_path,
                                                     capsys):
    from rcjudge.cli import main

    bundle = str(make_bundles(1, seed=13, width=96, height=64, fps=5)[0])
    assert main(["judge", bundle, "--judge", _version(tmp_path, logit_models["tail"])]) == 2
    out, err = capsys.readouterr()
    mass = (E**3 + 11) / (E**3 + 403)
    assert out == "" and err == (
        f"rcjudge: error: model m: its answer tokens ('yes', 'no') hold {mass:.4f} of the "
        "next-token probability on the reference prompt, below min_answer_mass 0.5: the "
        "answers would be read from a tail (docs/judging.md)\n")


def test_the_threshold_is_no_part_of_the_fingerprint(tiny_models):
    """It decides whether a model loads, not what it answers: tiny's fingerprint is the one
    it had before the field existed."""
    from judge.ensemble.fingerprint import fingerprint
    from judge.ensemble.taxonomy import load_taxonomy

    tiny = load_judge_version("tiny")
    strict = tiny.model_copy(update={"models": tuple(
        m.model_copy(update={"min_answer_mass": 0.9}) for m in tiny.models)})
    assert fingerprint(strict, load_taxonomy()) == fingerprint(tiny, load_taxonomy())
