"""A served member in a judge version: what its entry must say, and how a batch plans it."""

from __future__ import annotations

import pytest
import yaml

from judge.batch.plan import PlanError, parse_per_model, plan_batch
from judge.ensemble.version import JudgeVersion, load_judge_version
from judge.errors import ConfigError

ENDPOINT = {"base_url": "http://127.0.0.1:8001/v1/", "model": "qwen", "max_concurrency": 6}


def version(**extra) -> JudgeVersion:
    models = [{"name": "served", "backend": "openai", "endpoint": ENDPOINT, **extra},
              {"name": "local", "backend": "fake"},
              {"name": "gpu", "backend": "fake", "device": "cuda", "gpu_share": 0.5}]
    return JudgeVersion(name="mixed", models=models)


def test_endpoint_is_kept_and_normalised():
    v = version()
    ep = v.models[0].endpoint
    assert (ep.base_url, ep.host, ep.origin) == ("http://127.0.0.1:8001/v1", "127.0.0.1:8001",
                                                 "http://127.0.0.1:8001")
    assert v.models[0].spec().endpoint == ep and v.models[1].spec().endpoint is None


@pytest.mark.parametrize(("entry", "message"), [
    ({"name": "a", "backend": "openai"},
     r"models\.0: Value error, backend openai needs an endpoint \(base_url, model\)"),
    ({"name": "a", "backend": "vllm", "endpoint": ENDPOINT},
     r"models\.0: Value error, endpoint is for backend openai, not 'vllm'"),
    ({"name": "a", "backend": "openai", "endpoint": ENDPOINT, "device": "cuda",
      "gpu_share": 0.3}, r"models\.0: Value error, a served model \(backend openai\) has no "
     r"device, gpu_share: its server holds the weights"),
    ({"name": "a", "backend": "openai", "endpoint": {**ENDPOINT, "base_url": "http://k:s@h/v1"}},
     r"models\.0\.endpoint\.base_url: Value error, no credentials in the URL"),
    ({"name": "a", "backend": "openai", "endpoint": {**ENDPOINT, "api_key": "sk-1"}},
     r"models\.0\.endpoint\.api_key: Extra inputs are not permitted"),
    ({"name": "a", "backend": "openai", "endpoint": {**ENDPOINT, "max_concurrency": 0}},
     r"models\.0\.endpoint\.max_concurrency: Input should be greater than or equal to 1"),
])
def test_a_bad_served_entry_is_one_line(tmp_path, entry, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"name": "bad", "models": [
        entry, {"name": "b", "backend": "fake"}, {"name": "c", "backend": "fake"}]}))
    with pytest.raises(ConfigError, match=rf"^{path}: {message}") as err:
        load_judge_version(str(path))
    assert "\n" not in str(err.value)


def test_a_batch_runs_one_replica_of_a_served_model_without_a_gpu():
    plan = plan_batch(version(), {"CPU": 8.0, "GPU": 1.0})
    # served: 1 (it counts in no CPU or GPU share); the CPU model floor(8 / 2 / 1) = 4; the
    # GPU model floor(1 GPU / 0.5) = 2
    assert plan.replicas == (1, 4, 2)
    assert plan.batch_size == (6, 8, 32)  # served: endpoint.max_concurrency
    assert [g.models for g in plan.gpus] == [("gpu", "gpu")]  # the served model holds no GPU
    with pytest.raises(PlanError, match=r"^--replicas served=2: a served model runs one "
                       r"replica, which keeps endpoint\.max_concurrency \(6\) requests in "
                       r"flight: raise that instead$"):
        plan_batch(version(), {"CPU": 8.0, "GPU": 1.0}, parse_per_model(["served=2"], "-"))
    with pytest.raises(ConfigError):  # and a version cannot ask for more either
        load_judge_version_from({"replicas": 2})


def load_judge_version_from(extra: dict) -> JudgeVersion:
    from judge.config import load_model

    return load_model(JudgeVersion, {"name": "x", "models": [
        {"name": "a", "backend": "openai", "endpoint": ENDPOINT, **extra},
        {"name": "b", "backend": "fake"}, {"name": "c", "backend": "fake"}]}, "x.yaml")
