"""One model entry answered by several checkpoints of it: the mean of their probabilities.

A judge version's model entry may name ``members``: further checkpoints of the same model,
trained with other seeds on the same split (``rcjudge average``, ``judge.learn.average``).
The entry's answer to a closed question is the mean, choice by choice, of every
checkpoint's probabilities — a seed ensemble inside one of the three voters, which stay
three. Each checkpoint is a backend of the entry's own kind; ``models.registry``
builds this wrapper when a spec has members.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from models.base import Backend, BackendSpec, ScoreRequest


class MemberMean(Backend):
    """Backends of one model entry (its ``path`` first, then its ``members``), averaged."""

    def __init__(self, spec: BackendSpec, members: Sequence[Backend]) -> None:
        super().__init__(spec)
        self.members = list(members)

    def load(self) -> None:
        for m in self.members:
            m.load()

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        """Each request's probabilities, the mean over the members (each sums to 1)."""
        return self.timed_score(requests)[0]

    def timed_score(self, requests: Sequence[ScoreRequest]) -> tuple[list[np.ndarray], float]:
        """The mean answers, and the seconds every member computed (summed: what is charged)."""
        timed = [m.timed_score(requests) for m in self.members]  # (n_members, (answers, s))
        answers = [np.mean(per_request, axis=0)
                   for per_request in zip(*(a for a, _ in timed), strict=True)]
        return answers, float(sum(s for _, s in timed))

    def answer_mass(self, request: ScoreRequest) -> float:
        """The least answer-token mass of the members: every checkpoint must pass the probe."""
        return min(m.answer_mass(request) for m in self.members)

    def close(self) -> None:
        for m in self.members:
            m.close()
