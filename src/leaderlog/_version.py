"""The installed leaderlog's version, as feeds, the API description and the server name it."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["leaderlog_version"]


def leaderlog_version() -> str:
    """The version pip installed; "0" for a source tree run without installing it."""
    try:
        return version("leaderlog")
    except PackageNotFoundError:
        return "0"
