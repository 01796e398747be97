"""The README's own-data walkthrough, run as written from an empty folder.

The ``sh`` blocks of the README's "Your own data in 5 commands" section are run, unchanged,
by ``bash -e`` in a fresh folder with a fresh ``RCJUDGE_HOME`` (so the tiny models are built
on first use, as a newcomer's are) and ``HOME`` (Ray writes its token there), with
``rcjudge`` and ``python`` on ``PATH`` meaning this checkout's code in this interpreter. Then
what the README says the block leaves is checked: the bundles, the ledger, ``picks.json``,
``labels.csv``, and the lines each step prints.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Your own data in 5 commands"


def walkthrough(readme: str) -> list[str]:
    """The ``sh`` blocks of the README's own-data section, in order."""
    start = readme.index(SECTION)
    end = readme.find("\n## ", start + len(SECTION))
    section = readme[start:end if end >= 0 else None]
    return re.findall(r"^```sh\n(.*?)^```$", section, flags=re.S | re.M)


def test_the_section_holds_the_five_steps_and_only_stable_commands():
    blocks = walkthrough((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) == 1
    steps = [line.split(".")[0] for line in blocks[0].splitlines() if line.startswith("# ")]
    assert steps == ["# 0", "# 1", "# 2", "# 3", "# 4", "# 5"]
    used = sorted({" ".join(m.split()[:2]) for m in
                   re.findall(r"rcjudge ([a-z-]+(?: [a-z-]+)?)", blocks[0])})
    assert used == ["batch bundles", "bundle create", "inspect bundles", "judge bundles",
                    "labels import", "rates --judge", "review next", "truth-labels my-recordings"]


def _shims(folder: Path) -> Path:
    folder.mkdir()
    for name, argv in (("rcjudge", f'"{sys.executable}" -m rcjudge.cli'),
                       ("python", f'"{sys.executable}"')):
        shim = folder / name
        shim.write_text(f'#!/bin/sh\nexec {argv} "$@"\n')
        shim.chmod(0o755)
    return folder


@pytest.mark.slow
@pytest.mark.ray
def test_the_own_data_walkthrough_runs_as_written_from_an_empty_folder(tmp_path):
    (block,) = walkthrough((ROOT / "README.md").read_text(encoding="utf-8"))
    work, home = tmp_path / "work", tmp_path / "rcjudge-home"
    work.mkdir()
    drop = {"RCJUDGE_MODELS", "RCJUDGE_DB", "RCJUDGE_DATA", "RCJUDGE_HOME", "PYTHONPATH"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(RCJUDGE_HOME=str(home), HOME=str(tmp_path / "user"), PYTHONPATH=str(ROOT),
               PATH=f"{_shims(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], cwd=work, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout

    runs = [f"run-{i:04d}" for i in range(16)]
    assert sorted(p.name for p in (work / "my-recordings").iterdir()) == runs
    assert sorted(p.name for p in (work / "bundles").iterdir()) == runs
    for run in runs:
        assert sorted(p.name for p in (work / "bundles" / run).iterdir()) == [
            "attribution.json", "manifest.json", "rollout.mcap"]
    assert "rcjudge: building the tiny models (once) under " in proc.stderr
    assert (home / "rcjudge.db").is_file()
    assert "bundle:    bundles/run-0000\n" in out  # inspect
    assert "judge tiny-streams: 16 judged, 0 skipped (already judged), 0 failed of 16\n" in out

    picks = json.loads((work / "picks.json").read_text())
    picked = [p["run_id"] for p in picks["picks"]]
    assert picks["strategy"] == "sample-uniform" and len(picked) >= 5
    with open(work / "labels.csv", newline="") as f:
        labels = list(csv.DictReader(f))
    assert sorted(row["run_id"] for row in labels) == sorted(picked)
    n = len(picked)
    assert (f"labels.csv: {n} label(s) for {n} run(s): {n} imported, 0 already present; "
            f"{n} picked by the queue of picks.json\n") in out
    assert "rates of tiny-streams (success) by policy: 16 judged run(s)" in out
    assert "cell synth-lab/scripted-expert@1.0.0\n" in out
    assert re.search(r"    rectified +\d\.\d{3} +\[\d\.\d{3}, \d\.\d{3}\]", out), out[-1500:]


@pytest.mark.parametrize("command", [["import", "rosbag"], ["import", "lerobot"],
                                     ["serve"]])
def test_the_other_ways_in_the_section_names_exist(command):
    """The ROS bag, LeRobot and review-page commands the section names without running."""
    proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", *command, "--help"],
                          capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: rcjudge {' '.join(command)} ")
