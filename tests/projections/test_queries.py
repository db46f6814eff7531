"""Queries over real projections: the seed article's state, both time axes, history, claims."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest

from leaderlog.errors import ProjectionError, RecordedAtRefused
from leaderlog.events import PersonRegistered, new_event_id
from leaderlog.log import EventLog
from leaderlog.projections import InvalidQuery, Queries, UnknownEntity
from leaderlog.projections import queries as queries_module
from leaderlog.projections._words import search_form
from leaderlog.store import NewEvent
from tests.projections.logs import (
    FOX,
    GENALO_RETIREMENT,
    GORDON_ACTING,
    HAMMER_BODY,
    HAMMER_CAPTION,
    HAMMER_REASSIGNMENT,
    SEED_COUNT,
    append,
    at,
    current,
    record,
    seed_records,
)


def _posts(state: dict[str, Any]) -> dict[str, Any]:
    return {post["post"]["post"]: post for post in state["posts"]}


async def test_golden_state_of_the_seed_article(seeded_log: EventLog) -> None:
    # given the seed article, when asked for ICE's leadership in June 2025
    queries = await current(seeded_log)
    state = await queries.state(org="ice", as_of="2025-06-15")
    # then ICE's subtree is shown, as known at the head of the log
    assert state["known_at"]["position"] == SEED_COUNT
    assert state["org"]["org"] == "ice"
    posts = _posts(state)
    assert sorted(posts) == ["ice-ero-ead", "ice-hsi-dsac", "ice-hsi-ead"]

    # ERO's executive associate director: Genalo (acting), his retirement pending
    ero = posts["ice-ero-ead"]
    assert [(h["person"], h["name"], h["capacity"]) for h in ero["holders"]] == [
        ("kenneth-genalo", "Kenneth Genalo", "acting")
    ]
    assert ero["vacancy"] == "acting"
    assert [(p["claim"], p["kind"], p["cause"], p["modality"]) for p in ero["pending"]] == [
        (GENALO_RETIREMENT, "departure", "retirement", "expected")
    ]
    assert ero["conflicts"] == []

    # HSI's head: Hammer, his reassignment pending and Gordon's acting appointment expected
    hsi = posts["ice-hsi-ead"]
    assert [(h["person"], h["status"]) for h in hsi["holders"]] == [("robert-hammer", "disputed")]
    assert sorted(hsi["holders"][0]["claims"]) == [HAMMER_BODY, HAMMER_CAPTION]
    assert hsi["vacancy"] == "filled"
    pending = {(p["claim"], p["person"], p["capacity"]) for p in hsi["pending"]}
    assert pending == {
        (HAMMER_REASSIGNMENT, "robert-hammer", "unspecified"),
        (GORDON_ACTING, "derek-gordon", "acting"),
    }
    assert all(p["attribution"]["kind"] == "anonymous" for p in hsi["pending"])
    # and the acting / not-acting disagreement about Hammer is a conflict
    assert hsi["conflicts"] == [
        {
            "kind": "disputed",
            "claims": [HAMMER_CAPTION, HAMMER_BODY],
            "persons": ["robert-hammer"],
            "reason": hsi["conflicts"][0]["reason"],
        }
    ]
    assert "acting" in hsi["conflicts"][0]["reason"]


async def test_a_large_state_is_worked_out_off_the_event_loop_with_the_same_answer(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a state answered on the event loop's thread
    queries = await current(seeded_log)
    on_the_loop = [await queries.state(), await queries.state(org="ice", as_of="2025-06-15")]
    folded_on: set[int] = set()
    fold_post = queries_module.post_state

    def post_state(*arguments: Any) -> Any:
        folded_on.add(threading.get_ident())
        return fold_post(*arguments)

    monkeypatch.setattr(queries_module, "post_state", post_state)
    # when the same questions ask about more claim versions than the loop should fold
    monkeypatch.setattr(queries_module, "_OFF_LOOP_VERSIONS", 0)
    off_the_loop = [await queries.state(), await queries.state(org="ice", as_of="2025-06-15")]
    # then a worker thread folded them, to the same answers
    assert folded_on and threading.get_ident() not in folded_on
    assert off_the_loop == on_the_loop


async def test_a_claim_id_that_is_not_text_is_an_invalid_query(seeded_log: EventLog) -> None:
    queries = await current(seeded_log)
    with pytest.raises(InvalidQuery, match="claim must be text, got None") as caught:
        await queries.claim(None)  # type: ignore[arg-type]
    assert caught.value.parameter == "claim"


async def test_an_as_of_time_with_an_offset_stands_for_its_day_in_utc(
    seeded_log: EventLog,
) -> None:
    queries = await current(seeded_log)
    late_evening_in_new_york = dt.datetime(
        2025, 6, 1, 23, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5))
    )
    assert (await queries.situation(late_evening_in_new_york))["as_of"] == "2025-06-02"
    # a naive one, or a date, is its own day
    assert (await queries.situation(dt.datetime(2025, 6, 1, 23, 0)))["as_of"] == "2025-06-01"
    assert (await queries.situation(dt.date(2025, 6, 1)))["as_of"] == "2025-06-01"


async def test_an_unknown_id_says_when_the_projections_have_not_applied_the_whole_log(
    seeded_log: EventLog,
) -> None:
    # given projections caught up with the seeds, then a person and a claim appended
    queries = await current(seeded_log)
    await seeded_log.append_events(
        [PersonRegistered(person="new-person", name="New Person")], actor="desk"
    )
    # when they are asked about before the projections apply them
    lagging = [
        queries.history(person="new-person"),
        queries.claim("new-claim"),
        queries.audit(actor="desk"),
    ]
    for query in lagging:
        with pytest.raises(UnknownEntity) as caught:
            await query
        # then the error says the answers are behind the log, and how to bring them up
        assert f"applied the log up to position {SEED_COUNT} of {SEED_COUNT + 1}" in str(
            caught.value
        )
        assert "ProjectionRunner.catch_up()" in str(caught.value)
    # and once they are caught up, an id that is not there is only unknown
    queries = await current(seeded_log)
    with pytest.raises(UnknownEntity) as caught:
        await queries.history(person="nobody-at-all")
    assert str(caught.value) == "unknown person 'nobody-at-all'"


async def test_the_seed_claims_count_from_the_end_of_the_published_month(
    seeded_log: EventLog,
) -> None:
    queries = await current(seeded_log)
    before = _posts(await queries.state(org="ice-ero", as_of="2025-05-30"))["ice-ero-ead"]
    after = _posts(await queries.state(org="ice-ero", as_of="2025-05-31"))["ice-ero-ead"]
    assert (before["holders"], before["vacancy"], before["pending"]) == ([], "unknown", [])
    assert after["holders"][0]["since"] == {
        "date": "2025-05",
        "qualifier": "about",
        "text": None,
        "basis": "published",
        "source": "fox-ice-shakeup-2025-05",
    }


async def test_known_at_a_position_shows_what_the_log_held_then(seeded_log: EventLog) -> None:
    queries = await current(seeded_log)
    # position 22: both Hammer incumbencies are known, the dispute (23) is not
    hsi = _posts(await queries.state(org="ice-hsi", as_of="2025-06-15", known_at=22))
    hammer = hsi["ice-hsi-ead"]
    assert [(h["person"], h["capacity"], h["status"]) for h in hammer["holders"]] == [
        ("robert-hammer", "acting", "reported")
    ]
    assert hammer["conflicts"] == []
    assert [p["claim"] for p in hammer["pending"]] == [HAMMER_REASSIGNMENT]
    # the DSAC post's only claim comes later (position 25)
    assert hsi["ice-hsi-dsac"]["vacancy"] == "unknown"
    # at 23 the dispute is known
    hammer = _posts(await queries.state(org="ice-hsi", as_of="2025-06-15", known_at="23"))
    assert hammer["ice-hsi-ead"]["holders"][0]["capacity"] == "unspecified"
    assert hammer["ice-hsi-ead"]["conflicts"][0]["kind"] == "disputed"


async def test_known_at_a_position_appended_but_not_yet_projected_says_so(
    seeded_log: EventLog,
) -> None:
    queries = await current(seeded_log)
    (position,) = await append(
        seeded_log, [record("person.updated", person="derek-gordon", name="D. Gordon")]
    )
    with pytest.raises(ProjectionError, match="not projected yet") as raised:
        await queries.state(known_at=position)
    assert not isinstance(raised.value, InvalidQuery)
    with pytest.raises(InvalidQuery, match=rf"beyond the log's head \({position}\)"):
        await queries.state(known_at=position + 1)
    # and so is a time at or after it was recorded, while one before it is answered
    (appended,) = await seeded_log.store.read_all(after=position - 1, limit=1)
    recorded = appended.recorded_at
    for moment in (recorded, recorded + dt.timedelta(days=1)):
        with pytest.raises(ProjectionError, match=f"takes in position {position}, which is"):
            await queries.state(known_at=moment.isoformat())
    earlier = await queries.state(known_at=(recorded - dt.timedelta(microseconds=1)).isoformat())
    assert earlier["known_at"]["position"] == position - 1


async def test_known_at_position_zero_knows_nothing(seeded_log: EventLog) -> None:
    queries = await current(seeded_log)
    state = await queries.state(known_at=0)
    assert state["posts"] == []
    assert state["known_at"] == {"position": 0, "recorded_through": None}


async def test_situation_is_the_header_of_every_state(seeded_log: EventLog) -> None:
    queries = await current(seeded_log)
    state = await queries.state(as_of="2025-06-15", known_at=22)
    situation = await queries.situation(as_of="2025-06-15", known_at=22)
    assert situation == {"as_of": "2025-06-15", "known_at": state["known_at"]}
    assert situation["known_at"]["position"] == 22
    today = await queries.situation()
    assert today["as_of"] == (await queries.state())["as_of"]
    assert today["known_at"]["position"] == SEED_COUNT
    with pytest.raises(InvalidQuery):
        await queries.situation(as_of="2025-02-30")


async def test_known_at_a_time_uses_the_last_position_recorded_by_then(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        # given the seeds recorded on 29 May and a confirmation of Gordon on 10 June
        await append(log, seed_records(), recorded_at=at("2025-05-29T12:00:00Z"), actor="seed")
        await append(
            log,
            [
                record(
                    "source.registered",
                    source="ice-release",
                    url="https://www.ice.gov/news/release",
                    publisher="ICE",
                    published={"date": "2025-06-10"},
                ),
                record(
                    "claim.confirmed",
                    claim=GORDON_ACTING,
                    source="ice-release",
                    effective={"date": "2025-06-09"},
                ),
            ],
            recorded_at=at("2025-06-10T09:00:00Z"),
        )
        # and an import carrying an older time is refused: recorded times never go backwards
        with pytest.raises(RecordedAtRefused, match="before the log's last event"):
            await append(
                log,
                [record("person.registered", person="late", name="Late Import")],
                recorded_at=at("2025-05-01T00:00:00Z"),
            )
        queries = await current(log)

        # when asked as known on 1 June, then only the seeds count
        june_1 = await queries.state(
            org="ice-hsi", as_of="2025-06-15", known_at="2025-06-01T00:00:00Z"
        )
        assert june_1["known_at"] == {
            "position": SEED_COUNT,
            "recorded_through": "2025-05-29T12:00:00.000000Z",
        }
        holders = _posts(june_1)["ice-hsi-ead"]["holders"]
        assert [h["person"] for h in holders] == ["robert-hammer"]

        # when asked as known on 10 June, then Gordon's appointment is in effect
        june_10 = await queries.state(
            org="ice-hsi", as_of="2025-06-15", known_at="2025-06-10T09:00:00Z"
        )
        assert june_10["known_at"]["position"] == SEED_COUNT + 2
        holders = _posts(june_10)["ice-hsi-ead"]["holders"]
        assert sorted(h["person"] for h in holders) == ["derek-gordon", "robert-hammer"]
        gordon = next(h for h in holders if h["person"] == "derek-gordon")
        assert (gordon["capacity"], gordon["status"], gordon["since"]["date"]) == (
            "acting",
            "confirmed",
            "2025-06-09",
        )
        # a time before anything was recorded knows nothing; an offset is honoured
        assert (await queries.state(known_at="2025-01-01T00:00:00Z"))["posts"] == []
        late = await queries.resolve_known_at("2025-06-10T11:00:00+02:00")
        assert late["position"] == SEED_COUNT + 2


async def test_history_of_a_post_a_person_and_an_org_subtree(seeded_log: EventLog) -> None:
    # given the seeds and, later, Hammer's reassignment confirmed for 2025-06-02
    await append(
        seeded_log,
        [
            record(
                "claim.confirmed",
                claim=HAMMER_REASSIGNMENT,
                source=FOX,
                effective={"date": "2025-06-02"},
            )
        ],
    )
    queries = await current(seeded_log)

    post = await queries.history(post="ice-hsi-ead")
    assert post["subject"]["post"]["post"] == "ice-hsi-ead"
    (tenure,) = post["tenures"]
    assert (tenure["person"], tenure["name"], tenure["start"]["date"], tenure["end"]["date"]) == (
        "robert-hammer",
        "Robert Hammer",
        "2025-05",
        "2025-06-02",
    )
    assert (tenure["cause"], tenure["ended_by"]) == ("reassignment", HAMMER_REASSIGNMENT)
    assert {e["claim"] for e in tenure["evidence"]} == {
        HAMMER_BODY,
        HAMMER_CAPTION,
        HAMMER_REASSIGNMENT,
    }
    assert [p["claim"] for p in post["pending"]] == [GORDON_ACTING]
    assert post["sources"][FOX]["publisher"] == "Fox News"

    person = await queries.history(person="derek-gordon")
    assert [(t["post"], t["post_title"]) for t in person["tenures"]] == [
        ("ice-hsi-dsac", "Deputy Special Agent in Charge")
    ]
    assert [(p["claim"], p["post"]) for p in person["pending"]] == [(GORDON_ACTING, "ice-hsi-ead")]

    ice = await queries.history(org="ice")
    assert {t["post"] for t in ice["tenures"]} == {"ice-ero-ead", "ice-hsi-ead", "ice-hsi-dsac"}
    dhs = await queries.history(org="dhs")
    assert {t["post"] for t in dhs["tenures"]} == {
        "dhs-secretary",
        "ice-ero-ead",
        "ice-hsi-ead",
        "ice-hsi-dsac",
    }
    # the history as known before the confirmation shows the tenure still open
    earlier = await queries.history(post="ice-hsi-ead", known_at=SEED_COUNT)
    assert earlier["tenures"][0]["end"] is None


async def test_claim_lifecycle_with_every_source(seeded_log: EventLog) -> None:
    await append(
        seeded_log,
        [
            record(
                "source.registered",
                source="follow-up",
                url="https://example.com/follow-up",
                publisher="Example Wire",
            ),
            record(
                "claim.corrected",
                claim=HAMMER_CAPTION,
                changes={"capacity": "unspecified"},
                reason="The caption was fixed.",
                source="follow-up",
            ),
            record("claim.retracted", claim=HAMMER_CAPTION, reason="Duplicate of the body text."),
        ],
    )
    queries = await current(seeded_log)
    answer = await queries.claim(HAMMER_CAPTION)
    assert answer["status"] == "retracted"
    assert [(s["position"], s["type"], s["status"]) for s in answer["lifecycle"]] == [
        (22, "claim.reported", "reported"),
        (23, "claim.disputed", "disputed"),
        (31, "claim.corrected", "corrected"),
        (32, "claim.retracted", "retracted"),
    ]
    assert answer["lifecycle"][2]["changes"] == {"capacity": "unspecified"}
    assert answer["lifecycle"][3]["reason"] == "Duplicate of the body text."
    assert answer["current"]["capacity"] == "unspecified"
    assert answer["current"]["name"] == "Robert Hammer"
    assert set(answer["sources"]) == {FOX, "follow-up"}
    assert answer["sources"]["follow-up"]["publisher"] == "Example Wire"
    # as known at 22, the claim was only reported
    early = await queries.claim(HAMMER_CAPTION, known_at=22)
    assert (early["status"], len(early["lifecycle"])) == ("reported", 1)
    assert early["current"]["capacity"] == "acting"
    # the retraction removed the claim from the state: Hammer is no longer disputed
    hsi = _posts(await queries.state(org="ice-hsi", as_of="2025-06-15"))["ice-hsi-ead"]
    assert hsi["conflicts"] == []
    assert hsi["holders"][0]["claims"] == [HAMMER_BODY]


async def test_a_claim_lists_the_disputes_of_other_claims_that_name_it_while_they_hold(
    seeded_log: EventLog,
) -> None:
    # given the seeds, where the caption's claim (reported at 22) is disputed at 23 naming
    # the body's claim
    queries = await current(seeded_log)
    # then the body's claim lists that dispute, with its source and reason
    (dispute,) = (await queries.claim(HAMMER_BODY))["disputed_by"]
    assert (dispute["claim"], dispute["position"], dispute["source"]) == (HAMMER_CAPTION, 23, FOX)
    assert dispute["reason"].startswith("The photo caption")
    assert FOX in (await queries.claim(HAMMER_BODY))["sources"]
    # as known before the dispute, there was none; the disputing claim lists none of its own
    assert (await queries.claim(HAMMER_BODY, known_at=22))["disputed_by"] == []
    assert (await queries.claim(HAMMER_CAPTION))["disputed_by"] == []
    # when the caption's claim is confirmed, its dispute no longer holds
    await append(seeded_log, [record("claim.confirmed", claim=HAMMER_CAPTION, source=FOX)])
    queries = await current(seeded_log)
    assert (await queries.claim(HAMMER_BODY))["disputed_by"] == []
    # ... but as known before the confirmation, it still did
    (earlier,) = (await queries.claim(HAMMER_BODY, known_at=23))["disputed_by"]
    assert earlier["claim"] == HAMMER_CAPTION


async def test_an_org_move_moves_its_subtree(seeded_log: EventLog) -> None:
    await append(
        seeded_log,
        [
            record("org.registered", org="oversight", name="Oversight Board"),
            record("org.updated", org="ice", parent="oversight"),
        ],
    )
    queries = await current(seeded_log)
    moved = await queries.state(org="oversight", as_of="2025-06-15")
    assert {p["post"]["post"] for p in moved["posts"]} == {
        "ice-ero-ead",
        "ice-hsi-ead",
        "ice-hsi-dsac",
    }
    left = await queries.state(org="dhs", as_of="2025-06-15")
    assert [p["post"]["post"] for p in left["posts"]] == ["dhs-secretary"]
    assert (await queries.state(org="ice-hsi"))["org"]["parent"] == "ice"


async def test_known_at_before_a_move_and_a_rename_shows_the_tree_and_names_of_then(
    seeded_log: EventLog,
) -> None:
    # given ICE moved under a new board, and Hammer and his post renamed, after the seeds
    await append(
        seeded_log,
        [
            record("org.registered", org="oversight", name="Oversight Board"),
            record("org.updated", org="ice", parent="oversight", name="ICE, renamed"),
            record("person.updated", person="robert-hammer", name="R. Hammer"),
            record("post.updated", post="ice-hsi-ead", title="HSI Director"),
        ],
    )
    queries = await current(seeded_log)
    # when asked as known at the end of the seeds
    before = await queries.state(org="dhs", as_of="2025-06-15", known_at=SEED_COUNT)
    # then ICE's posts are still DHS's, under the names known then
    posts = _posts(before)
    assert {"ice-ero-ead", "ice-hsi-ead", "ice-hsi-dsac"} <= set(posts)
    hsi = posts["ice-hsi-ead"]
    assert hsi["post"]["title"] == "Executive Associate Director, Homeland Security Investigations"
    assert hsi["holders"][0]["name"] == "Robert Hammer"
    assert (await queries.state(org="ice", known_at=SEED_COUNT))["org"]["parent"] == "dhs"
    ice_then = await queries.state(org="ice", known_at=SEED_COUNT)
    assert ice_then["org"]["name"] == "Immigration and Customs Enforcement"
    with pytest.raises(UnknownEntity, match="not known at position"):
        await queries.state(org="oversight", known_at=SEED_COUNT)
    history = await queries.history(org="dhs", known_at=SEED_COUNT)
    assert "ice-hsi-ead" in {tenure["post"] for tenure in history["tenures"]}
    claim = await queries.claim(HAMMER_BODY, known_at=SEED_COUNT)
    assert claim["current"]["name"] == "Robert Hammer"
    # and as known now, the move and the new names
    now = await queries.state(org="oversight", as_of="2025-06-15")
    assert _posts(now)["ice-hsi-ead"]["post"]["title"] == "HSI Director"
    assert _posts(now)["ice-hsi-ead"]["holders"][0]["name"] == "R. Hammer"
    assert (await queries.state(org="ice"))["org"]["name"] == "ICE, renamed"
    assert "ice-hsi-ead" not in _posts(await queries.state(org="dhs", as_of="2025-06-15"))
    assert (await queries.claim(HAMMER_BODY))["current"]["name"] == "R. Hammer"


async def test_an_older_log_s_correction_clearing_a_required_field_changes_nothing(
    seeded_log: EventLog,
) -> None:
    # given a correction that clears the person, as versions before the rule accepted it
    # (written straight to the store, past today's rules)
    cleared = NewEvent(
        event_id=new_event_id(),
        stream=f"claim-{GORDON_ACTING}",
        type="claim.corrected",
        schema_version=1,
        data={"claim": GORDON_ACTING, "changes": {"person": None}, "reason": "old rules"},
    )
    await seeded_log.store.append([cleared], actor="test")
    queries = await current(seeded_log)
    # then the claim keeps its person everywhere, rather than reading "None"
    assert (await queries.claim(GORDON_ACTING))["current"]["person"] == "derek-gordon"
    hsi = _posts(await queries.state(org="ice-hsi", as_of="2025-07-01"))["ice-hsi-ead"]
    assert "derek-gordon" in [item["person"] for item in hsi["pending"]]
    assert "'None'" not in repr(hsi)  # the text, not a missing value


async def test_history_lists_tenures_by_the_day_they_count_from(seeded_log: EventLog) -> None:
    # given a tenure dated "after 2025-06" (counts from 1 July) and one from 15 June
    dated = {"late": {"date": "2025-06", "qualifier": "after"}, "early": {"date": "2025-06-15"}}
    records = []
    for name, effective in dated.items():
        records.append(record("post.defined", post=f"ice-{name}", org="ice", title=name))
        records.append(
            record(
                "claim.reported",
                **{"claim": name, "source": FOX, "kind": "appointment"},
                **{"person": "derek-gordon", "post": f"ice-{name}", "capacity": "acting"},
                **{"modality": "occurred", "effective": effective},
                attribution={"kind": "outlet"},
            )
        )
    await append(seeded_log, records)
    queries = await current(seeded_log)
    tenures = (await queries.history(person="derek-gordon"))["tenures"]
    assert [tenure["post"] for tenure in tenures][-2:] == ["ice-early", "ice-late"]


def _claim(name: str, source: str, kind: str, person: str, post: str, **more: Any) -> Any:
    return record(
        "claim.reported",
        **{"claim": name, "source": source, "kind": kind, "person": person, "post": post},
        **{"capacity": "unspecified", "modality": "occurred", **more},
        attribution={"kind": "outlet"},
    )


def _small_log(published: str = "2025-01-15") -> list[dict[str, Any]]:
    """Organisation a with posts p and q, people x and y, and source s."""
    return [
        record("org.registered", org="a", name="A"),
        record("post.defined", post="p", org="a", title="P"),
        record("post.defined", post="q", org="a", title="Q"),
        record("person.registered", person="x", name="X"),
        record("person.registered", person="y", name="Y"),
        record(
            "source.registered",
            source="s",
            url="https://e.org/s",
            publisher="S",
            published={"date": published},
        ),
    ]


async def test_history_orders_a_vaguely_published_tenure_by_the_day_the_log_knew_it(
    sqlite_url: str,
) -> None:
    # given an undated incumbency from a source published "2025", recorded on 10 March (so
    # it counts from then at the latest), and an appointment of someone else from 1 June
    records = [
        *_small_log(published="2025"),
        _claim("cx", "s", "incumbency", "x", "p"),
        _claim("cy", "s", "appointment", "y", "p", effective={"date": "2025-06-01"}),
    ]
    async with await EventLog.open(sqlite_url) as log:
        await append(log, records, recorded_at=at("2025-03-10T00:00:00Z"))
        queries = await current(log)
        state = await queries.state(org="a", as_of="2025-03-10")
        history = await queries.history(post="p")
    # then x, who held the post from 10 March, comes before y
    assert [holder["person"] for holder in _posts(state)["p"]["holders"]] == ["x"]
    assert [tenure["person"] for tenure in history["tenures"]] == ["x", "y"]


async def test_a_dispute_with_a_claim_on_another_post_names_its_person_until_it_is_retracted(
    sqlite_url: str,
) -> None:
    # given x reported at p, y at q, and the claim about x disputed by the one about y
    records = [
        *_small_log(),
        _claim("cp", "s", "incumbency", "x", "p", effective={"date": "2025-01-01"}),
        _claim("cq", "s", "incumbency", "y", "q", effective={"date": "2025-01-01"}),
        record("claim.disputed", claim="cp", reason="r", conflicts_with=["cq"]),
    ]
    async with await EventLog.open(sqlite_url) as log:
        await append(log, records)
        queries = await current(log)
        (conflict,) = _posts(await queries.state(org="a", as_of="2025-06-01"))["p"]["conflicts"]
        # then the conflict names both people
        assert (conflict["claims"], conflict["persons"]) == (["cp", "cq"], ["x", "y"])
        # when the other claim is retracted, then it is no longer a side of the conflict
        await append(log, [record("claim.retracted", claim="cq", reason="wrong")])
        queries = await current(log)
        for asked in ({"org": "a"}, {}):
            state = await queries.state(as_of="2025-06-01", **asked)
            (conflict,) = _posts(state)["p"]["conflicts"]
            assert (conflict["claims"], conflict["persons"]) == (["cp"], ["x"]), asked


def _linked_across_posts() -> list[dict[str, Any]]:
    """x at p (org a), y at q (org a) and z at r, in org b outside a; the claim about y
    disputed by the one about z (naming it), then the one about x by the one about y."""
    return [
        *_small_log(),
        record("org.registered", org="b", name="B"),
        record("post.defined", post="r", org="b", title="R"),
        record("person.registered", person="z", name="Z"),
        _claim("cp", "s", "incumbency", "x", "p", effective={"date": "2025-01-01"}),
        _claim("cq", "s", "incumbency", "y", "q", effective={"date": "2025-01-01"}),
        _claim("cr", "s", "incumbency", "z", "r", effective={"date": "2025-01-01"}),
        record("claim.disputed", claim="cr", reason="older", conflicts_with=["cq"]),
        record("claim.disputed", claim="cq", reason="newest", conflicts_with=["cp"]),
    ]


async def test_claims_linked_by_disputes_across_posts_are_one_conflict_on_every_post(
    sqlite_url: str,
) -> None:
    # given x at p (org a), y at q (org a) and z at r, in org b outside a; the claim about y
    # disputed by the one about z (naming it), then the one about x by the one about y
    records = _linked_across_posts()
    async with await EventLog.open(sqlite_url) as log:
        await append(log, records)
        queries = await current(log)
        # then each post, asked for in its organisation or in the whole log, lists the one
        # conflict: every claim and person linked, with the newest dispute's reason
        for asked in ({"org": "a"}, {"org": "b"}, {}):
            posts = _posts(await queries.state(as_of="2025-06-01", **asked))
            for post, state in posts.items():
                (conflict,) = state["conflicts"]
                assert sorted(conflict["claims"]) == ["cp", "cq", "cr"], (asked, post)
                assert sorted(conflict["persons"]) == ["x", "y", "z"], (asked, post)
                assert conflict["reason"] == "newest", (asked, post)
        # and as known before the second dispute, p (which no dispute named yet) lists none
        before = _posts(await queries.state(as_of="2025-06-01", known_at=len(records) - 1))
        assert before["p"]["conflicts"] == []
        assert [c["claims"] for c in before["q"]["conflicts"]] == [["cr", "cq"]]


async def test_a_state_in_parts_reads_each_part_s_claims_alone_to_the_same_answer(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given claims on three posts in two organisations, linked by disputes across them
    records = _linked_across_posts()
    async with await EventLog.open(sqlite_url) as log:
        await append(log, records)
        queries = await current(log)
        whole = [await queries.state(as_of="2025-06-01", **asked) for asked in ({}, {"org": "a"})]
        # when the state is worked out a post at a time
        monkeypatch.setattr(queries_module, "_STATE_PART", 1)
        asked_for: list[list[str]] = []
        read_versions = queries.__class__._versions

        async def versions(self: Queries, by: str, ids: list[str], position: int) -> Any:
            if by == "post":
                asked_for.append(list(ids))
            return await read_versions(self, by, ids, position)

        monkeypatch.setattr(Queries, "_versions", versions)
        in_parts = []
        for asked in ({}, {"org": "a"}):
            header, parts = await queries.state_in_parts(as_of="2025-06-01", **asked)
            in_parts.append((header, [part async for part in parts]))
        # then each part read only its own post's claims, and the parts make up the same
        # answers, the conflict across posts included
        assert asked_for == [["p"], ["q"], ["r"], ["p"], ["q"]]
        assert [[len(part) for part in parts] for _, parts in in_parts] == [[1, 1, 1], [1, 1]]
        assert [
            {**header, "posts": [post for part in parts for post in part]}
            for header, parts in in_parts
        ] == whole
        assert await queries.state(as_of="2025-06-01") == whole[0]


async def test_dates_at_the_end_of_the_calendar_are_answered(seeded_log: EventLog) -> None:
    # given a change dated after the last day a date can name, and a source published then
    # with an undated holder, both accepted on append
    await append(
        seeded_log,
        [
            record(
                "claim.reported",
                claim="far-future",
                source=FOX,
                kind="appointment",
                person="derek-gordon",
                post="ice-hsi-ead",
                capacity="acting",
                modality="occurred",
                attribution={"kind": "outlet", "parties": []},
                effective={"date": "9999-12-31", "qualifier": "after"},
            ),
            record(
                "source.registered",
                source="far-paper",
                url="https://example.com/far",
                publisher="Far",
                published={"date": "9999", "qualifier": "after"},
            ),
            record(
                "claim.reported",
                claim="far-holder",
                source="far-paper",
                kind="incumbency",
                person="kristi-noem",
                post="ice-hsi-ead",
                capacity="permanent",
                modality="occurred",
                attribution={"kind": "outlet", "parties": []},
            ),
        ],
    )
    # when the state and history are asked for, as known now and at that position
    queries = await current(seeded_log)
    state = await queries.state(org="ice", as_of="2025-06-15")
    await queries.state(org="ice", as_of="2025-06-15", known_at=str(SEED_COUNT + 3))
    await queries.history(org="ice")
    # then they answer, and neither far change holds the post in 2025
    holders = [h["person"] for h in _posts(state)["ice-hsi-ead"]["holders"]]
    assert "kristi-noem" not in holders and holders.count("derek-gordon") <= 1


def test_the_marks_of_other_scripts_are_kept_in_the_search_form() -> None:
    # Devanagari vowel signs and kana voicing marks are part of their letters.
    assert search_form("\u0939\u094b\u092e") == "\u0939\u094b\u092e"
    assert search_form("\u30ac") == "\u30ac"  # ガ, not カ
    assert search_form("Mar\u00eda \u00c5NGSTR\u00d6M") == "maria angstrom"


async def test_a_name_typed_decomposed_still_finds_the_composed_one(seeded_log: EventLog) -> None:
    await append(
        seeded_log, [record("person.registered", person="zoe-baird", name="Zo\u00eb Baird")]
    )
    queries = await current(seeded_log)
    with pytest.raises(UnknownEntity) as raised:
        await queries.history(person="Zoe\u0308 Baird")
    assert raised.value.suggestions == ("zoe-baird",)


async def test_names_are_found_ignoring_case_in_every_script_exact_aliases_first(
    seeded_log: EventLog,
) -> None:
    await append(
        seeded_log,
        [
            record("org.registered", org="mofa", name="Ministerium", short_name="MÖFA"),
            record("person.registered", person="a-smithers", name="Al Smithers"),
            record("person.registered", person="z-alias", name="Zed", aliases=["Al Smith"]),
            record("person.registered", person="zoe", name="Zoe\u0308 \u00c5ngstr\u00f6m"),
            record("person.registered", person="strauss", name="Johann Strau\u00df"),
        ],
    )
    queries = await current(seeded_log)
    for ask, kind, meant in [
        (lambda: queries.state(org="möfa"), "organisation", ("mofa",)),
        (lambda: queries.history(person="\u00e5ngstr\u00f6m"), "person", ("zoe",)),
        (lambda: queries.history(person="ZO\u00cb"), "person", ("zoe",)),
        (lambda: queries.history(person="STRAUSS"), "person", ("strauss",)),
        (lambda: queries.history(person="al smith"), "person", ("z-alias", "a-smithers")),
        # accents of the Latin, Greek and Cyrillic alphabets, however (or whether) typed
        (lambda: queries.history(person="angstrom"), "person", ("zoe",)),
        (lambda: queries.history(person="Zoe Angstrom"), "person", ("zoe",)),
    ]:
        with pytest.raises(UnknownEntity, match=f"unknown {kind}") as raised:
            await ask()
        assert raised.value.suggestions == meant


async def test_a_state_of_more_posts_than_allowed_is_refused_before_reading_claims(
    seeded_log: EventLog,
) -> None:
    queries = await current(seeded_log)
    whole = await queries.state(as_of="2025-06-15")
    assert len(whole["posts"]) > 2
    with pytest.raises(InvalidQuery, match="posts are known in the log; at most 2 are answered"):
        await queries.state(as_of="2025-06-15", max_posts=2)
    one = await queries.state(org="ice-hsi", as_of="2025-06-15", max_posts=2)
    assert [answer["post"]["post"] for answer in one["posts"]] == ["ice-hsi-dsac", "ice-hsi-ead"]


async def test_posts_defined_later_are_not_known_earlier(seeded_log: EventLog) -> None:
    queries = await current(seeded_log)
    state = await queries.state(known_at=6)
    assert [p["post"]["post"] for p in state["posts"]] == ["ice-ero-ead"]


@pytest.mark.parametrize(
    ("call", "message", "suggestions"),
    [
        (
            lambda q: q.state(org="ero"),
            "unknown organisation 'ero'; did you mean ice-ero (ERO, Enforcement and Removal "
            "Operations)?",
            ("ice-ero",),
        ),
        (
            lambda q: q.history(person="Robert J. Hammer"),
            "unknown person 'Robert J. Hammer'; did you mean robert-hammer (Robert Hammer, "
            "Robert J. Hammer)?",
            ("robert-hammer",),
        ),
        (
            lambda q: q.history(post="hsi DIRECTOR"),
            "unknown post 'hsi DIRECTOR'; did you mean ice-hsi-ead (Executive Associate "
            "Director, Homeland Security Investigations, HSI director, HSI executive "
            "associate director)?",
            ("ice-hsi-ead",),
        ),
        (
            lambda q: q.history(org="HSI"),
            "unknown organisation 'HSI'; did you mean ice-hsi (HSI, Homeland Security "
            "Investigations)?",
            ("ice-hsi",),
        ),
        (
            lambda q: q.claim("genalo RETIREMENT"),
            "unknown claim 'genalo RETIREMENT'; did you mean "
            "fox-ice-shakeup-2025-05-genalo-retirement (departure of kenneth-genalo at "
            "ice-ero-ead)?",
            ("fox-ice-shakeup-2025-05-genalo-retirement",),
        ),
        (
            lambda q: q.claim("hammer-hsi"),
            "unknown claim 'hammer-hsi'; did you mean fox-ice-shakeup-2025-05-hammer-hsi-body "
            "(incumbency of robert-hammer at ice-hsi-ead) or "
            "fox-ice-shakeup-2025-05-hammer-hsi-caption (incumbency of robert-hammer at "
            "ice-hsi-ead)?",
            (
                "fox-ice-shakeup-2025-05-hammer-hsi-body",
                "fox-ice-shakeup-2025-05-hammer-hsi-caption",
            ),
        ),
        # claims reported after the known-at position are not suggested
        (lambda q: q.claim("gordon", known_at=17), "unknown claim 'gordon'", ()),
        # LIKE's wildcards are taken literally
        (lambda q: q.history(person="%"), "unknown person '%'", ()),
        (lambda q: q.claim("2025_05%"), "unknown claim '2025_05%'", ()),
        (lambda q: q.state(org="_"), "unknown organisation '_'", ()),
    ],
)
async def test_unknown_ids_suggest_what_was_meant(
    seeded_log: EventLog, call: object, message: str, suggestions: tuple[str, ...]
) -> None:
    queries = await current(seeded_log)
    with pytest.raises(UnknownEntity) as raised:
        await call(queries)  # type: ignore[operator]
    assert str(raised.value) == message
    assert raised.value.suggestions == suggestions


async def test_a_claim_asked_before_it_was_reported_says_when_it_was(
    seeded_log: EventLog,
) -> None:
    queries = await current(seeded_log)
    claim = "fox-ice-shakeup-2025-05-genalo-retirement"
    reported = (await queries.claim(claim))["lifecycle"][0]["position"]
    with pytest.raises(UnknownEntity) as raised:
        await queries.claim(claim, known_at=reported - 1)
    assert str(raised.value) == (
        f"claim '{claim}' is not known at position {reported - 1}: "
        f"it was reported at position {reported}"
    )
    assert raised.value.suggestions == ()
    assert (await queries.claim(claim, known_at=reported))["status"] == "reported"


async def test_exact_names_are_suggested_before_partial_ones(seeded_log: EventLog) -> None:
    # given an organisation whose id sorts before "ice" and whose name only contains "ice"
    await append(seeded_log, [record("org.registered", org="agency-x", name="Office of Ice")])
    queries = await current(seeded_log)
    with pytest.raises(UnknownEntity) as raised:
        await queries.state(org="ICE")
    # then the organisation whose id or short name is "ice" comes first, the others by id
    assert raised.value.suggestions == ("ice", "agency-x", "ice-ero", "ice-hsi")
    assert "; did you mean ice (ICE, Immigration and Customs Enforcement), agency-x" in str(
        raised.value
    )


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda q: q.state(org="nowhere"), UnknownEntity, "unknown organisation 'nowhere'"),
        (lambda q: q.history(post="nowhere"), UnknownEntity, "unknown post 'nowhere'"),
        (lambda q: q.history(person="nobody"), UnknownEntity, "unknown person 'nobody'"),
        (lambda q: q.claim("no-claim"), UnknownEntity, "unknown claim 'no-claim'"),
        (lambda q: q.history(), InvalidQuery, "exactly one"),
        (lambda q: q.history(post="a", org="b"), InvalidQuery, "exactly one"),
        (lambda q: q.state(as_of="2025-02-30"), InvalidQuery, "as-of '2025-02-30' is not a real"),
        (lambda q: q.state(as_of="June"), InvalidQuery, "as-of must be a calendar day"),
        (lambda q: q.state(known_at=10_000), InvalidQuery, "beyond the log's head (29)"),
        (lambda q: q.state(known_at=-1), InvalidQuery, "0 or more"),
        (lambda q: q.state(known_at="+22"), InvalidQuery, "a plain number, such as 22"),
        (lambda q: q.state(known_at="yesterday"), InvalidQuery, "RFC 3339"),
        (lambda q: q.state(known_at="2025-06-01T00:00:00"), InvalidQuery, "UTC offset"),
        (
            lambda q: q.state(org="ice-hsi", known_at=4),
            UnknownEntity,
            "organisation 'ice-hsi' is not known at position 4: it was registered at position 5",
        ),
        (
            lambda q: q.history(person="derek-gordon", known_at=12),
            UnknownEntity,
            "person 'derek-gordon' is not known at position 12: it was registered at position 13",
        ),
        (
            lambda q: q.history(post="ice-hsi-ead", known_at="6"),
            UnknownEntity,
            "post 'ice-hsi-ead' is not known at position 6: it was registered at position 7",
        ),
        (lambda q: q.history(post=" "), InvalidQuery, "post must not be empty"),
        (lambda q: q.state(known_at="\uff15"), InvalidQuery, "RFC 3339"),
        (lambda q: q.state(as_of="\uff12\uff10\uff12\uff15-05-20"), InvalidQuery, "calendar day"),
        (lambda q: q.history(person=""), InvalidQuery, "person must not be empty"),
        (lambda q: q.state(org="ice\x00"), InvalidQuery, "contains a control character"),
        (lambda q: q.claim("\x00"), InvalidQuery, "claim .* contains a control character"),
        (lambda q: q.audit(source=""), InvalidQuery, "source must not be empty"),
        (lambda q: q.claim("x" * 50_010), InvalidQuery, "claim is 50010 characters long"),
        (lambda q: q.claim("x " * 1500), InvalidQuery, "no id is longer than 64"),
        (
            lambda q: q.history(org="a" * 65),
            InvalidQuery,
            "org is 65 characters long; no id is longer than 64",
        ),
        (lambda q: q.audit(publisher="p" * 301), InvalidQuery, "no name is longer than 300"),
        (lambda q: q.audit(actor="a\x0bb"), InvalidQuery, "actor .* contains a control"),
        (lambda q: q.state(org=5), InvalidQuery, "org must be text, got 5"),
        (lambda q: q.claim(5), InvalidQuery, "claim must be text, got 5"),
        (lambda q: q.history(person=["x"]), InvalidQuery, "person must be text, got \\['x'\\]"),
        (lambda q: q.audit(actor=5), InvalidQuery, "actor must be text, got 5"),
        (lambda q: q.state(known_at=5.0), InvalidQuery, "known-at must be a position"),
        (lambda q: q.state(as_of=20250615), InvalidQuery, "as-of must be a calendar day"),
        (lambda q: q.audit(recorded_from=5), InvalidQuery, "from must be an RFC 3339 time"),
        (
            lambda q: q.state(known_at="2025-06-01T14:00:00 02:00"),
            InvalidQuery,
            "must be written %2B: a bare",
        ),
    ],
)
async def test_bad_questions_get_clear_errors(
    seeded_log: EventLog, call: object, error: type[Exception], message: str
) -> None:
    queries = await current(seeded_log)
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        await call(queries)  # type: ignore[operator]


async def test_queries_before_any_projection_explain_what_to_do(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        with pytest.raises(Exception, match="leaderlog rebuild"):
            await Queries(log.store).state()
