"""Write tokens: shown once, stored hashed, checked by name, revoked at once, on both backends."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import re
import sqlite3
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest

from leaderlog.cli import log_commands
from leaderlog.errors import AppendRefused, TokenError, TokenNameRefused
from leaderlog.events import PersonRegistered, parse_record
from leaderlog.log import EventLog
from leaderlog.store import open_store
from leaderlog.tokens import Tokens
from tests.conftest import invoke, ok

TOKEN = re.compile(r"ll_[A-Za-z0-9_-]{43}")


@pytest.fixture
async def log(store_url: str) -> AsyncIterator[EventLog]:
    async with await EventLog.open(store_url) as opened:
        yield opened


@pytest.fixture
def tokens(log: EventLog) -> Tokens:
    return Tokens(log.store)


@pytest.fixture
async def sqlite_tokens(sqlite_url: str) -> AsyncIterator[Tokens]:
    """For rules that do not depend on the backend."""
    async with await EventLog.open(sqlite_url) as opened:
        yield Tokens(opened.store)


async def test_a_created_token_is_checked_back_to_its_name(tokens: Tokens) -> None:
    token = await tokens.create("alice")
    assert TOKEN.fullmatch(token)
    assert await tokens.check(token) == "alice"


async def test_tokens_are_random_and_distinct(tokens: Tokens) -> None:
    created = [await tokens.create(f"writer-{index}") for index in range(5)]
    assert len(set(created)) == 5
    assert [await tokens.check(token) for token in created] == [f"writer-{i}" for i in range(5)]


async def test_only_the_hash_is_stored(log: EventLog, tokens: Tokens) -> None:
    token = await tokens.create("alice")
    rows = await log.store.query("SELECT * FROM write_tokens")
    stored = [str(value) for row in rows for value in row]
    assert token not in stored
    assert hashlib.sha256(token.encode()).hexdigest() in stored


def database_bytes(folder: Path) -> bytes:
    # The write-ahead log holds the newest pages until a checkpoint: read it too.
    return b"".join(path.read_bytes() for path in sorted(folder.glob("tokens.db*")))


async def test_the_raw_token_is_nowhere_in_the_sqlite_files(tmp_path: Path) -> None:
    async with await EventLog.open(f"sqlite:///{tmp_path / 'tokens.db'}") as log:
        token = await Tokens(log.store).create("alice")
        while_open = database_bytes(tmp_path)
    after_close = database_bytes(tmp_path)
    digest = hashlib.sha256(token.encode()).hexdigest().encode()
    for written in (while_open, after_close):
        assert token.encode() not in written
        assert digest in written


async def test_listing_shows_names_and_times_never_tokens(tokens: Tokens) -> None:
    alice = await tokens.create("alice")
    await tokens.create("bob")
    await tokens.revoke("bob")
    listing = await tokens.listing()
    assert [(info.name, info.revoked_at is None) for info in listing] == [
        ("alice", True),
        ("bob", False),
    ]
    assert all(info.created_at.endswith("Z") for info in listing)
    assert alice not in repr(listing)


@pytest.mark.parametrize(
    "name",
    ["", "Alice", "-alice", ".alice", "al ice", "alice\n", "al\nice", "a" * 65, "álice", "a/b"],
)
async def test_bad_names_are_refused(sqlite_tokens: Tokens, name: str) -> None:
    with pytest.raises(TokenError, match="token name"):
        await sqlite_tokens.create(name)
    assert await sqlite_tokens.listing() == []


@pytest.mark.parametrize("name", ["cli", "seed", "import"])
async def test_the_logs_own_actors_are_reserved(sqlite_tokens: Tokens, name: str) -> None:
    with pytest.raises(TokenError, match="reserved"):
        await sqlite_tokens.create(name)


@pytest.mark.parametrize("name", ["a", "alice", "ci-bot.2", "a_b", "0" * 64])
async def test_good_names_are_accepted(sqlite_tokens: Tokens, name: str) -> None:
    assert await sqlite_tokens.check(await sqlite_tokens.create(name)) == name


async def test_a_name_the_log_holds_as_an_actor_without_a_token_is_refused(
    log: EventLog, tokens: Tokens
) -> None:
    # given events appended as bob with no token of that name (an import --actor bob, say)
    await log.append_events([PersonRegistered(person="x1", name="X")], actor="bob")
    # then bob cannot be given a token: the audit could not tell its requests from them
    with pytest.raises(
        TokenNameRefused, match=r"the log holds 1 event.* appended by 'bob' without a token"
    ):
        await tokens.create("bob")
    assert await tokens.listing() == []


async def test_a_name_the_log_holds_as_an_actor_gets_a_token_when_said_to_be_the_same_writer(
    log: EventLog, tokens: Tokens
) -> None:
    # given events appended as bob with no token of that name (bob's own, in a log moved
    # here by export and import)
    await log.append_events([PersonRegistered(person="x1", name="X")], actor="bob")
    # when bob is said to be the writer of those events, then bob gets a token
    token = await tokens.create("bob", same_writer=True)
    assert await tokens.check(token) == "bob"


async def test_a_name_whose_revoked_token_wrote_events_gets_a_new_one(
    log: EventLog, tokens: Tokens
) -> None:
    await tokens.create("alice")
    # what the write API appends for requests made with alice's token
    await log.append_events([PersonRegistered(person="x1", name="X")], actor="alice")
    await tokens.revoke("alice")
    assert await tokens.check(await tokens.create("alice")) == "alice"


async def test_a_live_name_cannot_be_created_twice(tokens: Tokens) -> None:
    first = await tokens.create("alice")
    with pytest.raises(TokenError, match="revoke it first"):
        await tokens.create("alice")
    assert await tokens.check(first) == "alice"


async def _create_or_refusal(log: EventLog, name: str) -> str | TokenError:
    try:
        return await Tokens(log.store).create(name)
    except TokenError as error:
        return error


async def test_concurrent_creates_of_one_name_have_one_winner(store_url: str) -> None:
    """Each creator has its own connection; the loser must not replace the winner's token."""
    logs = [await EventLog.open(store_url) for _ in range(4)]
    try:
        await Tokens(logs[0].store).listing()  # the table exists before the race

        results = await asyncio.gather(*(_create_or_refusal(log, "alice") for log in logs))
        winners = [result for result in results if isinstance(result, str)]
        assert len(winners) == 1
        assert await Tokens(logs[0].store).check(winners[0]) == "alice"
    finally:
        for log in logs:
            await log.close()


async def test_the_first_creates_on_a_new_log_race_to_make_the_table(store_url: str) -> None:
    """Stores opened at once on a new log each create the token table on first use."""
    stores = [await open_store(store_url) for _ in range(8)]
    try:
        made = await asyncio.gather(*(Tokens(s).create(f"n{i}") for i, s in enumerate(stores)))
        assert all(TOKEN.fullmatch(token) for token in made)
        assert [info.name for info in await Tokens(stores[0]).listing()] == [
            f"n{i}" for i in range(8)
        ]
    finally:
        for opened in stores:
            await opened.close()


async def test_revoking_stops_a_token_and_a_new_one_can_be_made(tokens: Tokens) -> None:
    old = await tokens.create("alice")
    await tokens.revoke("alice")
    with pytest.raises(TokenError, match="revoked"):
        await tokens.check(old)
    new = await tokens.create("alice")
    assert new != old
    assert await tokens.check(new) == "alice"
    # still revoked, not unknown, once its name has a new token
    with pytest.raises(TokenError, match="token revoked"):
        await tokens.check(old)


async def test_revoking_unknown_or_revoked_names_is_an_error(tokens: Tokens) -> None:
    with pytest.raises(TokenError, match="no token named"):
        await tokens.revoke("nobody")
    await tokens.create("alice")
    await tokens.revoke("alice")
    with pytest.raises(TokenError, match="already revoked"):
        await tokens.revoke("alice")


async def test_revoking_on_a_log_without_tokens_is_refused_and_creates_nothing(
    log: EventLog,
) -> None:
    await log.append_events([PersonRegistered(person="jane-roe", name="Jane Roe")], actor="test")
    before = await log.store.tables()
    with pytest.raises(TokenError, match="no token named 'nobody'"):
        await Tokens(log.store).revoke("nobody")
    assert await log.store.tables() == before
    assert "write_tokens" not in before


async def test_a_revocation_elsewhere_takes_effect_at_once(store_url: str) -> None:
    """The server's Tokens keeps no cache of answers: the CLI's revoke counts on the next check."""
    async with (
        await EventLog.open(store_url) as server_log,
        await EventLog.open(store_url) as cli_log,
    ):
        server = Tokens(server_log.store)
        token = await Tokens(cli_log.store).create("alice")
        assert await server.check(token) == "alice"
        await Tokens(cli_log.store).revoke("alice")
        with pytest.raises(TokenError, match="revoked"):
            await server.check(token)


@pytest.mark.parametrize("token", ["", " ", "ll_", "nonsense", "ll_" + "A" * 43, "\udcff"])
async def test_unknown_tokens_are_refused(sqlite_tokens: Tokens, token: str) -> None:
    await sqlite_tokens.create("alice")
    with pytest.raises(TokenError, match="unknown token"):
        await sqlite_tokens.check(token)


async def test_checking_compares_in_constant_time(
    tokens: Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Any, Any]] = []
    real = hmac.compare_digest

    def spy(left: Any, right: Any) -> bool:
        calls.append((left, right))
        return real(left, right)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    token = await tokens.create("alice")
    assert await tokens.check(token) == "alice"
    assert calls == [(hashlib.sha256(token.encode()).hexdigest(),) * 2]


async def test_a_revoked_token_stays_listed_when_its_name_gets_a_new_one(tokens: Tokens) -> None:
    first = await tokens.create("alice")
    await tokens.revoke("alice")
    second = await tokens.create("alice")
    with pytest.raises(TokenError, match="revoke it first"):
        await tokens.create("alice")
    await tokens.revoke("alice")
    third = await tokens.create("alice")
    await tokens.create("bob")

    listing = await tokens.listing()
    assert [(info.name, info.revoked_at is None) for info in listing] == [
        ("alice", False),
        ("alice", False),
        ("alice", True),
        ("bob", True),
    ]
    alices = listing[:3]
    assert [info.created_at for info in alices] == sorted(info.created_at for info in alices)
    assert all(info.revoked_at and info.revoked_at >= info.created_at for info in alices[:2])
    for old in (first, second):
        with pytest.raises(TokenError):
            await tokens.check(old)
    assert await tokens.check(third) == "alice"


async def test_concurrent_creates_of_a_revoked_name_keep_its_record_once(store_url: str) -> None:
    logs = [await EventLog.open(store_url) for _ in range(4)]
    try:
        await Tokens(logs[0].store).create("alice")
        await Tokens(logs[0].store).revoke("alice")

        results = await asyncio.gather(*(_create_or_refusal(log, "alice") for log in logs))
        assert len([result for result in results if isinstance(result, str)]) == 1
        listing = await Tokens(logs[0].store).listing()
        assert [(info.name, info.revoked_at is None) for info in listing] == [
            ("alice", False),
            ("alice", True),
        ]
    finally:
        for log in logs:
            await log.close()


# The table as leaderlog made it before revoked tokens were kept (and still makes it).
EARLIER_SCHEMA = (
    "CREATE TABLE write_tokens (name TEXT PRIMARY KEY, token_hash TEXT NOT NULL UNIQUE, "
    "created_at TEXT NOT NULL, revoked_at TEXT)"
)


async def test_tokens_stored_by_an_earlier_version_are_kept_and_listed(log: EventLog) -> None:
    live, revoked = "ll_" + "a" * 43, "ll_" + "b" * 43
    async with log.store.projection_transaction() as tx:
        await tx.execute(EARLIER_SCHEMA)
        await tx.executemany(
            "INSERT INTO write_tokens (name, token_hash, created_at, revoked_at) "
            "VALUES (?, ?, ?, ?)",
            [
                ("alice", hashlib.sha256(live.encode()).hexdigest(), "2025-01-01T00:00:00Z", None),
                (
                    "bob",
                    hashlib.sha256(revoked.encode()).hexdigest(),
                    "2025-01-02T00:00:00Z",
                    "2025-01-03T00:00:00Z",
                ),
            ],
        )
    tokens = Tokens(log.store)
    assert await tokens.check(live) == "alice"
    with pytest.raises(TokenError, match="revoked"):
        await tokens.check(revoked)
    await tokens.create("bob")
    listing = await tokens.listing()
    assert [(info.name, info.created_at, info.revoked_at) for info in listing][:2] == [
        ("alice", "2025-01-01T00:00:00Z", None),
        ("bob", "2025-01-02T00:00:00Z", "2025-01-03T00:00:00Z"),
    ]
    assert (listing[2].name, listing[2].revoked_at) == ("bob", None)
    with pytest.raises(TokenError, match="revoke it first"):
        await tokens.create("alice")


def test_an_import_cannot_pass_for_a_token_s_requests(sqlite_url: str) -> None:
    # given a write token named bob
    created = invoke(sqlite_url, "token", "create", "bob")
    assert created.exit_code == 0, created.output
    record = '{"type": "person.registered", "data": {"person": "x1", "name": "X"}}\n'
    # when a CLI import says it is bob, then it is refused and nothing is written
    refused = invoke(sqlite_url, "import", "--actor", "bob", "-", stdin=record)
    assert refused.exit_code == 2
    assert "'bob' is the name of a write token" in refused.stderr
    assert ok(invoke(sqlite_url, "events", "--json")).strip() == "[]"
    # and another name is recorded as given
    ok(invoke(sqlite_url, "import", "--actor", "desk", "-", stdin=record))
    assert '"actor": "desk"' in ok(invoke(sqlite_url, "events", "--json"))


def test_a_token_cannot_take_the_name_an_import_was_recorded_under(sqlite_url: str) -> None:
    # given a CLI import recorded as bob's
    record = '{"type": "person.registered", "data": {"person": "x1", "name": "X"}}\n'
    ok(invoke(sqlite_url, "import", "--actor", "bob", "-", stdin=record))
    # when a token is asked for under that name, then it is refused as a usage mistake
    refused = invoke(sqlite_url, "token", "create", "bob")
    assert refused.exit_code == 2
    assert refused.stdout == ""
    assert refused.stderr.startswith("Usage: ")
    assert (
        "Error: Invalid value for 'NAME': the log holds 1 event(s) recorded as appended by 'bob' "
        "without a token of that name (import --actor bob, or a copy of another log)"
    ) in refused.stderr
    assert ok(invoke(sqlite_url, "token", "list", "--json")).strip() == "[]"
    # and another name gets its token
    assert ok(invoke(sqlite_url, "token", "create", "carol")).startswith("ll_")


def test_a_log_moved_by_export_and_import_gives_its_writers_tokens_again(
    sqlite_url: str, tmp_path: Path
) -> None:
    # given a log with an event alice appended with her token
    ok(invoke(sqlite_url, "token", "create", "alice"))
    record = '{"type": "person.registered", "data": {"person": "x1", "name": "X"}}\n'
    ok(invoke(sqlite_url, "import", "-", stdin=record))
    # (recorded as hers, as a request made with her token would be)
    moved_line = ok(invoke(sqlite_url, "export")).replace('"actor":"cli"', '"actor":"alice"')
    assert '"actor":"alice"' in moved_line
    # when it is moved to another database by export and import
    moved = f"sqlite:///{tmp_path / 'moved.db'}"
    ok(invoke(moved, "import", "-", stdin=moved_line))
    # then the name is refused as another writer's, saying how to give it all the same
    refused = invoke(moved, "token", "create", "alice")
    assert refused.exit_code == 2
    assert "say so with --same-writer" in refused.stderr
    # and alice gets a new token once said to be the same writer, and writes with it
    token = ok(invoke(moved, "token", "create", "alice", "--same-writer")).strip()
    assert TOKEN.fullmatch(token)
    listed = ok(invoke(moved, "token", "list", "--json"))
    assert '"alice"' in listed


def test_a_log_s_own_export_imports_again_with_its_token_s_events(
    sqlite_url: str, tmp_path: Path
) -> None:
    # given a log with an event desk appended through the write API, with desk's token
    assert invoke(sqlite_url, "token", "create", "desk").exit_code == 0

    async def append_as_desk() -> None:
        async with await EventLog.open(sqlite_url) as log:
            await log.append_events([PersonRegistered(person="x1", name="X")], actor="desk")

    asyncio.run(append_as_desk())
    exported = ok(invoke(sqlite_url, "export"))
    # when its own export is imported into it again, then nothing is appended, as always
    again = invoke(sqlite_url, "import", "-", stdin=exported)
    assert again.exit_code == 0, again.output
    assert again.stdout.strip() == "appended 0, already present 1"
    # while the same event changed in any way is still refused under desk's name
    edited = exported.replace('"X"', '"Y"')
    refused = invoke(sqlite_url, "import", "-", stdin=edited)
    assert refused.exit_code == 1
    assert "line 1: actor 'desk' is the name of a write token here" in refused.stderr


def test_an_exported_envelope_cannot_bring_in_a_token_s_name(
    sqlite_url: str, tmp_path: Path
) -> None:
    # given another log where desk imported a record, exported with its envelope
    elsewhere = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    record = '{"type": "person.registered", "data": {"person": "x1", "name": "X"}}\n'
    ok(invoke(elsewhere, "import", "--actor", "desk", "-", stdin=record))
    exported = ok(invoke(elsewhere, "export"))
    # and a log where desk is a write token
    ok(invoke(sqlite_url, "import", "-", stdin=record.replace("x1", "x0")))
    assert invoke(sqlite_url, "token", "create", "desk").exit_code == 0
    # when the export is imported there, then it is refused, naming the line, and not written
    refused = invoke(sqlite_url, "import", "-", stdin=exported)
    assert refused.exit_code == 1
    assert "line 1: actor 'desk' is the name of a write token here" in refused.stderr
    assert '"x1"' not in ok(invoke(sqlite_url, "events", "--json"))


async def _person(log: EventLog, person: str, actor: str, guard: Any) -> Any:
    record = parse_record({"type": "person.registered", "data": {"person": person, "name": "P"}})
    return await log.append_records([record], actor=actor, guard=guard)


@pytest.mark.parametrize("other_token_first", [False, True])
async def test_a_token_created_while_an_import_under_its_name_was_checked_refuses_the_import(
    log: EventLog, tokens: Tokens, other_token_first: bool
) -> None:
    # given an import that checked its actor against the tokens (with or without any yet)
    if other_token_first:
        await tokens.create("someone-else")
    guard = await tokens.name_guard(["racer"])
    # when a token is created under that name before the import appends
    await tokens.create("racer")
    # then the append, checking again under the writers' lock, is refused; nothing written
    before = await log.store.count()
    with pytest.raises(AppendRefused, match="nothing was written"):
        await _person(log, "p-racer", "racer", guard)
    assert await log.store.count() == before


async def test_a_token_asked_for_after_an_import_under_its_name_committed_is_refused(
    log: EventLog, tokens: Tokens
) -> None:
    guard = await tokens.name_guard(["racer"])
    assert (await _person(log, "p-racer", "racer", guard)).appended == 1
    with pytest.raises(TokenNameRefused, match="recorded as appended by 'racer'"):
        await tokens.create("racer")


async def test_a_token_checked_after_its_tables_went_with_a_replaced_log_is_unknown(
    sqlite_url: str,
) -> None:
    # given a server's tokens, checked once (their tables found)
    async with await EventLog.open(sqlite_url) as log:
        await log.append_events([PersonRegistered(person="x1", name="X")], actor="t")
        tokens = Tokens(log.store)
        token = await tokens.create("alice")
        assert await tokens.check(token) == "alice"
        # when another log without tokens is put in its place (a copy restored under it)
        with contextlib.closing(sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))) as other:
            other.execute("DROP TABLE write_tokens")
            other.execute("DROP TABLE write_tokens_retired")
            other.commit()
        # then the token is unknown there, where the missing table was a 500 for good
        with pytest.raises(TokenError, match="unknown token"):
            await tokens.check(token)


@pytest.mark.parametrize("other_token_first", [False, True])
def test_a_token_created_while_an_import_is_checked_refuses_that_import(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, other_token_first: bool
) -> None:
    # given a log (with or without a token already), and an import under --actor racer, a
    # name no token has yet
    record = '{"type": "person.registered", "data": {"person": "x1", "name": "X"}}\n'
    ok(invoke(sqlite_url, "import", "-", stdin=record.replace("x1", "x0")))
    if other_token_first:
        assert invoke(sqlite_url, "token", "create", "someone-else").exit_code == 0
    before = ok(invoke(sqlite_url, "verify"))

    class CreatedMeanwhile(Tokens):
        async def name_guard(self, names: Iterable[str]) -> Any:
            guard = await super().name_guard(names)
            # token create racer, run by another process once the import checked the names
            await self.create("racer")
            return guard

    monkeypatch.setattr(log_commands, "Tokens", CreatedMeanwhile)
    # when the import appends
    refused = invoke(sqlite_url, "import", "--actor", "racer", "-", stdin=record)
    # then it is refused, and nothing is written under the token's name
    assert refused.exit_code == 1, refused.output
    assert refused.stderr.startswith("error: ")
    assert "nothing was written" in refused.stderr
    assert ok(invoke(sqlite_url, "verify")) == before


def test_an_export_line_naming_a_token_for_an_event_stored_under_another_actor_is_refused(
    sqlite_url: str,
) -> None:
    # given a log imported under cli, and a write token desk
    record = '{"type": "person.registered", "data": {"person": "x1", "name": "X"}}\n'
    ok(invoke(sqlite_url, "import", "-", stdin=record))
    assert invoke(sqlite_url, "token", "create", "desk").exit_code == 0
    # when its export comes back with desk as the actor of that very event
    exported = ok(invoke(sqlite_url, "export")).replace('"actor":"cli"', '"actor":"desk"')
    assert '"actor":"desk"' in exported
    refused = invoke(sqlite_url, "import", "-", stdin=exported)
    # then it is refused under desk's name, not answered as already present
    assert refused.exit_code == 1, refused.output
    assert "line 1: actor 'desk' is the name of a write token here" in refused.stderr
