"""The read API's audit, history and claim answers are the CLI's ``--json``, value for value,
and both refuse the same mistakes: a value an option refuses (exit 2) is a 422 naming the
parameter, an id or name that names nothing (exit 1) a 404 with the same sentence."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from leaderlog.http import create_app
from tests.conftest import invoke, ok
from tests.http.server import running, seeded_database
from tests.projections.logs import FOX, GENALO_RETIREMENT, GORDON_ACTING, HAMMER_CAPTION

# A claim taken through every step by writers of its own, and sources of their own.
LIFECYCLE = [
    (
        "desk",
        {
            "type": "source.registered",
            "data": {
                "source": "ice-release",
                "url": "https://www.ice.gov/release",
                "publisher": "ICE",
                "title": "ICE names acting HSI head",
                "published": {"date": "2025-06-10"},
            },
        },
    ),
    (
        "desk",
        {
            "type": "source.registered",
            "data": {"source": "post-story", "url": "https://post.example/a", "publisher": "Post"},
        },
    ),
    (
        "alice",
        {
            "type": "claim.confirmed",
            "data": {
                "claim": GORDON_ACTING,
                "source": "ice-release",
                "effective": {"date": "2025-06-09"},
                "quote": "Gordon named acting",
            },
        },
    ),
    (
        "bob",
        {
            "type": "claim.corrected",
            "data": {
                "claim": GORDON_ACTING,
                "changes": {"capacity": "interim", "source": "post-story"},
                "reason": "it was interim",
                "source": "ice-release",
            },
        },
    ),
    (
        "carol",
        {
            "type": "claim.disputed",
            "data": {
                "claim": GORDON_ACTING,
                "reason": "ICE says otherwise",
                "source": "post-story",
                "conflicts_with": [HAMMER_CAPTION],
            },
        },
    ),
    ("dave", {"type": "claim.retracted", "data": {"claim": GORDON_ACTING, "reason": "wrong"}}),
    (
        "dave",
        {"type": "claim.retracted", "data": {"claim": GENALO_RETIREMENT, "reason": "staying"}},
    ),
]
SEEDS = 29


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(base URL, database URL) of a server on the seeds and the lifecycle above."""
    folder = tmp_path_factory.mktemp("same_as_cli")
    url = seeded_database(folder)
    for number, (actor, raw) in enumerate(LIFECYCLE):
        path = folder / f"step-{number}.jsonl"
        path.write_text(json.dumps(raw) + "\n", encoding="utf-8")
        ok(invoke(url, "import", "--actor", actor, str(path)))
    with running(create_app(url)) as base:
        yield base, url


def _cli_json(url: str, *arguments: str) -> Any:
    return json.loads(ok(invoke(url, *arguments, "--json")))


@pytest.mark.parametrize(
    ("command", "path", "parameters"),
    [
        (["audit"], "/api/audit", {}),
        (["audit", "--limit", "3", "--after", "27"], "/api/audit", {"limit": "3", "after": "27"}),
        (
            ["audit", "--attribution", "anonymous", "--status", "retracted"],
            "/api/audit",
            {"attribution": "anonymous", "status": "retracted"},
        ),
        (["audit", "--source", "post-story"], "/api/audit", {"source": "post-story"}),
        (["audit", "--publisher", "ICE"], "/api/audit", {"publisher": "ICE"}),
        (
            ["audit", "--actor", "dave", "--type", "claim.retracted"],
            "/api/audit",
            {"actor": "dave", "type": "claim.retracted"},
        ),
        (
            ["audit", "--from", "2000-01-01", "--to", "2999-12-31T23:00:00+01:00"],
            "/api/audit",
            {"from": "2000-01-01", "to": "2999-12-31T23:00:00+01:00"},
        ),
        (
            ["audit", "--source", FOX, "--type", "claim.confirmed"],
            "/api/audit",
            {"source": FOX, "type": "claim.confirmed"},
        ),
        (["history", "--person", "derek-gordon"], "/api/history", {"person": "derek-gordon"}),
        (
            ["history", "--post", "ice-hsi-ead", "--known-at", "30"],
            "/api/history",
            {"post": "ice-hsi-ead", "known_at": "30"},
        ),
        (["history", "--org", "dhs"], "/api/history", {"org": "dhs"}),
        (["claim", GORDON_ACTING], f"/api/claims/{GORDON_ACTING}", {}),
        (
            ["claim", GORDON_ACTING, "--known-at", "33"],
            f"/api/claims/{GORDON_ACTING}",
            {"known_at": "33"},
        ),
    ],
)
def test_the_api_answers_what_the_cli_prints(
    served: tuple[str, str], command: list[str], path: str, parameters: dict[str, str]
) -> None:
    base, url = served
    response = httpx.get(f"{base}{path}", params=parameters, timeout=30)
    assert response.status_code == 200, response.text
    assert response.json() == _cli_json(url, *command)


def test_every_step_of_a_claim_in_order_with_its_writer_and_source(
    served: tuple[str, str],
) -> None:
    base, url = served
    answer = httpx.get(f"{base}/api/claims/{GORDON_ACTING}", timeout=30).json()
    steps = [
        (step["position"], step["type"], step["status"], step["actor"], step["source"])
        for step in answer["lifecycle"]
    ]
    assert steps == [
        (24, "claim.reported", "reported", "seed", FOX),
        (SEEDS + 3, "claim.confirmed", "confirmed", "alice", "ice-release"),
        (SEEDS + 4, "claim.corrected", "corrected", "bob", "ice-release"),
        (SEEDS + 5, "claim.disputed", "disputed", "carol", "post-story"),
        (SEEDS + 6, "claim.retracted", "retracted", "dave", None),
    ]
    # Each step's recorded time is its event's, and times never go backwards.
    for step in answer["lifecycle"]:
        event = httpx.get(f"{base}/api/events/{step['position']}", timeout=30).json()
        assert step["recorded_at"] == event["recorded_at"]
    times = [step["recorded_at"] for step in answer["lifecycle"]]
    assert times == sorted(times)
    assert answer["status"] == "retracted"
    assert answer["current"]["source"] == "post-story"
    assert set(answer["sources"]) == {FOX, "ice-release", "post-story"}
    # Each position along the way shows the status it had then.
    for position, _, status, _, _ in steps:
        then = _cli_json(url, "claim", GORDON_ACTING, "--known-at", str(position))
        assert then["status"] == status
        assert [step["position"] for step in then["lifecycle"]][-1] == position
    # The text lists the same steps, with each writer and the publisher of each source.
    text = ok(invoke(url, "claim", GORDON_ACTING))
    lines = [line for line in text.splitlines() if "  claim." in line]
    assert [line.split()[2:5] for line in lines] == [
        ["claim.reported", "by", "seed"],
        ["claim.confirmed", "by", "alice"],
        ["claim.corrected", "by", "bob"],
        ["claim.disputed", "by", "carol"],
        ["claim.retracted", "by", "dave:"],
    ]
    assert "from ICE <https://www.ice.gov/release>" in lines[1]
    assert "from Post <https://post.example/a>" in lines[3]


@pytest.mark.parametrize(
    ("command", "path", "parameter"),
    [
        (["audit", "--status", "bogus"], "/api/audit?status=bogus", "status"),
        (["audit", "--attribution", "rumour"], "/api/audit?attribution=rumour", "attribution"),
        (["audit", "--type", "claim.deleted"], "/api/audit?type=claim.deleted", "type"),
        (["audit", "--from", "yesterday"], "/api/audit?from=yesterday", "from"),
        (["audit", "--to", "2025-06-01T00:00:00"], "/api/audit?to=2025-06-01T00:00:00", "to"),
        (
            ["audit", "--from", "2025-06-02", "--to", "2025-06-01"],
            "/api/audit?from=2025-06-02&to=2025-06-01",
            "from",
        ),
        (["audit", "--source", " "], "/api/audit?source=%20", "source"),
        (["audit", "--limit", "0"], "/api/audit?limit=0", "limit"),
        (["audit", "--after", "-1"], "/api/audit?after=-1", "after"),
        (["history", "--post", "ice-hsi-ead", "--known-at", "-1"], None, "known_at"),
        (["history", "--post", "ice-hsi-ead", "--known-at", "9999"], None, "known_at"),
        (["claim", GORDON_ACTING, "--known-at", "soon"], None, "known_at"),
    ],
)
def test_a_value_refused_is_a_usage_mistake_and_a_422_naming_it(
    served: tuple[str, str], command: list[str], path: str | None, parameter: str
) -> None:
    base, url = served
    result = invoke(url, *command)
    assert result.exit_code == 2, result.output
    if path is None:
        subject = command[1] if command[0] == "claim" else None
        path = (
            f"/api/claims/{subject}?known_at={command[-1]}"
            if subject
            else f"/api/history?post={command[2]}&known_at={command[-1]}"
        )
    response = httpx.get(f"{base}{path}", timeout=30)
    assert response.status_code == 422, response.text
    assert response.json()["problems"][0]["where"] == f"query parameter {parameter}"


@pytest.mark.parametrize(
    ("command", "path"),
    [
        (["audit", "--source", "post"], "/api/audit?source=post"),
        (["audit", "--publisher", "ice"], "/api/audit?publisher=ice"),
        (["audit", "--actor", "eve"], "/api/audit?actor=eve"),
        (["history", "--person", "gordon"], "/api/history?person=gordon"),
        (["claim", "gordon acting"], "/api/claims/gordon%20acting"),
        (["claim", GORDON_ACTING, "--known-at", "3"], f"/api/claims/{GORDON_ACTING}?known_at=3"),
    ],
)
def test_a_name_that_names_nothing_is_status_1_and_a_404_saying_the_same(
    served: tuple[str, str], command: list[str], path: str
) -> None:
    base, url = served
    result = invoke(url, *command)
    assert result.exit_code == 1, result.output
    response = httpx.get(f"{base}{path}", timeout=30)
    assert response.status_code == 404, response.text
    assert result.stderr.strip() == f"error: {response.json()['detail']}"
