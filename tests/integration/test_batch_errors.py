"""`rcjudge batch` refuses bad flags before anything starts (no Ray, no ledger rows)."""

from __future__ import annotations

import pytest
import yaml

from rcjudge.cli import main

FAKE = {"name": "fake-errors", "models": [
    {"name": n, "backend": "fake", "options": {"script": {"attempt": 0.9, "success": 0.8}}}
    for n in "abc"]}


def fake_version(tmp_path):
    path = tmp_path / "fake-errors.yaml"
    path.write_text(yaml.safe_dump(FAKE))
    return path


@pytest.fixture
def batch_args(make_bundles, tmp_path):
    """A folder of two bundles, a fake judge version and a ledger URL (``--db``)."""
    folder = make_bundles(2, seed=11, width=96, height=64, fps=5)[0].parent
    db = tmp_path / "ledger.db"
    return ["batch", str(folder), "--judge", str(fake_version(tmp_path)),
            "--db", f"sqlite:///{db}"], db


def nothing_started(db) -> bool:
    import ray

    return not db.exists() and not ray.is_initialized()


@pytest.mark.parametrize("where", ["parent is a file", "grandparent is a file", "a folder"])
def test_unwritable_report_is_refused_before_the_batch(batch_args, tmp_path, capsys, where):
    args, db = batch_args
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    report, expected = {
        "parent is a file": (blocker / "report.json",
                             f"cannot be written: {blocker} is a file, not a folder"),
        "grandparent is a file": (blocker / "reports" / "report.json",
                                  f"cannot be written: {blocker} is a file, not a folder"),
        "a folder": (tmp_path, "is a folder; expected the path of a JSON file to write"),
    }[where]
    assert main([*args, "--report", str(report)]) == 2
    assert capsys.readouterr().err == f"rcjudge: error: --report {report}: {expected}\n"
    assert nothing_started(db)


@pytest.mark.parametrize("n", ["0", "-3"])
def test_max_in_flight_below_one_is_refused(batch_args, capsys, n):
    args, db = batch_args
    assert main([*args, "--max-in-flight", n]) == 2
    assert capsys.readouterr().err == (f"rcjudge: error: --max-in-flight {n}: expected at "
                                       "least 1 (bundles between submission and ledger write)\n")
    assert nothing_started(db)


def test_run_batch_refuses_max_in_flight_zero(make_bundles, tmp_path):
    from judge.batch.run import BatchError, run_batch
    from judge.ensemble.version import JudgeVersion
    from judge.errors import JudgeError
    from judge.ledgers.store import Ledger

    uris = [str(p) for p in make_bundles(2, seed=11, width=96, height=64, fps=5)]
    with Ledger.open(f"sqlite:///{tmp_path / 'l.db'}") as ledger:
        with pytest.raises(BatchError, match=r"^max_in_flight 0: expected at least 1 "
                                             r"\(bundles between submission and ledger "
                                             r"write\)$") as err:
            run_batch(uris, JudgeVersion.model_validate(FAKE), ledger, max_in_flight=0)
        assert isinstance(err.value, JudgeError) and isinstance(err.value, ValueError)
        assert ledger.counts() == {"runs": 0, "judgments": 0, "operator_labels": 0}
        assert ledger.failures() == []
    import ray

    assert not ray.is_initialized()
