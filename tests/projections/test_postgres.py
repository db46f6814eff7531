"""The same projections and queries on PostgreSQL: portable SQL, same answers as SQLite."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import multiprocessing
import uuid
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from leaderlog.errors import StoreUnavailable
from leaderlog.events import format_time
from leaderlog.feeds._read import FeedReader
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections import (
    BUILTIN,
    InvalidQuery,
    ProjectionRunner,
    Queries,
    UnknownEntity,
    runner_for,
)
from leaderlog.projections.runner import forget_projection
from leaderlog.store import open_store
from leaderlog.store.base import utc_now
from tests.conftest import ROOT, SEEDS
from tests.projections.logs import GORDON_ACTING, HAMMER_CAPTION, SEED_COUNT, append, record
from tests.projections.test_runner import (
    ENDING_THE_TRANSACTION,
    FOLLOW_UPS,
    Counting,
    ProbeX,
    a_broken_schema_stops_only_its_projection,
    a_caught_statement_error_stops_its_projection_alone,
    a_dangling_deferred_key_stops_only_its_projection,
    a_failing_projection_stops_alone,
    a_foreign_key_an_earlier_version_let_in_does_not_block_a_rebuild,
    a_refused_statement_stops_only_its_projection,
    a_slow_user_projection_holds_back_nobody_for_long,
    a_statement_refused_after_a_caught_one_names_the_caught_one,
    a_user_projections_endless_statement_is_stopped,
    an_overreaching_statement_stops_only_its_projection,
    dump,
)
from tests.store import postgres_connection, postgres_schema


async def _answers(log: EventLog) -> dict[str, object]:
    queries = Queries(log.store)
    return {
        "state": await queries.state(org="ice", as_of="2025-06-15"),
        "early": await queries.state(as_of="2025-06-15", known_at=22),
        "history": await queries.history(org="dhs"),
        "claim": await queries.claim(HAMMER_CAPTION),
        "audit": await queries.audit(attribution="anonymous", limit=3),
    }


def later(seconds: int = 0) -> dt.datetime:
    """A recorded time after the seeds (stamped as they were appended) and not in the
    future by more than the store allows: recorded times only move forward."""
    return utc_now() + dt.timedelta(seconds=30 + seconds)


async def test_postgres_gives_the_same_answers_as_sqlite(
    seeded_postgres_log: EventLog, sqlite_url: str
) -> None:
    # given the same log on both backends, caught up in pages of different sizes
    async with await EventLog.open(sqlite_url) as lite:
        await load_seeds(lite, SEEDS)
        first, second = later(), later(1)
        for log in (lite, seeded_postgres_log):
            await append(log, FOLLOW_UPS[:2], recorded_at=first)
            await append(
                log,
                [record("org.registered", org="board", name="Board"), *FOLLOW_UPS[2:]],
                recorded_at=second,
            )
            await (await runner_for(log.store)).catch_up()
        expected = await _answers(lite)
    # then every answer matches, except the times the two stores recorded
    found = await _answers(seeded_postgres_log)
    for key in ("state", "early", "history", "claim"):
        for answer in (expected[key], found[key]):
            answer["known_at"].pop("recorded_through")  # type: ignore[index]
    for event in (*expected["audit"]["events"], *found["audit"]["events"]):  # type: ignore[index]
        event.pop("recorded_at")
        event.pop("event_id") if event["position"] > SEED_COUNT else None
    for step in (*expected["claim"]["lifecycle"], *found["claim"]["lifecycle"]):  # type: ignore[index]
        if step["position"] <= SEED_COUNT:
            step.pop("recorded_at")
            step.pop("actor")
    assert found == expected
    claim = await Queries(seeded_postgres_log.store).claim(GORDON_ACTING)
    assert claim["status"] == "confirmed"


async def test_answers_are_in_code_point_order_whatever_the_collation(postgres_url: str) -> None:
    """A database made with en_US (a common default) sorts "a1" before "a-c"; SQLite does
    not. Emulated on the columns, as the test server's database is C.UTF-8."""
    posts = ["ice-a-c", "ice-a1", "ice-ab"]
    async with postgres_schema(postgres_url) as url, await EventLog.open(url) as log:
        await load_seeds(log, SEEDS)
        await append(
            log,
            [record("post.defined", post=post, org="ice", title=post) for post in posts],
            recorded_at=later(),
        )
        # and as many actors, of the same names, as an unknown one is answered with, and more
        actors = ["a-c", "a-d", "a-e", "a1", "a2", "ab"]
        for number, actor in enumerate(actors):
            person = record("person.registered", person=f"by-{number}", name=actor)
            await append(log, [person], recorded_at=later(), actor=actor)
        await (await runner_for(log.store)).catch_up()
        async with postgres_connection(url) as connection:
            # what glibc's en_US.UTF-8 does: punctuation counts only after letters and digits
            await connection.execute(
                "CREATE COLLATION en_us_glibc_like (provider = icu, locale = 'en-US-u-ka-shifted')"
            )
            for table, column in (
                ("p_leadership_posts", "post"),
                ("p_feed_entries_entities", "id"),
                ("p_audit_actors", "actor"),
            ):
                await connection.execute(
                    f"ALTER TABLE {table} ALTER COLUMN {column} TYPE text COLLATE en_us_glibc_like"
                )
            # the collation really reorders them
            ordered = await connection.fetch(
                "SELECT DISTINCT post FROM p_leadership_posts WHERE post = ANY($1::text[]) "
                "ORDER BY post",
                posts,
            )
            assert [row["post"] for row in ordered] != posts
        state = await Queries(log.store).state(org="ice")
        listed = [answer["post"]["post"] for answer in state["posts"]]
        assert listed == sorted(listed) and set(posts) <= set(listed)
        entities = await FeedReader(log.store).entities(("post",))
        assert [row.id for row in entities] == sorted(row.id for row in entities)
        # the first five actors, as SQLite names them
        with pytest.raises(UnknownEntity) as unknown:
            await Queries(log.store).audit(actor="zzzz")
        assert str(unknown.value).endswith(
            "; the actors are a-c (1 event), a-d (1 event), a-e (1 event), a1 (1 event), "
            "a2 (1 event) and 3 more"
        )


async def test_postgres_projects_a_claim_deep_in_a_tree_of_long_organisation_ids(
    seeded_postgres_log: EventLog,
) -> None:
    """A path of 80 ids of 64 characters is longer than a PostgreSQL index entry can be
    (made of hashes, as text that compresses well would fit)."""
    orgs = [
        f"deep-{level:02d}-" + hashlib.sha256(str(level).encode()).hexdigest()[:56]
        for level in range(80)
    ]
    raws = [record("org.registered", org=orgs[0], name="Level 0")]
    raws += [
        record("org.registered", org=org, name=f"Level {level}", parent=orgs[level - 1])
        for level, org in enumerate(orgs[1:], start=1)
    ]
    raws += [
        record("post.defined", post="deep-head", org=orgs[-1], title="Head"),
        record(
            "claim.reported",
            claim="deep-head-named",
            source="fox-ice-shakeup-2025-05",
            kind="appointment",
            person="derek-gordon",
            post="deep-head",
            capacity="acting",
            modality="occurred",
            attribution={"kind": "outlet"},
        ),
    ]
    await append(seeded_postgres_log, raws)
    await (await runner_for(seeded_postgres_log.store)).catch_up()
    entries = await FeedReader(seeded_postgres_log.store).recent(f"org:{orgs[0]}", limit=10)
    assert [entry["claim"] for entry in entries] == ["deep-head-named"]


async def test_postgres_rebuild_equals_incremental_and_time_travel(
    seeded_postgres_log: EventLog,
) -> None:
    runner = await runner_for(seeded_postgres_log.store)
    await runner.catch_up()
    moment = later()
    await append(seeded_postgres_log, FOLLOW_UPS, recorded_at=moment)
    await runner.catch_up()
    incremental = await dump(seeded_postgres_log.store, runner.projections)
    await ProjectionRunner(
        seeded_postgres_log.store, [cls() for cls in BUILTIN.values()], page=5
    ).rebuild()
    assert await dump(seeded_postgres_log.store, runner.projections) == incremental
    just_before = format_time(moment - dt.timedelta(seconds=1))
    before = await Queries(seeded_postgres_log.store).resolve_known_at(just_before)
    assert before["position"] == SEED_COUNT


async def test_postgres_a_rebuild_leaves_the_planner_the_sizes_of_its_tables(
    seeded_postgres_log: EventLog,
) -> None:
    # when the projections are rebuilt
    runner = ProjectionRunner(seeded_postgres_log.store, [cls() for cls in BUILTIN.values()])
    await runner.rebuild()
    # then each table they filled has been analysed (never analysed, its size reads -1)
    tables = [table for projection in runner.projections for table in projection.tables()]
    sizes = dict(
        await seeded_postgres_log.store.query(
            "SELECT c.relname, c.reltuples FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        )
    )
    assert sizes["p_leadership_claim_versions"] > 0
    assert all(sizes[table] >= 0 for table in tables), sizes


async def test_postgres_a_long_catch_up_lets_the_planner_learn_the_tables_as_they_grow(
    seeded_postgres_log: EventLog,
) -> None:
    # given projections built, and analysed, on the seeds, then many more claims appended
    runner = ProjectionRunner(seeded_postgres_log.store, [cls() for cls in BUILTIN.values()])
    await runner.catch_up()
    before = await _estimated_rows(seeded_postgres_log, "p_leadership_claim_versions")
    await append(seeded_postgres_log, FOLLOW_UPS)
    # when a runner catches up in small pages, learning the sizes every few events
    catching_up = ProjectionRunner(
        seeded_postgres_log.store, [cls() for cls in BUILTIN.values()], page=2
    )
    catching_up.refresh_statistics_after = 2
    await catching_up.catch_up()
    # then the planner's estimate grew with the table, with no rebuild to prompt it
    assert await _estimated_rows(seeded_postgres_log, "p_leadership_claim_versions") > before


async def _estimated_rows(log: EventLog, table: str) -> float:
    ((rows,),) = await log.store.query(
        "SELECT c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relname = ?",
        (table,),
    )
    return float(rows)


async def test_postgres_runners_in_parallel_apply_each_event_once(
    seeded_postgres_log: EventLog,
) -> None:
    runners = [
        ProjectionRunner(seeded_postgres_log.store, [cls() for cls in BUILTIN.values()], page=3)
        for _ in range(3)
    ]
    await asyncio.gather(*(runner.catch_up() for runner in runners))
    together = await dump(seeded_postgres_log.store, runners[0].projections)
    await runners[0].rebuild()
    assert await dump(seeded_postgres_log.store, runners[0].projections) == together


async def test_postgres_runs_the_user_turnover_projection(seeded_postgres_log: EventLog) -> None:
    runner = await runner_for(seeded_postgres_log.store, ROOT / "projections", also=("turnover",))
    await runner.rebuild(["turnover"])
    rows = await seeded_postgres_log.store.query(
        "SELECT org, tenures FROM p_turnover_orgs ORDER BY org"
    )
    assert rows == [("dhs", 1), ("ice-ero", 1), ("ice-hsi", 2), ("white-house", 1)]


async def _unknown_answers(log: EventLog) -> list[tuple[str, tuple[str, ...]]]:
    await (await runner_for(log.store)).catch_up()
    queries = Queries(log.store)
    calls = [
        queries.state(org="ICE"),
        queries.state(org="_"),
        queries.history(person="Robert J. Hammer"),
        queries.history(person="%"),
        queries.history(post="hsi DIRECTOR"),
        queries.history(post="director"),
        queries.claim("HAMMER hsi"),
        queries.claim("fox-ice-shakeup-2025-05-gordon-hsi-acting", known_at=3),
    ]
    answers = []
    for call in calls:
        try:
            await call
        except UnknownEntity as error:
            answers.append((str(error), error.suggestions))
    return answers


async def test_postgres_suggests_the_same_ids_as_sqlite(
    seeded_postgres_log: EventLog, sqlite_url: str
) -> None:
    async with await EventLog.open(sqlite_url) as lite:
        await load_seeds(lite, SEEDS)
        expected = await _unknown_answers(lite)
    found = await _unknown_answers(seeded_postgres_log)
    assert len(found) == 8
    assert found == expected
    assert found[0][1][0] == "ice" and found[3] == ("unknown person '%'", ())


async def test_postgres_ids_with_control_characters_are_refused_not_a_crash(
    seeded_postgres_log: EventLog,
) -> None:
    """PostgreSQL refuses NUL in text outright; the question is refused before it gets there."""
    await (await runner_for(seeded_postgres_log.store)).catch_up()
    queries = Queries(seeded_postgres_log.store)
    with pytest.raises(InvalidQuery, match="contains a control character"):
        await queries.state(org="\x00")
    with pytest.raises(InvalidQuery, match="contains a control character"):
        await queries.history(person="a\x00")
    with pytest.raises(InvalidQuery, match="contains a control character"):
        await queries.claim("\x00")
    with pytest.raises(InvalidQuery, match="contains a control character"):
        await queries.audit(publisher="\x00")


async def test_postgres_ids_in_bytes_that_are_not_utf8_are_refused_not_a_crash(
    seeded_postgres_log: EventLog,
) -> None:
    """What Python makes of Latin-1 bytes on a command line: asyncpg cannot send them."""
    await (await runner_for(seeded_postgres_log.store)).catch_up()
    queries = Queries(seeded_postgres_log.store)
    with pytest.raises(InvalidQuery, match="org 'caf\\\\udce9' holds bytes that are not UTF-8"):
        await queries.state(org="caf\udce9")
    with pytest.raises(InvalidQuery, match=r"person .* holds bytes that are not UTF-8"):
        await queries.history(person="\udcff")
    with pytest.raises(InvalidQuery, match=r"claim .* holds bytes that are not UTF-8"):
        await queries.claim("\udcff")
    with pytest.raises(InvalidQuery, match=r"source .* holds bytes that are not UTF-8"):
        await queries.audit(source="\udcff")
    with pytest.raises(InvalidQuery, match=r"publisher .* holds bytes that are not UTF-8"):
        await queries.audit(publisher="Caf\udce9")
    with pytest.raises(InvalidQuery, match=r"actor .* holds bytes that are not UTF-8"):
        await queries.audit(actor="\udcff")
    assert str(await queries.unknown("person", "caf\udce9")) == "unknown person 'caf\\udce9'"


async def test_postgres_a_failing_projection_stops_alone(seeded_postgres_log: EventLog) -> None:
    await a_failing_projection_stops_alone(seeded_postgres_log)


async def test_postgres_a_refused_statement_stops_only_its_projection(
    seeded_postgres_log: EventLog,
) -> None:
    await a_refused_statement_stops_only_its_projection(seeded_postgres_log)


async def test_postgres_a_broken_schema_stops_only_its_projection(
    seeded_postgres_log: EventLog,
) -> None:
    await a_broken_schema_stops_only_its_projection(seeded_postgres_log)


async def test_postgres_a_caught_statement_error_stops_its_projection_alone(
    seeded_postgres_log: EventLog,
) -> None:
    """Not "current transaction is aborted" for it and every projection after it."""
    await a_caught_statement_error_stops_its_projection_alone(seeded_postgres_log)


async def test_postgres_a_statement_refused_after_a_caught_one_names_the_caught_one(
    seeded_postgres_log: EventLog,
) -> None:
    await a_statement_refused_after_a_caught_one_names_the_caught_one(seeded_postgres_log)


async def test_postgres_a_slow_user_projection_holds_back_nobody_for_long(
    seeded_postgres_log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    await a_slow_user_projection_holds_back_nobody_for_long(seeded_postgres_log, caplog)


async def test_postgres_forgets_a_user_projection_s_own_tables_only(
    seeded_postgres_log: EventLog,
) -> None:
    store = seeded_postgres_log.store
    await ProjectionRunner(store, [ProbeX(), Counting()]).catch_up()
    tables, position = await forget_projection(store, "probe_x", ["counting", *BUILTIN])
    assert (tables, position) == (["p_probe_x_seen"], SEED_COUNT)
    assert set(await ProjectionRunner(store, []).registered()) == {"counting"}
    assert await store.query("SELECT COUNT(*) FROM p_counting_seen") == [(SEED_COUNT,)]


def _prepare_when_all_are_ready(url: str, ready: Barrier, left_out: Queue[str]) -> None:
    async def prepare() -> None:
        store = await open_store(url)
        try:
            runner = ProjectionRunner(store, [cls() for cls in BUILTIN.values()])
            ready.wait()
            try:
                await runner.catch_up()
            except Exception as error:
                left_out.put(f"{type(error).__name__}: {error}")
            left_out.put(", ".join(runner.unprepared))
        finally:
            await store.close()

    asyncio.run(prepare())


@pytest.mark.parametrize("round_", range(2))
async def test_postgres_servers_starting_together_on_a_new_log_prepare_every_projection(
    postgres_url: str, round_: int
) -> None:
    """Servers in processes of their own run the same CREATE ... IF NOT EXISTS at once, which
    PostgreSQL can refuse (a duplicate catalog key) or deadlock on: preparing is serialised,
    and no projection is left out."""
    async with postgres_schema(postgres_url) as url:
        async with await EventLog.open(url) as log:
            await load_seeds(log, SEEDS)
        context = multiprocessing.get_context("fork")
        ready, left_out = context.Barrier(4), context.Queue()
        servers = [
            context.Process(target=_prepare_when_all_are_ready, args=(url, ready, left_out))
            for _ in range(4)
        ]
        for server in servers:
            server.start()
        for server in servers:
            await asyncio.to_thread(server.join, 60)
        reports = [left_out.get(timeout=5) for _ in servers]
        assert reports == [""] * 4
        assert [server.exitcode for server in servers] == [0] * 4


async def test_postgres_a_lock_held_elsewhere_at_start_is_waited_out_not_a_left_out_projection(
    postgres_url: str,
) -> None:
    async with postgres_schema(postgres_url) as url:
        async with await EventLog.open(url) as log:
            await load_seeds(log, SEEDS)
            await ProjectionRunner(log.store, [cls() for cls in BUILTIN.values()]).catch_up()
        impatient = await open_store(f"{url}&lock_timeout=200ms")
        try:
            runner = ProjectionRunner(impatient, [cls() for cls in BUILTIN.values()])
            async with postgres_connection(url) as holder, holder.transaction():
                await holder.execute("LOCK TABLE p_leadership_posts IN ACCESS EXCLUSIVE MODE")
                with pytest.raises(StoreUnavailable, match="lock timeout"):
                    await runner.catch_up()
                assert runner.unprepared == {}
            # the lock is gone: the same runner prepares and catches up
            assert await runner.catch_up() == SEED_COUNT
            assert runner.unprepared == {}
        finally:
            await impatient.close()


async def test_postgres_rebuilding_beside_a_follower_neither_deadlocks_nor_stops_it(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A rebuild dropped tables before it locked the checkpoint rows; a follower applying a
    page takes them the other way round, and PostgreSQL broke the deadlock by failing one."""
    async with postgres_schema(postgres_url) as url, await EventLog.open(url) as log:
        await load_seeds(log, SEEDS)
        follower_store, rebuilder_store = await open_store(url), await open_store(url)
        stop = asyncio.Event()
        try:
            follower = ProjectionRunner(follower_store, [cls() for cls in BUILTIN.values()], page=5)
            following = asyncio.create_task(follower.follow(poll_interval=0.01, stop=stop))
            rebuilder = ProjectionRunner(rebuilder_store, [cls() for cls in BUILTIN.values()])
            for round_ in range(6):
                person = record("person.registered", person=f"p-{round_}", name="P")
                await append(log, [person])
                await rebuilder.rebuild()
            stop.set()
            await asyncio.wait_for(following, 30)
        finally:
            stop.set()
            await follower_store.close()
            await rebuilder_store.close()
    assert "deadlock" not in caplog.text


@pytest.mark.parametrize("statement", ENDING_THE_TRANSACTION)
async def test_a_statement_ending_the_transaction_stops_only_its_projection(
    seeded_postgres_log: EventLog, statement: str
) -> None:
    said = await an_overreaching_statement_stops_only_its_projection(seeded_postgres_log, statement)
    assert "would end the runner's transaction or take its savepoint" in said


async def test_a_dangling_deferred_key_stops_only_its_projection(
    seeded_postgres_log: EventLog,
) -> None:
    said = await a_dangling_deferred_key_stops_only_its_projection(seeded_postgres_log)
    assert "ForeignKeyViolationError" in said


async def test_postgres_a_user_projections_endless_statement_is_stopped(
    seeded_postgres_log: EventLog,
) -> None:
    await a_user_projections_endless_statement_is_stopped(seeded_postgres_log)


async def test_postgres_a_foreign_key_to_a_built_in_s_table_does_not_block_its_rebuild(
    seeded_postgres_log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    await a_foreign_key_an_earlier_version_let_in_does_not_block_a_rebuild(
        seeded_postgres_log, caplog
    )


async def test_postgres_projects_a_log_in_a_schema_named_in_capitals(postgres_url: str) -> None:
    # Given a role "T_Role_..." whose own schema, first on PostgreSQL's default search_path,
    # is named in capitals, as CREATE SCHEMA AUTHORIZATION names it after the role
    role = f"T_Role_{uuid.uuid4().hex[:12]}"
    owner = await asyncpg.connect(postgres_url)
    try:
        await owner.execute(f'CREATE ROLE "{role}" LOGIN')
        await owner.execute(f'CREATE SCHEMA AUTHORIZATION "{role}"')
        parts = urlsplit(postgres_url)
        role_url = urlunsplit(parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}"))
        log = await EventLog.open(role_url)
        try:
            await load_seeds(log, SEEDS)
            # When its projections are brought up to date
            await (await runner_for(log.store)).catch_up()
            # Then they are built in that schema and answer
            state = await Queries(log.store).state(org="ice")
            assert state["posts"]
        finally:
            await log.close()
        assert await owner.fetchval(
            "SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'p\\_%'",
            role,
        )
    finally:
        await owner.execute(f'DROP SCHEMA IF EXISTS "{role}" CASCADE')
        await owner.execute(f'DROP ROLE IF EXISTS "{role}"')
        await owner.close()
