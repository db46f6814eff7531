"""A user projection's failure quoted on stderr: stored text in it is escaped there, as in
every other line the commands print."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SEEDS, invoke, ok

# Raises on a person whose name begins with "Evil", quoting the name as stored.
QUOTING_MODULE = """\
from leaderlog.projections import Projection, payload


class Quoting(Projection):
    name = "quoting"
    version = 1

    def schema(self):
        return ("CREATE TABLE IF NOT EXISTS p_quoting_seen (position BIGINT)",)

    def tables(self):
        return ("p_quoting_seen",)

    async def apply(self, tx, events):
        for event in events:
            name = payload(event).get("name", "")
            if event.type == "person.registered" and name.startswith("Evil"):
                raise ValueError(f"cannot take the name {name}")


PROJECTION = Quoting
"""

# A right-to-left override: printed as it is, it reorders the rest of the warning's line.
HOSTILE_NAME = "Evil \u202eenil ekaf"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The seeds, with the quoting projection built, then a person it cannot take."""
    folder = tmp_path / "projections"
    folder.mkdir()
    (folder / "quoting.py").write_text(QUOTING_MODULE, encoding="utf-8")
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(folder))
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    ok(invoke(url, "import", str(SEEDS / "ice-leadership-2025-05.jsonl")))
    ok(invoke(url, "rebuild", "quoting"))
    record = {"type": "person.registered", "data": {"person": "evil", "name": HOSTILE_NAME}}
    ok(invoke(url, "import", "-", stdin=json.dumps(record)))
    return url


@pytest.mark.parametrize(
    "command",
    [
        ("state", "--org", "ice"),
        ("history", "--post", "ice-hsi-ead"),
        ("claim", "fox-ice-shakeup-2025-05-genalo-retirement"),
        ("audit", "--limit", "1"),
    ],
)
def test_a_query_escapes_stored_text_in_a_failing_projections_warning(
    db: str, command: tuple[str, ...]
) -> None:
    answered = invoke(db, *command)
    assert answered.exit_code == 0, answered.output
    assert "warning: projection quoting could not apply event 30" in answered.stderr
    assert "cannot take the name Evil \\u202eenil ekaf" in answered.stderr
    assert "\u202e" not in answered.stderr


def test_rebuild_escapes_it_too(db: str) -> None:
    rebuilt = invoke(db, "rebuild")
    assert rebuilt.exit_code == 1
    assert "cannot take the name Evil \\u202eenil ekaf" in rebuilt.stderr
    assert "\u202e" not in rebuilt.stderr
