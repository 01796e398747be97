"""Webhooks: Standard Webhooks signing, target checks, delivery with retries.

A message is signed as Standard Webhooks says: headers ``webhook-id``,
``webhook-timestamp`` and ``webhook-signature: v1,<base64 HMAC-SHA256 of
"id.timestamp.body">`` keyed by the base64 part of the endpoint's ``whsec_…`` secret.
A delivery is tried up to :data:`MAX_ATTEMPTS` times with exponential backoff and jitter
(``base · 2^(attempt-1) · (1 + U[0, 0.5))``); every attempt is recorded; a ``410 Gone``
disables the endpoint. In live mode a target resolving to a private, loopback,
link-local (cloud metadata) or otherwise non-public address is refused, an IPv6 transition
form deciding by the IPv4 address it carries (:func:`embedded_ipv4`) and deprecated IPv6
ranges refused outright; in test mode any target but loopback is (:func:`target_refusal`),
at creation and before each attempt. A failed attempt is recorded as :data:`NO_ANSWER`,
never in the transport's words.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import random
import secrets
import socket
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa

from judge.api import tables as T
from judge.api.common import iso
from judge.api.errors import ApiError
from judge.api.protocol import (
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEndpointRequest,
    WebhookEndpointWithSecret,
)

EVENT_TYPES = ("judgment.completed", "rejudge.completed", "coefficients.published",
               "calibration.disagreement")
#: The sequence-outcome side's events (``/api/v1/openapi.json``; judge.api.outcome_hooks).
#: An endpoint subscribes to events of one side only, and each side's routes see only
#: their own endpoints, so the Judge API's schema keeps its four event types.
OUTCOME_EVENT_TYPES = ("acceptance.quality_target_crossed",)
MAX_ATTEMPTS = 5
#: What ``POST /v1/webhook-endpoints/{id}/test`` sends (with ``"test": true``), per type.
SAMPLES: dict[str, dict[str, Any]] = {
    "judgment.completed": {
        "judgment_id": "jd_0", "run_id": "sample-run", "attempt": True, "success": False,
        "failure_class": "grasp.slip", "counts_against_policy": True,
        "attempt_confidence": 0.91, "success_confidence": 0.86, "charged_to": None,
        "judge_version": "rc-judge-v1", "table_row_id": None},
    "rejudge.completed": {"job_id": "rj_sample", "judge": "rc-judge-v2", "judged": 0,
                          "failed": 0},
    "coefficients.published": {"judge_version": "rc-judge-v1", "cells_now_published": 0},
    "calibration.disagreement": {
        "judgment_id": "jd_0", "run_id": "sample-run", "judge_version": "rc-judge-v1",
        "attempt": True, "success": False, "failure_class": "grasp.slip",
        "label_attempt": True, "label_success": True, "label_failure_class": None,
        "attempt_disagrees": False, "success_disagrees": True, "class_disagrees": False},
}
#: A delivery's ``error`` when the target gave no HTTP answer, whatever the transport said
#: (refused, reset, timed out, not HTTP): one line, so no reader can map ports by it.
NO_ANSWER = "no HTTP answer from the target (connection failed, timed out or broken)"
METADATA_HOSTS = {"metadata.google.internal", "metadata", "instance-data",
                  "metadata.azure.internal"}


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,<base64 HMAC-SHA256>``."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """True when one of the ``webhook-signature`` values matches (what a receiver runs)."""
    want = sign(secret, headers["webhook-id"], int(headers["webhook-timestamp"]), body)
    return any(hmac.compare_digest(want, s) for s in headers["webhook-signature"].split())


def backoff(attempt: int, base_s: float, rng: random.Random) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based)."""
    return base_s * 2 ** (attempt - 1) * (1 + rng.uniform(0, 0.5))


def refused_target(url: str, resolve: Callable[[str], list[str]] | None = None) -> str | None:
    """Why ``url`` may not be a live webhook target, or None when it may."""
    host = _host(url)
    if host is None:
        return "url: expected http(s)://host/…"
    if host in METADATA_HOSTS or host == "localhost" or host.endswith(".localhost"):
        return f"url: host {host!r} is loopback or cloud metadata"
    ips = _addresses(host, resolve)
    if isinstance(ips, str):
        return ips
    for ip in ips:
        if why := _not_public(ip):
            return f"url: host {host!r} resolves to {ip}{why}"
    return None


#: IPv6 ranges refused whatever Python's ``is_global`` says: deprecated (site-local, the
#: IPv4-compatible ``::a.b.c.d``, 6bone, ORCHID v1) or local-use NAT64 (RFC 8215), whose
#: embedded IPv4 sits at a position only its operator knows.
DEPRECATED_V6 = tuple(ipaddress.IPv6Network(n) for n in (
    "fec0::/10", "::/96", "3ffe::/16", "2001:10::/28", "64:ff9b:1::/48"))
_LOW32 = (ipaddress.IPv6Network("::ffff:0:0/96"),  # IPv4-mapped
          ipaddress.IPv6Network("::ffff:0:0:0/96"),  # IPv4-translated (SIIT)
          ipaddress.IPv6Network("64:ff9b::/96"),  # NAT64, well-known prefix
          ipaddress.IPv6Network("::/96"))  # IPv4-compatible (deprecated)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 transition form carries: IPv4-mapped, -translated and
    -compatible, NAT64 (64:ff9b::/96), 6to4 (2002::/16), Teredo (server and client) and
    ISATAP (an interface id ``0:5efe`` / ``200:5efe``). A packet to the IPv6 address reaches
    that IPv4 host, so the target rule decides on it."""
    out = []
    if any(ip in net for net in _LOW32) and int(ip) > 1:  # not :: or ::1
        out.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip.sixtofour is not None:
        out.append(ip.sixtofour)
    if ip.teredo is not None:
        out.extend(ip.teredo)
    if (int(ip) >> 32) & 0xFDFFFFFF == 0x5EFE:  # ISATAP: 0000:5efe or 0200:5efe
        out.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return out


def _not_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why ``ip`` is no public target (the tail of the refusal), or None."""
    if not ip.is_global or ip.is_multicast:
        return ", a private/loopback/metadata address"
    if ip.version == 6:
        for v4 in embedded_ipv4(ip):
            if not v4.is_global or v4.is_multicast:
                return f", which carries {v4}, a private/loopback/metadata address"
        for net in DEPRECATED_V6:
            if ip in net:
                return f", in the deprecated or local-use range {net}"
    return None


def _host(url: str) -> str | None:
    """The lower-cased host of an http(s) URL, or None for any other URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname.lower().rstrip(".")


def _addresses(host: str, resolve: Callable[[str], list[str]] | None):
    """The IP addresses ``host`` is or resolves to; a refusal line when it does not resolve."""
    try:
        addresses = [host] if _is_ip(host) else (resolve or _resolve)(host)
    except OSError as exc:
        return f"url: host {host!r} does not resolve ({exc.strerror or exc})"
    return [ipaddress.ip_address(a.split("%")[0]) for a in addresses]


def refused_test_target(url: str,
                        resolve: Callable[[str], list[str]] | None = None) -> str | None:
    """Why ``url`` may not be a test key's webhook target (loopback only), or None."""
    host = _host(url)
    if host is None:
        return "url: expected http(s)://host/…"
    if host in METADATA_HOSTS:
        return f"url: host {host!r} is loopback or cloud metadata"
    if host == "localhost" or host.endswith(".localhost"):
        return None
    ips = _addresses(host, resolve)
    if isinstance(ips, str):
        return ips
    for ip in ips:
        if not ip.is_loopback:
            return f"url: test keys may target loopback only (host {host!r} is {ip})"
    return None


def target_refusal(mode: str, url: str,
                   resolve: Callable[[str], list[str]] | None = None) -> str | None:
    """The rule of ``mode``: live keys public addresses only, test keys loopback only."""
    return (refused_target if mode == "live" else refused_test_target)(url, resolve)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def _resolve(host: str) -> list[str]:
    return sorted({i[4][0] for i in socket.getaddrinfo(host, None)})


def _endpoint_out(r: Any, with_secret: bool = False) -> WebhookEndpoint:
    fields = dict(endpoint_id=r.endpoint_id, url=r.url, events=list(r.events),
                  enabled=r.enabled, disabled_reason=r.disabled_reason,
                  created_at=iso(r.created_at))
    return WebhookEndpointWithSecret(**fields, secret=r.secret) if with_secret \
        else WebhookEndpoint(**fields)


class WebhookMixin:
    """Webhook endpoints and deliveries of :class:`judge.api.service.JudgeService`."""

    retry_base_s: float = 1.0
    sleep: Callable[[float], None] = staticmethod(time.sleep)
    rng: random.Random = random.Random()
    resolve: Callable[[str], list[str]] | None = None

    def _check_target(self, caller: Any, url: str) -> None:
        if why := target_refusal(caller.mode, url, self.resolve):
            raise ApiError(422, why, param="url")

    def create_endpoint(self, caller: Any, req: WebhookEndpointRequest) -> WebhookEndpoint:
        eid = self.insert_endpoint(caller, req.url, [e.value for e in req.events])
        return _endpoint_out(self._endpoint(caller, eid), with_secret=True)

    def insert_endpoint(self, caller: Any, url: str, events: list[str]) -> str:
        """Store a new endpoint of the caller's (target checked); its id."""
        self.require(caller, "webhooks:write")
        self._check_target(caller, url)
        from judge.ledgers.store import _now

        eid = "we_" + secrets.token_hex(8)
        with self.modes[caller.mode].write() as conn, conn.begin():
            conn.execute(sa.insert(T.webhook_endpoints).values(
                endpoint_id=eid, key_id=caller.key_id, url=url, events=sorted(set(events)),
                secret=new_secret(), enabled=True, disabled_reason=None, created_at=_now()))
        return eid

    def _endpoint(self, caller: Any, endpoint_id: str,
                  family: tuple[str, ...] = EVENT_TYPES) -> Any:
        """The caller's endpoint subscribed to events of ``family`` (404 otherwise)."""
        w = T.webhook_endpoints
        with self.modes[caller.mode].engine.connect() as conn:
            row = conn.execute(sa.select(w).where(w.c.endpoint_id == endpoint_id,
                                                  w.c.key_id == caller.key_id)).first()
        if row is None or not set(row.events) <= set(family):
            raise ApiError(404, f"webhook endpoint {endpoint_id!r}: no such endpoint for "
                           "this key")
        return row

    def endpoint_rows(self, caller: Any, family: tuple[str, ...] = EVENT_TYPES) -> list[Any]:
        """The caller's endpoints of ``family``, oldest first."""
        self.require(caller, "webhooks:read")
        w = T.webhook_endpoints
        with self.modes[caller.mode].engine.connect() as conn:
            rows = conn.execute(sa.select(w).where(w.c.key_id == caller.key_id)
                                .order_by(w.c.created_at, w.c.endpoint_id)).all()
        return [r for r in rows if set(r.events) <= set(family)]

    def list_endpoints(self, caller: Any) -> dict[str, Any]:
        return {"data": [_endpoint_out(r) for r in self.endpoint_rows(caller)]}

    def delete_endpoint(self, caller: Any, endpoint_id: str,
                        family: tuple[str, ...] = EVENT_TYPES) -> None:
        self.require(caller, "webhooks:write")
        self._endpoint(caller, endpoint_id, family)
        w = T.webhook_endpoints
        with self.modes[caller.mode].write() as conn, conn.begin():
            conn.execute(sa.delete(w).where(w.c.endpoint_id == endpoint_id))

    def rotate_secret(self, caller: Any, endpoint_id: str) -> WebhookEndpoint:
        self.require(caller, "webhooks:write")
        self._endpoint(caller, endpoint_id)
        w = T.webhook_endpoints
        with self.modes[caller.mode].write() as conn, conn.begin():
            conn.execute(sa.update(w).where(w.c.endpoint_id == endpoint_id)
                         .values(secret=new_secret()))
        return _endpoint_out(self._endpoint(caller, endpoint_id), with_secret=True)

    def deliveries(self, caller: Any, endpoint_id: str) -> dict[str, Any]:
        return {"data": [WebhookDelivery(**r) for r in self.delivery_rows(caller, endpoint_id)]}

    def delivery_rows(self, caller: Any, endpoint_id: str,
                      family: tuple[str, ...] = EVENT_TYPES) -> list[dict[str, Any]]:
        """Every recorded attempt to the caller's endpoint, oldest first."""
        self.require(caller, "webhooks:read")
        self._endpoint(caller, endpoint_id, family)
        d = T.webhook_deliveries
        with self.modes[caller.mode].engine.connect() as conn:
            rows = conn.execute(sa.select(d).where(d.c.endpoint_id == endpoint_id)
                                .order_by(d.c.delivery_id)).all()
        return [{"delivery_id": r.delivery_id, "message_id": r.message_id,
                 "event_type": r.event_type, "attempt": r.attempt, "status": r.status,
                 "error": r.error, "delivered_at": iso(r.delivered_at)} for r in rows]

    def send_test(self, caller: Any, endpoint_id: str) -> dict[str, Any]:
        """Queue one delivery of a sample event of the endpoint's first event type."""
        self.require(caller, "webhooks:write")
        row = self._endpoint(caller, endpoint_id)
        event = row.events[0]
        msg_id, body = self._message(event, SAMPLES[event], test=True)
        self.pool.submit(self.deliver, caller, row.endpoint_id, msg_id, event, body)
        return {"message_id": msg_id, "event_type": event, "message": json.loads(body)}

    def emit(self, caller: Any, event: str, data: dict[str, Any]) -> None:
        """Queue ``event`` to every enabled endpoint of the key subscribed to it."""
        w = T.webhook_endpoints
        with self.modes[caller.mode].engine.connect() as conn:
            rows = conn.execute(sa.select(w).where(w.c.key_id == caller.key_id,
                                                   w.c.enabled.is_(True))).all()
        for row in rows:
            if event in row.events:
                self._queue(caller, row, event, data)

    @staticmethod
    def _message(event: str, data: dict[str, Any], test: bool = False) -> tuple[str, bytes]:
        """A new message id and the exact body bytes that are signed and sent."""
        from judge.ledgers.store import _now

        msg_id = "msg_" + secrets.token_hex(12)
        body = json.dumps({"type": event, "timestamp": _now().isoformat(), "test": test,
                           "data": data}, sort_keys=True, separators=(",", ":")).encode()
        return msg_id, body

    def _queue(self, caller: Any, row: Any, event: str, data: dict[str, Any],
               test: bool = False) -> str:
        msg_id, body = self._message(event, data, test)
        self.pool.submit(self.deliver, caller, row.endpoint_id, msg_id, event, body)
        return msg_id

    def deliver(self, caller: Any, endpoint_id: str, msg_id: str, event: str,
                body: bytes) -> int | None:
        """Try one message until a 2xx, a 410, or :data:`MAX_ATTEMPTS`; the last status."""
        import httpx

        from judge.ledgers.store import _now

        mode = self.modes[caller.mode]
        w, d = T.webhook_endpoints, T.webhook_deliveries
        status = None
        for attempt in range(1, MAX_ATTEMPTS + 1):
            with mode.engine.connect() as conn:
                row = conn.execute(sa.select(w).where(w.c.endpoint_id == endpoint_id)).first()
            if row is None or not row.enabled:
                return status
            status, error = None, None
            why = target_refusal(caller.mode, row.url, self.resolve)
            if why:
                error = why
            else:
                ts = int(time.time())
                headers = {"webhook-id": msg_id, "webhook-timestamp": str(ts),
                           "webhook-signature": sign(row.secret, msg_id, ts, body),
                           "content-type": "application/json"}
                try:
                    with httpx.Client(timeout=10, follow_redirects=False) as client:
                        status = client.post(row.url, content=body, headers=headers).status_code
                except httpx.HTTPError:  # the transport's words stay here: they would map
                    error = NO_ANSWER  # the server's ports for whoever reads the deliveries
            with mode.write() as conn, conn.begin():
                conn.execute(sa.insert(d).values(
                    endpoint_id=endpoint_id, message_id=msg_id, event_type=event,
                    attempt=attempt, status=status, error=error, delivered_at=_now()))
                if status == 410:
                    conn.execute(sa.update(w).where(w.c.endpoint_id == endpoint_id).values(
                        enabled=False, disabled_reason=f"410 Gone on message {msg_id}"))
            if status is not None and (200 <= status < 300 or status == 410):
                return status
            if why or attempt == MAX_ATTEMPTS:
                return status
            self.sleep(backoff(attempt, self.retry_base_s, self.rng))
        return status
