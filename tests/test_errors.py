"""The error hierarchy: as errors.py's docstring draws it, and reachable from the package."""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
import uuid
from concurrent.futures import ProcessPoolExecutor

import pytest

import leaderlog
from leaderlog import errors, feeds

# A class in the drawing: after the tree's lines (or alone, at the root), before its meaning.
_DRAWN_CLASS = re.compile(r"^[ │├└─]*(?P<name>[A-Z]\w+)(?:\s|$)")


def _drawn_parents() -> dict[str, str]:
    """Each class the docstring draws, with the class drawn as its parent: the nearest one
    above whose name starts further left."""
    assert errors.__doc__ is not None
    parents: dict[str, str] = {}
    above: list[tuple[int, str]] = []
    # The drawing is the first block after its title; Ctrl-C's, which is no Exception,
    # follows apart.
    drawing = errors.__doc__.split("Hierarchy::", 1)[1].lstrip("\n").split("\n\n", 1)[0]
    for line in drawing.splitlines():
        found = _DRAWN_CLASS.match(line)
        if found is None:
            continue
        column = found.start("name")
        while above and above[-1][0] >= column:
            above.pop()
        if above:
            parents[found.group("name")] = above[-1][1]
        above.append((column, found.group("name")))
    return parents


def test_the_docstring_draws_the_hierarchy_as_it_is() -> None:
    drawn = _drawn_parents()
    known = {
        name: getattr(errors, name)
        for name in errors.__all__
        if isinstance(getattr(errors, name), type) and issubclass(getattr(errors, name), Exception)
    }
    assert sorted(drawn) == sorted(set(known) - {"LeaderlogError"})
    for name, parent in drawn.items():
        ours = [base for base in known[name].__bases__ if issubclass(base, errors.LeaderlogError)]
        assert ours == [known[parent]], name


def test_every_error_is_reachable_from_the_package() -> None:
    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert getattr(leaderlog, name) is value, name
            assert name in leaderlog.__all__, name
    # and what ProjectionFailed.failures holds, to annotate code that handles them
    assert leaderlog.ProjectionFailure is errors.ProjectionFailure
    assert "ProjectionFailure" in leaderlog.__all__


def test_the_feed_errors_are_the_same_classes_from_errors_and_from_feeds() -> None:
    from leaderlog.errors import FeedError, FeedNotFound, UnknownLanguage

    # as this module's docstring says: FeedError was missing from leaderlog.feeds
    for error in (FeedError, FeedNotFound, UnknownLanguage):
        assert getattr(feeds, error.__name__) is error and error.__name__ in feeds.__all__
    assert str(UnknownLanguage("xx", ["en", "fr"])) == (
        "language 'xx' is not offered; choose one of en, fr"
    )


def test_the_errors_load_without_the_feeds() -> None:
    """Every module imports the errors: they must not need the feeds (babel, the projections),
    which import them in turn."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from leaderlog.errors import FeedNotFound, UnknownLanguage; "
            "print(sorted(name for name in sys.modules if name.startswith('leaderlog.feeds')))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert loaded.stdout == "[]\n"


def _one_of_each() -> list[errors.LeaderlogError]:
    """An error of every class, made with the arguments leaderlog gives it."""
    from leaderlog.feeds import Scope

    event_id = uuid.UUID("01a251bf-3496-7097-8c37-e8e0a095b404")
    domain = errors.DomainError("claim 'x' does not exist", where="line 2", rule="reference")
    made: list[errors.LeaderlogError] = [
        errors.RecordError("not JSON", where="line 1", fields=[("data.claim", "not an id")]),
        domain,
        errors.BatchError([domain, errors.RecordError("not JSON", where="line 3")]),
        errors.ConcurrencyError("person-ann", 5, None, where="record 0"),
        errors.DuplicateEventError(event_id, 31),
        errors.UnreadableEvent(31, "data is not valid JSON", "ab" * 32),
        errors.RecordedAtRefused(event_id, "recorded_at runs backwards"),
        errors.AppendRefused("a token holds that name"),
        errors.StoreUnavailable("the store is closed", public="try again"),
        errors.UnknownEntity("unknown organisation 'ero'", ["ice-ero"]),
        errors.InvalidQuery("known-at must be a position", parameter="known_at"),
        errors.ProjectionFailed(
            [errors.ProjectionFailure("turnover", 3, 4, ValueError("boom"))], position=29
        ),
        errors.ProjectionTimedOut(2.5, 50),
        errors.TokenError("unknown token"),
        errors.FeedError("unknown feed format 'pdf'"),
        errors.FeedNotFound("unknown organisation 'nope'", Scope.parse("org:nope"), entries=0),
        errors.UnknownLanguage("xx", ["en", "fr"]),
    ]
    for name in errors.__all__:
        kind = getattr(errors, name)
        if (
            isinstance(kind, type)
            and issubclass(kind, errors.LeaderlogError)
            and not any(type(error) is kind for error in made)
        ):
            # The rest take a message alone.
            made.append(kind(f"a {name}"))
    return made


def test_every_error_comes_back_whole_from_another_process() -> None:
    # Given an error of every class, as a worker of a process pool raises it
    for error in _one_of_each():
        # When it is pickled to be handed back, and read there
        again = pickle.loads(pickle.dumps(error))
        # Then it is the same error: its class, message and attributes (a ConcurrencyError
        # could not be made again, so the pool said it broke; a BatchError's message came
        # back one character per line)
        assert type(again) is type(error)
        assert again.args == error.args and str(again) == str(error)
        assert repr(vars(again)) == repr(vars(error)), type(error).__name__


def test_an_error_a_worker_raises_reaches_the_caller_as_raised() -> None:
    # Given a process pool whose worker refuses an append with a stale expected_version
    with ProcessPoolExecutor(1) as pool:
        future = pool.submit(_stale, "person-ann")
        # When its result is asked for
        # Then the caller gets that ConcurrencyError, not a pool that says it broke
        with pytest.raises(errors.ConcurrencyError) as raised:
            future.result(timeout=60)
    assert (raised.value.stream, raised.value.expected, raised.value.actual) == (
        "person-ann",
        5,
        None,
    )


def _stale(stream: str) -> None:
    raise errors.ConcurrencyError(stream, 5, None)
