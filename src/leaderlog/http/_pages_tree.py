"""The organisations as the HTML pages list them: in tree order, level by level.

Worked out once per :class:`~leaderlog.feeds.Directory` (every organisation and post the
feeds know), so that a page over a tree of a hundred thousand organisations finds the level
it lists, and how much lies below each organisation, without going through them all again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from leaderlog.feeds import Directory

__all__ = ["Entity", "Tree", "page_count", "tree_of"]

Entity = tuple[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Tree:
    # Every organisation, each followed by its subtree: ordered by path from the root.
    orgs: list[Entity]
    # Each post's labels in the languages offered.
    post_labels: dict[str, Any]
    # Organisations under no known organisation, in tree order.
    top: list[Entity]
    # Each organisation's direct sub-organisations, in tree order.
    children: dict[str, list[Entity]]
    # Each organisation's own posts (not its sub-organisations'), by id.
    own_posts: dict[str, list[Entity]]
    # Posts in each organisation's subtree, its own included.
    posts_below: dict[str, int]
    # Where each organisation stands in ``orgs``, and how many its subtree holds (itself
    # included): the subtree is the run of ``orgs`` from there.
    positions: dict[str, int]
    sizes: dict[str, int]

    def subtree(self, org: str) -> list[Entity]:
        """``org`` and every organisation below it, in tree order; none if it is unknown."""
        if org not in self.positions:
            return []
        start = self.positions[org]
        return self.orgs[start : start + self.sizes[org]]


def tree_of(directory: Directory) -> Tree:
    """The organisations of ``directory`` as the pages list them."""
    paths = {org_id: tuple(doc.get("path") or (org_id,)) for org_id, doc in directory.kinds["org"]}
    orgs = sorted(directory.kinds["org"], key=lambda item: paths[item[0]])
    top: list[Entity] = []
    children: dict[str, list[Entity]] = defaultdict(list)
    sizes: dict[str, int] = defaultdict(int)
    for org_id, doc in orgs:
        path = paths[org_id]
        # An organisation whose parent is not (or no longer) known heads a tree of its own.
        if len(path) > 1 and path[-2] in paths:
            children[path[-2]].append((org_id, doc))
        else:
            top.append((org_id, doc))
        for ancestor in path:
            sizes[ancestor] += 1
    own_posts: dict[str, list[Entity]] = defaultdict(list)
    posts_below: dict[str, int] = defaultdict(int)
    for post_id, doc in sorted(directory.kinds["post"], key=lambda item: item[0]):
        org = doc.get("org")
        if org not in paths:
            continue
        own_posts[org].append((post_id, doc))
        for ancestor in paths[org]:
            posts_below[ancestor] += 1
    return Tree(
        orgs=orgs,
        post_labels={post_id: doc.get("labels") or {} for post_id, doc in directory.kinds["post"]},
        top=top,
        children=dict(children),
        own_posts=dict(own_posts),
        posts_below=dict(posts_below),
        positions={org_id: index for index, (org_id, _) in enumerate(orgs)},
        sizes=dict(sizes),
    )


def page_count(items: Sequence[Any] | int, per_page: int) -> int:
    """How many pages of ``per_page`` the items fill; one when there are none."""
    count = items if isinstance(items, int) else len(items)
    return max(1, -(-count // per_page))
