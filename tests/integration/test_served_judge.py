"""A judge whose three models are served (``tests.served_stub``): fingerprint, cost, timings."""

from __future__ import annotations

import pytest

from judge.ensemble.fingerprint import fingerprint_of, version_parts
from judge.ensemble.judge import Judge, pricing
from judge.ensemble.taxonomy import load_taxonomy
from judge.ensemble.version import JudgeVersion, load_judge_version
from tests.served_stub import StubServer

MODELS = ("m-a", "m-b", "m-c")
PRICES = {"usd_per_mtok_in": 3.0, "usd_per_mtok_out": 15.0}


def served_version(url: str, name: str = "served-stub", **endpoint) -> JudgeVersion:
    return JudgeVersion(name=name, models=[
        {"name": m, "backend": "openai", "max_pixels": 4096, "min_answer_mass": 0,
         "endpoint": {"base_url": url, "model": m, **PRICES, **endpoint}} for m in MODELS],
        frames={"images_per_question": 4})


@pytest.fixture
def stub():
    with StubServer(models=MODELS) as s:
        yield s


def test_fingerprint_records_the_server_and_what_it_serves(stub):
    taxonomy = load_taxonomy()
    content = version_parts(served_version(stub.url), taxonomy)
    part = content["models.m-a"]
    assert part["endpoint"] == {"host": stub.url.split("/")[2], "model": "m-a",
                                "server": "auto", "top_logprobs": 20, "image_format": "png",
                                "jpeg_quality": 95}
    assert part["served"] == {"model": "m-a", "root": "/models/m-a",
                              "system_fingerprint": "vllm-0.32.0-stub0001"}
    assert part["files"] is None
    before = fingerprint_of(content)
    # prices, concurrency and the key's variable say how it is paid and sent: same judge
    same = version_parts(served_version(stub.url, max_concurrency=9, api_key_env=None,
                                        usd_per_mtok_in=1.0), taxonomy)
    assert fingerprint_of(same).digest == before.digest
    stub.fingerprint = "vllm-0.32.0-feedf00d"  # the server restarted with another build
    after = fingerprint_of(version_parts(served_version(stub.url), taxonomy))
    assert before.changed(after.parts) == ["models.m-a", "models.m-b", "models.m-c"]


def test_an_in_process_model_part_has_no_endpoint(tiny_models):
    content = version_parts(load_judge_version("tiny"), load_taxonomy())
    assert all("endpoint" not in content[f"models.{m}"]
               for m in ("gemma3-tiny", "idefics3-tiny", "llava-tiny"))


def test_a_served_judgment_costs_its_tokens(stub, make_bundles):
    bundle = str(make_bundles(1, seed=5, width=96, height=64, fps=10)[0])
    judge = Judge(served_version(stub.url))
    first = len(stub.chat_requests())  # 3 at the fingerprint, 3 at load: text-only probes
    j = judge.judge(bundle)
    judge.close()
    asked = [r["body"] for r in stub.chat_requests()[first:]]
    assert len(asked) in (6, 12)  # attempt + success each, then family + class when "no"
    assert j.judge_version == "served-stub" and j.frames == 4

    def usd(body: dict) -> float:
        parts = body["messages"][0]["content"]
        prompt = 10 * sum(p["type"] == "image_url" for p in parts) + sum(
            len(p.get("text", "").split()) for p in parts)
        return (prompt * PRICES["usd_per_mtok_in"] + 1 * PRICES["usd_per_mtok_out"]) / 1e6

    t = j.timings
    assert j.cost.gpu_s == 0.0
    assert j.cost.cpu_s == pytest.approx(t.intake_s + t.frames_s + t.vote_s, abs=1e-12)
    served_usd = sum(usd(b) for b in asked)
    assert served_usd > 0
    assert j.cost.usd == round(j.cost.cpu_s * pricing()["cpu_hour_usd"] / 3600 + served_usd, 8)
    assert t.models_s > 0  # the latency of the served calls
