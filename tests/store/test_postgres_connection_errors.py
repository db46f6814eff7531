"""What a PostgreSQL user is told when the server cannot be reached or the role falls short."""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from leaderlog.errors import StoreError, StoreUnavailable
from leaderlog.store import open_store
from leaderlog.store import postgres as postgres_store
from leaderlog.store.postgres import _reason

from . import _split_schema, postgres_schema
from .contract import event


@pytest.fixture
async def schema_url(postgres_url: str) -> AsyncIterator[str]:
    async with postgres_schema(postgres_url) as url:
        yield url


async def test_a_server_that_never_answers_is_said_to_have_not_answered_in_the_time_waited() -> (
    None
):
    # given something that takes connections on a port and never says a word
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    try:
        # when a store opens there with a one-second connect_timeout
        with pytest.raises(StoreUnavailable) as refused:
            await open_store(f"postgresql://postgres@127.0.0.1:{port}/test?connect_timeout=1")
    finally:
        silent.close()
    # then the error says what happened and what to change, not only "TimeoutError"
    assert str(refused.value) == (
        f"cannot open PostgreSQL database postgresql://postgres@127.0.0.1:{port}/test?"
        "connect_timeout=1: no answer within 1 s: is PostgreSQL running on that host and "
        "port? (?connect_timeout=SECONDS waits longer, 0 as long as it takes)"
    )


def test_a_host_name_that_cannot_be_looked_up_is_said_so_without_its_error_number() -> None:
    lookup_failed = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert _reason(lookup_failed) == "its host name cannot be looked up (Name or service not known)"


@pytest.fixture
def role() -> str:
    """The name of a role made for one test (``_grant`` creates it, ``_drop`` drops it)."""
    return f"role_{uuid.uuid4().hex[:12]}"


def _as(role: str, schema_url: str) -> str:
    parts = urlsplit(schema_url)
    return urlunsplit(parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}"))


async def _grant(schema_url: str, role: str, *grants: str) -> asyncpg.Connection[asyncpg.Record]:
    admin: asyncpg.Connection[asyncpg.Record] = await asyncpg.connect(schema_url.split("?")[0])
    await admin.execute(f'CREATE ROLE "{role}" LOGIN')
    for grant in grants:
        await admin.execute(grant)
    return admin


async def _drop(admin: asyncpg.Connection[asyncpg.Record], role: str) -> None:
    try:
        await admin.execute(f'DROP OWNED BY "{role}"')
        await admin.execute(f'DROP ROLE "{role}"')
    finally:
        await admin.close()


async def test_a_role_that_may_not_read_the_log_is_not_told_it_needs_to_create_tables(
    schema_url: str, role: str
) -> None:
    # given a log, and a role that may use its schema but read none of its tables
    async with await open_store(schema_url) as store:
        await store.append([event("a")], actor="t")
    _, schema = _split_schema(schema_url)
    admin = await _grant(schema_url, role, f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
    try:
        # when it verifies the log, which only reads
        async with await open_store(_as(role, schema_url), create=False) as reader:
            with pytest.raises(StoreError) as refused:
                await reader.verify()
    finally:
        await _drop(admin, role)
    # then it is told that reading is what it may not do, not that verify creates tables
    message = str(refused.value)
    assert message.startswith("PostgreSQL refused: permission denied for table events; ")
    assert (
        "verify, events, export and projections need USAGE on the log's schema and SELECT"
        in message
    )
    assert "\n" not in message


async def _a_log_and_its_reader(
    schema_url: str, role: str
) -> tuple[asyncpg.Connection[asyncpg.Record], str]:
    """A log of one event, and ``role`` made able to read it only; the admin connection (to
    drop the role with) and the log's schema."""
    async with await open_store(schema_url) as store:
        await store.append([event("a")], actor="t")
    _, schema = _split_schema(schema_url)
    admin = await _grant(
        schema_url,
        role,
        f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"',
        f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"',
    )
    return admin, schema


async def test_a_role_that_may_not_create_tables_is_told_what_the_log_needs_when_it_opens(
    schema_url: str, role: str
) -> None:
    # given a log, and a role that may only read it
    admin, schema = await _a_log_and_its_reader(schema_url, role)
    try:
        # when it opens the log to write (import, token create, serve)
        with pytest.raises(StoreUnavailable) as refused:
            await open_store(_as(role, schema_url))
    finally:
        await _drop(admin, role)
    # then the refusal says which rights writing takes, and what the role may still do
    message = str(refused.value)
    assert f"permission denied for schema {schema}; " in message
    assert "the other commands need to create tables in it and to own the log's tables" in (message)
    assert (
        "verify, events, export and projections need USAGE on the log's schema and SELECT"
        in message
    )


async def test_a_login_refused_after_the_store_opened_is_unavailable_until_it_is_allowed(
    schema_url: str, role: str
) -> None:
    # given a log, read by a store that connects as a role of its own
    admin, _ = await _a_log_and_its_reader(schema_url, role)
    try:
        async with await open_store(_as(role, schema_url), create=False) as reader:
            assert (await reader.head())[0] == 1
            # when the role may no longer log in, and its connections are ended
            await admin.execute(f'ALTER ROLE "{role}" NOLOGIN')
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role
            )
            # then reading is unavailable, saying why (the connection lost first, then the
            # new one refused), rather than an error no caller of the store expects
            said = []
            for _ in range(3):
                with pytest.raises(StoreUnavailable) as refused:
                    await reader.head()
                said.append(str(refused.value))
            assert said[-1].startswith(
                f'PostgreSQL refuses this server\'s new connections: role "{role}" is not '
                "permitted to log in"
            ), said
            # and once it may log in again, the same store reads again
            await admin.execute(f'ALTER ROLE "{role}" LOGIN')
            assert (await reader.head())[0] == 1
    finally:
        await _drop(admin, role)


async def test_a_statement_timeout_set_on_the_role_is_named_when_the_log_opens(
    schema_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a role or database whose statement_timeout cuts a statement the store opens with
    async def cut(*args: object) -> None:
        raise asyncpg.QueryCanceledError("canceling statement due to statement timeout")

    monkeypatch.setattr(postgres_store, "_check_settings_arrived", cut)
    # when the log is opened
    with pytest.raises(StoreUnavailable) as refused:
        await open_store(schema_url)
    # then the refusal says a statement_timeout cut it, and what to change, as later ones do
    message = str(refused.value)
    assert "canceling statement due to statement timeout" in message
    assert "a statement_timeout set for this role or database cuts leaderlog's" in message
