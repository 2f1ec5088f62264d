"""`tunegate estimate` and `tunegate advise` as a user runs them."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.paths import DATA as TEST_DATA
from tests.support.paths import ROOT

DATA = TEST_DATA / "estimate"


def tunegate(*args, env=None):
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT, capture_output=True,
                          text=True, env=full_env, timeout=120)


def write_spec(tmp_path, model_id="config-only", gpu="A100-80GB", extra="", micro_batch=2):
    model_dir = tmp_path / "config-only"
    model_dir.mkdir(exist_ok=True)
    (model_dir / "config.json").write_text((DATA / "config-only" / "config.json").read_text())
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"""model: {{id: {model_id}}}
data: {{train: {DATA / 'train.jsonl'}, validation: {DATA / 'validation.jsonl'}}}
training: {{micro_batch_size: {micro_batch}, grad_accum_steps: 4, max_seq_len: 2048}}
hardware: {{gpu: {gpu}, count: 2, hourly_usd: 3.0}}
estimate: {{dataset_tokens: 50000000}}
{extra}""")
    return spec


def test_json_output_holds_the_documented_keys_for_a_folder_with_only_config_json(tmp_path):
    done = tunegate("estimate", str(write_spec(tmp_path)), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["model"]["total_params"] == 1_235_814_400
    assert doc["memory"]["peak_gib"] > 0 and "activations" in doc["memory"]["breakdown"]
    assert doc["throughput"]["tokens_per_s"] > 0 and 0 < doc["throughput"]["mfu"] < 1
    assert doc["hours"] > 0
    assert doc["cost_usd"] == round(doc["hours"] * 2 * 3.0, 2)


def test_the_table_names_every_term_and_the_verdict(tmp_path):
    done = tunegate("estimate", str(write_spec(tmp_path)))
    assert done.returncode == 0, done.stderr
    for word in ("weights", "activations", "logits", "cuda_context", "peak", "fits", "tokens/s per GPU", "hours"):
        assert word in done.stdout


def test_a_run_that_does_not_fit_exits_1(tmp_path):
    done = tunegate("estimate", str(write_spec(tmp_path, gpu="L4", micro_batch=8)), "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["memory"]["verdict"] == "does not fit"


def test_a_model_without_config_exits_1_with_the_finding_code(tmp_path):
    done = tunegate("estimate", str(write_spec(tmp_path, model_id="nobody/unknown-model")))
    assert done.returncode == 1
    assert "TG404" in done.stderr and "no config.json" in done.stderr


def test_a_missing_spec_is_a_usage_error(tmp_path):
    assert tunegate("estimate", str(tmp_path / "nope.yaml")).returncode == 2


def test_advise_prints_hours_before_and_after_without_a_key(tmp_path):
    spec = write_spec(tmp_path, extra="advisor: {api_key_env: TUNEGATE_NO_SUCH_KEY}\n")
    done = tunegate("advise", str(spec))
    assert done.returncode == 0, done.stderr
    assert "predicted hours:" in done.stdout and "training.compile" in done.stdout
    assert "TG601" in done.stderr


def test_advise_json_is_one_document(tmp_path):
    done = tunegate("advise", str(write_spec(tmp_path)), "--json", "--no-llm")
    doc = json.loads(done.stdout)
    assert doc["advice"]["hours_before"] >= doc["advice"]["hours_after"]
    assert [f["code"] for f in doc["findings"]] == ["TG608"]


def test_a_sharded_config_that_names_no_gpu_count_is_estimated_and_told_how_many_gpus_it_fits_on(tmp_path):
    # axolotl's DeepSpeed example as a full fine-tune of Llama-3.1-8B: ZeRO-2 over as many GPUs as the
    # launcher gives it, which the config does not say; on one A100-80GB it does not fit (135 GiB)
    axolotl = TEST_DATA / "configs" / "axolotl"
    config = tmp_path / "full-deepspeed.yml"
    config.write_text((axolotl / "lora-deepspeed-zero1.yml").read_text().replace("adapter: lora\n", "")
                      .replace("../data", str(TEST_DATA / "configs" / "data")))
    done = tunegate("estimate", str(config))
    assert done.returncode == 0, done.stderr
    assert "does not fit" in done.stdout and "TG428" in done.stderr and "--gpus " in done.stderr
    enough = int(done.stderr.split("it fits on ")[1].split(" x ")[0])
    on_them = tunegate("estimate", str(config), "--gpus", str(enough), "--json")
    assert on_them.returncode == 0 and json.loads(on_them.stdout)["memory"]["verdict"] == "fits"
    checked = tunegate("check", str(config), "--json")
    assert "TG428" in {f["code"] for f in json.loads(checked.stdout)["findings"]}
    assert json.loads(checked.stdout)["config_trainer"]["passed"]
