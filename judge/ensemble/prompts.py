"""Prompts: turn decoded frames and a task into the closed questions the models answer.

Attempt and success are always two separate requests over the same images, never
one merged question; the failure class is asked only when needed, in two
single-letter steps (family, then class within it). The instruction comes from
the task catalog keyed by ``task.id`` (:mod:`judge.tasks`: the package's tasks and the lab's
own); the policy's identity never enters a prompt.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence

import numpy as np

from judge.bundle.events import ContactEvent
from judge.bundle.streams import Signals
from judge.ensemble.taxonomy import Taxonomy
from judge.ensemble.version import JudgeVersion
from models.base import ScoreRequest

YES_NO = ("yes", "no")
LETTERS = string.ascii_uppercase


def question_indices(t: int, version: JudgeVersion) -> np.ndarray:
    """Which of ``t`` sampled time steps the questions show: evenly spaced, ends kept; one
    image is the last, the end state. (K,)"""
    k = min(version.frames.images_per_question, t)
    return np.unique(np.round(np.linspace(0 if k > 1 else t - 1, t - 1, k)).astype(int))


def question_images(images: np.ndarray, version: JudgeVersion) -> np.ndarray:
    """The images every question shows: cameras tiled side by side, evenly subsampled.

    Args:
        images: (n_cams, T, H, W, 3) uint8 from ``decode_frames``.
    Returns:
        (K, H, n_cams·W, 3) uint8 with tiling, else (K·n_cams, H, W, 3); K ≤ images_per_question,
        first and last time step always kept (K = 1: the last, the end state).
    """
    picked = images[:, question_indices(images.shape[1], version)]  # (n_cams, K, H, W, 3)
    if version.frames.tile_cameras:
        return np.concatenate(list(picked), axis=2)  # (K, H, n_cams·W, 3)
    return picked.transpose(1, 0, 2, 3, 4).reshape(-1, *images.shape[2:])


def _options(names: list[str], descriptions: dict[str, str]) -> str:
    return "\n".join(f"{LETTERS[i]}) {n}: {descriptions.get(n, '')}".rstrip(": ")
                     for i, n in enumerate(names))


def sensor_text(contacts: Sequence[ContactEvent], duration_s: float) -> str:
    """What the force and gripper streams recorded, for templates with ``{sensors}``.

    One clause per contact event, in time order, to a tenth of a second:
    ``"The force sensors recorded: grasp at 1.2 s, slip at 2.0 s; the run lasted 3.0 s."``
    """
    if not contacts:
        return f"The force sensors recorded no contact; the run lasted {duration_s:.1f} s."
    events = ", ".join(f"{c.kind} at {c.t:.1f} s" for c in sorted(contacts, key=lambda c: c.t))
    return f"The force sensors recorded: {events}; the run lasted {duration_s:.1f} s."


#: The arm counts as still at the end when its joints' mean speed (the norm over joints) over
#: the last ``END_WINDOW_S`` is below this (rad/s).
STILL_RAD_S = 0.5
END_WINDOW_S = 0.25
#: The fingers count as having closed when their opening fell this far below its widest (m).
CLOSE_TRAVEL_M = 0.005


def _pct(x: float) -> int:
    """A percentage to the nearest 5, half up."""
    return int(5 * np.floor(x / 5 + 0.5))


#: The arm's travel as :func:`motion_text` words it; :func:`scale_travel` finds it there.
TRAVEL = re.compile(r"travelled (\d+\.\d) rad")


def travel_clause(travel: float) -> str:
    return f"travelled {travel:.1f} rad"


def scale_travel(text: str, factor: float) -> str:
    """``text`` with the arm's travel (as :func:`motion_text` words it) times ``factor``, to a
    tenth of a radian: ``scale_travel("... travelled 7.6 rad ...", 1.25)`` -> ``"... travelled
    9.5 rad ..."``; a text without it is returned as it is."""
    return TRAVEL.sub(lambda m: travel_clause(float(m.group(1)) * factor), text)


def motion_text(signals: Signals, contacts: Sequence[ContactEvent]) -> str:
    """What the joint and gripper position streams recorded, for templates with ``{motion}``.

    The arm: the joints' total travel (the sum of every joint's absolute steps, rad; a
    prismatic joint adds metres) and whether it was still at the end (:data:`STILL_RAD_S`).
    The fingers: the narrowest they closed to, as a percentage of their widest opening (to
    the nearest 5), when, whether a grasp held anything (a ``grasp`` contact event), and
    where they ended:
    ``"The arm's joints travelled 7.6 rad and were still at the end. The fingers closed to
    40 % of their widest at 0.5 s, gripping, and ended at 45 %."``
    """
    parts = []
    if len(signals.t) > 1:
        travel = float(np.abs(np.diff(signals.position, axis=0)).sum())
        end = signals.t >= signals.t[-1] - END_WINDOW_S
        speed = float(np.linalg.norm(signals.velocity[end], axis=1).mean())
        state = "still" if speed < STILL_RAD_S else "still moving"
        parts.append(f"The arm's joints {travel_clause(travel)} and were {state} at the end.")
    w = signals.gripper_width
    if len(w) > 1:
        widest, i = float(w.max()), int(np.argmin(w))
        if widest - float(w[i]) < CLOSE_TRAVEL_M:
            parts.append("The fingers never closed.")
        else:
            grip = "gripping" if any(c.kind == "grasp" for c in contacts) else "on nothing"
            parts.append(f"The fingers closed to {_pct(100 * w[i] / widest)} % of their widest "
                         f"at {signals.gripper_t[i]:.1f} s, {grip}, and ended at "
                         f"{_pct(100 * w[-1] / widest)} %.")
    return " ".join(parts)


def yes_no_requests(frames: np.ndarray, instruction: str, version: JudgeVersion,
                    sensors: str = "", motion: str = "") -> list[ScoreRequest]:
    """The attempt and the success question: two requests, same frames."""
    p = version.prompts
    fill = {"instruction": instruction, "sensors": sensors, "motion": motion}
    return [ScoreRequest(frames, p.attempt.format(**fill), YES_NO, "attempt"),
            ScoreRequest(frames, p.success.format(**fill), YES_NO, "success")]


#: The reference prompt's task and frames (mid-grey: a scene with nothing in it).
REFERENCE_INSTRUCTION = "pick up the orange cube and put it on the gray tray"
REFERENCE_GREY = 128


def reference_request(version: JudgeVersion, max_pixels: int) -> ScoreRequest:
    """The reference prompt of the answer-token mass probe, defined once: ``version``'s
    attempt question about :data:`REFERENCE_INSTRUCTION` over ``images_per_question``
    mid-grey square frames of ``max_pixels`` (the model's pixel cap: what it is sent at
    most). The judge probes it at load (``models.base.check_answer_mass``); ``rcjudge
    doctor`` reports it."""
    side = math.isqrt(max_pixels)
    frames = np.full((version.frames.images_per_question, side, side, 3), REFERENCE_GREY,
                     np.uint8)  # (K, side, side, 3)
    return yes_no_requests(frames, REFERENCE_INSTRUCTION, version)[0]


def family_request(frames: np.ndarray, instruction: str, version: JudgeVersion,
                   taxonomy: Taxonomy, sensors: str = "", motion: str = "") -> ScoreRequest:
    families = list(taxonomy.families)
    text = version.prompts.failure_family.format(
        instruction=instruction, sensors=sensors, motion=motion,
        options=_options(families, taxonomy.families))
    return ScoreRequest(frames, text, tuple(LETTERS[: len(families)]), "failure_family",
                        tuple(families))


def class_request(frames: np.ndarray, instruction: str, family: str, version: JudgeVersion,
                  taxonomy: Taxonomy, sensors: str = "", motion: str = "") -> ScoreRequest:
    names = taxonomy.in_family(family)
    desc = {n: taxonomy.classes[n].description for n in names}
    text = version.prompts.failure_class.format(instruction=instruction, family=family,
                                                sensors=sensors, motion=motion,
                                                options=_options(names, desc))
    return ScoreRequest(frames, text, tuple(LETTERS[: len(names)]), "failure_class",
                        tuple(names))
