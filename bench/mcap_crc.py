"""What verifying MCAP chunk CRCs costs: ``load_streams`` with and without the check.

    python -m bench.mcap_crc [--repeats 9]

Runs in one process on ``bench.frames``'s cached bundle, alternating the two modes (the
"without" mode reads every chunk's CRC as 0, "not recorded"), so the shared CPU's noise
hits both alike; prints the medians and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

import judge.bundle.chunks as chunks
from bench.frames import CONFIG, cached_bundle
from judge.bundle.decode import load_streams
from judge.bundle.intake import intake


class _NoCrc:
    """``chunks._CHUNK_HEAD`` with the CRC field read as 0 (unchecked)."""

    size = chunks._CHUNK_HEAD.size

    def unpack_from(self, buf, offset):
        start, end, usize, _, clen = _REAL.unpack_from(buf, offset)
        return start, end, usize, 0, clen


_REAL = chunks._CHUNK_HEAD


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    bundle = intake(str(cached_bundle("frames", CONFIG)))
    times: dict[str, list[float]] = {"crc": [], "none": []}
    try:
        for _ in range(args.repeats):
            for mode, head in (("crc", _REAL), ("none", _NoCrc())):
                chunks._CHUNK_HEAD = head
                t0 = time.perf_counter()
                load_streams(bundle)
                times[mode].append(time.perf_counter() - t0)
    finally:
        chunks._CHUNK_HEAD = _REAL
    crc, none = (statistics.median(times[m]) for m in ("crc", "none"))
    print(f"load_streams with chunk CRCs {crc:.4f} s, without {none:.4f} s: "
          f"ratio {crc / none:.3f}")


if __name__ == "__main__":
    main()
