"""The multi-GPU path run for real on the CPU: 2 processes in data parallel over gloo, through the launcher.

No GPU is lent to CI, so the DDP branches of the full run (issue 31) run here on CPU processes:
`full_run.num_processes: 2` launches two of them (torchrun; accelerate launch runs one on a CPU).
A multimodal class's vision tower got LoRA from q_proj/v_proj and no gradient from text batches:
DDP stopped at step 2, "Expected to have finished reduction in the prior iteration" (reproduced
here before the fix); the full run now finds those parameters and turns find_unused_parameters on.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.support.paths import DATA
from tunegate.fullrun.launcher import launch_command, run_launched, training_env
from tunegate.spec.check import read_spec

pytestmark = pytest.mark.slow  # two training processes, ~10-20 s each test
MINIRUN = DATA / "minirun"


def _spec(folder: Path, model: str, targets: str) -> Path:
    path = folder / "ddp.yaml"
    path.write_text(f"""model: {{id: "{model}"}}
data: {{train: {MINIRUN / 'train.jsonl'}, validation: {MINIRUN / 'validation.jsonl'}}}
lora: {{r: 8, alpha: 16, dropout: 0.0, target_modules: [{targets}]}}
training: {{learning_rate: 1e-3, micro_batch_size: 2, max_steps: 3, max_seq_len: 128, precision: fp32}}
full_run: {{launcher: accelerate, num_processes: 2, output_dir: "{folder / 'out'}"}}
""", encoding="utf-8")
    return path


def _launched(spec_path: Path):
    _, spec = read_spec(spec_path)
    out = spec.full_run.output_dir
    cmd = launch_command(spec, spec_path, out, out / "result.json", max_steps=3, cuda=False, log=lambda _: None)
    lines: list[str] = []
    result = run_launched(cmd, out / "result.json", timeout_s=600, log=lines.append, env=training_env(spec))
    return cmd, result, lines


def test_two_cpu_processes_train_in_data_parallel_through_the_launcher(tiny_cache, tmp_path):
    cmd, result, lines = _launched(_spec(tmp_path, "tunegate/tiny-llama", "q_proj, v_proj"))
    assert cmd[2] == "torch.distributed.run" and cmd[cmd.index("--nproc_per_node") + 1] == "2"
    assert result.status == "completed", "\n".join(lines[-20:])
    assert (result.num_processes, result.global_step) == (2, 3) and math.isfinite(result.val_loss)


@pytest.fixture
def tiny_gemma3(tiny_cache, tmp_path_factory) -> Path:
    """A random Gemma 3 with a vision tower, built as AutoModelForCausalLM builds gemma3: the multimodal class."""
    import torch
    import transformers

    folder = tmp_path_factory.mktemp("tiny-gemma3")
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_cache)
    vocab = len(tokenizer) + 8
    config = transformers.Gemma3Config(
        text_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                     "num_key_value_heads": 1, "head_dim": 16, "vocab_size": vocab, "sliding_window": 16,
                     "max_position_embeddings": 512},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 28, "patch_size": 14},
        mm_tokens_per_image=4, image_token_index=vocab - 1, boi_token_index=vocab - 2, eoi_token_index=vocab - 3,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_lora_on_a_vision_tower_text_never_runs_trains_under_ddp(tiny_gemma3, tmp_path):
    _, result, lines = _launched(_spec(tmp_path, str(tiny_gemma3), "q_proj, v_proj"))
    assert result.status == "completed", result.reason
    assert any("get no gradient" in line and "vision_tower" in line for line in lines)
    assert result.global_step == 3 and result.num_processes == 2
