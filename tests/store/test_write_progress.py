"""What a store's write progress reports, step by step (WriteProgressReporter)."""

from __future__ import annotations

from leaderlog.store import AppendResult, PendingBatch
from leaderlog.store.base import WriteProgressReporter

from .contract import event


def test_the_last_step_of_a_write_is_reported_only_once_it_is_committed() -> None:
    # Rule: a progress bar never shows a group written whole before its commit: inserting
    # every row takes it to one step short of the end, finished() after the commit to the end.
    # given a reporter for a group of two events (four steps)
    reports: list[tuple[int, int]] = []
    batches = [PendingBatch([event("a"), event("b")], {}, "t")]
    reporter = WriteProgressReporter(lambda done, total: reports.append((done, total)), batches)

    # when every row is laid out and inserted
    reporter.planned(2)
    reporter.inserted(2, 2)

    # then the last step is still to come
    assert reports[-1] == (3, 4)

    # and once the group is committed, it is reported
    reporter.finished([AppendResult((1, 2), 2)])
    assert reports[-1] == (4, 4)
    assert [done for done, _ in reports] == sorted({done for done, _ in reports})
