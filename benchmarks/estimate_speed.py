"""How long `tunegate estimate` takes as a user runs it: the config-only counter, and the meta-device path.

    python benchmarks/estimate_speed.py --reps 7

Times whole commands in fresh processes, best and median of --reps, against `tunegate gpus` in the
same run (the same interpreter start and CLI import, no estimate) as the baseline:

* `tunegate estimate SPEC --json` with the config-only counter (torch-free; target < 0.5 s);
* `tunegate estimate SPEC --json --meta` (transformers builds the model on the meta device);

for the worked case (Llama-3.1-8B), Mixtral-8x7B and Llama-3.1-70B. It also times the estimate
in-process (the spec already parsed: what the gate's stage 3 costs), and the meta-device count
alone after its imports.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = {"Llama-3.1-8B": "meta-llama/Llama-3.1-8B", "Mixtral-8x7B": "mistralai/Mixtral-8x7B-v0.1",
          "Llama-3.1-70B": "meta-llama/Llama-3.1-70B"}


def spec_for(model_id: str, folder: Path) -> Path:
    text = (ROOT / "examples" / "worked_case.yaml").read_text()
    text = text.replace("meta-llama/Llama-3.1-8B", model_id)
    text = text.replace("data/train.jsonl", str(ROOT / "examples" / "data" / "train.jsonl"))
    text = text.replace("data/validation.jsonl", str(ROOT / "examples" / "data" / "validation.jsonl"))
    path = folder / f"{model_id.replace('/', '--')}.yaml"
    path.write_text(text)
    return path


def timed(args: list[str], reps: int) -> list[float]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT, env=env, capture_output=True,
                       check=False, timeout=300)
        out.append(time.perf_counter() - start)
    return out


def line(name: str, times: list[float], base: float) -> str:
    best, median = min(times), statistics.median(times)
    return f"{name:<34}{best:>8.3f}{median:>9.3f}{best / base:>8.2f}x"


def in_process(spec_path: Path, reps: int) -> tuple[float, float]:
    """(best seconds of estimate + readings in this process, best seconds of one meta-device count)."""
    sys.path.insert(0, str(ROOT))
    from tunegate.estimate.config_files import find_config
    from tunegate.estimate.meta_count import meta_count
    from tunegate.estimate.readings import summary_with_readings
    from tunegate.estimate.run import estimate_run
    from tunegate.spec.check import read_spec

    _, spec = read_spec(spec_path)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        summary_with_readings(spec, estimate_run(spec), base_dir=spec_path.parent)
        times.append(time.perf_counter() - start)
    config, _ = find_config(spec.model.id)
    meta_count(config)  # the imports, once
    return min(times), min(meta_count(config).seconds for _ in range(reps))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = timed(["gpus"], args.reps)
        print(f"{'command (seconds)':<34}{'best':>8}{'median':>9}{'ratio':>9}")
        print(line("tunegate gpus (baseline)", base, min(base)))
        for label, model_id in MODELS.items():
            spec = str(spec_for(model_id, Path(tmp)))
            plain = timed(["estimate", spec, "--json"], args.reps)
            meta = timed(["estimate", spec, "--json", "--meta"], args.reps)
            print(line(f"estimate {label}", plain, min(base)))
            print(line(f"estimate {label} --meta", meta, min(base)))
            own, count = in_process(Path(spec), args.reps)
            print(f"  in-process: estimate + readings {own * 1000:.1f} ms; meta-device count {count:.3f} s "
                  "(after the imports)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
