"""Text that looks like markup and addresses that need escaping, in every format.

Each format has its own way of saying "this is text": Atom's ``type``, RSS's convention that
descriptions (and, to readers that guess, titles) are HTML, JSON Feed's separate fields. What a
reader shows must be the stored characters in all three, and links must be URIs.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import xml.etree.ElementTree as ElementTree
from typing import Any

import feedparser
import pytest
from lxml import etree

from leaderlog.events import PersonRegistered
from leaderlog.feeds import FeedService
from leaderlog.feeds._address import is_web_address, web_address, web_uri
from leaderlog.feeds._text import NAME_LIMIT, TEXT_LIMIT, clean
from leaderlog.log import EventLog
from tests.feeds.atom_schema import atom_problems
from tests.feeds.logs import (
    ADDRESSES,
    BASE,
    MARKUP_NAME,
    SCRIPT,
    SCRIPT_QUOTE,
    add_hostile,
    add_markup,
    add_sourced_claim,
    confirm,
    generated_claim,
    project,
    rename,
    rendered,
)

ATOM = "{http://www.w3.org/2005/Atom}"
CONTENT = "{http://purl.org/rss/1.0/modules/content/}encoded"
# RFC 3986 characters; the address must also have a scheme and a host.
URI = re.compile(r"^https?://[A-Za-z0-9\-._~!$&'()*+,;=:@%/?#\[\]]+$")


def _parse(body: bytes) -> feedparser.FeedParserDict:
    parsed = feedparser.parse(body)
    assert not parsed.bozo, parsed.get("bozo_exception")
    return parsed


def _shown(detail: Any) -> str:
    """What a reader shows for a feedparser text construct: HTML is read as HTML."""
    value = str(detail["value"])
    if detail["type"] == "text/html":
        assert "<" not in value, f"markup where text was meant: {value!r}"
        return html.unescape(value)
    return value


async def _markup_service(log: EventLog) -> FeedService:
    await add_markup(log)
    return await project(log)


async def test_rss_descriptions_are_escaped_html_so_every_format_shows_the_same_text(
    seeded_log: EventLog,
) -> None:
    service = await _markup_service(seeded_log)
    rss = await rendered(service, "person:markup-quote", "rss")
    atom = await rendered(service, "person:markup-quote", "atom")
    document = json.loads(await rendered(service, "person:markup-quote", "json"))
    item = etree.fromstring(rss).find("channel/item")
    assert item is not None
    description = str(item.findtext("description"))
    # The description is HTML: the quoted tag is escaped in it, so it arrives as text.
    assert "<script>" not in description and "&lt;script&gt;" in description
    assert "<script>" not in str(item.findtext(CONTENT))
    (rss_entry,) = _parse(rss).entries
    (atom_entry,) = _parse(atom).entries
    (json_item,) = document["items"]
    shown = _shown(rss_entry.summary_detail)
    assert SCRIPT_QUOTE in shown
    assert shown == _shown(atom_entry.summary_detail) == json_item["summary"]
    assert json_item["content_text"] == json_item["summary"]
    assert "&lt;script&gt;" in json_item["content_html"]
    # An address with "&" is text in the summary, escaped in the HTML description.
    amp = await rendered(service, "person:addr-amp", "rss")
    amp_description = str(etree.fromstring(amp).findtext("channel/item/description"))
    assert "a=1&amp;b=2" in amp_description
    assert "a=1&b=2" in _shown(_parse(amp).entries[0].summary_detail)


async def test_atom_text_is_typed_by_what_it_holds(seeded_log: EventLog) -> None:
    service = await _markup_service(seeded_log)
    for scope, typed in (("person:markup-quote", "html"), ("person:addr-apos", None)):
        root = etree.fromstring(await rendered(service, scope, "atom"))
        entry = root.find(f"{ATOM}entry")
        assert entry is not None
        summary = entry.find(f"{ATOM}summary")
        assert summary is not None and summary.get("type") == typed, scope
        content = entry.find(f"{ATOM}content")
        assert content is not None and content.get("type") == "html"
        title = entry.find(f"{ATOM}title")
        assert title is not None and title.get("type") is None


@pytest.mark.parametrize("key", sorted(ADDRESSES))
async def test_source_addresses_are_kept_as_uris_in_every_format(
    seeded_log: EventLog, key: str
) -> None:
    service = await _markup_service(seeded_log)
    stored, expected = ADDRESSES[key]
    assert URI.match(expected) and expected.isascii()
    scope = f"person:addr-{key}"
    atom = etree.fromstring(await rendered(service, scope, "atom"))
    links = {link.get("rel"): link.get("href") for link in atom.iter(f"{ATOM}link")}
    assert links["alternate"] == expected
    rss = etree.fromstring(await rendered(service, scope, "rss"))
    assert rss.findtext("channel/item/link") == expected
    (item,) = json.loads(await rendered(service, scope, "json"))["items"]
    assert item["url"] == expected
    # People read the address in the summary: letters stay letters, the rest is escaped.
    readable = web_address(stored)
    assert readable is not None and readable in item["summary"]
    # The content links the source's name to the same URI, in every format.
    href = f'href="{html.escape(expected)}"'
    assert href in item["content_html"]
    atom_content = atom.find(f"{ATOM}entry/{ATOM}content")
    assert atom_content is not None and href in (atom_content.text or "")
    assert href in (rss.findtext(f"channel/item/{CONTENT}") or "")
    if "@" in stored:
        for fmt in ("atom", "rss", "json"):
            body = await rendered(service, scope, fmt)
            assert b"@" not in body.replace(b"@type", b""), fmt


@pytest.mark.parametrize(
    ("address", "in_atom"),
    [
        ("http://[2001:db8::1]/a", True),
        ("http://[2001:DB8::1]:8080/a?b=c", True),
        # Valid, but the W3C Feed Validator takes an IPv6 literal for hex digits and colons
        # right after "//": it refuses an IPv4-mapped address, IPvFuture and a zone id as
        # invalid characters in an Atom link.
        ("http://[::ffff:192.0.2.1]/news", False),
        ("https://[v1.fe80::a+en1]/", False),
        ("https://[fe80::1%25eth0]/", False),
    ],
)
async def test_an_ipv6_literal_address_is_linked_where_the_validator_accepts_it(
    seeded_log: EventLog, address: str, in_atom: bool
) -> None:
    """Refused in RSS <link> by the W3C Feed Validator, and some forms in Atom too: there the
    summary and the content alone give it. JSON Feed links every one."""
    await add_sourced_claim(seeded_log, "six", address)
    service = await project(seeded_log)
    body = await rendered(service, "person:six", "atom")
    assert atom_problems(body) == []
    atom = etree.fromstring(body)
    hrefs = [link.get("href") for link in atom.iter(f"{ATOM}link")]
    assert (address in hrefs) == in_atom
    assert f"{BASE}/api/claims/six" in hrefs
    assert address in (atom.findtext(f"{ATOM}entry/{ATOM}summary") or "")
    assert f'href="{html.escape(address)}"' in (atom.findtext(f"{ATOM}entry/{ATOM}content") or "")
    rss = etree.fromstring(await rendered(service, "person:six", "rss"))
    assert rss.find("channel/item/link") is None
    assert address in (rss.findtext("channel/item/description") or "")
    (item,) = json.loads(await rendered(service, "person:six", "json"))["items"]
    assert item["url"] == address


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        # a Latin name with one Cyrillic letter, a Cyrillic one made of Latin lookalikes, and a
        # Greek one: shown as the host they lead to, not as the one they pass for
        ("https://p\u0430ypal.com/login", "https://xn--pypal-4ve.com/login"),
        ("https://\u0430\u0440\u0440\u04cf\u0435.com/", "https://xn--80ak6aa92e.com/"),
        ("https://\u03bf\u03c1\u03bf.com/", "https://xn--0xaaf.com/"),
        ("https://www.ice.g\u03bfv/", "https://www.ice.xn--gv-jbc/"),
        # names as their readers write them stay readable
        ("https://stra\u00dfe.de/a", None),
        ("https://\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444/", None),
        ("https://\u0430\u0440\u0440\u04cf\u0435.ru/", None),
        ("https://\u65e5\u672c\u8a9e\u306e\u30c6\u30b9\u30c8.jp/", None),
        ("https://\ud55c\uad6d\uc5b4.kr/", None),
        ("https://\u03b5\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac.gr/", None),
        ("https://abc\u4e2d\u6587.com/", None),
        ("https://\u30b3\u30fc\u30d2\u30fc.jp/", None),  # the prolonged sound mark
        ("https://\u4eba\u3005.jp/", None),  # the iteration mark
        # a trailing dot ends the name as it is: the top-level domain is still .ru or .com
        ("https://\u0430\u0440\u0440\u04cf\u0435.ru./", None),
        ("https://\u0430\u0440\u0440\u04cf\u0435.com./", "https://xn--80ak6aa92e.com./"),
    ],
)
def test_lookalike_hosts_are_shown_in_their_ascii_form(stored: str, shown: str | None) -> None:
    assert web_address(stored) == (shown or stored)


async def test_a_lookalike_host_is_read_in_its_ascii_form_in_summaries(
    seeded_log: EventLog,
) -> None:
    service = await _markup_service(seeded_log)
    (item,) = json.loads(await rendered(service, "person:addr-lookalike-mixed", "json"))["items"]
    assert "https://xn--pypal-4ve.com/login" in item["summary"]
    assert "p\u0430ypal" not in item["summary"] + item["content_html"]


@pytest.mark.parametrize(
    ("stored", "iri", "uri"),
    [
        ("https://example.org/a?e=%20&x=1#f", None, None),  # valid: left exactly as it is
        ("http://[2001:db8::1]:8080/a", None, None),
        ("http://example.org:65535/", None, None),
        # a user name and password are left out (RFC 9110, 4.2.4)
        ("https://user:pw@example.org/", "https://example.org/", None),
        ("https://@example.org/", "https://example.org/", None),
        ("https://example.org/a%zz", "https://example.org/a%25zz", None),
        ("https://[fe80::1%25eth0]/", None, None),  # a zone id, its % escaped as RFC 6874 says
        ("https://[V1.fe80::a+en1]/", None, None),  # IPvFuture: its "v" in either case
        ("https://example.org/a#b#c", "https://example.org/a#b%23c", None),
        ("https://example.org/[x]", "https://example.org/%5Bx%5D", None),
        (
            "https://example.org/\u05d0?\u202e#\ue000",
            "https://example.org/\u05d0?%E2%80%AE#%EE%80%80",
            "https://example.org/%D7%90?%E2%80%AE#%EE%80%80",
        ),
    ],
)
def test_addresses_are_escaped_only_where_they_must_be(
    stored: str, iri: str | None, uri: str | None
) -> None:
    assert web_address(stored) == (iri or stored)
    assert web_uri(stored) == (uri or iri or stored)
    assert is_web_address(stored) == (iri is None)


@pytest.mark.parametrize(
    "refused",
    [
        "javascript:alert(1)",
        "ftp://example.org/",
        "https://[example.org/",  # an unbalanced bracket: no host
        "https://[not-an-address]/",
        "https://[fe80::1%eth0]/",  # a zone id's % unescaped: no URI can carry it as it is
        "https://example.org:80x/",
        "https://example.org:65536/",  # out of range: browsers refuse it
        "https://example.org\\@evil.example/",  # which host depends on who reads it
        "https://exa mple.org/",
        None,
    ],
)
def test_addresses_that_are_not_http_links_are_refused(refused: str | None) -> None:
    assert web_address(refused) is None and web_uri(refused) is None
    assert not is_web_address(refused)


async def test_names_that_look_like_markup_are_declared_or_escaped(seeded_log: EventLog) -> None:
    service = await _markup_service(seeded_log)
    scope = "person:markup-name"
    feed_title = f"Leadership changes: {MARKUP_NAME}"
    entry_title = f"Reported: {MARKUP_NAME} serves as Executive Associate Director (HSI)"

    atom = await rendered(service, scope, "atom")
    assert atom_problems(atom) == []
    root = etree.fromstring(atom)
    titles = [root.find(f"{ATOM}title"), root.find(f"{ATOM}entry/{ATOM}title")]
    summary = root.find(f"{ATOM}entry/{ATOM}summary")
    for element in (*titles, summary):
        assert element is not None and element.get("type") == "html"
        assert "<" not in str(element.text)
    parsed = _parse(atom)
    assert _shown(parsed.feed.title_detail) == feed_title
    assert _shown(parsed.entries[0].title_detail) == entry_title

    rss = await rendered(service, scope, "rss")
    # HTML-escaped (readers that see an entity read the title as HTML), with the RSS
    # Profile's hexadecimal references for "&" that tell validators it is character data.
    assert (
        b"<title>Leadership changes: Tom &#x26;lt;b&#x26;gt;Tag&#x26;lt;/b&#x26;gt;</title>" in rss
    )
    for element in etree.fromstring(rss).iter("title"):
        assert "</b>" not in "".join(element.itertext())
    parsed = _parse(rss)
    assert _shown(parsed.feed.title_detail) == feed_title
    assert _shown(parsed.entries[0].title_detail) == entry_title

    # JSON Feed titles are plain text.
    document = json.loads(await rendered(service, scope, "json"))
    assert document["title"] == feed_title and document["items"][0]["title"] == entry_title


async def test_plain_titles_are_written_as_before(seeded_log: EventLog) -> None:
    service = await project(seeded_log)
    atom = await rendered(service, "person:robert-hammer", "atom")
    assert b'<title type="html">' not in atom and b"<summary type=" not in atom
    assert b"<title>Leadership changes: Robert Hammer</title>" in atom
    rss = await rendered(service, "person:robert-hammer", "rss")
    assert b"&#x26;" not in rss and b"<title>Leadership changes: Robert Hammer</title>" in rss


async def test_hostile_titles_show_their_characters_in_atom_and_rss(seeded_log: EventLog) -> None:
    await add_hostile(seeded_log)
    service = await project(seeded_log)
    for fmt in ("atom", "rss"):
        parsed = _parse(await rendered(service, "person:hostile-script", fmt))
        (entry,) = parsed.entries
        assert SCRIPT in _shown(entry.title_detail), fmt
        assert SCRIPT in _shown(parsed.feed.title_detail), fmt


async def test_rss_items_carry_their_modification_time(seeded_log: EventLog) -> None:
    service = await _markup_service(seeded_log)
    await confirm(seeded_log, "markup-quote")
    service = await project(seeded_log)
    rss = await rendered(service, "person:markup-quote", "rss")
    atom = await rendered(service, "person:markup-quote", "atom")
    item = etree.fromstring(rss).find("channel/item")
    assert item is not None
    atom_entry = etree.fromstring(atom).find(f"{ATOM}entry")
    assert atom_entry is not None
    assert item.findtext(f"{ATOM}updated") == atom_entry.findtext(f"{ATOM}updated")
    (rss_entry,) = _parse(rss).entries
    (parsed_atom,) = _parse(atom).entries
    # The confirmation came after the report (pubDate stays the report's time).
    assert parsed_atom.published != parsed_atom.updated
    assert rss_entry.updated == parsed_atom.updated
    assert rss_entry.updated_parsed == parsed_atom.updated_parsed
    published = dt.datetime.fromisoformat(str(atom_entry.findtext(f"{ATOM}published")))
    assert rss_entry.published_parsed[:6] == published.timetuple()[:6]


async def test_opml_groups_have_only_text_and_names_are_escaped(seeded_log: EventLog) -> None:
    await add_markup(seeded_log)
    await add_hostile(seeded_log)
    service = await project(seeded_log)
    body = (await service.opml("en", BASE, "rss", True)).body
    root = ElementTree.fromstring(body)
    body_element = root.find("body")
    assert body_element is not None
    groups = [outline for outline in body_element if outline.get("xmlUrl") is None]
    assert [dict(group.attrib) for group in groups] == [
        {"text": "Organisations"},
        {"text": "People"},
        {"text": "Posts"},
    ]
    by_url = {str(o.get("xmlUrl")): o for o in root.iter("outline") if o.get("xmlUrl")}
    for person, name in (("markup-name", MARKUP_NAME), ("hostile-script", SCRIPT)):
        outline = by_url[f"{BASE}/feeds/person/{person}.rss?lang=en"]
        for attribute in ("text", "title"):
            value = str(outline.get(attribute))
            assert "<" not in value and html.unescape(value) == name
    plain = by_url[f"{BASE}/feeds/person/robert-hammer.rss?lang=en"]
    assert plain.get("text") == plain.get("title") == "Robert Hammer"


async def test_an_entry_changed_after_a_rename_shows_the_new_name(seeded_log: EventLog) -> None:
    await add_markup(seeded_log)
    await rename(seeded_log, "addr-apos", "Abe Renamed")
    await confirm(seeded_log, "addr-apos")
    await rename(seeded_log, "addr-amp", "Ann Renamed")  # no claim event after it
    service = await project(seeded_log)
    (changed,) = json.loads(await rendered(service, "person:addr-apos", "json"))["items"]
    (untouched,) = json.loads(await rendered(service, "person:addr-amp", "json"))["items"]
    assert "Ann Amp" in untouched["title"]  # a rename alone leaves entries alone
    assert changed["title"].startswith("Confirmed: Abe Renamed serves as")


@pytest.mark.parametrize(
    "tail",
    [
        "e\u0301\u0301tail",
        "\U0001f469\u200d\U0001f4bc\u200d\U0001f525 tail",
        "\U0001f44b\U0001f3fdtail",
    ],
    ids=["accents", "joined-emoji", "skin-tone"],
)
def test_text_cut_for_a_feed_keeps_whole_characters(tail: str) -> None:
    text = "x" * (TEXT_LIMIT - 3) + tail
    shown = clean(text)
    assert shown.endswith("\u2026") and len(shown) <= TEXT_LIMIT
    kept = shown.removesuffix("\u2026")
    assert text.startswith(kept)
    # the cut falls where a new character begins: not before an accent, a joiner or a skin
    # tone, nor just after a joiner
    assert text[len(kept)] not in "\u0301\u200d\U0001f3fd"
    assert not kept.endswith("\u200d")


FLAG = "\U0001f1fa\U0001f1f8"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (FLAG * 101, FLAG * 99),
        # pairs count from the start of the run, not from the cut
        ("x" + FLAG * 100, "x" + FLAG * 99),
        ("\u1100\u1161" * 101, "\u1100\u1161" * 99),
        ("\u1100\u1161\u11a8" * 67, "\u1100\u1161\u11a8" * 66),
        ("\uac00\u11a8" * 101, "\uac00\u11a8" * 99),
    ],
    ids=["flags", "flags-after-a-letter", "jamo", "jamo-with-final", "syllable-and-final-jamo"],
)
def test_a_name_cut_for_a_feed_keeps_flags_and_hangul_syllables_whole(text: str, kept: str) -> None:
    assert clean(text, NAME_LIMIT) == kept + "\u2026"


async def test_a_long_name_of_flags_shows_whole_flags_in_feeds_and_the_opml(
    seeded_log: EventLog,
) -> None:
    await seeded_log.append_events(
        [PersonRegistered(person="flags", name=FLAG * 101), generated_claim(0, person="flags")],
        actor="test",
    )
    service = await project(seeded_log)
    shown = FLAG * 99 + "\u2026"
    atom = _parse(await rendered(service, "person:flags", "atom"))
    assert atom.feed.title == f"Leadership changes: {shown}"
    assert atom.entries[0].title.startswith(f"Reported: Appointment of {shown} as ")
    document = json.loads(await rendered(service, "person:flags", "json"))
    assert document["title"] == f"Leadership changes: {shown}"
    opml = ElementTree.fromstring((await service.opml("en", BASE)).body)
    texts = [outline.get("text") for outline in opml.iter("outline")]
    assert shown in texts


AMPERSAND_NAME = "Smith & Wesson of AT&T"


async def test_a_bare_ampersand_is_text_to_every_reader(seeded_log: EventLog) -> None:
    """A name holding "&" but nothing readers take for markup (no tag, no whole reference)
    is plain text: Node's rss-parser and feedparser's ilk, which ignore an Atom title's type
    or read an RSS title as text, showed "Smith &amp; Wesson" for the escaped HTML it was."""
    await seeded_log.append_events(
        [PersonRegistered(person="ampersand", name=AMPERSAND_NAME)], actor="test"
    )
    service = await project(seeded_log)
    feed_title = f"Leadership changes: {AMPERSAND_NAME}"
    atom = await rendered(service, "person:ampersand", "atom")
    assert atom_problems(atom) == []
    title = etree.fromstring(atom).find(f"{ATOM}title")
    assert title is not None and title.get("type") is None and title.text == feed_title
    rss = await rendered(service, "person:ampersand", "rss")
    # one "&" each, as the RSS Profile's reference, and no escaped HTML
    assert b"<title>Leadership changes: Smith &#x26; Wesson of AT&#x26;T</title>" in rss
    for body in (atom, rss):
        assert _shown(_parse(body).feed.title_detail) == feed_title
    # The OPML, whose names the W3C validator reads as HTML, escapes the "&" of "AT&T" (the
    # start of a reference to it) and no other.
    await seeded_log.append_events(
        [PersonRegistered(person="ampersand-alone", name="Smith & Wesson")], actor="test"
    )
    opml = (await project(seeded_log)).opml("en", BASE, "rss", True)
    names = {str(o.get("text")) for o in ElementTree.fromstring((await opml).body).iter("outline")}
    assert "Smith & Wesson" in names and html.escape(AMPERSAND_NAME) in names


async def test_an_atom_feed_s_first_link_is_its_web_page(seeded_log: EventLog) -> None:
    """Readers that take a feed's first link for its web page (Node's feed-extractor) showed
    the feed's own address; RSS keeps the web page as the channel's <link>."""
    service = await project(seeded_log)
    atom = etree.fromstring(await rendered(service, "org:ice", "atom"))
    links = [(link.get("rel"), link.get("href")) for link in atom.findall(f"{ATOM}link")]
    assert links[0] == ("alternate", f"{BASE}/?org=ice&lang=en")
    assert ("self", f"{BASE}/feeds/org/ice.atom?lang=en") in links
    rss = etree.fromstring(await rendered(service, "org:ice", "rss"))
    assert rss.findtext("channel/link") == f"{BASE}/?org=ice&lang=en"
