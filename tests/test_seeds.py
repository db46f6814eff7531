"""Bundled seeds: records parse, quotes are verbatim, the article's hard cases are kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from leaderlog.events import parse_record

SEEDS = Path(__file__).resolve().parents[1] / "seeds"
ARTICLE = SEEDS / "article.txt"
ICE_SEED = SEEDS / "ice-leadership-2025-05.jsonl"
SEED_FILES = sorted(SEEDS.glob("*.jsonl"))


def _records(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _reported(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["data"]["claim"]: r["data"] for r in records if r["type"] == "claim.reported"}


def test_seed_files_exist() -> None:
    assert ARTICLE.is_file()
    assert ICE_SEED in SEED_FILES


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.name)
def test_every_line_parses(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines
    for number, line in enumerate(lines, start=1):
        try:
            parse_record(json.loads(line))
        except Exception as error:
            pytest.fail(f"{path.name}:{number}: {error}")


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.name)
def test_quotes_are_verbatim(path: Path) -> None:
    article = ARTICLE.read_text(encoding="utf-8")
    quotes = [
        r["data"]["quote"]
        for r in _records(path)
        if r["type"] in ("claim.reported", "claim.confirmed") and "quote" in r["data"]
    ]
    assert quotes
    missing = [quote for quote in quotes if quote not in article]
    assert not missing, f"quotes not in article.txt: {missing}"


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.name)
def test_references_precede_use(path: Path) -> None:
    """Dependency order: every id is registered on an earlier line than its first use."""
    seen: dict[str, set[str]] = {k: set() for k in ("org", "post", "person", "source", "claim")}
    creates = {
        "org.registered": "org",
        "post.defined": "post",
        "person.registered": "person",
        "source.registered": "source",
        "claim.reported": "claim",
    }
    for number, record in enumerate(_records(path), start=1):
        data = record["data"]
        created = creates.get(record["type"])
        refs = [(kind, data[kind]) for kind in seen if kind in data and kind != created]
        refs += [("org", data["parent"])] if "parent" in data else []
        refs += [("claim", claim) for claim in data.get("conflicts_with", [])]
        for kind, ref in refs:
            assert ref in seen[kind], f"{path.name}:{number}: {kind} {ref!r} used before defined"
        if created:
            assert data[created] not in seen[created], f"{path.name}:{number}: duplicate"
            seen[created].add(data[created])


def test_hammer_caption_disputes_body() -> None:
    records = _records(ICE_SEED)
    claims = _reported(records)
    hammer = {
        data["locator"]: (cid, data["capacity"])
        for cid, data in claims.items()
        if data["person"] == "robert-hammer"
        and data["post"] == "ice-hsi-ead"
        and data["kind"] == "incumbency"
    }
    caption_id, caption_capacity = hammer["caption"]
    body_id, body_capacity = hammer["body"]
    assert (caption_capacity, body_capacity) == ("acting", "unspecified")
    disputes = [
        r["data"]
        for r in records
        if r["type"] == "claim.disputed" and r["data"]["claim"] == caption_id
    ]
    assert len(disputes) == 1
    assert disputes[0]["conflicts_with"] == [body_id]
    assert "acting" in disputes[0]["reason"]


def test_comment_requests_without_response() -> None:
    requested = {
        (r["data"]["org"], r["data"]["outcome"])
        for r in _records(ICE_SEED)
        if r["type"] == "comment.requested"
    }
    assert requested == {("ice", "no_response"), ("ice-hsi", "no_response")}
