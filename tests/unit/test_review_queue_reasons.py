"""Why a review queue is empty: the five reasons, in order, each line exact."""

from __future__ import annotations

import pytest

from judge.review.queue import QueueState, empty_reason

V = "tiny-streams"


@pytest.mark.parametrize(("state", "key", "code", "line"), [
    (QueueState(0, 0, 0, 0, 0), False, "no-runs",
     "The queue is empty: this ledger holds no runs yet."),
    (QueueState(0, 0, 0, 0, 0), True, "no-runs",
     "The queue is empty: no runs are visible to this key. It has judged none through the "
     "API and holds an edit grant on no dataset with runs. To label a team's runs, the "
     "operator grants the key: rcjudge datasets grant DATASET KEY_ID edit."),
    (QueueState(64, 0, 0, 0, 0, ("demo-streams-v2",)), True, "not-judged",
     "The queue is empty: tiny-streams judged none of the 64 runs this key sees (versions "
     "that did: demo-streams-v2)."),
    (QueueState(64, 0, 0, 0, 0), False, "not-judged",
     "The queue is empty: tiny-streams judged none of the 64 runs in this ledger (no version "
     "has judged them)."),
    (QueueState(96, 96, 96, 0, 0), True, "all-labelled",
     "The queue is empty: all 96 runs tiny-streams judged this key sees have a label."),
    (QueueState(96, 96, 32, 0, 0), True, "held-out",
     "The queue is empty: of the 96 runs tiny-streams judged this key sees, 32 have a label "
     "and the other 64 are held out from labelling (the test part rcjudge train keeps, a "
     "dataset's held_out_eval split, tier-B runs)."),
    (QueueState(96, 96, 32, 50, 50), True, "seen",
     "The queue is empty for this page: the 50 unlabelled runs tiny-streams judged this key "
     "sees were all shown here already (labelled, skipped or waiting to be saved); 32 have "
     "a label, 14 are held out. Reload the page to see the skipped ones again."),
    (QueueState(10, 10, 0, 10, 10), False, "seen",
     "The queue is empty for this page: the 10 unlabelled runs tiny-streams judged in this "
     "ledger were all shown here already (labelled, skipped or waiting to be saved); 0 have "
     "a label. Reload the page to see the skipped ones again."),
])
def test_each_reason_says_what_it_counted(state, key, code, line) -> None:
    assert empty_reason(state, V, key=key) == (code, line)


def test_a_key_with_read_grants_only_is_told_so() -> None:
    _, line = empty_reason(QueueState(0, 0, 0, 0, 0), V, key=True,
                           read_only=["lab/pick", "lab/wipe"])
    assert ("holds an edit grant on no dataset with runs; it may only read lab/pick, lab/wipe "
            "(a read grant shows a dataset's outcomes, not its queue: labelling is a write). "
            "To label") in line
