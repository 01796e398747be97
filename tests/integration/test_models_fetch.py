"""``rcjudge models fetch``: the real huggingface_hub client against a stub of the hub's file
endpoints on loopback (``HF_ENDPOINT``): the tree listing ``/api/models/R/tree/REV`` and
``HEAD``/``GET /R/resolve/REV/FILE``, with the hub's headers (``X-Repo-Commit``, ``ETag``
a git blob sha1, ``X-Linked-Etag`` an LFS sha256), error codes and messages (``X-Error-Code``,
``X-Error-Message``: what ``huggingface_hub.utils.hf_raise_for_status`` maps to its errors)
and ``Range`` requests (``206``: how huggingface_hub's ``http_get`` resumes a cut download).

As the hub does, a gated repository's files are *listed* to anyone, and its model card is
served to anyone; every other file is refused: ``401`` ``GatedRepo`` without a token, ``403``
``GatedRepo`` with a token whose account has not accepted the licence (the messages the hub
sends). ``_Hub.faults`` adds a server error (``503``) or a connection closed mid-file.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urlparse

import pytest
import yaml

from judge.ensemble.fingerprint import _DigestCache, folder_digest
from rcjudge.cli import main

REV = "0123456789abcdef0123456789abcdef01234567"
OTHER = "f" * 40
# 25 MiB: huggingface_hub writes what it reads in 10 MiB chunks, so a cut after 12.5 MiB
# resumes at 10 MiB (a cut inside the first chunk restarts the file)
BIG = {"model.safetensors": bytes(range(256)) * (100 * 1024)}
REPOS = {  # repo -> file -> content; *.safetensors are LFS files
    "org/alpha": {"config.json": b'{"model_type": "alpha"}\n',
                  "model.safetensors": bytes(range(256)) * 40,
                  "tokenizer/vocab.txt": b"yes\nno\n"},
    "org/beta": {"config.json": b'{"model_type": "beta"}\n',
                 "model-00001-of-00002.safetensors": b"\x01" * 5000,
                 "model-00002-of-00002.safetensors": b"\x02" * 3000},
    "org/big": BIG,
    "org/gated": {"README.md": b"# gated\n", "config.json": b"{}\n",
                  "model.safetensors": b"\x03" * 2000},
}
GATED = {"org/gated"}
GRANTED = "hf_granted0123"  # a token whose account accepted org/gated's licence
PUBLIC = {"README.md"}  # the hub serves a gated repository's model card to anyone


def _blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class _Hub(BaseHTTPRequestHandler):
    log: ClassVar[list[tuple[str, str]]] = []
    ranges: ClassVar[list[tuple[str, str]]] = []  # (file, Range header) of each ranged GET
    #: "REPO/FILE" (or "REPO" for its listing) -> "503" (every request), "drop" (GET sends
    #: half the file, then closes: once per file), "drop-always" (closes before any byte)
    faults: ClassVar[dict[str, str]] = {}
    dropped: ClassVar[set[str]] = set()

    def log_message(self, *args) -> None:  # quiet
        pass

    def _error(self, status: int, code: str | None, message: str | None = None) -> None:
        self.send_response(status)
        if code is not None:
            self.send_header("X-Error-Code", code)
        if message is not None:
            self.send_header("X-Error-Message", message)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _gated(self, repo: str) -> bool:
        """The hub's refusal of a gated file: 401 without a token, 403 with one whose
        account is not on the authorized list."""
        auth = self.headers.get("Authorization")
        if auth == f"Bearer {GRANTED}":
            return False
        if auth is None:
            self._error(401, "GatedRepo", f"Access to model {repo} is restricted. You must have "
                        "access to it and be authenticated to access it. Please log in.")
        else:
            self._error(403, "GatedRepo", f"Access to model {repo} is restricted and you are not "
                        f"in the authorized list. Visit {self._origin()}/{repo} to ask for access.")
        return True

    def _origin(self) -> str:
        return f"http://{self.headers.get('Host')}"

    def _repo(self, repo: str, rev: str) -> dict | None:
        if repo not in REPOS:
            self._error(401, "RepoNotFound")
        elif rev != REV:
            self._error(404, "RevisionNotFound")
        else:
            return REPOS[repo]
        return None

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _serve(self, body: bool) -> None:
        path = unquote(urlparse(self.path).path)
        self.log.append((self.command, path))
        if path.startswith("/api/models/"):  # /api/models/OWNER/NAME/tree/REV
            owner, name, _, rev = path.split("/")[3:7]
            if self.faults.get(f"{owner}/{name}") == "503":
                return self._error(503, None)
            files = self._repo(f"{owner}/{name}", rev)
            if files is not None:  # a gated repository's listing too
                self._json([self._entry(p, d) for p, d in files.items()])
            return
        owner, name, _, rev, *parts = path.lstrip("/").split("/")  # OWNER/NAME/resolve/REV/F
        repo, file = f"{owner}/{name}", "/".join(parts)
        files = self._repo(repo, rev)
        if files is None:
            return
        if repo in GATED and file not in PUBLIC and self._gated(repo):
            return
        fault = self.faults.get(f"{repo}/{file}")
        if fault == "503":
            return self._error(503, None)
        data = files.get(file)
        if data is None:
            return self._error(404, "EntryNotFound")
        start = 0
        if body and (asked := self.headers.get("Range")):  # "bytes=N-": resume at N
            start = int(asked.removeprefix("bytes=").rstrip("-"))
            self.ranges.append((file, asked))
        self.send_response(206 if start else 200)
        self.send_header("X-Repo-Commit", REV)
        self.send_header("ETag", f'"{_blob_sha1(data)}"')
        if parts[-1].endswith(".safetensors"):
            self.send_header("X-Linked-Etag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("X-Linked-Size", str(len(data)))
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        if not body:
            return
        if fault == "drop-always" or (fault == "drop" and file not in self.dropped):
            self.dropped.add(file)
            self.wfile.write(data[start:start + (len(data) - start) // 2]
                             if fault == "drop" else b"")
            self.wfile.flush()
            self.close_connection = True  # the peer hangs up mid-body
            return
        self.wfile.write(data[start:])

    @staticmethod
    def _entry(path: str, data: bytes) -> dict:
        entry = {"type": "file", "path": path, "size": len(data), "oid": _blob_sha1(data)}
        if path.endswith(".safetensors"):
            entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                            "pointerSize": 134}
        return entry

    def _json(self, obj) -> None:
        raw = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def hub(monkeypatch, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Hub.log, _Hub.ranges, _Hub.faults, _Hub.dropped = [], [], {}, set()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("RCJUDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RCJUDGE_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    yield server
    server.shutdown()
    server.server_close()


def _version(tmp_path: Path, repos=("org/alpha", "org/beta", None), rev=REV) -> str:
    models = []
    for i, repo in enumerate(repos):
        entry = {"name": f"m{i}", "backend": "transformers", "path": f"{{models_dir}}/m{i}"}
        if repo is None:
            entry = {"name": f"m{i}", "backend": "fake"}  # no files: nothing to fetch
        else:
            entry.update(repo=repo, revision=rev)
        models.append(entry)
    path = tmp_path / "hubtest.yaml"
    path.write_text(yaml.safe_dump({"name": "hubtest", "models": models}))
    return str(path)


def _fetch(version: str, capsys) -> tuple[int, list, str]:
    code = main(["models", "fetch", version, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else out), err


def _gets(kind: str = "resolve") -> list[str]:
    return sorted(p.split(f"/{kind}/{REV}/")[1] for m, p in _Hub.log
                  if m == "GET" and f"/{kind}/" in p)


def test_fresh_fetch_writes_every_file_and_feeds_the_fingerprint(hub, tmp_path, capsys):
    code, reports, err = _fetch(_version(tmp_path), capsys)
    assert code == 0, err
    assert [(r["model"], r["files"], len(r["fetched"]), r["kept"], r["extra"])
            for r in reports] == [("m0", 3, 3, [], []), ("m1", 3, 3, [], [])]
    assert reports[0]["bytes_fetched"] == 24 + 10240 + 7 and reports[1]["bytes_fetched"] == 8023
    m0 = tmp_path / "models" / "m0"
    for name, data in REPOS["org/alpha"].items():
        assert (m0 / name).read_bytes() == data
    record = json.loads((m0 / ".cache" / "rcjudge" / "fetched.json").read_text())
    assert record["revision"] == REV and record["files"]["model.safetensors"] == {
        "size": 10240, "sha256": hashlib.sha256(REPOS["org/alpha"]["model.safetensors"])
        .hexdigest()}
    # the fingerprint's digest cache already holds every file: nothing is hashed twice
    cache = _DigestCache()
    for name, data in REPOS["org/alpha"].items():
        assert cache.entries[str((m0 / name).resolve())][2] == hashlib.sha256(data).hexdigest()
    lines = "".join(f"{n}:{hashlib.sha256(d).hexdigest()}\n"
                    for n, d in sorted(REPOS["org/alpha"].items()))  # .cache/ left out
    assert folder_digest(m0) == hashlib.sha256(lines.encode()).hexdigest()


def test_resumed_fetch_gets_only_the_deleted_and_the_truncated_file(hub, tmp_path, capsys):
    version = _version(tmp_path)
    assert _fetch(version, capsys)[0] == 0
    m0, m1 = tmp_path / "models" / "m0", tmp_path / "models" / "m1"
    (m0 / "model.safetensors").unlink()
    with (m1 / "model-00002-of-00002.safetensors").open("r+b") as f:
        f.truncate(1000)  # an interrupted copy
    _Hub.log = []
    code, reports, err = _fetch(version, capsys)
    assert code == 0, err
    assert _gets() == ["model-00002-of-00002.safetensors", "model.safetensors"]
    assert [sorted(r["fetched"]) for r in reports] == [["model.safetensors"],
                                                        ["model-00002-of-00002.safetensors"]]
    assert [len(r["kept"]) for r in reports] == [2, 2]
    assert (m1 / "model-00002-of-00002.safetensors").read_bytes() == b"\x02" * 3000
    (m0 / "old-shard.bin").write_bytes(b"stale")  # not in the commit: named, not deleted
    _Hub.log = []
    code, reports, _ = _fetch(version, capsys)
    assert code == 0 and _gets() == []  # complete: nothing fetched
    assert [r["extra"] for r in reports] == [["old-shard.bin"], []]
    assert (m0 / "old-shard.bin").read_bytes() == b"stale"


def test_missing_revision_is_one_line_naming_model_repo_and_revision(hub, tmp_path, capsys):
    code, out, err = _fetch(_version(tmp_path, rev=OTHER), capsys)
    assert code == 2 and out == ""
    assert err == f"rcjudge: error: model 'm0': org/alpha@{OTHER}: revision not found in the " \
                  "repository\n"


def _endpoint(hub) -> str:
    return f"http://127.0.0.1:{hub.server_port}"


def test_gated_repo_without_a_token_is_one_line(hub, tmp_path, capsys):
    """The hub lists a gated repository's files and serves its model card; the first other
    file is refused (401 GatedRepo): with force_download huggingface_hub raised a plain
    ValueError from it, a traceback."""
    code, _, err = _fetch(_version(tmp_path, repos=("org/gated", "org/beta", None)), capsys)
    assert code == 2
    assert err == (f"rcjudge: error: model 'm0': org/gated@{REV}: config.json: gated repository: "
                   f"accept its licence at {_endpoint(hub)}/org/gated and set HF_TOKEN (or `hf "
                   "auth login`)\n")
    assert ("GET", f"/api/models/org/gated/tree/{REV}") in _Hub.log  # listed to anyone
    assert (tmp_path / "models" / "m0" / "README.md").read_bytes() == b"# gated\n"


def test_gated_repo_with_a_token_not_on_its_list_is_one_line(hub, tmp_path, capsys,
                                                              monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_someone0123")
    code, _, err = _fetch(_version(tmp_path, repos=("org/gated", "org/beta", None)), capsys)
    assert code == 2
    assert err == (f"rcjudge: error: model 'm0': org/gated@{REV}: config.json: gated repository, "
                   "and the account of the token set (HF_TOKEN) is not on its authorized list: "
                   f"accept its licence at {_endpoint(hub)}/org/gated with that account\n")


def test_gated_repo_with_a_granted_token_is_fetched(hub, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", GRANTED)
    code, reports, err = _fetch(_version(tmp_path, repos=("org/gated", None, None)), capsys)
    assert code == 0, err
    assert [(r["files"], sorted(r["fetched"])) for r in reports] == [
        (3, ["README.md", "config.json", "model.safetensors"])]
    assert (tmp_path / "models" / "m0" / "model.safetensors").read_bytes() == b"\x03" * 2000


def _no_waiting(monkeypatch) -> None:
    """huggingface_hub sleeps between retries (1, 2, 4, 8, 8 s; 1 s between resumes)."""
    monkeypatch.setattr("huggingface_hub.utils._http.time.sleep", lambda s: None)
    monkeypatch.setattr("huggingface_hub.file_download.time.sleep", lambda s: None)


def test_a_file_the_hub_answers_with_503_is_one_line(hub, tmp_path, capsys, monkeypatch):
    """The HEAD once without retries, then again with huggingface_hub's 5 retries: 7 HEADs;
    with force_download the first 503 was a plain ValueError, a traceback."""
    _no_waiting(monkeypatch)
    _Hub.faults["org/alpha/model.safetensors"] = "503"
    code, _, err = _fetch(_version(tmp_path), capsys)
    assert code == 2
    assert err == (f"rcjudge: error: model 'm0': org/alpha@{REV}: model.safetensors: the hub "
                   "answered HTTP 503, also on huggingface_hub's retries; try again later "
                   "(files already complete are kept)\n")
    heads = [p for m, p in _Hub.log if m == "HEAD" and p.endswith("/model.safetensors")]
    assert len(heads) == 7


def test_a_listing_the_hub_answers_with_503_is_one_line(hub, tmp_path, capsys, monkeypatch):
    _no_waiting(monkeypatch)
    _Hub.faults["org/alpha"] = "503"
    code, _, err = _fetch(_version(tmp_path), capsys)
    assert code == 2
    assert err == (f"rcjudge: error: model 'm0': org/alpha@{REV}: the hub answered HTTP 503, "
                   "also on huggingface_hub's retries; try again later (files already complete "
                   "are kept)\n")
    assert len([p for m, p in _Hub.log if "/tree/" in p]) == 6  # once + 5 retries


def test_a_connection_dropped_mid_file_is_resumed_where_it_stopped(hub, tmp_path, capsys,
                                                                   monkeypatch):
    _no_waiting(monkeypatch)
    _Hub.faults["org/big/model.safetensors"] = "drop"  # half of 25 MiB, then closed
    code, reports, err = _fetch(_version(tmp_path, repos=("org/big", None, None)), capsys)
    assert code == 0, err
    # the first 10 MiB chunk was written; the GET resumed there, not from the start
    assert _Hub.ranges == [("model.safetensors", f"bytes={10 * 2**20}-")]
    assert (tmp_path / "models" / "m0" / "model.safetensors").read_bytes() == \
        BIG["model.safetensors"]
    assert reports[0]["bytes_fetched"] == 25 * 2**20


def test_a_connection_that_keeps_dropping_is_one_line(hub, tmp_path, capsys, monkeypatch):
    """Closed before any byte each time: huggingface_hub resumes 5 times (each try that
    receives nothing counts), then gives up: 6 GETs of the file."""
    _no_waiting(monkeypatch)
    _Hub.faults["org/alpha/model.safetensors"] = "drop-always"
    code, _, err = _fetch(_version(tmp_path), capsys)
    assert code == 2
    assert err == (f"rcjudge: error: model 'm0': org/alpha@{REV}: model.safetensors: the "
                   f"connection to {_endpoint(hub)} dropped mid-transfer (RemoteProtocolError), "
                   "also on huggingface_hub's retries; run the fetch again (files already "
                   "complete are kept)\n")
    gets = [p for m, p in _Hub.log if m == "GET" and p.endswith("/model.safetensors")]
    assert len(gets) == 6
    assert not (tmp_path / "models" / "m0" / "model.safetensors").exists()


def test_unknown_repo_is_one_line(hub, tmp_path, capsys):
    code, _, err = _fetch(_version(tmp_path, repos=("org/alpha", "org/nope", None)), capsys)
    assert code == 2
    assert err == f"rcjudge: error: model 'm1': org/nope@{REV}: repository not found (or " \
                  "private, and no token with access is set)\n"
    assert (tmp_path / "models" / "m0" / "model.safetensors").is_file()  # m0 was fetched


def test_a_hub_that_is_down_is_one_line(hub, tmp_path, capsys, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    # huggingface_hub retries 5 times over ~23 s before it gives up; the test does not wait
    monkeypatch.setattr("huggingface_hub.utils._http.time.sleep", lambda s: None)
    code, _, err = _fetch(_version(tmp_path), capsys)
    assert code == 2
    assert err == f"rcjudge: error: model 'm0': org/alpha@{REV}: hub unreachable at " \
                  f"http://127.0.0.1:{port} (ConnectError)\n"


def test_offline_is_one_line_and_asks_nothing(hub, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, _, err = _fetch(_version(tmp_path), capsys)
    assert code == 2 and _Hub.log == []
    assert err == f"rcjudge: error: model 'm0': org/alpha@{REV}: offline (HF_HUB_OFFLINE is " \
                  "set); nothing can be fetched\n"


def test_a_model_without_a_revision_is_refused_before_any_download(hub, tmp_path, capsys):
    path = Path(_version(tmp_path))
    data = yaml.safe_load(path.read_text())
    del data["models"][1]["revision"]
    path.write_text(yaml.safe_dump(data))
    code, _, err = _fetch(str(path), capsys)
    assert code == 2 and _Hub.log == []
    assert err == "rcjudge: error: model 'm1' of 'hubtest': org/beta: no revision pinned (set " \
                  "revision to a 40-hex commit of org/beta; a branch would move under the " \
                  "version)\n"


def test_rc_judge_v1_pins_every_model_at_a_commit():
    from judge.ensemble.fetch import check_pins
    from judge.ensemble.version import load_judge_version

    v1 = load_judge_version("rc-judge-v1")
    check_pins(v1)
    assert [m.repo for m in v1.models] == ["Qwen/Qwen2.5-VL-7B-Instruct",
                                           "google/gemma-3-12b-it",
                                           "HuggingFaceTB/SmolVLM2-2.2B-Instruct"]


def test_the_text_report_is_one_line_a_model(hub, tmp_path, capsys):
    version = _version(tmp_path)
    assert _fetch(version, capsys)[0] == 0
    assert main(["models", "fetch", version]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"m0               org/alpha@{REV[:12]}: 0 fetched (0.00 GB), 3 already there "
                   f"-> {tmp_path}/models/m0",
                   f"m1               org/beta@{REV[:12]}: 0 fetched (0.00 GB), 3 already there "
                   f"-> {tmp_path}/models/m1"]
