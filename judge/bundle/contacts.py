"""Contacts: find contact events in the gripper-force and joint-effort streams.

Pure numpy, no I/O. Grippers that report only width and actuator effort go through
``judge.bundle.fingers`` instead of the force detector (a profile says which). Two
detectors, both with hysteresis (a high threshold to start an event, a low one to end
it) so noise near a threshold cannot chatter:

* gripper force: ``grasp`` at onset; at offset ``release`` when the fingers reopen
  (within ``fingers.open_window_s``, to ``fingers.open_fraction`` of the width they closed
  from, and more than ``OPEN_DELTA_M``), ``slip`` when the force vanished while they did
  not (collapsing toward closed, staying put, or only drifting open as a weak grip lets
  the object slide out);
* joint effort: ``impact`` where the effort leaves its median-filtered baseline
  by many robust sigmas (collisions, knocks), and by at least a physical floor (Nm): the
  larger of the judge version's ``impact_min_nm`` and the gripper profile's (the arm it
  is on). A sigma says how unusual a residual is, not how hard a knock was: on a
  noise-free effort (a simulator's) it is ~0 and every motion transient reads as
  thousands of sigmas. A running median follows steps (a payload lifted or dropped)
  without flagging them, and a held object's weight with them: the baseline is the
  effort around each sample, never the episode's start.

A hold already on at the episode's first sample (an episode cut mid-grasp) is a ``grasp``
at that sample; the width its fingers closed from is not in the episode, so the gripper's
open state stands in for it (the profile's ``open_width_m``, else the widest the fingers
are in the episode).
"""

from __future__ import annotations

import numpy as np

from judge.bundle.events import TIME_EPS_S, ContactEvent, hysteresis, running_median, segments
from judge.bundle.fingers import finger_events
from judge.bundle.streams import Signals
from judge.config import ContactConfig, FingerConfig, GripperProfile

#: What :func:`contact_detector` names: the force detector, or the width detector with an
#: actuator effort or with the width alone.
DETECTORS = {"force": "force detector (/gripper effort as a finger-object force)",
             "width + effort": "width detector (finger width + actuator effort)",
             "width": "width detector (finger width alone)"}

#: The robust sigma of a joint's effort residual is at least this fraction of the joint's
#: largest |effort| in the run: the resolution an effort is logged to. A noise-free effort (a
#: simulator's) has a robust sigma of 0; a floor of 1e-9 Nm read a clean 3.5 Nm transient as
#: 3.5e9 sigmas, this one as 34.
RESOLUTION = 1e-3
OPEN_DELTA_M = 0.002  # a release opens the fingers at least this much past the hold width


def gripper_events(t: np.ndarray, width: np.ndarray, force: np.ndarray,
                   cfg: ContactConfig, fingers: FingerConfig | None = None,
                   open_width: float | None = None) -> list[ContactEvent]:
    """Grasp onsets and release/slip offsets from the gripper force.

    The force says when; the width says which: an offset is a ``release`` when, over the
    ``fingers.open_window_s`` from it, the fingers reopen to ``fingers.open_fraction`` of
    the widest they were between the previous contact's end (or the start) and this
    onset, and more than ``OPEN_DELTA_M`` past the hold width; else a ``slip``. A contact
    already on at the first sample closed from before the episode: ``open_width`` (the
    profile's, m) stands in for that width, else the widest in the episode.
    """
    fingers = fingers or FingerConfig()
    n = len(t)
    rate = (n - 1) / (t[-1] - t[0]) if n > 1 and t[-1] > t[0] else 1.0
    window = max(1, round(fingers.open_window_s * rate))
    events = []
    state = hysteresis(force, cfg.force_on_n, cfg.force_off_n)
    since = 0  # where the previous contact ended
    for a, b in segments(state):
        end = b if b < n else None
        if (t[b - 1] if end is None else t[b]) - t[a] < cfg.min_contact_s - TIME_EPS_S:
            continue  # a blip: not a contact, and the fingers' pre-close width spans it
        last, since = since, b
        onset = a
        while onset > 0 and force[onset - 1] > cfg.force_off_n:
            onset -= 1  # walk back to where the force left the noise floor
        peak = float(force[a:b].max())
        events.append(ContactEvent(float(t[onset]), "grasp", float(t[onset]),
                                   None if end is None else float(t[end]), peak, peak, "N"))
        if end is None:
            continue
        # the width the fingers closed from; a hold on at the start closed from open
        pre = width[last:onset + 1].max() if a > 0 else (
            width.max() if open_width is None else open_width)
        before = width[max(a, end - 5):end].mean()
        reopened = width[end:end + window].max()
        kind = ("release" if reopened - before > OPEN_DELTA_M
                and reopened >= fingers.open_fraction * pre else "slip")
        events.append(ContactEvent(float(t[end]), kind, float(t[onset]), float(t[end]), peak,
                                   peak, "N"))
    return events


def inertia_compensated(t: np.ndarray, velocity: np.ndarray, effort: np.ndarray,
                        window: int) -> np.ndarray:
    """Effort minus the part explained by joint acceleration, inertia fitted from the data.

    Fast but smooth motion moves the effort too; an impact does not come with a
    matching acceleration. Per joint, ``I`` is the least-squares slope of the
    high-passed effort on the high-passed acceleration (impacts are too short
    and sparse to sway it).
    """
    qdd = np.gradient(velocity, t, axis=0)  # (N, J)
    hp_e = effort - running_median(effort, window)
    hp_a = qdd - running_median(qdd, window)
    inertia = (hp_e * hp_a).sum(axis=0) / np.maximum((hp_a * hp_a).sum(axis=0), 1e-12)  # (J,)
    return effort - inertia * qdd


def noise_sigma(comp: np.ndarray, resid: np.ndarray) -> np.ndarray:
    """Per joint, the effort's noise sigma: the larger of two robust estimates. (J,)

    * 1.4826 x the median absolute deviation of the residual from its running median;
    * the same of the second differences, over sqrt(6) (white noise of sigma s has second
      differences of sigma sqrt(6) s; a smooth motion's are ~0: the DER_SNR estimator).

    The first alone collapses where the effort trends faster than its noise: a running
    median of a locally monotone signal is the signal itself, so most residuals are
    exactly 0 (bench.synth's arm at 50 Hz with 0.05 Nm of noise: 0.23-0.53 Nm noise peaks
    read as 12-25 sigmas). The second alone misses noise slower than the sample rate.
    Neither sees a sparse impact.
    """
    mad = np.median(np.abs(resid - np.median(resid, axis=0)), axis=0)
    d2 = np.diff(comp, 2, axis=0)  # (N-2, J)
    der = np.median(np.abs(d2 - np.median(d2, axis=0)), axis=0) / np.sqrt(6.0)
    return 1.4826 * np.maximum(mad, der)


def impact_events(t: np.ndarray, velocity: np.ndarray, effort: np.ndarray,
                  cfg: ContactConfig, min_nm: float | None = None) -> list[ContactEvent]:
    """Impacts: the inertia-compensated effort residual in robust sigmas.

    The sigma (:func:`noise_sigma`) is floored at ``min_nm / impact_on_sigma`` (``min_nm``:
    the physical floor, default ``cfg.impact_min_nm``), so an impact starts where the
    residual exceeds both ``impact_on_sigma`` robust sigmas and ``min_nm``, and ends below
    the same floor scaled by ``impact_off_sigma``; and at :data:`RESOLUTION` of the joint's
    largest |effort|. ``peak`` is in floored sigmas (a robust z-score), ``peak_value`` the
    residual itself in Nm, of the joint that scored highest.
    """
    if len(t) < 5:
        return []
    min_nm = cfg.impact_min_nm if min_nm is None else min_nm
    rate = (len(t) - 1) / (t[-1] - t[0])
    window = round(cfg.effort_window_s * rate)
    comp = inertia_compensated(t, velocity, effort, window)
    resid = comp - running_median(comp, window)  # (N, J)
    floor = np.maximum(RESOLUTION * np.abs(effort).max(axis=0), 1e-9)  # (J,)
    sigma = np.maximum(np.maximum(noise_sigma(comp, resid), floor), min_nm / cfg.impact_on_sigma)
    z = np.abs(resid / sigma)  # (N, J)
    score = z.max(axis=1)  # (N,)
    merged: list[list[int]] = []
    for a, b in segments(hysteresis(score, cfg.impact_on_sigma, cfg.impact_off_sigma)):
        if merged and t[a] - t[merged[-1][1] - 1] < cfg.min_gap_s:
            merged[-1][1] = b
        else:
            merged.append([a, b])
    events = []
    for a, b in merged:
        p = a + int(np.argmax(score[a:b]))
        events.append(ContactEvent(float(t[p]), "impact", float(t[a]),
                                   float(t[min(b, len(t) - 1)]), float(score[p]),
                                   float(abs(resid[p, int(np.argmax(z[p]))])), "Nm"))
    return events


def contact_detector(gripper: GripperProfile | None) -> str:
    """Which detector reads the gripper: ``force`` (no profile, or a contact-force
    effort), ``width + effort`` (an actuator effort) or ``width`` (no effort)."""
    if gripper is None or gripper.effort == "contact":
        return "force"
    return "width + effort" if gripper.effort == "actuator" else "width"


def impact_floor(cfg: ContactConfig, gripper: GripperProfile | None) -> tuple[float, str]:
    """The physical floor of an impact (Nm) and where it comes from: the larger of the
    settings' ``impact_min_nm`` and the gripper profile's (0 where neither sets one)."""
    own = 0.0 if gripper is None else gripper.impact_min_nm
    if own > cfg.impact_min_nm:
        return own, "gripper profile"
    return cfg.impact_min_nm, "settings" if cfg.impact_min_nm > 0 else "none"


def detect_contacts(signals: Signals, cfg: ContactConfig | None = None,
                    gripper: GripperProfile | None = None,
                    fingers: FingerConfig | None = None) -> list[ContactEvent]:
    """All contact events of a run, sorted by time.

    Without a gripper profile, or with one whose effort is a contact force, the gripper's
    effort is read as the finger–object force (:func:`gripper_events`); otherwise the
    events come from the width and actuator effort (:func:`judge.bundle.fingers.finger_events`).
    Impacts must exceed :func:`impact_floor`.
    """
    cfg = cfg or ContactConfig()
    g_t, g_w, g_f = signals.gripper_t, signals.gripper_width, signals.gripper_force
    if contact_detector(gripper) == "force":
        events = gripper_events(g_t, g_w, g_f, cfg, fingers,
                                None if gripper is None else gripper.open_width_m)
    else:
        events = finger_events(g_t, g_w, g_f, gripper, fingers, cfg.min_contact_s)
    events += impact_events(signals.t, signals.velocity, signals.effort, cfg,
                            impact_floor(cfg, gripper)[0])
    return sorted(events, key=lambda e: (e.t, e.kind))
