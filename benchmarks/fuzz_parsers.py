"""Fuzz each reader with 100,000 inputs: the spec YAML loader, the strict JSONL reader, the lenient
reader, a number under every spec key, axolotl, TRL and LLaMA-Factory configs, and data files of any name.

    python benchmarks/fuzz_parsers.py                   # 100,000 inputs per reader (nightly tier)
    python benchmarks/fuzz_parsers.py --inputs 5000     # a quick look
    python benchmarks/fuzz_parsers.py --only path       # one reader

Inputs: mutations of the committed seeds (examples/*.yaml and tests/data/spec for the spec; the
good dataset corpus for JSONL; tests/data/configs for the configs, each read as detected and as
each dialect of tunegate.spec.importers.registry) with parser-breaking hazards spliced in, one in five random bytes, and for the
readers one in five gzipped (and cut short at random). Numbers: a key of the spec model with a
value drawn around the seed corpus of issue 36 (tests/support/hostile.py): 10**4000, 2**63,
subnormals, negatives. Paths: a data file named from that corpus's hazards (NUL, 300-byte names,
glob patterns, escapes, line breaks, bytes that are not UTF-8, /proc/kmsg), made on disk when the
file system takes the name, read through the spec stage, the static gate, the dataset stage and
the fingerprint. Reproducible: `--seed`. What counts as a failure is in tests/support/fuzz.py (an
exception that is not tunegate's own, or a finding without its place); an input that takes longer
than --hang-s is a hang. Prints inputs, internal errors, hangs and seconds per reader; exits 1 on
any failure and writes the failing inputs to benchmarks/out/fuzz/. The same properties run in CI
with a small hypothesis budget (tests/spec/test_fuzz.py, tests/dataset/test_fuzz.py,
tests/cli/test_fuzz_commands.py).
"""
from __future__ import annotations

import argparse
import gzip
import math
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.support.fuzz import (  # noqa: E402
    CONFIG_SEEDS,
    JSONL_SEEDS,
    SPEC_SEEDS,
    config_input,
    key_range,
    lenient_input,
    number_input,
    numeric_keys,
    path_input,
    spec_input,
    strict_input,
)
from tests.support.hostile import NUMBERS, PATHS  # noqa: E402
from tests.support.mutate import JSON_HAZARDS, YAML_HAZARDS, mutate  # noqa: E402
from tunegate.spec import bounds  # noqa: E402
from tunegate.spec.importers.registry import DIALECTS  # noqa: E402

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


# Text that breaks number readers, spliced into configs, and pieces of hostile file names.
NUMBER_HAZARDS = [b"1" + b"0" * 4000, b"9223372036854775808", b"1e-320", b"5e-324", b"1e400", b"-1", b"0x" + b"f" * 40,
                  b"1_000_000_000", b".nan", b"-.inf"]
NAME_PIECES = ["\0", "\n", "\r", "\t", "\x1b[31m", "\u2028", "*", "?", "[", "**", "/", "..", "%41", "%", "'", '"',
               "\\", "-", " ", "~", "x" * 260, "\udce9", "\udcff", ".jsonl", ".gz", "/proc/kmsg", "/dev/zero"]


# The largest values a spec accepts (tunegate/spec/bounds.py): the arithmetic downstream must hold there too.
LIMITS = [v for k, v in vars(bounds).items() if k.startswith("MAX_") and isinstance(v, int)]


def number_value(rng: random.Random, key: str) -> object:
    """A value for `key`: mostly one the spec accepts there (at its bounds, or spread over its
    range on a log scale), so the estimate and the advisor compute with it; else one around the seed
    corpus: its own numbers, the spec's limits, huge or tiny ints, any float, subnormals."""
    if rng.random() < 0.7:
        return in_range(rng, *key_range(key))
    pick = rng.random()
    if pick < 0.15:
        return rng.choice(NUMBERS)[1]
    if pick < 0.45:
        return rng.choice(LIMITS) + rng.choice((0, 0, -1, 1))
    if pick < 0.6:
        return rng.choice((1, -1)) * 10 ** rng.randint(0, 4200) + rng.randint(-3, 3)
    if pick < 0.8:
        return rng.choice((1, -1)) * rng.random() * 10.0 ** rng.randint(-330, 308)
    return rng.choice([5e-324, 1e-320, 2 ** 63, 2 ** 64 - 1, 0, -0.0, float("inf"), float("nan"), True, "1e400"])


def in_range(rng: random.Random, low: float, high: float, whole: bool) -> object:
    pick = rng.random()
    if pick < 0.4:
        value = rng.choice((low, high, low + (1 if whole else 1e-12 * max(1.0, low)), high - (1 if whole else 0)))
    else:  # log-uniform between the bounds (uniform when they straddle 0)
        floor = max(low, 1e-300 if not whole else 1)
        ceiling = max(high, floor)
        value = 10 ** rng.uniform(math.log10(floor), math.log10(ceiling)) if floor > 0 else rng.uniform(low, high)
    value = min(max(value, low), high)
    return max(int(value), int(low) + (low == 0)) if whole else value


def path_name(rng: random.Random) -> str:
    """A data file name from the corpus, or pieces of hostile names joined at random."""
    if rng.random() < 0.2:
        return rng.choice(PATHS)
    parts = [rng.choice(NAME_PIECES) if rng.random() < 0.6 else rng.randbytes(rng.randint(1, 4)).decode(
        "utf-8", "surrogateescape") for _ in range(rng.randint(1, 5))]
    return "".join(parts)


def inputs(name: str, rng: random.Random) -> tuple[object, ...]:
    """The arguments of reader `name`'s check for one input."""
    if name == "spec":
        return (make_input(rng, SPEC_SEEDS, YAML_HAZARDS, may_gzip=False)[0],)
    if name in ("strict", "lenient"):
        return make_input(rng, JSONL_SEEDS, JSON_HAZARDS, may_gzip=True)
    if name == "number":  # one to four keys at once: the limits meet in products (tokens x steps x GPUs)
        keys = [rng.choice(KEYS) for _ in range(rng.randint(1, 4))]
        return ({key: number_value(rng, key) for key in keys},)
    if name == "config":
        data = mutate(rng, rng.choice(CONFIG_SEEDS), YAML_HAZARDS + NUMBER_HAZARDS)
        return data, rng.choice([None, *DIALECTS])
    return (path_name(rng),)


KEYS = numeric_keys()
# Each reader's check, given one input's arguments (from `inputs`) and a folder of its own.
READERS = {
    "spec": lambda args, folder: spec_input(args[0], folder),
    "strict": lambda args, folder: strict_input(args[0], folder, args[1]),
    "lenient": lambda args, folder: lenient_input(args[0], folder, args[1]),
    "number": lambda args, folder: number_input(args[0], folder),
    "config": lambda args, folder: config_input(args[0], folder, args[1]),
    "path": lambda args, folder: path_input(args[0], folder),
}


class Hang(Exception):
    pass


def _hang(*_: object) -> None:
    raise Hang()


def fuzz(name: str, inputs_n: int, seed: int, hang_s: int) -> int:
    rng = random.Random(f"{name}-{seed}")
    failures = hangs = 0
    start = time.perf_counter()
    signal.signal(signal.SIGALRM, _hang)
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(inputs_n):
            args = inputs(name, rng)
            folder = Path(tmp) / str(i)
            folder.mkdir()
            signal.alarm(hang_s)
            try:
                READERS[name](args, folder)
            except Hang:
                hangs += 1
                _keep(name, i, args, "hang")
            except Exception:  # an internal error: keep the input and the trace
                failures += 1
                _keep(name, i, args, traceback.format_exc())
            finally:
                signal.alarm(0)
                shutil.rmtree(folder, ignore_errors=True)
    took = time.perf_counter() - start
    print(f"{name:8} {inputs_n:>8,} inputs  {failures:>4} internal errors  {hangs:>3} hangs  {took:8.1f} s  "
          f"({took / inputs_n * 1e3:.2f} ms per input)", flush=True)
    return failures + hangs


def _keep(name: str, i: int, args: tuple[object, ...], why: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}-{i}.txt").write_text(f"{why}\n{args!r:.20000}\n", errors="backslashreplace")
    if isinstance(args[0], bytes):
        (OUT / f"{name}-{i}.bin").write_bytes(args[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=sorted(READERS))
    parser.add_argument("--hang-s", type=int, default=30, help="seconds one input may take before it is a hang")
    args = parser.parse_args()
    failures = sum(fuzz(name, args.inputs, args.seed, args.hang_s) for name in READERS if args.only in (None, name))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
