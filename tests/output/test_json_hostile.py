"""`--json` / `--output-format json` on file names and text that are not plain UTF-8 lines."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.output.actions_runner import commands
from tests.support.paths import DATA, ROOT
from tunegate import check
from tunegate.output.formats import render_as

HOSTILE = DATA / "output" / "hostile"


def test_an_overlap_naming_a_file_whose_name_is_not_utf8_is_a_json_report_not_an_internal_error(tmp_path: Path):
    # The overlap finding names both files; the validation file's name holds the byte ff (Latin-1 ÿ).
    odd = os.path.join(os.fsencode(tmp_path), b"val\xff.jsonl")
    shutil.copyfile(HOSTILE / "validation.jsonl", odd)
    run = subprocess.run([sys.executable, "-m", "tunegate", "check", "--train", str(HOSTILE / "validation.jsonl"),
                          "--validation", os.fsdecode(odd), "--json"], cwd=ROOT, capture_output=True, timeout=120)
    assert run.returncode == 1, run.stderr.decode()
    report = json.loads(run.stdout.decode("utf-8"))
    (leak,) = [f for f in report["findings"] if f["code"] == "TG301"]
    assert leak["message"].endswith("validation.jsonl:1 == val\\xff.jsonl:1")


def test_quoted_commands_are_no_runner_command_in_the_json_report():
    text = render_as(check(HOSTILE / "spec.yaml"), "json", "0.1.0")
    assert commands(text) == []
    assert "##[stop-commands]halt" in json.loads(text)["findings"][0]["message"]
