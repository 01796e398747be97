"""Ray actors: CPU actors prepare bundles, model replicas hold their engines.

The actors wrap the same functions the single call uses (``prepare``, a backend's
``score``); they do not change them. Resources come from the judge version:
a model on CUDA asks for its ``gpu_share`` of a GPU, so Ray places each replica on a
GPU bundle of the batch's placement group (``judge.batch.plan`` says how many replicas and
which share a GPU; ``judge.batch.place`` starts them).

A model replica's start-up output (its stderr, and that of the processes it starts, as
vLLM's engine core) goes to a log file, ``engine_log_dir()/<model>-<pid>.log``; a start
that fails keeps its full traceback there, and the one-line error names the root cause
(the deepest ``__cause__``/``__context__``), the last line of that stderr and the file.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import ray

from judge.batch.bags import BagImport, import_cached
from judge.batch.plan import memory_share
from judge.ensemble.judge import Prepared, prepare
from judge.ensemble.prompts import reference_request
from judge.ensemble.version import JudgeVersion, ModelEntry
from judge.errors import JudgeError
from models.base import BackendSpec, ScoreRequest, check_answer_mass
from models.registry import create_backend

MAX_RESTARTS = 1  # a model replica whose process dies is restarted this many times
#: What ``ModelActor.ready`` says of a replica Ray restarted whose model is not loaded yet:
#: the driver calls ``load`` once the engines beside it on its GPU are idle.
WAITING = "restarted; its model loads when the driver calls load()"
SERVED_CALLS = 2  # calls a served model's replica runs at once (its thread pool stays full)


@dataclass(frozen=True)
class Failure:
    """A bundle that could not be prepared: its URI and the error, for the report."""

    uri: str
    error: str
    message: str


@ray.remote
class PrepareActor:
    """Intake, decode and frame selection for one bundle at a time; ROS bags imported."""

    def __init__(self, version: JudgeVersion) -> None:
        self.version = version

    @ray.method(num_returns=2)
    def prepare(self, uri: str) -> tuple[Prepared | Failure, np.ndarray | None]:
        """The prepared bundle without its pixels, and its frames as a second object.

        The frames stay in this node's object store until a model replica reads them; the
        driver gets only what it needs to ask and vote (``frames`` of the first object is
        an empty array of the same length: ``(K, 0, 0, 3)``).
        """
        try:
            p = prepare(uri, self.version)
        except JudgeError as exc:
            return Failure(uri, type(exc).__name__, str(exc)), None
        except Exception as exc:  # a bug, not bad input: keep the traceback in the report
            return Failure(uri, type(exc).__name__, f"{exc}\n{traceback.format_exc()}"), None
        return replace(p, frames=np.zeros((len(p.frames), 0, 0, 3), np.uint8)), p.frames

    def import_bag(self, bag: str, how: BagImport) -> tuple[list[str], bool] | Failure:
        """A ROS bag's bundles (imported now or found in the cache) and whether it was
        imported now (:func:`judge.batch.bags.import_cached`), or its failure."""
        try:
            return import_cached(bag, how)
        except JudgeError as exc:
            return Failure(bag, type(exc).__name__, str(exc))
        except Exception as exc:  # a bug, not bad input: keep the traceback in the report
            return Failure(bag, type(exc).__name__, f"{exc}\n{traceback.format_exc()}")


@ray.remote
class ModelActor:
    """One replica of a model; answers batches of closed questions, from any bundles.

    A model that cannot load, or whose answer tokens hold too little mass on ``version``'s
    reference prompt (``prompts.reference_request``, ``check_answer_mass``; built here, so
    no frames travel with the constructor's arguments), keeps its error for :meth:`ready`
    (the driver refuses the batch in one line before any work) instead of dying in its
    constructor.

    The constructor loads the model, except when Ray runs it again after the process died
    (``max_restarts``): then it waits for :meth:`load`, which the driver calls once the other
    engines on the replica's GPU have no call running — vLLM's start-up profiling reads the
    GPU's free memory and assumes everything else on it holds still.
    """

    def __init__(self, spec: BackendSpec, version: JudgeVersion | None = None) -> None:
        self.spec, self.version = spec, version
        self.backend = None
        self.error: str | None = None
        self.loaded = False
        if not ray.get_runtime_context().was_current_actor_reconstructed:
            self.load()

    def load(self) -> str | None:
        """Start the engine (and probe its answer mass); None when it loaded, else its error."""
        log = engine_log_dir() / f"{self.spec.name}-{os.getpid()}.log"
        try:
            with _stderr_to(log):
                self.backend = create_backend(self.spec)
                self.backend.load()
                if self.version is not None:
                    check_answer_mass(self.backend,
                                      reference_request(self.version, self.spec.max_pixels))
        except Exception as exc:  # any engine start failure: the driver refuses the batch
            tail = _last_line(log)
            with open(log, "a") as f:
                f.write(traceback.format_exc())
            self.error = start_error(exc, tail, log)
        self.loaded = True
        return self.error

    def ready(self) -> str | None:
        """Once the constructor has run: None when the model loaded, else its error;
        :data:`WAITING` when Ray restarted the replica and :meth:`load` has not run."""
        return self.error if self.loaded else WAITING

    def score(self, requests: list[ScoreRequest], where: list[int],
              *frames) -> tuple[list, float, list[float]]:
        """The answers, in request order, the seconds this replica computed them, and what a
        served model's server charged for each request (``Backend.costed_score``).

        ``requests`` come without their frames: those travel once per bundle, as
        object-store references Ray resolves before the call (``frames[where[i]]`` are
        request i's), not pickled again into every request of every call.
        """
        full = [replace(r, frames=frames[k]) for r, k in zip(requests, where, strict=True)]
        return self.backend.costed_score(full)

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()


def engine_log_dir() -> Path:
    """Where model replicas write their start-up output (on the node that runs them)."""
    path = Path(tempfile.gettempdir()) / "rcjudge" / "engine-logs"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """File descriptor 2 — this process's and its children's stderr — into ``path``."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as f:
        os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _last_line(path: Path) -> str:
    lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def root_cause(exc: BaseException) -> BaseException:
    """The deepest exception ``exc`` was raised from (``__cause__``, else an unsuppressed
    ``__context__``)."""
    seen = {id(exc)}
    while True:
        nxt = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        if nxt is None or id(nxt) in seen:
            return exc
        seen.add(id(nxt))
        exc = nxt


def start_error(exc: BaseException, stderr_tail: str, log: Path) -> str:
    """One line: the error, its root cause, the last stderr line and the full log's path."""
    def line(e: BaseException) -> str:
        text = str(e).strip()
        return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__

    out = line(exc)
    if (root := root_cause(exc)) is not exc:
        out += f"; root cause: {line(root)}"
    if stderr_tail:
        out += f"; last stderr: {stderr_tail}"
    return f"{out} (full log: {log})"


def model_actor(entry: ModelEntry, cpu_share: float, placement: tuple | None = None,
                version: JudgeVersion | None = None, pinned: dict | None = None):
    """A ModelActor with the entry's resources (a GPU share on CUDA, else a CPU share; a
    served model holds no GPU), probing ``version``'s reference prompt at load (None: no
    probe); ``pinned``: what the version's fingerprint recorded of a served model.

    The model path is resolved here, in the driver (``{models_dir}`` from the driver's
    ``RCJUDGE_MODELS``): worker processes do not see environment changes made after
    ``ray.init``.
    """
    spec = replace(entry.spec(), pinned=pinned)
    # a replica whose process dies is restarted once; the driver re-sends the calls it lost
    opts: dict = {"max_restarts": MAX_RESTARTS, "num_cpus": cpu_share}
    if entry.device.startswith("cuda"):  # its share of its GPU bundle (plan.memory_share)
        opts["num_gpus"] = memory_share(entry)
    if entry.endpoint is not None:  # threads: the next call's requests fill the pool
        opts["max_concurrency"] = SERVED_CALLS
    if placement is not None:  # its bundle of the batch's placement group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        opts["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
            placement_group=placement[0], placement_group_bundle_index=placement[1])
    return ModelActor.options(**opts).remote(spec, version)


def model_resources(entry: ModelEntry, cpu_share: float) -> dict[str, float]:
    """What one replica of ``entry`` reserves: its CPU share, and its GPU share on CUDA."""
    out = {"CPU": cpu_share}
    if entry.device.startswith("cuda") and entry.gpu_share > 0:
        out["GPU"] = entry.gpu_share
    return out
