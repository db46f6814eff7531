"""A user projection built before whose module no longer loads: queries still answer, and say
on stderr that it is left behind, as they do for one whose ``apply`` raises."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from leaderlog.projections import runner as runner_module
from tests.conftest import ROOT, SEEDS, invoke, ok
from tests.projections.logs import ANOTHER_CLAIM, slow_projection_module

SEED_FILE = SEEDS / "ice-leadership-2025-05.jsonl"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A projections folder holding the shipped turnover projection."""
    projections = tmp_path / "projections"
    projections.mkdir()
    shutil.copy(ROOT / "projections" / "turnover.py", projections / "turnover.py")
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(projections))
    monkeypatch.delenv("LEADERLOG_DB", raising=False)
    return projections


@pytest.fixture
def db(tmp_path: Path, folder: Path) -> str:
    """The seeds, with turnover built to position 29."""
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    ok(invoke(url, "import", str(SEED_FILE)))
    ok(invoke(url, "rebuild", "turnover"))
    return url


def turnover_checkpoint(url: str) -> int:
    statuses = json.loads(ok(invoke(url, "projections", "--json")))
    (turnover,) = [status for status in statuses if status["name"] == "turnover"]
    return int(turnover["checkpoint"])


def test_a_query_warns_when_a_built_projection_no_longer_imports(db: str, folder: Path) -> None:
    module = folder / "turnover.py"
    working = module.read_text(encoding="utf-8")
    future = "from __future__ import annotations\n"
    broken = working.replace(future, future + "import no_such_module_anywhere\n", 1)
    module.write_text(broken, encoding="utf-8")
    line = broken.splitlines().index("import no_such_module_anywhere") + 1
    ok(invoke(db, "import", "-", stdin=ANOTHER_CLAIM))

    for command in (
        ("state", "--org", "ice-hsi"),
        ("history", "--post", "ice-hsi-ead", "--json"),
        ("audit", "--limit", "1"),
    ):
        answered = invoke(db, *command)
        assert answered.stdout, command  # the built-ins still answer
        assert answered.stderr == (
            f"warning: projection turnover could not be loaded: projection module {module} "
            "failed to import: ModuleNotFoundError: No module named 'no_such_module_anywhere' "
            f"(line {line}); it stays at position 29 until that is fixed\n"
        ), command
    assert turnover_checkpoint(db) == 29

    # fixed, the next query carries it on from its checkpoint, with nothing to say
    module.write_text(working, encoding="utf-8")
    answered = invoke(db, "state")
    assert (answered.exit_code, answered.stderr) == (0, "")
    assert turnover_checkpoint(db) == 30


def test_a_module_that_does_not_compile_is_named_with_its_line(db: str, folder: Path) -> None:
    module = folder / "turnover.py"
    module.write_text("class Turnover(:\n", encoding="utf-8")
    answered = invoke(db, "claim", "fox-ice-shakeup-2025-05-genalo-retirement")
    assert answered.exit_code == 0, answered.output
    assert answered.stderr.startswith(
        f"warning: projection turnover could not be loaded: projection module {module} "
        "failed to import: "
    )
    assert "(turnover.py, line 1); it stays at position 29 until that is fixed\n" in (
        answered.stderr
    )
    assert len(answered.stderr.splitlines()) == 1


def test_a_module_that_is_not_there_is_left_to_the_projections_command(
    db: str, folder: Path
) -> None:
    # as when a command runs from a folder without the projections: documented, not warned
    (folder / "turnover.py").unlink()
    answered = invoke(db, "state")
    assert (answered.exit_code, answered.stderr) == (0, "")
    assert "not loaded: unknown projection 'turnover'" in ok(invoke(db, "projections"))


def test_a_query_waits_at_most_once_for_a_slow_user_projection(
    db: str, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a user projection that hangs on an event, with 0.3 s a page
    monkeypatch.setattr(runner_module, "USER_APPLY_SECONDS", 0.3)
    (folder / "slow.py").write_text(slow_projection_module(), encoding="utf-8")
    ok(invoke(db, "rebuild", "slow"))
    people = ["slow-stuck", *(f"after-{n}" for n in range(60))]
    lines = [
        f'{{"type": "person.registered", "data": {{"person": "{p}", "name": "{p}"}}}}\n'
        for p in people
    ]
    ok(invoke(db, "import", "-", stdin="".join(lines)))
    tries = folder.parent / "tries"
    monkeypatch.setenv("SLOW_TRIES", str(tries))
    # when a query is asked, then it answers after one try of it, saying it stopped there
    answered = invoke(db, "state", "--org", "ice-hsi")
    assert answered.exit_code == 0 and answered.stdout
    assert tries.read_text().split() == ["61"]
    assert (
        "warning: projection slow could not apply events 30-90: apply() took longer than 0.3"
        in (answered.stderr)
    )
    # while rebuild takes it on with smaller pages, to the one event it cannot apply
    tries.unlink()
    rebuilt = invoke(db, "rebuild", "slow")
    assert rebuilt.exit_code == 1
    assert "could not apply event 30" in rebuilt.stderr
    # each smaller page it goes on with said as a warning, as the commands' others are
    assert (
        "warning: projection slow could not apply events 1-90: apply() took longer than 0.3 s "
        "and was stopped: "
    ) in rebuilt.stderr
    assert "; it goes on with pages of 45 events\n" in rebuilt.stderr
    said = [line for line in rebuilt.stderr.splitlines() if line.strip()]
    assert all(line.startswith(("warning: ", "error: ")) for line in said), said
    tried = [int(size) for size in tries.read_text().split()]
    assert tried[0] == 90 and tried[-1] == 1 and tried == sorted(tried, reverse=True)
