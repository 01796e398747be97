"""Start-up cost of the CLI: ``rcjudge --help`` and ``rcjudge inspect --help`` against
``python -c pass`` (issue 32: parsing arguments must not import the pipeline).

Each command runs ``--repeat`` times in a fresh interpreter (this one's), the median wall
time kept; the ratio is against the bare interpreter's median, and the modules count is
``len(sys.modules)`` once the parser is built. ``--root DIR`` times the code of another
checkout (its folder first on ``PYTHONPATH``), for a before/after.

    python -m bench.startup [--repeat 7] [--root DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: name -> the arguments after the interpreter.
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "rcjudge --help": ["-m", "rcjudge.cli", "--help"],
    "rcjudge inspect --help": ["-m", "rcjudge.cli", "inspect", "--help"],
}
#: Counts the modules a parse imports (the parser built, no command run).
MODULES = ("import sys; from rcjudge.cli import build_parser; build_parser(); "
           "print(len(sys.modules))")


def _env(root: Path) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(root) + (os.pathsep + path if path else "")}


def time_command(args: list[str], root: Path, repeat: int) -> float:
    """Median wall seconds of ``python ARGS`` over ``repeat`` fresh interpreters."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], env=_env(root), cwd=root, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(root: Path, repeat: int) -> dict:
    """Median seconds and ratio to ``python -c pass`` of each of :data:`COMMANDS`."""
    seconds = {name: time_command(args, root, repeat) for name, args in COMMANDS.items()}
    base = seconds["python -c pass"]
    modules = int(subprocess.run([sys.executable, "-c", MODULES], env=_env(root), cwd=root,
                                 check=True, capture_output=True, text=True).stdout)
    return {"root": str(root), "repeat": repeat, "modules_after_parse": modules,
            "commands": {n: {"seconds": round(s, 3), "ratio": round(s / base, 1)}
                         for n, s in seconds.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                    help="checkout whose code is timed (default: this one)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    r = measure(args.root.resolve(), args.repeat)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    print(f"{r['root']}: median of {r['repeat']}, {r['modules_after_parse']} modules after "
          "parsing")
    for name, c in r["commands"].items():
        print(f"  {name:<24} {c['seconds']:6.3f} s  {c['ratio']:5.1f} x python -c pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
