"""A tenure known only from its end began some day up to it: a vaguely dated appointment of
its person may be that start, in the state as in the history."""

from __future__ import annotations

from leaderlog.log import EventLog
from tests.projections.logs import append, at, current, record
from tests.projections.story import Story


def test_given_a_vague_appointment_then_a_dated_departure_it_is_no_change_to_come() -> None:
    # given "ann was appointed in 2025" and "ann left on 10 June": the history reads the
    # appointment as the start of the tenure that ended then
    story = (
        Story()
        .report("appointed", effective="2025")
        .report("left", kind="departure", effective="2025-06-10", cause="resignation")
    )
    (tenure,) = story.tenures()
    assert (tenure["start"]["date"], tenure["end"]["date"]) == ("2025", "2025-06-10")
    assert [claim["claim"] for claim in tenure["evidence"]] == ["left", "appointed"]
    # then after she left, the appointment is not a change still to come, as it is not when
    # another report gives the start of that tenure
    state = story.state("2025-07-01")
    assert (state["holders"], state["pending"], state["vacancy"]) == ([], [], "vacant")
    with_start = (
        Story()
        .report("first", effective="2025-01-05")
        .report("appointed", effective="2025")
        .report("left", kind="departure", effective="2025-06-10", cause="resignation")
    )
    assert with_start.pending("2025-07-01") == []


def test_given_an_expected_appointment_before_a_known_end_then_it_is_evidence() -> None:
    # given "ann is expected to take over soon" (20 May), then "ann left on 10 June" with no
    # word of when she began: "soon" may well be the start of that tenure, as an expected
    # departure "soon" may be an end already known
    story = (
        Story()
        .report("soon", modality="expected")
        .report("left", kind="departure", effective="2025-06-10", cause="resignation")
    )
    assert story.pending("2025-07-01") == []
    (tenure,) = story.tenures()
    assert [claim["claim"] for claim in tenure["evidence"]] == ["left", "soon"]
    # but one reported after that end is a return still to come
    later = Story(published={"paper": "2025-05-20", "wire": "2025-06-20"}).report(
        "left", kind="departure", effective="2025-06-10", cause="resignation"
    )
    later.report("back", modality="expected", source="wire")
    assert later.pending("2025-07-01") == ["back"]


async def test_state_and_history_agree_on_a_tenure_known_only_from_its_end(
    sqlite_url: str,
) -> None:
    log = await EventLog.open(sqlite_url)
    try:
        await append(
            log,
            [
                record("org.registered", org="agency", name="Agency"),
                record("post.defined", post="head", org="agency", title="Head"),
                record("person.registered", person="ann", name="Ann"),
                record(
                    "source.registered",
                    source="paper",
                    url="https://example.com/paper",
                    publisher="Paper",
                    published={"date": "2025-05-20"},
                ),
                record(
                    "claim.reported",
                    claim="appointed",
                    source="paper",
                    kind="appointment",
                    person="ann",
                    post="head",
                    capacity="permanent",
                    modality="occurred",
                    effective={"date": "2025"},
                    attribution={"kind": "outlet"},
                ),
                record(
                    "claim.reported",
                    claim="left",
                    source="paper",
                    kind="departure",
                    person="ann",
                    post="head",
                    capacity="permanent",
                    cause="resignation",
                    modality="occurred",
                    effective={"date": "2025-06-10"},
                    attribution={"kind": "outlet"},
                ),
            ],
            recorded_at=at("2025-06-12T09:00:00Z"),
        )
        queries = await current(log)
        (post,) = (await queries.state(org="agency", as_of="2025-07-01"))["posts"]
        assert (post["holders"], post["pending"], post["vacancy"]) == ([], [], "vacant")
        history = await queries.history(post="head")
        assert history["pending"] == []
        (tenure,) = history["tenures"]
        assert [claim["claim"] for claim in tenure["evidence"]] == ["left", "appointed"]
    finally:
        await log.close()
