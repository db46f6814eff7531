"""What an unknown organisation, post or person id may have meant is looked up by the start of
a word in small indexed tables of the entities as currently known, not by matching every
entity's names: on a large log that read every organisation, post or person on each such
request, which anyone can make over HTTP with made-up ids (state, history, feed scopes). The
answers stay those of the whole search for text that starts a word of an id, name, short
name, title or alias."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from leaderlog._json import loads
from leaderlog.log import EventLog
from leaderlog.projections import EntityKind, ProjectionRunner, Queries, UnknownEntity, runner_for
from leaderlog.projections import queries as queries_module
from leaderlog.projections._words import search_form
from leaderlog.projections.leadership import OPEN, LeadershipProjection
from tests.projections.logs import (
    append,
    current,
    plans_of_a_refusal,
    query_plans,
    record,
    recording_statements,
)

# What was asked for, of each kind; each either starts a word of what it finds, or is a piece
# from inside a word (which finds nothing).
ASKED: dict[EntityKind, tuple[str, ...]] = {
    "organisation": (
        "ero",
        "ERO",
        "HSI",
        "Ice",
        "Ice-H",
        "homeland security",
        "enforcement and removal operations",
        "-ero",
        "(ero)",
        "nforcement",
        "département",
        "Ünïcode",
        "über alles",
        "zzzz",
    ),
    "post": (
        "hsi DIRECTOR",
        "director",
        "deputy",
        "ead",
        "secretary of homeland security",
        "executive associate director, homeland security investigations",
        "ecretary",
        "dsac",
        "zzzz",
    ),
    "person": (
        "Hammer",
        "Robert J. Hammer",
        "robert",
        "j.",
        "ammer",
        "maria santos",
        "MARÍA",
        "santos",
        "zoe\u0308",
        "STRAUSS",
        "o'brien",
        "brien",
        "zzzz",
    ),
}
_LABELS: dict[EntityKind, tuple[str, str, tuple[str, ...]]] = {
    "organisation": ("p_leadership_orgs", "org", ("short_name", "name")),
    "post": ("p_leadership_posts", "post", ("title", "aliases")),
    "person": ("p_leadership_persons", "person", ("name", "aliases")),
}


def _scanned(plans: list[str]) -> list[str]:
    """The tables the plans read from end to end."""
    return [found for plan in plans for found in re.findall(r"\bSCAN (p_\w+)", plan)]


def _starts_a_word(wanted: str, text: str) -> bool:
    """Whether ``text`` holds ``wanted`` where its first letter or digit begins a word."""
    lead = next((at for at, character in enumerate(wanted) if character.isalnum()), None)
    if lead is None:
        return False
    return any(
        text.startswith(wanted, start - lead)
        for start, character in enumerate(text)
        if start >= lead and character.isalnum() and (start == 0 or not text[start - 1].isalnum())
    )


async def _the_whole_search(queries: Queries, kind: EntityKind, given: str) -> tuple[str, ...]:
    """What reading every current entity of the kind suggests: those one of whose id, names
    or aliases has ``given`` starting one of its words, exact matches first, then by id."""
    table, id_column, label_columns = _LABELS[kind]
    wanted = search_form(given.strip())
    rows = await queries.store.query(
        f"SELECT {id_column}, {', '.join(label_columns)} FROM {table} WHERE known_to = ?",
        (OPEN,),
    )
    found = []
    for found_id, *labels in rows:
        texts = [found_id]
        for column, value in zip(label_columns, labels, strict=True):
            texts += loads(value) if column == "aliases" else [value]
        forms = [search_form(text) for text in texts if text]
        if any(_starts_a_word(wanted, form) for form in forms):
            found.append((wanted not in forms, found_id))
    return tuple(found_id for _, found_id in sorted(found)[:5])


async def _with_more_entities(log: EventLog) -> Queries:
    await append(
        log,
        [
            record("org.registered", org="unicode", name="Éditions Ünïcode", short_name="Über"),
            record("org.registered", org="agency-x", name="Office of Ice"),
            record("org.registered", org="ice-hq", name="Ice headquarters", short_name="ICE-HQ"),
            record("person.registered", person="maria-santos", name="María Santos"),
            record("person.registered", person="m-santos-2", name="Mario Santos"),
            record("person.registered", person="zoe", name="Zoe\u0308 \u00c5ngstr\u00f6m"),
            record("person.registered", person="strauss", name="Johann Strau\u00df"),
            record("person.registered", person="obrien", name="Pat O'Brien", aliases=["P. J."]),
            record(
                "post.defined",
                post="ice-deputy-director",
                org="ice",
                title="Deputy Director",
                aliases=["ICE deputy", "director (deputy)"],
            ),
        ],
    )
    return await current(log)


async def _meant(queries: Queries, kind: EntityKind, given: str) -> UnknownEntity:
    asked: dict[EntityKind, Callable[[], Any]] = {
        "organisation": lambda: queries.state(org=given),
        "post": lambda: queries.history(post=given),
        "person": lambda: queries.history(person=given),
    }
    with pytest.raises(UnknownEntity) as raised:
        await asked[kind]()
    return raised.value


@pytest.mark.parametrize(
    ("ask", "message"),
    [
        (
            lambda q: q.state(org="ero"),
            "unknown organisation 'ero'; did you mean ice-ero (ERO, Enforcement and Removal "
            "Operations)?",
        ),
        (
            lambda q: q.history(person="Hammer"),
            "unknown person 'Hammer'; did you mean robert-hammer (Robert Hammer, "
            "Robert J. Hammer)?",
        ),
        (
            lambda q: q.history(post="hsi DIRECTOR"),
            "unknown post 'hsi DIRECTOR'; did you mean ice-hsi-ead (Executive Associate "
            "Director, Homeland Security Investigations, HSI director, HSI executive "
            "associate director)?",
        ),
        (lambda q: q.state(org="zzzz"), "unknown organisation 'zzzz'"),
        (lambda q: q.history(person="zzzz"), "unknown person 'zzzz'"),
        (lambda q: q.history(post="zzzz"), "unknown post 'zzzz'"),
    ],
)
async def test_an_unknown_id_reads_no_entity_table_from_end_to_end(
    seeded_log: EventLog, ask: Callable[[Queries], Any], message: str
) -> None:
    plans = await plans_of_a_refusal(await current(seeded_log), ask, message)
    assert _scanned(plans) == []


@pytest.mark.parametrize("kind", ["organisation", "post", "person"])
async def test_the_words_are_looked_up_in_a_range_of_an_index(
    seeded_log: EventLog, kind: EntityKind
) -> None:
    queries = await current(seeded_log)
    statements = recording_statements(queries)
    await queries.unknown(kind, "zzzz")
    plans = await query_plans(queries, statements)
    assert plans, "no statement was sent"
    assert _scanned(plans) == []
    assert any(re.search(r"SEARCH p_leadership_tails USING", plan) for plan in plans), plans


async def _assert_the_same_as_the_whole_search(log: EventLog) -> None:
    queries = await _with_more_entities(log)
    for kind, asked in ASKED.items():
        for given in asked:
            meant = await _meant(queries, kind, given)
            assert meant.suggestions == await _the_whole_search(queries, kind, given), given


async def test_the_suggestions_are_those_of_the_whole_search(seeded_log: EventLog) -> None:
    await _assert_the_same_as_the_whole_search(seeded_log)


async def test_on_postgresql_the_suggestions_are_those_of_the_whole_search(
    seeded_postgres_log: EventLog,
) -> None:
    await _assert_the_same_as_the_whole_search(seeded_postgres_log)


async def test_a_piece_from_inside_a_word_suggests_nothing(seeded_log: EventLog) -> None:
    queries = await current(seeded_log)
    assert str(await _meant(queries, "person", "ammer")) == "unknown person 'ammer'"
    assert str(await _meant(queries, "organisation", "nforcement")) == (
        "unknown organisation 'nforcement'"
    )
    # nor does punctuation alone, which no word starts with
    assert str(await _meant(queries, "post", "-")) == "unknown post '-'"
    assert str(await _meant(queries, "person", "%")) == "unknown person '%'"


async def test_exact_matches_come_first(seeded_log: EventLog) -> None:
    queries = await _with_more_entities(seeded_log)
    meant = await _meant(queries, "organisation", "ICE")
    assert meant.suggestions == ("ice", "agency-x", "ice-ero", "ice-hq", "ice-hsi")
    # an exact alias too
    meant = await _meant(queries, "person", "p. j.")
    assert meant.suggestions == ("obrien",)


async def test_names_no_longer_current_are_not_suggested(seeded_log: EventLog) -> None:
    # given a person renamed, a post retitled and given other aliases, and an organisation
    # renamed, each in the same page as another change of it
    await append(
        seeded_log,
        [
            record("person.registered", person="p-1", name="Alberta Quill"),
            record("person.updated", person="p-1", name="Alberta Vance"),
            record("person.updated", person="p-1", aliases=["Bertie"]),
        ],
    )
    await append(
        seeded_log,
        [
            record("post.updated", post="dhs-secretary", title="Homeland Minister", aliases=[]),
            record("org.updated", org="white-house", name="Executive Mansion"),
            record("org.updated", org="white-house", short_name="EM"),
        ],
    )
    queries = await current(seeded_log)
    # then only the names known now are suggested (and the ids, which stay)
    asked: list[tuple[EntityKind, str, tuple[str, ...]]] = [
        ("person", "quill", ()),
        ("person", "vance", ("p-1",)),
        ("person", "bertie", ("p-1",)),
        ("post", "homeland security secretary", ()),
        ("post", "homeland minister", ("dhs-secretary",)),
        ("post", "secretary", ("dhs-secretary",)),
        # (its id, which stays, is "white house" mistyped: suggested as such)
        ("organisation", "white house", ("white-house",)),
        ("organisation", "the white house", ()),
        ("organisation", "house", ("white-house",)),
        ("organisation", "mansion", ("white-house",)),
        ("organisation", "em", ("white-house",)),
    ]
    for kind, given, meant in asked:
        found = await _meant(queries, kind, given)
        assert found.suggestions == meant, given
    # and the projection's rows are those of a rebuild
    tails = await _tails(queries)
    await (await runner_for(seeded_log.store)).rebuild(["leadership"])
    assert await _tails(queries) == tails


async def _tails(queries: Queries) -> dict[str, list[tuple[bytes, str]]]:
    """The word starts kept of each kind of entity."""
    kept: dict[str, list[tuple[bytes, str]]] = {"org": [], "post": [], "person": []}
    for kind, tail, entity in await queries.store.query("SELECT * FROM p_leadership_tails"):
        kept[kind].append((bytes(tail), entity))
    return {kind: sorted(tails) for kind, tails in kept.items()}


async def _the_tails_kept_a_page_at_a_time_equal_a_rebuild(log: EventLog) -> None:
    await append(
        log,
        [
            record("person.registered", person="p-1", name="Alberta Quill", aliases=["AQ"]),
            record("person.updated", person="p-1", name="Alberta Vance"),
            record("person.updated", person="robert-hammer", aliases=["Bob Hammer"]),
            record("post.updated", post="ice-hsi-dsac", aliases=["DSAC", "deputy SAC"]),
            record("org.updated", org="ice-hsi", short_name=None),
            record("person.updated", person="p-1", aliases=[]),
            record("org.registered", org="x-1", name="Xylophone Unit", short_name="XU"),
            record("org.updated", org="x-1", name="Xylo Unit"),
        ],
    )
    pages = []
    for page in (1, 2, 3, 1000):
        runner = ProjectionRunner(log.store, [LeadershipProjection()], page=page)
        await runner.rebuild()
        pages.append(await _tails(Queries(log.store)))
    assert all(pages[0].values()), "a kind of entity has no word starts"
    assert all(found == pages[0] for found in pages[1:])
    assert (b"bob hammer", "robert-hammer") in pages[0]["person"]
    assert not any(tail == b"quill" for tail, _ in pages[0]["person"])


async def test_the_words_kept_a_page_at_a_time_equal_a_rebuild(seeded_log: EventLog) -> None:
    await _the_tails_kept_a_page_at_a_time_equal_a_rebuild(seeded_log)


async def test_on_postgresql_the_words_kept_a_page_at_a_time_equal_a_rebuild(
    seeded_postgres_log: EventLog,
) -> None:
    await _the_tails_kept_a_page_at_a_time_equal_a_rebuild(seeded_postgres_log)


async def test_a_word_many_entities_start_with_reads_a_bounded_few(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given more people named alike than are read per word
    await append(
        seeded_log,
        [
            record("person.registered", person=f"doe-{n:02}", name=f"Jane Doe {n:02}")
            for n in range(40)
        ],
    )
    queries = await current(seeded_log)
    monkeypatch.setattr(queries_module, "_CANDIDATES", 10)
    read: list[int] = []
    query = queries.store.query

    async def counted(sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows = await query(sql, parameters)
        read.append(len(rows))
        return rows

    queries.store.query = counted  # type: ignore[method-assign]
    meant = await _meant(queries, "person", "jane doe")
    # then a few of them are suggested, from no more rows than are read per word
    assert meant.suggestions == ("doe-00", "doe-01", "doe-02", "doe-03", "doe-04")
    assert read and max(read) <= 10


@pytest.mark.parametrize(
    ("kind", "given", "meant"),
    [
        ("organisation", "ice-hsii", ("ice-hsi",)),
        ("organisation", "ice-er", ("ice-ero",)),
        ("post", "ice-hsi-eda", ("ice-hsi-ead", "ice-hsi-dsac")),
        ("post", "ice-ero-eed", ("ice-ero-ead",)),
        ("person", "robert-hamer", ("robert-hammer",)),
        ("person", "kennet-genalo", ("kenneth-genalo",)),
        ("person", "derek-gordn", ("derek-gordon",)),
        ("person", "Robert Hamer", ("robert-hammer",)),
        # a hyphen left out, a typo early in a later word, in a word of a long id
        ("organisation", "whitehouse", ("white-house",)),
        ("person", "robert-ammer", ("robert-hammer",)),
        ("person", "derek-grodon", ("derek-gordon",)),
        ("post", "dhs-secetary", ("dhs-secretary",)),
        ("post", "ice-hsi-dad", ("ice-hsi-ead", "ice-hsi-dsac")),
    ],
)
async def test_a_mistyped_id_suggests_the_one_it_is_most_like(
    seeded_log: EventLog, kind: EntityKind, given: str, meant: tuple[str, ...]
) -> None:
    # A letter doubled, dropped, swapped or wrong is the likeliest mistake, and no word
    # starts with the text as typed: nothing was suggested for it.
    queries = await current(seeded_log)
    found = await _meant(queries, kind, given)
    # the closest first, whichever start found it
    assert found.suggestions == meant
    assert str(found).startswith(f"unknown {kind} {given!r}; did you mean {meant[0]} (")


async def test_on_postgresql_a_mistyped_id_suggests_what_it_does_on_sqlite(
    seeded_log: EventLog, seeded_postgres_log: EventLog
) -> None:
    asked: list[tuple[EntityKind, str]] = [
        ("organisation", "whitehouse"),
        ("post", "ice-hsi-eda"),
        ("person", "kennet-genalo"),
        ("person", "robert-ammer"),
        ("person", "xyzzy-quux"),
    ]
    on_sqlite = await current(seeded_log)
    on_postgres = await current(seeded_postgres_log)
    for kind, given in asked:
        expected = (await _meant(on_sqlite, kind, given)).suggestions
        assert (await _meant(on_postgres, kind, given)).suggestions == expected, given


@pytest.mark.parametrize(
    ("kind", "given"),
    [
        ("organisation", "xyzzy"),
        ("organisation", "dhx"),
        ("person", "robert-smith"),
        ("post", "ice-chief-of-staff"),
    ],
)
async def test_text_like_no_entity_suggests_nothing(
    seeded_log: EventLog, kind: EntityKind, given: str
) -> None:
    queries = await current(seeded_log)
    assert (await _meant(queries, kind, given)).suggestions == ()


async def test_a_mistyped_id_is_looked_up_a_few_times_in_an_index(seeded_log: EventLog) -> None:
    # An error anyone can ask for over HTTP: a bounded few indexed lookups, however long.
    queries = await current(seeded_log)
    statements = recording_statements(queries)
    await _meant(queries, "person", "robert-" + "q" * 30 + "-zzzz" * 5)
    lookups = [sql for sql, _ in statements if "p_leadership_tails" in sql]
    assert 1 < len(lookups) <= 1 + 12
