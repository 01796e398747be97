"""Operator label import (``rcjudge labels import FILE``): what people said, into the ledger.

A CSV (header row) or JSONL (one object a line) file with the columns
``run_id, attempt, success, failure_class, labeled_by, labeled_at``, in UTF-8
(a line with other bytes or a NUL byte is an error naming its byte offset). Every row
is checked first and every bad row is reported with its line number and field;
a file with any error imports nothing. Then all rows go in one transaction.

Values: booleans are ``true/false/1/0/yes/no`` in any case (JSON ``true``/
``false`` and ``0``/``1`` too), and ``success`` cannot be true when ``attempt``
is false; ``failure_class`` may be empty (no class given), else it must be a
class of the current taxonomy (``configs/taxonomy.yaml``), and it must be empty
when ``success`` is true; ``labeled_at`` is ISO 8601 (a value
without an offset is taken as UTC). A row with the same ``run_id``,
``labeled_by`` and ``labeled_at`` as a stored label is already there and skipped,
so importing a file twice adds nothing.
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from judge.ensemble.taxonomy import Taxonomy, load_taxonomy
from judge.ledgers import schema as S
from judge.ledgers.errors import LabelImportError, LedgerError, RowError
from judge.ledgers.records import Label, utc
from judge.ledgers.review import Review, add_reviewed_labels, write_reviewed_labels
from judge.ledgers.rounds import asserted_round
from judge.ledgers.store import Ledger
from rcjudge import strict_json

COLUMNS: tuple[str, ...] = ("run_id", "attempt", "success", "failure_class", "labeled_by",
                            "labeled_at")
_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no"})
_BOOL_HINT = "expected true/false/1/0/yes/no"


@dataclass(frozen=True)
class ImportSummary:
    """What an import did."""

    file: str
    rows: int
    imported: int
    already_present: int
    runs: int
    from_queue: int = 0  # rows whose run a queue file (--picks) picked
    round_id: int | None = None  # --random-sample: the asserted round recorded
    frame: int | None = None  # its runs (the file's runs and every unlabelled one)
    pi: float | None = None  # each run's inclusion probability, runs / frame


def _text_lines(path: Path) -> tuple[list[str], list[RowError]]:
    """The file's physical lines (ends kept, a UTF-8 BOM dropped), or one error per line
    that is not UTF-8 or holds a NUL byte (offsets count bytes from the file's start)."""
    data = path.read_bytes()
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return [], [RowError(1, "encoding", "the file starts with a UTF-16 byte order mark "
                             f"({data[:2].hex(' ')}); expected a UTF-8 file")]
    offset = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    # surrogateescape keeps every byte; line ends are ASCII, so lines split as in the file
    text = data[offset:].decode("utf-8", errors="surrogateescape")
    lines = io.StringIO(text, newline="").readlines()
    errors: list[RowError] = []
    for number, line in enumerate(lines, start=1):
        raw = line.encode("utf-8", errors="surrogateescape")
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append(RowError(number, "encoding", f"byte 0x{raw[exc.start]:02x} at offset "
                                   f"{offset + exc.start} is not UTF-8 ({exc.reason}); "
                                   "expected a UTF-8 file"))
        else:
            if (nul := raw.find(b"\x00")) >= 0:
                errors.append(RowError(number, "row", f"NUL byte at offset {offset + nul}; "
                                       "expected text without NUL bytes"))
        offset += len(raw)
    return lines, errors


def _rows(path: Path, optional: tuple[str, ...] = ()
          ) -> Iterator[tuple[int, dict[str, Any] | RowError]]:
    """(line, raw row) pairs of a CSV or JSONL file, or (line, error) for unreadable lines.

    A file with bytes that are not UTF-8 text (or NUL) yields only those errors.
    ``optional`` columns may appear beside :data:`COLUMNS` (``rcjudge eval``'s
    ``near_threshold``); the import itself takes none.
    """
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise LedgerError(f"{path}: suffix {suffix!r}; expected .csv or .jsonl")
    lines, errors = _text_lines(path)
    if errors:
        yield from ((e.line, e) for e in errors)
        return
    if suffix == ".csv":
        reader = csv.reader(io.StringIO("".join(lines), newline=""))
        header = next(reader, None)
        if header is None:
            yield 1, RowError(1, "header", "empty file; expected a header row with "
                              + ", ".join(COLUMNS))
            return
        header = [h.strip() for h in header]
        if problems := _column_problems(header, optional):
            yield 1, RowError(1, "header", problems)
            return
        line = reader.line_num + 1
        for values in reader:
            if any(v.strip() for v in values):
                if len(values) != len(header):
                    yield line, RowError(line, "row", f"{len(values)} value(s), "
                                         f"expected {len(header)}")
                else:
                    yield line, dict(zip(header, values, strict=True))
            line = reader.line_num + 1
        return
    for line, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            obj = strict_json.loads(text)
        except strict_json.StrictJsonError as exc:
            yield line, RowError(line, exc.field or "row",
                                 exc.reason if exc.field else exc.described())
            continue
        if not isinstance(obj, dict):
            yield line, RowError(line, "row", f"expected a JSON object, got "
                                 f"{type(obj).__name__}")
        elif problems := _column_problems(list(obj), optional):
            yield line, RowError(line, "columns", problems)
        else:
            yield line, obj


def _column_problems(names: list[str], optional: tuple[str, ...] = ()) -> str:
    missing = [c for c in COLUMNS if c not in names]
    unknown = [c for c in names if c not in (*COLUMNS, *optional)]
    parts = []
    if missing:
        parts.append("missing column(s) " + ", ".join(missing))
    if unknown:
        also = f", optionally {', '.join(optional)}" if optional else ""
        parts.append("unknown column(s) " + ", ".join(unknown)
                     + " (expected " + ", ".join(COLUMNS) + also + ")")
    return "; ".join(parts)


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
    return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        return None
    return value.strip() or None


def _class_problem(name: str, taxonomy: Taxonomy) -> str | None:
    """Why ``name`` is not a class of ``taxonomy`` (listing what is), or None when it is."""
    if name in taxonomy.classes:
        return None
    family = name.partition(".")[0]
    if family in taxonomy.families:
        known = f"the {family} classes are " + ", ".join(taxonomy.in_family(family))
    else:
        known = f"its family {family!r} is none of " + ", ".join(taxonomy.families)
    return f"{name!r} is not a class of the taxonomy; {known} (or leave it empty)"


def parse_row(line: int, raw: dict[str, Any],
              taxonomy: Taxonomy | None = None) -> Label | list[RowError]:
    """One raw row → a :class:`Label`, or every error of that row.

    ``taxonomy`` (default: the current ``configs/taxonomy.yaml``) lists the
    classes a ``failure_class`` may name.
    """
    taxonomy = taxonomy or load_taxonomy()
    errors: list[RowError] = []
    vals: dict[str, Any] = {}
    for name in ("run_id", "labeled_by"):
        vals[name] = _text(raw[name])
        if vals[name] is None:
            errors.append(RowError(line, name, f"empty or not text ({raw[name]!r}); "
                                   "expected a non-empty string"))
        elif "\x00" in vals[name]:
            errors.append(RowError(line, name, f"{vals[name]!r} holds a NUL character; "
                                   "expected text without NUL"))
    for name in ("attempt", "success"):
        vals[name] = _bool(raw[name])
        if vals[name] is None:
            errors.append(RowError(line, name, f"{raw[name]!r} is not a boolean; {_BOOL_HINT}"))
    if vals["attempt"] is False and vals["success"] is True:
        errors.append(RowError(line, "success", "true with attempt false; a run that was not "
                               "attempted cannot succeed (expected success false when attempt "
                               "is false)"))
    fc = raw["failure_class"]
    if fc is not None and not isinstance(fc, str):
        errors.append(RowError(line, "failure_class", f"{fc!r} is not text"))
    vals["failure_class"] = _text(fc) if isinstance(fc, str) else None
    if vals["failure_class"] is not None and vals["success"] is not True and (
            problem := _class_problem(vals["failure_class"], taxonomy)):
        errors.append(RowError(line, "failure_class", problem))
    if vals["success"] is True and vals["failure_class"] is not None:
        errors.append(RowError(line, "failure_class", f"{vals['failure_class']!r} given for a "
                               "successful run; expected empty when success is true"))
    at = raw["labeled_at"]
    try:
        if not isinstance(at, str):
            raise ValueError
        vals["labeled_at"] = utc(datetime.fromisoformat(at.strip()))
    except ValueError:
        errors.append(RowError(line, "labeled_at", f"{at!r} is not an ISO 8601 timestamp "
                               "(e.g. 2026-09-16T14:02:00Z)"))
    except OverflowError:  # its offset moves it out of years 1..9999
        errors.append(RowError(line, "labeled_at", f"{at!r} is outside years 1-9999 in UTC"))
    return errors or Label(**vals)


def check_label(run_id: str, attempt: object, success: object, failure_class: object,
                labeled_by: object, labeled_at: object) -> Label | list[RowError]:
    """One label given one at a time (the API's ``POST …/labels``, the review page),
    checked exactly as a row of a label file: a :class:`Label`, or every error (``line``
    0), each naming its field."""
    return parse_row(0, {"run_id": run_id, "attempt": attempt, "success": success,
                         "failure_class": failure_class, "labeled_by": labeled_by,
                         "labeled_at": labeled_at})


def read_labels(path: str | Path, taxonomy: Taxonomy | None = None,
                ) -> tuple[list[tuple[int, Label]], list[RowError]]:
    """Parse a label file: (line, label) pairs and every row error (file order).

    Classes are checked against ``taxonomy`` (default: the current one).
    """
    path = Path(path)
    if not path.is_file():
        raise LedgerError(f"{path}: label file not found")
    taxonomy = taxonomy or load_taxonomy()
    labels: list[tuple[int, Label]] = []
    errors: list[RowError] = []
    seen: dict[tuple[str, str, datetime], int] = {}
    for line, raw in _rows(path):
        if isinstance(raw, RowError):
            errors.append(raw)
            continue
        parsed = parse_row(line, raw, taxonomy)
        if isinstance(parsed, list):
            errors.extend(parsed)
            continue
        key = (parsed.run_id, parsed.labeled_by, parsed.labeled_at)
        if key in seen:
            errors.append(RowError(line, "row", f"duplicate of line {seen[key]} "
                                   "(same run_id, labeled_by, labeled_at)"))
            continue
        seen[key] = line
        labels.append((line, parsed))
    return labels, errors


def _known_runs(ledger: Ledger, run_ids: set[str]) -> set[str]:
    known: set[str] = set()
    ids = sorted(run_ids)
    with ledger.engine.connect() as conn:
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            known.update(conn.execute(sa.select(S.runs.c.run_id).where(
                S.runs.c.run_id.in_(chunk), S.runs.c.owner == ledger.owner)).scalars())
    return known


def import_labels(ledger: Ledger, path: str | Path,
                  reviews: Mapping[str, Review] | None = None,
                  random_sample: bool = False) -> ImportSummary:
    """Check every row of a label file, then import all of them in one transaction.

    ``reviews`` (run id -> the queue's pick, ``judge.learn.select.picked_reviews``): a row
    whose run the queue picked is stored with its ``review_labels`` row, as a label made on
    the page is; the others read ``unqueued`` in ``review stats``.

    ``random_sample``: the lab asserts the file's runs are a uniform random sample of the
    runs that had no label; recorded, in the same transaction, as an ``asserted`` sampling
    round (``judge.ledgers.rounds.asserted_round``: π = runs / frame), so a rectified rate
    may use these labels.

    Raises:
        LabelImportError: listing every bad row (line, field, message); nothing imported.
        LedgerError: the file is missing or has an unknown suffix; ``random_sample`` with
            ``reviews``, or a run of the file that had a label from elsewhere.
    """
    labels, errors = read_labels(path)
    known = _known_runs(ledger, {lb.run_id for _, lb in labels})
    errors.extend(RowError(line, "run_id", f"unknown run {lb.run_id!r}: not in the runs ledger")
                  for line, lb in labels if lb.run_id not in known)
    if errors:
        raise LabelImportError(str(path), sorted(errors, key=lambda e: e.line))
    reviews = reviews or {}
    if random_sample and reviews:
        raise LedgerError("--random-sample: not with --picks (a queue file's picks carry their "
                          "own draw)")
    asserted = None
    if random_sample:
        with ledger.transaction() as tx:
            tx.check_owned([lb.run_id for _, lb in labels], "label")
            imported = write_reviewed_labels(tx.conn, [(lb, None) for _, lb in labels])
            asserted = asserted_round(tx.conn, [lb for _, lb in labels], str(path),
                                      ledger.owner)
    elif reviews:
        imported = add_reviewed_labels(ledger, [(lb, reviews.get(lb.run_id))
                                                for _, lb in labels])
    else:
        imported = ledger.add_labels([lb for _, lb in labels])
    return ImportSummary(file=str(path), rows=len(labels), imported=imported,
                         already_present=len(labels) - imported,
                         runs=len({lb.run_id for _, lb in labels}),
                         from_queue=sum(lb.run_id in reviews for _, lb in labels),
                         round_id=asserted and asserted.round_id,
                         frame=asserted and asserted.candidates,
                         pi=asserted and asserted.drawn / asserted.candidates)
