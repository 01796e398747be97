"""Errors the Judge API answers with, as RFC 9457 problem details.

:class:`ApiError` carries the HTTP status, a short title and a one-line detail; the
routes render it as ``application/problem+json`` with ``status`` equal to the HTTP
status. The service raises it; nothing else in the pipeline knows about HTTP.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from judge.errors import JudgeError
from rcjudge.errors import one_line

#: Characters of a ``detail`` at most: the messages name the field and cut the values they
#: quote (:func:`rcjudge.errors.shown`); this is the net under them.
MAX_DETAIL = 2000


class ApiError(JudgeError):
    """A refused API request: status, detail and optional extra problem members."""

    def __init__(self, status: int, detail: str, *, headers: dict[str, str] | None = None,
                 **extra: Any) -> None:
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})
        self.extra = extra
        super().__init__(f"{status}: {detail}")

    def problem(self, instance: str | None = None) -> dict[str, Any]:
        """The problem+json document."""
        return problem(self.status, self.detail, instance, **self.extra)


def problem(status: int, detail: str, instance: str | None = None,
            **extra: Any) -> dict[str, Any]:
    """An RFC 9457 document: ``type``, ``title`` (the status phrase), ``status``, ``detail``.

    A 422 always carries ``invalid_params`` (``ValidationProblem``): the ``[{"name",
    "reason"}]`` given, else the one ``param`` named, else an empty list. The detail is one
    line (control characters escaped: :func:`rcjudge.errors.one_line`) of at most
    :data:`MAX_DETAIL` characters.
    """
    detail = one_line(str(detail))
    if len(detail) > MAX_DETAIL:
        detail = f"{detail[:MAX_DETAIL]}… (cut: {len(detail)} characters)"
    param = extra.pop("param", None)
    if status == 422 and extra.get("invalid_params") is None:
        extra["invalid_params"] = [{"name": param, "reason": detail}] if param else []
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    doc: dict[str, Any] = {"type": "about:blank", "title": title, "status": status,
                           "detail": detail}
    if instance:
        doc["instance"] = instance
    doc.update({k: v for k, v in extra.items() if v is not None})
    return doc
