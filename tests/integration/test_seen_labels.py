"""What each trained version saw (judge.ledgers.seen) on SQLite and PostgreSQL: the record,
its label ids, the parent chain, and the refusals."""

from __future__ import annotations

import pytest
import test_ledgers
from test_review_queue import lab, record

from judge.ledgers import LedgerError
from judge.ledgers.seen import (
    Seen,
    check_unrecorded,
    label_rows,
    record_training,
    runs_of_bundles,
    seen_runs,
)

db = test_ledgers.db
ledger = test_ledgers.ledger


def test_a_version_sees_its_own_runs_and_its_ancestors(ledger):
    for rid in ("a", "b", "c", "d", "e"):
        record(ledger, rid, (0.9, 0.9, 0.9))
    ledger.add_labels([lab("a", True), lab("b", False), lab("c", True), lab("d", True)])
    ids = {rid: s.label_id for rid, s in ledger.current_labels().items()}
    used_a, used_b = lab("a", True), lab("b", False)
    # b's label as used; c's label differs from the stored one (changed since): no id kept
    rows = label_rows(ledger, [("a", used_a, "train"), ("b", used_b, "validation"),
                               ("c", lab("c", False), "calibration")], from_file=False)
    assert rows == [("a", ids["a"], "train"), ("b", ids["b"], "validation"),
                    ("c", None, "calibration")]
    assert label_rows(ledger, [("a", used_a, "train")], from_file=True) == [("a", None, "train")]
    assert record_training(ledger, "v2", "v1", "ledger", rows) == 3
    assert record_training(ledger, "v3", "v2", "labels.csv", [("d", None, "train")]) == 1
    assert seen_runs(ledger, "v3") == Seen("v3", frozenset("abcd"), ("v3", "v2"), True)
    assert seen_runs(ledger, "v2") == Seen("v2", frozenset("abc"), ("v2",), True)
    assert seen_runs(ledger, "v1") == Seen("v1", frozenset(), (), False)  # never trained here
    with pytest.raises(LedgerError, match=r"v2: the ledger already records a training of this "
                                          r"version \(from v1\); a version's name is never "
                                          r"reused"):
        check_unrecorded(ledger, "v2")
    check_unrecorded(ledger, "v4")
    with pytest.raises(LedgerError, match=r"training record of v4: refused by the database"):
        record_training(ledger, "v4", "v3", "ledger", [("zz", None, "train")])  # no such run
    assert seen_runs(ledger, "v4").recorded is False  # nothing of it written
    with pytest.raises(LedgerError, match=r"training record of v4: part 'test'; expected one of "
                                          r"train, validation, calibration"):
        record_training(ledger, "v4", "v3", "ledger", [("e", None, "test")])
    h = ledger.get_run("e").bundle_hash
    assert runs_of_bundles(ledger, [h, "0" * 64]) == frozenset({"e"})
