"""Which optional extra brings which import, and the usage error (exit 2) a missing one is.

    require("prefect", "mlflow", why="tunegate preflight runs a Prefect flow tracked in MLflow")
    missing_extra(exc)     # a ModuleNotFoundError of an optional package -> MissingDependency, else None

A missing extra is the environment, not the user's config and not a bug of ours: each command
that needs one says so before it starts, naming the `pip install 'tunegate[...]'` line, and the
CLI's error boundary turns any import of an optional package that still fails later into the same
message. Modules are looked up with `importlib.util.find_spec`, which imports nothing.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from pathlib import Path

from tunegate.errors import MissingDependency, UsageError

# Top-level module -> the extra of pyproject.toml that installs it.
EXTRA_OF = {
    "torch": "train", "transformers": "train", "peft": "train", "accelerate": "train",
    "tokenizers": "train", "safetensors": "train", "jinja2": "train",
    "prefect": "orchestrate", "mlflow": "orchestrate", "filelock": "orchestrate", "rich": "orchestrate",
    "openai": "advisor", "pyarrow": "parquet", "PyNomad": "nomad",
    "prefect_dask": "dask", "dask": "dask", "distributed": "dask", "prefect_ray": "ray", "ray": "ray",
    "psycopg": "postgres", "bitsandbytes": "qlora",
}
TRAINING = ("torch", "transformers", "peft")  # what the mini-run, a sweep's candidates and the full run import
ORCHESTRATION = ("prefect", "mlflow")  # what every flow command imports


def installed(module: str) -> bool:
    """Whether `module` can be imported here (found on the path, not imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing, or a module without a spec
        return False


def require(*modules: str, why: str) -> None:
    """Raise MissingDependency for the first of `modules` that is not installed; `why` says who needs it."""
    for module in modules:
        if not installed(module):
            raise MissingDependency(f"{module} ({why})", EXTRA_OF[module])


def require_readers(paths: Iterable[str | Path | None]) -> None:
    """pyarrow for a parquet or Arrow data file (MissingDependency naming the file). A path that is not
    a readable file is left to the dataset stage, which reports it as a finding."""
    if installed("pyarrow"):
        return
    from tunegate.file_kinds import kind_of
    from tunegate.pathguard import shown

    for path in paths:
        if path is None:
            continue
        try:
            kind = kind_of(Path(path))
        except (UsageError, OSError):
            continue
        if kind in ("parquet", "arrow"):
            raise MissingDependency(f"pyarrow (to read the {kind} file {shown(path)})", "parquet")


def missing_extra(exc: BaseException) -> MissingDependency | None:
    """The MissingDependency an import failure of an optional package is, following the chain of causes;
    None for any other error (a module of the base install that is missing is a broken install or a bug)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, MissingDependency):
            return exc
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            top = exc.name.split(".")[0]
            if top in EXTRA_OF and not installed(top):
                return MissingDependency(top, EXTRA_OF[top])
        exc = exc.__cause__ or exc.__context__
    return None
