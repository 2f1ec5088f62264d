"""A relative model.id naming a model folder beside the spec is that folder, whatever the working
folder: the estimate read it there, so the mini-run, the trainer and a sweep candidate's copy of
the spec (written elsewhere) load it there too.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.paths import DATA
from tunegate.gate import check
from tunegate.spec.check import parse_spec
from tunegate.sweep.candidates import write_candidate_spec

MINIRUN = DATA / "minirun"
A_CONFIG = DATA / "estimate" / "configs" / "llama-3.1-8b" / "config.json"


def _project(tmp_path: Path, model_id: str, model: Path | None = None) -> Path:
    """A spec in tmp_path/project naming `model_id`, with `model` copied to project/base when given."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("train.jsonl", "validation.jsonl"):
        shutil.copy(MINIRUN / name, project / name)
    if model is not None:
        (shutil.copytree if model.is_dir() else _config_only)(model, project / "base")
    text = (MINIRUN / "good.yaml").read_text().replace("id: tunegate/tiny-llama", f"id: {model_id}")
    (project / "spec.yaml").write_text(text + "sweep:\n  candidates:\n    - {lora.r: 16, lora.alpha: 32}\n")
    (tmp_path / "elsewhere").mkdir()
    return project / "spec.yaml"


def _config_only(config: Path, folder: Path) -> None:
    folder.mkdir()
    shutil.copy(config, folder / "config.json")


def test_a_model_folder_beside_the_spec_is_named_absolutely_from_another_working_folder(tmp_path, monkeypatch):
    spec = _project(tmp_path, "./base", A_CONFIG)
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert parse_spec(spec).require().model.id == str(tmp_path / "project" / "base")


def test_a_hub_id_with_no_such_folder_beside_the_spec_stays_a_hub_id(tmp_path, monkeypatch):
    spec = _project(tmp_path, "meta-llama/Llama-3.1-8B")
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert parse_spec(spec).require().model.id == "meta-llama/Llama-3.1-8B"


def test_a_sweep_candidates_spec_names_the_base_specs_model_folder(tmp_path, monkeypatch):
    spec = _project(tmp_path, "base", A_CONFIG)
    monkeypatch.chdir(tmp_path / "elsewhere")
    written = write_candidate_spec(parse_spec(spec), {"lora.r": 16, "lora.alpha": 32})
    assert written.parent != spec.parent  # .tunegate/candidates/: a relative id would miss the folder
    assert yaml.safe_load(written.read_text())["model"]["id"] == str(tmp_path / "project" / "base")
    estimate = check(written, only={"estimate"}).stage("estimate")
    assert estimate.status == "passed", estimate.findings


@pytest.mark.slow  # a mini-run of the tiny model (~10 s)
def test_the_mini_run_loads_the_model_beside_the_spec_from_another_working_folder(tmp_path, monkeypatch, tiny_cache):
    spec = _project(tmp_path, "./base", tiny_cache)
    monkeypatch.chdir(tmp_path / "elsewhere")  # no ./base here: a cwd-relative load fails (TG5xx)
    report = check(spec, mini_run=True)
    mini = report.stage("mini-run")
    assert mini.status == "passed", mini.findings
    assert report.facts.mini_run.model == str(tmp_path / "project" / "base")
