"""The contact events as a line of text in the questions (judge.ensemble.prompts.sensor_text)."""

import numpy as np

from judge.bundle.contacts import ContactEvent
from judge.ensemble.prompts import class_request, family_request, sensor_text, yes_no_requests
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
