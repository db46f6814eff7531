"""Audit queries: events by source, publisher, actor, type, claim status, attribution, time."""

from __future__ import annotations

import pytest

from leaderlog.events import new_event_id
from leaderlog.log import EventLog
from leaderlog.projections import InvalidQuery, Queries, UnknownEntity
from leaderlog.projections import queries as queries_module
from leaderlog.projections.query_input import parse_time
from leaderlog.store import NewEvent
from tests.projections.logs import (
    FOX,
    GENALO_RETIREMENT,
    GORDON_ACTING,
    HAMMER_CAPTION,
    SEED_COUNT,
    append,
    at,
    current,
    published_source,
    record,
    seed_records,
)

RELEASE = record(
    "source.registered",
    source="ice-release",
    url="https://www.ice.gov/news/release",
    publisher="ICE",
    title="ICE names acting HSI head",
)


async def _audited_log(log: EventLog) -> Queries:
    """Seeds on 29 May (actor seed); on 12 June an editor retracts an anonymous claim and
    ICE confirms another."""
    await append(log, seed_records(), recorded_at=at("2025-05-29T12:00:00Z"), actor="seed")
    await append(
        log,
        [
            RELEASE,
            record("claim.retracted", claim=GENALO_RETIREMENT, reason="He is staying on."),
            record("claim.confirmed", claim=GORDON_ACTING, source="ice-release"),
        ],
        recorded_at=at("2025-06-12T08:30:00Z"),
        actor="editor",
    )
    return await current(log)


async def test_anonymous_claims_later_retracted_who_recorded_them_and_from_where(
    sqlite_url: str,
) -> None:
    async with await EventLog.open(sqlite_url) as log:
        queries = await _audited_log(log)
        answer = await queries.audit(attribution="anonymous", status="retracted")
    assert answer["filters"] == {"attribution": "anonymous", "status": "retracted"}
    assert [(e["type"], e["actor"], e["claim"]) for e in answer["events"]] == [
        ("claim.reported", "seed", GENALO_RETIREMENT),
        ("claim.retracted", "editor", GENALO_RETIREMENT),
    ]
    reported = answer["events"][0]
    assert (reported["source"], reported["publisher"], reported["url"]) == (
        FOX,
        "Fox News",
        "https://www.foxnews.com/politics/ice-leadership-shake-up",
    )
    assert reported["claim_status"] == "retracted"
    # the retraction names no source, so the claim's own article is given
    assert answer["events"][1]["source"] == FOX
    assert answer["next_after"] is None


async def test_each_filter_on_its_own(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        queries = await _audited_log(log)
        by_source = await queries.audit(source="ice-release")
        assert [e["type"] for e in by_source["events"]] == ["source.registered", "claim.confirmed"]
        by_publisher = await queries.audit(publisher="ICE")
        assert by_publisher["events"] == by_source["events"]
        by_actor = await queries.audit(actor="editor")
        assert [e["position"] for e in by_actor["events"]] == [30, 31, 32]
        disputes = await queries.audit(type="claim.disputed")
        assert [e["claim"] for e in disputes["events"]] == [HAMMER_CAPTION]
        confirmed = await queries.audit(status="confirmed")
        assert {e["claim"] for e in confirmed["events"]} == {GORDON_ACTING}
        outlet = await queries.audit(attribution="outlet", type="claim.reported")
        assert len(outlet["events"]) == 5
        comments = await queries.audit(type="comment.requested", source=FOX)
        assert len(comments["events"]) == 2


async def test_recorded_time_range_is_inclusive(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        queries = await _audited_log(log)
        june = await queries.audit(recorded_from="2025-06-01", recorded_to="2025-06-30")
        assert [e["position"] for e in june["events"]] == [30, 31, 32]
        exact = await queries.audit(
            recorded_from="2025-06-12T08:30:00Z", recorded_to="2025-06-12T08:30:00Z"
        )
        assert len(exact["events"]) == 3
        may = await queries.audit(recorded_to="2025-05-29")
        assert len(may["events"]) == SEED_COUNT
        assert may["filters"]["to"] == "2025-05-29T23:59:59.999999Z"
        none = await queries.audit(recorded_from="2025-06-12T08:30:00.000001Z")
        assert none["events"] == []
        after = await queries.audit(recorded_from="2025-06-12T08:30:00.0000001Z")
        assert after["events"] == []


async def test_paging_with_after(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        queries = await _audited_log(log)
        first = await queries.audit(actor="seed", limit=10)
        assert [e["position"] for e in first["events"]] == list(range(1, 11))
        assert first["next_after"] == 10
        rest = await queries.audit(actor="seed", after=first["next_after"], limit=100)
        assert [e["position"] for e in rest["events"]] == list(range(11, SEED_COUNT + 1))
        assert rest["next_after"] is None
        # a page that ends exactly at the last match says nothing follows
        exact = await queries.audit(actor="seed", after=10, limit=SEED_COUNT - 10)
        assert exact["events"][-1]["position"] == SEED_COUNT
        assert exact["next_after"] is None
        assert (await queries.audit(actor="seed", limit=SEED_COUNT))["next_after"] is None


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"type": "claim.deleted"}, "unknown event type 'claim.deleted'"),
        ({"status": "maybe"}, "unknown status 'maybe'"),
        ({"attribution": "rumour"}, "unknown attribution 'rumour'"),
        ({"recorded_from": "last week"}, "from must be an RFC 3339 time"),
        ({"recorded_to": "2025-06-01T00:00:00"}, "to needs a UTC offset"),
        ({"recorded_from": "0001-01-01T00:00:00+01:00"}, "out of range once converted to UTC"),
        ({"recorded_to": "9999-12-31T23:59:59-01:00"}, "out of range once converted to UTC"),
        ({"recorded_from": "2025-W22-4T14:00:00Z"}, "from must be an RFC 3339 time"),
        ({"recorded_from": "20250529T140000Z"}, "from must be an RFC 3339 time"),
        ({"recorded_to": "2025-02-30T00:00:00Z"}, "is not a real time of a calendar day"),
        (
            {"recorded_from": "2025-06-02", "recorded_to": "2025-06-01"},
            r"from \(2025-06-02T00:00:00\.000000Z\) is after to \(2025-06-01T23:59:59\.999999Z\)",
        ),
        ({"limit": 0}, "limit must be between"),
        ({"after": -1}, "after must be a position"),
        ({"limit": 2.5}, "limit must be a whole number, got 2.5"),
        ({"limit": "5"}, "limit must be a whole number, got '5'"),
        ({"limit": True}, "limit must be a whole number, got True"),
        ({"after": None}, "after must be a whole number, got None"),
    ],
)
async def test_bad_filters_are_refused(
    seeded_log: EventLog, filters: dict[str, object], message: str
) -> None:
    queries = await current(seeded_log)
    with pytest.raises(InvalidQuery, match=message):
        await queries.audit(**filters)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2016-12-31T23:59:60Z", "2016-12-31T23:59:59.999999+00:00"),
        ("2017-01-01T00:59:60+01:00", "2016-12-31T23:59:59.999999+00:00"),
        ("2025-05-29t14:00:00.1234567+02:00", "2025-05-29T12:00:00.123456+00:00"),
        ("2025-05-29 14:00:00z", "2025-05-29T14:00:00+00:00"),
        ("2025-05-29T14:00:00.1234560Z", "2025-05-29T14:00:00.123456+00:00"),
    ],
)
def test_rfc3339_times_with_leap_seconds_and_long_fractions_are_read(
    text: str, moment: str
) -> None:
    assert parse_time(text, "to", end_of_day=True).isoformat() == moment


def test_a_lower_bound_beyond_microseconds_rounds_up_to_the_next_microsecond() -> None:
    # A recorded time at .123456 is before .1234567, so "from .1234567" must not take it in.
    moment = parse_time("2025-05-29T14:00:00.1234567Z", "from", end_of_day=False)
    assert moment.isoformat() == "2025-05-29T14:00:00.123457+00:00"
    exact = parse_time("2025-05-29T14:00:00.1234560Z", "from", end_of_day=False)
    assert exact.isoformat() == "2025-05-29T14:00:00.123456+00:00"


def test_a_leap_second_is_only_the_last_second_of_a_utc_day() -> None:
    for text in ("2025-03-02T04:29:60Z", "2016-12-31T23:59:60+01:00"):
        with pytest.raises(InvalidQuery, match="is not a real time of a calendar day"):
            parse_time(text, "to", end_of_day=True)


@pytest.mark.parametrize("text", ["2025-05-29T14:00:00+01:60", "2025-05-29T14:00:00-00:99"])
def test_an_offset_of_60_minutes_or_more_is_refused(text: str) -> None:
    # given an offset whose minutes are past 59 (fromisoformat reads "+01:60" as +02:00)
    # when it bounds a range, then it is refused as no real time, not read as another offset
    for end_of_day in (True, False):
        with pytest.raises(InvalidQuery, match="is not a real time of a calendar day"):
            parse_time(text, "to", end_of_day=end_of_day)


def test_a_leap_second_as_a_lower_bound_is_after_its_day_s_last_microsecond() -> None:
    moment = parse_time("2016-12-31T23:59:60Z", "from", end_of_day=False)
    assert moment.isoformat() == "2017-01-01T00:00:00+00:00"


def test_a_lower_bound_after_the_last_microsecond_says_so() -> None:
    with pytest.raises(InvalidQuery, match="after the last time that can be recorded"):
        parse_time("9999-12-31T23:59:59.9999999Z", "from", end_of_day=False)


@pytest.fixture(params=["seeded_log", "seeded_postgres_log"])
def seeded_either(request: pytest.FixtureRequest) -> EventLog:
    log: EventLog = request.getfixturevalue(request.param)
    return log


async def test_claim_filters_answer_the_same_however_the_events_are_found(
    seeded_either: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many matching claims are found by reading events in log order, few through the claims'
    index (see Queries._scan_for_claims): both ways give the same pages."""
    log = seeded_either
    queries = await current(log)
    asked = [
        {"status": "reported"},
        {"status": "disputed", "limit": 1},
        {"attribution": "anonymous", "after": 10, "limit": 2},
        {"attribution": "outlet", "status": "reported", "type": "claim.reported"},
        {"status": "reported", "recorded_to": "2999-01-01"},
    ]
    by_index = [await queries.audit(**filters) for filters in asked]
    monkeypatch.setattr(queries_module, "_SCAN_FROM_CLAIMS", 1)
    assert await queries._scan_for_claims("reported", None)
    by_scan = [await queries.audit(**filters) for filters in asked]
    assert by_scan == by_index
    assert all(answer["events"] for answer in by_index)


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        (
            {"source": "fox"},
            "unknown source 'fox'; did you mean fox-ice-shakeup-2025-05 (Fox News)?",
        ),
        ({"source": "nowhere"}, "unknown source 'nowhere'"),
        # a letter dropped, doubled or wrong
        (
            {"source": "fox-ice-shakup-2025-05"},
            "unknown source 'fox-ice-shakup-2025-05'; did you mean fox-ice-shakeup-2025-05 "
            "(Fox News)?",
        ),
        (
            {"source": "fox-ice-shakeup-2025-5"},
            "unknown source 'fox-ice-shakeup-2025-5'; did you mean fox-ice-shakeup-2025-05 "
            "(Fox News)?",
        ),
        (
            {"publisher": "Fox  News"},
            "no source has the publisher 'Fox  News' (publishers are matched exactly); "
            "did you mean Fox News (1 source)?",
        ),
        (
            {"publisher": "Fox Newz"},
            "no source has the publisher 'Fox Newz' (publishers are matched exactly); "
            "did you mean Fox News (1 source)?",
        ),
        (
            {"publisher": "fox news"},
            "no source has the publisher 'fox news' (publishers are matched exactly); "
            "did you mean Fox News (1 source)?",
        ),
        (
            {"publisher": "Fox", "type": "claim.reported"},
            "no source has the publisher 'Fox' (publishers are matched exactly); "
            "did you mean Fox News (1 source)?",
        ),
        (
            {"publisher": "50%_"},
            "no source has the publisher '50%_' (publishers are matched exactly)",
        ),
    ],
)
async def test_an_unknown_source_or_publisher_is_an_error_not_an_empty_answer(
    seeded_either: EventLog, filters: dict[str, str], message: str
) -> None:
    queries = await current(seeded_either)
    with pytest.raises(UnknownEntity) as caught:
        await queries.audit(**filters)  # type: ignore[arg-type]
    assert str(caught.value) == message


async def test_suggestions_fold_the_case_of_every_script_on_either_database(
    seeded_either: EventLog,
) -> None:
    # given a source whose publisher is written with accented capitals
    await append(
        seeded_either,
        [
            record(
                "source.registered",
                source="editions-unicode-1",
                url="https://example.org/1",
                publisher="Éditions Ünïcode",
                title="Über alles",
            )
        ],
    )
    queries = await current(seeded_either)
    # when it is asked for in other cases, then it is suggested all the same
    with pytest.raises(UnknownEntity) as publisher:
        await queries.audit(publisher="ÉDITIONS")
    assert publisher.value.suggestions == ("Éditions Ünïcode",)
    with pytest.raises(UnknownEntity) as source:
        await queries.audit(source="ünïcode")
    assert source.value.suggestions == ("editions-unicode-1",)
    with pytest.raises(UnknownEntity) as title:
        await queries.audit(source="ÜBER")
    assert title.value.suggestions == ("editions-unicode-1",)


async def test_a_known_source_or_publisher_with_no_matching_events_is_an_empty_answer(
    seeded_log: EventLog,
) -> None:
    queries = await current(seeded_log)
    answer = await queries.audit(source=FOX, type="claim.retracted")
    assert answer["events"] == []
    assert (await queries.audit(publisher="Fox News", actor="seed", type="claim.retracted"))[
        "events"
    ] == []


async def test_an_actor_that_appended_nothing_is_an_error_naming_those_that_did(
    seeded_log: EventLog,
) -> None:
    queries = await current(seeded_log)
    # An import is recorded as "cli" unless told otherwise: "seed" was someone's guess.
    with pytest.raises(UnknownEntity, match=r"^no event was appended by the actor 'sed' "):
        await queries.audit(actor="sed")
    # one near none of them is answered with the actors there are
    with pytest.raises(UnknownEntity, match=r"; the actors are seed \(29 events\)$"):
        await queries.audit(actor="nobody")


@pytest.mark.parametrize("publisher", ["Fox\tNews", "Fox\r\nNews"])
async def test_a_publisher_whose_name_holds_a_tab_or_line_break_can_be_filtered_on(
    seeded_log: EventLog, publisher: str
) -> None:
    # given a source whose publisher's name holds a tab or a line break (names may)
    await append(
        seeded_log,
        [
            record(
                "source.registered", source="s-tab", url="https://t.example/", publisher=publisher
            )
        ],
    )
    queries = await current(seeded_log)
    # then that exact name filters the audit, as the suggestion for a near miss says
    with pytest.raises(UnknownEntity, match="did you mean"):
        await queries.audit(publisher="Fox")
    answer = await queries.audit(publisher=publisher)
    assert [event["stream"] for event in answer["events"]] == ["source-s-tab"]
    # while the characters no name may hold are still refused
    with pytest.raises(InvalidQuery, match="contains a control character"):
        await queries.audit(publisher="Fox\x0bNews")


async def test_an_actor_an_earlier_version_stored_with_a_line_break_can_be_filtered_on(
    seeded_log: EventLog,
) -> None:
    # given an event stored (by an earlier version) under an actor holding a line break
    registered = NewEvent(
        event_id=new_event_id(),
        stream="person-x1",
        type="person.registered",
        schema_version=1,
        data={"person": "x1", "name": "X"},
    )
    await seeded_log.store.append([registered], actor="desk\nx")
    queries = await current(seeded_log)
    # then the audit finds it by that actor
    answer = await queries.audit(actor="desk\nx")
    assert [event["stream"] for event in answer["events"]] == ["person-x1"]


async def test_a_mistyped_source_id_is_answered_closest_first(seeded_log: EventLog) -> None:
    # given two sources whose ids differ in their last character
    await append(seeded_log, [published_source("fox-ice-shakeup-2025-06", "2025-06-01")])
    queries = await current(seeded_log)
    # when one is asked for with a letter left out
    with pytest.raises(UnknownEntity) as caught:
        await queries.audit(source="fox-ice-shakup-2025-06")
    # then the one most like it comes first, not the first in alphabetical order
    assert str(caught.value) == (
        "unknown source 'fox-ice-shakup-2025-06'; did you mean fox-ice-shakeup-2025-06 (E) or "
        f"{FOX} (Fox News)?"
    )


def test_a_leap_second_whose_utc_moment_is_before_year_1_is_no_real_time() -> None:
    # given a leap second an hour ahead of UTC on the first day there is
    # (its UTC moment would fall in year 0, which datetime cannot hold)
    # when it is read as a bound, then it is refused as no real time, not an OverflowError
    with pytest.raises(InvalidQuery, match="is not a real time of a calendar day"):
        parse_time("0001-01-01T00:59:60+01:00", "from", end_of_day=False)
