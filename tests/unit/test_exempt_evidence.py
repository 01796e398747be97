"""A failure is filed under an exempt class (one that does not count against the policy) only
when the vote for that class clears the taxonomy's confidence for it (issue 32, item 1);
otherwise it is unclassified and counts against the policy."""

from __future__ import annotations

import pytest
import yaml

from judge.config import configs_dir
from judge.ensemble.taxonomy import Taxonomy, load_taxonomy
from judge.ensemble.vote import ModelVote, vote


def mv(cls=None, pc=None):
    return ModelVote("m", 1.0, 0.0, cls, pc)  # attempted, not a success


def test_the_shipped_taxonomy_asks_one_half_of_every_exempt_family():
    tax = load_taxonomy()
    assert {c: tax.exempt_threshold(c) for c in ("env.surface_changed", "hardware.estop",
                                                 "operator.intervention")} == {
        "env.surface_changed": 0.5, "hardware.estop": 0.5, "operator.intervention": 0.5}
    assert tax.exempt_threshold("grasp.slip") is None  # counts anyway: no evidence asked


def test_an_unsure_exempt_class_is_unclassified_and_counts_against_the_policy():
    tax = load_taxonomy()
    # the untrained judge of the issue: all three name env.surface_changed at P ~ 0.07
    unsure = [mv("env.surface_changed", 0.07), mv("env.surface_changed", 0.06),
              mv("env.surface_changed", 0.08)]
    r = vote(unsure, taxonomy=tax)
    assert r.failure_class is None and r.failure_class_confidence == pytest.approx(0.07)
    assert tax.counts_against_policy(r.failure_class) is True
    assert vote(unsure).failure_class == "env.surface_changed"  # no taxonomy: as before
    # sure enough: the mean over the class voters, a dissenter counting 0: (.9 + .8 + 0) / 3
    sure = [mv("hardware.estop", 0.9), mv("hardware.estop", 0.8), mv("grasp.slip", 0.9)]
    r = vote(sure, taxonomy=tax)
    assert r.failure_class == "hardware.estop"
    assert r.failure_class_confidence == pytest.approx(1.7 / 3)
    # a class that counts against the policy needs no evidence
    r = vote([mv("grasp.slip", 0.05), mv("grasp.slip", 0.05), mv("grasp.miss", 0.05)],
             taxonomy=tax)
    assert r.failure_class == "grasp.slip"


def test_per_class_beats_per_family_beats_the_default_and_bad_keys_are_refused(tmp_path):
    data = yaml.safe_load((configs_dir() / "taxonomy.yaml").read_text())
    data["exempt_evidence"] = {"default": 0.6, "families": {"env": 0.7},
                               "classes": {"env.object_missing": 0.9}}
    tax = Taxonomy.model_validate(data)
    assert (tax.exempt_threshold("env.object_missing"), tax.exempt_threshold("env.occlusion_"
            "external"), tax.exempt_threshold("hardware.estop")) == (0.9, 0.7, 0.6)
    data["exempt_evidence"] = {"classes": {"grasp.slip": 0.9}}
    with pytest.raises(ValueError, match=r"exempt_evidence\.classes: grasp\.slip counts "
                                         r"against the policy; only exempt classes"):
        Taxonomy.model_validate(data)
    data["exempt_evidence"] = {"families": {"grasp": 0.9}}
    with pytest.raises(ValueError, match=r"exempt_evidence\.families: grasp has no exempt "
                                         r"class"):
        Taxonomy.model_validate(data)


def test_the_bench_reads_the_cards_success_rate_without_exempt_failures():
    from bench.exempt_evidence import summarize

    rows = ([{"success": True, "before": None, "after": None, "truth_class": None}] * 5
            + [{"success": False, "before": "env.surface_changed", "after": None,
                "truth_class": "grasp.slip"}] * 3)
    tax = load_taxonomy()
    assert summarize(rows, "before", tax) == {
        "failures": 3, "exempt": 3, "exempt_right": 0,
        "classes": {"env.surface_changed": 3}, "card_success_rate": 1.0}  # 5 / (8 - 3)
    assert summarize(rows, "after", tax)["card_success_rate"] == round(5 / 8, 4)
