"""rcjudge keys create|list|revoke and rcjudge api serve, as a person runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx

from judge.api.server import free_port


def cli(*args, check=True):
    out = subprocess.run([sys.executable, "-m", "rcjudge.cli", *args], capture_output=True,
                         text=True)
    if check:
        assert out.returncode == 0, out.stderr
    return out


def test_keys_create_list_revoke(tmp_path):
    db = f"sqlite:///{tmp_path / 'k.db'}"
    made = json.loads(cli("keys", "create", "--db", db, "--name", "ci", "--mode", "test",
                          "--rights", "usage:read,runs:read", "--json").stdout)
    assert made["key"].startswith("rck_test_") and made["mode"] == "test"
    assert made["rights_granted"] == ["runs:read", "usage:read"]
    listed = json.loads(cli("keys", "list", "--db", db, "--json").stdout)
    assert [(k["key_id"], k["revoked_at"]) for k in listed] == [(made["key_id"], None)]
    assert made["key"] not in cli("keys", "list", "--db", db).stdout
    out = json.loads(cli("keys", "revoke", "--db", db, made["key_id"], "--json").stdout)
    assert out == {"key_id": made["key_id"], "revoked": True, "changed": True}
    assert json.loads(cli("keys", "list", "--db", db, "--json").stdout)[0]["revoked_at"]
    bad = cli("keys", "create", "--db", db, "--name", "x", "--rights", "root", check=False)
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr.startswith("rcjudge: error: --rights: rights_granted: unknown right(s): "
                                 "root; known: ")
    gone = cli("keys", "revoke", "--db", db, "key_nope", check=False)
    assert (gone.returncode, gone.stderr) == (2, "rcjudge: error: key 'key_nope': no such key\n")
    assert len(json.loads(cli("keys", "list", "--db", db, "--json").stdout)) == 1


def test_api_serve_answers_on_its_port(tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    key = json.loads(cli("keys", "create", "--db", db, "--name", "s", "--json").stdout)["key"]
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rcjudge.cli", "api", "serve", "--db", db,
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ})
    try:
        for _ in range(300):
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/v1/keys/me",
                              headers={"Authorization": f"Bearer {key}"})
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert r.status_code == 200 and r.json()["name"] == "s"
        spec = httpx.get(f"http://127.0.0.1:{port}/openapi.json").json()
        assert spec["openapi"] == "3.1.0" and len(spec["webhooks"]) == 4
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_tier_b_designation_is_the_operators(tmp_path):
    db = f"sqlite:///{tmp_path / 't.db'}"
    out = cli("api", "tier-b", "metaworld.pick_place", "metaworld.drawer_open", "--db", db,
              "--json")
    assert json.loads(out.stdout) == {"designated": 2, "tasks": 2, "mode": "live", "keys": []}
    key = json.loads(cli("keys", "create", "--db", db, "--name", "lab", "--json").stdout)
    again = cli("api", "tier-b", "metaworld.pick_place", "--db", db, "--key", key["key_id"],
                "--json")
    assert json.loads(again.stdout) == {"designated": 0, "tasks": 1, "mode": "live",
                                        "keys": [key["key_id"]]}
    wrong = cli("api", "tier-b", "metaworld.pick_place", "--db", db, "--key", key["key_id"],
                "--mode", "test", check=False)
    assert (wrong.returncode, wrong.stdout, wrong.stderr) == (2, "", (
        f"rcjudge: error: --key: key {key['key_id']!r}: no such key in test mode\n"))
