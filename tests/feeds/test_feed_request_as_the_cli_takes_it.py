"""A feed asked for through the library takes a language and a base address as ``leaderlog
feed --lang --base-url`` takes them, and refuses what the command line refuses."""

from __future__ import annotations

import pytest
from lxml import etree

from leaderlog.errors import FeedError, UnknownLanguage
from leaderlog.feeds import FeedRequest, Scope
from leaderlog.log import EventLog
from tests.feeds.logs import project

ATOM = "{http://www.w3.org/2005/Atom}"


@pytest.mark.parametrize(
    ("asked", "chosen"), [("zh-hans", "zh-Hans"), ("fr-FR", "fr"), ("EN", "en"), ("pt-BR", "pt")]
)
def test_a_language_tag_is_taken_in_any_case_and_with_a_region(asked: str, chosen: str) -> None:
    assert FeedRequest(Scope.parse("all"), "atom", asked, "http://feeds.test").lang == chosen


def test_a_language_not_offered_is_refused() -> None:
    with pytest.raises(UnknownLanguage):
        FeedRequest(Scope.parse("all"), "atom", "tlh", "http://feeds.test")


@pytest.mark.parametrize(
    ("given", "base"),
    [
        ("http://feeds.test/", "http://feeds.test"),
        ("HTTPS://feeds.test/under/", "https://feeds.test/under"),
        ("https://bücher.example", "https://xn--bcher-kva.example"),
    ],
)
async def test_a_base_address_is_linked_as_a_uri_without_its_trailing_slash(
    seeded_log: EventLog, given: str, base: str
) -> None:
    service = await project(seeded_log)
    request = FeedRequest(Scope.parse("all"), "atom", "en", given)
    assert request.base_url == base
    root = etree.fromstring((await service.render(request)).body)
    self_link = root.find(f"{ATOM}link[@rel='self']")
    assert self_link is not None and self_link.get("href") == f"{base}/feeds/all.atom"


@pytest.mark.parametrize(
    "given", ["not a url", "ftp://feeds.test", "http://feeds.test/?a=1", "http://feeds.test/#top"]
)
def test_a_base_that_is_no_web_address_to_append_paths_to_is_refused(given: str) -> None:
    with pytest.raises(FeedError, match="http:// or https:// address"):
        FeedRequest(Scope.parse("all"), "atom", "en", given)
