"""The progress bars on a narrow terminal: what gives way, and what does not."""

from __future__ import annotations

import io
import re

import pytest

from leaderlog.cli import _terminal
from leaderlog.cli._app import reported
from tests.cli.terminal import drawn_on_a_terminal


def _lines(screen: io.StringIO) -> list[str]:
    drawn = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())
    return [line.rstrip() for line in re.split(r"[\r\n]", drawn) if line.strip()]


@pytest.mark.parametrize(
    ("width", "completed", "total"), [(40, 500_000, 1_000_000), (35, 20_000, 500_000)]
)
def test_a_count_bar_keeps_its_whole_count_on_a_narrow_terminal(
    monkeypatch: pytest.MonkeyPatch, width: int, completed: int, total: int
) -> None:
    # given a terminal of 35-40 columns, a phone's or a split pane's
    screen = drawn_on_a_terminal(monkeypatch, width)
    # when a rebuild of a large log draws its bar
    bar = _terminal.progress_bar("rebuilding leadership, audit, feed_entries")
    bar.add_task("rebuilding", total=total, completed=completed)
    bar.start()
    bar.refresh()
    bar.stop()
    # then the count is whole (the time left gives way), not "500000/10000…"
    assert any(f"{completed}/{total} events" in line for line in _lines(screen)), _lines(screen)


def test_an_import_s_bars_keep_their_count_on_one_line_of_a_narrow_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a terminal of 40 columns
    screen = drawn_on_a_terminal(monkeypatch, 40)
    # when an import of a large file draws its bars: bytes read, then its stages
    with _terminal.bytes_bar("reading", total=450_000_000, completed=0) as advance:
        advance(12_000_000)
    with _terminal.stage_bars(
        {"checking": "checking rules", "writing": "writing"}, total=200, instead=""
    ) as stage:
        assert stage is not None
        stage("checking", 200, 200)
        stage("writing", 100, 200)
    # then each line holds its whole count, rather than "12.0/450.0" above a line "MB"
    lines = _lines(screen)
    assert any("reading" in line and "12.0/450.0 MB" in line for line in lines), lines
    assert not any(line.strip() == "MB" for line in lines), lines
    assert any("checking rules" in line and "100%" in line for line in lines), lines
    assert any("writing" in line and "50%" in line for line in lines), lines


@pytest.mark.parametrize("width", [40, 65])
def test_bars_labelled_per_task_cut_the_label_as_drawn_on_a_narrow_terminal(
    monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    # given a terminal narrower than 66 columns
    screen = drawn_on_a_terminal(monkeypatch, width)
    # when a bar labelled per task (verify's, serve's catch-up, history --org's) is drawn
    with _terminal.bars("events", 10) as show:
        show("updating leadership, audit, feed_entries", 20_000, 500_000)
    # then its label is cut and its count whole, rather than a ValueError from the label's
    # "{task.description}" format cut to "{task.d..."
    lines = _lines(screen)
    assert any(
        line.startswith("updatin") and "... " in line and "20000/500000 events" in line
        for line in lines
    ), lines


def test_a_bar_a_ctrl_c_left_drawing_is_put_away_before_the_last_words(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    screen = drawn_on_a_terminal(monkeypatch, 80)
    # given a bar started whose `with` never armed its exit (Ctrl-C pressed as it was entered)
    _terminal.bytes_bar("reading", total=100, completed=0).__enter__()
    # when the command says it was interrupted
    with pytest.raises(SystemExit) as ended, reported("nothing was written"):
        raise KeyboardInterrupt
    # then the bar is stopped first: the words go to stderr itself, not through the bar,
    # which would draw itself again under them (and later hand back a closed stdout)
    assert ended.value.code == 130
    assert "interrupted: nothing was written" in capsys.readouterr().err
    assert "interrupted" not in screen.getvalue()
    assert not any(progress.live.is_started for progress in _terminal._BARS)
