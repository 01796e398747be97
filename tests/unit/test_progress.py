"""The progress meter off a terminal: plain lines at an interval, silence for quick work."""

from __future__ import annotations

import rcjudge.progress as progress
from rcjudge.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_off_a_terminal_a_line_every_interval_and_a_closing_line(capsys, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    meter = Progress(4, label="train llava", log_every_s=60)
    clock.t += 30
    meter.step(note="loss 0.690")  # 30 s in: not yet
    clock.t += 30
    meter.step(note="loss 0.500")  # 60 s in: a line, 2 done at 2/min
    clock.t += 59
    meter.step()  # 59 s after that line: none; the note is kept
    clock.t += 1
    meter.step()  # 60 s after it
    meter.close()
    assert capsys.readouterr().err.splitlines() == [
        "train llava 2/4  2.0/min  ETA 60s  loss 0.500",
        "train llava 4/4  2.0/min  ETA 0s  loss 0.500",
        "train llava 4/4 done in 120s  loss 0.500",
    ]


def test_quick_work_off_a_terminal_writes_nothing(capsys, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    meter = Progress(3, label="prepare")
    for _ in range(3):
        clock.t += 19
        meter.step()
    meter.close()
    assert capsys.readouterr().err == ""


def test_disabled_writes_nothing_however_long(capsys, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    meter = Progress(2, enabled=False)
    clock.t += 1000
    meter.step()
    meter.close()
    assert capsys.readouterr().err == ""


def test_a_long_command_shows_progress_on_stderr_whatever_json_says(capsys, monkeypatch,
                                                                     tmp_path):
    # `--json` keeps stdout for the JSON; progress still goes to stderr, a plain line every
    # LOG_EVERY_S off a terminal (here 0 s: a line a bundle)
    import json

    from rcjudge.cli import main

    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0, raising=False)
    assert main(["synth", "--n", "2", "--out", str(tmp_path / "b"), "--width", "96",
                 "--height", "64", "--fps", "5", "--duration", "2", "--json"]) == 0
    out, err = capsys.readouterr()
    assert len(json.loads(out)) == 2
    lines = err.splitlines()
    assert len(lines) == 3 and [ln.split("  ")[0] for ln in lines[:2]] == ["synth 1/2",
                                                                           "synth 2/2"]
    assert lines[2].startswith("synth 2/2 done in ")


def test_the_interval_is_a_minute_by_default():
    assert progress.LOG_EVERY_S == 60.0 and Progress(1).log_every_s == 60.0
    assert Progress(1, log_every_s=5).log_every_s == 5
