"""A path no file system can hold (a NUL byte, a name too long) or a glob pattern where a name belongs is
a finding at its key, in a spec and in every config dialect; a command refuses it, never exit 3."""
from __future__ import annotations

import pytest
import yaml

from tests.support.hostile import spec_with
from tests.support.paths import DATA
from tunegate.spec.check import parse_spec
from tunegate.spec.importers.data_source import resolve
from tunegate.spec.path_names import path_problem

CONFIGS = DATA / "configs"


@pytest.mark.parametrize(("name", "problem"), [("a\0b.jsonl", "nul byte"), ("x" * 300 + ".jsonl", "over the 255"),
                                               ("/" + "d/" * 2100, "over the 4096")],
                         ids=["nul", "long name", "long path"])
def test_a_path_no_file_system_holds_is_tg102_at_its_key(name, problem, tmp_path):
    for key in ("data.train", "data.validation", "full_run.output_dir"):
        parsed = parse_spec(spec_with(tmp_path, key, name))
        (finding,) = [f for f in parsed.result.findings if f.key == key]
        assert finding.code == "TG102" and problem in finding.message.lower()


@pytest.mark.parametrize(("name", "problem"), [("a\0b.jsonl", "nul byte"), ("x" * 300 + ".jsonl", "over the 255")],
                         ids=["nul", "long name"])
def test_each_file_of_a_split_given_as_a_list_is_checked_so(name, problem, tmp_path):
    for key in ("data.train", "data.validation"):
        parsed = parse_spec(spec_with(tmp_path, key, ["train.jsonl", name]))
        (finding,) = [f for f in parsed.result.findings if f.key == key]
        assert finding.code == "TG102" and "file 2 of the list" in finding.message and problem in finding.message.lower()


def test_ordinary_odd_names_are_paths(tmp_path):
    for name in ("a b.jsonl", "e\x1b[31m.jsonl", "-rf", "pct%41.jsonl", "/abs/*.jsonl", "u\u2028.jsonl"):
        assert path_problem(name) is None


@pytest.mark.parametrize("command", ["estimate", "advise", "samples", "launch", "sweep"])
def test_a_nul_in_data_train_is_a_usage_error_for_the_commands_past_the_gate(command, tmp_path, capsys):
    from tunegate.cli.main import main

    code = main([command, str(spec_with(tmp_path, "data.train", "a\0b.jsonl"))])
    err = capsys.readouterr().err
    assert code in (1, 2) and "internal error" not in err and "nul byte" in err.lower(), err


@pytest.mark.parametrize("kind", [None, "axolotl", "trl"])
def test_a_nul_in_a_config_dataset_path_is_a_finding_in_every_dialect(kind):
    parsed = parse_spec(CONFIGS / "axolotl" / "hostile-values.yml", kind=kind)
    assert not parsed.valid and all(f.code.startswith("TG1") for f in parsed.result.findings)


@pytest.mark.parametrize(("config", "edit"), [
    ("axolotl/lora-1b.yml", {"datasets": [{"path": "/abs/*.jsonl", "type": "chat_template", "split": "/abs/*"}]}),
    ("axolotl/lora-1b.yml", {"datasets": [{"path": "d" * 300, "type": "chat_template"}]}),
    ("trl/sft.yaml", {"dataset_name": "../data/trl_support", "dataset_test_split": "/abs/*"}),
    ("trl/sft.yaml", {"dataset_name": "x" * 300}),
    ("trl/sft-mixture-json.yaml", {"datasets": [{"path": "json", "data_files": "/tmp/**/x", "split": "**"}]}),
], ids=["axolotl-abs-glob", "axolotl-long", "trl-abs-split", "trl-long", "trl-mixture-glob"])
def test_glob_patterns_and_long_names_in_a_config_are_findings(config, edit, tmp_path):
    data = yaml.safe_load((CONFIGS / config).read_text())
    data.update(edit)
    path = tmp_path / config.replace("/", "-")
    path.write_text(yaml.safe_dump(data))
    parsed = parse_spec(path)
    # A split that cannot be had here is said by the dataset stage (ParsedSpec.unavailable), the rest by the spec's
    errors = [f for f in parsed.result.findings if f.severity == "error"] + list(parsed.unavailable.values())
    assert {f.code for f in errors} & {"TG143", "TG145", "TG146", "TG240"}, errors


def test_resolve_names_its_problem_instead_of_raising(tmp_path):
    assert "no split name" in resolve(str(tmp_path), tmp_path, "/abs/*").problem
    assert "NUL byte" in resolve("a\0b", tmp_path).problem
    assert "255" in resolve("x" * 300, tmp_path).problem
