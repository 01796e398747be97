"""Tasks: the instruction a judge is given for each ``task.id`` (the task catalog).

Two files make the catalog: the package's ``configs/tasks.yaml`` (shipped, never edited by a
user) and the lab's own ``$RCJUDGE_HOME/tasks.yaml`` (``rcjudge tasks add``;
:func:`rcjudge.home.home`). An id is defined once: the lab's file may not redefine a shipped
id, and ``tasks add`` refuses an id that exists with another instruction, so an id's
instruction never changes under a judge version (``docs/judging.md``, *Fingerprints*: each
judgment pins the sha256 of the instruction it used). The prompt never takes free text from a
bundle: a bundle names its task, the catalog says what it asks.

Where it sits: read by the prompts (:func:`instruction_for`) and, before a bundle is written,
by ``bundle create``, ``import rosbag`` and ``import lerobot`` (:func:`check_task`), so a lab's
own task is refused at creation, with the command that adds it, not only when judging.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from judge.config import configs_dir, load_yaml
from judge.errors import BundleError, ConfigError
from rcjudge.home import home

TASKS_FILE = "tasks.yaml"
MAX_INSTRUCTION = 500  # characters; one line, asked inside every question
TASK_ID = re.compile(r"[^\s\x00-\x1f\x7f]{1,200}")  # what `tasks add` accepts as an id


class UnknownTaskError(ConfigError):
    """A bundle's ``task.id`` is in neither the shipped nor the lab's task catalog."""


@dataclass(frozen=True)
class Task:
    """One catalog entry: the id, its instruction, and which file defines it."""

    id: str
    instruction: str
    source: str  # "package" (configs/tasks.yaml) | "home" ($RCJUDGE_HOME/tasks.yaml)

    def as_dict(self) -> dict:
        return {"id": self.id, "instruction": self.instruction, "source": self.source}


def shipped_file() -> Path:
    """The package's catalog: ``configs/tasks.yaml`` (``$RCJUDGE_CONFIGS`` in tests)."""
    return configs_dir() / TASKS_FILE


def home_file() -> Path:
    """The lab's catalog: ``$RCJUDGE_HOME/tasks.yaml``."""
    return home() / TASKS_FILE


def unknown_message(task_id: str) -> str:
    """The line naming a task missing from the catalog and the command that adds it."""
    return (f"task {task_id!r} is not in the task catalog; add its instruction: rcjudge "
            f"tasks add {task_id} \"<instruction>\"")


@lru_cache(maxsize=8)
def _read(path: str, mtime_ns: int, size: int) -> dict[str, str]:
    """``tasks:`` of one catalog file (cached by path, modification time and size)."""
    data = load_yaml(path)
    if data is None or data == {"tasks": None}:  # an empty file, or `tasks:` with none
        return {}
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict):
        raise ConfigError(f"{path}: expected a 'tasks' mapping of task.id -> instruction")
    return {str(k): str(v) for k, v in tasks.items()}


def _file(path: Path, required: bool) -> dict[str, str]:
    try:
        st = path.stat()
    except FileNotFoundError:
        if required:
            raise ConfigError(f"{path}: config file not found") from None
        return {}
    return _read(str(path), st.st_mtime_ns, st.st_size)


def catalog() -> dict[str, Task]:
    """Every task: the package's, then the lab's (``$RCJUDGE_HOME/tasks.yaml``).

    Raises:
        ConfigError: a file is malformed, or the lab's file gives a shipped id another
            instruction.
    """
    shipped, own = shipped_file(), home_file()
    out = {k: Task(k, v, "package") for k, v in _file(shipped, True).items()}
    for k, v in _file(own, False).items():
        if k in out and out[k].instruction != v:
            raise ConfigError(f"{own}: task {k!r} is defined in {shipped} with another "
                              "instruction; a task id has one instruction: give yours a new id")
        out.setdefault(k, Task(k, v, "home"))
    return out


def task_catalog(path: str | None = None) -> dict[str, str]:
    """task.id -> instruction: the whole catalog, or only the file ``path``."""
    if path is not None:
        return dict(_file(Path(path), True))
    return {k: t.instruction for k, t in catalog().items()}


def instruction_for(task_id: str) -> str:
    """The instruction of ``task_id``.

    Raises:
        UnknownTaskError: the id is in neither catalog (the message says how to add it).
    """
    task = catalog().get(task_id)
    if task is None:
        raise UnknownTaskError(unknown_message(task_id))
    return task.instruction


def check_task(task_id: str, where: str) -> None:
    """Refuse, before a bundle is written, a ``task.id`` the judge could not ask about.

    Raises:
        BundleError: ``"<where>: task '…' is not in the task catalog; add its instruction:
            rcjudge tasks add …"``.
    """
    if task_id not in catalog():
        raise BundleError(f"{where}: {unknown_message(task_id)}")


def add_task(task_id: str, instruction: str) -> tuple[Task, bool]:
    """Add a task to ``$RCJUDGE_HOME/tasks.yaml``; (the entry, whether it is new).

    The same id with the same instruction again is no change. The file is rewritten whole
    under a temporary name and renamed into place.

    Raises:
        ConfigError: a malformed id or instruction, or an id that exists with another
            instruction (in the package or the lab's file).
    """
    if not TASK_ID.fullmatch(task_id):
        raise ConfigError(f"task id {task_id!r}: expected 1-200 characters without spaces "
                          "or control characters")
    text = instruction.strip()
    if not text or "\n" in text or len(text) > MAX_INSTRUCTION:
        raise ConfigError(f"task {task_id}: the instruction must be one line of 1-"
                          f"{MAX_INSTRUCTION} characters (got {len(text)})")
    existing = catalog().get(task_id)
    if existing is not None:
        if existing.instruction == text:
            return existing, False
        where = shipped_file() if existing.source == "package" else home_file()
        raise ConfigError(f"task {task_id!r} is already in {where} with the instruction "
                          f"{existing.instruction!r}; an id keeps its instruction (judgments "
                          "pin it, docs/judging.md): add the new wording under a new id")
    path = home_file()
    own = dict(_file(path, False))
    own[task_id] = text
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    tmp.write_text("# This lab's tasks (rcjudge tasks add): task.id -> the instruction a judge "
                   "is given.\n" + yaml.safe_dump({"tasks": own}, sort_keys=False,
                                                  allow_unicode=True, width=1000),
                   encoding="utf-8")
    os.replace(tmp, path)
    return Task(task_id, text, "home"), True
