"""The error hierarchy: as errors.py's docstring draws it, and reachable from the package."""

from __future__ import annotations

import re
import subprocess
import sys

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
