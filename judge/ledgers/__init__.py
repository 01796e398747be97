"""The three ledgers (``runs``, ``judgments``, ``operator_labels``): step 5 of a call.

``Ledger.open(url)`` opens and migrates a database (embedded SQLite under the
data directory by default, PostgreSQL by URL); see docs/ledgers.md.
"""

from __future__ import annotations

from judge.ledgers.errors import LabelImportError, LedgerError, RowError
from judge.ledgers.records import CalibrationRow, Label, Run, StoredLabel, Written
from judge.ledgers.store import Ledger, Transaction, default_url, make_engine, resolve_url

__all__ = [
    "CalibrationRow", "Label", "LabelImportError", "Ledger", "LedgerError", "RowError", "Run",
    "StoredLabel", "Transaction", "Written", "default_url", "make_engine", "resolve_url",
]
