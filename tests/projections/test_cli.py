"""The projection commands as a user runs them: state, history, claim, audit, rebuild."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import leaderlog.cli.projection_commands  # noqa: F401  (registers the commands on main)
from leaderlog.cli import main
from leaderlog.cli._app import escaped
from leaderlog.cli.projection_commands import _print_posts
from leaderlog.projections import BUILTIN, ProjectionRunner
from leaderlog.projections.audit import AuditProjection
from tests.conftest import ROOT, invoke, ok
from tests.projections.logs import (
    ANOTHER_CLAIM,
    GENALO_RETIREMENT,
    HAMMER_BODY,
    HAMMER_CAPTION,
    SEED_FILE,
    record,
    seen_projection_module,
)

COMMANDS = ("state", "history", "claim", "audit", "rebuild", "projections")


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A database holding the seed article, with no projection built yet."""
    monkeypatch.delenv("LEADERLOG_DB", raising=False)
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(ROOT / "projections"))
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    ok(invoke(url, "import", str(SEED_FILE)))
    return url


def source_record(source: str, url: str, publisher: str) -> dict[str, Any]:
    """A ``source.registered`` record without a publication date."""
    return {
        "type": "source.registered",
        "data": {"source": source, "url": url, "publisher": publisher},
    }


def import_records(db: str, folder: Path, records: list[dict[str, Any]], *more: str) -> None:
    """Import ``records`` as one JSON Lines file (``more``: options of ``import``)."""
    path = folder / "records.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    ok(invoke(db, "import", *more, str(path)))


def as_json(result: Result) -> Any:
    return json.loads(ok(result))


def fails(result: Result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert message in result.stderr


def build_user_projection(db: str, folder: Path, name: str) -> None:
    """A user projection, seeing events, written to the projections folder and rebuilt."""
    (folder / f"{name}.py").write_text(seen_projection_module(name), encoding="utf-8")
    ok(invoke(db, "rebuild", name))


def test_state_catches_up_and_shows_the_leadership(db: str) -> None:
    text = ok(invoke(db, "state", "--org", "ice", "--as-of", "2025-06-15"))
    assert "Leadership in Immigration and Customs Enforcement (ice) as of 2025-06-15" in text
    assert (
        "holder    Kenneth Genalo (kenneth-genalo), acting, by about 2025-05 (when source "
        "fox-ice-shakeup-2025-05 was out)" in text
    )
    assert f"claim {GENALO_RETIREMENT}" in text
    # the conflict names who it is about, not only the claims, as its JSON does
    assert (
        "conflict  disputed: Robert Hammer (robert-hammer); claims "
        "fox-ice-shakeup-2025-05-hammer-hsi-caption, fox-ice-shakeup-2025-05-hammer-hsi-body - "
        in text
    )
    assert "White House Deputy" not in text


def test_state_json_on_both_time_axes(db: str) -> None:
    answer = as_json(invoke(db, "state", "--as-of", "2025-05-20", "--known-at", "29", "--json"))
    assert answer["as_of"] == "2025-05-20"
    assert answer["known_at"]["position"] == 29
    # the article counts from the end of May, so on 20 May nothing is known in effect
    assert {post["vacancy"] for post in answer["posts"]} == {"unknown"}
    later = as_json(invoke(db, "state", "--org", "ice-ero", "--as-of", "2025-06-01", "--json"))
    assert later["posts"][0]["holders"][0]["person"] == "kenneth-genalo"
    by_time = as_json(invoke(db, "state", "--known-at", "2000-01-01T00:00:00Z", "--json"))
    assert (by_time["known_at"]["position"], by_time["posts"]) == (0, [])
    # ICE was not registered yet in 2000
    fails(
        invoke(db, "state", "--known-at", "2000-01-01T00:00:00Z", "--org", "ice"),
        "error: organisation 'ice' is not known at position 0: it was registered at position 3",
    )


def test_a_time_before_the_log_begins_says_nothing_was_recorded_by_then(db: str) -> None:
    text = ok(invoke(db, "state", "--known-at", "2000-01-01T00:00:00Z"))
    assert "known at position 0 (nothing was recorded by then)" in text
    assert "the log is empty" not in text


def test_history_of_a_post_a_person_and_an_org(db: str) -> None:
    text = ok(invoke(db, "history", "--post", "ice-hsi-ead"))
    assert (
        "Robert Hammer (robert-hammer), unspecified, by about 2025-05 (when source "
        "fox-ice-shakeup-2025-05 was out) "
        "to now" in text
    )
    person = as_json(invoke(db, "history", "--person", "derek-gordon", "--json"))
    assert [tenure["post"] for tenure in person["tenures"]] == ["ice-hsi-dsac"]
    org = as_json(invoke(db, "history", "--org", "dhs", "--json"))
    assert len(org["tenures"]) == 4
    assert "fox-ice-shakeup-2025-05" in org["sources"]


def test_claim_lifecycle(db: str) -> None:
    text = ok(invoke(db, "claim", HAMMER_CAPTION))
    assert "as acting Executive Associate Director, Homeland Security Investigations" in text
    # no date given: the day the state counts it from, as the state says it
    assert (
        "occurred on a date not given (counted from about 2025-05, when source "
        "fox-ice-shakeup-2025-05 was out)" in text
    )
    assert f"Claim {HAMMER_CAPTION}: disputed" in text
    # who the claim rests on, as the article tells it
    assert "\n  attribution: outlet\n" in text
    told = ok(invoke(db, "claim", GENALO_RETIREMENT))
    assert "\n  attribution: anonymous (White House, ICE)\n" in told
    assert "claim.reported   by cli from Fox News" in text
    assert "claim.disputed   by cli from Fox News" in text
    assert "against fox-ice-shakeup-2025-05-hammer-hsi-body; The photo caption" in text
    answer = as_json(invoke(db, "claim", HAMMER_CAPTION, "--json"))
    assert [step["type"] for step in answer["lifecycle"]] == ["claim.reported", "claim.disputed"]
    # the claim the caption's dispute names shows that dispute too
    body = ok(invoke(db, "claim", HAMMER_BODY))
    assert f"disputed by claim {HAMMER_CAPTION} from Fox News <https://www.foxnews.com/" in body
    assert ": The photo caption" in body.split("disputed by claim", 1)[1]
    # the date the state counts it from, and why; none for a change only expected
    assert answer["current"]["counts_from"] == {
        "date": "2025-05",
        "qualifier": "about",
        "text": None,
        "basis": "published",
        "source": "fox-ice-shakeup-2025-05",
    }
    expected = as_json(invoke(db, "claim", GENALO_RETIREMENT, "--json"))
    assert expected["current"]["counts_from"] is None


def test_a_claim_without_a_date_from_an_undated_source_counts_from_its_recording(
    db: str, tmp_path: Path
) -> None:
    records = [
        source_record("undated", "https://example.org/a", "X"),
        record(
            "claim.reported",
            claim="undated-claim",
            source="undated",
            kind="incumbency",
            person="derek-gordon",
            post="ice-hsi-dsac",
            capacity="unspecified",
            effective={"text": "lately"},
            modality="occurred",
            attribution={"kind": "outlet"},
        ),
    ]
    import_records(db, tmp_path, records)
    answer = as_json(invoke(db, "claim", "undated-claim", "--json"))
    recorded = answer["lifecycle"][0]["recorded_at"][:10]
    text = ok(invoke(db, "claim", "undated-claim"))
    assert f'occurred "lately" (counted from {recorded}, when recorded from source undated)' in text


def test_a_change_confirmed_without_a_date_names_the_confirming_source_it_counts_from(
    db: str, tmp_path: Path
) -> None:
    # Gordon's acting appointment, only expected in the article, confirmed by a wire out on
    # 12 June that gives no date: it counts from the wire, which the answers name
    wire = source_record("wire-b", "https://example.org/b", "Wire")
    wire["data"]["published"] = {"date": "2025-06-12"}
    confirmation = record(
        "claim.confirmed", claim="fox-ice-shakeup-2025-05-gordon-hsi-acting", source="wire-b"
    )
    import_records(db, tmp_path, [wire, confirmation])
    text = ok(invoke(db, "state", "--org", "ice-hsi", "--as-of", "2025-06-20"))
    assert "Derek Gordon (derek-gordon), acting, by 2025-06-12 (when source wire-b was out)" in text
    answer = as_json(invoke(db, "state", "--org", "ice-hsi", "--as-of", "2025-06-20", "--json"))
    holders = [holder for post in answer["posts"] for holder in post["holders"]]
    gordon = next(
        holder
        for holder in holders
        if holder["claims"] == ["fox-ice-shakeup-2025-05-gordon-hsi-acting"]
    )
    assert gordon["since"]["source"] == "wire-b"
    told = ok(invoke(db, "claim", "fox-ice-shakeup-2025-05-gordon-hsi-acting"))
    assert "(counted from 2025-06-12, when source wire-b was out)" in told


def test_a_pending_claim_without_any_date_says_its_date_is_unknown(db: str, tmp_path: Path) -> None:
    records = [
        record(
            "claim.reported",
            claim="undated-rumour",
            source="fox-ice-shakeup-2025-05",
            kind="appointment",
            person="derek-gordon",
            post="ice-hsi-dsac",
            capacity="acting",
            modality="rumored",
            attribution={"kind": "anonymous"},
        ),
    ]
    import_records(db, tmp_path, records)
    text = ok(invoke(db, "claim", "undated-rumour"))
    assert "(ice-hsi-dsac), rumored, date unknown\n" in text


def test_claim_shows_the_date_a_confirmation_gives_and_what_a_correction_changed(
    db: str, tmp_path: Path
) -> None:
    records = [
        {
            "type": "claim.confirmed",
            "data": {
                "claim": GENALO_RETIREMENT,
                "source": "fox-ice-shakeup-2025-05",
                "effective": {"date": "2025-06-13"},
                "quote": "Genalo retires on June 13.",
            },
        },
        {
            "type": "claim.corrected",
            "data": {
                "claim": GENALO_RETIREMENT,
                "changes": {"capacity": "permanent", "effective": {"date": "2025-06-30"}},
                "reason": "He was not acting.",
            },
        },
    ]
    import_records(db, tmp_path, records)
    text = ok(invoke(db, "claim", GENALO_RETIREMENT, "--known-at", "30"))
    assert ', expected "soon", confirmed for 2025-06-13' in text
    assert "claim.confirmed  by cli from Fox News" in text
    assert ': for 2025-06-13\n            "Genalo retires on June 13."' in text
    text = ok(invoke(db, "claim", GENALO_RETIREMENT))
    assert "as permanent Executive Associate Director" in text
    assert ", expected 2025-06-30\n" in text  # the correction's date, over the confirmation's
    assert ": capacity -> permanent, effective -> 2025-06-30; He was not acting." in text


def test_the_article_s_requests_for_comment_are_shown_by_claim_and_audit(db: str) -> None:
    text = ok(invoke(db, "claim", GENALO_RETIREMENT))
    assert "comment asked of ice for the report by Fox News: no response" in text
    answer = as_json(invoke(db, "claim", GENALO_RETIREMENT, "--json"))
    asked = [("ice", "no_response"), ("ice-hsi", "no_response")]
    assert [(c["org"], c["outcome"]) for c in answer["comments"]] == asked
    audit = as_json(invoke(db, "audit", "--type", "comment.requested", "--json"))
    assert [(e["org"], e["outcome"]) for e in audit["events"]] == asked
    assert "asked ice: no response" in ok(invoke(db, "audit", "--type", "comment.requested"))


def _genalo_retirement_confirmed_by_ice() -> list[dict[str, Any]]:
    return [
        source_record("ice-release", "https://www.ice.gov/r", "ICE"),
        record(
            "claim.confirmed",
            claim=GENALO_RETIREMENT,
            source="ice-release",
            effective={"date": "2025-06-13"},
        ),
    ]


def test_history_names_every_source_of_a_claim_the_one_that_confirmed_it_too(
    db: str, tmp_path: Path
) -> None:
    import_records(db, tmp_path, _genalo_retirement_confirmed_by_ice())
    text = ok(invoke(db, "history", "--post", "ice-ero-ead"))
    assert f"departure claim {GENALO_RETIREMENT} (expected, confirmed) from Fox News, ICE" in text


def test_history_names_an_outlet_that_disputed_a_claim_apart_from_those_it_rests_on(
    db: str, tmp_path: Path
) -> None:
    # It read "from Fox News, Daily Ledger", as if the outlet that said the opposite had
    # reported it too.
    records = [
        *_genalo_retirement_confirmed_by_ice(),
        source_record("ledger", "https://ledger.example/genalo", "Daily Ledger"),
        record(
            "claim.disputed",
            claim=GENALO_RETIREMENT,
            source="ledger",
            reason="Genalo told the Ledger he is staying.",
        ),
    ]
    import_records(db, tmp_path, records)
    text = ok(invoke(db, "history", "--post", "ice-ero-ead"))
    assert (
        f"departure claim {GENALO_RETIREMENT} (expected, disputed) from Fox News, ICE; "
        "disputed by Daily Ledger"
    ) in text
    answer = as_json(invoke(db, "history", "--post", "ice-ero-ead", "--json"))
    (evidence,) = [
        item
        for tenure in answer["tenures"]
        for item in tenure["evidence"]
        if item["claim"] == GENALO_RETIREMENT
    ]
    assert evidence["disputed_by"] == ["ledger"]
    assert evidence["sources"] == ["fox-ice-shakeup-2025-05", "ice-release", "ledger"]


def test_audit_of_retracted_anonymous_claims(db: str, tmp_path: Path) -> None:
    retraction = {
        "type": "claim.retracted",
        "data": {"claim": GENALO_RETIREMENT, "reason": "He is staying on."},
    }
    import_records(db, tmp_path, [retraction], "--actor", "desk")
    answer = as_json(
        invoke(db, "audit", "--attribution", "anonymous", "--status", "retracted", "--json")
    )
    assert [(event["type"], event["actor"]) for event in answer["events"]] == [
        ("claim.reported", "cli"),
        ("claim.retracted", "desk"),
    ]
    text = ok(invoke(db, "audit", "--type", "claim.disputed"))
    assert HAMMER_CAPTION in text
    assert "(no matching events)" in ok(
        invoke(
            db, "audit", "--actor", "cli", "--type", "comment.requested", "--status", "retracted"
        )
    )
    assert "--after 5" in ok(invoke(db, "audit", "--limit", "5"))
    # a page after a page says to run the command again with the next --after, not to add
    # one to a command that has one already (it would be refused as given twice)
    second_page = ok(invoke(db, "audit", "--after", "5", "--limit", "5"))
    assert second_page.splitlines()[-1] == "... more: run it again with --after 10"


def test_control_characters_in_stored_text_cannot_fake_or_hide_output_lines(
    db: str, tmp_path: Path
) -> None:
    # given a holder renamed with a carriage return, a newline and a right-to-left override
    rename = tmp_path / "rename.jsonl"
    record = {
        "type": "person.updated",
        "data": {
            "person": "kenneth-genalo",
            "name": "Mallory Evil\rKristi\u2028Noem\nholder  x\u202e(ygrenE fo .peD)",
        },
    }
    rename.write_text(json.dumps(record) + "\n", encoding="utf-8")
    ok(invoke(db, "import", str(rename)))
    # then text output shows them escaped, on the line they belong to
    text = ok(invoke(db, "state", "--org", "ice-ero", "--as-of", "2025-06-15"))
    assert "\r" not in text
    assert (
        "holder    Mallory Evil\\rKristi\\u2028Noem\\nholder  x\\u202e(ygrenE fo .peD) "
        "(kenneth-genalo)" in text
    )
    assert "\u202e" not in text and "\u2028" not in text
    unknown = invoke(db, "history", "--person", "mallory")
    assert unknown.exit_code == 1
    assert unknown.stderr.count("\n") == 1 and "\r" not in unknown.stderr


def test_rebuild_and_projections(db: str) -> None:
    rebuilt = invoke(db, "rebuild")
    text = ok(rebuilt)
    assert text.startswith(f"rebuilt {', '.join(BUILTIN)} to position 29 in ")
    # its progress bar is drawn on a terminal only: into a file or pipe it left a blank line
    assert rebuilt.stderr == ""
    statuses = as_json(invoke(db, "projections", "--json"))
    assert [(s["name"], s["checkpoint"], s["lag"]) for s in statuses] == [
        (name, 29, 0) for name in BUILTIN
    ]
    # a user projection is loaded by name and then listed with the others
    assert ok(invoke(db, "rebuild", "turnover")).startswith("rebuilt turnover to position 29")
    table = ok(invoke(db, "projections"))
    assert [line.split()[0] for line in table.splitlines()] == ["name", *BUILTIN, "turnover"]


def test_a_built_projection_whose_module_is_not_found_is_listed_as_not_loaded(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ok(invoke(db, "rebuild", "turnover")).startswith("rebuilt turnover")
    # run from somewhere without that projections/ folder
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(tmp_path))
    (row,) = [s for s in as_json(invoke(db, "projections", "--json")) if s["name"] == "turnover"]
    assert row["checkpoint"] == 29
    assert row["problem"].startswith("not loaded: unknown projection 'turnover'")
    assert str(tmp_path / "turnover.py") in row["problem"]
    last = ok(invoke(db, "projections")).splitlines()[-1]
    assert last.startswith("turnover") and "not loaded: unknown projection" in last


COUNTING_PROJECTION = """
from leaderlog.projections import Projection


class Counting(Projection):
    name = "counting"
    version = VERSION

    def schema(self):
        return ("CREATE TABLE IF NOT EXISTS p_counting_rows (position BIGINT)",)

    def tables(self):
        return ("p_counting_rows",)

    async def apply(self, tx, events):
        await tx.executemany(
            "INSERT INTO p_counting_rows (position) VALUES (?)", [(e.position,) for e in events]
        )


PROJECTION = Counting
"""


def test_rebuilding_one_projection_also_rebuilds_one_whose_module_changed_version(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "counting.py"
    module.write_text(COUNTING_PROJECTION.replace("VERSION", "1"), encoding="utf-8")
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(tmp_path))
    ok(invoke(db, "rebuild", "counting"))
    # when its module changes version and another projection is rebuilt
    module.write_text(COUNTING_PROJECTION.replace("VERSION", "2"), encoding="utf-8")
    text = ok(invoke(db, "rebuild", "audit"))
    # then it is rebuilt too (not left emptied until the next query), and the output says so
    assert text.startswith("rebuilt audit to position 29 in ")
    assert text.endswith("\nalso rebuilt counting (version 1 in the database, its module says 2)\n")
    statuses = {s["name"]: s for s in as_json(invoke(db, "projections", "--json"))}
    assert (statuses["counting"]["version"], statuses["counting"]["checkpoint"]) == (2, 29)
    # when its checkpoint is found beyond the log's end (the log was replaced), it is said
    database = sqlite3.connect(db.removeprefix("sqlite:///"))
    with database:
        database.execute("UPDATE projection_checkpoints SET position = 40 WHERE name = 'counting'")
    database.close()
    text = ok(invoke(db, "rebuild", "audit"))
    assert text.endswith(
        "\nalso rebuilt counting (it had applied the log up to position 40, beyond its end at "
        "29: built from another log)\n"
    )


def test_a_first_rebuild_of_one_says_the_others_were_built_for_the_first_time(
    db: str,
) -> None:
    # given a log no command has built a projection of yet
    text = ok(invoke(db, "rebuild", "turnover"))
    # then building one builds the built-ins too, and says they were never built before
    assert text.startswith("rebuilt turnover to position 29 in ")
    assert text.endswith(
        f"\nalso built {', '.join(BUILTIN)} (never built in this database before)\n"
    )
    assert "also rebuilt" not in text


FAILING_PROJECTION = """
from leaderlog.projections import Projection


class Failing(Projection):
    name = "failing"
    version = 1

    def schema(self):
        return ("CREATE TABLE IF NOT EXISTS p_failing_rows (position BIGINT)",)

    def tables(self):
        return ("p_failing_rows",)

    async def apply(self, tx, events):
        raise ValueError("no such column in my head")


PROJECTION = Failing
"""


def test_a_user_projection_that_raises_is_named_and_does_not_stop_queries(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "failing.py").write_text(FAILING_PROJECTION, encoding="utf-8")
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(tmp_path))
    # building it fails with the projection, the events and the line that raised
    fails(
        invoke(db, "rebuild", "failing"),
        "error: projection failing could not apply events 1-29: ValueError: no such column in "
        f"my head ({tmp_path / 'failing.py'}, line 16); it stays at position 0 until that is "
        "fixed",
    )
    # queries still answer from the built-ins, with the failure as a warning
    answered = invoke(db, "state", "--org", "ice-hsi")
    assert "Leadership in Homeland Security Investigations (ice-hsi)" in ok(answered)
    assert answered.stderr.startswith("warning: projection failing could not apply events 1-29")
    statuses = {s["name"]: s for s in as_json(invoke(db, "projections", "--json"))}
    assert statuses["failing"]["checkpoint"] == 0
    assert statuses["leadership"]["checkpoint"] == 29


def test_a_rebuild_that_fails_for_one_projection_says_what_it_rebuilt(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "failing.py").write_text(FAILING_PROJECTION, encoding="utf-8")
    (tmp_path / "counting.py").write_text(
        COUNTING_PROJECTION.replace("VERSION", "1"), encoding="utf-8"
    )
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(tmp_path))
    ok(invoke(db, "rebuild", "counting"))
    fails(invoke(db, "rebuild", "failing"), "error: projection failing could not apply")
    # when everything is rebuilt and one projection fails
    rebuilt = invoke(db, "rebuild")
    # then the output names the others, rebuilt to the head, before the error
    fails(rebuilt, "error: projection failing could not apply events 1-29: ValueError")
    assert rebuilt.stdout.startswith(
        f"rebuilt {', '.join(BUILTIN)}, counting to position 29 in "
    ), rebuilt.stdout
    assert "failing" not in rebuilt.stdout


def test_a_rebuild_of_everything_names_the_projections_whose_module_is_not_there(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok(invoke(db, "rebuild", "turnover"))
    # run from somewhere without that projections/ folder
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(tmp_path))
    rebuilt = invoke(db, "rebuild")
    assert ok(rebuilt).startswith(f"rebuilt {', '.join(BUILTIN)} to position 29 in ")
    assert rebuilt.stderr == (
        f"warning: projection turnover is not rebuilt: its module {tmp_path / 'turnover.py'} "
        "is not there; it stays at position 29 (if it is gone for good, `leaderlog projections "
        "--forget turnover` removes it)\n"
    )
    # naming projections says nothing of the others
    assert invoke(db, "rebuild", "audit").stderr == ""


def test_an_empty_projections_folder_setting_loads_no_user_projection(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok(invoke(db, "rebuild", "turnover"))
    # when LEADERLOG_PROJECTIONS is set empty, run from a folder holding projections/turnover.py
    (tmp_path / "projections").mkdir()
    (tmp_path / "projections" / "turnover.py").write_text(
        (ROOT / "projections" / "turnover.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", "")
    off = "LEADERLOG_PROJECTIONS is set empty, so no user projection is loaded"
    # then no user projection is loaded, and every command says why
    fails(
        invoke(db, "rebuild", "turnover"),
        f"error: unknown projection 'turnover': it is not built in ({', '.join(BUILTIN)}) and "
        f"{off}\n",
    )
    rebuilt = invoke(db, "rebuild")
    assert ok(rebuilt).startswith(f"rebuilt {', '.join(BUILTIN)} to position 29")
    assert rebuilt.stderr == (
        f"warning: projection turnover is not rebuilt: {off}; it stays at position 29 (if it "
        "is gone for good, `leaderlog projections --forget turnover` removes it)\n"
    )
    (row,) = [s for s in as_json(invoke(db, "projections", "--json")) if s["name"] == "turnover"]
    assert off in row["problem"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("state", "--org", "atlantis"), "error: unknown organisation 'atlantis'"),
        (("history", "--person", "nobody"), "unknown person 'nobody'"),
        (("state", "--org", "ero"), "unknown organisation 'ero'; did you mean ice-ero (ERO,"),
        (("history", "--person", "hammer"), "did you mean robert-hammer (Robert Hammer,"),
        (("claim", "no-such-claim"), "unknown claim 'no-such-claim'"),
        (
            ("claim", "gordon-hsi"),
            "did you mean fox-ice-shakeup-2025-05-gordon-hsi-acting (appointment of "
            "derek-gordon at ice-hsi-ead) or fox-ice-shakeup-2025-05-gordon-hsi-dsac",
        ),
        (("rebuild", "nope"), "unknown projection 'nope'"),
    ],
)
def test_errors_are_clear_and_exit_1(db: str, args: tuple[str, ...], message: str) -> None:
    fails(invoke(db, *args), message)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # Each option is named as the command line spells it.
        (("state", "--as-of", "2025-02-30"), "--as-of '2025-02-30' is not a real day: day is"),
        (("state", "--as-of", "2024-13-01"), "--as-of '2024-13-01' is not a real day: month"),
        (("state", "--as-of", "2025-06"), "--as-of must be a calendar day YYYY-MM-DD"),
        (
            ("state", "--known-at", "soon"),
            "--known-at must be a log position (such as 42) or an RFC 3339 time",
        ),
        (("state", "--known-at", "999"), "--known-at position 999 is beyond the log's head (29)"),
        # A day written without its dashes reads as a position: said, with how to write it.
        (
            ("state", "--known-at", "20250529"),
            "--known-at position 20250529 is beyond the log's head (29); "
            "for a time, write the day as 2025-05-29",
        ),
        (("state", "--known-at", "-1"), "--known-at position must be 0 or more, got -1"),
        (
            ("state", "--known-at", "+22"),
            "--known-at position is written as a plain number, such as 22, without a plus sign; "
            "got '+22'",
        ),
        (
            ("state", "--known-at", "22.0"),
            "--known-at position is a whole number, such as 22; got '22.0'",
        ),
        (("history", "--post", "ice-hsi-ead", "--known-at", "3."), "such as 3; got '3.'"),
        (("state", "--known-at", "9" * 4301), "--known-at is 4301 characters long; no log"),
        (("audit", "--from", "2025-06-01T00:00:00." + "0" * 60 + "Z"), "--from is 81 characters"),
        (("history", "--post", "ice-hsi-ead", "--known-at", "-3"), "must be 0 or more, got -3"),
        (("history", "--post", "ice-hsi-ead", "--known-at", "+3"), "such as 3, without a plus"),
        (
            ("claim", HAMMER_CAPTION, "--known-at", "soon"),
            "known-at must be a log position (such as 42) or an RFC 3339 time",
        ),
        (("history",), "give exactly one of --person, --post or --org"),
        # the claim is an argument: named as click names it
        (("claim", ""), "Error: 'ID' must not be empty"),
        (("audit", "--status", "bogus"), "unknown status 'bogus'; known: reported,"),
        (("audit", "--type", "bogus"), "unknown event type 'bogus'; known: "),
        (("audit", "--attribution", "bogus"), "unknown attribution 'bogus'"),
        # every value refused, each on a line of its own
        (
            ("audit", "--status", "bogus", "--from", "nope", "--attribution", "zz"),
            "Error: unknown status 'bogus'; known: reported, confirmed, corrected, disputed, "
            "retracted\nError: unknown attribution 'zz'; known: official, named, anonymous, "
            "outlet\nError: --from must be an RFC 3339 time",
        ),
        (
            ("state", "--as-of", "2025-13-01", "--known-at", "soon"),
            "month must be in 1..12\nError: --known-at must be a log position",
        ),
        (("audit", "--from", "nope"), "--from must be an RFC 3339 time such as"),
        # A day is taken too, and the message says so.
        (("audit", "--to", "nope"), "2025-05-29T14:00:00Z or a day (2025-05-29), got 'nope'"),
        # Both named as options, as the API names both as its parameters.
        (
            ("audit", "--from", "2025-06-02", "--to", "2025-06-01"),
            "Error: --from (2025-06-02T00:00:00.000000Z) is after --to (2025-06-01T23:59:59",
        ),
        # Digits 0-9 only, as the HTTP API's after= and limit= take them.
        (("events", "--after", "\uff15"), "'\uff15' is not a whole number written in digits 0-9"),
        (("audit", "--limit", "\u0665"), "'\u0665' is not a whole number written in digits 0-9"),
        (("feed", "--page", "\uff11"), "'\uff11' is not a whole number written in digits 0-9"),
        # nor written as Python's int() would also read them
        (("events", "--after", "1_0"), "'1_0' is not a whole number written in digits 0-9"),
        (("audit", "--limit", "+5"), "'+5' is not a whole number written in digits 0-9"),
        (("events", "--limit", " 5"), "' 5' is not a whole number written in digits 0-9"),
        (("events", "--limit", "5.0"), "'5.0' is not a whole number written in digits 0-9"),
        (("rebuild", "Bad-Name"), "projection name 'Bad-Name' is not valid"),
        (("projections", "--forget", "Bad-Name"), "projection name 'Bad-Name' is not valid"),
        (("projections", "--forget", "audit"), "'audit' is a built-in projection"),
        # Bytes typed in Latin-1, as Python reads them from the command line: neither
        # database could be asked about them.
        (("state", "--org", "caf\udce9"), "--org 'caf\\udce9' holds bytes that are not UTF-8"),
        (("history", "--person", "\udcff"), "--person '\\udcff' holds bytes that are not"),
        (("claim", "\udcff"), "'ID' '\\udcff' holds bytes that are not UTF-8"),
        (("audit", "--publisher", "Caf\udce9"), "--publisher 'Caf\\udce9' holds bytes"),
        # Longer than any id, as the HTTP API's 422 says; these said the id was unknown.
        (("history", "--org", "a" * 65), "--org is 65 characters long; no id is longer than 64"),
        (("history", "--person", "a" * 65), "--person is 65 characters long; no id is longer"),
        (("state", "--org", "a" * 65), "--org is 65 characters long; no id is longer than 64"),
        (("claim", "a" * 65), "'ID' is 65 characters long; no id is longer than 64"),
        (("audit", "--source", "a" * 65), "--source is 65 characters long; no id is longer"),
        (("audit", "--publisher", "a" * 301), "--publisher is 301 characters long; no name is"),
    ],
)
def test_a_value_an_option_refuses_is_a_usage_mistake_exit_2(
    db: str, args: tuple[str, ...], message: str
) -> None:
    result = invoke(db, *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.stderr.startswith("Usage: ")  # with the command's usage, as click says
    # Refused before the projections are brought up to date: nothing was built or written.
    with sqlite3.connect(db.removeprefix("sqlite:///")) as connection:
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        assert [name for (name,) in tables] == ["events"]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("feed", "--scope", "bogus"), "'--scope'"),
        (("feed", "--lang", "xx"), "'--lang'"),
        (("feed", "--base-url", "ftp://x"), "'--base-url'"),
        (("rebuild", "Bad-Name"), "'NAME'"),
        (("projections", "--forget", "Bad-Name"), "'--forget'"),
        (("import", "--actor", "Desk", "-"), "'--actor'"),
    ],
)
def test_a_refused_value_names_its_option_as_click_does(
    db: str, args: tuple[str, ...], named: str
) -> None:
    result = invoke(db, *args)
    assert result.exit_code == 2, result.output
    assert f"Error: Invalid value for {named}: " in result.stderr


def probe_built_then_clashing_with_probe_x(db: str, folder: Path) -> None:
    """User projections probe and probe_x built, then probe's module edited to create a table
    of probe_x's."""
    for name in ("probe", "probe_x"):
        build_user_projection(db, folder, name)
    clashing = seen_projection_module(
        "probe",
        more_schema="'CREATE TABLE IF NOT EXISTS p_probe_x_more (b TEXT)'",
        more_tables="'p_probe_x_more'",
    )
    (folder / "probe.py").write_text(clashing, encoding="utf-8")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_has_an_example(command: str) -> None:
    text = ok(CliRunner().invoke(main, [command, "--help"]))
    assert "Example:" in text
    assert "leaderlog " + command in text


def test_a_user_projection_clashing_with_another_is_left_out_and_the_rest_runs(
    db: str, folder: Path
) -> None:
    # given two user projections built, then one edited to create a table of the other's
    probe_built_then_clashing_with_probe_x(db, folder)
    ok(invoke(db, "import", "-", stdin=ANOTHER_CLAIM))
    clash = (
        f"{folder / 'probe.py'}: table 'p_probe_x_more': it belongs to projection probe_x; its "
        "names start with p_probe_"
    )
    # when querying, then the answer comes, with the clash as a warning naming it
    answered = invoke(db, "state", "--org", "ice-hsi")
    assert "Leadership in Homeland Security Investigations" in ok(answered)
    assert answered.stderr == (
        f"warning: projection probe is left out: {clash}; it stays at position 29 until that "
        "is fixed (a running server loads its module again when restarted)\n"
    )
    # and the other projections went on to the head
    statuses = {s["name"]: s for s in as_json(invoke(db, "projections", "--json"))}
    assert statuses["probe_x"]["checkpoint"] == statuses["leadership"]["checkpoint"] == 30
    assert (statuses["probe"]["checkpoint"], statuses["probe"]["problem"]) == (
        29,
        f"not loaded: {clash}",
    )
    # and rebuilding everything rebuilds the others and names the one left out
    rebuilt = invoke(db, "rebuild")
    assert ok(rebuilt).startswith(f"rebuilt {', '.join(BUILTIN)}, probe_x to position 30")
    # (after the progress bar's line)
    assert rebuilt.stderr.lstrip("\n").startswith(f"warning: projection probe is left out: {clash}")
    # while rebuilding it by name is an error
    fails(invoke(db, "rebuild", "probe"), f"error: projection probe is left out: {clash}")


def test_a_projection_listed_as_not_loaded_for_a_clash_can_be_forgotten(
    db: str, folder: Path
) -> None:
    # given two user projections built, then one edited to create a table of the other's
    probe_built_then_clashing_with_probe_x(db, folder)
    statuses = {s["name"]: s for s in as_json(invoke(db, "projections", "--json"))}
    assert statuses["probe"]["problem"].startswith("not loaded: ")
    # when it is forgotten, then its own tables go, not the other's, and the module is named
    assert ok(invoke(db, "projections", "--forget", "probe")) == (
        "forgot probe: dropped p_probe_seen and its checkpoint (it was at position 29)\n"
        f"its module {folder / 'probe.py'} is still there: no command runs it unless "
        "`leaderlog rebuild probe` builds it again\n"
    )
    statuses = {s["name"]: s for s in as_json(invoke(db, "projections", "--json"))}
    assert "probe" not in statuses and "problem" not in statuses["probe_x"]
    answered = invoke(db, "state")
    assert (answered.exit_code, answered.stderr) == (0, "")
    # while the one that runs is still refused
    fails(
        invoke(db, "projections", "--forget", "probe_x"),
        f"error: projection probe_x still loads from {folder / 'probe_x.py'}",
    )


def test_a_user_module_named_like_a_builtin_is_reported_not_ignored(db: str, folder: Path) -> None:
    (folder / "audit.py").write_text(seen_projection_module("audit"), encoding="utf-8")
    said = (
        f"warning: {folder / 'audit.py'} is not loaded: 'audit' is a built-in projection name, "
        "and commands such as `leaderlog rebuild audit` use the built-in; rename the module and "
        "its PROJECTION\n"
    )
    for command in (("rebuild", "audit"), ("state",), ("projections",)):
        answered = invoke(db, *command)
        # (after the progress bar's line, for rebuild)
        assert (answered.exit_code, answered.stderr.lstrip("\n")) == (0, said), command
    # and a rebuild that fails says it too, before its error
    failing = seen_projection_module("failing").replace(
        "        await tx.executemany(",
        "        raise RuntimeError('no')\n        await tx.executemany(",
    )
    (folder / "failing.py").write_text(failing, encoding="utf-8")
    answered = invoke(db, "rebuild", "failing")
    assert answered.exit_code == 1
    warned, error = answered.stderr.lstrip("\n").split("\n", 1)
    assert warned + "\n" == said
    assert error.startswith("error: projection failing could not apply events 1-29")


def test_a_user_projection_taking_a_builtin_s_tables_is_refused_by_name(
    db: str, folder: Path
) -> None:
    (folder / "leadership_org.py").write_text(
        seen_projection_module("leadership_org"), encoding="utf-8"
    )
    fails(
        invoke(db, "rebuild", "leadership_org"),
        f"error: {folder / 'leadership_org.py'}: the name 'leadership_org' would take "
        "p_leadership_org_tree, p_leadership_org_tree_org from the built-in projection "
        "leadership (p_leadership_org_ is a longer prefix than p_leadership_): choose another "
        "name\n",
    )


def test_projections_shows_a_pending_rebuild_after_a_version_bump(db: str, folder: Path) -> None:
    (folder / "seen.py").write_text(seen_projection_module("seen", version=3), encoding="utf-8")
    ok(invoke(db, "rebuild", "seen"))
    (folder / "seen.py").write_text(seen_projection_module("seen", version=4), encoding="utf-8")
    last = ok(invoke(db, "projections")).splitlines()[-1]
    assert last.split()[:5] == ["seen", "3", "29", "29", "0"]
    assert last.endswith(
        "  version 3 in the database, its module says 4: rebuilt at the next query, rebuild or "
        "server start"
    )
    ok(invoke(db, "state"))
    assert ok(invoke(db, "projections")).splitlines()[-1].split() == ["seen", "4", "29", "29", "0"]


def test_a_user_projection_is_forgotten_once_its_module_is_gone(db: str, folder: Path) -> None:
    (folder / "seen.py").write_text(seen_projection_module("seen"), encoding="utf-8")
    ok(invoke(db, "rebuild", "seen"))
    # while its module loads, forgetting it is refused: every command would build it again
    fails(
        invoke(db, "projections", "--forget", "seen"),
        f"error: projection seen still loads from {folder / 'seen.py'}: remove or rename the "
        "module first",
    )
    (folder / "seen.py").unlink()
    listed = ok(invoke(db, "projections")).splitlines()[-1]
    assert "if it is gone for good, `leaderlog projections --forget seen` removes it" in listed
    assert ok(invoke(db, "projections", "--forget", "seen")) == (
        "forgot seen: dropped p_seen_seen and its checkpoint (it was at position 29)\n"
    )
    assert [s["name"] for s in as_json(invoke(db, "projections", "--json"))] == list(BUILTIN)
    fails(
        invoke(db, "projections", "--forget", "seen"),
        "error: no user projection 'seen' was built in this database",
    )


def test_a_table_schema_creates_but_tables_does_not_list_is_refused(db: str, folder: Path) -> None:
    # given a projection whose schema() creates a table its tables() leaves out
    (folder / "forgetful.py").write_text(
        seen_projection_module(
            "forgetful", more_schema="'CREATE TABLE IF NOT EXISTS p_forgetful_more (b TEXT)'"
        ),
        encoding="utf-8",
    )
    said = (
        f"{folder / 'forgetful.py'}: table 'p_forgetful_more' is created by schema() but not "
        "listed in tables(): list it in tables(), so that a rebuild drops it"
    )
    # then building it is refused, naming the table, before anything is written
    fails(invoke(db, "rebuild", "forgetful"), f"error: {said}\n")
    assert [s["name"] for s in as_json(invoke(db, "projections", "--json"))] == list(BUILTIN)
    # and once built with it listed, a module that drops it from tables() is not loaded
    (folder / "forgetful.py").write_text(
        seen_projection_module(
            "forgetful",
            more_schema="'CREATE TABLE IF NOT EXISTS p_forgetful_more (b TEXT)'",
            more_tables="'p_forgetful_more'",
        ),
        encoding="utf-8",
    )
    ok(invoke(db, "rebuild", "forgetful"))
    (folder / "forgetful.py").write_text(
        seen_projection_module(
            "forgetful", more_schema="'CREATE TABLE IF NOT EXISTS p_forgetful_more (b TEXT)'"
        ),
        encoding="utf-8",
    )
    answered = invoke(db, "state")
    assert answered.stderr == (
        f"warning: projection forgetful could not be loaded: {said}; it stays at position 29 "
        "until that is fixed\n"
    )


def test_a_refused_module_is_named_relative_to_the_current_folder(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as projections/README.md shows it: run from the folder holding projections/
    monkeypatch.delenv("LEADERLOG_PROJECTIONS")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "projections").mkdir()
    thief = seen_projection_module("thief").replace(
        "return ('p_thief_seen',)", "return ('p_thief_seen', 'events')"
    )
    (tmp_path / "projections" / "thief.py").write_text(thief, encoding="utf-8")
    result = invoke(db, "rebuild", "thief")
    assert result.exit_code == 1
    assert result.stderr == (
        "error: projections/thief.py: table 'events': it is not its own; its names start with "
        "p_thief_\n"
    )


def test_a_rebuild_interrupted_says_where_the_projections_stand(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a rebuild that Ctrl-C stops while it applies the log
    async def interrupted_while_applying(*args: Any, **kwargs: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(ProjectionRunner, "rebuild", interrupted_while_applying)
    result = invoke(db, "rebuild")
    # then it says what is left and what carries on, with the status a shell expects
    assert result.exit_code == 130
    assert result.stderr.strip().endswith(
        "interrupted: each projection stays at the last page it applied; the next command or "
        "server that reads them carries on from there"
    )


def test_history_says_a_tenure_known_ended_only_from_a_report_was_over_by_then(
    db: str, tmp_path: Path
) -> None:
    correction = {
        "type": "claim.corrected",
        "data": {
            "claim": GENALO_RETIREMENT,
            "changes": {"modality": "occurred"},
            "reason": "He has retired.",
        },
    }
    import_records(db, tmp_path, [correction])
    text = ok(invoke(db, "history", "--post", "ice-ero-ead"))
    assert (
        "by about 2025-05 (when source fox-ice-shakeup-2025-05 was out), gone by about 2025-05 "
        "(when source fox-ice-shakeup-2025-05 was out) (retirement) [reported]" in text
    )
    assert "(published)" not in text


def test_a_feed_scope_in_bytes_that_are_not_utf8_is_an_unknown_id_not_a_crash(db: str) -> None:
    result = invoke(db, "feed", "--scope", "org:caf\udce9")
    assert result.exit_code == 1, result.output
    assert result.stderr == "error: unknown organisation 'caf\\udce9'\n"


def test_claim_says_a_departure_s_cause(db: str) -> None:
    # state, the feeds and --json said "retirement"; claim's own line left it out
    text = ok(invoke(db, "claim", GENALO_RETIREMENT))
    assert "(ice-ero-ead) (retirement), expected" in text


def test_a_pending_change_of_unspecified_capacity_does_not_say_as_unspecified(
    db: str, tmp_path: Path
) -> None:
    records = [
        record(
            "claim.reported",
            claim="fox-ice-shakeup-2025-05-noem-stays",
            source="fox-ice-shakeup-2025-05",
            kind="appointment",
            person="kristi-noem",
            post="ice-hsi-dsac",
            capacity="unspecified",
            modality="expected",
            attribution={"kind": "outlet"},
        )
    ]
    import_records(db, tmp_path, records)
    text = ok(invoke(db, "state", "--org", "ice-hsi"))
    assert "pending   appointment of Kristi Noem (kristi-noem), expected" in text
    assert "as unspecified" not in text


def test_history_of_a_person_without_a_tenure_says_there_is_none(db: str, tmp_path: Path) -> None:
    # given a person registered, and no claim about them
    import_records(db, tmp_path, [record("person.registered", person="nobody-yet", name="N")])
    # when their history is asked for
    text = ok(invoke(db, "history", "--person", "nobody-yet"))
    # then it says there is none, rather than the heading alone
    assert text.splitlines()[1:] == ["  (no tenures)"]


def test_claim_shows_a_correction_that_clears_a_field_as_none(db: str, tmp_path: Path) -> None:
    # given a correction that clears the retirement claim's cause
    correction = record(
        "claim.corrected", claim=GENALO_RETIREMENT, changes={"cause": None}, reason="No cause."
    )
    import_records(db, tmp_path, [correction])
    # when the claim is shown
    text = ok(invoke(db, "claim", GENALO_RETIREMENT))
    # then the step says the cause became none, in the word the other values are shown in
    assert "claim.corrected  by cli: cause -> none; No cause.\n" in text


def test_a_declined_request_for_comment_is_said_in_words(db: str, tmp_path: Path) -> None:
    # given the article reporting that DHS declined to comment
    asked = record(
        "comment.requested", source="fox-ice-shakeup-2025-05", org="dhs", outcome="declined"
    )
    import_records(db, tmp_path, [asked])
    # when claim and audit show it
    claim = ok(invoke(db, "claim", GENALO_RETIREMENT))
    audit = ok(invoke(db, "audit", "--type", "comment.requested"))
    # then both say "declined to comment", not the stored outcome's code
    assert "comment asked of dhs for the report by Fox News: declined to comment\n" in claim
    assert "asked dhs: declined to comment fox-ice-shakeup-2025-05 (Fox News)\n" in audit


def test_state_says_up_to_when_the_log_it_believes_was_recorded(db: str) -> None:
    # given the seeds, and the time their last event believed was recorded, from --json
    known = as_json(invoke(db, "state", "--known-at", "29", "--json"))["known_at"]
    assert known["recorded_through"]
    # when the state is asked as known at that position, in text
    text = ok(invoke(db, "state", "--known-at", "29"))
    # then its heading says the position and the time it was recorded through
    heading = text.splitlines()[0]
    assert heading.endswith(
        f", known at position 29, recorded through {known['recorded_through']}"
    ), heading


def test_a_failing_built_in_is_an_error_even_beside_a_failing_user_projection(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a user projection that raises, built (and failing) with the built-ins
    (tmp_path / "failing.py").write_text(FAILING_PROJECTION, encoding="utf-8")
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(tmp_path))
    fails(invoke(db, "rebuild", "failing"), "error: projection failing could not apply")

    # and the built-in audit projection raising on the next event appended
    async def broken(self: AuditProjection, tx: object, events: object) -> None:
        raise ValueError("audit cannot apply this")

    monkeypatch.setattr(AuditProjection, "apply", broken)
    ok(invoke(db, "import", "-", stdin=ANOTHER_CLAIM))
    # when a query is asked
    answered = invoke(db, "state", "--org", "ice")
    # then it is refused, naming the built-in, rather than answered (its answers would be
    # wrong) with both failures as warnings
    fails(answered, "error: projection audit could not apply event 30")
    assert answered.stdout == ""


def _miller_out_on_1_june(**more: Any) -> dict[str, Any]:
    """A departure of someone the seed log never said held the post."""
    return record(
        "claim.reported",
        claim="miller-out",
        source="fox-ice-shakeup-2025-05",
        kind="departure",
        person="stephen-miller",
        post="ice-hsi-dsac",
        capacity="unspecified",
        modality="occurred",
        effective={"date": "2025-06-01"},
        attribution={"kind": "official", "parties": ["ICE"]},
        **more,
    )


def test_history_says_a_tenure_known_only_from_its_end_began_at_an_unknown_time(
    db: str, tmp_path: Path
) -> None:
    # given a departure of someone the log never said held the post
    departure = _miller_out_on_1_june()
    import_records(db, tmp_path, [departure])
    # when the person's history is shown
    text = ok(invoke(db, "history", "--person", "stephen-miller"))
    # then that tenure's start is said to be unknown
    assert (
        "  Deputy Special Agent in Charge (ice-hsi-dsac): Stephen Miller (stephen-miller), "
        "unspecified, start unknown to 2025-06-01 [reported]\n"
    ) in text


def test_a_departure_of_unknown_cause_says_cause_unknown_not_a_bare_unknown(
    db: str, tmp_path: Path
) -> None:
    # given a departure whose cause the source did not give, announced for a later day
    departure = _miller_out_on_1_june(cause="unknown")
    import_records(db, tmp_path, [departure])
    # when its history, its claim and the state before it are shown
    history = ok(invoke(db, "history", "--person", "stephen-miller"))
    claim = ok(invoke(db, "claim", "miller-out"))
    # then "unknown" is said of the cause, not left by a date where it reads as the date's
    assert "start unknown to 2025-06-01 (cause unknown) [reported]\n" in history
    assert "(ice-hsi-dsac) (cause unknown), occurred" in claim
    assert "(unknown)" not in history + claim


NO_TABLES_PROJECTION = """
from leaderlog.projections import Projection


class Tableless(Projection):
    name = "tableless"
    version = 1

    def schema(self):
        return ()

    def tables(self):
        return ()

    async def apply(self, tx, events):
        pass


PROJECTION = Tableless
"""


def test_forgetting_a_projection_that_had_no_tables_says_only_its_checkpoint_went(
    db: str, folder: Path
) -> None:
    # given a user projection with no tables, built, then its module removed
    (folder / "tableless.py").write_text(NO_TABLES_PROJECTION, encoding="utf-8")
    ok(invoke(db, "rebuild", "tableless"))
    (folder / "tableless.py").unlink()
    # when it is forgotten
    text = ok(invoke(db, "projections", "--forget", "tableless"))
    # then it says there were no tables to drop, only its checkpoint
    assert text == (
        "forgot tableless: it had no tables; dropped its checkpoint (it was at position 29)\n"
    )


def test_forgetting_a_name_never_built_lists_the_user_projections_that_were(
    db: str, folder: Path
) -> None:
    # given a user projection built besides the built-ins
    (folder / "tableless.py").write_text(NO_TABLES_PROJECTION, encoding="utf-8")
    ok(invoke(db, "rebuild", "tableless"))
    # when a name never built is to be forgotten
    refused = invoke(db, "projections", "--forget", "tabless")
    # then the error names the user projections that were built, not the built-ins
    assert refused.exit_code == 1, refused.output
    assert refused.stderr == (
        "error: no user projection 'tabless' was built in this database; built: tableless\n"
    )


def test_a_built_in_at_another_version_is_said_to_be_leaderlog_s_not_a_module_s(
    db: str,
) -> None:
    # given the built-ins built, then leadership's checkpoint at another version (as an
    # older leaderlog left it)
    ok(invoke(db, "rebuild"))
    database = sqlite3.connect(db.removeprefix("sqlite:///"))
    with database:
        database.execute("UPDATE projection_checkpoints SET version = 1 WHERE name = 'leadership'")
    database.close()
    version = BUILTIN["leadership"].version
    # when the projections are listed, then another one rebuilt
    listed = ok(invoke(db, "projections"))
    rebuilt = ok(invoke(db, "rebuild", "audit"))
    # then both say leaderlog has the new version (a built-in has no module to say so)
    assert (
        f"  version 1 in the database, leaderlog has {version}: rebuilt at the next query, "
        "rebuild or server start\n"
    ) in listed
    assert rebuilt.endswith(
        f"\nalso rebuilt leadership (version 1 in the database, leaderlog has {version})\n"
    )


def test_projections_lines_up_each_column_under_its_header_and_the_problem_after_it(
    db: str, folder: Path
) -> None:
    # given a user projection whose name is longer than any built-in's, built and then
    # left without its module (so its row says why it is not loaded)
    name = "seen_by_every_quarter"
    build_user_projection(db, folder, name)
    (folder / f"{name}.py").unlink()
    # when the projections are listed
    header, *rows = ok(invoke(db, "projections")).splitlines()
    # then the name column is as wide as the longest name, the others right-aligned to
    # fixed widths under their labels
    assert header == f"{'name':<{len(name)}} version   checkpoint         head        lag"
    assert [row.split()[0] for row in rows] == [*BUILTIN, name]
    for row in rows:
        shown = row.split()[0]
        assert row.startswith(f"{shown} "), row  # names are left-aligned
        cells = row[: len(header)]
        # each value after the name ends where its column's label ends
        ends = [match.end() for match in re.finditer(r"\S+", header)][1:]
        assert [match.end() for match in re.finditer(r"\S+", cells)][1:] == ends, row
    # and a row's problem follows its lag after two spaces
    assert rows[-1][len(header) :].startswith("  not loaded: unknown projection "), rows[-1]
    assert all(len(row) == len(header) for row in rows[:-1])


def log_cut_short_behind_their_back(db: str, last: int) -> None:
    """The SQLite log at ``db`` cut to its first ``last`` events, past its append-only guard,
    as a restore of an older copy of the events would leave it."""
    connection = sqlite3.connect(db.removeprefix("sqlite:///"))
    try:
        with connection:
            connection.execute("DROP TRIGGER events_are_append_only_delete")
            connection.execute("DELETE FROM events WHERE position > ?", (last,))
    finally:
        connection.close()


def test_projections_shows_a_dash_for_the_lag_of_one_beyond_the_log_s_end(db: str) -> None:
    # given the projections built to position 29, then the log cut short to 27 behind
    # their back (as a restore of an older copy of the events would)
    ok(invoke(db, "rebuild"))
    log_cut_short_behind_their_back(db, 27)
    # when they are listed
    header, *rows = ok(invoke(db, "projections")).splitlines()
    # then none shows a lag (0 would pass it off as current): a dash under the lag label,
    # and why after it
    for row in rows:
        assert row.split()[2:5] == ["29", "27", "-"], row
        assert row[len(header) - 1] == "-", row
        assert row[len(header) :].startswith("  applied the log up to position 29, beyond its end")


def test_a_built_projection_whose_module_no_longer_imports_is_listed_with_its_lag(
    db: str, folder: Path
) -> None:
    # given a user projection built to the head, whose module then no longer imports
    (folder / "seen.py").write_text(seen_projection_module("seen"), encoding="utf-8")
    ok(invoke(db, "rebuild", "seen"))
    (folder / "seen.py").write_text("raise RuntimeError('half written')\n", encoding="utf-8")
    # when the projections are listed, then it is listed as current (lag 0, not "-")...
    (row,) = [s for s in as_json(invoke(db, "projections", "--json")) if s["name"] == "seen"]
    assert (row["checkpoint"], row["head"], row["lag"]) == (29, 29, 0)
    # ...and once the log has grown, behind the log's head by what it has not applied
    ok(invoke(db, "import", "-", stdin=ANOTHER_CLAIM))
    (row,) = [s for s in as_json(invoke(db, "projections", "--json")) if s["name"] == "seen"]
    assert (row["checkpoint"], row["head"], row["lag"]) == (29, 30, 1)
    # with why it is not loaded; its module is there, so no hint to forget it as gone
    assert row["problem"].startswith(
        f"not loaded: projection module {folder / 'seen.py'} failed to import: RuntimeError"
    ), row["problem"]
    assert "--forget" not in row["problem"]
    last = ok(invoke(db, "projections")).splitlines()[-1]
    assert last.split()[:5] == ["seen", "1", "29", "30", "1"]


def test_user_projections_that_cannot_load_are_listed_by_name_with_no_lag_beyond_the_log_s_end(
    db: str, folder: Path
) -> None:
    # given two user projections built to position 29, the later name first, whose modules
    # are then gone, and the log then cut short to 27 behind their back
    for name in ("zulu", "alpha"):
        build_user_projection(db, folder, name)
        (folder / f"{name}.py").unlink()
    log_cut_short_behind_their_back(db, 27)
    # when the projections are listed
    statuses = as_json(invoke(db, "projections", "--json"))
    # then those it cannot load follow the built-ins in the order of their names, each with
    # no lag (0 or a negative number would misstate it) and why it is not loaded
    assert [s["name"] for s in statuses] == [*BUILTIN, "alpha", "zulu"]
    for status in statuses[-2:]:
        assert (status["checkpoint"], status["head"], status["lag"]) == (29, 27, None)
        assert status["problem"].startswith("not loaded: unknown projection ")
    rows = ok(invoke(db, "projections")).splitlines()[-2:]
    assert [row.split()[:5] for row in rows] == [
        ["alpha", "1", "29", "27", "-"],
        ["zulu", "1", "29", "27", "-"],
    ]


def test_a_rebuild_of_only_a_projection_that_fails_prints_no_rebuilt_line(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the built-ins built, and a user projection whose apply raises
    ok(invoke(db, "rebuild"))
    (tmp_path / "failing.py").write_text(FAILING_PROJECTION, encoding="utf-8")
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(tmp_path))
    # when only that projection is rebuilt
    rebuilt = invoke(db, "rebuild", "failing")
    # then the error says it failed, and nothing claims a rebuild (not even of no names)
    fails(rebuilt, "error: projection failing could not apply events 1-29: ValueError")
    assert rebuilt.stdout == ""
    assert rebuilt.stdout == ""


def test_a_projection_named_twice_is_rebuilt_and_named_once(db: str) -> None:
    # given the projections built
    ok(invoke(db, "rebuild"))
    # when one is named twice
    text = ok(invoke(db, "rebuild", "audit", "audit", "leadership"))
    # then it is named once, in the order given
    assert text.startswith("rebuilt audit, leadership to position 29 in "), text


def test_forgetting_as_json_gives_the_name_the_tables_dropped_and_the_position(
    db: str, folder: Path
) -> None:
    # given a user projection built to position 29, whose module is then gone
    (folder / "seen.py").write_text(seen_projection_module("seen"), encoding="utf-8")
    ok(invoke(db, "rebuild", "seen"))
    (folder / "seen.py").unlink()
    # when it is forgotten with --json
    answer = as_json(invoke(db, "projections", "--forget", "seen", "--json"))
    # then the answer says which, the tables dropped, and where its checkpoint was
    assert answer == {"forgot": "seen", "tables": ["p_seen_seen"], "position": 29}


def test_c1_control_characters_in_stored_text_are_shown_escaped() -> None:
    # given text holding C1 controls (0x9b is the one-byte CSI some terminals obey,
    # 0x85 a line break to some readers) and DEL
    text = "ice\x9b2Jhead\x85er\x7f"
    # when it is printed by a command, then each is shown escaped, not sent raw
    assert escaped(text) == "ice\\x9b2Jhead\\x85er\\x7f"


def test_bidirectional_isolates_in_stored_text_are_shown_escaped() -> None:
    # given text holding the bidirectional isolates (LRI, RLI, FSI, PDI), which reorder
    # what follows them on the line as the overrides do
    text = "a\u2066b\u2067c\u2068d\u2069e"
    # when it is printed by a command, then each is shown escaped
    assert escaped(text) == "a\\u2066b\\u2067c\\u2068d\\u2069e"


@pytest.mark.parametrize(
    "query",
    [("state", "--org", "ice-hsi"), ("history", "--org", "dhs"), ("audit", "--status", "disputed")],
)
def test_a_clashing_module_is_warned_about_by_a_query_with_nothing_to_apply(
    db: str, folder: Path, query: tuple[str, ...]
) -> None:
    # given two user projections built to the head, then one edited to create a table of the
    # other's, with no event appended since
    probe_built_then_clashing_with_probe_x(db, folder)
    statuses = json.loads(ok(invoke(db, "projections", "--json")))
    assert all(status["lag"] == 0 for status in statuses)
    # when a query runs, with nothing to apply
    answered = invoke(db, *query)
    # then it warns that probe is left out, as a run with events to apply does
    ok(answered)
    assert answered.stderr == (
        f"warning: projection probe is left out: {folder / 'probe.py'}: table "
        "'p_probe_x_more': it belongs to projection probe_x; its names start with p_probe_; "
        "it stays at position 29 until that is fixed (a running server loads its module again "
        "when restarted)\n"
    )
    # and nothing was written: probe stays where it was
    statuses = json.loads(ok(invoke(db, "projections", "--json")))
    assert {status["name"]: status["checkpoint"] for status in statuses}["probe"] == 29


def test_a_conflict_names_by_id_a_person_no_post_shown_holds_or_awaits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # given a post whose conflict reaches a person of another post, not shown
    post = {
        "post": {"title": "Director", "post": "p", "org_name": "Org"},
        "vacancy": "filled",
        "holders": [
            {
                "person": "ann",
                "name": "Ann Lee",
                "capacity": "permanent",
                "since": None,
                "status": "disputed",
            }
        ],
        "pending": [],
        "conflicts": [
            {"kind": "disputed", "claims": ["c1", "c2"], "persons": ["ann", "bo"], "reason": "r"}
        ],
    }
    # when it is printed
    _print_posts([post])
    # then the person shown is named, and the other is given by id alone, not twice
    assert "  conflict  disputed: Ann Lee (ann), bo; claims c1, c2 - r\n" in capsys.readouterr().out
