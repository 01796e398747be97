"""Pre-flight checks of where the models go: the GPU memory plan a batch would place, each
vLLM engine's share against what it needs to start (``judge.batch.vram``), and each model's
answer-token mass (the one check that loads models: ``rcjudge doctor --load``).

Where it sits: after ``model_rows`` (folders, processors). The GPU plan is
``judge.batch.plan.memory_plan`` — the very packing ``rcjudge batch`` places — so the table
and the batch agree; a plan that cannot keep every GPU within its cap is the batch's own
one-line refusal, as a red row.
"""

from __future__ import annotations

from judge.preflight.rows import Context, Row


def gpu_plan_rows(ctx: Context) -> list[Row]:
    """Per GPU, the replicas a batch would place there and their summed
    ``gpu_memory_utilization`` against the cap (``judge.batch.plan.memory_plan``)."""
    from judge.batch.plan import PlanError, memory_plan, on_gpu

    if not any(on_gpu(m) for m in ctx.version.models):
        return [Row("gpu plan", "ok", f"every model of {ctx.version.name} runs on cpu")]
    if ctx.ray_address:
        return [Row("gpu plan", "warn", "planned on the cluster's GPUs when the batch starts "
                    "(--ray-address)")]
    gpus = ctx.gpu_list()
    n, note = (len(gpus), "") if gpus else (1, " (planned for one GPU: none here)")
    try:
        slots = memory_plan(ctx.version, n)
    except PlanError as exc:
        return [Row("gpu plan", "fail", str(exc))]
    rows = []
    for i, slot in enumerate(slots):
        gib = ctx.gpu_memory_gib or (gpus[i].total_mib / 1024 if i < len(gpus) else None)
        size = f" = {slot.share * gib:.1f} of {gib:.1f} GiB" if gib else ""
        rows.append(Row(f"gpu plan GPU {i}", "ok", f"{' + '.join(slot.models)}: "
                        f"{slot.share:.2f} <= {slot.cap:.2f}{size}{note}"))
    return rows


def engine_memory_rows(ctx: Context) -> list[Row]:
    """Per vLLM engine on CUDA, its share × the GPU's memory against its weights, overhead
    and the KV cache of one ``max_model_len`` prompt, in GiB (``judge.batch.vram``)."""
    from judge.batch.plan import on_gpu, reserves_memory
    from judge.batch.vram import engine_fits, version_sizes

    engines = [m for m in ctx.version.models if on_gpu(m) and reserves_memory(m)]
    if not engines:
        return []
    gib = ctx.planned_gpu_gib()
    if gib is None:
        where = ("the cluster's GPUs are not this machine's" if ctx.ray_address
                 else "no GPU here")
        return [Row("gpu memory", "warn", f"not checked: {where}; plan for a GPU size with "
                    "--gpu-memory-gib (e.g. 80 or 141)")]
    fits = {f.size.model: f for f in engine_fits(ctx.version, gib, version_sizes(ctx.version))}
    rows = []
    for m in engines:
        f = fits.get(m.name)
        if f is None:
            rows.append(Row(f"gpu memory {m.name}", "warn", "not checked: no config.json in "
                            "its folder, and not one of rc-judge-v1's published architectures"))
        else:
            rows.append(Row(f"gpu memory {m.name}", "ok" if f.fits else "fail", f.detail()))
    return rows


def answer_mass_rows(ctx: Context) -> list[Row]:
    """Each model's raw answer-token mass on the version's reference prompt against its
    ``min_answer_mass`` (loads each model, one at a time)."""
    from judge.ensemble.prompts import reference_request
    from models.base import ModelError
    from models.registry import create_backend

    rows = []
    for m in ctx.version.models:
        name = f"answer mass {m.name}"
        if m.endpoint is not None:  # a served model's is a served row (served_rows)
            continue
        if m.path and m.name not in ctx.folders:
            rows.append(Row(name, "warn", "not checked: no model folder"))
            continue
        backend = create_backend(m.spec())
        try:
            backend.load()
            mass = backend.answer_mass(reference_request(ctx.version, m.max_pixels))
        except ModelError as exc:
            rows.append(Row(name, "fail", str(exc)))
            continue
        finally:
            backend.close()
        ok = mass >= m.min_answer_mass
        rows.append(Row(name, "ok" if ok else "fail",
                        f"{mass:.4f} of the raw next-token probability on the answer tokens "
                        f"({'>=' if ok else '<'} min_answer_mass {m.min_answer_mass:g})"))
    return rows


def train_memory_rows(ctx: Context) -> list[Row]:
    """Per model, ``rcjudge train``'s estimated peak memory at its default settings against
    the device's (``judge.learn.memory.training_memory_plan``; ``train`` itself refuses an
    over-budget plan with the same estimate before any run is prepared)."""
    from judge.learn.memory import training_memory_plan
    from judge.learn.recipe import TrainConfig
    from judge.learn.step import TrainError

    if ctx.version.training is not None and any(m.members for m in ctx.version.models):
        return [Row("train memory", "ok", "not planned: its models average checkpoints")]
    if any(m.endpoint is not None for m in ctx.version.models):
        return [Row("train memory", "ok", "not planned: served models have no weights here")]
    if any(m.backend == "fake" for m in ctx.version.models):
        return [Row("train memory", "ok", "not planned: the fake backend has no weights")]
    if any(m.path and m.name not in ctx.folders for m in ctx.version.models):
        return [Row("train memory", "warn", "not planned: a model folder is missing")]
    try:
        plan = training_memory_plan(ctx.version, TrainConfig())
    except TrainError as exc:
        return [Row("train memory", "fail", str(exc))]
    return [Row(f"train memory {r['model']}", "ok" if r["fits"] else "fail",
                f"peak {_size(r['peak'])} of {_size(r['device_memory'])} on "
                f"{r['device']} ({'LoRA' if r['lora'] else 'full'}, lr {r['lr']:g}, "
                f"{r['prompt_tokens']:,} prompt tokens)") for r in plan]


def _size(n: int) -> str:
    """Bytes as GiB from 1 GiB up, else MiB."""
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"
