"""`--output-format github`: one workflow command per finding, escaped as the Actions runner reads them."""
from __future__ import annotations

from tests.support.paths import DATA, ROOT
from tunegate import check
from tunegate.output.github import workflow_commands
from tunegate.report import Finding, GateReport, StageResult

BAD = DATA / "dataset" / "bad"


def test_a_dataset_error_is_an_error_command_at_its_file_line_and_column():
    report = check(train=BAD / "last_from_user.jsonl", validation=BAD / "system_not_first.jsonl")
    lines = workflow_commands(report, ROOT).splitlines()
    error = next(line for line in lines if line.startswith("::error "))
    assert error.startswith("::error file=tests/data/dataset/bad/last_from_user.jsonl,line=2,col=")
    assert ",title=TG204 (dataset)::the last message is from 'user'" in error and "%0Afix: " in error
    assert any(line.startswith("::warning file=tests/data/dataset/bad/system_not_first.jsonl,line=2")
               for line in lines)
    assert lines[-1] == "::notice title=tunegate::rejected at stage 'dataset': 1 error(s), 1 warning(s)"


def test_newlines_percent_signs_colons_and_commas_are_escaped():
    f = Finding(code="TG999", severity="info", stage="dataset", message="100% done\nnext", hint="",
                file="a,b:c.jsonl", line=3)
    report = GateReport.from_stages([StageResult(name="dataset", status="passed", findings=[f],
                                                 totals_by_code={"TG999": 1})])
    first = workflow_commands(report).splitlines()[0]
    assert first == "::notice file=a%2Cb%3Ac.jsonl,line=3,title=TG999 (dataset)::100%25 done%0Anext"
