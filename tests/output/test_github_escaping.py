"""`--output-format github` against hostile text: escaped as the toolkit does, read back as the runner reads.

tests/data/output/hostile holds a dataset named `a b,c:d.jsonl` whose records quote workflow
commands, and a spec whose value and key do; tests/output/actions_runner.py reads output lines as
GitHub's runner does.
"""
from __future__ import annotations

from pathlib import Path

from tests.output.actions_runner import commands
from tests.output.hostile_reports import HOSTILE, report_of
from tests.support.paths import ROOT
from tunegate import check
from tunegate.output.github import escape_data, escape_property, workflow_commands
from tunegate.report import Finding

NASTY = "100% \r\n::error::pwned\n::stop-commands::tok, a:b"



def test_data_and_properties_are_escaped_exactly_as_the_toolkits_command_ts():
    assert escape_data(NASTY) == "100%25 %0D%0A::error::pwned%0A::stop-commands::tok, a:b"
    assert escape_property(NASTY) == "100%25 %0D%0A%3A%3Aerror%3A%3Apwned%0A%3A%3Astop-commands%3A%3Atok%2C a%3Ab"


def test_a_hostile_message_and_file_name_read_back_whole_as_one_annotation():
    f = Finding(code="TG999", severity="error", stage="dataset", message=NASTY, hint="fix it, 100%",
                file="data/a b,c:d.jsonl", line=3, column=7)
    out = workflow_commands(report_of(f), ROOT)
    assert len(out.splitlines()) == 2  # the annotation and the verdict, nothing the text could add
    (name, props, data), verdict = commands(out)
    assert (name, data) == ("error", NASTY + "\nfix: fix it, 100%")
    assert props == {"file": "data/a b,c:d.jsonl", "line": "3", "col": "7", "title": "TG999 (dataset)"}
    assert verdict[0] == "notice"


def test_records_quoting_commands_in_a_file_named_with_spaces_commas_and_colons():
    report = check(train=HOSTILE / "a b,c:d.jsonl", validation=HOSTILE / "validation.jsonl")
    found = commands(workflow_commands(report, ROOT))
    annotations = [c for c in found if c[1].get("title", "").startswith("TG")]
    assert [c[0] for c in found] == ["error"] * len(annotations) + ["notice"]  # no stop-commands, no extra error
    assert {c[1]["file"] for c in annotations} == {"tests/data/output/hostile/a b,c:d.jsonl"}
    assert [c[1]["line"] for c in annotations] == ["1", "2", "4"]
    assert "'user\\n::error file=README.md::pwned" in annotations[0][2]  # the role as the finding quotes it


def test_a_spec_key_holding_a_newline_stays_in_its_annotation():
    report = check(HOSTILE / "spec.yaml")
    found = commands(workflow_commands(report, ROOT))
    assert [c[0] for c in found] == ["error", "error", "notice"]
    key = next(c for c in found if c[1]["title"] == "TG101 (spec)")
    assert key[2].startswith("unknown key 'lora.dropout\n::warning::x'")
    assert key[1]["file"] == "tests/data/output/hostile/spec.yaml" and key[1]["line"] == "10"


def test_a_finding_without_a_line_names_its_file_alone():
    f = Finding(code="TG999", severity="warning", stage="spec", message="m", key="lora.r")
    line = workflow_commands(report_of(f, spec=str(ROOT / "examples" / "quickstart.yaml")), ROOT).splitlines()[0]
    assert line == "::warning file=examples/quickstart.yaml,title=TG999 (spec)::m"


def test_a_file_outside_the_checkout_is_its_absolute_path_not_a_uri(tmp_path: Path):
    f = Finding(code="TG999", severity="error", stage="dataset", message="m", file=str(tmp_path / "x y.jsonl"), line=1)
    (_, props, _), _ = commands(workflow_commands(report_of(f), ROOT))
    assert props["file"] == (tmp_path / "x y.jsonl").as_posix()


def test_a_lone_surrogate_is_written_as_its_escape():
    f = Finding(code="TG999", severity="error", stage="dataset", message="cut \ud83d here", file="a.jsonl", line=1)
    out = workflow_commands(report_of(f), ROOT)
    out.encode("utf-8")
    assert "::cut \\ud83d here" in out
