"""The answers' members as /openapi.json states them (leaderlog.http._answers), checked
against answers the queries give: a schema stating a member an answer lacks, or a type it
does not have, would have generated clients refuse real answers."""

from __future__ import annotations

import functools
from typing import Any

import jsonschema_rs

from leaderlog._json import dumps, loads
from leaderlog.http import create_app


@functools.cache
def _validator(name: str) -> Any:
    components = create_app().openapi()["components"]
    schema = {"$ref": f"#/components/schemas/{name}", "components": components}
    return jsonschema_rs.Draft202012Validator(schema)


def assert_documented(name: str, answer: Any) -> None:
    """``answer`` (as the API sends it: JSON) matches the schema ``name`` of /openapi.json."""
    problems = [str(error) for error in _validator(name).iter_errors(loads(dumps(answer)))]
    assert not problems, (name, problems[:3])
