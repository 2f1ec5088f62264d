"""Why a local API server ended while starting, read from its output (tunegate.local_api.child)."""
from __future__ import annotations

from tunegate.local_api.child import start_error

UVICORN = ("Traceback (most recent call last):\n"
           '  File "/venv/lib/python3.11/site-packages/aiosqlite/core.py", line 466, in connector\n'
           "    return sqlite3.connect(loc, **kwargs)\n"
           "sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) unable to open database file\n"
           "(Background on this error at: https://sqlalche.me/e/21/e3q8)\n"
           "\n"
           "00:55:30.144 | ERROR   | uvicorn.error - Application startup failed. Exiting.\n")


def test_the_last_exception_of_a_traceback_is_the_reason_without_its_module_path():
    assert start_error(UVICORN) == "OperationalError: (sqlite3.OperationalError) unable to open database file"


def test_a_later_failure_wins_over_an_earlier_one():
    earlier = "ValueError: an old start's\n"
    assert start_error(earlier + UVICORN).startswith("OperationalError:")


def test_output_without_an_exception_gives_no_reason():
    assert start_error("INFO:     Started server process [1]\nERROR:    Application startup failed. Exiting.\n") == ""
