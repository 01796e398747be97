"""Pre-flight checks of where the models go: the GPU memory plan a batch would place, and
each model's answer-token mass (the one check that loads models: ``rcjudge doctor --load``).

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
        size = (f" = {slot.share * gpus[i].total_mib / 1024:.1f} of "
                f"{gpus[i].total_mib / 1024:.1f} GiB" if i < len(gpus) else "")
        rows.append(Row(f"gpu plan GPU {i}", "ok", f"{' + '.join(slot.models)}: "
                        f"{slot.share:.2f} <= {slot.cap:.2f}{size}{note}"))
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
