"""Outputs never destroy inputs: `--html` and `convert` OUT write aside and rename, never over an input,
a folder, a FIFO or a device, never over a file tunegate did not write without --force; a write error
(a full disk) is exit 2 naming the output. Each command runs in this process under an alarm."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.support.cli_in_process import run
from tests.support.paths import DATA
from tunegate.destination import destination, write_file, written_aside
from tunegate.errors import OutputError, UsageError


@pytest.fixture
def spec(tmp_path) -> Path:
    """A valid spec with its data, in a folder of its own."""
    for name in ("good.yaml", "train.jsonl", "validation.jsonl"):
        shutil.copy(DATA / "flows" / name, tmp_path / name)
    return tmp_path / "good.yaml"


def test_html_onto_the_spec_is_refused_even_with_force(spec, capsys):
    before = spec.read_bytes()
    for force in ([], ["--force"]):
        code, output = run(["check", str(spec), "--html", str(spec), *force], capsys)
        assert code == 2 and "refusing to overwrite the input" in output, output
    assert spec.read_bytes() == before


def test_html_onto_the_training_data_is_refused_even_with_force(spec, capsys):
    train = spec.with_name("train.jsonl")
    before = train.read_bytes()
    code, output = run(["check", str(spec), "--html", str(train)], capsys)
    assert code == 2 and "not a report tunegate wrote" in output
    code, output = run(["check", str(spec), "--html", str(train), "--force"], capsys)  # read by the run
    assert code == 2 and "refusing to overwrite the input" in output
    code, output = run(["check", "--train", str(train), "--html", str(train), "--force"], capsys)
    assert code == 2 and "refusing to overwrite the input" in output
    assert train.read_bytes() == before and not list(spec.parent.glob(".tunegate-*"))


def test_html_onto_any_file_of_a_split_given_in_several_files_is_refused_even_with_force(spec, capsys):
    first, second = spec.with_name("train.jsonl"), spec.with_name("more.jsonl")
    shutil.copy(first, second)
    before = second.read_bytes()
    given = ["--train", str(first), "--train", str(second), "--validation", str(spec.with_name("validation.jsonl"))]
    code, output = run(["check", *given, "--html", str(second), "--force"], capsys)  # named on the command line
    assert code == 2 and "refusing to overwrite the input" in output, output
    listed = spec.with_name("listed.yaml")
    listed.write_text(spec.read_text().replace("train: train.jsonl", "train: [train.jsonl, more.jsonl]"))
    code, output = run(["check", str(listed), "--html", str(second), "--force"], capsys)  # read through the spec
    assert code == 2 and "refusing to overwrite the input" in output, output
    assert second.read_bytes() == before


@pytest.mark.parametrize("command", ["check", "lint"])
def test_html_onto_a_fifo_is_refused_at_once(command, spec, capsys):
    os.mkfifo(spec.with_name("fifo"))
    target = str(spec) if command == "check" else str(spec.with_name("train.jsonl"))
    code, output = run([command, target, "--html", str(spec.with_name("fifo")), "--force"], capsys)
    assert code == 2 and "not a file" in output


def test_a_page_tunegate_wrote_is_replaced_and_any_other_file_needs_force(spec, capsys):
    page, mine = spec.with_name("report.html"), spec.with_name("mine.html")
    assert run(["check", str(spec), "--html", str(page)], capsys)[0] == 0
    assert b'<meta name="generator" content="tunegate' in page.read_bytes()[:4096]
    assert run(["check", str(spec), "--html", str(page)], capsys)[0] == 0  # its own page: replaced
    mine.write_text("<html>my notes</html>")
    code, output = run(["check", str(spec), "--html", str(mine)], capsys)
    assert code == 2 and "--force" in output and mine.read_text() == "<html>my notes</html>"
    assert run(["check", str(spec), "--html", str(mine), "--force"], capsys)[0] == 0
    assert b"tunegate" in mine.read_bytes()


def test_a_symlink_is_written_through_and_kept(tmp_path):
    (tmp_path / "real.html").write_text("x")
    (tmp_path / "link.html").symlink_to(tmp_path / "real.html")
    assert write_file(tmp_path / "link.html", b"page", force=True) == tmp_path / "real.html"
    assert (tmp_path / "link.html").is_symlink() and (tmp_path / "real.html").read_bytes() == b"page"


@pytest.mark.parametrize("kind", ["dangling", "loop"])
def test_convert_to_a_dangling_link_or_a_loop_is_a_usage_error(kind, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    if kind == "dangling":
        out.symlink_to(tmp_path / "gone" / "x.jsonl")
    else:
        out.symlink_to(tmp_path / "other")
        (tmp_path / "other").symlink_to(out)
    code, output = run(["convert", str(DATA / "flows" / "train.jsonl"), str(out), "--force"], capsys)
    assert code == 2 and "internal error" not in output and str(out) in output, output


@pytest.mark.parametrize("special", ["/dev/null", "/proc/self/status"])
def test_a_device_or_kernel_file_is_never_a_destination(special):
    if not os.path.exists(special):
        pytest.skip(f"no {special}")
    with pytest.raises(UsageError, match="not a file|kernel"):
        destination(special, force=True)


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), written_aside(target) as out:
        out.write(b"half")
        raise RuntimeError("the input broke off")
    assert target.read_text() == "old\n" and sorted(tmp_path.iterdir()) == [target]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_full_disk_is_an_output_error_naming_the_file(tmp_path, monkeypatch):
    real_open = os.open
    # The temporary file lands on a full disk: /dev/full answers every write with ENOSPC.
    monkeypatch.setattr(os, "open", lambda path, flags, mode=0o777: real_open("/dev/full", os.O_WRONLY))
    with pytest.raises(OutputError, match=f"cannot write {tmp_path / 'out.html'}: No space left on device"):
        write_file(tmp_path / "out.html", b"x" * 100_000)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("argv", [["gpus"], ["schema"], ["check", "SPEC"], ["lint", "TRAIN"], ["estimate", "SPEC"],
                                  ["fingerprint", "TRAIN"], ["check", "SPEC", "--output-format", "sarif"]],
                         ids=" ".join)
def test_stdout_on_a_full_disk_is_exit_2_naming_stdout(argv, spec, monkeypatch, capsys):
    argv = [str(spec) if a == "SPEC" else str(spec.with_name("train.jsonl")) if a == "TRAIN" else a for a in argv]
    with open("/dev/full", "w") as full:
        monkeypatch.setattr(sys, "stdout", full)
        code, output = run(argv, capsys)
    assert code == 2 and "cannot write stdout: No space left on device" in output, output
