"""The HTTP server: feeds for RSS readers, JSON for programs, an HTML page for people."""

from __future__ import annotations

from leaderlog.http._deps import (
    Services,
    base_url,
    check_public_url,
    feeds_of,
    log_of,
    queries_of,
    runners_of,
)
from leaderlog.http.app import (
    catch_up_before_serving,
    create_app,
    feed_runner,
    projection_runners,
)

__all__ = [
    "Services",
    "base_url",
    "catch_up_before_serving",
    "check_public_url",
    "create_app",
    "feed_runner",
    "feeds_of",
    "log_of",
    "projection_runners",
    "queries_of",
    "runners_of",
]
