"""Catalogs, language negotiation and locale formatting."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from leaderlog.feeds import LANGUAGES, UnknownLanguage, language, negotiate, resolve
from leaderlog.feeds._i18n import catalog_path, fill, has_iso_639_1_language
from leaderlog.feeds._text import _history, fuzzy_date
from tests.conftest import ROOT

SOURCES = [ROOT / "src" / "leaderlog" / "feeds", ROOT / "src" / "leaderlog" / "http"]
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _messages_in_code() -> set[str]:
    found: set[str] = set()
    for folder in SOURCES:
        for _, _, message, _, _ in extract_from_dir(
            str(folder), method_map=[("**.py", "python")], keywords={"_": None, "N_": None}
        ):
            assert isinstance(message, str)
            found.add(message)
    return found


def test_every_message_is_translated_into_every_language() -> None:
    wanted = _messages_in_code()
    assert len(wanted) > 90
    template = Path(catalog_path("fr")).parents[2] / "leaderlog.pot"
    with template.open("rb") as handle:
        assert {m.id for m in read_po(handle) if m.id} == wanted
    for tag in LANGUAGES[1:]:
        with catalog_path(tag).open("rb") as handle:
            catalog = read_po(handle)
        entries = {message.id: message for message in catalog if message.id}
        assert set(entries) == wanted, tag
        for message_id, message in entries.items():
            assert isinstance(message.string, str) and message.string.strip(), (tag, message_id)
            assert not message.fuzzy, (tag, message_id)
            assert sorted(PLACEHOLDER.findall(message.string)) == sorted(
                PLACEHOLDER.findall(str(message_id))
            ), (tag, message_id)


def test_translations_are_used() -> None:
    assert language("es")._("Leadership changes") == "Cambios de liderazgo"
    assert language("zh-Hans")._("{status}: {change}", status="预计", change="X") == "预计\uff1aX"
    assert language("en")._("Leadership changes") == "Leadership changes"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, "en"),
        ("", "en"),
        ("fr-CA,fr;q=0.9,en;q=0.8", "fr"),
        ("zh-CN", "zh-Hans"),
        ("zh", "zh-Hans"),
        ("zh-TW, ja;q=0.5", "ja"),
        ("pt-BR", "pt"),
        ("de;q=0.1, it;q=0.9", "it"),
        ("ru;q=0, hi", "hi"),
        ("tlh, *", "en"),
        ("!!!, ;q=x, es", "es"),
        ("en;q=0, *", "es"),
        ("*", "en"),
        ("en;q=0, de;q=0, *;q=0.5", "es"),
        ("es;level=1;q=0.1, it;q=0.2", "it"),
        ("zh-Hant-CN, de;q=0.5", "de"),
        ("zh-Hans-TW", "zh-Hans"),
        ("fr;q=nan, de", "de"),
        # A weight that is no qvalue (RFC 9110: 0 to 1, at most three decimals) drops its
        # range, as if the header had not named it; it neither wins nor refuses.
        ("de;q=2, fr", "fr"),
        ("fr;q=2, de;q=0.5", "de"),
        ("fr;q=1.5, de;q=0.5", "de"),
        ("fr;q=abc, de;q=0.5", "de"),
        ("fr;q=0.12345, de;q=0.1", "de"),
        ("fr;q=-0.5, de;q=0.1", "de"),
        ("fr;q=, de;q=0.1", "de"),
        ("fr;q=1e0, de;q=0.1", "de"),
        ("fr;q=abc, fr-CA;q=0.5, en;q=0.1", "fr"),
        ("de;q=0.1, fr;q=0.125", "fr"),
        ("de;q=0.9, fr;q=1.000", "fr"),
        ("de;q=0.5, fr;Q=0.", "de"),
        ("ja-JP-u-nu-jpanfin", "ja"),
        ("zh-Hans-CN-u-ca-chinese", "zh-Hans"),
        ("it-CH-x-priv, en;q=0.5", "it"),
        ("fr-u-xx", "fr"),
        ("de-DE-1996", "de"),
        ("x-klingon, es;q=0.5", "es"),
        # Another name CLDR gives a language (Babel's aliases): Mandarin, three-letter codes.
        ("cmn-Hans-CN", "zh-Hans"),
        ("cmn, en;q=0.5", "zh-Hans"),
        ("cmn-Hant-TW, de;q=0.5", "de"),
        ("deu, en;q=0.5", "de"),
        ("fra-CA", "fr"),
        ("JPN", "ja"),
        ("sh, es;q=0.5", "es"),
        # A refused language is not served by way of another tag that leads to it.
        ("zh-Hans;q=0, zh-SG;q=0.5, en;q=0.1", "en"),
        ("zh-Hans;q=0, zh", "en"),
        ("pt;q=0, pt-BR", "en"),
        ("de;q=0, de-AT, fr;q=0.5", "fr"),
        ("pt-BR;q=0, pt-PT", "pt"),
        # Cut at the last whole entry: "de" never loses its q=0.1 and jumps ahead of "fr".
        ("fr;q=0.5, " + "xx, " * 247 + "de;q=0.1", "fr"),
        ("fr;q=0.5, " + "x" * 1500 + ", de", "fr"),
    ],
)
def test_accept_language_negotiation(header: str | None, expected: str) -> None:
    assert negotiate(header) == expected


def test_explicit_languages_resolve_or_fail_clearly() -> None:
    assert resolve("zh-Hans") == "zh-Hans"
    assert resolve("pt-BR") == "pt"
    assert resolve("JA") == "ja"
    assert resolve("ja-JP-u-nu-jpanfin") == "ja"
    assert resolve("cmn-Hans") == "zh-Hans"
    assert resolve("ger") == "de"
    for asked in ("xx", "zh-Hant", "zh-Hant-CN", "", "en" * 40):
        with pytest.raises(UnknownLanguage, match="is not offered"):
            resolve(asked)


@pytest.mark.parametrize(
    ("tag", "value", "expected"),
    [
        ("en", {"date": "2025-05", "qualifier": "about"}, "about May 2025"),
        ("de", {"date": "2025-05-29"}, "29. Mai 2025"),
        ("fr", {"date": "2025", "qualifier": "before"}, "avant 2025"),
        ("ja", {"date": "2025-05", "qualifier": "about"}, "2025年5月頃"),
        ("ru", {"date": None, "text": "soon"}, "дата неизвестна («soon»)"),
        ("es", {"date": "2025-02-30"}, "fecha desconocida"),
        ("en", "not a date", "date unknown"),
    ],
)
def test_fuzzy_dates_read_naturally(tag: str, value: object, expected: str) -> None:
    assert fuzzy_date(value, language(tag)) == expected


@pytest.mark.parametrize(
    ("date", "qualifier", "expected"),
    [
        ("2025-05", "about", "\u043e\u043a\u043e\u043b\u043e \u043c\u0430\u044f 2025\u202f\u0433."),
        ("2026", "before", "\u0434\u043e 2026\u202f\u0433."),
        (
            "2025-05-30",
            "after",
            "\u043f\u043e\u0441\u043b\u0435 30 \u043c\u0430\u044f 2025\u202f\u0433.",
        ),
        ("2025-05", "on", "\u043c\u0430\u0439 2025\u202f\u0433."),
    ],
)
def test_russian_dates_after_a_preposition_take_the_genitive(
    date: str, qualifier: str, expected: str
) -> None:
    # "около мая": not the stand-alone "май" after the preposition
    assert fuzzy_date({"date": date, "qualifier": qualifier}, language("ru")) == expected


@pytest.mark.parametrize(
    ("qualifier", "expected"),
    [("before", "avant le 30 mai 2025"), ("after", "après le 30 mai 2025"), ("on", "30 mai 2025")],
)
def test_french_days_after_a_preposition_take_the_article(qualifier: str, expected: str) -> None:
    assert fuzzy_date({"date": "2025-05-30", "qualifier": qualifier}, language("fr")) == expected


@pytest.mark.parametrize(
    ("tag", "date", "qualifier", "expected"),
    [
        ("de", "2025-05-31", "before", "vor dem 31. Mai 2025"),
        ("de", "2025-06-03", "after", "nach dem 3. Juni 2025"),
        ("de", "2025-06-02", "about", "um den 2. Juni 2025"),
        ("de", "2025", "before", "vor 2025"),
        ("de", "2025-05", "before", "vor Mai 2025"),
        ("es", "2025-05-31", "before", "antes del 31 de mayo de 2025"),
        ("es", "2025-06-02", "about", "hacia el 2 de junio de 2025"),
        ("es", "2025", "after", "después de 2025"),
        ("pt", "2025-06-01", "before", "antes de 1\u00ba de junho de 2025"),
        ("pt", "2025-06-08", "about", "por volta de 8 de junho de 2025"),
        ("it", "2025-05-31", "before", "prima del 31 maggio 2025"),
        ("it", "2025-06-03", "after", "dopo il 3 giugno 2025"),
        ("it", "2025", "before", "prima del 2025"),
        ("it", "2025", "about", "verso il 2025"),
        ("it", "2025-05", "before", "prima di maggio 2025"),
        ("en", "2025-05-31", "before", "before May 31, 2025"),
        ("en", "2025", "about", "about 2025"),
    ],
)
def test_days_and_years_after_a_preposition_take_the_article_their_language_needs(
    tag: str, date: str, qualifier: str, expected: str
) -> None:
    assert fuzzy_date({"date": date, "qualifier": qualifier}, language(tag)) == expected


@pytest.mark.parametrize(
    ("date", "qualifier", "expected"),
    [
        ("2025-05-08", "about", "verso l\u20198 maggio 2025"),
        ("2025-05-08", "before", "prima dell\u20198 maggio 2025"),
        ("2025-05-11", "after", "dopo l\u201911 maggio 2025"),
        ("2025-05-11", "on", "11 maggio 2025"),
        # Read "primo": the first keeps its article, and is written as an ordinal.
        ("2025-05-01", "before", "prima del 1\u00ba maggio 2025"),
        ("2025-05-15", "about", "verso il 15 maggio 2025"),
        ("2025-05-01", "after", "dopo il 1\u00ba maggio 2025"),
        ("2025-05-11", "before", "prima dell\u201911 maggio 2025"),
        ("2025-05-21", "before", "prima del 21 maggio 2025"),
        ("2025-08-08", "after", "dopo l\u20198 agosto 2025"),
        ("2025", "after", "dopo il 2025"),
        ("0800", "about", "verso l\u2019800"),
        ("2025-05-18", "after", "dopo il 18 maggio 2025"),
        ("2025-05-28", "before", "prima del 28 maggio 2025"),
        ("1100", "after", "dopo il 1100"),
    ],
)
def test_italian_articles_elide_before_a_number_read_with_a_vowel(
    date: str, qualifier: str, expected: str
) -> None:
    assert fuzzy_date({"date": date, "qualifier": qualifier}, language("it")) == expected


@pytest.mark.parametrize(
    ("tag", "message", "day", "expected"),
    [
        ("it", "Confirmed on {date}.", 8, "Confermato l\u20198 maggio 2025."),
        ("it", "Disputed on {date}: {reason}", 11, "Contestato l\u201911 maggio 2025: r"),
        ("it", "Retracted on {date}: {reason}", 1, "Ritrattato il 1\u00ba maggio 2025: r"),
        ("it", "Corrected on {date}: {reason}", 1, "Corretto il 1\u00ba maggio 2025: r"),
        ("it", "Corrected on {date}: {reason}", 8, "Corretto l\u20198 maggio 2025: r"),
        ("it", "Corrected on {date}: {reason}", 11, "Corretto l\u201911 maggio 2025: r"),
        ("it", "Corrected on {date}: {reason}", 15, "Corretto il 15 maggio 2025: r"),
        ("it", "Confirmed on {date}.", 15, "Confermato il 15 maggio 2025."),
        ("fr", "Confirmed on {date}.", 1, "Confirm\u00e9 le 1er mai 2025."),
        ("fr", "Confirmed on {date}.", 8, "Confirm\u00e9 le 8 mai 2025."),
        ("fr", "Confirmed on {date}.", 11, "Confirm\u00e9 le 11 mai 2025."),
        # Brazilian usage, which the catalog follows: the first of a month is "primeiro".
        ("pt", "Confirmed on {date}.", 1, "Confirmado em 1\u00ba de maio de 2025."),
        ("pt", "Confirmed on {date}.", 8, "Confirmado em 8 de maio de 2025."),
        ("pt", "Retracted on {date}: {reason}", 11, "Retirado em 11 de maio de 2025: r"),
        ("pt", "Retracted on {date}: {reason}", 15, "Retirado em 15 de maio de 2025: r"),
        ("es", "Confirmed on {date}.", 1, "Confirmado el 1 de mayo de 2025."),
        ("de", "Confirmed on {date}.", 1, "Best\u00e4tigt am 1. Mai 2025."),
        ("en", "Confirmed on {date}.", 1, "Confirmed on May 1, 2025."),
    ],
)
def test_a_day_reads_as_its_language_writes_it_in_a_sentence(
    tag: str, message: str, day: int, expected: str
) -> None:
    lang = language(tag)
    date = lang.date(dt.date(2025, 5, day))
    assert lang._(message, date=date, reason="r") == expected


@pytest.mark.parametrize(
    ("tag", "day", "expected"),
    [
        ("it", 1, "Situazione al 1\u00ba maggio 2025"),
        ("it", 8, "Situazione all\u20198 maggio 2025"),
        ("it", 11, "Situazione all\u201911 maggio 2025"),
        ("it", 15, "Situazione al 15 maggio 2025"),
        ("pt", 1, "Situa\u00e7\u00e3o em 1\u00ba de maio de 2025"),
        ("es", 8, "Situaci\u00f3n al 8 de mayo de 2025"),
        ("fr", 1, "Situation au 1er mai 2025"),
        ("de", 8, "Stand vom 8. Mai 2025"),
    ],
)
def test_the_overview_says_the_day_of_its_situation_as_its_language_writes_it(
    tag: str, day: int, expected: str
) -> None:
    lang = language(tag)
    situation = lang._(
        "Situation on {date}, as known at log position {position}.",
        date=lang.date(dt.date(2025, 5, day)),
        position="8",
    )
    assert situation.partition(",")[0] == expected


@pytest.mark.parametrize("markup", [False, True], ids=["text", "html"])
@pytest.mark.parametrize(
    ("tag", "at", "said"),
    [
        ("it", "2025-05-08T12:00:00Z", "Ritrattato l\u20198 maggio 2025:"),
        ("fr", "2025-05-01T12:00:00Z", "R\u00e9tract\u00e9 le 1er mai 2025\u00a0:"),
        ("pt", "2025-06-01T12:00:00Z", "Retirado em 1\u00ba de junho de 2025:"),
    ],
)
def test_an_entry_s_history_says_the_day_as_its_language_writes_it(
    tag: str, at: str, said: str, markup: bool
) -> None:
    doc = {"events": [{"type": "claim.retracted", "at": at, "reason": "r"}]}
    [[sentence]] = _history(doc, language(tag), markup=markup)
    assert sentence.startswith(said)


@pytest.mark.parametrize(
    ("tag", "labels", "shown"),
    [
        ("zh-Hans", {"zh-hans": "机构"}, "机构"),
        ("pt", {"pt-BR": "Organização"}, "Organização"),
        ("pt", {"pt-BR": "Organização", "pt": "Organização O"}, "Organização O"),
        ("de", {"DE": "Organisation"}, "Organisation"),
        ("fr", {"pt-BR": "Organização"}, "Org"),
    ],
)
def test_a_label_under_another_spelling_of_the_language_s_tag_is_used(
    tag: str, labels: dict[str, str], shown: str
) -> None:
    assert language(tag).label(labels, "Org") == shown


@pytest.mark.parametrize(
    ("tag", "text"),
    [
        # French quotation marks stand apart from their words
        ("fr", "\u00ab\u202fIl part.\u202f\u00bb"),
        # German closes a quotation with U+201C, an initial quotation mark
        ("de", "\u201eEr geht.\u201c"),
        # the end of an isolate set around right-to-left words
        ("en", "\u2068\u05e9\u05d2\u05d5\u05d9.\u2069"),
        # nothing to end
        ("en", ""),
    ],
)
def test_words_that_end_their_own_sentence_within_closing_marks_take_no_second_stop(
    tag: str, text: str
) -> None:
    # given words that end with their own stop, then what closes them (or no words)
    # when they are ended as a sentence
    ended = language(tag).sentence(text)
    # then no stop is added after the closing marks
    assert ended == text


@pytest.mark.parametrize(
    ("labels", "shown"),
    [
        ({"fr": ""}, "Org"),
        ({"fr": "", "fr-CA": "Organisation"}, "Organisation"),
    ],
)
def test_an_empty_label_for_the_language_is_passed_over(labels: dict[str, str], shown: str) -> None:
    # given data whose label in the language is empty
    # when the label is asked for
    # then another spelling's label, or the fallback, is shown rather than nothing
    assert language("fr").label(labels, "Org") == shown


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        # a range without a weight has q=1, ahead of any lower one before it
        ("fr;q=0.8, de", "de"),
        # four decimals are no qvalue either (RFC 9110: at most three): the range is dropped
        ("fr;q=0.1234, de;q=0.1", "de"),
    ],
)
def test_accept_language_weights_follow_rfc_9110(header: str, expected: str) -> None:
    # given an Accept-Language header, when negotiated, then the best-weighted valid range wins
    assert negotiate(header) == expected


def test_explicit_languages_also_resolve_from_locale_identifiers() -> None:
    # given a language asked for as a POSIX/Babel locale identifier, with "_"
    # when it is resolved, then it names the offered language, as "pt-BR" does
    assert resolve("pt_BR") == "pt"
    assert resolve("zh_Hans_CN") == "zh-Hans"


def test_a_language_not_offered_is_refused_by_name() -> None:
    # given a tag that is no offered language
    # when its Language is asked for
    # then the error says it is not offered (not a bare KeyError)
    with pytest.raises(UnknownLanguage, match="is not offered"):
        language("xx")


@pytest.mark.parametrize("tag", ["pt-BR", "PT-BR", "De", "EN-gb"])
def test_a_two_letter_primary_subtag_counts_whatever_its_case(tag: str) -> None:
    # given a language tag whose primary subtag is an ISO 639-1 code, in any case
    # when it is checked, then it counts (tags ignore case)
    assert has_iso_639_1_language(tag)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        # "*" at its own weight: ahead of a range weighted lower
        ("*;q=0.5, de;q=0.1", "en"),
        # and for the languages no other range names only: one named lower stays lower
        ("en;q=0.5, *", "es"),
        ("en;q=0.1, *;q=0.5", "es"),
        ("en;q=0.1, es;q=0.1, *;q=0.5", "fr"),
        ("zh;q=0.1, en;q=0.2, *;q=0.5", "es"),
        # a refused range refuses the tags under it, however they are asked for
        ("zh;q=0, zh-CN", "en"),
    ],
)
def test_accept_language_wildcards_and_refusals_weigh_as_written(
    header: str, expected: str
) -> None:
    # given a header with a weighted wildcard or a refused prefix
    # when it is negotiated, then the wildcard keeps its weight and the refusal its reach
    assert negotiate(header) == expected


@pytest.mark.parametrize("tag", ["zh-cmn-Hant", "zh-cmn-Hant-TW", "zh-yue-HK"])
def test_traditional_chinese_written_with_an_extended_language_subtag_is_not_simplified(
    tag: str,
) -> None:
    # given Traditional Chinese (or Cantonese) written with an extended language subtag
    # (RFC 5646: "zh-cmn-Hant-TW" is "cmn-Hant-TW"), which is not offered
    # when it is asked for, then it is not served as Simplified Chinese, as its
    # shortened form "zh" would be
    assert negotiate(tag) == "en"
    with pytest.raises(UnknownLanguage):
        resolve(tag)


@pytest.mark.parametrize("tag", ["zh-cmn-Hans-CN", "zh-cmn", "ZH-CMN-HANS"])
def test_simplified_chinese_written_with_an_extended_language_subtag_is_served(tag: str) -> None:
    assert resolve(tag) == "zh-Hans"
    assert negotiate(tag) == "zh-Hans"


def test_japanese_spaces_a_sentence_ending_in_a_closing_guillemet() -> None:
    # given a Japanese text whose first sentence ends in French quoted words ("»", a
    # punctuation mark of neutral width, as written with spaces)
    sentences = ["\u00ab\u202fnon\u202f\u00bb", "\u6b21\u3002"]
    # when the sentences are set one after another
    joined = language("ja").sentences(sentences)
    # then the next sentence does not run into it
    assert joined == "\u00ab\u202fnon\u202f\u00bb \u6b21\u3002"


def test_a_value_cut_short_stands_for_the_template_s_full_stop() -> None:
    # given a template ending with a full stop, and a value ending in an ellipsis
    # when it is filled in
    filled = fill("Renamed {name}.", {"name": "Very Long Name\u2026"})
    # then the ellipsis is not followed by a second stop
    assert filled == "Renamed Very Long Name\u2026"


def test_a_hindi_sentence_ended_with_its_danda_takes_no_second_stop() -> None:
    # given a writer's reason in Hindi, ended with its own full stop (the danda)
    reason = "\u0935\u0939 \u091a\u0932\u093e \u0917\u092f\u093e\u0964"
    # when it is ended as a sentence, in Hindi or any other language
    # then no second stop is added
    assert language("hi").sentence(reason) == reason
    assert language("en").sentence(reason) == reason
