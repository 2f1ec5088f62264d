"""The progress board: what a long step draws, what a short one does not, and where notes go."""
from __future__ import annotations

import io
import threading
import time

import pytest

from tunegate import progress
from tunegate.progress.draw import LinePainter, visible


@pytest.fixture
def screen(monkeypatch):
    """A board drawing into a buffer 200 columns wide, with no delay unless a test sets one."""
    monkeypatch.setenv("COLUMNS", "200")  # lines are cut to the terminal's width
    stream = io.StringIO()
    yield stream
    progress.disable()


def _board(stream: io.StringIO, delay_s: float = 0.0) -> None:
    progress.enable(stream, delay_s=delay_s, painter=LinePainter(stream))


def test_a_step_shorter_than_the_delay_draws_nothing(screen):
    _board(screen, delay_s=1.0)
    with progress.step("reading train.jsonl", total=100, unit="bytes"):
        time.sleep(0.3)
    assert screen.getvalue() == ""


def test_a_long_step_is_drawn_with_its_label_and_share_then_erased(screen):
    _board(screen)
    with progress.step("near duplicates", total=200, unit="records") as s:
        s.advance(50, note="indexing validation.jsonl")
        time.sleep(0.35)
    drawn = screen.getvalue()
    line = visible(drawn).split("\r")[-2]  # the last frame before the erase
    assert line.startswith(("⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"))
    assert "near duplicates  ━━━━━━──────────────────   25%  50/200 records  indexing validation.jsonl" in line
    assert drawn.endswith("\r\x1b[J")  # the board is erased when the last step ends


def test_a_poll_is_read_while_the_step_blocks(screen):
    _board(screen)
    position = {"bytes": 3 << 20}
    with progress.step("reading train.jsonl", total=6 << 20, unit="bytes", poll=lambda: position["bytes"]):
        time.sleep(0.35)
    assert "   50%  3.0 MB/6.0 MB  " in visible(screen.getvalue())


def test_a_note_goes_to_the_innermost_step_of_its_own_thread(screen):
    _board(screen, delay_s=60)  # nothing drawn: this is about bookkeeping
    with progress.step("mini-run") as outer, progress.step("inner") as inner:
        other = threading.Thread(target=progress.note, args=("from another thread",))
        other.start()
        other.join()
        progress.note("step 1/4 loss 6.6396", advance=1)
    assert (inner.text, inner.done) == ("step 1/4 loss 6.6396", 1)
    assert (outer.text, outer.done) == ("", 0)


def test_with_progress_off_steps_and_notes_leave_no_trace(screen):
    progress.disable()
    with progress.step("reading train.jsonl", total=10) as s:
        progress.note("ignored", advance=5)
    assert (s.text, s.done, progress.enabled()) == ("", 0, False)
    assert screen.getvalue() == ""


def test_a_child_relays_each_new_note_as_one_marked_line_and_nothing_else(monkeypatch):
    from tunegate.progress import board

    out = io.StringIO()
    monkeypatch.setattr(board, "_relay", [])
    progress.relay(out)
    for text in ("loading the model", "step 1/4 loss 6.64", "step 1/4 loss 6.64", "step 2/4 loss 6.63"):
        progress.note(text)
    assert out.getvalue().splitlines() == [f"{progress.RELAYED}loading the model",
                                           f"{progress.RELAYED}step 1/4 loss 6.64",
                                           f"{progress.RELAYED}step 2/4 loss 6.63"]


def test_a_child_that_stops_relaying_writes_no_more_notes(monkeypatch):
    from tunegate.progress import board

    out = io.StringIO()
    monkeypatch.setattr(board, "_relay", [])
    progress.relay(out)
    progress.note("step 4/4 loss 6.61")  # the mini-run's last note
    progress.relay(None)  # its training starts in the same process
    progress.note("step 1/12 loss 6.60")
    assert out.getvalue().splitlines() == [f"{progress.RELAYED}step 4/4 loss 6.61"]


def test_a_relayed_line_becomes_the_parents_note_and_other_output_is_left_alone(screen):
    _board(screen)
    with progress.step("mini-run") as s:
        assert progress.relayed(f"{progress.RELAYED}step 2/4 loss 6.63\n")
        assert not progress.relayed("UserWarning: something the child printed\n")
        assert s.text == "step 2/4 loss 6.63"
