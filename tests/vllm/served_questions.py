"""Real bundles' questions for the vLLM tier, written by the *main* environment.

``.venv-vllm`` has no PyAV, MCAP or Ray (docs/vllm-cpu.md), so it cannot decode a bundle. The
served-parity test (``tests/vllm/test_served_vllm.py``) runs this module with the main
environment's Python: it writes ``N`` synthetic bundles (``bench.synth``: MCAP + H.264), prepares
each with a judge version (intake, decode, contacts, frame choice: ``judge.ensemble.judge``)
and stores the judge's four kinds of question about each — attempt, success, failure family,
failure class (within the family the bundle's id picks) — as ``questions.npz`` (frames) and
``questions.json`` (prompt, choices, kind, labels, bundle) in ``OUT``, the bundles under
``OUT/bundles``.

    python -m tests.vllm.served_questions OUT N VERSION_YAML
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def write_questions(out: Path, n: int, version_file: str) -> None:
    from bench.synth import SynthConfig, write_synthetic_set
    from judge.ensemble.judge import prepare
    from judge.ensemble.prompts import class_request, family_request, yes_no_requests
    from judge.ensemble.taxonomy import load_taxonomy
    from judge.ensemble.version import load_judge_version

    version, taxonomy = load_judge_version(version_file), load_taxonomy()
    bundles = write_synthetic_set(out / "bundles", n, SynthConfig(seed=31, width=96, height=64,
                                                                  fps=10, duration_s=3.0))
    families = list(taxonomy.families)
    frames, meta = {}, []
    for k, b in enumerate(sorted(bundles)):
        p = prepare(str(b), version)
        family = families[k % len(families)]
        asked = [*yes_no_requests(p.frames, p.instruction, version, p.sensors, p.motion),
                 family_request(p.frames, p.instruction, version, taxonomy, p.sensors, p.motion),
                 class_request(p.frames, p.instruction, family, version, taxonomy, p.sensors,
                               p.motion)]
        frames[f"b{k}"] = p.frames
        meta += [{"bundle": k, "kind": q.kind, "prompt": q.prompt, "choices": list(q.choices),
                  "labels": list(q.labels)} for q in asked]
    np.savez(out / "questions.npz", **frames)
    (out / "questions.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    write_questions(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
