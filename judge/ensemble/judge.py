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
from functools import cache
from typing import Any

import numpy as np

from judge.bundle.decode import decode_frames, load_streams
from judge.bundle.inspect import plan_targets
from judge.bundle.intake import intake
from judge.config import configs_dir, load_yaml
from judge.ensemble.judgment import Cost, Judgment, ModelAnswer, StageTimings
from judge.ensemble.prompts import (
    class_request,
    family_request,
    instruction_for,
    question_images,
    yes_no_requests,
)
from judge.ensemble.taxonomy import Taxonomy, load_taxonomy
from judge.ensemble.version import JudgeVersion, load_judge_version
from judge.ensemble.vote import ModelVote, calibrate, vote
from models.base import Backend
from models.registry import create_backend


@cache
def pricing() -> dict[str, float]:
    data = load_yaml(configs_dir() / "pricing.yaml")
    return {k: float(data[k]) for k in ("gpu_hour_usd", "cpu_hour_usd")}


class Judge:
    """A judge version with its three backends loaded."""

    def __init__(self, version: JudgeVersion | str, taxonomy: Taxonomy | None = None,
                 backends: Sequence[Backend] | None = None) -> None:
        self.version = load_judge_version(version) if isinstance(version, str) else version
        self.taxonomy = taxonomy or load_taxonomy()
        if backends is None:
            backends = [create_backend(m.spec()) for m in self.version.models]
            for b in backends:
                b.load()
        self.backends = list(backends)

    def close(self) -> None:
        for b in self.backends:
            b.close()

    def ask(self, frames: np.ndarray, instruction: str) -> list[ModelVote]:
        """All questions to all three models; returns calibrated votes and raw answers."""
        v = self.version
        raw = [b.score(yes_no_requests(frames, instruction, v)) for b in self.backends]
        votes = []
        for entry, (pa, ps) in zip(v.models, raw, strict=True):
            votes.append(ModelVote(entry.name,
                                   calibrate(float(pa[0]), entry.calibration.attempt),
                                   calibrate(float(ps[0]), entry.calibration.success)))
        thr = v.vote.yes_threshold
        if vote(votes, thr).success:
            return votes, raw
        failing = [i for i, mv in enumerate(votes) if not mv.p_success > thr] or [0, 1, 2]
        for i in failing:
            fam_req = family_request(frames, instruction, v, self.taxonomy)
            fam_p = self.backends[i].score([fam_req])[0]
            fam = fam_req.labels[int(np.argmax(fam_p))]
            cls_req = class_request(frames, instruction, fam, v, self.taxonomy)
            cls_p = self.backends[i].score([cls_req])[0]
            j = int(np.argmax(cls_p))
            votes[i] = ModelVote(votes[i].model, votes[i].p_attempt, votes[i].p_success,
                                 cls_req.labels[j], float(fam_p.max() * cls_p[j]))
        return votes, raw

    def judge(self, uri: str, request: dict[str, Any] | None = None,
              run_id: str | None = None) -> Judgment:
        """Judge the bundle at ``uri`` (attribution from ``request`` when given)."""
        t0 = time.perf_counter()
        bundle = intake(uri, request)
        instruction = instruction_for(bundle.attribution.task.id)
        t1 = time.perf_counter()
        streams = load_streams(bundle)
        _, targets = plan_targets(streams)
        frames = question_images(decode_frames(streams.videos, targets).images, self.version)
        t2 = time.perf_counter()
        votes, raw = self.ask(frames, instruction)
        t3 = time.perf_counter()
        result = vote(votes, self.version.vote.yes_threshold)
        t4 = time.perf_counter()
        timings = StageTimings(intake_s=t1 - t0, frames_s=t2 - t1, models_s=t3 - t2,
                               vote_s=t4 - t3)
        answers = tuple(
            ModelAnswer(model=mv.model, p_attempt=mv.p_attempt, p_success=mv.p_success,
                        p_attempt_raw=float(r[0][0]), p_success_raw=float(r[1][0]),
                        failure_class=mv.failure_class, p_failure_class=mv.p_failure_class)
            for mv, r in zip(votes, raw, strict=True))
        return Judgment(
            run_id=run_id or posixpath.basename(bundle.root.rstrip("/")),
            bundle_uri=uri, bundle_hash=bundle.bundle_hash, task_id=bundle.attribution.task.id,
            judge_version=self.version.name, attempt=result.attempt, success=result.success,
            failure_class=result.failure_class,
            counts_against_policy=False if result.success
            else self.taxonomy.counts_against_policy(result.failure_class),
            attempt_confidence=round(result.attempt_confidence, 6),
            success_confidence=round(result.success_confidence, 6),
            answers=answers, frames=len(frames), timings=timings, cost=self.cost(timings))

    def cost(self, t: StageTimings) -> Cost:
        price = pricing()
        on_gpu = [m for m in self.version.models if m.device.startswith("cuda")]
        gpu_s = t.models_s * sum(m.gpu_share for m in on_gpu) if on_gpu else 0.0
        cpu_s = t.intake_s + t.frames_s + t.vote_s + (0.0 if on_gpu else t.models_s)
        usd = gpu_s * price["gpu_hour_usd"] / 3600 + cpu_s * price["cpu_hour_usd"] / 3600
        return Cost(gpu_s=gpu_s, cpu_s=cpu_s, usd=round(usd, 8))


_JUDGES: dict[str, Judge] = {}


def judge_bundle(path: str, judge_version: str = "tiny",
                 request: dict[str, Any] | None = None) -> Judgment:
    """Judge one bundle with a judge version; the version's models load once per process."""
    if judge_version not in _JUDGES:
        _JUDGES[judge_version] = Judge(judge_version)
    return _JUDGES[judge_version].judge(path, request)
