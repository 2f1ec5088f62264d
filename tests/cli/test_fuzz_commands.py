"""Property: no command ends in an internal error (exit 3) or a hang, whatever number a spec holds,
whatever its data file is called, whatever its tracking URI says.

Each command runs in this process under an alarm, on the seed corpus of issue 36
(tests/support/hostile.py) and values hypothesis draws around it; a small budget for CI
(benchmarks/fuzz_parsers.py runs 100,000 inputs per reader).
"""
from __future__ import annotations

import signal
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fuzz import numeric_keys
from tests.support.hostile import BAD_URIS, NUMBERS, PATHS, spec_with

HANG_S = 30
RECORD = b'{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}\n'


def fuzz(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def run(argv: list[str]) -> tuple[int, str]:
    """`tunegate ARGV` in this process: (exit code, stderr); a hang fails the test."""
    import contextlib
    import io

    from tunegate.cli.main import main

    def hang(*_):
        raise TimeoutError(f"tunegate {argv[0]} did not answer in {HANG_S} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_S)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, err.getvalue()


def assert_answered(code: int, err: str) -> None:
    assert code in (0, 1, 2) and "internal error" not in err, err


NUMBER_VALUES = st.one_of(st.sampled_from([v for _, v in NUMBERS]), st.integers(min_value=-10, max_value=10 ** 40),
                          st.floats(allow_nan=False), st.sampled_from([1e-320, 2 ** 63, 10 ** 4000]))


@fuzz(40)
@given(st.sampled_from(["check", "estimate", "advise"]), st.sampled_from(numeric_keys()), NUMBER_VALUES)
def test_any_number_under_any_key_never_crashes_a_static_command(command, key, value):
    if key.startswith("sweep."):  # the static commands do not read the sweep section's numbers
        key = "training.max_steps"
    with tempfile.TemporaryDirectory() as folder:
        assert_answered(*run([command, str(spec_with(Path(folder), key, value))]))


@pytest.mark.parametrize("command", ["samples", "launch", "sweep"])  # preflight: a flow reports the spec stage
def test_the_seed_numbers_never_crash_a_command_past_the_gate(command, tmp_path):
    for key, value in NUMBERS[:8]:
        assert_answered(*run([command, str(spec_with(tmp_path, key, value))]))


@fuzz(40)
@given(st.sampled_from(["check", "estimate", "advise", "samples", "launch", "sweep"]),
       st.one_of(st.sampled_from(PATHS), st.text(min_size=1, max_size=30).map(lambda t: f"zz-{t}")))
def test_any_data_path_never_crashes_a_command(command, name):
    with tempfile.TemporaryDirectory() as folder:
        assert_answered(*run([command, str(spec_with(Path(folder), "data.train", name))]))


@fuzz(40)
@given(st.sampled_from([["lint"], ["fingerprint"], ["check", "--train"], ["convert"]]),
       st.one_of(st.sampled_from(PATHS), st.text(min_size=1, max_size=30),
                 st.binary(min_size=1, max_size=30).map(lambda b: b.replace(b"/", b"_").replace(b"\0", b"_"))))
def test_any_file_name_never_crashes_the_commands_that_read_files(command, name):
    import os

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / (os.fsdecode(name) if isinstance(name, bytes) else name.replace("/", "_"))
        try:
            path.write_bytes(RECORD)
        except (OSError, ValueError):  # a name the file system refuses: the command is given it anyway
            pass
        extra = [str(Path(folder) / "out.jsonl")] if command == ["convert"] else []
        assert_answered(*run([*command, str(path), *extra]))


@fuzz(30)
@given(st.sampled_from([["runs", "--spec"], ["preflight"]]),
       st.one_of(st.sampled_from(BAD_URIS), st.text(min_size=1, max_size=30).filter(lambda t: "://" not in t)))
def test_any_tracking_uri_that_names_no_store_never_crashes(command, uri):
    with tempfile.TemporaryDirectory() as folder:
        assert_answered(*run([*command, str(spec_with(Path(folder), "tracking.mlflow_uri", uri))]))
