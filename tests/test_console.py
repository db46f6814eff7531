"""The ``leaderlog`` program's entry point: Ctrl-C while it loads ends it as Ctrl-C during a
command does (status 130, "interrupted"), not with a traceback of whichever import it hit."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import leaderlog


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_entry_point_loads_nothing_heavy_before_it_can_answer_ctrl_c() -> None:
    # when the program's script imports its entry point
    found = _python(
        """
        import sys
        from leaderlog._console import console_main
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("leaderlog", "pydantic")))
        """
    )
    # then only the package and the entry point are loaded: Ctrl-C can land nowhere else
    assert found.stdout.strip() == "['leaderlog', 'leaderlog._console']", found.stderr


def test_ctrl_c_while_the_command_line_loads_says_interrupted_and_exits_130() -> None:
    # given a Ctrl-C that lands while the command line's modules load
    interrupted = _python(
        """
        import sys

        class CtrlC:
            def find_spec(self, name, path=None, target=None):
                if name == "leaderlog.cli._app":
                    raise KeyboardInterrupt
                return None

        sys.meta_path.insert(0, CtrlC())
        sys.argv = ["leaderlog", "--help"]
        from leaderlog._console import console_main
        console_main()
        """
    )
    # then the program says so in the commands' words, without a traceback
    assert interrupted.returncode == 130
    assert interrupted.stderr == "interrupted\n"
    assert interrupted.stdout == ""


def test_the_entry_point_runs_the_command_line() -> None:
    ran = _python(
        """
        import sys
        sys.argv = ["leaderlog", "--version"]
        from leaderlog._console import console_main
        console_main()
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert "leaderlog" in ran.stdout


def test_public_names_are_found_on_first_use_and_made_up_ones_are_not() -> None:
    from leaderlog.errors import StoreError
    from leaderlog.log import EventLog

    assert leaderlog.EventLog is EventLog
    assert leaderlog.StoreError is StoreError
    assert set(leaderlog.__all__) <= set(dir(leaderlog))
    with pytest.raises(AttributeError, match="no attribute 'EventLogg'"):
        leaderlog.EventLogg  # type: ignore[attr-defined]  # noqa: B018


def test_python_dash_m_leaderlog_runs_the_command_line() -> None:
    # where the leaderlog script is not on PATH, the module runs the same commands
    ran = subprocess.run(
        [sys.executable, "-m", "leaderlog", "schema"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert '"claim.reported"' in ran.stdout
