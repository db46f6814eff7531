"""Domain rules as a decider: ``decide(event, knowledge) -> events`` and ``evolve``.

Both are pure. ``knowledge`` answers "what is stream X now?"; it raises
:class:`MissingKnowledge` for a stream it has not loaded, so a caller can load it and ask
again. Rules never depend on the store: this module imports no persistence.

The rules, checked for every append from every entry point:

- ``reference``: a referenced org, parent, post, person, source or claim must exist.
- ``unique``: an org, post, person, source or claim is registered (or reported) once.
- ``claim_live``: only a reported claim that is not retracted can be confirmed, corrected,
  disputed or retracted (retraction is final).
- ``org_cycle``: an organisation cannot end up among its own ancestors.
- ``cause_kind``: a correction cannot leave a cause on a claim that is not a departure.
- ``correction``: a correction cannot clear a field every claim has (kind, person, post,
  capacity, modality, attribution; a null source the schema refuses already).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from leaderlog.errors import DomainError
from leaderlog.events import (
    ClaimConfirmed,
    ClaimCorrected,
    ClaimDisputed,
    ClaimReported,
    ClaimRetracted,
    CommentRequested,
    Event,
    OrgRegistered,
    OrgUpdated,
    PersonRegistered,
    PersonUpdated,
    PostDefined,
    PostUpdated,
    SourceRegistered,
    event_stream,
)

__all__ = [
    "ALWAYS_REPORTED",
    "ClaimState",
    "EntityState",
    "Knowledge",
    "MissingKnowledge",
    "OrgState",
    "decide",
    "evolve",
]

ClaimStatus = Literal["reported", "confirmed", "corrected", "disputed", "retracted"]


@dataclass(frozen=True, slots=True)
class OrgState:
    org: str
    parent: str | None


@dataclass(frozen=True, slots=True)
class ExistingEntity:
    """A post, person or source: the rules only ask whether it exists."""

    stream: str


@dataclass(frozen=True, slots=True)
class ClaimState:
    claim: str
    kind: str
    cause: str | None
    status: ClaimStatus

    @property
    def live(self) -> bool:
        return self.status != "retracted"


EntityState = OrgState | ExistingEntity | ClaimState


class MissingKnowledge(Exception):
    """The decider needs streams its caller has not loaded yet."""

    def __init__(self, streams: set[str]) -> None:
        self.streams = streams
        super().__init__(", ".join(sorted(streams)))


class Knowledge(Protocol):
    def state(self, stream: str) -> EntityState | None:
        """The entity's state, None when it does not exist; MissingKnowledge if unknown."""
        ...


class MappingKnowledge:
    """Knowledge over a plain mapping; every stream it lacks is taken as absent."""

    def __init__(self, states: Mapping[str, EntityState]) -> None:
        self._states = states

    def state(self, stream: str) -> EntityState | None:
        return self._states.get(stream)


# The streams a decision reads besides the event's own, by event type: each as its stream's
# prefix and the path to the field naming it. A field left out or empty names none, and a
# list names a stream per item. One table serves an event and its stored data alike, so a
# large import finds what to load from its records' data without making their models.
_REFERENCES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "org.registered": (("org", ("parent",)),),
    "org.updated": (("org", ("parent",)),),
    "post.defined": (("org", ("org",)),),
    "claim.reported": (("source", ("source",)), ("person", ("person",)), ("post", ("post",))),
    "claim.confirmed": (("source", ("source",)),),
    "claim.corrected": (
        ("source", ("source",)),
        ("source", ("changes", "source")),
        ("person", ("changes", "person")),
        ("post", ("changes", "post")),
    ),
    "claim.disputed": (("source", ("source",)), ("claim", ("conflicts_with",))),
    "claim.retracted": (("source", ("source",)),),
    "comment.requested": (("org", ("org",)),),
}


def referenced_streams(event: Event) -> set[str]:
    """The streams a decision about ``event`` reads (its own stream included)."""
    return _referenced(event.type, event.stream(), event, _attribute)


def referenced_streams_in(event_type: str, data: Mapping[str, Any]) -> set[str]:
    """:func:`referenced_streams` of the event of ``event_type`` whose data, in its current
    shape, is ``data``."""
    return _referenced(event_type, event_stream(event_type, data), data, _item)


def _attribute(model: Any, name: str) -> Any:
    return getattr(model, name, None)


def _item(data: Any, key: str) -> Any:
    return None if data is None else data.get(key)


def _referenced(
    event_type: str, own: str, event: object, field: Callable[[Any, str], Any]
) -> set[str]:
    streams = {own}
    for prefix, path in _REFERENCES.get(event_type, ()):
        named: Any = event
        for key in path:
            named = field(named, key)
        if isinstance(named, str):
            if named:
                streams.add(f"{prefix}-{named}")
        elif named:
            streams.update(f"{prefix}-{item}" for item in named)
    return streams


# The fields of claim.reported that are not optional.
# What every claim has: a correction may change these, never clear them.
ALWAYS_REPORTED = ("source", "kind", "person", "post", "capacity", "modality", "attribution")


# Each check returns the problem it finds, or None: most records break no rule, and a list
# of Nones costs less per record than a chain of generators.


def _missing(knowledge: Knowledge, stream: str, what: str, event: Event) -> DomainError | None:
    if knowledge.state(stream) is not None:
        return None
    kind, _, name = stream.partition("-")
    return DomainError(
        f"{event.type} refers to {kind} {name!r}, which does not exist ({what})",
        rule="reference",
        missing=stream,
    )


def _taken(knowledge: Knowledge, event: Event, noun: str) -> DomainError | None:
    if knowledge.state(event.stream()) is None:
        return None
    _, _, name = event.stream().partition("-")
    rule_text = "a claim is reported only once" if noun == "claim" else f"{noun} ids are unique"
    return DomainError(
        f"{event.type}: {noun} {name!r} already exists ({rule_text})",
        rule="unique",
        taken=event.stream(),
    )


def _not_live(knowledge: Knowledge, event: Event) -> DomainError | None:
    state = knowledge.state(event.stream())
    if state is None:
        return _missing(knowledge, event.stream(), "only a reported claim can change", event)
    if isinstance(state, ClaimState) and not state.live:
        return DomainError(
            f"{event.type}: claim {state.claim!r} was retracted, and retraction is final",
            rule="claim_live",
        )
    return None


def _unknown_source(knowledge: Knowledge, event: Event, source: str | None) -> DomainError | None:
    if not source:
        return None
    return _missing(knowledge, f"source-{source}", "the source must be registered", event)


def _cycle(knowledge: Knowledge, org: str, parent: str, event: Event) -> DomainError | None:
    seen = {org}
    current: str | None = parent
    while current is not None:
        if current in seen:
            return DomainError(
                f"{event.type}: making {parent!r} the parent of {org!r} creates a cycle",
                rule="org_cycle",
            )
        seen.add(current)
        state = knowledge.state(f"org-{current}")
        current = state.parent if isinstance(state, OrgState) else None
    return None


def decide(event: Event, knowledge: Knowledge) -> list[Event]:
    """Accept ``event`` (returning the events to append) or raise :class:`DomainError`, the
    first rule it breaks, with the others it breaks as the error's ``others``.

    When ``knowledge`` lacks streams, :class:`MissingKnowledge` names every stream the
    decision reads that it lacks, so the caller loads them all at once.
    """
    unknown: MissingKnowledge | None = None
    try:
        problems: list[DomainError] = []
        for problem in _problems(event, knowledge):
            # The same claim named twice in conflicts_with is one problem, said once.
            if problem is not None and all(str(p) != str(problem) for p in problems):
                problems.append(problem)
    except MissingKnowledge as error:
        problems, unknown = [], error
    if not problems and unknown is None:
        return [event]
    # A rule may have broken on what was known before reaching an unloaded stream; missing
    # knowledge is reported first, so the verdict never rests on part of it.
    missing: set[str] = set()
    for stream in referenced_streams(event):
        try:
            knowledge.state(stream)
        except MissingKnowledge as needed:
            missing |= needed.streams
    if missing:
        raise MissingKnowledge(missing) from None
    if unknown is not None:
        raise unknown
    first, *others = problems
    first.others = others
    raise first


def _problems(event: Event, knowledge: Knowledge) -> list[DomainError | None]:
    """Every rule ``event`` breaks (None where a check found nothing)."""
    match event:
        case OrgRegistered():
            parent = "the parent must be registered"
            return [
                _taken(knowledge, event, "organisation"),
                _missing(knowledge, f"org-{event.parent}", parent, event) if event.parent else None,
            ]
        case OrgUpdated():
            problems = [
                _missing(knowledge, event.stream(), "update only a registered organisation", event)
            ]
            if event.parent:
                parent = "the parent must be registered"
                problems.append(_missing(knowledge, f"org-{event.parent}", parent, event))
                problems.append(_cycle(knowledge, event.org, event.parent, event))
            return problems
        case PostDefined():
            org = "a post belongs to a registered org"
            return [
                _taken(knowledge, event, "post"),
                _missing(knowledge, f"org-{event.org}", org, event),
            ]
        case PostUpdated():
            return [_missing(knowledge, event.stream(), "update only a defined post", event)]
        case PersonRegistered():
            return [_taken(knowledge, event, "person")]
        case PersonUpdated():
            return [_missing(knowledge, event.stream(), "update only a registered person", event)]
        case SourceRegistered():
            return [_taken(knowledge, event, "source")]
        case CommentRequested():
            org = "the organisation must be registered"
            return [
                _missing(knowledge, event.stream(), "the source must be registered", event),
                _missing(knowledge, f"org-{event.org}", org, event),
            ]
        case ClaimReported():
            return [
                _taken(knowledge, event, "claim"),
                _unknown_source(knowledge, event, event.source),
                _missing(
                    knowledge, f"person-{event.person}", "the person must be registered", event
                ),
                _missing(knowledge, f"post-{event.post}", "the post must be defined", event),
            ]
        case ClaimConfirmed() | ClaimRetracted():
            return [
                _not_live(knowledge, event),
                _unknown_source(knowledge, event, event.source),
            ]
        case ClaimCorrected():
            return [
                _not_live(knowledge, event),
                _unknown_source(knowledge, event, event.source),
                *_correction_problems(knowledge, event),
            ]
        case ClaimDisputed():
            conflicting = "conflicting claims must exist"
            return [
                _not_live(knowledge, event),
                _unknown_source(knowledge, event, event.source),
                *(
                    _missing(knowledge, f"claim-{other}", conflicting, event)
                    for other in event.conflicts_with
                ),
            ]
    return []


def _correction_problems(knowledge: Knowledge, event: ClaimCorrected) -> list[DomainError | None]:
    changes = event.changes
    problems: list[DomainError | None] = []
    cleared = [
        field
        for field in ALWAYS_REPORTED
        if field in changes.model_fields_set and getattr(changes, field) is None
    ]
    if cleared:
        # null clears an optional field (a cause, a date); these a claim always has.
        problems.append(
            DomainError(
                f"claim.corrected: {', '.join(cleared)} cannot be cleared, only changed "
                "(every claim has them)",
                rule="correction",
            )
        )
    if changes.source:
        # The source the claim is attributed to, as a report's must be registered.
        what = "the source the claim is attributed to must be registered"
        problems.append(_missing(knowledge, f"source-{changes.source}", what, event))
    if changes.person:
        what = "the person must exist"
        problems.append(_missing(knowledge, f"person-{changes.person}", what, event))
    if changes.post:
        what = "the post must be defined"
        problems.append(_missing(knowledge, f"post-{changes.post}", what, event))
    claim = knowledge.state(event.stream())
    # What the correction would make of the claim matters only if the claim may change.
    if isinstance(claim, ClaimState) and claim.live:
        kind = changes.kind or claim.kind
        cause = changes.cause if "cause" in changes.model_fields_set else claim.cause
        if cause is not None and kind != "departure":
            problems.append(
                DomainError(
                    f"claim.corrected: claim {claim.claim!r} would have a cause but is not a "
                    'departure (clear it with "cause": null in changes)',
                    rule="cause_kind",
                )
            )
    return problems


def evolve(state: EntityState | None, event: Event) -> EntityState:
    """The state of the event's own stream after ``event``."""
    match event:
        case OrgRegistered():
            return OrgState(event.org, event.parent)
        case OrgUpdated():
            assert isinstance(state, OrgState)
            # A parent given as null makes the organisation top-level; one left out stays.
            moved = "parent" in event.model_fields_set
            return replace(state, parent=event.parent) if moved else state
        case ClaimReported():
            return ClaimState(event.claim, event.kind, event.cause, "reported")
        case ClaimConfirmed():
            assert isinstance(state, ClaimState)
            return replace(state, status="confirmed")
        case ClaimCorrected():
            assert isinstance(state, ClaimState)
            changes = event.changes
            cause = changes.cause if "cause" in changes.model_fields_set else state.cause
            return replace(state, kind=changes.kind or state.kind, cause=cause, status="corrected")
        case ClaimDisputed():
            assert isinstance(state, ClaimState)
            return replace(state, status="disputed")
        case ClaimRetracted():
            assert isinstance(state, ClaimState)
            return replace(state, status="retracted")
        case _:
            return state if state is not None else ExistingEntity(event.stream())
