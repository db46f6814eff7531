"""Two folders holding one user projection's module at different versions, on one log (two
checkouts, say): the newer version is built and kept; a command or server run from the folder
with the older copy leaves it out, naming both versions, instead of rebuilding it back (each
would otherwise drop the other's tables at every command). Only `leaderlog rebuild NAME`
builds the older version over the newer one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from leaderlog.errors import ProjectionFailed
from leaderlog.log import EventLog
from leaderlog.projections import BUILTIN, ProjectionRunner, load_user_projection, runner_for
from tests.conftest import SEEDS, invoke, ok
from tests.projections.logs import SEED_COUNT, seen_projection_module

OLDER_COPY = (
    "its module {module} is at version 1, but the database holds version 2, built from a newer one"
)


def _checkouts(tmp_path: Path) -> tuple[Path, Path]:
    """Folders ``a`` and ``b``, each with a ``projections`` folder holding ``seen``: at version 1
    in ``a``, at version 2 in ``b``."""
    folders = []
    for name, version in (("a", 1), ("b", 2)):
        found = tmp_path / name / "projections"
        found.mkdir(parents=True)
        (found / "seen.py").write_text(
            seen_projection_module("seen", version=version), encoding="utf-8"
        )
        folders.append(found)
    return folders[0], folders[1]


def _stored(url: str) -> tuple[int, int, int]:
    """``seen``'s (version, position) in the database, and the rows of its table."""

    async def read() -> tuple[int, int, int]:
        async with await EventLog.open(url) as log:
            ((version, position),) = await log.store.query(
                "SELECT version, position FROM projection_checkpoints WHERE name = 'seen'"
            )
            ((rows,),) = await log.store.query("SELECT COUNT(*) FROM p_seen_seen")
            return int(version), int(position), int(rows)

    return asyncio.run(read())


@pytest.fixture
def built_from_b(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, Path, Path]:
    """The seeds, with ``seen`` built at version 2 from folder ``b``."""
    a, b = _checkouts(tmp_path)
    ok(invoke(store_url, "import", *(str(seed) for seed in sorted(SEEDS.glob("*.jsonl")))))
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(b))
    ok(invoke(store_url, "rebuild", "seen"))
    assert _stored(store_url) == (2, SEED_COUNT, SEED_COUNT)
    return store_url, a, b


def test_commands_run_beside_an_older_copy_leave_the_newer_build_as_it_is(
    built_from_b: tuple[str, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given seen built at version 2 from folder b
    url, a, _ = built_from_b
    # when a query, a rebuild of everything and the projections list run from folder a,
    # whose copy of the module is at version 1
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(a))
    state = invoke(url, "state")
    rebuilt = invoke(url, "rebuild")
    listed = invoke(url, "projections")
    # then each answers, and seen stays at version 2 with its rows
    for result in (state, rebuilt, listed):
        assert result.exit_code == 0, result.output + result.stderr
    assert _stored(url) == (2, SEED_COUNT, SEED_COUNT)
    assert "seen" not in rebuilt.stdout
    # and the query and the rebuild say why, naming both versions and what would build it
    module = a / "seen.py"
    for result in (state, rebuilt):
        assert "warning: projection seen is left out: " in result.stderr
        assert OLDER_COPY.format(module=module) in result.stderr
        assert "`leaderlog rebuild seen` builds version 1 over it" in result.stderr
    # and the list shows it at version 2, not loaded, rather than about to be rebuilt
    (line,) = [line for line in listed.stdout.splitlines() if line.startswith("seen ")]
    assert line.split()[1] == "2"
    assert "not loaded: " + OLDER_COPY.format(module=module) in line
    assert "rebuilt at the next" not in line


def test_the_newer_copy_goes_on_from_where_it_was(
    built_from_b: tuple[str, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given seen built at version 2 from folder b, and a query run from folder a
    url, a, b = built_from_b
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(a))
    ok(invoke(url, "state"))
    # when a rebuild of everything runs from folder b
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(b))
    rebuilt = invoke(url, "rebuild")
    # then seen is rebuilt there at version 2, with no warning about it
    assert rebuilt.exit_code == 0, rebuilt.output + rebuilt.stderr
    assert "seen" in rebuilt.stdout
    assert "seen" not in rebuilt.stderr
    assert _stored(url) == (2, SEED_COUNT, SEED_COUNT)


def test_rebuild_naming_it_builds_the_older_version_over_the_newer(
    built_from_b: tuple[str, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given seen built at version 2 from folder b
    url, a, _ = built_from_b
    # when `leaderlog rebuild seen` runs from folder a
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(a))
    rebuilt = invoke(url, "rebuild", "seen")
    # then it is built at version 1 from there, as asked
    assert rebuilt.exit_code == 0, rebuilt.output + rebuilt.stderr
    assert rebuilt.stdout.startswith(f"rebuilt seen to position {SEED_COUNT}")
    assert _stored(url) == (1, SEED_COUNT, SEED_COUNT)


async def test_a_runner_loaded_before_a_newer_build_does_not_rebuild_over_it(
    store_url: str, tmp_path: Path
) -> None:
    # given a runner holding seen at version 1 (made before another process built version 2)
    a, b = _checkouts(tmp_path)
    async with await EventLog.open(store_url) as log:
        from leaderlog.log import load_seeds

        await load_seeds(log, SEEDS)
        older = load_user_projection("seen", a, builtin=BUILTIN)
        runner = ProjectionRunner(log.store, [older])
        await (await runner_for(log.store, b, also=("seen",))).rebuild(["seen"])
        # when it catches up
        with pytest.raises(ProjectionFailed) as failed:
            await runner.catch_up()
        # then it leaves seen out, saying why, and version 2 stays with its rows
        (failure,) = failed.value.failures
        # (the module named is the last loaded under its name: b's, in this one process)
        assert "is at version 1, but the database holds version 2" in str(failure)
        ((version, position),) = await log.store.query(
            "SELECT version, position FROM projection_checkpoints WHERE name = 'seen'"
        )
        ((rows,),) = await log.store.query("SELECT COUNT(*) FROM p_seen_seen")
        assert (version, position, rows) == (2, SEED_COUNT, SEED_COUNT)
