"""What a CI job reads from the command: stdout one valid document in every format, whatever happened.

Approved, rejected, usage error (exit 2) and internal error (exit 3) each leave a document a CI
consumer can read; and under GitHub Actions no line that quotes the user's data is a command.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from tests.output.actions_runner import commands
from tests.support.paths import DATA, ROOT

SCHEMA = json.loads((DATA / "output" / "sarif-schema-2.1.0.json").read_text())
HOSTILE = "tests/data/output/hostile/spec.yaml"
MACHINE = ["json", "sarif", "junit", "github"]
# An internal error is a bug, so no committed input causes one: this makes the gate itself raise.
CRASH = textwrap.dedent("""
    import sys, tunegate.gate
    def broken(*args, **kwargs):
        raise KeyError("stage table\\n::error::not a command ##[stop-commands]x")
    tunegate.gate.check = broken
    from tunegate.cli.main import main
    sys.exit(main(sys.argv[1:]))
""")


def tunegate(*args: str, crash: bool = False, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    head = ["-c", CRASH] if crash else ["-m", "tunegate"]
    return subprocess.run([sys.executable, *head, *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**clean, **env})


def assert_valid(fmt: str, stdout: str) -> None:
    if fmt == "json":
        assert json.loads(stdout)["approved_for_full_run"] is False
    elif fmt == "sarif":
        jsonschema.Draft4Validator(SCHEMA).validate(json.loads(stdout))
    elif fmt == "junit":
        assert int(ET.fromstring(stdout).get("tests")) >= 1
    else:
        assert stdout and all(line.startswith("::") for line in stdout.splitlines())


@pytest.mark.parametrize("fmt", MACHINE)
def test_an_internal_error_still_writes_a_valid_document_saying_so(fmt):
    run = tunegate("check", "examples/quickstart.yaml", "--output-format", fmt, crash=True)
    assert run.returncode == 3 and "internal error: KeyError" in run.stderr
    assert_valid(fmt, run.stdout)
    assert "KeyError" in run.stdout
    found = commands(run.stdout)
    assert [c[0] for c in found] == (["error"] if fmt == "github" else [])


def test_an_internal_error_in_sarif_is_an_unsuccessful_invocation_with_no_result():
    run = tunegate("check", "examples/quickstart.yaml", "--output-format", "sarif", crash=True)
    (invocation,) = json.loads(run.stdout)["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 3
    assert json.loads(run.stdout)["runs"][0]["results"] == []


@pytest.mark.parametrize("fmt", MACHINE)
def test_a_spec_that_does_not_exist_writes_a_valid_document_and_exits_2(fmt):
    run = tunegate("check", "no-such-spec.yaml", "--output-format", fmt)
    assert run.returncode == 2 and run.stderr.startswith("tunegate: error: ")
    assert_valid(fmt, run.stdout)
    assert "no-such-spec.yaml" in run.stdout


@pytest.mark.parametrize("fmt", MACHINE)
def test_a_rejected_and_a_passed_spec_write_valid_documents(fmt):
    rejected = tunegate("check", HOSTILE, "--output-format", fmt)
    passed = tunegate("check", "examples/quickstart.yaml", "--output-format", fmt)
    assert (rejected.returncode, passed.returncode) == (1, 0)
    for run in (rejected, passed):
        assert_valid(fmt, run.stdout)  # the static gate approves no full run: json says false
        assert "Traceback" not in run.stderr


def test_the_text_report_under_github_actions_quotes_commands_without_running_them():
    run = tunegate("check", HOSTILE, GITHUB_ACTIONS="true")
    assert run.returncode == 1
    found = commands(run.stdout)
    assert [c[0] for c in found] == ["error", "error", "notice"]  # our two annotations and the verdict
    assert all(c[1].get("title", "").startswith(("TG", "tunegate")) for c in found)
    assert "#\\x23[stop-commands]halt" in run.stdout  # the text form of the quoted `##[`


def test_a_format_chosen_twice_is_still_a_usage_error_with_nothing_on_stdout():
    run = tunegate("check", "no-such-spec.yaml", "--json", "--output-format", "sarif")
    assert run.returncode == 2 and run.stdout == ""
