"""An organisation's history of thousands of claims is worked out, and a large answer encoded,
on worker threads: meanwhile the server's event loop goes on answering other requests (a
/healthz), and the answers are byte for byte what encoding the library's answer gives.

Each test holds the work it is about until /healthz has been answered: work done on the event
loop would hold /healthz too, which then times out.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import httpx
import pytest

from leaderlog._json import dumps
from leaderlog.http import _conditional, create_app
from leaderlog.http._api import MAX_STATE_POSTS
from leaderlog.log import EventLog
from leaderlog.projections import Queries
from leaderlog.projections import queries as queries_module
from tests.http.server import running
from tests.projections.logs import append, current, record

# Claims of an agency and its bureau: more than one part's claims are folded on the event
# loop, and their tenures and changes to come are more than are merged on it.
CLAIMS = 4800
POSTS = {"head": "agency", "deputy": "agency", "chief": "bureau"}
PEOPLE = 40
SOURCES = 50
HISTORY = "/api/history?org=agency"
# How long a test waits for the server before failing; no test passes by being quick.
PATIENCE = 30


def _records() -> list[dict[str, Any]]:
    records = [
        record("org.registered", org="agency", name="Agency"),
        record("org.registered", org="bureau", name="Bureau", parent="agency"),
        *(
            record("post.defined", post=post, org=org, title=post.title())
            for post, org in POSTS.items()
        ),
        *(record("person.registered", person=f"p{n}", name=f"Person {n}") for n in range(PEOPLE)),
        *(
            record(
                "source.registered",
                source=f"s{n}",
                url=f"https://news.example.com/{n}",
                publisher=f"Outlet {n % 7}",
                language="en",
            )
            for n in range(SOURCES)
        ),
    ]
    posts = list(POSTS)
    for n in range(CLAIMS):
        # Appointments and departures by turns, a fifth of them still to come.
        kind = ("appointment", "departure")[n // 3 % 2]
        data: dict[str, Any] = {
            "claim": f"c{n}",
            "source": f"s{n % SOURCES}",
            "kind": kind,
            "person": f"p{n // 6 % PEOPLE}",
            "post": posts[n % len(posts)],
            "capacity": "permanent",
            "modality": "expected" if n % 5 == 4 else "occurred",
            "attribution": {"kind": "outlet", "parties": []},
            "quote": f"Report {n} on the agency's leadership",
            "locator": "body",
            "effective": {
                "date": (dt.date(2000, 1, 1) + dt.timedelta(days=7 * n)).isoformat(),
                "qualifier": "on",
            },
        }
        if kind == "departure":
            data["cause"] = "retirement"
        records.append(record("claim.reported", **data))
    return records


async def _build(url: str) -> dict[str, Any]:
    """The log, its projections up to date; the library's answer to the history asked."""
    async with await EventLog.open(url) as log:
        await append(log, _records())
        await current(log)
        return await Queries(log.store).history(org="agency", max_posts=MAX_STATE_POSTS)


@dataclass
class Server:
    base: str
    expected: bytes  # the library's history of the agency, encoded as the API always has


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    url = f"sqlite:///{tmp_path_factory.mktemp('large') / 'leaderlog.db'}"
    answer = asyncio.run(_build(url))
    assert len(answer["tenures"]) + len(answer["pending"]) > queries_module._OFF_LOOP_VERSIONS
    with running(create_app(url)) as base:
        yield Server(base, dumps(answer).encode())


def _on_an_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@dataclass
class Calls:
    """Calls of a function: whether each ran where an event loop runs. The first call that
    ``holds`` waits until ``release`` is set."""

    holds: Callable[..., bool]
    on_loop: list[bool] = field(default_factory=list)
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


def _watch(
    monkeypatch: pytest.MonkeyPatch,
    module: ModuleType,
    name: str,
    holds: Callable[..., bool] = lambda *_, **__: False,
) -> Calls:
    calls = Calls(holds)
    original = getattr(module, name)

    def watched(*arguments: Any, **options: Any) -> Any:
        calls.on_loop.append(_on_an_event_loop())
        if not calls.held.is_set() and holds(*arguments, **options):
            calls.held.set()
            # Longer than /healthz is waited for: work held on the event loop fails the test
            # as holding /healthz, not later.
            calls.release.wait(2 * PATIENCE)
        return original(*arguments, **options)

    monkeypatch.setattr(module, name, watched)
    return calls


def _healthz_while_held(server: Server, calls: Calls, what: str) -> httpx.Response:
    """The history, asked while ``calls`` holds its work, and /healthz asked meanwhile."""
    with (
        ThreadPoolExecutor(1) as pool,
        httpx.Client(timeout=PATIENCE) as asker,
        httpx.Client(timeout=PATIENCE) as checker,
    ):
        asked = pool.submit(asker.get, f"{server.base}{HISTORY}")
        try:
            assert calls.held.wait(PATIENCE), f"{what} never began"
            try:
                healthz = checker.get(f"{server.base}/healthz")
            except httpx.TimeoutException:
                pytest.fail(
                    f"/healthz was not answered while {what} went on: it held the event loop"
                )
            assert healthz.status_code == 200
        finally:
            calls.release.set()
        return asked.result()


def _is_history(value: object, *_: object) -> bool:
    return isinstance(value, dict) and "tenures" in value


def test_an_org_history_is_folded_off_the_event_loop_while_healthz_is_answered(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    folds = _watch(monkeypatch, queries_module, "keyed_tenures", holds=lambda *_: True)
    history = _healthz_while_held(server, folds, "the history's folding")
    assert history.status_code == 200
    assert history.content == server.expected
    assert folds.on_loop and not any(folds.on_loop)


def test_an_org_history_is_put_in_order_off_the_event_loop(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    ordering = _watch(monkeypatch, queries_module, "_in_order", holds=lambda *_: True)
    history = _healthz_while_held(server, ordering, "putting the history's tenures in order")
    assert history.content == server.expected
    assert ordering.on_loop == [False]


def test_a_large_answer_is_encoded_off_the_event_loop_while_healthz_is_answered(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    encodings = _watch(monkeypatch, _conditional, "_json_body", holds=_is_history)
    history = _healthz_while_held(server, encodings, "encoding the history")
    assert history.content == server.expected
    # The history's on a worker thread, /healthz's small answer on the event loop.
    assert encodings.on_loop == [False, True]


def test_a_large_answer_is_taken_apart_off_the_event_loop_once_sent(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    takings = _watch(monkeypatch, _conditional, "_taken_apart", holds=_is_history)
    history = _healthz_while_held(server, takings, "taking the history apart")
    assert history.content == server.expected
    assert takings.on_loop == [False]


def test_a_small_answer_is_encoded_on_the_event_loop(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    encodings = _watch(monkeypatch, _conditional, "_json_body")
    with httpx.Client(timeout=PATIENCE) as client:
        assert client.get(f"{server.base}/healthz").status_code == 200
    assert encodings.on_loop == [True]


@pytest.mark.parametrize("encoding", ["gzip", "identity"])
def test_a_large_answer_is_sent_byte_for_byte_as_before(server: Server, encoding: str) -> None:
    sent = server.expected
    if encoding == "gzip":
        sent = gzip.compress(sent, compresslevel=6, mtime=0)
    url = f"{server.base}{HISTORY}"
    with httpx.Client(timeout=PATIENCE, headers={"Accept-Encoding": encoding}) as client:
        with client.stream("GET", url) as response:
            assert response.status_code == 200
            assert response.headers.get("content-encoding") == (
                "gzip" if encoding == "gzip" else None
            )
            assert response.headers["content-type"] == "application/json"
            assert b"".join(response.iter_raw()) == sent
        head = client.head(url)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == str(len(sent))


@pytest.mark.parametrize(
    "value",
    [
        [{"n": n, "even": n % 2 == 0} for n in range(1001)],
        {
            # Keys in code point order, as the encoder sorts them (U+FFFF before U+1F600,
            # which UTF-16 would put the other way round).
            "tenures": [{"z": n, "a": [n] * 3, "\U0001f600": None} for n in range(250)],
            "sources": {
                f"s{n:03d}{last}": {"n": n} for n in range(151) for last in ("\U0001f600", "\uffff")
            },
            "empty": [],
            "\u00e9": {"k": "v"},
            "known_at": {"position": 12},
            "note": 'caf\u00e9 "quoted" \\ \n',
        },
        {f"k{n}": n for n in range(250)},
        {"posts": [{"post": n} for n in range(101)], "org": None},
        [[n, str(n)] for n in range(40)],
    ],
    ids=["list", "history-like", "many-keys", "state-like", "whole-pieces"],
)
def test_a_large_value_encoded_in_pieces_is_the_same_json(value: object) -> None:
    assert _conditional._records(value) > _conditional._RECORDS_AT_ONCE
    assert _conditional._json_body(value) == dumps(value).encode()
