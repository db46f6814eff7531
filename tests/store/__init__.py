"""Event store tests: ``contract.py`` is run unchanged against every backend.

PostgreSQL tests each get a schema of their own (``?schema=`` in the store URL), dropped after.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg


def _with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "schema"] + [("schema", schema)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _split_schema(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    schema = dict(query)["schema"]
    rest = [(k, v) for k, v in query if k != "schema"]
    return urlunsplit(parts._replace(query=urlencode(rest))), schema


@contextlib.asynccontextmanager
async def postgres_schema(server_url: str) -> AsyncIterator[str]:
    """A store URL naming a fresh schema; the schema is dropped afterwards."""
    schema = f"t_{uuid.uuid4().hex[:16]}"
    try:
        yield _with_schema(server_url, schema)
    finally:
        connection = await asyncpg.connect(server_url)
        try:
            await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await connection.close()


@contextlib.asynccontextmanager
async def postgres_connection(store_url: str) -> AsyncIterator[asyncpg.Connection[asyncpg.Record]]:
    """A plain asyncpg connection inside the schema a store URL names (no store code involved)."""
    server_url, schema = _split_schema(store_url)
    connection = await asyncpg.connect(server_url, server_settings={"search_path": schema})
    try:
        yield connection
    finally:
        await connection.close()
