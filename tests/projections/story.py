"""A small language for given/when/then tests of the pure leadership rules.

A :class:`Story` is one post's claims told as events; it folds them with
:func:`~leaderlog.projections.claim_versions.evolve_claim` and asks
:func:`~leaderlog.projections.leadership_rules.post_state` for the state on a day.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from leaderlog.events import parse_event
from leaderlog.projections.claim_versions import ClaimVersion, FuzzyJSON, evolve_claim
from leaderlog.projections.leadership_rules import post_state, tenures

POST = "ero-ead"


def day(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


class Story:
    """Claim events about one post, each recorded on the day given (default 2025-06-10)."""

    def __init__(self, published: dict[str, str | None] | None = None) -> None:
        published = published if published is not None else {"paper": "2025-05-20"}
        self.published: dict[str, FuzzyJSON | None] = {
            source: {"date": date, "qualifier": "on"} if date else None
            for source, date in published.items()
        }
        self.position = 0
        self.claims: dict[str, ClaimVersion] = {}

    def _event(self, event_type: str, data: dict[str, Any], recorded: str) -> None:
        # Validated like an append, then given to the rules as the stored payload.
        stored = parse_event(event_type, data).data()
        self.position += 1
        claim = data["claim"]
        self.claims[claim] = evolve_claim(
            self.claims.get(claim),
            event_type,
            stored,
            position=self.position,
            recorded_at=f"{recorded}T12:00:00.000000Z",
            actor="test",
            published=self.published.get,
        )

    def report(
        self,
        claim: str,
        *,
        kind: str = "appointment",
        person: str = "ann",
        capacity: str = "permanent",
        modality: str = "occurred",
        effective: str | None = None,
        qualifier: str = "on",
        cause: str | None = None,
        source: str = "paper",
        recorded: str = "2025-06-10",
    ) -> Story:
        data: dict[str, Any] = {
            "claim": claim,
            "source": source,
            "kind": kind,
            "person": person,
            "post": POST,
            "capacity": capacity,
            "modality": modality,
            "attribution": {"kind": "outlet"},
        }
        if effective is not None:
            data["effective"] = {"date": effective, "qualifier": qualifier}
        if cause is not None:
            data["cause"] = cause
        self._event("claim.reported", data, recorded)
        return self

    def confirm(
        self,
        claim: str,
        *,
        source: str = "paper",
        effective: str | None = None,
        recorded: str = "2025-06-10",
    ) -> Story:
        data: dict[str, Any] = {"claim": claim, "source": source}
        if effective is not None:
            data["effective"] = {"date": effective}
        self._event("claim.confirmed", data, recorded)
        return self

    def correct(
        self, claim: str, *, source: str | None = None, recorded: str = "2025-06-10", **changes: Any
    ) -> Story:
        data: dict[str, Any] = {"claim": claim, "changes": changes, "reason": "corrected"}
        if source is not None:
            data["source"] = source
        self._event("claim.corrected", data, recorded)
        return self

    def dispute(self, claim: str, *conflicts_with: str, reason: str = "disagrees") -> Story:
        data = {"claim": claim, "reason": reason, "conflicts_with": list(conflicts_with)}
        self._event("claim.disputed", data, "2025-06-10")
        return self

    def retract(self, claim: str) -> Story:
        self._event("claim.retracted", {"claim": claim, "reason": "withdrawn"}, "2025-06-10")
        return self

    def state(self, on: str) -> dict[str, Any]:
        return post_state(list(self.claims.values()), day(on))

    def holders(self, on: str) -> list[tuple[str, str]]:
        return [(holder["person"], holder["capacity"]) for holder in self.state(on)["holders"]]

    def pending(self, on: str) -> list[str]:
        return [item["claim"] for item in self.state(on)["pending"]]

    def tenures(self) -> list[dict[str, Any]]:
        return tenures(self.claims.values())
