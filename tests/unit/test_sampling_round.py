"""Sampling rounds' inclusion probabilities and draws (judge.learn.draw), by hand."""

from __future__ import annotations

import hashlib

import pytest

from judge.ensemble.vote import confidence, p_yes
from judge.learn.draw import draw, draw_number, inclusion_probabilities
from judge.learn.select import SelectError
from judge.ledgers.rounds import FrameRow, frame_digest


def test_pi_follows_the_judges_uncertainty_with_a_floor_and_sums_to_the_budget():
    ps = [0.5, 0.5, 0.9, 0.1, 1.0]
    # w = sqrt(p(1-p)) = .5, .5, .3, .3, 0; mean .32; u = .9 w / .32 + .1
    #   = 1.50625, 1.50625, .94375, .94375, .1 (sum 5); n = 2: c = 2 / 5
    assert inclusion_probabilities(ps, 2, 0.1) == pytest.approx(
        [0.6025, 0.6025, 0.3775, 0.3775, 0.04], abs=1e-12)
    # n = 4: c = .8 puts the first two at 1.205: capped at 1; the other three carry 2:
    # c = 2 / (.94375 + .94375 + .1) = 1.006289308
    pis = inclusion_probabilities(ps, 4, 0.1)
    assert pis == pytest.approx([1.0, 1.0, 0.94375 * 2 / 1.9875, 0.94375 * 2 / 1.9875,
                                 0.1 * 2 / 1.9875], abs=1e-12)
    assert sum(pis) == pytest.approx(4.0, abs=1e-12)
    assert min(pis) >= 0.1 * 4 / 5  # the floor: no run below floor * n / N
    assert inclusion_probabilities(ps, 2, 1.0) == pytest.approx([0.4] * 5)  # uniform: n / N
    assert inclusion_probabilities(ps, 5, 0.1) == [1.0] * 5  # n >= N: everything
    assert inclusion_probabilities([1.0, 0.0, 1.0], 1, 0.1) == pytest.approx([1 / 3] * 3)
    assert inclusion_probabilities([], 3, 0.1) == []
    with pytest.raises(SelectError, match=r"--floor 0.0: expected a share in \(0, 1\]"):
        inclusion_probabilities(ps, 2, 0.0)
    with pytest.raises(SelectError, match=r"--n 0: expected at least 1"):
        inclusion_probabilities(ps, 0, 0.1)


def test_p_yes_reads_the_ensembles_p_back_from_the_stored_answer_and_confidence():
    for p in (0.0, 0.2, 0.5, 0.73, 1.0):
        assert p_yes(p > 0.5, confidence(p > 0.5, p)) == pytest.approx(p, abs=1e-15)
    # the hard vote says yes while the ensemble's P is 0.3: the confidence reads 1/2
    assert p_yes(True, confidence(True, 0.3)) == 0.5


def test_a_draw_is_the_seeded_hash_below_pi_and_the_frame_salts_it():
    ids = ["r1", "r2", "r3"]
    digest = hashlib.sha256(b"r1\nr2\nr3\n").hexdigest()
    assert frame_digest(["r3", "r1", "r2"]) == digest
    u = int(hashlib.sha256(f"sample:7:{digest}:r2".encode()).hexdigest()[:13], 16) / 16**13
    assert draw_number(7, digest, "r2") == u
    frame = draw(ids, [0.5, 0.4, 0.9], [0.5, 0.25, 1.0], 7)
    assert frame == [FrameRow(r, pi, p, draw_number(7, digest, r) < pi)
                     for r, p, pi in zip(ids, [0.5, 0.4, 0.9], [0.5, 0.25, 1.0], strict=True)]
    assert frame[2].drawn  # pi 1: always
    assert draw(ids, [0.5] * 3, [0.5] * 3, 7) == draw(ids, [0.5] * 3, [0.5] * 3, 7)
    # over many runs about pi of them are drawn (Poisson sampling): 4,000 at pi 0.3
    many = [f"run-{i}" for i in range(4000)]
    share = sum(f.drawn for f in draw(many, [0.5] * 4000, [0.3] * 4000, 0)) / 4000
    assert abs(share - 0.3) < 4 * (0.3 * 0.7 / 4000) ** 0.5
