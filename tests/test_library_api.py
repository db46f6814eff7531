"""What a program written against the library needs to name, type and read about: each type a
public function hands back is importable from a public module."""

from __future__ import annotations

import typing
import uuid

import pytest

from leaderlog import events, feeds, projections
from leaderlog.errors import DuplicateEventError, UnknownLanguage


def test_the_types_the_feed_service_hands_back_are_offered_by_the_package() -> None:
    # FeedService.head() gives a Head, document() a Feed of Entries with Links and
    # Categories, language() a Language: a program annotating them had to import them from
    # the package's private modules.
    for name in ("Feed", "Head", "Language", "Link", "Category", "Entry", "FeedService"):
        offered = getattr(feeds, name)
        assert name in feeds.__all__
        # and its annotations still read where it is written (Sphinx, pydantic, FastAPI)
        typing.get_type_hints(offered)


def test_each_feed_class_a_program_makes_or_is_given_is_documented() -> None:
    for offered in (feeds.FeedService, feeds.FeedRequest, feeds.Rendered, feeds.Validators):
        assert offered.__doc__ and not offered.__doc__.startswith(offered.__name__ + "(")


def test_a_language_that_is_no_text_is_a_language_not_offered() -> None:
    with pytest.raises(UnknownLanguage, match="language '3' is not offered"):
        feeds.language(3)  # type: ignore[arg-type]
    assert feeds.language("fr") is feeds.language("fr")


def test_names_the_documentation_tells_to_import_are_in_all() -> None:
    # projections/README stores times with format_time; a correction's changes are a
    # ClaimChanges; a projection's parameters are SQLValues
    assert {"format_time", "ClaimChanges"} <= set(events.__all__)
    assert "SQLValue" in projections.__all__


def test_a_duplicate_event_s_id_is_a_uuid() -> None:
    event_id = uuid.uuid4()
    assert DuplicateEventError(event_id, 3).event_id == event_id
