"""Languages: gettext catalogs, locale-aware dates and lists, and language negotiation (Babel).

The catalogs are ``locales/<locale>/LC_MESSAGES/leaderlog.po``; they are compiled in memory
the first time a language is used, so the package ships only the editable sources. Messages
are English source strings with ``{name}`` placeholders; translators may reorder them.
"""

from __future__ import annotations

import datetime as dt
import functools
import gettext
import html
import io
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from babel import Locale, UnknownLocaleError
from babel.core import get_global, parse_locale
from babel.dates import format_date, format_datetime, format_skeleton
from babel.lists import format_list
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_decimal
from babel.support import Translations

from leaderlog.errors import UnknownLanguage

__all__ = [
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "LONGEST_TAG",
    "N_",
    "Language",
    "OfferedLanguage",
    "UnknownLanguage",
    "catalog_path",
    "fill",
    "has_iso_639_1_language",
    "header_quality",
    "language",
    "negotiate",
    "resolve",
]

# The languages of the source page the project was designed from (BCP 47 tags); a type, so
# that the HTTP API's schema lists them as the values its `lang` takes.
OfferedLanguage = Literal["en", "es", "fr", "de", "it", "pt", "ru", "zh-Hans", "hi", "ja"]
LANGUAGES: tuple[str, ...] = get_args(OfferedLanguage)
DEFAULT_LANGUAGE = "en"
DOMAIN = "leaderlog"
_LOCALES_DIR = Path(__file__).parent / "locales"
_BABEL_IDS = {tag: tag.replace("-", "_") for tag in LANGUAGES}
# A bare "zh" means Simplified Chinese here; Traditional ("zh-Hant", "zh-TW") is not offered.
_ALIASES = {"zh": "zh_Hans"}


def N_(message: str) -> str:
    """Mark a message for the catalogs without translating it yet."""
    return message


def catalog_path(tag: str) -> Path:
    return _LOCALES_DIR / _BABEL_IDS[tag] / "LC_MESSAGES" / f"{DOMAIN}.po"


# What ends a sentence in the offered languages (and the ellipsis of a text cut short).
_SENTENCE_ENDS = frozenset(".!?\u2026\u3002\uff01\uff1f\u0964")
_FULL_STOPS = {"zh": "\u3002", "ja": "\u3002", "hi": "\u0964"}
# What may follow a sentence's stop and close it: brackets (Pe) and quotation marks, final
# (Pf) or initial (Pi, as German closes with U+201C), the straight ones, and the end of an
# isolate (U+2069), which plain text sets around right-to-left words.
_CLOSING_CATEGORIES = frozenset({"Pe", "Pf", "Pi"})
_CLOSING_MARKS = frozenset("\"'\u2069")
# Month and year after a preposition, where CLDR's stand-alone forms would be ungrammatical:
# Russian "около", "до" and "после" take the genitive month, and a year keeps its
# abbreviation for "year" (U+0433), as a month's does.
_GOVERNED_PATTERNS = {"ru": ("MMMM y\u202f'\u0433'.", "y\u202f'\u0433'.")}
# The first of a month is written as an ordinal where CLDR's long date gives a plain number:
# "1er mai 2025", "1º maggio 2025", "1º de maio de 2025" (read "premier", "primo", "primeiro";
# Brazilian usage, which the Portuguese catalog follows: Portugal writes "1 de maio").
_FIRST_OF_MONTH = {"fr": "er", "it": "\u00ba", "pt": "\u00ba"}
_DAY_FIELD = re.compile(r"(?<![d'])d(?!d)")
# Words that drop their vowel before a value read with one, by language: Italian articles
# and articulated prepositions before a number (otto, undici, ottanta, ottocento, ottomila,
# undicimila: "l'8 maggio", "dell'11"), and French "de" before a name, a title or a party
# that starts with a vowel ("Nomination d'Anna", "au poste d'Agent spécial", "d'ICE"). Not
# before an "h", which French elides before some words and not others ("de Hammer").
_READ_WITH_A_VOWEL = re.compile(r"(?:8\d{0,3}|11(?:\d{3})?)(?![\d.,])")
_STARTS_WITH_A_VOWEL = re.compile(
    "[AEIOUaeiou\u00c0-\u00c6\u00c8-\u00cf\u00d2-\u00d6\u00d9-\u00dc"
    "\u00e0-\u00e6\u00e8-\u00ef\u00f2-\u00f6\u00f9-\u00fc\u0152\u0153]"
)
_ELISIONS: dict[str, tuple[re.Pattern[str], dict[str, str]]] = {
    "it": (
        _READ_WITH_A_VOWEL,
        {
            "il": "l\u2019",
            "del": "dell\u2019",
            "dal": "dall\u2019",
            "al": "all\u2019",
            "nel": "nell\u2019",
            "sul": "sull\u2019",
        },
    ),
    "fr": (_STARTS_WITH_A_VOWEL, {"de": "d\u2019"}),
}
# Quotation marks that may close quoted words after the stop that ends them, in the offered
# languages: final and initial ones (German closes with U+201C), the straight ones, and the
# Japanese corner brackets. Not other brackets: a Russian date in brackets ends with the
# point of an abbreviation, and the sentence still takes its own stop.
_QUOTATION_CLOSING_CATEGORIES = frozenset({"Pf", "Pi"})
_QUOTATION_CLOSING_MARKS = frozenset("\"'\u300d\u300f")
# The full stops of the catalogs' templates.
_TEMPLATE_STOPS = (".", "\u3002", "\u0964")
# What may follow a sentence's last word, to be looked past for it: the end of an isolate
# (U+2069, which plain text sets around right-to-left words) and an ellipsis.
_PAST_THE_WORDS = frozenset("\u2069\u2026")
_TAG = re.compile(r"<[^>]*>")


@dataclass(frozen=True)
class Language:
    """One language: its tag, Babel locale and compiled catalog."""

    tag: str
    locale: Locale
    translations: gettext.NullTranslations

    def _(self, message: str, **values: Any) -> str:
        """Translate ``message`` and fill in its placeholders."""
        text = self.template(message, values)
        return fill(text, values) if values else text

    def template(self, message: str, values: Mapping[str, Any]) -> str:
        """``message`` translated, its words fitted to the ``values`` that will fill it in
        (an Italian article elided before "8 maggio", a French "de" before "Anna"); a value
        in HTML is given as the words it shows."""
        text = self.translations.gettext(message)
        elision = _ELISIONS.get(self.locale.language)
        if elision:
            read_with_a_vowel, elided = elision
            for name, value in values.items():
                if isinstance(value, str) and read_with_a_vowel.match(value):
                    for word, short in elided.items():
                        text = re.sub(rf"\b{word} \{{{name}\}}", f"{short}{{{name}}}", text)
        return text

    def number(self, value: int) -> str:
        """A count as the language writes it: "1,000", "1 000", "1.000", "1,00,000"."""
        return format_decimal(value, locale=self.locale)

    def in_context(self, context: str, message: str) -> str:
        """``message`` translated as it reads in ``context``, where a language may need other
        words than it does elsewhere (German "keine Angabe" for a field left empty, where a
        post nobody holds has "keine")."""
        return self.translations.pgettext(context, message)

    def sentences(self, sentences: Sequence[str], *, markup: bool = False) -> str:
        """Sentences one after another: Chinese and Japanese put no space after their stops,
        but a sentence that ends in Latin text, or another script written with spaces (a
        writer's reason in English: "...not acting."), is set apart from the next by one,
        which would otherwise run into it. ``markup``: the sentences are HTML, read for the
        words they show."""
        if self.locale.language not in ("zh", "ja"):
            return " ".join(sentences)
        joined: list[str] = []
        for sentence in sentences:
            if joined and _ends_in_spaced_text(_shown_words(joined[-1]) if markup else joined[-1]):
                joined.append(" ")
            joined.append(sentence)
        return "".join(joined)

    def sentence(self, text: str, *, words: str | None = None) -> str:
        """``text`` (a writer's reason, say) ended as a sentence, so that the next one does
        not run into it: with the language's full stop, unless it ends in one already.

        ``words`` are what ``text`` ends with, when that is not plain to see: a quotation's
        words, within marks and perhaps markup, which may end a sentence of their own."""
        if _ends_a_sentence(text if words is None else words):
            return text
        return text + _FULL_STOPS.get(self.locale.language, ".")

    def date(self, moment: dt.datetime | dt.date) -> str:
        """A day (after "before" and such, the catalog's words give any article it takes)."""
        ordinal = _FIRST_OF_MONTH.get(self.locale.language) if moment.day == 1 else None
        if ordinal:
            pattern = self.locale.date_formats["long"].pattern
            return format_date(moment, _DAY_FIELD.sub(f"d'{ordinal}'", pattern, 1), self.locale)
        return format_date(moment, format="long", locale=self.locale)

    def datetime(self, moment: dt.datetime) -> str:
        return format_datetime(moment, format="medium", tzinfo=dt.UTC, locale=self.locale)

    def month(self, moment: dt.date, *, governed: bool = False) -> str:
        """A month of a year; ``governed``: after a word such as "about" or "before", which
        in Russian takes the genitive ("около мая 2025", not "май")."""
        patterns = _GOVERNED_PATTERNS.get(self.locale.language) if governed else None
        if patterns:
            return format_date(moment, patterns[0], locale=self.locale)
        return format_skeleton("yMMMM", moment, locale=self.locale)

    def year(self, moment: dt.date, *, governed: bool = False) -> str:
        patterns = _GOVERNED_PATTERNS.get(self.locale.language) if governed else None
        if patterns:
            return format_date(moment, patterns[1], locale=self.locale)
        return format_skeleton("y", moment, locale=self.locale)

    def list(self, items: Sequence[str]) -> str:
        return format_list(list(items), locale=self.locale) if items else ""

    def label(self, labels: Mapping[str, str] | None, fallback: str) -> str:
        """The label for this language when the data has one, else ``fallback``."""
        if labels:
            for key in (self.tag, _BABEL_IDS[self.tag], self.locale.language):
                if labels.get(key):
                    return labels[key]
            # Another spelling of this language's tag: tags ignore case ("zh-hans"), and a
            # regional one names the language offered ("pt-BR"), as in ?lang=.
            for key in sorted(labels):
                if labels[key] and _offered_as(key) == self.tag:
                    return labels[key]
        return fallback


def _ends_a_sentence(text: str) -> bool:
    """Whether ``text`` is empty or ends a sentence, looking past what may close one after
    its stop: quotation marks and brackets (``He said “no.”``), the end of an isolate and
    white space (French quotation marks stand apart from their words)."""
    end = len(text)
    while end and (
        text[end - 1] in _CLOSING_MARKS
        or text[end - 1].isspace()
        or unicodedata.category(text[end - 1]) in _CLOSING_CATEGORIES
    ):
        end -= 1
    return not end or text[end - 1] in _SENTENCE_ENDS


def _shown_words(markup: str) -> str:
    """The words HTML shows: its text without its tags, its references read."""
    return html.unescape(_TAG.sub("", markup))


def _ends_in_spaced_text(text: str) -> bool:
    """Whether ``text`` ends in the words of a script that sets sentences apart with spaces:
    a letter, digit or mark not written wide (Latin, Cyrillic, Greek, Arabic, Devanagari...),
    or punctuation neither wide nor of ambiguous width (ASCII's, "»", the danda); not the
    full stops, brackets and quotation marks Chinese and Japanese write ("。", "」", "”").
    Looked for past white space, the end of an isolate, and an ellipsis, which belongs to the
    words it cuts short."""
    end = len(text)
    while end and (text[end - 1].isspace() or text[end - 1] in _PAST_THE_WORDS):
        end -= 1
    if not end:
        return False
    last = text[end - 1]
    width = unicodedata.east_asian_width(last)
    if width in ("W", "F", "H"):
        return False
    return unicodedata.category(last)[0] in "LNM" or width in ("Na", "N")


def fill(template: str, values: Mapping[str, Any], words: Mapping[str, str] | None = None) -> str:
    """``template.format(**values)``, without doubling a full stop: a value that ends with one
    (a Russian long date ends with the abbreviation for "year"), or with the ellipsis of a text
    cut short, stands for the template's own ("... Very Long Name…", not "…."); so do quoted
    words that end with their own stop, within their closing marks ("→ “He retired.”", not
    "”."). ``words``: what values in HTML show, when they are not the values themselves."""
    for name, value in values.items():
        shown = words.get(name, value) if words is not None else value
        if isinstance(shown, str) and shown.endswith((".", "\u2026")):
            template = template.replace(f"{{{name}}}.", f"{{{name}}}")
        elif isinstance(shown, str) and _ends_with_a_quoted_sentence(shown):
            for stop in _TEMPLATE_STOPS:
                template = template.replace(f"{{{name}}}{stop}", f"{{{name}}}")
    return template.format(**values)


def _ends_with_a_quoted_sentence(text: str) -> bool:
    """Whether ``text`` ends with quoted words that end a sentence of their own, within their
    closing marks (and the end of an isolate, and the space French sets before »)."""
    end = len(text)
    while end and (text[end - 1].isspace() or text[end - 1] == "\u2069"):
        end -= 1
    marks = end
    while end and (
        text[end - 1] in _QUOTATION_CLOSING_MARKS
        or text[end - 1].isspace()
        or unicodedata.category(text[end - 1]) in _QUOTATION_CLOSING_CATEGORIES
    ):
        end -= 1
    return end < marks and bool(end) and text[end - 1] in _SENTENCE_ENDS


def has_iso_639_1_language(tag: str) -> bool:
    """Whether a language tag's primary subtag is a two-letter ISO 639-1 code (``pt-BR``).

    The W3C Feed Validator reports an error for a primary subtag outside its own list of
    ISO 639-1 and ISO 639-2 codes, though BCP 47 allows thousands more (ISO 639-3's ``yue``,
    ``cmn``). The two-letter codes are ones it and every reader know, and CLDR lists them all;
    no data at hand tells ISO 639-2's three-letter codes from ISO 639-3's, so a three-letter
    subtag does not count, even one the validator knows (``haw``).
    """
    return tag.partition("-")[0].lower() in _iso_639_1_codes()


@functools.cache
def _iso_639_1_codes() -> frozenset[str]:
    # BCP 47 takes its two-letter language subtags from ISO 639-1 and no other list.
    names = Locale("en").languages
    return frozenset(code for code in names if isinstance(code, str) and len(code) == 2)


def _compile(tag: str) -> gettext.NullTranslations:
    if tag == DEFAULT_LANGUAGE:
        # Messages are written in English, so English needs no catalog.
        return gettext.NullTranslations()
    with catalog_path(tag).open("rb") as source:
        catalog = read_po(source, locale=_BABEL_IDS[tag], domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, catalog)
    compiled.seek(0)
    return Translations(compiled, domain=DOMAIN)


def language(tag: str) -> Language:
    """The :class:`Language` for one of :data:`LANGUAGES`."""
    # Checked before the cache, whose wrapper a type checker cannot see through.
    if not isinstance(tag, str) or tag not in _BABEL_IDS:
        raise UnknownLanguage(tag if isinstance(tag, str) else repr(tag), LANGUAGES)
    return _language(tag)


@functools.cache
def _language(tag: str) -> Language:
    return Language(tag, Locale.parse(_BABEL_IDS[tag]), _compile(tag))


def _lookup_forms(tag: str) -> list[str]:
    """``tag`` without its extensions and private use ("ja-JP-u-nu-jpanfin": "ja-JP"), then
    shortened a subtag at a time, as RFC 4647 lookup does ("de-DE-1996": "de-DE", "de")."""
    subtags = tag.strip().replace("_", "-").split("-")
    # A single-letter subtag ("u", "t", "x", ...) starts an extension or private use.
    kept = next(
        (subtags[:index] for index, subtag in enumerate(subtags) if index and len(subtag) == 1),
        subtags,
    )
    # An extended language subtag names the language itself, in place of its prefix
    # (RFC 5646 4.5: "zh-cmn-Hant-TW" is "cmn-Hant-TW", "zh-yue-HK" is "yue-HK"); shortened
    # as written, it would lose its script before its prefix ("zh", Simplified here).
    if len(kept) > 1 and len(kept[1]) == 3 and kept[1].isalpha():
        kept = kept[1:]
    return ["-".join(kept[:length]) for length in range(len(kept), 0, -1)]


def _candidates(tag: str) -> list[str]:
    """Babel identifiers a requested tag may match, most specific first."""
    for form in _lookup_forms(tag):
        try:
            language_code, territory, script, *_ = parse_locale(form, sep="-")
        except ValueError:
            continue
        canonical = _canonical_language(language_code)
        if canonical != language_code:
            form = "-".join([canonical, *form.split("-")[1:]])
        return _identifiers(form, canonical, territory, script)
    return []


def _canonical_language(code: str) -> str:
    """The language code CLDR's aliases (in Babel's data) give for another name of one:
    Mandarin's ``cmn`` is ``zh``, and three-letter codes such as ``deu``, ``fra`` and
    ``jpn`` are ``de``, ``fr`` and ``ja``; a code without an alias is its own."""
    alias = get_global("language_aliases").get(code.lower())
    # Only a language for a language: an alias that also names a script ("sh", Serbian in
    # Latin script) would override the script a tag names.
    return alias if isinstance(alias, str) and "_" not in alias else code


def _identifiers(
    tag: str, language_code: str, territory: str | None, script: str | None
) -> list[str]:
    if not script:
        # Babel fills in the likely script, so "zh-CN" becomes zh_Hans_CN and "zh-TW"
        # zh_Hant_TW. Only when the tag names none: Babel would override a named one.
        try:
            script = Locale.parse(tag, sep="-").script
        except (ValueError, UnknownLocaleError):
            script = None
    if not script:
        return ["_".join(part for part in (language_code, territory) if part)]
    return [
        "_".join(part for part in (language_code, script, territory) if part),
        f"{language_code}_{script}",
    ]


def _negotiate(preferred: Sequence[str]) -> str | None:
    available = list(_BABEL_IDS.values())
    candidates = [candidate for tag in preferred for candidate in _candidates(tag)]
    chosen = Locale.negotiate(candidates, available, sep="_", aliases=_ALIASES)
    if chosen is None:
        return None
    identifier = f"{chosen.language}_{chosen.script}" if chosen.script else chosen.language
    return next((tag for tag, babel_id in _BABEL_IDS.items() if babel_id == identifier), None)


# RFC 9110 12.4.2: a qvalue is 0 to 1 with at most three decimals ("1", "0.5", "1.000").
_QVALUE = re.compile(r"0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?")


def header_quality(parameters: Sequence[str]) -> float | None:
    """The ``q`` parameter wherever it stands among a range's parameters (RFC 9110 12.4.2),
    as Accept-Language and Accept-Encoding give it; 1 when absent, None when it is no qvalue
    ("2", "1.5", "abc", "0.12345"): such a range is ignored, as if the header had not named
    it."""
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "q":
            value = value.strip()
            return float(value) if _QVALUE.fullmatch(value) else None
    return 1.0


def _accept_language(header: str) -> tuple[list[str], set[str]]:
    """The tags of an Accept-Language header, best first, and the ranges it refuses (q=0,
    lower case); ``*`` stands for every offered language the header does not refuse."""
    weighted: list[tuple[float, int, int, str]] = []
    refused: set[str] = set()
    named: set[str] = set()
    wildcard: tuple[float, int] | None = None
    for index, part in enumerate(header.split(",")):
        tag, *parameters = (piece.strip() for piece in part.split(";"))
        quality = header_quality(parameters)
        if not tag or quality is None:
            continue
        if quality == 0:
            refused.add(tag.lower())
        elif tag == "*":
            wildcard = (-quality, index)
        else:
            weighted.append((-quality, index, 0, tag))
            named.add(tag.lower())
    if wildcard is not None:
        # In the order offered; a refused range refuses what it covers ("zh;q=0": zh-Hans),
        # and one named at a weight of its own keeps it ("en;q=0.5, *": English last), as
        # "*" matches only the tags no other range matches (RFC 4647 3.3.1, RFC 2616 14.4).
        weighted += [
            (*wildcard, order, offered)
            for order, offered in enumerate(LANGUAGES)
            if not _refused(offered, refused) and not _refused(offered, named)
        ]
    return [tag for *_, tag in sorted(weighted) if tag.lower() not in refused], refused


def _refused(offered: str, refused: set[str]) -> bool:
    """Whether a refused range covers an offered language (RFC 4647 basic filtering: the
    range is the tag, or a prefix of it ending at a subtag)."""
    tag = offered.lower()
    return any(tag == no or tag.startswith(f"{no}-") for no in refused)


_LONGEST_HEADER = 1000


def negotiate(accept_language: str | None) -> str:
    """The best offered language for an Accept-Language header; English when none fits.

    Only the first thousand characters are read, up to the last whole entry in them (an
    entry cut short could lose its q-value and jump ahead of better ones).
    """
    if not accept_language:
        return DEFAULT_LANGUAGE
    if len(accept_language) > _LONGEST_HEADER:
        accept_language = accept_language[: _LONGEST_HEADER + 1].rpartition(",")[0]
    return _negotiate_header(accept_language)


@functools.lru_cache(maxsize=1024)
def _negotiate_header(header: str) -> str:
    # Readers send the same few headers on every poll, so answers are remembered.
    preferred, refused = _accept_language(header)
    for tag in preferred:
        # Each tag in turn, so that one the header refuses is passed over even when another
        # tag leads to it ("zh-Hans;q=0, zh-SG" asks for no Simplified Chinese).
        chosen = _offered_as(tag)
        if chosen is not None and not _refused(chosen, refused):
            return chosen
    return DEFAULT_LANGUAGE


# A language tag with extensions runs long ("de-DE-u-co-phonebk-ca-gregory-nu-latn"); one
# far longer is no tag at all.
LONGEST_TAG = 256


@functools.lru_cache(maxsize=1024)
def _offered_as(tag: str) -> str | None:
    """The offered language a tag names, if any (a label's key, say)."""
    return _negotiate([tag]) if tag and len(tag) <= LONGEST_TAG else None


def resolve(asked: str) -> str:
    """The offered language for an explicit ``?lang=`` / ``--lang`` value (``pt-BR`` -> ``pt``).

    Raises :class:`UnknownLanguage` when none matches.
    """
    chosen = _offered_as(asked)
    if chosen is None:
        raise UnknownLanguage(asked, LANGUAGES)
    return chosen
