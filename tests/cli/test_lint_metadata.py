"""`tunegate lint` and its pre-commit hook on a LLaMA-Factory repository: the registry is not data.

LLaMA-Factory keeps its dataset registry, data/dataset_info.json, beside the data files; read as
records it was "pretty-printed JSON" (TG220) and failed the hook of every LLaMA-Factory repository.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

import yaml

from tests.support.paths import DATA, ROOT

LF_DATA = (DATA / "configs" / "llamafactory" / "data").relative_to(ROOT)
REGISTRY, RECORDS = str(LF_DATA / "dataset_info.json"), str(LF_DATA / "alpaca_en_demo.json")
HOOK = next(h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()) if h["id"] == "tunegate-lint")


def lint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunegate", "lint", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_lint_names_and_skips_the_registry_and_checks_the_data_beside_it():
    run = lint(REGISTRY, RECORDS)
    assert run.returncode == 0, run.stdout
    assert f"⊘ {REGISTRY}: skipped: LLaMA-Factory's dataset registry" in run.stdout
    assert f"✓ {RECORDS}: 8 records" in run.stdout and "1 metadata file(s) skipped" in run.stdout


def test_lint_json_lists_what_it_skipped():
    doc = json.loads(lint("--json", REGISTRY).stdout)
    assert doc["passed"] is True and doc["files"] == {} and list(doc["skipped"]) == [REGISTRY]


def test_the_hook_leaves_metadata_files_out_and_claims_the_data_beside_them():
    claimed = [p for p in ("data/dataset_info.json", "data/dataset_infos.json", "data/saved/train/state.json",
                           "data/saved/dataset_dict.json", "data/alpaca_en_demo.json", "data/my_dataset_info.json")
               if re.search(HOOK["files"], p)]
    assert claimed == ["data/alpaca_en_demo.json", "data/my_dataset_info.json"]


def test_the_hook_on_a_llamafactory_data_folder_gives_each_file_its_own_verdict_and_no_tg220():
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / LF_DATA).iterdir() if re.search(HOOK["files"], str(p)))
    doc = json.loads(lint("--json", *files).stdout)
    assert REGISTRY not in files and "TG220" not in doc["totals_by_code"]
    verdicts = {name.rsplit("/", 1)[-1]: sorted({f["code"] for f in doc["findings"] if f["file"] == name})
                for name in doc["files"]}
    assert verdicts == {
        "alpaca_en_demo.json": [], "alpaca_en_demo_heldout.json": [], "glaive_toolcall_en_demo.json": [],
        "identity.json": ["TG266"], "dpo_en_demo.json": ["TG271"], "kto_en_demo.json": ["TG271"],
        "mllm_demo.json": ["TG272"], "c4_demo.jsonl": ["TG271"]}

