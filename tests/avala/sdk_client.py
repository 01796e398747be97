"""The public Avala SDK, unchanged, as a client of a running rcjudge server.

Runs in the SDK's own environment (``make test-avala``: ``.venv-avala``, avala pinned in
constraints/avala.txt), never in rcjudge's: it imports only ``avala`` (and the pydantic it
brings) and the standard library. ``tests/avala/test_avala_sdk.py`` starts the server,
seeds it, runs this script and checks every value it prints.

    python sdk_client.py '{"base_url": "http://127.0.0.1:PORT/api/v1", "editor": KEY,
                           "reader": KEY, "uids": [UID, ...]}'

Its datasets calls are the SDK's own (``client.datasets.*``); 0.10.0 has no
sequence-outcome module, so the outcome routes go through the SDK's transport
(``client._transport``: its httpx client, ``X-Avala-Api-Key`` header, error mapping and
cursor paging). Prints one JSON document on stdout.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import avala
from avala.errors import AvalaError
from pydantic import BaseModel


class LabelRow(BaseModel):
    """What the test reads of an outcome label (the SDK's pages want a model class)."""

    uid: str
    sequence_uid: str
    version: int
    outcome: str


def dataset(d: Any) -> dict[str, Any]:
    return {"uid": d.uid, "name": d.name, "slug": d.slug,
            "owner_name": getattr(d, "owner_name", None),  # a field since 0.9 or 0.10
            "item_count": d.item_count, "is_sequence": d.is_sequence,
            "data_type": d.data_type, "status": d.status,
            "created_at": d.created_at.isoformat()}


def sequence(s: Any) -> dict[str, Any]:
    return {"uid": s.uid, "dataset_uid": s.dataset_uid, "frames": s.frames}


def refused(call: Any) -> dict[str, Any]:
    """The SDK's exception for a call the server refuses: class, status and message."""
    try:
        call()
    except AvalaError as exc:
        return {"error": type(exc).__name__, "status": exc.status_code, "message": exc.message}
    return {"error": None}


def walk(first: Any, more: Any, field: str = "uid") -> list[list[str]]:
    """``field`` of every item of every page, following ``next_cursor`` from ``first``."""
    pages, page = [], first
    while True:
        pages.append([getattr(item, field) for item in page])
        if page.next_cursor is None:
            return pages
        page = more(page.next_cursor)


def main(cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    client = avala.Client(api_key=cfg["editor"], base_url=cfg["base_url"])
    reader = avala.Client(api_key=cfg["reader"], base_url=cfg["base_url"])
    nobody = avala.Client(api_key="rck_live_nope", base_url=cfg["base_url"])
    ds = client.datasets

    # datasets: list (one page, then 1 a page both ways), get by owner/slug, get by uid
    page = ds.list()
    out["list"] = {"items": [dataset(d) for d in page], "next": page.next_cursor,
                   "previous": page.previous_cursor, "has_more": page.has_more}
    out["list_by_one"] = walk(ds.list(limit=1), lambda c: ds.list(limit=1, cursor=c))
    last = ds.list(limit=1, cursor=ds.list(limit=1).next_cursor)
    out["list_back"] = [d.uid for d in ds.list(limit=1, cursor=last.previous_cursor)]
    out["get_by_slug"] = dataset(ds.get_by_slug("acme", "kitchen"))
    out["get_by_uid"] = dataset(ds.get(out["get_by_slug"]["uid"]))
    out["get_by_slug_hidden"] = refused(lambda: ds.get_by_slug("acme", "secret"))
    out["reader_list"] = [d.uid for d in reader.datasets.list()]

    # datasets.list's filters, as the SDK sends them (one at a time, together, paged)
    def uids(**filters: Any) -> list[str]:
        return [d.uid for d in ds.list(**filters)]

    out["filters"] = {
        "name": uids(name="KIT"), "name_none": uids(name="%"),
        "public": uids(visibility="public"), "private": uids(visibility="private"),
        "unlisted": uids(visibility="unlisted"),
        "mcap": uids(data_type="mcap"), "image": uids(data_type="image"),
        "created": uids(status="created"), "creating": uids(status="creating"),
        "together": uids(name="z", visibility="private", data_type="mcap", status="created"),
        "paged": walk(ds.list(limit=1, visibility="private"),
                      lambda c: ds.list(limit=1, visibility="private", cursor=c)),
        "reader_public": [d.uid for d in reader.datasets.list(visibility="public")],
        "bad_visibility": refused(lambda: ds.list(visibility="hidden"))}
    out["nobody_list"] = refused(nobody.datasets.list)

    # sequences: list (2 a page), get each, a missing one
    out["sequences"] = walk(ds.list_sequences("acme", "kitchen", limit=2),
                            lambda c: ds.list_sequences("acme", "kitchen", limit=2, cursor=c))
    out["get_sequence"] = [sequence(ds.get_sequence("acme", "kitchen", uid))
                           for uid in cfg["uids"]]
    calibration = ds.get_calibration("acme", "kitchen", cfg["uids"][0])
    out["calibration"] = {"sequence_uid": calibration.sequence_uid,
                          "cameras": calibration.cameras}
    out["get_sequence_missing"] = refused(lambda: ds.get_sequence("acme", "kitchen", "seq_nope"))

    # the outcome routes through the SDK's transport
    t = client._transport
    label = "/datasets/acme/kitchen/sequences/{}/outcome/"
    first, second = cfg["uids"][:2]
    v1 = t.request("PUT", label.format(first), json={"outcome": "failure", "progress": 0.25})
    v2 = t.request("PUT", label.format(first), json={"outcome": "mistake_and_recovery"})
    t.request("PUT", label.format(second), json={"outcome": "intervention"})
    out["put"] = [(v["version"], v["outcome"], v["progress"]) for v in (v1, v2)]
    current = t.request("GET", label.format(first))
    out["get_label"] = (current["uid"] == v2["uid"], current["version"], current["is_current"])
    history = t.request_list(label.format(first) + "history/", LabelRow)
    out["history"] = [(h.version, h.outcome, h.uid == v) for h, v in
                      zip(history, (v2["uid"], v1["uid"]), strict=True)]
    lane = "/datasets/acme/kitchen/sequence-outcomes/"
    params = {"outcome": "mistake_and_recovery,intervention", "limit": 1}
    out["lane"] = walk(t.request_page(lane, LabelRow, params=params),
                       lambda c: t.request_page(lane, LabelRow, params={**params, "cursor": c}),
                       "sequence_uid")
    out["label_missing"] = refused(lambda: t.request("GET", label.format(cfg["uids"][2])))
    out["label_bad"] = refused(lambda: t.request("PUT", label.format(first),
                                                 json={"outcome": "won"}))
    out["label_reader"] = refused(lambda: reader._transport.request(
        "PUT", label.format(first), json={"outcome": "failure"}))
    out["label_nobody"] = refused(lambda: nobody._transport.request("GET", label.format(first)))
    for c in (client, reader, nobody):
        c.close()
    return out


if __name__ == "__main__":
    json.dump(main(json.loads(sys.argv[1])), sys.stdout, indent=1)
