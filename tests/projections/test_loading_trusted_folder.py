"""The implicit ``./projections`` folder is only imported from when nobody else could have
written to it: query commands import a module for every user projection the database names,
from the folder they are run in, so a folder another user made (``/tmp/projections``) or may
write to would run that user's code in whoever runs ``leaderlog state`` there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from leaderlog.errors import ProjectionError
from leaderlog.projections import BUILTIN, load_user_projection
from tests.conftest import SEEDS, invoke, ok

_MARKER = "imported.txt"


def _probe_module(folder: Path) -> Path:
    """A user projection named ``probe`` that leaves a file next to its folder when imported."""
    folder.mkdir(exist_ok=True)
    module = folder / "probe.py"
    marker = folder.parent / _MARKER
    module.write_text(
        "from pathlib import Path\n"
        "from leaderlog.projections import Projection\n"
        f"Path({str(marker)!r}).write_text('imported')\n"
        "class P(Projection):\n    name = 'probe'\n    version = 1\n"
        "    def schema(self): return ()\n"
        "    def tables(self): return ()\n"
        "    async def apply(self, tx, events): pass\n"
        "PROJECTION = P\n",
        encoding="utf-8",
    )
    module.chmod(0o644)
    folder.chmod(0o755)
    return module


@pytest.fixture
def built_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A seeded log in which ``probe`` was built from ``./projections`` (the implicit
    folder), run from ``tmp_path``; the marker it left is removed."""
    monkeypatch.delenv("LEADERLOG_PROJECTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'log.db'}"
    ok(invoke(url, "import", *(str(path) for path in sorted(SEEDS.glob("*.jsonl")))))
    _probe_module(tmp_path / "projections")
    ok(invoke(url, "rebuild", "probe"))
    marker = tmp_path / _MARKER
    assert marker.exists()
    marker.unlink()
    return url, tmp_path / "projections"


def test_a_trusted_implicit_folder_is_imported_as_before(built_probe: tuple[str, Path]) -> None:
    url, folder = built_probe
    ok(invoke(url, "state"))
    assert (folder.parent / _MARKER).exists()


def test_a_folder_anyone_may_write_to_is_not_imported(built_probe: tuple[str, Path]) -> None:
    url, folder = built_probe
    folder.chmod(0o777)
    result = invoke(url, "state")
    assert result.exit_code == 0, result.output + result.stderr
    assert not (folder.parent / _MARKER).exists()
    assert "projection probe could not be loaded" in result.stderr
    assert "every user may write to" in result.stderr
    assert "LEADERLOG_PROJECTIONS" in result.stderr


def test_a_module_anyone_may_write_to_is_not_imported(built_probe: tuple[str, Path]) -> None:
    url, folder = built_probe
    (folder / "probe.py").chmod(0o666)
    result = invoke(url, "audit", "--limit", "1")
    assert result.exit_code == 0, result.output + result.stderr
    assert not (folder.parent / _MARKER).exists()
    assert "every user may write to" in result.stderr


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root"
)
def test_a_folder_another_user_made_is_not_imported(built_probe: tuple[str, Path]) -> None:
    url, folder = built_probe
    # as someone else's /tmp/projections would be
    for path in (folder, folder / "probe.py"):
        os.chown(path, 4242, 4242)
    result = invoke(url, "state")
    assert result.exit_code == 0, result.output + result.stderr
    assert not (folder.parent / _MARKER).exists()
    assert "belongs to another user (uid 4242)" in result.stderr


def test_a_folder_named_in_the_environment_is_the_user_s_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "shared"
    _probe_module(folder)
    folder.chmod(0o777)
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(folder))
    assert load_user_projection("probe", builtin=BUILTIN).name == "probe"
    # and so is a folder a program names
    monkeypatch.delenv("LEADERLOG_PROJECTIONS")
    assert load_user_projection("probe", folder, builtin=BUILTIN).name == "probe"


def _implicit_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The probe module in ./projections, the folder used when none is named, run from
    ``tmp_path``."""
    monkeypatch.delenv("LEADERLOG_PROJECTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    return _probe_module(tmp_path / "projections")


def test_the_implicit_folder_is_checked_by_the_library_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _implicit_probe(tmp_path, monkeypatch)
    (tmp_path / "projections").chmod(0o777)
    with pytest.raises(ProjectionError, match="every user may write to"):
        load_user_projection("probe", builtin=BUILTIN)
    assert not (tmp_path / _MARKER).exists()


def test_a_folder_and_module_its_group_may_write_to_are_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the implicit ./projections made under umask 002: writable by its group, not by all
    module = _implicit_probe(tmp_path, monkeypatch)
    module.chmod(0o664)
    module.parent.chmod(0o775)
    # when it is loaded, then it is imported
    assert load_user_projection("probe", builtin=BUILTIN).name == "probe"
    assert (tmp_path / _MARKER).exists()


def test_a_module_every_user_may_write_to_is_refused_whatever_its_group_may_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a module of the implicit folder writable by every user, though not by its group
    module = _implicit_probe(tmp_path, monkeypatch)
    module.chmod(0o646)
    # when it is loaded, then it is refused before it is imported
    with pytest.raises(ProjectionError, match="every user may write to it"):
        load_user_projection("probe", builtin=BUILTIN)
    assert not (tmp_path / _MARKER).exists()


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="files owned by root need root"
)
def test_a_folder_and_module_root_owns_are_imported_by_another_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the implicit ./projections owned by root, writable by root alone
    _implicit_probe(tmp_path, monkeypatch)
    # when another user loads it
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    # then it is imported: root could change anything of that user's anyway
    assert load_user_projection("probe", builtin=BUILTIN).name == "probe"
    assert (tmp_path / _MARKER).exists()
