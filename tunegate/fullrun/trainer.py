"""The full run: HF Trainer + PEFT LoRA on the spec's model, with the mini-run's health check.

Run (what `tunegate launch` and the full_run flow start, through `launch_command`):

    accelerate launch --num_processes 1 --mixed_precision bf16 -m tunegate.fullrun.trainer \\
        --spec examples/quickstart.yaml --output-dir runs/full --result runs/full/result.json

or in-process, as the sweep does for a candidate's short training budget:

    result = train(spec, output_dir=Path("runs/c1"), max_steps=20)

Same tokenisation as the mini-run (chat template, truncation, assistant-only labels), the spec's
hyperparameters, a `HealthCallback` that stops the run at a non-finite loss or gradient norm (or
a gradient stuck at 0), checkpoints and evaluations on the frozen validation set every
`full_run.save_steps`, an evaluation on the whole validation set at the end, and the adapter and
tokenizer published atomically to `<output_dir>/adapter` with a COMPLETE marker. Exit code 0 when
completed, 1 when unhealthy or failed; only the main process writes the result JSON.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tunegate.fullrun.args import is_main_process, world_size
from tunegate.fullrun.result import (
    BAD_ADAPTER,
    CANNOT_START,
    CRASHED,
    NO_RECORDS,
    NONFINITE_GRAD,
    NONFINITE_LOSS,
    NONFINITE_VAL,
    OUT_OF_MEMORY,
    ZERO_GRAD,
    TrainProblem,
    TrainResult,
    failed,
    rank_result_path,
)
from tunegate.spec.model import Spec

__all__ = ["main", "train"]

ZERO_GRAD_PATIENCE = 3  # steps in a row with a gradient norm of exactly 0 before the run is stopped
FP16_SKIP_TOLERANCE = 16  # overflow-skipped fp16 steps in a row: the scaler's 2**16 start halved to 1
# The log line of a training on the base its candidate's mini-run loaded (tunegate.training.kept_base)
KEPT_BASE = "the base model: as this candidate's mini-run loaded it, kept in this process"


def train(spec: Spec, *, output_dir: Path, max_steps: int | None = None,
          log: Callable[[str], None] = print, resume: bool = False, eval_every: int | None = None,
          pruning: Any = None, checkpoints: bool = True, token_cache: Path | None = None) -> TrainResult:
    """Train the spec's LoRA adapter into `output_dir`; every outcome is a `TrainResult`, never a raise.

    Args:
        spec: a validated spec with resolved paths (`spec_check.read_spec`).
        output_dir: checkpoints go to `<output_dir>/checkpoints`, the adapter to `<output_dir>/adapter`.
        max_steps: optimizer steps, overriding the spec's epochs/max_steps (a sweep's short budget).
        log: where progress lines go (only the main process logs).
        resume: continue from the last complete checkpoint in `<output_dir>/checkpoints`, if any
            (after a crash or a preempted worker); the optimizer, scheduler and data order resume too.
        eval_every: steps between evaluations on the validation set (a sweep's `sweep.eval_every`);
            default `full_run.save_steps`.
        pruning: a sweep candidate's `tunegate.pruning.PrunePlan`: its losses go to the sweep's board
            and its rule may stop it early (status `pruned`, no adapter saved).
        checkpoints: False for a sweep candidate's short training, which nothing resumes: no
            checkpoint (adapter, optimizer state, RNG states) is written, not even at its last step,
            where the Trainer writes one otherwise; the adapter is published as always.
        token_cache: a folder where the encoded splits are kept for the next trainer of the same data
            and tokenizer (a sweep's candidates: tunegate.fullrun.token_cache).
    """
    say = log if is_main_process() else (lambda _line: None)
    unsupported = _unsupported(spec)
    if unsupported:
        return failed(CANNOT_START, unsupported)
    from tunegate.training.runtime import free_memory, is_oom, quiet_transformers

    try:
        with quiet_transformers():
            return _Run(spec, Path(output_dir), max_steps, say, resume, eval_every, pruning, checkpoints,
                        token_cache).run()
    except Exception as exc:  # noqa: BLE001  (the model's own code can raise anything)
        if os.environ.get("TUNEGATE_DEBUG"):
            raise
        first = _first_line(exc)
        if is_oom(exc):
            return failed(OUT_OF_MEMORY, f"out of memory: {first} (micro_batch_size "
                          f"{spec.training.micro_batch_size}, max_seq_len {spec.training.max_seq_len})")
        return failed(CRASHED, f"training crashed: {type(exc).__name__}: {first}")
    finally:
        free_memory()  # an in-process sweep trains the next candidate on the same GPU


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:300] if str(exc) else ""


def _unsupported(spec: Spec) -> str:
    """Why the trainer cannot run this spec here ("" when it can): checked before anything loads.

    This is the run machine. First what the trainer never runs (TG160: sharding, an error of the
    spec stage too), then what this machine lacks of the run's requirements, which the spec stage
    only lists (TG161, TG162: bitsandbytes, a stored checkpoint's loader; tunegate.spec.trainer_support
    and run_machine, one list for both), then what only this machine can tell: a quantized base
    wants a CUDA GPU.
    """
    from tunegate.spec.trainer_support import unrunnable

    for code, _key, message, fix in unrunnable(spec):
        return f"{code}: {message}. {fix}"
    if spec.model.quantization != "none":
        import torch

        if not torch.cuda.is_available():
            return (f"model.quantization {spec.model.quantization} loads the base with bitsandbytes, "
                    "which needs a CUDA GPU")
    return ""


class _Run:
    """One training run, step by step; each step either continues or returns the final result."""

    def __init__(self, spec: Spec, output_dir: Path, max_steps: int | None, log: Callable[[str], None],
                 resume: bool = False, eval_every: int | None = None, pruning: Any = None, checkpoints: bool = True,
                 token_cache: Path | None = None):
        self.spec, self.output_dir, self.max_steps, self.log = spec, output_dir, max_steps, log
        self.resume, self.eval_every, self.pruning, self.checkpoints = resume, eval_every, pruning, checkpoints
        self.token_cache = token_cache
        self.facts: dict[str, Any] = {"num_processes": world_size()}

    def run(self) -> TrainResult:
        from transformers import set_seed

        from tunegate.fullrun import args as train_args
        from tunegate.fullrun import data as train_data
        from tunegate.training.device import RunPlace

        loaded = self._tokenizer()
        if isinstance(loaded, TrainResult):
            return loaded
        path, tokenizer = loaded
        if self.token_cache is not None:
            from tunegate.fullrun.token_cache import cached_splits

            data = cached_splits(self.token_cache, self.spec, path, tokenizer, self.log)
        else:
            data = train_data.load_splits(self.spec, tokenizer, self.log)
        self.facts.update(train_records=len(data.train), validation_records=len(data.validation),
                          dropped_records=data.dropped)
        if self.spec.training.packing:
            from tunegate.training.packing import pack

            data.rows = pack(data.train, self.spec.training.max_seq_len)
            self.log(f"packing: {len(data.train)} training records in {len(data.rows)} rows of at most "
                     f"{self.spec.training.max_seq_len} tokens")
        if not data.train or not data.validation:
            empty = "training" if not data.train else "validation"
            return self._failed(NO_RECORDS, f"the {empty} set has no usable record (see the token audit above)")
        place = train_args.choose_place(self.spec, self.log)
        per_epoch = len(data.rows) if data.rows is not None else len(data.train)
        total = train_args.planned_steps(self.spec, per_epoch, self.max_steps)
        args = train_args.training_arguments(self.spec, self.output_dir, place, total, self.max_steps,
                                             self.eval_every, self.checkpoints)
        place = RunPlace(str(args.device), place.precision, place.attention)
        self.facts.update(device=place.device, precision=place.precision, attention=place.attention, max_steps=total)
        set_seed(self.spec.training.seed)  # LoRA initialisation and dropout: same spec, same numbers
        model = self._model(path, place, data.max_token_id)
        if isinstance(model, TrainResult):
            return model
        return self._train(model, tokenizer, args, data, total)

    def _tokenizer(self) -> tuple[str, Any] | TrainResult:
        from tunegate.training.tokenizer import TokenizerProblem, prepare_tokenizer

        prepared = prepare_tokenizer(self.spec)
        if isinstance(prepared, TokenizerProblem):
            exc = prepared.error
            if prepared.kind == "cannot_load":  # not there, not a model: as the mini-run's TG508
                return self._failed(CANNOT_START, f"model.id {self.spec.model.id!r} cannot be loaded: "
                                    f"{type(exc).__name__}: {_first_line(exc)}")
            if prepared.kind == "no_chat_template":
                return self._failed(CANNOT_START, f"the tokenizer of {self.spec.model.id!r} has no chat template")
            raise exc  # a pad token it cannot have (the gate's TG551): `train` reports it as a crash
        if prepared.substituted_pad:
            self.log(f"the tokenizer has no pad token: padding with the {prepared.substituted_pad} "
                     "(masked by position)")
        return prepared.path, prepared.tokenizer

    def _model(self, path: str, place: Any, max_token_id: int) -> Any:
        from tunegate.report import FindingCollector
        from tunegate.training import kept_base
        from tunegate.training.model import apply_lora, load_key, load_model

        base = kept_base.take(load_key(path, self.spec, place))
        if base is not None:
            self.log(KEPT_BASE)
        else:
            base = load_model(path, self.spec, place)
        rows = base.get_input_embeddings().num_embeddings
        if max_token_id >= rows:
            return self._failed(CANNOT_START, f"the tokenizer produces token id {max_token_id} but the model's "
                                f"embedding has only {rows} rows: tokenizer and model do not match")
        out = FindingCollector("full-run")
        model = apply_lora(base, self.spec, out)
        if model is None or out.has_errors():
            return self._failed(CANNOT_START, "; ".join(f.message for f in out.kept if f.severity == "error"))
        return model

    def _unused_under_ddp(self, model: Any, args: Any, data: Any, tokenizer: Any) -> None:
        """Several processes: DDP must be told of trainable parameters a text batch never reaches (LoRA on
        a multimodal class's vision tower), or it stops at step 2 (tunegate.training.unused)."""
        from tunegate.training.unused import unused_trainable

        if world_size() == 1:
            return
        first = _collator(data, tokenizer.pad_token_id)([(data.rows if data.rows is not None else data.train)[0]])
        unused = unused_trainable(model, {k: v.to(model.device) for k, v in first.items()})
        model.zero_grad(set_to_none=True)
        if unused:
            args.ddp_find_unused_parameters = True
            self.log(f"{len(unused)} trainable parameters get no gradient from a training batch (e.g. {unused[0]}): "
                     "DDP looks for unused parameters at every step")

    def _train(self, model: Any, tokenizer: Any, args: Any, data: Any, total: int) -> TrainResult:
        from transformers import PrinterCallback, Trainer

        from tunegate.fullrun.health import HealthCallback
        from tunegate.fullrun.step_recorder import StepRecorder
        from tunegate.fullrun.live_metrics import LiveMetrics
        self._unused_under_ddp(model, args, data, tokenizer)
        health = HealthCallback(zero_grad_patience=ZERO_GRAD_PATIENCE)
        recorder = StepRecorder(self.log, total)
        live = LiveMetrics.from_env()  # set by the full-run flow: metrics stream while it trains
        pruner = _pruner(self.pruning, self.log)  # a sweep candidate's pruning rule (tunegate.pruning)
        trainer = Trainer(model=model, args=args, train_dataset=data.rows if data.rows is not None else data.train,
                          eval_dataset=data.validation, data_collator=_collator(data, tokenizer.pad_token_id),
                          callbacks=[health, recorder, *([live] if live else []), *([pruner] if pruner else [])],
                          # packed rows carry no attention mask: the Trainer counts real tokens by pad id
                          processing_class=tokenizer if data.rows is not None else None)
        trainer.remove_callback(PrinterCallback)  # the recorder prints one short line per step instead
        if trainer.accelerator.scaler is not None:  # fp16 loss scaling skips overflowing steps by design
            health.skip_tolerance = FP16_SKIP_TOLERANCE
        self.log(f"training {total} steps on {self.facts['device']} in {self.facts['precision']}, "
                 f"{self.facts['num_processes']} process(es)")
        output = trainer.train(resume_from_checkpoint=self._checkpoint(args.output_dir))
        if not self.checkpoints:  # the Trainer made the folder; nothing was written into it
            with contextlib.suppress(OSError):
                Path(args.output_dir).rmdir()
        self._measure(trainer, output, recorder)
        if not health.stopped:
            self._evaluate(trainer, recorder)
        if health.stopped:
            return self._unhealthy(health, recorder)
        if pruner is not None and pruner.decision is not None:  # stopped by the sweep's rule: no adapter
            pruner.finish("pruned", trainer.state.global_step)
            return TrainResult(status="pruned", reason=pruner.decision.reason, **self._recorded(recorder))
        result = self._publish(trainer, tokenizer, recorder)
        if pruner is not None and result.ok:
            pruner.finish("completed", trainer.state.global_step)
        return result

    def _checkpoint(self, folder: str) -> str | None:
        """The last whole checkpoint to resume from (`--resume`), or None to start at step 0; one a
        kill left half-written is passed over, and said (tunegate.fullrun.checkpoints)."""
        from tunegate.fullrun.checkpoints import last_whole_checkpoint

        if not self.resume:
            return None
        last = last_whole_checkpoint(Path(folder), lambda why: self.log(f"--resume: passing over {why}"))
        self.log(f"resuming from {last}" if last else f"--resume: no whole checkpoint in {folder}: starting at step 0")
        self.facts["resumed_from"] = last.name if last else None
        return str(last) if last else None

    def _measure(self, trainer: Any, output: Any, recorder: Any) -> None:
        from tunegate.training.runtime import peak_memory

        runtime = float(output.metrics.get("train_runtime") or 0.0)
        tokens = trainer.state.num_input_tokens_seen
        losses = [s.loss for s in recorder.steps if s.loss is not None]
        self.facts.update(
            global_step=trainer.state.global_step, train_runtime_s=round(runtime, 3),
            tokens_per_s=round(tokens / runtime, 1) if runtime and tokens else None,
            final_train_loss=losses[-1] if losses else None, mean_train_loss=output.training_loss,
            **peak_memory(self.facts["device"].split(":")[0]))

    def _evaluate(self, trainer: Any, recorder: Any) -> None:
        """The loss on the whole frozen validation set at the end (reusing a periodic one at this step)."""
        last = recorder.evals[-1] if recorder.evals else None
        if last is None or last.step != trainer.state.global_step:
            trainer.evaluate()
        self.facts["val_loss"] = recorder.evals[-1].val_loss if recorder.evals else None

    def _unhealthy(self, health: Any, recorder: Any) -> TrainResult:
        problems = []
        for p in health.problems:
            code = _health_code(p.metric, p.value)
            if not any(q.code == code and q.step == p.step for q in problems):
                problems.append(TrainProblem(code=code, step=p.step, metric=p.metric, value=p.value))
        first = problems[0]
        reason = (f"{first.metric} is {first.value} at step {first.step}: training stopped, no adapter saved"
                  if first.value != "0.0" else f"the gradient norm is 0 for {ZERO_GRAD_PATIENCE} steps in a "
                  f"row (to step {first.step}): nothing is learned; training stopped, no adapter saved")
        self.log(f"unhealthy: {reason}")
        return TrainResult(status="unhealthy", reason=reason, codes=sorted({p.code for p in problems}),
                           problems=problems, **self._recorded(recorder))

    def _publish(self, trainer: Any, tokenizer: Any, recorder: Any) -> TrainResult:
        from tunegate.fullrun.publish import publish_adapter

        folder, problem = None, ""
        if trainer.is_world_process_zero():
            summary = {k: self.facts.get(k) for k in ("global_step", "final_train_loss", "val_loss")}
            folder, problem = publish_adapter(trainer.model, tokenizer, self.output_dir, summary)
        trainer.accelerator.wait_for_everyone()
        if problem:
            return self._failed(BAD_ADAPTER, f"the trained adapter is not fit to ship: {problem}", recorder)
        self.log(f"completed: final train loss {self.facts['final_train_loss']}, validation loss "
                 f"{self.facts['val_loss']}" + (f", adapter in {folder}" if folder else ""))
        return TrainResult(status="completed", adapter_dir=str(folder) if folder else None,
                           **self._recorded(recorder))

    def _recorded(self, recorder: Any) -> dict[str, Any]:
        return {**self.facts, "steps": recorder.steps, "evals": recorder.evals}

    def _failed(self, code: str, reason: str, recorder: Any = None) -> TrainResult:
        self.log(f"failed ({code}): {reason}")
        fields = self._recorded(recorder) if recorder is not None else self.facts
        return failed(code, reason, **fields)


def _pruner(plan: Any, log: Callable[[str], None]) -> Any:
    if plan is None:
        return None
    from tunegate.pruning.callback import PruningCallback

    return PruningCallback(plan, log)


def _collator(data: Any, pad_id: int) -> Callable[[list[Any]], dict[str, Any]]:
    """Packed rows for training when the spec packs, records as they are otherwise (and always for
    the evaluation on the frozen validation set, so its loss means the same with or without packing)."""
    from tunegate.training.chat_tokens import EncodedChat, collate
    from tunegate.training.packing import collate_packed

    def batch(items: list[Any]) -> dict[str, Any]:
        if items and isinstance(items[0], EncodedChat):
            return collate(items, pad_id=pad_id)
        return collate_packed(items, pad_id=pad_id)
    return batch


def _health_code(metric: str, value: str) -> str:
    if metric == "eval_loss":
        return NONFINITE_VAL
    if metric == "loss":
        return NONFINITE_LOSS
    return NONFINITE_GRAD if not math.isfinite(float(value)) else ZERO_GRAD


def main(argv: list[str] | None = None) -> int:
    """`python -m tunegate.fullrun.trainer --spec SPEC [--output-dir DIR] [--max-steps N] [--result RESULT.json]`."""
    parser = argparse.ArgumentParser(prog="python -m tunegate.fullrun.trainer", description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, required=True, help="The spec YAML (approved by `tunegate preflight`).")
    parser.add_argument("--output-dir", type=Path, help="Checkpoints and adapter; default full_run.output_dir.")
    parser.add_argument("--max-steps", type=int, help="Optimizer steps, overriding the spec's epochs/max_steps.")
    parser.add_argument("--result", type=Path, help="Where the main process writes the TrainResult JSON.")
    parser.add_argument("--resume", action="store_true", help="Continue from the last checkpoint in the output dir.")
    parser.add_argument("--eval-every", type=int, help="Steps between evaluations; default full_run.save_steps.")
    parser.add_argument("--pruning", help="A sweep's pruning plan as JSON (tunegate.pruning.PrunePlan).")
    parser.add_argument("--no-checkpoints", action="store_true",
                        help="Write no checkpoint (a sweep candidate's training, which nothing resumes).")
    parser.add_argument("--token-cache", type=Path,
                        help="A folder keeping the encoded splits for the next trainer of the same data (a sweep's).")
    args = parser.parse_args(argv)
    result = _run_cli(args)
    if args.result and is_main_process():
        result.write(args.result)
    elif args.result and not result.ok:  # another rank's failure (its OOM): the launcher reads it beside
        result.write(rank_result_path(args.result, int(os.environ.get("RANK", "0"))))
    return 0 if result.ok else 1


def _run_cli(args: argparse.Namespace) -> TrainResult:
    from tunegate.errors import UsageError
    from tunegate.spec.check import read_spec

    try:
        checked, spec = read_spec(args.spec)
    except UsageError as exc:
        return failed(CANNOT_START, f"the spec cannot be read: {exc}")
    if spec is None:
        errors = [f"{f.code} {f.message}" for f in checked.findings if f.severity == "error"]
        return failed(CANNOT_START, f"the spec {args.spec} is not valid: {'; '.join(errors[:5])}")
    pruning = None
    if args.pruning:
        from tunegate.pruning import PrunePlan

        pruning = PrunePlan.model_validate_json(args.pruning)
    return train(spec, output_dir=args.output_dir or spec.full_run.output_dir, max_steps=args.max_steps,
                 resume=args.resume, eval_every=args.eval_every, pruning=pruning, checkpoints=not args.no_checkpoints,
                 token_cache=args.token_cache)


# What a training imports before its first step besides this module, which its caller has already
# imported (or runs as __main__): what a process that will train imports up front (`import_stack`).
STACK = ("torch", "transformers", "peft", "accelerate", "tunegate.fullrun.data", "tunegate.fullrun.health",
         "tunegate.fullrun.step_recorder", "tunegate.fullrun.live_metrics", "tunegate.fullrun.publish",
         "tunegate.training.model", "tunegate.training.runtime", "tunegate.spec.check")


def import_stack() -> None:
    """Import STACK and the transformers classes a training resolves (its lazy modules): this process
    as __main__, a standby trainer and the fork server, before their first job. ImportError for a
    missing package (the training itself reports it in its result)."""
    import importlib

    for name in STACK:
        importlib.import_module(name)
    from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments  # noqa: F401


if __name__ == "__main__":
    from tunegate.processes.held_collections import collections_held, own_process

    # `python -m tunegate.fullrun.trainer` (a launch's, a Dask or Ray worker's candidate, a fallback
    # of the fork server) is a process of its own: its stack is imported with the collector off and
    # then frozen (tunegate.processes.held_collections). A cold trainer of the quickstart ran 9 full
    # collections, 1.33 CPU s: 7 while it imported, then each gc.collect() of transformers and
    # accelerate walked the whole stack again; it now takes 3.8 CPU s against 5.9 (docs/benchmarks.md,
    # session 47).
    own_process()
    with collections_held(), contextlib.suppress(ImportError):  # main() reports a missing package
        import_stack()
    sys.exit(main())
