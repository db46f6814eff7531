"""Print pip constraints pinning every dependency in pyproject.toml to its lower bound.

scripts/test-lowest installs with them, so the bounds the project declares are the releases
its suite has passed with, not releases it was never tried on.

    python scripts/lowest_constraints.py > constraints.txt
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

# "name>=1.2" or "name>=1.2,<2": the lower bound is what gets pinned; extras and markers
# would need more than this reads, and none is declared.
_LOWER_BOUND = re.compile(
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]*)\s*>=\s*(?P<version>[0-9][0-9A-Za-z.]*)\s*(?:,\s*<[^,;\[\]]+)?"
)


class NoLowerBound(ValueError):
    """A requirement pins nothing to test against: it says no "name>=version"."""


def lowest_constraints(pyproject: Path = PYPROJECT) -> list[str]:
    with pyproject.open("rb") as handle:
        project = tomllib.load(handle)["project"]
    wanted = [*project["dependencies"]]
    for extra in project.get("optional-dependencies", {}).values():
        wanted.extend(extra)
    pinned = []
    for requirement in wanted:
        found = _LOWER_BOUND.fullmatch(requirement.strip())
        if found is None:
            raise NoLowerBound(
                f"{pyproject.name}: {requirement!r} has no lower bound written as name>=version"
            )
        pinned.append(f"{found['name']}=={found['version']}")
    return pinned


def main() -> int:
    try:
        print("\n".join(lowest_constraints()))
    except NoLowerBound as refused:
        print(refused, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
