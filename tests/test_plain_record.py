"""The report's dataclasses write the JSON pydantic writes for them, and pydantic reads it back whole:
a report is built without pydantic, and checked by it wherever it is read."""
from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from tunegate.facts import GateFacts, MiniRunFacts, ProfileFacts, SplitContent, TokenFacts
from tunegate.pathguard import shown
from tunegate.report import Finding, FindingCollector, GateReport, StageResult


def a_report() -> GateReport:
    """A report with a finding of each kind of place, every kind of fact, and NaN in a stage's stats."""
    spec = FindingCollector("spec")
    spec.add("TG101", "error", "training.learning_rate: 5 is above 1", "Use 2e-4.", file="spec.yaml", line=7,
             column=18, key="training.learning_rate")
    data = FindingCollector("dataset")
    data.add("TG204", "warning", "a record's last turn is the user's", "End on the assistant.",
             file="data/tr\u00e4in.jsonl", line=3, column=1, record=2)
    profile = ProfileFacts(device="cpu", steps=3, wall_s=1.5, matmul=0.4, attention=0.2, optimizer=0.1, data=0.0,
                           other=0.2, idle=0.1)
    facts = GateFacts(content={"train": SplitContent(records=85, content_chars=12_345)},
                      tokens=TokenFacts(train_tokens=9_000, trainable_tokens=4_000, records=85, sampled=False,
                                        max_seq_len=512, mean_tokens_per_record=105.9),
                      mini_run=MiniRunFacts(device="cpu", tokens_per_s=812.5, profile=profile),
                      estimate={"hours": 1.25})
    stages = [spec.result(0.01, {"trainer": "tunegate launch"}),
              data.result(0.25, {"records": 85, "loss": float("nan"), "ratio": float("inf"), "lengths": (1, 2)}),
              StageResult.skipped("overlap", "no validation split given")]
    return GateReport.from_stages(stages, spec="spec.yaml", fingerprints={"train": {"digest": "blake3:ab"}},
                                  facts=facts)


def test_its_json_is_the_json_pydantic_writes_for_the_same_report():
    report = a_report()
    assert json.loads(report.model_dump_json(indent=2)) == json.loads(TypeAdapter(GateReport).dump_json(report))


def test_its_dict_is_the_dict_pydantic_dumps_for_the_same_report():
    report = a_report()
    assert report.model_dump() == TypeAdapter(GateReport).dump_python(report)


def test_a_report_read_back_is_the_report_that_was_written():
    report = a_report()
    again = GateReport.model_validate_json(report.model_dump_json())
    assert again.model_dump_json() == report.model_dump_json()
    assert isinstance(again.facts.mini_run.profile, ProfileFacts)


def test_nan_and_infinity_are_written_as_null_and_a_tuple_as_a_list():
    stats = json.loads(a_report().model_dump_json())["stages"][1]["stats"]
    assert (stats["loss"], stats["ratio"], stats["lengths"]) == (None, None, [1, 2])


def test_text_that_is_not_ascii_is_written_as_itself():
    assert '"data/tr\u00e4in.jsonl"' in a_report().model_dump_json()


def test_facts_are_written_without_what_no_stage_learned():
    facts = json.loads(a_report().model_dump_json())["facts"]
    assert set(facts) == {"content", "tokens", "mini_run", "estimate"}
    assert "gpu" not in facts["mini_run"] and "gpu" not in facts["mini_run"]["profile"]


def test_a_key_this_version_does_not_know_is_refused_on_reading_back():
    data = json.loads(a_report().model_dump_json())
    data["stages"][0]["findings"][0]["colour"] = "red"
    with pytest.raises(ValidationError, match="colour"):
        GateReport.model_validate(data)


def test_a_field_of_the_wrong_type_is_refused_on_reading_back():
    data = json.loads(a_report().model_dump_json())
    data["stages"][1]["findings"][0]["severity"] = "fatal"
    with pytest.raises(ValidationError, match="severity"):
        GateReport.model_validate(data)


def test_facts_a_newer_version_learned_are_ignored_on_reading_back():
    data = json.loads(a_report().model_dump_json())
    data["facts"]["mini_run"]["joules"] = 12.0
    assert GateReport.model_validate(data).facts.mini_run.tokens_per_s == 812.5


def test_an_approval_written_into_a_report_is_decided_again_from_its_stages():
    data = json.loads(a_report().model_dump_json())
    data.update(approved_for_full_run=True, gates_passed=True, not_run={})
    again = GateReport.model_validate(data)
    assert (again.approved_for_full_run, again.gates_passed) == (False, False)
    assert set(again.not_run) >= {"overlap", "estimate", "mini-run"}


def test_a_report_in_a_pydantic_model_is_written_and_read_as_it_writes_itself():
    class Holder(BaseModel):
        report: GateReport

    report = a_report()
    holder = Holder(report=report)
    assert holder.model_dump(mode="json")["report"] == json.loads(report.model_dump_json())
    assert Holder.model_validate_json(holder.model_dump_json()).report.model_dump_json() == report.model_dump_json()


def test_a_finding_names_its_file_printably_and_takes_line_zero_for_no_line():
    name = "data/a\nb.jsonl"
    built = Finding(code="TG201", severity="error", stage="dataset", message="m", file=name, line=0, record=4)
    read = Finding.model_validate({"code": "TG201", "severity": "error", "stage": "dataset", "message": "m",
                                   "file": name, "line": 0, "record": 4})
    assert (built.file, built.line) == (read.file, read.line) == (shown(name), None)
    assert built.place() == f"{shown(name)}:row 4"


def test_a_copy_with_changes_leaves_the_original_as_it_was():
    finding = a_report().findings[0]
    moved = finding.model_copy(update={"line": 9})
    assert (moved.line, finding.line, moved.code) == (9, 7, finding.code)


def test_a_deep_copy_of_facts_shares_nothing_a_later_stage_could_change():
    facts = a_report().facts
    copied = facts.model_copy(deep=True)
    copied.content["validation"] = SplitContent(records=1, content_chars=1)
    copied.mini_run.tokens_per_s = 1.0
    assert set(facts.content) == {"train"} and facts.mini_run.tokens_per_s == 812.5


def test_later_facts_win_and_split_contents_are_merged():
    early = GateFacts(content={"train": SplitContent(records=1, content_chars=2)}, estimate={"hours": 1.0})
    later = GateFacts(content={"validation": SplitContent(records=3, content_chars=4)}, estimate={"hours": 2.0})
    merged = early.merged(later)
    assert set(merged.content) == {"train", "validation"} and merged.estimate == {"hours": 2.0}
    assert early.merged(GateFacts()).estimate == {"hours": 1.0}


def test_a_requirement_another_version_wrote_differently_is_left_out_and_the_rest_kept():
    good = {"need": "bitsandbytes", "kind": "package", "reason": "optimizer: adamw_bnb_8bit", "key": "optimizer",
            "where": "run machine", "met_here": False, "install": "pip install bitsandbytes"}
    odd = [{**good, "need": "a GPU", "kind": "gpu"}, {**good, "colour": "red"}, "bitsandbytes", {"need": "x"}]
    spec = StageResult(name="spec", status="passed", stats={"requirements": [*odd, good]})
    [kept] = GateReport.from_stages([spec]).requirements
    assert kept.model_dump() == good


@pytest.mark.parametrize("key", ["caveats", "launch_only", "tunegate_launch", "requirements"])
def test_a_stage_list_another_writer_made_a_number_reads_back_as_no_list(key):
    # A report file is input (an approval `launch` reads): what it says in a stage's stats must not crash the read.
    data = json.loads(a_report().model_dump_json())
    data["stages"][0]["stats"][key] = 5
    again = GateReport.model_validate(data)
    assert again.caveats[:2] == json.loads(a_report().model_dump_json())["caveats"][:2]
