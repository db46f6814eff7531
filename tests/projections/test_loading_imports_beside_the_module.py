"""A user projection module is loaded alone, as one file: an import of code kept beside it in
the projections folder cannot work, and the error says so in the author's terms instead of
naming the package leaderlog loads modules under, or leaving them to wonder why a file that
is right there is not found."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderlog.errors import ProjectionError
from leaderlog.projections import BUILTIN, load_user_projection
from tests.conftest import SEEDS, invoke

_REST_OF_MODULE = (
    "from leaderlog.projections import Projection\n"
    "class P(Projection):\n    name = 'shared'\n    version = 1\n"
    "    def schema(self): return ()\n"
    "    def tables(self): return ()\n"
    "    async def apply(self, tx, events): pass\n"
    "PROJECTION = P\n"
)


def _module_importing(folder: Path, import_line: str) -> None:
    """``shared.py`` in ``folder``, importing with ``import_line`` (its line 1) from
    ``_common.py`` kept beside it."""
    (folder / "_common.py").write_text("TABLE = 'p_shared_rows'\n", encoding="utf-8")
    (folder / "shared.py").write_text(f"{import_line}\n{_REST_OF_MODULE}", encoding="utf-8")


def _import_error(folder: Path) -> str:
    """What loading ``shared`` from ``folder`` is refused with."""
    with pytest.raises(ProjectionError) as caught:
        load_user_projection("shared", folder, builtin=BUILTIN)
    return str(caught.value)


@pytest.mark.parametrize("import_line", ["from ._common import TABLE", "from . import _common"])
def test_a_relative_import_is_named_as_such(tmp_path: Path, import_line: str) -> None:
    _module_importing(tmp_path, import_line)
    message = _import_error(tmp_path)
    assert "failed to import" in message
    assert "relative import (line 1)" in message
    assert "loaded alone, as one file" in message
    # the name of the package leaderlog loads modules under means nothing to their author
    assert "leaderlog_user_projections" not in message


@pytest.mark.parametrize(
    ("import_line", "beside"),
    [
        ("from _common import TABLE", "_common.py"),
        ("import _common", "_common.py"),
        ("from projections._common import TABLE", "projections"),
    ],
)
def test_an_import_of_a_module_beside_it_says_the_folder_is_not_on_the_path(
    tmp_path: Path, import_line: str, beside: str
) -> None:
    folder = tmp_path / "projections"
    folder.mkdir()
    _module_importing(folder, import_line)
    message = _import_error(folder)
    assert "ModuleNotFoundError: No module named" in message
    assert "(line 1)" in message
    assert f"{beside} is beside it" in message or f"{beside} is its own folder" in message
    assert "not on Python's import path" in message


def test_a_module_missing_everywhere_keeps_the_plain_error(tmp_path: Path) -> None:
    _module_importing(tmp_path, "import no_such_module_anywhere")
    message = _import_error(tmp_path)
    assert message.endswith(
        "failed to import: ModuleNotFoundError: No module named 'no_such_module_anywhere' (line 1)"
    )


def test_rebuild_names_the_relative_import_and_writes_nothing(tmp_path: Path, folder: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    assert invoke(url, "import", str(SEEDS / "ice-leadership-2025-05.jsonl")).exit_code == 0
    _module_importing(folder, "from ._common import TABLE")
    rebuilt = invoke(url, "rebuild", "shared")
    assert rebuilt.exit_code == 1
    assert "relative import (line 1)" in rebuilt.stderr
    assert "leaderlog_user_projections" not in rebuilt.stderr
    assert "Traceback" not in rebuilt.stderr
    listed = invoke(url, "projections")
    assert "shared" not in listed.stdout
