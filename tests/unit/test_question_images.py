"""Which sampled frames each question shows (judge.ensemble.prompts.question_images)."""

import numpy as np
import pytest

from judge.ensemble.prompts import question_images
from judge.ensemble.version import JudgeVersion


def _version(k: int, tile: bool) -> JudgeVersion:
    return JudgeVersion.model_validate({
        "name": "t", "models": [{"name": f"m{i}", "backend": "fake"} for i in range(3)],
        "frames": {"images_per_question": k, "tile_cameras": tile}})


def _frames(n_cams: int = 3, t: int = 16) -> np.ndarray:
    """(n_cams, t, 2, 2, 3) with pixel value 10·camera + time step."""
    v = 10 * np.arange(n_cams)[:, None] + np.arange(t)[None, :]
    return np.broadcast_to(v[:, :, None, None, None], (n_cams, t, 2, 2, 3)).astype(np.uint8)


@pytest.mark.parametrize(("k", "steps"), [(1, [15]), (2, [0, 15]), (4, [0, 5, 10, 15]),
                                          (16, list(range(16))), (40, list(range(16)))])
def test_time_steps_evenly_from_first_to_last_and_one_image_is_the_end_state(k, steps):
    out = question_images(_frames(), _version(k, tile=False))
    # untiled: time step major, cameras in order within it
    assert out[:, 0, 0, 0].tolist() == [10 * c + s for s in steps for c in range(3)]


def test_tiled_cameras_sit_side_by_side():
    out = question_images(_frames(t=5), _version(2, tile=True))
    assert out.shape == (2, 2, 6, 3)
    assert out[:, 0, ::2, 0].tolist() == [[0, 10, 20], [4, 14, 24]]
