"""Probe how often PyNomad kills its process on valid problems, with NOMAD's defaults vs tunegate's parameters.

    python benchmarks/nomad_crash_probe.py           # 40 problems per shape, seed 0
    python benchmarks/nomad_crash_probe.py 100 7

Each problem is a random valid search (bounds, an integral start inside them, a bowl-shaped
objective somewhere near the box), run through tunegate's real NOMAD worker process, once with the
parameters `nomad_problem` builds (tunegate) and once without tunegate's one-variable workaround
(`DIRECTION_TYPE ORTHO 2N`), which is NOMAD's default. A crash is the worker dying (a NomadError).
Prints crashes per problem shape for both, and the crash rates. Then the price of the worker
process: one 100-evaluation search with `run_nomad` vs the same search with PyNomad.optimize
called in this process (the baseline), best of 3.
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tunegate.errors import NomadError  # noqa: E402
from tunegate.spec.search_space import NomadSpace  # noqa: E402
from tunegate.spec.nomad_points import point_from_overrides  # noqa: E402
from tunegate.sweep.nomad_outcome import Outcome  # noqa: E402
from tunegate.sweep.nomad_search import _drive, _Session, nomad_problem, run_nomad  # noqa: E402

WORKAROUND = "DIRECTION_TYPE ORTHO 2N"
# Shapes a sweep space can take: one integer variable (micro_batch_size or lora_rank_exp alone),
# one real variable, and mixes of two or three.
SHAPES = {"1 integer": ["micro_batch_size"], "1 real": ["dropout"],
          "integer + real": ["lora_rank_exp", "log10_learning_rate"],
          "2 integers + real": ["lora_rank_exp", "micro_batch_size", "dropout"]}
DOMAINS = {"micro_batch_size": (1, 64), "lora_rank_exp": (0, 12), "dropout": (0.0, 0.9),
           "log10_learning_rate": (-8.0, -1.0)}


def random_problem(rng: random.Random, names: list[str]) -> tuple[NomadSpace, dict[str, float]]:
    space, target = {}, {}
    for name in names:
        lo, hi = DOMAINS[name]
        if isinstance(lo, int):
            lower = rng.randint(lo, hi - 1)
            upper = rng.randint(lower + 1, hi)
            space[name] = {"lower": lower, "upper": upper, "start": rng.randint(lower, upper)}
        else:
            lower, upper = sorted(rng.uniform(lo, hi) for _ in range(2))
            space[name] = {"lower": lower, "upper": upper, "start": rng.uniform(lower, upper)}
        width = space[name]["upper"] - space[name]["lower"]
        target[name] = rng.uniform(space[name]["lower"] - width / 4, space[name]["upper"] + width / 4)
    return NomadSpace.model_validate(space), target


def crashed(space: NomadSpace, target: dict[str, float], seed: int, workaround: bool) -> bool:
    problem = nomad_problem(space, max_evals=30, seed=seed)
    if not workaround:
        problem["worker"]["params"] = [p for p in problem["worker"]["params"] if p != WORKAROUND]

    def bowl(overrides: dict) -> Outcome:
        point = point_from_overrides(space, overrides)
        return Outcome(feasible=True, objective=sum((x - t) ** 2 for x, t in zip(point, target.values())))

    session = _Session(problem["space"], bowl, None, 30, None)
    try:
        _drive(problem["worker"], session)
        return False
    except NomadError:
        return True


def main(per_shape: int, seed: int) -> None:
    rng = random.Random(seed)
    print(f"{'shape':<20} {'NOMAD defaults':>15} {'tunegate':>10}   ({per_shape} problems each)")
    totals = [0, 0]
    for shape, names in SHAPES.items():
        counts = [0, 0]
        for _ in range(per_shape):
            space, target = random_problem(rng, names)
            run_seed = rng.randint(0, 999)
            counts[0] += crashed(space, target, run_seed, workaround=False)
            counts[1] += crashed(space, target, run_seed, workaround=True)
        totals = [totals[0] + counts[0], totals[1] + counts[1]]
        print(f"{shape:<20} {counts[0]:>12} crashed {counts[1]:>7} crashed")
    n = per_shape * len(SHAPES)
    rate = [t / n for t in totals]
    print(f"{'all':<20} {totals[0]:>8}/{n} crashed {totals[1]:>4}/{n} crashed   "
          f"crash rate {rate[0]:.1%} -> {rate[1]:.1%}")



def isolation_cost(evals: int = 100) -> None:
    import PyNomad

    space = NomadSpace.model_validate({"log10_learning_rate": {"lower": -6, "upper": -2, "start": -4},
                                       "lora_rank_exp": {"lower": 1, "upper": 6, "start": 3}})
    problem = nomad_problem(space, max_evals=evals, seed=0)["worker"]

    def bb(x) -> int:
        x.setBBO(f"{(x.get_coord(0) + 3.5) ** 2 + (x.get_coord(1) - 4) ** 2} 0 0".encode())
        return 1

    def loss(o: dict) -> Outcome:
        p = point_from_overrides(space, o)
        return Outcome(feasible=True, objective=(p[0] + 3.5) ** 2 + (p[1] - 4) ** 2)

    def best_of(fn) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    inproc = best_of(lambda: PyNomad.optimize(bb, problem["x0"], problem["lower"], problem["upper"], problem["params"]))
    worker = best_of(lambda: run_nomad(space, loss, max_evals=evals, seed=0))
    print(f"{evals} evaluations: PyNomad in this process {inproc:.3f} s, run_nomad (worker process) "
          f"{worker:.3f} s: +{(worker - inproc) / evals * 1000:.2f} ms per evaluation, {worker / inproc:.1f}x")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*(args + [40, 0][len(args):]))
    isolation_cost()
