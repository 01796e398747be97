"""A scripted backend: fixed probabilities, no torch. For fast tests of everything downstream.

``options["script"]`` maps a question kind to the answer:

* ``attempt`` / ``success``: P(yes) as a float;
* ``failure_class``: a taxonomy class name; the backend puts ``options["class_p"]``
  (default 0.8) on it — on its family for ``failure_family`` and on the class for
  ``failure_class`` — and spreads the rest evenly.

``options["answer_mass"]`` (default 1.0) is what :meth:`FakeBackend.answer_mass` reports:
the raw probability of the answer tokens, for tests of the load-time probe.

``options["when"]`` is a list of ``{"prompt_contains": TEXT, "script": {...}}`` rules: the
first rule whose text appears in the prompt replaces the script (answers per task).
``options["delay_s"]`` sleeps that long per ``score`` call (to test backpressure and
interruption). ``options["call_s"] = [a, b]`` is a latency model: a call on n requests
sleeps ``a + b·n`` seconds and reports exactly that as its compute time
(:meth:`timed_score`), so cost accounting can be checked to the digit and a simulated
cluster behaves like engines whose fixed per-call cost batching amortises
(``bench.scaleout``). Every request received is kept in ``requests`` so tests can inspect
prompts.

Fault injection: ``options["raise_when"]`` (a text) makes a call whose prompt contains it
raise :class:`ModelError`; ``options["exit_once"]`` (a file path) makes the first call
after load end the process (``os._exit``) unless that file exists, creating it first —
a replica that dies once and, restarted, works. ``options["exit_after"] = {"calls": N,
"marker": PATH}`` does the same on the (N+1)-th call instead of the first: a replica killed
in the middle of a batch; without ``marker`` the process ends on every call past the N-th,
restarted or not (a replica lost for good). ``options["exit_on_load"]: true`` ends the
process in :meth:`load`, every time (an engine whose start kills its process).

Start-up: ``options["load_s"]`` sleeps that long in :meth:`load` (an engine's start-up),
and ``options["load_log"]`` (a file path) gets one JSON line per load: model name,
process id, ``CUDA_VISIBLE_DEVICES`` (what Ray gave the process), the Ray node when run
in a Ray worker, and the wall-clock start and end — so a test can see which engines
started together on which GPU; ``options["call_log"]`` (a file path) gets one such line per
``score`` call (model, process id, node, ``CUDA_VISIBLE_DEVICES``, start, end), so a test can
see which calls ran while an engine started. ``options["load_fail"] = {"error": TEXT, "cause": TEXT,
"stderr": TEXT}`` makes load print ``stderr`` from a child process (as vLLM's engine core
process prints its root cause) and raise ``RuntimeError(error)`` from ``ValueError(cause)``.
``options["reserves_memory"]: true`` makes the batch plan treat the model as a vLLM engine
(its ``gpu_share`` a memory reservation, at most 0.92 of a GPU summed;
``judge.batch.plan.reserves_memory``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence

import numpy as np

from models.base import Backend, ModelError, ScoreRequest


class FakeBackend(Backend):
    """Answers from a script; records what it was asked."""

    def load(self) -> None:
        start = time.time()
        if self.spec.options.get("exit_on_load"):
            os._exit(1)  # the process dies while its engine starts
        time.sleep(float(self.spec.options.get("load_s", 0.0)))
        self._fail_load_if_scripted()
        self._log("load_log", start)
        self.requests: list[ScoreRequest] = []
        self.calls = 0
        self.loaded = True

    def _log(self, option: str, start: float) -> None:
        """One JSON line to the file ``options[option]`` names, if any: who ran, where, when."""
        if not (log := self.spec.options.get(option)):
            return
        ray = sys.modules.get("ray")  # imported in a Ray worker; never imported here
        node = (ray.get_runtime_context().get_node_id()
                if ray is not None and ray.is_initialized() else None)
        line = {"model": self.spec.name, "pid": os.getpid(), "node": node,
                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "start": start, "end": time.time()}
        with open(log, "a") as f:
            f.write(json.dumps(line) + "\n")

    def _fail_load_if_scripted(self) -> None:
        fail = self.spec.options.get("load_fail")
        if not fail:
            return
        if fail.get("stderr"):  # a child process's output, as vLLM's engine core prints it
            subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write(sys.argv[1])",
                            fail["stderr"] + "\n"], check=True)
        try:
            raise ValueError(fail.get("cause", ""))
        except ValueError as exc:
            raise RuntimeError(fail.get("error", "")) from exc

    def _answer(self, req: ScoreRequest) -> np.ndarray:
        script = self.spec.options.get("script", {})
        for rule in self.spec.options.get("when", []):
            if rule["prompt_contains"] in req.prompt:
                script = rule["script"]
                break
        if req.kind in ("attempt", "success"):
            if req.choices != ("yes", "no"):
                raise ModelError(f"fake: {req.kind} expects choices ('yes', 'no')")
            p = float(script.get(req.kind, 0.5))
            return np.array([p, 1.0 - p])
        target = script.get("failure_class")
        if req.kind == "failure_family" and target:
            target = target.split(".")[0]
        n = len(req.choices)
        labels = req.labels or req.choices
        if not target or target not in labels:
            return np.full(n, 1.0 / n)
        p = float(self.spec.options.get("class_p", 0.8))
        out = np.full(n, (1.0 - p) / (n - 1) if n > 1 else 0.0)
        out[labels.index(target)] = p if n > 1 else 1.0
        return out

    def answer_mass(self, request: ScoreRequest) -> float:
        """``options["answer_mass"]``, default 1.0 (a scripted model says only answers)."""
        return float(self.spec.options.get("answer_mass", 1.0))

    def call_seconds(self, n: int) -> float | None:
        """``a + b·n`` under ``options["call_s"]``, else None (no latency model)."""
        model = self.spec.options.get("call_s")
        return None if model is None else float(model[0]) + float(model[1]) * n

    def timed_score(self, requests: Sequence[ScoreRequest]) -> tuple[list[np.ndarray], float]:
        modelled = self.call_seconds(len(requests))
        if modelled is None:
            return super().timed_score(requests)
        return self.score(requests), modelled

    def _die_if_scripted(self) -> None:
        marker = self.spec.options.get("exit_once")
        after = self.spec.options.get("exit_after")
        if after and self.calls > int(after["calls"]):
            marker = after.get("marker")
            if marker is None:  # no marker: every call past the count, after every restart
                os._exit(1)
        elif after:
            marker = None
        if not marker:
            return
        try:  # created atomically: of several replicas of this model, exactly one dies
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os._exit(1)  # the process dies mid-call, as a crashed GPU worker would

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        self.calls += 1
        start = time.time()
        time.sleep(float(self.spec.options.get("delay_s", 0.0))
                   + (self.call_seconds(len(requests)) or 0.0))
        self._log("call_log", start)
        self._die_if_scripted()
        text = self.spec.options.get("raise_when")
        if text and any(text in r.prompt for r in requests):
            raise ModelError(f"fake: scripted failure on a prompt containing {text!r}")
        self.requests.extend(requests)
        return [self._answer(r) for r in requests]
