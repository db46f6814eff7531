"""scripts/lowest_constraints.py: the pins scripts/test-lowest installs the oldest releases with."""

from __future__ import annotations

import runpy
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "lowest_constraints.py"
PYPROJECT = SCRIPT.parents[1] / "pyproject.toml"

# Loaded from its file, as scripts/test-lowest runs it: scripts/ is no package.
_LOADED = runpy.run_path(str(SCRIPT))
lowest_constraints = _LOADED["lowest_constraints"]
NoLowerBound = _LOADED["NoLowerBound"]


def _pyproject(tmp_path: Path, dependencies: list[str], dev: list[str]) -> Path:
    listed = ", ".join(f'"{d}"' for d in dependencies)
    extra = ", ".join(f'"{d}"' for d in dev)
    written = tmp_path / "pyproject.toml"
    written.write_text(
        f'[project]\nname = "x"\ndependencies = [{listed}]\n'
        f"[project.optional-dependencies]\ndev = [{extra}]\n",
        encoding="utf-8",
    )
    return written


def test_every_dependency_of_the_project_and_its_dev_extras_is_pinned_to_its_lower_bound() -> None:
    # given the project's own pyproject.toml
    with PYPROJECT.open("rb") as handle:
        project = tomllib.load(handle)["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    # when the script prints its constraints
    printed = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, check=True
    )
    # then there is one pin for each requirement, at the version after its ">="
    pins = printed.stdout.splitlines()
    assert len(pins) == len(declared)
    for requirement, pin in zip(declared, pins, strict=True):
        name, version = pin.split("==")
        assert requirement.startswith(f"{name}>={version}"), (requirement, pin)


def test_an_upper_bound_alongside_the_lower_one_pins_the_lower(tmp_path: Path) -> None:
    # given requirements bounded on both sides
    pyproject = _pyproject(tmp_path, ["pydantic>=2.9,<3"], ["ruff>=0.17.6,<0.18"])
    # when constraints are made from them
    made = lowest_constraints(pyproject)
    # then each pins its lower bound
    assert made == ["pydantic==2.9", "ruff==0.17.6"]


@pytest.mark.parametrize("requirement", ["uvicorn", "pydantic<3", "orjson==3.12", "rich>14"])
def test_a_requirement_with_no_lower_bound_is_refused_by_name(
    tmp_path: Path, requirement: str
) -> None:
    # given a requirement whose oldest release cannot be read off it
    pyproject = _pyproject(tmp_path, ["babel>=2.15", requirement], [])
    # when constraints are made from it, then it is refused by name
    with pytest.raises(NoLowerBound) as refused:
        lowest_constraints(pyproject)
    assert str(refused.value) == (
        f"pyproject.toml: {requirement!r} has no lower bound written as name>=version"
    )
