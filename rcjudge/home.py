"""Where rcjudge keeps its files, decided in one place so every command works from any folder.

``RCJUDGE_HOME`` (default ``$XDG_DATA_HOME/rcjudge``, else ``~/.local/share/rcjudge``)
holds the models (``models/``, the ``{models_dir}`` of judge versions), the judge
versions a user trains or calibrates (``judges/``, found by name beside the shipped
``configs/judges/``), the lab's own tasks (``tasks.yaml``, ``rcjudge tasks add``, beside the
shipped ``configs/tasks.yaml``) and the default ledger (``rcjudge.db``). ``RCJUDGE_MODELS`` and
``RCJUDGE_DATA`` override those two parts alone. Relative values are taken from the folder
the process started in and made absolute at once.
"""

from __future__ import annotations

import os
from pathlib import Path


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser().absolute() if value else None


def home() -> Path:
    """``$RCJUDGE_HOME``, else ``$XDG_DATA_HOME/rcjudge``, else ``~/.local/share/rcjudge``."""
    if (p := _env_path("RCJUDGE_HOME")) is not None:
        return p
    xdg = _env_path("XDG_DATA_HOME")
    return (xdg if xdg is not None else Path.home() / ".local" / "share") / "rcjudge"


def models_dir() -> Path:
    """``{models_dir}`` in judge versions: ``$RCJUDGE_MODELS``, else ``<home>/models``."""
    return _env_path("RCJUDGE_MODELS") or home() / "models"


def models_dir_source() -> str:
    """Which setting chose :func:`models_dir`, for error messages."""
    if os.environ.get("RCJUDGE_MODELS"):
        return "$RCJUDGE_MODELS"
    if os.environ.get("RCJUDGE_HOME"):
        return "$RCJUDGE_HOME/models"
    return "the default RCJUDGE_HOME/models"


def data_dir() -> Path:
    """Folder of the default ledger: ``$RCJUDGE_DATA``, else ``<home>``."""
    return _env_path("RCJUDGE_DATA") or home()


def judges_dir() -> Path:
    """Where new judge versions are written (``train``, ``calibrate``, ``average``):
    ``<home>/judges``, never the package's ``configs/judges/``."""
    return home() / "judges"
