"""A user projection module edited between two loads is loaded as it is now, however quickly
it was edited: Python checks cached bytecode by the source's size and modification second."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from leaderlog.projections import BUILTIN, load_user_projection

MODULE = (
    "from leaderlog.projections import Projection\n"
    "class P(Projection):\n    name = 'edited'\n    version = VERSION\n"
    "    def schema(self): return ()\n"
    "    def tables(self): return ()\n"
    "    async def apply(self, tx, events): pass\n"
    "PROJECTION = P\n"
)


def test_a_module_edited_within_a_second_at_the_same_size_loads_as_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (where Python caches bytecode, as it does unless told not to)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    # given a module loaded at version 1
    module = tmp_path / "edited.py"
    module.write_text(MODULE.replace("VERSION", "1"), encoding="utf-8")
    first = load_user_projection("edited", tmp_path, builtin=BUILTIN)
    assert first.version == 1
    before = module.stat()
    # when it is edited to version 2, its size and modification time as they were
    module.write_text(MODULE.replace("VERSION", "2"), encoding="utf-8")
    os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
    # then it loads at version 2, and no cached bytecode is left beside it
    assert load_user_projection("edited", tmp_path, builtin=BUILTIN).version == 2
    assert not (tmp_path / "__pycache__").exists()
