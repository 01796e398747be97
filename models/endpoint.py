"""A served member's endpoint: its configuration and the one HTTP client that talks to it.

Where it sits: under :mod:`models.served` (the ``openai`` backend). A judge version's model
entry with ``backend: openai`` names an :class:`Endpoint` (``endpoint:`` in the YAML); the
endpoint comes from that file, or a version file the operator names on the command line,
never from an API request body (``judge.api.protocol`` takes version names only).

:class:`ServedClient` is the only place a request leaves for a server:

* the API key is read from the environment variable ``api_key_env`` names, sent as a bearer
  header and nowhere else: every error line passes :meth:`ServedClient.line`, which also
  blanks the key if a server echoes it back;
* 429 and 5xx answers are retried up to ``max_retries`` times, after the ``Retry-After`` the
  server asks for (seconds or an HTTP date) or else ``0.5 s × 2^attempt``; a wait longer than
  ``max_wait_s`` is not waited for (the call fails, one line);
* a timeout, a refused connection or a body that is not JSON fails the call at once.

Each failure is one line naming the member and the endpoint (:class:`ServedError`). httpx is a
base dependency; nothing heavy is imported.
"""

from __future__ import annotations

import email.utils
import os
import time
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from models.base import ModelError

RETRY_STATUS = {429, 500, 502, 503, 504}
BACKOFF_S = 0.5  # the first wait when the server names none; doubled each retry


class ServedError(ModelError):
    """A served member's request failed: one line naming the member and its endpoint."""


class ServedModelChanged(ServedError):
    """The server now answers as another model than the one the judge version pinned.

    A batch stops on it (``judge.batch.driver``): one version never mixes two judges."""


class Endpoint(BaseModel):
    """An OpenAI-compatible chat-completions server and the model asked there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(description="The API root, up to and including /v1 "
                          "(http://gpu-7:8000/v1, https://api.openai.com/v1); no credentials in "
                          "it: the key comes from api_key_env.")
    model: str = Field(min_length=1, description="The model name the server lists "
                       "(vLLM: --served-model-name, else the path it was started with).")
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                                    description="Environment variable holding the API key "
                                    "(sent as a bearer token; never logged, stored or echoed); "
                                    "unset: no key.")
    max_concurrency: int = Field(4, ge=1, le=256, description="Requests this member keeps in "
                                 "flight at most (a batch runs one replica of it, which does).")
    timeout_s: float = Field(60.0, gt=0, le=3600, description="Seconds one request may take.")
    max_retries: int = Field(4, ge=0, le=20, description="Retries of a 429 or 5xx answer.")
    max_wait_s: float = Field(60.0, ge=0, le=3600, description="Longest Retry-After waited "
                              "for; a server asking for more fails the call.")
    usd_per_mtok_in: float = Field(0.0, ge=0, description="Price of a million prompt tokens "
                                   "(usage.prompt_tokens); 0: the server costs nothing here.")
    usd_per_mtok_out: float = Field(0.0, ge=0, description="Price of a million completion "
                                    "tokens (usage.completion_tokens).")
    server: Literal["auto", "vllm", "openai"] = Field(
        "auto", description="vllm: restrict the first token to the answers' token ids "
        "(allowed_token_ids, logprob_token_ids, read with /tokenize); openai: read each "
        "answer's spellings among top_logprobs; auto: vllm when /v1/models says owned_by "
        "vllm.")
    top_logprobs: int = Field(20, ge=1, le=20, description="Log-probabilities asked for on a "
                              "server that cannot restrict (OpenAI's limit: 20).")
    image_format: Literal["png", "jpeg"] = Field(
        "png", description="png: lossless, the server decodes exactly the pixels the "
        "in-process backends see; jpeg: smaller, at jpeg_quality.")
    jpeg_quality: int = Field(95, ge=1, le=100, description="JPEG quality (image_format jpeg).")
    pin_system_fingerprint: bool = Field(
        True, description="A response whose system_fingerprint differs from the one pinned at "
        "load stops the judge (the server's build or model changed).")

    @field_validator("base_url")
    @classmethod
    def _plain_http_url(cls, v: str) -> str:
        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("expected http(s)://host[:port]/path, e.g. http://127.0.0.1:8000/v1")
        if parts.username is not None or parts.password is not None:
            raise ValueError("no credentials in the URL: put the key in the environment "
                             "variable api_key_env names")
        if parts.query or parts.fragment:
            raise ValueError("no query or fragment: the API root only")
        return v.rstrip("/")

    @property
    def host(self) -> str:
        """``host[:port]`` of :attr:`base_url` (what the fingerprint records)."""
        return urlsplit(self.base_url).netloc

    @property
    def origin(self) -> str:
        """The server root: :attr:`base_url` without a trailing ``/v1`` (vLLM's /tokenize)."""
        return self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url

    def usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        """What one request cost at the configured prices."""
        return (prompt_tokens * self.usd_per_mtok_in
                + completion_tokens * self.usd_per_mtok_out) / 1e6


#: Endpoint fields that say how requests are sent and paid for, not what is answered: left
#: out of the version's fingerprint (``judge.ensemble.fingerprint``), as is the URL's path.
RUN_ONLY = {"base_url", "api_key_env", "max_concurrency", "timeout_s", "max_retries",
            "max_wait_s", "usd_per_mtok_in", "usd_per_mtok_out", "pin_system_fingerprint"}


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta seconds or an HTTP date), else None."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


class ServedClient:
    """HTTP to one endpoint for one member: retries, timeouts, the key, one-line errors."""

    def __init__(self, name: str, endpoint: Endpoint,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        import httpx

        self.name, self.endpoint, self.sleep = name, endpoint, sleep
        self.key = None
        if endpoint.api_key_env:
            self.key = os.environ.get(endpoint.api_key_env) or None
            if self.key is None:
                raise ServedError(self.line(f"the environment variable {endpoint.api_key_env} "
                                            "(api_key_env) is not set"))
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        self.http = httpx.Client(headers=headers, timeout=endpoint.timeout_s,
                                 limits=httpx.Limits(max_connections=endpoint.max_concurrency + 1,
                                                     max_keepalive_connections=endpoint.max_concurrency
                                                     + 1))
        self.waits: list[float] = []  # every wait before a retry, in order (for reports)

    def line(self, what: str) -> str:
        """``model NAME at URL: what``, one line, the key blanked wherever it appears."""
        text = " ".join(f"model {self.name} at {self.endpoint.base_url}: {what}".split())
        key = getattr(self, "key", None)
        return text.replace(key, "[api key]") if key else text

    def get(self, path: str, root: bool = False) -> Any:
        return self.request("GET", path, None, root)

    def post(self, path: str, body: dict, root: bool = False) -> Any:
        return self.request("POST", path, body, root)

    def request(self, method: str, path: str, body: dict | None, root: bool = False) -> Any:
        """The JSON a ``method`` on ``path`` (under ``base_url``, or the server root) answers.

        Raises:
            ServedError: one line: unreachable, timed out, an HTTP error after the retries,
                a body that is not JSON.
        """
        import httpx

        url = (self.endpoint.origin if root else self.endpoint.base_url) + path
        for attempt in range(self.endpoint.max_retries + 1):
            try:
                r = self.http.request(method, url, json=body)
            except httpx.TimeoutException:
                raise ServedError(self.line(f"{method} {path} timed out after "
                                            f"{self.endpoint.timeout_s:g} s (timeout_s)")) from None
            except httpx.HTTPError as exc:
                raise ServedError(self.line(f"{method} {path}: cannot reach the server "
                                            f"({type(exc).__name__}: {exc})")) from None
            if r.status_code in RETRY_STATUS and attempt < self.endpoint.max_retries:
                asked = retry_after(r.headers.get("Retry-After"))
                wait = BACKOFF_S * 2 ** attempt if asked is None else asked
                if wait > self.endpoint.max_wait_s:
                    raise ServedError(self.line(
                        f"{method} {path}: HTTP {r.status_code}, Retry-After {wait:g} s is "
                        f"longer than max_wait_s {self.endpoint.max_wait_s:g}"))
                self.waits.append(wait)
                self.sleep(wait)
                continue
            if r.status_code >= 400:
                tries = f" after {attempt + 1} tries" if attempt else ""
                raise ServedError(self.line(f"{method} {path}: HTTP {r.status_code}{tries}: "
                                            f"{_detail(r)}"))
            try:
                return r.json()
            except ValueError:
                raise ServedError(self.line(f"{method} {path}: the answer is not JSON "
                                            f"({r.text[:80]!r})")) from None
        raise AssertionError("unreachable: the last attempt returns or raises")

    def close(self) -> None:
        self.http.close()


def _detail(r) -> str:
    """The server's error message (OpenAI's ``{"error": {"message": …}}``, vLLM's too), short."""
    try:
        doc = r.json()
    except ValueError:
        return r.text[:200] or r.reason_phrase
    err = doc.get("error", doc) if isinstance(doc, dict) else doc
    msg = err.get("message", err) if isinstance(err, dict) else err
    return str(msg)[:200]
