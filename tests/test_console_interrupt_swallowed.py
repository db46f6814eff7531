"""Ctrl-C pressed while the command line loads ends the program, even when a library's
import clears the KeyboardInterrupt it raised (lxml's C code did, and the command ran on)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_PROGRAM = textwrap.dedent(
    """
    import importlib.abc, importlib.machinery, os, signal, sys, types

    class SwallowingLoader(importlib.abc.Loader):
        def create_module(self, spec):
            return None

        def exec_module(self, module):
            try:
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while it loads...
                sum(range(1000))  # (delivered here)
            except BaseException:
                pass  # ...cleared by the library's own code
            module.console_main = lambda: print("the command ran")

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "leaderlog.cli":
                return importlib.machinery.ModuleSpec(name, SwallowingLoader())
            return None

    sys.meta_path.insert(0, Finder())
    from leaderlog._console import console_main
    console_main()
    """
)


def test_given_ctrl_c_cleared_by_an_import_when_the_program_loads_then_it_stops() -> None:
    # Given / When: Ctrl-C lands in an import that swallows the KeyboardInterrupt.
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM], capture_output=True, text=True, timeout=60
    )
    # Then: the command does not run; the program says so and ends as Ctrl-C does.
    assert "the command ran" not in done.stdout
    assert done.stderr == "interrupted\n"
    assert done.returncode == 130
