"""Benchmark the mini-run on the tiny model: where its time goes, and what its checks cost.

    python benchmarks/minirun_overhead.py                      # tiny model, CPU
    python benchmarks/minirun_overhead.py --steps 20 --reps 5 --json

Part 1 runs the whole mini-run stage once and breaks its time down (imports, load, tokenise,
steps, eval, save/reload). Part 2 measures the checked training loop (`train_steps`: a probe
forward before and after, a LoRA snapshot, per-step loss/gradient checks and syncs) against a bare
AdamW loop of the same steps on the same batches, alternating the two `--reps` times in this run, in
process CPU seconds (robust to other users of the machine); the target is a ratio under 1.5x.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

start = time.perf_counter()
import peft  # noqa: E402,F401  (timed: the imports are part of a mini-run's cost)
import torch  # noqa: E402
import transformers  # noqa: E402,F401

IMPORT_S = time.perf_counter() - start

from tunegate.minirun.profile_split import StepProfiler  # noqa: E402
from tunegate.minirun.stage import run_stage as minirun_stage  # noqa: E402
from tunegate.minirun.steps import MAX_GRAD_NORM, autocast, to_device, train_steps  # noqa: E402
from tunegate.report import FindingCollector  # noqa: E402
from tunegate.spec.check import read_spec  # noqa: E402
from tunegate.stage import GateContext  # noqa: E402
from tunegate.training.chat_tokens import collate  # noqa: E402
from tunegate.training.device import RunPlace
from tunegate.training.model import apply_lora, load_model, load_tokenizer, lora_parameters  # noqa: E402
from tunegate.training.tiny_model import resolve_model_id  # noqa: E402
from tunegate.training.token_audit import audit_split  # noqa: E402


def whole_stage(spec) -> dict:
    ctx = GateContext(None, spec, {"train": spec.data.train, "validation": spec.data.validation}, 20, mini_run=True)
    result = minirun_stage(ctx)
    if result.status != "passed":
        raise SystemExit(f"the mini-run did not pass: {[f.code for f in result.findings]}")
    keys = ["imports_s", "resolve_s", "tokenizer_load_s", "load_s", "tokenize_s", "steps_s", "eval_s",
            "save_reload_s", "total_s"]
    return {k: result.stats.get(k) for k in keys} | {"tokens_per_s": result.stats["tokens_per_s"]}


def bare_steps(model, batches, spec, place) -> None:
    """The same optimizer steps with nothing checked: what a plain training script does."""
    params = list(lora_parameters(model).values())
    optimizer = torch.optim.AdamW(params, lr=spec.training.learning_rate)
    accum = spec.training.grad_accum_steps
    model.train()
    for step in range(spec.gate.mini_run.steps):
        for i in range(accum):
            batch = to_device(batches[(step * accum + i) % len(batches)], place.device)
            with autocast(place):
                loss = model(**batch).loss / accum
            loss.backward()
        torch.nn.utils.clip_grad_norm_(params, MAX_GRAD_NORM)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    if place.device == "cuda":
        torch.cuda.synchronize()


def fresh_model(path, spec, place):
    torch.manual_seed(spec.training.seed)
    return apply_lora(load_model(path, spec, place), spec, FindingCollector("bench"))


def loop_overhead(spec, reps: int) -> dict:
    place = RunPlace("cpu", spec.training.precision, spec.training.attention)
    path = resolve_model_id(spec.model.id)
    tokenizer = load_tokenizer(path, spec)
    _, audited = audit_split(spec.data.train, "train", tokenizer, spec.training.max_seq_len, FindingCollector("b"))
    micro = spec.training.micro_batch_size
    sample = [a.encoded for a in audited if a.usable][:spec.gate.mini_run.sample_size]
    batches = [collate(sample[i:i + micro], tokenizer.pad_token_id) for i in range(0, len(sample), micro)]
    bare_steps(fresh_model(path, spec, place), batches, spec, place)  # warm-up: first-call kernel setup
    checked, bare, profiled = [], [], []
    loops = [(checked, lambda m: train_steps(m, batches, spec, place, FindingCollector("bench"))),
             (bare, lambda m: bare_steps(m, batches, spec, place)),
             (profiled, lambda m: train_steps(m, batches, spec, place, FindingCollector("bench"),
                                              StepProfiler(place)))]
    for rep in range(reps):  # alternate, and swap who goes first, so load drift hits all alike
        for times, loop in (loops if rep % 2 == 0 else loops[::-1]):
            model = fresh_model(path, spec, place)
            t = time.process_time()  # CPU seconds: other users of a shared machine inflate wall time
            loop(model)
            times.append(time.process_time() - t)
    c, b, p = min(checked), min(bare), min(profiled)  # the least-disturbed run of each, as timeit advises
    return {"steps": spec.gate.mini_run.steps, "reps": reps, "checked_cpu_s": round(c, 4), "bare_cpu_s": round(b, 4),
            "ratio": round(c / b, 3),
            "ratio_of_medians": round(statistics.median(checked) / statistics.median(bare), 3),
            "profiled_cpu_s": round(p, 4), "profiled_ratio": round(p / b, 3)}


def main() -> None:
    warnings.simplefilter("ignore", FutureWarning)  # PEFT calls a method transformers 5 deprecated
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=str(ROOT / "tests/data/minirun/good.yaml"))
    parser.add_argument("--steps", type=int, default=20, help="optimizer steps in the loop comparison")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads; 1 keeps OpenMP from spinning on a shared machine")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    transformers.utils.logging.disable_progress_bar()
    torch.set_num_threads(args.threads)
    _, spec = read_spec(Path(args.spec))
    stage = whole_stage(spec)  # cold: what one `tunegate check --mini-run` pays
    stage["warm_total_s"] = whole_stage(spec)["total_s"]  # the same again in this process
    mini = spec.gate.mini_run.model_copy(update={"steps": args.steps})
    loop = loop_overhead(spec.model_copy(update={"gate": spec.gate.model_copy(update={"mini_run": mini})}), args.reps)
    report = {"top_level_imports_s": round(IMPORT_S, 3), "stage": stage, "loop": loop,
              "torch_threads": torch.get_num_threads()}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"import torch, transformers, peft: {report['top_level_imports_s']}s")
    print("whole mini-run (one run, seconds): " + ", ".join(f"{k}={v}" for k, v in stage.items()))
    print(f"checked loop {loop['checked_cpu_s']} CPU-s vs bare loop {loop['bare_cpu_s']} CPU-s for {loop['steps']} "
          f"steps (best of {loop['reps']}): {loop['ratio']}x (median ratio {loop['ratio_of_medians']}x; "
          "target < 1.5x)")
    print(f"checked loop with steps 2-3 under torch.profiler (as the stage runs it): "
          f"{loop['profiled_cpu_s']} CPU-s: {loop['profiled_ratio']}x the bare loop")


if __name__ == "__main__":
    main()
