"""A signal's exception is known as the signal's, even where Python wrapped what it interrupted."""
from __future__ import annotations

import pytest
from prefect.exceptions import TerminationSignal

from tunegate.errors import Terminated, cut_short_by


def raised_in_set_name(exc: BaseException) -> BaseException:
    """What Python raises when `exc` lands in a class's `__set_name__` (pydantic builds models so):
    a RuntimeError wrapping it (Python 3.11)."""

    class Landing:
        def __set_name__(self, owner: type, name: str) -> None:
            raise exc

    try:
        type("Model", (), {"field": Landing()})
    except BaseException as wrapped:  # noqa: BLE001 - the wrapper is the subject
        return wrapped
    raise AssertionError("nothing was raised")


def test_prefects_sigterm_wrapped_in_a_runtime_error_is_a_termination():
    wrapped = raised_in_set_name(TerminationSignal(15))
    assert isinstance(wrapped, RuntimeError)  # what reached the CLI as an internal error before
    assert cut_short_by(wrapped) is Terminated


def test_our_sigterm_and_a_ctrl_c_are_told_apart():
    assert cut_short_by(raised_in_set_name(Terminated())) is Terminated
    assert cut_short_by(raised_in_set_name(KeyboardInterrupt())) is KeyboardInterrupt


def test_an_error_no_signal_caused_is_none_and_a_cycle_ends():
    first, second = ValueError("a"), RuntimeError("b")
    first.__context__, second.__context__ = second, first
    assert cut_short_by(first) is None
    assert cut_short_by(raised_in_set_name(ValueError("not a signal"))) is None


@pytest.mark.parametrize("signum", [2, 1])
def test_another_signal_of_prefects_is_not_a_sigterm(signum):
    assert cut_short_by(TerminationSignal(signum)) is None
