"""Datasets, sequences and versioned outcome labels in the ledger database (migration 0007).

A dataset ``owner/slug`` groups sequences; a sequence is one run (one bundle) and its
``sequence_uid`` is derived from the bundle hash alone (:func:`sequence_uid`), so the same
bundle keeps its id however it is read or renumbered. A label write validates the whole
document (:func:`judge.outcomes.labels.validate_label`, ``end_ts`` against the sequence
length when one MCAP recorded it), then in one transaction marks the previous version
not current and inserts version ``n + 1``.

Rights: ``access(dataset, key_id)`` is ``edit``, ``read`` or ``None``. ``key_id=None``
is the local operator (the CLI), who may do everything; a key that created a dataset
may edit it; a public dataset is readable by every key; otherwise a grant decides.
"""

from __future__ import annotations

import logging
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from judge.ledgers import schema as S
from judge.outcomes.errors import OutcomeError
from judge.outcomes.labels import (
    AUTONOMY_LEVELS,
    MEMBERSHIPS,
    OUTCOMES,
    SOURCES,
    TextError,
    validate_label,
)
from judge.outcomes.text import first_bad, scrub

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
ACCESS = ("read", "edit")
MAX_PAGE = 100
_log = logging.getLogger("rcjudge.outcomes")
#: Filters of the label list; each takes one value or a comma list (match any).
ENUM_FILTERS = {"outcome": OUTCOMES, "evaluation_membership": MEMBERSHIPS,
                "source": SOURCES, "autonomy_level": AUTONOMY_LEVELS}


class NotFound(OutcomeError, LookupError):
    """No such dataset, sequence or label (or the caller may not read it)."""


class Forbidden(OutcomeError, PermissionError):
    """The caller may read the dataset but not edit it."""


class Conflict(OutcomeError):
    """The dataset to create exists already."""


@dataclass(frozen=True)
class Dataset:
    dataset_id: int
    owner: str
    slug: str
    public: bool
    created_by: str | None
    created_at: datetime

    @property
    def name(self) -> str:
        return f"{self.owner}/{self.slug}"


def sequence_uid(bundle_hash: str) -> str:
    """The stable id of the sequence of a bundle: ``seq_`` + the first 32 hex of its hash."""
    if not re.fullmatch(r"[0-9a-f]{64}", bundle_hash or ""):
        raise OutcomeError(f"bundle hash {bundle_hash!r}: expected 64 lower-case hex digits")
    return "seq_" + bundle_hash[:32]


def parse_dataset(name: str) -> tuple[str, str]:
    """``owner/slug`` split and checked (letters, digits, ``.``, ``_``, ``-``; ≤ 100 each)."""
    owner, _, slug = (name or "").partition("/")
    for part, what in ((owner, "owner"), (slug, "slug")):
        if not _NAME.match(part):
            raise OutcomeError(f"dataset {name!r}: {what} {part!r} must be 1-100 letters, digits, "
                               "'.', '_' or '-', starting with a letter or digit (owner/slug)")
    return owner, slug


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def filter_pattern(name: str) -> str:
    """The regular expression of a valid value of list filter ``name``: empty, one known
    value or a comma list of them (spaces around each allowed)."""
    one = "(" + "|".join(re.escape(v) for v in ENUM_FILTERS[name]) + ")"
    return f"^( *{one} *(, *{one} *)*)?$"


def parse_filter(name: str, value: str | list[str] | None) -> list[str]:
    """One value or a comma list of a list filter, every value known; [] when absent."""
    if value is None or value == "" or value == []:
        return []
    values = value if isinstance(value, list) else value.split(",")
    values = [v.strip() for v in values]
    known = ENUM_FILTERS[name]
    bad = [v for v in values if v not in known]
    if bad:
        raise OutcomeError(f"{name}: unknown value(s) {', '.join(repr(b) for b in bad)}; "
                           f"known: {', '.join(known)}")
    return values


#: What :func:`encode_cursor` makes and :func:`decode_cursor` takes: a direction and the
#: sort key of the row it continues from (any such cursor is a position in the list).
CURSOR_PATTERN = r"^(after|before)\.[!-~]{1,200}$"


def encode_cursor(direction: str, key: str) -> str:
    """``after.<key>`` / ``before.<key>``: the page after (before) the row keyed ``key``."""
    return f"{direction}.{key}"


def decode_cursor(cursor: str) -> tuple[str, str]:
    """``("after"|"before", sequence_uid)``; raises OutcomeError on anything else."""
    if re.fullmatch(CURSOR_PATTERN, cursor or ""):
        direction, _, key = cursor.partition(".")
        return direction, key
    raise OutcomeError(f"cursor {cursor!r}: not a cursor of this list")


def _paged(conn: Connection, q: Any, key: Any, limit: int, cursor: str | None,
           field: str = "sequence_uid") -> tuple[list[Any], str | None, str | None]:
    """A page of ``q`` ordered by ``key`` from ``cursor``, and the next / previous cursors
    (``field``: the column of a row that holds its ``key``)."""
    direction, at = decode_cursor(cursor) if cursor else ("after", None)
    if direction == "after":
        page = q.where(key > at) if at is not None else q
        rows = conn.execute(page.order_by(key).limit(limit)).all()
    else:
        rows = conn.execute(q.where(key < at).order_by(key.desc()).limit(limit)).all()[::-1]
    if not rows:
        return [], None, None
    first, last = rows[0]._mapping[field], rows[-1]._mapping[field]
    earlier = conn.execute(q.where(key < first).limit(1)).first() is not None
    later = conn.execute(q.where(key > last).limit(1)).first() is not None
    return (rows, encode_cursor("after", last) if later else None,
            encode_cursor("before", first) if earlier else None)


class OutcomeStore:
    """Datasets, sequences, grants and label versions over one ledger engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _write(self) -> Connection:
        return self.engine.connect().execution_options(ledger_write=True)

    # --- datasets -----------------------------------------------------------------
    def create_dataset(self, name: str, *, public: bool = False,
                       key_id: str | None = None) -> Dataset:
        """A new dataset; an existing ``owner/slug`` is an error naming it."""
        owner, slug = parse_dataset(name)
        with self._write() as conn, conn.begin():
            if conn.execute(sa.select(S.datasets.c.dataset_id).where(
                    S.datasets.c.owner == owner, S.datasets.c.slug == slug)).first():
                raise Conflict(f"dataset {owner}/{slug}: already exists")
            dataset_id = conn.execute(S.datasets.insert().values(
                owner=owner, slug=slug, public=public, created_by=key_id,
                created_at=_now()).returning(S.datasets.c.dataset_id)).scalar_one()
            if key_id is not None:
                conn.execute(S.dataset_grants.insert().values(
                    dataset_id=dataset_id, key_id=key_id, access="edit"))
        return self.dataset(name)

    def dataset(self, name: str, key_id: str | None = None, *, edit: bool = False) -> Dataset:
        """The dataset, checked for the caller's right (NotFound if it may not read it)."""
        owner, slug = parse_dataset(name)
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(S.datasets).where(
                S.datasets.c.owner == owner, S.datasets.c.slug == slug)).first()
        if row is None:
            raise NotFound(f"dataset {owner}/{slug}: not found")
        ds = Dataset(**row._mapping)
        access = self.access(ds, key_id)
        if access is None:
            raise NotFound(f"dataset {owner}/{slug}: not found")
        if edit and access != "edit":
            raise Forbidden(f"dataset {owner}/{slug}: this key may read it but not edit it")
        return ds

    def access(self, ds: Dataset, key_id: str | None) -> str | None:
        """``edit``, ``read`` or None for ``key_id`` (None: the local operator: ``edit``)."""
        if key_id is None:
            return "edit"
        source, access = self._access_of(key_id)
        with self.engine.connect() as conn:
            return conn.execute(sa.select(access).select_from(source).where(
                S.datasets.c.dataset_id == ds.dataset_id)).scalar_one_or_none()

    def grant(self, name: str, key_id: str, access: str) -> None:
        """Give ``key_id`` ``read`` or ``edit`` on the dataset (replacing an earlier grant)."""
        if access not in ACCESS:
            raise OutcomeError(f"access {access!r}: expected read or edit")
        ds = self.dataset(name)
        g = S.dataset_grants
        where = (g.c.dataset_id == ds.dataset_id, g.c.key_id == key_id)
        with self._write() as conn, conn.begin():  # no DELETE: the API role may not (0007)
            if conn.execute(sa.select(g.c.access).where(*where)).first() is None:
                conn.execute(g.insert().values(dataset_id=ds.dataset_id, key_id=key_id,
                                               access=access))
            else:
                conn.execute(g.update().where(*where).values(access=access))

    @staticmethod
    def _access_of(key_id: str | None) -> tuple[Any, Any]:
        """The read/edit rule, in SQL: (the datasets joined with ``key_id``'s grants, the
        access expression): its grant, else ``read`` for a public dataset, else NULL (None:
        the local operator, ``edit`` on every dataset)."""
        d, g = S.datasets, S.dataset_grants
        if key_id is None:
            return d, sa.literal("edit")
        joined = d.outerjoin(g, sa.and_(g.c.dataset_id == d.c.dataset_id, g.c.key_id == key_id))
        return joined, sa.func.coalesce(g.c.access, sa.case((d.c.public.is_(True), "read")))

    def _readable(self, key_id: str | None) -> Any:
        """The datasets ``key_id`` may read, each with its name, access and sequence count
        (the rule of :meth:`access`, in SQL so that a page is a ``LIMIT``)."""
        d = S.datasets
        counts = (sa.select(S.sequences.c.dataset_id, sa.func.count().label("n"))
                  .group_by(S.sequences.c.dataset_id).subquery())
        name = (d.c.owner + "/" + d.c.slug).label("name")
        source, access = self._access_of(key_id)
        q = sa.select(d).select_from(source.outerjoin(
            counts, counts.c.dataset_id == d.c.dataset_id)).add_columns(
            name, access.label("access"), counts.c.n)
        if key_id is not None:
            q = q.where(access.is_not(None))
        return q, name

    @staticmethod
    def _dataset_row(row: Any) -> dict[str, Any]:
        return {"dataset": row.name, "public": bool(row.public), "sequences": row.n or 0,
                "access": row.access, "created_at": _iso(row.created_at)}

    def list_datasets(self, key_id: str | None = None) -> list[dict[str, Any]]:
        """Every dataset the caller may read, by name, with its sequence count."""
        q, name = self._readable(key_id)
        with self.engine.connect() as conn:
            rows = conn.execute(q.order_by(name)).all()
        return [self._dataset_row(r) for r in rows]

    def dataset_page(self, key_id: str | None = None, *, limit: int = MAX_PAGE,
                     cursor: str | None = None, slug_contains: str | None = None,
                     public: bool | None = None) -> dict[str, Any]:
        """One page of :meth:`list_datasets` by name: ``results``, ``next``, ``previous``
        (cursors; None at either end); only datasets whose slug holds ``slug_contains``
        (case-insensitive) and whose ``public`` flag is ``public``, where given."""
        if not 1 <= limit <= MAX_PAGE:
            raise OutcomeError(f"limit {limit}: must be from 1 to {MAX_PAGE}")
        q, name = self._readable(key_id)
        if slug_contains is not None:
            q = q.where(sa.func.lower(S.datasets.c.slug).contains(slug_contains.lower(),
                                                                   autoescape=True))
        if public is not None:
            q = q.where(S.datasets.c.public.is_(public))
        with self.engine.connect() as conn:
            rows, nxt, prev = _paged(conn, q, name, limit, cursor, field="name")
        return {"results": [self._dataset_row(r) for r in rows], "next": nxt,
                "previous": prev}

    def describe(self, name: str, key_id: str | None = None) -> dict[str, Any]:
        """The dataset as a row of :meth:`list_datasets` (NotFound if the caller may not
        read it)."""
        ds = self.dataset(name, key_id)
        q, _ = self._readable(key_id)
        with self.engine.connect() as conn:
            row = conn.execute(q.where(S.datasets.c.dataset_id == ds.dataset_id)).one()
        return self._dataset_row(row)

    # --- sequences ----------------------------------------------------------------
    def add_sequence(self, name: str, bundle_hash: str, bundle_uri: str,
                     length_s: float | None = None, key_id: str | None = None) -> str:
        """Put a bundle's sequence into the dataset (again: a no-op); return its uid."""
        ds = self.dataset(name, key_id, edit=True)
        uid = sequence_uid(bundle_hash)
        with self._write() as conn, conn.begin():
            if conn.execute(sa.select(S.sequences.c.sequence_uid).where(
                    S.sequences.c.dataset_id == ds.dataset_id,
                    S.sequences.c.sequence_uid == uid)).first() is None:
                conn.execute(S.sequences.insert().values(
                    dataset_id=ds.dataset_id, sequence_uid=uid, bundle_hash=bundle_hash,
                    bundle_uri=bundle_uri, length_s=length_s, added_at=_now()))
        return uid

    def sequence(self, ds: Dataset, uid: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(S.sequences).where(
                S.sequences.c.dataset_id == ds.dataset_id,
                S.sequences.c.sequence_uid == uid)).first()
        if row is None:
            raise NotFound(f"sequence {uid!r}: not in dataset {ds.name}")
        return dict(row._mapping)

    def sequences(self, ds: Dataset) -> list[dict[str, Any]]:
        """Every sequence of the dataset, in the order they were added."""
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(S.sequences).where(
                S.sequences.c.dataset_id == ds.dataset_id).order_by(
                S.sequences.c.added_at, S.sequences.c.sequence_uid)).all()
        return [dict(r._mapping) for r in rows]

    # --- labels -------------------------------------------------------------------
    def put_label(self, name: str, uid: str, doc: Any, *, key_id: str | None = None,
                  labeled_by: str | None = None) -> dict[str, Any]:
        """Validate ``doc`` and store it as the sequence's new current version."""
        ds = self.dataset(name, key_id, edit=True)
        seq = self.sequence(ds, uid)
        label = validate_label(doc, seq["length_s"])
        bad = first_bad(label)
        if bad:  # never commit what a read could not encode
            raise TextError(*bad)
        now = _now()
        t = S.sequence_outcomes
        where = (t.c.dataset_id == ds.dataset_id, t.c.sequence_uid == uid)
        with self._write() as conn, conn.begin():
            last = conn.execute(sa.select(sa.func.max(t.c.version)).where(*where)).scalar()
            version = (last or 0) + 1
            conn.execute(t.update().where(*where, t.c.is_current.is_(True)).values(
                is_current=False))
            conn.execute(t.insert().values(
                uid="out_" + secrets.token_hex(12), dataset_id=ds.dataset_id,
                sequence_uid=uid, version=version, is_current=True,
                outcome=label["outcome"], evaluation_membership=label["evaluation_membership"],
                source=label["source"], autonomy_level=label["autonomy_level"],
                model_version=label["model_version"], label=label,
                labeled_by=labeled_by if labeled_by is not None else key_id, created_at=now))
        return self.get_label(name, uid, key_id=key_id)

    def _reveal(self, row: Any, editor: bool) -> dict[str, Any]:
        label, unencodable = scrub(row.label)
        if unencodable:
            _log.warning("label %s (v%s of %s): unencodable text in %s served as U+FFFD; "
                         "see `rcjudge db check`", row.uid, row.version, row.sequence_uid,
                         ", ".join(unencodable))
        out = {"uid": row.uid, "sequence_uid": row.sequence_uid, "version": row.version,
               "is_current": bool(row.is_current), **label}
        if editor:
            out["labeled_by"] = row.labeled_by
        out["created_at"] = out["updated_at"] = _iso(row.created_at)
        order = ("uid", "sequence_uid", "version", "is_current", "outcome", "progress",
                 "quality", "speed", "subtasks", "hand_actions", "mistake_type",
                 "recovery_type", "failure_stage", "autonomy_level", "model_version",
                 "evaluation_membership", "leakage_groups", "source", "source_metadata",
                 "labeled_by", "confidence", "created_at", "updated_at")
        shown = {k: out[k] for k in order if k in out}
        if unencodable:
            shown["unencodable_fields"] = unencodable
        return shown

    def unencodable_rows(self) -> list[dict[str, Any]]:
        """Every stored label version holding text a read cannot encode (``db check``)."""
        t, d = S.sequence_outcomes, S.datasets
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(t.c.sequence_uid, t.c.version, t.c.label, d.c.owner,
                                          d.c.slug).join(d, d.c.dataset_id == t.c.dataset_id)
                                .order_by(d.c.owner, d.c.slug, t.c.sequence_uid,
                                          t.c.version)).all()
        out = []
        for r in rows:
            fields = scrub(r.label)[1]
            if fields:
                out.append({"table": "sequence_outcomes", "dataset": f"{r.owner}/{r.slug}",
                            "sequence_uid": r.sequence_uid, "version": r.version,
                            "fields": fields})
        return out

    def get_label(self, name: str, uid: str, *, key_id: str | None = None) -> dict[str, Any]:
        """The current label; NotFound when the sequence has none."""
        ds = self.dataset(name, key_id)
        self.sequence(ds, uid)
        t = S.sequence_outcomes
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(t).where(
                t.c.dataset_id == ds.dataset_id, t.c.sequence_uid == uid,
                t.c.is_current.is_(True))).first()
        if row is None:
            raise NotFound(f"sequence {uid!r} of {ds.name}: no outcome label")
        return self._reveal(row, self.access(ds, key_id) == "edit")

    def history(self, name: str, uid: str, *, key_id: str | None = None) -> list[dict[str, Any]]:
        """Every version, newest first; NotFound when there is none."""
        ds = self.dataset(name, key_id)
        self.sequence(ds, uid)
        t = S.sequence_outcomes
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(t).where(
                t.c.dataset_id == ds.dataset_id, t.c.sequence_uid == uid).order_by(
                t.c.version.desc())).all()
        if not rows:
            raise NotFound(f"sequence {uid!r} of {ds.name}: no outcome label")
        editor = self.access(ds, key_id) == "edit"
        return [self._reveal(r, editor) for r in rows]

    def list_labels(self, name: str, *, key_id: str | None = None,
                    filters: dict[str, Any] | None = None, model_version: str | None = None,
                    limit: int = MAX_PAGE, cursor: str | None = None) -> dict[str, Any]:
        """One page of current labels by ``sequence_uid``: ``results``, ``next``, ``previous``.

        ``next`` / ``previous`` are cursors (None at either end); filters as in
        :func:`parse_filter`; ``model_version`` matches exactly.
        """
        if not 1 <= limit <= MAX_PAGE:
            raise OutcomeError(f"limit {limit}: must be from 1 to {MAX_PAGE}")
        ds = self.dataset(name, key_id)
        t = S.sequence_outcomes
        q = sa.select(t).where(t.c.dataset_id == ds.dataset_id, t.c.is_current.is_(True))
        for field, value in (filters or {}).items():
            values = parse_filter(field, value)
            if values:
                q = q.where(t.c[field].in_(values))
        if model_version is not None:
            q = q.where(t.c.model_version == model_version)
        with self.engine.connect() as conn:
            rows, nxt, prev = _paged(conn, q, t.c.sequence_uid, limit, cursor)
        editor = self.access(ds, key_id) == "edit"
        return {"results": [self._reveal(r, editor) for r in rows], "next": nxt,
                "previous": prev}

    def list_sequences(self, name: str, *, key_id: str | None = None,
                       filters: dict[str, Any] | None = None, limit: int = MAX_PAGE,
                       cursor: str | None = None) -> dict[str, Any]:
        """One page of the dataset's sequences; with a filter, those whose label matches."""
        if not 1 <= limit <= MAX_PAGE:
            raise OutcomeError(f"limit {limit}: must be from 1 to {MAX_PAGE}")
        ds = self.dataset(name, key_id)
        q, t = self._sequence_rows(ds), S.sequence_outcomes
        for field, value in (filters or {}).items():
            values = parse_filter(field, value)
            if values:
                q = q.where(t.c[field].in_(values))
        with self.engine.connect() as conn:
            rows, nxt, prev = _paged(conn, q, S.sequences.c.sequence_uid, limit, cursor)
        return {"results": [self._sequence_row(r) for r in rows], "next": nxt,
                "previous": prev}

    def get_sequence(self, name: str, uid: str, *, key_id: str | None = None) -> dict[str, Any]:
        """One sequence as a row of :meth:`list_sequences` (NotFound: no dataset the caller
        may read, or no such sequence in it)."""
        ds = self.dataset(name, key_id)
        with self.engine.connect() as conn:
            row = conn.execute(self._sequence_rows(ds).where(
                S.sequences.c.sequence_uid == uid)).first()
        if row is None:
            raise NotFound(f"sequence {uid!r}: not in dataset {ds.name}")
        return self._sequence_row(row)

    @staticmethod
    def _sequence_rows(ds: Dataset) -> Any:
        """The dataset's sequences joined with their current label."""
        s, t = S.sequences, S.sequence_outcomes
        join = s.outerjoin(t, sa.and_(t.c.dataset_id == s.c.dataset_id,
                                      t.c.sequence_uid == s.c.sequence_uid,
                                      t.c.is_current.is_(True)))
        return sa.select(s.c.sequence_uid, s.c.bundle_hash, s.c.length_s, t.c.outcome,
                         t.c.version, t.c.evaluation_membership).select_from(join).where(
            s.c.dataset_id == ds.dataset_id)

    @staticmethod
    def _sequence_row(r: Any) -> dict[str, Any]:
        return {"sequence_uid": r.sequence_uid, "bundle_hash": r.bundle_hash,
                "length_s": r.length_s, "outcome": r.outcome, "outcome_version": r.version,
                "evaluation_membership": r.evaluation_membership}

    def current_labels(self, ds: Dataset) -> dict[str, dict[str, Any]]:
        """sequence_uid -> current label row (as revealed to an editor), for exports."""
        t = S.sequence_outcomes
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(t).where(
                t.c.dataset_id == ds.dataset_id, t.c.is_current.is_(True))).all()
        return {r.sequence_uid: self._reveal(r, True) for r in rows}
