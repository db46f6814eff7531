"""How a 503 tells a client whether trying again can help: ``Retry-After`` only when it can."""

from __future__ import annotations

import json

import pytest

from leaderlog.errors import StoreBusy, StoreReadOnly, StoreUnavailable
from leaderlog.http._errors import unavailable_response


@pytest.mark.parametrize(
    ("error", "retry_after"),
    [
        (StoreBusy("busy"), "1"),
        (StoreUnavailable("the disk is full", public="the database's disk is full"), "1"),
        (StoreReadOnly("read-only", public="the database cannot be written to"), None),
    ],
    ids=["busy", "disk full", "read-only"],
)
def test_retry_after_is_sent_only_where_a_retry_can_help(
    error: StoreUnavailable, retry_after: str | None
) -> None:
    response = unavailable_response(error)
    assert response.status_code == 503
    assert response.headers.get("retry-after") == retry_after
    assert json.loads(bytes(response.body)) == {"error": "unavailable", "detail": error.public}
