"""Which sampled frames the review page shows: around each contact event, and the end."""

from __future__ import annotations

import numpy as np

from judge.bundle.events import ContactEvent
from judge.explain_evidence import Evidence
from judge.review.card import frames_html, moments


def _evidence(contacts: list[ContactEvent], n_cams: int = 2) -> Evidence:
    targets = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0])  # (T,)
    images = np.zeros((n_cams, len(targets), 8, 12, 3), np.uint8)  # (n_cams, T, H, W, 3)
    return Evidence(run_id="r", bundle_uri="/b", bundle_hash="h" * 64, task_id="t",
                    instruction="i", duration_s=3.0, start_ns=0, signals=None,
                    contacts=contacts, windows=[], targets=targets, shown=np.arange(3),
                    cameras=tuple(f"cam{c}" for c in range(n_cams)), images=images,
                    timestamps=np.tile(targets, (n_cams, 1)))


def _event(t: float, kind: str) -> ContactEvent:
    return ContactEvent(t=t, kind=kind, t_start=t, t_end=None, peak=1.0)


def test_each_event_shows_its_nearest_frame_and_neighbours_then_the_end_state() -> None:
    ev = _evidence([_event(2.9, "release"), _event(1.1, "grasp"), _event(0.2, "impact")])
    assert moments(ev) == [("impact at 0.20 s", [0, 1]),  # nearest 0.0: no frame before it
                           ("grasp at 1.10 s", [1, 2, 3]),  # nearest 1.0
                           ("release at 2.90 s", [5, 6]),  # nearest 3.0: none after it
                           ("end state", [6])]


def test_no_events_is_the_end_state_alone_and_every_camera_is_drawn() -> None:
    ev = _evidence([])
    assert moments(ev) == [("end state", [6])]
    page = frames_html(_evidence([_event(1.1, "grasp")], n_cams=3))
    assert page.count("<section class='moment'") == 2
    assert page.count("<img ") == 3 * (3 + 1)
    assert page.count("data-camera='cam2'") == 2
