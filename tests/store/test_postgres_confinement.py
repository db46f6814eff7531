"""On PostgreSQL, as on SQLite, a user projection changes only its own tables.

PostgreSQL has no authorizer: what a projection's statements changed beyond its own tables
is found when ``apply`` (or ``schema()``) returns, and its page is undone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

import asyncpg
import pytest

from leaderlog.events import RecordedEvent
from leaderlog.log import EventLog
from leaderlog.projections import (
    LeadershipProjection,
    ProjectionFailed,
    ProjectionRunner,
    ProjectionTransaction,
)
from leaderlog.store.postgres import PostgresStore
from tests.projections.logs import SEED_COUNT
from tests.projections.test_runner import (
    Exploding,
    an_overreaching_statement_stops_only_its_projection,
)

pytestmark = pytest.mark.usefixtures("postgres_url")

_APPEND_ONLY = "leaderlog_events_are_append_only"


@pytest.mark.parametrize(
    ("statement", "reason"),
    [
        ("DELETE FROM p_leadership_orgs", "changing rows of p_leadership_orgs, which is not"),
        ("UPDATE projection_checkpoints SET position = 0", "changing rows of projection_checkp"),
        (
            "INSERT INTO projection_checkpoints (name, version, position) VALUES ('x', 1, 0)",
            "changing rows of projection_checkpoints, which is not its own",
        ),
        ("DROP TABLE events CASCADE", "dropping the table events, which is not its own"),
        ("DROP TABLE p_leadership_orgs", "dropping the table p_leadership_orgs, which is not"),
        ("TRUNCATE p_leadership_orgs", "changing the table p_leadership_orgs, which is not"),
        (
            "DROP TRIGGER events_are_append_only_delete ON events",
            "changing the triggers of events, not its own",
        ),
        ("ALTER TABLE events DISABLE TRIGGER USER", "changing the triggers of events"),
        ("ALTER TABLE events ALTER COLUMN actor DROP NOT NULL", "changing the columns of events"),
        # its first column too (the log's order)
        ("ALTER TABLE events RENAME COLUMN position TO pos", "changing the columns of events"),
        ("ALTER TABLE events ALTER COLUMN actor SET DEFAULT 'x'", "changing the column defaults"),
        ("ALTER TABLE events ADD CHECK (position > 0) NOT VALID", "changing the constraints of e"),
        ("ALTER TABLE events ENABLE ROW LEVEL SECURITY", "changing the table events, which is"),
        (
            "CREATE POLICY p_overreaching_all ON events USING (true)",
            "changing a row security policy on",
        ),
        (
            "CREATE RULE p_overreaching_none AS ON INSERT TO events DO INSTEAD NOTHING",
            "changing a rule on",
        ),
        ("GRANT ALL ON events TO PUBLIC", "changing the table events, which is not its own"),
        ("CREATE TABLE p_leadership_more (x TEXT)", "creating the table p_leadership_more, which"),
        # A temporary table would hide the log's own from later statements on the connection.
        ("CREATE TEMPORARY TABLE events (x TEXT)", "creating the table events, which is not"),
        ("CREATE INDEX p_overreaching_i ON events (actor)", "changing an index of events, not i"),
        (
            "ALTER TABLE p_overreaching_seen RENAME TO write_tokens",
            "renaming the table p_overreaching_seen to write_tokens, which is not its own",
        ),
        (
            "CREATE INDEX p_audit_events_type ON p_overreaching_seen (position)",
            "an index named p_audit_events_type, which is not its own",
        ),
        ("CREATE VIEW p_overreaching_v AS SELECT 1", "a view (p_overreaching_v): nothing would"),
        (
            f"CREATE OR REPLACE FUNCTION {_APPEND_ONLY}() RETURNS trigger LANGUAGE plpgsql "
            "AS 'BEGIN RETURN NULL; END'",
            f"changing the function {_APPEND_ONLY}, which is not its own",
        ),
        # The log's trigger function, renamed into a name of the projection's own: the
        # next store to open the log creates another, which its triggers do not call.
        (
            f"ALTER FUNCTION {_APPEND_ONLY}() RENAME TO p_overreaching_f",
            "changing the function p_overreaching_f, which is not its own",
        ),
        ("CREATE SCHEMA p_overreaching_space", "creating the schema p_overreaching_space"),
        ("SET search_path = pg_catalog", "changing the setting search_path (it would stay"),
        # The role the runner's next statements would run as.
        ("SET ROLE pg_read_all_data", "changing the setting role (it would stay"),
        ("SET session_replication_role = replica", "changing the setting session_replication_r"),
        ("SET LOCAL work_mem = '1MB'", "changing the setting work_mem"),
        (
            "CREATE TABLE p_overreaching_pin (source TEXT REFERENCES p_leadership_sources)",
            "a foreign key of p_overreaching_pin refers to p_leadership_sources, not its own",
        ),
        # Changes made through a function are found all the same.
        (
            "CREATE FUNCTION p_overreaching_f() RETURNS void LANGUAGE sql AS "
            "'DELETE FROM p_leadership_orgs'; SELECT p_overreaching_f()",
            "changing rows of p_leadership_orgs, which is not its own",
        ),
    ],
)
async def test_on_postgres_a_user_projection_changes_only_its_own_tables(
    seeded_postgres_log: EventLog, statement: str, reason: str
) -> None:
    said = await an_overreaching_statement_stops_only_its_projection(seeded_postgres_log, statement)
    assert f"ProjectionError: a projection may not do this: {reason}" in said


class OverreachingSchema(Exploding):
    """Its ``schema()`` declares a foreign key to a built-in's table."""

    name: ClassVar[str] = "overreaching_schema"

    def schema(self) -> Sequence[str]:
        return (
            *super().schema(),
            "CREATE TABLE IF NOT EXISTS p_overreaching_schema_pin "
            "(source TEXT REFERENCES p_leadership_sources)",
        )

    def tables(self) -> Sequence[str]:
        return (*super().tables(), "p_overreaching_schema_pin")


async def test_on_postgres_a_schema_overreaching_is_refused_too(
    seeded_postgres_log: EventLog,
) -> None:
    runner = ProjectionRunner(
        seeded_postgres_log.store, [LeadershipProjection(), OverreachingSchema()], page=10
    )
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    (failure,) = raised.value.failures
    assert failure.name == "overreaching_schema"
    assert "a foreign key of p_overreaching_schema_pin refers to p_leadership_sources" in str(
        failure
    )
    assert await seeded_postgres_log.store.count() == SEED_COUNT
    assert (await seeded_postgres_log.store.verify()).ok


class OwnTablesOnly(Exploding):
    """Everything a projection may do with what it owns on PostgreSQL, and reading what it
    does not."""

    name: ClassVar[str] = "own_tables_only"

    def schema(self) -> Sequence[str]:
        return (
            *super().schema(),
            "CREATE TABLE IF NOT EXISTS p_own_tables_only_parent (id SERIAL PRIMARY KEY, "
            "n BIGINT NOT NULL DEFAULT 0 CHECK (n >= 0))",
            "CREATE TABLE IF NOT EXISTS p_own_tables_only_child (parent INTEGER "
            "REFERENCES p_own_tables_only_parent (id) ON DELETE CASCADE)",
        )

    def tables(self) -> Sequence[str]:
        return (*super().tables(), "p_own_tables_only_child", "p_own_tables_only_parent")

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        await tx.execute(
            "CREATE OR REPLACE FUNCTION p_own_tables_only_count() RETURNS trigger "
            # each page's row counts the pages from its own on
            "LANGUAGE plpgsql AS 'BEGIN UPDATE p_own_tables_only_parent SET n = n + 1; "
            "RETURN NEW; END'"
        )
        await tx.execute(
            "DROP TRIGGER IF EXISTS p_own_tables_only_counting ON p_own_tables_only_child; "
            "CREATE TRIGGER p_own_tables_only_counting AFTER INSERT ON p_own_tables_only_child "
            "FOR EACH ROW EXECUTE FUNCTION p_own_tables_only_count()"
        )
        await tx.execute("CREATE TABLE IF NOT EXISTS p_own_tables_only_extra (n BIGINT)")
        await tx.execute(
            "CREATE INDEX IF NOT EXISTS p_own_tables_only_n ON p_own_tables_only_extra (n)"
        )
        await tx.execute("ALTER TABLE p_own_tables_only_extra ADD COLUMN IF NOT EXISTS m INT")
        await tx.execute("INSERT INTO p_own_tables_only_extra (n) SELECT COUNT(*) FROM events")
        await tx.execute("UPDATE p_own_tables_only_extra SET n = n + 1")
        await tx.execute("DELETE FROM p_own_tables_only_extra WHERE n < 0")
        await tx.execute("INSERT INTO p_own_tables_only_parent DEFAULT VALUES")
        await tx.execute(
            "INSERT INTO p_own_tables_only_child SELECT MAX(id) FROM p_own_tables_only_parent"
        )
        await tx.execute("CREATE TEMPORARY TABLE IF NOT EXISTS p_own_tables_only_scratch (x INT)")
        await tx.execute("SAVEPOINT mine")
        await tx.execute("ROLLBACK TO SAVEPOINT mine")
        await tx.execute("RELEASE SAVEPOINT mine")
        await tx.fetchall("SELECT COUNT(*) FROM p_leadership_orgs")
        await tx.fetchall("SELECT current_setting('search_path')")


async def test_on_postgres_a_user_projection_may_do_anything_with_its_own_tables(
    seeded_postgres_log: EventLog,
) -> None:
    runner = ProjectionRunner(
        seeded_postgres_log.store, [LeadershipProjection(), OwnTablesOnly()], page=10
    )
    assert await runner.catch_up() == SEED_COUNT
    store = seeded_postgres_log.store
    assert await store.query("SELECT COUNT(*) FROM p_own_tables_only_extra") == [(3,)]
    assert await store.query("SELECT n FROM p_own_tables_only_parent ORDER BY id") == [
        (3,),
        (2,),
        (1,),
    ]
    # and a rebuild drops and makes them again
    assert await ProjectionRunner(store, [OwnTablesOnly()], page=10).rebuild() == SEED_COUNT


class Waiting(Exploding):
    """Waits, in the middle of its first page, until another session has changed the
    schema's catalog and committed."""

    name: ClassVar[str] = "waiting"

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.go_on = asyncio.Event()

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        if not self.go_on.is_set():
            self.reached.set()
            await self.go_on.wait()


async def test_on_postgres_another_session_s_changes_meanwhile_are_not_the_projection_s(
    seeded_postgres_log: EventLog, postgres_url: str
) -> None:
    # given another session's table, and a projection that stops in its first page
    store = seeded_postgres_log.store
    assert isinstance(store, PostgresStore)
    other = await asyncpg.connect(postgres_url, server_settings={"search_path": store.schema})
    try:
        await other.execute("CREATE TABLE someone_elses_old (x INT)")
        await other.execute(
            "CREATE OR REPLACE FUNCTION someone_elses() RETURNS INT LANGUAGE sql AS 'SELECT 1'"
        )
        waiting = Waiting()
        runner = ProjectionRunner(
            seeded_postgres_log.store, [LeadershipProjection(), waiting], page=10
        )
        catching_up = asyncio.create_task(runner.catch_up())
        await asyncio.wait_for(waiting.reached.wait(), 30)
        # when the other session changes the schema meanwhile, and commits
        await other.execute("CREATE TABLE someone_elses_new (x INT PRIMARY KEY)")
        await other.execute("INSERT INTO someone_elses_new VALUES (1)")
        await other.execute("DROP TABLE someone_elses_old")
        await other.execute(
            "CREATE OR REPLACE FUNCTION someone_elses() RETURNS INT LANGUAGE sql AS 'SELECT 2'"
        )
        await other.execute("CREATE SCHEMA p_someone_elses")
        await other.execute("DROP SCHEMA p_someone_elses")
        waiting.go_on.set()
        # then the projection goes on: none of it was its doing
        assert await asyncio.wait_for(catching_up, 60) == SEED_COUNT
    finally:
        await other.close()


async def test_a_setting_that_went_away_is_told_as_a_change_not_a_crash() -> None:
    # given a setting this session had set before apply, and gone after it (a RESET, or a
    # SET ROLE to a role that may not read it)
    from leaderlog.store._postgres_confinement import Snapshot, _Row, overreach

    before = Snapshot(
        {("setting", "work_mem"): _Row("setting", "work_mem", "2MB", "work_mem", 0, "", "")}
    )

    async def nothing_now(sql: str, parameters: Sequence[object] = ()) -> list[tuple[object, ...]]:
        return []

    # when the change is looked for, then it is the setting's, said as such
    found = await overreach(nothing_now, before, lambda name: False)
    assert found is not None and found.startswith("changing the setting work_mem (")
