"""An error on stderr quotes file names and spec values as data: no line of it is a workflow command.

GitHub's runner reads every line of a step's output, stderr too, and takes one that starts with
`::` (after its white space) or holds `##[` for a command: a spec key `dropout\\n::warning::x`
listed raw in an error would add an annotation, a file name holding `##[group]` fold the log. The
report formats escape them (tunegate.output.safe); the command line's stderr lines do the same.
"""
from __future__ import annotations

import pytest

from tests.output.actions_runner import commands
from tests.support.paths import DATA
from tunegate.cli.main import main
from tunegate.cli.streams import say

# A key and a value that are workflow commands once their line breaks are printed raw.
HOSTILE_SPEC = DATA / "output" / "hostile" / "spec.yaml"

HOSTILE = ["bad\n::error::x", "bad\n##[group]x", "bad\r::set-output name=a::b", "bad\n  ::warning::x"]


@pytest.mark.parametrize("name", HOSTILE, ids=["error", "group", "cr", "indented"])
def test_a_spec_path_quoted_in_an_error_adds_no_command_to_the_log(name, tmp_path, capsys):
    assert main(["check", str(tmp_path / f"{name}.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tunegate: error: spec file not found:") and commands(err) == []


def test_the_findings_listed_in_an_invalid_spec_error_add_no_command_to_the_log(capsys):
    assert main(["runs", "--spec", str(HOSTILE_SPEC)]) == 2  # a command past the gate: one error, its lines
    err = capsys.readouterr().err
    assert "is invalid:" in err and "TG101 unknown key" in err and "TG102 lora.r" in err
    assert commands(err) == []
    lines = err.splitlines()  # the list keeps its lines; the quoted text is still there to read
    assert lines[0].endswith("is invalid:") and lines[-1].startswith("Run `tunegate check")
    assert "\\x3a:warning::x) TG101 unknown key 'lora.dropout" in lines and "#\\x23[stop-commands]halt" in err


@pytest.mark.parametrize("name", HOSTILE, ids=["error", "group", "cr", "indented"])
def test_a_data_file_name_in_a_fingerprint_error_adds_no_command_to_the_log(name, tmp_path, capsys):
    assert main(["fingerprint", str(tmp_path / f"{name}.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tunegate: error:") and commands(err) == []


def test_an_error_keeps_its_lines_and_shows_a_control_character_as_its_escape(capsys):
    # the internal-error line quotes an exception's text whole: a KeyError of a record's key, say
    say("tunegate: internal error: KeyError: 'a\r\n::error::x\x1b[2J'\nThis is a bug in tunegate")
    assert capsys.readouterr().err.splitlines() == [
        "tunegate: internal error: KeyError: 'a", "\\x3a:error::x\\x1b[2J'", "This is a bug in tunegate"]
