"""Where a sweep's candidates can run on this install: the spec stage names what is missing.

`sweep.task_runner: dask` needs prefect-dask and `ray` needs prefect-ray (and ray): without them the
sweep would fail only after the data stages ran, so this stage rejects the spec at the key (TG167).
Checked by looking for the packages, never importing them: the spec stage imports neither.
`sweep.gpu_per_candidate: true` asks an engine for one GPU per candidate; the threads runner has no
engine to ask, so every candidate would share the flow process's GPUs (TG168).
"""
from __future__ import annotations

import importlib.util
from collections.abc import Iterator

from tunegate.report import Finding
from tunegate.spec.model import Spec, SweepSpec
from tunegate.spec.trainer_support import as_findings

ENGINES = {"dask": (("prefect_dask", "distributed"), "dask"), "ray": (("prefect_ray", "ray"), "ray")}


def gpu_per_candidate(spec: Spec) -> bool:
    """Whether each candidate asks for one GPU: as the spec says, else when the mini-run is on cuda."""
    wanted = spec.sweep.gpu_per_candidate
    return spec.gate.mini_run.device == "cuda" if wanted is None else wanted


def missing(sweep: SweepSpec) -> list[str]:
    """The packages `sweep.task_runner` needs that are not installed here."""
    modules, _ = ENGINES.get(sweep.task_runner, ((), ""))
    return [m.replace("_", "-") for m in modules if importlib.util.find_spec(m) is None]


def unrunnable(spec: Spec) -> Iterator[tuple[str, str, str, str]]:
    """(code, key, message, fix) for each sweep setting this install cannot run."""
    sweep = spec.sweep
    if absent := missing(sweep):
        extra = ENGINES[sweep.task_runner][1]
        yield ("TG167", "sweep.task_runner",
               f"sweep.task_runner '{sweep.task_runner}' needs {' and '.join(absent)}, which is not installed: "
               "the sweep could not start its candidates",
               f"pip install 'tunegate[{extra}]' where the sweep runs (and on every worker of its cluster), "
               "or set sweep.task_runner: threads.")
    if sweep.task_runner == "threads" and sweep.gpu_per_candidate:
        yield ("TG168", "sweep.gpu_per_candidate",
               "sweep.gpu_per_candidate is true on the threads runner, which cannot give a candidate a GPU "
               "of its own: every candidate would train on the same devices",
               "Set sweep.task_runner: dask or ray (each candidate then asks for one GPU), or remove "
               "sweep.gpu_per_candidate and keep sweep.max_parallel: 1 on one GPU.")


def findings(spec: Spec, place, file: str) -> Iterator[Finding]:
    """The TG167/TG168 errors as findings, at the key's line and column (`place(key) -> (line, col)`)."""
    return as_findings(unrunnable(spec), place, file)
