"""The cyclic garbage collector held back while a replay or a large answer is worked out.

Both allocate millions of short-lived containers that reference counting frees, while
what they keep grows: the collector's full passes over an ever larger heap then cost more
than the work itself (a 5,000-post history spent 13 of its 38 s in them).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["BULK", "few_collections"]

# A replay of fewer events than this leaves the collector as it is.
BULK = 20_000

# How many works of this process hold the collector back now, and its settings before.
_holding = 0
_saved_thresholds = gc.get_threshold()


@contextmanager
def few_collections(items: int, bulk: int = BULK) -> Iterator[None]:
    """Run work of ``items`` with the collector mostly out of the way, when there are
    ``bulk`` or more.

    Objects alive when the first such work starts are frozen out of its way, and it runs
    far less often, until the last concurrent one of the process ends.
    """
    global _holding, _saved_thresholds
    if items < bulk:
        yield
        return
    if _holding == 0:
        _saved_thresholds = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(max(_saved_thresholds[0], 100_000), *_saved_thresholds[1:])
    _holding += 1
    try:
        yield
    finally:
        _holding -= 1
        if _holding == 0:
            # What the work made and kept goes to the oldest generation with what was frozen
            # before: left young, the first pass under the usual thresholds, due at once,
            # would go over all of it (half a second for a large answer), holding the
            # interpreter lock and so the event loop. The oldest generation's full passes
            # still find any cycles among it.
            gc.freeze()
            gc.set_threshold(*_saved_thresholds)
            gc.unfreeze()
