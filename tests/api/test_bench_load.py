"""bench/api_load.py runs end to end and stops by itself (figures are printed, not asserted)."""

from __future__ import annotations

from bench.api_load import percentile, run


def test_nearest_rank_percentile():
    xs = [float(i) for i in range(1, 101)]
    assert (percentile(xs, 50), percentile(xs, 99), percentile(xs, 100)) == (50.0, 99.0, 100.0)
    assert percentile([3.0], 99) == 3.0


def test_a_tiny_bounded_run():
    results = run(seconds=0.3, clients=2, max_requests=6, bundles=2)
    phases = [r["phase"] for r in results]
    assert phases == ["judge_now (no HTTP, baseline)", "POST /v1/judgments",
                      "GET /v1/keys/me (baseline)", "GET /v1/coefficients", "check"]
    assert all(r["errors"] == 0 and 1 <= r["requests"] <= 6 for r in results[:-1])
    assert results[-1] == {"phase": "check", "charged_calls": 2, "distinct_bundles": 2}
