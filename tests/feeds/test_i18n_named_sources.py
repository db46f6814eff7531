"""An attribution to several named sources says "sources", in every language with a plural."""

from __future__ import annotations

import pytest

from leaderlog.feeds import language
from leaderlog.feeds._text import _attribution

SEVERAL = {
    "en": "named sources: A and B",
    "de": "namentlich genannte Quellen: A und B",
    "es": "fuentes identificadas: A y B",
    "fr": "sources nommées\u00a0: A et B",
    "it": "fonti identificate: A e B",
    "pt": "fontes identificadas: A e B",
    "ru": "названные источники: A и B",
}


@pytest.mark.parametrize("tag", sorted(SEVERAL))
def test_several_named_sources_are_said_in_the_plural(tag: str) -> None:
    said = _attribution({"kind": "named", "parties": ["A", "B"]}, language(tag))
    assert said == SEVERAL[tag]


def test_one_named_source_stays_singular() -> None:
    assert _attribution({"kind": "named", "parties": ["A"]}, language("en")) == "named source: A"
