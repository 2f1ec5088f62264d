"""`tunegate samples`: representative records rendered as trained, from a spec or an axolotl config."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.paths import DATA, ROOT
from tunegate.cli.main import main

CONFIGS = DATA / "configs"


def axolotl_config(tmp_path, sequence_len: int) -> str:
    body = (CONFIGS / "axolotl" / "qlora-sharegpt.yml").read_text()
    body = body.replace("meta-llama/Llama-3.1-8B", "tunegate/tiny-llama").replace("../data", str(CONFIGS / "data"))
    body = body.replace("sequence_len: 4096", f"sequence_len: {sequence_len}")
    # LoRA, not QLoRA: a 4-bit base loads only on CUDA, and these render on the CPU
    body = body.replace("load_in_4bit: true", "load_in_4bit: false").replace("adapter: qlora", "adapter: lora")
    body = body.replace("paged_adamw_8bit", "adamw_torch")
    (tmp_path / "cfg.yml").write_text(body)
    return str(tmp_path / "cfg.yml")


def test_samples_are_the_shortest_median_longest_and_seeded_random_ones(tiny_cache, tmp_path, capsys):
    assert main(["samples", axolotl_config(tmp_path, 2048), "-n", "5", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    samples = doc["samples"]
    assert [s["why"] for s in samples] == ["shortest", "median", "longest", "random", "random"]
    tokens = [s["tokens"] for s in samples[:3]]
    assert tokens == sorted(tokens) and len({s["record"] for s in samples}) == 5
    trained = "".join(seg["text"] for seg in samples[0]["segments"] if seg["trained"])
    masked = "".join(seg["text"] for seg in samples[0]["segments"] if not seg["trained"])
    assert trained.endswith("</s>") and "<|user|>" in masked and "<|user|>" not in trained


def test_the_same_seed_picks_the_same_records(tiny_cache, tmp_path, capsys):
    config = axolotl_config(tmp_path, 2048)
    picks = []
    for _ in range(2):
        assert main(["samples", config, "-n", "6", "--seed", "7", "--json"]) == 0
        picks.append([s["record"] for s in json.loads(capsys.readouterr().out)["samples"]])
    assert picks[0] == picks[1]


def test_what_truncation_cuts_is_shown(tiny_cache, tmp_path, capsys):
    assert main(["samples", axolotl_config(tmp_path, 48), "-n", "3"]) == 0
    out = capsys.readouterr().out
    assert "/ max_seq_len 48" in out and "truncation cut" in out and "⟦" in out


def test_samples_take_local_copies_of_a_configs_hub_dataset_as_check_does(tiny_cache, tmp_path, capsys):
    body = (CONFIGS / "axolotl" / "lora-hub-datasets.yml").read_text()
    (tmp_path / "hub.yml").write_text(body.replace("meta-llama/Llama-3.2-1B", "tunegate/tiny-llama"))
    copies = CONFIGS / "data"
    assert main(["samples", str(tmp_path / "hub.yml"), "--train", str(copies / "train.jsonl"),
                 "--validation", str(copies / "val.jsonl"), "-n", "2", "--split", "validation", "--json"]) == 0
    samples = json.loads(capsys.readouterr().out)["samples"]
    assert len(samples) == 2 and all(s["tokens"] > 0 for s in samples)


def test_the_data_file_name_is_shown_escaped(tiny_cache, tmp_path, capsys):
    config = axolotl_config(tmp_path, 2048)
    data = tmp_path / "e\x1b[31mred.jsonl"
    data.write_bytes((CONFIGS / "data" / "sharegpt_train.jsonl").read_bytes())
    body = open(config).read()
    escaped = str(data).replace("\x1b", "\\e")  # YAML writes ESC as "\e" in a double-quoted string
    (tmp_path / "cfg.yml").write_text(body.replace(str(CONFIGS / "data" / "sharegpt_train.jsonl"), f'"{escaped}"'))
    assert main(["samples", config, "-n", "1", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "\x1b[31m" not in out and "e\\x1b[31mred.jsonl" in out


def test_samples_in_a_process_of_its_own_render_the_same_without_loading_torch(tiny_cache, capsys):
    """transformers imports torch with AutoTokenizer (~240 MB resident) though tokenising never calls
    it; the command's own process loads the tokenizer without it, and renders what main() renders."""
    quickstart = str(ROOT / "examples" / "quickstart.yaml")
    assert main(["samples", quickstart, "--json"]) == 0  # here, in a process that has torch
    in_process = capsys.readouterr().out
    own = subprocess.run([sys.executable, "-X", "importtime", "-m", "tunegate", "samples", quickstart, "--json"],
                         capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert own.returncode == 0, own.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in own.stderr.splitlines() if line.startswith("import time:")}
    assert "transformers.configuration_utils" in loaded and "torch" not in loaded
    assert own.stdout == in_process


HIDE = """
import sys
from tunegate.spec.check import parse_spec
from tunegate.training.torch_free import hide_torch_from_transformers
spec = parse_spec("examples/quickstart.yaml").require()
spec = spec.model_copy(update={"model": spec.model.model_copy(update={"trust_remote_code": sys.argv[1] == "remote"})})
print(hide_torch_from_transformers(spec), "torch" in sys.modules)
"""


@pytest.mark.parametrize(("remote", "hidden"), [("remote", "False"), ("own", "True")])
def test_torch_stays_visible_to_transformers_for_a_spec_that_trusts_remote_code(remote, hidden):
    """Remote code may need torch through transformers: only a spec without it loads its tokenizer torch-free."""
    done = subprocess.run([sys.executable, "-c", HIDE, remote], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [hidden, "False"]
