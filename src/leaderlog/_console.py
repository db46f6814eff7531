"""The ``leaderlog`` program's entry point, which loads the command line only once Ctrl-C
can be answered: pressed while the program loads, it ends as a Ctrl-C during a command
does, not with a traceback of whichever import it landed in."""

from __future__ import annotations

import sys

__all__ = ["INTERRUPTED_STATUS", "console_main"]

# What a shell reports for a command stopped by Ctrl-C (128 + SIGINT).
INTERRUPTED_STATUS = 130


def console_main() -> None:
    try:
        from leaderlog.cli import console_main as run_command
    except KeyboardInterrupt:
        # Nothing was read or written yet.
        sys.stderr.write("interrupted\n")
        sys.exit(INTERRUPTED_STATUS)
    run_command()
