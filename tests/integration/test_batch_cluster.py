"""A 200-bundle batch on a simulated two-node cluster, one model replica killed in the middle.

``ray.cluster_utils.Cluster``: two nodes of one CPU and one GPU resource each (the fake
backend never touches CUDA). Every model asks 0.3 of a GPU, so the plan's default is two
replicas of each (floor(2 GPUs / 0.9)), which Ray spreads over the two nodes. Model c's
first replica to reach its sixth call ends its process (``exit_after``); model b raises on
every mug task (``raise_when``). Expected, exactly: the mug bundles recorded as failed,
every other bundle judged once, the dead replica restarted (not lost).
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import two_node_ray_cluster

pytestmark = [pytest.mark.ray, pytest.mark.slow]

N = 200


@pytest.fixture(scope="module")
def cluster():
    yield from two_node_ray_cluster(cpus=1, gpus=1)


def test_a_replica_killed_mid_batch_costs_nothing_and_errors_cost_their_bundles(
        make_bundles, tmp_path, cluster):
    import ray

    from judge.batch.run import run_batch
    from judge.ensemble.version import JudgeVersion
    from judge.ledgers.store import Ledger

    bundles = make_bundles(N, seed=17, width=96, height=64, fps=5, duration_s=2.0)
    mugs = {p.name for p in bundles
            if json.loads((p / "truth.json").read_text())["task_id"].endswith("mug_022")}
    marker = tmp_path / "replica-died"
    yes = {"attempt": 0.9, "success": 0.8}
    options = {"a": {}, "b": {"raise_when": "mug"},
               "c": {"exit_after": {"calls": 5, "marker": str(marker)}}}
    version = JudgeVersion(name="fake-cluster", models=[
        {"name": n, "backend": "fake", "device": "cuda", "gpu_share": 0.3,
         "options": {"script": yes, "call_s": [0.005, 0.001], **options[n]}} for n in "abc"])
    assert ray.cluster_resources()["GPU"] == 2
    with Ledger.open(f"sqlite:///{tmp_path / 'cluster.db'}") as ledger:
        s = run_batch([str(p) for p in bundles], version, ledger, progress=False)
        assert marker.exists()  # one replica of c did die mid-batch
        assert s.plan["models"] == {n: {"replicas": 2, "batch_size": 32} for n in "abc"}
        assert 0 < len(mugs) < N
        assert (s.total, s.judged, len(s.failed)) == (N, N - len(mugs), len(mugs))
        assert {f["uri"].rsplit("/", 1)[-1] for f in s.failed} == mugs
        assert {f["error"] for f in s.failed} == {"RayTaskError(ModelError)"}
        assert (s.calls["c"]["restarts"], s.calls["c"]["replicas_lost"]) == (1, 0)  # back
        assert ledger.judged_run_ids("fake-cluster") == {p.name for p in bundles} - mugs
        assert ledger.counts()["judgments"] == N - len(mugs)
        assert sorted(f["bundle_uri"].rsplit("/", 1)[-1]
                      for f in ledger.failures("fake-cluster")) == sorted(mugs)
        # every judged bundle's two questions were answered by c exactly once; the call the
        # dead replica lost is re-sent, so c saw at least as many requests as that
        assert s.calls["c"]["requests"] >= 2 * (N - len(mugs))


def test_replicas_that_fit_the_sum_but_not_the_nodes_are_refused_in_one_line(
        make_bundles, tmp_path, cluster):
    """Three 0.6-GPU models: 1.8 GPUs of the cluster's 2, but no 1-GPU node holds two of them.

    The replicas are one placement group, so Ray says so (it stays pending) instead of the
    batch waiting forever for an actor it cannot place."""
    import pytest

    from judge.batch.run import BatchError, run_batch
    from judge.ensemble.version import JudgeVersion
    from judge.ledgers.store import Ledger

    version = JudgeVersion(name="fake-unplaceable", models=[
        {"name": n, "backend": "fake", "device": "cuda", "gpu_share": 0.6} for n in "abc"])
    bundles = make_bundles(2, seed=11, width=96, height=64, fps=5)
    with Ledger.open(f"sqlite:///{tmp_path / 'p.db'}") as ledger:
        with pytest.raises(BatchError) as err:
            run_batch([str(p) for p in bundles], version, ledger, progress=False,
                      place_timeout_s=3)
        one = "0.25 CPU 0.6 GPU"
        assert str(err.value) == (
            f"the replicas could not be placed within 3 s: a 1×({one}), b 1×({one}), "
            f"c 1×({one}) on nodes of (1 CPU 1 GPU), (1 CPU 1 GPU) (shares that do not fit "
            "one node, or resources in use)")
        assert ledger.counts() == {"runs": 0, "judgments": 0, "operator_labels": 0}
        assert ledger.failures() == []
