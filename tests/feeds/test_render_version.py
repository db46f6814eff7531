"""Validators name what a document holds: a change to the rendering must change them too.

Every ETag carries ``RENDER_VERSION`` (with the feed entries projection's version), so a
reader holding a document rendered another way fetches it again after an upgrade. This test
renders a fixed log (the seeds, with fixed recorded times and ids, plus records that exercise
languages, links and long text) in every format and language, and fails when the bytes
change while those versions stay the same.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json

from leaderlog.events import Record, parse_record
from leaderlog.feeds import FORMATS, LANGUAGES, FeedRequest, Scope
from leaderlog.feeds._service import RENDER_VERSION
from leaderlog.log import EventLog, parse_lines
from leaderlog.projections.feed_entries import FeedEntriesProjection
from tests.conftest import SEEDS
from tests.feeds.logs import BASE, project

# (RENDER_VERSION, FeedEntriesProjection.version) -> sha256 of every rendered document.
# When the rendering changes on purpose, bump RENDER_VERSION in leaderlog/feeds/_service.py
# and add the new digest here: never change a digest under versions already released.
RENDERED = {
    (5, 9): "3aea1c8ace706aba0164114b8265f29d3098b65fcec737bee2871925f808d7d1",
    # Version 10 only dropped two indexes: the same documents.
    (5, 10): "3aea1c8ace706aba0164114b8265f29d3098b65fcec737bee2871925f808d7d1",
    # Quotes isolated in their own direction; U+FFFD shown as "?".
    (6, 10): "f9701ce38bfa22be12d47b5353e70742b5ab37982deee13c42226d690de0cab1",
    # The person's name and the post's label isolated in the content's first line.
    (7, 10): "4accf2c945506bb0cf9dba16f15763435d06ff7c9527a1e51dc634d1be6d0e1e",
    # Version 11 keeps a date a confirmation without one would have erased: the seeds hold
    # no such confirmation, so the same documents.
    (7, 11): "4accf2c945506bb0cf9dba16f15763435d06ff7c9527a1e51dc634d1be6d0e1e",
    # Right-to-left names isolated in plain text too: these documents hold none, so the same.
    (8, 11): "4accf2c945506bb0cf9dba16f15763435d06ff7c9527a1e51dc634d1be6d0e1e",
    # Lookalike hosts shown in their xn-- form: these documents hold none, so the same.
    (9, 11): "4accf2c945506bb0cf9dba16f15763435d06ff7c9527a1e51dc634d1be6d0e1e",
    # French and Italian write the first of a month as an ordinal; Italian elides articles.
    (10, 11): "226be57bea004d4ef78018ef92cd3555ebc667311be248afa228fe792e79cfed",
    # Portuguese writes the first of a month as an ordinal too ("1º de junho").
    (11, 11): "2160732437683fc51f2c2b9fa3853c9b85bab854109c5c5d5b5b8d7bab34ce20",
    # A feed's home link names its language: the page in that language (/?lang=fr).
    (12, 11): "c17d933d82163824ec94cb518d4fe0dd311c11d9c190309be3d20170177c2e4b",
    # A text cut short ends its sentence with its ellipsis, with no full stop after it:
    # these documents cut none, so the same.
    (13, 11): "c17d933d82163824ec94cb518d4fe0dd311c11d9c190309be3d20170177c2e4b",
    # A quotation ends its sentence before the history; a confirmation's quote is shown.
    (14, 11): "481835af1434f66555cdd42e33d91728c177d702a16cf87b7d295d488f184a70",
    # JSON Feed members in the spec's order, its version first; RSS dates with four-digit
    # years (these documents hold none before year 1000).
    (15, 11): "9a5f16a1b4c97939648ea617e206b82f84bf0ee11b4d2b96a0f37250ed9a1f13",
    # French elides "de" before a vowel ("au poste d'Agent"); a field a correction empties
    # is "none" in words that fit any field; quoted words ending their sentence take no
    # second stop; a Hindi change line and the Russian effective date reworded.
    (16, 11): "7a591f8b633d972564712fa690ae8d7bfbc3ed14232a8a5f8ca38cacb2971266",
    # Several named sources are "named sources", and a name cut short ends its sentence
    # with its ellipsis in HTML too: these documents have neither, so the same.
    (17, 11): "7a591f8b633d972564712fa690ae8d7bfbc3ed14232a8a5f8ca38cacb2971266",
    # A right-to-left reason is isolated without the full stop after it: these documents
    # hold none, so the same.
    (18, 11): "7a591f8b633d972564712fa690ae8d7bfbc3ed14232a8a5f8ca38cacb2971266",
    # The HTML content's history is HTML: its quoted words marked with their source's
    # language and its names isolated in spans, as in the rest of the content.
    (19, 11): "9fc277d1ea737934f313f7f8332b86e231f33ddf3a94ee5307a38062052fa06b",
    # Chinese and Japanese set a sentence ending in Latin text apart from the next (here the
    # seeds' English reason for a dispute); a Russian confirmation introduces its source as
    # such, and the outlet's own reporting names its outlets: these documents hold neither.
    (20, 11): "d778588467bcbaaa3fe8d5bf3d1f3b33f88f491d9d5e631efef1e73a79d8977e",
    # A date given only in the source's words is quoted as such: "date unknown (“soon”)".
    (21, 11): "2de47d0910a201b6d983591f0de996cff2a8b1a9654ba95d08a6b4a4956a6077",
    # Translations mended (a Hindi transfer that read as a reappointment, French, Spanish,
    # Portuguese and Italian capacities, German titles, ...) and the HTML content joins the
    # status to the change as the title does, in the words of the language.
    (22, 11): "92b2a60e50454d5f6a9bb2deebfd6a08d19dd20a14ac5e15e532f068c45c3f4f",
    # A subject's feed is no longer moved on by an update of what no feed shows (aliases, a
    # short name): these documents have none, so the same.
    (22, 12): "92b2a60e50454d5f6a9bb2deebfd6a08d19dd20a14ac5e15e532f068c45c3f4f",
    # Nor is the list of every feed, and no feed keeps a short name it never showed: the same.
    (22, 13): "92b2a60e50454d5f6a9bb2deebfd6a08d19dd20a14ac5e15e532f068c45c3f4f",
    # JSON Feed gives 1.0's author too, an item whose source cannot be linked the claim's
    # address as its url, and a full archive page "expired".
    (23, 13): "bddb79d711143d8d28954adfdbc0abd6f63f25e57fdfe67234abcdd1a48a266a",
    # A post's feed names its organisation's page as its web page, not the overview.
    (24, 13): "abf5ae48b6912a72ede906568d3f34779434db9e8aa44dbf63d065e41e26596f",
    # Text holding a bare "&" is plain text in Atom titles and the OPML, and one "&" in RSS
    # titles (written &#x26;), not escaped HTML: these documents have none, so the same.
    (25, 13): "abf5ae48b6912a72ede906568d3f34779434db9e8aa44dbf63d065e41e26596f",
    # An Atom feed links its web page before its own address.
    (26, 13): "5b61e157a69cb176a4b341b7050e15d2a1bc0b0a5b7175464b7f05534332bd84",
    # Atom dates, atom:updated in RSS included, with milliseconds, as ROME reads them.
    (27, 13): "9eb807075bf005eeda5abdee07d34a4c2189c661b8613fcd97436865916d00e4",
    # A step is dated by its source's day when the source gives one: these have none later.
    (28, 13): "9eb807075bf005eeda5abdee07d34a4c2189c661b8613fcd97436865916d00e4",
    # A date keeps the source's words beside it, and a confirmation by a source dated only
    # roughly is dated by the source's name: these documents have neither.
    (29, 13): "9eb807075bf005eeda5abdee07d34a4c2189c661b8613fcd97436865916d00e4",
    # A correction, dispute or retraction by a source dated only roughly (the seeds' "about
    # May 2025") is dated by the source alone ("Disputed: ..."), and a source's name shows
    # its date without the words beside it.
    (30, 13): "f1907dc9cc5d6563f75449b9accf39ea918c501c4674bed9193e621198adc083",
    # A confirmation's, correction's, dispute's or retraction's source is linked in HTML, and
    # named without the published day the step is already dated by.
    (31, 13): "c1b41c323e528477666692a581a7f3680ac5ca6d3a46109fa16577df03e6ce2e",
    # RSS names the feed's author in dc:creator (its own <author> takes an email address).
    (32, 13): "f6a57b577cabedcf680e10c3c822c1c59707f32253fd890625d93682722e13b1",
    # Claims of one batch are stamped a millisecond apart (other events a microsecond), so
    # Atom's dates differ.
    (32, 14): "2b299050db9858a2674ec7c884806cd8fd942f0cc84c12ccaf7f62689425ba90",
    # The source's own words in a date ("soon") are marked with its language in the HTML
    # content, as quoted words are.
    (33, 14): "43196d5a8aea6d27857d5ac8651ee66e3758f42b6b32f9330940b816ce0ce6cf",
    # An entry's doc keeps its claim's latest 10 steps, and its history tells those alone
    # after a line counting the earlier ones: these documents have no claim of more, so the
    # same.
    (34, 15): "43196d5a8aea6d27857d5ac8651ee66e3758f42b6b32f9330940b816ce0ce6cf",
}

_RECORDED = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)
_EXTRA = [
    {
        "type": "source.registered",
        "data": {
            "source": "hk-daily-1",
            "url": "https://hk.example/news/\u65b0\u805e",
            "publisher": "HK Daily",
            "language": "yue",
            "published": {"date": "2025-05-30"},
        },
    },
    {
        "type": "person.registered",
        "data": {"person": "flags", "name": "\U0001f1fa\U0001f1f8" * 101},
    },
    {
        "type": "claim.reported",
        "data": {
            "claim": "flags-hsi",
            "source": "hk-daily-1",
            "kind": "appointment",
            "person": "flags",
            "post": "ice-hsi-ead",
            "capacity": "acting",
            "modality": "expected",
            "effective": {"date": "2025-06-08", "qualifier": "before"},
            "attribution": {"kind": "anonymous", "parties": ["ICE"]},
            "quote": "\u9810\u8a08\u63a5\u4efb",
            "locator": "body",
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


async def test_the_rendering_changes_only_with_its_version(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        await log.append_records(_records(), actor="seed")
        service = await project(log)
        digest = hashlib.sha256()
        for scope in ("all", "org:ice", "person:flags", "post:ice-hsi-ead"):
            for fmt in FORMATS:
                for lang in LANGUAGES:
                    request = FeedRequest(Scope.parse(scope), fmt, lang, BASE, None)
                    digest.update((await service.render(request)).body)
    versions = (RENDER_VERSION, FeedEntriesProjection.version)
    assert RENDERED.get(versions) == digest.hexdigest(), (
        f"the feeds render differently at {versions}: bump RENDER_VERSION in "
        "leaderlog/feeds/_service.py, so that validators handed out before stop matching, and "
        f"record {json.dumps(digest.hexdigest())} for the new versions in RENDERED"
    )
