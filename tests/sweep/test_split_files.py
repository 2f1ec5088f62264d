"""A sweep over a spec whose splits are several files: candidates' files resolved, the frozen validation
set compared over all its files (tests/data/flows, copied to a fresh folder by `workdir`)."""
from __future__ import annotations

from tunegate.gate import check
from tunegate.spec.check import parse_spec
from tunegate.sweep.candidate_gate import changed_data_inputs, frozen_validation
from tunegate.sweep.candidates import run_name, write_candidate_spec


def _base(workdir, validation="[validation.jsonl, validation_other.jsonl]"):
    text = (workdir / "leaky.yaml").read_text().replace("validation: validation.jsonl", f"validation: {validation}")
    (workdir / "split.yaml").write_text(text)
    base = parse_spec(workdir / "split.yaml")
    return base, check(base, only={"dataset"})


def test_a_candidate_of_several_training_files_gets_each_resolved_and_is_named_by_them(workdir):
    base, _ = _base(workdir)
    candidate = parse_spec(write_candidate_spec(base, {"data.train": ["train.jsonl", "leaky_train.jsonl"]}))
    assert candidate.require().data.train == [workdir / "train.jsonl", workdir / "leaky_train.jsonl"]
    assert changed_data_inputs(candidate.require(), base.require()) == ["data.train"]
    assert run_name({"data.train": ["train.jsonl", "leaky_train.jsonl"]}) == "train=train+leaky_train"


def test_the_frozen_validation_set_of_several_files_is_compared_by_the_digest_of_them_all(workdir):
    base, report = _base(workdir)
    assert frozen_validation(base.require(), report, None).status == "passed"
    lines = (workdir / "validation_other.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (workdir / "validation_other.jsonl").write_text("".join(lines[:-1]), encoding="utf-8")
    changed = frozen_validation(base.require(), report, None)
    assert [f.code for f in changed.findings] == ["TG390"]
    assert "validation.jsonl + validation_other.jsonl changed during the sweep" in changed.findings[0].message


def test_a_candidate_scored_on_fewer_files_of_the_validation_set_is_another_set(workdir):
    base, report = _base(workdir)
    candidate = parse_spec(write_candidate_spec(base, {"data.validation": "validation.jsonl"})).require()
    [finding] = frozen_validation(candidate, report, None).findings
    assert finding.code == "TG391" and "another validation set (validation.jsonl," in finding.message
