"""Fuzzing the input path: seeded mutations of valid bundles through `rcjudge inspect`.

The bases: a synthetic bundle (``bench.synth``), a bundle made by ``rcjudge bundle create``
from recordings in each codec PyAV writes here (H.264 with B-frames, plain H.264 that is
copied, HEVC, AV1, VP9, MJPEG), and, where the sim extra is installed (CI has it), a MuJoCo
rollout written by ``judge.sim`` at test time (``sim``-marked: a committed sim bundle would
go stale against the generator; making one takes ~4 s).

Each mutation (byte flips in every file kind, truncations, manifest and attribution edits,
zero-length, missing, symlinked and unreadable files, sidecar cameras, a FIFO where a file
should be, JSON the strict reader refuses) must end either in exit 1 or 2 with exactly one
stderr line and no traceback, or in a report identical to the unmutated base's. Kinds that
cannot matter (an unlisted file, the manifest re-indented, an extra env field) must give the
identical report. A symlink to an identical copy outside the bundle is refused since issue 36
(every path a bundle names resolves inside its folder).
``main()`` runs in-process (no subprocess per case) to stay fast. Each case has its own
seed, ``"SEED:base:kind:i"``, so a crash is replayed by its name alone (the failure prints
it); every crash found stays in :data:`REGRESSIONS` with the line it now ends in. A batch
over one bad case of each kind and the good bundles records each bad one once and judges
each good bundle once.

Permission denied: the tests run as root, where ``chmod 000`` does not deny a read, so
"unreadable" is made by a folder where a file should be (``IsADirectoryError``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import re
import shutil
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from judge.bundle.manifest import write_manifest
from rcjudge.cli import main

SEED = 28
# mutations a kind, per base: x 24 kinds = 240 + 6 x 72 = 672 a run (+ 120 with the sim extra)
N_PER_KIND = {"synth": 10, "h264_bframes": 3, "h264_plain": 3, "hevc": 3, "av1": 3,
              "vp9": 3, "mjpeg": 3, "sim": 5}
# recordings for `bundle create`: codec, its options, pixel format, container
CODECS = {"h264_bframes": ("libx264", {}, "yuv420p", "mp4"),  # libx264 defaults: B-frames
          "h264_plain": ("libx264", {"bf": "0", "g": "5"}, "yuv420p", "mp4"),  # copied
          "hevc": ("libx265", {"x265-params": "log-level=none"}, "yuv420p", "mkv"),
          "av1": ("libsvtav1", {}, "yuv420p", "mp4"),
          "vp9": ("libvpx-vp9", {}, "yuv420p", "webm"),
          "mjpeg": ("mjpeg", {}, "yuvj420p", "avi")}
W, H, FPS, FRAMES = 96, 64, 10, 20
# Crashes the fuzzer found, replayed by name: base, kind, the case's seed, and the line it
# now ends in ({d}: the case's folder; a line ending in "\n" is exact, else its start).
# All but the last were found by the first 550-case synth run (seeds: Random(28)'s draws,
# 25 a kind) on main before judge.bundle.boundary: 63 crashes in these 6 classes.
_LOOP = "Too many levels of symbolic links\n"
REGRESSIONS = {
    "symlink_loop_manifest": ("synth", "symlink_loop", 0.6211031326652328,
                              "{d}/manifest.json: " + _LOOP),  # and 7 more seeds
    "symlink_loop_attribution": ("synth", "symlink_loop", 0.7598734910798755,
                                 "{d}/attribution.json: " + _LOOP),  # and 7 more
    "symlink_loop_mcap": ("synth", "symlink_loop", 0.8505693751830852,
                          "{d}/rollout.mcap: " + _LOOP),  # and 8 more
    "root_symlink_loop": ("synth", "root_symlink_loop", 0.7705921581862208,
                          "{d}/manifest.json: " + _LOOP),  # and 24 more
    "manifest_is_a_folder": ("synth", "unreadable", 0.12955544449625933,
                             "{d}/manifest.json: Is a directory\n"),  # and 8 more
    "zero_length_sidecar": ("synth", "sidecar", 0.41259923039462065,
                            "{d}/cameras/extra.mp4: not a readable video file (Invalid "
                            "argument)\n"),  # and 2 more
    # a flipped byte in the summary's Channel record: schema id 259, which no Schema record
    # has -> KeyError in load_streams (also on main after the boundary); the Footer's
    # summary CRC now names it
    "summary_channel_schema_id_flipped": ("synth", "flip_mcap_many", 0.5203412140430277,
                                          "{d}/rollout.mcap: summary section CRC mismatch: "
                                          "bytes "),
}
CANNOT_MATTER = {"unlisted_file", "manifest_reindent", "attribution_extra_env"}
#: The strict JSON reader's refusals (issue 36 item 9), spelled as a hostile file would:
#: (where: "attribution" edits a value as raw text, "encoding" re-encodes the whole file).
STRICT_JSON = [("attribution", '"lighting_k": Infinity'), ("attribution", '"mount_h_mm": NaN'),
               ("attribution", '"dof": 1000000000000000000000000000000'),
               ("attribution", '"dof": -Infinity'), ("attribution", '"tier": "A", "tier": "B"'),
               ("attribution", '"name": "a\\u0000b"'), ("attribution", '"name": "\\udc00"'),
               ("attribution", '"lighting_k": ' + "[" * 40 + "]" * 40),
               ("attribution", '"name": "' + "n" * 70_000 + '"'),
               ("encoding", "utf-16"), ("encoding", "utf-16-le"), ("encoding", "bom"),
               ("manifest", "repeat bundle_hash")]
LISTED = ["attribution.json", "rollout.mcap"]


def run_inspect(path: Path) -> tuple[str, int | None, str, str]:
    """(outcome, exit code, stdout, stderr) of ``rcjudge inspect --json PATH``."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["inspect", "--json", str(path)])
    except BaseException as exc:  # the fuzzer's whole point: any escape is a crash
        return "crash", None, "", f"{type(exc).__name__}: {exc}"
    e = err.getvalue()
    if code == 0:
        return "ok", 0, out.getvalue(), e
    if code in (1, 2) and e.count("\n") == 1 and e.startswith("rcjudge: error: ") \
            and "Traceback" not in e:
        return "error", code, "", e
    return "crash", code, out.getvalue(), e


def comparable(stdout: str) -> dict:
    report = json.loads(stdout)
    for key in ("bundle", "bundle_hash", "files"):
        report.pop(key)
    return report


def flip(data: bytes, rng: random.Random, n: int = 1) -> bytes:
    b = bytearray(data)
    for _ in range(n):
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b)


def rehash(d: Path, extra: list[str] | None = None) -> None:
    write_manifest(d, LISTED + (extra or []))


def json_edit(data: dict, rng: random.Random) -> object:
    """A structural edit of a JSON object: a type change, a missing or extra key."""
    paths = []

    def walk(node, trail):
        if isinstance(node, dict):
            for k, v in node.items():
                paths.append((*trail, k))
                walk(v, (*trail, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                paths.append((*trail, i))
                walk(v, (*trail, i))

    walk(data, ())
    data = json.loads(json.dumps(data))
    choice = rng.randrange(4)
    if choice == 0:
        return rng.choice([[1, 2, 3], None, "text", 7, True, []])
    trail = rng.choice(paths)
    parent = data
    for p in trail[:-1]:
        parent = parent[p]
    if choice == 1:  # a type change
        parent[trail[-1]] = rng.choice([None, "", "x" * 3, -1, 1.5, [], {}, [1], {"a": 1},
                                        True, "é\u0000", 10**30])
    elif choice == 2 and isinstance(parent, dict):  # a missing key
        del parent[trail[-1]]
    else:  # an extra key
        target = parent if isinstance(parent, dict) else data
        target[rng.choice(["extra", "ß", "files", "format", "sha256"]) + "_x"] = rng.choice(
            [1, "v", None, [1]])
    return data


def encode(obj: object, rng: random.Random) -> bytes:
    text = json.dumps(obj, ensure_ascii=rng.random() < 0.5)
    return rng.choice([lambda t: t.encode(), lambda t: t.encode("utf-16"),
                       lambda t: b"\xef\xbb\xbf" + t.encode(),
                       lambda t: t.encode()[: max(1, len(t) // 2)]])(text)


Mutation = Callable[[Path, random.Random], None]


def mutations(outside: Path, sidecar_mp4: bytes) -> dict[str, Mutation]:
    """Kind -> mutation of a bundle folder, in place."""
    def content(name: str, fn: Callable[[bytes, random.Random], bytes], keep: bool):
        def m(d: Path, rng: random.Random) -> None:
            (d / name).write_bytes(fn((d / name).read_bytes(), rng))
            if keep or rng.random() < 0.8:
                rehash(d)
        return m

    def truncate(data: bytes, rng: random.Random) -> bytes:
        return data[: rng.randrange(len(data))]

    def manifest_edit(d: Path, rng: random.Random) -> None:
        m = json.loads((d / "manifest.json").read_text())
        (d / "manifest.json").write_bytes(encode(json_edit(m, rng), rng))

    def attribution_edit(d: Path, rng: random.Random) -> None:
        a = json.loads((d / "attribution.json").read_text())
        (d / "attribution.json").write_bytes(encode(json_edit(a, rng), rng))
        rehash(d)

    def zero_length(d: Path, rng: random.Random) -> None:
        name = rng.choice([*LISTED, "manifest.json"])
        (d / name).write_bytes(b"")
        if name != "manifest.json" and rng.random() < 0.8:
            rehash(d)

    def missing(d: Path, rng: random.Random) -> None:
        (d / rng.choice([*LISTED, "manifest.json"])).unlink()

    def symlink_loop(d: Path, rng: random.Random) -> None:
        name = rng.choice([*LISTED, "manifest.json"])
        (d / name).unlink()
        os.symlink(d / name, d / name)

    def symlink_outside(d: Path, rng: random.Random) -> None:
        name = rng.choice(LISTED)
        (d / name).unlink()
        os.symlink(rng.choice(["/etc/hostname", "/nonexistent/x", str(outside / "noise")]),
                   d / name)
        if (d / name).exists() and rng.random() < 0.5:
            rehash(d)

    def symlink_to_copy_outside(d: Path, rng: random.Random) -> None:
        name = rng.choice(LISTED)
        copy = outside / f"{d.name}-{name}"
        shutil.copy(d / name, copy)
        (d / name).unlink()
        os.symlink(copy, d / name)

    def unreadable(d: Path, rng: random.Random) -> None:
        name = rng.choice([*LISTED, "manifest.json"])
        (d / name).unlink()
        (d / name).mkdir()

    def sidecar(d: Path, rng: random.Random) -> None:
        (d / "cameras").mkdir()
        name = rng.choice(["top", "extra", "front"])
        data = rng.choice([b"", rng.randbytes(2000), sidecar_mp4,
                           sidecar_mp4[: rng.randrange(1, len(sidecar_mp4))],
                           flip(sidecar_mp4, rng, 4)])
        (d / "cameras" / f"{name}.mp4").write_bytes(data)
        rehash(d, [f"cameras/{name}.mp4"])

    def fifo(d: Path, rng: random.Random) -> None:
        name = rng.choice([*LISTED, "manifest.json"])
        (d / name).unlink()
        os.mkfifo(d / name)
        if name != "manifest.json" and rng.random() < 0.8:  # consistent: size 0, empty sha
            m = json.loads((d / "manifest.json").read_text())
            for f in m["files"]:
                if f["path"] == name:
                    f["sha256"], f["size"] = hashlib.sha256(b"").hexdigest(), 0
            from judge.bundle.manifest import FileEntry, bundle_hash

            m["bundle_hash"] = bundle_hash([FileEntry(**f) for f in m["files"]])
            (d / "manifest.json").write_text(json.dumps(m))

    def strict_json(d: Path, rng: random.Random) -> None:
        where, what = rng.choice(STRICT_JSON)
        if where == "manifest":
            m = json.loads((d / "manifest.json").read_text())
            (d / "manifest.json").write_text(
                json.dumps(m)[:-1] + f', "bundle_hash": "{m["bundle_hash"]}"}}')
            return
        text = json.dumps(json.loads((d / "attribution.json").read_text()))
        if where == "encoding":
            raw = (b"\xef\xbb\xbf" + text.encode()) if what == "bom" else text.encode(what)
        else:
            key = what.split(":")[0]
            raw = re.sub(key + r': ("[^"]*"|[^,}]+)', lambda _: what, text, count=1).encode()
        (d / "attribution.json").write_bytes(raw)
        rehash(d)

    def unlisted_file(d: Path, rng: random.Random) -> None:
        (d / rng.choice(["notes.txt", "cameras.mp4", ".hidden"])).write_bytes(rng.randbytes(99))

    def manifest_reindent(d: Path, rng: random.Random) -> None:
        m = json.loads((d / "manifest.json").read_text())
        (d / "manifest.json").write_text(json.dumps(m, indent=rng.choice([None, 1, 4])))

    def attribution_extra_env(d: Path, rng: random.Random) -> None:
        a = json.loads((d / "attribution.json").read_text())
        a.setdefault("env", {})[f"note_{rng.randrange(99)}"] = rng.choice(["x", 1, [1], None])
        (d / "attribution.json").write_text(json.dumps(a))
        rehash(d)

    def mcap_garbage(d: Path, rng: random.Random) -> None:
        data = (d / "rollout.mcap").read_bytes()
        at = rng.randrange(len(data))
        (d / "rollout.mcap").write_bytes(data[:at] + rng.randbytes(rng.randrange(1, 64))
                                         + data[at + rng.randrange(0, 64):])
        rehash(d)

    return {
        "flip_mcap": content("rollout.mcap", flip, False),
        "flip_mcap_many": content("rollout.mcap", lambda b, r: flip(b, r, 20), True),
        "truncate_mcap": content("rollout.mcap", truncate, True),
        "mcap_garbage": mcap_garbage,
        "flip_manifest": lambda d, r: (d / "manifest.json").write_bytes(
            flip((d / "manifest.json").read_bytes(), r)),
        "truncate_manifest": lambda d, r: (d / "manifest.json").write_bytes(
            truncate((d / "manifest.json").read_bytes(), r)),
        "manifest_edit": manifest_edit,
        "flip_attribution": content("attribution.json", flip, False),
        "truncate_attribution": content("attribution.json", truncate, True),
        "attribution_edit": attribution_edit,
        "zero_length": zero_length,
        "missing": missing,
        "symlink_loop": symlink_loop,
        "symlink_outside": symlink_outside,
        "symlink_to_copy_outside": symlink_to_copy_outside,
        "unreadable": unreadable,
        "sidecar": sidecar,
        "fifo": fifo,
        "strict_json": strict_json,
        "unlisted_file": unlisted_file,
        "manifest_reindent": manifest_reindent,
        "attribution_extra_env": attribution_extra_env,
        "not_a_folder": lambda d, r: (shutil.rmtree(d), d.write_bytes(r.randbytes(50))),
        "root_symlink_loop": lambda d, r: (shutil.rmtree(d), os.symlink(d, d)),
    }


def write_video(path: Path, codec: str, options: dict, pix: str) -> Path:
    """FRAMES frames at FPS, each drawing its index (``bench.synth.frame_code``)."""
    import av

    from bench.synth import frame_code

    with av.open(str(path), "w") as c:
        st = c.add_stream(codec, rate=FPS)
        st.width, st.height, st.pix_fmt = W, H, pix
        if options:
            st.codec_context.options = options
        for i in range(FRAMES):
            img = np.full((H, W, 3), 40 + 8 * i, np.uint8)
            block, bits = frame_code(i, W)
            for b, bit in enumerate(bits):
                img[:block, b * block:(b + 1) * block] = 255 if bit else 0
            vf = av.VideoFrame.from_ndarray(img, format="rgb24")
            vf.pts, vf.time_base = i, Fraction(1, FPS)
            for pk in st.encode(vf):
                c.mux(pk)
        for pk in st.encode(None):
            c.mux(pk)
    return path


def created_bundle(root: Path, name: str) -> Path:
    """``bundle create`` from three cameras recorded with ``CODECS[name]``."""
    from judge.bundle.create import create_bundle

    codec, options, pix, ext = CODECS[name]
    rec = root / f"rec-{name}"
    rec.mkdir(parents=True)
    videos = {cam: str(write_video(rec / f"{cam}.{ext}", codec, options, pix))
              for cam in ("front", "side", "wrist")}
    t = np.arange(201) / 100.0
    rows = ["time,shoulder.position,shoulder.velocity,shoulder.effort,gripper.width,"
            "gripper.force"]
    rows += [f"{x:.2f},{0.1 * x:.3f},0.1,1.0,{0.08 if x < 1 else 0.05},"
             f"{20.0 if x >= 1 else 0.0}" for x in t]
    (rec / "signals.csv").write_text("\n".join(rows) + "\n")
    attr = {"policy": {"vendor": "lab", "name": "p", "version": "1", "checkpoint": "sha256:ab"},
            "body": {"arm": "ur5e", "hand": "robotiq-2f85", "dof": 7, "mount_h_mm": 850,
                     "calibrated_at": "2026-10-01"},
            "task": {"id": "tabletop.pick_place.cube_001", "tier": "B"},
            "env": {"lighting_k": 5000}, "seed": 7}
    (rec / "attribution.json").write_text(json.dumps(attr))
    out = root / f"created-{name}"
    create_bundle(videos, str(rec / "signals.csv"), str(rec / "attribution.json"), str(out))
    return out


@pytest.fixture(scope="module")
def bases(make_bundles, tmp_path_factory) -> dict[str, Path]:
    """Base name -> a valid bundle: the synthetic one and one created from each codec."""
    root = tmp_path_factory.mktemp("fuzz-bases")
    out = {"synth": make_bundles(1, seed=3, outcome="grasp.slip", width=96, height=64,
                                 fps=10)[0]}
    return out | {name: created_bundle(root, name) for name in CODECS}


@pytest.fixture(scope="module")
def fuzz_kit(tmp_path_factory) -> dict[str, Mutation]:
    """The mutation kinds, with their folder outside the bundles and a sidecar mp4."""
    outside = tmp_path_factory.mktemp("outside")
    (outside / "noise").write_bytes(b"noise")
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "lerobot"
    return mutations(outside, next(iter(sorted(fixture.rglob("*.mp4")))).read_bytes())


def make_case(base: Path, kinds: dict[str, Mutation], kind: str, seed: object,
              d: Path) -> Path:
    """The base copied to ``d`` and mutated by ``kind`` with its own seed."""
    shutil.copytree(base, d)
    kinds[kind](d, random.Random(seed))
    return d


def remove(d: Path) -> None:
    if d.is_dir() and not d.is_symlink():
        shutil.rmtree(d, ignore_errors=True)
    elif d.is_symlink() or d.exists():
        d.unlink()


def case_seed(base: str, kind: str, i: int) -> str:
    return f"{SEED}:{base}:{kind}:{i}"


def fuzz(bases: dict[str, Path], kinds: dict[str, Mutation], tmp: Path) -> tuple[
        Counter, Counter, Counter, list[str]]:
    """Every case of every base: (mutations by kind, outcomes by kind, by base, crashes)."""
    by_kind: Counter = Counter()
    outcomes: Counter = Counter()
    by_base: Counter = Counter()
    crashes: list[str] = []
    for name, base in bases.items():
        result, code, stdout, err = run_inspect(base)
        assert (result, code, err) == ("ok", 0, ""), (name, err)
        expected = comparable(stdout)
        for kind in kinds:
            for i in range(N_PER_KIND[name]):
                d = make_case(base, kinds, kind, case_seed(name, kind, i),
                              tmp / f"{name}-{kind}-{i}")
                result, code, stdout, err = run_inspect(d)
                if result == "ok":
                    result = "identical" if comparable(stdout) == expected else "different"
                by_kind[kind] += 1
                by_base[name] += 1
                outcomes[(kind, result)] += 1
                if result == "crash" or (result != "identical" and kind in CANNOT_MATTER):
                    # to keep it: REGRESSIONS["what broke"] = (name, kind, seed, its line)
                    crashes.append(f"({name!r}, {kind!r}, {case_seed(name, kind, i)!r}): "
                                   f"{result} exit {code}: {err.strip()[-300:]}")
                remove(d)
    return by_kind, outcomes, by_base, crashes


def show(by_kind: Counter, outcomes: Counter, by_base: Counter, crashes: list[str]) -> None:
    print(f"\nfuzz: {sum(by_kind.values())} mutations, {len(by_kind)} kinds, seed {SEED}; "
          "by base: " + ", ".join(f"{b} {n}" for b, n in by_base.items()))
    for kind, n in by_kind.items():
        parts = ", ".join(f"{r} {outcomes[(kind, r)]}" for r in
                          ("error", "identical", "different", "crash") if outcomes[(kind, r)])
        print(f"  {kind:<24} {n:>3}: {parts}")
    total = Counter()
    for (_, r), n in outcomes.items():
        total[r] += n
    print("  outcomes: " + ", ".join(f"{r} {total[r]}" for r in
                                     ("error", "identical", "different", "crash")))
    print(f"  tracebacks/crashes: {len(crashes)}")
    for c in crashes[:40]:
        print("   ", c)


def test_fuzzed_bundles_are_one_line_or_identical(bases, fuzz_kit, tmp_path, capsys):
    by_kind, outcomes, by_base, crashes = fuzz(bases, fuzz_kit, tmp_path)
    with capsys.disabled():
        show(by_kind, outcomes, by_base, crashes)
    assert sum(by_kind.values()) == 24 * (10 + 6 * 3) >= 500
    assert set(by_base) == {"synth", *CODECS}
    assert crashes == []


@pytest.mark.sim
def test_fuzzed_sim_bundle_is_one_line_or_identical(fuzz_kit, tmp_path, capsys):
    from judge.sim.generate import make_config, write_sim_set

    cfg = make_config(seed=11, tasks=("pick-place",), perturbation="none", width=96,
                      height=64, fps=8, duration_s=1.0, group_size=1)
    base = write_sim_set(tmp_path / "sim", 1, cfg, workers=1)[0][0]
    by_kind, outcomes, by_base, crashes = fuzz({"sim": base}, fuzz_kit, tmp_path)
    with capsys.disabled():
        show(by_kind, outcomes, by_base, crashes)
    assert sum(by_kind.values()) == 24 * 5
    assert crashes == []


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_named_regression_case(name, bases, fuzz_kit, tmp_path):
    base, kind, seed, line = REGRESSIONS[name]
    d = make_case(bases[base], fuzz_kit, kind, seed, tmp_path / name)
    result, code, _, err = run_inspect(d)
    assert (result, code) == ("error", 1), err  # inspect: a refused input is exit 1
    line = "rcjudge: error: " + line.format(d=d)
    assert err == line if line.endswith("\n") else err.startswith(line), err


@pytest.mark.ray
@pytest.mark.slow
def test_batch_over_fuzzed_bundles_records_each_failure_and_judges_each_good_once(
        bases, fuzz_kit, tmp_path):
    """One bad case of every kind that can matter (its base taking turns), the unmutated
    bases and the cannot-matter kinds of two bases, in one folder through ``rcjudge batch``:
    each bad one is one failure record with the line ``inspect`` gave, each good bundle one
    judgment (a cannot-matter copy with its base's bundle hash is the same run: judged
    once, the other copy skipped), exit 1."""
    import subprocess
    import sys

    from judge.bundle.manifest import claimed_bundle_hash
    from judge.ledgers.store import Ledger
    from tests.integration.test_batch_errors import fake_version

    runs = tmp_path / "runs"
    runs.mkdir()
    names = list(bases)
    good, bad = [], {}
    for n, kind in enumerate(k for k in fuzz_kit if k not in CANNOT_MATTER):
        for i in range(N_PER_KIND["synth"]):  # the first case of this kind that is an error
            base = names[(n + i) % len(names)]
            d = make_case(bases[base], fuzz_kit, kind, case_seed(base, kind, i),
                          runs / f"{kind}-{base}-{i}")
            result, _, _, err = run_inspect(d)
            if result == "error":
                bad[str(d)] = err.removeprefix("rcjudge: error: ").rstrip("\n")
                break
            remove(d)
    for base in names:
        good.append(shutil.copytree(bases[base], runs / f"good-{base}"))
    for base in names[:2]:
        for kind in sorted(CANNOT_MATTER):
            good.append(make_case(bases[base], fuzz_kit, kind, case_seed(base, kind, 0),
                                  runs / f"{kind}-{base}-0"))
    assert len(bad) == 24 - len(CANNOT_MATTER) and len(good) == 7 + 2 * 3
    hashes = {g.name: claimed_bundle_hash(str(g)) for g in good}
    # unlisted file, re-indented manifest: the base's hash; an extra env field: a bundle of
    # its own
    assert len(set(hashes.values())) == 7 + 2
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", "batch", str(runs),
                           "--judge", str(fake_version(tmp_path)), "--db", url, "--json"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    s = json.loads(proc.stdout)
    # a folder scan takes the entries holding a manifest.json (issue 38 item 6): a case
    # without one is passed over and named, the others are failures
    passed = sorted(u for u in bad if not (Path(u) / "manifest.json").exists())
    bad = {u: m for u, m in bad.items() if u not in passed}
    assert s.get("passed_over", []) == passed
    assert (s["total"], s["judged"], s["skipped"], s["failed"]) == (
        len(bad) + len(good), 9, len(good) - 9, len(bad))
    assert sorted((f["uri"], f["message"]) for f in s["failures"]) == sorted(bad.items())
    with Ledger.open(url) as ledger:
        kept = [(f["bundle_uri"], f["message"]) for f in ledger.failures("fake-errors")]
        assert sorted(kept) == sorted(bad.items())  # one record each
        judged = ledger.judged_run_ids("fake-errors")
        assert judged <= set(hashes) and len(judged) == 9
        assert {hashes[r] for r in judged} == set(hashes.values())  # each bundle once
        assert ledger.counts()["judgments"] == 9
