"""The three ledgers (``runs``, ``judgments``, ``operator_labels``): step 5 of a call.

``Ledger.open(url)`` opens and migrates a database (embedded SQLite under the
data directory by default, PostgreSQL by URL); see docs/ledgers.md.

The names below are imported on first use (PEP 562), not with the package: the CLI's
argument parsing imports ``judge.ledgers.cli`` and must not pay for SQLAlchemy and pydantic.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "LabelImportError": "errors", "LedgerError": "errors", "RowError": "errors",
    "CalibrationRow": "records", "Label": "records", "Run": "records",
    "StoredLabel": "records", "Written": "records",
    "Ledger": "store", "Transaction": "store", "default_url": "store", "make_engine": "store",
    "resolve_url": "store",
}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
