"""Database URLs the store cannot use are refused with errors that never show a password."""

from __future__ import annotations

import pytest

from leaderlog.errors import StoreUnavailable
from leaderlog.store import open_store


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+asyncpg://app:TopSecret1@db.internal/leaderlog",
        "postgre://app:TopSecret1@db.internal:5432/leaderlog",
        "mysql://app:TopSecret1@db.internal/leaderlog",
    ],
)
async def test_an_unsupported_url_is_refused_without_its_password(url: str) -> None:
    with pytest.raises(StoreUnavailable, match="unsupported database URL") as refused:
        await open_store(url)
    assert "TopSecret1" not in str(refused.value)
    assert "app:***@db.internal" in str(refused.value)
