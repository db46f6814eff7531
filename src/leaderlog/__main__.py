"""``python -m leaderlog``: the command line, where the ``leaderlog`` script is not on PATH."""

from __future__ import annotations

from leaderlog._console import console_main

if __name__ == "__main__":
    console_main()
