"""NOMAD proposes sweep candidates; a caller-supplied black box gates and scores each one.

    from tunegate.sweep.nomad_search import run_nomad
    result = run_nomad(start_from(spec.sweep.space, spec), evaluate,
                       max_evals=spec.sweep.max_evals, seed=spec.sweep.seed)
    result.best_overrides          # {"training.learning_rate": 0.0001, "lora.r": 16, ...}

PyNomad runs in a worker process (`tunegate.sweep.nomad_worker`), so a NOMAD crash ends that process,
not the caller's: it becomes a `NomadError` carrying the evaluations made so far. Every input
NOMAD is known to die on is also rejected here first. The black box runs in the caller's process
(its threads, its Prefect task runner, its MLflow client); NOMAD only sees numbers.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tunegate.errors import MissingDependency, NomadError
from tunegate.spec.nomad_points import checked_problem, to_overrides
from tunegate.spec.search_space import NomadSpace
from tunegate.sweep.nomad_outcome import OUTPUT_TYPES, Outcome, coerce, from_exception, nomad_outputs

Evaluate = Callable[[dict[str, Any]], Outcome]
EvaluateMany = Callable[[list[dict[str, Any]]], Sequence[Any]]
WORKER = Path(__file__).with_name("nomad_worker.py")


class Evaluation(BaseModel):
    """One point NOMAD proposed, the overrides it stands for, and the black box's verdict."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(description="0-based order of evaluation.")
    block: int = Field(description="0-based index of the NOMAD block the point came in.")
    point: list[float] = Field(description="NOMAD's coordinates, in NomadSpace.names() order.")
    overrides: dict[str, Any] = Field(description="Dotted-key spec overrides of this candidate.")
    outcome: Outcome


class NomadResult(BaseModel):
    """Every evaluation in order, the best feasible one, and why NOMAD stopped."""

    model_config = ConfigDict(extra="forbid")

    evaluations: list[Evaluation]
    best_index: int | None = Field(description="Index of the best feasible evaluation; None if none was feasible.")
    run_flag: int = Field(description="NOMAD's run flag: 1 converged, 0 budget spent, -1/-2 no feasible point, "
                                      "-3 start point failed.")
    stop_reason: str
    seed: int
    max_evals: int

    @property
    def best(self) -> Evaluation | None:
        return None if self.best_index is None else self.evaluations[self.best_index]

    @property
    def best_overrides(self) -> dict[str, Any] | None:
        return None if self.best is None else self.best.overrides

    @property
    def rejected(self) -> list[Evaluation]:
        return [e for e in self.evaluations if not e.outcome.feasible]


def run_nomad(space: NomadSpace | dict[str, Any], evaluate: Evaluate, *, max_evals: int, seed: int,
              max_block_size: int = 1, evaluate_many: EvaluateMany | None = None,
              history_path: str | Path | None = None) -> NomadResult:
    """Minimise the black box's objective over `space` with NOMAD (MADS); return every evaluation.

    Args:
        space: the search space; every variable needs a start (see `NomadSpace.start_from`).
        evaluate: overrides -> Outcome for one candidate. An exception it raises is recorded as a
            failed evaluation with the exception as reason; the search goes on.
        max_evals: most black-box evaluations (NOMAD's MAX_BB_EVAL); never exceeded.
        seed: NOMAD's SEED; the same seed and answers give the same sequence of points.
        max_block_size: points NOMAD proposes at once (BB_MAX_BLOCK_SIZE); above 1 each block goes
            to `evaluate_many`, so the caller can evaluate them in parallel.
        evaluate_many: list of overrides -> one Outcome (or exception) per item, in order;
            default: `evaluate` on each in turn.
        history_path: a JSON-lines file that gets every evaluation as soon as it is made.

    Raises:
        SpaceError: the space or a setting is unusable (before NOMAD starts).
        MissingDependency: PyNomadBBO is not installed.
        NomadError: NOMAD's process ended without a result.
    """
    problem = nomad_problem(space, max_evals=max_evals, seed=seed, max_block_size=max_block_size)
    session = _Session(problem["space"], evaluate, evaluate_many, max_evals, history_path)
    raw = _drive(problem["worker"], session)
    return NomadResult(evaluations=session.evaluations, best_index=_best_index(raw, session.evaluations),
                       run_flag=int(raw.get("run_flag", 0)), stop_reason=str(raw.get("stop_reason", "")),
                       seed=seed, max_evals=max_evals)


def nomad_problem(space: NomadSpace | dict[str, Any], *, max_evals: int, seed: int,
                  max_block_size: int = 1) -> dict[str, Any]:
    """Validate everything NOMAD will see and build its parameters; raise SpaceError, never crash."""
    space = checked_problem(space, max_evals=max_evals, seed=seed, max_block_size=max_block_size)
    x0, lower, upper = space.start(), space.lower(), space.upper()
    params = [f"DIMENSION {len(x0)}", f"BB_INPUT_TYPE {space.input_types()}",
              f"BB_OUTPUT_TYPE {OUTPUT_TYPES}", f"MAX_BB_EVAL {max_evals}", f"SEED {seed}",
              "DISPLAY_DEGREE 0"]
    if len(x0) == 1:
        # NOMAD 4.6.0 segfaults ("ArrayOfDouble: Array is not defined") on most one-variable
        # integer problems with its default ORTHO N+1 QUAD directions; with 2N it never did
        # (benchmarks/nomad_crash_probe.py). In one dimension both poll the same two directions.
        params.append("DIRECTION_TYPE ORTHO 2N")
    if max_block_size > 1:
        # Without MEGA_SEARCH_POLL NOMAD sends mostly single points even with a large block size
        # (its search steps propose one point each); with it, search and poll points share a block.
        params += [f"BB_MAX_BLOCK_SIZE {max_block_size}", "MEGA_SEARCH_POLL yes"]
    worker = {"x0": x0, "lower": lower, "upper": upper, "params": params, "block": max_block_size > 1}
    return {"space": space, "worker": worker}


class _Session:
    """The parent's side: turns NOMAD's points into overrides, evaluates them, records and answers."""

    def __init__(self, space: NomadSpace, evaluate: Evaluate, evaluate_many: EvaluateMany | None,
                 max_evals: int, history_path: str | Path | None):
        self.space, self.evaluate, self.evaluate_many = space, evaluate, evaluate_many
        self.max_evals = max_evals
        self.history = Path(history_path) if history_path is not None else None
        self.evaluations: list[Evaluation] = []
        self.blocks = 0

    def answer(self, points: list[list[float]]) -> list[tuple[bool, str]]:
        """NOMAD's outputs for a block; points past the budget are answered 'not evaluated'."""
        room = max(self.max_evals - len(self.evaluations), 0)
        todo = points[:room]
        overrides = [to_overrides(self.space, p) for p in todo]
        outcomes = self._outcomes(overrides)
        for point, over, outcome in zip(todo, overrides, outcomes):
            self._record(Evaluation(index=len(self.evaluations), block=self.blocks, point=point,
                                    overrides=over, outcome=outcome))
        self.blocks += 1
        # A block can overshoot MAX_BB_EVAL (NOMAD checks the budget between blocks only).
        return [(True, nomad_outputs(o)) for o in outcomes] + [(False, "")] * (len(points) - len(todo))

    def _outcomes(self, overrides: list[dict[str, Any]]) -> list[Outcome]:
        if not overrides:
            return []
        if self.evaluate_many is None:
            return [self._one(o) for o in overrides]
        try:
            answers = list(self.evaluate_many(overrides))
        except Exception as exc:  # one broken block fails its points, not the sweep
            return [from_exception(exc)] * len(overrides)
        if len(answers) != len(overrides):
            bad = ValueError(f"evaluate_many returned {len(answers)} outcomes for {len(overrides)} candidates")
            return [from_exception(bad)] * len(overrides)
        return [coerce(a) for a in answers]

    def _one(self, overrides: dict[str, Any]) -> Outcome:
        try:
            return coerce(self.evaluate(overrides))
        except Exception as exc:  # the black box's failure is this point's verdict, not the sweep's
            return from_exception(exc)

    def _record(self, evaluation: Evaluation) -> None:
        self.evaluations.append(evaluation)
        if self.history is not None:
            with self.history.open("a", encoding="utf-8") as fh:
                fh.write(evaluation.model_dump_json() + "\n")


def _drive(problem: dict[str, Any], session: _Session) -> dict[str, Any]:
    """Run the worker, answer its blocks, and return PyNomad's result dict."""
    import importlib.util

    if importlib.util.find_spec("PyNomad") is None:
        raise MissingDependency("PyNomadBBO", "nomad")
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as err:
        proc = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, text=True, encoding="utf-8")
        try:
            _send(proc, problem)
            for line in proc.stdout:  # type: ignore[union-attr]
                message = json.loads(line)
                if "result" in message:
                    proc.wait()
                    return message["result"]
                _send(proc, {"outputs": session.answer(message["points"])})
            code = proc.wait()
        finally:
            if proc.poll() is None:  # the caller was interrupted: do not leave NOMAD waiting
                proc.kill()
                proc.wait()
        err.seek(0)
        stderr = err.read()[-4000:]
    raise NomadError(f"NOMAD stopped without a result (worker exit code {code}); its last words:\n"
                     f"{stderr.strip() or '(nothing)'}", session.evaluations, stderr)


def _send(proc: subprocess.Popen, message: dict[str, Any]) -> None:
    proc.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]


def _best_index(raw: dict[str, Any], evaluations: list[Evaluation]) -> int | None:
    """The best feasible evaluation: NOMAD's own pick (4.6 or 4.5 keys), found in our record."""
    picks = _feasible_picks(raw)
    feasible = [e for e in evaluations if e.outcome.feasible]
    for e in feasible:
        if any(_same(e.point, p) for p in picks):
            return e.index
    if not feasible:
        return None
    # NOMAD's pick is not in the record (only if its result keys change again): the lowest loss.
    return min(feasible, key=lambda e: e.outcome.objective or 0.0).index


def _feasible_picks(raw: dict[str, Any]) -> list[list[float]]:
    """Best feasible points in PyNomad's result: `x_best_feas` (4.6), else a feasible `x_best` (4.5)."""
    if raw.get("x_best_feas"):
        return [list(p) for p in raw["x_best_feas"]]
    for x_key, h_key in (("x_best", "h_best"), ("x_single_best", "h_single_best")):
        if raw.get(x_key) and raw.get(h_key) == 0:
            return [list(raw[x_key])]
    return []


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12) for x, y in zip(a, b))
