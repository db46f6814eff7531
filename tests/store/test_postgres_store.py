"""The store contract on PostgreSQL, plus what only the PostgreSQL backend promises."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import errno
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import asyncpg
import pytest

from leaderlog.errors import (
    LogRemoved,
    StoreBusy,
    StoreError,
    StoreReadOnly,
    StoreUnavailable,
    StoreUnreachable,
)
from leaderlog.projections import BUILTIN, ProjectionRunner
from leaderlog.store import EventStore, open_store
from leaderlog.store.postgres import (
    _COLUMNS,
    _INSERT_CHUNK,
    CHANNEL,
    PostgresStore,
    _unavailable_on_disconnect,
    _unreachable,
    check_url,
    translate_placeholders,
)

from . import _split_schema, postgres_connection, postgres_schema
from .contract import StoreContract, event
from .contract_group_commit import GroupCommitContract


class TestPostgresStore(StoreContract, GroupCommitContract):
    raw_error = asyncpg.RaiseError
    new_event_id_sql = "gen_random_uuid()"

    @pytest.fixture
    async def store_url(self, postgres_url: str) -> AsyncIterator[str]:
        async with postgres_schema(postgres_url) as url:
            yield url

    async def execute_raw(self, store_url: str, sql: str) -> None:
        async with postgres_connection(store_url) as connection:
            await connection.execute(sql)

    async def drop_append_only_guard(self, store_url: str) -> None:
        await self.execute_raw(
            store_url,
            "DROP TRIGGER events_are_append_only_update ON events; "
            "DROP TRIGGER events_are_append_only_delete ON events;",
        )

    async def drop_unique_versions(self, store_url: str, *, indexed: bool) -> None:
        index = "CREATE INDEX events_by_version ON events (stream, version);" if indexed else ""
        await self.execute_raw(
            store_url, f"ALTER TABLE events DROP CONSTRAINT events_stream_version_key; {index}"
        )


@pytest.fixture
async def schema_url(postgres_url: str) -> AsyncIterator[str]:
    async with postgres_schema(postgres_url) as url:
        yield url


@pytest.fixture
async def store(schema_url: str) -> AsyncIterator[PostgresStore]:
    opened = await PostgresStore.open(schema_url)
    try:
        yield opened
    finally:
        await opened.close()


async def test_postgresql_url_opens_a_postgres_store(schema_url: str) -> None:
    opened = await open_store(schema_url)
    try:
        assert isinstance(opened, PostgresStore)
        assert opened.dialect == "postgresql"
        assert opened.schema == schema_url.rpartition("schema=")[2]
    finally:
        await opened.close()


async def test_positions_follow_commit_order_across_writers(schema_url: str) -> None:
    """A reader that has seen position N never later finds a new event at or below N."""
    writers = [await PostgresStore.open(schema_url) for _ in range(3)]
    reader = await PostgresStore.open(schema_url)
    total = 3 * 4 * 15
    try:

        async def write(store: EventStore, task: int) -> None:
            for round_ in range(15):
                await store.append([event(f"w{task}"), event(f"r{round_}")], actor=f"w{task}")

        async def read() -> list[int]:
            seen: list[int] = []
            while len(seen) < 2 * total:
                fresh = [e.position for e in await reader.read_all(after=len(seen))]
                # Anything visible must extend the prefix already read, without holes.
                assert fresh == list(range(len(seen) + 1, len(seen) + 1 + len(fresh)))
                seen.extend(fresh)
                await asyncio.sleep(0)
            return seen

        reading = asyncio.create_task(read())
        try:
            with anyio.fail_after(60):
                await asyncio.gather(*(write(writers[task % 3], task) for task in range(12)))
                seen = await reading
        finally:
            reading.cancel()
        assert seen == list(range(1, 2 * total + 1))
        assert (await reader.verify()).ok
    finally:
        for opened in [*writers, reader]:
            await opened.close()


@pytest.fixture
async def writer(schema_url: str) -> AsyncIterator[PostgresStore]:
    """Another store on the same log, as another process's would be."""
    opened = await PostgresStore.open(schema_url)
    try:
        yield opened
    finally:
        await opened.close()


async def _woken_by_an_append(store: PostgresStore, writer: PostgresStore, after: int) -> None:
    """A wait far longer than the deadline, which only a notification can end in time."""
    with anyio.fail_after(10):
        waiting = asyncio.create_task(store.wait_for_events(after=after, timeout=600))
        await writer.append([event(f"after-{after}")], actor="t")
        await waiting


async def test_notification_wakes_a_waiter_of_another_store(
    store: PostgresStore, writer: PostgresStore
) -> None:
    await writer.append([event("a")], actor="t")
    # The first wait starts listening; the second can then only be woken by a notification.
    await store.wait_for_events(after=1, timeout=0.01)
    await _woken_by_an_append(store, writer, after=1)


async def test_a_batch_another_store_committed_is_known_up_to_its_last_event(
    store: PostgresStore, writer: PostgresStore
) -> None:
    # given a follower listening for commits
    await store.wait_for_events(after=0, timeout=0.01)
    # and a batch of three events another store committed while the follower was busy,
    # whose notification has reached it
    await writer.append([event("a"), event("b"), event("c")], actor="t")
    await asyncio.sleep(0.3)
    # when the follower, having read the first two (a page of two), waits for more, then it
    # returns at once: the commit it heard of ends at the third
    with anyio.fail_after(5):
        await store.wait_for_events(after=2, timeout=600)


async def test_a_follower_that_cannot_listen_is_still_woken_by_its_own_store_s_appends(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a follower whose listening connection cannot be opened (the server refuses
    # connections beyond the pool's, say), so that no notification reaches it
    async def refused(*args: object, **kwargs: object) -> None:
        raise asyncpg.TooManyConnectionsError("sorry, too many clients already")

    monkeypatch.setattr(asyncpg, "connect", refused)
    with anyio.fail_after(10):
        waiting = asyncio.create_task(store.wait_for_events(after=0, timeout=600))
        await asyncio.sleep(0.1)
        # when its own store appends, then it is woken at once, not at its next poll
        await store.append([event("a")], actor="t")
        await waiting
    assert store._listener is None


async def test_a_follower_that_cannot_listen_does_not_try_again_at_every_poll(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a server that refuses the follower's listening connection
    tried: list[object] = []

    async def refused(*args: object, **kwargs: object) -> None:
        tried.append(args)
        raise asyncpg.TooManyConnectionsError("sorry, too many clients already")

    monkeypatch.setattr(asyncpg, "connect", refused)
    # when the follower polls several times in quick succession
    with anyio.fail_after(10):
        for _ in range(5):
            await store.wait_for_events(after=0, timeout=0.01)
    # then it asked for a listening connection once: it tries again a while later, rather
    # than add a refused connection to the server's load (and log) at every poll
    assert len(tried) == 1


async def test_follower_listens_again_after_losing_its_connection(
    store: PostgresStore, schema_url: str
) -> None:
    writer = await PostgresStore.open(schema_url)
    try:
        with anyio.fail_after(10):
            await store.wait_for_events(after=0, timeout=0.01)
            listener = store._listener
            assert listener is not None
            async with postgres_connection(schema_url) as admin:
                await admin.execute("SELECT pg_terminate_backend($1)", listener.get_server_pid())
            while store._listener is listener:
                await asyncio.sleep(0.01)

            waiting = asyncio.create_task(store.wait_for_events(after=0, timeout=600))
            await writer.append([event("a")], actor="t")
            await waiting
            second = asyncio.create_task(store.wait_for_events(after=1, timeout=600))
            await writer.append([event("b")], actor="t")
            await second
        assert store._listener is not None
        assert store._listener is not listener
    finally:
        await writer.close()


async def test_schemas_keep_logs_apart(postgres_url: str) -> None:
    async with (
        postgres_schema(postgres_url) as first_url,
        postgres_schema(postgres_url) as second_url,
    ):
        first = await PostgresStore.open(first_url)
        second = await PostgresStore.open(second_url)
        try:
            await first.append([event("a"), event("b")], actor="t")
            await second.append([event("c")], actor="t")
            assert await first.count() == 2
            assert [e.stream for e in await second.read_all()] == ["c"]
            assert (await second.get(1)) is not None
        finally:
            await first.close()
            await second.close()


async def test_many_processes_can_open_a_new_database_at_once(schema_url: str) -> None:
    stores = await asyncio.gather(*(PostgresStore.open(schema_url) for _ in range(6)))
    try:
        await asyncio.gather(*(s.append([event(f"s{i}")], actor="t") for i, s in enumerate(stores)))
        assert await stores[0].count() == 6
        async with postgres_connection(schema_url) as connection:
            triggers = await connection.fetch(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = 'events'::regclass ORDER BY tgname"
            )
        assert [row[0] for row in triggers] == [
            "events_are_append_only_delete",
            "events_are_append_only_truncate",
            "events_are_append_only_update",
        ]
    finally:
        for opened in stores:
            await opened.close()


async def test_truncate_is_rejected(store: PostgresStore, schema_url: str) -> None:
    await store.append([event("a")], actor="t")
    async with postgres_connection(schema_url) as connection:
        with pytest.raises(asyncpg.RaiseError, match="append-only"):
            await connection.execute("TRUNCATE events")
    assert await store.count() == 1


async def test_recorded_at_and_data_are_stored_as_hashed(
    store: PostgresStore, schema_url: str
) -> None:
    await store.append([event("a", {"b": 1, "a": "é"})], actor="t")
    async with postgres_connection(schema_url) as connection:
        row = await connection.fetchrow("SELECT data, recorded_at FROM events")
    assert row is not None
    assert row["data"] == '{"a":"é","b":1}'
    (stored,) = await store.read_all()
    assert row["recorded_at"] == stored.envelope()["recorded_at"]


async def test_a_batch_larger_than_one_insert_is_written_whole(store: PostgresStore) -> None:
    size = _INSERT_CHUNK + 5
    result = await store.append([event(f"s{i % 7}") for i in range(size)], actor="t")
    assert result.positions == tuple(range(1, size + 1))
    assert await store.count() == size
    assert (await store.verify()).ok


async def test_closing_twice_is_harmless(schema_url: str) -> None:
    opened = await PostgresStore.open(schema_url)
    await opened.close()
    await opened.close()


async def test_unreachable_server_is_unavailable() -> None:
    with pytest.raises(StoreUnavailable) as refused:
        await PostgresStore.open("postgresql://postgres@127.0.0.1:1/test?schema=s&sslmode=allow")
    assert str(refused.value) == (
        "cannot open PostgreSQL database postgresql://postgres@127.0.0.1:1/test?schema=s&"
        "sslmode=allow: nothing answers there (connection refused): is PostgreSQL running on "
        "that host and port?"
    )


@contextlib.asynccontextmanager
async def _database_of_its_own(postgres_url: str, options: str = "") -> AsyncIterator[str]:
    """The URL of a new, empty database (dropped afterwards) on the tests' server."""
    database = f"leaderlog_t_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(postgres_url)
    try:
        await admin.execute(f'CREATE DATABASE "{database}" {options}')
        yield urlunsplit(urlsplit(postgres_url)._replace(path=f"/{database}"))
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        await admin.close()


async def test_a_log_in_a_schema_named_after_the_role_leaves_the_default_log_alone(
    postgres_url: str,
) -> None:
    user = urlsplit(postgres_url).username
    async with _database_of_its_own(postgres_url) as default_url:
        # given a log in its default place (public), open
        default_log = await open_store(default_url)
        try:
            await default_log.append([event("person-a")], actor="t")
            # when another log is kept in a schema with the connecting role's name, which
            # PostgreSQL's default search_path ("$user", public) looks in first
            other_log = await open_store(f"{default_url}?schema={user}")
            try:
                await other_log.append([event("person-b"), event("person-c")], actor="t")
            finally:
                await other_log.close()
            # then the open store keeps to its own log, new connections too
            await default_log.append([event("person-d")], actor="t")
            assert [e.stream for e in await default_log.read_all(after=0)] == [
                "person-a",
                "person-d",
            ]
            # and opening the URL again asks which log is meant, rather than take the other
            with pytest.raises(StoreUnavailable, match=f"schemas {user}, public, all on its"):
                await open_store(default_url)
            named = await open_store(f"{default_url}?schema=public")
            try:
                assert await named.count() == 2
            finally:
                await named.close()
        finally:
            await default_log.close()


async def test_a_log_in_the_role_s_own_schema_is_the_default_log(postgres_url: str) -> None:
    # given a database where the role has a schema of its own name (as CREATE SCHEMA
    # AUTHORIZATION makes), which PostgreSQL creates tables in first
    user = urlsplit(postgres_url).username
    async with _database_of_its_own(postgres_url) as url:
        async with postgres_connection(f"{url}?schema=public") as connection:
            await connection.execute(f'CREATE SCHEMA "{user}"')
        # when a log is made and opened again without ?schema=
        first = await open_store(url)
        try:
            await first.append([event("person-a")], actor="t")
        finally:
            await first.close()
        again = await open_store(url, create=False)
        try:
            # then it is the same log, kept in that schema
            assert await again.count() == 1
            assert again.schema == user
        finally:
            await again.close()


async def test_tls_the_server_does_not_offer_is_unavailable_not_worth_waiting_for(
    postgres_url: str,
) -> None:
    probe = await asyncpg.connect(postgres_url)
    try:
        offered = await probe.fetchval("SHOW ssl")
    finally:
        await probe.close()
    if offered == "on":
        pytest.skip("this server offers TLS")
    joined = "&" if "?" in postgres_url else "?"
    with pytest.raises(StoreUnavailable, match="rejected SSL upgrade") as refused:
        await open_store(f"{postgres_url}{joined}sslmode=require")
    assert not isinstance(refused.value, StoreUnreachable)


async def test_missing_database_is_unavailable(postgres_url: str) -> None:
    missing = postgres_url.rsplit("/", 1)[0] + "/leaderlog_no_such_database"
    with pytest.raises(StoreUnavailable, match="leaderlog_no_such_database"):
        await PostgresStore.open(missing)


async def test_bad_schema_name_is_refused() -> None:
    with pytest.raises(StoreUnavailable, match="not a valid name"):
        await PostgresStore.open("postgresql://postgres@127.0.0.1:5432/test?schema=x;drop")


def test_a_schema_name_longer_than_postgresql_keeps_is_refused_before_connecting() -> None:
    # PostgreSQL cuts a name to 63 bytes: one of 64 would name the schema of another log
    # that shares its first 63 characters
    longest = "s" * 63
    check_url(f"postgresql://postgres@127.0.0.1:5432/test?schema={longest}")
    with pytest.raises(StoreUnavailable, match="is not a valid name"):
        check_url(f"postgresql://postgres@127.0.0.1:5432/test?schema={longest}t")


@pytest.mark.parametrize("schema", ["information_schema", "pg_catalog", "pg_temp", "pg_mine"])
def test_a_schema_of_postgresql_s_own_is_refused_before_connecting(schema: str) -> None:
    # Only the form is checked: a store opened on information_schema would put the log there.
    with pytest.raises(StoreUnavailable, match=f"schema '{schema}' is one of PostgreSQL's own"):
        check_url(f"postgresql://postgres@127.0.0.1:5432/test?schema={schema}")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://postgres@127.0.0.1:abc/test", "its port 'abc' is not a number from 0"),
        ("postgresql://postgres@127.0.0.1:99999/test", "its port '99999' is not a number"),
        ("postgresql://p:hunter2@127.0.0.1:abc/test", "its port 'abc' is not a number"),
        ("postgresql://p:hunter2@h1:5432,h2:x/test", "its port 'x' is not a number"),
        # An empty port is the default one: the port named is the one that cannot be read.
        ("postgresql://p:hunter2@127.0.0.1:,127.0.0.1:99999/test", "its port '99999' is not"),
        ("postgresql://p:hun/ter2@127.0.0.1/test", "a / \\? # or @ in the password must be"),
        ("postgresql://postgres:hunter2@[::1/test", r"postgres:\*\*\*@\[::1/test is not a valid"),
        ("postgresql://postgres@127.0.0.1/test?schema=a&schema=b", "more than once"),
        ("postgresql://postgres:hun@ter2@127.0.0.1/test", "an @ in the user name or password"),
        # A password starting with digits and holding a / ? or #: urllib reads the user as the
        # host and the digits as its port, and the @ lands after the address. It connected
        # elsewhere, and printed the password in the server's refusal of the database name.
        ("postgresql://localhost:5432/hunter2@127.0.0.1/test", "a / \\? # or @ in the password"),
        ("postgresql://postgres:5432/hunter2@127.0.0.1/test", "a / \\? # or @ in the password"),
        ("postgresql://postgres:5432?hunter2@127.0.0.1/test", "a / \\? # or @ in the password"),
        ("postgresql://postgres:5432#hunter2@127.0.0.1/test", "a / \\? # or @ in the password"),
        ("postgresql://postgres@127.0.0.1/test#hunter2", "takes no #fragment"),
        # libpq's own parameters that asyncpg does not take were sent as server settings.
        ("postgresql://postgres@127.0.0.1/test?keepalives=1", "libpq connection parameter"),
        ("postgresql://postgres@127.0.0.1/test?channel_binding=require", "channel_binding= is"),
        ("postgresql://postgres@127.0.0.1/test?hostaddr=127.0.0.1", "hostaddr= is a libpq"),
        # The missing file was not named: "[Errno 2] No such file or directory".
        (
            "postgresql://postgres@127.0.0.1/test?sslmode=verify-ca&sslrootcert=/no/such/ca.pem",
            "its sslrootcert file '/no/such/ca.pem' cannot be read: No such file or directory",
        ),
        ("postgresql://postgres@127.0.0.1/test?sslcert=/no/such/c.pem", "sslcert file '/no/such"),
        ("postgresql://postgres@127.0.0.1:5432/test?port=5433", "gives the port twice"),
        ("postgresql://postgres@127.0.0.1/test?host=elsewhere", "gives the host twice"),
        ("postgresql://postgres@127.0.0.1/test?user=other", "gives the user twice"),
        ("postgresql://p:hunter2@127.0.0.1/test?password=x", "gives the password twice"),
        ("postgresql://postgres@h1:1,h2/test?port=3", "gives the port twice"),
        # ?schema= set the search_path, and the other one was silently dropped.
        ("postgresql://p:hunter2@127.0.0.1/test?schema=s&search_path=x", "both \\?schema="),
        ("postgresql://postgres@127.0.0.1/test?options=-csearch_path%3Dx&schema=s", "both"),
        # Latin-1 bytes as the command line reads them: asyncpg failed on its own internals.
        ("postgresql://postgres@127.0.0.1/caf\udce9", "bytes that are not UTF-8 text"),
        ("postgresql://p:hunter2\udce9@127.0.0.1/test", "bytes that are not UTF-8 text"),
        # The server refused these with "invalid startup packet layout".
        ("postgresql://postgres@127.0.0.1/te%00st", "database name holds a NUL character"),
        ("postgresql://post%00gres@127.0.0.1/test", "user name holds a NUL character"),
        ("postgresql://p:hunter2%00@127.0.0.1/test", "password holds a NUL character"),
        ("postgresql://postgres@127.0.0.1/test?options=%00", "'options' holds a NUL character"),
        ("postgresql://postgres@127.0.0.1%00/test", "host holds a NUL character"),
        # Percent-escapes of Latin-1 bytes were sent as U+FFFD: a database, role or password
        # other than the one meant, or with trust authentication, a wrong password accepted.
        ("postgresql://postgres@127.0.0.1/caf%E9", "database name holds percent-escapes"),
        ("postgresql://us%E9r@127.0.0.1/test", "user name holds percent-escapes"),
        ("postgresql://p:hunter2%E9@127.0.0.1/test", "password holds percent-escapes"),
        ("postgresql://postgres@h%E9st/test", "host holds percent-escapes"),
        ("postgresql://postgres@127.0.0.1/test?application_name=a%E9", "'application_name' holds"),
        # Shown as typed, its password hidden: not with the escape of U+FFFD in place of %E9.
        (
            "postgresql://postgres@127.0.0.1/test?password=hunter2&application_name=a%E9",
            r"test\?password=\*\*\*&application_name=a%E9 is not a valid PostgreSQL URL",
        ),
    ],
)
async def test_a_malformed_url_is_refused_before_connecting(url: str, message: str) -> None:
    with pytest.raises(StoreUnavailable, match=message) as refused:
        await PostgresStore.open(url)
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://127.0.0.1/test?application_name=me@home",
        "postgresql://postgres@127.0.0.1/test?application_name=me@home",
        "postgresql://postgres@127.0.0.1/test?sslmode=disable&sslrootcert=/no/such/ca.pem",
    ],
)
def test_an_at_sign_in_a_parameter_and_files_tls_does_not_use_are_taken(url: str) -> None:
    check_url(url)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("no_such_setting=1", 'unrecognized configuration parameter "no_such_setting"'),
        ("DateStyle=garbage", 'invalid value for parameter "DateStyle"'),
        ("sslmode=bogus", "sslmode"),
    ],
)
async def test_a_setting_the_server_refuses_is_unavailable_not_a_crash(
    postgres_url: str, query: str, message: str
) -> None:
    separator = "&" if "?" in postgres_url else "?"
    with pytest.raises(StoreUnavailable, match=message):
        await PostgresStore.open(f"{postgres_url}{separator}{query}")


async def test_closed_store_is_unavailable(schema_url: str) -> None:
    opened = await PostgresStore.open(schema_url)
    await opened.close()
    with pytest.raises(StoreUnavailable):
        await opened.read_all()
    with pytest.raises(StoreUnavailable):
        await opened.append([event("a")], actor="t")


@pytest.mark.parametrize(
    ("portable", "translated"),
    [
        ("SELECT ?", "SELECT $1"),
        ("INSERT INTO t VALUES (?, ?, ?)", "INSERT INTO t VALUES ($1, $2, $3)"),
        (
            "SELECT '?', ? WHERE a = 'it''s ?' AND b = ?",
            "SELECT '?', $1 WHERE a = 'it''s ?' AND b = $2",
        ),
        ('SELECT "odd?name" FROM t WHERE x = ?', 'SELECT "odd?name" FROM t WHERE x = $1'),
        ("SELECT 1 -- why?\nWHERE x = ?", "SELECT 1 -- why?\nWHERE x = $1"),
        ("SELECT /* a ? b */ ?", "SELECT /* a ? b */ $1"),
        ("SELECT 1", "SELECT 1"),
    ],
)
def test_placeholders_are_translated_outside_quotes(portable: str, translated: str) -> None:
    assert translate_placeholders(portable) == translated


@pytest.mark.parametrize("scheme", ["POSTGRESQL", "PostgreSQL", "POSTGRES"])
async def test_the_scheme_of_a_postgresql_url_is_case_insensitive(
    schema_url: str, scheme: str
) -> None:
    url = scheme + schema_url[schema_url.index("://") :]
    async with await open_store(url) as opened:
        assert isinstance(opened, PostgresStore)
        await opened.append([event("a")], actor="t")
        assert await opened.count() == 1


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://postgres@127.0.0.1:5432",
        "postgresql://postgres@127.0.0.1:5432/",
        "postgres://postgres:hunter2@127.0.0.1:5432/?schema=mine",
        "postgresql://",
    ],
)
async def test_a_url_naming_no_database_is_refused(url: str) -> None:
    # libpq would connect to a default database and the tables would be created there.
    with pytest.raises(
        StoreUnavailable, match="name the database: postgresql://user@host:5432/dbname"
    ) as refused:
        await open_store(url)
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize("seconds", ["5", "0"])
async def test_connect_timeout_in_the_url_is_libpqs_not_a_server_setting(
    schema_url: str, seconds: str
) -> None:
    async with await open_store(f"{schema_url}&connect_timeout={seconds}") as opened:
        await opened.append([event("a")], actor="t")
        assert await opened.count() == 1


async def test_connect_timeout_limits_the_wait_for_a_server_that_never_answers() -> None:
    # given a server that takes connections and never says a word
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    try:
        # when a store opens with a one-second connect_timeout (the default is 10 s)
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="cannot open PostgreSQL database"):
            await PostgresStore.open(
                f"postgresql://postgres@127.0.0.1:{port}/test?connect_timeout=1"
            )
        # then it gives up after about that long
        assert time.monotonic() - started < 5
    finally:
        silent.close()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("connect_timeout=soon", "connect_timeout='soon' in the database URL is not a whole"),
        ("connect_timeout=1.5", "connect_timeout='1.5' in the database URL is not a whole"),
        ("connect_timeout=1&connect_timeout=2", "gives connect_timeout more than once"),
    ],
)
async def test_a_connect_timeout_that_is_not_whole_seconds_is_refused(
    query: str, message: str
) -> None:
    with pytest.raises(StoreUnavailable, match=message):
        await PostgresStore.open(f"postgresql://postgres@127.0.0.1:5432/test?{query}")


async def test_a_database_named_by_a_parameter_is_enough(schema_url: str) -> None:
    parts = urlsplit(schema_url)
    url = urlunsplit(parts._replace(path="", query=f"{parts.query}&dbname={parts.path[1:]}"))
    async with await open_store(url) as opened:
        await opened.append([event("a")], actor="t")
    async with await open_store(schema_url) as same:
        assert await same.count() == 1


async def test_a_schema_whose_events_table_is_not_leaderlogs_is_refused_untouched(
    schema_url: str,
) -> None:
    # given a schema where another program keeps a table called events
    schema = schema_url.rpartition("schema=")[2]
    async with postgres_connection(schema_url) as connection:
        await connection.execute(f'CREATE SCHEMA "{schema}"')
        await connection.execute("CREATE TABLE events (id INTEGER, what TEXT)")

    # when it is opened as a log, then it is refused
    with pytest.raises(
        StoreUnavailable,
        match=rf"is not a leaderlog database: its events table \(schema {schema}\) has other "
        r"columns \(id, what\)",
    ):
        await open_store(schema_url)
    # and no trigger or function was left behind on it
    async with postgres_connection(schema_url) as connection:
        triggers = await connection.fetchval(
            "SELECT COUNT(*) FROM pg_trigger WHERE tgrelid = 'events'::regclass"
        )
        functions = await connection.fetchval(
            "SELECT COUNT(*) FROM pg_proc WHERE pronamespace = $1::regnamespace", schema
        )
    assert (triggers, functions) == (0, 0)


async def test_a_statement_cut_by_a_statement_timeout_says_where_that_limit_comes_from(
    schema_url: str,
) -> None:
    # given a connection whose role or database sets a statement_timeout (here, its URL)
    async with await open_store(f"{schema_url}&statement_timeout=1000") as store:
        # when a statement outlasts it, then it is busy, saying what cut it and what to do
        with pytest.raises(StoreBusy, match="statement timeout") as cut:
            await store.query("SELECT pg_sleep(2)")
    assert "a statement_timeout set for this role or database" in str(cut.value)


def test_a_connection_the_server_terminated_is_unavailable_not_a_fault() -> None:
    # asyncpg's words when a terminated connection is used before the pool notices
    lost = asyncpg.InternalClientError(
        "cannot switch to state 12; another operation is in progress"
    )
    with (
        pytest.raises(StoreUnavailable, match="PostgreSQL is unavailable"),
        _unavailable_on_disconnect(),
    ):
        raise lost


@pytest.mark.parametrize("path", ["/", ""])
@pytest.mark.parametrize("parameter", ["dbname", "database"])
async def test_a_database_named_by_a_parameter_after_a_slash_is_the_one_used(
    schema_url: str, path: str, parameter: str
) -> None:
    # given a log in the test database, and a URL naming that database only as a parameter
    async with await open_store(schema_url) as named:
        await named.append([event("a")], actor="t")
    parts = urlsplit(schema_url)
    url = urlunsplit(parts._replace(path=path, query=f"{parts.query}&{parameter}={parts.path[1:]}"))
    # then it opens that same log, not one in a default database
    async with await open_store(url) as opened:
        assert await opened.count() == 1


@pytest.mark.parametrize("twice", ["&dbname=other", "&dbname=test", "&database=test"])
async def test_a_database_named_twice_is_refused_even_with_one_name(
    schema_url: str, twice: str
) -> None:
    # as the host, port or user given both in the address and as a parameter
    with pytest.raises(StoreUnavailable, match="names the database more than once"):
        await open_store(f"{schema_url}{twice}")
    path = urlsplit(schema_url)._replace(path="/").geturl()
    with pytest.raises(StoreUnavailable, match="names the database more than once"):
        await open_store(f"{path}&dbname=test&database=test")


async def test_passwords_given_as_a_parameter_are_hidden_in_errors() -> None:
    with pytest.raises(StoreUnavailable) as refused:
        await open_store("postgresql://postgres@127.0.0.1:1/test?password=s3cret")
    assert "s3cret" not in str(refused.value)
    assert "password=***" in str(refused.value)


async def test_times_are_stamped_from_the_database_s_clock(
    store: PostgresStore, schema_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given this host's clock ten minutes ahead of the database's
    import leaderlog.store.postgres as backend

    ahead = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=10)
    monkeypatch.setattr(backend, "utc_now", lambda: ahead, raising=False)
    # when an event is appended without a time
    async with postgres_connection(schema_url) as connection:
        before = await connection.fetchval("SELECT clock_timestamp()")
        await store.append([event("a")], actor="t")
        after = await connection.fetchval("SELECT clock_timestamp()")
    # then it carries the database's time
    (recorded,) = await store.read_all()
    assert before <= recorded.recorded_at <= after


@contextlib.asynccontextmanager
async def _events_locked_elsewhere(
    schema_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[EventStore]:
    """A store holding one event, while another session holds its events table for longer
    than the store's lock timeout."""
    import leaderlog.store.postgres as backend

    monkeypatch.setattr(backend, "LOCK_TIMEOUT", 0.2)
    async with await open_store(schema_url) as opened:
        await opened.append([event("a")], actor="t")
        async with postgres_connection(schema_url) as holder:
            transaction = holder.transaction()
            await transaction.start()
            await holder.execute("LOCK TABLE events IN ACCESS EXCLUSIVE MODE")
            try:
                yield opened
            finally:
                await transaction.rollback()


async def test_a_lock_held_too_long_elsewhere_is_busy_not_a_hang(
    schema_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given another session holding the events table for longer than the lock timeout
    async with _events_locked_elsewhere(schema_url, monkeypatch) as opened:
        # then reading and appending say the database is busy, in SQLite's words
        busy = r"^database is busy: .*lock timeout"
        with anyio.fail_after(10), pytest.raises(StoreUnavailable, match=busy):
            await opened.read_all()
        with anyio.fail_after(10), pytest.raises(StoreUnavailable, match=busy):
            await opened.append([event("b")], actor="t")
    async with await open_store(schema_url) as reopened:
        assert await reopened.count() == 1


async def test_a_statement_without_parameters_keeps_its_question_marks_as_postgresql_s_own(
    store: PostgresStore,
) -> None:
    # given a projection's statement with no parameters, using PostgreSQL's jsonb ?
    # operator (which asks whether a key is there)
    async with store.projection_transaction() as tx:
        # when it is run, then its ? is the operator, not a placeholder with no value
        await tx.execute(
            "CREATE TABLE p_question (has_a BOOLEAN); "
            """INSERT INTO p_question SELECT '{"a": 1}'::jsonb ? 'a'"""
        )
    assert await store.query("SELECT has_a FROM p_question") == [(True,)]


async def test_a_deadlock_with_another_session_is_busy_not_a_fault(
    store: PostgresStore, schema_url: str
) -> None:
    # given two tables, a projection's transaction holding the one, and another session
    # holding the other (and leaving it to the projection's session to find the deadlock)
    async with store.projection_transaction() as tx:
        await tx.execute("CREATE TABLE p_deadlock_one (x INT); CREATE TABLE p_deadlock_two (x INT)")
    async with postgres_connection(schema_url) as other:
        await other.execute("SET deadlock_timeout = '60s'")
        transaction = other.transaction()
        await transaction.start()
        try:
            await other.execute("LOCK TABLE p_deadlock_two")
            with anyio.fail_after(30), pytest.raises(StoreBusy) as raised:
                async with store.projection_transaction() as tx:
                    await tx.execute("LOCK TABLE p_deadlock_one")
                    # when each then waits for the other's table
                    locking = asyncio.create_task(tx.execute("LOCK TABLE p_deadlock_two"))
                    await asyncio.sleep(0.1)
                    other_locking = asyncio.create_task(other.execute("LOCK TABLE p_deadlock_one"))
                    await locking
            await other_locking
        finally:
            await transaction.rollback()
    # then the projection's statement is told "busy", in SQLite's words, as a lock timeout
    # is: a moment's trouble that trying again gets through, not an error of the server's
    assert str(raised.value).startswith("database is busy: deadlock detected")


@pytest.mark.parametrize(
    ("condition", "said"),
    [
        # what a hot standby cancels a read with when replaying the primary's changes
        ("serialization_failure", "canceling statement due to conflict with recovery"),
        ("deadlock_detected", "deadlock detected"),
        ("lock_not_available", "canceling statement due to lock timeout"),
        ("query_canceled", "canceling statement due to user request"),
        ("disk_full", "could not extend file: No space left on device"),
        ("out_of_memory", "out of memory"),
    ],
)
async def test_what_the_server_says_of_the_moment_not_the_request_is_busy(
    store: PostgresStore, condition: str, said: str
) -> None:
    # given a statement the server fails for the moment it runs in, not for what it asks
    statement = f"DO $$ BEGIN RAISE EXCEPTION '{said}' USING ERRCODE = '{condition}'; END $$"
    # when it is run, then the database is said to be busy, as SQLite's is: trying again
    # may get through (a follower waits it out, a server answers 503 with Retry-After)
    with pytest.raises(StoreBusy, match=f"^database is busy: {said}"):
        await store.query(statement)


async def test_a_log_that_does_not_exist_is_refused_when_only_reading(schema_url: str) -> None:
    # given a URL naming a schema that holds no log
    with pytest.raises(StoreUnavailable, match="holds no leaderlog log"):
        await open_store(schema_url, create=False)
    # then nothing was created behind the mistyped name
    _, schema = _split_schema(schema_url)
    server_url = schema_url.split("?")[0]
    connection = await asyncpg.connect(server_url)
    try:
        assert not await connection.fetchval(
            "SELECT 1 FROM pg_namespace WHERE nspname = $1", schema
        )
    finally:
        await connection.close()


async def test_a_role_that_may_only_read_can_open_and_verify_a_log(schema_url: str) -> None:
    # given a log, and a role granted nothing but reading it
    async with await open_store(schema_url) as store:
        await store.append([event("a"), event("b")], actor="t")
    _, schema = _split_schema(schema_url)
    role = f"reader_{uuid.uuid4().hex[:12]}"
    server_url = schema_url.split("?")[0]
    admin = await asyncpg.connect(server_url)
    try:
        await admin.execute(f'CREATE ROLE "{role}" LOGIN')
        await admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        await admin.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
        parts = urlsplit(schema_url)
        as_reader = urlunsplit(parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}"))
        # when it opens the log only to read
        async with await open_store(as_reader, create=False) as reader:
            # then it reads and verifies, where creating tables would have been refused
            assert [e.stream for e in await reader.read_all()] == ["a", "b"]
            assert (await reader.verify()).ok
        with pytest.raises(StoreUnavailable):
            await open_store(as_reader)
        # and a command that keeps projections is refused in one line, not a traceback
        async with await open_store(as_reader, create=False) as reader:
            with pytest.raises(StoreError, match="PostgreSQL refused: permission denied"):
                await ProjectionRunner(reader, [cls() for cls in BUILTIN.values()]).catch_up()
    finally:
        await admin.execute(f'DROP OWNED BY "{role}"')
        await admin.execute(f'DROP ROLE "{role}"')
        await admin.close()


async def test_several_hosts_are_tried_in_turn(schema_url: str) -> None:
    # given a URL whose first host does not answer and whose second is the test server
    parts = urlsplit(schema_url)
    user = parts.netloc.rpartition("@")[0]
    hosts = f"127.0.0.1:1,{parts.hostname}:{parts.port or 5432}"
    url = urlunsplit(parts._replace(netloc=f"{user}@{hosts}"))
    async with await open_store(url) as store:
        await store.append([event("a")], actor="t")
        assert await store.count() == 1


async def test_a_bad_port_among_several_hosts_is_refused_before_connecting() -> None:
    with pytest.raises(StoreUnavailable, match="not a valid PostgreSQL URL"):
        await open_store("postgresql://postgres@127.0.0.1:5432,127.0.0.1:abc/test")


async def test_a_log_removed_under_an_open_store_is_said_to_be_gone(schema_url: str) -> None:
    """A refused first import drops the empty log it created; another command that had opened
    it meanwhile gets a message to retry, not asyncpg's undefined table."""
    async with await open_store(schema_url) as creator, await open_store(schema_url) as other:
        assert await creator.discard_created_log()
        with pytest.raises(StoreUnavailable, match=r"the log is gone .*try again"):
            await other.find_event_ids([uuid.uuid4()])
        with pytest.raises(StoreUnavailable, match=r"the log is gone .*nothing was written"):
            await other.append([event("a")], actor="t")


async def test_a_schema_goes_with_a_discarded_log_only_when_the_store_created_it(
    schema_url: str,
) -> None:
    schema = schema_url.rpartition("schema=")[2]

    async def schema_exists() -> bool:
        async with postgres_connection(schema_url) as connection:
            return bool(
                await connection.fetchval(
                    "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema
                )
            )

    # given a log the store created in a ?schema= schema it created too
    async with await open_store(schema_url) as creator:
        # when the log is discarded, then its schema goes with it
        assert await creator.discard_created_log()
    assert not await schema_exists()
    # given an empty schema made beforehand by hand (an operator's), where a store creates
    # the log
    async with postgres_connection(schema_url) as connection:
        await connection.execute(f'CREATE SCHEMA "{schema}"')
    async with await open_store(schema_url) as creator:
        assert creator.created_log
        # when the log is discarded, then the schema, which was not the store's, stays
        assert await creator.discard_created_log()
    assert await schema_exists()


async def test_a_log_is_not_discarded_under_an_append_being_committed(schema_url: str) -> None:
    # given a log a store created, and another store in the middle of an append to it
    # (holding the lock appends take turns under, its row written and not yet committed)
    async with await open_store(schema_url) as creator, await open_store(schema_url) as writer:
        assert creator.created_log
        async with writer.projection_transaction() as tx:
            await tx.lock_appends()
            await tx.execute(
                f"INSERT INTO events ({_COLUMNS}) VALUES (1, gen_random_uuid(), 'org-a', 1, "
                "'OrgCreated', 1, '{}', '2024-01-01T00:00:00.000Z', 't', '{}', 'h')"
            )
            # when the creator discards the log meanwhile (its first import was refused)
            discarding = asyncio.create_task(creator.discard_created_log())
            await asyncio.sleep(0.3)
        # then it waits for the append, and keeps the log, with the event committed in it
        with anyio.fail_after(10):
            assert not await discarding
        assert await writer.count() == 1


def test_the_pool_s_reconnection_failures_are_logged_in_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    import leaderlog.store.postgres  # noqa: F401 - installs the filter

    pool_logger = logging.getLogger("asyncpg.pool")
    try:
        raise ConnectionRefusedError(111, "Connection refused")
    except ConnectionRefusedError:
        with caplog.at_level(logging.WARNING, logger="asyncpg.pool"):
            pool_logger.warning(
                "Failed to restore the pool connection floor; retrying", exc_info=True
            )
    (record,) = caplog.records
    assert record.exc_info is None
    assert record.getMessage() == (
        "Failed to restore the pool connection floor; retrying: "
        "ConnectionRefusedError: [Errno 111] Connection refused"
    )


async def test_a_transaction_holding_the_append_lock_holds_appends_back(
    store: PostgresStore,
) -> None:
    # given a transaction that took the lock appends take (as token create does)
    async with store.projection_transaction() as tx:
        await tx.lock_appends()
        appending = asyncio.create_task(store.append([event("a")], actor="t"))
        await asyncio.sleep(0.3)
        # then an append waits for it to end
        assert not appending.done()
    assert (await asyncio.wait_for(appending, timeout=10)).appended == 1


async def test_runners_starting_together_on_a_new_log_list_its_projections(
    schema_url: str,
) -> None:
    # given a log with no projections yet, opened by several processes at once
    stores = await asyncio.gather(*(PostgresStore.open(schema_url) for _ in range(4)))
    try:
        await stores[0].append([event("a")], actor="t")
        # when each asks which projections the database has (a server's health check, say)
        # then none fails creating the checkpoint table another is creating
        for _ in range(3):
            answers = await asyncio.gather(
                *(ProjectionRunner(store, []).registered() for store in stores)
            )
            assert answers == [{}] * len(stores)
            async with postgres_connection(schema_url) as connection:
                await connection.execute("DROP TABLE projection_checkpoints")
    finally:
        for opened in stores:
            await opened.close()


def _error_in_another_loop(call: Callable[[], Coroutine[Any, Any, object]]) -> BaseException | None:
    """What ``call()`` raises when run in an event loop of its own."""
    try:
        asyncio.run(call())
    except BaseException as error:
        return error
    return None


async def test_a_store_used_from_another_event_loop_says_so(store: PostgresStore) -> None:
    await store.append([event("a")], actor="t")
    failure = await asyncio.to_thread(_error_in_another_loop, store.count)
    assert isinstance(failure, RuntimeError)
    assert "opened in another event loop; open one store (or EventLog) per event loop" in str(
        failure
    )
    assert await store.count() == 1


async def test_a_database_not_encoded_in_utf8_is_refused_when_opened(postgres_url: str) -> None:
    # given a database in LATIN1, which cannot hold most names and quotes a log keeps
    latin1 = "ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
    async with _database_of_its_own(postgres_url, latin1) as url:
        # when a store opens it, then it is refused in one line saying what is needed
        with pytest.raises(StoreError, match=r"is encoded in LATIN1: .* needs a UTF8 database"):
            await open_store(url)
        # and nothing was created in it
        connection = await asyncpg.connect(url)
        try:
            assert await connection.fetchval("SELECT to_regclass('events')") is None
        finally:
            await connection.close()


async def test_a_database_encoded_in_sql_ascii_keeps_text_in_any_script(
    postgres_url: str,
) -> None:
    # given a database in SQL_ASCII, which stores the bytes it is given as they are
    sql_ascii = "ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
    names = {"name": "Zoë Ōsaka, Ελένη 李"}
    # when a store opens it and appends names in other scripts
    async with (
        _database_of_its_own(postgres_url, sql_ascii) as url,
        await open_store(url) as store,
    ):
        await store.append([event("person:zoë", names)], actor="Åsa")
        # then they read back as they were written, and the chain verifies
        (read,) = await store.read_all()
        assert (read.stream, read.data, read.actor) == ("person:zoë", names, "Åsa")
        assert (await store.verify()).ok


def test_a_server_older_than_postgresql_13_is_refused_saying_what_is_needed() -> None:
    # A server that old is not at hand: the check of the version asyncpg reads is tried alone.
    from leaderlog.store.postgres import _check_version

    with pytest.raises(StoreError, match=r"is version 12: leaderlog needs PostgreSQL 13 or l"):
        _check_version((12, 17), "postgresql://db.example/log")
    _check_version((13, 0), "postgresql://db.example/log")
    _check_version((17, 2), "postgresql://db.example/log")


async def test_a_connection_that_may_only_read_is_said_so_by_commands_that_write(
    schema_url: str,
) -> None:
    # given a log, opened by a connection whose transactions are read-only (a hot standby's)
    async with await open_store(schema_url) as store:
        await store.append([event("a")], actor="t")
    read_only = f"{schema_url}&default_transaction_read_only=on"
    async with await open_store(read_only, create=False) as reader:
        assert (await reader.verify()).ok
        # when projections are to be kept up to date, then the refusal says why, in one line
        with pytest.raises(StoreReadOnly, match="this connection may only read") as refused:
            await ProjectionRunner(reader, [cls() for cls in BUILTIN.values()]).catch_up()
        # and an append is refused so too: a condition of the database, which a server
        # answers 503 and health names, not a fault of its own (a 500 with a trace)
        with pytest.raises(StoreReadOnly) as appending:
            await reader.append([event("b")], actor="t")
    assert "\n" not in str(refused.value)
    assert appending.value.public == (
        "the database cannot be written to: it is read-only here; nothing was written"
    )


@pytest.mark.parametrize(
    ("raised", "waited_for"),
    [
        (ConnectionRefusedError(), True),
        (TimeoutError(), True),
        (OSError(errno.EHOSTUNREACH, "No route to host"), True),
        (OSError(errno.ENETUNREACH, "Network is unreachable"), True),
        (socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"), True),
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), False),
        (asyncpg.InvalidCatalogNameError("database does not exist"), False),
        (asyncpg.InvalidPasswordError("password authentication failed"), False),
        (ConnectionError('PostgreSQL server at "h:5432" rejected SSL upgrade'), False),
        (ConnectionResetError("Connection reset by peer"), True),
    ],
)
def test_only_what_may_pass_on_its_own_is_unreachable(
    raised: BaseException, waited_for: bool
) -> None:
    assert (_unreachable(raised) is StoreUnreachable) is waited_for


async def test_a_wait_that_starts_listening_while_the_log_is_locked_ends_as_a_poll_does(
    schema_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given another session holding the events table for longer than the lock timeout, as
    # the wait that starts listening (first, or again after a lost connection) begins
    async with _events_locked_elsewhere(schema_url, monkeypatch) as opened:
        # then the wait ends, as a poll does, rather than end the follower with "busy": the
        # follower's next read waits the lock out, as its reads do
        with anyio.fail_after(10):
            await opened.wait_for_events(after=1, timeout=600)
        assert isinstance(opened, PostgresStore)
        assert opened._listener is not None


async def test_an_append_whose_connection_is_terminated_says_why_it_was_lost(
    store: PostgresStore, schema_url: str
) -> None:
    # given an append waiting for the append lock another transaction holds
    async with store.projection_transaction() as tx, postgres_connection(schema_url) as admin:
        await tx.lock_appends()
        appending = asyncio.create_task(store.append([event("a")], actor="t"))
        with anyio.fail_after(10):
            while (waiting := await admin.fetchval(_WAITING_FOR_AN_ADVISORY_LOCK)) is None:
                await asyncio.sleep(0.01)
        # when its connection is terminated by the server
        await admin.execute("SELECT pg_terminate_backend($1)", waiting)
        # then the error is the server's reason, not asyncpg's complaint about rolling back
        # on the connection it lost ("cannot call Transaction.__aexit__() ...")
        with anyio.fail_after(10), pytest.raises(StoreUnavailable) as raised:
            await appending
    message = str(raised.value)
    assert message.startswith("PostgreSQL is unavailable: ")
    assert message.endswith("terminating connection due to administrator command")
    assert "__aexit__" not in message
    assert await store.count() == 0


# The append lock is keyed on the events table's oid (in its low half).
_WAITING_FOR_AN_ADVISORY_LOCK = (
    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
    "AND objid = 'events'::regclass::oid"
)


async def test_a_notification_past_the_log_s_head_wakes_a_follower_once_not_forever(
    store: PostgresStore, writer: PostgresStore, schema_url: str
) -> None:
    await writer.append([event("a")], actor="t")
    with anyio.fail_after(10):
        await store.wait_for_events(after=0, timeout=0.01)  # starts listening
        woken = asyncio.create_task(store.wait_for_events(after=1, timeout=600))
        # given a notification naming a position the log does not hold (anyone who may
        # connect may send one: NOTIFY takes no right on the log)
        async with postgres_connection(schema_url) as stranger:
            await stranger.execute(f"NOTIFY {CHANNEL}, '{store.schema}:999999'")
        await woken
    # then the next wait waits again: it did not keep returning at once, which made every
    # follower (a server's) read the log in a busy loop
    loop = asyncio.get_running_loop()
    started = loop.time()
    await store.wait_for_events(after=1, timeout=0.2)
    assert loop.time() - started >= 0.19
    # and a real append still wakes it
    await _woken_by_an_append(store, writer, after=1)


async def test_a_store_opened_before_its_log_was_dropped_and_created_anew_does_not_append_to_it(
    schema_url: str,
) -> None:
    # given a store opened on a new log, which the store that created it then drops (a
    # first import refused), and a third store that creates the log anew
    creator = await PostgresStore.open(schema_url)
    opened_before = await PostgresStore.open(schema_url)
    assert await creator.discard_created_log()
    await creator.close()
    created_anew = await PostgresStore.open(schema_url)
    try:
        assert created_anew.created_log
        # when the store opened before appends while a writer of the new log holds the
        # lock appends take turns under
        async with created_anew.projection_transaction() as tx:
            await tx.lock_appends()
            # then it is told the log it opened is gone, as the CLI's imports retry on: it
            # took its turn under the old table's lock, beside the new log's writers
            with anyio.fail_after(10), pytest.raises(LogRemoved):
                await opened_before.append([event("a")], actor="t")
        assert await created_anew.count() == 0
    finally:
        await opened_before.close()
        await created_anew.close()


async def test_a_log_created_over_a_connection_that_may_only_read_is_refused_saying_why(
    schema_url: str,
) -> None:
    # import, token create and serve create the log's tables first: they said only that
    # CREATE TABLE was refused, where the other commands said what the connection lacks
    with pytest.raises(StoreReadOnly, match="this connection may only read") as refused:
        await open_store(f"{schema_url}&default_transaction_read_only=on")
    assert str(refused.value).startswith("cannot prepare PostgreSQL database ")


async def test_a_connection_lost_after_its_work_is_given_back_without_an_error(
    schema_url: str,
) -> None:
    # An append committed, then its connection terminated (by an administrator, say) before
    # it was given back: the release failed ("cannot switch to state 15"), and that failure
    # answered the written batch as not written.
    from leaderlog.store.postgres import _release

    async with await open_store(schema_url) as store:
        assert isinstance(store, PostgresStore)
        pool = store._pool
        connection = await pool.acquire()
        pid = await connection.fetchval("SELECT pg_backend_pid()")
        working = asyncio.ensure_future(connection.execute("SELECT pg_sleep(1)"))
        await asyncio.sleep(0.1)
        killer = await asyncpg.connect(schema_url.partition("?")[0])
        try:
            assert await killer.fetchval("SELECT pg_terminate_backend($1)", pid)
        finally:
            await killer.close()
        # when it is given back (asyncpg's own release raises here), then nothing is raised
        await _release(pool, connection)
        with pytest.raises(asyncpg.ConnectionDoesNotExistError):
            await working
        # and the store goes on with another connection
        await store.append([event("after")], actor="t")
        assert (await store.head())[0] == 1


async def test_a_store_closed_from_another_event_loop_says_so(store: PostgresStore) -> None:
    # given a store opened in this loop
    await store.append([event("a")], actor="t")
    # when another loop closes it, then it is told to close it in its own loop, as a read
    # from there is (rather than asyncpg's error from deep in its pool)
    failure = await asyncio.wait_for(asyncio.to_thread(_error_in_another_loop, store.close), 30)
    assert isinstance(failure, RuntimeError)
    assert "opened in another event loop; open one store (or EventLog) per event loop" in str(
        failure
    )
    # and the store is left as it was, to be closed where it was opened
    assert not store.closed
    assert await store.count() == 1


def _closed_from_this_loop(postgres_url: str, *, closed_there: bool) -> BaseException | None:
    """What closing a store raises in a new event loop, the store opened (with an event
    appended), or opened and closed, in a loop that has ended since."""

    async def opened_in_a_loop_that_ends(url: str) -> PostgresStore:
        opened = await PostgresStore.open(url)
        await opened.append([event("a")], actor="t")
        if closed_there:
            await opened.close()
        return opened

    async def scenario() -> BaseException | None:
        async with postgres_schema(postgres_url) as url:
            opened = await asyncio.to_thread(asyncio.run, opened_in_a_loop_that_ends(url))
            try:
                await opened.close()
            except BaseException as error:
                return error
            return None

    return asyncio.run(scenario())


def test_a_store_whose_loop_has_ended_closed_from_another_says_so(postgres_url: str) -> None:
    # given a store whose event loop has ended, when this loop closes it
    failure = _closed_from_this_loop(postgres_url, closed_there=False)
    # then the error says why, not "Event loop is closed"
    assert isinstance(failure, RuntimeError)
    assert "opened in another event loop" in str(failure)


def test_a_store_closed_in_its_own_loop_may_be_closed_again_from_another(
    postgres_url: str,
) -> None:
    # given a store closed in its own event loop, which has ended since, when another loop
    # closes it again (a second close, as from a shutdown hook), then nothing is refused:
    # there is nothing left to close
    assert _closed_from_this_loop(postgres_url, closed_there=True) is None


async def test_a_log_changing_its_tables_holds_back_only_the_logs_of_its_own_schema(
    postgres_url: str,
) -> None:
    # given a log in one schema whose projections' tables are being changed (as a rebuild
    # does for its whole replay)
    async with (
        postgres_schema(postgres_url) as one,
        postgres_schema(postgres_url) as other,
        await PostgresStore.open(one) as changing,
        changing.projection_transaction() as tx,
    ):
        await tx.lock_schema_changes()
        # when logs are opened meanwhile, each ready to wait a moment only
        # then a log in another schema of the database opens and changes its own tables
        async with await PostgresStore.open(f"{other}&lock_timeout=200ms") as elsewhere:
            runner = ProjectionRunner(elsewhere, [cls() for cls in BUILTIN.values()])
            await runner.catch_up()
        # and one in the same schema waits for it, as it must
        with pytest.raises(StoreUnavailable, match="lock timeout"):
            await PostgresStore.open(f"{one}&lock_timeout=200ms")
