"""Write-API tokens: created once, shown once, stored only as a hash, revoked at once.

A token is ``ll_`` and 43 random URL-safe characters; only ``sha256(token)`` is stored.
The server checks the table on every write, so a revocation from the CLI takes effect on the
next request.

``write_tokens`` holds each name's current token, live or revoked. When a revoked name gets a
new token, the old record moves to ``write_tokens_retired``, so that every token ever created
is still listed. The second table leaves the first exactly as earlier versions made it: no
migration, and a server of an earlier version on the same database keeps working.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from leaderlog.errors import AppendRefused, StoreError, TokenError, TokenNameRefused
from leaderlog.events import ACTOR_NAME, ACTOR_RULE, format_time
from leaderlog.store import EventStore
from leaderlog.store.base import TABLES_QUERY, AppendGuard, ProjectionTransaction, utc_now

__all__ = ["TokenInfo", "Tokens", "check_token_name"]

_RESERVED = {"cli", "seed", "import"}
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS write_tokens ("
    " name TEXT PRIMARY KEY,"
    " token_hash TEXT NOT NULL UNIQUE,"
    " created_at TEXT NOT NULL,"
    " revoked_at TEXT)",
    "CREATE TABLE IF NOT EXISTS write_tokens_retired ("
    " token_hash TEXT PRIMARY KEY,"
    " name TEXT NOT NULL,"
    " created_at TEXT NOT NULL,"
    " revoked_at TEXT NOT NULL)",
)


_CREATE_ATTEMPTS = 3


def _tokens_appeared(rows: list[tuple[Any, ...]]) -> StoreError:
    return AppendRefused(
        "the first write token was created while this append was checked, perhaps under one "
        "of its actors' names; nothing was written: run it again"
    )


@dataclass(frozen=True, slots=True)
class TokenInfo:
    name: str
    created_at: str
    revoked_at: str | None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_token_name(name: str) -> str:
    """``name`` if it may name a token as far as its text goes, else :class:`TokenNameRefused`
    (whether the log already holds it as another writer's is for :meth:`Tokens.create`)."""
    if not isinstance(name, str):
        raise TokenNameRefused(f"a token name is text, got {type(name).__name__}")
    # fullmatch: with match, "$" would also accept a name ending in a newline.
    if not ACTOR_NAME.fullmatch(name):
        raise TokenNameRefused(f"token name {name!r} must be {ACTOR_RULE}")
    if name in _RESERVED:
        raise TokenNameRefused(f"token name {name!r} is reserved for the log's own actors")
    return name


class Tokens:
    """Token administration and checking over any :class:`EventStore`'s SQL."""

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self._ready = False

    async def _ensure_table(self) -> None:
        if self._ready:
            return
        for attempt in range(_CREATE_ATTEMPTS):
            try:
                async with self._store.projection_transaction() as tx:
                    for statement in _SCHEMA:
                        await tx.execute(statement)
                break
            except StoreError:
                raise
            except Exception:
                # Another process creating the table at the same moment can make PostgreSQL's
                # CREATE TABLE IF NOT EXISTS fail (a duplicate type); the next try finds it.
                if attempt == _CREATE_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.05 * (attempt + 1))
        self._ready = True

    async def create(self, name: str, *, same_writer: bool = False) -> str:
        """Create a token for ``name`` and return it; it cannot be shown again.

        A name the log already holds as the actor of events no token of that name wrote
        (``import --actor NAME``, say) is refused: the token's requests would be mixed up
        with those events in the audit. A name that had a token before may have a new one
        (an import cannot take a token's name, so its events are all the tokens' own).
        ``same_writer`` says those events are this writer's all the same: a log moved to
        this database by export and import, which carry no tokens, holds the events its
        tokens' writers appended.
        """
        check_token_name(name)
        await self._ensure_table()
        token = f"ll_{secrets.token_urlsafe(32)}"
        digest = _digest(token)
        async with self._store.projection_transaction() as tx:
            # Under the lock appends take: an import recording events under this name either
            # committed before (and they are counted) or checks for the token after (see
            # name_guard), never both unseen.
            await tx.lock_appends()
            if not same_writer:
                await _refuse_an_actor_of_other_writes(tx, name)
            # The revoked token the new one replaces stays listed. A concurrent create of the
            # same name retires the same row: the conflict clause makes that a no-op, and the
            # live-name check below then refuses the create that lost.
            await tx.execute(
                "INSERT INTO write_tokens_retired (token_hash, name, created_at, revoked_at) "
                "SELECT token_hash, name, created_at, revoked_at FROM write_tokens "
                "WHERE name = ? AND revoked_at IS NOT NULL "
                "ON CONFLICT (token_hash) DO NOTHING",
                (name,),
            )
            await tx.execute(
                "DELETE FROM write_tokens WHERE name = ? AND revoked_at IS NOT NULL", (name,)
            )
            # A concurrent create of the same name leaves its row here instead of ours (the
            # conflict clause waits for it), so that writer's token is never silently replaced.
            await tx.execute(
                "INSERT INTO write_tokens (name, token_hash, created_at, revoked_at) "
                "VALUES (?, ?, ?, NULL) ON CONFLICT (name) DO NOTHING",
                (name, digest, format_time(utc_now())),
            )
            rows = await tx.fetchall("SELECT token_hash FROM write_tokens WHERE name = ?", (name,))
            if not rows or rows[0][0] != digest:
                raise TokenError(f"a live token named {name!r} exists; revoke it first")
        return token

    async def name_guard(self, names: Iterable[str]) -> AppendGuard:
        """What an append checks under its lock so that none of ``names`` has become a
        token's name meanwhile (``token create`` takes the same lock to check the log):
        :class:`AppendRefused` if one has."""
        if not await self._exists():
            # No token yet, and no table to look in: what would refuse is the table itself
            # appearing meanwhile (checked without creating it: a refused import changes
            # nothing).
            tables = TABLES_QUERY[self._store.dialect]
            sql = f"SELECT name FROM ({tables}) AS present WHERE name = 'write_tokens'"
            return AppendGuard(sql, (), _tokens_appeared)
        wanted = tuple(sorted(set(names)))
        marks = ", ".join("?" * len(wanted))
        sql = (
            f"SELECT name FROM write_tokens WHERE name IN ({marks}) "
            f"UNION ALL SELECT name FROM write_tokens_retired WHERE name IN ({marks})"
        )

        def refusal(rows: list[tuple[Any, ...]]) -> StoreError:
            taken = ", ".join(repr(name) for name in sorted({str(row[0]) for row in rows}))
            return AppendRefused(
                f"actor {taken} became the name of a write token while this append was "
                "checked (names of tokens are recorded only for requests made with them); "
                "nothing was written"
            )

        return AppendGuard(sql, wanted * 2, refusal)

    async def revoke(self, name: str) -> None:
        """Revoke the live token named ``name`` (a :class:`TokenError` when there is none):
        requests made with it are refused from now on; its name stays on its events."""
        if not await self._exists():
            # A refusal writes nothing: no token tables made only to find no token in them.
            raise TokenError(f"no token named {name!r}")
        async with self._store.projection_transaction() as tx:
            rows = await tx.fetchall("SELECT revoked_at FROM write_tokens WHERE name = ?", (name,))
            if not rows:
                raise TokenError(f"no token named {name!r}")
            if rows[0][0] is not None:
                raise TokenError(f"the token named {name!r} is already revoked")
            await tx.execute(
                "UPDATE write_tokens SET revoked_at = ? WHERE name = ?",
                (format_time(utc_now()), name),
            )

    async def _exists(self) -> bool:
        """Whether the token tables are there; reads never create them (a refused import
        or a token listing would change a database otherwise)."""
        if self._ready:
            return True
        tables = await self._store.tables()
        if "write_tokens" not in tables:
            return False
        if "write_tokens_retired" not in tables:
            await self._ensure_table()  # tokens of an earlier version, which had no such table
        self._ready = True
        return True

    async def listing(self) -> list[TokenInfo]:
        """Every token ever created, revoked ones included: by name, then oldest first."""
        if not await self._exists():
            return []
        rows = await self._store.query(
            "SELECT name, created_at, revoked_at FROM write_tokens "
            "UNION ALL SELECT name, created_at, revoked_at FROM write_tokens_retired"
        )
        # Sorted here: ORDER BY would follow a PostgreSQL database's collation.
        rows = sorted(rows, key=lambda row: (str(row[0]), str(row[1])))
        return [TokenInfo(str(row[0]), str(row[1]), row[2]) for row in rows]

    async def check(self, token: str) -> str:
        """The name a live token belongs to; :class:`TokenError` otherwise."""
        if not isinstance(token, str):
            raise TokenError(f"a token is text, got {type(token).__name__}")
        if not await self._exists():
            # The token tables go with a log removed under a running server (its PostgreSQL
            # schema dropped): reading the head says so (LogRemoved) rather than blaming
            # the token.
            await self._store.head()
            raise TokenError("unknown token")
        digest = _digest(token)
        try:
            rows = await self._store.query(
                "SELECT name, token_hash, revoked_at FROM write_tokens WHERE token_hash = ?",
                (digest,),
            )
        except StoreError:
            raise
        except Exception:
            # Found before, the tables may have gone since: another log put in this one's
            # place (a copy restored under a running server) need not have them.
            self._ready = False
            if await self._exists():
                raise
            raise TokenError("unknown token") from None
        # The lookup is by hash, so timing reveals nothing about the secret; the explicit
        # constant-time comparison guards against a collation ever matching loosely.
        if not rows:
            # A revoked token whose name has a new one since: still revoked, not unknown, so
            # that its holder learns why rather than suspect a typing mistake.
            rows = await self._store.query(
                "SELECT name, token_hash, revoked_at FROM write_tokens_retired "
                "WHERE token_hash = ?",
                (digest,),
            )
        if not rows or not hmac.compare_digest(str(rows[0][1]), digest):
            raise TokenError("unknown token")
        if rows[0][2] is not None:
            raise TokenError("token revoked")
        return str(rows[0][0])


async def _refuse_an_actor_of_other_writes(tx: ProjectionTransaction, name: str) -> None:
    had_a_token = await tx.fetchall(
        "SELECT 1 FROM write_tokens WHERE name = ? "
        "UNION ALL SELECT 1 FROM write_tokens_retired WHERE name = ?",
        (name, name),
    )
    if had_a_token:
        return
    # A scan of the log (actor is not indexed): token create is rare enough to afford it.
    ((events,),) = await tx.fetchall("SELECT COUNT(*) FROM events WHERE actor = ?", (name,))
    if events:
        raise TokenNameRefused(
            f"the log holds {events} event(s) recorded as appended by {name!r} without a token "
            f"of that name (import --actor {name}, or a copy of another log): the token's "
            "requests would be mixed up with them in the audit; choose another name, or, if "
            "they are this writer's (a log moved here by export and import, which carry no "
            "tokens), say so with --same-writer"
        )
