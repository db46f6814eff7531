"""A SQLite file removed, or replaced by another (a copy moved over it), under a running
server: its connections would go on with the old file, and writes acknowledged to it would be
lost with it. Every route says so instead, as a 503 without Retry-After, and the server's log
says to restart."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from leaderlog.http import create_app
from leaderlog.log import EventLog
from leaderlog.tokens import Tokens
from tests.conftest import SEEDS
from tests.http.server import running

ROUTES = ["/", "/healthz", "/api/state", "/api/events", "/feeds/all.atom"]
RECORD = {"type": "person.registered", "data": {"person": "x-y", "name": "X Y"}}


@pytest.mark.parametrize("how", ["removed", "replaced"])
async def test_a_sqlite_file_removed_or_replaced_under_a_server_takes_no_writes(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "leaderlog.db"
    url = f"sqlite:///{path}"
    async with await EventLog.open(url) as log:
        token = await Tokens(log.store).create("alice")
    with running(create_app(url, seeds=SEEDS)) as base_url:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            assert (await client.get("/api/state")).status_code == 200
            # given the file removed, or a copy of it moved over it
            if how == "removed":
                for file in tmp_path.glob("leaderlog.db*"):
                    file.unlink()
            else:
                shutil.copy(path, tmp_path / "copy.db")
                (tmp_path / "copy.db").replace(path)
            # when a write comes
            written = await client.post(
                "/api/events", json=RECORD, headers={"Authorization": f"Bearer {token}"}
            )
            # then it is refused, rather than acknowledged and lost with the old file
            assert written.status_code == 503, written.text
            assert "removed or replaced while this server had it open" in written.text
            assert "retry-after" not in written.headers
            for route in ROUTES:
                response = await client.get(route)
                assert response.status_code == 503, (route, response.text)
    said = "removed" if how == "removed" else "replaced by another file"
    assert f"the database file {path} was {said} while leaderlog had it open" in caplog.text
    assert "restart to open the file now at that path" in caplog.text
