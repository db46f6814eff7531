"""Warnings the PostgreSQL driver logs while a command runs are said as the command's own.

asyncpg's pool logs "Failed to restore the pool connection floor; retrying: ..." when the
server restarts under a running command. With no handler of ours, Python printed it bare on
stderr (only ``serve`` prefixed it), so an import that succeeded all the same looked broken.
"""

from __future__ import annotations

import logging

import pytest

from leaderlog.cli._app import logged_on_stderr, run


async def _pool_warns() -> str:
    logging.getLogger("asyncpg.pool").warning("Failed to restore the pool connection floor")
    return "done"


def test_a_driver_warning_during_a_command_is_prefixed_as_the_command_s_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # given a command running its work through run()
    # when the driver logs a warning meanwhile
    assert run(_pool_warns) == "done"
    # then it is said once, as a warning of the command's own
    assert capsys.readouterr().err == "warning: Failed to restore the pool connection floor\n"


def test_a_command_run_inside_a_server_s_logging_says_a_driver_warning_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # given the server's own routing of the driver's warnings, around a run()
    with logged_on_stderr("asyncpg"):
        # when the driver warns during the run
        run(_pool_warns)
    # then the warning is not said twice
    assert capsys.readouterr().err == "warning: Failed to restore the pool connection floor\n"
