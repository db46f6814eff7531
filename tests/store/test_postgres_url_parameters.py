"""PostgreSQL URLs whose mistakes asyncpg only found when connecting, in words of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from leaderlog.errors import StoreUnavailable
from leaderlog.store.postgres import PostgresStore, check_url
from tests.conftest import invoke

_SERVER = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        # asyncpg said "invalid literal for int() with base 10: 'abc'", when connecting.
        ("host=127.0.0.1&port=abc", "its port parameter 'abc' is not a port number"),
        ("host=127.0.0.1&port=99999", "its port parameter '99999' is not a port number"),
        ("host=h1,h2&port=5432,x", "its port parameter '5432,x' is not a port number"),
        # asyncpg said "expected to be one of <built-in method values of mappingproxy ...>".
        (
            "target_session_attrs=bogus",
            "target_session_attrs='bogus' is not one of any, primary, standby, "
            "prefer-standby, read-write, read-only",
        ),
    ],
)
def test_a_parameter_asyncpg_reads_itself_is_checked_before_connecting(
    query: str, message: str
) -> None:
    with pytest.raises(StoreUnavailable, match=message):
        check_url(f"postgresql://postgres@/test?{query}")


@pytest.mark.parametrize(
    "query",
    [
        "host=127.0.0.1&port=5432",
        "host=127.0.0.1,127.0.0.1&port=5432,5432",
        "host=127.0.0.1&port=",
        "target_session_attrs=read-write",
        "target_session_attrs=",
    ],
)
def test_parameters_asyncpg_takes_are_still_taken(query: str) -> None:
    check_url(f"postgresql://postgres@/test?{query}")


def test_a_port_parameter_that_is_not_a_number_is_a_usage_mistake() -> None:
    result = invoke("postgresql://postgres@127.0.0.1/test?port=abc", "verify")
    assert result.exit_code == 2, result.output
    assert "its port parameter 'abc' is not a port number" in result.stderr
    assert "invalid literal" not in result.stderr


@pytest.mark.parametrize(
    "query",
    ["sslmode=disable&sslmode=require", "application_name=a&application_name=b"],
)
def test_a_parameter_given_twice_is_refused_rather_than_one_silently_ignored(
    query: str,
) -> None:
    key = query.partition("=")[0]
    with pytest.raises(StoreUnavailable, match=f"gives {key} more than once; give it once"):
        check_url(f"{_SERVER}?{query}")


@pytest.mark.parametrize(
    "url",
    [
        f"{_SERVER}?sslpassword=TopSecret9&schema=s&port=abc",
        f"{_SERVER}?schema=s&sslpassword=TopSecret9&sslmode=disable&sslmode=require",
    ],
)
def test_the_passphrase_of_a_client_key_is_hidden_as_a_password_is(url: str) -> None:
    with pytest.raises(StoreUnavailable) as refused:
        check_url(url)
    assert "TopSecret9" not in str(refused.value)
    assert "sslpassword=***" in str(refused.value)


async def test_the_passphrase_of_a_client_key_is_hidden_when_the_server_refuses(
    postgres_url: str,
) -> None:
    with pytest.raises(StoreUnavailable) as refused:
        await PostgresStore.open(
            f"{postgres_url}?schema=h_missing&sslpassword=TopSecret9&no_such_setting=1"
        )
    assert "TopSecret9" not in str(refused.value)
    assert "sslpassword=***" in str(refused.value)


async def test_a_server_s_hint_is_part_of_the_one_line_it_says(postgres_url: str) -> None:
    # PostgreSQL's own text puts its hint on a line of its own; the CLI showed it as "\n".
    with pytest.raises(StoreUnavailable) as refused:
        await PostgresStore.open(f"{postgres_url}?password_encryption=bogus")
    message = str(refused.value)
    assert "\n" not in message
    assert 'invalid value for parameter "password_encryption": "bogus" HINT:' in message


def test_the_cli_shows_a_server_s_hint_without_an_escaped_line_break(postgres_url: str) -> None:
    result = invoke(f"{postgres_url}?password_encryption=bogus", "verify")
    assert result.exit_code == 1, result.output
    assert "\\n" not in result.stderr
    assert "HINT:" in result.stderr


@pytest.fixture
def service_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A connection service file, the one asyncpg reads (PGSERVICEFILE)."""
    found = tmp_path / "pg_service.conf"
    found.write_text("[named]\ndbname=test\n\n[unnamed]\nhost=127.0.0.1\n", encoding="utf-8")
    monkeypatch.setenv("PGSERVICEFILE", str(found))
    return found


@pytest.mark.parametrize("service", ["unnamed", "no_such_service"])
def test_a_service_that_names_no_database_is_refused_as_a_url_naming_none_is(
    service_file: Path, service: str
) -> None:
    # asyncpg connected to the database named after the user, and the log was created there.
    with pytest.raises(
        StoreUnavailable,
        match=f"connects to no particular database: the service {service!r} names none in "
        f"{re.escape(str(service_file))}",
    ):
        check_url(f"postgresql://postgres@127.0.0.1:5432?service={service}&schema=s")


def test_a_service_that_names_a_database_is_enough(service_file: Path) -> None:
    check_url("postgresql://postgres@127.0.0.1:5432?service=named&schema=s")


def test_a_store_on_a_service_naming_no_database_is_a_usage_mistake(service_file: Path) -> None:
    result = invoke("postgresql://postgres@127.0.0.1:5432?service=unnamed&schema=s", "verify")
    assert result.exit_code == 2, result.output
    assert "connects to no particular database" in result.stderr
