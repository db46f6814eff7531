"""The projection commands as a user runs them: state, history, claim, audit, rebuild."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import leaderlog.cli.projection_commands  # noqa: F401  (registers the commands on main)
from leaderlog.cli import main
from leaderlog.projections import BUILTIN
from tests.conftest import ROOT
from tests.projections.logs import GENALO_RETIREMENT, HAMMER_CAPTION, SEED_FILE

COMMANDS = ("state", "history", "claim", "audit", "rebuild", "projections")


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A database holding the seed article, with no projection built yet."""
    monkeypatch.delenv("LEADERLOG_DB", raising=False)
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(ROOT / "projections"))
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    ok(invoke(url, "import", str(SEED_FILE)))
    return url


def invoke(db: str, *args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, ["--db", db, *args], input=stdin)


def ok(result: Result) -> str:
    assert result.exit_code == 0, result.output + result.stderr
    return result.stdout


def as_json(result: Result) -> Any:
    return json.loads(ok(result))


def fails(result: Result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert message in result.stderr


def test_state_catches_up_and_shows_the_leadership(db: str) -> None:
    text = ok(invoke(db, "state", "--org", "ice", "--as-of", "2025-06-15"))
    assert "Leadership in Immigration and Customs Enforcement (ice) as of 2025-06-15" in text
    assert "holder    Kenneth Genalo (kenneth-genalo), acting, since about 2025-05" in text
    assert f"claim {GENALO_RETIREMENT}" in text
    assert "conflict  disputed:" in text
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
    assert "Robert Hammer (robert-hammer), unspecified, about 2025-05 (published) to now" in text
    person = as_json(invoke(db, "history", "--person", "derek-gordon", "--json"))
    assert [tenure["post"] for tenure in person["tenures"]] == ["ice-hsi-dsac"]
    org = as_json(invoke(db, "history", "--org", "dhs", "--json"))
    assert len(org["tenures"]) == 4
    assert "fox-ice-shakeup-2025-05" in org["sources"]


def test_claim_lifecycle(db: str) -> None:
    text = ok(invoke(db, "claim", HAMMER_CAPTION))
    assert f"Claim {HAMMER_CAPTION}: disputed" in text
    assert "claim.reported   by cli from Fox News" in text
    answer = as_json(invoke(db, "claim", HAMMER_CAPTION, "--json"))
    assert [step["type"] for step in answer["lifecycle"]] == ["claim.reported", "claim.disputed"]


def test_audit_of_retracted_anonymous_claims(db: str, tmp_path: Path) -> None:
    retraction = tmp_path / "retraction.jsonl"
    retraction.write_text(
        json.dumps(
            {
                "type": "claim.retracted",
                "data": {"claim": GENALO_RETIREMENT, "reason": "He is staying on."},
            }
        )
        + "\n",
        encoding="utf-8",
    )
    ok(invoke(db, "import", "--actor", "desk", str(retraction)))
    answer = as_json(
        invoke(db, "audit", "--attribution", "anonymous", "--status", "retracted", "--json")
    )
    assert [(event["type"], event["actor"]) for event in answer["events"]] == [
        ("claim.reported", "cli"),
        ("claim.retracted", "desk"),
    ]
    text = ok(invoke(db, "audit", "--type", "claim.disputed"))
    assert HAMMER_CAPTION in text
    assert "(no matching events)" in ok(invoke(db, "audit", "--actor", "nobody"))
    assert "--after 5" in ok(invoke(db, "audit", "--limit", "5"))


def test_control_characters_in_stored_text_cannot_fake_or_hide_output_lines(
    db: str, tmp_path: Path
) -> None:
    # given a holder renamed with a carriage return and a newline in the name
    rename = tmp_path / "rename.jsonl"
    record = {
        "type": "person.updated",
        "data": {"person": "kenneth-genalo", "name": "Mallory Evil\rKristi Noem\nholder  x"},
    }
    rename.write_text(json.dumps(record) + "\n", encoding="utf-8")
    ok(invoke(db, "import", str(rename)))
    # then text output shows them escaped, on the line they belong to
    text = ok(invoke(db, "state", "--org", "ice-ero", "--as-of", "2025-06-15"))
    assert "\r" not in text
    assert "holder    Mallory Evil\\rKristi Noem\\nholder  x (kenneth-genalo)" in text
    unknown = invoke(db, "history", "--person", "mallory")
    assert unknown.exit_code == 1
    assert unknown.stderr.count("\n") == 1 and "\r" not in unknown.stderr


def test_rebuild_and_projections(db: str) -> None:
    text = ok(invoke(db, "rebuild"))
    assert text.startswith(f"rebuilt {', '.join(BUILTIN)} to position 29 in ")
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


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("state", "--org", "atlantis"), "error: unknown organisation 'atlantis'"),
        (("state", "--as-of", "2025-02-30"), "as-of must be a calendar day YYYY-MM-DD"),
        (("state", "--known-at", "soon"), "known-at must be an RFC 3339 time"),
        (("state", "--known-at", "999"), "beyond the log's head (29)"),
        (("state", "--known-at", "-3"), "known-at position must be 0 or more, got -3"),
        (("history",), "give exactly one of person, post or org"),
        (("history", "--person", "nobody"), "unknown person 'nobody'"),
        (("state", "--org", "ero"), "unknown organisation 'ero'; did you mean ice-ero (ERO,"),
        (("history", "--person", "hammer"), "did you mean robert-hammer (Robert Hammer,"),
        (("claim", "no-such-claim"), "unknown claim 'no-such-claim'"),
        (
            ("claim", "gordon-hsi"),
            "did you mean fox-ice-shakeup-2025-05-gordon-hsi-acting (appointment of "
            "derek-gordon at ice-hsi-ead) or fox-ice-shakeup-2025-05-gordon-hsi-dsac",
        ),
        (("audit", "--status", "maybe"), "unknown status 'maybe'"),
        (("audit", "--from", "yesterday"), "from must be an RFC 3339 time"),
        (("rebuild", "nope"), "unknown projection 'nope'"),
    ],
)
def test_errors_are_clear_and_exit_1(db: str, args: tuple[str, ...], message: str) -> None:
    fails(invoke(db, *args), message)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_has_an_example(command: str) -> None:
    text = ok(CliRunner().invoke(main, [command, "--help"]))
    assert "Example:" in text
    assert "leaderlog " + command in text
