"""One mini-run, step by step: load, tokenise and audit, train, evaluate, save and reload.

Each step adds its findings and measurements; a step whose prerequisite failed is not attempted
(no tokenising without a chat template, no save after a NaN step), but independent problems are
all reported at once.
"""
from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

from tunegate import progress
from tunegate.facts import MiniRunFacts
from tunegate.plain_record import field_names
from tunegate.minirun import adapter_check, audit_cache, packed
from tunegate.minirun import steps as minirun_steps
from tunegate.minirun.profile_split import PROFILED_STEPS, StepProfiler
from tunegate.report import FindingCollector
from tunegate.stage import GateContext
from tunegate.training import device, kept_base, runtime
from tunegate.training import model as base_model
from tunegate.training.adapter_io import save_adapter
from tunegate.training.chat_tokens import collate, eos_labels_lost_to_pad
from tunegate.training.tiny_model import TINY_ID
from tunegate.training.data_key import encoding_key, stamp
from tunegate.training.token_audit import (AUDIT_CHARS, AUDIT_LIMIT, AuditedRecord, audit_split, encoded_again,
                                          token_facts)
from tunegate.training.tokenizer import TokenizerProblem, prepare_tokenizer


class MiniRun:
    """The state one mini-run carries from step to step."""

    def __init__(self, ctx: GateContext, out: FindingCollector, stats: dict[str, Any]):
        self.ctx, self.spec, self.out, self.stats = ctx, ctx.spec, out, stats
        self.path = ""
        self.tokenizer: Any = None
        self.place: device.RunPlace | None = None
        self.model: Any = None  # held here so the save step can drop the last reference to it
        self._pad_is_own_eos = False
        self._audited: dict[str, list[AuditedRecord]] = {}

    def run(self) -> None:
        import torch

        self.place = device.choose_place(self.spec, self.out)
        if self.place is None:
            return
        self.stats.update(device=self.place.device, precision=self.place.precision, attention=self.place.attention,
                          torch_threads=runtime.set_short_run_threads())
        if self.place.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        elif self.spec.model.quantization != "none":
            self._unquantized_caveat()
        if self.spec.training.compile and not self._compile_ready():
            return
        progress.note("loading the tokenizer")
        if not self._load_tokenizer():
            return
        progress.note("tokenising both splits with the chat template")
        train, val = self._audit()
        sample = self._sample(train)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.spec.training.seed)  # LoRA init and dropout: same run, same numbers
            self._train(sample, val)
        self.stats.update(runtime.peak_memory(self.place.device))
        measured = {k: self.stats.get(k) for k in field_names(MiniRunFacts) if k in self.stats}
        # The estimate trusts this speed and memory only for the same GPU type and model.
        self.ctx.facts.mini_run = MiniRunFacts(**measured, model=self.spec.model.id, gpu=self._gpu_name())

    def _load_tokenizer(self) -> bool:
        if self.spec.model.id == TINY_ID:
            self._tiny_model_caveat()
        prepared = prepare_tokenizer(self.spec, check_template_syntax=True)
        self.stats.update(prepared.seconds)
        if isinstance(prepared, TokenizerProblem):
            self._tokenizer_problem(prepared)
            return False
        self.tokenizer, self.path = prepared.tokenizer, prepared.path
        if prepared.substituted_pad:
            self.out.add("TG504", "warning", f"the tokenizer has no pad token; the mini-run pads with the "
                         f"{prepared.substituted_pad} and masks padding by position, so no label is lost",
                         "Give the tokenizer a dedicated pad token (a reserved special token) and save it, so "
                         "every trainer pads safely.", key="model.id")
        self._pad_is_own_eos = prepared.pad_is_own_eos
        return True

    def _tokenizer_problem(self, problem: TokenizerProblem) -> None:
        """The finding for a tokenizer the mini-run cannot use (TG508, TG503, TG545, TG551)."""
        model_id, exc = self.spec.model.id, problem.error
        if problem.kind == "cannot_load":
            self._load_failed(exc)
        elif problem.kind == "no_chat_template":
            self.out.add("TG503", "error", f"the tokenizer of {model_id!r} has no chat template, so chats "
                         "cannot be rendered as the model expects", "Use the model's -Instruct/-chat "
                         "tokenizer, or set tokenizer.chat_template and save_pretrained it into a folder "
                         "that model.id points at.", key="model.id")
        elif problem.kind == "template_syntax":  # one finding on the model: it fails on every record alike
            self.out.add("TG545", "error", f"the chat template of {model_id!r} does not parse: {exc.message} "
                         f"(template line {exc.lineno})", "Fix the template's Jinja syntax (tokenizer.chat_template, "
                         "or chat_template.jinja in the model folder) and save it again.", key="model.id")
        else:
            self.out.add("TG551", "error", f"{exc}, so nothing can be padded with it", "Set model.pad_token (axolotl: "
                         "special_tokens.pad_token) to a token the tokenizer has, e.g. its unk or a reserved "
                         "special token.", key="model.pad_token")

    def _tiny_model_caveat(self) -> None:
        """Say what a mini-run on the built-in random model proves about the real one, and what not."""
        caveat = (f"the mini-run ran on the built-in random tiny model ({TINY_ID}): it proves the data, chat "
                  "template, token audit, LoRA wiring, eval, adapter save and reload work end to end, and that "
                  "the learning rate keeps the LoRA update in scale; it cannot prove that your model's loss "
                  "stays finite or falls, nor its memory or speed")
        self.stats.setdefault("caveats", []).append(caveat)
        self.out.add("TG536", "info", caveat[0].upper() + caveat[1:],
                     "Point model.id at the real model (or a smaller one of its family) for a mini-run that "
                     "measures it.", key="model.id")

    def _compile_ready(self) -> bool:
        """training.compile: the mini-run steps eagerly (compiling a real model takes minutes), so it
        checks what torch.compile's inductor needs here instead: Triton on CUDA, a C++ compiler on the
        CPU. Missing on the GPU, the full run would stop at its first step: an error; on a CPU, a note."""
        missing = runtime.compile_toolchain_missing(self.place.device)
        on_gpu = self.place.device == "cuda"
        if missing or not on_gpu:
            what = f"torch.compile cannot compile on this {self.place.device}: {missing}" if missing else \
                "the mini-run steps eagerly: torch.compile's toolchain is here (a C++ compiler) but compilation " \
                "itself first runs in the full run"
            self.out.add("TG550", "error" if missing and on_gpu else "info", f"training.compile is on; {what}",
                         "Install Triton with the CUDA build of torch on the GPU machine (pip install triton), or "
                         "set training.compile: false." if missing else "Nothing to fix.", key="training.compile")
        return not (missing and on_gpu)

    def _unquantized_caveat(self) -> None:
        """bitsandbytes loads a quantized base on CUDA only: off a GPU the mini-run trains it unquantized,
        so it proves nothing about the 4/8-bit path the full run takes (and `launch` refuses it here)."""
        caveat = (f"the mini-run trained the base unquantized on {self.place.device}: bitsandbytes loads "
                  f"model.quantization {self.spec.model.quantization} only on a CUDA GPU, so the quantized "
                  "load and its memory were not checked, and the full run needs a CUDA GPU")
        self.stats.setdefault("caveats", []).append(caveat)
        self.out.add("TG537", "info", caveat[0].upper() + caveat[1:],
                     "Run the mini-run on the GPU type the full run uses (tunegate preflight with a gpu work "
                     "pool) to check the quantized path.", key="model.quantization")

    def _load_failed(self, exc: BaseException) -> None:
        self.out.add("TG508", "error", f"model.id {self.spec.model.id!r} cannot be loaded: "
                     f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                     "Check the id or folder. The hub may be unreachable: download the model first "
                     "(hf download ID) and point model.id at the local folder, or set HF_HUB_OFFLINE=1.",
                     key="model.id")

    def _audit(self) -> tuple[list[AuditedRecord], list[AuditedRecord]]:
        """Both splits' token audits, each record kept as its counts (the few the mini-run trains on
        and evaluates are encoded again, `_batches`): a sample of long records kept as tokens took
        ~1 GB (20,000 records of ~1,000 tokens). A sweep's candidate reads back the audit an earlier
        candidate kept of the same data and tokenizer (`audit_cache`)."""
        start = time.perf_counter()
        key = self._audit_key() if audit_cache.active() else None
        audited = audit_cache.read(key) if key else None
        if audited is None:
            audited = self._audit_splits()
            if key:
                audit_cache.keep(key, audited)
        self.out.absorb(audited.findings)
        self.stats["tokenize_s"] = round(time.perf_counter() - start, 3)
        self.stats["token_audit"] = audited.stats
        self.ctx.facts.tokens = token_facts(audited.stats["train"])
        if audited.lost:
            self.out.add("TG505", "warning", f"the pad token is the EOS token {self.tokenizer.eos_token!r}: a "
                         f"collator that masks labels by pad id (DataCollatorForLanguageModeling) drops all "
                         f"{audited.lost} EOS labels of the training set, and the model never learns to stop",
                         "Give the tokenizer a distinct pad token; tunegate masks padding by position, "
                         "other trainers may not.", key="model.id")
        self._audited = audited.found
        return audited.found["train"], audited.found["validation"]

    def _audit_splits(self) -> audit_cache.Audited:
        """Tokenise and audit both splits; the findings apart, to be absorbed into the stage's."""
        max_len, seed = self.spec.training.max_seq_len, self.spec.training.seed
        audits, found = {}, {}
        out = FindingCollector(self.out.stage, self.out.cap)
        pad, lost = self.tokenizer.pad_token_id, [0]

        def count_lost(item: AuditedRecord) -> None:
            if item.encoded is not None:
                lost[0] += eos_labels_lost_to_pad([item.encoded], pad)

        for role in ("train", "validation"):
            paths = self.ctx.files[role]  # one file, or several read in order as one split
            audits[role], found[role] = audit_split(
                paths, self._shown(role), self.tokenizer, max_len, out, seed=seed, fmt=self.spec.data.format,
                loss_on=self.spec.training.loss_on, keep_tokens=False, budget_chars=AUDIT_CHARS,
                each=count_lost if role == "train" and self._pad_is_own_eos else None)
        return audit_cache.Audited(audits, found, out, lost[0])

    def _audit_key(self) -> str:
        """What the audit depends on: the encoding's key, the files as this mini-run reads them, the bounds
        of its sample, the findings' cap."""
        files = {role: [[str(Path(p).absolute()), stamp(Path(p))] for p in self.ctx.files[role]] + self._shown(role)
                 for role in ("train", "validation")}
        return encoding_key(self.spec, self.path, self.tokenizer, {
            "audit": [files, AUDIT_LIMIT, AUDIT_CHARS, self.out.stage, self.out.cap, self._pad_is_own_eos]})

    def _shown(self, role: str) -> list[str]:
        """The split's files as findings show them, one per file."""
        return [runtime.shown_path(path) for path in self.ctx.files[role]]

    def _sample(self, train: list[AuditedRecord]) -> list[AuditedRecord]:
        cfg, micro = self.spec.gate.mini_run, self.spec.training.micro_batch_size
        usable = [a for a in train if a.usable]
        sample = pick_sample(usable, cfg.sample_size, micro, self.spec.training.seed)
        if not sample:
            self.out.add("TG501", "error", f"the mini-run sample is empty: none of the {len(train)} training "
                         "records read has trainable tokens", "Fix the records the findings above name; "
                         "an empty dataset gives a training loop that does nothing.", key="data.train")
        self.stats["sample_records"] = len(sample)
        return sample

    def _train(self, sample: list[AuditedRecord], val: list[AuditedRecord]) -> None:
        if not sample:
            return
        batches, val_batch, rows = self._batches(sample, val)
        progress.note("loading the model")
        base = self._load_model()
        if base is None or not base_model.vocab_fits(base, batches + [val_batch], self.out,
                                                             self.tokenizer) or not self._positions_fit(base):
            return
        model = self._guard("adding the LoRA adapter", base_model.apply_lora, base, self.spec, self.out)
        del base
        if model is None:
            return
        self.stats["trainable_params"] = sum(p.numel() for p in base_model.lora_parameters(model).values())
        self.stats["total_params"] = sum(p.numel() for p in model.parameters())
        if self.spec.hardware.count > 1:
            self._guard("finding unused parameters", self._unused_under_ddp, model, batches[0])
        if rows is not None:
            diff = self._guard("scoring a packed row", packed.check_isolated, model, rows,
                               self.tokenizer.pad_token_id, self.place, self.out)
            self.stats["packing"] = {"records": len(sample), "rows": len(rows), "cross_record_logit_diff":
                                     None if diff is None else runtime.finite_or_text(float(f"{diff:.4g}"))}
        profiler = StepProfiler(self.place, self._gpu_name())
        outcome = self._guard("the training steps", minirun_steps.train_steps, model, batches, self.spec,
                              self.place, self.out, profiler)
        if outcome is None:
            return
        self._record_steps(outcome)
        self._record_shape(batches, profiler)
        self.stats["train_peak_memory_bytes"] = runtime.peak_memory(self.place.device)["peak_memory_bytes"]
        if not outcome.healthy:
            return
        start = time.perf_counter()
        progress.note("evaluating on the validation sample")
        loss = self._guard("the evaluation step", minirun_steps.eval_step, model, val_batch, self.place, self.out)
        self.stats.update(eval_loss=runtime.finite_or_text(loss) if loss is not None else None,
                          eval_s=round(time.perf_counter() - start, 3))
        self.model = model
        del model
        self._save_and_reload(batches[0], outcome.probe_logits)

    def _unused_under_ddp(self, model: Any, batch: dict[str, Any]) -> None:
        """TG552: trainable parameters a text batch never reaches (LoRA on a multimodal class's vision
        tower): DDP stops at step 2 unless told, which the full run then does (find_unused_parameters)."""
        from tunegate.minirun.steps import to_device
        from tunegate.training.unused import unused_trainable

        unused = unused_trainable(model, to_device(batch, self.place.device))
        model.zero_grad(set_to_none=True)
        if unused:
            self.out.add("TG552", "warning", f"{len(unused)} trainable parameters get no gradient from a training "
                         f"batch (e.g. {unused[0]}): with hardware.count {self.spec.hardware.count} the full run "
                         "turns on DDP's find_unused_parameters for them (a search at every step), where DDP "
                         "would otherwise stop at step 2", "Target only the language model's modules (a regex "
                         "over the full names, e.g. r'.*language_model.*\\.(q_proj|v_proj)', in a TRL or axolotl "
                         "config), or accept the slower reduction.", key="lora.target_modules")

    def _positions_fit(self, model: Any) -> bool:
        """TG546 (learned positions: the full run would crash) or TG547 (rotary: past what the model was
        trained on) when audited records are longer than the model's positions."""
        limit, learned = base_model.position_limit(model)
        longest = max(((a.encoded.kept, role, a) for role, found in self._audited.items()
                       for a in found if a.encoded is not None), key=lambda x: x[0], default=None)
        if limit is None or longest is None or longest[0] <= limit:
            return True
        over = sum(1 for found in self._audited.values() for a in found
                   if a.encoded is not None and a.encoded.kept > limit)
        n, role, item = longest
        place = {**item.record.place(self._shown(role)), "key": "training.max_seq_len"}
        fix = (f"Set training.max_seq_len: {limit} (or less), or shorten the records; a model with more "
               "positions takes longer records.")
        if learned:
            self.out.add("TG546", "error", f"{over} records are longer than the model has positions for (the longest "
                         f"has {n} tokens after truncation to max_seq_len {self.spec.training.max_seq_len}; the "
                         f"model has "
                         f"{limit} positions, a learned table with no row past it): the full run would crash with "
                         "an index error at the first such record", fix, **place)
            return False
        self.out.add("TG547", "warning", f"{over} records are longer than the {limit} positions the model was "
                     f"trained on (the longest has {n} tokens): its rotary positions go on, but past what it learned",
                     fix + " Or set the model's rope_scaling for a longer context.", **place)
        return True

    def _batches(self, sample: list[AuditedRecord], val: list[AuditedRecord]) -> tuple[list[Any], Any, Any]:
        """Training batches (packed rows when the spec packs, as the full run), the validation batch
        (never packed, as the full run evaluates), and the packed rows (None unpacked)."""
        micro, pad = self.spec.training.micro_batch_size, self.tokenizer.pad_token_id
        max_len, loss_on = self.spec.training.max_seq_len, self.spec.training.loss_on
        trained = [a.encoded for a in encoded_again(sample, self.tokenizer, max_len, loss_on)]
        rows = None
        if self.spec.training.packing:
            batches, rows = packed.packed_batches(trained, max_len, micro, pad)
        else:
            batches = [collate(trained[i:i + micro], pad) for i in range(0, len(trained), micro)]
        usable_val = [a.encoded for a in encoded_again([a for a in val if a.usable][:micro], self.tokenizer,
                                                       max_len, loss_on)]
        return batches, (collate(usable_val, pad) if usable_val else None), rows

    def _load_model(self) -> Any:
        start = time.perf_counter()
        try:
            model = base_model.load_model(self.path, self.spec, self.place)
        except (OSError, ValueError, ImportError) as exc:  # not there, not a model, a missing package
            self._load_failed(exc)
            return None
        except Exception as exc:  # noqa: BLE001
            self._crashed("loading the model", exc)
            return None
        self.stats["load_s"] = round(time.perf_counter() - start, 3)
        kept_base.loaded()
        return model

    def _guard(self, what: str, fn: Any, *args: Any) -> Any:
        """Call fn; running out of memory, or any crash, becomes a finding: the full run would die there too."""
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001  (the model's own code can raise anything)
            self._crashed(what, exc)
            return None

    def _crashed(self, what: str, exc: Exception) -> None:
        """Report an OOM (TG509) or a crash (TG533); TUNEGATE_DEBUG=1 lets a crash through with its traceback."""
        if runtime.is_oom(exc):
            self._oom(what, exc)
            return
        if os.environ.get("TUNEGATE_DEBUG"):
            raise exc
        self.out.add("TG533", "error", f"the mini-run crashed during {what}: {type(exc).__name__}: "
                     f"{str(exc).splitlines()[0][:300] if str(exc) else ''}", "The full run would crash the "
                     "same way; fix the cause (rerun with TUNEGATE_DEBUG=1 for the traceback).")

    def _oom(self, what: str, exc: BaseException) -> None:
        t = self.spec.training
        self.out.add("TG509", "error", f"out of memory on {self.place.device} during {what} (micro_batch_size "
                     f"{t.micro_batch_size}, max_seq_len {t.max_seq_len}, {self.place.precision}): "
                     f"{str(exc).splitlines()[0][:200]}", "Lower training.micro_batch_size (raise "
                     "grad_accum_steps to keep the global batch), enable training.gradient_checkpointing, "
                     "or lower training.max_seq_len.", key="training.micro_batch_size")
        runtime.free_memory()

    def _record_steps(self, outcome: minirun_steps.TrainOutcome) -> None:
        steps = outcome.steps
        seconds = sum(s.seconds for s in steps)
        self.stats.update(
            steps=len(steps), losses=[runtime.finite_or_text(s.loss) for s in steps],
            grad_norms=[runtime.finite_or_text(s.grad_norm) for s in steps],
            skipped_steps=sum(s.skipped for s in steps), steps_s=round(seconds, 4),
            step_s=round(seconds / len(steps), 4) if steps else None,
            tokens_per_s=round(sum(s.tokens for s in steps) / seconds, 1) if seconds else None,
            # without step 1, which pays one-time kernel selection and allocator warm-up on a GPU, and
            # without the profiled steps after it, which pay the profiler's own cost (issue 31)
            tokens_per_s_steady=_rate(steady_steps(steps)),
            probe_loss_before=_maybe(outcome.probe_before), probe_loss_after=_maybe(outcome.probe_after))
        if outcome.update_ratio is not None:
            module, ratio = outcome.update_ratio
            self.stats["update_ratio"] = {"module": module, "ratio": runtime.finite_or_text(float(f"{ratio:.4g}"))}

    def _gpu_name(self) -> str | None:
        import torch

        return torch.cuda.get_device_name(0) if self.place.device == "cuda" else None

    def _record_shape(self, batches: list[Any], profiler: StepProfiler) -> None:
        """The batch shape the peak was reached at, the last loss, the largest norm, the profiled split."""
        finite = [g for g in self.stats.get("grad_norms", []) if isinstance(g, float)]
        losses = [x for x in self.stats.get("losses", []) if isinstance(x, float)]
        self.stats.update(micro_batch_size=self.spec.training.micro_batch_size,
                          batch_seq_len=max(int(b["input_ids"].shape[1]) for b in batches),
                          final_loss=losses[-1] if losses else None,
                          grad_norm_max=max(finite) if finite else None)
        split = profiler.split()
        if split is not None:
            self.stats["profile"] = split.model_dump(exclude_none=True)

    def _save_and_reload(self, probe_batch: dict[str, Any], probe_logits: Any) -> None:
        start = time.perf_counter()
        progress.note("saving and reloading the adapter")
        trainable = self.stats["trainable_params"]
        with runtime.scratch_dir() as tmp:
            saved = self._guard("saving the adapter", save_adapter, self.model, self.tokenizer,
                                Path(tmp), self.out)
            if saved is not None:
                self.stats["adapter_bytes"] = saved.file_bytes
                self.stats.update(self._guard("reloading the adapter", adapter_check.reload_and_compare, saved,
                                              self.model, self.spec, self.place, probe_batch, probe_logits,
                                              self.out) or {})
            # A candidate's job trains next in this process, on this base (tunegate.training.kept_base)
            kept_base.keep(base_model.load_key(self.path, self.spec, self.place), self.model)
            self.model = None  # the last reference: the trained model is freed before the disk check
            runtime.free_memory()
            if saved is None:
                return
        self.stats["save_reload_s"] = round(time.perf_counter() - start, 3)
        records = self.ctx.facts.tokens.records
        self.stats.update(adapter_check.check_checkpoint_disk(self.spec, saved.file_bytes, trainable,
                                                                  records, self.out))


def _maybe(value: float | None) -> float | str | None:
    return None if value is None else runtime.finite_or_text(value)


def steady_steps(steps: list[minirun_steps.StepLog]) -> list[minirun_steps.StepLog]:
    """The steps after the warm-up step and the profiled ones (all after step 1 when none is left)."""
    unprofiled = [s for s in steps if s.step > 1 + PROFILED_STEPS]
    return unprofiled or steps[1:]


def _rate(steps: list[minirun_steps.StepLog]) -> float | None:
    seconds = sum(s.seconds for s in steps)
    return round(sum(s.tokens for s in steps) / seconds, 1) if steps and seconds else None


def pick_sample(usable: list[Any], size: int, micro: int, seed: int) -> list[Any]:
    """`size` records: the `micro` longest first (the peak-memory batch runs at step 1, so an OOM
    shows at once), then a seeded random draw of the rest."""
    by_length = sorted(usable, key=lambda a: a.encoded.kept, reverse=True)
    longest, rest = by_length[:min(micro, size)], by_length[min(micro, size):]
    rest = sorted(rest, key=lambda a: (a.record.file, a.record.index))
    random.Random(seed).shuffle(rest)
    return longest + rest[:max(0, size - len(longest))]
