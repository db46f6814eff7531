"""What a user projection changed on PostgreSQL beyond its own tables.

PostgreSQL has no authorizer to refuse a statement as it runs, as SQLite has. But its DDL is
transactional, and it describes every object in catalog rows whose ``xmin`` names the
transaction that last wrote them, and counts each transaction's row changes per table. So a
snapshot taken before ``apply`` (or ``schema()``) and compared after it, still inside the
projection's savepoint, tells what it changed; the runner then rolls the savepoint back.

Only this transaction's doing counts, not another session's committed meanwhile (another
process rebuilding another projection): a row written or changed counts when its ``xmin`` is
one of this transaction's (sub)transactions, a row gone when this transaction holds a lock
on its object that only a change takes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Snapshot", "overreach", "take_snapshot"]

Fetch = Callable[[str, Sequence[Any]], Awaitable[list[tuple[Any, ...]]]]
Owns = Callable[[str], bool]

# Every row: (kind, key, version, name, relation oid, relation name, detail). The schemas
# are those an unqualified name may resolve to (a temporary table named ``events`` would hide
# the log's own from later statements on the connection) and the log's, which is on the path.
# A relation's version is its catalog row's xmin; its row changes are counted apart, as
# "rows" (only this session's own transaction is counted).
# The schemas an unqualified name may resolve to, this session's temporary one included.
_SEARCHED = """(
      SELECT oid FROM pg_namespace
      WHERE (nspname = ANY (current_schemas(true)) AND nspname <> 'pg_catalog')
         OR oid = pg_my_temp_schema())"""
_RELATIONS = f"""
SELECT 'relation', c.oid::text, c.xmin::text, c.relname::text, c.oid::bigint,
       COALESCE(t.relname, c.relname)::text, c.relkind::text,
       (pg_stat_get_xact_tuples_inserted(c.oid) + pg_stat_get_xact_tuples_updated(c.oid)
        + pg_stat_get_xact_tuples_deleted(c.oid))::text
  FROM pg_class AS c
  LEFT JOIN pg_index AS i ON i.indexrelid = c.oid LEFT JOIN pg_class AS t ON t.oid = i.indrelid
  WHERE c.relnamespace IN {_SEARCHED}
"""
# The parts of those relations (looked up by their oids, through the catalogs' indexes),
# the functions and schemas, and the settings this session set (a SET stays for the
# statements after it; those the server's configuration gives change when another session
# has it reloaded, which is not the projection's doing).
_PARTS_OF = f"""
WITH relations AS (SELECT oid, relname FROM pg_class WHERE oid = ANY ($1::oid[]))
SELECT 'column', a.attrelid::text || '.' || a.attnum::text, a.xmin::text, a.attname::text,
       r.oid::bigint, r.relname::text, ''
  FROM pg_attribute AS a JOIN relations AS r ON r.oid = a.attrelid
  WHERE a.attrelid = ANY ($1::oid[]) AND a.attnum > 0
UNION ALL
SELECT 'default', d.oid::text, d.xmin::text, '', r.oid::bigint, r.relname::text, ''
  FROM pg_attrdef AS d JOIN relations AS r ON r.oid = d.adrelid
  WHERE d.adrelid = ANY ($1::oid[])
UNION ALL
SELECT 'constraint', o.oid::text, o.xmin::text, o.conname::text, r.oid::bigint,
       r.relname::text, COALESCE(f.relname::text, '')
  FROM pg_constraint AS o JOIN relations AS r ON r.oid = o.conrelid
  LEFT JOIN pg_class AS f ON f.oid = o.confrelid
  WHERE o.conrelid = ANY ($1::oid[])
UNION ALL
SELECT 'trigger', g.oid::text, g.xmin::text, g.tgname::text, r.oid::bigint, r.relname::text, ''
  FROM pg_trigger AS g JOIN relations AS r ON r.oid = g.tgrelid
  WHERE g.tgrelid = ANY ($1::oid[])
UNION ALL
SELECT 'rule', w.oid::text, w.xmin::text, w.rulename::text, r.oid::bigint, r.relname::text, ''
  FROM pg_rewrite AS w JOIN relations AS r ON r.oid = w.ev_class
  WHERE w.ev_class = ANY ($1::oid[])
UNION ALL
SELECT 'policy', p.oid::text, p.xmin::text, p.polname::text, r.oid::bigint, r.relname::text, ''
  FROM pg_policy AS p JOIN relations AS r ON r.oid = p.polrelid
  WHERE p.polrelid = ANY ($1::oid[])
UNION ALL
SELECT 'function', p.oid::text, p.xmin::text, p.proname::text, p.oid::bigint,
       p.proname::text, ''
  FROM pg_proc AS p
  WHERE p.pronamespace IN {_SEARCHED}
UNION ALL
SELECT 'schema', n.oid::text, n.xmin::text, n.nspname::text, n.oid::bigint, '', ''
  FROM pg_namespace AS n
  WHERE n.nspname NOT LIKE 'pg\\_temp\\_%' AND n.nspname NOT LIKE 'pg\\_toast%'
UNION ALL
SELECT 'setting', name, setting, name, 0, '', '' FROM pg_settings
  WHERE source IN ('session', 'client')
UNION ALL
SELECT 'setting', 'role', current_user::text, 'role', 0, '', ''
"""

# Locks this transaction holds that reading and writing rows never take: only a change of
# the relation or object (dropping it, or one of its triggers or columns) does.
_CHANGE_LOCKS = """
SELECT DISTINCT COALESCE(relation, objid)::bigint FROM pg_locks
WHERE pid = pg_backend_pid() AND granted AND locktype IN ('relation', 'object')
  AND mode NOT IN ('AccessShareLock', 'RowShareLock', 'RowExclusiveLock')
"""

_RELATION_KINDS = {
    "r": "table",
    "p": "table",
    "i": "index",
    "I": "index",
    "S": "sequence",
    "c": "composite type",
    "v": "view",
    "m": "materialized view",
    "f": "foreign table",
}
# Nothing drops them again (a rebuild or a forget drops the tables a projection lists).
_NEVER_OWN = {"v", "m", "f"}
_PARTS = {
    "column": "the columns of",
    "default": "the column defaults of",
    "constraint": "the constraints of",
    "trigger": "the triggers of",
    "rule": "a rule on",
    "policy": "a row security policy on",
}
# A foreign key makes triggers on the table it refers to: it is told before them.
_ORDER = [
    "setting",
    "schema",
    "relation",
    "constraint",
    "rule",
    "policy",
    "trigger",
    "default",
    "column",
]


@dataclass(frozen=True)
class _Row:
    kind: str
    key: str
    version: str
    name: str
    relation: int
    relation_name: str
    detail: str


@dataclass(frozen=True)
class Snapshot:
    """What :func:`overreach` compares with; take one with :func:`take_snapshot`."""

    rows: Mapping[tuple[str, str], _Row]


async def take_snapshot(fetch: Fetch) -> Snapshot:
    rows: list[_Row] = []
    for kind, key, version, name, oid, relation, detail, changed in await fetch(_RELATIONS, ()):
        rows.append(_Row(kind, key, version, name, int(oid), relation, detail))
        rows.append(_Row("rows", key, changed, name, int(oid), name, ""))
    oids = [int(row.key) for row in rows if row.kind == "relation"]
    parts = await fetch(_PARTS_OF, [oids])
    rows.extend(
        _Row(str(kind), str(key), str(version), str(name), int(oid), str(relation), str(detail))
        for kind, key, version, name, oid, relation, detail in parts
    )
    return Snapshot({(row.kind, row.key): row for row in rows})


async def overreach(fetch: Fetch, before: Snapshot, owns: Owns) -> str | None:
    """What this transaction changed since ``before`` that ``owns`` does not accept, worded
    as the SQLite authorizer's refusals are; None when nothing."""
    after = await take_snapshot(fetch)
    suspects: list[tuple[_Row | None, _Row | None, str]] = []
    for key in before.rows.keys() | after.rows.keys():
        old, new = before.rows.get(key), after.rows.get(key)
        if old is not None and new is not None and old.version == new.version:
            continue
        problem = _problem(old, new, owns)
        if problem is not None:
            suspects.append((old, new, problem))
    if not suspects:
        return None
    ours = await _ours(fetch, [(old, new) for old, new, _ in suspects])
    found = [
        (_rank(old, new), row.relation_name, row.name, problem)
        for old, new, problem in suspects
        if (row := new or old) is not None and ours(old, new)
    ]
    return min(found)[3] if found else None


def _rank(old: _Row | None, new: _Row | None) -> int:
    """A report order: what explains the rest first (a table dropped takes its columns); a
    table changed in place last, after the part of it that changed (a constraint added)."""
    row = new or old
    assert row is not None
    if row.kind == "relation" and old is not None and new is not None:
        return len(_ORDER)
    # Rows are counted by table, under its latest name: a table renamed is told first.
    return _ORDER.index(row.kind) if row.kind in _ORDER else len(_ORDER) + 1


def _problem(old: _Row | None, new: _Row | None, owns: Owns) -> str | None:
    """Why this change is not the projection's to make, or None when it is."""
    row = new or old
    assert row is not None
    kind = row.kind
    if kind == "rows":
        grew = new is not None and int(new.version) > int(old.version if old else 0)
        if grew and not owns(row.name):
            return f"changing rows of {row.name}, which is not its own"
        return None
    if kind == "setting":
        return (
            f"changing the setting {row.name} (it would stay for the statements after it, "
            "the runner's and other projections')"
        )
    if kind == "schema":
        doing = "creating" if old is None else "dropping" if new is None else "changing"
        return f"{doing} the schema {row.name} (only its own tables may change)"
    if kind == "function":
        if owns(row.name) and (old is None or owns(old.name)):
            return None
        doing = "creating" if old is None else "dropping" if new is None else "changing"
        return f"{doing} the function {row.name}, which is not its own"
    if kind == "relation":
        return _relation_problem(old, new, owns)
    if kind == "constraint" and new is not None and new.detail and not owns(new.detail):
        return f"a foreign key of {new.relation_name} refers to {new.detail}, not its own"
    if owns(row.relation_name):
        return None
    return f"changing {_PARTS.get(kind, 'the definition of')} {row.relation_name}, not its own"


def _relation_problem(old: _Row | None, new: _Row | None, owns: Owns) -> str | None:
    row = new or old
    assert row is not None
    what = _RELATION_KINDS.get(row.detail, "relation")
    if new is not None and new.detail in _NEVER_OWN:
        return f"a {what} ({new.name}): nothing would drop it again, only its own tables"
    if row.detail in ("i", "I"):
        if not owns(row.relation_name):
            return f"changing an index of {row.relation_name}, not its own"
        names = {row.name for row in (old, new) if row is not None}
        foreign = sorted(name for name in names if not owns(name))
        if foreign:
            return f"an index named {foreign[0]}, which is not its own"
        return None
    if old is not None and new is not None and owns(old.name) and not owns(new.name):
        return f"renaming the {what} {old.name} to {new.name}, which is not its own"
    if owns(row.name):
        return None
    doing = "creating" if old is None else "dropping" if new is None else "changing"
    return f"{doing} the {what} {row.name}, which is not its own"


async def _ours(
    fetch: Fetch, changes: Iterable[tuple[_Row | None, _Row | None]]
) -> Callable[[_Row | None, _Row | None], bool]:
    """Whether a change is this transaction's: rows and settings are this session's own; a
    row written is this transaction's when its ``xmin`` is still in progress (another's
    uncommitted rows are never seen), a row gone when this transaction holds a lock on its
    object that only a change takes."""
    written = {
        new.version
        for old, new in changes
        if new is not None and new.kind not in ("rows", "setting")
    }
    in_progress = await _in_progress(fetch, written) if written else set()
    gone = any(new is None for _, new in changes)
    locked = {int(row[0]) for row in await fetch(_CHANGE_LOCKS, ())} if gone else set()

    def ours(old: _Row | None, new: _Row | None) -> bool:
        row = new or old
        assert row is not None
        if row.kind in ("rows", "setting"):
            return True  # counted and set by this session alone
        if new is not None:
            return new.version in in_progress
        return row.relation in locked or int(row.key.split(".")[0]) in locked

    return ours


async def _in_progress(fetch: Fetch, xmins: Iterable[str]) -> set[str]:
    """Those of ``xmins`` (32-bit transaction ids) that are this transaction's own.

    Its subtransactions' ids all follow its top-level id, which it has: it wrote before
    ``apply`` (the checkpoints). A 32-bit id is placed in that id's epoch to ask for its
    status; one that would precede it is older, not this transaction's.
    """
    top = int((await fetch("SELECT pg_current_xact_id()::text", ()))[0][0])
    full: dict[str, int] = {}
    for xmin in xmins:
        ahead = (int(xmin) - top) % 2**32
        if ahead < 2**31:
            full[xmin] = top + ahead
    if not full:
        return set()
    listed = ", ".join(f"({value})" for value in full.values())
    rows = await fetch(
        "SELECT x::text FROM (VALUES "
        + listed
        + ") AS t (x) WHERE pg_xact_status(x::text::xid8) = 'in progress'",
        (),
    )
    mine = {int(row[0]) for row in rows}
    return {xmin for xmin, value in full.items() if value in mine}
