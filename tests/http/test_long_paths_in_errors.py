"""An error repeats only the first characters of what was asked, whatever refused it: a path
that nothing serves, or that does not take the method, is as long as a client makes it."""

from __future__ import annotations

import httpx
import pytest

from leaderlog.http._errors import LONGEST_ECHO

# Well within what the server reads of a request line, and far beyond what an error repeats.
LONG_PATH = "/" + "x" * 20_000


@pytest.mark.parametrize(
    ("method", "path", "status", "said"),
    [
        ("GET", LONG_PATH, 404, "nothing is served at /xxx"),
        ("HEAD", LONG_PATH, 404, None),
        ("POST", f"/no/such{LONG_PATH}", 404, "nothing is served at /no/such/xxx"),
        ("DELETE", f"/api/claims{LONG_PATH}", 405, "DELETE is not allowed on /api/claims/xxx"),
    ],
)
def test_an_error_repeats_only_the_start_of_a_long_path(
    seeded_server: tuple[str, str],
    client: httpx.Client,
    method: str,
    path: str,
    status: int,
    said: str | None,
) -> None:
    base, _ = seeded_server
    response = client.request(method, f"{base}{path}")
    assert response.status_code == status
    if said is None:
        # HEAD: the length of the body a GET gets, which repeats no more than it either.
        assert int(response.headers["content-length"]) < 200
        return
    detail = response.json()["detail"]
    assert detail.startswith(said)
    assert "x" * (LONGEST_ECHO + 1) not in detail
    assert "..." in detail
    if status == 405:
        # What the client needs is kept after the shortened path: the methods it may use.
        assert detail.endswith(": it takes GET, HEAD")


def test_a_short_path_is_still_repeated_whole(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    exact = "/" + "y" * (LONGEST_ECHO - 1)
    response = client.get(f"{base}{exact}")
    assert response.json()["detail"] == f"nothing is served at {exact}"
