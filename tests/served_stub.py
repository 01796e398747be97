"""A loopback OpenAI-compatible server that answers as vLLM 0.32 does, with scripted faults.

A real HTTP server (``http.server.ThreadingHTTPServer`` in a thread) for the ``openai``
backend's tests in the main suite, where no vLLM runs. It serves what
``models.served`` reads, shaped as vLLM 0.32's ``vllm/entrypoints`` answers them:

* ``GET /v1/models``: ``{"object": "list", "data": [ModelCard]}`` (``id``, ``owned_by``
  "vllm", ``root``, ``max_model_len``: ``serve/engine/protocol.py``);
* ``POST /tokenize`` / ``/detokenize`` (``serve/tokenize/protocol.py``): a toy vocabulary in
  which every token of :data:`VOCAB` is one id and any other text one id per character;
* ``POST /v1/chat/completions`` (``chat_completion/protocol.py``, ``serving.py``): the first
  token's log-probabilities from :attr:`StubServer.logits` (token -> logit, the rest of the
  vocabulary at 0): with ``logprob_token_ids`` the sampled token then every requested id, as
  ``token_id:N`` under ``return_tokens_as_token_ids`` (raw log-softmax over the vocabulary,
  or restricted to ``allowed_token_ids`` when :attr:`processed`), else the ``top_logprobs``
  most likely tokens by text; ``usage`` counts 10 prompt tokens per image plus one per word;
  ``system_fingerprint`` :attr:`fingerprint`. Errors as vLLM's ``{"error": {"message"}}``.

Faults (:attr:`StubServer.faults`): rules ``{"model": id or "*", "when": text in the prompt or
"*", "do": ..., "times": n}`` (``times`` absent: always), where ``do`` is an HTTP status
(``{"status": 429, "retry_after": "1"}``), ``"sleep"`` (``"seconds"``), ``"no_logprobs"``,
``"not_json"``, ``"other_model"``, ``"fingerprint"`` (``"value"``) or ``"echo_auth"`` (a 500
whose message repeats the Authorization header). Every request is recorded; the most chat
requests seen in flight at once is :attr:`max_in_flight`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

VOCAB = ["yes", " yes", "Yes", " Yes", "YES", " YES", "no", " no", "No", " No", "NO", " NO",
         *[c for L in "ABCDEFGHIJKLMN" for c in (L, " " + L)], "the", " robot", " maybe", "ok"]
CHARS = [chr(c) for c in range(32, 127)]
TOKENS = VOCAB + [c for c in CHARS if c not in VOCAB]
IDS = {t: i for i, t in enumerate(TOKENS)}


def encode(text: str) -> list[int]:
    """One id for a vocabulary token, else one per character (unknown characters: '?')."""
    if text in IDS:
        return [IDS[text]]
    return [IDS.get(c, IDS["?"]) for c in text]


class StubServer:
    """The server and its script; a context manager that starts and stops it."""

    def __init__(self, models: tuple[str, ...] = ("stub-model",), owned_by: str = "vllm") -> None:
        self.models, self.owned_by = list(models), owned_by
        self.logits: dict[str, float] = {" Yes": 2.0, "yes": 1.0, "no": 0.5}
        self.processed = False  # --logprobs-mode processed_logprobs
        self.fingerprint: str | None = "vllm-0.32.0-stub0001"
        self.faults: list[dict] = []
        self.requests: list[dict] = []  # {"path", "body", "headers"}
        self.in_flight = self.max_in_flight = 0
        self.hold_until: int = 0  # chat requests wait until this many are in flight (≤ 5 s)
        self.lock = threading.Condition()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> StubServer:
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def chat_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"] == "/v1/chat/completions"]

    # --- answers -----------------------------------------------------------------------
    def fault(self, model: str, prompt: str) -> dict | None:
        with self.lock:
            for rule in self.faults:
                if rule.get("model", "*") not in ("*", model):
                    continue
                if rule.get("when", "*") != "*" and rule["when"] not in prompt:
                    continue
                if "times" in rule:
                    if rule["times"] <= 0:
                        continue
                    rule["times"] -= 1
                return rule
        return None

    def logprobs(self) -> np.ndarray:
        z = np.array([self.logits.get(t, 0.0) for t in TOKENS], dtype=np.float64)
        return z - np.log(np.exp(z - z.max()).sum()) - z.max()

    def completion(self, body: dict, model: str) -> dict:
        raw = self.logprobs()
        allowed = body.get("allowed_token_ids")
        values = raw
        if allowed and self.processed:
            mask = np.full(len(TOKENS), -np.inf)
            mask[allowed] = raw[allowed]
            values = mask - np.log(np.exp(mask[allowed]).sum())
        pool = allowed or range(len(TOKENS))
        sampled = max(pool, key=lambda i: values[i])
        as_ids = body.get("return_tokens_as_token_ids")

        def entry(i: int) -> dict:
            tok = f"token_id:{i}" if as_ids else TOKENS[i]
            return {"token": tok, "logprob": max(float(values[i]), -9999.0),
                    "bytes": list(tok.encode())}

        if body.get("logprob_token_ids"):
            order = list(dict.fromkeys([sampled, *body["logprob_token_ids"]]))
        else:
            k = int(body.get("top_logprobs") or 0)
            order = sorted(range(len(TOKENS)), key=lambda i: -values[i])[:k]
        messages = body.get("messages", [])
        content = messages[0]["content"] if messages else ""
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        images = sum(p.get("type") == "image_url" for p in parts)
        words = sum(len(p.get("text", "").split()) for p in parts)
        return {
            "id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": TOKENS[sampled]},
                         "logprobs": {"content": [{**entry(sampled),
                                                   "top_logprobs": [entry(i) for i in order]}]}
                         if body.get("logprobs") else None,
                         "finish_reason": "length", "stop_reason": None}],
            "system_fingerprint": self.fingerprint,
            "usage": {"prompt_tokens": 10 * images + words, "completion_tokens": 1,
                      "total_tokens": 10 * images + words + 1}}


def _prompt_text(body: dict) -> str:
    out = []
    for m in body.get("messages", []):
        c = m.get("content")
        out += [c] if isinstance(c, str) else [p.get("text", "") for p in c or []]
    return "\n".join(out)


def _handler(stub: StubServer):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def send(self, status: int, doc, headers: dict | None = None) -> None:
            data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def error(self, status: int, message: str, headers: dict | None = None) -> None:
            self.send(status, {"error": {"message": message, "type": "BadRequestError",
                                         "param": None, "code": status}}, headers)

        def record(self, body) -> None:
            with stub.lock:
                stub.requests.append({"path": self.path, "body": body,
                                      "headers": dict(self.headers)})

        def do_GET(self) -> None:
            self.record(None)
            if self.path == "/v1/models":
                self.send(200, {"object": "list", "data": [
                    {"id": m, "object": "model", "created": int(time.time()),
                     "owned_by": stub.owned_by, "root": f"/models/{m}", "parent": None,
                     "max_model_len": 1024, "permission": []} for m in stub.models]})
            else:
                self.error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            self.record(body)
            if body.get("model") not in stub.models:
                self.error(404, f"The model `{body.get('model')}` does not exist.")
            elif self.path == "/tokenize":
                toks = encode(body["prompt"])
                self.send(200, {"count": len(toks), "max_model_len": 1024, "tokens": toks})
            elif self.path == "/detokenize":
                self.send(200, {"prompt": "".join(TOKENS[i] for i in body["tokens"])})
            elif self.path == "/v1/chat/completions":
                self.chat(body)
            else:
                self.error(404, f"no route {self.path}")

        def chat(self, body: dict) -> None:
            with stub.lock:
                stub.in_flight += 1
                stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                stub.lock.notify_all()
                stub.lock.wait_for(lambda: stub.in_flight >= stub.hold_until, timeout=5)
            try:
                self.answer(body)
            finally:
                with stub.lock:
                    stub.in_flight -= 1

        def answer(self, body: dict) -> None:
            model = body["model"]
            rule = stub.fault(model, _prompt_text(body))
            do = rule and rule["do"]
            if isinstance(do, dict):
                headers = {"Retry-After": do["retry_after"]} if "retry_after" in do else None
                return self.error(do["status"], f"scripted HTTP {do['status']}", headers)
            if do == "sleep":
                time.sleep(rule["seconds"])
            if do == "echo_auth":
                return self.error(500, f"bad header {self.headers.get('Authorization')}")
            if do == "not_json":
                return self.send(200, b"<html>gateway</html>")
            doc = stub.completion(body, model)
            if do == "no_logprobs":
                doc["choices"][0]["logprobs"] = None
            elif do == "other_model":
                doc["model"] = "someone-else"
            elif do == "fingerprint":
                doc["system_fingerprint"] = rule["value"]
            self.send(200, doc)

    return Handler
