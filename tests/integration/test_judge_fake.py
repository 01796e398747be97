"""The single-call judge on a real bundle with scripted (fake) backends: prompts and rules."""

from __future__ import annotations

import json

import pytest
import yaml

from judge.config import configs_dir
from judge.ensemble.judge import Judge
from judge.ensemble.taxonomy import load_taxonomy
from judge.ensemble.version import JudgeVersion
from models.base import BackendSpec
from models.fake import FakeBackend

INSTRUCTION = {"tabletop.pick_place.cube_001": "pick up the orange cube and put it on the "
                                               "gray tray"}


def fake_judge(scripts, taxonomy=None, prompts=None):
    version = JudgeVersion(name="fake-v1", models=[
        {"name": f"m{i}", "backend": "fake", "options": {"script": s}}
        for i, s in enumerate(scripts)], **({"prompts": prompts} if prompts else {}))
    backends = [FakeBackend(BackendSpec(name=m.name, backend="fake", options=m.options))
                for m in version.models]
    for b in backends:
        b.load()
    return Judge(version, taxonomy=taxonomy, backends=backends)


@pytest.fixture(scope="module")
def bundle(make_bundles):
    folder = make_bundles(1, seed=3, outcome="grasp.slip", width=96, height=64, fps=10)[0]
    return str(folder)


def test_attempt_and_success_are_separate_requests(bundle):
    judge = fake_judge([{"attempt": 0.9, "success": 0.8}] * 3)
    j = judge.judge(bundle)
    assert (j.attempt, j.success, j.failure_class, j.counts_against_policy) == (
        True, True, None, False)
    for b in judge.backends:
        kinds = [r.kind for r in b.requests]
        assert kinds == ["attempt", "success"]  # two questions, no class asked on success
        attempt, success = b.requests
        assert attempt.prompt != success.prompt
        assert "attempt" in attempt.prompt and "complete the task" in success.prompt
        assert "complete the task" not in attempt.prompt
        assert attempt.frames is success.frames  # the same images: a shared prefix
        assert attempt.choices == success.choices == ("yes", "no")


def test_prompts_use_the_catalog_and_never_the_policy(bundle):
    judge = fake_judge([{"attempt": 0.9, "success": 0.1, "failure_class": "grasp.slip"}] * 3)
    attribution = json.loads(open(f"{bundle}/attribution.json").read())
    judge.judge(bundle)
    task = attribution["task"]["id"]
    for req in judge.backends[0].requests:
        if task in INSTRUCTION:
            assert INSTRUCTION[task] in req.prompt
        for secret in attribution["policy"].values():
            assert str(secret) not in req.prompt
    assert [r.kind for r in judge.backends[0].requests] == [
        "attempt", "success", "failure_family", "failure_class"]


def test_failure_path_frames_and_exact_confidences(bundle):
    judge = fake_judge([{"attempt": 0.9, "success": 0.2, "failure_class": "grasp.slip"},
                        {"attempt": 0.8, "success": 0.4, "failure_class": "grasp.miss"},
                        {"attempt": 0.3, "success": 0.9, "failure_class": "motion.collision"}])
    j = judge.judge(bundle)
    assert (j.attempt, j.success) == (True, False)
    assert j.attempt_confidence == pytest.approx(round((0.9 + 0.8 + 0.3) / 3, 6))
    assert j.success_confidence == pytest.approx(round((0.8 + 0.6 + 0.1) / 3, 6))
    # m0 and m1 judged a failure (1-1 tie); equal P(family)·P(class) = 0.8 · 0.8: by name
    assert j.failure_class == "grasp.miss"
    assert [a.failure_class for a in j.answers] == ["grasp.slip", "grasp.miss", None]
    assert [r.kind for r in judge.backends[2].requests] == ["attempt", "success"]
    fam = judge.backends[0].requests[2]
    assert fam.choices == ("A", "B", "C", "D", "E", "F", "G", "H")
    assert fam.labels[0] == "grasp" and "A) grasp: the grasp itself went wrong" in fam.prompt
    assert j.frames == 8  # images_per_question (default 8) of the 16 sampled time steps
    assert j.timings.total_s > 0 and j.cost.usd > 0 and j.cost.gpu_s == 0.0


def test_counts_against_policy_follows_the_taxonomy_file(bundle, tmp_path):
    scripts = [{"attempt": 0.9, "success": 0.1, "failure_class": "hardware.estop"}] * 3
    assert fake_judge(scripts).judge(bundle).counts_against_policy is False
    data = yaml.safe_load((configs_dir() / "taxonomy.yaml").read_text())
    data["classes"]["hardware.estop"]["counts_against_policy"] = True
    (tmp_path / "taxonomy.yaml").write_text(yaml.safe_dump(data))
    promoted = load_taxonomy(str(tmp_path / "taxonomy.yaml"))
    j = fake_judge(scripts, taxonomy=promoted).judge(bundle)
    assert (j.failure_class, j.counts_against_policy) == ("hardware.estop", True)


def test_uniform_class_answers_break_ties_by_letter_order(bundle):
    # no class scripted: every model answers uniformly; argmax takes the first letter
    # of each step: family A (grasp), then class A of grasp (grasp.miss)
    j = fake_judge([{"attempt": 0.9, "success": 0.1}] * 3).judge(bundle)
    assert (j.success, j.failure_class, j.counts_against_policy) == (False, "grasp.miss", True)
    assert [a.p_failure_class for a in j.answers] == pytest.approx([1 / 8 * 1 / 8] * 3)


def test_calibration_is_applied(bundle):
    version = JudgeVersion(name="cal", models=[
        {"name": f"m{i}", "backend": "fake", "options": {"script": {"attempt": 0.8,
                                                                     "success": 0.8}},
         "calibration": {"success": {"scale": 0.5}}} for i in range(3)])
    backends = [FakeBackend(BackendSpec(name=m.name, backend="fake", options=m.options))
                for m in version.models]
    for b in backends:
        b.load()
    j = Judge(version, backends=backends).judge(bundle)
    assert j.answers[0].p_success_raw == pytest.approx(0.8)
    assert j.answers[0].p_success == pytest.approx(2 / 3)  # logit(0.8)/2 = ln 2
    assert j.answers[0].p_attempt == pytest.approx(0.8)
    assert j.success_confidence == pytest.approx(round(2 / 3, 6))


def test_a_run_not_attempted_keeps_its_exempt_class(bundle):
    """attempt no, success answered yes: all three are asked, all three classes count."""
    judge = fake_judge([{"attempt": 0.2, "success": 0.9, "failure_class": "hardware.estop"},
                        {"attempt": 0.1, "success": 0.9, "failure_class": "hardware.estop"},
                        {"attempt": 0.3, "success": 0.8, "failure_class": "hardware.estop"}])
    j = judge.judge(bundle)
    assert (j.attempt, j.success, j.failure_class) == (False, False, "hardware.estop")
    assert j.counts_against_policy is False
    assert j.attempt_confidence == pytest.approx(0.8)
    assert j.success_confidence == pytest.approx(0.8)
    assert all(len(b.requests) == 4 for b in judge.backends)  # attempt, success, family, class


def test_the_question_flow_is_one_definition_driven_step_by_step(bundle):
    """What the batch does across actors, by hand: each step's requests, handed out once."""
    import numpy as np

    from judge.ensemble.judge import QuestionFlow, prepare

    judge = fake_judge([{"attempt": 0.9, "success": 0.2, "failure_class": "grasp.slip"},
                        {"attempt": 0.8, "success": 0.7},
                        {"attempt": 0.7, "success": 0.3, "failure_class": "grasp.miss"}])
    flow = QuestionFlow(judge, prepare(bundle, judge.version))
    first = flow.requests()
    assert {i: [r.kind for r in reqs] for i, reqs in first.items()} == {
        0: ["attempt", "success"], 1: ["attempt", "success"], 2: ["attempt", "success"]}
    assert flow.requests() == {} and not flow.done  # handed out once
    for i in (2, 0):
        flow.answer(i, judge.backends[i].score(first[i]))
    assert flow.requests() == {} and flow.votes is None  # waits for the third model
    flow.answer(1, judge.backends[1].score(first[1]))
    family = flow.requests()  # models 0 and 2 said "not a success": asked for a family
    assert sorted(family) == [0, 2] and family[0][0].kind == "failure_family"
    flow.answer(0, judge.backends[0].score(family[0]))
    assert [r.kind for r in flow.requests()[0]] == ["failure_class"]
    with pytest.raises(RuntimeError, match="model 1: an answer nobody asked for"):
        flow.answer(1, [np.array([0.5, 0.5])])
    assert not flow.done
    stepwise = judge.judge(bundle)  # the same flow, driven by Judge.ask
    assert (stepwise.attempt, stepwise.success, stepwise.failure_class) == (True, False,
                                                                            "grasp.miss")



def test_a_sensors_judge_asks_every_question_with_the_bundles_contact_events(bundle):
    """The truth of this synthetic slip: grasp at 2.53 s, slip at 4.29 s, 6 s long; the
    force detector finds both, and every question of a {sensors} version carries them."""
    from judge.ensemble.version import load_judge_version

    line = "The force sensors recorded: grasp at 2.5 s, slip at 4.3 s; the run lasted 6.0 s."
    scripts = [{"attempt": 0.9, "success": 0.1, "failure_class": "grasp.slip"}] * 3
    plain = fake_judge(scripts)
    sensors = fake_judge(scripts, prompts=load_judge_version("tiny-vision-sensors").prompts)
    assert sensors.judge(bundle).failure_class == plain.judge(bundle).failure_class
    for b in sensors.backends:
        assert [r.kind for r in b.requests] == [
            "attempt", "success", "failure_family", "failure_class"]
        assert all(line in r.prompt for r in b.requests)
    # the default templates have no slot: the same bundle is asked exactly as before
    assert all("force sensors" not in r.prompt for r in plain.backends[0].requests)


def test_a_motion_judge_asks_every_question_with_the_arm_and_fingers_motion(bundle):
    """This synthetic slip's fingers open at 0.08 m, collapse shut when the object slips out
    (4.3 s) and reopen to 0.08 m: closed to 0 % of their widest, gripping, ended at 100 %."""
    from judge.ensemble.version import load_judge_version

    scripts = [{"attempt": 0.9, "success": 0.1, "failure_class": "grasp.slip"}] * 3
    judge = fake_judge(scripts, prompts=load_judge_version("tiny-vision-streams").prompts)
    judge.judge(bundle)
    fingers = ("The fingers closed to 0 % of their widest at 4.3 s, gripping, and ended at "
               "100 %.")
    for b in judge.backends:
        assert [r.kind for r in b.requests] == [
            "attempt", "success", "failure_family", "failure_class"]
        assert all("slip at 4.3 s; the run lasted 6.0 s. The arm's joints travelled " in r.prompt
                   and f"at the end. {fingers} " in r.prompt for r in b.requests)


def test_an_exempt_class_without_evidence_is_unclassified_and_counts(bundle):
    """Issue 32: three models naming env.surface_changed at P(family) = P(class | family) =
    0.5, a class vote of 0.25, below the taxonomy's 0.5 for env: the failure is filed
    unclassified and counts against the policy; at 0.8 × 0.8 = 0.64 it keeps the class."""
    def judge(class_p: float):
        version = JudgeVersion(name="fake-ev", models=[
            {"name": f"m{i}", "backend": "fake", "options": {
                "script": {"attempt": 0.9, "success": 0.1,
                           "failure_class": "env.surface_changed"}, "class_p": class_p}}
            for i in range(3)])
        backends = [FakeBackend(BackendSpec(name=m.name, backend="fake", options=m.options))
                    for m in version.models]
        for b in backends:
            b.load()
        return Judge(version, backends=backends).judge(bundle)

    j = judge(0.5)
    assert [a.failure_class for a in j.answers] == ["env.surface_changed"] * 3
    assert [a.p_failure_class for a in j.answers] == pytest.approx([0.25] * 3)
    assert (j.success, j.failure_class, j.counts_against_policy) == (False, None, True)
    j = judge(0.8)
    assert (j.failure_class, j.counts_against_policy) == ("env.surface_changed", False)
