"""`rcjudge batch BAGS --mapping FILE`: ROS bags imported in the prepare workers on a real
local Ray, cached by content, judged; a bad bag is one failure record and the batch goes on."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from bench.rosbag import mapping, write_bag

FAKE = {"name": "fake-bags", "models": [
    {"name": n, "backend": "fake", "options": {"script": {"attempt": 0.9, "success": 0.8}}}
    for n in "abc"]}
SECONDS, FPS, W, H = 3, 10, 96, 64
WRIST = "/wrist/image_raw/compressed"


@pytest.fixture(scope="module")
def bags(tmp_path_factory) -> dict[str, Path]:
    """A folder of four bags: a ROS 2 bag folder and a lone .mcap that import, one without
    its wrist camera, one truncated; the mapping beside it."""
    root = tmp_path_factory.mktemp("bags")
    folder = root / "bags"
    folder.mkdir()
    write_bag(folder / "alpha", "compressed_image", SECONDS, 3, W, H, FPS, seed=1)
    write_bag(root / "beta", "compressed_image", SECONDS, 3, W, H, FPS, seed=2)
    shutil.move(root / "beta" / "beta.mcap", folder / "beta.mcap")  # a lone .mcap
    write_bag(folder / "gamma", "compressed_image", SECONDS, 2, W, H, FPS, seed=3)  # no wrist
    write_bag(folder / "delta", "compressed_image", SECONDS, 3, W, H, FPS, seed=4)
    mcap = folder / "delta" / "delta.mcap"
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size // 2])  # truncated mid-chunk
    path = root / "mapping.yaml"
    path.write_text(yaml.safe_dump(mapping("compressed_image", 3)))
    return {"folder": folder, "mapping": path, "fake": _version(root)}


def _version(root: Path) -> Path:
    path = root / "fake-bags.yaml"
    path.write_text(yaml.safe_dump(FAKE))
    return path


@pytest.fixture(scope="module")
def local_ray():
    import ray

    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _batch(bags, cache: Path, ledger):
    from judge.batch.bags import bag_cache, resolve_bags
    from judge.batch.run import run_batch
    from judge.ensemble.version import load_judge_version

    return run_batch([], load_judge_version(str(bags["fake"])), ledger, progress=False,
                     bags=resolve_bags(str(bags["folder"])),
                     bag_import=bag_cache(cache, bags["mapping"]))


def test_a_folder_of_bags_lists_every_entry_and_one_of_no_bags_is_refused(bags, tmp_path,
                                                                          monkeypatch):
    from judge.batch.bags import resolve_bags
    from judge.batch.sources import SourceError

    folder = bags["folder"]
    (folder / ".hidden").write_text("x")
    expected = [str(folder / n) for n in ("alpha", "beta.mcap", "delta", "gamma")]
    try:
        assert resolve_bags(str(folder)) == expected
        assert resolve_bags(str(folder / "beta.mcap")) == [str(folder / "beta.mcap")]
        monkeypatch.chdir(folder.parent)  # relative in, absolute out: workers start elsewhere
        assert resolve_bags("bags") == expected
        listing = tmp_path / "bags.txt"
        listing.write_text(f"# tonight\n\n{folder / 'gamma'}\n../{tmp_path.name}/x.bag\n")
        assert resolve_bags(str(listing)) == [str(folder / "gamma"),
                                              str(tmp_path / f"../{tmp_path.name}/x.bag")]
    finally:
        (folder / ".hidden").unlink()
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("x")
    with pytest.raises(SourceError, match=rf"^{tmp_path / 'empty'}: no bag \(a ROS 2 bag folder "
                                          r"with metadata.yaml, a .mcap or a .bag\) found; "
                                          r"not bags: notes.txt$"):
        resolve_bags(str(tmp_path / "empty"))
    with pytest.raises(SourceError, match=r": no such bag, folder of bags or list file$"):
        resolve_bags(str(tmp_path / "gone"))


@pytest.mark.ray
@pytest.mark.slow
def test_bags_are_imported_judged_and_a_rerun_converts_nothing(bags, tmp_path, local_ray):
    from judge.ledgers.store import Ledger

    folder, cache = bags["folder"], tmp_path / "cache"
    with Ledger.open(f"sqlite:///{tmp_path / 'l.db'}") as ledger:
        s = _batch(bags, cache, ledger)
        assert (s.total, s.judged, s.skipped, len(s.failed)) == (4, 2, 0, 2)
        assert s.bags == {"bags": 4, "imported": 2, "cached": 0, "failed": 2, "bundles": 2,
                          "bundles_dir": str(cache)}
        failures = {f["uri"]: f for f in s.failed}
        assert set(failures) == {str(folder / "gamma"), str(folder / "delta")}
        assert {f["error"] for f in s.failed} == {"RosbagError"}
        # one line each, naming the bag and (where one is to blame) the topic
        assert failures[str(folder / "gamma")]["message"].startswith(
            f"{folder / 'gamma'}: topic {WRIST} (camera wrist) is not in the bag")
        assert failures[str(folder / "delta")]["message"].startswith(f"{folder / 'delta'}: ")
        assert all("\n" not in f["message"] for f in s.failed)
        assert sorted(f["bundle_uri"] for f in ledger.failures("fake-bags")) == sorted(failures)
        runs = {ledger.get_run(r).bundle_uri for r in ledger.judged_run_ids("fake-bags")}
        entries = sorted(p for p in cache.iterdir() if p.name not in ("index", "mappings"))
        assert len(entries) == 2 and not [p for p in cache.iterdir() if p.name.startswith(".")]
        assert runs == {str(e / b) for e in entries
                        for b in json.loads((e / "import.json").read_text())["bundles"]}
        for e in entries:  # each bundle's frames: 3 s at 10 fps, three cameras
            (episode,) = json.loads((e / "import.json").read_text())["episodes"]
            assert episode["frames"] == {"front": 30, "side": 30, "wrist": 30}
            assert episode["bag"] in (str(folder / "alpha"), str(folder / "beta.mcap"))
        made = {e: (e / "import.json").stat().st_mtime_ns for e in entries}

        # again: beta found by the memo before Ray is asked; alpha, touched, hashed again in a
        # worker and found by its content; neither converted, both judged already
        mcap = folder / "alpha" / "alpha.mcap"
        os.utime(mcap, ns=(mcap.stat().st_atime_ns, mcap.stat().st_mtime_ns + 10**9))
        again = _batch(bags, cache, ledger)
        assert (again.total, again.judged, again.skipped, len(again.failed)) == (4, 0, 2, 2)
        assert (again.bags["imported"], again.bags["cached"]) == (0, 2)
        assert {e: (e / "import.json").stat().st_mtime_ns for e in entries} == made


@pytest.mark.ray
@pytest.mark.slow
def test_the_cli_judges_a_folder_of_bags_into_a_dataset_and_refuses_a_bad_mapping(
        bags, tmp_path, local_ray, capsys):
    from judge.bundle.rosbag.mapping import RosbagError, load_mapping
    from rcjudge.cli import main

    db = tmp_path / "l.db"
    base = ["batch", str(bags["folder"]), "--judge", str(bags["fake"]), "--db", f"sqlite:///{db}"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**mapping("compressed_image", 3), "cameras": {"front": "/a"}}))
    with pytest.raises(RosbagError) as why:
        load_mapping(bad)
    assert main([*base, "--mapping", str(bad)]) == 2
    assert capsys.readouterr().err == f"rcjudge: error: --mapping {why.value}\n"
    assert main([*base, "--bundles-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == ("rcjudge: error: --bundles-dir: where bags' bundles go; "
                                       "it needs --mapping\n")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert main([*base, "--mapping", str(bags["mapping"]), "--bundles-dir", str(blocker)]) == 2
    assert capsys.readouterr().err == (f"rcjudge: error: --bundles-dir {blocker}: is a file; "
                                       "expected a folder\n")
    assert main([*base, "--mapping", str(bags["mapping"]), "--bundles-dir",
                 str(blocker / "below")]) == 2
    assert capsys.readouterr().err == (f"rcjudge: error: --bundles-dir {blocker / 'below'}: "
                                       "cannot be written: Not a directory\n")
    assert not db.exists()  # refused before the ledger was opened

    assert main(["datasets", "create", "lab/bags", "--db", f"sqlite:///{db}"]) == 0
    capsys.readouterr()
    cache = tmp_path / "bundles"
    assert main([*base, "--mapping", str(bags["mapping"]), "--bundles-dir", str(cache),
                 "--dataset", "lab/bags", "--json"]) == 1  # two bags failed
    out = json.loads(capsys.readouterr().out)
    assert (out["total"], out["judged"], out["failed"]) == (4, 2, 2)
    assert out["bags"] == {"bags": 4, "imported": 2, "cached": 0, "failed": 2, "bundles": 2,
                           "bundles_dir": str(cache)}
    assert out["dataset"] == {"name": "lab/bags", "sequences": 2, "labels_written": 2,
                              "labels_unchanged": 0}
    from judge.cli import format_summary

    lines = format_summary(out).splitlines()
    assert f"bags: 4 (2 imported now, 0 from the cache, 2 failed) into 2 bundle(s) in {cache}" \
        in lines
    assert sorted(ln.split(":")[0] for ln in lines if ln.startswith("  failed ")) == [
        f"  failed {bags['folder'] / 'delta'}", f"  failed {bags['folder'] / 'gamma'}"]
