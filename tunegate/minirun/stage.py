"""Stage 4, the mini-run: real LoRA steps on a sample, exercising the full run's whole lifecycle.

Run: `tunegate check examples/quickstart.yaml --mini-run`

Load model and tokenizer as the full run will, tokenise and audit both splits with the chat
template, train a handful of steps of the full run's optimizer on `gate.mini_run.sample_size`
records with a health check on every step, evaluate once, save the adapter and tokenizer, read
them back (the adapter beside the trained one, in memory) and compare. Everything it measures (load
and step time, tokens/s, peak memory, every step's loss and gradient norm) goes into the stage's
stats; real token counts go to `ctx.facts.tokens` and the measurements to `ctx.facts.mini_run`.
"""
from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

from tunegate import progress
from tunegate.facts import GateFacts
from tunegate.processes.held_collections import collections_held
from tunegate.report import FindingCollector, StageResult
from tunegate.spec.model import Spec
from tunegate.stage import GateContext

STAGE = "mini-run"
STACK = ("torch", "transformers", "peft")


def run_mini_lora(spec: Spec, files: dict[str, Path], cap: int = 20,
                  facts: GateFacts | None = None) -> tuple[StageResult, GateFacts]:
    """The mini-run as a library call: its stage result and what it measured.

        result, facts = run_mini_lora(spec, {"train": spec.data.train, "validation": spec.data.validation})
    """
    ctx = GateContext(None, spec, dict(files), cap, mini_run=True, facts=facts or GateFacts())
    return run_stage(ctx), ctx.facts


def run_stage(ctx: GateContext) -> StageResult:
    """Run the mini-run for the context's spec and data; every problem is a finding."""
    if ctx.spec is None:
        return StageResult.skipped(STAGE, "no spec: the mini-run needs the model, LoRA and training settings")
    start = time.perf_counter()
    out = FindingCollector(STAGE, ctx.cap)
    stats: dict[str, Any] = {}
    missing = [name for name in STACK if importlib.util.find_spec(name) is None]
    if missing:
        out.add("TG527", "error", f"the mini-run needs {', '.join(missing)}, which is not installed",
                "Install the training stack: pip install 'tunegate[train]'.")
        return out.result(time.perf_counter() - start, stats)
    progress.note("importing torch, transformers, peft")
    stats["imports_s"] = _import_stack()
    _launch_findings(ctx, out, stats)
    from tunegate.minirun.session import MiniRun
    from tunegate.training.runtime import quiet_transformers

    with quiet_transformers():
        MiniRun(ctx, out, stats).run()
    stats["total_s"] = round(time.perf_counter() - start, 3)
    _place_in_spec(out, ctx.spec_file)
    return out.result(time.perf_counter() - start, stats)


def _launch_findings(ctx: GateContext, out: FindingCollector, stats: dict[str, Any]) -> None:
    """TG560: the mini-run approves tunegate's own full run, so what that run cannot do (the spec stage's
    warnings on an imported config: sharding, settings it does not apply) is an error here. TG561: on a
    GPU this is the run machine, so a package the run needs and this machine lacks is one too. Both
    concern tunegate's own run only: the config's own trainer is judged by the other stages."""
    stats["launch_only"] = ["TG560", "TG561"]
    if ctx.launch_refusals:
        out.add("TG560", "error", f"tunegate's full run cannot run this config, so the mini-run cannot approve it: "
                + "; ".join(ctx.launch_refusals), "Change or remove those settings to launch it with tunegate; "
                "otherwise train it with the config's own trainer (the other stages judged it for that one).")
    import torch

    if ctx.spec.gate.mini_run.device in ("auto", "cuda") and torch.cuda.is_available():
        for need in ctx.requirements:
            if need.get("kind") == "package" and need.get("met_here") is False:
                out.add("TG561", "error", f"{need.get('reason')} needs {need.get('need')} on the machine that "
                        "runs the training, and this GPU machine, where the mini-run runs, does not have it",
                        f"{need.get('install') or 'Install it'} here.", key=need.get("key"))


def _place_in_spec(out: FindingCollector, spec_file: str | None) -> None:
    """A finding on a spec key names the spec file with it (`good.yaml:training.learning_rate`), as the
    estimate's do; without a file the terminal shows only "spec", and the key is lost from sight."""
    if spec_file is None:
        return
    out.kept = [f.model_copy(update={"file": spec_file}) if f.key and not f.file else f for f in out.kept]


def _import_stack() -> float:
    """Import the training stack up front, so its cost shows as its own line in the stats."""
    start = time.perf_counter()
    with collections_held():  # in a command's own process: the stack's objects are never walked again
        import peft  # noqa: F401
        import torch  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401  (resolves the lazy modules)

    return round(time.perf_counter() - start, 3)


