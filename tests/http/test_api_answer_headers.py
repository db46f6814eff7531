"""The caching and encoding headers of the JSON API's answers (not its errors)."""

from __future__ import annotations

import httpx


def test_an_answer_is_revalidated_before_any_cache_reuses_it(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    # given a log whose answers change with the next append
    base, _ = seeded_server
    # when a question is answered
    for path in ("/api/state", "/api/events?limit=2", "/api/events/1"):
        response = client.get(base + path)
        # then the answer says no cache may reuse it without asking again
        assert response.status_code == 200, path
        assert response.headers["cache-control"] == "no-cache", path


def test_a_small_answer_is_sent_uncompressed_though_gzip_is_accepted(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    # given a client that accepts gzip, and an answer of less than a kilobyte
    base, _ = seeded_server
    with client.stream("GET", f"{base}/api/events/1", headers={"Accept-Encoding": "gzip"}) as got:
        raw = b"".join(got.iter_raw())
    # then it is sent as it is: compressing it would save too little to be worth the work
    assert len(raw) < 1024
    assert "content-encoding" not in got.headers
    assert got.headers["vary"] == "Accept-Encoding"
