"""Finding projections by name: the built-in ones, or a module in the ``projections/`` folder.

A user projection is a file ``<folder>/<name>.py`` exposing ``PROJECTION``, a
:class:`~leaderlog.projections.base.Projection` subclass whose ``name`` is ``<name>``. Only
the named file is imported; the folder is never scanned. The folder is ``$LEADERLOG_PROJECTIONS``
or ``./projections``; a ``$LEADERLOG_PROJECTIONS`` set empty means none. A module of the
implicit ``./projections`` is refused when another user owns it or its folder, or every user
may write to either.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import inspect
import os
import re
import stat
import sys
import traceback
import types
from collections.abc import Iterable, Mapping
from pathlib import Path

from leaderlog.errors import ProjectionError
from leaderlog.projections.base import Projection, check_owned_names, taken_names

__all__ = [
    "NO_FOLDER",
    "PROJECTIONS_ENV",
    "builtin_named_modules",
    "check_projection_name",
    "load_user_projection",
    "module_file",
    "module_is_there",
    "shown_path",
    "user_projection_folder",
]

PROJECTIONS_ENV = "LEADERLOG_PROJECTIONS"
# Short enough for a table name p_<name>_<table> within PostgreSQL's 63 bytes.
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,58}\Z")


# The package user modules are loaded under; it exists only in their names, so a relative
# import from one finds nothing.
_USER_PACKAGE = "leaderlog_user_projections"
# What to do instead of importing code kept beside a module.
_SHARE_INSTEAD = "keep shared code in the module itself or in an installed package"


# Why a name is not loaded at all when LEADERLOG_PROJECTIONS is set empty.
NO_FOLDER = f"{PROJECTIONS_ENV} is set empty, so no user projection is loaded"


def user_projection_folder(folder: Path | str | None = None) -> Path | None:
    """The folder user projections are loaded from: ``folder``, else the one named by
    ``$LEADERLOG_PROJECTIONS``, else ``./projections``.

    None when ``$LEADERLOG_PROJECTIONS`` is set but empty (or blank): that turns user
    projections off, rather than quietly meaning ``./projections`` as an unset one does.
    """
    if folder is not None:
        return Path(folder)
    given = os.environ.get(PROJECTIONS_ENV)
    if given is None:
        return Path.cwd() / "projections"
    return Path(given) if given.strip() else None


def shown_path(path: Path | str) -> str:
    """``path`` as messages show it: relative to the current folder when it lies inside it
    or was given relative to it (``projections/thief.py``, ``../shared/thief.py``), else
    absolute, so that it is never ambiguous."""
    absolute = Path(path).absolute()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


def module_file(projection: Projection) -> str | None:
    """The file the projection's class was loaded from, as its tracebacks name it."""
    module = sys.modules.get(type(projection).__module__)
    found = getattr(module, "__file__", None)
    return found if isinstance(found, str) else None


def check_projection_name(name: str) -> None:
    """Refuse a name no projection module can have (it would never be a file name we load)."""
    if not _NAME.match(name):
        raise ProjectionError(
            f"projection name {name!r} is not valid: use lower-case letters, digits and _, "
            "starting with a letter, at most 59 in all"
        )


def load_user_projection(
    name: str, folder: Path | str | None = None, *, builtin: Mapping[str, type[Projection]]
) -> Projection:
    """Import ``<folder>/<name>.py`` and instantiate its ``PROJECTION``."""
    check_projection_name(name)
    where = user_projection_folder(folder)
    if where is None:
        raise ProjectionError(
            f"unknown projection {name!r}: it is not built in ({', '.join(builtin)}) and "
            f"{NO_FOLDER}"
        )
    path = where / f"{name}.py"
    shown = shown_path(path)
    if name in builtin:
        raise ProjectionError(_builtin_name(name, shown))
    if not path.is_file():
        # Absolute: where it was looked for is the point, most often the wrong folder.
        raise ProjectionError(
            f"unknown projection {name!r}: it is not built in ({', '.join(builtin)}) "
            f"and {path.absolute()} does not exist"
        )
    if folder is None and os.environ.get(PROJECTIONS_ENV) is None:
        _refuse_what_others_could_write(path, shown)
    module_name = f"{_USER_PACKAGE}.{name}"
    spec = importlib.util.spec_from_file_location(
        module_name, path, loader=_FromItsSource(module_name, str(path))
    )
    if spec is None or spec.loader is None:
        raise ProjectionError(f"cannot load projection {name!r} from {shown}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except KeyboardInterrupt:
        del sys.modules[module_name]
        raise  # Ctrl-C while it loads: the command stops, as it would anywhere else
    except BaseException as error:
        # Whatever else the module raises, sys.exit() and BaseException subclasses included,
        # is its own failure: it must not end the command (or the server) that loads it.
        del sys.modules[module_name]
        raise ProjectionError(_import_failed(error, path, shown)) from error
    found = getattr(module, "PROJECTION", None)
    if not (isinstance(found, type) and issubclass(found, Projection)):
        what = _what(found) if hasattr(module, "PROJECTION") else "it sets no PROJECTION"
        raise ProjectionError(f"{shown} must set PROJECTION to a Projection subclass: {what}")
    found_name = getattr(found, "name", None)
    if found_name != name:
        named = f"name {found_name!r}" if found_name is not None else "no name"
        raise ProjectionError(
            f"{shown}: PROJECTION ({found.__qualname__}) has {named}; a module is loaded by "
            f"its file's name, so it must have name = {name!r}"
        )
    version = getattr(found, "version", None)
    if not isinstance(version, int):
        has = f"version {version!r}" if version is not None else "no version"
        raise ProjectionError(
            f"{shown}: PROJECTION ({found.__qualname__}) has {has}: it must have an integer "
            "version, such as version = 1"
        )
    missing = sorted(getattr(found, "__abstractmethods__", ()))
    if missing:
        raise ProjectionError(f"{shown}: PROJECTION must implement {', '.join(missing)}")
    # Unwrapped: a decorator made with functools.wraps may return the coroutine it wraps.
    if inspect.isasyncgenfunction(inspect.unwrap(found.apply)):
        raise ProjectionError(
            f"{shown}: PROJECTION ({found.__qualname__}) defines apply as an async generator "
            "(it yields): it must be an async def that awaits its statements and yields nothing"
        )
    if not inspect.iscoroutinefunction(inspect.unwrap(found.apply)):
        # Awaited by the runner: a plain def failed at every page with "object NoneType
        # can't be used in 'await' expression", naming no line.
        raise ProjectionError(
            f"{shown}: PROJECTION ({found.__qualname__}) must define apply with async def, "
            "awaiting its statements (await tx.executemany(...))"
        )
    try:
        projection = found()
        problems = check_owned_names(projection, builtin)
        taken = {other: taken_names(cls(), name) for other, cls in builtin.items()}
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        raise ProjectionError(
            f"{shown}: PROJECTION could not be set up: {_raised(error)}"
        ) from error
    for other, names in taken.items():
        if names:
            # Its longer prefix would make the built-in's tables its own: a rebuild of either
            # would drop the other's rows.
            problems.append(
                f"the name {name!r} would take {', '.join(names)} from the built-in "
                f"projection {other} (p_{name}_ is a longer prefix than p_{other}_): "
                "choose another name"
            )
    if problems:
        raise ProjectionError(f"{shown}: " + "; ".join(problems))
    return projection


class _FromItsSource(importlib.machinery.SourceFileLoader):
    """Compiles a user projection module from its source at each load, and caches no
    bytecode beside it: Python checks a cached copy by the source's size and modification
    second, so a module edited twice within a second, its size unchanged (``VERSION = 1`` to
    ``2``), ran as it was before the edit."""

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


def _refuse_what_others_could_write(path: Path, shown: str) -> None:
    """Refuse a module of the implicit ``./projections`` whose folder or file another user
    owns or every user may write to.

    Query commands import a module for every user projection the database names, from
    whatever folder they are run in: one another user made there (``/tmp/projections``), or
    may write to, would run that user's code as whoever runs ``leaderlog state`` in it. A
    folder named in the environment is the user's own choice, and is not second-guessed.
    """
    if not hasattr(os, "geteuid"):
        return  # no POSIX owners and modes to read
    me = os.geteuid()
    folder = path.parent
    for checked, called in ((folder, f"its folder {shown_path(folder)}"), (path, "it")):
        found = checked.stat()
        if found.st_uid not in (me, 0):
            raise ProjectionError(
                f"{shown} is not loaded: {called} belongs to another user (uid {found.st_uid}), "
                f"who could put any code in it; if you trust it, name the folder in "
                f"{PROJECTIONS_ENV} to load it all the same"
            )
        if found.st_mode & stat.S_IWOTH:
            raise ProjectionError(
                f"{shown} is not loaded: every user may write to {called}, "
                "so any of them could put code in it; make it writable by its owner alone "
                f"(chmod o-w {shown_path(checked)}), or name the folder in {PROJECTIONS_ENV} to "
                "load it all the same"
            )


def _what(found: object) -> str:
    """What a module set PROJECTION to instead of a Projection subclass, in its author's terms."""
    if found is None:
        return "it is None"
    if isinstance(found, Projection):
        cls = type(found).__qualname__
        return f"it is an instance of {cls}; set it to the class itself (PROJECTION = {cls})"
    if isinstance(found, type):
        return f"it is the class {found.__qualname__}, which does not subclass Projection"
    return f"it is {type(found).__name__} {_shortened(repr(found))}"


def _shortened(text: str, longest: int = 60) -> str:
    return text if len(text) <= longest else f"{text[: longest - 3]}..."


def _import_failed(error: BaseException, path: Path, shown: str) -> str:
    """Why a user module failed to import; an import of code beside it (a module is loaded
    alone, as one file) is named as such, not as a module missing for no visible reason."""
    failed = f"projection module {shown} failed to import"
    line = _line_in(error, path)
    if isinstance(error, ModuleNotFoundError) and error.name:
        if error.name == _USER_PACKAGE or error.name.startswith(f"{_USER_PACKAGE}."):
            return (
                f"{failed}: its relative import{line} cannot work: a projection module is "
                f"loaded alone, as one file, not as part of a package; {_SHARE_INSTEAD}"
            )
        first = error.name.split(".")[0]
        folder = path.parent
        beside = ""
        if first == folder.name:
            beside = f"{first} is its own folder"
        elif (folder / f"{first}.py").is_file():
            beside = f"{first}.py is beside it"
        elif (folder / first).is_dir():
            beside = f"{first} is beside it"
        if beside:
            return (
                f"{failed}: {_raised(error)}{line}; {beside}, but the projections folder is "
                "not on Python's import path (a projection module is loaded alone, as one "
                f"file): {_SHARE_INSTEAD}"
            )
    return f"{failed}: {_raised(error)}{line}"


def _raised(error: BaseException) -> str:
    """What a user module raised, in the words the error would be shown in: with its type,
    as a traceback gives it (``KeyError: 'x'`` says more than ``'x'``)."""
    if isinstance(error, SystemExit):
        return f"it exited ({error})"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _line_in(error: BaseException, path: Path) -> str:
    """`` (line N)`` of the module's own line the error went through last, if it did (a
    syntax error names its line itself; an import of a missing module fails on the module's
    line that imports it)."""
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.filename == str(path)
    ]
    return f" (line {lines[-1]})" if lines else ""


def _builtin_name(name: str, shown: str) -> str:
    return (
        f"{shown} is not loaded: {name!r} is a built-in projection name, and commands such as "
        f"`leaderlog rebuild {name}` use the built-in; rename the module and its PROJECTION"
    )


def builtin_named_modules(folder: Path | str | None = None, *, builtin: Iterable[str]) -> list[str]:
    """Why each module in the folder named like a built-in projection is never loaded.

    A name is looked up among the built-ins first, so such a module would otherwise be
    ignored in silence, however often its author rebuilt "it".
    """
    where = user_projection_folder(folder)
    if where is None:
        return []
    return [
        _builtin_name(name, shown_path(where / f"{name}.py"))
        for name in builtin
        if (where / f"{name}.py").is_file()
    ]


def module_is_there(name: str, folder: Path | str | None = None) -> bool:
    """Whether the folder holds a module for the user projection ``name`` (which may still
    fail to load; a command run from another folder finds none)."""
    where = user_projection_folder(folder)
    return where is not None and bool(_NAME.match(name)) and (where / f"{name}.py").is_file()
