"""Request and response shapes of the Judge API (spec/judge_api.md), as pydantic models.

Only shapes live here; the logic that serves them is callable without HTTP.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, RootModel

from judge.api.auth import RIGHTS
from judge.outcomes.labels import AUTONOMY_LEVELS, LEAKAGE_KEYS, MEMBERSHIPS, OUTCOMES, SOURCES

_NonEmpty = Field(min_length=1)


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Policy(_Shape):
    """Who made the policy under test. Never enters a judge prompt."""

    vendor: str = _NonEmpty
    name: str = _NonEmpty
    version: str = _NonEmpty
    checkpoint: str = Field(min_length=1, description="Content hash of the weights, e.g. sha256:…")


class Body(_Shape):
    """The robot body the run was recorded on."""

    arm: str = _NonEmpty
    hand: str = _NonEmpty
    calibrated_at: str = Field(min_length=1, description="Date of the last calibration.")
    dof: int | None = Field(None, ge=0, description="Degrees of freedom of arm + hand "
                            "(required by intake: configs/attribution.yaml).")
    mount_h_mm: float | None = Field(None, description="Mount height in millimetres "
                                     "(required by intake).")


class BodyRequest(Body):
    """The robot body as a judgment request sends it: ``dof`` and ``mount_h_mm`` are two of
    the 11 attribution fields intake requires (configs/attribution.yaml), so neither may
    be null or missing (a 422 names every missing field)."""

    dof: int = Field(ge=0, description="Degrees of freedom of arm + hand.")
    mount_h_mm: float = Field(description="Mount height in millimetres.")


class Task(_Shape):
    """The task: its catalog id and tier."""

    id: str = _NonEmpty
    tier: str = _NonEmpty


class Reset(_Shape):
    """How the scene was reset before the run (optional)."""

    type: str = _NonEmpty
    seconds: float | None = Field(None, ge=0)
    operator_min: float | None = Field(None, ge=0)


class Attribution(_Shape):
    """One run's attribution: 11 required fields (configs/attribution.yaml); env, seed, reset."""

    policy: Policy
    body: Body
    task: Task
    env: dict[str, Any] | None = Field(
        None, description="Scene conditions (lighting, clutter, friction…); optional, kept.")
    seed: str | int | None = Field(None, description="Seed of the run; optional, kept.")
    reset: Reset | None = None


EnvValue = float | int | str | bool


class Env(RootModel[dict[str, EnvValue]]):
    """Scene conditions of a run (e.g. ``lighting_k``, ``clutter``, ``friction_mu``): a map
    of names to a number, string or boolean; sent with a judgment, shown with its run."""


def _version_name(v: str) -> str:
    """A judge version's name, never a file: a caller must not choose a version file (with a
    served model's endpoint in it) the server would load (docs/served.md)."""
    if v.lower().endswith((".yaml", ".yml")):
        raise ValueError("a judge version name, not a file: the server judges with the "
                         "versions it holds (GET /v1/judge-versions)")
    return v


#: A judge version's name as a request gives it (letters, digits, ``.``, ``_``, ``-``).
VersionName = Annotated[str, Field(min_length=1, max_length=200,
                                   pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$"),
                        AfterValidator(_version_name)]


class JudgmentRequest(Attribution):
    """``POST /v1/judgments`` body: the bundle by URI, its attribution, the judge version."""

    body: BodyRequest
    bundle_uri: str = Field(min_length=1, max_length=2048,
                            description="Bundle folder: local path or fsspec URI.")
    judge: VersionName = Field("rc-judge-v1", description="Judge version to apply (a name).")
    env: Env | None = Field(
        None, description="Scene conditions (lighting, clutter, friction…); optional, kept.")


# --- answers ---------------------------------------------------------------------------
class JobStatus(StrEnum):
    """Where an asynchronous job is."""

    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"


class CellStatus(StrEnum):
    """``ok``: the cell shows a number; ``insufficient``: n < 40, no number."""

    ok = "ok"
    insufficient = "insufficient"


class KeyMode(StrEnum):
    """``live`` keys read and write live data; ``test`` keys only the test database."""

    live = "live"
    test = "test"


#: The rights a key can be granted (judge.api.auth.RIGHTS), one enum member each.
Right = StrEnum("Right", {name.replace(":", "_"): name for name in RIGHTS})
Right.__doc__ = "A right a key can be granted (docs/api.md, 'Keys and rights')."


class EventType(StrEnum):
    """The four webhook event types."""

    judgment_completed = "judgment.completed"
    rejudge_completed = "rejudge.completed"
    coefficients_published = "coefficients.published"
    calibration_disagreement = "calibration.disagreement"


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChargedTo(_Out):
    """Who pays for a judged call."""

    rcsn: str | None = Field(description="Contract serial number; null when billed per key.")
    cell_id: str | None = Field(description="Test cell the run was recorded in; null if unknown.")
    key_id: str = Field(description="The API key charged (its public id).")


class JudgmentResponse(_Out):
    """``200`` of ``POST /v1/judgments`` and ``GET /v1/judgments/{judgment_id}``."""

    judgment_id: str = Field(description="``jd_<n>``.")
    run_id: str
    attempt: bool = Field(description="Did the policy try the task (its own question).")
    success: bool = Field(description="Did it complete the task (its own question).")
    failure_class: str | None = Field(description="Taxonomy class on a failure; null otherwise.")
    counts_against_policy: bool = Field(description="From the taxonomy; an empty class counts.")
    attempt_confidence: float = Field(ge=0, le=1)
    success_confidence: float = Field(ge=0, le=1)
    charged_to: ChargedTo | None = Field(description="Null when read back, not judged now.")
    judge_version: str
    table_row_id: str | None = Field(description="``cf_<n>``: this run's coefficients row.")


class JudgmentList(_Out):
    """A page of judgments, newest first."""

    data: list[JudgmentResponse]
    next_cursor: str | None = Field(description="Pass as ``cursor`` for the next page.")


class JobResult(_Out):
    """The outcome of a finished judging job."""

    judgment: JudgmentResponse | None = None
    error: Problem | ValidationProblem | None = None


class Problem(_Out):
    """RFC 9457 problem details (``application/problem+json``)."""

    type: str = Field("about:blank", description="URI of the problem type.")
    title: str
    status: int = Field(ge=400, le=599, description="Equals the HTTP status.")
    detail: str
    instance: str | None = None


class InvalidParam(_Out):
    """One parameter at fault in a 422 (RFC 9457's ``invalid-params`` example member)."""

    name: str = Field(description="Dotted path of a field in the request body (``body.dof``: "
                      "the robot body's dof), or a query, path or header parameter's name "
                      "(``cursor``, ``Idempotency-Key``); ``(request body)`` for the whole body.")
    reason: str


class ValidationProblem(Problem):
    """A 422: the problem, the parameters at fault and, for attribution, every missing field."""

    status: int = Field(ge=422, le=422, description="Always 422.")
    invalid_params: list[InvalidParam] = Field(description="The parameters at fault; empty "
                                               "when no single parameter is.")
    missing: list[str] | None = Field(None, description="Attribution fields missing, in "
                                      "configs/attribution.yaml's order (POST /v1/judgments).")


class Job(_Out):
    """An asynchronous judging job (``Prefer: respond-async``)."""

    job_id: str
    status: JobStatus
    created_at: str
    finished_at: str | None
    result: JobResult | None


class UsageLine(_Out):
    """One charge: a judged call, what it cost, and the rights the key held when charged."""

    judgment_id: str = Field(description="``jd_<n>``: the judgment the call wrote.")
    amount_cents: int = Field(ge=0)
    rights_granted: list[Right] = Field(description="The key's rights_granted at the charge.")
    recorded_at: str


class Usage(_Out):
    """What the calling key was charged: $0.60 per judged call; replays and errors are free.

    The totals cover every charge; ``lines`` is one page of them, oldest first.
    """

    key_id: str
    calls: int = Field(ge=0, description="Judged calls charged.")
    amount_cents: int = Field(ge=0)
    amount_usd: str = Field(description="Exact decimal, e.g. ``1.20``.")
    price_per_call_usd: str
    lines: list[UsageLine]
    next_cursor: str | None = Field(description="Pass as ``cursor`` for the next page of lines.")


class KeyInfo(_Out):
    """The calling key: its id, mode and rights (never the key itself)."""

    key_id: str
    name: str
    mode: KeyMode
    rights_granted: list[Right]
    created_at: str


JobResult.model_rebuild()


# --- runs, labels, calibration -----------------------------------------------------------
class TaskOut(_Out):
    """A run's task: ``id`` is null on tier B (a tier-B task id is never returned)."""

    id: str | None
    tier: str


class RunResponse(_Out):
    """A recorded run (what happened), as the API shows it."""

    run_id: str
    bundle_hash: str
    policy: Policy
    body: Body
    task: TaskOut
    env: Env | None = Field(description="Scene conditions as sent; null when none were.")
    seed: str | None = Field(description="The run's seed as text; null when none was sent.")
    reset: Reset | None = Field(description="How the scene was reset; null when not sent.")
    duration_s: float
    cycle_sec: float
    recorded_at: str


class RunList(_Out):
    """A page of runs."""

    data: list[RunResponse]
    next_cursor: str | None


#: Text with something besides whitespace, no NUL (``judge.ledgers.labels`` strips it).
NOT_BLANK = r"^[^\x00]*[^\s\x00][^\x00]*$"


class LabelRequest(_Out):
    """``POST /v1/runs/{run_id}/labels``: what a person said about a run. As a label file's
    row (``judge.ledgers.labels.check_label``): a run not attempted did not succeed, and a
    success names no failure class."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"allOf": [
        {"anyOf": [{"properties": {"attempt": {"type": "boolean", "const": True}}},
                   {"properties": {"success": {"type": "boolean", "const": False}}}]},
        {"anyOf": [{"properties": {"success": {"type": "boolean", "const": False}}},
                   {"properties": {"failure_class": {"type": "null"}}}]}]})

    attempt: bool
    success: bool
    failure_class: str | None = Field(None, max_length=200,
                                      description="Taxonomy class; null when not given.")
    labeled_by: str = Field(min_length=1, max_length=200,
                            json_schema_extra={"pattern": NOT_BLANK})
    labeled_at: str | None = Field(None, description="RFC 3339 date-time (UTC when it has "
                                   "no offset); now when null.",
                                   json_schema_extra={"format": "date-time"})


class LabelResponse(_Out):
    """One stored operator label."""

    label_id: int
    run_id: str
    attempt: bool
    success: bool
    failure_class: str | None
    labeled_by: str
    labeled_at: str


class LabelList(_Out):
    """Every label of a run, oldest first (the last one is current)."""

    data: list[LabelResponse]


class CalibrationRow(_Out):
    """A judgment that disagrees with its run's current operator label."""

    judgment_id: str
    run_id: str
    judge_version: str
    attempt: bool
    success: bool
    failure_class: str | None
    label_attempt: bool
    label_success: bool
    label_failure_class: str | None
    attempt_disagrees: bool
    success_disagrees: bool
    class_disagrees: bool


class CalibrationSet(_Out):
    """The calibration set: the training data of the next judge version."""

    data: list[CalibrationRow]


# --- taxonomy, judge versions ------------------------------------------------------------
class TaxonomyClass(_Out):
    """One failure class and whether it counts against the policy."""

    name: str
    family: str
    counts_against_policy: bool
    description: str


class TaxonomyFamily(_Out):
    """A family of failure classes."""

    name: str
    description: str


class TaxonomyResponse(_Out):
    """The failure taxonomy (configs/taxonomy.yaml): exemption is decided here, not in code."""

    families: list[TaxonomyFamily]
    classes: list[TaxonomyClass]
    exempt_count: int = Field(description="Classes that do not count against the policy.")
    empty_class_counts_against_policy: bool = Field(
        description="Always true: an unclassified failure is not exempt.")


class JudgeModel(_Out):
    """One of a judge version's three models."""

    name: str
    backend: str


class JudgeVersionResponse(_Out):
    """A judge version: its models and, once it has judged, its fingerprint."""

    name: str
    description: str
    models: list[JudgeModel]
    fingerprint: str | None = Field(description="Recorded on first use; null before.")


class JudgeVersionList(_Out):
    data: list[JudgeVersionResponse]


# --- re-judge jobs -----------------------------------------------------------------------
class RejudgeRequest(_Out):
    """``POST /v1/rejudge-jobs``: re-judge the caller's runs with another judge version."""

    judge: VersionName = Field(description="The new judge version (a name).")
    run_ids: list[str] | None = Field(None, max_length=10000,
                                      description="Runs to re-judge; all of the key's if null.")


class RejudgeFailure(_Out):
    run_id: str
    detail: str


class RejudgeJob(_Out):
    """A re-judge job: new judgment rows under the new version, nothing overwritten."""

    job_id: str
    status: JobStatus
    judge: str
    runs: int = Field(ge=0)
    judged: int = Field(ge=0)
    failed: list[RejudgeFailure]
    created_at: str
    finished_at: str | None


# --- coefficients ------------------------------------------------------------------------
class CoefficientCell(_Out):
    """One published cell: policy × body × task family × tier × judge version."""

    cell_id: str
    policy: str
    body: str
    task_family: str
    tier: str
    judge_version: str
    task_families: list[str] = Field(description="Families the cell covers (several when "
                                     "broadened).")
    tasks: int = Field(ge=0, description="Distinct tasks in the cell (≥ 5 on tier B).")
    broadened: bool = Field(description="A coarser cell than asked for (tier B, k = 5).")
    n: int = Field(ge=0, description="Runs in the cell (exempt failures excluded).")
    status: CellStatus
    success_rate: float | None = Field(description="Null when insufficient.")
    exempt_failures: int = Field(ge=0)
    rectified_rate: float | None = Field(
        None, description="The success rate of the cell's counted runs rectified by their "
        "owners' labels from sampling rounds (prediction-powered; docs/coefficients.md). "
        "Null when insufficient, on tier B, without a usable label, or with too few for an "
        "interval.")
    rectified_interval: list[float] | None = Field(
        None, min_length=2, max_length=2, description="Its 95 % interval [low, high].")
    rectified_method: str | None = Field(
        None, description="ppi++, active-ppi++ or clopper-pearson; none: too few labels.")
    rectified_runs: int = Field(0, ge=0, description="The counted runs it covers: inside a "
                                "sampling round of their owner usable for the version.")
    rectified_labels: int = Field(0, ge=0, description="The sampled labels it uses.")
    rectified_note: str | None = Field(None, description="Why there is no rectified value, "
                                       "or how it was read.")


class CoefficientsQuery(_Out):
    """The filters a coefficients answer was asked with (null: not given); the cells that
    answer may be coarser on tier B (``broadened``)."""

    policy: str | None
    body: str | None
    task_family: str | None
    tier: str | None
    judge_version: str | None


class CoefficientsTable(_Out):
    """The public coefficients table."""

    min_n: int = Field(description="Runs a cell needs to show a number (40).")
    k: int = Field(description="Distinct tasks every tier-B cell covers at least (5).")
    query: CoefficientsQuery
    data: list[CoefficientCell]


# --- attestations (read only) --------------------------------------------------------------
class Attestation(_Out):
    """An endorsement issued offline (``rcjudge attestations import``); read only here."""

    attestation_id: str
    subject: str
    statement: str
    issued_by: str
    issued_at: str


class AttestationList(_Out):
    data: list[Attestation]


# --- webhooks ----------------------------------------------------------------------------
class WebhookEndpointRequest(_Out):
    """``POST /v1/webhook-endpoints``."""

    url: str = Field(min_length=1, max_length=2048, description="https://… (http on loopback "
                     "only for test keys).")
    events: list[EventType] = Field(min_length=1, max_length=4, description="Event types.")


class WebhookEndpoint(_Out):
    """A webhook endpoint (its secret is shown only when created or rotated)."""

    endpoint_id: str
    url: str
    events: list[EventType]
    enabled: bool
    disabled_reason: str | None
    created_at: str


class WebhookEndpointWithSecret(WebhookEndpoint):
    """A webhook endpoint with its signing secret (``whsec_…``), shown once."""

    secret: str


class WebhookEndpointList(_Out):
    data: list[WebhookEndpoint]


class WebhookDelivery(_Out):
    """One delivery attempt of one message."""

    delivery_id: int
    message_id: str
    event_type: EventType
    attempt: int
    status: int | None = Field(description="The receiver's HTTP status; null: no answer.")
    error: str | None
    delivered_at: str


class WebhookDeliveryList(_Out):
    data: list[WebhookDelivery]




# --- webhook events (the schema's ``webhooks``) -------------------------------------------
class RejudgeCompletedData(_Out):
    job_id: str
    judge: str
    judged: int = Field(ge=0)
    failed: int = Field(ge=0)


class CoefficientsPublishedData(_Out):
    judge_version: str
    cells_now_published: int = Field(ge=0)


class JudgmentCompletedEvent(_Out):
    """``judgment.completed``: a charged judgment was written."""

    type: Literal["judgment.completed"]
    timestamp: str
    test: bool = Field(False, description="True on a sample sent by ``…/test``.")
    data: JudgmentResponse


class RejudgeCompletedEvent(_Out):
    """``rejudge.completed``: a re-judge job finished."""

    type: Literal["rejudge.completed"]
    timestamp: str
    test: bool = Field(False, description="True on a sample sent by ``…/test``.")
    data: RejudgeCompletedData


class CoefficientsPublishedEvent(_Out):
    """``coefficients.published``: a block of rows was released into the public table."""

    type: Literal["coefficients.published"]
    timestamp: str
    test: bool = Field(False, description="True on a sample sent by ``…/test``.")
    data: CoefficientsPublishedData


class CalibrationDisagreementEvent(_Out):
    """``calibration.disagreement``: an operator label disagrees with a judgment."""

    type: Literal["calibration.disagreement"]
    timestamp: str
    test: bool = Field(False, description="True on a sample sent by ``…/test``.")
    data: CalibrationRow


class WebhookEvent(RootModel[Annotated[
        JudgmentCompletedEvent | RejudgeCompletedEvent | CoefficientsPublishedEvent
        | CalibrationDisagreementEvent, Field(discriminator="type")]]):
    """Any webhook message, told apart by ``type`` (the body a receiver verifies and reads)."""


class WebhookTestResult(_Out):
    """What ``POST /v1/webhook-endpoints/{id}/test`` queued: the exact message sent."""

    message_id: str = Field(description="Also the ``webhook-id`` header of the delivery.")
    event_type: EventType
    message: WebhookEvent


# --- sequence-outcome request bodies (the schema of what judge.outcomes.labels enforces) --
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"


class DatasetCreate(_Shape):
    """``POST /api/v1/datasets/``: a new dataset ``owner/slug``."""

    owner: str = Field(pattern=_NAME, description="Owner part of owner/slug.")
    slug: str = Field(pattern=_NAME, description="Slug part of owner/slug.")
    public: bool = Field(False, description="Readable by every API key.")


class DatasetCreated(_Shape):
    """The created dataset."""

    dataset: str = Field(description="owner/slug.")
    public: bool = Field(description="Readable by every API key.")
    access: Literal["edit"] = Field(description="The creating key's access.")


class DatasetOut(_Out):
    """A dataset in the public Avala SDK's ``Dataset`` shape (``datasets.list``,
    ``datasets.get_by_slug``): its uid is ``owner/slug``, so ``datasets.get(uid)`` reads the
    same route."""

    uid: str = Field(description="owner/slug: the dataset's id on this server.")
    name: str = Field(description="The slug (a dataset here has no other name).")
    slug: str = Field(pattern=_NAME, description="Slug part of owner/slug.")
    owner_name: str = Field(pattern=_NAME, description="Owner part of owner/slug.")
    public: bool = Field(description="Readable by every API key.")
    access: Literal["read", "edit"] = Field(description="What the calling key may do.")
    item_count: int = Field(ge=0, description="Its sequences (one item per sequence: a run).")
    is_sequence: Literal[True] = Field(description="Always true: every item is a sequence.")
    data_type: Literal["mcap"] = Field(description="Always mcap: every sequence is a bundle "
                                       "of one MCAP (``datasets.list(data_type=…)``).")
    status: Literal["created"] = Field(description="Always created: a dataset is ready when "
                                       "made (``datasets.list(status=…)``).")
    created_at: str = Field(description="ISO 8601, UTC.")


class DatasetPage(_Out):
    """``GET /api/v1/datasets/``: one page of the datasets the key may read, by uid."""

    results: list[DatasetOut]
    next: str | None = Field(description="URL of the next page (its ``cursor``), or null.")
    previous: str | None = Field(description="URL of the previous page, or null.")


class SequenceOut(_Out):
    """A sequence (one run) in the public Avala SDK's ``DatasetSequence`` shape, with its
    current label's outcome."""

    uid: str = Field(description="``seq_`` + the first 32 hex digits of the bundle hash.")
    dataset_uid: str = Field(description="owner/slug of its dataset.")
    bundle_hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="The bundle's hash.")
    length_s: float | None = Field(description="Recorded length (s), when one MCAP had it.")
    outcome: str | None = Field(description="The current label's outcome; null unlabelled.")
    outcome_version: int | None = Field(ge=1, description="The current label's version.")
    evaluation_membership: str | None = Field(description="The current label's membership.")


class SequencePage(_Out):
    """``GET …/sequences/``: one page of the dataset's sequences, by uid."""

    results: list[SequenceOut]
    next: str | None = Field(description="URL of the next page (its ``cursor``), or null.")
    previous: str | None = Field(description="URL of the previous page, or null.")


# the enumerations of judge.outcomes.labels, as the schema's enums
_Outcome = Literal[OUTCOMES]  # type: ignore[valid-type]
_Autonomy = Literal[(*AUTONOMY_LEVELS, "")]  # type: ignore[valid-type]
_Membership = Literal[(*MEMBERSHIPS, "")]  # type: ignore[valid-type]
_LeakageKey = Literal[LEAKAGE_KEYS]  # type: ignore[valid-type]
_MetaKey = Annotated[str, Field(min_length=1, max_length=64)]


class SubtaskWrite(_Shape):
    """One subtask span (nested or disjoint, sorted by start)."""

    label: str = Field(min_length=1, max_length=500, description="What the span does.")
    start_ts: float = Field(ge=0, description="Start (s).")
    end_ts: float = Field(ge=0, description="End (s), >= start_ts, <= length + 1 s.")
    outcome: _Outcome | None = Field(None, description="One of the label outcomes.")


class HandActionWrite(_Shape):
    """One hand action (one hand's actions sorted, touching but not overlapping)."""

    start_ts: float = Field(ge=0, description="Start (s).")
    end_ts: float = Field(ge=0, description="End (s), >= start_ts.")
    action: str = Field(min_length=1, max_length=500, description="The action.")
    object: str | None = Field(None, max_length=255, description="Object acted on.")
    verb: str | None = Field(None, max_length=64, description="Verb.")
    contact: bool | None = Field(None, description="Whether the hand touches the object.")


class HandActionsWrite(_Shape):
    """Both hands' actions, at most 3,600 each."""

    left: list[HandActionWrite] | None = Field(None, max_length=3600, description="Left.")
    right: list[HandActionWrite] | None = Field(None, max_length=3600, description="Right.")


class OutcomeLabelWrite(_Shape):
    """``PUT …/outcome/``: the whole label (omitted optional fields unset), as
    :func:`judge.outcomes.labels.validate_label` checks it. The rules across items JSON
    Schema cannot state (subtasks sorted and nested or disjoint, one hand's actions sorted
    without overlap, end_ts >= start_ts and against the sequence length) are a 400 naming
    the field."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={"anyOf": [
        {"properties": {"confidence": {"type": "null"}}},
        {"required": ["source"], "properties": {"source": {"type": "string",
                                                           "const": "model"}}}]})

    outcome: _Outcome = Field(description="What happened.")
    progress: float | None = Field(None, ge=0, le=1, description="Progress 0..1.")
    quality: int | None = Field(None, ge=1, le=5, description="Quality 1..5.")
    speed: int | None = Field(None, ge=1, le=5, description="Speed 1..5.")
    subtasks: list[SubtaskWrite] | None = Field(None, max_length=256, description="Spans.")
    hand_actions: HandActionsWrite | None = Field(None, description="Per-hand actions.")
    mistake_type: str | None = Field(None, max_length=128, description="Mistake type.")
    recovery_type: str | None = Field(None, max_length=128, description="Recovery type.")
    failure_stage: str | None = Field(None, max_length=128, description="Failure stage.")
    autonomy_level: _Autonomy | None = Field(None, description="Empty or null: unset.")
    model_version: str | None = Field(None, max_length=255, description="Model version.")
    evaluation_membership: _Membership | None = Field(None, description="Empty or null: "
                                                      "unset.")
    leakage_groups: dict[_LeakageKey, Annotated[str, Field(min_length=1, max_length=255)]] \
        | None = Field(None, description="Group id per key.")
    source: Literal[SOURCES] = Field(  # type: ignore[valid-type]
        "human", description="Who labelled (not null: absent is human).")
    source_metadata: dict[_MetaKey, Annotated[str, Field(max_length=512)] | float | bool] \
        | None = Field(None, max_length=20, description="Flat object, keys 1-64 chars.")
    confidence: float | None = Field(None, ge=0, le=1, description="Only with source model.")
