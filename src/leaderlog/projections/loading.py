"""Finding projections by name: the built-in ones, or a module in the ``projections/`` folder.

A user projection is a file ``<folder>/<name>.py`` exposing ``PROJECTION``, a
:class:`~leaderlog.projections.base.Projection` subclass whose ``name`` is ``<name>``. Only
the named file is imported; the folder is never scanned. The folder is ``$LEADERLOG_PROJECTIONS``
or ``./projections``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from leaderlog.errors import ProjectionError
from leaderlog.projections.base import Projection, check_owned_names

__all__ = ["PROJECTIONS_ENV", "load_user_projection", "user_projection_folder"]

PROJECTIONS_ENV = "LEADERLOG_PROJECTIONS"
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


def user_projection_folder(folder: Path | str | None = None) -> Path:
    """The folder user projections are loaded from."""
    if folder is not None:
        return Path(folder)
    return Path(os.environ.get(PROJECTIONS_ENV) or Path.cwd() / "projections")


def load_user_projection(
    name: str, folder: Path | str | None = None, *, builtin: Mapping[str, type[Projection]]
) -> Projection:
    """Import ``<folder>/<name>.py`` and instantiate its ``PROJECTION``."""
    if not _NAME.match(name):
        raise ProjectionError(
            f"projection name {name!r} is not valid: use lower-case letters, digits and _, "
            "starting with a letter"
        )
    path = user_projection_folder(folder) / f"{name}.py"
    if not path.is_file():
        raise ProjectionError(
            f"unknown projection {name!r}: it is not built in ({', '.join(builtin)}) "
            f"and {path} does not exist"
        )
    module_name = f"leaderlog_user_projections.{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ProjectionError(f"cannot load projection {name!r} from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:
        # SystemExit too: a module that calls sys.exit() on import must not end the command.
        del sys.modules[module_name]
        why = f"it exited ({error})" if isinstance(error, SystemExit) else str(error)
        raise ProjectionError(f"projection module {path} failed to import: {why}") from error
    found = getattr(module, "PROJECTION", None)
    if not (isinstance(found, type) and issubclass(found, Projection)):
        raise ProjectionError(f"{path} must set PROJECTION to a Projection subclass")
    if getattr(found, "name", None) != name or not isinstance(getattr(found, "version", None), int):
        raise ProjectionError(
            f"{path}: PROJECTION must have name = {name!r} and an integer version"
        )
    if name in builtin:
        raise ProjectionError(f"{name!r} is a built-in projection name")
    missing = sorted(getattr(found, "__abstractmethods__", ()))
    if missing:
        raise ProjectionError(f"{path}: PROJECTION must implement {', '.join(missing)}")
    try:
        projection = found()
        problems = check_owned_names(projection, builtin)
    except Exception as error:
        raise ProjectionError(f"{path}: PROJECTION could not be set up: {error}") from error
    if problems:
        raise ProjectionError(f"{path}: " + "; ".join(problems))
    return projection
