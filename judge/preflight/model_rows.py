"""Pre-flight checks of each model's files: folder present and fingerprinted, processor loads,
worst-case prompt tokens against the context.

Where it sits: after ``rows`` (devices, versions), before any model loads. The folders found
and the processors loaded are kept in the :class:`~judge.preflight.rows.Context` for the
checks after them (the prompt-token budget counts with the loaded processors).
"""

from __future__ import annotations

from pathlib import Path

from judge.errors import ConfigError
from judge.preflight.rows import Context, Row


def _size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*")
             if p.is_file() and p.relative_to(folder).parts[0] != ".cache"]
    return len(files), sum(p.stat().st_size for p in files)


def model_rows(ctx: Context) -> list[Row]:
    """Per model with files: its folder present, complete against its fetch record, hashed
    into the fingerprint (the digest cache makes a second run cheap)."""
    from judge.ensemble.fingerprint import _DigestCache, folder_digest
    from models.hub import missing_files, read_manifest

    cache, rows = _DigestCache(), []
    for m in ctx.version.models:
        name = f"model {m.name}"
        if not m.path:
            rows.append(Row(name, "ok", f"backend {m.backend}: no files"))
            continue
        try:
            folder = m.checkpoint()
        except ConfigError as exc:
            fetch = (f"; fetch it: rcjudge models fetch {ctx.version.name}" if m.repo else "")
            rows.append(Row(name, "fail", f"no weights: {exc}{fetch}"))
            continue
        record = read_manifest(folder)
        if record is not None and (gone := missing_files(folder, record)):
            rows.append(Row(name, "fail", f"{folder}: {len(gone)} of {len(record['files'])} "
                            f"fetched files missing or cut short ({gone[0]}, ...): re-run "
                            f"rcjudge models fetch {ctx.version.name}"))
            continue
        n, size = _size(folder)
        detail = f"{folder}: {n} files, {size / 1e9:.2f} GB, files sha256 " \
                 f"{folder_digest(folder, cache)[:12]}"
        status = "ok"
        if record is not None:
            detail += f", fetched {record['repo']}@{record['revision'][:12]}"
            if m.revision and record["revision"] != m.revision:
                status = "warn"
                detail += f" but the version pins {m.revision[:12]}: re-run rcjudge models fetch"
        ctx.folders[m.name] = folder
        rows.append(Row(name, status, detail))
    cache.save()
    return rows


def processor_rows(ctx: Context) -> list[Row]:
    """Per model folder found: ``AutoProcessor.from_pretrained`` (tokenizer, image processor,
    chat template; no weights). A missing extra (e.g. ``num2words``) is named."""
    rows = []
    for m in ctx.version.models:
        if not m.path:
            continue
        folder = ctx.folders.get(m.name)
        if folder is None:
            rows.append(Row(f"processor {m.name}", "warn", "not checked: no model folder"))
            continue
        from transformers import AutoProcessor  # only where there is a folder to read

        try:
            proc = AutoProcessor.from_pretrained(folder)
        except ImportError as exc:
            rows.append(Row(f"processor {m.name}", "fail", f"{folder}: needs {exc.name!r} "
                            f"({str(exc).splitlines()[0]})"))
            continue
        except (OSError, ValueError, KeyError, TypeError) as exc:
            rows.append(Row(f"processor {m.name}", "fail",
                            f"{folder}: {type(exc).__name__}: {str(exc).splitlines()[0]}"))
            continue
        ctx.processors[m.name] = proc
        tok = getattr(proc, "tokenizer", proc)
        rows.append(Row(f"processor {m.name}", "ok", f"{type(proc).__name__}, vocabulary "
                        f"{len(tok)}, chat template "
                        f"{'set' if getattr(proc, 'chat_template', None) else 'none'}"))
    return rows


def prompt_token_table_rows(table: list[dict]) -> list[Row]:
    """Rows from ``judge.ensemble.budget.prompt_token_table``'s rows (one per model x
    cameras x frame size x question): per model its worst case against ``max_model_len``."""
    rows = []
    for model in dict.fromkeys(r["model"] for r in table):
        mine = [r for r in table if r["model"] == model]
        over = [r for r in mine if not r["fits"]]
        worst = max(over or mine, key=lambda r: r["tokens"])
        where = (f"{worst['cameras']} camera(s) at {worst['width']}x{worst['height']}, "
                 f"{worst['question']}")
        if over:
            rows.append(Row(f"prompt tokens {model}", "fail", f"{len(over)} of {len(mine)} "
                            f"prompts overflow; worst {worst['tokens']:,} tokens ({where}) > "
                            f"max_model_len {worst['max_model_len']:,}"))
        else:
            limit = worst["max_model_len"]
            of = f"{limit:,}" if limit is not None else "no stated limit of"
            rows.append(Row(f"prompt tokens {model}", "ok", f"worst {worst['tokens']:,} of "
                            f"{of} tokens ({where})"))
    return rows


def prompt_token_rows(ctx: Context) -> list[Row]:
    """Worst-case prompt tokens vs ``max_model_len`` (``judge.ensemble.budget``, helper H1)."""
    try:
        from judge.ensemble.budget import prompt_token_table
    except ModuleNotFoundError as exc:
        if exc.name != "judge.ensemble.budget":
            raise
        return [Row("prompt tokens", "warn", "not checked: judge.ensemble.budget is not in "
                    "this build")]
    if all(m.endpoint is not None for m in ctx.version.models):
        return [Row("prompt tokens", "ok", "served models: each server counts its own prompt "
                    "tokens against its --max-model-len (a prompt over it is that request's "
                    "one-line fault)")]
    if not ctx.processors:
        return [Row("prompt tokens", "warn", "not checked: no processor loaded (see the "
                    "model and processor rows)")]
    table = prompt_token_table(ctx.version, processors=ctx.processors)
    return prompt_token_table_rows(table)
