"""The taxonomy file decides who a failure counts against; empty or unknown counts."""

from __future__ import annotations

import pytest
import yaml

from judge.config import configs_dir
from judge.ensemble.taxonomy import Taxonomy, load_taxonomy


def test_shipped_taxonomy_has_54_classes_20_exempt():
    tax = load_taxonomy()
    assert len(tax.classes) == 54
    assert len(tax.exempt) == 20
    assert {c.split(".")[0] for c in tax.exempt} == {"env", "hardware", "operator"}
    for synthetic in ("grasp.slip", "grasp.miss", "motion.collision", "task.timeout",
                      "task.no_attempt"):
        assert tax.counts_against_policy(synthetic) is True


def test_empty_or_unknown_class_counts_against_policy():
    tax = load_taxonomy()
    assert tax.counts_against_policy(None) is True
    assert tax.counts_against_policy("") is True
    assert tax.counts_against_policy("grasp.teleported") is True
    assert tax.counts_against_policy("hardware.estop") is False


def test_promotion_is_a_file_edit(tmp_path):
    data = yaml.safe_load((configs_dir() / "taxonomy.yaml").read_text())
    data["classes"]["hardware.estop"]["counts_against_policy"] = True
    path = tmp_path / "taxonomy.yaml"
    path.write_text(yaml.safe_dump(data))
    tax = load_taxonomy(str(path))
    assert tax.counts_against_policy("hardware.estop") is True
    assert len(tax.exempt) == 19


def test_class_needs_a_listed_family():
    with pytest.raises(ValueError, match="'robot.sad' must be '<family>.<name>'"):
        Taxonomy(families={"grasp": ""}, classes={"robot.sad": {"counts_against_policy": True}})
