"""The transformers backend's shared-prefix path answers as the whole-prompt path does."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def tiny_judge(tiny_models):
    import torch

    from judge.ensemble.judge import Judge

    torch.set_num_threads(1)
    judge = Judge("tiny")
    yield judge
    judge.close()


def test_shared_prefix_gives_the_same_answers_in_request_order(tiny_judge, make_bundles):
    from judge.ensemble.judge import prepare

    p1, p2 = (prepare(str(b), tiny_judge.version)
              for b in make_bundles(2, seed=3, width=96, height=64, fps=5))
    # two bundles' questions interleaved: two frame groups, answers kept in request order
    a1, s1 = tiny_judge.yes_no(p1)
    a2, s2 = tiny_judge.yes_no(p2)
    requests = [a1, a2, s1, tiny_judge.family(p1), s2]
    for backend in tiny_judge.backends:
        whole = backend.score(requests)
        shared = backend.score_shared_prefix(requests)
        assert [len(x) for x in shared] == [2, 2, 2, len(requests[3].choices), 2]
        for w, s in zip(whole, shared, strict=True):
            np.testing.assert_allclose(s, w, rtol=0, atol=1e-6)
            assert s.sum() == pytest.approx(1.0)
