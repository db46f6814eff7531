"""Page validators name what a page holds: a change to how pages render must change them too.

Every page ETag carries the pages' ``RENDER_VERSION``, with the versions of what the pages are
also made of (the feeds' rendering, which writes their recent changes, and the projections
they read), so a reader or cache holding a page rendered another way fetches it again after
an upgrade. This test renders a fixed log's pages (the seeds, with fixed recorded times and
ids, plus records that exercise right-to-left names, acting holders and pending changes), the
overview and organisation pages, whole and listing organisations a page at a time, in every
language, on a fixed day, and fails when the bytes change while those versions stay the same.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from leaderlog.events import Record, parse_record
from leaderlog.feeds import LANGUAGES
from leaderlog.feeds._service import RENDER_VERSION as FEED_RENDER_VERSION
from leaderlog.http import _pages as pages
from leaderlog.http import create_app
from leaderlog.log import EventLog, parse_lines
from leaderlog.projections import Queries
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.projections.leadership import LeadershipProjection
from leaderlog.projections.leadership_rules import RULES_VERSION
from tests.conftest import SEEDS

# (pages' RENDER_VERSION, the feeds' RENDER_VERSION, FeedEntriesProjection.version,
# LeadershipProjection.version, the leadership RULES_VERSION) -> sha256 of every rendered page.
# When the rendering changes on purpose, bump RENDER_VERSION in leaderlog/http/_pages.py
# and add the new digest here; when one of the others is bumped, add its versions too (with
# the same digest if the pages did not change): never change a digest under versions
# already released.
RENDERED = {
    # The rules' version 1: a confirmed return after a departure is a new tenure, and only a
    # claim's latest dispute brings it into a day's conflicts. These pages show neither.
    (1, 15, 11, 8, 1): "377c2a40e063d1af89d5c57fe69c7ec9e993402cc1c768e9859e9515c8aaebd3",
    # The feeds' version 16: French elides "de" before a vowel in recent changes and
    # pending ones ("au poste d'Agent"), among other wording.
    (2, 16, 11, 8, 1): "0bcdec0a929f248c1898061599d15168a9f0a76abfa3ea0da3dcf865cae9479c",
    # Several named sources are "named sources", and a name cut short ends its sentence
    # with its ellipsis in HTML too: these pages have neither, so the same.
    (3, 17, 11, 8, 1): "0bcdec0a929f248c1898061599d15168a9f0a76abfa3ea0da3dcf865cae9479c",
    # A link past the language menu to the content, an organisation's name isolated in the
    # main heading and title, feed links named whose feed they are, leadership tables named
    # after their organisation, and lists of organisations spaced as the feeds' lists are.
    (4, 17, 11, 8, 1): "e508aaf6212619e759854acb7a0e639764f82dc9507b589db90abfa68d3e488d",
    # Quoted words in recent changes marked with their source's language where it is not the
    # page's, a reason's full stop after its isolate, and a page not found titled so.
    (5, 18, 11, 8, 1): "afbbb4dde5f21bfce392836f28ba907fe0abd13fee62d836fb2ec4a3d1a86b33",
    # The feeds' version 19 marks the quoted words in a claim's history with their source's
    # language: these pages hold no history with quotes, so the same.
    (5, 19, 11, 8, 1): "afbbb4dde5f21bfce392836f28ba907fe0abd13fee62d836fb2ec4a3d1a86b33",
    # Each row of a leadership table headed by its post.
    (6, 19, 11, 8, 1): "94d6a05244ef69d1e6763c820bbb0ccc35b0f4122b509f3f42657d6595c83804",
    # The leadership projection's version 9 keeps the word starts of entities' names for
    # what an unknown id may have meant: the pages are the same.
    (6, 19, 11, 9, 1): "94d6a05244ef69d1e6763c820bbb0ccc35b0f4122b509f3f42657d6595c83804",
    # The rules' version 2: only a holding certainly after the earlier of two disputed
    # departures makes them two ends. These pages show no such departures.
    (6, 19, 11, 9, 2): "94d6a05244ef69d1e6763c820bbb0ccc35b0f4122b509f3f42657d6595c83804",
    # The feeds' version 20 sets a Chinese or Japanese sentence ending in Latin text apart
    # from the next: the seeds' English reason for a dispute, in recent changes, is followed
    # by a space before the claims it conflicts with.
    (6, 20, 11, 9, 2): "81c3e58c6dcb0e227eaf5c64be210d1e8f9dfa8596f65ee2e36419bc8f4adb2d",
    # A holder's status after their name when their holding is confirmed or disputed, with
    # their capacity where there is one: the seeds' disputed holding says so.
    (7, 20, 11, 9, 2): "02d66ef6f5f420e188b19cadfc264910d7703ca515b8e76d5e8c627acaeb0c7f",
    # The feeds' version 21 quotes a date given only in the source's words, as the pages'
    # pending changes show it: "expected, date unknown (“soon”)".
    (7, 21, 11, 9, 2): "16ec9a6154a3bdca43e6b9de1c6c522555fbe2b1f737b7a40414ce0b0d9c2c65",
    # Each organisation's heading links to its page, and an organisation's page links the
    # organisations above it.
    (8, 21, 11, 9, 2): "49ab3efed6322d8f199722e513c162f7eb74191abf2484a8c8e80c7f203910da",
    # The rules' version 3: an incumbency whose vague date may mean a day of a tenure in
    # effect is that tenure, not a change to come. These pages show no such incumbency.
    (8, 21, 11, 9, 3): "49ab3efed6322d8f199722e513c162f7eb74191abf2484a8c8e80c7f203910da",
    # The feeds' version 22 mends translations the pages share (capacities, taglines); the
    # feed entries' version 12 changes no page.
    (8, 22, 12, 9, 3): "0b9b1fbb36991c476881c1c79ba7e465b20497220a25e82c8151cb7db8ac5237",
    # The feed entries' version 13 changes no page.
    (8, 22, 13, 9, 3): "0b9b1fbb36991c476881c1c79ba7e465b20497220a25e82c8151cb7db8ac5237",
    # A post filled by an acting holder says so in the vacancy column in words of its own
    # ("kommissarisch besetzt", "временно занята"), not in the capacity's word for a person.
    (9, 22, 13, 9, 3): "198ab6a8add2a3f5c60394c9ff4921f08ec8b72a83396bdcc3f4fd15f42e3387",
    # The feeds' version 23 changes JSON Feed alone: no page.
    (9, 23, 13, 9, 3): "198ab6a8add2a3f5c60394c9ff4921f08ec8b72a83396bdcc3f4fd15f42e3387",
    # The feeds' version 24 changes the web page a post's feed names: no page.
    (9, 24, 13, 9, 3): "198ab6a8add2a3f5c60394c9ff4921f08ec8b72a83396bdcc3f4fd15f42e3387",
    # Hindi and Japanese say a post filled by an acting holder as the column's other values
    # are said ("कार्यवाहक द्वारा भरा हुआ", "代行者あり").
    (10, 24, 13, 9, 3): "e960d8edf18f504d8cb67bfb68e00e00c8a8ffaf55f94bc06f1dc7a685d3a57a",
    # The feeds' version 25 changes how feed titles carry a bare "&": no page.
    (10, 25, 13, 9, 3): "e960d8edf18f504d8cb67bfb68e00e00c8a8ffaf55f94bc06f1dc7a685d3a57a",
    # The feeds' version 26 orders an Atom feed's links: no page.
    (10, 26, 13, 9, 3): "e960d8edf18f504d8cb67bfb68e00e00c8a8ffaf55f94bc06f1dc7a685d3a57a",
    # Feed links named with the word they show first ("Atom: Everything"), each leadership
    # table in a region of its own that scrolls, a page not found saying so under its first
    # heading, and each page of a list numbered in its title.
    (11, 26, 13, 9, 3): "c3c36fd033cfdf3d9e0f334006e4f75c9f7c7d4e3109f61c2a51e0ed50a1497f",
    # The feeds' version 27 writes Atom dates with milliseconds, which pages do not show;
    # a French feed link's name keeps its colon on the line of the word before it.
    (11, 27, 13, 9, 3): "c9d75053da52899c8dcce9ea0f88615dddd072c3900e474cadd434b24b175985",
    # A heading's long word breaks at the edge of a narrow screen rather than overflow it.
    (12, 27, 13, 9, 3): "2a78b1e3c20dbbf7ba95afb32c3de680fb47bfcb6b06abad24049b4528856ca8",
    # The feeds' version 28 dates a step by its source's day: these pages show none.
    (12, 28, 13, 9, 3): "2a78b1e3c20dbbf7ba95afb32c3de680fb47bfcb6b06abad24049b4528856ca8",
    # The feeds' version 29 keeps a date's words beside it: these pages have none.
    (12, 29, 13, 9, 3): "2a78b1e3c20dbbf7ba95afb32c3de680fb47bfcb6b06abad24049b4528856ca8",
    # The feeds' version 30 dates the seeds' dispute by its source alone ("Disputed: ..."),
    # which the recent changes show.
    (12, 30, 13, 9, 3): "7ddae912bc743a3f327c1036c082bff66f77dd14ed0851102d60ddd91bf53322",
    # A pending change says when it is to take effect, as the source put it.
    (13, 30, 13, 9, 3): "8286698d01d3e2a25f70e06deb392c22ab974aeb96d7e21c662a2d6c7a400ec8",
    # The feeds' version 31 links a step's source, which the recent changes show.
    (13, 31, 13, 9, 3): "56e422e17f5a611cdc7a5bf124324dca8bda3a39b7916620755e516a55baf8b4",
    # The feeds' version 32 names RSS's author, which pages do not show.
    (13, 32, 13, 9, 3): "56e422e17f5a611cdc7a5bf124324dca8bda3a39b7916620755e516a55baf8b4",
    # Rules version 4: an undated incumbency against a disputed departure holds the post;
    # the seeds hold no such pair.
    (13, 32, 13, 9, 4): "56e422e17f5a611cdc7a5bf124324dca8bda3a39b7916620755e516a55baf8b4",
    # Rules version 5: two acting or interim holders at once are a conflict; the seeds hold
    # none.
    (13, 32, 13, 9, 5): "56e422e17f5a611cdc7a5bf124324dca8bda3a39b7916620755e516a55baf8b4",
    # The OPML of every feed linked in each format from the feeds section, as each feed is.
    (14, 32, 13, 9, 5): "5a4a11c4eb5c88de9aac7b731166c2edfd5b624b2277997eba55827009dbc184",
    # Claims of one batch are stamped a millisecond apart (other events a microsecond).
    (14, 32, 14, 9, 5): "b6d22346e253c37feefcd94cc121d941a88377d6d69ca1f76eb7184484079308",
    # Every text breaks a word too long for a narrow screen, and the language menu's lines
    # stand a target's height apart when it wraps.
    (15, 32, 14, 9, 5): "810bc1b9a54ba101f6324724b74fa9758208b99882e1532c9975264d39112b07",
    # The source's own words in a date ("soon"), in pending changes and (the feeds' version
    # 33) recent changes, isolated, and marked with the source's language where it is not
    # the page's.
    (16, 33, 14, 9, 5): "a50db15309cd45230f4eea8a8e79f485a40eb71b13e4694734aa554712d0c78d",
    # The feeds' version 34 (and feed entries' 15) tell a claim's latest 10 steps alone, after
    # a line counting the earlier ones: these pages show no claim of more.
    (16, 34, 15, 9, 5): "a50db15309cd45230f4eea8a8e79f485a40eb71b13e4694734aa554712d0c78d",
    (16, 34, 15, 9, 6): "a50db15309cd45230f4eea8a8e79f485a40eb71b13e4694734aa554712d0c78d",
    (16, 34, 15, 10, 6): "a50db15309cd45230f4eea8a8e79f485a40eb71b13e4694734aa554712d0c78d",
    (16, 34, 15, 10, 7): "a50db15309cd45230f4eea8a8e79f485a40eb71b13e4694734aa554712d0c78d",
    # The leadership projection's version 11: an expected change confirmed without a date,
    # then corrected to having occurred, counts from the report's source (or the
    # correction's). The seeds hold no such claim: the same pages.
    (16, 34, 15, 11, 7): "a50db15309cd45230f4eea8a8e79f485a40eb71b13e4694734aa554712d0c78d",
    # The leadership projection's version 12: a change confirmed without a date, then
    # corrected to one only expected, counts from the confirming source. The seeds hold no
    # such claim: the same pages.
    (16, 34, 15, 12, 7): "a50db15309cd45230f4eea8a8e79f485a40eb71b13e4694734aa554712d0c78d",
    # The leadership projection's version 13: a change only expected, confirmed without a
    # date by several sources, counts from the soonest of them. The seeds hold no such claim:
    # the same pages.
    (16, 34, 15, 13, 7): "a50db15309cd45230f4eea8a8e79f485a40eb71b13e4694734aa554712d0c78d",
    # Rules version 8: a post's changes to come are listed by the day they were reported,
    # departures first, then by claim, not in the order the log recorded them. The seeds'
    # were recorded in that order: the same pages.
    (16, 34, 15, 13, 8): "a50db15309cd45230f4eea8a8e79f485a40eb71b13e4694734aa554712d0c78d",
    # Leadership version 14 and rules version 9: of confirmations out the same day, one with
    # a mistyped future published date is not taken for one with a published date; changes to
    # come are listed from the first day their report's date may mean ("after 2025-05" after
    # 20 May). The seeds hold neither: the same pages.
    (16, 34, 15, 14, 9): "a50db15309cd45230f4eea8a8e79f485a40eb71b13e4694734aa554712d0c78d",
}

BASE = "http://pages.test"
_RECORDED = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)
# The day the pages say the situation on: the seeds' changes are behind it, a pending one
# still ahead.
_DAY = "2025-06-04"
_EXTRA = [
    {
        "type": "org.registered",
        "data": {
            "org": "knesset-office",
            "name": "\u05dc\u05e9\u05db\u05ea \u05d4\u05db\u05e0\u05e1\u05ea",
            "parent": "white-house",
        },
    },
    {
        "type": "post.defined",
        "data": {
            "post": "knesset-office-head",
            "org": "knesset-office",
            "title": "\u05e8\u05d0\u05e9 \u05d4\u05dc\u05e9\u05db\u05d4",
        },
    },
    {
        "type": "person.registered",
        "data": {"person": "levi", "name": "\u05d3\u05d5\u05d3 \u05dc\u05d5\u05d9"},
    },
    {
        "type": "claim.reported",
        "data": {
            "claim": "levi-head",
            "source": "fox-ice-shakeup-2025-05",
            "kind": "incumbency",
            "person": "levi",
            "post": "knesset-office-head",
            "capacity": "acting",
            "modality": "occurred",
            "attribution": {"kind": "outlet"},
        },
    },
    {
        "type": "claim.reported",
        "data": {
            "claim": "levi-dsac",
            "source": "fox-ice-shakeup-2025-05",
            "kind": "appointment",
            "person": "levi",
            "post": "ice-hsi-dsac",
            "capacity": "interim",
            "modality": "expected",
            "effective": {"date": "2025-07-01", "qualifier": "about"},
            "attribution": {"kind": "anonymous", "parties": ["ICE"]},
        },
    },
]


def _records() -> list[Record]:
    lines = [
        line for path in sorted(SEEDS.glob("*.jsonl")) for line in path.read_bytes().split(b"\n")
    ]
    records, _ = parse_lines(lines)
    records += [parse_record(raw) for raw in _EXTRA]
    return [record.model_copy(update={"recorded_at": _RECORDED}) for record in records]


def _addresses() -> list[str]:
    """Each page in every language asked for by address, and as the reader's own language
    chooses (English here), which links without naming it."""
    asked = [""] + [f"lang={tag}" for tag in LANGUAGES]
    return [
        f"/?{query}" if query else "/"
        for first in ("", "org=dhs", "org=ice", "org=white-house")
        for lang in asked
        for query in ["&".join(part for part in (first, lang) if part)]
    ]


@asynccontextmanager
async def _client(url: str) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(url)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
            yield client


@pytest.fixture
def on_a_fixed_day(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages say the situation today: here, on ``_DAY`` whatever day the test runs."""
    situation = Queries.situation

    async def fixed(self: Queries, as_of: Any = None, known_at: Any = None) -> dict[str, Any]:
        return await situation(self, _DAY if as_of is None else as_of, known_at)

    monkeypatch.setattr(Queries, "situation", fixed)


async def test_a_page_rendered_another_way_is_not_taken_for_the_one_held(
    tmp_path: Path, on_a_fixed_day: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    async with await EventLog.open(url) as log:
        await log.append_records(_records(), actor="seed")
    async with _client(url) as client:
        # given a reader holding the overview and an organisation's page
        held = {address: await client.get(address) for address in ("/", "/?org=ice")}
        # when the server renders pages another way, the log and the package version the same
        monkeypatch.setattr(pages, "RENDER_VERSION", pages.RENDER_VERSION + 1)
        for address, response in held.items():
            again = await client.get(address, headers={"If-None-Match": response.headers["etag"]})
            # then the copy held is not said to be current: the page is sent anew
            assert again.status_code == 200, address
            assert again.headers["etag"] != response.headers["etag"]


async def test_the_pages_render_differently_only_with_their_version(
    tmp_path: Path, on_a_fixed_day: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    async with await EventLog.open(url) as log:
        await log.append_records(_records(), actor="seed")
    digest = hashlib.sha256()
    async with _client(url) as client:
        for limits, more in (
            # Every post's holders.
            ({}, []),
            # Few enough posts to list the organisations instead, the whole trees.
            ({"OVERVIEW_POSTS": 1}, []),
            # And few enough to list them a level and a page at a time: the seeds' two trees
            # on two pages, ICE's two units on two more, HSI's two posts on two more.
            (
                {"OVERVIEW_POSTS": 1, "ORGS_PER_PAGE": 1, "POSTS_PER_PAGE": 1},
                ["/?page=2", "/?org=ice&lang=ja&page=2", "/?org=ice-hsi", "/?org=ice-hsi&page=2"],
            ),
        ):
            for name, value in limits.items():
                monkeypatch.setattr(pages, name, value)
            for address in [*_addresses(), *more]:
                response = await client.get(address)
                assert response.status_code == 200, address
                digest.update(response.content)
    versions = (
        pages.RENDER_VERSION,
        FEED_RENDER_VERSION,
        FeedEntriesProjection.version,
        LeadershipProjection.version,
        RULES_VERSION,
    )
    assert RENDERED.get(versions) == digest.hexdigest(), (
        f"the pages render differently at {versions}: bump RENDER_VERSION in "
        "leaderlog/http/_pages.py, so that validators handed out before stop matching, and "
        f"record {json.dumps(digest.hexdigest())} for the new versions in RENDERED"
    )
