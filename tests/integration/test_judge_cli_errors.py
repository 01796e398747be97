"""`rcjudge judge A B C`: every bundle it can is judged, each failure is one stderr line,
exit 1 when any failed; every bundle passes intake before a model loads."""

from __future__ import annotations

import hashlib
import json
import random
import shutil

import pytest
import yaml

from judge.bundle.manifest import write_manifest
from models.fake import FakeBackend
from rcjudge.cli import main

MAGIC = "89 4d 43 41 50 30 0d 0a"
SCRIPT = {"attempt": 0.9, "success": 0.8}


def version_file(tmp_path, name: str, backend: str = "fake") -> str:
    """Three fake models, or (``transformers``) three models whose checkpoints do not exist."""
    models = [{"name": f"m{i}", "backend": "fake", "options": {"script": SCRIPT}}
              if backend == "fake" else
              {"name": f"m{i}", "backend": backend, "path": str(tmp_path / "no-models" / f"m{i}")}
              for i in range(3)]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "models": models}))
    return str(path)


@pytest.fixture
def bundles(make_bundles, tmp_path):
    """Three good bundles and three bad ones: a flipped byte, an MCAP of random bytes, a file."""
    good = [str(p) for p in make_bundles(3, seed=13, width=96, height=64, fps=5)]
    flipped = tmp_path / "flipped"
    shutil.copytree(good[0], flipped)
    mcap = flipped / "rollout.mcap"
    listed = hashlib.sha256(mcap.read_bytes()).hexdigest()
    data = bytearray(mcap.read_bytes())
    data[999] ^= 0xFF
    mcap.write_bytes(bytes(data))
    actual = hashlib.sha256(bytes(data)).hexdigest()
    junk = tmp_path / "junk"
    shutil.copytree(good[1], junk)
    noise = random.Random(1).randbytes(4000)
    (junk / "rollout.mcap").write_bytes(noise)
    write_manifest(junk, ["attribution.json", "rollout.mcap"])
    loose = tmp_path / "loose.mcap"
    loose.write_bytes(noise)
    errors = {
        "flipped": f"rcjudge: error: {flipped}: {mcap}: sha256 mismatch: file has {actual}, "
                   f"manifest.json says {listed}",
        "junk": f"rcjudge: error: {junk}: {junk}/rollout.mcap: not an MCAP file: it starts with "
                f"bytes {noise[:8].hex(' ')}, expected the MCAP magic {MAGIC}",
        "loose": f"rcjudge: error: {loose}: is a file, not a bundle folder (a folder holding "
                 "manifest.json)",
    }
    return good, {"flipped": str(flipped), "junk": str(junk), "loose": str(loose)}, errors


def test_judges_the_good_reports_each_bad_and_exits_1(bundles, tmp_path, capsys):
    good, bad, errors = bundles
    args = ["judge", good[0], bad["flipped"], good[1], bad["junk"], bad["loose"], good[2],
            "--judge", version_file(tmp_path, "fake-cli")]
    assert main([*args, "--json"]) == 1
    out, err = capsys.readouterr()
    assert [j["bundle_uri"] for j in json.loads(out)] == good
    assert all(j["success"] is True for j in json.loads(out))
    # intake and the MCAP read refuse all three before any model loads, in argument order
    assert err == f"{errors['flipped']}\n{errors['junk']}\n{errors['loose']}\n"

    assert main(args) == 1
    out, err = capsys.readouterr()
    rows = out.splitlines()
    assert rows[0].split() == ["bundle", "attempt", "success", "failure_class", "att.conf",
                               "suc.conf", "ms"]
    assert [r.split()[:3] for r in rows[2:]] == [[g.rsplit("/", 1)[1], "true", "true"]
                                                 for g in good]
    assert err == f"{errors['flipped']}\n{errors['junk']}\n{errors['loose']}\n"


def test_all_good_exits_0(bundles, tmp_path, capsys):
    good, _, _ = bundles
    assert main(["judge", *good, "--judge", version_file(tmp_path, "fake-ok"), "--json"]) == 0
    out, err = capsys.readouterr()
    assert len(json.loads(out)) == 3 and err == ""


def test_bad_bundles_are_refused_before_any_model_loads(bundles, tmp_path, capsys):
    good, bad, errors = bundles
    missing = version_file(tmp_path, "missing-models", "transformers")
    # every bundle fails intake: no model is loaded, so the missing checkpoints never matter
    assert main(["judge", bad["flipped"], bad["loose"], "--judge", missing, "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == []
    assert err == f"{errors['flipped']}\n{errors['loose']}\n"
    # an MCAP that is not one is named before the models load (issue 28 item 7)
    assert main(["judge", bad["junk"], "--judge", missing, "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == [] and err == f"{errors['junk']}\n"
    # one bundle passes intake: the bad one is reported first, then the models cannot load
    assert main(["judge", bad["flipped"], good[0], "--judge", missing]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"{errors['flipped']}\nrcjudge: error: model 'm0': no checkpoint folder at "
                   f"{tmp_path / 'no-models' / 'm0'}\n")


def test_intake_once_per_bundle_all_before_loading_and_models_closed(bundles, tmp_path, capsys,
                                                                       monkeypatch):
    import judge.ensemble.judge as judge_module

    good, bad, _ = bundles
    events: list[str] = []
    real_intake, real_load = judge_module.intake, FakeBackend.load

    def intake(uri, request=None):
        events.append(f"intake {uri}")
        return real_intake(uri, request)

    def load(self):
        events.append(f"load {self.spec.name}")
        real_load(self)

    monkeypatch.setattr(judge_module, "intake", intake)
    monkeypatch.setattr(FakeBackend, "load", load)
    monkeypatch.setattr(FakeBackend, "close", lambda self: events.append(f"close {self.spec.name}"),
                        raising=False)
    uris = [good[0], bad["junk"], bad["flipped"], good[1]]
    assert main(["judge", *uris, "--judge", version_file(tmp_path, "fake-spy")]) == 1
    capsys.readouterr()
    assert events == [*(f"intake {u}" for u in uris), "load m0", "load m1", "load m2",
                      "close m0", "close m1", "close m2"]
