"""``rcjudge bench call --in-flight`` on a served version (``tests.served_stub``) and a baseline."""

from __future__ import annotations

import json

import pytest
import yaml

from rcjudge.cli import main
from tests.served_stub import StubServer

MODELS = ("m-a", "m-b", "m-c")


def write(path, data) -> str:
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_bench_call_served_loads_beside_a_baseline(make_bundles, tmp_path, capsys):
    folder = make_bundles(4, seed=41, width=96, height=64, fps=5)[0].parent
    frames = {"images_per_question": 4}
    base = write(tmp_path / "local-base.yaml", {"name": "local-base", "frames": frames,
                                                  "models": [
        {"name": m, "backend": "fake", "options": {"script": {"attempt": 0.9, "success": 0.8}}}
        for m in MODELS]})
    with StubServer(models=MODELS) as stub:
        served = write(tmp_path / "served-bench.yaml", {"name": "served-bench",
                                                          "frames": frames, "models": [
            {"name": m, "backend": "openai", "max_pixels": 4096, "min_answer_mass": 0,
             "endpoint": {"base_url": stub.url, "model": m, "usd_per_mtok_in": 3.0}}
            for m in MODELS]})
        code = main(["bench", "call", "--judge", served, "--bundles", str(folder),
                     "--in-flight", "1,2", "--baseline", base, "--json"])
        assert stub.max_in_flight <= 2 * len(MODELS)  # k=2: each model at most 2
    assert code == 0
    r = json.loads(capsys.readouterr().out)
    assert (r["judge_version"], r["bundles"]) == ("served-bench", 4)
    assert r["baseline"]["judge_version"] == "local-base"
    assert [s["in_flight"] for s in r["served"]] == [1, 2]
    for s in r["served"]:
        assert s["judgments"] == 4 and s["usd"] > 0
        for q in ("p50_s", "p95_s", "per_s", "usd"):
            assert s["ratio"][q] == pytest.approx(s[q] / r["baseline"][q])


def test_in_flight_needs_a_served_version(make_bundles, capsys):
    folder = make_bundles(4, seed=41, width=96, height=64, fps=5)[0].parent
    assert main(["bench", "call", "--judge", "tiny", "--bundles", str(folder),
                 "--in-flight", "1,x"]) == 2
    assert capsys.readouterr().err == ("rcjudge: error: --in-flight 1,x: expected numbers "
                                       "separated by commas, e.g. 1,4,16\n")
