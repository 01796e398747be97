"""The one small interface every VLM backend implements: load, score, close.

A backend answers a closed question: given frames and a prompt, the probability
of each allowed answer (``choices``). Answers are read from the model's next-token
distribution restricted to the answers' tokens (each answer: the log-sum-exp of its
single-token spellings, ``models.answers``) — never parsed from generated text. At load
the judge checks that those tokens hold enough of the raw next-token probability
(:meth:`Backend.answer_mass`, :func:`check_answer_mass`).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rcjudge.errors import RcjudgeError


class ModelError(RcjudgeError, ValueError):
    """A model cannot be loaded or cannot answer as asked."""


@dataclass(frozen=True)
class ScoreRequest:
    """One closed question about a set of frames."""

    frames: np.ndarray  # (T, H, W, 3) uint8, shown in order before the question
    prompt: str  # the question, asked after the frames
    choices: tuple[str, ...]  # allowed answers ("yes", "no" / "A", "B" …): models.answers
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
    #: The least raw next-token probability the answer tokens must hold on the reference
    #: prompt when the judge loads the model (:func:`check_answer_mass`); 0 skips the probe.
    min_answer_mass: float = 0.5
    #: The most images one prompt carries (the version's ``frames.images_per_question`` when
    #: cameras are tiled; None: not known from the version): what vLLM sizes its start-up
    #: profiling for (``models.vllm.engine_args``; ``options.max_images`` wins).
    images_per_prompt: int | None = None
    #: A served member's server and model (``models.endpoint.Endpoint``); None in-process.
    endpoint: Any = None
    #: What the judge version's fingerprint recorded of a served model
    #: (``models.served.read_identity``): a server that says otherwise is refused at load.
    pinned: dict | None = None


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

    def costed_score(self, requests: Sequence[ScoreRequest]
                     ) -> tuple[list[np.ndarray], float, list[float]]:
        """:meth:`timed_score` and what each request was charged in dollars by whoever
        answered it: 0 in-process (its seconds are priced instead, ``Judge.cost``); a served
        member's token usage × its prices (``models.served``)."""
        out, seconds = self.timed_score(requests)
        return out, seconds, [0.0] * len(out)

    def answer_mass(self, request: ScoreRequest) -> float:
        """The raw probability (softmax over the whole vocabulary, before any restriction to
        the answers) that the next token is one of ``request``'s answer tokens."""
        raise ModelError(f"model {self.spec.name}: backend {self.spec.backend!r} cannot "
                         "measure its answer-token mass")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model (GPU memory, engine processes)."""


def check_answer_mass(backend: Backend, request: ScoreRequest) -> float | None:
    """Probe a loaded backend: the answer tokens' raw mass on ``request`` (the judge's
    reference prompt, ``judge.ensemble.prompts.reference_request``), refused below the
    spec's ``min_answer_mass``. Returns the mass, or None when the threshold is 0 (no probe).

    Below the threshold most of the model's next-token probability is on tokens that are
    no answer, and renormalising over the answers would read a tail as if it were a
    confident answer (docs/judging.md).

    Raises:
        ModelError: one line naming the model, the mass and the threshold.
    """
    need = backend.spec.min_answer_mass
    if need <= 0:
        return None
    mass = backend.answer_mass(request)
    if mass < need:
        raise ModelError(f"model {backend.spec.name}: its answer tokens {request.choices} "
                         f"hold {mass:.4f} of the next-token probability on the reference "
                         f"prompt, below min_answer_mass {need}: the answers would be read "
                         "from a tail (docs/judging.md)")
    return mass
