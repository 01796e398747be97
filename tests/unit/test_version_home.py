"""New judge versions are written under $RCJUDGE_HOME/judges, never into the package, and
found by name there like the shipped ones (issue 32, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.config import configs_dir
from judge.ensemble import version as version_module
from judge.ensemble.version import load_judge_version
from judge.learn.calibrate import CalibrationError, version_path, write_version


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RCJUDGE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_a_new_version_goes_to_the_users_home_and_is_found_by_name(home):
    shipped = set((configs_dir() / "judges").glob("*.yaml"))
    target = version_path("tiny-mine")
    assert target == home / "judges" / "tiny-mine.yaml"
    new = load_judge_version("tiny").model_copy(update={"name": "tiny-mine"})
    assert write_version(new, target) == target and target.is_file()
    assert set((configs_dir() / "judges").glob("*.yaml")) == shipped  # the package untouched
    assert load_judge_version("tiny-mine") == new
    names = version_module.version_names()
    assert "tiny-mine" in names and "tiny" in names


def test_config_still_chooses_and_no_name_is_taken_twice(home, tmp_path):
    assert version_path("x", str(tmp_path / "x.yaml")) == tmp_path / "x.yaml"
    with pytest.raises(CalibrationError, match=r"tiny: a shipped judge version .*tiny\.yaml; "
                                               r"judge versions are never overwritten"):
        version_path("tiny")
