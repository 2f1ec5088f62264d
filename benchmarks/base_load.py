"""What a sweep candidate's training no longer pays: a second load of its base after its mini-run.

    python benchmarks/base_load.py --rounds 5                              # a 0.37B random Llama
    python benchmarks/base_load.py --rounds 5 --hidden 2048 --layers 16    # 1.1B

A candidate's mini-run and its short training run in one process; since 8c86ac6 the training takes
the base the mini-run loaded (tunegate.training.kept_base) where it loaded it again. On the
built-in tiny model a load is ~0.01 s, lost in a sweep's noise; on a real base it is what issue 31
measured on an H200 (16-29 s for a 1.5B proxy). This builds a random Llama of the given shape once
(bf16 safetensors under benchmarks/out/base_load/, the tiny model's tokenizer beside it), then in
`--rounds` fresh processes, each with the training stack imported first (as the fork server's
child has it), times two loads by the trainer's own call, `tunegate.training.model.load_model`,
with a spec naming that folder (sdpa, on the CPU, in each `--precision`), from the page cache (one
load before the rounds warms it): the first is the mini-run's, the second the one a candidate's
training no longer makes. It prints the model's size, the median wall and CPU seconds of each, and
the load average. On a CPU a bf16 base loaded in bf16 is mapped from the safetensors file, not
copied; fp32 converts every weight; on a GPU every weight is copied to the device (not measured here).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out" / "base_load"
sys.path.insert(0, str(ROOT))

LOAD = r'''
import gc, sys, time
from tunegate.fullrun.fork_server import _import_training_stack
from tunegate.spec.check import read_spec
from tunegate.training.device import RunPlace
from tunegate.training.model import load_model
_import_training_stack()  # what the candidate's process had imported before its first load
_, spec = read_spec(sys.argv[1])
place = RunPlace("cpu", sys.argv[2], "sdpa")
for _ in range(2):  # the mini-run's load, then the one its training no longer makes
    wall, cpu = time.perf_counter(), time.process_time()
    model = load_model(str(spec.model.id), spec, place)
    print(round(time.perf_counter() - wall, 3), round(time.process_time() - cpu, 3), end=" ")
    params = sum(p.numel() for p in model.parameters())
    del model
    gc.collect()
print(params)
'''


def build(hidden: int, layers: int, vocab: int) -> Path:
    """A random Llama of this shape saved in bf16 (once), with the tiny model's tokenizer files."""
    folder = OUT / f"llama-h{hidden}-l{layers}-v{vocab}"
    if (folder / "model.safetensors").exists() or (folder / "model.safetensors.index.json").exists():
        return folder
    import shutil

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from tunegate.training.tiny_model import ensure_tiny_model

    tiny = Path(ensure_tiny_model())
    config = LlamaConfig(hidden_size=hidden, intermediate_size=hidden * 11 // 4, num_hidden_layers=layers,
                         num_attention_heads=hidden // 64, num_key_value_heads=max(1, hidden // 256),
                         vocab_size=vocab, max_position_embeddings=4096, tie_word_embeddings=False)
    torch.manual_seed(0)
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (tiny / name).exists():
            shutil.copy(tiny / name, folder / name)
    return folder


def spec_for(folder: Path) -> Path:
    text = (ROOT / "examples" / "quickstart.yaml").read_text(encoding="utf-8")
    text = text.replace("tunegate/tiny-llama", str(folder))
    text = text.replace("data/train.jsonl", str(ROOT / "examples" / "data" / "train.jsonl"))
    text = text.replace("data/validation.jsonl", str(ROOT / "examples" / "data" / "validation.jsonl"))
    path = folder.with_suffix(".yaml")
    path.write_text(text, encoding="utf-8")
    return path


def load_twice(spec: Path, precision: str) -> tuple[float, float, float, float, int]:
    """(first wall, first CPU, second wall, second CPU, parameters) of two loads in one fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", LOAD, str(spec), precision], env=env, capture_output=True,
                          text=True, check=True)
    *times, params = done.stdout.split()
    return (*map(float, times), int(params))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--precision", default="bf16,fp32", help="the spec's training.precision, comma-separated")
    args = ap.parse_args()
    folder = build(args.hidden, args.layers, args.vocab)
    spec = spec_for(folder)
    size = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
    load_twice(spec, "bf16")  # warms the page cache
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for precision in args.precision.split(","):
        runs = [load_twice(spec, precision) for _ in range(args.rounds)]
        first, second = [statistics.median(r[i] for r in runs) for i in (0, 1)], \
            [statistics.median(r[i] for r in runs) for i in (2, 3)]
        print(f"{folder.name} ({runs[0][4] / 1e9:.2f}B parameters, {size / 2**30:.2f} GiB of bf16 safetensors), "
              f"loaded in {precision}, medians of {args.rounds}:")
        print(f"  first load in the process (the mini-run's): {first[0]:.3f} s wall, {first[1]:.3f} s CPU")
        print(f"  second load (what the candidate's training no longer makes): {second[0]:.3f} s wall, "
              f"{second[1]:.3f} s CPU")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
