"""Python SDK of the sequence-outcome API (``/api/v1``, docs/outcomes.md): httpx, sync and async.

    from rcjudge.client import Client
    client = Client("http://127.0.0.1:8000", api_key="rck_live_…")   # or $RCJUDGE_API_KEY
    label = client.sequence_outcomes.set("acme", "kitchen", uid, outcome="failure", progress=0.4)
    page = client.sequence_outcomes.list("acme", "kitchen", outcome=["failure", "aborted"])
    for item in page: print(item.sequence_uid, item.outcome)
    page.next_page()   # None on the last page

The calls mirror the contract's SDK (``set/get/history/list``); a refused call raises
:class:`ApiCallError` carrying the HTTP status and the server's one-line ``detail``.
Labels come back as :class:`Label` (attribute access over the JSON document).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx

from rcjudge.errors import RcjudgeError

HEADER = "X-Avala-Api-Key"  # the contract's header; "Authorization: Bearer" works too


class ApiCallError(RcjudgeError, RuntimeError):
    """The server refused a call: ``status`` and its ``detail``."""

    def __init__(self, status: int, detail: str) -> None:
        self.status, self.detail = status, detail
        super().__init__(f"HTTP {status}: {detail}")


class Label(dict):
    """One outcome label version: a dict whose keys are also attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Page:
    """One list page: iterate its labels; ``next``/``previous`` are URLs or None."""

    def __init__(self, doc: dict[str, Any], fetch: Any) -> None:
        self.items = [Label(r) for r in doc["results"]]
        self.next, self.previous = doc["next"], doc["previous"]
        self._fetch = fetch

    def __iter__(self) -> Iterator[Label]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def next_page(self) -> Any:
        """The next page (a :class:`Page`, awaitable on the async client), or None."""
        return None if self.next is None else self._fetch(self.next)


def _raise(r: httpx.Response) -> Any:
    if r.status_code >= 400:
        try:
            detail = r.json().get("detail", r.text)
        except ValueError:
            detail = r.text
        raise ApiCallError(r.status_code, str(detail))
    return r.json()


def _list_params(filters: dict[str, Any]) -> dict[str, str]:
    out = {}
    for k, v in filters.items():
        if v is None:
            continue
        out[k] = ",".join(v) if isinstance(v, list | tuple) else str(v)
    return out


def _path(owner: str, slug: str, *rest: str) -> str:
    parts = [quote(p, safe="") for p in (owner, slug, *rest)]
    return "/api/v1/datasets/" + "/".join(parts)


class _SequenceOutcomes:
    def __init__(self, http: httpx.Client) -> None:
        self._http = http

    def set(self, owner: str, slug: str, sequence_uid: str, **label: Any) -> Label:
        """Write a new current label (the whole label; omitted optional fields are unset)."""
        return Label(_raise(self._http.put(_path(owner, slug, "sequences", sequence_uid,
                                                 "outcome") + "/", json=label)))

    def get(self, owner: str, slug: str, sequence_uid: str) -> Label:
        """The current label (ApiCallError 404 when the sequence has none)."""
        return Label(_raise(self._http.get(_path(owner, slug, "sequences", sequence_uid,
                                                 "outcome") + "/")))

    def history(self, owner: str, slug: str, sequence_uid: str) -> list[Label]:
        """Every version, newest first."""
        return [Label(v) for v in _raise(self._http.get(
            _path(owner, slug, "sequences", sequence_uid, "outcome", "history") + "/"))]

    def list(self, owner: str, slug: str, *, limit: int | None = None,
             cursor: str | None = None, **filters: Any) -> Page:
        """One page of current labels; filters take one value or a list (match any)."""
        params = _list_params({**filters, "limit": limit, "cursor": cursor})
        doc = _raise(self._http.get(_path(owner, slug, "sequence-outcomes") + "/",
                                    params=params))
        return Page(doc, self._fetch_page)

    def _fetch_page(self, url: str) -> Page:
        return Page(_raise(self._http.get(url)), self._fetch_page)


class _AsyncSequenceOutcomes:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self._http = http

    async def set(self, owner: str, slug: str, sequence_uid: str, **label: Any) -> Label:
        return Label(_raise(await self._http.put(
            _path(owner, slug, "sequences", sequence_uid, "outcome") + "/", json=label)))

    async def get(self, owner: str, slug: str, sequence_uid: str) -> Label:
        return Label(_raise(await self._http.get(
            _path(owner, slug, "sequences", sequence_uid, "outcome") + "/")))

    async def history(self, owner: str, slug: str, sequence_uid: str) -> list[Label]:
        return [Label(v) for v in _raise(await self._http.get(
            _path(owner, slug, "sequences", sequence_uid, "outcome", "history") + "/"))]

    async def list(self, owner: str, slug: str, *, limit: int | None = None,
                   cursor: str | None = None, **filters: Any) -> Page:
        params = _list_params({**filters, "limit": limit, "cursor": cursor})
        doc = _raise(await self._http.get(_path(owner, slug, "sequence-outcomes") + "/",
                                          params=params))
        return Page(doc, self._fetch_page)

    async def _fetch_page(self, url: str) -> Page:
        return Page(_raise(await self._http.get(url)), self._fetch_page)


def _key(api_key: str | None) -> str:
    key = api_key or os.environ.get("RCJUDGE_API_KEY")
    if not key:
        raise RcjudgeError("api_key: not given and $RCJUDGE_API_KEY is not set")
    return key


class Client:
    """Sync client; ``transport`` lets tests talk to an app in process."""

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._http = httpx.Client(base_url=base_url, headers={HEADER: _key(api_key)},
                                  timeout=timeout, transport=transport)
        self.sequence_outcomes = _SequenceOutcomes(self._http)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient:
    """Async client (``await client.sequence_outcomes.get(…)``)."""

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 30.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._http = httpx.AsyncClient(base_url=base_url, headers={HEADER: _key(api_key)},
                                       timeout=timeout, transport=transport)
        self.sequence_outcomes = _AsyncSequenceOutcomes(self._http)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
