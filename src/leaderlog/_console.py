"""The ``leaderlog`` program's entry point, which loads the command line only once Ctrl-C
can be answered: pressed while the program loads, it ends as a Ctrl-C during a command
does, not with a traceback of whichever import it landed in."""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Any

__all__ = ["INTERRUPTED_STATUS", "console_main"]

# What a shell reports for a command stopped by Ctrl-C (128 + SIGINT).
INTERRUPTED_STATUS = 130


def console_main() -> None:
    pressed: list[bool] = []

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        # Noted as well as raised: a library's C code run while it is imported (lxml's)
        # can clear the KeyboardInterrupt, and the command then ran on as if not pressed.
        pressed.append(True)
        raise KeyboardInterrupt

    def unraisable(error: Any) -> None:
        # Raised where it cannot go on (an import lock's callback): already noted.
        if not isinstance(error.exc_value, KeyboardInterrupt):
            hook(error)

    hook = sys.unraisablehook
    sys.unraisablehook = unraisable
    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        from leaderlog.cli import console_main as run_command
    except KeyboardInterrupt:
        pressed.append(True)
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = hook
    if pressed:
        # Nothing was read or written yet.
        sys.stderr.write("interrupted\n")
        sys.exit(INTERRUPTED_STATUS)
    run_command()
