"""The outcome store's refusal, on its own so the CLI's parser can name it without the store
(SQLAlchemy); :mod:`judge.outcomes.store` re-exports it."""

from __future__ import annotations

from judge.errors import JudgeError


class OutcomeError(JudgeError, ValueError):
    """A dataset, sequence or label request was refused (bad name, filter, cursor)."""
