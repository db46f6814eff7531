"""User projections: loaded by name from the projections/ folder; the shipped turnover one."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from leaderlog.errors import ProjectionError
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections import BUILTIN, Queries, load_projection, runner_for
from tests.conftest import ROOT, SEEDS
from tests.projections.logs import SEED_COUNT, append, record

USER_FOLDER = ROOT / "projections"


def _tenure_story() -> list[dict[str, object]]:
    """One agency post: Ann (permanent) for 366 days, Bob (acting) for 59, then Cyd and Dee."""
    appoint = "appointment"
    claims = [
        ("ann-in", appoint, "ann", "permanent", "2020-01-01", None),
        ("ann-out", "departure", "ann", "permanent", "2021-01-01", "retirement"),
        ("bob-in", appoint, "bob", "acting", "2021-01-02", None),
        ("bob-out", "departure", "bob", "acting", "2021-03-02", "term_end"),
        ("cyd-in", appoint, "cyd", "permanent", "2021-03-03", None),
        ("dee-in", appoint, "dee", "acting", "2021-04-01", None),
    ]
    found: list[dict[str, object]] = [
        record("org.registered", org="agency", name="Agency"),
        record("org.registered", org="office", name="Office", parent="agency"),
        record("post.defined", post="director", org="agency", title="Director"),
        record("post.defined", post="clerk", org="office", title="Clerk"),
        record("source.registered", source="gazette", url="https://example.com", publisher="G"),
        *(
            record("person.registered", person=p, name=p.title())
            for p in ("ann", "bob", "cyd", "dee")
        ),
    ]
    for claim, kind, person, capacity, day, cause in claims:
        data = {
            "claim": claim,
            "source": "gazette",
            "kind": kind,
            "person": person,
            "post": "director",
            "capacity": capacity,
            "effective": {"date": day},
            "modality": "occurred",
            "attribution": {"kind": "official"},
        }
        if cause:
            data["cause"] = cause
        found.append(record("claim.reported", **data))
    return found


async def test_turnover_counts_tenures_average_and_acting_share(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        await append(log, _tenure_story())
        runner = await runner_for(log.store, USER_FOLDER, also=("turnover",))
        await runner.rebuild(["turnover"])
        rows = await log.store.query(
            "SELECT org, tenures, closed, average_days, acting, acting_share FROM p_turnover_orgs "
            "ORDER BY org"
        )
        assert rows == [("agency", 4, 2, 212.5, 2, 0.5)]
        # incremental: retracting Dee's appointment and adding a clerk updates the figures
        await append(
            log,
            [
                record("claim.retracted", claim="dee-in", reason="Never happened."),
                record(
                    "claim.reported",
                    claim="ann-clerk",
                    source="gazette",
                    kind="incumbency",
                    person="ann",
                    post="clerk",
                    capacity="interim",
                    modality="occurred",
                    attribution={"kind": "official"},
                ),
            ],
        )
        # a new runner picks the registered user projection up by itself
        again = await runner_for(log.store, USER_FOLDER)
        assert [p.name for p in again.projections] == [*BUILTIN, "turnover"]
        await again.catch_up()
        rows = await log.store.query(
            "SELECT org, tenures, closed, average_days, acting, acting_share FROM p_turnover_orgs "
            "ORDER BY org"
        )
        assert rows == [("agency", 3, 2, 212.5, 1, 1 / 3), ("office", 1, 0, None, 1, 1.0)]


def ann_s_tenure_reported_by(
    source: str, registered: dict[str, Any], *, left_on: str
) -> list[dict[str, Any]]:
    """Ann's undated appointment as director of an agency and her departure on ``left_on``,
    both reported as having occurred by ``source`` (whose ``registered`` record comes first)."""
    return [
        record("org.registered", org="agency", name="Agency"),
        record("post.defined", post="director", org="agency", title="Director"),
        record("person.registered", person="ann", name="Ann"),
        registered,
        *(
            record(
                "claim.reported",
                claim=claim,
                source=source,
                kind=kind,
                person="ann",
                post="director",
                capacity="permanent",
                modality="occurred",
                attribution={"kind": "outlet"},
                **more,
            )
            for claim, kind, more in (
                ("ann-in", "appointment", {}),
                ("ann-out", "departure", {"effective": {"date": left_on}}),
            )
        ),
    ]


async def test_turnover_counts_a_claim_attributed_anew_from_the_new_source_s_date(
    sqlite_url: str,
) -> None:
    # Ann's appointment has no date of its own: it counts from when its source was out. A
    # correction on a later page attributes it to a source registered long before, whose
    # published date (2020-07-01, to the departure on 2021-01-01: 184 days) must count, as
    # history counts it and a rebuild reading it all in one page does.
    story = [
        *ann_s_tenure_reported_by(
            "blog",
            record("source.registered", source="blog", url="https://example.com/b", publisher="B"),
            left_on="2021-01-01",
        ),
        record(
            "source.registered",
            source="gazette",
            url="https://example.com/g",
            publisher="G",
            published={"date": "2020-07-01"},
        ),
    ]
    query = "SELECT org, tenures, closed, average_days FROM p_turnover_orgs"
    async with await EventLog.open(sqlite_url) as log:
        await append(log, story)
        runner = await runner_for(log.store, USER_FOLDER, also=("turnover",))
        await runner.catch_up()
        await append(
            log,
            [
                record(
                    "claim.corrected",
                    claim="ann-in",
                    changes={"source": "gazette"},
                    reason="The gazette reported it.",
                )
            ],
        )
        await runner.catch_up()
        incremental = await log.store.query(query)
        await runner.rebuild(["turnover"])
        assert await log.store.query(query) == incremental == [("agency", 1, 1, 184.0)]
        history = await Queries(log.store).history(post="director")
        assert history["tenures"][0]["start"]["date"] == "2020-07-01"


async def test_turnover_counts_a_vaguely_published_start_from_where_the_rules_do(
    sqlite_url: str,
) -> None:
    # A source dated only "2025", recorded on 1 March 2025, was out by then: Ann's undated
    # appointment counts from that day (state shows her holding the post on it), not from
    # the last day of 2025, so her tenure up to 1 June lasted 92 days, not none.
    story = [
        *ann_s_tenure_reported_by(
            "yearbook",
            record(
                "source.registered",
                source="yearbook",
                url="https://example.com/y",
                publisher="Y",
                published={"date": "2025"},
            ),
            left_on="2025-06-01",
        ),
    ]
    async with await EventLog.open(sqlite_url) as log:
        await append(log, story, recorded_at=dt.datetime(2025, 3, 1, tzinfo=dt.UTC))
        runner = await runner_for(log.store, USER_FOLDER, also=("turnover",))
        await runner.catch_up()
        state = await Queries(log.store).state(as_of="2025-03-01")
        assert [holder["person"] for holder in state["posts"][0]["holders"]] == ["ann"]
        rows = await log.store.query(
            "SELECT org, tenures, closed, average_days FROM p_turnover_orgs"
        )
        assert rows == [("agency", 1, 1, 92.0)]


async def test_a_registered_projection_whose_module_is_gone_is_skipped(
    sqlite_url: str, tmp_path: Path
) -> None:
    async with await EventLog.open(sqlite_url) as log:
        runner = await runner_for(log.store, USER_FOLDER, also=("turnover",))
        await runner.catch_up()
        elsewhere = await runner_for(log.store, tmp_path)
        assert [p.name for p in elsewhere.projections] == list(BUILTIN)


async def test_a_registered_projection_that_no_longer_loads_does_not_stop_queries(
    sqlite_url: str, tmp_path: Path
) -> None:
    (tmp_path / "turnover.py").write_text(
        (USER_FOLDER / "turnover.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    async with await EventLog.open(sqlite_url) as log:
        await (await runner_for(log.store, tmp_path, also=("turnover",))).catch_up()
        (tmp_path / "turnover.py").write_text("this is not python\n", encoding="utf-8")
        runner = await runner_for(log.store, tmp_path)
        assert [p.name for p in runner.projections] == list(BUILTIN)
        with pytest.raises(ProjectionError, match="failed to import"):
            await runner_for(log.store, tmp_path, also=("turnover",))


def test_builtin_names_load_without_the_folder(tmp_path: Path) -> None:
    assert load_projection("leadership", tmp_path).name == "leadership"


@pytest.mark.parametrize(
    ("name", "source", "message"),
    [
        ("missing", None, "unknown projection 'missing'"),
        ("Bad-Name", None, "not valid"),
        ("n" * 60, None, "not valid: .* at most 59 in all"),
        ("empty", "X = 1\n", "must set PROJECTION to a Projection subclass: it sets no PROJECTION"),
        (
            "nothing",
            "PROJECTION = None\n",
            "must set PROJECTION to a Projection subclass: it is None",
        ),
        (
            "an_instance",
            "from leaderlog.projections.audit import AuditProjection\n"
            "class P(AuditProjection):\n    name = 'an_instance'\nPROJECTION = P()\n",
            r"PROJECTION to a Projection subclass: it is an instance of P; set it to the class "
            r"itself \(PROJECTION = P\)",
        ),
        (
            "a_class",
            "class Mine:\n    name = 'a_class'\nPROJECTION = Mine\n",
            "it is the class Mine, which does not subclass Projection",
        ),
        ("a_name", "PROJECTION = 'turnover'\n", "it is str 'turnover'"),
        # with the type and the module's line, as a traceback would give them
        ("broken", "raise RuntimeError('no')\n", r"failed to import: RuntimeError: no \(line 1\)"),
        (
            "missing",
            "x = 1\nfrom nowhere import y\n",
            r"ModuleNotFoundError: No module named 'nowhere' \(line 2\)",
        ),
        (
            "misnamed",
            "from leaderlog.projections.leadership import LeadershipProjection\n"
            "class P(LeadershipProjection):\n    name = 'other'\nPROJECTION = P\n",
            r"PROJECTION \(P\) has name 'other'; a module is loaded by its file's name, so it "
            "must have name = 'misnamed'",
        ),
        (
            "unversioned",
            "from leaderlog.projections.audit import AuditProjection\n"
            "class P(AuditProjection):\n    name = 'unversioned'\n    version = '2'\n"
            "PROJECTION = P\n",
            r"PROJECTION \(P\) has version '2': it must have an integer version",
        ),
        ("exits", "import sys\nsys.exit(3)\n", r"failed to import: it exited \(3\) \(line 2\)"),
        ("bare", "raise BaseException('nope')\n", "failed to import: BaseException: nope"),
        ("closing", "raise GeneratorExit\n", r"failed to import: GeneratorExit \(line 1\)$"),
        (
            "unfinished",
            "from leaderlog.projections import Projection\n"
            "class P(Projection):\n    name = 'unfinished'\n    version = 1\n"
            "    def tables(self): return ()\nPROJECTION = P\n",
            "must implement apply, schema",
        ),
        (
            "exits_in_schema",
            "import sys\n"
            "from leaderlog.projections.audit import AuditProjection\n"
            "class P(AuditProjection):\n    name = 'exits_in_schema'\n"
            "    def schema(self): sys.exit(4)\nPROJECTION = P\n",
            r"could not be set up: it exited \(4\)",
        ),
        (
            "needs_setup",
            "from leaderlog.projections.audit import AuditProjection\n"
            "class P(AuditProjection):\n    name = 'needs_setup'\n"
            "    def __init__(self): raise KeyError('TOKEN')\nPROJECTION = P\n",
            "could not be set up: KeyError: 'TOKEN'",
        ),
        (
            "not_awaited",
            "from leaderlog.projections import Projection\n"
            "class P(Projection):\n    name = 'not_awaited'\n    version = 1\n"
            "    def schema(self): return ()\n    def tables(self): return ()\n"
            "    def apply(self, tx, events): tx.executemany('SELECT 1', [])\n"
            "PROJECTION = P\n",
            r"\(P\) must define apply with async def",
        ),
        (
            "yielding",
            "from leaderlog.projections import Projection\n"
            "class P(Projection):\n    name = 'yielding'\n    version = 1\n"
            "    def schema(self): return ()\n    def tables(self): return ()\n"
            "    async def apply(self, tx, events):\n"
            "        for event in events:\n            yield event\n"
            "PROJECTION = P\n",
            r"\(P\) defines apply as an async generator \(it yields\): it must be an async "
            "def that awaits its statements and yields nothing",
        ),
    ],
)
def test_bad_user_projections_are_refused(
    tmp_path: Path, name: str, source: str | None, message: str
) -> None:
    if source is not None:
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    with pytest.raises(ProjectionError, match=message):
        load_projection(name, tmp_path)


@pytest.mark.parametrize(
    ("version", "schema", "tables", "message"),
    [
        ("True", "()", "()", "version True is not a whole number from 1 to "),
        ("-1", "()", "()", "version -1 is not a whole number"),
        ("2**70", "()", "()", "is not a whole number"),
        (
            "1",
            "'CREATE TABLE IF NOT EXISTS p_shapeless_x (a TEXT)'",
            "()",
            "schema\\(\\) returned str: it must return a list of strings",
        ),
        ("1", "()", "None", "tables\\(\\) returned NoneType"),
        ("1", "[1]", "()", "schema\\(\\) returned list"),
    ],
)
def test_a_projection_s_version_and_declarations_must_have_their_shape(
    tmp_path: Path, version: str, schema: str, tables: str, message: str
) -> None:
    (tmp_path / "shapeless.py").write_text(
        "from leaderlog.projections import Projection\n"
        f"class P(Projection):\n    name = 'shapeless'\n    version = {version}\n"
        f"    def schema(self): return {schema}\n"
        f"    def tables(self): return {tables}\n"
        "    async def apply(self, tx, events): pass\n"
        "PROJECTION = P\n",
        encoding="utf-8",
    )
    with pytest.raises(ProjectionError, match=message):
        load_projection("shapeless", tmp_path)


def _declaring(name: str, tables: tuple[str, ...], schema: tuple[str, ...]) -> str:
    return (
        "from leaderlog.projections import Projection\n"
        f"class P(Projection):\n    name = {name!r}\n    version = 1\n"
        f"    def schema(self): return {schema!r}\n"
        f"    def tables(self): return {tables!r}\n"
        "    async def apply(self, tx, events): pass\n"
        "PROJECTION = P\n"
    )


@pytest.mark.parametrize(
    ("name", "tables", "schema", "message"),
    [
        (
            "thief",
            ("events",),
            (),
            "table 'events': it is not its own; its names start with p_thief_",
        ),
        ("thief", ("projection_checkpoints",), (), "table 'projection_checkpoints'"),
        ("feed", ("p_feed_entries_versions",), (), "belongs to projection feed_entries"),
        ("thief", ("p_thief_x; DROP TABLE events",), (), "not valid"),
        ("thief", (), ("DROP TABLE events",), "is not one CREATE TABLE/INDEX IF NOT EXISTS"),
        (
            "thief",
            (),
            ("CREATE TABLE IF NOT EXISTS p_thief_x (a TEXT); DROP TABLE events",),
            "holds a ';': give each statement as a string of its own",
        ),
        # A ';' outside quotes and comments starts a second statement, wherever it hides.
        *(
            ("thief", ("p_thief_x",), (statement,), "holds a ';': give each statement as")
            for statement in (
                "CREATE TABLE IF NOT EXISTS p_thief_x (a TEXT DEFAULT 'a;b'); DROP TABLE events",
                "CREATE TABLE IF NOT EXISTS p_thief_x (a TEXT DEFAULT 'it''s'); DROP TABLE x",
                'CREATE TABLE IF NOT EXISTS p_thief_x ("a;b" TEXT); DROP TABLE events',
                "CREATE TABLE IF NOT EXISTS p_thief_x (a TEXT /* ; */); DROP TABLE events",
                "CREATE TABLE IF NOT EXISTS p_thief_x (a TEXT) -- a;\n; DROP TABLE events",
                "CREATE TABLE IF NOT EXISTS p_thief_x (a TEXT DEFAULT 'a;b'; DROP TABLE events",
            )
        ),
        # Where SQLite and PostgreSQL disagree on where a quote or comment ends, a ';' in it
        # could end the statement for one of them (here PostgreSQL, then dropping events).
        *(
            ("thief", ("p_thief_x",), (statement,), f"holds a ';' in quotes or a comment {why}")
            for statement, why in (
                (
                    "CREATE TABLE IF NOT EXISTS p_thief_x (a TEXT DEFAULT E'\\''); "
                    "DROP TABLE events; --')",
                    "beside '\\\\', which SQLite and PostgreSQL do not read alike",
                ),
                (
                    "CREATE TABLE IF NOT EXISTS p_thief_x (a TEXT DEFAULT $$'$$); "
                    "DROP TABLE events; --')",
                    "beside '\\$'",
                ),
                (
                    "CREATE TABLE IF NOT EXISTS p_thief_x (a TEXT /* /* */ ' */); "
                    "DROP TABLE events; --')",
                    "beside a comment inside a comment",
                ),
                (
                    "CREATE TABLE IF NOT EXISTS p_thief_x (a TEXT) -- a\r'\n; DROP TABLE x; --'",
                    "beside a carriage return",
                ),
            )
        ),
        # What is wrong is said, not only that the statement is refused.
        (
            "thief",
            ("p_thief_x",),
            ("-- what it saw\nCREATE TABLE IF NOT EXISTS p_thief_x (a TEXT)",),
            "statement '-- what it saw CREATE TABLE IF NOT EXISTS p_thief_x \\(a TEXT\\)' "
            "starts with a comment: give the statement alone, with comments in Python",
        ),
        (
            "thief",
            ("p_thief_x",),
            ('CREATE TABLE IF NOT EXISTS "p_thief_x" (a TEXT)',),
            'names a table or index in quotes \\("p_thief_x"\\): write it unquoted \\(p_thief_x\\)',
        ),
        # A quoted table name once let an index on another's table through.
        (
            "thief",
            (),
            ('CREATE INDEX IF NOT EXISTS p_thief_i ON "events" (stream)',),
            'in quotes \\("events"\\)',
        ),
        (
            "thief",
            ("p_thief_x",),
            ("CREATE TABLE p_thief_x (a TEXT)",),
            "lacks IF NOT EXISTS: every start runs it again",
        ),
        ("thief", (), ("CREATE INDEX IF NOT EXISTS p_thief_i ON events (stream)",), "'events'"),
        (
            "thief",
            (),
            ("CREATE TABLE IF NOT EXISTS p_audit_claims (a TEXT)",),
            "to projection audit",
        ),
        (
            "leadership_org",
            ("p_leadership_org_mine",),
            (),
            "the name 'leadership_org' would take p_leadership_org_tree, "
            "p_leadership_org_tree_org from the built-in projection leadership",
        ),
        # A rebuild drops only what tables() lists: an unlisted table would keep old rows.
        (
            "forgetful",
            ("p_forgetful_seen",),
            (
                "CREATE TABLE IF NOT EXISTS p_forgetful_seen (a TEXT)",
                "CREATE TABLE IF NOT EXISTS p_forgetful_more (a TEXT)",
            ),
            r"table 'p_forgetful_more' is created by schema\(\) but not listed in tables\(\): "
            r"list it in tables\(\), so that a rebuild drops it",
        ),
        (
            "forgetful",
            (),
            ("CREATE TABLE IF NOT EXISTS P_Forgetful_Seen (a TEXT)",),
            "table 'P_Forgetful_Seen' is created by schema",
        ),
        # PostgreSQL cuts names to 63 bytes: these two would become one table there.
        (
            "long",
            ("p_long_" + "x" * 56 + "_a", "p_long_" + "x" * 56 + "_b"),
            (),
            "table name 'p_long_x+_a' is longer than 63 bytes",
        ),
        (
            "long",
            (),
            (f"CREATE INDEX IF NOT EXISTS p_long_{'i' * 60} ON p_long_t (a)",),
            "index name 'p_long_i+' is longer than 63 bytes",
        ),
    ],
)
async def test_a_projection_may_only_declare_its_own_tables(
    sqlite_url: str,
    tmp_path: Path,
    name: str,
    tables: tuple[str, ...],
    schema: tuple[str, ...],
    message: str,
) -> None:
    """The runner drops ``tables()`` on rebuild: naming the log there once destroyed it."""
    (tmp_path / f"{name}.py").write_text(_declaring(name, tables, schema), encoding="utf-8")
    async with await EventLog.open(sqlite_url) as log:
        await load_seeds(log, SEEDS)
        with pytest.raises(ProjectionError, match=message):
            await runner_for(log.store, tmp_path, also=(name,))
        assert (await log.store.verify()).count == SEED_COUNT


def test_a_user_module_cannot_take_a_builtin_name(tmp_path: Path) -> None:
    from leaderlog.projections.loading import load_user_projection

    (tmp_path / "audit.py").write_text(
        "from leaderlog.projections.audit import AuditProjection\nPROJECTION = AuditProjection\n",
        encoding="utf-8",
    )
    with pytest.raises(ProjectionError, match="built-in"):
        load_user_projection("audit", tmp_path, builtin=BUILTIN)


def test_the_folder_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from leaderlog.projections import user_projection_folder

    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(tmp_path))
    assert user_projection_folder() == tmp_path
    monkeypatch.delenv("LEADERLOG_PROJECTIONS")
    monkeypatch.chdir(tmp_path)
    assert user_projection_folder() == tmp_path / "projections"
    # set but empty, it turns user projections off rather than mean ./projections
    for empty in ("", "  "):
        monkeypatch.setenv("LEADERLOG_PROJECTIONS", empty)
        assert user_projection_folder() is None


# A ';' in quoted text or a comment belongs to the statement; so does one that ends it.
_QUOTED_SEMICOLONS = (
    "CREATE TABLE IF NOT EXISTS p_quoted_seen (position BIGINT, "
    "note TEXT DEFAULT 'a;b' /* ; */, \"x;y\" TEXT DEFAULT 'it''s;') -- ;\n;",
)


async def a_quoted_semicolon_is_part_of_its_statement(log: EventLog, folder: Path) -> None:
    # given a projection whose schema() holds a ';' in a string, a name and a comment
    (folder / "quoted.py").write_text(
        "from leaderlog.projections import Projection\n"
        "class P(Projection):\n    name = 'quoted'\n    version = 1\n"
        f"    def schema(self): return {_QUOTED_SEMICOLONS!r}\n"
        "    def tables(self): return ('p_quoted_seen',)\n"
        "    async def apply(self, tx, events):\n"
        "        await tx.executemany('INSERT INTO p_quoted_seen (position) VALUES (?)',\n"
        "                             [(event.position,) for event in events])\n"
        "PROJECTION = P\n",
        encoding="utf-8",
    )
    # when it is built, then it loads, and its table has the defaults as written
    runner = await runner_for(log.store, folder, also=("quoted",))
    await runner.rebuild(["quoted"])
    rows = await log.store.query(
        'SELECT COUNT(*), MIN(note), MIN("x;y") FROM p_quoted_seen WHERE position > 0'
    )
    assert rows == [(SEED_COUNT, "a;b", "it's;")]


async def test_a_quoted_semicolon_is_part_of_its_statement(
    seeded_log: EventLog, tmp_path: Path
) -> None:
    await a_quoted_semicolon_is_part_of_its_statement(seeded_log, tmp_path)


async def test_postgres_a_quoted_semicolon_is_part_of_its_statement(
    seeded_postgres_log: EventLog, tmp_path: Path
) -> None:
    await a_quoted_semicolon_is_part_of_its_statement(seeded_postgres_log, tmp_path)


def test_an_apply_wrapped_by_a_decorator_that_keeps_its_coroutine_loads(tmp_path: Path) -> None:
    (tmp_path / "wrapped.py").write_text(
        "import functools\n"
        "from leaderlog.projections import Projection\n"
        "def logged(apply):\n"
        "    @functools.wraps(apply)\n"
        "    def wrapper(self, tx, events):\n"
        "        return apply(self, tx, events)\n"
        "    return wrapper\n"
        "class P(Projection):\n    name = 'wrapped'\n    version = 1\n"
        "    def schema(self): return ()\n    def tables(self): return ()\n"
        "    @logged\n"
        "    async def apply(self, tx, events): pass\n"
        "PROJECTION = P\n",
        encoding="utf-8",
    )
    assert load_projection("wrapped", tmp_path).name == "wrapped"
