"""Pre-flight rows of served models (backend openai): reachable and listing the model, answering
with log-probabilities, and the answer-token mass on the version's reference prompt.

Where it sits: after ``model_rows`` (a served model has no folder), in ``rcjudge doctor`` and
first thing in ``rcjudge batch`` (a server that is down refuses the batch in one line before Ray
starts). Nothing loads weights here: each check is one or a few HTTP requests to the endpoint
the version names (``models.served``); a red row's detail is the backend's own one-line error,
which names the member and the endpoint.
"""

from __future__ import annotations

from judge.preflight.rows import Context, Row


def served_rows(ctx: Context) -> list[Row]:
    """Three rows per served model; after a red one, its next rows are not checked."""
    rows: list[Row] = []
    for m in ctx.version.models:
        if m.endpoint is not None:
            rows += _member_rows(ctx, m)
    return rows


def _member_rows(ctx: Context, m) -> list[Row]:
    from judge.ensemble.prompts import reference_request
    from models.endpoint import ServedClient, ServedError
    from models.registry import create_backend
    from models.served import listed, read_identity

    ep, names = m.endpoint, (f"served {m.name}", f"logprobs {m.name}", f"answer mass {m.name}")
    rows: list[Row] = []

    def skipped() -> list[Row]:
        return rows + [Row(n, "warn", f"not checked: see {rows[-1].name}")
                       for n in names[len(rows):]]

    try:
        client = ServedClient(m.name, ep)
    except ServedError as exc:
        rows.append(Row(names[0], "fail", str(exc)))
        return skipped()
    try:
        card = listed(client)
        rows.append(Row(names[0], "ok", f"{ep.base_url} lists {ep.model} (owned_by "
                        f"{card.get('owned_by')}, root {card.get('root')}, max_model_len "
                        f"{card.get('max_model_len')})"))
        identity, vllm = read_identity(client)
        how = ("vLLM: restricted to the answers' token ids" if vllm
               else f"top {ep.top_logprobs} log-probabilities, spellings by text")
        rows.append(Row(names[1], "ok", f"{identity['model']} answers with log-probabilities "
                        f"({how}); system_fingerprint {identity['system_fingerprint']}"))
    except ServedError as exc:
        rows.append(Row(names[len(rows)], "fail", str(exc)))
        return skipped()
    finally:
        client.close()
    if m.min_answer_mass <= 0:
        rows.append(Row(names[2], "ok", "not probed: min_answer_mass 0"))
        return rows
    backend = create_backend(m.spec())
    try:
        backend.load()
        mass = backend.answer_mass(reference_request(ctx.version, m.max_pixels))
    except ServedError as exc:
        rows.append(Row(names[2], "fail", str(exc)))
        return rows
    finally:
        backend.close()
    ok = mass >= m.min_answer_mass
    rows.append(Row(names[2], "ok" if ok else "fail",
                    f"{mass:.4f} of the raw next-token probability on the answer tokens "
                    f"({'>=' if ok else '<'} min_answer_mass {m.min_answer_mass:g})"))
    return rows
