"""Intake: manifest parsing, hashing, the bundle hash, and every missing attribution field."""

from __future__ import annotations

import hashlib
import json
import shutil

import fsspec
import pytest

from judge.bundle.intake import intake, missing_attribution, validate_attribution
from judge.bundle.manifest import FileEntry, bundle_hash, write_manifest
from judge.errors import AttributionError, HashMismatchError, JudgeError, ManifestError

# the eleven attribution leaves of the spec's request example, in its order
ALL_FIELDS = ["policy.vendor", "policy.name", "policy.version", "policy.checkpoint", "body.arm",
              "body.hand", "body.dof", "body.mount_h_mm", "body.calibrated_at", "task.id",
              "task.tier"]


def full_request() -> dict:
    return {
        "policy": {"vendor": "example-lab", "name": "policy-a", "version": "6.0.2",
                   "checkpoint": "sha256:9f3c"},
        "body": {"arm": "xArm7", "hand": "WujiHand2", "dof": 20, "mount_h_mm": 740,
                 "calibrated_at": "2026-09-16"},
        "task": {"id": "tabletop.pick_place.mug_022", "tier": "A"},
        "env": {"lighting_k": 4200, "clutter": 3, "friction_mu": 0.42},
        "seed": "0x5F3A9C21",
    }


def test_bundle_hash_is_sha256_of_sorted_path_lines():
    a = FileEntry(path="b.mcap", sha256="1" * 64, size=1)
    b = FileEntry(path="a.json", sha256="2" * 64, size=2)
    text = f"a.json:{'2' * 64}\nb.mcap:{'1' * 64}\n"
    assert bundle_hash([a, b]) == hashlib.sha256(text.encode()).hexdigest()
    assert bundle_hash([b, a]) == bundle_hash([a, b])


def test_intake_verifies_a_synthetic_bundle(bundle_copy):
    bundle = intake(str(bundle_copy))
    assert [f.path for f in bundle.manifest.files] == ["attribution.json", "rollout.mcap"]
    mcap = bundle_copy / "rollout.mcap"
    assert bundle.manifest.file("rollout.mcap").sha256 == hashlib.sha256(
        mcap.read_bytes()).hexdigest()
    assert bundle.attribution.task.id.startswith("tabletop.pick_place.")
    assert bundle.sidecars == {}


def test_flipped_byte_names_file_and_both_hashes(bundle_copy):
    mcap = bundle_copy / "rollout.mcap"
    listed = hashlib.sha256(mcap.read_bytes()).hexdigest()
    data = bytearray(mcap.read_bytes())
    data[len(data) // 2] ^= 0xFF
    mcap.write_bytes(bytes(data))
    actual = hashlib.sha256(bytes(data)).hexdigest()
    with pytest.raises(HashMismatchError) as err:
        intake(str(bundle_copy))
    msg = str(err.value)
    assert "rollout.mcap: sha256 mismatch" in msg
    assert f"file has {actual}" in msg and f"manifest.json says {listed}" in msg
    assert isinstance(err.value, ValueError) and isinstance(err.value, JudgeError)


def test_size_mismatch_and_missing_file(bundle_copy):
    size = (bundle_copy / "attribution.json").stat().st_size
    with open(bundle_copy / "attribution.json", "a") as f:
        f.write(" ")
    with pytest.raises(HashMismatchError, match=rf"attribution.json: size {size + 1} bytes, "
                                                rf"manifest.json says {size}"):
        intake(str(bundle_copy))
    (bundle_copy / "attribution.json").unlink()
    with pytest.raises(HashMismatchError, match="attribution.json: listed in manifest.json but "
                                                "missing"):
        intake(str(bundle_copy))


def test_bundle_hash_mismatch(bundle_copy):
    path = bundle_copy / "manifest.json"
    manifest = json.loads(path.read_text())
    good = manifest["bundle_hash"]
    manifest["bundle_hash"] = "0" * 64
    path.write_text(json.dumps(manifest))
    with pytest.raises(HashMismatchError, match=f"bundle_hash mismatch: files give {good}, "
                                                f"manifest.json says {'0' * 64}"):
        intake(str(bundle_copy))


@pytest.mark.parametrize(("edit", "match"), [
    (lambda m: "{not json", r"manifest.json: not valid JSON"),
    (lambda m: {**m, "format_version": 2}, r"format_version: Input should be 1"),
    (lambda m: {**m, "files": []}, r"files: .*at least 1 item"),
    (lambda m: {**m, "files": [{**m["files"][0], "path": "../x"}]}, r"must be a normalised"),
    (lambda m: {**m, "files": [m["files"][0], m["files"][0]]}, r"listed twice"),
    (lambda m: {k: v for k, v in m.items() if k != "bundle_hash"}, r"bundle_hash: Field required"),
])
def test_bad_manifest(bundle_copy, edit, match):
    path = bundle_copy / "manifest.json"
    out = edit(json.loads(path.read_text()))
    path.write_text(out if isinstance(out, str) else json.dumps(out))
    with pytest.raises(ManifestError, match=match):
        intake(str(bundle_copy))


def test_missing_manifest(tmp_path):
    with pytest.raises(ManifestError, match="manifest.json not found"):
        intake(str(tmp_path))


def test_every_missing_field_is_named_in_config_order():
    with pytest.raises(AttributionError) as err:
        validate_attribution({})
    assert err.value.missing == ALL_FIELDS
    assert str(err.value) == "request: missing 11 required attribution field(s): " + ", ".join(
        ALL_FIELDS)


def test_some_missing_fields_empty_values_count_as_missing():
    req = full_request()
    del req["policy"]["checkpoint"]
    req["body"]["calibrated_at"] = ""
    req["body"]["dof"] = ""
    req["task"]["tier"] = "   "
    req["body"]["mount_h_mm"] = None
    assert missing_attribution(req) == ["policy.checkpoint", "body.dof", "body.mount_h_mm",
                                        "body.calibrated_at", "task.tier"]
    with pytest.raises(AttributionError, match=r"missing 5 required attribution field\(s\): "
                                               r"policy.checkpoint, body.dof, body.mount_h_mm, "
                                               r"body.calibrated_at, task.tier$"):
        validate_attribution(req)


def test_a_request_without_body_dof_is_refused_naming_it():
    req = full_request()
    del req["body"]["dof"]
    with pytest.raises(AttributionError, match=r"^request: missing 1 required attribution "
                                               r"field\(s\): body.dof$"):
        validate_attribution(req)


def test_body_dof_zero_is_present_and_env_seed_are_optional_but_kept():
    req = full_request()
    req["body"]["dof"] = 0
    req["body"]["mount_h_mm"] = 0
    assert missing_attribution(req) == []
    a = validate_attribution(req)
    assert (a.body.dof, a.body.mount_h_mm) == (0, 0.0)
    assert a.env == {"lighting_k": 4200, "clutter": 3, "friction_mu": 0.42}
    assert a.seed == "0x5F3A9C21"
    del req["env"], req["seed"]
    a = validate_attribution(req)
    assert (a.env, a.seed) == (None, None)


def test_seed_zero_is_present_and_request_shape_validates():
    req = full_request()
    req["seed"] = 0
    attribution = validate_attribution(req)
    assert attribution.seed == 0 and attribution.body.dof == 20


def test_request_attribution_replaces_bundle_file(bundle_copy):
    req = full_request()
    assert intake(str(bundle_copy), request=req).attribution.policy.name == "policy-a"
    del req["task"]
    with pytest.raises(AttributionError, match=r"task.id, task.tier$"):
        intake(str(bundle_copy), request=req)


def test_bundle_attribution_file_missing_fields(bundle_copy):
    path = bundle_copy / "attribution.json"
    data = json.loads(path.read_text())
    del data["policy"]["vendor"], data["body"]["hand"]
    path.write_text(json.dumps(data))
    write_manifest(bundle_copy, ["attribution.json", "rollout.mcap"])
    with pytest.raises(AttributionError, match=r"attribution.json: missing 2 required "
                                               r"attribution field\(s\): policy.vendor, body.hand"):
        intake(str(bundle_copy))


def test_fsspec_uri(bundle_copy):
    fs = fsspec.filesystem("memory")
    for p in bundle_copy.iterdir():
        fs.pipe(f"/rcjudge-test/{p.name}", p.read_bytes())
    try:
        bundle = intake("memory://rcjudge-test")
        assert bundle.bundle_hash == intake(str(bundle_copy)).bundle_hash
        assert bundle.mcap_path == "/rcjudge-test/rollout.mcap"
    finally:
        fs.rm("/rcjudge-test", recursive=True)


def test_bundle_hash_does_not_depend_on_location(bundle_copy, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(bundle_copy, other)
    assert intake(str(other)).bundle_hash == intake(str(bundle_copy)).bundle_hash
