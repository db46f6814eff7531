"""How a user projection is watched: its statements, its savepoint, where its failure lies."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from types import SimpleNamespace
from typing import ClassVar

import pytest

from leaderlog.errors import ProjectionFailed, ProjectionTimedOut
from leaderlog.events import RecordedEvent
from leaderlog.log import EventLog
from leaderlog.projections import LeadershipProjection, ProjectionTransaction
from leaderlog.projections._isolation import apply_failure
from leaderlog.projections.runner import ProjectionRunner
from tests.projections.logs import SEED_COUNT, failure_location
from tests.projections.test_runner import (
    Exploding,
    UndoingDuplicates,
    an_overreaching_statement_stops_only_its_projection,
)


class UndoingWithIndentedSql(UndoingDuplicates):
    """Undoes its duplicate as UndoingDuplicates does, its ROLLBACK TO written in an indented
    triple-quoted string (so the statement begins with a newline and spaces)."""

    name: ClassVar[str] = "undoing_indented"

    def rollback_to(self, position: int) -> str:
        return """
                        ROLLBACK TO SAVEPOINT one_row
                        """


async def test_a_rollback_to_its_own_savepoint_undoes_a_failure_however_it_is_indented(
    seeded_log: EventLog,
) -> None:
    # given a projection that undoes each failed insert by rolling back to its own
    # savepoint, the statement written with leading whitespace
    projection = UndoingWithIndentedSql()
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection(), projection], page=10)
    # when catching up
    caught_up = await runner.catch_up()
    # then the failures it undid do not stop it: every event is applied once
    assert caught_up == SEED_COUNT
    assert await seeded_log.store.query("SELECT COUNT(*) FROM p_undoing_indented_seen") == [
        (SEED_COUNT,)
    ]


class FailingInAHelper(Exploding):
    """Its apply calls a helper method of its own, which raises."""

    name: ClassVar[str] = "failing_in_a_helper"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await self._check(events)

    async def _check(self, events: Sequence[RecordedEvent]) -> None:
        raise RuntimeError("the helper of apply gave up")


async def test_a_failure_is_located_at_the_projection_s_innermost_line_that_raised(
    seeded_log: EventLog,
) -> None:
    # given a projection whose apply fails in a helper of its own module
    runner = ProjectionRunner(seeded_log.store, [FailingInAHelper()])
    # when catching up
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    # then the failure names the helper's line that raised, not the call in apply
    located = failure_location(__file__, 'raise RuntimeError("the helper of apply gave up")')
    assert located in str(raised.value)


@pytest.mark.parametrize(("next_page", "said"), [(1, "pages of 1 event"), (2, "pages of 2 events")])
def test_a_timed_out_page_says_how_many_events_it_goes_on_with(next_page: int, said: str) -> None:
    # given a user projection stopped for taking too long on events 1-4
    events = [SimpleNamespace(position=position) for position in range(1, 5)]
    timed_out = ProjectionTimedOut(5, next_page)
    # when its failure is worded
    failure = apply_failure(Exploding(), events, timed_out, None)  # type: ignore[arg-type]
    # then it says the smaller page it goes on with, in the right number
    assert str(failure).endswith(f"; it goes on with {said}")


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("SELECT 1;\n  COMMIT", "'COMMIT' would end the runner's transaction"),
        ("SELECT 1;  RELEASE SAVEPOINT one_projection", "'RELEASE SAVEPOINT one_projection' would"),
        ("SELECT 1;\tDEALLOCATE ALL", "'DEALLOCATE ALL' would drop the prepared statements"),
    ],
)
async def test_a_refused_statement_after_another_is_named_without_the_space_before_it(
    seeded_log: EventLog, statement: str, named: str
) -> None:
    # given a projection running a text of two statements, the second one refused, written
    # after a space or a line break
    # when it is applied
    said = await an_overreaching_statement_stops_only_its_projection(seeded_log, statement)
    # then the failure quotes the refused statement itself, as written, without that space
    assert f"a projection's statement may not do this: {named}" in said


@pytest.mark.parametrize(
    "statement",
    [
        "/* its own savepoint? */ RELEASE SAVEPOINT one_projection",
        "-- a comment first\nROLLBACK TO SAVEPOINT one_projection",
    ],
)
async def test_a_comment_does_not_hide_the_runner_s_savepoint(
    seeded_log: EventLog, statement: str
) -> None:
    # given a projection releasing or rolling back to the runner's savepoint, a comment first
    # when it is applied
    said = await an_overreaching_statement_stops_only_its_projection(seeded_log, statement)
    # then it is refused, as without the comment
    assert "would end the runner's transaction or take its savepoint" in said


class QuotingASemicolon(Exploding):
    """Reads a text that holds a semicolon and a word that would end the transaction."""

    name: ClassVar[str] = "quoting_a_semicolon"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await tx.fetchall('SELECT \'done; COMMIT\', "x;BEGIN" FROM (SELECT 1 AS "x;BEGIN")')
        await super().apply(tx, events)


async def test_words_inside_quoted_text_are_not_taken_for_statements(
    seeded_log: EventLog,
) -> None:
    # given a projection whose statement quotes "; COMMIT" and "; BEGIN" as a text and a name
    runner = ProjectionRunner(seeded_log.store, [QuotingASemicolon()], page=10)
    # when catching up, then it is applied as any other statement
    assert await runner.catch_up() == SEED_COUNT


class CatchingThenRaising(Exploding):
    """Catches a duplicate key, then fails on its own with an error of its own."""

    name: ClassVar[str] = "catching_then_raising"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        for _ in range(2):
            with contextlib.suppress(Exception):
                await tx.execute(
                    "INSERT INTO p_catching_then_raising_seen (position) VALUES (?)",
                    (events[0].position,),
                )
        raise ValueError("something else went wrong afterwards")


async def test_an_error_raised_after_a_caught_statement_is_named_by_that_statement(
    seeded_log: EventLog,
) -> None:
    # given a projection that catches a failed statement, then raises an unrelated error
    runner = ProjectionRunner(seeded_log.store, [CatchingThenRaising()], page=10)
    # when catching up
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    # then the failure names the statement that failed first, the one to fix, and says that
    # apply went on after it
    said = str(raised.value)
    assert "; apply() went on after this statement failed" in said
    assert "something else went wrong afterwards" not in said


class RaisingWhileHandling(Exploding):
    """Catches a duplicate key and raises its own error while handling it (no ``from``)."""

    name: ClassVar[str] = "raising_while_handling"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        for _ in range(2):
            try:
                await tx.execute(
                    "INSERT INTO p_raising_while_handling_seen (position) VALUES (?)",
                    (events[0].position,),
                )
            except Exception:
                if _:
                    # raised while handling it: its context is the failed statement's error
                    raise ValueError("a duplicate position, said in my own words")  # noqa: B904


async def test_an_error_raised_while_handling_a_failed_statement_is_named_itself(
    seeded_log: EventLog,
) -> None:
    # given a projection that raises its own error while handling a failed statement
    runner = ProjectionRunner(seeded_log.store, [RaisingWhileHandling()], page=10)
    # when catching up
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    # then its own error is named, as it did not go on after the failure
    said = str(raised.value)
    assert ": ValueError: a duplicate position, said in my own words (" in said
    assert "apply() went on" not in said


class FailingTwiceCaught(Exploding):
    """Catches a statement on a table it never made, then a duplicate key."""

    name: ClassVar[str] = "failing_twice_caught"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        with contextlib.suppress(Exception):
            await tx.execute("INSERT INTO p_failing_twice_caught_never_made (n) VALUES (1)")
        for _ in range(2):
            with contextlib.suppress(Exception):
                await tx.execute(
                    "INSERT INTO p_failing_twice_caught_seen (position) VALUES (?)",
                    (events[0].position,),
                )


class FailingAgainWhileHandling(Exploding):
    """Catches a duplicate key, and while handling it runs a statement that fails too."""

    name: ClassVar[str] = "failing_again_while_handling"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        for _ in range(2):
            try:
                await tx.execute(
                    "INSERT INTO p_failing_again_while_handling_seen (position) VALUES (?)",
                    (events[0].position,),
                )
            except Exception:
                await tx.execute("INSERT INTO p_failing_again_while_handling_gone (n) VALUES (1)")


@pytest.mark.parametrize(
    ("projection", "first"),
    [
        (FailingTwiceCaught(), "OperationalError: no such table: p_failing_twice_caught_never"),
        (FailingAgainWhileHandling(), "IntegrityError: UNIQUE constraint failed: "),
    ],
)
async def test_of_several_failed_statements_the_first_is_named(
    seeded_log: EventLog, projection: Exploding, first: str
) -> None:
    # given a projection in which one statement fails, then another
    runner = ProjectionRunner(seeded_log.store, [projection], page=10)
    # when catching up
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    # then the failure names the first, the one to fix first, and that apply went on after it
    said = str(raised.value)
    assert f"could not apply events 1-10: {first}" in said
    assert "apply() went on after this statement failed" in said


async def test_postgres_a_change_found_once_apply_returned_names_no_line_of_leaderlog(
    seeded_postgres_log: EventLog,
) -> None:
    # given a projection deleting a built-in's rows, which PostgreSQL lets run and leaderlog
    # finds only once apply has returned
    # when it is applied
    said = await an_overreaching_statement_stops_only_its_projection(
        seeded_postgres_log, "DELETE FROM p_leadership_orgs"
    )
    # then the failure names what it changed, and no line of leaderlog's own code, which
    # would send its author looking in the wrong place
    assert "changing rows of p_leadership_orgs, which is not its own" in said
    assert "leaderlog/" not in said and ", line " not in said
