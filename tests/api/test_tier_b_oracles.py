"""Issue 36 item 2: no answer tells a designated tier-B task from a task the server lacks.

Before: with ``metaworld.pick_place`` designated tier B (in the task catalog) and
``metaworld.never_made`` unknown, any key sending the first got 200 and the second 422
"… is not in the task catalog"; declaring tier "A" on the first gave no tier-A cell (its
row went to tier B) where a task that is not designated gave a cell with n = 1. Now a
designated task is judged only for the keys the operator named for it (``rcjudge api
tier-b TASK --key KEY_ID``); to every other key it answers as a task the server does not
have, whatever tier is declared: same status, same problem document, nothing written,
nothing charged, the table unchanged.
"""

from __future__ import annotations

import pytest

from tests.api.conftest import bearer, request_for

DESIGNATED = "metaworld.pick_place"
UNKNOWN = "metaworld.never_made"


def post(client, key: str, bundle: str, task: str, tier: str):
    doc = request_for(bundle)
    doc["task"] = {"id": task, "tier": tier}
    return client.post("/v1/judgments", json=doc, headers=bearer(key))


def state(client, key: str) -> tuple:
    """What a key can see after a call: its runs, its usage, the whole public table."""
    return (client.get("/v1/runs", headers=bearer(key)).json(),
            client.get("/v1/usage", headers=bearer(key)).json()["calls"],
            client.get("/v1/coefficients", headers=bearer(key)).json())


@pytest.mark.parametrize("tier", ["B", "A"])
def test_a_designated_task_answers_as_a_task_the_server_lacks(client, service, api_bundles,
                                                             tier):
    probe = service.create_key("probe", "live", ["judgments:write", "runs:read",
                                                 "usage:read", "coefficients:read"])[0]
    service.designate_tier_b([DESIGNATED])
    before = state(client, probe)
    known = post(client, probe, api_bundles[0], DESIGNATED, tier)
    after_known = state(client, probe)
    unknown = post(client, probe, api_bundles[0], UNKNOWN, tier)
    after_unknown = state(client, probe)
    assert known.status_code == unknown.status_code == 422
    body_known, body_unknown = known.json(), unknown.json()
    if tier == "A":  # a tier-A task id is the caller's own: named, each its own
        assert body_known["detail"] == body_unknown["detail"].replace(UNKNOWN, DESIGNATED)
        body_known["detail"] = body_unknown["detail"]
    assert body_known == body_unknown
    named = "<tier-B task>" if tier == "B" else UNKNOWN
    assert body_unknown["detail"] == (
        f"task {named!r} is not in the task catalog; add its "
        f'instruction: rcjudge tasks add {named} "<instruction>"')
    assert before == after_known == after_unknown
    assert before[1] == 0 and before[0]["data"] == [] and before[2]["data"] == []


def test_the_keys_named_for_a_task_judge_it_as_tier_b(client, service, api_bundles):
    lab = service.create_key("lab", "live", ["judgments:write", "coefficients:read"])
    other = service.create_key("other", "live", ["judgments:write"])[0]
    assert service.designate_tier_b([DESIGNATED], keys=[lab[1].key_id]) == 1
    r = post(client, lab[0], api_bundles[0], DESIGNATED, "A")  # the operator's B wins
    assert r.status_code == 200, r.text
    assert r.json()["table_row_id"] == "cf_1" and DESIGNATED not in r.text
    got = client.get("/v1/coefficients", headers=bearer(lab[0])).json()["data"]
    assert got == []  # pending in tier B (one task, one owner), not an exact tier-A cell
    assert post(client, other, api_bundles[1], DESIGNATED, "B").status_code == 422
    # naming the task again adds the key, designates nothing new
    assert service.designate_tier_b([DESIGNATED], keys=[service.authenticate(
        f"Bearer {other}").key_id]) == 0
    assert post(client, other, api_bundles[1], DESIGNATED, "B").status_code == 200


def test_a_key_named_for_a_task_must_exist_in_the_mode(service):
    from judge.api.errors import ApiError

    live = service.create_key("lab", "live", ["judgments:write"])[1]
    with pytest.raises(ApiError, match=r"^422: key 'key_\w+': no such key in test mode$"):
        service.designate_tier_b([DESIGNATED], mode="test", keys=[live.key_id])
    with pytest.raises(ApiError, match=r"^422: key 'key_nope': no such key in live mode$"):
        service.designate_tier_b([DESIGNATED], keys=["key_nope"])
