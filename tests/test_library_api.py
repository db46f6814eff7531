"""What a program written against the library needs to name, type and read about: each type a
public function hands back is importable from a public module."""

from __future__ import annotations

import contextlib
import typing
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from leaderlog import events, feeds, projections
from leaderlog.errors import DuplicateEventError, UnknownLanguage
from leaderlog.feeds import FeedRequest, FeedService, Scope
from leaderlog.http import create_app
from leaderlog.log import EventLog
from leaderlog.projections import ProjectionRunner, Queries, runner_for


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


async def test_an_event_log_given_where_its_store_is_wanted_is_refused_naming_log_store(
    seeded_log: EventLog,
) -> None:
    # given projections that are built
    await (await runner_for(seeded_log.store)).catch_up()
    given: Any = seeded_log
    # when the log is given where its store is wanted, then a TypeError says to give log.store:
    # "the leadership projection has not been built; run `leaderlog rebuild`" sent the user to
    # rebuild them, and the same error came back after
    with pytest.raises(TypeError, match=r"EventStore.*\.store"):
        Queries(given)
    with pytest.raises(TypeError, match=r"EventStore.*\.store"):
        FeedService(given)
    with pytest.raises(TypeError, match=r"EventStore.*\.store"):
        ProjectionRunner(given, [])
    with pytest.raises(TypeError, match=r"EventStore.*\.store"):
        await runner_for(given)
    # and what the documentation shows still answers
    await Queries(seeded_log.store).state(org="ice")
    await FeedService(seeded_log.store).render(
        FeedRequest(Scope.parse("org:ice"), "atom", "en", "https://example.org")
    )


async def test_the_app_mounted_without_its_lifespan_says_its_lifespan_has_not_run(
    seeded_log: EventLog,
) -> None:
    # given the app mounted in another one, whose lifespan does not run the mounted app's
    # (Starlette runs no lifespan of a mounted app)
    parent = FastAPI()
    parent.mount("/leaders", create_app(seeded_log))
    transport = httpx.ASGITransport(app=parent)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        # when a request arrives, then the error says the lifespan has not run, where it was
        # an AttributeError on app.state that said nothing of why
        with pytest.raises(RuntimeError, match="lifespan"):
            await client.get("/leaders/api/state")


async def test_the_app_mounted_with_its_lifespan_entered_by_the_parent_answers(
    seeded_log: EventLog,
) -> None:
    leaders = create_app(seeded_log)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with leaders.router.lifespan_context(leaders):
            yield

    parent = FastAPI(lifespan=lifespan)
    parent.mount("/leaders", leaders)
    async with parent.router.lifespan_context(parent):
        transport = httpx.ASGITransport(app=parent)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            answer = await client.get("/leaders/api/state", params={"org": "ice"})
    assert answer.status_code == 200
    assert answer.json()["org"]["org"] == "ice"


def test_a_feed_request_whose_scope_is_text_says_to_parse_it() -> None:
    # it failed only once rendered, with AttributeError: 'str' object has no attribute 'key'
    with pytest.raises(TypeError, match=r"Scope\.parse\('org:ice'\)"):
        FeedRequest("org:ice", "atom", "en", "https://example.org")  # type: ignore[arg-type]
    assert FeedRequest(Scope.parse("org:ice"), "atom", "en", "https://example.org").scope.key == (
        "org:ice"
    )


async def test_an_event_log_given_to_runner_for_is_refused_naming_runner_for(
    seeded_log: EventLog,
) -> None:
    # given a log, when it is given to runner_for where its store is wanted
    given: Any = seeded_log
    # then the refusal names the function called, not a class the caller never named
    with pytest.raises(TypeError, match=r"^runner_for takes an EventStore .*\.store"):
        await runner_for(given)
