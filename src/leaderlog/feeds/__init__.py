"""Atom, RSS and JSON feeds of the claims, one entry per claim, in ten languages.

    service = FeedService(store)
    request = FeedRequest(Scope.parse("org:ice"), "atom", "fr", "https://example.org")
    rendered = await service.render(request)   # bytes, media type, ETag, Last-Modified

Documents are rendered from the ``feed_entries`` read model only, so the same log gives the
same bytes on every host. See :mod:`._paging` for the RFC 5005 archive layout.
"""

from __future__ import annotations

from leaderlog.feeds._i18n import (
    DEFAULT_LANGUAGE,
    LANGUAGES,
    UnknownLanguage,
    language,
    negotiate,
    resolve,
)
from leaderlog.feeds._paging import FORMATS, MEDIA_TYPES, PAGE_SIZE, FeedFormat, Scope, feed_url
from leaderlog.feeds._service import (
    FULL_ARCHIVE_CACHE,
    SUBSCRIPTION_CACHE,
    FeedNotFound,
    FeedRequest,
    FeedService,
    Rendered,
    Validators,
)
from leaderlog.feeds._text import clean, post_label

__all__ = [
    "DEFAULT_LANGUAGE",
    "FORMATS",
    "FULL_ARCHIVE_CACHE",
    "LANGUAGES",
    "MEDIA_TYPES",
    "PAGE_SIZE",
    "SUBSCRIPTION_CACHE",
    "FeedFormat",
    "FeedNotFound",
    "FeedRequest",
    "FeedService",
    "Rendered",
    "Scope",
    "UnknownLanguage",
    "Validators",
    "clean",
    "feed_url",
    "language",
    "negotiate",
    "post_label",
    "resolve",
]
