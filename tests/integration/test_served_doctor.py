"""``rcjudge doctor`` on a version of served models: green against a server, red without one."""

from __future__ import annotations

import math
import socket

import yaml

from judge.ensemble.version import load_judge_version
from judge.preflight.doctor import PreflightError, refuse_on_red, run_checks
from tests.served_stub import TOKENS, StubServer


def version(tmp_path, url: str, mass: float):
    path = tmp_path / "served-doctor.yaml"
    path.write_text(yaml.safe_dump({"name": "served-doctor", "models": [
        {"name": m, "backend": "openai", "max_pixels": 4096, "min_answer_mass": mass,
         "endpoint": {"base_url": url, "model": "stub-model", "max_retries": 0}}
        for m in ("a", "b", "c")]}))
    return load_judge_version(str(path))


def served(rows) -> list[tuple[str, str, str]]:
    return [(r.name, r.status, r.detail) for r in rows
            if r.name.split()[0] in ("served", "logprobs") or r.name.startswith("answer mass")]


def test_green_rows_against_a_server(tmp_path):
    with StubServer() as stub:
        stub.logits = {" Yes": 6.0, "no": 5.0}  # most of the mass on the answers
        rows = served(run_checks(version(tmp_path, stub.url, 0.5), "doctor"))
    e = math.exp
    mass = (e(6) + 5 + e(5) + 5) / (e(6) + e(5) + len(TOKENS) - 2)
    assert rows[:3] == [
        ("served a", "ok", f"{stub.url} lists stub-model (owned_by vllm, root "
         "/models/stub-model, max_model_len 1024)"),
        ("logprobs a", "ok", "stub-model answers with log-probabilities (vLLM: restricted to "
         "the answers' token ids); system_fingerprint vllm-0.32.0-stub0001"),
        ("answer mass a", "ok", f"{mass:.4f} of the raw next-token probability on the answer "
         "tokens (>= min_answer_mass 0.5)")]
    assert [r[1] for r in rows] == ["ok"] * 9


def test_red_rows_name_the_endpoint_and_refuse_a_batch(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    v = version(tmp_path, url, 0.5)
    rows = served(run_checks(v, "doctor"))
    refused = ("model a at {url}: GET /models: cannot reach the server (ConnectError: [Errno "
               "111] Connection refused)")
    assert rows[:3] == [("served a", "fail", refused.format(url=url)),
                        ("logprobs a", "warn", "not checked: see served a"),
                        ("answer mass a", "warn", "not checked: see served a")]
    assert [r[1] for r in rows] == ["fail", "warn", "warn"] * 3
    try:
        refuse_on_red(v, "batch")
    except PreflightError as exc:
        assert str(exc) == (f"batch refused before it started: served a: "
                            f"{refused.format(url=url)} (+2 more red row(s)); see `rcjudge "
                            "doctor --judge served-doctor`")
    else:
        raise AssertionError("a batch against a server that is down must be refused")


def test_low_mass_is_red(tmp_path):
    with StubServer() as stub:
        rows = served(run_checks(version(tmp_path, stub.url, 0.5), "doctor"))
    assert rows[2][:2] == ("answer mass a", "fail")
    assert rows[2][2].startswith("0.1552 of the raw next-token probability on the answer "
                                 "tokens (< min_answer_mass 0.5)")
