"""Judge: one bundle in, one Judgment out — intake, decode, contacts, sample, ask, vote.

``Judge`` holds a judge version and its three loaded backends (load once, judge
many: the demo, the API and Ray actors keep one). ``judge_bundle`` is the
single-call entry point. Every stage is timed; the cost estimate comes from
``configs/pricing.yaml``.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import numpy as np

from judge.api.protocol import Attribution
from judge.bundle.cycle import cycle_time
from judge.bundle.decode import Streams, decode_frames, load_streams
from judge.bundle.intake import VerifiedBundle, intake
from judge.bundle.sample import plan_targets
from judge.config import configs_dir, load_yaml
from judge.ensemble.fingerprint import (
    fingerprint_of,
    instruction_sha256,
    served_parts,
    version_parts,
)
from judge.ensemble.judgment import Cost, Judgment, ModelAnswer, StageTimings
from judge.ensemble.prompts import (
    class_request,
    family_request,
    motion_text,
    question_images,
    reference_request,
    sensor_text,
    yes_no_requests,
)
from judge.ensemble.taxonomy import Taxonomy, load_taxonomy
from judge.ensemble.version import JudgeVersion, load_judge_version
from judge.ensemble.vote import ModelVote, calibrate, class_voters, vote
from judge.tasks import instruction_for
from models.base import Backend, ModelError, ScoreRequest, check_answer_mass
from models.registry import create_backend


@cache
def pricing() -> dict[str, float]:
    data = load_yaml(configs_dir() / "pricing.yaml")
    return {k: float(data[k]) for k in ("gpu_hour_usd", "cpu_hour_usd")}


def load_backends(version: JudgeVersion,
                  pinned: dict[str, dict] | None = None) -> list[Backend]:
    """The version's three backends, loaded, each probed for its answer-token mass on the
    reference prompt (``check_answer_mass``); on a refusal the loaded ones are closed.
    ``pinned``: per served model, the identity the version's fingerprint recorded (a server
    that now says otherwise is refused).

    Raises:
        ModelError: a model that cannot load, or whose answer tokens hold too little mass.
    """
    backends: list[Backend] = []
    try:
        for m in version.models:
            backends.append(create_backend(replace(m.spec(), pinned=(pinned or {}).get(m.name))))
            backends[-1].load()
            check_answer_mass(backends[-1], reference_request(version, m.max_pixels))
    except ModelError:
        for b in backends:
            b.close()
        raise
    return backends


@dataclass(frozen=True)
class Prepared:
    """A bundle made ready for the models: verified, decoded, frames chosen. CPU work only."""

    uri: str
    run_id: str
    bundle_hash: str
    attribution: Attribution
    instruction: str
    frames: np.ndarray  # (K, H, W', 3) uint8, the images every question shows
    sensors: str  # the contact events as text, for templates with {sensors}
    motion: str  # the arm's and fingers' motion as text, for templates with {motion}
    duration_s: float
    cycle_sec: float
    intake_s: float
    frames_s: float


@dataclass(frozen=True)
class Admitted:
    """A bundle that passed intake, with its task's instruction: nothing decoded yet."""

    bundle: VerifiedBundle
    instruction: str
    intake_s: float
    streams: Streams | None = None  # read up front (``read_streams``): the MCAP checked early


def admit(uri: str, request: dict[str, Any] | None = None) -> Admitted:
    """Intake and the task-catalog instruction: every check that needs no decoding.

    Raises:
        BundleError: the bundle fails intake (manifest, hashes, attribution).
        ConfigError: its task is not in the task catalog.
    """
    t0 = time.perf_counter()
    bundle = intake(uri, request)
    instruction = instruction_for(bundle.attribution.task.id)
    return Admitted(bundle=bundle, instruction=instruction, intake_s=time.perf_counter() - t0)


def read_streams(a: Admitted) -> Admitted:
    """``a`` with its MCAP read (no pixel decoded): a corrupt MCAP is refused before models load.

    Raises:
        BundleError: the MCAP or a sidecar camera is unreadable or malformed.
    """
    t0 = time.perf_counter()
    streams = load_streams(a.bundle)
    return replace(a, streams=streams, intake_s=a.intake_s + time.perf_counter() - t0)


def prepare_admitted(a: Admitted, version: JudgeVersion, run_id: str | None = None) -> Prepared:
    """Decode an admitted bundle and choose the images every question shows."""
    t1 = time.perf_counter()
    bundle = a.bundle
    streams = a.streams or load_streams(bundle)
    contacts, targets = plan_targets(streams, version.sampling_settings())
    frames = question_images(decode_frames(streams.videos, targets).images, version)
    t2 = time.perf_counter()
    return Prepared(uri=bundle.uri, run_id=run_id or posixpath.basename(bundle.root.rstrip("/")),
                    bundle_hash=bundle.bundle_hash, attribution=bundle.attribution,
                    instruction=a.instruction, frames=frames,
                    sensors=sensor_text(contacts, streams.duration_s),
                    motion=motion_text(streams.signals, contacts),
                    duration_s=streams.duration_s,
                    cycle_sec=max(cycle_time(streams.signals), 1e-3),
                    intake_s=a.intake_s, frames_s=t2 - t1)


def prepare(uri: str, version: JudgeVersion, request: dict[str, Any] | None = None,
            run_id: str | None = None) -> Prepared:
    """Intake, decode and choose the images (the CPU half of a judgment)."""
    return prepare_admitted(admit(uri, request), version, run_id)


class Judge:
    """A judge version: its questions, its vote, and (for local use) its loaded backends.

    The steps (``yes_no``, ``initial_votes``, ``needs_class``, ``family``, ``klass``,
    ``finish``) are what the Ray batch composes across actors; ``judge`` composes them
    in this process.
    """

    def __init__(self, version: JudgeVersion | str, taxonomy: Taxonomy | None = None,
                 backends: Sequence[Backend] | None = None, load: bool = True) -> None:
        self.version = load_judge_version(version) if isinstance(version, str) else version
        self.taxonomy = taxonomy or load_taxonomy()
        # hashes every model folder (a missing one is named before any model loads) and asks
        # each served model's endpoint what it serves (``served``: pinned at load)
        content = version_parts(self.version, self.taxonomy)
        self.fingerprint = fingerprint_of(content)
        self.served = served_parts(content)
        if backends is None and load:
            backends = load_backends(self.version, self.served)
        self.backends = list(backends or [])

    def close(self) -> None:
        for b in self.backends:
            b.close()

    # --- steps -------------------------------------------------------------------------
    def yes_no(self, p: Prepared) -> list[ScoreRequest]:
        """The attempt and the success question (two requests, same frames) for each model."""
        return yes_no_requests(p.frames, p.instruction, self.version, p.sensors, p.motion)

    def initial_votes(self, raw: Sequence[Sequence[np.ndarray]]) -> list[ModelVote]:
        """Calibrated yes/no votes from each model's [P(attempt), P(success)] answers."""
        return [ModelVote(m.name, calibrate(float(pa[0]), m.calibration.attempt),
                          calibrate(float(ps[0]), m.calibration.success))
                for m, (pa, ps) in zip(self.version.models, raw, strict=True)]

    def needs_class(self, votes: Sequence[ModelVote]) -> list[int]:
        """Indices of the models to ask for a failure class (none on a success)."""
        return class_voters(votes, self.version.vote.yes_threshold)

    def family(self, p: Prepared) -> ScoreRequest:
        return family_request(p.frames, p.instruction, self.version, self.taxonomy, p.sensors,
                              p.motion)

    def klass(self, p: Prepared, family_req: ScoreRequest, family_p: np.ndarray) -> ScoreRequest:
        fam = family_req.labels[int(np.argmax(family_p))]
        return class_request(p.frames, p.instruction, fam, self.version, self.taxonomy,
                             p.sensors, p.motion)

    @staticmethod
    def with_class(mv: ModelVote, family_p: np.ndarray, class_req: ScoreRequest,
                   class_p: np.ndarray) -> ModelVote:
        j = int(np.argmax(class_p))
        return replace(mv, failure_class=class_req.labels[j],
                       p_failure_class=float(family_p.max() * class_p[j]))

    def finish(self, p: Prepared, votes: Sequence[ModelVote],
               raw: Sequence[Sequence[np.ndarray]], models_s: float | None = None,
               model_s: Sequence[float] | None = None,
               model_usd: Sequence[float] | None = None, served_s: float = 0.0) -> Judgment:
        """Vote and build the Judgment.

        ``models_s``: wall seconds of the model stage (the single call). ``model_s``: the
        compute seconds each model's replicas spent on this bundle (a batch: its share of
        every batched call); given, ``models_s`` is their sum and the cost is theirs
        (:meth:`cost`). ``model_usd``: what each model's server charged for this bundle's
        requests (served models: token usage × prices; 0 in-process).
        """
        t0 = time.perf_counter()
        result = vote(votes, self.version.vote, self.taxonomy)
        if model_s is not None:
            models_s = float(sum(model_s))
        timings = StageTimings(intake_s=p.intake_s, frames_s=p.frames_s, models_s=models_s,
                               vote_s=time.perf_counter() - t0)
        answers = tuple(
            ModelAnswer(model=mv.model, p_attempt=mv.p_attempt, p_success=mv.p_success,
                        p_attempt_raw=float(r[0][0]), p_success_raw=float(r[1][0]),
                        failure_class=mv.failure_class, p_failure_class=mv.p_failure_class)
            for mv, r in zip(votes, raw, strict=True))
        return Judgment(
            run_id=p.run_id, bundle_uri=p.uri, bundle_hash=p.bundle_hash,
            task_id=p.attribution.task.id, judge_version=self.version.name,
            attempt=result.attempt, success=result.success, failure_class=result.failure_class,
            counts_against_policy=False if result.success
            else self.taxonomy.counts_against_policy(result.failure_class),
            attempt_confidence=round(result.attempt_confidence, 6),
            success_confidence=round(result.success_confidence, 6),
            answers=answers, frames=len(p.frames), timings=timings,
            cost=self.cost(timings, model_s, model_usd, served_s),
            fingerprint=self.fingerprint.digest,
            instruction_sha256=instruction_sha256(p.attribution.task.id, p.instruction))

    # --- in this process ---------------------------------------------------------------
    def ask(self, p: Prepared) -> tuple[list[ModelVote], list]:
        """All questions to the three local backends (the flow of :class:`QuestionFlow`)."""
        return self._ask(p)[:2]

    def _ask(self, p: Prepared) -> tuple[list[ModelVote], list, list[float], float]:
        """:meth:`ask`, what each model's server charged (``Backend.costed_score``) and the
        seconds spent waiting on served models."""
        flow = QuestionFlow(self, p)
        usd, served_s = [0.0] * len(self.backends), 0.0
        while not flow.done:
            for i, requests in flow.requests().items():
                answers, seconds, charged = self.backends[i].costed_score(requests)
                usd[i] += sum(charged)
                if self.version.models[i].endpoint is not None:
                    served_s += seconds
                flow.answer(i, answers)
        return flow.votes, flow.raw, usd, served_s

    def judge(self, uri: str, request: dict[str, Any] | None = None,
              run_id: str | None = None) -> Judgment:
        """Judge the bundle at ``uri`` (attribution from ``request`` when given)."""
        return self.judge_prepared(prepare(uri, self.version, request, run_id))

    def judge_prepared(self, p: Prepared) -> Judgment:
        t0 = time.perf_counter()
        votes, raw, usd, served_s = self._ask(p)
        return self.finish(p, votes, raw, time.perf_counter() - t0, model_usd=usd,
                           served_s=served_s)

    def cost(self, t: StageTimings, model_s: Sequence[float] | None = None,
             model_usd: Sequence[float] | None = None, served_s: float = 0.0) -> Cost:
        """Seconds of each resource and their price (``configs/pricing.yaml``), plus what
        served models' servers charged (``model_usd``: token usage × the endpoint's prices).
        A served model's seconds are waiting on its server, not compute here: they count as
        neither CPU nor GPU seconds (``served_s``: their part of a single call's stage).

        Single call (``model_s`` None): the three models hold their GPU shares for the
        whole model stage, so ``gpu_s = models_s × Σ gpu_share`` (models on CUDA); on CPU
        the model stage is CPU seconds. Batch (``model_s`` per model): each model is charged
        only the compute seconds its replicas spent on this bundle — on CUDA times its
        ``gpu_share``, on CPU as CPU seconds; time spent queueing costs nothing.
        """
        price = pricing()
        on_gpu = [m for m in self.version.models if m.device.startswith("cuda")]
        base = t.intake_s + t.frames_s + t.vote_s
        if model_s is not None:
            local = [(m, s) for m, s in zip(self.version.models, model_s, strict=True)
                     if m.endpoint is None]
            gpu_s = sum(s * m.gpu_share for m, s in local if m.device.startswith("cuda"))
            cpu_s = base + sum(s for m, s in local if not m.device.startswith("cuda"))
        else:
            stage = max(0.0, t.models_s - served_s)  # the in-process models' part of it
            gpu_s = stage * sum(m.gpu_share for m in on_gpu) if on_gpu else 0.0
            in_process = any(m.endpoint is None for m in self.version.models)
            cpu_s = base + (0.0 if on_gpu or not in_process else stage)
        usd = (gpu_s * price["gpu_hour_usd"] / 3600 + cpu_s * price["cpu_hour_usd"] / 3600
               + sum(model_usd or ()))
        return Cost(gpu_s=gpu_s, cpu_s=cpu_s, usd=round(usd, 8))


class QuestionFlow:
    """The questions about one bundle, defined once; the single call and the batch drive it.

    Every model gets the attempt and the success question (two requests over the same
    images); once all three answered, the models :func:`~judge.ensemble.vote.class_voters`
    picks get the family question, and each of them, after its own answer, the class
    question within the family it chose. A driver takes :meth:`requests` (per model index,
    each handed out once), sends them wherever the model runs, and feeds the answers back
    with :meth:`answer` until :attr:`done`; then :attr:`votes` and :attr:`raw` are what
    :meth:`Judge.finish` takes.
    """

    def __init__(self, judge: Judge, p: Prepared) -> None:
        self.judge, self.p = judge, p
        n = len(judge.version.models)
        self.raw: list = [None] * n  # per model: [P(attempt) answer, P(success) answer]
        self.votes: list[ModelVote] | None = None
        yes_no = judge.yes_no(p)
        self._todo: dict[int, list[ScoreRequest]] = {i: yes_no for i in range(n)}
        self._stage = ["yes_no"] * n  # then "family", "class", "done"
        self._out = 0  # requests handed out and not answered yet
        self._family: ScoreRequest | None = None
        self._class: dict[int, tuple[np.ndarray, ScoreRequest]] = {}

    @property
    def done(self) -> bool:
        return self.votes is not None and not self._todo and self._out == 0

    def requests(self) -> dict[int, list[ScoreRequest]]:
        """The requests to send now, per model index (each handed out once)."""
        todo, self._todo = self._todo, {}
        self._out += len(todo)
        return todo

    def answer(self, i: int, answers: Sequence[np.ndarray]) -> None:
        """Model ``i``'s answers to the requests it was last handed."""
        judge, stage = self.judge, self._stage[i]
        if stage == "done":
            raise RuntimeError(f"model {i}: an answer nobody asked for")
        self._out -= 1
        if stage == "yes_no":
            self.raw[i] = list(answers)
            self._stage[i] = "done"
            if all(r is not None for r in self.raw):
                self.votes = judge.initial_votes(self.raw)
                for j in judge.needs_class(self.votes):
                    self._family = self._family or judge.family(self.p)
                    self._todo[j], self._stage[j] = [self._family], "family"
        elif stage == "family":
            cls_req = judge.klass(self.p, self._family, answers[0])
            self._class[i] = (answers[0], cls_req)
            self._todo[i], self._stage[i] = [cls_req], "class"
        elif stage == "class":
            fam_p, cls_req = self._class[i]
            self.votes[i] = judge.with_class(self.votes[i], fam_p, cls_req, answers[0])
            self._stage[i] = "done"


_JUDGES: dict[str, Judge] = {}


def judge_bundle(path: str, judge_version: str = "tiny",
                 request: dict[str, Any] | None = None) -> Judgment:
    """Judge one bundle with a judge version; the version's models load once per process."""
    if judge_version not in _JUDGES:
        _JUDGES[judge_version] = Judge(judge_version)
    return _JUDGES[judge_version].judge(path, request)
