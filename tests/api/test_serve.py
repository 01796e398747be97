"""``rcjudge serve``: the Judge API, plus the verdict screen when given its inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from judge.api.server import free_port
from rcjudge.cli import build_parser, main
from rcjudge.serve import build

ROOT = Path(__file__).resolve().parents[2]
CARDS = ROOT / "tests" / "unit" / "verdict" / "data" / "verdict_cards.seed.json"


def _built(argv: list[str]):
    return build(build_parser().parse_args(["serve", *argv]))


def test_serve_with_screen_inputs_serves_both_from_one_app(tmp_path):
    app, service = _built(["--db", f"sqlite:///{tmp_path / 'a.db'}", "--cards", str(CARDS)])
    try:
        key = service.create_key("s", "live", ["usage:read"])[0]
        with TestClient(app) as c:
            page = c.get("/")
            assert page.status_code == 200 and page.headers["content-type"].startswith(
                "text/html")
            cards = c.get("/api/cards").json()
            assert cards["current"] == json.loads(CARDS.read_text()) and cards["previous"] is None
            assert c.get("/healthz").json() == {"status": "ok"}
            me = c.get("/v1/keys/me", headers={"Authorization": f"Bearer {key}"})
            assert (me.status_code, me.json()["name"]) == (200, "s")
            spec = c.get("/openapi.json").json()
            # the screen's paths stay out of the API's schema: still 25 operations
            assert not {"/", "/api/cards", "/api/checks", "/healthz"} & set(spec["paths"])
            assert sum(len(v) for v in spec["paths"].values()) == 25
            # an unknown path is still the API's problem document
            gone = c.get("/nope")
            assert gone.status_code == 404
            assert gone.headers["content-type"] == "application/problem+json"
    finally:
        service.close()


def test_serve_without_screen_inputs_is_the_api_alone(tmp_path):
    app, service = _built(["--db", f"sqlite:///{tmp_path / 'b.db'}"])
    try:
        with TestClient(app) as c:
            assert c.get("/").status_code == 404
            assert c.get("/api/cards").status_code == 404
            assert c.get("/v1/taxonomy").status_code == 401
    finally:
        service.close()


def test_no_api_serves_the_screen_alone_and_opens_no_database(tmp_path, monkeypatch):
    monkeypatch.setenv("RCJUDGE_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("RCJUDGE_DB", raising=False)
    app, service = _built(["--no-api"])  # the empty screen, as bare `rcjudge serve` was
    assert service is None
    with TestClient(app) as c:
        assert c.get("/api/cards").json() == {"current": None, "previous": None}
        assert c.get("/v1/taxonomy").status_code == 404
    assert not (tmp_path / "data").exists()


def test_bad_serve_input_exits_2_and_creates_no_database(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RCJUDGE_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("RCJUDGE_DB", raising=False)
    assert main(["serve", "--evaluation-run", str(tmp_path / "e.csv")]) == 2
    assert capsys.readouterr().err == ("rcjudge: error: rcjudge serve: missing --task-spec, "
                                       "--dataset-index, --artifact\n")
    assert main(["serve", "--no-api", "--db", "sqlite:///x.db"]) == 2
    assert capsys.readouterr().err == (
        "rcjudge: 'serve --no-api' is now 'serve --only screen'; the old spelling goes in the "
        "next release\nrcjudge: error: --db: the Judge API's database; not used with --no-api\n")
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("command", [["serve"], ["api", "serve"]])
def test_serve_answers_on_its_port(tmp_path, command):
    db = f"sqlite:///{tmp_path / 's.db'}"
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rcjudge.cli", *command, "--db", db,
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ}, cwd=ROOT)
    try:
        for _ in range(300):
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/openapi.json")
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert r.status_code == 200 and r.json()["openapi"] == "3.1.0"
        assert httpx.get(f"http://127.0.0.1:{port}/v1/usage").status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=10)
