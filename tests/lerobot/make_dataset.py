"""Write a small LeRobot v3.0 dataset with the `lerobot` package itself (its own env).

Run by `make test-lerobot` in `.venv-lerobot` (Python >= 3.12, lerobot 0.6.1), offline:
``python tests/lerobot/make_dataset.py OUT_DIR``. Three episodes of 10, 12 and 8 frames,
state only (no video: the sidecar needs the episode tables, not pixels). Prints the
episode table it wrote as JSON so the test can compare.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from lerobot.datasets.lerobot_dataset import LeRobotDataset

LENGTHS = (10, 12, 8)


def main(out: str) -> None:
    root = Path(out)
    features = {"observation.state": {"dtype": "float32", "shape": (8,), "names": None},
                "action": {"dtype": "float32", "shape": (8,), "names": None}}
    ds = LeRobotDataset.create("lab/lerobot_made", fps=10, features=features, root=root,
                               use_videos=False)
    for ep, n in enumerate(LENGTHS):
        for i in range(n):
            state = np.full(8, ep + i / 100, np.float32)
            ds.add_frame({"observation.state": state, "action": state,
                          "task": "Pick up the cube."})
        ds.save_episode()
    ds.finalize()
    print(json.dumps({"root": str(root), "episodes": len(LENGTHS), "lengths": LENGTHS}))


if __name__ == "__main__":
    main(sys.argv[1])
