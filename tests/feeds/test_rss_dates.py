"""RSS dates are RFC 822 date-times (RFC 2822's four-digit years): a log may hold events
recorded in any year from 1 (an export imported keeps its recorded times), and each must
read back as the year it was recorded in."""

from __future__ import annotations

import datetime as dt
import re

import feedparser
from lxml import etree

from leaderlog.events import Record, parse_record
from leaderlog.feeds import FeedRequest, Scope
from leaderlog.log import EventLog, parse_lines
from tests.conftest import SEEDS
from tests.feeds.logs import BASE, GENALO_RETIREMENT, project

_FIRST_YEAR = dt.datetime(1, 1, 1, tzinfo=dt.UTC)
_LATER = dt.datetime(999, 5, 31, 22, 0, tzinfo=dt.UTC)
# RFC 2822, 3.3 (the validator's own reading of RSS 2.0's RFC 822 dates): a year of four
# digits or more; strftime writes year 999 as "999" and year 1 as "1".
_RFC2822 = re.compile(
    r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} "
    r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4,} \d{2}:\d{2}:\d{2} [+-]\d{4}$"
)


def _stamped(records: list[Record], moment: dt.datetime) -> list[Record]:
    return [record.model_copy(update={"recorded_at": moment}) for record in records]


async def test_rss_dates_of_early_years_have_four_digit_years(sqlite_url: str) -> None:
    lines = [
        line for path in sorted(SEEDS.glob("*.jsonl")) for line in path.read_bytes().split(b"\n")
    ]
    seeds, _ = parse_lines(lines)
    confirmation = parse_record(
        {
            "type": "claim.confirmed",
            "data": {"claim": GENALO_RETIREMENT, "source": "fox-ice-shakeup-2025-05"},
        }
    )
    async with await EventLog.open(sqlite_url) as log:
        await log.append_records(_stamped(seeds, _FIRST_YEAR), actor="seed")
        await log.append_records(_stamped([confirmation], _LATER), actor="seed")
        service = await project(log)
        request = FeedRequest(Scope.parse("all"), "rss", "en", BASE, None)
        body = (await service.render(request)).body

    channel = etree.fromstring(body).find("channel")
    dates = [channel.findtext("lastBuildDate")]
    dates += [item.findtext("pubDate") for item in channel.iter("item")]
    assert len(dates) > 2
    assert [date for date in dates if not _RFC2822.match(str(date))] == []

    parsed = feedparser.parse(body)
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.feed.updated_parsed.tm_year == _LATER.year
    # Every claim was first reported in year 1: read as 2001 from a one-digit year.
    assert {entry.published_parsed.tm_year for entry in parsed.entries} == {_FIRST_YEAR.year}
