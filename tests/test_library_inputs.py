"""The library refuses arguments of the wrong shape with its own errors, naming the argument,
rather than a bare TypeError or an error about something else (one character of a name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leaderlog import BatchError, EventLog, open_store
from leaderlog.errors import (
    InvalidQuery,
    ProjectionError,
    StoreUnavailable,
    TokenError,
    TokenNameRefused,
)
from leaderlog.events import OrgRegistered
from leaderlog.projections import Queries, runner_for
from leaderlog.store import check_database_url
from leaderlog.tokens import Tokens


@pytest.mark.parametrize("filter_name", ["type", "status", "attribution"])
@pytest.mark.parametrize("value", [["claim.reported"], {"claim.reported": 1}])
async def test_audit_filter_that_is_not_text_is_an_invalid_query(
    seeded_log: EventLog, filter_name: str, value: object
) -> None:
    await (await runner_for(seeded_log.store)).catch_up()
    filters: dict[str, Any] = {filter_name: value}
    with pytest.raises(InvalidQuery, match=f"^{filter_name} must be text") as refused:
        await Queries(seeded_log.store).audit(**filters)
    assert refused.value.parameter == filter_name


async def test_runner_for_one_name_as_text_is_refused_naming_the_argument(
    sqlite_url: str,
) -> None:
    async with await open_store(sqlite_url) as store:
        also: Any = "turnover"
        with pytest.raises(ProjectionError, match="also must be a tuple of projection names"):
            await runner_for(store, also=also)


@pytest.mark.parametrize(
    "given", ["org-registered", {"type": "org.registered", "data": {}}, b"records"]
)
async def test_text_or_one_mapping_for_events_is_refused_as_not_a_list(
    sqlite_url: str, given: Any
) -> None:
    async with await EventLog.open(sqlite_url) as log:
        with pytest.raises(BatchError) as refused:
            await log.append_events(given, actor="desk")
        assert str(refused.value) == (
            f"record 0: events must be a list of event models, not {type(given).__name__}"
        )
        with pytest.raises(BatchError) as refused:
            await log.append_records(given, actor="desk")
        assert str(refused.value) == (
            f"record 0: records must be a list of Record, not {type(given).__name__}"
        )
        # A list of them is still appended.
        outcome = await log.append_events([OrgRegistered(org="desk-org", name="Desk")], actor="d")
        assert outcome.positions == (1,)


@pytest.mark.parametrize("end", ["\n", "\r\n", "\t"])
async def test_a_database_url_read_with_its_line_end_creates_nothing(
    tmp_path: Path, end: str
) -> None:
    # As a URL read from a file's last line is: a new, empty log named "leaderlog.db\n".
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}{end}"
    with pytest.raises(StoreUnavailable, match="holds the control character"):
        await open_store(url)
    with pytest.raises(StoreUnavailable, match="holds the control character"):
        await EventLog.open(url)
    with pytest.raises(StoreUnavailable, match="holds the control character"):
        check_database_url(url)
    assert list(tmp_path.iterdir()) == []


async def test_a_control_character_in_a_database_url_is_named_without_its_password() -> None:
    with pytest.raises(StoreUnavailable) as refused:
        await open_store("postgresql://app:hunter2@localhost/leaderlog\n")
    assert "hunter2" not in str(refused.value)
    assert "'\\n'" in str(refused.value)


async def test_rebuild_given_one_name_as_text_says_a_list_was_wanted(seeded_log: EventLog) -> None:
    runner = await runner_for(seeded_log.store)
    with pytest.raises(ProjectionError, match="give a list of projection names, not the text"):
        await runner.rebuild("leadership")  # type: ignore[arg-type]


@pytest.mark.parametrize(("page", "poll_interval"), [(0, 0.5), (-1, 0.5), (10, 0), (10, -1.0)])
async def test_a_subscription_that_would_read_nothing_or_never_pause_is_refused(
    seeded_log: EventLog, page: int, poll_interval: float
) -> None:
    with pytest.raises(ValueError, match="must be"):
        await anext(seeded_log.store.subscribe(page=page, poll_interval=poll_interval))


@pytest.mark.parametrize(
    ("after", "limit"), [(None, None), ("3", None), (1.5, None), (True, None), (0, 2.0)]
)
async def test_a_position_or_limit_that_is_not_a_whole_number_is_a_type_error_naming_it(
    seeded_log: EventLog, after: Any, limit: Any
) -> None:
    with pytest.raises(TypeError, match="a position or limit must be a whole number, got"):
        await seeded_log.events(after=after, limit=limit)


async def test_a_stream_named_by_other_than_text_is_a_type_error(seeded_log: EventLog) -> None:
    stream: Any = 123
    with pytest.raises(TypeError, match="a stream is named by text"):
        await seeded_log.store.read_stream(stream)


@pytest.mark.parametrize("lines", [None, 123])
async def test_lines_that_are_not_lines_are_a_type_error(sqlite_url: str, lines: Any) -> None:
    async with await EventLog.open(sqlite_url) as log:
        with pytest.raises(TypeError, match="lines must be text, bytes or an iterable of lines"):
            await log.import_lines(lines, actor="desk")


async def test_a_token_or_token_name_that_is_not_text_is_refused_as_such(
    seeded_log: EventLog,
) -> None:
    tokens = Tokens(seeded_log.store)
    nothing: Any = None
    with pytest.raises(TokenNameRefused, match="a token name is text, got NoneType"):
        await tokens.create(nothing)
    with pytest.raises(TokenError, match="a token is text, got NoneType"):
        await tokens.check(nothing)


async def test_posts_or_a_cap_of_the_wrong_shape_are_invalid_queries(seeded_log: EventLog) -> None:
    await (await runner_for(seeded_log.store)).catch_up()
    queries = Queries(seeded_log.store)
    posts: Any = None
    with pytest.raises(InvalidQuery, match="posts must be a list of ids, got None"):
        await queries.state_of_posts(posts)
    for cap in (-1, 0, 2.5, True):
        with pytest.raises(InvalidQuery, match="max_posts must be a whole number of at least 1"):
            await queries.state(max_posts=cap)
