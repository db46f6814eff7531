"""A command that changed the database says what it did when its output cannot be written,
as the README promises for `import`, `rebuild` and `token revoke`: from the error alone, the
change would pass for not made, or a failure among it would go unseen."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.cli.full_disk import to_a_full_disk, writing_to
from tests.conftest import SEEDS, invoke, ok

PROBE = textwrap.dedent(
    """
    from collections.abc import Sequence

    from leaderlog.events import RecordedEvent
    from leaderlog.projections import Projection, ProjectionTransaction


    class Probe(Projection):
        name = "probe"
        version = 1

        def schema(self) -> Sequence[str]:
            return ("CREATE TABLE IF NOT EXISTS p_probe_seen (position BIGINT PRIMARY KEY)",)

        def tables(self) -> Sequence[str]:
            return ("p_probe_seen",)

        async def apply(
            self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]
        ) -> None:
            await tx.executemany(
                "INSERT INTO p_probe_seen (position) VALUES (?)",
                [(event.position,) for event in events],
            )


    PROJECTION = Probe
    """
)

FAILING = textwrap.dedent(
    """
    from collections.abc import Sequence

    from leaderlog.events import RecordedEvent
    from leaderlog.projections import Projection, ProjectionTransaction


    class Failing(Projection):
        name = "failing"
        version = 1

        def schema(self) -> Sequence[str]:
            return ()

        def tables(self) -> Sequence[str]:
            return ()

        async def apply(
            self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]
        ) -> None:
            raise ValueError("no such column in my head")


    PROJECTION = Failing
    """
)


@pytest.fixture
def seeded_url(sqlite_url: str) -> str:
    ok(invoke(sqlite_url, "import", str(SEEDS / "ice-leadership-2025-05.jsonl")))
    return sqlite_url


@pytest.fixture
def probe_gone_url(seeded_url: str, folder: Path) -> str:
    """A user projection built in the database, whose module is then gone."""
    module = folder / "probe.py"
    module.write_text(PROBE, encoding="utf-8")
    ok(invoke(seeded_url, "rebuild", "probe"))
    module.unlink()
    return seeded_url


def test_a_forget_whose_report_cannot_be_written_says_it_was_done(probe_gone_url: str) -> None:
    seeded_url = probe_gone_url
    # when it is forgotten with the output on a full disk
    forgotten = to_a_full_disk("--db", seeded_url, "projections", "--forget", "probe")
    # then the error says it was forgotten all the same, as it was
    assert forgotten.returncode == 1
    assert forgotten.stderr == (
        "error: cannot write the output: No space left on device; probe was forgotten all "
        "the same: dropped p_probe_seen and its checkpoint (it was at position 29)\n"
    )
    assert "probe" not in ok(invoke(seeded_url, "projections"))


def test_a_forget_as_json_whose_report_cannot_be_written_says_it_was_done(
    probe_gone_url: str,
) -> None:
    seeded_url = probe_gone_url
    forgotten = to_a_full_disk("--db", seeded_url, "projections", "--forget", "probe", "--json")
    assert forgotten.returncode == 1
    assert "probe was forgotten all the same" in forgotten.stderr


def test_a_rebuild_whose_report_cannot_be_written_still_names_the_projection_that_failed(
    seeded_url: str, folder: Path
) -> None:
    # given a user projection that raises, built (and failed) once in the database
    (folder / "failing.py").write_text(FAILING, encoding="utf-8")
    assert invoke(seeded_url, "rebuild", "failing").exit_code == 1
    # when every projection is rebuilt with the output on a full disk
    rebuilt = to_a_full_disk("--db", seeded_url, "rebuild")
    # then the error names the failure as well as what was rebuilt all the same
    assert rebuilt.returncode == 1
    lines = rebuilt.stderr.splitlines()
    assert lines[0].startswith(
        "error: projection failing could not apply events 1-29: ValueError: no such column in "
        "my head"
    ), rebuilt.stderr
    assert lines[-1] == (
        "error: cannot write the output: No space left on device; leadership, audit, "
        "feed_entries rebuilt all the same, to position 29"
    )


def to_a_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """``leaderlog ARGS`` with its standard output a pipe nobody reads any more."""
    reading, writing = os.pipe()
    os.close(reading)
    try:
        return writing_to(writing, *args)
    finally:
        os.close(writing)


def test_a_rebuild_into_a_closed_pipe_says_what_it_rebuilt_all_the_same(
    seeded_url: str, folder: Path
) -> None:
    # given a log whose projections were built once
    ok(invoke(seeded_url, "rebuild"))
    # when one is rebuilt with its output going to a pipe whose reader has gone
    rebuilt = to_a_closed_pipe("--db", seeded_url, "rebuild", "leadership")
    # then it fails on the broken pipe, and says the rebuild was done all the same
    assert rebuilt.returncode == 1
    assert rebuilt.stderr == (
        "error: cannot write the output: Broken pipe; leadership rebuilt all the same, "
        "to position 29\n"
    )


def test_a_lost_report_of_a_rebuild_whose_named_projection_failed_claims_none_rebuilt(
    seeded_url: str, folder: Path
) -> None:
    # given a user projection that raises, in a database where nothing was built yet (so the
    # built-ins are built beside it, and the rebuild has a line to say of them)
    (folder / "failing.py").write_text(FAILING, encoding="utf-8")
    # when only that projection is rebuilt with the output on a full disk
    rebuilt = to_a_full_disk("--db", seeded_url, "rebuild", "failing")
    # then the failure is said, and the lost output, with no claim of a name rebuilt
    assert rebuilt.returncode == 1
    first, last = rebuilt.stderr.splitlines()
    assert first.startswith(
        "error: projection failing could not apply events 1-29: ValueError: no such column"
    ), rebuilt.stderr
    assert last == "error: cannot write the output: No space left on device"
