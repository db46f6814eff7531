"""What route handlers reach through the app: the log, the queries, the feeds, the runner.

Other routers (for example the write API) use these too, so the app can be extended with
``create_app(..., routers=[...])`` or ``app.include_router(...)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from starlette.requests import Request

from leaderlog.feeds import FeedService
from leaderlog.log import EventLog
from leaderlog.projections import ProjectionRunner, Queries

__all__ = [
    "Problem",
    "Services",
    "base_url",
    "feeds_of",
    "invalid_parameter",
    "log_of",
    "queries_of",
    "runners_of",
    "services_of",
]


_HOST = re.compile(r"^[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?$")


@dataclass(frozen=True, slots=True)
class Services:
    log: EventLog
    runners: tuple[ProjectionRunner, ...]
    queries: Queries
    feeds: FeedService

    async def catch_up(self) -> None:
        """Apply everything appended so far (a writer calls this to read its own writes)."""
        for runner in self.runners:
            await runner.catch_up()
        self.feeds.invalidate()


class Problem(BaseModel):
    """The body of a 404 or 503: what is missing or not ready, in words."""

    detail: str


def invalid_parameter(
    message: str, value: object, name: str | None = None
) -> RequestValidationError:
    """A 422 shaped like FastAPI's own validation errors, so every 422 reads the same."""
    location = ("query", name) if name else ("query",)
    return RequestValidationError(
        [{"type": "value_error", "loc": location, "msg": message, "input": value}]
    )


def services_of(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def log_of(request: Request) -> EventLog:
    return services_of(request).log


def runners_of(request: Request) -> tuple[ProjectionRunner, ...]:
    return services_of(request).runners


def queries_of(request: Request) -> Queries:
    return services_of(request).queries


def feeds_of(request: Request) -> FeedService:
    return services_of(request).feeds


def base_url(request: Request) -> str:
    """Scheme and host the client used (behind a proxy: run uvicorn with --proxy-headers).

    A Host header that is not a plain host name and port is not echoed into documents; the
    address the server listens on is used instead.
    """
    scope = request.scope
    host = request.headers.get("host", "")
    if not _HOST.match(host):
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}{scope.get('root_path', '')}".rstrip("/")
