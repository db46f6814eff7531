"""Atom, RSS and JSON feeds of the claims, one entry per claim, in ten languages.

    await (await runner_for(store)).catch_up()   # the feed_entries read model, up to date
    service = FeedService(store)
    request = FeedRequest(Scope.parse("org:ice"), "atom", "fr", "https://example.org")
    rendered = await service.render(request)   # bytes, media type, ETag, Last-Modified

(``runner_for`` from :mod:`leaderlog.projections`; a server keeps the read model current.)

Documents are rendered from the ``feed_entries`` read model only, so the same log gives the
same bytes on every host. Archive pages follow RFC 5005 (see :class:`Scope` and :func:`page_url`).
"""

from __future__ import annotations

from leaderlog.errors import FeedError
from leaderlog.feeds._address import host_and_port, is_web_address, uri, with_lowercase_scheme
from leaderlog.feeds._document import Category, Entry, Feed, Link, RecentChange
from leaderlog.feeds._i18n import (
    DEFAULT_LANGUAGE,
    LANGUAGES,
    LONGEST_TAG,
    N_,
    Language,
    OfferedLanguage,
    UnknownLanguage,
    header_quality,
    language,
    negotiate,
    resolve,
)
from leaderlog.feeds._paging import (
    FORMATS,
    MEDIA_TYPES,
    PAGE_SIZE,
    FeedFormat,
    Scope,
    feed_url,
    page_url,
)
from leaderlog.feeds._read import Head
from leaderlog.feeds._service import (
    FULL_ARCHIVE_CACHE,
    SUBSCRIPTION_CACHE,
    Directory,
    FeedNotFound,
    FeedRequest,
    FeedService,
    Rendered,
    Validators,
    named_subject,
)
from leaderlog.feeds._text import (
    CAPACITY_LABELS,
    Markup,
    clean,
    effective_language,
    fuzzy_date,
    headline,
    headline_html,
    isolated_text,
    marked_language,
    post_label,
    scope_name,
    translated_html,
)

__all__ = [
    "CAPACITY_LABELS",
    "DEFAULT_LANGUAGE",
    "FORMATS",
    "FULL_ARCHIVE_CACHE",
    "LANGUAGES",
    "LONGEST_TAG",
    "MEDIA_TYPES",
    "N_",
    "PAGE_SIZE",
    "SUBSCRIPTION_CACHE",
    "Category",
    "Directory",
    "Entry",
    "Feed",
    "FeedError",
    "FeedFormat",
    "FeedNotFound",
    "FeedRequest",
    "FeedService",
    "Head",
    "Language",
    "Link",
    "Markup",
    "OfferedLanguage",
    "RecentChange",
    "Rendered",
    "Scope",
    "UnknownLanguage",
    "Validators",
    "clean",
    "effective_language",
    "feed_url",
    "fuzzy_date",
    "header_quality",
    "headline",
    "headline_html",
    "host_and_port",
    "is_web_address",
    "isolated_text",
    "language",
    "marked_language",
    "named_subject",
    "negotiate",
    "page_url",
    "post_label",
    "resolve",
    "scope_name",
    "translated_html",
    "uri",
    "with_lowercase_scheme",
]
