"""PostgreSQL through a connection pooler (PgBouncer): a pooler that drops the settings the
store opens its connections with is found before anything is created, and what a pooler
answers with in a mode leaderlog cannot work in says what to change."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg
import pytest

from leaderlog.errors import StoreUnavailable
from leaderlog.store import open_store
from leaderlog.store import postgres as postgres_store
from leaderlog.store.postgres import _reason, _unavailable_on_disconnect

from . import _split_schema, postgres_schema
from .contract import event

# What PgBouncer with ignore_startup_parameters = lock_timeout, search_path does with them.
_IGNORED = ("search_path", "lock_timeout")


@pytest.fixture
def pooler_ignoring_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    opened = postgres_store._open_pool

    async def open_pool(dsn: str, settings: dict[str, str], *args: Any) -> Any:
        kept = {name: value for name, value in settings.items() if name not in _IGNORED}
        parts = urlsplit(dsn)
        query = [(name, value) for name, value in parse_qsl(parts.query) if name not in _IGNORED]
        return await opened(urlunsplit(parts._replace(query=urlencode(query))), kept, *args)

    monkeypatch.setattr(postgres_store, "_open_pool", open_pool)


@pytest.fixture
async def schema_url(postgres_url: str) -> AsyncIterator[str]:
    async with postgres_schema(postgres_url) as url:
        yield url


async def test_a_schema_the_pooler_drops_is_refused_before_anything_is_created(
    schema_url: str, pooler_ignoring_settings: None
) -> None:
    server_url, schema = _split_schema(schema_url)
    connection = await asyncpg.connect(server_url)
    try:
        public_log_before = await connection.fetchval("SELECT to_regclass('public.events')")
        with pytest.raises(StoreUnavailable, match="search_path") as refused:
            await open_store(schema_url)
        assert "connection pooler" in str(refused.value)
        # Both settings it dropped are named at once, not one per try.
        assert f"not {schema} as ?schema= asks and has no lock_timeout" in str(refused.value)
        assert (
            f"(ALTER ROLE ... SET search_path = {schema}; ALTER ROLE ... SET lock_timeout = "
            "'10s') and leave it out of the URL, then have the pooler open new server "
            "connections (PgBouncer: RECONNECT)"
        ) in str(refused.value)
        assert not await connection.fetchval(
            "SELECT 1 FROM pg_namespace WHERE nspname = $1", schema
        )
        assert await connection.fetchval("SELECT to_regclass('public.events')") == (
            public_log_before
        )
    finally:
        await connection.close()


@pytest.fixture(params=["{role}", "{role}, public"], ids=["own-schema", "then-public"])
async def role_with_its_own_settings(
    postgres_url: str, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[str, str]]:
    """A role whose search_path (its own schema first) is set on the role, as behind a pooler
    that ignores startup parameters; the role's URL and its schema."""
    role = f"t_role_{uuid.uuid4().hex[:12]}"
    connection = await asyncpg.connect(postgres_url)
    try:
        await connection.execute(f'CREATE ROLE "{role}" LOGIN')
        await connection.execute(f'CREATE SCHEMA "{role}" AUTHORIZATION "{role}"')
        search_path = request.param.format(role=role)
        await connection.execute(f'ALTER ROLE "{role}" SET search_path = {search_path}')
        parts = urlsplit(postgres_url)
        yield urlunsplit(parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}")), role
    finally:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{role}" CASCADE')
        await connection.execute(f'DROP ROLE IF EXISTS "{role}"')
        await connection.close()


async def _set_on_the_role(postgres_url: str, role: str, setting: str) -> None:
    owner = await asyncpg.connect(postgres_url)
    try:
        await owner.execute(f'ALTER ROLE "{role}" SET {setting}')
    finally:
        await owner.close()


async def test_a_lock_timeout_the_pooler_drops_is_refused_rather_than_waited_for_ever(
    role_with_its_own_settings: tuple[str, str], pooler_ignoring_settings: None
) -> None:
    role_url, _ = role_with_its_own_settings
    with pytest.raises(StoreUnavailable, match="has no lock_timeout") as refused:
        await open_store(role_url)
    assert "(ALTER ROLE ... SET lock_timeout = '10s') and leave it out of the URL" in str(
        refused.value
    )


async def test_no_lock_timeout_chosen_for_the_role_is_kept_behind_such_a_pooler(
    role_with_its_own_settings: tuple[str, str],
    postgres_url: str,
    pooler_ignoring_settings: None,
) -> None:
    role_url, role = role_with_its_own_settings
    await _set_on_the_role(postgres_url, role, "lock_timeout = 0")
    store = await open_store(role_url)
    await store.close()


async def test_a_lock_timeout_the_url_gives_that_the_pooler_drops_is_refused(
    role_with_its_own_settings: tuple[str, str],
    postgres_url: str,
    pooler_ignoring_settings: None,
) -> None:
    role_url, role = role_with_its_own_settings
    await _set_on_the_role(postgres_url, role, "lock_timeout = '10s'")
    with pytest.raises(StoreUnavailable, match="did not get the lock_timeout its URL gives"):
        await open_store(f"{role_url}?lock_timeout=3s")


async def test_behind_such_a_pooler_settings_on_the_role_keep_the_log_in_its_schema(
    role_with_its_own_settings: tuple[str, str],
    postgres_url: str,
    pooler_ignoring_settings: None,
) -> None:
    role_url, schema = role_with_its_own_settings
    await _set_on_the_role(postgres_url, schema, "lock_timeout = '10s'")
    store = await open_store(role_url)
    try:
        await store.append([event("claim-behind-a-pooler")], actor="test")
        assert await store.count() == 1
    finally:
        await store.close()
    owner = await asyncpg.connect(postgres_url)
    try:
        assert await owner.fetchval(f'SELECT count(*) FROM "{schema}".events') == 1
    finally:
        await owner.close()


@pytest.mark.parametrize(
    ("said", "advice"),
    [
        ("unsupported startup parameter: lock_timeout", "ignore_startup_parameters"),
        (
            "transaction blocks not allowed in statement pooling mode",
            "session or transaction mode, not statement mode",
        ),
        ("query_wait_timeout", "each leaderlog process keeps up to 11 connections"),
    ],
)
def test_what_a_pooler_answers_with_says_what_to_change(said: str, advice: str) -> None:
    assert advice in _reason(asyncpg.ProtocolViolationError(said))


def test_a_setting_of_the_url_s_own_that_a_pooler_refuses_is_named() -> None:
    reason = _reason(asyncpg.ProtocolViolationError("unsupported startup parameter: work_mem"))
    assert "refuses the setting work_mem the URL gives: leave ?work_mem= out" in reason
    assert "ignore_startup_parameters" not in reason


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.InvalidSQLStatementNameError(
            'prepared statement "__asyncpg_stmt_1d__" does not exist'
        ),
        asyncpg.DuplicatePreparedStatementError(
            'prepared statement "__asyncpg_stmt_1__" already exists'
        ),
    ],
)
def test_statements_a_pooler_in_transaction_mode_loses_are_unavailable_not_a_fault(
    error: Exception,
) -> None:
    with (
        pytest.raises(StoreUnavailable, match="max_prepared_statements above 0") as raised,
        _unavailable_on_disconnect(),
    ):
        raise error
    assert "statement_cache_size" not in str(raised.value)
    assert "connection pooler cannot run this server's statements" in raised.value.public
