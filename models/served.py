"""The ``openai`` backend: a model another process serves behind an OpenAI-compatible API.

Where it sits: one of the backends the judge asks (``models.registry``); the ensemble, the
vote, calibration and the batch see a :class:`~models.base.Backend` like the in-process
ones. The weights live in a server the lab runs (``vllm serve``, SGLang, a hosted model);
this process sends each closed question as a chat completion and reads the answer from
the first token's log-probabilities (:mod:`models.chat_logprobs`).

* **Load** (:meth:`ServedBackend.load`): the endpoint must list the model (``GET /models``)
  and answer a one-token probe with log-probabilities; what it says it is (the served model
  id, vLLM's ``root``, ``system_fingerprint``: :func:`read_identity`) is pinned, and must
  equal what the version's fingerprint recorded when the judge gave it (``spec.pinned``).
  On a vLLM server the answers' token ids come from its own tokenizer (``/tokenize``,
  ``/detokenize``, through :func:`models.answers.variant_ids`).
* **Score**: every request of a call at once, at most ``max_concurrency`` in flight (one
  thread pool per loaded member, whatever calls it). Each response must come from the model
  asked (else one line: another model answered) and carry the pinned identity (else
  :class:`~models.endpoint.ServedModelChanged`: a batch stops). Each answer's token mass
  is checked against ``min_answer_mass`` (one line below it).
* **Cost**: ``usage`` × the endpoint's prices, per request (:meth:`ServedBackend.costed_score`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from models.answers import flat_ids, variant_ids
from models.base import Backend, ModelError, ScoreRequest
from models.chat_logprobs import (
    Answer,
    AnswerError,
    first_position,
    message,
    read_answer,
    request_body,
)
from models.endpoint import Endpoint, ServedClient, ServedError, ServedModelChanged

PROBE = "Reply with one word: yes or no. Is the sky blue?"


def listed(client: ServedClient) -> dict:
    """The model's card in ``GET /models``.

    Raises:
        ServedError: the server is unreachable, or does not list the model (the listed ones
            named).
    """
    doc = client.get("/models")
    cards = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(cards, list):
        raise ServedError(client.line(f"GET /models: no model list in the answer ({doc!r:.80})"))
    for card in cards:
        if isinstance(card, dict) and card.get("id") == client.endpoint.model:
            return card
    names = [str(c.get("id")) for c in cards if isinstance(c, dict)]
    raise ServedError(client.line(f"model {client.endpoint.model!r} is not listed by GET "
                                  f"/models (it lists: {', '.join(names[:10]) or 'nothing'})"))


def same_model(asked: str, answered: str) -> bool:
    """Whether a response's ``model`` is the one asked: the same name, or a dated snapshot
    the name stands for (OpenAI answers ``gpt-4o`` with ``gpt-4o-2024-08-06``)."""
    return answered == asked or answered.startswith(asked + "-")


def read_identity(client: ServedClient) -> tuple[dict, bool]:
    """What the endpoint says it serves, and whether it is vLLM.

    The model's card (``GET /models``), then a one-token text probe with log-probabilities:
    ``{"model": the answering model's id, "root": the card's root (vLLM: what it loaded),
    "system_fingerprint": …}``.

    Raises:
        ServedError: not listed, no log-probabilities, or another model answered.
    """
    ep = client.endpoint
    card = listed(client)
    vllm = ep.server == "vllm" or (ep.server == "auto" and card.get("owned_by") == "vllm")
    body = request_body(ep.model, [{"role": "user", "content": PROBE}], None, 1)
    doc = client.post("/chat/completions", body)
    try:
        first_position(doc)
    except AnswerError as exc:
        raise ServedError(client.line(f"log-probabilities not supported: {exc}")) from None
    answered = str(doc.get("model", ""))
    if not same_model(ep.model, answered):
        raise ServedError(client.line(f"asked for model {ep.model!r}, {answered!r} answered"))
    return {"model": answered, "root": card.get("root"),
            "system_fingerprint": doc.get("system_fingerprint")}, vllm


class RemoteTokenizer:
    """A vLLM server's tokenizer, as :func:`models.answers.variant_ids` reads one."""

    all_special_ids = ()  # unknown here; a token must decode back to its text anyway

    def __init__(self, client: ServedClient) -> None:
        self.client = client

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        doc = self.client.post("/tokenize", {"model": self.client.endpoint.model,
                                             "prompt": text,
                                             "add_special_tokens": add_special_tokens}, root=True)
        return [int(t) for t in doc["tokens"]]

    def decode(self, ids: Sequence[int]) -> str:
        doc = self.client.post("/detokenize", {"model": self.client.endpoint.model,
                                               "tokens": [int(i) for i in ids]}, root=True)
        return str(doc["prompt"])


class ServedBackend(Backend):
    """A member answered by an OpenAI-compatible server (``spec.endpoint``)."""

    client: ServedClient | None = None

    def load(self) -> None:
        ep = self.spec.endpoint
        if not isinstance(ep, Endpoint):
            raise ModelError(f"model {self.spec.name}: backend 'openai' needs an endpoint "
                             "(base_url, model) in its judge version entry")
        self.client = ServedClient(self.spec.name, ep)
        self.identity, self.vllm = read_identity(self.client)
        pinned = self.spec.pinned
        if pinned is not None and pinned != self.identity:
            raise ServedModelChanged(self.client.line(
                f"it serves {self.identity} but the judge version's fingerprint recorded "
                f"{pinned}: the server changed since"))
        self.pool = ThreadPoolExecutor(ep.max_concurrency, thread_name_prefix=self.spec.name)
        self._ids: dict[tuple[str, ...], tuple[tuple[int, ...], ...]] = {}
        self._lock = threading.Lock()

    def token_ids(self, choices: tuple[str, ...]) -> tuple[tuple[int, ...], ...] | None:
        """Per answer, its single-token spellings' ids on a vLLM server (cached); else None."""
        if not self.vllm:
            return None
        with self._lock:
            if choices not in self._ids:
                try:
                    self._ids[choices] = variant_ids(RemoteTokenizer(self.client), choices,
                                                     self.spec.name)
                except (KeyError, TypeError, ValueError) as exc:
                    if isinstance(exc, ServedError):
                        raise
                    raise ServedError(self.client.line(
                        f"the server's tokenizer (/tokenize): {exc}")) from None
            return self._ids[choices]

    def _body(self, req: ScoreRequest, restrict: bool = True) -> tuple[dict, tuple | None]:
        from models.processing import model_images

        ep = self.endpoint
        groups = self.token_ids(req.choices)
        images = model_images(req.frames, self.spec.max_pixels, self.spec.options)
        body = request_body(ep.model, message(images, req.prompt, ep.image_format,
                                              ep.jpeg_quality),
                            None if groups is None else flat_ids(groups),
                            ep.top_logprobs, restrict,
                            self.spec.options.get("mm_processor_kwargs"))
        return body, groups

    @property
    def endpoint(self) -> Endpoint:
        return self.spec.endpoint

    def ask(self, req: ScoreRequest, restrict: bool = True, check_mass: bool = True) -> Answer:
        """One question, one request: its answer, checked (model, identity, mass)."""
        if self.client is None:
            raise ModelError(f"model {self.spec.name}: score() before load()")
        body, groups = self._body(req, restrict)
        doc = self.client.post("/chat/completions", body)
        try:
            ans = read_answer(doc, req.choices, groups)
        except AnswerError as exc:
            raise ServedError(self.client.line(f"{req.kind or 'question'}: {exc}")) from None
        if not same_model(self.endpoint.model, ans.model):
            raise ServedError(self.client.line(f"asked for model {self.endpoint.model!r}, "
                                               f"{ans.model!r} answered"))
        now = {"model": ans.model, "system_fingerprint": ans.system_fingerprint}
        was = {k: self.identity[k] for k in now}
        if not self.endpoint.pin_system_fingerprint:
            now.pop("system_fingerprint"), was.pop("system_fingerprint")
        if now != was:
            raise ServedModelChanged(self.client.line(
                f"the served model changed: pinned {was} at load, now {now}"))
        need = self.spec.min_answer_mass
        if check_mass and ans.mass < need:
            raise ServedError(self.client.line(
                f"{req.kind or 'question'}: its answer tokens {req.choices} hold {ans.mass:.4f} "
                f"of the next-token probability, below min_answer_mass {need:g}"))
        return ans

    def costed_score(self, requests: Sequence[ScoreRequest]
                     ) -> tuple[list[np.ndarray], float, list[float]]:
        """The answers, the call's wall seconds, and each request's price (usage × prices)."""
        t0 = time.perf_counter()
        answers = list(self.pool.map(self.ask, requests))
        seconds = time.perf_counter() - t0
        return ([a.p for a in answers], seconds,
                [self.endpoint.usd(a.prompt_tokens, a.completion_tokens) for a in answers])

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        return self.costed_score(requests)[0]

    def answer_mass(self, request: ScoreRequest) -> float:
        """The raw probability of the answer tokens on ``request``: unrestricted (exact on
        vLLM, which returns every answer id; a lower bound from the top-k elsewhere)."""
        return self.ask(request, restrict=False, check_mass=False).mass

    def close(self) -> None:
        if self.client is not None:
            self.pool.shutdown(wait=True)
            self.client.close()
            self.client = None
