"""Contact detection against synthetic ground truth on a 50-bundle set (real bundles)."""

from __future__ import annotations

import pytest

from bench.contacts_eval import evaluate


@pytest.mark.slow
def test_every_true_contact_found_within_100ms(make_bundles):
    bundles = make_bundles(50, seed=7, width=96, height=64, fps=5)
    result = evaluate(bundles)
    # measured on seed 7: 68 true contacts (33 grasp, 21 release, 8 slip, 6 impact), all found,
    # largest timing error 0.04 s, 1 spurious event in 50 bundles
    assert result["truth_by_kind"] == {"grasp": 33, "impact": 6, "release": 21, "slip": 8}
    assert result["missed"] == 0, result["misses"]
    assert result["found"] == 68
    assert result["max_abs_error_s"] <= 0.1
    assert result["spurious_per_bundle"] <= 1.0
