"""The HTML overview at ``/``: current leadership by organisation, recent changes, every feed.

Stored text is escaped everywhere and names sit in ``<bdi>`` so right-to-left text cannot
reorder what surrounds it. The page is a :class:`string.Template`; every value is escaped
before it is substituted.

A page stays the size of a page however large the log: above ``OVERVIEW_POSTS`` posts it
lists organisations instead of every post's holders (the whole tree when it fits on a page,
else one level of it), an organisation's page shows its own posts' leadership with them, and
each list longer than a page is split into pages (``?page=``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import hashlib
import html
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Request
from pydantic import Field
from starlette.responses import HTMLResponse, Response

from leaderlog.errors import ProjectionError
from leaderlog.feeds import (
    CAPACITY_LABELS,
    FORMATS,
    LANGUAGES,
    MEDIA_TYPES,
    N_,
    Directory,
    FeedFormat,
    FeedService,
    Markup,
    RecentChange,
    Scope,
    UnknownLanguage,
    clean,
    effective_language,
    feed_url,
    fuzzy_date,
    headline_html,
    isolated_text,
    language,
    marked_language,
    page_url,
    post_label,
    resolve,
    scope_name,
    translated_html,
)
from leaderlog.feeds._i18n import Language
from leaderlog.feeds._service import RENDER_VERSION as FEED_RENDER_VERSION
from leaderlog.http._conditional import VARY, etag_matches, get_and_head, respond
from leaderlog.http._deps import (
    DIGITS_ONLY,
    base_url,
    feeds_of,
    in_utf8,
    queries_of,
    services_of,
)
from leaderlog.http._feeds import (
    CANONICAL_REDIRECT,
    LONGEST_ECHO,
    canonical_address,
    given_once,
    pick_language,
)
from leaderlog.http._pages_tree import Entity, Tree, page_count, tree_of
from leaderlog.projections import InvalidQuery, LeadershipProjection, Queries, UnknownEntity
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.projections.leadership_rules import RULES_VERSION

__all__ = ["router"]

# A parameter given twice, or not in UTF-8, is refused, as on the feeds.
router = APIRouter(tags=["pages"], dependencies=[Depends(given_once), Depends(in_utf8)])

# Bump when the rendering of pages changes, so that validators handed out before no longer
# match. Every page's ETag carries it, with the versions of what pages are also made of: the
# feeds' rendering (recent changes, headlines, names), the projections they read and the
# rules that work out the leadership from them.
RENDER_VERSION = 16
RECENT = 20
HTML = "text/html; charset=utf-8"
# Above this many posts (in the log, or in an organisation's subtree) a page lists
# organisations, each linking to its own leadership, instead of every post's holders: the
# whole state reads every claim.
OVERVIEW_POSTS = 200
# Organisations a page lists at most: above this many in the tree (or the subtree) it lists
# one level of it, the organisations at the top (or just below), this many to a page.
ORGS_PER_PAGE = 200
# An organisation's own posts a page that lists organisations shows at most, to a page.
POSTS_PER_PAGE = 200
# Posts beyond which the leadership section is written on a worker thread: near
# OVERVIEW_POSTS it takes a few hundred milliseconds of CPU, which the event loop would
# otherwise spend answering no one else.
_OFF_LOOP_POSTS = 50
VACANCY_LABELS = {
    "filled": N_("filled"),
    "vacant": N_("vacant"),
    "unknown": N_("unknown"),
}
# A holder's status, said after their name as `leaderlog state` and /api/state give it: their
# tenure's, disputed while any of its claims is, else confirmed once any was, else reported.
# Only the first two are said: most holdings are merely reported, and saying so after nearly
# every name would bury the few that stand out. Lowercase words for brackets after a name,
# which say how sure the holding is, not what the person is.
HOLDER_STATUS_LABELS = {"confirmed": N_("confirmed"), "disputed": N_("disputed")}
_FORMAT_NAMES = {"atom": "Atom", "rss": "RSS", "json": "JSON Feed"}
# Parts of pages kept with the organisations, people and posts they are made of: one per
# address, language and link language asked for, and the address comes from the Host header.
_DERIVED_LIMIT = 64
# The organisations in tree order, kept with them however many other parts pages are made of.
_TREE = ("tree",)
# Organisations and posts beyond which their tree is worked out on a worker thread: a hundred
# thousand of each take the best part of a second.
_OFF_LOOP_ENTITIES = 5_000

# Every text breaks a word too long for its line at the edge of a narrow screen (a source's
# address shown in recent changes, a name), rather than widen the page past it so that all
# of it scrolls sideways (WCAG 1.4.10). A table's columns still take their longest word, in
# the table's own region that scrolls. A menu of links that wraps on a narrow screen keeps
# its lines further apart than text's: 24 px targets one above the other (WCAG 2.5.8).
PAGE = string.Template(
    """<!DOCTYPE html>
<html lang="$lang" dir="$direction">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
$discovery
<style>
body{font-family:system-ui,sans-serif;max-width:72rem;margin:0 auto;padding:1rem;
line-height:1.45;overflow-wrap:break-word}
table{border-collapse:collapse;width:100%}
.table{overflow-x:auto;margin-bottom:1.5rem}td ul{padding-inline-start:1.2rem}
th,td{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:start;vertical-align:top}
nav{line-height:1.7}nav a{margin-inline-end:.6rem}
.feeds li,.orgs li{margin:.2rem 0}small{color:#555}
.skip:not(:focus){position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
</style>
</head>
<body>
<a class="skip" href="#content">$skip</a>
<header>
<h1>$heading</h1>
<nav aria-label="$languages">$language_links</nav>
</header>
<main id="content">
<section id="leadership">
<h2>$leadership_heading</h2>
$situation$leadership
</section>
<section id="changes">
<h2>$changes_heading</h2>
$changes
</section>
<section id="feeds">
<h2>$feeds_heading</h2>
$feeds
</section>
</main>
<footer><p><a href="$base/docs">$api_docs</a> · <a href="$opml_url">$opml</a></p></footer>
</body>
</html>
"""
)


def _day(value: object, lang: Language) -> str:
    try:
        return lang.date(dt.date.fromisoformat(str(value)))
    except ValueError:
        return clean(value)


def _escaped(text: object) -> str:
    """``text`` for HTML, without the characters ``clean`` takes out of all shown text."""
    return html.escape(clean(text))


def _name(text: object) -> str:
    return f"<bdi>{_escaped(text)}</bdi>"


def _discovery(
    base: str, lang: Language, link_lang: str | None, shown: tuple[str, dict[str, Any]] | None
) -> str:
    """Autodiscovery links: the feeds of the organisation ``shown`` (its id and document),
    titled as those feeds are, or of everything; the OPML is always every feed."""
    if shown is None:
        scope = Scope("all")
        title = lang._(N_("Leadership changes"))
    else:
        org_id, doc = shown
        scope = Scope("org", org_id)
        # Cleaned, then isolated in its own direction, as the feed's own title sets it (an
        # attribute cannot hold <bdi>; cleaning after would drop the isolating characters).
        name = isolated_text(clean(scope_name("org", doc, org_id, lang)))
        title = lang._(N_("Leadership changes: {name}"), name=name)
    # The format in the language's own brackets, as a holder's capacity is.
    titles = {
        fmt: html.escape(lang._(N_("{text} ({details})"), text=title, details=_FORMAT_NAMES[fmt]))
        for fmt in FORMATS
    }
    links = [
        f'<link rel="alternate" type="{MEDIA_TYPES[fmt]}" title="{titles[fmt]}" '
        f'href="{_escaped(feed_url(base, scope, fmt, lang=link_lang))}">'
        for fmt in FORMATS
    ]
    opml = _escaped(_opml_url(base, link_lang))
    links.append(f'<link rel="outline" type="text/x-opml" title="OPML" href="{opml}">')
    return "\n".join(links)


def _opml_url(base: str, link_lang: str | None, fmt: str = "atom") -> str:
    # In the order the server writes its parameters in (another is redirected to it).
    query = ([f"format={fmt}"] if fmt != "atom" else []) + (
        [f"lang={link_lang}"] if link_lang else []
    )
    return f"{base}/opml" + (f"?{'&'.join(query)}" if query else "")


def _language_links(current: str, org: str | None, page: int = 1) -> str:
    """Links to this page in each language; a query-only link replaces the whole query, so
    the organisation shown, and the page of its list, are repeated in it."""
    links = []
    for tag in LANGUAGES:
        locale = language(tag).locale
        # The language's own name for itself as CLDR gives it ("简体中文"): display_name
        # adds its details in ASCII brackets whatever the language ("中文 (简体)").
        name = locale.languages.get(str(locale)) or locale.display_name or tag
        marker = ' aria-current="true"' if tag == current else ""
        query = urlencode(_page_query(org, tag, page))
        links.append(
            f'<a href="?{_escaped(query)}" hreflang="{tag}" lang="{tag}"{marker}>'
            f"{_escaped(name)}</a>"
        )
    return " ".join(links)


def _holders(answer: Mapping[str, Any], lang: Language) -> str:
    names = []
    for holder in answer.get("holders", []):
        # Cut as every other name on the page is (the same person's pending change, their
        # feed's line), not at the length of a quote.
        text = _name(scope_name("person", holder, str(holder.get("person")), lang))
        details = _holder_details(holder, lang)
        if details:
            # In the language's own brackets, as the feeds say it (full-width in Japanese), and
            # as text: a screen reader says the status as the page shows it.
            text = translated_html(
                lang, N_("{text} ({details})"), text=Markup(text), details=details
            )
        names.append(text)
    # Listed in the language's own way ("A、B" in Japanese); its patterns hold no markup.
    return lang.list(names) if names else _escaped(lang._(N_("none")))


def _holder_details(holder: Mapping[str, Any], lang: Language) -> str | None:
    """What the brackets after a holder's name say: their capacity when it is not the usual
    one, and their holding's status when it was confirmed or disputed."""
    capacity = holder.get("capacity")
    status = holder.get("status")
    said_capacity = lang._(CAPACITY_LABELS[capacity]) if capacity in ("acting", "interim") else None
    said_status = lang._(HOLDER_STATUS_LABELS[status]) if status in HOLDER_STATUS_LABELS else None
    if said_capacity and said_status:
        # Two different facts ("acting", "confirmed"), as the feeds join a capacity and a
        # cause, not a list of like things ("and").
        return lang._(N_("{capacity}, {status}"), capacity=said_capacity, status=said_status)
    return said_capacity or said_status


def _pending(
    answer: Mapping[str, Any],
    post: Mapping[str, Any],
    lang: Language,
    words_languages: Mapping[str, str],
) -> str:
    """A post's changes to come; the source's words in a date marked with their language
    (``words_languages``, by claim) where it is not the page's."""
    items = []
    for item in answer.get("pending", []):
        doc = {
            "fields": {key: item.get(key) for key in ("kind", "capacity", "cause", "modality")},
            "status": item.get("status"),
            "person": {"id": item.get("person"), "name": item.get("name")},
            "post": post,
        }
        line: str = headline_html(doc, lang)
        # When it is to take effect, as the source put it: an announcement of years ago read
        # as today's news without it.
        effective = item.get("effective")
        if isinstance(effective, Mapping):
            language = marked_language(words_languages.get(str(item.get("claim"))), lang)
            date = fuzzy_date(effective, lang, markup=True, language=language)
            when = translated_html(lang, N_("Effective: {date}."), date=date)
            line = f"{line}<br><small>{when}</small>"
        items.append(f"<li>{line}</li>")
    return f"<ul>{''.join(items)}</ul>" if items else ""


# Conflicts the rules find, said in the page's language; a dispute's reason is the writer's.
_CONFLICT_KINDS = {
    "overlapping_permanent": N_("more than one permanent holder at once"),
    "overlapping_acting": N_("more than one acting or interim holder at once"),
}


def _conflicts(answer: Mapping[str, Any], lang: Language) -> str:
    return "<br>".join(_conflict_reason(c, lang) for c in answer.get("conflicts", []))


def _conflict_reason(conflict: Mapping[str, Any], lang: Language) -> str:
    kind = conflict.get("kind")
    if kind in _CONFLICT_KINDS:
        # Looked up before the call: Babel before 2.19 extracts a literal inside the call's
        # argument ("kind") as a message of its own.
        label = _CONFLICT_KINDS[kind]
        return _escaped(lang._(label))
    # The writer's words, perhaps in a right-to-left script: isolated, as names are.
    return _name(conflict.get("reason") or kind or "")


@dataclass(frozen=True, slots=True)
class _OrgLinks:
    """How a page links organisations' pages: in its language, and not to itself."""

    base: str
    link_lang: str | None
    current: str | None

    def heading(self, org_id: str, name: str) -> str:
        if org_id == self.current:
            return name
        return f'<a href="{_escaped(page_url(self.base, org_id, lang=self.link_lang))}">{name}</a>'


def _leadership(
    state: Mapping[str, Any],
    orgs: Sequence[tuple[str, dict[str, Any]]],
    post_labels: Mapping[str, Any],
    lang: Language,
    links: _OrgLinks,
    words_languages: Mapping[str, str],
) -> str:
    by_org: dict[str, list[Mapping[str, Any]]] = {}
    for answer in state.get("posts", []):
        by_org.setdefault(str(answer["post"].get("org")), []).append(answer)
    if not by_org:
        return "<p>" + _escaped(lang._(N_("No leadership has been recorded yet."))) + "</p>"
    known = {org_id: doc for org_id, doc in orgs}
    ordered = [org_id for org_id, _ in orgs if org_id in by_org]
    ordered += sorted(set(by_org) - set(ordered))
    header = "".join(
        f'<th scope="col">{_escaped(lang._(label))}</th>'
        for label in (
            N_("Post"),
            N_("Held by"),
            N_("Vacancy"),
            N_("Pending changes"),
            N_("Conflicts"),
        )
    )
    parts = []
    for org_id in ordered:
        title = scope_name("org", known.get(org_id), org_id, lang)
        parts.append(f'<h3 id="org-{_escaped(org_id)}">{links.heading(org_id, _name(title))}</h3>')
        # Named after the heading it follows: a screen reader going from table to table
        # would otherwise hear one alike to the next. A table too wide for a narrow screen
        # (or a page zoomed in) scrolls within its own region, which the keyboard can focus
        # to scroll, rather than making the whole page scroll sideways (WCAG 1.4.10).
        named = f'aria-labelledby="org-{_escaped(org_id)}"'
        parts.append(
            f'<div class="table" role="region" {named} tabindex="0">'
            f"<table {named}><thead><tr>{header}</tr></thead><tbody>"
        )
        for answer in by_org[org_id]:
            post = answer["post"]
            post_doc = {
                "id": post.get("post"),
                "title": post.get("title"),
                "labels": post_labels.get(str(post.get("post"))) or {},
            }
            # The post heads its row: a screen reader going down a column says whose
            # holder, vacancy or conflict each cell is.
            parts.append(
                "<tr>"
                f'<th scope="row">{_name(post_label(post_doc, lang))}</th>'
                f"<td>{_holders(answer, lang)}</td>"
                f"<td>{_escaped(_vacancy(answer.get('vacancy'), lang))}</td>"
                f"<td>{_pending(answer, post_doc, lang, words_languages)}</td>"
                f"<td>{_conflicts(answer, lang)}</td>"
                "</tr>"
            )
        parts.append("</tbody></table></div>")
    return "\n".join(parts)


def _vacancy(value: object, lang: Language) -> str:
    """The vacancy column's word. Its "acting" says how the post is filled ("temporarily
    filled"), where a capacity's "acting" describes a person (German "kommissarisch")."""
    if value == "acting":
        return lang.in_context("vacancy", "acting")
    return lang._(VACANCY_LABELS.get(str(value), VACANCY_LABELS["unknown"]))


def _changes(entries: Sequence[RecentChange], lang: Language) -> str:
    if not entries:
        return "<p>" + _escaped(lang._(N_("No changes yet."))) + "</p>"
    items = []
    for entry in entries:
        title = entry.title_html
        # The feeds made the address a web URI (web_uri): ASCII, and perhaps longer than the
        # stored address it was made from, so it is neither checked again as one nor cut
        # short as text is.
        if entry.url is not None:
            title = f'<a href="{html.escape(entry.url)}">{title}</a>'
        # A valid HTML date has at most three digits after the second.
        when = entry.updated.isoformat(timespec="milliseconds")
        items.append(
            f'<li><p>{title} <time datetime="{_escaped(when)}">'
            f"{_escaped(lang.date(entry.updated))}</time>"
            f"<br><small>{entry.summary_html}</small></p></li>"
        )
    return f"<ul>{''.join(items)}</ul>"


def _feed_line(base: str, scope: Scope, label: str, link_lang: str | None, lang: Language) -> str:
    line = _in_each_format(
        Markup(_name(label)),
        isolated_text(clean(label)),
        {fmt: (feed_url(base, scope, fmt, lang=link_lang), MEDIA_TYPES[fmt]) for fmt in FORMATS},
        lang,
    )
    return f"<li>{line}</li>"


def _in_each_format(
    name: Markup, whose: str, links: Mapping[FeedFormat, tuple[str, str]], lang: Language
) -> Markup:
    """``name``, then a link in each format (``links``: its address and media type by format).

    A screen reader lists links by their names alone, where dozens of "Atom" would lead to
    as many feeds: each is named whose feed it is (``whose``). The name begins with the word
    the link shows, which speech input says to follow it (WCAG 2.5.3; a word in brackets is
    not taken for part of the name). An attribute cannot hold <bdi>: ``whose`` is isolated in
    its own direction by characters, as in the feeds' own titles."""
    shown = " · ".join(
        f'<a href="{_escaped(url)}" type="{media_type}" '
        f'aria-label="{_feed_link_name(whose, fmt, lang)}">{_FORMAT_NAMES[fmt]}</a>'
        for fmt, (url, media_type) in links.items()
    )
    # The language's own colon: "Nom : Atom" in French, full-width in Chinese and Japanese.
    return translated_html(lang, N_("{name}: {formats}"), name=name, formats=Markup(shown))


def _feed_link_name(whose: str, fmt: str, lang: Language) -> str:
    """A feed link's accessible name, escaped: the format, then whose feed."""
    return html.escape(lang._(N_("{format}: {name}"), format=_FORMAT_NAMES[fmt], name=whose))


def _feeds(
    base: str,
    entities: Mapping[str, Sequence[tuple[str, dict[str, Any]]]],
    lang: Language,
    link_lang: str | None,
) -> str:
    parts = [
        '<ul class="feeds">',
        _feed_line(base, Scope("all"), lang._(N_("Everything")), link_lang, lang),
        "</ul>",
    ]
    for kind, heading in (
        ("org", N_("Organisations")),
        ("person", N_("People")),
        ("post", N_("Posts")),
    ):
        if not entities.get(kind):
            continue
        parts.append(f'<h3>{_escaped(lang._(heading))}</h3><ul class="feeds">')
        for entity_id, doc in entities[kind]:
            label = scope_name(kind, doc, entity_id, lang)
            parts.append(_feed_line(base, Scope(kind, entity_id), label, link_lang, lang))  # type: ignore[arg-type]
        parts.append("</ul>")
    # In each format, as every feed is: the feeds of people on no page here (no longer
    # holding a post, say) are linked from the OPML alone.
    every_feed = lang._(N_("Subscribe to every feed at once (OPML)"))
    opml = {fmt: (_opml_url(base, link_lang, fmt), "text/x-opml") for fmt in FORMATS}
    line = _in_each_format(Markup(_escaped(every_feed)), isolated_text(every_feed), opml, lang)
    parts.append(f"<p>{line}</p>")
    return "\n".join(parts)


def _feed_entities(
    entities: Mapping[str, Sequence[tuple[str, dict[str, Any]]]],
    orgs: Sequence[tuple[str, dict[str, Any]]],
    org: str | None,
    state: Mapping[str, Any],
) -> Mapping[str, Sequence[tuple[str, dict[str, Any]]]]:
    """The feeds of what the page shows: its organisations, and the posts and people of its
    leadership section (however many people the log knows, the page stays the size of what
    it shows; the OPML lists every feed; the page listing organisations, their feeds only)."""
    subtree = {
        org_id for org_id, doc in orgs if org is None or org in (doc.get("path") or [org_id])
    }
    shown_posts = {str(answer["post"]["post"]) for answer in state.get("posts", [])}
    people = {
        str(someone.get("person"))
        for answer in state.get("posts", [])
        for someone in (*answer.get("holders", []), *answer.get("pending", []))
    }
    return {
        "org": [item for item in orgs if item[0] in subtree],
        "person": [item for item in entities.get("person", []) if item[0] in people],
        "post": [item for item in entities.get("post", []) if item[0] in shown_posts],
    }


def _org_links(
    base: str, orgs: Sequence[tuple[str, dict[str, Any]]], lang: Language, link_lang: str | None
) -> str:
    parts = ['<ul class="orgs">']
    for org_id, doc in orgs:
        label = scope_name("org", doc, org_id, lang)
        parts.append(
            f'<li><a href="{_escaped(page_url(base, org_id, lang=link_lang))}">'
            f"{_name(label)}</a></li>"
        )
    parts.append("</ul>")
    return "\n".join(parts)


def _page_query(org: str | None, link_lang: str | None, page: int) -> list[tuple[str, str]]:
    """The query of one page of a list, its parameters in the order a request for another
    spelling is redirected to; the first page without a number."""
    return [
        (name, value)
        for name, value in (("org", org), ("lang", link_lang), ("page", str(page)))
        if value and (name != "page" or page > 1)
    ]


def _page_address(base: str, org: str | None, link_lang: str | None, page: int) -> str:
    query = _page_query(org, link_lang, page)
    return f"{base}/" + (f"?{urlencode(query)}" if query else "")


def _shown_range(message: str, first: int, shown: int, total: int, lang: Language) -> str:
    """Which of a list's items a page shows ("Organisations 201 to 400 of 1,000.")."""
    said = lang._(
        message,
        first=lang.number(first),
        last=lang.number(first + shown - 1),
        count=lang.number(total),
    )
    return f"<p>{_escaped(said)}</p>"


def _pager(
    base: str, org: str | None, link_lang: str | None, page: int, pages: int, lang: Language
) -> str:
    """Links to the page before and after this one of a list longer than a page."""
    if pages < 2:
        return ""
    where = _escaped(
        lang._(N_("Page {page} of {pages}"), page=lang.number(page), pages=lang.number(pages))
    )
    parts = [where]
    if page > 1:
        address = _escaped(_page_address(base, org, link_lang, page - 1))
        words = _escaped(lang._(N_("Previous page")))
        parts.insert(0, f'<a href="{address}" rel="prev">{words}</a>')
    if page < pages:
        address = _escaped(_page_address(base, org, link_lang, page + 1))
        words = _escaped(lang._(N_("Next page")))
        parts.append(f'<a href="{address}" rel="next">{words}</a>')
    return f'<nav class="pager" aria-label="{where}"><p>{" · ".join(parts)}</p></nav>'


def _listed(tree: Tree, org: str | None) -> tuple[list[Entity], bool]:
    """The organisations a page lists instead of their leadership: every one of the tree (or
    of ``org``'s subtree, ``org`` first) when they fit on a page, else the level below (the
    organisations at the top of their trees, or ``org``'s own); and whether that is all of
    them. An organisation with none below it lists none."""
    every = tree.orgs if org is None else tree.subtree(org)
    if org is not None and len(every) < 2:
        return [], True
    if len(every) <= ORGS_PER_PAGE:
        return every, True
    return (tree.top if org is None else tree.children.get(org, [])), False


def _org_index(
    base: str,
    listed: Sequence[Entity],
    whole: bool,
    first: int,
    total: int,
    lang: Language,
    link_lang: str | None,
) -> str:
    """One page of the organisations listed, said to be the whole tree or one level of it."""
    choose = (
        N_("Choose an organisation to see its leadership.")
        if whole
        else N_(
            "Choose an organisation to see its leadership; the organisations within it "
            "are listed on its page."
        )
    )
    parts = ["<p>" + _escaped(lang._(choose)) + "</p>"]
    if total > len(listed):
        parts.append(
            _shown_range(
                N_("Organisations {first} to {last} of {count}."), first, len(listed), total, lang
            )
        )
    parts.append(_org_links(base, listed, lang, link_lang))
    return "\n".join(parts)


def _no_such_page(
    base: str, org: str | None, link_lang: str | None, page: int, pages: int, lang: Language
) -> str:
    """What a 404 page says instead of a page of a list beyond its last."""
    last = (
        f'<a href="{_escaped(_page_address(base, org, link_lang, pages))}">'
        f"{_escaped(lang.number(pages))}</a>"
    )
    said = translated_html(
        lang,
        N_("There is no page {page} here: the last is page {last}."),
        page=Markup(_name(_echoed(str(page)))),
        last=Markup(last),
    )
    return f"<p>{said}</p>"


async def _own_post_states(
    queries: Queries, header: Mapping[str, Any], posts: Sequence[Entity]
) -> list[dict[str, Any]]:
    """The leadership of an organisation's own ``posts`` on the day, and as known at the
    position, that ``header`` says. The queries' answer for an organisation's whole subtree
    would read every claim in it, on one too large for its page, only to show none of them."""
    if not posts:
        return []
    answer = await queries.state_of_posts(
        [post_id for post_id, _ in posts], header["as_of"], int(header["known_at"]["position"])
    )
    posts_found: list[dict[str, Any]] = answer["posts"]
    return posts_found


def _offered(lang: str) -> bool:
    try:
        resolve(lang)
    except UnknownLanguage:
        return False
    return True


def _page_title(
    shown: tuple[str, Mapping[str, Any]] | None,
    words: Language,
    *,
    found: bool = True,
    page: int = 1,
    pages: int = 1,
) -> tuple[str, str]:
    """The site's title, led by the organisation's name on its own page, so that tabs,
    bookmarks and a screen reader's list of pages tell one organisation's page from
    another's and from the overview: as the document's title and as its main heading, both
    escaped. The name keeps its own direction in each, as everywhere else on the page: a
    Hebrew name that begins with a number, laid out left to right with the words after it,
    shows the number at its left end, where its readers finish. A title cannot hold <bdi>:
    there it is isolated by characters, as in the feeds' titles.

    A page not ``found`` says so first in its title, the one thing a tab or a screen reader
    announcing the page goes by; its heading stays as it is, above what the page says. One
    of a list's ``pages`` says which in its title, after the name, as its pager does."""
    site = _escaped(words._(N_("Who leads what, as reported")))
    title, heading = site, site
    if found and pages > 1:
        which = words._(
            N_("Page {page} of {pages}"), page=words.number(page), pages=words.number(pages)
        )
        title = f"{_escaped(which)} \u2014 {site}"
    if shown is not None:
        org, info = shown
        name = scope_name("org", info, org, words)
        title = f"{html.escape(isolated_text(clean(name)))} \u2014 {title}"
        heading = f"{_name(name)} \u2014 {site}"
    if not found:
        said = _escaped(words._(N_("Page not found")))
        title = f"{said} \u2014 {title}"
    return title, heading


def _echoed(value: str) -> str:
    """``value`` as a 404 page repeats it: cut to its first characters with an ellipsis, and
    written out (quoted, escapes and all) when it holds what cannot be seen, a direction
    override, a zero-width space or a space at either end."""
    # A space at an end is printable, yet a page shows "?org=ice%20" as if it said "ice".
    if value.isprintable() and value == value.strip():
        return clean(value, LONGEST_ECHO)
    shown = repr(value[:LONGEST_ECHO])
    return shown if len(value) <= LONGEST_ECHO else f"{shown}\u2026"


def _unknown_org(
    base: str,
    org: str,
    suggestions: Sequence[str],
    orgs: Sequence[tuple[str, dict[str, Any]]],
    lang: Language,
    link_lang: str | None,
) -> str:
    """What a 404 page says instead of a leadership: no such id, and what was likely meant."""
    # Written out when it holds what cannot be seen (a direction override, a zero-width
    # space): the page must not seem to say that a real id does not exist.
    shown = _echoed(org)
    # In an element of its own direction, as a name is: "?org=" in Hebrew followed by digits
    # must not pull the digits, or the words after it, into its right-to-left run.
    said = translated_html(lang, N_("No organisation has the id {org}."), org=Markup(_name(shown)))
    parts = [f"<p>{said}</p>"]
    if suggestions:
        known = dict(orgs)
        meant = [(org_id, known.get(org_id, {})) for org_id in suggestions]
        parts.append("<p>" + _escaped(lang._(N_("Did you mean:"))) + "</p>")
        parts.append(_org_links(base, meant, lang, link_lang))
    return "\n".join(parts)


@get_and_head(
    router,
    "/",
    summary="HTML overview",
    response_class=HTMLResponse,
    responses={
        304: {"description": "Not modified: the client's copy (ETag) is current."},
        308: CANONICAL_REDIRECT,
        # A page for the reader, in their language, not the API's JSON error.
        404: {
            "description": "An unknown `org`, a `lang` not offered, or a `page` beyond the "
            "last: the page says so.",
            "content": {"text/html": {}},
        },
    },
)
async def overview(
    request: Request,
    # Any length: one that names no offered language gets the page saying so, not a 422;
    # the schema states the offered tags, validation being the page's.
    lang: Annotated[
        # Empty as well: a form with no language chosen sends it, leaving Accept-Language
        # to decide.
        Annotated[str, Field(json_schema_extra={"enum": ["", *LANGUAGES]})] | None,
        Query(
            description=f"Page language, one of {', '.join(LANGUAGES)}; another spelling of "
            "one (pt-BR) is redirected to it, and any other gets a 404 page saying which are "
            "offered. Without it, or empty, Accept-Language decides.",
        ),
    ] = None,
    org: Annotated[
        str | None,
        # Any length: one too long to be an id gets the page saying it is unknown, as
        # any other id that is not there (the lookup refuses it before any work).
        Query(
            description="Show this organisation's subtree only: its leadership, recent changes "
            "and feeds.",
        ),
    ] = None,
    page: Annotated[
        int | None,
        Query(
            ge=1,
            description=f"A page of a long list (1, the first, without it): a page lists at "
            f"most {ORGS_PER_PAGE} organisations and {POSTS_PER_PAGE} of an organisation's "
            "own posts. Another spelling of a number (02) is redirected to it; a page beyond "
            "the last gets a 404 page naming the last.",
        ),
        DIGITS_ONLY,
    ] = None,
) -> Response:
    """Current leadership by organisation, recent changes, and links to every feed.

    Where more than ``OVERVIEW_POSTS`` posts would be shown, the leadership section lists
    organisations instead (the whole tree when it fits on a page, else one level of it, a
    page at a time), and an organisation's page shows its own posts' leadership with them;
    ``?org=`` shows one organisation's subtree.
    """
    if lang is not None and not lang.strip():
        lang = None  # "?lang=" as an empty form field leaves: the reader's language, as without
    not_offered = lang is not None and not _offered(lang)
    if not_offered:
        # A page in the reader's own language saying so, rather than the API's JSON 422:
        # someone typed the address into a browser.
        chosen, explicit = pick_language(request, None)
    else:
        chosen, explicit = pick_language(request, lang)
        # As on the feeds: ?lang=pt-BR is sent to ?lang=pt, and ?page=02 to ?page=2, the
        # address the page's links use (but an empty language field is left as the reader's
        # choice of their own language, not spelled out).
        respelled = lang is not None or (
            page is not None and request.query_params.get("lang") is None
        )
        if respelled and (redirect := canonical_address(request, "/", chosen, page)) is not None:
            return redirect
    link_lang = chosen if explicit else None
    if org is not None and not org.strip():
        org = None  # "?org=" as an empty form field leaves: the whole overview
    headers = {"Cache-Control": "no-cache", "Vary": VARY, "Content-Language": chosen}
    number = page or 1
    etag, situation, feeds_at = (
        (None, None, None)
        if not_offered
        else await _overview_etag(request, chosen, link_lang, org, number)
    )
    pages = services_of(request).pages
    kept = pages.get(etag) if etag is not None else None
    if kept is None:
        body, found, whole = await _overview_page(
            request, chosen, link_lang, org, number, lang if not_offered else None, situation
        )
        if not found:
            # Not kept: anyone can ask for endlessly many organisations (and pages) that are
            # not there.
            return respond(request, body=body, media_type=HTML, headers=headers, status_code=404)
        kept = body, gzip.compress(body, compresslevel=6, mtime=0)
        # A rebuild that began after the tag was worked out may have emptied what the page
        # then read; once through, it ends where the tag says, and would serve that page.
        if etag is not None and whole and await feeds_of(request).reader.checkpoint() == feeds_at:
            pages.keep(etag, *kept)
        else:
            etag = None  # the leadership could not be read, or the feeds moved: said again
    if etag is not None:
        headers["ETag"] = etag
        if etag_matches(request, etag):
            return Response(status_code=304, headers=headers)
    body, gzipped = kept
    return respond(request, body=body, gzipped=gzipped, media_type=HTML, headers=headers)


async def _overview_etag(
    request: Request, chosen: str, link_lang: str | None, org: str | None, page: int
) -> tuple[str | None, dict[str, Any] | None, int | None]:
    """The overview's ETag: what it is computed from (the leadership as known at its
    projection's position, on today's date; the feed entries at theirs), how it is rendered
    and the variant asked for; with the situation it names, for the page to say, and the feed
    entries' position. None while the leadership cannot be read (the page says so, and is
    not kept)."""
    try:
        situation = await queries_of(request).situation()
    except ProjectionError:
        return None, None, None
    feeds = await feeds_of(request).reader.checkpoint()
    rendering = (
        RENDER_VERSION,
        FEED_RENDER_VERSION,
        FeedEntriesProjection.version,
        LeadershipProjection.version,
        RULES_VERSION,
        # How much a page shows: a page of a list is another page when they change.
        (OVERVIEW_POSTS, ORGS_PER_PAGE, POSTS_PER_PAGE),
    )
    variant = repr(
        (request.app.version, rendering, chosen, link_lang, org, page, base_url(request))
    )
    digest = hashlib.sha256(variant.encode()).hexdigest()[:16]
    position = situation["known_at"]["position"]
    # The hash at the later of the two positions pins the log up to both.
    log_hash = await feeds_of(request).log_hash(max(position, feeds or 0))
    tag = f'W/"{position}-{feeds or 0}-{log_hash}-{situation["as_of"]}-{digest}"'
    return tag, situation, feeds


def _derived(directory: Directory, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    """What ``make`` derives from ``directory`` alone, made once while it stays current."""
    memo = directory.memo
    if key not in memo:
        if len(memo) >= _DERIVED_LIMIT:
            tree = memo.get(_TREE)
            memo.clear()
            if tree is not None:
                memo[_TREE] = tree
        memo[key] = make()
    return memo[key]


async def _tree(directory: Directory) -> Tree:
    """The organisations of ``directory`` as the pages list them, worked out once."""
    found: Tree | None = directory.memo.get(_TREE)
    if found is None:
        size = len(directory.kinds["org"]) + len(directory.kinds["post"])
        found = (
            await asyncio.to_thread(tree_of, directory)
            if size > _OFF_LOOP_ENTITIES
            else tree_of(directory)
        )
        made = found
        _derived(directory, _TREE, lambda: made)
    return found


async def _overview_page(
    request: Request,
    chosen: str,
    link_lang: str | None,
    org: str | None,
    page: int,
    not_offered: str | None,
    situation: dict[str, Any] | None,
) -> tuple[bytes, bool, bool]:
    """The overview page, or ``page`` of its lists; whether it was found (an unknown
    organisation, a language ``not_offered``, or a page beyond the last, gets a page saying
    so); and whether it is whole (not while the leadership cannot be read). ``situation``,
    when its ETag was computed from one, is the one the page says, so that it says what its
    ETag names."""
    words = language(chosen)
    base = base_url(request)
    service = feeds_of(request)
    directory = await service.directory()
    entities = directory.kinds
    tree = await _tree(directory)
    orgs, post_labels = tree.orgs, tree.post_labels
    limits = (OVERVIEW_POSTS, ORGS_PER_PAGE, POSTS_PER_PAGE)
    by_org = (len(post_labels) if org is None else tree.posts_below.get(org, 0)) > OVERVIEW_POSTS
    listed, whole_tree = _listed(tree, org) if by_org else ([], True)
    own = tree.own_posts.get(org, []) if by_org and org is not None else []
    pages = max(page_count(listed, ORGS_PER_PAGE), page_count(own, POSTS_PER_PAGE))
    beyond = page > pages
    first_org, first_post = (page - 1) * ORGS_PER_PAGE, (page - 1) * POSTS_PER_PAGE
    orgs_shown = listed[first_org : first_org + ORGS_PER_PAGE]
    org_links = _OrgLinks(base, link_lang, org)
    queries = queries_of(request)
    state: dict[str, Any]
    unknown: UnknownEntity | None = None
    whole = True
    # Read where the ETag was worked out, not where the leadership has got to since (another
    # writer's events applied meanwhile): the page is kept and answered under that tag.
    axes: dict[str, Any] = (
        {"as_of": situation["as_of"], "known_at": situation["known_at"]["position"]}
        if situation is not None
        else {}
    )
    try:
        if org is None and (by_org or beyond):
            state = {**(situation or await queries.situation()), "posts": []}
        elif by_org or beyond:
            # The organisation is looked up (and its situation said) without its subtree's
            # posts; those of its own that this page shows are read alone.
            header, _ = await queries.state_in_parts(org=org, **axes)
            own_shown = [] if beyond else own[first_post : first_post + POSTS_PER_PAGE]
            state = {**header, "posts": await _own_post_states(queries, header, own_shown)}
        else:
            state = await queries.state(org=org, **axes)
    except UnknownEntity as error:
        unknown = error
        state = {**(situation or await queries.situation()), "posts": []}
    except InvalidQuery as error:
        # Not even the shape of an id (a control character, say): unknown, with no guesses.
        unknown = UnknownEntity(str(error))
        state = {**(situation or await queries.situation()), "posts": []}
    except ProjectionError:
        state = {"posts": [], "as_of": "", "known_at": {"position": 0}}
        whole = False
    words_languages = await _words_languages(service, state)
    if not_offered is not None:
        echoed = _echoed(not_offered)
        # In the page's own quotation marks, unless written out with Python's escapes to
        # show what cannot be seen, which quote themselves.
        named = Markup(_name(echoed))
        if echoed == clean(not_offered, LONGEST_ECHO):
            named = translated_html(words, N_("“{quote}”"), quote=named)
        asked = translated_html(
            words,
            N_("These pages are not offered in {asked}: choose one of the languages above."),
            asked=named,
        )
        leadership = f"<p>{asked}</p>"
    elif unknown is not None and org is not None:
        leadership = _unknown_org(base, org, unknown.suggestions, orgs, words, link_lang)
    elif beyond:
        leadership = _no_such_page(base, org, link_lang, page, pages, words)
    elif not whole:
        unreadable = N_("The leadership cannot be read at the moment; try again shortly.")
        leadership = f"<p>{_escaped(words._(unreadable))}</p>"
    elif by_org:
        parts = []
        if state["posts"] and org is not None:
            if len(own) > POSTS_PER_PAGE:
                parts.append(
                    _shown_range(
                        N_("Posts {first} to {last} of {count}."),
                        first_post + 1,
                        len(state["posts"]),
                        len(own),
                        words,
                    )
                )
            # Its own posts only, under its own name.
            parts.append(
                await _written(
                    state, tree.subtree(org)[:1], post_labels, words, org_links, words_languages
                )
            )
        if orgs_shown:
            parts.append(
                _derived(
                    directory,
                    ("index", base, chosen, link_lang, org, page, limits),
                    lambda: _org_index(
                        base, orgs_shown, whole_tree, first_org + 1, len(listed), words, link_lang
                    ),
                )
            )
        if not parts:
            parts.append(_leadership(state, orgs, post_labels, words, org_links, words_languages))
        parts.append(_pager(base, org, link_lang, page, pages, words))
        leadership = "\n".join(part for part in parts if part)
    else:
        leadership = await _written(state, orgs, post_labels, words, org_links, words_languages)
    shown = None
    shown_id: str | None = None
    if org is not None and unknown is None and state.get("org"):
        # The id as stored, which is what the feed addresses use.
        shown_id = str(state["org"]["org"])
    elif not whole and org is not None and org in tree.positions:
        # The leadership cannot be read, but the feeds know the organisation: its page still
        # lists its own changes and feeds, under its own name, as its feed does.
        shown_id = org
    if shown_id is not None:
        shown = (shown_id, tree.subtree(shown_id)[0][1] if shown_id in tree.positions else {})
    if org is not None:
        back = urlencode({"lang": link_lang}) if link_lang else ""
        # Then the organisations above it, outermost first: a reader goes up a level at once
        # (a slash reads the same way in right-to-left pages, where an arrow would not).
        path = (shown[1].get("path") or []) if shown is not None else []
        above = [
            org_links.heading(ancestor, _name(scope_name("org", doc, ancestor, words)))
            for ancestor in path[:-1]
            for _, doc in tree.subtree(ancestor)[:1]
        ]
        leadership = (
            f'<p><a href="{_escaped(base)}/{"?" + _escaped(back) if back else ""}">'
            + _escaped(words._(N_("All organisations")))
            + "</a>"
            + "".join(f" / {link}" for link in above)
            + "</p>\n"
            + leadership
        )
    said = words._(
        N_("Situation on {date}, as known at log position {position}."),
        date=_day(state.get("as_of"), words),
        position=str(state.get("known_at", {}).get("position", 0)),
    )
    # A page for one organisation lists its subtree's changes, as its feed does.
    scope = f"org:{shown[0]}" if shown is not None else "all"
    recent = await service.recent(RECENT, chosen, scope)
    # The feeds of what the page shows: the organisations it lists (an organisation's page,
    # that organisation first), and the posts and people of the leadership it shows.
    if by_org and org is None:
        feeds = _derived(
            directory,
            ("feeds", base, chosen, link_lang, page, limits),
            lambda: _feeds(base, {"org": orgs_shown}, words, link_lang),
        )
    elif by_org:
        itself = [shown] if shown is not None else []
        around = [*itself, *(item for item in orgs_shown if shown is None or item[0] != shown[0])]
        feeds = _feeds(base, _feed_entities(entities, around, None, state), words, link_lang)
    else:
        feeds = _feeds(base, _feed_entities(entities, orgs, org, state), words, link_lang)
    found = unknown is None and not_offered is None and not beyond
    title, heading = _page_title(shown, words, found=found, page=page, pages=pages)
    document = PAGE.substitute(
        lang=_escaped(chosen),
        direction=_escaped((words.locale.character_order == "right-to-left" and "rtl") or "ltr"),
        title=title,
        heading=heading,
        skip=_escaped(words._(N_("Skip to the main content"))),
        discovery=_discovery(base, words, link_lang, shown),
        languages=_escaped(words._(N_("Languages"))),
        # An unknown organisation's page in another language asks for it again, unless it
        # is longer than the page would repeat: such a link would be as long again ten times.
        language_links=_language_links(
            chosen, org if unknown is None or len(org or "") <= LONGEST_ECHO else None, page
        ),
        # A page not found says so under its first heading, where one moving by headings
        # hears it, without a situation that belongs to no leadership shown.
        leadership_heading=_escaped(
            words._(N_("Current leadership") if found else N_("Page not found"))
        ),
        situation=f"<p>{_escaped(said)}</p>\n" if found and whole else "",
        leadership=leadership,
        changes_heading=_escaped(words._(N_("Recent changes"))),
        changes=_changes(recent, words),
        feeds_heading=_escaped(words._(N_("Feeds"))),
        feeds=feeds,
        base=_escaped(base),
        api_docs=_escaped(words._(N_("API documentation"))),
        opml_url=_escaped(_opml_url(base, link_lang)),
        opml="OPML",
    )
    return document.encode(), found, whole


async def _written(
    state: Mapping[str, Any],
    orgs: Sequence[Entity],
    post_labels: Mapping[str, Any],
    words: Language,
    links: _OrgLinks,
    words_languages: Mapping[str, str],
) -> str:
    """The leadership tables of ``state``'s posts; many are written on a worker thread."""
    if len(state["posts"]) > _OFF_LOOP_POSTS:
        return await asyncio.to_thread(
            _leadership, state, orgs, post_labels, words, links, words_languages
        )
    return _leadership(state, orgs, post_labels, words, links, words_languages)


async def _words_languages(service: FeedService, state: Mapping[str, Any]) -> dict[str, str]:
    """The language of the source's words in each pending change's date, by claim, where
    it is known. The leadership names a change's sources but not which one's words its date
    holds (a dated confirmation's, or the report's) nor their languages: the claim's feed
    entry says both. One whose date is not the entry's (the feeds behind the leadership, a
    moment) is left unmarked, as its words' language is not known."""
    dates = {
        str(item.get("claim")): effective
        for answer in state.get("posts", [])
        for item in answer.get("pending", [])
        if isinstance(effective := item.get("effective"), Mapping)
        and isinstance(effective.get("text"), str)
        and effective["text"].strip()
    }
    if not dates:
        return {}
    found: dict[str, str] = {}
    for claim, doc in (await service.reader.current(sorted(dates))).items():
        entry_date = doc.get("fields", {}).get("effective")
        if not isinstance(entry_date, Mapping):
            continue
        same = all(entry_date.get(key) == dates[claim].get(key) for key in ("date", "text"))
        language = effective_language(doc) if same else None
        if language is not None:
            found[claim] = language
    return found
