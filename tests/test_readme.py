"""The documentation's code runs as written: the README's Python examples and the example
projection in projections/README.md."""

from __future__ import annotations

import re
import shutil
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import leaderlog.cli.projection_commands  # noqa: F401  (registers the commands on main)
from leaderlog.cli import main
from tests.conftest import ROOT, SEEDS

README = ROOT / "README.md"
PROJECTIONS_README = ROOT / "projections" / "README.md"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.DOTALL)


async def run_example(code: str, where: Path) -> dict[str, Any]:
    """Run an example written for an async REPL (top-level await); returns its variables."""
    wrapped = "async def example():\n" + textwrap.indent(code, "    ") + "    return locals()\n"
    namespace: dict[str, Any] = {}
    exec(compile(wrapped, str(where), "exec"), namespace)
    found: dict[str, Any] = await namespace["example"]()
    return found


def ok(result: Result) -> str:
    assert result.exit_code == 0, result.output + result.stderr
    return result.stdout


async def test_the_readme_python_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    library, queries = python_blocks(README)
    monkeypatch.chdir(tmp_path)
    shutil.copytree(SEEDS, tmp_path / "seeds")

    await run_example(library, README)
    assert "ok=True, count=30" in capsys.readouterr().out

    found = await run_example(queries, README)
    state = found["state"]
    assert state["known_at"]["position"] == 22
    posts = {post["post"]["post"]: post for post in state["posts"]}
    assert posts["ice-ero-ead"]["holders"][0]["person"] == "kenneth-genalo"


def test_the_example_user_projection_is_built_and_kept_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (module,) = python_blocks(PROJECTIONS_README)
    folder = tmp_path / "projections"
    folder.mkdir()
    (folder / "claims_per_publisher.py").write_text(module, encoding="utf-8")
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(folder))
    monkeypatch.delenv("LEADERLOG_DB", raising=False)
    database = tmp_path / "readme.db"
    url = f"sqlite:///{database}"

    def invoke(*args: str, stdin: str | None = None) -> str:
        return ok(CliRunner().invoke(main, ["--db", url, *args], input=stdin))

    def counts() -> list[tuple[str, int]]:
        with sqlite3.connect(database) as connection:
            return connection.execute(
                "SELECT publisher, claims FROM p_claims_per_publisher_counts"
            ).fetchall()

    invoke("import", str(SEEDS / "ice-leadership-2025-05.jsonl"))
    invoke("rebuild", "claims_per_publisher")
    assert counts() == [("Fox News", 10)]

    # one more claim from the same article: the next query brings the projection up to date
    another = (
        '{"type": "claim.reported", "data": {"claim": "another", '
        '"source": "fox-ice-shakeup-2025-05", "kind": "incumbency", "person": "derek-gordon", '
        '"post": "ice-hsi-dsac", "capacity": "unspecified", "modality": "occurred", '
        '"attribution": {"kind": "outlet", "parties": ["Fox News"]}}}\n'
    )
    invoke("import", "-", stdin=another)
    assert counts() == [("Fox News", 10)]
    invoke("state", "--org", "ice-hsi")
    listed = invoke("projections")
    assert re.search(r"^claims_per_publisher\s+1\s+30\s+30\s+0$", listed, re.MULTILINE), listed
    assert counts() == [("Fox News", 11)]
