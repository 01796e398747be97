"""The one small interface every VLM backend implements: load, score, close.

A backend answers a closed question: given frames and a prompt, the probability
of each allowed answer (``choices``, each a single token of the model's
tokenizer). Answers are read from the model's next-token distribution
restricted to those tokens — never parsed from generated text.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rcjudge.errors import RcjudgeError


class ModelError(RcjudgeError, ValueError):
    """A model cannot be loaded or cannot answer as asked."""


@dataclass(frozen=True)
class ScoreRequest:
    """One closed question about a set of frames."""

    frames: np.ndarray  # (T, H, W, 3) uint8, shown in order before the question
    prompt: str  # the question, asked after the frames
    choices: tuple[str, ...]  # allowed answers, single tokens each ("yes", "no" / "A", "B" …)
    kind: str = ""  # attempt | success | failure_family | failure_class
    labels: tuple[str, ...] = ()  # what each choice stands for (taxonomy names), if not itself


@dataclass
class BackendSpec:
    """What a judge version says about one model entry."""

    name: str
    backend: str
    path: str = ""
    dtype: str = "float32"
    device: str = "cpu"
    max_pixels: int = 448 * 448
    gpu_share: float = 0.0
    options: dict = field(default_factory=dict)
    #: Further checkpoint folders of the same model (other training seeds on one split): the
    #: entry answers with the mean of every checkpoint's probabilities (``models.members``).
    members: tuple[str, ...] = ()


def single_token_ids(tokenizer, choices: tuple[str, ...], model: str) -> list[int]:
    """The token id of each answer; an answer that is not one token is refused."""
    ids = []
    for c in choices:
        enc = tokenizer.encode(c, add_special_tokens=False)
        if len(enc) != 1:
            raise ModelError(f"model {model}: answer {c!r} is {len(enc)} tokens {enc}; "
                             "answers must be single tokens")
        ids.append(enc[0])
    return ids


class Backend(ABC):
    """A loaded VLM that scores closed questions."""

    def __init__(self, spec: BackendSpec) -> None:
        self.spec = spec

    @abstractmethod
    def load(self) -> None:
        """Load weights and processor (heavy imports happen here, not at import time)."""

    @abstractmethod
    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        """Probabilities over each request's choices (each sums to 1), in request order."""

    def timed_score(self, requests: Sequence[ScoreRequest]) -> tuple[list[np.ndarray], float]:
        """:meth:`score` and the seconds this replica computed for it (the call's wall time).

        What a batch charges: each request's share of it (``judge.batch.run``).
        """
        t0 = time.perf_counter()
        out = self.score(requests)
        return out, time.perf_counter() - t0

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model (GPU memory, engine processes)."""
