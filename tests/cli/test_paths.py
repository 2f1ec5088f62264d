"""Every command that takes a path, given a folder, /dev/zero, a FIFO, a symlink loop, a dangling link
or a kernel file that blocks (/proc/kmsg).

One guard (`tunegate.pathguard`) answers for all of them: a usage error naming the path and why
(exit 2), or for the commands whose job is checking data files (`check`, `lint`) a TG240 finding
(exit 1). Never an internal error, a traceback, a hang on the FIFO or a read of /dev/zero that
eats the memory. Each command runs in this process under an alarm, so a hang fails the test.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli_in_process import run
from tests.support.paths import DATA

FLOWS = DATA / "flows"


def _folder(tmp: Path) -> Path:
    (tmp / "folder").mkdir()
    return tmp / "folder"


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "fifo")
    return tmp / "fifo"


def _loop(tmp: Path) -> Path:
    os.symlink(tmp / "loop-b", tmp / "loop-a")
    os.symlink(tmp / "loop-a", tmp / "loop-b")
    return tmp / "loop-a"


def _dangling(tmp: Path) -> Path:
    os.symlink(tmp / "gone", tmp / "dangling")
    return tmp / "dangling"


KINDS: dict[str, tuple[Callable[[Path], Path | str], str]] = {
    "folder": (_folder, "is a folder, not a file"),
    "device": (lambda tmp: "/dev/zero", "is not a regular file"),
    "fifo": (_fifo, "is not a regular file"),
    "symlink loop": (_loop, "Too many levels of symbolic links"),
    "dangling symlink": (_dangling, "does not exist"),
}
if os.path.exists("/proc/kmsg"):  # a "regular" file whose read waits for the next kernel message
    KINDS["kernel file"] = (lambda tmp: "/proc/kmsg", "kernel's proc file system")




@pytest.fixture(params=sorted(KINDS))
def hostile(request, tmp_path) -> tuple[Path, str]:
    """(a path that is not a readable file, the reason the guard must give)."""
    make, reason = KINDS[request.param]
    return Path(make(tmp_path)), reason


@pytest.fixture
def good(tmp_path) -> Path:
    """A valid spec with real data, in a folder of its own."""
    folder = tmp_path / "specs"
    shutil.copytree(FLOWS, folder)
    return folder / "good.yaml"


def spec_reading(data: Path, good: Path) -> Path:
    """A copy of the good spec whose training data is `data`."""
    spec = good.with_name("hostile.yaml")
    spec.write_text(good.read_text().replace("train: train.jsonl", f"train: '{data}'"))
    return spec


def assert_refused(code: int, output: str, path: Path, reason: str, expected: int) -> None:
    assert (code, "internal error" in output, "Traceback" in output) == (expected, False, False), output
    assert str(path) in output and reason in output, output


SPEC_COMMANDS = [["check"], ["estimate"], ["advise"], ["preflight"], ["sweep"], ["launch"], ["runs", "--spec"],
                 ["samples"]]


@pytest.mark.parametrize("command", SPEC_COMMANDS, ids=lambda c: " ".join(c))
def test_a_spec_path_that_is_not_a_file_is_a_usage_error(command, hostile, capsys):
    path, reason = hostile
    code, output = run([*command, str(path)], capsys)
    assert_refused(code, output, path, reason, expected=2)


@pytest.mark.parametrize("command", ["estimate", "advise", "preflight", "sweep", "launch", "samples"])
def test_a_data_path_in_the_spec_that_is_not_a_file_is_refused_before_the_command_starts(
        command, hostile, good, capsys):
    path, reason = hostile
    code, output = run([command, str(spec_reading(path, good))], capsys)
    assert_refused(code, output, path, reason, expected=2)
    assert "data.train" in output


def test_check_reports_the_data_path_as_tg240(hostile, good, capsys):
    path, reason = hostile
    code, output = run(["check", str(spec_reading(path, good))], capsys)
    assert_refused(code, output, path, reason, expected=1)
    assert "TG240" in output


@pytest.mark.parametrize("command", [["check", "--train"], ["lint"]], ids=lambda c: " ".join(c))
def test_the_data_checking_commands_report_a_bare_path_as_tg240(command, hostile, capsys):
    path, reason = hostile
    code, output = run([*command, str(path)], capsys)
    assert_refused(code, output, path, reason, expected=1)
    assert "TG240" in output


def test_convert_reports_an_input_that_is_not_a_file_as_tg240(hostile, tmp_path, capsys):
    path, reason = hostile
    out = tmp_path / "converted.jsonl"
    code, output = run(["convert", str(path), str(out)], capsys)
    assert_refused(code, output, path, reason, expected=1)
    assert "TG240" in output and not out.exists()


def test_fingerprint_refuses_the_path(hostile, capsys):
    path, reason = hostile
    code, output = run(["fingerprint", str(path)], capsys)
    assert_refused(code, output, path, reason, expected=2)


def test_launch_refuses_a_report_path_that_is_not_a_file(hostile, good, capsys):
    path, reason = hostile
    code, output = run(["launch", str(good), "--report", str(path)], capsys)
    assert_refused(code, output, path, reason, expected=2)
    assert "--report" in output


def test_runs_refuses_a_tracking_store_that_is_not_a_file(hostile, capsys):
    path, reason = hostile
    code, output = run(["runs", "--tracking-uri", f"sqlite:///{path}"], capsys)
    expected_reason = "no MLflow store" if reason == "does not exist" and not os.path.lexists(path) else reason
    assert_refused(code, output, path, expected_reason, expected=2)
