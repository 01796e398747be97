"""Judge versions: one config file (``configs/judges/``, or ``$RCJUDGE_HOME/judges/`` for
those a user trains) pins everything a verdict depends on.

Three model entries (backend, path, dtype, pixels, GPU share, calibration), the
prompt templates, how frames are shown, and the vote rule. ``judge_version`` in
every output is the file's ``name``.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from judge.config import SamplingConfig, configs_dir, load_model, load_yaml, sampling_config
from judge.errors import ConfigError
from models.base import BackendSpec
from models.endpoint import Endpoint
from rcjudge.home import judges_dir, models_dir, models_dir_source


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Platt(_Cfg):
    """p' = sigmoid(scale · logit(p) + bias); temperature T is scale = 1/T, bias = 0.

    scale 0 is a constant map (the fit found no information in p: the base rate).
    """

    scale: float = Field(1.0, ge=0, description="Slope on the logit (1/temperature).")
    bias: float = Field(0.0, description="Offset on the logit.")


class Calibration(_Cfg):
    """Per-model calibration of P(yes), one map per question."""

    attempt: Platt = Platt()
    success: Platt = Platt()


class ModelEntry(_Cfg):
    """One of the three models."""

    name: str = Field(min_length=1, description="Name used in outputs and ledgers.")
    backend: str = Field(description="Registry name: transformers, vllm, openai (a served "
                         "model: endpoint) or fake.")
    path: str = Field("", description="Checkpoint folder; {models_dir} is expanded "
                      "(rcjudge.home.models_dir: $RCJUDGE_MODELS or $RCJUDGE_HOME/models).")
    dtype: Literal["float32", "float16", "bfloat16"] = Field(
        "float32", description="torch dtype of the weights.")
    device: str = Field("cpu", pattern=r"^(cpu|cuda(:\d+)?)$",
                        description="cpu, cuda or cuda:N.")
    max_pixels: int = Field(448 * 448, ge=64, description="Pixel cap per image.")
    gpu_share: float = Field(0.0, ge=0, le=1, description="Fraction of one GPU (vLLM, Ray).")
    replicas: int | None = Field(None, ge=1, description="Copies of this model a batch runs "
                                 "(Ray places them); unset: what the cluster's resources "
                                 "allow (judge.batch.plan, docs/batch.md).")
    batch_size: int | None = Field(None, ge=1, description="Most requests, from any bundles, "
                                   "one engine call of a batch carries; unset: 32 on CUDA, "
                                   "8 on CPU.")
    repo: str | None = Field(None, pattern=r"^[A-Za-z0-9][\w.-]*/[\w.-]+$",
                             description="Hub repository `rcjudge models fetch` downloads the "
                             "checkpoint from (owner/name, e.g. Qwen/Qwen2.5-VL-7B-Instruct); "
                             "unset: a local-only model.")
    revision: str | None = Field(None, pattern=r"^[0-9a-f]{40}$",
                                 description="The repository's commit (40 hex digits) that is "
                                 "fetched: a branch or tag would move under the version.")
    calibration: Calibration = Calibration()
    options: dict = Field(default_factory=dict, description="Backend-specific settings.")
    min_answer_mass: float = Field(
        0.5, ge=0, le=1, description="At load, the least raw next-token probability its "
        "answer tokens must hold on the reference prompt (the attempt question over grey "
        "frames, prompts.reference_request), else the model is refused; 0: no probe (random "
        "weights). 0.5: below it the answers are a minority of what the model would say, "
        "and renormalising over them more than doubles them (docs/judging.md).")
    members: tuple[str, ...] = Field(
        (), description="Further checkpoint folders of this model (the same architecture, "
        "trained with other seeds on the same split; {models_dir} expanded): it answers with "
        "the mean of every checkpoint's probabilities (`rcjudge average`, models.members).")
    #: Images one prompt carries, set by the version it belongs to (its ``frames``); not a
    #: field: not written, not fingerprinted (it follows from the version's frames).
    _images_per_prompt: int | None = PrivateAttr(None)

    endpoint: Endpoint | None = Field(
        None, description="backend openai only: the OpenAI-compatible server and model that "
        "answer for this entry (models.endpoint.Endpoint; docs/served.md).")

    @model_validator(mode="after")
    def _served_has_an_endpoint(self) -> ModelEntry:
        served = self.backend == "openai"
        if served != (self.endpoint is not None):
            raise ValueError("backend openai needs an endpoint (base_url, model), and only it "
                             "takes one" if served else f"endpoint is for backend openai, "
                             f"not {self.backend!r}")
        if served:
            held = [f for f, bad in (("path", bool(self.path)), ("members", bool(self.members)),
                                     ("device", self.device != "cpu"),
                                     ("gpu_share", self.gpu_share > 0),
                                     ("replicas", (self.replicas or 1) > 1)) if bad]
            if held:
                raise ValueError(f"a served model (backend openai) has no {', '.join(held)}: "
                                 "its server holds the weights and GPUs, and a batch keeps "
                                 "endpoint.max_concurrency requests in flight from one replica")
        return self

    @field_validator("revision")
    @classmethod
    def _revision_of_a_repo(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None and not info.data.get("repo"):
            raise ValueError("revision needs a repo: it is a commit of that hub repository")
        return v

    @field_validator("members")
    @classmethod
    def _distinct_members(cls, v: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        path = info.data.get("path", "")
        if v and not path:
            raise ValueError("members need a path: they are further checkpoints of the model "
                             "at path")
        if len({path, *v}) != len(v) + 1:
            raise ValueError(f"members must differ from each other and from path {path!r}, "
                             f"got {list(v)}")
        return v

    def resolved_path(self, path: str | None = None) -> str:
        """``path`` (default the entry's) with ``{models_dir}`` expanded; "" for backends
        without files."""
        return (self.path if path is None else path).replace("{models_dir}", str(models_dir()))

    def checkpoint(self, path: str | None = None) -> Path:
        """The checkpoint folder (``path``, default the entry's), which must exist; the tiny
        models the shipped versions name (``{models_dir}/<models.tiny.FOLDERS folder>/…``)
        are built there on first use (``models.tiny.build_missing``).

        Raises:
            ConfigError: naming the model, the folder and where ``{models_dir}`` came from.
        """
        from models.tiny import build_missing

        path = self.path if path is None else path
        folder = Path(self.resolved_path(path))
        if path and not folder.is_dir():
            build_missing(path)  # the embedded defaults' tiny models, on first use
        if not path or not folder.is_dir():
            where = (f" ({{models_dir}} = {models_dir()}, from {models_dir_source()})"
                     if "{models_dir}" in path else "")
            hint = ("; build the tiny models with `rcjudge models build-tiny`"
                    if "/tiny/" in path else "")
            raise ConfigError(f"model {self.name!r}: no checkpoint folder at {folder}{where}"
                              f"{hint}")
        return folder

    def checkpoints(self) -> list[Path]:
        """Every checkpoint folder the entry answers with: its path, then its members."""
        return [self.checkpoint(p) for p in (self.path, *self.members)]

    def spec(self) -> BackendSpec:
        return BackendSpec(name=self.name, backend=self.backend,
                           path=self.resolved_path(), dtype=self.dtype,
                           device=self.device, max_pixels=self.max_pixels,
                           gpu_share=self.gpu_share, options=dict(self.options),
                           members=tuple(self.resolved_path(p) for p in self.members),
                           min_answer_mass=self.min_answer_mass,
                           images_per_prompt=self._images_per_prompt, endpoint=self.endpoint)


SLOTS = {"attempt": ("instruction", "motion", "sensors"),
         "success": ("instruction", "motion", "sensors"),
         "failure_family": ("instruction", "motion", "options", "sensors"),
         "failure_class": ("family", "instruction", "motion", "options", "sensors")}


class Prompts(_Cfg):
    """Question templates and the slots each may use (``SLOTS``): ``{instruction}`` (the task
    catalog's), ``{sensors}`` (``prompts.sensor_text``: the run's contact events),
    ``{motion}`` (``prompts.motion_text``: the arm's travel, the fingers' closing),
    ``{options}`` (the lettered choices) and ``{family}`` (the class step's family)."""

    attempt: str = ("The images show a robot during one try at this task: {instruction}. "
                    "Did the robot attempt the task, that is, reach for the object and try to "
                    "manipulate it? Answer yes or no.")
    success: str = ("The images show a robot during one try at this task: {instruction}. "
                    "Did the robot complete the task successfully by the last image? "
                    "Answer yes or no.")
    failure_family: str = ("The images show a robot failing this task: {instruction}. "
                           "Which kind of failure was it?\n{options}\nAnswer with one letter.")
    failure_class: str = ("The images show a robot failing this task: {instruction}. "
                          "Which {family} failure was it?\n{options}\nAnswer with one letter.")

    @field_validator(*SLOTS)
    @classmethod
    def _known_slots(cls, v: str, info: ValidationInfo) -> str:
        allowed = SLOTS[info.field_name]
        for _, slot, _, _ in string.Formatter().parse(v):
            if slot is not None and slot not in allowed:
                raise ValueError(f"unknown slot {{{slot}}}; this template may use "
                                 f"{', '.join(f'{{{a}}}' for a in allowed)}")
        return v


class Frames(_Cfg):
    """How decoded frames are shown to the models."""

    images_per_question: int = Field(8, ge=1, le=64, description="Images per question.")
    tile_cameras: bool = Field(True, description="Cameras side by side in one image.")


class Vote(_Cfg):
    """Majority of three; a model says yes when P(yes) > yes_threshold (equal is no)."""

    rule: str = Field("majority", pattern="^majority$")
    yes_threshold: float = Field(0.5, gt=0, lt=1)
    calibration: Calibration = Field(
        Calibration(), description="Maps on the ensemble's mean P(yes) per question, applied "
        "before the confidences (fitted by `rcjudge calibrate`).")


class Training(_Cfg):
    """How a trained version was made; written by ``rcjudge train``, read by ``rcjudge eval``."""

    parent: str = Field(min_length=1, description="The version it was trained from.")
    data_sha256: str = Field(pattern=r"^[0-9a-f]{64}$",
                             description="sha256 over the sorted (bundle hash, label) pairs used.")
    runs: int = Field(ge=1, description="Labelled runs used, every part of the split.")
    seed: int = Field(description="Seed of the split, data order and initialisation.")
    options: dict[str, float | int | bool | None] = Field(
        default_factory=dict, description="The other training options it was made with "
        "(rcjudge train's flags: epochs, lr, blank_images, travel_jitter, ...); lora as used.")
    split: dict[str, int] = Field(description="Runs per part: train, validation, calibration.")
    held_out: dict[str, list[str]] = Field(
        default_factory=dict, description="What no part saw, e.g. tasks or seed groups.")
    used_runs: str = Field(description="JSON file listing the bundle hash of every run any part "
                           "used ({models_dir} expanded); eval never scores those runs.")
    metrics: dict[str, float] = Field(default_factory=dict,
                                      description="Metrics on the validation part.")
    fingerprint: str | None = Field(None, description="The version's fingerprint when written.")
    members: list[str] = Field(
        default_factory=list, description="Set by `rcjudge average`: the trained versions "
        "(one split, other seeds) whose checkpoints this version's models average.")


class JudgeVersion(_Cfg):
    """``configs/judges/<name>.yaml``."""

    name: str = Field(min_length=1)
    description: str = ""
    models: tuple[ModelEntry, ...]
    prompts: Prompts = Prompts()
    frames: Frames = Frames()
    vote: Vote = Vote()
    sampling: SamplingConfig | None = Field(
        None, description="Contact detection and frame sampling; configs/sampling.yaml if unset.")
    training: Training | None = Field(None, description="Set on versions `rcjudge train` made.")

    def sampling_settings(self) -> SamplingConfig:
        """The sampling this version judges with: its own, else ``configs/sampling.yaml``."""
        return self.sampling or sampling_config()

    @field_validator("models")
    @classmethod
    def _three(cls, v: tuple[ModelEntry, ...]) -> tuple[ModelEntry, ...]:
        if len(v) != 3:
            raise ValueError(f"a judge version has exactly 3 models, got {len(v)}")
        names = [m.name for m in v]
        if len(set(names)) != 3:
            raise ValueError(f"model names must differ, got {names}")
        return v

    @model_validator(mode="after")
    def _images_of_each_prompt(self) -> JudgeVersion:
        """Each model learns how many images a prompt carries: ``images_per_question`` with
        tiled cameras; without tiling it depends on the bundle's cameras (None)."""
        images = self.frames.images_per_question if self.frames.tile_cameras else None
        for m in self.models:
            m._images_per_prompt = images
        return self


def version_dirs() -> tuple[Path, Path]:
    """Where versions are found by name: the shipped ``configs/judges/``, then the user's
    ``$RCJUDGE_HOME/judges/`` (what ``train``/``calibrate``/``average`` write)."""
    return configs_dir() / "judges", judges_dir()


#: The copy of a trained version's YAML that ``rcjudge train`` and ``average`` leave beside
#: its weights, ``{models_dir}/<name>/version.yaml``: found by name wherever ``--config``
#: wrote the version itself.
TRAINED_COPY = "version.yaml"


def version_file(name: str) -> Path | None:
    """The YAML file of the version called ``name`` (:func:`version_dirs`, then a trained
    version's copy beside its weights), or None."""
    from rcjudge.home import models_dir

    for folder in version_dirs():
        if (path := folder / f"{name}.yaml").is_file():
            return path
    if name and "/" not in name and (path := models_dir() / name / TRAINED_COPY).is_file():
        return path
    return None


def version_names() -> list[str]:
    """Every version found by name, shipped and the user's, sorted."""
    return sorted({p.stem for folder in version_dirs() for p in folder.glob("*.yaml")})


def load_judge_version(name_or_path: str) -> JudgeVersion:
    """Load a version by name (``configs/judges/``, ``$RCJUDGE_HOME/judges/``, or a trained
    version's copy beside its weights: :data:`TRAINED_COPY`) or a YAML file path: the one
    resolver behind every command's ``--judge``."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        found = version_file(name_or_path)
        if found is None:
            raise ConfigError(f"unknown judge version {name_or_path!r}; known: "
                              f"{', '.join(version_names())}")
        path = found
    version = load_model(JudgeVersion, load_yaml(path), str(path))
    if path.name == TRAINED_COPY and path.parent.name == version.name:
        return version
    if path.stem != version.name:
        raise ConfigError(f"{path}: name {version.name!r} differs from the file name")
    return version


def judge_name(spec: str) -> str:
    """The version name ``--judge`` means to a command that reads the ledger's judgments by
    name: a YAML file's version's name (:func:`load_judge_version`), else ``spec`` itself
    (a name the ledger may hold whose file is gone)."""
    if Path(spec).suffix in (".yaml", ".yml"):
        return load_judge_version(spec).name
    return spec
