"""Every validation rule of an outcome label write: one accepted and one rejected example each.

The rejected examples carry the exact one-line error (field, then rule).
"""

from __future__ import annotations

import re

import pytest

from judge.outcomes.labels import OutcomeLabelError, validate_label


def sub(label="s", start=0.0, end=1.0, outcome=None):
    return {"label": label, "start_ts": start, "end_ts": end, "outcome": outcome}


def act(start=0.0, end=1.0, action="a", **kw):
    return {"start_ts": start, "end_ts": end, "action": action, **kw}


# (rule, accepted extra fields, rejected extra fields, exact error of the rejected one)
RULES = [
    ("outcome required", {}, {"outcome": None},
     "outcome: must be one of expert_success, slow_success, partial_success, "
     "mistake_and_recovery, intervention, unsafe, aborted, failure, novel_strategy, "
     "inefficient_strategy (got None)"),
    ("outcome enum", {"outcome": "slow_success"}, {"outcome": "success"},
     "outcome: must be one of expert_success, slow_success, partial_success, "
     "mistake_and_recovery, intervention, unsafe, aborted, failure, novel_strategy, "
     "inefficient_strategy (got 'success')"),
    ("autonomy enum", {"autonomy_level": "shared_autonomy"}, {"autonomy_level": "robot"},
     "autonomy_level: must be one of human_demonstration, teleoperation, autonomous, "
     "shared_autonomy, intervention (got 'robot')"),
    ("membership enum", {"evaluation_membership": "held_out_eval"},
     {"evaluation_membership": "test"},
     "evaluation_membership: must be one of train, held_out_eval, none (got 'test')"),
    ("source enum", {"source": "imported"}, {"source": "robot"},
     "source: must be one of human, model, imported (got 'robot')"),
    ("progress 0..1", {"progress": 1}, {"progress": 1.01},
     "progress: must be a finite number from 0 to 1 (got 1.01)"),
    ("progress not bool", {"progress": 0}, {"progress": True},
     "progress: must be a finite number from 0 to 1 (got True)"),
    ("quality 1..5", {"quality": 5}, {"quality": 6},
     "quality: must be an integer from 1 to 5 (got 6)"),
    ("quality integer", {"quality": 1}, {"quality": 2.5},
     "quality: must be an integer from 1 to 5 (got 2.5)"),
    ("speed 1..5", {"speed": 1}, {"speed": 0},
     "speed: must be an integer from 1 to 5 (got 0)"),
    ("confidence 0..1", {"source": "model", "confidence": 0.0},
     {"source": "model", "confidence": -0.1},
     "confidence: must be a finite number from 0 to 1 (got -0.1)"),
    ("confidence only with model", {"source": "model", "confidence": 0.9},
     {"source": "imported", "confidence": 0.9},
     "confidence: is allowed only with source 'model' (source is 'imported')"),
    ("confidence default source", {"confidence": None}, {"confidence": 0.5},
     "confidence: is allowed only with source 'model' (source is 'human')"),
    ("mistake_type <= 128", {"mistake_type": "x" * 128}, {"mistake_type": "x" * 129},
     "mistake_type: must be at most 128 characters (got 129)"),
    ("recovery_type <= 128", {"recovery_type": "regrasp"}, {"recovery_type": 7},
     "recovery_type: must be a string (got int)"),
    ("failure_stage <= 128", {"failure_stage": "y" * 128}, {"failure_stage": "y" * 200},
     "failure_stage: must be at most 128 characters (got 200)"),
    ("model_version <= 255", {"model_version": "p@" + "v" * 253},
     {"model_version": "v" * 256},
     "model_version: must be at most 255 characters (got 256)"),
    ("read-only field", {}, {"version": 3}, "version: is read-only"),
    ("unknown field", {}, {"tags": []}, "tags: unknown field"),
    # subtasks
    ("subtasks <= 256", {"subtasks": [sub(start=i, end=i) for i in range(256)]},
     {"subtasks": [sub(start=i, end=i) for i in range(257)]},
     "subtasks: at most 256 subtasks (got 257)"),
    ("subtask label 1..500", {"subtasks": [sub(label="x" * 500)]},
     {"subtasks": [sub(label="")]},
     "subtasks[0].label: must be 1-500 characters (got 0)"),
    ("subtask label <= 500", {"subtasks": [sub(label="x")]},
     {"subtasks": [sub(label="x" * 501)]},
     "subtasks[0].label: must be 1-500 characters (got 501)"),
    ("subtask label required", {}, {"subtasks": [{"start_ts": 0, "end_ts": 1}]},
     "subtasks[0].label: is required"),
    ("subtask start >= 0", {"subtasks": [sub(start=0.0)]}, {"subtasks": [sub(start=-1)]},
     "subtasks[0].start_ts: must be a finite number >= 0 (got -1)"),
    ("subtask end >= start", {"subtasks": [sub(start=2, end=2)]},
     {"subtasks": [sub(start=2, end=1.5)]},
     "subtasks[0].end_ts: must be >= start_ts 2 (got 1.5)"),
    ("subtask outcome enum", {"subtasks": [sub(outcome="failure")]},
     {"subtasks": [sub(outcome="meh")]},
     "subtasks[0].outcome: must be one of expert_success, slow_success, partial_success, "
     "mistake_and_recovery, intervention, unsafe, aborted, failure, novel_strategy, "
     "inefficient_strategy (got 'meh')"),
    ("subtasks sorted", {"subtasks": [sub(start=0, end=1), sub(start=1, end=2)]},
     {"subtasks": [sub(start=1, end=2), sub(start=0, end=1)]},
     "subtasks[1].start_ts: must be sorted by start_ts: 0 comes after 1"),
    ("nested allowed, partial overlap rejected",
     {"subtasks": [sub(start=0, end=19.8), sub(start=0, end=6.2), sub(start=6.2, end=19.8)]},
     {"subtasks": [sub(start=0, end=5), sub(start=4, end=6)]},
     "subtasks[1]: partially overlaps subtasks[0] ([4, 6] vs [0, 5]): subtasks must be "
     "nested or disjoint"),
    ("touching is not overlap", {"subtasks": [sub(start=0, end=5), sub(start=5, end=6)]},
     {"subtasks": [sub(start=0, end=10), sub(start=2, end=5), sub(start=4, end=11)]},
     "subtasks[2]: partially overlaps subtasks[0] ([4, 11] vs [0, 10]): subtasks must be "
     "nested or disjoint"),
    ("enclosing first on equal starts",
     {"subtasks": [sub(start=0, end=9), sub(start=0, end=3)]},
     {"subtasks": [sub(start=0, end=3), sub(start=0, end=9)]},
     "subtasks[1]: starts with subtasks[0] and encloses it: list the enclosing subtask first"),
    # hand actions
    ("hands left/right only", {"hand_actions": {"left": [act()]}},
     {"hand_actions": {"both": []}},
     "hand_actions.both: unknown hand; only left and right"),
    ("hand sorted", {"hand_actions": {"right": [act(0, 1), act(1, 2)]}},
     {"hand_actions": {"right": [act(1, 2), act(0, 1)]}},
     "hand_actions.right[1].start_ts: must be sorted by start_ts: 0 comes after 1"),
    ("no overlap within a hand, hands overlap freely",
     {"hand_actions": {"left": [act(0, 5)], "right": [act(2, 3)]}},
     {"hand_actions": {"left": [act(0, 5), act(4, 6)]}},
     "hand_actions.left[1].start_ts: overlaps left[0] (which ends at 5): one hand's actions "
     "may touch but not overlap"),
    ("<= 3600 per hand", {"hand_actions": {"left": [act(i, i + 1) for i in range(3600)]}},
     {"hand_actions": {"left": [act(i, i + 1) for i in range(3601)]}},
     "hand_actions.left: at most 3600 items per hand (got 3601)"),
    ("contact JSON boolean", {"hand_actions": {"left": [act(contact=False)]}},
     {"hand_actions": {"left": [act(contact=1)]}},
     "hand_actions.left[0].contact: must be true, false or null (got 1)"),
    ("contact not a string", {"hand_actions": {"left": [act(contact=None)]}},
     {"hand_actions": {"left": [act(contact="true")]}},
     "hand_actions.left[0].contact: must be true, false or null (got 'true')"),
    ("action required 1..500", {"hand_actions": {"left": [act(action="x" * 500)]}},
     {"hand_actions": {"left": [act(action="")]}},
     "hand_actions.left[0].action: must be 1-500 characters (got 0)"),
    ("object <= 255", {"hand_actions": {"left": [act(object="o" * 255)]}},
     {"hand_actions": {"left": [act(object="o" * 256)]}},
     "hand_actions.left[0].object: must be at most 255 characters (got 256)"),
    ("verb <= 64", {"hand_actions": {"left": [act(verb="v" * 64)]}},
     {"hand_actions": {"left": [act(verb="v" * 65)]}},
     "hand_actions.left[0].verb: must be at most 64 characters (got 65)"),
    ("hand item keys", {"hand_actions": {"left": [act(object=None, verb=None)]}},
     {"hand_actions": {"left": [act(hand="l")]}},
     "hand_actions.left[0].hand: unknown key; allowed: start_ts, end_ts, action, object, "
     "verb, contact"),
    # leakage groups
    ("leakage keys", {"leakage_groups": {"location": "loc_1", "environment_family": "k"}},
     {"leakage_groups": {"site": "s1"}},
     "leakage_groups.site: unknown key; allowed: location, object, mechanism, operator, "
     "environment_family"),
    ("leakage id <= 255", {"leakage_groups": {"operator": "o" * 255}},
     {"leakage_groups": {"operator": "o" * 256}},
     "leakage_groups.operator: must be 1-255 characters (got 256)"),
    # source metadata
    ("metadata <= 20 keys", {"source_metadata": {f"k{i}": i for i in range(20)}},
     {"source_metadata": {f"k{i}": i for i in range(21)}},
     "source_metadata: at most 20 keys (got 21)"),
    ("metadata key 1..64", {"source_metadata": {"k" * 64: "v"}},
     {"source_metadata": {"k" * 65: "v"}},
     f"source_metadata.{'k' * 65!r}: key must be 1-64 characters (got 65)"),
    ("metadata empty key", {"source_metadata": {"k": True}}, {"source_metadata": {"": "v"}},
     "source_metadata.'': key must be 1-64 characters (got 0)"),
    ("metadata string <= 512", {"source_metadata": {"run_id": "r" * 512}},
     {"source_metadata": {"run_id": "r" * 513}},
     "source_metadata.run_id: must be at most 512 characters (got 513)"),
    ("metadata no nesting", {"source_metadata": {"n": 1.5}},
     {"source_metadata": {"n": {"a": 1}}},
     "source_metadata.n: must be a string, a finite number or a boolean (got dict; nested "
     "objects, lists and null are rejected)"),
    ("metadata no lists", {"source_metadata": {"n": -3}}, {"source_metadata": {"n": [1]}},
     "source_metadata.n: must be a string, a finite number or a boolean (got list; nested "
     "objects, lists and null are rejected)"),
    ("metadata no null", {"source_metadata": {"n": False}}, {"source_metadata": {"n": None}},
     "source_metadata.n: must be a string, a finite number or a boolean (got null; nested "
     "objects, lists and null are rejected)"),
    ("metadata finite", {"source_metadata": {"n": 1e300}},
     {"source_metadata": {"n": float("inf")}},
     "source_metadata.n: must be a finite number (got inf)"),
]


@pytest.mark.parametrize(("rule", "ok", "bad", "error"), RULES, ids=[r[0] for r in RULES])
def test_rule(rule, ok, bad, error):
    validate_label({"outcome": "failure", **ok})
    with pytest.raises(OutcomeLabelError, match=f"^{re.escape(error)}$"):
        validate_label({"outcome": "failure", **bad})


LENGTH = [  # the sequence is 20 s long (one MCAP with a recorded length)
    ("subtask end <= length + 1 s", {"subtasks": [sub(start=0, end=21.0)]},
     {"subtasks": [sub(start=0, end=21.01)]},
     "subtasks[0].end_ts: must be <= the sequence length 20 s + 1 s = 21 (got 21.01)"),
    ("hand end <= length + 1 s", {"hand_actions": {"right": [act(20, 21)]}},
     {"hand_actions": {"right": [act(0, 1), act(20, 22)]}},
     "hand_actions.right[1].end_ts: must be <= the sequence length 20 s + 1 s = 21 (got 22)"),
]


@pytest.mark.parametrize(("rule", "ok", "bad", "error"), LENGTH, ids=[r[0] for r in LENGTH])
def test_end_ts_against_known_length(rule, ok, bad, error):
    validate_label({"outcome": "failure", **ok}, length_s=20.0)
    validate_label({"outcome": "failure", **bad}, length_s=None)  # length unknown: skipped
    with pytest.raises(OutcomeLabelError, match=f"^{re.escape(error)}$"):
        validate_label({"outcome": "failure", **bad}, length_s=20.0)


def test_omitted_fields_are_unset_and_items_have_all_six_fields():
    stored = validate_label({"outcome": "aborted",
                             "hand_actions": {"left": [act(0, 1, object="", verb="")]}})
    assert stored == {
        "outcome": "aborted", "progress": None, "quality": None, "speed": None,
        "subtasks": [],
        "hand_actions": {"left": [{"start_ts": 0.0, "end_ts": 1.0, "action": "a",
                                   "object": None, "verb": None, "contact": None}],
                         "right": []},
        "mistake_type": "", "recovery_type": "", "failure_stage": "", "autonomy_level": "",
        "model_version": "", "evaluation_membership": "", "leakage_groups": {},
        "source": "human", "source_metadata": {}, "confidence": None}


def test_not_an_object():
    with pytest.raises(OutcomeLabelError, match=r"^body: must be a JSON object \(got list\)$"):
        validate_label([])
