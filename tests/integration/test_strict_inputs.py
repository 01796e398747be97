"""Issue 36 item 9 at the bundle boundary: a bundle's attribution.json and manifest.json are
read by the strict JSON reader, and every error prints as one line.

Before: NaN / Infinity were stored (``{"lighting_k": Infinity}``, ``mount_h_mm`` NaN as NULL),
a repeated key silently won (tier A became B), UTF-16 with or without a BOM was read, a
50 MB ``policy.name`` was stored in the runs row, ``body.dof`` = 10**30 passed intake and
broke the ledger write (``OverflowError``); a folder name holding a newline printed as two
lines.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from judge.bundle.intake import MAX_ATTRIBUTION, intake
from judge.bundle.manifest import write_manifest
from judge.errors import ManifestError
from rcjudge.cli import main

RANGE = "[-9223372036854775808, 9223372036854775807]"


def with_attribution(bundle: Path, raw: bytes) -> Path:
    (bundle / "attribution.json").write_bytes(raw)
    write_manifest(bundle, ["attribution.json", "rollout.mcap"])
    return bundle


def sub(key: str, value: str, text: str) -> str:
    """``text`` (compact JSON) with the value of ``key`` replaced by ``value`` (raw text)."""
    out, n = re.subn(f'"{key}": ("[^"]*"|[^,}}]+)', f'"{key}": {value}', text)
    assert n == 1
    return out


def edited(bundle: Path, text_edit) -> bytes:
    return text_edit(json.dumps(json.loads((bundle / "attribution.json").read_text())))


@pytest.mark.parametrize(("edit", "line"), [
    (lambda t: sub("lighting_k", "Infinity", t),
     "not valid JSON: env.lighting_k: Infinity is not JSON (numbers must be finite)"),
    (lambda t: sub("mount_h_mm", "NaN", t),
     "not valid JSON: body.mount_h_mm: NaN is not JSON (numbers must be finite)"),
    (lambda t: sub("tier", '"A", "tier": "B"', t),
     "not valid JSON: task.tier: given twice in one object (which one counts is not "
     "defined)"),
    (lambda t: sub("dof", str(10**30), t),
     f"body.dof: integer of 31 digits is outside the 64-bit range {RANGE}"),
    (lambda t: t.encode("utf-16"), "not valid JSON: UTF-16 or UTF-32, not UTF-8 (it holds NUL "
     "bytes or a UTF-16 byte-order mark): send UTF-8"),
    (lambda t: t.encode("utf-16-le"), "not valid JSON: UTF-16 or UTF-32, not UTF-8 (it holds "
     "NUL bytes or a UTF-16 byte-order mark): send UTF-8"),
    (lambda t: t.replace('"name": "', '"name": "' + "n" * 50_000_000),
     f"more than {MAX_ATTRIBUTION} bytes (the limit)"),
])
def test_attribution_json_is_read_strictly(bundle_copy, edit, line):
    raw = edited(bundle_copy, edit)
    raw = raw if isinstance(raw, bytes) else raw.encode()
    with_attribution(bundle_copy, raw)
    with pytest.raises(ManifestError) as info:
        intake(str(bundle_copy))
    assert str(info.value) == f"{bundle_copy}/attribution.json: {line}"


def test_a_manifest_with_a_repeated_key_is_refused(bundle_copy):
    text = (bundle_copy / "manifest.json").read_text()
    m = json.loads(text)
    doubled = json.dumps(m)[:-1] + f', "bundle_hash": "{m["bundle_hash"]}"}}'
    (bundle_copy / "manifest.json").write_text(doubled)
    with pytest.raises(ManifestError, match=r"manifest.json: not valid JSON: bundle_hash: "
                       r"given twice in one object"):
        intake(str(bundle_copy))


def test_a_folder_name_with_a_newline_prints_as_one_line(bundle_copy, tmp_path, capsys):
    odd = tmp_path / "run\nrcjudge: error: forged"
    shutil.copytree(bundle_copy, odd)
    (odd / "rollout.mcap").write_bytes(b"not an mcap")
    assert main(["inspect", str(odd)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    escaped = str(odd).replace("\n", "\\n")
    assert err.startswith(f"rcjudge: error: {escaped}/rollout.mcap: ")
