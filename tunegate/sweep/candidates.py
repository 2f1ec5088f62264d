"""Sweep candidates: dotted-key overrides of a base spec, proposed from a list or a grid.

Each candidate is written as a spec file of its own (data paths made absolute), so it passes
through exactly the same gate as a hand-written spec.
"""
from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import yaml

from tunegate.errors import UsageError
from tunegate.spec import checkpoint
from tunegate.spec.check import ParsedSpec
from tunegate.spec.model import Spec
from tunegate.spec.overrides import Overrides, apply_overrides


def propose(spec: Spec, strategy: str | None = None) -> list[Overrides]:
    """The candidates of a list or grid sweep, in order, capped at sweep.max_evals."""
    sweep = spec.sweep
    strategy = strategy or sweep.strategy
    if strategy == "nomad":
        raise UsageError("a NOMAD sweep proposes candidates as it goes; use tunegate.sweep.nomad_search")
    if strategy == "grid":
        keys = list(sweep.grid)
        # product() of no axes is one empty combination: an empty grid must propose nothing, not {}.
        # Lazy: only the first max_evals distinct points are ever made (a grid may have 10^6, TG177).
        candidates = (dict(zip(keys, values)) for values in itertools.product(*sweep.grid.values())) if keys \
            else iter(())
    else:
        candidates = (dict(c) for c in sweep.candidates)
    chosen = list(itertools.islice(_distinct(candidates), sweep.max_evals))
    if not chosen:
        raise UsageError(f"sweep.strategy is '{strategy}' but the spec lists no candidates "
                         f"(set sweep.{'grid' if strategy == 'grid' else 'candidates'}){_other_strategy(sweep, strategy)}")
    return chosen


def _other_strategy(sweep: Any, strategy: str) -> str:
    """A hint when the spec holds the candidates of the strategy it did not choose."""
    if strategy != "grid" and sweep.grid:
        return "; the spec has a sweep.grid: set sweep.strategy: grid to try it"
    if strategy == "grid" and sweep.candidates:
        return "; the spec has sweep.candidates: set sweep.strategy: list to try them"
    return ""


def _distinct(candidates: Iterable[Overrides]) -> Iterator[Overrides]:
    """Each candidate once, in order: a repeated one would train twice for the same answer (TG174)."""
    seen: set[str] = set()
    for c in candidates:
        key = orjson.dumps(c, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str).decode()
        if key not in seen:
            seen.add(key)
            yield c


def candidate_key(overrides: Overrides) -> str:
    """A short stable id for a candidate's overrides (the same on every machine and run)."""
    return hashlib.sha256(orjson.dumps(overrides, option=orjson.OPT_SORT_KEYS)).hexdigest()[:12]


# Short names of the keys sweeps vary, for run names people read in the MLflow UI.
_SHORT = {"lora.r": "r", "lora.alpha": "a", "lora.dropout": "d", "training.learning_rate": "lr",
          "training.micro_batch_size": "mb", "training.grad_accum_steps": "ga", "training.max_seq_len": "seq"}
MAX_NAME = 120


def run_name(overrides: Overrides) -> str:
    """What a candidate changes, as its MLflow run name: `r16-a32-lr1e-3`, `train=leaky_train`, `base`."""
    from tunegate.spec.pasted_keys import looks_like_key

    parts = []
    for key, value in overrides.items():
        text = _short_value(value)
        if looks_like_key(text):
            text = "[key not shown]"
        short = _SHORT.get(key)
        parts.append(f"{short}{text}" if short and not isinstance(value, bool) else
                     f"{short or key.rsplit('.', 1)[-1]}={text}")
    return ("-".join(parts) or "base")[:MAX_NAME]


def _short_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value != 0 and not 1e-2 <= abs(value) < 1e4:
        mantissa, exponent = f"{value:e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"  # 1e-3, 2.5e-4
    if isinstance(value, (int, float)):
        return f"{value:g}"
    if isinstance(value, str) and ("/" in value or value.endswith((".jsonl", ".gz"))):
        return Path(value).name.split(".")[0]  # data/leaky_train.jsonl -> leaky_train
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):  # a split of several files
        return "+".join(_short_value(v) for v in value)[:40]
    return str(value)[:40]


def candidate_digest(base_spec: ParsedSpec, overrides: Overrides) -> str:
    """SHA-256 of the candidate as the project writes it (the base spec's mapping, its paths relative,
    with the overrides): the same in every copy of the project, unlike the digest of the file
    `write_candidate_spec` writes, which names absolute paths. Its MLflow run is found by it."""
    data = {k: v for k, v in apply_overrides(base_spec.raw or {}, overrides).items() if k != "sweep"}
    options = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    return hashlib.sha256(orjson.dumps(data, option=options, default=str)).hexdigest()


def _beside(base: Path, value: Any) -> Any:
    """A path the base spec names, absolute (against the base spec's folder): the candidate's file lives elsewhere."""
    if not isinstance(value, str) or Path(value).is_absolute():
        return value
    return str((base / value).resolve())


def write_candidate_spec(base_spec: ParsedSpec, overrides: Overrides) -> Path:
    """Write the base spec with `overrides` applied beside it, in .tunegate/candidates/; return the path.

    The overrides apply to the base spec's YAML as it was parsed (`base_spec.raw`): the base file is
    not read again.
    """
    spec_path = Path(base_spec.path).resolve()
    if base_spec.raw is None:
        raise UsageError(f"{spec_path} is not a spec mapping")
    # A candidate is one spec, not a sweep: without the sweep section its spec stage checks only
    # itself, and the best candidate's file (best_spec.yaml) is ready for `tunegate launch`.
    data = {k: v for k, v in apply_overrides(base_spec.raw, overrides).items() if k != "sweep"}
    base = spec_path.parent
    for section, key in (("data", "train"), ("data", "validation"), ("full_run", "output_dir")):
        value = data.get(section, {}).get(key)
        if isinstance(value, list):  # a split of several files: each resolved
            data[section][key] = [_beside(base, v) for v in value]
        elif value is not None:
            data[section][key] = _beside(base, value)
    model = data.get("model")
    local = checkpoint.beside_spec(model["id"], base) if isinstance(model, dict) and isinstance(model.get("id"), str) else None
    if local is not None:  # the candidate's file lives elsewhere: keep naming the base spec's local model
        model["id"] = str(local)
    folder = base / ".tunegate" / "candidates"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spec_path.stem}-{candidate_key(overrides)}.yaml"
    header = f"# candidate of {spec_path.name}: {orjson.dumps(overrides).decode()}\n"
    path.write_text(header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path
