"""Names that read as markup without a tag, the OPML list of feeds, and the characters an
address keeps."""

from __future__ import annotations

import datetime as dt

import feedparser
import lxml.html  # type: ignore[import-untyped]
import pytest
from lxml import etree

from leaderlog.events import PersonRegistered, parse_record
from leaderlog.feeds import FORMATS
from leaderlog.feeds._address import is_web_address, web_address, web_uri
from leaderlog.log import EventLog, parse_lines
from tests.conftest import SEEDS
from tests.feeds.logs import BASE, FOX, GENALO_RETIREMENT, project, rendered, shown

ATOM = "{http://www.w3.org/2005/Atom}"


# Names readers would take for markup, though they hold no tag: a decimal character
# reference, a comment, a processing instruction.
MARKUP_WITHOUT_TAGS = ("AT&#38;T Holdings", "Ann <!-- B --> Lee", "Ann <?x?> Lee")


def _read_as_html(text: str) -> str:
    """What a reader that takes every title for HTML (whatever its type) shows of it."""
    return str(lxml.html.fragment_fromstring(text, create_parent="div").text_content())


async def test_names_holding_references_or_comments_show_as_written_in_atom_and_rss(
    seeded_log: EventLog,
) -> None:
    # given people whose names hold a character reference, a comment, a processing instruction
    await seeded_log.append_events(
        [
            PersonRegistered(person=f"markup-{index}", name=name)
            for index, name in enumerate(MARKUP_WITHOUT_TAGS)
        ],
        actor="test",
    )
    service = await project(seeded_log)
    for index, name in enumerate(MARKUP_WITHOUT_TAGS):
        title = f"Leadership changes: {name}"
        for fmt in ("atom", "rss"):
            # when the person's feed is read
            body = await rendered(service, f"person:markup-{index}", fmt)
            parsed = feedparser.parse(body)
            assert not parsed.bozo, parsed.get("bozo_exception")
            # then a reader that follows the title's type (or guesses it) shows the name as
            # written, and so does one that reads every title as HTML
            assert shown(parsed.feed.title_detail) == title, (name, fmt)
            path = f"{ATOM}title" if fmt == "atom" else "channel/title"
            written = etree.fromstring(body).find(path)
            assert written is not None
            assert _read_as_html("".join(written.itertext())) == title, (name, fmt)


_SEEDED = dt.datetime(2024, 3, 1, 9, 0, tzinfo=dt.UTC)
_REGISTERED = dt.datetime(2024, 3, 5, 14, 30, 7, 900000, tzinfo=dt.UTC)
_CONFIRMED = dt.datetime(2024, 3, 9, 8, 0, tzinfo=dt.UTC)


async def test_opml_feeds_are_rss_subscriptions_in_the_list_s_language_dated_by_their_subjects(
    sqlite_url: str,
) -> None:
    # given the seeds, a person registered later, and a claim confirmed later still
    lines = [
        line for path in sorted(SEEDS.glob("*.jsonl")) for line in path.read_bytes().split(b"\n")
    ]
    seeds, _ = parse_lines(lines)
    newcomer = parse_record(
        {"type": "person.registered", "data": {"person": "newcomer", "name": "Nova Newcomer"}}
    )
    confirmation = parse_record(
        {"type": "claim.confirmed", "data": {"claim": GENALO_RETIREMENT, "source": FOX}}
    )
    async with await EventLog.open(sqlite_url) as log:
        for records, moment in (
            (seeds, _SEEDED),
            ([newcomer], _REGISTERED),
            ([confirmation], _CONFIRMED),
        ):
            stamped = [record.model_copy(update={"recorded_at": moment}) for record in records]
            await log.append_records(stamped, actor="seed")
        service = await project(log)
        bodies = {fmt: (await service.opml("fr", BASE, fmt, True)).body for fmt in FORMATS}
    for fmt, body in bodies.items():
        # when the OPML of the feeds in a format is read in French
        opml = etree.fromstring(body)
        feeds = [o for o in opml.iter("outline") if o.get("xmlUrl")]
        # then every feed is a subscription in OPML 2.0's sense (type "rss", whatever its
        # format) in the list's language, and its address is the feed in that format
        assert feeds and all(o.get("type") == "rss" for o in feeds), fmt
        assert all(o.get("language") == "fr" for o in feeds), fmt
        assert all(f".{fmt}?lang=fr" in str(o.get("xmlUrl")) for o in feeds), fmt
        # and the list is dated, in GMT and to the second, by the last change to a subject
        # it lists: the claim confirmed after it leaves it as it was
        assert opml.findtext("head/dateModified") == "Tue, 05 Mar 2024 14:30:07 GMT", fmt


@pytest.mark.parametrize(
    "stored",
    [
        "https://example.org/~user/a-b_c.d",
        "https://example.org/p;x=1/a:b@c!$'()*+,=?q=/?~&r=1#s/?~:@",
    ],
)
def test_characters_an_address_may_carry_are_never_escaped(stored: str) -> None:
    # given an address made only of what RFC 3986 lets each of its parts carry
    # when it is made into the address shown and the address linked
    # then both are the address as it was stored
    assert web_address(stored) == stored and web_uri(stored) == stored
    assert is_web_address(stored)


@pytest.mark.parametrize(
    ("stored", "linked"),
    [
        ("https://M\u00fcnchen.de/", "https://xn--mnchen-3ya.de/"),
        ("https://B\u00dcCHER.example/a", "https://xn--bcher-kva.example/a"),
        ("https://\uff45xample.\u00fc.org/", "https://example.xn--tda.org/"),
    ],
)
def test_a_host_written_in_capitals_or_full_width_is_linked_where_browsers_resolve_it(
    stored: str, linked: str
) -> None:
    # given a host outside ASCII as people type it, in capitals or full-width letters
    # when it is made into the address linked
    # then it is the IDNA form browsers resolve it to (UTS #46 mapping), not a dead
    # percent-encoded host
    assert web_uri(stored) == linked
