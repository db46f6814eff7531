"""A server whose folder lacks the module of a user projection built in its database (started
from another folder, or the module removed): it says so at start, and /healthz lists the
projection with its lag, as it does one whose module no longer imports."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.http.test_user_projection_health import (
    _seeded_with,
    _serve_while_another_writer_appends,
)
from tests.projections.logs import SEED_COUNT, seen_projection_module


def test_a_built_user_projection_whose_module_is_gone_is_said_at_start(
    tmp_path: Path, folder: Path, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    # given a user projection built, whose module is then removed from the folder
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    module = folder / "seen.py"
    module.write_text(seen_projection_module("seen"), encoding="utf-8")
    _seeded_with(url, "seen")
    module.unlink()
    # when the server has started, then its log says which projection and where it looked
    said, health = _serve_while_another_writer_appends(url, client, caplog, "seen")
    assert f"its module {module.absolute()} is not there" in said
    assert f"it stays at position {SEED_COUNT}" in said
    # and /healthz lists it with its lag, rather than leave it out in silence
    listed = {item["name"]: item for item in health["projections"]}
    assert health["ok"] is True
    assert (listed["seen"]["checkpoint"], listed["seen"]["lag"]) == (SEED_COUNT, 1)
    assert listed["seen"]["error"] == f"left out: its module {module.absolute()} is not there"
    assert "error" not in listed["leadership"]
