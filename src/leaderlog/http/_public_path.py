"""Requests under the path of the public address (``/leaders`` of
``https://example.org/leaders``), served as if a proxy had taken that path off: proxies that
pass it on (nginx's ``proxy_pass`` without a trailing ``/``, Caddy's ``handle``, Traefik
without ``StripPrefix``) and proxies that strip it both reach every address."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from urllib.parse import quote, unquote, urlsplit

from fastapi import APIRouter, FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["OWN_SEGMENTS", "serve_under_public_path"]

logger = logging.getLogger("leaderlog.http")

# The first segment of every address the server has. A public path beginning with one
# (``/feeds``) is not taken off: ``/feeds/all.atom`` from a proxy that strips it would
# otherwise be read as ``/all.atom``, so which proxy sent it could not be told.
OWN_SEGMENTS = frozenset(
    {"api", "docs", "feeds", "healthz", "openapi.json", "opml", "redoc", "static-offline-docs"}
)


def serve_under_public_path(
    app: FastAPI, public_url: str | None, routers: Sequence[APIRouter] = ()
) -> None:
    """Have ``app`` answer under the path of ``public_url`` as at its root, unless that path
    begins with a segment of the app's own addresses (``routers``' included), which is said."""
    path = unquote(urlsplit(public_url).path).rstrip("/") if public_url else ""
    if not path:
        return
    added = (str(getattr(route, "path", "")) for router in routers for route in router.routes)
    own = OWN_SEGMENTS | {_first_segment(added_path) for added_path in added}
    if path.split("/")[1] in own:
        logger.warning(
            "the public URL's path %s begins with one of the server's own paths, so it is not "
            "taken off requests: the proxy in front must strip it",
            path,
        )
        return
    app.add_middleware(_UnderPublicPath, path=path)


class _UnderPublicPath:
    """Takes the public path off ``path`` and ``raw_path`` (after any ``root_path``), in a
    copy of the scope: the server's access log, which reads the scope it made, shows the path
    as the client sent it. Everything else sees what a stripping proxy would have sent, so
    answers, validators and caches are the same either way. Not told as ``root_path`` (ASGI's
    way for a mount): links and redirects are built from the public address already, and
    ``request.url.path`` is read as a path from the root (the trailing-slash redirect, error
    details), which would then name the public path twice."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope = _taken_off(scope, self.path)
        await self.app(scope, receive, send)


def _taken_off(scope: Scope, prefix: str) -> Scope:
    full: str = scope["path"]
    root: str = scope.get("root_path", "")
    if not full.startswith(root):
        root = ""  # as Starlette routes such a path
    under = full[len(root) :]
    if under != prefix and not under.startswith(prefix + "/"):
        return scope
    path = root + (under[len(prefix) :] or "/")
    changed = {**scope, "path": path}
    raw: bytes | None = scope.get("raw_path")
    if raw is not None:
        changed["raw_path"] = _raw_taken_off(raw, root, prefix) or quote(path).encode()
    return changed


def _raw_taken_off(raw: bytes, root: str, prefix: str) -> bytes | None:
    """``raw`` without the bytes that spell ``prefix`` after ``root``, however they were
    escaped (``/f%C3%BChrer``, ``/f%c3%bchrer``); None when they end within a segment (a
    ``/`` sent as ``%2F``)."""
    start = 0
    for end in range(len(raw) + 1):
        if end < len(raw) and raw[end : end + 1] != b"/":
            continue
        # As uvicorn decodes the path; read no further than the prefix's length, so a long
        # path costs no more than a short one.
        seen = unquote(raw[:end].decode("latin-1"))
        if seen == root and root:
            start = end
        if seen == root + prefix:
            return raw[:start] + (raw[end:] or b"/")
        if len(seen) > len(root + prefix):
            break
    return None


def _first_segment(path: str) -> str:
    return path.split("/")[1] if path.startswith("/") else ""
