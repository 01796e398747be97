"""Fuzzing the input path: seeded mutations of a valid bundle through `rcjudge inspect`.

Each mutation (byte flips in every file kind, truncations, manifest and attribution edits,
zero-length, missing, symlinked and unreadable files, sidecar cameras) must end either in
exit 1 or 2 with exactly one stderr line and no traceback, or in a report identical to the
unmutated bundle's. Kinds that cannot matter (an unlisted file, the manifest re-indented,
an extra env field, a symlink to an identical copy) must give the identical report.
``main()`` runs in-process (no subprocess per case) to stay fast.

Permission denied: the tests run as root, where ``chmod 000`` does not deny a read, so
"unreadable" is made by a folder where a file should be (``IsADirectoryError``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from judge.bundle.manifest import write_manifest
from rcjudge.cli import main

N_PER_KIND = 25  # x 22 kinds = 550 mutations
SEED = 28
CANNOT_MATTER = {"unlisted_file", "manifest_reindent", "attribution_extra_env",
                 "symlink_to_copy_outside"}
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
        "unlisted_file": unlisted_file,
        "manifest_reindent": manifest_reindent,
        "attribution_extra_env": attribution_extra_env,
        "not_a_folder": lambda d, r: (shutil.rmtree(d), d.write_bytes(r.randbytes(50))),
        "root_symlink_loop": lambda d, r: (shutil.rmtree(d), os.symlink(d, d)),
    }


def test_fuzzed_bundles_are_one_line_or_identical(make_bundles, tmp_path, capsys):
    base = make_bundles(1, seed=3, outcome="grasp.slip", width=96, height=64, fps=10)[0]
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "lerobot"
    mp4 = next(iter(sorted(fixture.rglob("*.mp4"))))
    outcome, code, stdout, err = run_inspect(base)
    assert (outcome, code, err) == ("ok", 0, "")
    expected = comparable(stdout)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "noise").write_bytes(b"noise")
    kinds = mutations(outside, mp4.read_bytes())
    rng = random.Random(SEED)
    by_kind: Counter = Counter()
    outcomes: Counter = Counter()
    crashes: list[str] = []
    for kind, mutate in kinds.items():
        for i in range(N_PER_KIND):
            d = tmp_path / f"{kind}-{i}"
            shutil.copytree(base, d)
            mutate(d, random.Random(rng.random()))
            result, code, stdout, err = run_inspect(d)
            by_kind[kind] += 1
            if result == "ok":
                result = "identical" if comparable(stdout) == expected else "different"
            outcomes[(kind, result)] += 1
            if result == "crash" or (result == "different" and kind in CANNOT_MATTER) or \
                    (result != "identical" and kind in CANNOT_MATTER):
                crashes.append(f"{kind}-{i}: exit {code}: {err.strip()[-300:]}")
            if d.is_dir() and not d.is_symlink():
                shutil.rmtree(d, ignore_errors=True)
            elif d.is_symlink() or d.exists():
                d.unlink()
    with capsys.disabled():
        print(f"\nfuzz: {sum(by_kind.values())} mutations, {len(kinds)} kinds, seed {SEED}")
        for kind in kinds:
            parts = ", ".join(f"{r} {outcomes[(kind, r)]}" for r in
                              ("error", "identical", "different", "crash")
                              if outcomes[(kind, r)])
            print(f"  {kind:<24} {by_kind[kind]:>3}: {parts}")
        print(f"  crashes: {len(crashes)}")
        for c in crashes[:40]:
            print("   ", c)
    assert sum(by_kind.values()) >= 500
    assert crashes == []
