"""Database URLs the store cannot use are refused with errors that never show a password."""

from __future__ import annotations

from pathlib import Path

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
    ("url", "beginning"),
    [
        ("postgresql:", "postgresql: must go on with ://"),
        ("postgresql:/app:TopSecret1@db.internal/leaderlog", "postgresql: must go on with ://"),
        ("PostgreSQL:app:TopSecret1@db.internal:5432/leaderlog", "postgresql: must go on with ://"),
        ("postgres:/", "postgres: must go on with ://"),
        ("file:leaderlog.db", "file: must go on with ://"),
        # Read as a relative path, its folders missing, the error named it whole, password too.
        (
            "postgresql//app:TopSecret1@db.internal/leaderlog",
            "postgresql// must begin postgresql://",
        ),
        ("Postgres//app:TopSecret1@db/x", "postgres// must begin postgres://"),
        ("sqlite//x.db", "sqlite// must begin sqlite://"),
    ],
)
async def test_a_url_whose_scheme_lacks_its_colon_or_slashes_is_refused_not_taken_for_a_file(
    url: str, beginning: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A path without a scheme is a SQLite file; these would have created one named after
    # the URL, a mistyped PostgreSQL one among them.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreUnavailable) as refused:
        await open_store(url)
    assert str(refused.value) == (
        f"a database URL beginning {beginning} "
        "(sqlite:///path/to/file.db, postgresql://user@host:5432/dbname)"
    )
    assert "TopSecret1" not in str(refused.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://app:TopSecret1@db/x", "postgresql://app:***@db/x"),
        (
            "postgresql://app@db/x?password=TopSecret1&sslmode=require",
            "postgresql://app@db/x?password=***&sslmode=require",
        ),
        # the client key's passphrase, which the server's banner prints the URL with
        (
            "postgresql://app@db/x?sslmode=require&sslpassword=TopSecret1&sslkey=k",
            "postgresql://app@db/x?sslmode=require&sslpassword=***&sslkey=k",
        ),
        ("sqlite:///leaderlog.db", "sqlite:///leaderlog.db"),
        ("sqlite:///data@home/leaderlog.db", "sqlite:///data@home/leaderlog.db"),
        # unencoded / ? # in the password: where the host begins is unclear, all is hidden
        ("postgresql://app:pa/ss@db:5432/x", "postgresql://app:***@db:5432/x"),
        ("postgresql://app:pa#ss@db/x", "postgresql://app:***@db/x"),
        ("postgresql://app:p?a@ss@db/x", "postgresql://app:***@db/x"),
        # the parameter's name percent-encoded, as the driver reads it all the same
        (
            "postgresql://app@db/x?schema=s&%70assword=TopSecret1",
            "postgresql://app@db/x?schema=s&%70assword=***",
        ),
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
