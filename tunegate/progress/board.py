"""The progress board: the steps running now, drawn on one stream by one background thread.

Why a thread of our own: a step that blocks (a model loading, Prefect's API starting) must still
tick, and a reader's position is read by polling (`poll`), so the hot loops it follows pay
nothing per record. How a frame looks is `tunegate.progress.draw`'s.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

# Steps shorter than this never show: a fast command prints its report and nothing else.
# TUNEGATE_PROGRESS_DELAY_S overrides it; 0 draws every step as it starts (tests, screen recordings).
DELAY_S = 1.0
REFRESH_S = 0.1  # ten redraws a second: smooth enough, and under 1% of one core

# A child process's note as one line of the output its parent reads (`relay`, `relayed`).
RELAYED = "tunegate-progress: "

_board: _Board | None = None
_local = threading.local()
_relay: list[Any] = []  # [stream, last note written] in a child that relays its notes


class Step:
    """One long step: a label, how far it is (`done` of `total` `unit`), and a short note."""

    def __init__(self, label: str, total: float | None, unit: str, poll: Callable[[], float] | None):
        self.label, self.total, self.unit, self.poll = label, total, unit, poll
        self.done: float = 0
        self.text = ""
        self.started = time.monotonic()

    def advance(self, n: float = 1, note: str | None = None) -> None:
        self.done += n
        if note is not None:
            self.text = note

    def update(self, done: float | None = None, total: float | None = None, note: str | None = None) -> None:
        if done is not None:
            self.done = done
        if total is not None:
            self.total = total
        if note is not None:
            self.text = note

    def position(self) -> float:
        """How far the step is: what `poll` says now, else what it was told."""
        if self.poll is not None:
            try:
                self.done = self.poll()
            except (OSError, ValueError):  # the file closed between two polls: keep the last value
                pass
        return self.done

    def __enter__(self) -> Step:
        if _board is not None:
            _board.add(self)
            _stack().append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if _board is not None:
            _board.remove(self)
            stack = _stack()
            if stack and stack[-1] is self:
                stack.pop()


def step(label: str, total: float | None = None, unit: str = "", poll: Callable[[], float] | None = None) -> Step:
    """A step to use as a context manager; it shows on the board while the `with` block runs."""
    return Step(label, total, unit, poll)


def note(text: str, advance: float = 0) -> None:
    """Say where the innermost step of this thread is (and move it on by `advance`); no-op if none."""
    if _relay and text != _relay[1]:
        _relay[1] = text
        _relay[0].write(f"{RELAYED}{text}\n")
        _relay[0].flush()
    if _board is None:
        return
    stack = _stack()
    if stack:
        stack[-1].advance(advance, text)


def relay(stream: TextIO | None) -> None:
    """In a child whose output its parent reads (a forked mini-run): write each new note there as
    one marked line, which the parent shows on its own board (`relayed`): the child has no terminal.
    None stops it (a sweep candidate's training after its mini-run: that output is the training's log)."""
    _relay[:] = [stream, None] if stream is not None else []


def relayed(line: str) -> bool:
    """Whether `line` of a child's output is a relayed note; if so it becomes this thread's note."""
    if not line.startswith(RELAYED):
        return False
    note(line[len(RELAYED):].rstrip("\n"))
    return True


def _stack() -> list[Step]:
    if not hasattr(_local, "steps"):
        _local.steps = []
    return _local.steps


def enable(stream: TextIO, delay_s: float | None = None, painter: Any = None) -> None:
    """Draw progress on `stream` from now on (the CLI passes stderr, and only when it is a terminal).

    `painter` (tests) replaces the one drawing on the stream (`tunegate.progress.draw.LinePainter`).
    """
    global _board
    disable()
    if delay_s is None:
        delay_s = float(os.environ.get("TUNEGATE_PROGRESS_DELAY_S", DELAY_S))
    _board = _Board(stream, delay_s, painter)


def disable() -> None:
    """Stop drawing and erase what is shown."""
    global _board
    board, _board = _board, None
    if board is not None:
        board.close()


def enabled() -> bool:
    return _board is not None


def drawer_threads() -> set[threading.Thread]:
    """The thread drawing the board now, if one is: a thread a forked child may do without."""
    drawer = _board.drawer if _board is not None else None
    return {drawer[0]} if drawer is not None else set()


def held_for_fork() -> contextlib.AbstractContextManager[Any]:
    """The board held still while this thread forks: its drawer writes nothing meanwhile, so the
    child never inherits stderr's lock taken by a thread it does not have (the child never draws)."""
    board = _board
    return board.paint_lock if board is not None else contextlib.nullcontext()


class _Board:
    """The running steps and the thread that draws the ones older than the delay."""

    def __init__(self, stream: TextIO, delay_s: float, painter: Any = None):
        from tunegate.progress.draw import make_painter

        self.delay_s = delay_s
        self.painter = painter or make_painter(stream)
        self.steps: list[Step] = []
        self.lock = threading.Lock()
        self.paint_lock = threading.Lock()  # an ending drawer erases before the next one draws
        self.drawer: tuple[threading.Thread, threading.Event] | None = None

    def add(self, s: Step) -> None:
        with self.lock:
            self.steps.append(s)
            shown = list(self.steps)
            if self.drawer is None:
                stop = threading.Event()
                thread = threading.Thread(target=self._run, args=(stop,), name="tunegate-progress", daemon=True)
                self.drawer = (thread, stop)
                thread.start()
        if self.delay_s <= 0:  # no delay: draw every step the moment it starts, however short
            with self.paint_lock:
                self.painter.paint(shown, time.monotonic())

    def remove(self, s: Step) -> None:
        with self.lock:
            if s in self.steps:
                self.steps.remove(s)
            drawer = self.drawer if not self.steps else None
            if drawer is not None:
                self.drawer = None
        if drawer is not None:  # the last step ended: erase the board before anything else prints
            self._stop(drawer)

    def close(self) -> None:
        with self.lock:
            self.steps.clear()
            drawer, self.drawer = self.drawer, None
        if drawer is not None:
            self._stop(drawer)

    @staticmethod
    def _stop(drawer: tuple[threading.Thread, threading.Event]) -> None:
        thread, stop = drawer
        stop.set()
        if thread is not threading.current_thread():
            thread.join()

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(REFRESH_S):
            now = time.monotonic()
            with self.lock:
                shown = [s for s in self.steps if now - s.started >= self.delay_s]
            with self.paint_lock:
                self.painter.paint(shown, now)
        with self.paint_lock:
            self.painter.clear()
