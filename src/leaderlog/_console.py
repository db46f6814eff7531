"""The ``leaderlog`` program's entry point, which loads the command line only once Ctrl-C
can be answered: pressed while the program loads, it ends as a Ctrl-C during a command
does, not with a traceback of whichever import it landed in."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["INTERRUPTED_STATUS", "console_main", "dropping_ctrl_c"]

# What a shell reports for a command stopped by Ctrl-C (128 + SIGINT).
INTERRUPTED_STATUS = 130


def console_main() -> None:
    pressed: list[bool] = []

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        # Noted as well as raised: a library's C code run while it is imported (lxml's)
        # can clear the KeyboardInterrupt, and the command then ran on as if not pressed.
        pressed.append(True)
        raise KeyboardInterrupt

    # Raised where it cannot go on (an import lock's callback): already noted.
    hook = sys.unraisablehook
    sys.unraisablehook = dropping_ctrl_c(hook)
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


def dropping_ctrl_c(hook: Callable[[Any], object]) -> Callable[[Any], None]:
    """``hook`` for what Python cannot raise (in a finalizer, a callback), but Ctrl-C: where
    it is dropped, the handler that raised it has noted it, and printed as "Exception
    ignored" it would stand under the command's own "interrupted"."""

    def unraisable(error: Any) -> None:
        if not isinstance(error.exc_value, KeyboardInterrupt):
            hook(error)

    return unraisable
