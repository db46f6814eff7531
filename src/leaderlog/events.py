"""The event vocabulary (v1): frozen pydantic models in one discriminated union on ``type``.

A *record* is what users send (``{"type", "data", "event_id"?, "expected_version"?, "meta"?}``);
an *event* is the validated payload; a :class:`RecordedEvent` is an event inside the envelope the
store gives it. Type names are stable strings such as ``claim.reported``, never import paths.

Stored events are never rewritten. When an event type changes shape, its ``schema_version`` goes
up and an upcaster turns the stored older shape into the current one on read.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
import unicodedata
import uuid
from collections.abc import Callable, Mapping
from types import MappingProxyType, UnionType
from typing import (
    Annotated,
    Any,
    ClassVar,
    Literal,
    NamedTuple,
    Self,
    TypeAlias,
    Union,
    get_args,
    get_origin,
)

import uuid_utils.compat
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from leaderlog._json import (
    MAX_INPUT_DEPTH,
    InputTooDeep,
    JSONDecodeError,
    canonical_bytes,
    loads,
    loads_input,
)
from leaderlog._rfc3339 import read_rfc3339
from leaderlog.errors import RecordError

__all__ = [
    "ACTOR_NAME",
    "ACTOR_RULE",
    "EVENT_TYPES",
    "NO_META",
    "Attribution",
    "ClaimChanges",
    "ClaimConfirmed",
    "ClaimCorrected",
    "ClaimDisputed",
    "ClaimReported",
    "ClaimRetracted",
    "CommentRequested",
    "Event",
    "ExpectedVersion",
    "FuzzyDate",
    "HeldRecord",
    "OrgRegistered",
    "OrgUpdated",
    "PersonRegistered",
    "PersonUpdated",
    "PostDefined",
    "PostUpdated",
    "Record",
    "RecordFields",
    "RecordedEvent",
    "SourceRegistered",
    "check_actor",
    "check_derived_id",
    "check_expected_version",
    "check_meta",
    "check_record",
    "content_event_id",
    "current_schema_version",
    "event_from_stored",
    "event_schema",
    "event_stream",
    "excerpt",
    "format_time",
    "new_event_id",
    "parse_event",
    "parse_held_record",
    "parse_record",
    "parse_record_fields",
    "readable_event",
    "record_of",
    "stream_of",
    "upcast",
]

SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
SLUG_RULE = "1-64 of a-z, 0-9 and '-', starting with a letter or digit"
# C0 controls other than tab/newline/CR, DEL and C1 controls cannot appear in XML 1.0 feeds
# and only ever arrive by accident or malice; nor can U+FFFE and U+FFFF, and the other
# noncharacters (U+FDD0-U+FDEF, the last two of every plane) are for a program's own use.
_NONCHARACTERS = "\ufdd0-\ufdef" + "".join(
    f"{chr(plane * 0x10000 + 0xFFFE)}{chr(plane * 0x10000 + 0xFFFF)}" for plane in range(17)
)
_CONTROL_CHARACTERS = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_NONCHARACTERS}]")


def _no_control_characters(value: str) -> str:
    match = _CONTROL_CHARACTERS.search(value)
    if match:
        code = ord(match.group())
        what = "control character" if code <= 0x9F else "noncharacter"
        raise ValueError(f"{what} U+{code:04X} is not allowed in text")
    return value


# Characters that show nothing though their category is not a space's or a format
# character's: the Hangul fillers (letters), the combining grapheme joiner, the Khmer
# inherent vowels, the Mongolian and other variation selectors (marks; all of them Unicode's
# default ignorable code points), and the blank braille pattern (a symbol).
_BLANK_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180D),
    (0x180F, 0x180F),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xE0100, 0xE01EF),
)
_BLANK = frozenset(chr(code) for first, last in _BLANK_RANGES for code in range(first, last + 1))


def _shows(character: str) -> bool:
    return unicodedata.category(character)[0] not in "ZC" and character not in _BLANK


def _visible(value: str, info: ValidationInfo) -> str:
    """Text must show something: not only spaces, invisible format characters (a name of
    a zero-width space) or other blank characters (a Hangul filler). Stored text is read as
    it was accepted. An empty string or one of spaces is refused here too, not by a minimum
    length: after stripping, "   " would be "too short", though three characters long."""
    if (info.context and info.context.get("stored")) or any(map(_shows, value)):
        return value
    raise ValueError("text must hold a visible character, not only spaces or format characters")


# What the validators check, said in the JSON Schema too: something besides whitespace,
# invisible format characters and the blank ones of the basic plane, and none of the
# characters _no_control_characters refuses.
_TEXT_PATTERN = (
    "^(?=[\\s\\S]*[^\\s\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5"
    "\\u180b-\\u180f\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f"
    "\\u2800\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0])"
    "[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f"
    "\\ufdd0-\\ufdef\\ufffe\\uffff]*$"
)
Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN)]


def _unstripped(limit: int) -> BeforeValidator:
    """Controls and length checked on the text as given, as the JSON Schema checks them:
    stripping would otherwise take a control character or a size the schema refuses. The
    one length check: the stripped text is never longer. (Stored text was stored stripped:
    it reads as it did.)"""

    def check(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        _no_control_characters(value)
        if len(value) > limit:
            raise ValueError(f"text is longer than {limit} characters")
        return value

    return BeforeValidator(check)


Name = Annotated[
    str,
    StringConstraints(strip_whitespace=True),
    AfterValidator(_visible),
    _unstripped(300),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 300, "pattern": _TEXT_PATTERN}),
]
Text = Annotated[
    str,
    StringConstraints(strip_whitespace=True),
    AfterValidator(_visible),
    _unstripped(5000),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 5000, "pattern": _TEXT_PATTERN}),
]


def _a_web_address(value: str, info: ValidationInfo) -> str:
    """A source's address names the host to fetch it from: ``https:///x`` (a slash too
    many) or ``https://?q`` names none, and no feed or page could link to it. Nor may it
    hold U+FEFF, a byte order mark copied along with it, invisible and taking it nowhere
    (the JSON Schema refuses it as whitespace, ECMA's \\s; Python's \\s does not), nor a
    bidirectional formatting character, which RFC 3987 forbids in addresses: invisible, it
    makes the address read as another (``https://example.org/\\u202egpj.exe`` reads as
    ending in ``exe.jpg``). Stored ones are read as they were accepted."""
    if info.context and info.context.get("stored"):
        return value
    if not _WITH_HOST.match(value):
        raise ValueError(f"{value[:60]!r} names no host: write it as https://example.org/path")
    if "\ufeff" in value:
        raise ValueError(
            "a web address cannot hold U+FEFF (an invisible byte order mark): delete it from "
            f"{value[:60]!r}"
        )
    bidirectional = _BIDIRECTIONAL_FORMATTING.search(value)
    if bidirectional is not None:
        raise ValueError(
            f"a web address cannot hold U+{ord(bidirectional.group()):04X} (an invisible "
            f"bidirectional formatting character): delete it from {value[:60]!a}"
        )
    return value


# As the Text pattern: no C0/C1 control character nor noncharacter of the basic plane, nor a
# bidirectional formatting character (LRM, RLM, the embeddings, overrides and isolates). The
# ends take what import strips: whitespace, which in Python is not U+FEFF (it is in ECMA's \s).
# Written as escapes, which Python's re and ECMA's regular expressions both read.
_BIDIRECTIONAL_RANGES = "\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069"
_BIDIRECTIONAL_FORMATTING = re.compile(f"[{_BIDIRECTIONAL_RANGES}]")
_SCHEMA_URL_REFUSED = (
    f"\\u0000-\\u001f\\u007f-\\u009f{_BIDIRECTIONAL_RANGES}\\ufdd0-\\ufdef\\ufffe\\uffff"
)
_SCHEMA_URL_PATTERN = (
    f"^[^\\S\\u000b\\u000c\\ufeff]*https?://[^\\s/?#{_SCHEMA_URL_REFUSED}]"
    f"[^\\s{_SCHEMA_URL_REFUSED}]*[^\\S\\u000b\\u000c\\ufeff]*$"
)
_WITH_HOST = re.compile(r"^[A-Za-z]+://[^\s/?#]")
_URL_PATTERN = r"^https?://[^\s]+$"
_LANGUAGE_PATTERN = r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$"
_PATTERN_RULES = {
    SLUG_PATTERN: f"an id: {SLUG_RULE}",
    _URL_PATTERN: "a web address: http:// or https://, then the host, without spaces",
    _LANGUAGE_PATTERN: "a language tag: en, fr, pt-BR, zh-Hans (lower-case language first)",
}
Url = Annotated[
    str,
    StringConstraints(strip_whitespace=True, pattern=_URL_PATTERN),
    AfterValidator(_a_web_address),
    _unstripped(2000),
    WithJsonSchema({"type": "string", "maxLength": 2000, "pattern": _SCHEMA_URL_PATTERN}),
]
LanguageTag = Annotated[str, StringConstraints(pattern=_LANGUAGE_PATTERN)]
# Only language tags as keys, in the JSON Schema too (patternProperties alone would let any
# other key through).
Labels = Annotated[
    dict[LanguageTag, Name],
    Field(max_length=50, json_schema_extra={"additionalProperties": False}),
]
Aliases = Annotated[tuple[Name, ...], Field(max_length=50)]

Kind = Literal["appointment", "departure", "incumbency"]
Capacity = Literal["permanent", "acting", "interim", "unspecified"]
Cause = Literal[
    "retirement",
    "reassignment",
    "resignation",
    "removal",
    "promotion",
    "death",
    "term_end",
    "unknown",
]
Modality = Literal["occurred", "announced", "expected", "rumored"]
Locator = Literal["headline", "body", "caption"]
CommentOutcome = Literal["no_response", "declined", "denied", "confirmed"]
ExpectedVersion: TypeAlias = int | Literal["no_stream", "any"]

# ASCII digits only, and nothing after them: "$" would let a final newline through.
_DATE_PATTERN = re.compile(r"^([0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2}))?)?\Z")
# The calendar _valid_calendar_date checks, as a pattern for the JSON Schema: a year from
# 1000, a month 01-12, and the days each month has (29 February in leap years only: every
# fourth year, but of the centuries only every fourth).
_SCHEMA_YEAR = "[1-9][0-9]{3}"
_SCHEMA_LEAP_YEAR = "(?:[1-9][0-9](?:0[48]|[2468][048]|[13579][26])|(?:[2468][048]|[13579][26])00)"
_SCHEMA_MONTH_AND_DAY = (
    "(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"
    "|(?:0[13-9]|1[0-2])-(?:29|30)"
    "|(?:0[13578]|1[02])-31)"
)
_SCHEMA_DATE_PATTERN = (
    f"^(?:{_SCHEMA_YEAR}(?:-(?:0[1-9]|1[0-2]))?"
    f"|{_SCHEMA_YEAR}-{_SCHEMA_MONTH_AND_DAY}"
    f"|{_SCHEMA_LEAP_YEAR}-02-29)$"
)
# What early development versions accepted (any script's digits, a final newline): stored
# dates of that shape are read as they were accepted.
_STORED_DATE_PATTERN = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")


class _Frozen(BaseModel):
    # defer_build: every command imports the models, few validate with all of them; building
    # their validators on first use takes a third off a command's start.
    model_config = ConfigDict(
        frozen=True, extra="forbid", str_strip_whitespace=False, defer_build=True
    )

    # Pydantic's model_copy(update=...) and model_construct skip validation. Frozen models
    # invite the first for "changing" an event, and an unchecked event would reach the log
    # (appends trust models, which the constructor validated), so both validate here.
    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        if not update:
            return super().model_copy(deep=deep)
        # Only the fields given: in an update a null given clears a field, and one left out
        # keeps it, so a copy must not give the fields the original left out.
        fields = {name: getattr(self, name) for name in self.model_fields_set}
        return self.model_validate({**fields, **update})

    @classmethod
    def model_construct(  # type: ignore[override]  # the pydantic plugin rewrites its signature
        cls, _fields_set: set[str] | None = None, **values: Any
    ) -> Self:
        return cls.model_validate(values)


class FuzzyDate(_Frozen):
    """A day, a month, a year, or unknown (``date: null``, the words kept in ``text``)."""

    date: str | None = Field(default=None, json_schema_extra={"pattern": _SCHEMA_DATE_PATTERN})
    qualifier: Literal["on", "about", "before", "after"] = "on"
    text: Name | None = None

    @field_validator("date")
    @classmethod
    def _valid_calendar_date(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        match = _DATE_PATTERN.match(value)
        if match is None and info.context and info.context.get("stored"):
            match = _STORED_DATE_PATTERN.match(value)
        if not match:
            raise ValueError("date must be YYYY, YYYY-MM or YYYY-MM-DD")
        year, month, day = match.groups()
        if int(year) < 1000:
            raise ValueError("year must be 1000 or later")
        if month is not None and not 1 <= int(month) <= 12:
            raise ValueError(f"month {month} does not exist")
        if day is not None:
            try:
                dt.date(int(year), int(month), int(day))
            except ValueError as exc:
                raise ValueError(f"{value} is not a calendar date") from exc
        return value

    @property
    def precision(self) -> Literal["day", "month", "year", "unknown"]:
        if self.date is None:
            return "unknown"
        return ("year", "month", "day")[self.date.count("-")]

    def earliest(self) -> dt.date | None:
        """The first day the date can mean, or None when unknown."""
        if self.date is None:
            return None
        parts = [int(part) for part in self.date.split("-")]
        month = parts[1] if len(parts) > 1 else 1
        return dt.date(parts[0], month, parts[2] if len(parts) > 2 else 1)

    def latest(self) -> dt.date | None:
        """The last day the date can mean, or None when unknown."""
        if self.date is None:
            return None
        parts = [int(part) for part in self.date.split("-")]
        if len(parts) == 1:
            return dt.date(parts[0], 12, 31)
        if len(parts) == 2:
            return dt.date(parts[0], parts[1], calendar.monthrange(parts[0], parts[1])[1])
        return dt.date(parts[0], parts[1], parts[2])


class Attribution(_Frozen):
    """Who a claim is attributed to: ``kind`` (``official``, ``named``, ``anonymous`` or
    ``outlet``) and the ``parties`` named, e.g. anonymous with ``("White House", "ICE")``."""

    kind: Literal["official", "named", "anonymous", "outlet"]
    parties: Annotated[tuple[Name, ...], Field(max_length=20)] = ()


class _EventBase(_Frozen):
    """Shared by every event payload; ``type`` is the discriminator."""

    schema_version: ClassVar[int] = 1
    stream_key: ClassVar[tuple[str, str]]

    def stream(self) -> str:
        prefix, field = self.stream_key
        return f"{prefix}-{getattr(self, field)}"

    def data(self) -> dict[str, Any]:
        """The payload as stored: no ``type``, no unset optional fields."""
        # model_dump(mode="json", exclude={"type"}, exclude_none=True), without its per-call
        # argument handling, which costs more than the dump itself on every append.
        return self.__pydantic_serializer__.to_python(  # type: ignore[no-any-return]
            self, mode="json", exclude={"type"}, exclude_none=True
        )


def _check_update(
    update: _EventBase,
    key: str,
    fields: tuple[str, ...],
    info: ValidationInfo,
    *,
    clearable: frozenset[str] = frozenset(),
) -> None:
    """An update names what it changes, and null is no value to change a field to, except
    for the ``clearable`` fields, which an entity may be without (null clears them).

    Stored events are read as they are (``stored`` in the validation context): an update
    written before these checks, with nothing left in it, reads as changing nothing.
    """
    if info.context and info.context.get("stored"):
        return
    given = update.model_fields_set - {"type", key}
    nulls = sorted(
        name for name in given if getattr(update, name) is None and name not in clearable
    )
    if nulls:
        raise ValueError(
            f"{', '.join(nulls)} cannot be null: leave a field out to keep it as it is"
        )
    if not given:
        event_type = update.stream_key[0]
        raise ValueError(f"{event_type}.updated needs at least one of {', '.join(fields)}")


# An update names its entity and at least one field to change (_check_update), and its
# schema forbids any other key and null (but where null clears a field, which is a change),
# so it holds at least two keys.
_UPDATE_SCHEMA = ConfigDict(json_schema_extra={"minProperties": 2})


class OrgRegistered(_EventBase):
    """An organisation: ``org`` (its id), ``name``, and optionally ``short_name``, ``parent``
    (the id of the organisation it belongs to) and ``labels`` (its name per language)."""

    stream_key: ClassVar[tuple[str, str]] = ("org", "org")
    type: Literal["org.registered"] = "org.registered"
    org: Slug
    name: Name
    short_name: Name | None = None
    parent: Slug | None = None
    labels: Labels | None = None

    @model_validator(mode="after")
    def _not_own_parent(self) -> OrgRegistered:
        if self.parent == self.org:
            raise ValueError("an organisation cannot be its own parent")
        return self


# The fields of an organisation it may be without: org.updated clears them with null.
_ORG_CLEARABLE = frozenset({"short_name", "parent"})


class OrgUpdated(_EventBase):
    """A change to an organisation: ``org``, and any of ``name``, ``short_name``, ``parent`` and
    ``labels`` (``short_name`` and ``parent`` are cleared with null)."""

    model_config = _UPDATE_SCHEMA

    stream_key: ClassVar[tuple[str, str]] = ("org", "org")
    type: Literal["org.updated"] = "org.updated"
    org: Slug
    name: Name | SkipJsonSchema[None] = None
    # null clears these (a top-level organisation, one without a short name); left out,
    # they stay as they are.
    short_name: Name | None = None
    parent: Slug | None = None
    labels: Labels | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _changes_something(self, info: ValidationInfo) -> OrgUpdated:
        _check_update(
            self,
            "org",
            ("name", "short_name", "parent", "labels"),
            info,
            clearable=_ORG_CLEARABLE,
        )
        if self.parent == self.org:
            raise ValueError("an organisation cannot be its own parent")
        return self

    def data(self) -> dict[str, Any]:
        # A null given clears its field, so it must be stored; a field left out stays out
        # (the events stored before clearing was possible keep their bytes and their ids).
        data = super().data()
        for name in _ORG_CLEARABLE & self.model_fields_set:
            if getattr(self, name) is None:
                data[name] = None
        return data


class PostDefined(_EventBase):
    """A post, whoever holds it: ``post`` (its id), ``org``, ``title``, and optionally
    ``aliases`` (informal names such as "HSI director") and ``labels`` (per language)."""

    stream_key: ClassVar[tuple[str, str]] = ("post", "post")
    type: Literal["post.defined"] = "post.defined"
    post: Slug
    org: Slug
    title: Name
    aliases: Aliases = ()
    labels: Labels | None = None


class PostUpdated(_EventBase):
    """A change to a post: ``post``, and any of ``title``, ``aliases`` and ``labels``."""

    model_config = _UPDATE_SCHEMA

    stream_key: ClassVar[tuple[str, str]] = ("post", "post")
    type: Literal["post.updated"] = "post.updated"
    post: Slug
    title: Name | SkipJsonSchema[None] = None
    aliases: Aliases | SkipJsonSchema[None] = None
    labels: Labels | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _changes_something(self, info: ValidationInfo) -> PostUpdated:
        _check_update(self, "post", ("title", "aliases", "labels"), info)
        return self


class PersonRegistered(_EventBase):
    """A person: ``person`` (their id), ``name``, and optionally ``aliases``."""

    stream_key: ClassVar[tuple[str, str]] = ("person", "person")
    type: Literal["person.registered"] = "person.registered"
    person: Slug
    name: Name
    aliases: Aliases = ()


class PersonUpdated(_EventBase):
    """A change to a person: ``person``, and any of ``name`` and ``aliases``."""

    model_config = _UPDATE_SCHEMA

    stream_key: ClassVar[tuple[str, str]] = ("person", "person")
    type: Literal["person.updated"] = "person.updated"
    person: Slug
    name: Name | SkipJsonSchema[None] = None
    aliases: Aliases | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _changes_something(self, info: ValidationInfo) -> PersonUpdated:
        _check_update(self, "person", ("name", "aliases"), info)
        return self


class SourceRegistered(_EventBase):
    """Schema v2: ``published`` is a fuzzy date (v1 stored a bare ISO date string)."""

    schema_version: ClassVar[int] = 2
    stream_key: ClassVar[tuple[str, str]] = ("source", "source")
    type: Literal["source.registered"] = "source.registered"
    source: Slug
    url: Url
    publisher: Name
    title: Text | None = None
    published: FuzzyDate | None = None
    language: LanguageTag | None = None


def _cause_only_for_departures_schema(*, kind_given: bool) -> dict[str, Any]:
    """A cause beside a kind other than departure, refused in the JSON Schema too. In a
    report the kind is always there; a correction that leaves it out keeps the claim's."""
    required = ["cause", "kind"] if kind_given else ["cause"]
    return {
        "if": {"required": required, "properties": {"cause": {"type": "string"}}},
        "then": {"properties": {"kind": {"const": "departure"}}},
    }


class ClaimReported(_EventBase):
    """One thing a source said about a person and a post: ``claim`` (its id), ``source``,
    ``kind`` (appointment, departure or incumbency), ``person``, ``post``, ``capacity``,
    ``modality`` and ``attribution``; optionally ``cause`` (departures only), ``effective`` (a
    fuzzy date), ``quote`` (the source's words) and ``locator`` (headline, body or caption)."""

    model_config = ConfigDict(json_schema_extra=_cause_only_for_departures_schema(kind_given=False))

    stream_key: ClassVar[tuple[str, str]] = ("claim", "claim")
    type: Literal["claim.reported"] = "claim.reported"
    claim: Slug
    source: Slug
    kind: Kind
    person: Slug
    post: Slug
    capacity: Capacity
    cause: Cause | None = None
    effective: FuzzyDate | None = None
    modality: Modality
    attribution: Attribution
    quote: Text | None = None
    locator: Locator | None = None

    @model_validator(mode="after")
    def _cause_only_for_departures(self) -> ClaimReported:
        if self.cause is not None and self.kind != "departure":
            raise ValueError("cause is only allowed when kind is 'departure'")
        return self


class ClaimChanges(_Frozen):
    """The reported fields a correction may change (the claim id stays). Its source is the
    source the claim is attributed to from then on, not the correction's own source."""

    # A correction names at least one field, and the fields every claim has cannot be null
    # (which clears an optional one): refused here for the source, by the domain rules for
    # the others, and in the schema for them all.
    model_config = ConfigDict(
        json_schema_extra={"minProperties": 1, **_cause_only_for_departures_schema(kind_given=True)}
    )

    source: Annotated[
        Slug | SkipJsonSchema[None],
        Field(
            description="The source the claim is attributed to from now on (the reporting "
            "source, as claim.reported's source), when it was attributed to the wrong one. "
            "Not the correction's own source, which is data.source beside changes.",
        ),
    ] = None
    kind: Kind | SkipJsonSchema[None] = None
    person: Slug | SkipJsonSchema[None] = None
    post: Slug | SkipJsonSchema[None] = None
    capacity: Capacity | SkipJsonSchema[None] = None
    cause: Cause | None = None
    effective: FuzzyDate | None = None
    modality: Modality | SkipJsonSchema[None] = None
    attribution: Attribution | SkipJsonSchema[None] = None
    quote: Text | None = None
    locator: Locator | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> ClaimChanges:
        if not self.model_fields_set:
            raise ValueError("changes must name at least one reported field")
        if "source" in self.model_fields_set and self.source is None:
            raise ValueError(
                "source cannot be null: every claim has a source (give the one it is "
                "attributed to, or leave source out to keep it)"
            )
        return self


class ClaimConfirmed(_EventBase):
    """A source confirming a claim: ``claim``, ``source``, and optionally ``effective`` (when
    the change took effect) and ``quote``."""

    stream_key: ClassVar[tuple[str, str]] = ("claim", "claim")
    type: Literal["claim.confirmed"] = "claim.confirmed"
    claim: Slug
    source: Slug
    effective: FuzzyDate | None = None
    quote: Text | None = None


class ClaimCorrected(_EventBase):
    """A correction of a claim: ``claim``, ``changes`` (the reported fields that change),
    ``reason``, and optionally the ``source`` of the correction."""

    stream_key: ClassVar[tuple[str, str]] = ("claim", "claim")
    type: Literal["claim.corrected"] = "claim.corrected"
    claim: Slug
    changes: ClaimChanges
    reason: Text
    source: Annotated[
        Slug | None,
        Field(
            description="The source that published or prompted the correction. Not the "
            "claim's source: a correction that attributes the claim to another source "
            "gives it as changes.source.",
        ),
    ] = None

    def data(self) -> dict[str, Any]:
        # An explicit null in ``changes`` clears a field (e.g. a cause), so it must be stored.
        data = super().data()
        data["changes"] = self.changes.model_dump(mode="json", exclude_unset=True)
        return data


class ClaimDisputed(_EventBase):
    """A dispute of a claim: ``claim``, ``reason``, and optionally the ``source`` and
    ``conflicts_with`` (the ids of the claims it disagrees with)."""

    stream_key: ClassVar[tuple[str, str]] = ("claim", "claim")
    type: Literal["claim.disputed"] = "claim.disputed"
    claim: Slug
    reason: Text
    source: Slug | None = None
    conflicts_with: Annotated[tuple[Slug, ...], Field(max_length=50)] = ()

    @model_validator(mode="after")
    def _not_with_itself(self) -> ClaimDisputed:
        if self.claim in self.conflicts_with:
            raise ValueError("a claim cannot conflict with itself")
        return self


class ClaimRetracted(_EventBase):
    """A retraction of a claim, which is final: ``claim``, ``reason``, and optionally the
    ``source``."""

    stream_key: ClassVar[tuple[str, str]] = ("claim", "claim")
    type: Literal["claim.retracted"] = "claim.retracted"
    claim: Slug
    reason: Text
    source: Slug | None = None


class CommentRequested(_EventBase):
    """A request for comment a source reports: ``source``, the ``org`` asked, and the
    ``outcome`` (no_response, declined, denied or confirmed)."""

    stream_key: ClassVar[tuple[str, str]] = ("source", "source")
    type: Literal["comment.requested"] = "comment.requested"
    source: Slug
    org: Slug
    outcome: CommentOutcome


Event = Annotated[
    OrgRegistered
    | OrgUpdated
    | PostDefined
    | PostUpdated
    | PersonRegistered
    | PersonUpdated
    | SourceRegistered
    | ClaimReported
    | ClaimConfirmed
    | ClaimCorrected
    | ClaimDisputed
    | ClaimRetracted
    | CommentRequested,
    Field(discriminator="type"),
]

# From the union itself, so that a type added there is known everywhere it is looked up.
_EVENT_CLASSES: tuple[type[_EventBase], ...] = get_args(get_args(Event)[0])
EVENT_TYPES: dict[str, type[_EventBase]] = {
    cls.model_fields["type"].default: cls for cls in _EVENT_CLASSES
}
_EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event, config=ConfigDict(defer_build=True))
_STORED = {"stored": True}


def event_stream(event_type: str, data: Mapping[str, Any]) -> str:
    """The stream of the event of ``event_type`` whose data, in its current shape, is
    ``data``: what its model's ``stream()`` gives, without making the model."""
    prefix, field = EVENT_TYPES[event_type].stream_key
    return f"{prefix}-{data[field]}"


def current_schema_version(event_type: str) -> int:
    """The schema version this leaderlog writes ``event_type`` in, or :class:`RecordError`
    (rule ``type``) for a type it does not know: one a newer version (or another program)
    stored, which readers of the log must refuse in words, not with a ``KeyError``."""
    known = EVENT_TYPES.get(event_type)
    if known is None:
        raise RecordError(
            f"event type {event_type!r} is not one this leaderlog understands "
            "(an event stored by a newer version, or by another program)",
            rule="type",
        )
    return known.schema_version


# --- upcasting -----------------------------------------------------------------------------

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


def upcaster(event_type: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register a pure function turning ``from_version`` data into ``from_version + 1`` data."""

    def register(function: Upcaster) -> Upcaster:
        _UPCASTERS[(event_type, from_version)] = function
        return function

    return register


@upcaster("source.registered", 1)
def _source_published_becomes_fuzzy(data: dict[str, Any]) -> dict[str, Any]:
    published = data.get("published")
    if isinstance(published, str):
        return {**data, "published": {"date": published, "qualifier": "on"}}
    return data


def upcast(event_type: str, schema_version: int, data: Mapping[str, Any]) -> dict[str, Any]:
    """Bring stored data of any older schema version up to the current shape."""
    current = current_schema_version(event_type)
    if schema_version > current:
        raise RecordError(
            f"{event_type} schema_version {schema_version} is newer than this leaderlog "
            f"understands ({current})",
            rule="schema_version",
        )
    upgraded = dict(data)
    for version in range(schema_version, current):
        step = _UPCASTERS.get((event_type, version))
        if step is None:
            raise RecordError(
                f"no upcaster for {event_type} from schema_version {version}",
                rule="schema_version",
            )
        upgraded = step(upgraded)
    return upgraded


# --- parsing ---------------------------------------------------------------------------------


def excerpt(value: object) -> str:
    """A value as an error message shows it: its repr, cut short past 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


# pydantic's words for a value of the wrong JSON type name Python's types ("a valid
# dictionary or instance of FuzzyDate", "a valid tuple"): said in JSON's instead, with the
# shape of the objects a record holds.
_WRONG_JSON_TYPE = {
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "string_type": "must be text (a JSON string)",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_type": "must be true or false",
}
_OBJECT_SHAPES = {
    "FuzzyDate": '{"date": "2025-05-29" | "2025-05" | "2025" | null, '
    '"qualifier": "on" | "about" | "before" | "after", '
    '"text": "..."}',
    "Attribution": '{"kind": "official" | "named" | "anonymous" | "outlet", "parties": [...]}',
}


def _field_problems(error: ValidationError, event_type: str) -> list[tuple[str, str]]:
    problems = []
    items = error.errors(include_url=False)
    for item in items:
        # The discriminator adds the type name as the first location part, and a union or a
        # validated type the branch it tried ("tuple[...]", "none"): dropped, so that the
        # location is the record's own field path.
        location = [str(part) for part in item["loc"][1:] if not _is_branch_tag(part)]
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field"
            if len(location) == 1:
                # What the type takes, which says too what it cannot say (an organisation
                # update has no date of effect, a post does not move to another organisation).
                takes = [
                    name
                    for name in EVENT_TYPES[event_type].model_fields
                    if name not in ("type", "schema_version")
                ]
                message += f" ({event_type} takes {', '.join(takes)})"
        elif item["type"] in _WRONG_JSON_TYPE:
            message = _WRONG_JSON_TYPE[item["type"]]
            shape = _OBJECT_SHAPES.get(str((item.get("ctx") or {}).get("class_name", "")))
            if shape is not None:
                message += f" such as {shape}"
        elif item["type"] == "missing":
            message = "required field missing"
        elif item["type"] == "value_error":
            # Our validators' own words, without pydantic's "Value error, " before them.
            message = message.removeprefix("Value error, ")
        elif item["type"] == "string_pattern_mismatch" and item["ctx"]["pattern"] in _PATTERN_RULES:
            # A sentence rather than the pattern itself.
            message = f"{excerpt(item['input'])} is not {_PATTERN_RULES[item['ctx']['pattern']]}"
        problems.append((".".join(["data", *location]), message))
    # An optional field's value that is wrong is also "not None" (the other branch of its
    # union): only worth saying when nothing else is said about the field.
    said = {
        where
        for (where, _), item in zip(problems, items, strict=True)
        if item["type"] != "none_required"
    }
    return [
        (where, message)
        for (where, message), item in zip(problems, items, strict=True)
        if not (
            item["type"] == "none_required"
            and any(other == where or other.startswith(f"{where}.") for other in said)
        )
    ]


# The names pydantic gives the branches of a union, and validated types, in a location.
_BRANCH_TAGS = frozenset({"none", "str", "int", "float", "bool", "constrained-str"})


def _is_branch_tag(part: object) -> bool:
    if not isinstance(part, str):
        return False  # a list index
    return part in _BRANCH_TAGS or "[" in part or part.startswith("function")


def parse_event(event_type: object, data: object, *, stored: bool = False) -> Event:
    """Validate one payload; raises :class:`RecordError` naming the field and the rule.

    ``stored``: the payload comes from the log, whose events are read as they were accepted
    (a check added since does not make an event already stored unreadable).
    """
    if not isinstance(event_type, str) or event_type not in EVENT_TYPES:
        known = ", ".join(sorted(EVENT_TYPES))
        raise RecordError(f"unknown event type {event_type!r} (known: {known})", rule="type")
    if not isinstance(data, Mapping):
        raise RecordError("'data' must be a JSON object", rule="schema")
    if "type" in data:
        raise RecordError("data.type: unknown field (type belongs beside data)", rule="schema")
    try:
        return _EVENT_ADAPTER.validate_python(
            {**data, "type": event_type}, context=_STORED if stored else None
        )
    except ValidationError as error:
        problems = _field_problems(error, event_type)
        text = "; ".join(f"{name}: {message}" for name, message in problems)
        raise RecordError(f"{event_type}: {text}", rule="schema", fields=problems) from None


def event_from_stored(event_type: str, schema_version: int, data: Mapping[str, Any]) -> Event:
    """Decode a stored payload, upcasting older schema versions first."""
    return parse_event(event_type, upcast(event_type, schema_version, data), stored=True)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        # Replaced, not dropped: a name an early version took that is nothing but such
        # characters ("\ufffe") would be left empty, which no name may be, and its stream
        # could then be read by nothing, not even the update that corrects it.
        return _CONTROL_CHARACTERS.sub("\ufffd", value)[:5000]
    if isinstance(value, dict):
        return {key: _scrub(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    return value


def readable_event(event_type: str, schema_version: int, data: Mapping[str, Any]) -> Event:
    """Decode a stored payload for reading, tolerating text the write path would refuse.

    Rules tighten over time and stores can be written by other tools, so readers (projections,
    feeds) put U+FFFD for control characters and noncharacters and cut over-long text rather
    than stop at such an event.
    Anything else that does not validate still raises :class:`RecordError`.
    """
    try:
        return event_from_stored(event_type, schema_version, data)
    except RecordError:
        return event_from_stored(event_type, schema_version, _scrub(dict(data)))


def stream_of(event: Event) -> str:
    return event.stream()


_SCHEMA_EVENT_ID_PATTERN = (
    "^(?!0{8}-0{4}-0{4}-0{4}-0{12}$)(?![fF]{8}-[fF]{4}-[fF]{4}-[fF]{4}-[fF]{12}$)"
    "[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$"
)


def event_schema() -> dict[str, Any]:
    """JSON Schema of a record: one ``oneOf`` branch per event type."""
    branches = []
    definitions: dict[str, Any] = {}
    for event_type, cls in sorted(EVENT_TYPES.items()):
        schema = cls.model_json_schema(ref_template="#/$defs/{model}")
        definitions.update(schema.pop("$defs", {}))
        schema["properties"].pop("type", None)
        if "required" in schema:
            schema["required"] = [name for name in schema["required"] if name != "type"]
        branches.append(
            {
                "title": event_type,
                "type": "object",
                "properties": {
                    "type": {"const": event_type},
                    "data": schema,
                    # null is taken as leaving the key out, as import and the API do.
                    # format is only an annotation in draft 2020-12, so the pattern says what
                    # import takes: the standard spelling, and not the nil or max UUID.
                    "event_id": {
                        "type": ["string", "null"],
                        "format": "uuid",
                        "pattern": _SCHEMA_EVENT_ID_PATTERN,
                    },
                    # A reader of JSON input takes integers up to 64 bits, no more.
                    "expected_version": {
                        "anyOf": [
                            {"type": "integer", "minimum": 0, "maximum": 2**64 - 1},
                            {"enum": ["no_stream", "any", None]},
                        ]
                    },
                    "meta": {"type": ["object", "null"]},
                },
                "required": ["type", "data"],
                "additionalProperties": False,
            }
        )
    whole: dict[str, Any] = _without_impossible_defaults(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "leaderlog record (vocabulary v1)",
            "oneOf": branches,
            "$defs": definitions,
        }
    )
    return whole


def _without_impossible_defaults(schema: Any) -> Any:
    """``schema`` without the ``"default": null`` of fields that may be left out but not
    given null (an update's name, a correction's person): pydantic writes the Python
    default, which OpenAPI validators refuse as a value the field's own schema forbids."""
    if isinstance(schema, list):
        return [_without_impossible_defaults(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept = {key: _without_impossible_defaults(value) for key, value in schema.items()}
    if "default" in kept and kept["default"] is None and not _takes_null(kept):
        del kept["default"]
    return kept


def _takes_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kinds = schema.get("type")
    if kinds == "null" or (isinstance(kinds, list) and "null" in kinds):
        return True
    if None in schema.get("enum", ()) or ("const" in schema and schema["const"] is None):
        return True
    return any(_takes_null(branch) for key in ("anyOf", "oneOf") for branch in schema.get(key, ()))


# --- records and ids ---------------------------------------------------------------------------

# Fixed forever: content-derived event ids depend on it.
_CONTENT_NAMESPACE = uuid.UUID("5b0f4a52-3c6e-4a8e-9d43-6c1e8f1f2a10")
_META_LIMIT_BYTES = 4096
# Who appended: "cli", "seed", "import" or a write token's name. One short word, so the
# audit and the events tables stay one line per event.
ACTOR_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
ACTOR_RULE = "1-64 of a-z, 0-9, '.', '_', '-', starting with a letter or digit"


def check_actor(actor: str) -> str:
    """``actor`` if it is a valid actor name, else a :class:`RecordError` (rule ``actor``)."""
    if not isinstance(actor, str) or not ACTOR_NAME.fullmatch(actor):
        raise RecordError(f"actor {actor!r} must be {ACTOR_RULE}", rule="actor")
    return actor


def new_event_id() -> uuid.UUID:
    """A time-ordered (UUIDv7) id, so index inserts land at the end of the B-tree."""
    return uuid_utils.compat.uuid7()


def content_event_id(event: Event) -> uuid.UUID:
    """The id of a record that has none: a UUIDv5 of its canonical JSON."""
    return _content_id(event.type, event.data())


def _content_id(event_type: str, data: Mapping[str, Any]) -> uuid.UUID:
    canonical = canonical_bytes({"type": event_type, "data": data})
    return uuid.uuid5(_CONTENT_NAMESPACE, canonical.decode())


class Record(_Frozen):
    """A validated input record, ready for the domain rules."""

    event: Event
    event_id: uuid.UUID
    expected_version: ExpectedVersion | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    # Only set when re-importing an export: the original envelope is kept.
    recorded_at: dt.datetime | None = None
    actor: str | None = None
    # The hash an export line gave the event ("" when it gave none): a time from the past
    # is kept only where the log's own chain gives the event this very hash (a copy of the
    # log, or of more of it). None outside exports: a program moving a log vouches for it.
    exported_hash: str | None = None
    # An exported event of an older schema version: its version and data exactly as stored.
    # ``event`` is its upcast form, for the rules; the copy stores this, since stored events
    # are never rewritten (and the hash chain covers their bytes).
    stored_as: tuple[int, dict[str, Any]] | None = None

    @field_validator("meta", mode="before")
    @classmethod
    def _storable_meta(cls, meta: object) -> dict[str, Any]:
        # Here, not in parse_record alone: a record built by hand is held to it too, so no
        # record can reach a group commit with a meta that fails there (RecordError is not
        # a ValueError, so pydantic passes it on as it is).
        return check_meta(meta)

    @field_validator("expected_version", mode="before")
    @classmethod
    def _exact_expected_version(cls, expected: object) -> ExpectedVersion | None:
        # As parse_record reads it: pydantic would take True, "1" or 1.0 for version 1, and
        # a negative version would only be refused as stale, once the batch was decided.
        return check_expected_version(expected)

    @property
    def stream(self) -> str:
        return self.event.stream()


_RECORD_ORDER = ("type", "data", "event_id", "expected_version", "meta")
_RECORD_KEYS = set(_RECORD_ORDER)
_HASH = re.compile(r"[0-9a-f]{64}\Z")
_EXPORT_KEYS = {"position", "stream", "version", "schema_version", "recorded_at", "actor", "hash"}


def check_expected_version(value: object) -> ExpectedVersion | None:
    """``value`` if it is an expected version (or None), else a :class:`RecordError`."""
    if value is None or value in ("no_stream", "any"):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise RecordError(
        f"expected_version must be a non-negative integer, 'no_stream' or 'any', not {value!r}",
        rule="expected_version",
    )


def check_derived_id(
    event_id: uuid.UUID, event: Event, *, as_stored: Mapping[str, Any] | None = None
) -> None:
    """Refuse a content-derived (version 5) id given with other content: it is the id another
    record will be given, which would then be refused as a conflict (squatting).

    ``as_stored``: the data of an exported event as stored, whose id was derived from it when
    that shape was current (an older schema version's)."""
    if event_id.version != 5 or event_id == content_event_id(event):
        return
    if as_stored is None or event_id != _content_id(event.type, as_stored):
        raise RecordError(
            f"event_id {event_id} is a content-derived (version 5) id, but not this record's; "
            "leave event_id out, or give a version 4 or 7 UUID",
            rule="event_id",
        )


_UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def _given_event_id(given: object) -> uuid.UUID:
    """A record's own ``event_id``: a UUID in its standard spelling (as JSON Schema's
    ``"format": "uuid"`` says), and not a placeholder that many writers would all send."""
    if not isinstance(given, str) or not _UUID_TEXT.fullmatch(given):
        raise RecordError(
            f"event_id {given!r} is not a UUID (8-4-4-4-12 hexadecimal digits)", rule="schema"
        )
    event_id = uuid.UUID(given)
    _check_not_a_placeholder(event_id)
    return event_id


def _check_not_a_placeholder(event_id: uuid.UUID) -> None:
    if event_id.int in (0, (1 << 128) - 1):
        raise RecordError(
            f"event_id {event_id} is a placeholder (the nil or max UUID), not an id; leave "
            "event_id out, or give a version 4 or 7 UUID",
            rule="event_id",
        )


def check_meta(meta: object) -> dict[str, Any]:
    """``meta`` as it will be stored, or :class:`RecordError`: a JSON object of at most 4 KiB,
    nested at most 64 levels, that reads back as given.

    Values JSON does not have would be changed without a word on the way in (NaN and
    infinities to null, a datetime or UUID to a string, a tuple to a list); what a library
    caller appends must also import again after an export, as every record must.
    """
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise RecordError("'meta' must be a JSON object", rule="schema")
    if not meta:
        return {}  # most records carry none: nothing to encode or read back
    given = dict(meta)
    try:
        encoded = canonical_bytes(given)
    except TypeError as error:  # orjson's JSONEncodeError is one
        raise RecordError(f"'meta' cannot be written as JSON: {error}", rule="schema") from None
    if len(encoded) > _META_LIMIT_BYTES:
        raise RecordError(f"'meta' is larger than {_META_LIMIT_BYTES} bytes", rule="size")
    try:
        read_back = loads_input(encoded)
    except InputTooDeep:
        message = f"'meta' is nested deeper than {MAX_INPUT_DEPTH} levels"
        raise RecordError(message, rule="size") from None
    except JSONDecodeError as error:
        raise RecordError(f"'meta' {error}", rule="schema") from None
    if read_back != given:
        raise RecordError(
            "'meta' would not read back as given: use JSON values only (strings, numbers, "
            "true/false, null, lists and objects with string keys; no NaN, dates or tuples)",
            rule="schema",
        )
    return given


_HASH_TEXT = re.compile(r"[0-9a-f]{64}")


def _check_envelope_numbers(raw: Mapping[str, Any]) -> None:
    """An exported envelope's position, version and hash are computed again on import, but
    must still be what an export writes: a record is not taken for an envelope (which keeps
    its id and time) on the strength of any two keys."""
    for key in ("position", "version"):
        value = raw.get(key, 1)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise RecordError(f"{key} must be a positive integer, got {value!r:.80}", rule="schema")
    if not isinstance(raw["hash"], str) or not _HASH_TEXT.fullmatch(raw["hash"]):
        raise RecordError(
            f"hash must be 64 lowercase hexadecimal digits, got {raw['hash']!r:.80}", rule="schema"
        )


class RecordFields(NamedTuple):
    """A :class:`Record`'s fields, as :func:`parse_record_fields` reads them: a named tuple
    costs about a kilobyte less than the model, which counts when a large import holds every
    record of its file at once."""

    event: Event
    event_id: uuid.UUID
    expected_version: ExpectedVersion | None
    meta: Mapping[str, Any]
    recorded_at: dt.datetime | None = None
    actor: str | None = None
    stored_as: tuple[int, dict[str, Any]] | None = None
    exported_hash: str | None = None

    @classmethod
    def of(cls, record: Record) -> RecordFields:
        return cls(
            record.event,
            record.event_id,
            record.expected_version,
            record.meta,
            record.recorded_at,
            record.actor,
            record.stored_as,
            record.exported_hash,
        )

    def stored_form(self) -> tuple[int, dict[str, Any]]:
        """The schema version and data to store for the record's own event."""
        if self.stored_as is not None:
            return self.stored_as
        return self.event.schema_version, self.event.data()


# Most records carry no meta: one empty mapping serves them all (and every NewEvent).
NO_META: Mapping[str, Any] = MappingProxyType({})


class HeldRecord:
    """A checked record as the write path holds it until it is written: what its row needs
    (type, schema version and data as the canonical JSON stored, id, meta, and an export's
    envelope fields) without its event model, which costs over a kilobyte more a claim: a
    large import holds every record of its files at once.

    :attr:`event` is made again from the data each time it is asked for, without being
    validated again (it was, when the record was read); a record made with
    ``keep_event=True`` keeps its model instead.
    """

    __slots__ = (
        "_event",
        "actor",
        "data_json",
        "event_id",
        "expected_version",
        "exported_hash",
        "meta",
        "recorded_at",
        "schema_version",
        "type",
    )

    def __init__(
        self,
        fields: RecordFields,
        *,
        keep_event: bool = True,
    ) -> None:
        event = fields.event
        schema_version, data = fields.stored_form()
        self._event: Event | None = event if keep_event else None
        self.type: str = event.type
        self.schema_version = schema_version
        self.data_json = canonical_bytes(data)
        self.event_id = fields.event_id
        self.expected_version = fields.expected_version
        self.meta = fields.meta
        self.recorded_at = fields.recorded_at
        self.actor = fields.actor
        self.exported_hash = fields.exported_hash

    @property
    def kept_event(self) -> Event | None:
        """The event model, when the record keeps it (``keep_event=True``)."""
        return self._event

    @property
    def event(self) -> Event:
        if self._event is not None:
            return self._event
        if self.schema_version != current_schema_version(self.type):
            # Kept in an older shape (an old export's line): upcast as it was when read.
            return parse_event(self.type, upcast(self.type, self.schema_version, self.stored_data))
        return _rebuilt_event(self.type, self.data_json)

    @property
    def stored_data(self) -> dict[str, Any]:
        """The data as it is stored (in the shape of :attr:`schema_version`)."""
        data: dict[str, Any] = loads(self.data_json)
        return data

    @property
    def stored_as(self) -> tuple[int, dict[str, Any]] | None:
        """:attr:`RecordFields.stored_as`: the older shape the record keeps, if any."""
        if self.schema_version == current_schema_version(self.type):
            return None
        return self.schema_version, self.stored_data

    def fields(self) -> RecordFields:
        """The record as :class:`RecordFields` (its event made again if not kept)."""
        return RecordFields(
            self.event,
            self.event_id,
            self.expected_version,
            self.meta,
            self.recorded_at,
            self.actor,
            self.stored_as,
            self.exported_hash,
        )


# How to make a value of a model's field again from its JSON form: None where the JSON value
# is the model's (text, numbers, a dict of text).
_Remake: TypeAlias = Callable[[Any], Any] | None


def _remake(annotation: Any) -> _Remake:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _remake(get_args(annotation)[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _model_remake(annotation)
    if origin is Literal:
        # The literal's own text, as validating gives it, rather than a copy per event.
        return {value: value for value in get_args(annotation)}.__getitem__
    if origin in (Union, UnionType):
        options = [_remake(option) for option in get_args(annotation)]
        remakes = [remake for remake in options if remake is not None]
        if not remakes:
            return None
        if len(remakes) > 1:
            raise TypeError(f"cannot make {annotation} again from JSON")
        # None is left as it is by the caller.
        return remakes[0]
    if origin is tuple:
        item = _remake(get_args(annotation)[0])
        return tuple if item is None else (lambda value: tuple(item(part) for part in value))
    if origin in (list, dict, set, frozenset) and any(map(_remake, get_args(annotation))):
        raise TypeError(f"cannot make {annotation} again from JSON")
    if origin in (set, frozenset):
        raise TypeError(f"cannot make {annotation} again from JSON")
    return None


def _remake_takes_none(annotation: Any) -> bool:
    if get_origin(annotation) is Annotated:
        return _remake_takes_none(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        return any(map(_remake_takes_none, get_args(annotation)))
    return annotation is type(None)


_MODEL_REMAKES: dict[type[BaseModel], Callable[[Mapping[str, Any]], Any]] = {}


def _model_remake(cls: type[BaseModel]) -> Callable[[Mapping[str, Any]], Any]:
    """A function making a model of ``cls`` from its JSON form without validating it again:
    the fields given, made again (nested models, tuples), and the defaults of the others.

    Only for data a model of the same class gave (``data()``): a field left out of it is
    None or its default, and no field that can be None has another default."""
    known = _MODEL_REMAKES.get(cls)
    if known is not None:
        return known
    defaults: list[tuple[str, Any]] = []
    remakes: list[tuple[str, Callable[[Any], Any]]] = []
    for name, info in cls.model_fields.items():
        if info.default_factory is not None or (
            # data() leaves None out: it must be what a field left out is.
            _remake_takes_none(info.annotation) and info.default is not None
        ):
            raise TypeError(f"cannot make {cls.__name__}.{name} again from JSON")
        defaults.append((name, info.default))
        field_remake = _remake(info.annotation)
        if field_remake is not None:
            remakes.append((name, field_remake))
    always_given = frozenset({"type"} & set(cls.model_fields))
    setattr_ = object.__setattr__

    def remake(data: Mapping[str, Any]) -> Any:
        values = {name: data.get(name, default) for name, default in defaults}
        for name, field_remake in remakes:
            value = values[name]
            if value is not None:
                values[name] = field_remake(value)
        model = object.__new__(cls)
        setattr_(model, "__dict__", values)
        setattr_(model, "__pydantic_fields_set__", _FIELDS_SETS[always_given.union(data)])
        setattr_(model, "__pydantic_extra__", None)
        setattr_(model, "__pydantic_private__", None)
        return model

    _MODEL_REMAKES[cls] = remake
    return remake


def _rebuilt_event(event_type: str, data_json: bytes) -> Event:
    """The event whose current-shape data is ``data_json``, as validating it gave it."""
    event: Event = _model_remake(EVENT_TYPES[event_type])(loads(data_json))
    return event


class _SharedFieldsSet(set[str]):
    """A set of field names several models share: changing it would change them all. A set
    all the same, as pydantic checks when a model is validated into another."""

    __slots__ = ()

    def _shared(self, *arguments: object) -> None:
        raise TypeError("a model's set of given fields is shared: it cannot change")

    add = discard = remove = pop = clear = update = _shared  # type: ignore[assignment]
    difference_update = intersection_update = symmetric_difference_update = _shared
    __ior__ = __iand__ = __isub__ = __ixor__ = _shared  # type: ignore[assignment]


# The sets of field names shared by the events parse_record_fields makes.
class _FieldsSets(dict[frozenset[str], _SharedFieldsSet]):
    """The shared set for each set of field names, made when first asked for."""

    def __missing__(self, given: frozenset[str]) -> _SharedFieldsSet:
        if len(self) > 4096:
            self.clear()
        shared = self[given] = _SharedFieldsSet(given)
        return shared


_FIELDS_SETS = _FieldsSets()


def _share_fields_sets(model: BaseModel) -> None:
    """Give ``model``, and the models in its fields, shared sets of the fields they were given.

    Pydantic keeps a set of its own in every model it validates: nearly a kilobyte a claim
    (with its date and attribution), for sets that are nearly all alike, while a large import
    holds every event of its file. A frozen model never changes its set, so one serves them
    all (as one frozenset serves every ``RecordedEvent.trusted``).
    """
    pending = [model]
    while pending:
        item = pending.pop()
        if not item.model_config.get("frozen"):
            continue
        shared = _FIELDS_SETS[frozenset(item.__pydantic_fields_set__)]
        object.__setattr__(item, "__pydantic_fields_set__", shared)
        for value in item.__dict__.values():
            if isinstance(value, BaseModel):
                pending.append(value)
            elif isinstance(value, tuple | list):
                pending.extend(part for part in value if isinstance(part, BaseModel))


def parse_record(raw: object) -> Record:
    """Validate one record (or one exported envelope) into a :class:`Record`."""
    return _ParsedRecord(**parse_record_fields(raw)._asdict())


def parse_record_fields(raw: object) -> RecordFields:
    """:func:`parse_record`, giving the record's fields (every check made all the same)."""
    return _record_fields(raw, share_fields_sets=True)


def parse_held_record(raw: object) -> HeldRecord:
    """:func:`parse_record`, as the write path holds it (see :class:`HeldRecord`)."""
    # The model is let go at once: sharing its sets of fields would be wasted.
    return HeldRecord(_record_fields(raw, share_fields_sets=False), keep_event=False)


def _record_fields(raw: object, *, share_fields_sets: bool) -> RecordFields:
    if not isinstance(raw, Mapping):
        if isinstance(raw, list):
            # A file written as a JSON array, as the write API takes a body.
            raise RecordError(
                "a record must be a JSON object, not a list (in a file, one record per line)",
                rule="schema",
            )
        raise RecordError("a record must be a JSON object", rule="schema")
    exported = "position" in raw and "hash" in raw
    allowed = _RECORD_KEYS | (_EXPORT_KEYS if exported else set())
    # A library caller's mapping may have keys JSON cannot hold (1): unknown fields too.
    unknown = sorted(str(key) for key in set(raw) - allowed)
    if unknown:
        message = f"unknown record field(s): {', '.join(unknown)}"
        if not exported and set(unknown) <= _EXPORT_KEYS:
            # An export line cut short: its envelope fields are unknown only for what it lost.
            lost = [key for key in ("position", "hash") if key not in raw]
            has = "neither position nor hash" if len(lost) == 2 else f"no {lost[0]}"
            message += (
                f" (an exported envelope needs both position and hash, and this one has {has}; "
                f"a record without its envelope has only {', '.join(_RECORD_ORDER)})"
            )
        elif "data" not in raw:
            # The event's fields written beside its type, a first record's likely mistake.
            fields = ", ".join(f'"{key}": ...' for key in unknown[:3])
            more = ", ..." if len(unknown) > 3 else ""
            inside = f'{{"type": ..., "data": {{{fields}{more}}}}}'
            message += f' (an event\'s fields go inside "data": {inside})'
        raise RecordError(message, rule="schema")
    if "type" not in raw or "data" not in raw:
        raise RecordError("a record needs 'type' and 'data'", rule="schema")
    data = raw["data"]
    stored_as: tuple[int, dict[str, Any]] | None = None
    if exported:
        _check_envelope_numbers(raw)
        version = raw.get("schema_version", 1)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise RecordError("schema_version must be a positive integer", rule="schema")
        if not isinstance(data, Mapping):
            raise RecordError("'data' must be a JSON object", rule="schema")
        event_type = raw["type"]
        # Any JSON value may stand there (a list cannot even be looked up): parse_event
        # names what is not an event type.
        if isinstance(event_type, str) and event_type in EVENT_TYPES:
            if version < current_schema_version(event_type):
                stored_as = (version, dict(data))
            data = upcast(event_type, version, data)
    event = parse_event(raw["type"], data)
    if share_fields_sets:
        _share_fields_sets(event)
    if exported and raw.get("stream") not in (None, event.stream()):
        raise RecordError(
            f"stream {raw.get('stream')!r} does not match the data ({event.stream()!r})",
            rule="stream",
        )

    event_id: uuid.UUID
    if raw.get("event_id") is None:
        event_id = content_event_id(event)
    else:
        event_id = _given_event_id(raw["event_id"])
        # An export keeps the ids it was given, derived from the content as then stored
        # (an older schema version's), so its data as exported counts too.
        check_derived_id(event_id, event, as_stored=raw["data"] if exported else None)

    expected = check_expected_version(raw.get("expected_version"))

    recorded_at: dt.datetime | None = None
    actor: str | None = None
    exported_hash: str | None = None
    if exported:
        given = raw.get("recorded_at")
        if not isinstance(given, str):
            raise RecordError(
                f"recorded_at must be an RFC 3339 time such as 2025-05-29T14:00:00Z, "
                f"got {given!r:.80}",
                rule="schema",
            )
        try:
            recorded_at = read_rfc3339(given)
        except ValueError as problem:
            raise RecordError(f"recorded_at {problem}, got {given!r:.80}", rule="schema") from None
        # One an earlier version let through ("") is refused, not replaced: the event's
        # hash covers the actor, so it could only come back as another event.
        given_actor = raw.get("actor")
        actor = "import" if given_actor is None else check_actor(given_actor)
        # Not trusted, only compared with the hash the chain gives the event: anything but a
        # hash cannot match one, so it counts as none rather than being refused.
        given_hash = raw.get("hash")
        exported_hash = (
            given_hash if isinstance(given_hash, str) and _HASH.match(given_hash) else ""
        )
    return RecordFields(
        event,
        event_id,
        expected,
        # Most records carry none: one empty mapping serves them all.
        check_meta(raw.get("meta")) or NO_META,
        recorded_at,
        actor,
        stored_as,
        exported_hash,
    )


class _ParsedRecord(Record):
    """A record :func:`parse_record` made, so held to every check already."""

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        # A copy with changes was not parsed: it is a plain Record, checked when appended.
        copied = super().model_copy(update=update, deep=deep)
        if not update:
            return copied
        fields = {name: getattr(copied, name) for name in Record.model_fields}
        return Record.model_validate(fields)  # type: ignore[return-value]


def record_of(fields: RecordFields) -> Record:
    """``fields`` as a :class:`Record`, validated as one built by hand is, or
    :class:`RecordError` naming the first field at fault."""
    try:
        return Record(**fields._asdict())
    except ValidationError as error:
        found = error.errors()[0]
        where = ".".join(str(part) for part in found["loc"]) or "record"
        raise RecordError(f"{where}: {found['msg']}", rule="schema") from None


def check_record(record: Record) -> None:
    """Hold a record built by hand to what :func:`parse_record` checks, or
    :class:`RecordError`: an id that is no placeholder, nor another content's derived id; an
    actor and a recorded time of the form an export has; and an older stored shape
    (``stored_as``) that is this very event's data as it was stored then."""
    if isinstance(record, _ParsedRecord):
        return
    event = record.event
    _check_not_a_placeholder(record.event_id)
    as_stored: dict[str, Any] | None = None
    if record.stored_as is not None:
        version, as_stored = record.stored_as
        current = current_schema_version(event.type)
        if isinstance(version, bool) or not 1 <= version < current:
            older = f"1 to {current - 1}" if current > 1 else f"{event.type} has none"
            raise RecordError(
                f"stored_as must hold an older schema version ({older}), got {version!r}",
                rule="schema",
            )
        try:
            then = parse_event(event.type, upcast(event.type, version, as_stored))
        except RecordError as error:
            raise RecordError(f"stored_as: {error}", rule="schema") from None
        if then != event:
            raise RecordError(
                "stored_as is not this event's data in its older shape", rule="schema"
            )
    check_derived_id(record.event_id, event, as_stored=as_stored)
    if record.actor is not None:
        check_actor(record.actor)
    if record.recorded_at is not None and record.recorded_at.utcoffset() is None:
        raise RecordError("recorded_at must carry its UTC offset", rule="schema")
    if record.exported_hash and not _HASH.match(record.exported_hash):
        raise RecordError(
            "exported_hash must be a sha256 in lower-case hex, or empty", rule="schema"
        )


class RecordedEvent(_Frozen):
    """An event inside its store envelope."""

    position: int
    stream: str
    version: int
    event_id: uuid.UUID
    type: str
    schema_version: int
    data: dict[str, Any]
    recorded_at: dt.datetime
    actor: str
    meta: dict[str, Any] = Field(default_factory=dict)
    hash: str

    @classmethod
    def trusted(
        cls,
        position: int,
        stream: str,
        version: int,
        event_id: uuid.UUID,
        type: str,
        schema_version: int,
        data: dict[str, Any],
        recorded_at: dt.datetime,
        actor: str,
        meta: dict[str, Any],
        hash: str,
    ) -> RecordedEvent:
        """An envelope from values a store already validated, without validation.

        ``model_construct`` walks every field in Python; a replay of millions of events spends
        more there than in everything else, so the fields are set directly instead.
        """
        event = object.__new__(cls)
        object.__setattr__(
            event,
            "__dict__",
            {
                "position": position,
                "stream": stream,
                "version": version,
                "event_id": event_id,
                "type": type,
                "schema_version": schema_version,
                "data": data,
                "recorded_at": recorded_at,
                "actor": actor,
                "meta": meta,
                "hash": hash,
            },
        )
        object.__setattr__(event, "__pydantic_fields_set__", _RECORDED_FIELDS)
        object.__setattr__(event, "__pydantic_extra__", None)
        object.__setattr__(event, "__pydantic_private__", None)
        return event

    def event(self) -> Event:
        """The payload decoded into its current model (upcast when stored in an older shape)."""
        return event_from_stored(self.type, self.schema_version, self.data)

    def envelope(self) -> dict[str, Any]:
        """The JSON shape of ``events --json`` and ``export``."""
        return {
            "position": self.position,
            "stream": self.stream,
            "version": self.version,
            "event_id": str(self.event_id),
            "type": self.type,
            "schema_version": self.schema_version,
            "data": self.data,
            "recorded_at": format_time(self.recorded_at),
            "actor": self.actor,
            "meta": self.meta,
            "hash": self.hash,
        }


_RECORDED_FIELDS = frozenset(RecordedEvent.model_fields)


def format_time(moment: dt.datetime) -> str:
    """RFC 3339 in UTC with microseconds, so the text round-trips exactly (the year in four
    digits: ``strftime`` writes years before 1000 with fewer on some C libraries)."""
    in_utc = moment.astimezone(dt.UTC).replace(tzinfo=None)
    return in_utc.isoformat(timespec="microseconds") + "Z"
