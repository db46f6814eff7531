"""The catalogs as files, as translators' tools and gettext's checks read them: every message
that takes placeholders says so, and messages said in a context are translated like any other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from leaderlog.feeds import LANGUAGES
from leaderlog.feeds._i18n import catalog_path
from tests.conftest import ROOT

SOURCES = [ROOT / "src" / "leaderlog" / "feeds", ROOT / "src" / "leaderlog" / "http"]
TEMPLATE = Path(catalog_path("fr")).parents[2] / "leaderlog.pot"
CATALOGS = [TEMPLATE, *(catalog_path(tag) for tag in LANGUAGES[1:])]
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _entries(path: Path) -> list[tuple[set[str], str]]:
    """Each entry's flags and msgid as the file writes them (Babel's reader adds a
    python-brace-format flag of its own to any message that looks like one, so it cannot
    tell whether the file has it)."""
    entries: list[tuple[set[str], str]] = []
    flags: set[str] = set()
    message: list[str] | None = None
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        if line.startswith("#,"):
            flags |= {flag.strip() for flag in line[2:].split(",")}
        elif line.startswith("msgid "):
            message = [line[len("msgid ") :]]
        elif line.startswith('"') and message is not None:
            message.append(line)
        elif line.startswith("msgstr") or not line:
            if message is not None:
                entries.append((flags, "".join(part.strip()[1:-1] for part in message)))
            message = None
            if not line:
                flags = set()
    return entries


@pytest.mark.parametrize(
    "path", CATALOGS, ids=lambda path: "template" if path == TEMPLATE else path.parts[-3]
)
def test_every_message_with_placeholders_is_flagged_python_brace_format(path: Path) -> None:
    entries = [(flags, message) for flags, message in _entries(path) if message]
    assert len(entries) > 90
    for flags, message in entries:
        assert ("python-brace-format" in flags) == bool(PLACEHOLDER.search(message)), (
            path,
            message,
        )


def _messages_in_context() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for folder in SOURCES:
        for _, _, message, _, context in extract_from_dir(
            str(folder), method_map=[("**.py", "python")], keywords={"in_context": ((1, "c"), 2)}
        ):
            assert isinstance(message, str) and isinstance(context, str)
            found.add((context, message))
    return found


def test_every_message_said_in_a_context_is_in_every_catalog_and_translated() -> None:
    wanted = _messages_in_context()
    assert wanted
    with TEMPLATE.open("rb") as handle:
        assert {(m.context, m.id) for m in read_po(handle) if m.context} == wanted
    for tag in LANGUAGES[1:]:
        with catalog_path(tag).open("rb") as handle:
            catalog = read_po(handle)
        for context, message_id in wanted:
            message = catalog.get(message_id, context=context)
            assert message is not None, (tag, context, message_id)
            assert isinstance(message.string, str) and message.string.strip(), (tag, message_id)
            assert not message.fuzzy, (tag, message_id)
            assert sorted(PLACEHOLDER.findall(message.string)) == sorted(
                PLACEHOLDER.findall(message_id)
            ), (tag, message_id)
