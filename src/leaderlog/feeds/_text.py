"""Words for an entry: its title, plain-text summary and HTML content, in one language.

Everything is templated from the entry's doc (see
:mod:`leaderlog.projections.feed_entries`) through the gettext catalogs. Stored text is
never trusted: characters XML cannot carry are replaced, HTML is escaped, very long names are
shortened, and only ``http(s)`` addresses become links (see :mod:`._address`).
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import re
import unicodedata
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import regex

from leaderlog.feeds._address import web_address, web_uri
from leaderlog.feeds._document import (
    Category,
    Entry,
    Link,
    RecentChange,
    may_read_as_markup,
)
from leaderlog.feeds._i18n import N_, Language, fill, has_iso_639_1_language
from leaderlog.projections._feed_entry_fold import (
    HISTORY_KEPT,
    LIFECYCLE_STEPS,
    effective_words_from,
)

__all__ = [
    "Markup",
    "clean",
    "effective_language",
    "entry",
    "fuzzy_date",
    "headline",
    "isolated_text",
    "marked_language",
    "post_label",
    "scope_name",
    "translated_html",
]

# XML 1.0 cannot carry C0 controls (other than tab, LF, CR), lone surrogates, U+FFFE/U+FFFF;
# C1 controls are legal but only ever arrive by accident or malice. U+FFFD, what a decoder
# leaves of bytes it could not read, is legal too, but feed validators warn of it as a sign of
# a broken encoding (as of C1 controls): each of these is shown as "?".
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffd-\uffff]")
_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
# A stored fuzzy date's parts. Read as leniently as early versions accepted them (any
# script's digits, a final newline): what was stored is shown, never refused.
_FUZZY_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")
_LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$")
# One character as readers see it: an extended grapheme cluster (UAX #29).
_CHARACTER = regex.compile(r"\X")
NAME_LIMIT = 200
TEXT_LIMIT = 2000

KIND_LABELS = {
    "appointment": N_("Appointment"),
    "departure": N_("Departure"),
    "incumbency": N_("Incumbency"),
}
CHANGE_TEXTS = {
    "appointment": N_("Appointment of {person} as {post}"),
    "departure": N_("Departure of {person} as {post}"),
    "incumbency": N_("{person} serves as {post}"),
}
MODALITY_LABELS = {
    "occurred": N_("Occurred"),
    "announced": N_("Announced"),
    "expected": N_("Expected"),
    "rumored": N_("Rumored"),
}
STATUS_LABELS = {
    "reported": N_("Reported"),
    "confirmed": N_("Confirmed"),
    "corrected": N_("Corrected"),
    "disputed": N_("Disputed"),
    "retracted": N_("Retracted"),
}
CAPACITY_LABELS = {
    "acting": N_("acting"),
    "interim": N_("interim"),
    "permanent": N_("permanent"),
}
CAUSE_LABELS = {
    "retirement": N_("retirement"),
    "reassignment": N_("reassignment"),
    "resignation": N_("resignation"),
    "removal": N_("removal"),
    "promotion": N_("promotion"),
    "death": N_("death"),
    "term_end": N_("end of term"),
    "unknown": N_("cause unknown"),
}
QUALIFIED_DATES = {
    "about": N_("about {date}"),
    "before": N_("before {date}"),
    "after": N_("after {date}"),
}
# A day or a year after the same words: some languages then need an article, which merges
# with the preposition ("vor dem 31. Mai", "antes del 31 de mayo", "prima del 2025").
QUALIFIED_DAYS = {
    "about": N_("about {day}"),
    "before": N_("before {day}"),
    "after": N_("after {day}"),
}
QUALIFIED_YEARS = {
    "about": N_("about {year}"),
    "before": N_("before {year}"),
    "after": N_("after {year}"),
}
ATTRIBUTIONS = {
    "official": (N_("official statement"), N_("official statement by {parties}")),
    "named": (N_("named source"), N_("named source: {parties}")),
    "anonymous": (N_("anonymous sources"), N_("anonymous sources: {parties}")),
    "outlet": (N_("the outlet's own reporting"), N_("the outlet's own reporting ({parties})")),
}
# Attributions whose words change when several parties are named.
SEVERAL_PARTIES = {
    "named": N_("named sources: {parties}"),
    "outlet": N_("the outlets' own reporting ({parties})"),
}
QUOTES = {
    "headline": N_("Quote from the headline: {quote}"),
    "body": N_("Quote from the article text: {quote}"),
    "caption": N_("Quote from a photo caption: {quote}"),
}
FIELD_LABELS = {
    "source": N_("source"),
    "kind": N_("kind of change"),
    "person": N_("person"),
    "post": N_("post"),
    "capacity": N_("capacity"),
    "cause": N_("cause"),
    "effective": N_("effective date"),
    "modality": N_("modality"),
    "attribution": N_("attribution"),
    "quote": N_("quote"),
    "locator": N_("place in the source"),
}
LOCATOR_LABELS = {
    "headline": N_("headline"),
    "body": N_("article text"),
    "caption": N_("photo caption"),
}


class Markup(str):
    """HTML that is already safe to insert as it is."""

    __slots__ = ()


def clean(text: object, limit: int = TEXT_LIMIT) -> str:
    """Text XML can carry, shortened to ``limit`` characters.

    Explicit bidirectional embeddings, overrides and isolates are dropped: stored text must
    not be able to reorder the words around it (right-to-left letters themselves stay).
    """
    value = _UNSAFE.sub("?", text if isinstance(text, str) else str(text))
    value = _BIDI_CONTROLS.sub("", value)
    if len(value) <= limit:
        return value
    # Cut where a character as readers see it begins (UAX #29 extended grapheme clusters):
    # never between a letter and its accents, inside an emoji sequence or a flag, nor between
    # the jamo of a Hangul syllable. A boundary depends only on the text before it and the
    # character after it, so the first ``limit`` characters show the last one that leaves
    # room for the ellipsis: where their last cluster begins.
    cut = limit - len(_CHARACTER.findall(value[:limit])[-1])
    return value[:cut] + "\u2026"


def translated_html(lang: Language, message: str, **values: str) -> Markup:
    """Translate a message into HTML: its words escaped, Markup values inserted as they are.
    The words around a value fit the words it shows (a French "de" elided before a name
    isolated in a span), as in plain text."""
    words = {key: _shown(value) for key, value in values.items()}
    template = html.escape(lang.template(message, words), quote=False)
    escaped = {
        key: value if isinstance(value, Markup) else html.escape(value)
        for key, value in values.items()
    }
    return Markup(fill(template, escaped, words))


_TAG = re.compile(r"<[^>]*>")


def _shown(value: str) -> str:
    """The words a value shows: Markup's text without its tags."""
    return html.unescape(_TAG.sub("", value)) if isinstance(value, Markup) else value


def _writers(lang: Language, markup: bool) -> tuple[Callable[..., str], Callable[[str], str]]:
    """How to say a message and how to set a name in it: as plain text, or as HTML, whose
    names each keep their own direction (see :func:`isolated_text` and :func:`_isolated`)."""
    if markup:
        return functools.partial(translated_html, lang), _isolated
    return lang._, isolated_text


_RIGHT_TO_LEFT = {"R", "AL"}


def isolated_text(text: str) -> str:
    """Plain text set in a sentence so that it keeps its own direction: one holding a
    right-to-left letter goes between FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE,
    as ``dir="auto"`` sets it in HTML, so that a Hebrew or Arabic name cannot pull the
    words and punctuation after it into it ("Appointment of <name> as <post> (acting)").
    Left-to-right text is left as it is: every interface language reads left to right."""
    if any(unicodedata.bidirectional(character) in _RIGHT_TO_LEFT for character in text):
        return f"\u2068{text}\u2069"
    return text


def _time(value: object) -> dt.datetime:
    return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(dt.UTC)


def _step_day(step: Mapping[str, Any], lang: Language) -> str | None:
    """The day a claim's confirmation, correction, dispute or retraction happened: its
    source's publication day when the source gives one to the day, else the day it was
    recorded. Reporting entered later (an archive, a back-filled story) would otherwise say
    "Corrected on" the day someone typed it in. None when the source dates itself only
    roughly (a month, a year, about a day, words alone): no day is known, and the source's
    name, which says its date, is the step's date."""
    source = step.get("source")
    published = source.get("published") if isinstance(source, Mapping) else None
    if isinstance(published, Mapping) and (published.get("date") or published.get("text")):
        if published.get("qualifier", "on") == "on":
            try:
                return lang.date(dt.date.fromisoformat(str(published.get("date"))))
            except ValueError:
                pass  # a month or a year: not a day
        return None
    return lang.date(_time(step.get("at")))


# A correction, dispute or retraction as its history says it: on the day its source gives,
# or dated by its roughly dated source alone (named with its date on the next line).
_CORRECTED = (N_("Corrected on {date}: {reason}"), N_("Corrected: {reason}"))
_DISPUTED = (N_("Disputed on {date}: {reason}"), N_("Disputed: {reason}"))
_RETRACTED = (N_("Retracted on {date}: {reason}"), N_("Retracted: {reason}"))


def _said_when(
    say: Callable[..., str], day: str | None, reason: str, on_a_day: str, undated: str
) -> str:
    if day is None:
        return say(undated, reason=reason)
    return say(on_a_day, date=day, reason=reason)


def _name(value: Mapping[str, Any] | None, key: str) -> str:
    if not value:
        return "?"
    return clean(value.get(key) or value.get("id") or "?", NAME_LIMIT)


def post_label(post: Mapping[str, Any] | None, lang: Language) -> str:
    if not post:
        return "?"
    labels = post.get("labels")
    fallback = post.get("title") or post.get("id") or "?"
    return clean(lang.label(labels if isinstance(labels, Mapping) else None, fallback), NAME_LIMIT)


def _org_label(org: Mapping[str, Any] | None, lang: Language) -> str | None:
    if not org:
        return None
    labels = org.get("labels")
    fallback = org.get("name") or org.get("id") or "?"
    return clean(lang.label(labels if isinstance(labels, Mapping) else None, fallback), NAME_LIMIT)


def fuzzy_date(
    value: object,
    lang: Language,
    *,
    with_words: bool = True,
    markup: bool = False,
    language: str | None = None,
) -> str:
    """A fuzzy date as words: a day, a month or a year, qualified, with the source's words
    beside it (unless not ``with_words``), or the source's words alone. With ``markup``, as
    HTML whose source's words are quoted as :func:`_quote` quotes them: isolated in their own
    direction and marked with ``language``, the source's (see :func:`_quote_language`)."""
    say, _ = _writers(lang, markup)

    def quoted(words: str) -> str:
        return _quote(clean(words, NAME_LIMIT), lang, markup=markup, language=language)

    if not isinstance(value, Mapping):
        return say(N_("date unknown"))
    text = value.get("date")
    match = _FUZZY_DATE.match(text) if isinstance(text, str) else None
    try:
        if match is None:
            raise ValueError("no date")
        year, month, day = (int(part) if part else None for part in match.groups())
        moment = dt.date(year or 1, month or 1, day or 1)
        governed = value.get("qualifier") in QUALIFIED_DATES
        if day is not None:
            shown, templates, placeholder = lang.date(moment), QUALIFIED_DAYS, "day"
        elif month is not None:
            shown = lang.month(moment, governed=governed)
            templates, placeholder = QUALIFIED_DATES, "date"
        else:
            shown = lang.year(moment, governed=governed)
            templates, placeholder = QUALIFIED_YEARS, "year"
    except ValueError:
        words = value.get("text")
        if isinstance(words, str) and words.strip():
            # The source's own words ("soon"), quoted as such: in another language's sentence
            # they would otherwise read as a word of it.
            return say(N_("date unknown ({words})"), words=quoted(words))
        return say(N_("date unknown"))
    qualifier = value.get("qualifier")
    if isinstance(qualifier, str) and qualifier in templates:
        shown = say(templates[qualifier], **{placeholder: shown})
    elif markup:
        shown = Markup(html.escape(shown))
    words = value.get("text")
    if with_words and isinstance(words, str) and words.strip():
        # The source's own words beside the date they were read as ("April 2026" for "by
        # early next month"): the date alone suggests any day of it.
        return say(N_("{text} ({details})"), text=shown, details=quoted(words))
    return shown


def effective_language(doc: Mapping[str, Any]) -> str | None:
    """The language of the words in a feed entry's effective date (``fields.effective``):
    its claim's source's, but for words a dated confirmation gave, which are the confirming
    source's; None when not known. A correction's words are its claim's source's, as a
    quote corrected is (see :func:`_history`)."""
    from_claim, source = effective_words_from(doc.get("events", []), _earlier(doc))
    words_from = doc.get("source") if from_claim else source
    return _source_language(words_from if isinstance(words_from, Mapping) else None)


def _earlier(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the feed entries projection kept of the steps it no longer stores."""
    earlier = doc.get("earlier")
    return earlier if isinstance(earlier, Mapping) else {}


def _attribution(value: object, lang: Language, *, markup: bool = False) -> str:
    if not isinstance(value, Mapping) or value.get("kind") not in ATTRIBUTIONS:
        return lang._(N_("not stated"))
    plain, with_parties = ATTRIBUTIONS[str(value["kind"])]
    parties = value.get("parties")
    names = [clean(p, NAME_LIMIT) for p in parties if isinstance(p, str)] if parties else []
    if names:
        say, _ = _writers(lang, markup)
        if len(names) > 1:
            with_parties = SEVERAL_PARTIES.get(str(value["kind"]), with_parties)
        return say(with_parties, parties=_isolated_list(names, lang, markup=markup))
    return lang._(plain)


def _source_name(
    source: Mapping[str, Any] | None,
    lang: Language,
    *,
    markup: bool = False,
    dated: bool = True,
    own_too: bool = False,
) -> str:
    """A source by publisher and title, then its published date unless not ``dated``; in
    HTML, the date's words (a source dated by words alone) marked with the source's language
    (with ``own_too`` even where it is ``lang``'s: see :func:`_quote_language`)."""
    if not source:
        return "?"
    say, isolate = _writers(lang, markup)
    name = isolate(clean(source.get("publisher") or source.get("id") or "?", NAME_LIMIT))
    title = source.get("title")
    if isinstance(title, str) and title:
        name = say(
            N_("{publisher}: {title}"), publisher=name, title=isolate(clean(title, NAME_LIMIT))
        )
    if dated and isinstance(source.get("published"), Mapping):
        published = _published(source, lang, markup=markup, own_too=own_too)
        return say(N_("{source} ({date})"), source=name, date=published)
    return name


def _published(source: Mapping[str, Any], lang: Language, *, markup: bool, own_too: bool) -> str:
    """A source's published date; in HTML, its words (a date given in words alone) marked
    with the source's language, as a quote is."""
    return fuzzy_date(
        source["published"],
        lang,
        # The date alone: its words would stand in brackets within the source's name.
        with_words=False,
        markup=markup,
        language=_quote_language(source, lang, own_too=own_too) if markup else None,
    )


def _step_source(
    source: Mapping[str, Any] | None,
    lang: Language,
    *,
    markup: bool,
    dated: bool,
    own_too: bool = False,
) -> str:
    """The source of a step after the report (a confirmation, a correction...) by name; in
    HTML a link to it, as the report's own source is linked, so that a reader can open the
    confirming statement too. ``dated`` False leaves out its published date, which the
    step's own date already says; ``own_too`` as for :func:`_source_name`."""
    name = _source_name(source, lang, markup=markup, dated=dated, own_too=own_too)
    address = web_uri(source.get("url")) if markup and source else None
    if address:
        return Markup(f'<a href="{html.escape(address)}">{name}</a>')
    return name


def _source_html(source: Mapping[str, Any] | None, lang: Language) -> Markup:
    text = Markup(html.escape(_source_name(source, lang, dated=False)))
    if source and isinstance(source.get("published"), Mapping):
        # Marked even where the source's language is the feed's, as the content's quote is.
        published = _published(source, lang, markup=True, own_too=True)
        text = translated_html(lang, N_("{source} ({date})"), source=text, date=published)
    # The link's text is the source's name, so its href can be the unambiguous URI form.
    address = web_uri(source.get("url")) if source else None
    if address:
        return Markup(f'<a href="{html.escape(address)}">{text}</a>')
    return text


def _source_language(source: Mapping[str, Any] | None) -> str | None:
    """The language a source writes in, when it gives one that can be a ``lang``."""
    language = source.get("language") if source else None
    return language if isinstance(language, str) and _LANGUAGE_TAG.match(language) else None


def _quoted_words(text: str, language: str | None) -> Markup:
    """Quoted words as HTML, marked with their ``language`` when given, so that a screen
    reader reads them in its voice rather than the page's, and isolated in the direction of
    their own script: words in a right-to-left script would otherwise pull the quotation
    marks and words around them into theirs."""
    marks = f' lang="{html.escape(language)}"' if language else ""
    return Markup(f'<span{marks} dir="auto">{html.escape(clean(text))}</span>')


def _quote_language(source: object, lang: Language, *, own_too: bool = False) -> str | None:
    """The language to mark words quoted from ``source`` with: the source's own, but for
    ``lang``'s, which the page says once for all (unless ``own_too``: the feeds' content may
    be shown away from the feed that says its language)."""
    language = _source_language(source if isinstance(source, Mapping) else None)
    return marked_language(language, lang, own_too=own_too)


def marked_language(language: str | None, lang: Language, *, own_too: bool = False) -> str | None:
    """``language``, to mark words in ``lang``'s text with, but None for ``lang``'s own, which
    the page says once for all (unless ``own_too``: the feeds' content may be shown away from
    the feed that says its language)."""
    if not own_too and language is not None and language.lower() == lang.tag.lower():
        return None
    return language


def _quote(text: str, lang: Language, *, markup: bool = False, language: str | None = None) -> str:
    """Quoted words in the language's quotation marks; with ``markup``, as HTML, the words
    isolated in their own direction and marked with ``language`` (see
    :func:`_quote_language`)."""
    say, isolate = _writers(lang, markup)
    if not markup:
        return say(N_("\u201c{quote}\u201d"), quote=isolate(clean(text)))
    return say(N_("\u201c{quote}\u201d"), quote=_quoted_words(text, language))


def _quotation(
    message: str, text: str, lang: Language, *, markup: bool = False, language: str | None = None
) -> str:
    """A sentence introducing quoted words (``message`` has a ``{quote}``) in ``language``,
    ended with the language's full stop unless the words end a sentence of their own, so
    that the next sentence does not run into the closing quotation mark."""
    say, _ = _writers(lang, markup)
    quoted = say(message, quote=_quote(text, lang, markup=markup, language=language))
    return lang.sentence(quoted, words=clean(text))


def _status_label(doc: Mapping[str, Any]) -> str:
    """What the title leads with: the lifecycle when it moved, else how the source put it."""
    status = doc.get("status")
    modality = doc.get("fields", {}).get("modality")
    if status in ("retracted", "confirmed", "disputed", "corrected"):
        return STATUS_LABELS[str(status)]
    if modality in ("expected", "announced", "rumored"):
        return MODALITY_LABELS[str(modality)]
    return STATUS_LABELS["reported"]


def _change(doc: Mapping[str, Any], lang: Language, *, markup: bool = False) -> str:
    """What the claim says changes, as text, or as HTML (``markup``) in which the person's
    name and the post's label are each isolated in the direction of their own script."""
    fields = doc.get("fields", {})
    kind = fields.get("kind")
    person, post = _name(doc.get("person"), "name"), post_label(doc.get("post"), lang)
    say, isolate = _writers(lang, markup)
    person, post = isolate(person), isolate(post)
    text = say(CHANGE_TEXTS.get(str(kind), CHANGE_TEXTS["incumbency"]), person=person, post=post)
    capacity = fields.get("capacity")
    cause = fields.get("cause")
    # Two different facts ("acting", "retirement"), not a list of like things ("and").
    details = None
    if capacity in CAPACITY_LABELS and cause in CAUSE_LABELS:
        details = lang._(
            N_("{capacity}, {cause}"),
            capacity=lang._(CAPACITY_LABELS[capacity]),
            cause=lang._(CAUSE_LABELS[cause]),
        )
    elif capacity in CAPACITY_LABELS:
        details = lang._(CAPACITY_LABELS[capacity])
    elif cause in CAUSE_LABELS:
        details = lang._(CAUSE_LABELS[cause])
    if details:
        text = say(N_("{text} ({details})"), text=text, details=details)
    return text


def _isolated(text: str) -> Markup:
    """Text in HTML that keeps its own direction: a name in a right-to-left script cannot
    pull the words and punctuation after it into it. A span, not ``<bdi>``, which feed
    readers' sanitizers (feedparser's among them) remove."""
    return Markup(f'<span dir="auto">{html.escape(text)}</span>')


def _isolated_list(names: list[str], lang: Language, *, markup: bool) -> str:
    """Names listed in the language's way ("A, B and C"), each isolated on its own (as
    :func:`_writers` isolates a name): one in a right-to-left script cannot pull the others,
    or the words between them, into it. The language's list patterns hold words and
    punctuation only, never markup."""
    _, isolate = _writers(lang, markup)
    listed = lang.list([isolate(name) for name in names])
    return Markup(listed) if markup else listed


def _value(field: str, value: object, lang: Language) -> str:
    """A reported field's value as words, for "what changed" lines."""
    if value is None:
        # Said of any field (a cause, a date, a quote): words that agree with none of them.
        return lang.in_context("field value", "none")
    if field == "person" and isinstance(value, Mapping):
        return _name(value, "name")
    if field == "post" and isinstance(value, Mapping):
        return post_label(value, lang)
    if field == "source" and isinstance(value, Mapping):
        return _source_name(value, lang)
    if field == "effective":
        return fuzzy_date(value, lang)
    if field == "attribution":
        return _attribution(value, lang)
    if field == "quote" and isinstance(value, str):
        return _quote(value, lang)
    labels = {
        "kind": KIND_LABELS,
        "capacity": {**CAPACITY_LABELS, "unspecified": N_("unspecified")},
        "cause": CAUSE_LABELS,
        "modality": MODALITY_LABELS,
        "locator": LOCATOR_LABELS,
    }.get(field, {})
    if isinstance(value, str) and value in labels:
        return lang._(labels[value])
    return clean(value, NAME_LIMIT)


def _history(
    doc: Mapping[str, Any],
    lang: Language,
    *,
    markup: bool = False,
    mark_own_language: bool = False,
    full_history: str | None = None,
) -> list[list[str]]:
    """One group of sentences per lifecycle event after the report, oldest first; with
    ``markup``, as HTML whose quoted words are marked with their source's language (with
    ``mark_own_language``, even where it is ``lang``'s: see :func:`_quote_language`).

    Only the latest ``HISTORY_KEPT`` are told, after a line counting the earlier ones (in
    HTML a link to ``full_history``, the claim's answer, which has them all): an entry of
    every step would grow without end in every feed and page showing it."""
    say, isolate = _writers(lang, markup)
    groups: list[list[str]] = []
    steps = [
        step
        for step in doc.get("events", [])
        if isinstance(step, Mapping) and step.get("type") in LIFECYCLE_STEPS
    ]
    stored_earlier = _earlier(doc).get("steps")
    earlier = stored_earlier if isinstance(stored_earlier, int) and stored_earlier > 0 else 0
    earlier += max(0, len(steps) - HISTORY_KEPT)
    if earlier:
        count = lang.number(earlier)
        if markup and full_history:
            count = Markup(f'<a href="{html.escape(full_history)}">{html.escape(count)}</a>')
        groups.append([say(N_("Earlier steps not shown: {count}."), count=count)])
    for step in steps[-HISTORY_KEPT:]:
        kind = step.get("type")
        # None when its source dates itself only roughly: the source, named with its date,
        # dates the step.
        day = _step_day(step, lang)
        # The sentence's stop after the isolate, not in it: isolated with a right-to-left
        # reason, it would take the reason's direction and show at the reason's far end.
        written = clean(step.get("reason") or "")
        reason = lang.sentence(isolate(written), words=written)
        if markup:
            reason = Markup(reason)  # the isolate's markup, and a stop
        source = step.get("source")
        lines: list[str] = []
        if kind == "claim.confirmed":
            if source and day is None:
                lines.append(
                    say(
                        N_("Confirmed by {source}."),
                        source=_step_source(
                            source, lang, markup=markup, dated=True, own_too=mark_own_language
                        ),
                    )
                )
            elif source:
                lines.append(
                    say(
                        N_("Confirmed on {date} by {source}."),
                        date=day,
                        source=_step_source(
                            source, lang, markup=markup, dated=False, own_too=mark_own_language
                        ),
                    )
                )
            else:
                lines.append(say(N_("Confirmed on {date}."), date=day))
            # The confirming source's own words: evidence, as the report's quote is.
            if isinstance(step.get("quote"), str):
                lines.append(
                    _quotation(
                        N_("Quote: {quote}"),
                        step["quote"],
                        lang,
                        markup=markup,
                        language=_quote_language(source, lang, own_too=mark_own_language),
                    )
                )
        elif kind == "claim.corrected":
            lines.append(_said_when(say, day, reason, *_CORRECTED))
            changes = step.get("changes", [])
            # A quote is in the language of the source it quotes, before the correction
            # and after it, which may itself have changed the source.
            quoted = {"before": doc.get("source"), "after": doc.get("source")}
            for change in changes:
                if change.get("field") == "source":
                    quoted = {side: change.get(side) or quoted[side] for side in quoted}
            for change in changes:
                field = str(change.get("field"))
                if change.get("before") == change.get("after"):
                    continue  # given again as it was: nothing changed
                values = {
                    side: _changed_value(
                        field,
                        change.get(side),
                        lang,
                        markup=markup,
                        language=_quote_language(quoted[side], lang, own_too=mark_own_language),
                    )
                    for side in ("before", "after")
                }
                lines.append(
                    say(
                        N_("Changed {field}: {before} \u2192 {after}."),
                        field=lang._(FIELD_LABELS.get(field, field)),
                        **values,
                    )
                )
        elif kind == "claim.disputed":
            lines.append(_said_when(say, day, reason, *_DISPUTED))
            conflicts = [clean(c, NAME_LIMIT) for c in step.get("conflicts_with", [])]
            if conflicts:
                claims = _isolated_list(conflicts, lang, markup=markup)
                lines.append(say(N_("Conflicts with: {claims}."), claims=claims))
        elif kind == "claim.retracted":
            lines.append(_said_when(say, day, reason, *_RETRACTED))
        else:
            continue
        if source and kind != "claim.confirmed":
            lines.append(
                say(
                    N_("Source: {source}."),
                    source=_step_source(
                        source,
                        lang,
                        markup=markup,
                        dated=day is None,
                        own_too=mark_own_language,
                    ),
                )
            )
        groups.append(lines)
    return groups


def _changed_value(
    field: str, value: object, lang: Language, *, markup: bool, language: str | None
) -> str:
    """A value in a "what changed" line, isolated in its own direction; a quote in HTML is
    quoted words, isolated and marked with its ``language`` by :func:`_quote`."""
    if markup and field == "quote" and isinstance(value, str):
        return _quote(value, lang, markup=True, language=language)
    if markup and field == "effective" and value is not None:
        # The date's words are its source's, as a quote is.
        shown = fuzzy_date(value, lang, markup=True, language=language)
        return Markup(f'<span dir="auto">{shown}</span>')
    _, isolate = _writers(lang, markup)
    return isolate(_value(field, value, lang))


def _facts(
    doc: Mapping[str, Any],
    lang: Language,
    *,
    markup: bool = False,
    words_markup: bool = False,
    own_too: bool = False,
) -> list[tuple[str, dict[str, str]]]:
    """(message, values) pairs shared by the summary and the content, in reading order;
    with ``markup``, the names in the values are HTML, each isolated; with ``markup`` or
    ``words_markup``, the effective date's words are HTML, marked with their source's
    language (with ``own_too`` even where it is ``lang``'s: see :func:`_quote_language`)."""
    fields = doc.get("fields", {})
    facts: list[tuple[str, dict[str, str]]] = []
    _, isolate = _writers(lang, markup)
    org = _org_label(doc.get("org"), lang)
    if org:
        facts.append((N_("Organisation: {org}."), {"org": isolate(org)}))
    if "effective" in fields:
        html_words = markup or words_markup
        language = (
            marked_language(effective_language(doc), lang, own_too=own_too) if html_words else None
        )
        date = fuzzy_date(fields["effective"], lang, markup=html_words, language=language)
        facts.append((N_("Effective: {date}."), {"date": date}))
    modality = fields.get("modality")
    if modality in MODALITY_LABELS:
        facts.append((N_("Modality: {modality}."), {"modality": lang._(MODALITY_LABELS[modality])}))
    status = doc.get("status")
    if status in STATUS_LABELS:
        facts.append((N_("Status: {status}."), {"status": lang._(STATUS_LABELS[str(status)])}))
    facts.append(
        (
            N_("Attribution: {attribution}."),
            {"attribution": _attribution(fields.get("attribution"), lang, markup=markup)},
        )
    )
    return facts


def _quote_message(fields: Mapping[str, Any]) -> str:
    return QUOTES.get(str(fields.get("locator")), N_("Quote: {quote}"))


def _summary(doc: Mapping[str, Any], lang: Language, change: str, *, markup: bool = False) -> str:
    """The entry's text in sentences; with ``markup``, as HTML whose names are isolated
    (``change`` is then HTML too)."""
    say, _ = _writers(lang, markup)
    fields = doc.get("fields", {})
    parts = [say(N_("{change}."), change=change)]
    parts.extend(say(message, **values) for message, values in _facts(doc, lang, markup=markup))
    source = doc.get("source")
    address = web_address(source.get("url")) if source else None
    source_name = _source_name(source, lang, markup=markup)
    if address:
        parts.append(say(N_("Source: {source}, {url}."), source=source_name, url=address))
    else:
        parts.append(say(N_("Source: {source}."), source=source_name))
    if isinstance(fields.get("quote"), str):
        parts.append(
            _quotation(
                _quote_message(fields),
                fields["quote"],
                lang,
                markup=markup,
                language=_quote_language(source, lang),
            )
        )
    for group in _history(doc, lang, markup=markup):
        parts.extend(group)
    text = lang.sentences(parts, markup=markup)
    return Markup(text) if markup else text


def _content(doc: Mapping[str, Any], lang: Language, status: str, base_url: str) -> str:
    fields = doc.get("fields", {})
    change = _change(doc, lang, markup=True)
    strong = Markup(f"<strong>{html.escape(status)}</strong>")
    # Joined as the title joins them, in the words of the language (not an English dash).
    headline = translated_html(lang, N_("{status}: {change}"), status=strong, change=Markup(change))
    out = [f"<p>{headline}</p>", "<ul>"]
    out.extend(
        f"<li>{translated_html(lang, message, **values)}</li>"
        for message, values in _facts(doc, lang, words_markup=True, own_too=True)
    )
    source = doc.get("source")
    out.append(
        "<li>"
        + translated_html(lang, N_("Source: {source}."), source=_source_html(source, lang))
        + "</li>"
    )
    out.append("</ul>")
    if isinstance(fields.get("quote"), str):
        # Only the quoted words are in the source's language; the lead-in is in the feed's.
        language = _quote_language(source, lang, own_too=True)
        quoted = _quote(fields["quote"], lang, markup=True, language=language)
        text = translated_html(lang, _quote_message(fields), quote=quoted)
        out.append(f"<blockquote><p>{text}</p></blockquote>")
    history = _history(
        doc, lang, markup=True, mark_own_language=True, full_history=_claim_address(doc, base_url)
    )
    if history:
        out.append("<p>" + translated_html(lang, N_("History:")) + "</p><ul>")
        out.extend(f"<li>{lang.sentences(group, markup=True)}</li>" for group in history)
        out.append("</ul>")
    return "".join(out)


def _links(doc: Mapping[str, Any], base_url: str) -> tuple[Link, ...]:
    """The source's page (a URI: IRIs with long paths trip up validators and readers) and
    the claim's JSON. A link title is an attribute, which cannot say it holds HTML, so a
    publisher name that looks like markup is left out of it (the summary names it). The
    source's language is only advisory there, so it is left out too unless validators know
    it (see :func:`._i18n.has_iso_639_1_language`); the quote's ``lang`` still gives it."""
    links: list[Link] = []
    source = doc.get("source") or {}
    address = web_uri(source.get("url"))
    if address:
        language = source.get("language")
        publisher = clean(source.get("publisher") or source.get("id") or "?", NAME_LIMIT)
        links.append(
            Link(
                href=address,
                rel="alternate",
                media_type="text/html",
                hreflang=language
                if isinstance(language, str)
                and _LANGUAGE_TAG.match(language)
                and has_iso_639_1_language(language)
                else None,
                title=None if may_read_as_markup(publisher) else publisher,
            )
        )
    links.append(
        Link(href=_claim_address(doc, base_url), rel="related", media_type="application/json")
    )
    return tuple(links)


def _claim_address(doc: Mapping[str, Any], base_url: str) -> str:
    """The claim's JSON answer, which holds its whole lifecycle."""
    claim = urllib.parse.quote(str(doc.get("claim", "")), safe="")
    return f"{base_url}/api/claims/{claim}"


def _categories(doc: Mapping[str, Any], lang: Language) -> tuple[Category, ...]:
    fields = doc.get("fields", {})
    found: list[Category] = []
    for value, labels in (
        (fields.get("kind"), KIND_LABELS),
        (fields.get("modality"), MODALITY_LABELS),
        (doc.get("status"), STATUS_LABELS),
    ):
        if isinstance(value, str) and value in labels:
            found.append(Category(term=value, label=lang._(labels[value])))
    return tuple(found)


def headline(doc: Mapping[str, Any], lang: Language) -> str:
    """The entry title: the status (or modality) and the change, e.g. "Expected: ..."."""
    return _headline(lang._(_status_label(doc)), _change(doc, lang), lang)


def headline_html(doc: Mapping[str, Any], lang: Language) -> Markup:
    """:func:`headline` as HTML for pages, each name isolated in its own direction."""
    change = _change(doc, lang, markup=True)
    return translated_html(
        lang, N_("{status}: {change}"), status=lang._(_status_label(doc)), change=change
    )


def recent_change(doc: Mapping[str, Any], lang: Language) -> RecentChange:
    """How a page lists one claim's version: its headline and summary as HTML, each name
    isolated in its own direction, with the source's address and the version's time."""
    change = _change(doc, lang, markup=True)
    source = doc.get("source") or {}
    return RecentChange(
        title_html=headline_html(doc, lang),
        summary_html=Markup(_summary(doc, lang, change, markup=True)),
        url=web_uri(source.get("url")),
        updated=_time(doc.get("updated")),
    )


def _headline(status: str, change: str, lang: Language) -> str:
    return lang._(N_("{status}: {change}"), status=status, change=change)


def entry(doc: Mapping[str, Any], lang: Language, base_url: str) -> Entry:
    """The feed entry for one version of a claim, in ``lang``."""
    status = lang._(_status_label(doc))
    change = _change(doc, lang)
    return Entry(
        id=clean(doc.get("id") or f"urn:leaderlog:claim:{doc.get('claim')}"),
        title=_headline(status, change, lang),
        summary=_summary(doc, lang, change),
        content_html=_content(doc, lang, status, base_url),
        published=_time(doc.get("published")),
        updated=_time(doc.get("updated")),
        links=_links(doc, base_url),
        categories=_categories(doc, lang),
    )


def scope_name(kind: str, doc: Mapping[str, Any] | None, entity_id: str, lang: Language) -> str:
    """How a feed's subject is called: a person's name, a post's or organisation's label."""
    if kind == "person":
        return _name({"id": entity_id, **(doc or {})}, "name")
    if kind == "post":
        return post_label({"id": entity_id, **(doc or {})}, lang)
    return _org_label({"id": entity_id, **(doc or {})}, lang) or entity_id
