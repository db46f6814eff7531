"""Canonical JSON: the bytes every hash and stored payload rests on."""

from __future__ import annotations

import tracemalloc

from leaderlog._json import canonical_bytes


def test_keys_are_sorted_and_there_is_no_whitespace() -> None:
    assert canonical_bytes({"b": [1, 2], "a": {"d": None, "c": "\u00e9"}}) == (
        '{"a":{"c":"\u00e9","d":null},"b":[1,2]}'.encode()
    )


def test_kept_payloads_take_about_their_own_size_in_memory() -> None:
    # An import keeps one per record until its batch commits: a buffer of several KiB behind
    # each few hundred bytes would make a large import need ten times its size.
    payload = {"quote": "x" * 300, "claim": "c-1", "effective": {"date": "2025-06"}}
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        kept = [canonical_bytes(payload) for _ in range(1000)]
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    per_payload = (after - before) / len(kept)
    assert per_payload < 2 * len(kept[0]) + 100
