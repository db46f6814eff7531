"""How names are compared when looking up what a user meant by an unknown id: a search form
(case and accents folded) and the starts of the words in it, which the leadership and audit
projections keep in indexes so that a few rows answer, however long the log."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = ["TAIL_LENGTH", "search_form", "word_tails"]

# The characters of a tail kept: a word given is looked up by as many of its own, and
# matched in full against the id or source found.
TAIL_LENGTH = 32
# A letter or digit after anything else, in lower-case ASCII.
_ASCII_WORD_START = re.compile(r"(?<![a-z0-9])[a-z0-9]")


def search_form(text: str) -> str:
    """How names are compared when looking up what a user meant: case-folded in every
    script and without the accents of the Latin, Greek and Cyrillic alphabets, however they
    were typed ("MÖFA" finds "möfa", "Straße" finds "STRASSE", "Maria" finds "María", a
    decomposed "Zoë" the composed one). Other scripts' marks (Devanagari vowel signs, kana
    voicing marks) are part of their letters, and are kept."""
    if text.isascii():
        # Every id, most names: the same form, at a fraction of the cost (an unknown id is
        # compared with a few hundred entities' names).
        return text.lower()
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFC", text).casefold())
    return unicodedata.normalize("NFC", _ACCENTS.sub("", decomposed))


# The combining diacritical marks (U+0300-U+036F): the accents a decomposed Latin, Greek or
# Cyrillic letter carries.
_ACCENTS = re.compile("[\u0300-\u036f]")


def word_tails(*texts: str | None) -> list[bytes]:
    """Each start of a word in ``texts`` (a letter or digit after anything else, or at the
    start) with what follows it, compared as names are (:func:`search_form`) and cut to
    ``TAIL_LENGTH`` characters; each once, as UTF-8. ``fox-ice-shakeup`` has
    ``fox-ice-shakeup``, ``ice-shakeup`` and ``shakeup``."""
    tails: dict[bytes, None] = {}
    for text in texts:
        if not text:
            continue
        if text.isascii():
            # Every id, most names: search_form is lower() for them, at a fraction of the cost.
            folded = text.lower()
            starts: Iterable[int] = (found.start() for found in _ASCII_WORD_START.finditer(folded))
        else:
            folded = search_form(text)
            starts = (
                start
                for start, character in enumerate(folded)
                if character.isalnum() and (start == 0 or not folded[start - 1].isalnum())
            )
        for start in starts:
            tails[folded[start : start + TAIL_LENGTH].encode()] = None
    return list(tails)
