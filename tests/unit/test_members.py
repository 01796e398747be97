"""A model entry with members answers with the mean of its checkpoints' probabilities."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from judge.ensemble.version import load_judge_version
from judge.errors import ConfigError
from models.base import BackendSpec, ScoreRequest
from models.fake import FakeBackend
from models.members import MemberMean
from models.registry import create_backend

FRAMES = np.zeros((1, 4, 4, 3), np.uint8)
ASKED = [ScoreRequest(FRAMES, "attempted?", ("yes", "no"), "attempt"),
         ScoreRequest(FRAMES, "succeeded?", ("yes", "no"), "success"),
         ScoreRequest(FRAMES, "which?", ("A", "B", "C"), "failure_class",
                      ("grasp.slip", "grasp.miss", "task.timeout"))]


def fake(p_attempt: float, p_success: float, cls: str, call_s: list[float]) -> FakeBackend:
    return FakeBackend(BackendSpec("m", "fake", options={
        "script": {"attempt": p_attempt, "success": p_success, "failure_class": cls},
        "class_p": 0.7, "call_s": call_s}))


def test_the_mean_of_each_choice_over_the_members_and_their_seconds_summed():
    both = MemberMean(BackendSpec("m", "fake"), [fake(0.9, 0.2, "grasp.slip", [0.5, 0.1]),
                                                 fake(0.5, 0.6, "grasp.miss", [0.25, 0.0])])
    both.load()
    answers, seconds = both.timed_score(ASKED)
    # (0.9 + 0.5) / 2 = 0.7; (0.2 + 0.6) / 2 = 0.4; slip: (0.7 + 0.15) / 2, miss: (0.15 + 0.7) / 2
    expected = [[0.7, 0.3], [0.4, 0.6], [0.425, 0.425, 0.15]]
    for got, want in zip(answers, expected, strict=True):
        assert np.allclose(got, want, rtol=0, atol=1e-12) and np.isclose(got.sum(), 1.0)
    assert seconds == pytest.approx(0.5 + 0.1 * 3 + 0.25)  # each member's modelled call
    assert all(np.allclose(a, b) for a, b in zip(both.score(ASKED), answers, strict=True))
    both.close()


def test_every_member_must_pass_the_answer_mass_probe():
    from models.base import ModelError, check_answer_mass

    def member(mass: float) -> FakeBackend:
        return FakeBackend(BackendSpec("m", "fake", options={"answer_mass": mass}))

    both = MemberMean(BackendSpec("m", "fake"), [member(0.9), member(0.3)])
    both.load()
    assert both.answer_mass(ASKED[0]) == 0.3  # the least of the members', not their mean 0.6
    with pytest.raises(ModelError, match=r"^model m: its answer tokens \('yes', 'no'\) hold "
                                         r"0\.3000 of the next-token probability"):
        check_answer_mass(both, ASKED[0])
    assert check_answer_mass(MemberMean(BackendSpec("m", "fake", min_answer_mass=0.0),
                                        both.members), ASKED[0]) is None  # 0: no probe


def test_the_registry_builds_one_backend_per_checkpoint_path_first():
    spec = BackendSpec("m", "fake", path="/ckpt/a", members=("/ckpt/b", "/ckpt/c"))
    backend = create_backend(spec)
    assert isinstance(backend, MemberMean)
    assert [(type(m), m.spec.path, m.spec.members) for m in backend.members] == [
        (FakeBackend, "/ckpt/a", ()), (FakeBackend, "/ckpt/b", ()), (FakeBackend, "/ckpt/c", ())]
    assert type(create_backend(BackendSpec("m", "fake", path="/ckpt/a"))) is FakeBackend


@pytest.mark.parametrize(("entry", "error"), [
    ({"members": ["{models_dir}/b/m0"]},
     "models.0.members: Value error, members need a path: they are further checkpoints of the "
     "model at path"),
    ({"path": "{models_dir}/a/m0", "members": ["{models_dir}/a/m0"]},
     "models.0.members: Value error, members must differ from each other and from path "
     "'{models_dir}/a/m0', got ['{models_dir}/a/m0']"),
])
def test_members_without_a_path_or_repeated_are_refused_naming_the_field(tmp_path, entry,
                                                                         error):
    models = [{"name": f"m{i}", "backend": "fake"} for i in range(3)]
    models[0].update(entry)
    path = tmp_path / "avg.yaml"
    path.write_text(yaml.safe_dump({"name": "avg", "models": models}))
    with pytest.raises(ConfigError) as err:
        load_judge_version(str(path))
    assert str(err.value) == f"{path}: {error}"
