"""Loading a user projection module: a built-in's name, and which line of it failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderlog.errors import ProjectionError
from leaderlog.projections import BUILTIN, load_user_projection
from leaderlog.projections.loading import builtin_named_modules

_MODULE = (
    "from leaderlog.projections import Projection\n"
    "class P(Projection):\n    name = {name!r}\n    version = 1\n"
    "    def schema(self): return ()\n"
    "    def tables(self): return ()\n"
    "    async def apply(self, tx, events): pass\n"
    "PROJECTION = P\n"
)


def test_a_module_named_like_a_builtin_is_refused_by_the_library_too(tmp_path: Path) -> None:
    # given a module in the folder named like a built-in projection
    (tmp_path / "leadership.py").write_text(_MODULE.format(name="leadership"), encoding="utf-8")
    # when the library is asked to load it as a user projection, then it is refused by name
    with pytest.raises(ProjectionError, match="'leadership' is a built-in projection name"):
        load_user_projection("leadership", tmp_path, builtin=BUILTIN)


def test_a_module_failing_inside_its_own_function_names_the_line_that_raised(
    tmp_path: Path,
) -> None:
    # given a module whose top level calls a function of its own that raises on line 2
    (tmp_path / "nested.py").write_text(
        "def setup():\n    raise RuntimeError('no')\n\nsetup()\n", encoding="utf-8"
    )
    # when it is loaded, then the error names line 2, where it raised, not line 4
    with pytest.raises(ProjectionError, match=r"failed to import: RuntimeError: no \(line 2\)$"):
        load_user_projection("nested", tmp_path, builtin=BUILTIN)


def test_with_user_projections_turned_off_no_module_named_like_a_builtin_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given ./projections holding a module named like a built-in
    monkeypatch.chdir(tmp_path)
    (tmp_path / "projections").mkdir()
    (tmp_path / "projections" / "audit.py").write_text(
        _MODULE.format(name="audit"), encoding="utf-8"
    )
    assert builtin_named_modules(builtin=BUILTIN)
    # when user projections are turned off, then no command warns of it
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", "")
    assert builtin_named_modules(builtin=BUILTIN) == []
