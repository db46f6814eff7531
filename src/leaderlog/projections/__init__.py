"""Projections: read models built from the log, and the queries over them.

Built-in projections are listed in :data:`BUILTIN`; user projections are modules in the
top-level ``projections/`` folder, loaded by name (see :mod:`.loading`). The runner keeps them
current; :class:`Queries` answers from their tables.

    store = await open_store("sqlite:///leaderlog.db")
    runner = await runner_for(store)
    await runner.catch_up()
    state = await Queries(store).state(org="ice", as_of="2025-06-01")
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from leaderlog.errors import InvalidQuery, ProjectionError, ProjectionFailed, UnknownEntity
from leaderlog.projections._integrity import verify_log
from leaderlog.projections._isolation import older_than_stored
from leaderlog.projections.audit import AuditProjection
from leaderlog.projections.base import Projection, ProjectionTransaction, decode, payload
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.projections.leadership import LeadershipProjection
from leaderlog.projections.loading import (
    NO_FOLDER,
    load_user_projection,
    module_is_there,
    user_projection_folder,
)
from leaderlog.projections.queries import EntityKind, Queries
from leaderlog.projections.runner import (
    NotLoaded,
    Progress,
    ProjectionRunner,
    ProjectionStatus,
)
from leaderlog.store.base import EventStore, SQLValue, checked_store

__all__ = [
    "BUILTIN",
    "AuditProjection",
    "EntityKind",
    "FeedEntriesProjection",
    "InvalidQuery",
    "LeadershipProjection",
    "NotLoaded",
    "Progress",
    "Projection",
    "ProjectionError",
    "ProjectionFailed",
    "ProjectionRunner",
    "ProjectionStatus",
    "ProjectionTransaction",
    "Queries",
    "SQLValue",
    "UnknownEntity",
    "decode",
    "load_projection",
    "modules_not_found",
    "payload",
    "runner_for",
    "user_projection_folder",
    "verify_log",
]

BUILTIN: dict[str, type[Projection]] = {
    LeadershipProjection.name: LeadershipProjection,
    AuditProjection.name: AuditProjection,
    FeedEntriesProjection.name: FeedEntriesProjection,
}


def load_projection(name: str, folder: Path | str | None = None) -> Projection:
    """A built-in projection by name, else ``<folder>/<name>.py`` (folder: ./projections)."""
    if name in BUILTIN:
        return BUILTIN[name]()
    return load_user_projection(name, folder, builtin=BUILTIN)


async def runner_for(
    store: EventStore, folder: Path | str | None = None, *, also: tuple[str, ...] = ()
) -> ProjectionRunner:
    """A runner over the built-ins, the user projections this database already has, and ``also``.

    A user projection joins once it has been built (``leaderlog rebuild NAME``); from then on
    every runner made here keeps it current. One whose module is gone or no longer loads is
    left out (and lags) so that a broken user module never stops queries; ``rebuild NAME``
    shows why. So is one whose module is at an older version than the database holds
    (another folder's older copy): only naming it in ``also`` rebuilds it at that version.
    Names in ``also`` must load.
    """
    checked_store(store, "runner_for")
    if isinstance(also, str):
        # Read as a tuple of its characters, it would be refused for a projection named "t".
        raise ProjectionError(f"also must be a tuple of projection names, not {also!r:.80}")
    projections = [cls() for cls in BUILTIN.values()]
    names = set(BUILTIN)
    not_loaded: dict[str, NotLoaded] = {}
    registered = await ProjectionRunner(store, []).registered()
    for name in sorted(registered):
        if name in names or name in also:
            continue
        try:
            loaded = load_user_projection(name, folder, builtin=BUILTIN)
        except ProjectionError as error:
            if module_is_there(name, folder):
                not_loaded[name] = NotLoaded(*registered[name], error)
            continue
        stored = registered[name][0]
        # Named in ``also``, it is rebuilt at its module's version all the same: asked for.
        projections.append(older_than_stored(loaded, stored) if stored > loaded.version else loaded)
        names.add(name)
    for name in also:
        if name not in names:
            projections.append(load_projection(name, folder))
            names.add(name)
    runner = ProjectionRunner(store, projections)
    runner.not_loaded = not_loaded
    return runner


def modules_not_found(
    runner: ProjectionRunner, registered: Mapping[str, tuple[int, int]]
) -> dict[str, str]:
    """The user projections built in the database (``registered``, as
    :meth:`ProjectionRunner.registered` gives them) that a runner from :func:`runner_for`
    neither runs nor failed to load, each with why, in name order: no module where they are
    looked for (the command or server run from another folder, or the module removed), which
    ``runner_for`` skips rather than hold every query to."""
    known = {*BUILTIN, *(p.name for p in runner.projections), *runner.not_loaded}
    folder = user_projection_folder()
    return {
        name: NO_FOLDER
        if folder is None
        # Absolute, since the folder is most often what is wrong.
        else f"its module {(folder / f'{name}.py').absolute()} is not there"
        for name in sorted(registered)
        if name not in known
    }
