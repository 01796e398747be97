"""Closed questions as chat-completion requests, and answers read from first-token log-probs.

Where it sits: the pure half of the ``openai`` backend (:mod:`models.served` does the I/O).
A question becomes one ``POST /v1/chat/completions`` body (:func:`request_body`): the frames as
image parts first, in order, at the size the in-process backends use
(``models.processing.model_images``), as PNG (lossless) or JPEG; the question text last; one
token (``max_tokens`` 1, ``temperature`` 0); log-probabilities on. The server applies the
model's own chat template. What comes back is read by :func:`read_answer`:

* **restricted** (a vLLM server): the body names the answers' token ids (``models.answers``)
  as ``allowed_token_ids`` and ``logprob_token_ids``, tokens come back as ``token_id:N``.
  vLLM ≥ 0.32 returns the log-probability of every one of those ids: raw (the default
  ``--logprobs-mode raw_logprobs``: log-softmax over the whole vocabulary, so their summed
  probability is the answer mass) or restricted to them (``processed_logprobs``: they sum
  to 1). Either way each answer is the log-sum-exp of its spellings, softmax-normalised:
  the raw and the restricted values differ by one constant, so P is exact in both modes;
  only the raw mode measures the mass per call. Every id must come back.
* **top-k** (any other server): ``top_logprobs`` (≤ 20) of the unrestricted first token; an
  answer is the log-sum-exp of its spellings (``models.answers.answer_variants``) found among
  them, by their text. An answer none of whose spellings came back is one line, never a
  renormalised tail; the mass (a lower bound: a spelling outside the top k is left out)
  must reach ``min_answer_mass``.

Both check the answer mass against ``min_answer_mass`` on every call.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from models.answers import answer_variants, flat_ids, group_logsumexp, softmax

TOKEN_ID = "token_id:"  # vLLM's spelling of a token under return_tokens_as_token_ids


class AnswerError(ValueError):
    """A response from which no answer can be read (the caller adds member and endpoint)."""


def data_url(image, fmt: str = "png", quality: int = 95) -> str:
    """A PIL image as a ``data:`` URL (PNG lossless, or JPEG at ``quality``)."""
    buf = io.BytesIO()
    if fmt == "png":
        image.save(buf, format="PNG")
    else:
        image.convert("RGB").save(buf, format="JPEG", quality=quality)
    return f"data:image/{fmt};base64,{base64.b64encode(buf.getvalue()).decode()}"


def message(images: Sequence, prompt: str, fmt: str = "png", quality: int = 95) -> list[dict]:
    """The one user turn: every image as an ``image_url`` part, in order, then the question."""
    parts: list[dict] = [{"type": "image_url", "image_url": {"url": data_url(im, fmt, quality)}}
                         for im in images]
    parts.append({"type": "text", "text": prompt})
    return [{"role": "user", "content": parts}]


def request_body(model: str, messages: list[dict], ids: Sequence[int] | None,
                 top_logprobs: int, restrict: bool = True,
                 mm_processor_kwargs: dict | None = None) -> dict:
    """The chat-completion body of one question.

    ``ids``: the answers' token ids (a vLLM server) or None (top-k). ``restrict=False`` leaves
    out ``allowed_token_ids`` (the load-time mass probe: then even a server in
    ``processed_logprobs`` mode returns the raw log-probabilities). On vLLM the penalties
    are set to neutral so a model's ``generation_config`` defaults cannot move the
    processed values; temperature 0 already turns off top-k, top-p and min-p there.
    """
    body: dict = {"model": model, "messages": messages, "max_tokens": 1, "temperature": 0.0,
                  "logprobs": True, "top_logprobs": top_logprobs, "n": 1, "stream": False}
    if ids is not None:
        ids = [int(i) for i in ids]
        body.update({"top_logprobs": len(ids), "logprob_token_ids": ids,
                     "return_tokens_as_token_ids": True, "repetition_penalty": 1.0,
                     "presence_penalty": 0.0, "frequency_penalty": 0.0})
        if restrict:
            body["allowed_token_ids"] = ids
        if mm_processor_kwargs:
            body["mm_processor_kwargs"] = dict(mm_processor_kwargs)
    return body


@dataclass(frozen=True)
class Answer:
    """What one response says: P over the answers, the answer mass, the usage, identity."""

    p: np.ndarray  # (n_answers,) float64, sums to 1
    mass: float  # summed probability of the answer tokens that came back
    prompt_tokens: int
    completion_tokens: int
    model: str
    system_fingerprint: str | None


def first_position(doc: dict) -> list[dict]:
    """The first generated token's returned log-probabilities (``top_logprobs``).

    Raises:
        AnswerError: no choice, no ``logprobs``, or none at the first position.
    """
    try:
        content = doc["choices"][0]["logprobs"]["content"]
        first = content[0]
        tops = first.get("top_logprobs") or []
    except (KeyError, IndexError, TypeError):
        raise AnswerError("the response has no logprobs for its first token (does the "
                          "server support logprobs: true?)") from None
    entries = [t for t in tops if isinstance(t, dict) and "token" in t and "logprob" in t]
    if not entries and isinstance(first, dict) and "logprob" in first:
        entries = [first]
    if not entries:
        raise AnswerError("the response's first token carries no log-probabilities")
    return entries


def _usage(doc: dict) -> tuple[int, int]:
    usage = doc.get("usage") or {}
    try:
        return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    except (TypeError, ValueError):
        raise AnswerError(f"usage is malformed: {usage!r:.80}") from None


def read_restricted(doc: dict, groups: Sequence[Sequence[int]],
                    choices: Sequence[str]) -> Answer:
    """An answer from a vLLM response to a body with ``logprob_token_ids`` (every id back)."""
    got: dict[int, float] = {}
    for t in first_position(doc):
        token = str(t["token"])
        if token.startswith(TOKEN_ID):
            got[int(token[len(TOKEN_ID):])] = float(t["logprob"])
    ids = flat_ids(groups)
    missing = [i for i in ids if i not in got]
    if missing:
        which = [c for c, g in zip(choices, groups, strict=True) if set(g) & set(missing)]
        raise AnswerError(f"answer tokens {missing} (of {', '.join(map(repr, which))}) are "
                          f"missing from the returned log-probabilities (got {sorted(got)}); "
                          "the server needs logprob_token_ids (vLLM >= 0.32) or "
                          "--logprobs-mode processed_logprobs")
    values = np.array([got[i] for i in ids], dtype=np.float64)
    return _answer(doc, values, groups)


def read_top(doc: dict, choices: Sequence[str]) -> Answer:
    """An answer from the top-k log-probabilities, each answer's spellings found by text."""
    top = {str(t["token"]): float(t["logprob"]) for t in first_position(doc)}
    values, groups, absent = [], [], []
    for answer in choices:
        found = [top[s] for s in answer_variants(answer) if s in top]
        if not found:
            absent.append(answer)
        values.extend(found)
        groups.append(range(len(found)))
    if absent:
        raise AnswerError(f"answer(s) {', '.join(map(repr, absent))}: none of their spellings "
                          f"is among the {len(top)} returned log-probabilities "
                          f"({', '.join(map(repr, list(top)[:8]))}…); a tail is not read")
    return _answer(doc, np.array(values, dtype=np.float64), groups)


def _answer(doc: dict, values: np.ndarray, groups) -> Answer:
    prompt_tokens, completion_tokens = _usage(doc)
    return Answer(p=softmax(group_logsumexp(values, groups)),
                  mass=float(np.exp(values).sum()), prompt_tokens=prompt_tokens,
                  completion_tokens=completion_tokens, model=str(doc.get("model", "")),
                  system_fingerprint=doc.get("system_fingerprint"))


def read_answer(doc: dict, choices: Sequence[str],
                groups: Sequence[Sequence[int]] | None) -> Answer:
    """:func:`read_restricted` with the answers' ids (vLLM), else :func:`read_top`."""
    if not isinstance(doc, dict):
        raise AnswerError(f"the response is not a JSON object: {doc!r:.80}")
    return read_restricted(doc, groups, choices) if groups is not None else read_top(doc, choices)
