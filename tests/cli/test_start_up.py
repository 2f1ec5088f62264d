"""What the command loads lazily to start fast still behaves as if everything were loaded.

The parser registers only the command named first, `tunegate` and `tunegate.output` load their
names on first use, and a check runs with pydantic's plugin look-up off (docs/benchmarks.md,
issue 15's start-up targets). None of that may change what a user sees.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT
from tunegate.cli.main import COMMANDS, PLUGINS_ENV, build_parser, main


def _help_of(parser, command: str) -> str:
    return parser._subparsers._group_actions[0].choices[command].format_help()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_named_first_gets_the_same_flags_and_help_as_in_the_full_parser(command):
    alone = build_parser([command, "--help"])
    assert _help_of(alone, command) == _help_of(build_parser(), command)


def test_the_top_level_help_still_lists_every_command():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["--help"])
    listed = out.getvalue()
    assert all(f"    {name}" in listed for name in COMMANDS)


def test_a_misspelt_command_still_gets_the_list_of_every_command(capsys):
    with pytest.raises(SystemExit):
        main(["chek", "examples/quickstart.yaml"])
    assert "invalid choice: 'chek' (choose from 'check', 'lint'," in capsys.readouterr().err


def test_a_check_leaves_no_pydantic_setting_behind(monkeypatch, capsys):
    monkeypatch.delenv(PLUGINS_ENV, raising=False)
    monkeypatch.chdir(ROOT)
    assert main(["check", "examples/broken.yaml"]) == 1
    assert PLUGINS_ENV not in os.environ


def test_a_pydantic_plugin_setting_the_user_made_is_kept(monkeypatch, capsys):
    monkeypatch.setenv(PLUGINS_ENV, "")  # empty: the user wants plugins on
    monkeypatch.chdir(ROOT)
    assert main(["check", "examples/broken.yaml"]) == 1
    assert os.environ[PLUGINS_ENV] == ""


def _fresh(code: str) -> list[str]:
    run = subprocess.run([sys.executable, "-c", f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(run.stdout.splitlines()[-1])


def test_the_package_and_the_output_formats_still_export_every_name_in_a_fresh_process():
    loaded = _fresh("from tunegate import Finding, GateReport, StageResult, check\n"
                    "from tunegate.output import FORMATS, charts_section, html_page, markdown_with_charts, render_as\n"
                    "import tunegate, tunegate.output\n"
                    "assert all(getattr(m, n) for m in (tunegate, tunegate.output) for n in m.__all__)\n"
                    "assert check.__module__ == 'tunegate.gate' and html_page.__module__ == 'tunegate.output.html'")
    assert {"tunegate.gate", "tunegate.output.html", "tunegate.output.markdown"} <= set(loaded)


def test_an_unknown_name_of_the_package_is_an_attribute_error():
    import tunegate
    import tunegate.output

    with pytest.raises(AttributeError):
        tunegate.no_such_name  # noqa: B018
    with pytest.raises(AttributeError):
        tunegate.output.no_such_name  # noqa: B018
