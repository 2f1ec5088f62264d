"""Fuzz each parser with 100,000 inputs: the spec YAML loader, the strict JSONL reader, the lenient reader.

    python benchmarks/fuzz_parsers.py                   # 100,000 inputs per parser (nightly tier)
    python benchmarks/fuzz_parsers.py --inputs 5000     # a quick look

Inputs: mutations of the committed seeds (examples/*.yaml and tests/data/spec for the spec; the
good dataset corpus for JSONL) with parser-breaking hazards spliced in, one in five random bytes,
and for the readers one in five gzipped (and cut short at random). Reproducible: `--seed`. What
counts as a failure is in tests/support/fuzz.py (an exception that is not tunegate's own, or a
finding without its place). Prints inputs, failures, seconds per parser; exits 1 on any failure
and writes the failing inputs to benchmarks/out/fuzz/. The same properties run in CI with a
small hypothesis budget (tests/spec/test_fuzz.py, tests/dataset/test_fuzz.py).
"""
from __future__ import annotations

import argparse
import gzip
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.support.fuzz import JSONL_SEEDS, SPEC_SEEDS, lenient_input, spec_input, strict_input  # noqa: E402
from tests.support.mutate import JSON_HAZARDS, YAML_HAZARDS, mutate  # noqa: E402

OUT = HERE / "out" / "fuzz"


def make_input(rng: random.Random, seeds: list[bytes], hazards: list[bytes], may_gzip: bool) -> tuple[bytes, str]:
    if rng.random() < 0.2:
        data = rng.randbytes(rng.randint(0, 600))
    else:
        data = mutate(rng, rng.choice(seeds), hazards)
    if may_gzip and rng.random() < 0.2:
        packed = gzip.compress(data, mtime=0)
        return packed[:len(packed) - rng.randint(0, 40)], "fuzz.jsonl.gz"
    return data, "fuzz.jsonl"


def fuzz(name: str, check, seeds: list[bytes], hazards: list[bytes], inputs: int, seed: int) -> int:
    rng = random.Random(f"{name}-{seed}")
    failures = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i in range(inputs):
            data, file_name = make_input(rng, seeds, hazards, may_gzip=name != "spec")
            try:
                check(data, folder) if name == "spec" else check(data, folder, file_name)
            except Exception:  # an internal error: keep the input and the trace
                failures += 1
                OUT.mkdir(parents=True, exist_ok=True)
                (OUT / f"{name}-{i}.bin").write_bytes(data)
                (OUT / f"{name}-{i}.txt").write_text(traceback.format_exc())
    took = time.perf_counter() - start
    print(f"{name:8} {inputs:>8,} inputs  {failures:>4} internal errors  {took:7.1f} s  "
          f"({took / inputs * 1e3:.2f} ms per input)")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=["spec", "strict", "lenient"])
    args = parser.parse_args()
    runs = {"spec": (spec_input, SPEC_SEEDS, YAML_HAZARDS), "strict": (strict_input, JSONL_SEEDS, JSON_HAZARDS),
            "lenient": (lenient_input, JSONL_SEEDS, JSON_HAZARDS)}
    failures = sum(fuzz(name, *runs[name], args.inputs, args.seed) for name in runs if args.only in (None, name))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
