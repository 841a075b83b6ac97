"""What every part of ChangeLake shares without Spark: its error type and the project's paths.

Code generation (:mod:`python_udfs.models`) and the command line import this; the Spark runtime
(:mod:`python_udfs.runtime`) builds on it.
"""

from __future__ import annotations

import os
from pathlib import Path

STATE_DIR = ".changelake"


class ChangeLakeError(RuntimeError):
    """A setup problem the user can fix; its message says what and how."""


def project_dir() -> Path:
    """Return the dbt project root: ``CHANGELAKE_HOME`` if set, else the package's parent."""
    env = os.environ.get("CHANGELAKE_HOME")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parent.parent


def state_dir(home: Path | None = None) -> Path:
    """Return (and create) the folder holding metastore, warehouse, landing files and logs.

    ``CHANGELAKE_STATE_DIR`` if set (tests point it at a temporary folder), else
    ``<project>/.changelake``, which git ignores.
    """
    env = os.environ.get("CHANGELAKE_STATE_DIR")
    path = Path(env).resolve() if env else (home or project_dir()) / STATE_DIR
    path.mkdir(parents=True, exist_ok=True)
    return path
