"""`rcjudge explain`: the page for a bundle judged now, and for a run id from the ledger.

Real bundle (synthetic, grasp.slip), real decode, scripted (fake) backends from a judge
version file, a real SQLite ledger. The page's content is parsed back from its HTML.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from judge.ensemble.judge import Judge, prepare
from judge.ensemble.version import load_judge_version
from judge.ledgers.records import Run
from judge.ledgers.store import Ledger
from rcjudge.cli import main

SCRIPTS = [{"attempt": 0.9, "success": 0.2, "failure_class": "grasp.slip"},
           {"attempt": 0.8, "success": 0.3, "failure_class": "grasp.slip"},
           {"attempt": 0.7, "success": 0.6}]
# 16 sampled timestamps (budget 16); the questions show 8 of them: round(linspace(0, 15, 8))
SAMPLED = [0.0, 0.5, 1.0, 1.5, 2.3, 2.4, 2.5, 2.6, 2.7, 3.5, 4.1, 4.2, 4.3, 4.4, 4.5, 6.0]
SHOWN = [0.0, 1.0, 2.3, 2.5, 3.5, 4.2, 4.4, 6.0]  # indices 0, 2, 4, 6, 9, 11, 13, 15


@pytest.fixture(scope="module")
def bundle(make_bundles) -> str:
    return str(make_bundles(1, seed=3, outcome="grasp.slip", width=96, height=64, fps=10)[0])


@pytest.fixture(scope="module")
def version_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("judges") / "fake-explain.yaml"
    path.write_text(yaml.safe_dump({"name": "fake-explain", "models": [
        {"name": f"m{i}", "backend": "fake", "options": {"script": s}}
        for i, s in enumerate(SCRIPTS)]}))
    return str(path)


def frames_of(page: str, camera: str) -> list[tuple[float, bool]]:
    block = page.split(f"data-camera='{camera}'>", 1)[1].split("</div>\n<h3>", 1)[0]
    return [(float(t), "shown" in cls)
            for cls, t in re.findall(r"<div class='(frame[^']*)' data-t='([0-9.]+)'>", block)]


def check_page(page: str, judgment) -> None:
    assert page.startswith("<!doctype html>") and page.count("<img ") == 3 * 16
    assert "http" not in page.split("</style>", 1)[1]  # self-contained: nothing fetched
    for cam in ("front", "side", "top"):
        assert frames_of(page, cam) == [(t, t in SHOWN) for t in SAMPLED]
    # the question number the models saw each shown frame under
    assert [n for n in re.findall(r"#(\d+) · ", page)][:8] == [str(i) for i in range(1, 9)]
    # contacts: a grasp at 2.53 s, a slip at 4.33 s, marked on all three plots
    assert re.findall(r"<tr class='contact'><td>(\w+)</td><td class='num'>([0-9.]+)", page) == [
        ("grasp", "2.530"), ("slip", "4.330")]
    assert page.count("class=\"event event-grasp\" data-t=\"2.530\"") == 3
    assert page.count("class=\"event event-slip\" data-t=\"4.330\"") == 3
    assert page.count('<rect class="window"') == 3 * 2  # two dense windows a plot
    rows = re.findall(r"<tr><td>(m\d)</td><td class='num'>([0-9.]+)</td><td class='num'>"
                      r"[0-9.]+</td><td class='num'>([0-9.]+)</td><td class='num'>[0-9.]+</td>"
                      r"<td>([^<]+)</td><td>([^<]+)</td>", page)
    assert rows == [("m0", "0.900", "0.200", "grasp", "grasp.slip"),
                    ("m1", "0.800", "0.300", "grasp", "grasp.slip"),
                    ("m2", "0.700", "0.600", "—", "—")]
    assert judgment.failure_class == "grasp.slip" and not judgment.success
    assert (f"attempt <b class='yes'>yes</b> (confidence {judgment.attempt_confidence:.3f}) "
            f"· success <b class='no'>no</b> (confidence {judgment.success_confidence:.3f}) "
            "· failure class <code>grasp.slip</code>") in page


def test_explain_bundle_judged_now(bundle, version_file, tmp_path, capsys):
    out = tmp_path / "page" / "explain.html"
    assert main(["explain", bundle, "--judge", version_file, "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["judgment"], summary["sampled"], summary["shown"]) == ("judged now", 16, 8)
    assert [c["kind"] for c in summary["contacts"]] == ["grasp", "slip"]
    judge = Judge(load_judge_version(version_file))
    check_page(out.read_text(encoding="utf-8"), judge.judge(bundle))
    assert [p.name for p in out.parent.iterdir()] == ["explain.html"]  # no temporary left


def test_explain_run_id_from_the_ledger(bundle, version_file, tmp_path, capsys):
    version = load_judge_version(version_file)
    judge = Judge(version)
    p = prepare(bundle, version)
    judgment = judge.judge_prepared(p)
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    with Ledger.open(db) as ledger:
        ledger.record(Run(run_id=p.run_id, bundle_uri=p.uri, bundle_hash=p.bundle_hash,
                          attribution=p.attribution, duration_s=p.duration_s,
                          cycle_sec=p.cycle_sec), judgment)
    out = tmp_path / "run.html"
    assert main(["explain", p.run_id, "--judge", version_file, "--db", db,
                 "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"{out}: run {p.run_id} by fake-explain (ledger)")
    check_page(out.read_text(encoding="utf-8"), judgment)
    # a run the ledger has, but not by this version; a name that is neither
    other = tmp_path / "tiny.yaml"
    other.write_text(Path(version_file).read_text().replace("fake-explain", "tiny"))
    assert main(["explain", p.run_id, "--judge", str(other), "--db", db,
                 "--out", str(tmp_path / "x.html")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"rcjudge: error: run {p.run_id}: no judgment by judge version 'tiny' "
        "(judged by: fake-explain)")
    assert main(["explain", "no-such-run", "--judge", version_file, "--db", db,
                 "--out", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "rcjudge: error: no-such-run: neither a bundle path nor a run id in the ledger sqlite:")
    assert not (tmp_path / "x.html").exists()


def test_annotations_mcap_for_foxglove(bundle, version_file, tmp_path):
    from foxglove_schemas_protobuf.Log_pb2 import Log
    from mcap.reader import make_reader

    from judge.bundle.decode import load_streams
    from judge.bundle.intake import intake

    ann = tmp_path / "events.mcap"
    assert main(["explain", bundle, "--judge", version_file, "--out", str(tmp_path / "e.html"),
                 "--mcap", str(ann)]) == 0
    start = load_streams(intake(bundle)).start_ns
    with open(ann, "rb") as f:
        rows = [(ch.topic, sc.name, m.log_time - start, Log.FromString(m.data))
                for sc, ch, m in make_reader(f).iter_messages()]
    contacts = [(t, log.message, log.level) for topic, _, t, log in rows
                if topic == "/rcjudge/contacts"]
    assert contacts == [
        (2_530_000_000, "grasp t=2.530s (from 2.530s to 4.330s, peak 21.41)", Log.INFO),
        (4_330_000_000, "slip t=4.330s (from 2.530s to 4.330s, peak 21.41)", Log.WARNING)]
    sampled = [(t, log.message) for topic, _, t, log in rows if topic == "/rcjudge/sampled"]
    assert [t for t, _ in sampled] == [round(s * 1e9) for s in SAMPLED]
    assert sampled[4] == (2_300_000_000, "frame t=2.300s shown to the models as image 3")
    assert sampled[5] == (2_400_000_000, "frame t=2.400s sampled")
    assert {sc for _, sc, _, _ in rows} == {"foxglove.Log"}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_out_dir_pages_per_run_and_errors(bundle, version_file, tmp_path, capsys):
    version = load_judge_version(version_file)
    p = prepare(bundle, version)
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    with Ledger.open(db) as ledger:
        ledger.record(Run(run_id=p.run_id, bundle_uri=p.uri, bundle_hash=p.bundle_hash,
                          attribution=p.attribution, duration_s=p.duration_s,
                          cycle_sec=p.cycle_sec), Judge(version).judge_prepared(p))
    pages = tmp_path / "pages"
    runs = tmp_path / "runs.csv"
    runs.write_text(f"task_id,episode_id\nt,{p.run_id}\nt,no-such-run\n")
    # one run id the ledger lacks: refused in one line before any page is written
    assert main(["explain", "--runs", str(runs), "--judge", version_file, "--db", db,
                 "--out-dir", str(pages)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "rcjudge: error: no-such-run: not a run id in the ledger sqlite:")
    assert not pages.exists()
    runs.write_text(f"run_id,episode_id\n{p.run_id},ignored\n{p.run_id},ignored\n")
    assert main(["explain", p.run_id, "--runs", str(runs), "--judge", version_file, "--db", db,
                 "--out-dir", str(pages), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], Path(r["out"]).name, r["judgment"]) for r in rows] == [
        (p.run_id, f"{p.run_id}.html", "ledger")]  # once, though named three times
    check_page((pages / f"{p.run_id}.html").read_text(encoding="utf-8"),
               Judge(version).judge(bundle))
    for argv, msg in [
            (["--out-dir", str(pages), "--out", "x.html", p.run_id],
             "--out-dir writes a page per run; not with --out, --mcap or --rrd"),
            ([p.run_id], "give one BUNDLE|RUN_ID and --out FILE.html (and/or --rrd "
                         "FILE.rrd), or RUN_IDs and/or --runs FILE with --out-dir DIR"),
            (["--out-dir", str(pages)], "rcjudge explain --out-dir: no run ids (give RUN_IDs "
                                        "or --runs)"),
            (["--out-dir", str(pages), "--runs", str(tmp_path / "r.txt")],
             f"--runs {tmp_path / 'r.txt'}: suffix '.txt'; expected .parquet, .csv or .jsonl")]:
        assert main(["explain", "--judge", version_file, "--db", db, *argv]) == 2
        assert capsys.readouterr().err.strip().endswith(msg), argv
    (tmp_path / "cols.csv").write_text("a,b\n1,2\n")
    assert main(["explain", "--judge", version_file, "--db", db, "--out-dir", str(pages),
                 "--runs", str(tmp_path / "cols.csv")]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "cols.csv: no run_id or episode_id column (columns: a, b)")


def _rrd_entities(path) -> dict[str, dict]:
    """Per entity: rows, the timelines, and each column's values (rerun's own reader);
    a component batch of one value is unwrapped to that value."""
    import pyarrow as pa
    from rerun.chunk import RrdReader

    out: dict[str, dict] = {}
    for chunk in RrdReader(path).stream().to_chunks():
        rb = chunk.to_record_batch()
        e = out.setdefault(chunk.entity_path, {"rows": 0, "static": chunk.is_static,
                                               "timelines": set(), "cols": {}})
        e["rows"] += chunk.num_rows
        e["timelines"] |= set(chunk.timeline_names)
        for name in rb.schema.names:
            if name == "rerun.controls.RowId":
                continue
            col = rb.column(name)
            if pa.types.is_duration(col.type) or pa.types.is_timestamp(col.type):
                col = col.cast(pa.int64())
            values = col.to_pylist()
            if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
                values = [v[0] if v is not None and len(v) == 1 else v for v in values]
            e["cols"].setdefault(name, []).extend(values)
    return out


@pytest.mark.rerun
def test_rrd_recording_read_back(bundle, version_file, tmp_path, capsys):
    import io

    import numpy as np
    from PIL import Image

    from judge.bundle.decode import load_streams
    from judge.bundle.intake import intake

    rrd = tmp_path / "rec" / "explain.rrd"
    assert main(["explain", bundle, "--judge", version_file, "--rrd", str(rrd), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["out"], summary["rrd"], summary["bytes"]) == (None, str(rrd), None)
    assert [p.name for p in rrd.parent.iterdir()] == ["explain.rrd"]  # no temporary left
    ents = _rrd_entities(rrd)
    sig = load_streams(intake(bundle)).signals
    joints = [f"/joints/effort/{n}" for n in sig.joint_names]
    assert sorted(ents) == sorted([
        "/__properties", "/cameras/front", "/cameras/side", "/cameras/top",
        "/sampling/frames", "/sampling/dense_windows", "/contacts", "/gripper/width_mm",
        "/gripper/effort", "/judgment/vote", "/judgment/models/m0", "/judgment/models/m1",
        "/judgment/models/m2", *joints])
    ms = [round(s * 1e9) for s in SAMPLED]
    for cam in ("front", "side", "top"):
        e = ents[f"/cameras/{cam}"]
        assert e["rows"] == 16 and e["timelines"] == {"bundle_time"}  # no wall clock
        assert e["cols"]["bundle_time"] == ms  # the decoded frames' own times (on the grid)
        assert set(e["cols"]["EncodedImage:media_type"]) == {"image/jpeg"}
        img = Image.open(io.BytesIO(bytes(e["cols"]["EncodedImage:blob"][0])))
        assert img.size == (96, 64)
    frames = ents["/sampling/frames"]["cols"]
    assert frames["bundle_time"] == ms
    assert frames["TextLog:text"][4] == "frame t=2.300s shown to the models as image 3"
    assert frames["TextLog:text"][5] == "frame t=2.400s sampled"
    assert sum("shown to the models" in t for t in frames["TextLog:text"]) == 8
    contacts = ents["/contacts"]["cols"]
    assert list(zip(contacts["bundle_time"], contacts["TextLog:text"], contacts["TextLog:level"],
                    strict=True)) == [
        (2_530_000_000, "grasp t=2.530s (from 2.530s to 4.330s, peak 21.41)", "INFO"),
        (4_330_000_000, "slip t=4.330s (from 2.530s to 4.330s, peak 21.41)", "WARN")]
    windows = ents["/sampling/dense_windows"]["cols"]
    assert windows["TextLog:text"] == ["dense window 2.130s to 2.930s",
                                       "dense window 3.930s to 4.730s"]
    width = ents["/gripper/width_mm"]
    assert width["rows"] == len(sig.gripper_t)
    assert np.allclose(width["cols"]["Scalars:scalars"], 1e3 * sig.gripper_width)
    assert ents["/gripper/effort"]["rows"] == len(sig.gripper_t)
    for k, j in enumerate(joints):
        assert ents[j]["rows"] == len(sig.t)
        assert np.allclose(ents[j]["cols"]["Scalars:scalars"], sig.effort[:, k])
    judgment = Judge(load_judge_version(version_file)).judge(bundle)
    vote = ents["/judgment/vote"]
    assert vote["static"] and vote["cols"]["attempt"] == [True]
    assert vote["cols"]["success"] == [False] and vote["cols"]["failure_class"] == ["grasp.slip"]
    assert vote["cols"]["success_confidence"] == pytest.approx([judgment.success_confidence])
    assert "failure class `grasp.slip`" in vote["cols"]["TextDocument:text"][0]
    for i, script in enumerate(SCRIPTS):
        m = ents[f"/judgment/models/m{i}"]["cols"]
        assert (m["p_attempt"], m["p_success"]) == ([script["attempt"]], [script["success"]])
        assert m["failure_class"] == [script.get("failure_class", "")]
        assert f"| {script['attempt']:.3f} |" in m["TextDocument:text"][0]


def test_rrd_without_rerun_sdk_names_the_extra(bundle, version_file, tmp_path, capsys,
                                               monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "rerun", None)  # `import rerun` fails as if not installed
    out, rrd = tmp_path / "e.html", tmp_path / "e.rrd"
    assert main(["explain", bundle, "--judge", version_file, "--out", str(out),
                 "--rrd", str(rrd)]) == 2
    assert capsys.readouterr().err.strip() == (
        "rcjudge: error: rcjudge explain --rrd: rerun-sdk is not installed; "
        "pip install 'rcjudge[rerun]' (rerun-sdk)")
    assert list(tmp_path.iterdir()) == []  # nothing written, not even the page
