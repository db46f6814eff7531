"""Database URLs the store cannot use are refused with errors that never show a password."""

from __future__ import annotations

import pytest

from leaderlog.errors import StoreUnavailable
from leaderlog.store import open_store, without_password


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


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://app:TopSecret1@db/x", "postgresql://app:***@db/x"),
        (
            "postgresql://app@db/x?password=TopSecret1&sslmode=require",
            "postgresql://app@db/x?password=***&sslmode=require",
        ),
        ("sqlite:///leaderlog.db", "sqlite:///leaderlog.db"),
        ("sqlite:///data@home/leaderlog.db", "sqlite:///data@home/leaderlog.db"),
        # unencoded / ? # in the password: where the host begins is unclear, all is hidden
        ("postgresql://app:pa/ss@db:5432/x", "postgresql://app:***@db:5432/x"),
        ("postgresql://app:pa#ss@db/x", "postgresql://app:***@db/x"),
        ("postgresql://app:p?a@ss@db/x", "postgresql://app:***@db/x"),
        (
            "postgresql://app@db/x?application_name=a@b",
            "postgresql://app@db/x?application_name=a@b",
        ),
    ],
)
def test_urls_are_printed_without_their_passwords(url: str, shown: str) -> None:
    assert without_password(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app:Top/Secret1@db.internal:5432/x",
        "postgresql://app:Top#Secret1@db.internal:5432/x",
        "postgresql://app:Top?Secret1@db.internal/x",
        "postgresql://app:12#TopSecret1@db.internal/x",
    ],
)
async def test_a_password_with_unencoded_characters_is_not_shown(url: str) -> None:
    """urllib reads such a password as part of the host, port or path; its own reason quotes
    what it misread, so neither the URL nor the reason may be shown as they are."""
    with pytest.raises(StoreUnavailable) as refused:
        await open_store(url)
    message = str(refused.value)
    assert "Secret1" not in message and "Top" not in message, message
    assert "app:***@" in message
