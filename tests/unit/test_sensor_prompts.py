"""The contact events as a line of text in the questions (judge.ensemble.prompts.sensor_text)."""

import numpy as np

from judge.bundle.events import ContactEvent
from judge.ensemble.prompts import (
    class_request,
    family_request,
    motion_text,
    scale_travel,
    sensor_text,
    yes_no_requests,
)
from judge.ensemble.taxonomy import load_taxonomy
from judge.ensemble.version import load_judge_version


def _event(t: float, kind: str) -> ContactEvent:
    return ContactEvent(t=t, kind=kind, t_start=t, t_end=None, peak=1.0)


def test_events_in_time_order_to_a_tenth_of_a_second():
    text = sensor_text([_event(2.04, "slip"), _event(0.26, "grasp"), _event(2.96, "release")],
                       3.0)
    assert text == ("The force sensors recorded: grasp at 0.3 s, slip at 2.0 s, release at 3.0 s; "
                    "the run lasted 3.0 s.")


def test_no_event_says_so():
    assert sensor_text([], 12.04) == ("The force sensors recorded no contact; "
                                      "the run lasted 12.0 s.")


def test_a_template_without_the_slot_is_unchanged_and_one_with_it_carries_the_line():
    frames = np.zeros((1, 2, 2, 3), np.uint8)
    line = sensor_text([_event(1.0, "grasp")], 3.0)
    plain = yes_no_requests(frames, "open the drawer", load_judge_version("tiny-vision"), line)
    assert [r.prompt for r in plain] == [
        r.prompt for r in yes_no_requests(frames, "open the drawer",
                                          load_judge_version("tiny-vision"))]
    assert "force sensors" not in plain[0].prompt

    v = load_judge_version("tiny-vision-sensors")
    taxonomy = load_taxonomy()
    attempt, success = yes_no_requests(frames, "open the drawer", v, line)
    assert attempt.prompt == (
        "The images show a robot during one try at this task: open the drawer. The force "
        "sensors recorded: grasp at 1.0 s; the run lasted 3.0 s. Did the robot attempt the "
        "task, that is, reach for the object and try to manipulate it? Answer yes or no.")
    assert success.prompt.endswith("the run lasted 3.0 s. Did the robot complete the task "
                                   "successfully by the last image? Answer yes or no.")
    family = family_request(frames, "open the drawer", v, taxonomy, line)
    klass = class_request(frames, "open the drawer", "grasp", v, taxonomy, line)
    assert line in family.prompt and line in klass.prompt


def _signals(position, velocity, gripper_t, width, t=None):
    from judge.bundle.streams import Signals

    position = np.asarray(position, float)
    t = np.arange(len(position), dtype=float) if t is None else np.asarray(t, float)
    return Signals(t=t, joint_names=tuple(f"j{i}" for i in range(position.shape[1])),
                   position=position, velocity=np.asarray(velocity, float),
                   effort=np.zeros_like(position), gripper_t=np.asarray(gripper_t, float),
                   gripper_width=np.asarray(width, float),
                   gripper_force=np.zeros(len(gripper_t)))


# Two joints over 0-3 s: steps (1, 0.5), (0, 1), (0.5, 0) -> 1.5 + 1 + 0.5 = 3.0 rad of travel.
ARM = [[0, 0], [1, 0.5], [1, 1.5], [0.5, 1.5]]
# Fingers 0.125 m wide, closing to 3/64 m (37.5 %, to the nearest 5 half up: 40 %) at 1.0 s,
# ending at 5/64 m (62.5 % -> 65 %): exact binary fractions, no rounding noise.
FINGERS = ([0.0, 0.5, 1.0, 1.5], [0.125, 0.0625, 3 / 64, 5 / 64])


def test_motion_reads_the_joints_travel_and_the_fingers_closing_half_up():
    still = [[0, 0]] * 3 + [[0.25, 0]]  # the last sample (t = 3, the 0.25 s window): 0.25 rad/s
    text = motion_text(_signals(ARM, still, *FINGERS), [_event(1.0, "grasp")])
    assert text == ("The arm's joints travelled 3.0 rad and were still at the end. The fingers "
                    "closed to 40 % of their widest at 1.0 s, gripping, and ended at 65 %.")


def test_motion_at_the_speed_threshold_is_still_moving_and_a_close_without_a_grasp_is_on_nothing():
    at = [[0, 0]] * 3 + [[0.5, 0]]  # exactly STILL_RAD_S: not below it
    text = motion_text(_signals(ARM, at, *FINGERS), [_event(2.0, "impact")])
    assert text == ("The arm's joints travelled 3.0 rad and were still moving at the end. The "
                    "fingers closed to 40 % of their widest at 1.0 s, on nothing, and ended at "
                    "65 %.")


def test_scale_travel_rewrites_only_the_arms_travel_to_a_tenth_of_a_radian():
    text = motion_text(_signals(ARM, [[0, 0]] * 4, *FINGERS), [_event(1.0, "grasp")])
    # 3.0 rad x 1.25 = 3.75 -> 3.8 (3.75 is exact in binary: .1f rounds the tie to even, up
    # here); x 0.5 = 1.5; the fingers' clause keeps its numbers
    assert scale_travel(text, 1.25) == text.replace("travelled 3.0 rad", "travelled 3.8 rad")
    assert scale_travel(text, 0.5).startswith("The arm's joints travelled 1.5 rad and were still")
    assert scale_travel(text, 1.0) == text
    assert scale_travel("The fingers never closed.", 2.0) == "The fingers never closed."


def test_fingers_that_moved_less_than_5_mm_never_closed_and_empty_streams_say_nothing():
    flat = _signals(ARM, [[0, 0]] * 4, [0.0, 1.0], [0.1, 0.0975])  # 2.5 mm
    assert motion_text(flat, []).endswith("still at the end. The fingers never closed.")
    empty = _signals(np.zeros((1, 2)), np.zeros((1, 2)), [], [])
    assert motion_text(empty, []) == ""


def test_a_motion_template_carries_the_motion_line_in_all_four_questions():
    frames = np.zeros((1, 2, 2, 3), np.uint8)
    v = load_judge_version("tiny-vision-streams")
    taxonomy = load_taxonomy()
    sensors, motion = sensor_text([_event(1.0, "grasp")], 3.0), "The fingers never closed."
    attempt, success = yes_no_requests(frames, "open the drawer", v, sensors, motion)
    assert attempt.prompt == (
        "The images show a robot during one try at this task: open the drawer. The force "
        "sensors recorded: grasp at 1.0 s; the run lasted 3.0 s. The fingers never closed. Did "
        "the robot attempt the task, that is, reach for the object and try to manipulate it? "
        "Answer yes or no.")
    assert f"{sensors} {motion} Did the robot complete" in success.prompt
    assert f"{sensors} {motion} Which kind" in family_request(
        frames, "open the drawer", v, taxonomy, sensors, motion).prompt
    assert f"{sensors} {motion} Which grasp failure" in class_request(
        frames, "open the drawer", "grasp", v, taxonomy, sensors, motion).prompt
