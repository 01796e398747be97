"""A typo in a judge version file is refused naming the file, the field and the bad value."""

from __future__ import annotations

import pytest
import yaml

from judge.ensemble.version import load_judge_version
from judge.errors import ConfigError
from rcjudge.cli import main

DTYPE = ("models.0.dtype: Input should be 'float32', 'float16' or 'bfloat16' "
         "(got 'flaot32')")
DEVICE = r"models.1.device: String should match pattern '^(cpu|cuda(:\d+)?)$' (got 'gpu')"


def typo_version(tmp_path, dtype="float32", device="cpu"):
    models = [{"name": f"m{i}", "backend": "fake"} for i in range(3)]
    models[0]["dtype"] = dtype
    models[1]["device"] = device
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump({"name": "typo", "models": models}))
    return path


@pytest.mark.parametrize(("typo", "expected"), [
    ({"dtype": "flaot32"}, DTYPE),
    ({"device": "gpu"}, DEVICE),
    ({"dtype": "flaot32", "device": "gpu"}, f"{DTYPE}; {DEVICE}"),
])
def test_dtype_and_device_typos_name_file_field_and_value(tmp_path, typo, expected):
    path = typo_version(tmp_path, **typo)
    with pytest.raises(ConfigError) as err:
        load_judge_version(str(path))
    assert str(err.value) == f"{path}: {expected}"
    assert isinstance(err.value, ValueError)


def test_valid_devices_and_dtypes_load(tmp_path):
    version = load_judge_version(str(typo_version(tmp_path, dtype="bfloat16", device="cuda:1")))
    assert (version.models[0].dtype, version.models[1].device) == ("bfloat16", "cuda:1")


def test_cli_prints_the_typo_in_one_line(tmp_path, capsys):
    path = typo_version(tmp_path, dtype="flaot32", device="gpu")
    assert main(["judge", str(tmp_path / "no-bundle-needed"), "--judge", str(path)]) == 2
    assert capsys.readouterr().err == f"rcjudge: error: {path}: {DTYPE}; {DEVICE}\n"


@pytest.mark.parametrize(("prompts", "expected"), [
    ({"success": "Done? {sensor} Answer yes or no."},
     "prompts.success: Value error, unknown slot {sensor}; this template may use "
     "{instruction}, {motion}, {sensors} (got 'Done? {sensor} Answer yes or no.')"),
    ({"attempt": "Tried {options}?"},
     "prompts.attempt: Value error, unknown slot {options}; this template may use "
     "{instruction}, {motion}, {sensors} (got 'Tried {options}?')"),
    ({"failure_family": "Which {family}? {options}"},
     "prompts.failure_family: Value error, unknown slot {family}; this template may use "
     "{instruction}, {motion}, {options}, {sensors} (got 'Which {family}? {options}')"),
])
def test_a_misspelled_prompt_slot_is_refused_when_the_version_loads(tmp_path, prompts, expected):
    path = tmp_path / "slots.yaml"
    path.write_text(yaml.safe_dump({"name": "slots", "prompts": prompts, "models": [
        {"name": f"m{i}", "backend": "fake"} for i in range(3)]}))
    with pytest.raises(ConfigError) as err:
        load_judge_version(str(path))
    assert str(err.value) == f"{path}: {expected}"


def test_every_slot_a_template_may_use_loads(tmp_path):
    path = tmp_path / "slots.yaml"
    path.write_text(yaml.safe_dump({"name": "slots", "models": [
        {"name": f"m{i}", "backend": "fake"} for i in range(3)], "prompts": {
        "attempt": "{instruction} {sensors} {motion}",
        "success": "{instruction} {sensors} {motion}",
        "failure_family": "{instruction} {sensors} {motion} {options}",
        "failure_class": "{instruction} {sensors} {motion} {family} {options}"}}))
    assert load_judge_version(str(path)).prompts.failure_class == (
        "{instruction} {sensors} {motion} {family} {options}")
