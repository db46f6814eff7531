"""A read API parameter whose percent-escapes are not UTF-8 (a name typed in Latin-1, ``%E9``
for ``é``) is refused as the command line refuses the same bytes (a usage mistake, exit 2):
a 422 saying so, not an answer about the text with U+FFFD in place of the bytes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from leaderlog.http import create_app
from tests.conftest import invoke
from tests.http.server import running, seeded_database

NOT_UTF8 = "holds bytes that are not UTF-8 text (typed in another encoding?)"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(base URL, database URL) of a server on the seeds."""
    url = seeded_database(tmp_path_factory.mktemp("parity_utf8"))
    with running(create_app(url)) as base:
        yield base, url


@pytest.mark.parametrize(
    ("command", "route", "name"),
    [
        (["state", "--org"], "/api/state", "org"),
        (["history", "--person"], "/api/history", "person"),
        (["history", "--post"], "/api/history", "post"),
        (["history", "--org"], "/api/history", "org"),
        (["audit", "--source"], "/api/audit", "source"),
        (["audit", "--publisher"], "/api/audit", "publisher"),
        (["audit", "--actor"], "/api/audit", "actor"),
    ],
)
def test_an_id_or_name_not_utf8_is_refused_by_both(
    served: tuple[str, str], command: list[str], route: str, name: str
) -> None:
    base, url = served
    # What Python makes of the Latin-1 byte 0xE9 on a command line, and the same byte
    # percent-encoded in a query string.
    result = invoke(url, *command, "ic\udce9")
    assert result.exit_code == 2, result.output
    assert f"'ic\\udce9' {NOT_UTF8}" in result.stderr

    response = httpx.get(f"{base}{route}?{name}=ic%E9", timeout=30)
    assert response.status_code == 422, response.text
    (problem,) = response.json()["problems"]
    assert problem["where"] == f"query parameter {name}"
    assert problem["message"] == f"{name} 'ic\\udce9' {NOT_UTF8}"


def test_a_claim_id_not_utf8_is_refused_by_both(served: tuple[str, str]) -> None:
    base, url = served
    result = invoke(url, "claim", "ab\udce9")
    assert result.exit_code == 2, result.output
    assert f"'ab\\udce9' {NOT_UTF8}" in result.stderr

    response = httpx.get(f"{base}/api/claims/ab%E9", timeout=30)
    assert response.status_code == 422, response.text
    (problem,) = response.json()["problems"]
    assert problem["where"] == "path parameter claim_id"
    assert problem["message"] == f"claim 'ab\\udce9' {NOT_UTF8}"


@pytest.mark.parametrize(
    ("command", "route", "name"),
    [
        (["state", "--known-at"], "/api/state", "known_at"),
        (["state", "--as-of"], "/api/state", "as_of"),
        (["audit", "--from"], "/api/audit", "from"),
        (["audit", "--to"], "/api/audit", "to"),
    ],
)
def test_a_time_not_utf8_is_refused_by_both(
    served: tuple[str, str], command: list[str], route: str, name: str
) -> None:
    """Said as such, rather than that the value is no day or time (which it may look like)."""
    base, url = served
    result = invoke(url, *command, "2025\udce9")
    assert result.exit_code == 2, result.output
    assert f"{command[-1]} '2025\\udce9' {NOT_UTF8}" in result.stderr

    response = httpx.get(f"{base}{route}?{name}=2025%E9", timeout=30)
    assert response.status_code == 422, response.text
    (problem,) = response.json()["problems"]
    assert problem["message"] == f"{name} '2025\\udce9' {NOT_UTF8}"


def test_utf8_text_and_the_replacement_character_itself_are_still_answered(
    served: tuple[str, str],
) -> None:
    """Only bytes that are not UTF-8 are refused: a name in UTF-8, or U+FFFD sent as its
    UTF-8 bytes, is looked up as before (and names nothing here: a 404)."""
    base, _ = served
    for given in ("ic%C3%A9", "ic%EF%BF%BD"):
        response = httpx.get(f"{base}/api/state?org={given}", timeout=30)
        assert response.status_code == 404, response.text
    response = httpx.get(f"{base}/api/audit?publisher=Fox%20News", timeout=30)
    assert response.status_code == 200, response.text


def test_a_path_elsewhere_not_utf8_is_not_taken_for_a_parameter(tmp_path: Path) -> None:
    """A byte that is not UTF-8 in a route of no parameter is no query parameter's fault."""
    url = seeded_database(tmp_path)
    with running(create_app(url)) as base:
        response = httpx.get(f"{base}/api/stat%E9", timeout=30)
    assert response.status_code == 404, response.text


@pytest.mark.parametrize(
    ("address", "where", "message"),
    [
        ("/?org=a%E9b", "query parameter org", f"org 'a\\udce9b' {NOT_UTF8}"),
        ("/?lang=f%E9", "query parameter lang", f"lang 'f\\udce9' {NOT_UTF8}"),
        ("/feeds/all.atom?lang=f%E9", "query parameter lang", f"lang 'f\\udce9' {NOT_UTF8}"),
        (
            "/feeds/person/ab%E9.atom",
            "path parameter filename",
            f"feed 'ab\\udce9.atom' {NOT_UTF8}",
        ),
    ],
)
def test_the_pages_and_feeds_refuse_what_is_not_utf8_as_the_api_does(
    served: tuple[str, str], address: str, where: str, message: str
) -> None:
    # A page said there was no organisation "a?b", and a feed that there was no person
    # "ab" and U+FFFD: ids nobody gave.
    base, _ = served
    response = httpx.get(f"{base}{address}", timeout=30)
    assert response.status_code == 422, response.text
    (problem,) = response.json()["problems"]
    assert (problem["where"], problem["message"]) == (where, message)
