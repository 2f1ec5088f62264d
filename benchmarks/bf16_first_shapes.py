"""What a forked child pays for bf16 on a CPU the first time it meets each batch shape.

    python benchmarks/bf16_first_shapes.py --rounds 5

A sweep runs each candidate in a child forked from the fork server, which imported the training
stack but never ran a step; a bare loop runs every candidate in one process. On a CPU, bf16
(autocast, the base loaded in bf16) goes through oneDNN, which builds its kernels for each new
matrix shape the first time it meets it, and a process keeps what it built: every forked candidate
builds them again, the bare loop once. fp32 takes other kernels, built for no shape.

Here a parent imports torch, transformers and peft and, for each round and precision, forks a
child (the parent never runs a torch op, as the fork server never does: in a child of a process that
did, transformers' loading threads failed torch's "Invalid thread pool" assertion here, so building
the kernels in the fork server for its children is no option) that twice loads the built-in
tiny model, adds LoRA (r 8, q/k/v/o) and runs the same 16 steps of 4 rows (the lengths of the
first 64 records of the quickstart's train file, truncated at 256, as the candidates' batches are),
timing its CPU for the steps alone:
  first    the child's first run: what each candidate forked from the fork server pays;
  again    the same steps in the same child: what a bare loop's later candidates pay.
first - again in bf16, beyond first - again in fp32 (what a process's first steps cost anyway), is
what building the bf16 kernels costs each forked candidate. It prints the medians of the rounds
and the load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import orjson
    import peft
    import torch
    import transformers

    from tunegate.training.tiny_model import resolve_model_id

    torch.set_num_threads(1)
    path = resolve_model_id("tunegate/tiny-llama")
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    rows = [orjson.loads(line) for line in (ROOT / "examples" / "data" / "train.jsonl").read_bytes().splitlines()]
    lengths = [min(256, len(_ids(tokenizer.apply_chat_template(r["messages"], tokenize=True)))) for r in rows[:64]]
    shapes = [max(lengths[i:i + 4]) for i in range(0, 64, 4)]
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}, load average {_load()}; "
          f"{len(shapes)} steps, {len(set(shapes))} distinct lengths: {sorted(set(shapes))}")

    def steps(bf16: bool) -> float:
        model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16 if bf16 else torch.float32)
        model = peft.get_peft_model(model, peft.LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05,
                                                           target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
        gen = torch.Generator().manual_seed(0)
        start = time.process_time()
        for length in shapes:
            ids = torch.randint(3, 200, (4, length), generator=gen)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
        return time.process_time() - start

    runs: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for bf16 in (False, True):
            read, write = os.pipe()
            if (pid := os.fork()) == 0:
                os.close(read)
                os.write(write, f"{steps(bf16)} {steps(bf16)}\n".encode())
                os._exit(0)
            os.close(write)
            with os.fdopen(read) as got:
                first, again = (float(x) for x in got.read().split())
            os.waitpid(pid, 0)
            name = "bf16" if bf16 else "fp32"
            runs.setdefault(f"{name} first", []).append(first)
            runs.setdefault(f"{name} again", []).append(again)
            runs.setdefault(f"{name} first - again", []).append(first - again)
    for name, values in runs.items():
        print(f"  {name:<17} {statistics.median(values):.3f} CPU s for the {len(shapes)} steps "
              f"(min {min(values):.3f}, max {max(values):.3f}, {len(values)} rounds)")
    print(f"load average after: {_load()}")


def _ids(encoded: object) -> list[int]:
    return encoded if isinstance(encoded, list) else encoded["input_ids"]  # type: ignore[index,return-value]


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
