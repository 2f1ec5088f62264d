"""Settings of an imported config that tunegate's run would not apply as the tool does.

Each tool applies these settings; tunegate's trainer would train without them. The config is
judged for its own trainer, which runs it: on `check` each is a warning saying tunegate launch
cannot run it (TG147), and an error only where tunegate's own run is approved or started (the
mini-run, `tunegate launch`), so no approval is given as if the runs were the same. Another
objective than supervised fine-tuning (preference, reward, pretraining) is an error everywhere:
the gate's data, token and loss checks are those of supervised fine-tuning, so they would judge
another run than the tool's. A run that is not
LoRA or QLoRA is not gated at all (TG144), and where no adapter targets are named the one PEFT
chooses is said (TG150), and a chat template of the tool's own in place of the tokenizer's
(TG156). Each code is produced here once, by a function every dialect calls with
its own words and its own table of keys:

    unhonoured(cmap, UNHONOURED)                 # TG147 for each key set away from its default
    choose(cmap, "optim", "training.optimizer", "adamw_torch_fused", OPTIMIZERS)
    not_lora(cmap, "use_peft", "use_peft is not true, so TRL fine-tunes every weight", "Set use_peft: true ...")
    own_template(cmap, "template", "template: llama3 makes LLaMA-Factory render ...", "Drop template ...")
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from tunegate.spec.importers.config_keys import as_written, refused_by_tool
from tunegate.spec.importers.config_map import ConfigMap
from tunegate.spec.model import Optimizer, Scheduler

# What the full run honours, for either tool's optimizer and scheduler keys.
OPTIMIZERS = frozenset(Optimizer.__args__)  # type: ignore[attr-defined]
SCHEDULERS = frozenset(Scheduler.__args__)  # type: ignore[attr-defined]
# A dialect's table of such keys: key -> (the value that changes nothing, what the key does)
Unhonoured = Mapping[str, tuple[Any, str]]


NOT_HONOURED = "TG147"  # the code of every setting tunegate's trainer does not apply (check.py lists them)
NOT_LORA = "TG144"  # not a LoRA or QLoRA run: tunegate launch refuses it too


def not_honoured(cmap: ConfigMap, key: str, message: str, hint: str, objective: bool = False) -> None:
    """TG147 at `key`: the config asks for something tunegate's full run does not do. A warning (its own
    trainer runs it, tunegate launch cannot); an error for another `objective` than supervised fine-tuning."""
    said = "" if objective else f" ({cmap.dialect.runs_with} runs it; tunegate launch cannot)"
    cmap.note(NOT_HONOURED, "error" if objective else "warning", key, message + said, hint)


def unhonoured(cmap: ConfigMap, table: Unhonoured, objectives: frozenset[str] = frozenset()) -> None:
    """TG147 for every key of `table` set away from its default: it changes training and is not applied.
    The keys in `objectives` train another objective than supervised fine-tuning: errors."""
    for key, (default, what) in table.items():
        value = cmap.get(key)
        if value in (None, default, "", [], {}) or (default is False and value is False):
            continue
        gated = "so the gate's checks (data, tokens, loss) are not those of this run" if key in objectives else \
            f"so it would train a different model than {cmap.kind} does"
        not_honoured(cmap, key, f"{key}: {as_written(value)} asks for {what}; tunegate's full run does not apply it, "
                     f"{gated}", f"Remove {key} (or set it to "
                     f"{as_written(default) if default is not None else 'null'}) "
                     f"to gate and run this config with tunegate; otherwise run it with {cmap.dialect.runs_with} "
                     "itself.", objective=key in objectives)


def choose(cmap: ConfigMap, key: str, spec_key: str, default: str, allowed: frozenset[str],
           accepted: frozenset[str] | None = None) -> None:
    """Map a config key whose value must be one the full run honours: TG147 for any other name the tool
    `accepted` (None: not known here), TG154 for a name the tool itself refuses, and the tool's default
    in its place (the finding already says so). A value that is no name at all goes to the spec as it
    is, whose TG102 lists the names."""
    value = cmap.get(key, default)
    if not isinstance(value, str):
        cmap.set(spec_key, value, key)
        return
    if value not in allowed and accepted is not None and value not in accepted:
        close = difflib.get_close_matches(value, sorted(accepted), n=1)
        refused_by_tool(cmap, key, f"{key} {value!r} is not a name {cmap.kind} accepts (its own and transformers' "
                        "optimizers): it refuses the config at the start", f"Did you mean {close[0]!r}? " if close
                        else f"Use one of tunegate's: {', '.join(sorted(allowed))}.")
    elif value not in allowed:
        not_honoured(cmap, key, f"{key} {value!r} is not one tunegate's full run can honour",
                     f"Use one of: {', '.join(sorted(allowed))}.")
    cmap.set(spec_key, value if value in allowed else default, key)


def regex_targets(cmap: ConfigMap, targets: str, also: str = "") -> None:
    """TG147 for lora_target_modules written as one string other than all-linear: PEFT (under axolotl
    and TRL alike) reads it as a regular expression over full module paths, tunegate's run as names.
    `also` names the tool's own way to say every linear layer."""
    not_honoured(cmap, "lora_target_modules", f"lora_target_modules is the string {targets!r}, which PEFT reads as "
                 "a regular expression over full module paths; tunegate's run takes module names",
                 f"List the module names (lora_target_modules: [q_proj, k_proj, v_proj, o_proj]) or use all-linear"
                 f"{also}.")


def not_lora(cmap: ConfigMap, key: str | None, what: str, hint: str, full: bool = False) -> None:
    """TG144 (at `key`, when the config sets it): the config trains another way than LoRA or QLoRA.

    A `full` fine-tune is what the tool runs and the gate can judge (the data, the full fine-tune's
    memory): a warning saying tunegate launch cannot run it, and the spec says training.method: full.
    Another adapter the gate does not model is an error."""
    if full:
        cmap.set("training.method", "full", key)
        cmap.note(NOT_LORA, "warning", key, f"{what}; checked as the full fine-tune {cmap.dialect.runs_with} runs, "
                  "which tunegate launch cannot run (it trains LoRA and QLoRA only)", hint)
        return
    cmap.note(NOT_LORA, "error", key, f"{what}; tunegate gates LoRA and QLoRA runs only", hint)


def peft_default_targets(cmap: ConfigMap, unset: str, hint: str) -> None:
    """TG150: no adapter targets named (`unset` says which keys), so PEFT's default for Llama-style
    models applies; the spec gets that default."""
    cmap.set("lora.target_modules", ["q_proj", "v_proj"])
    cmap.note("TG150", "info", None, f"{unset}: PEFT's default for Llama-style models applies, q_proj and v_proj",
              hint)


def own_template(cmap: ConfigMap, key: str, message: str, hint: str) -> None:
    """TG156 (warning) at `key`: the tool renders chats with its own template (`message` says which);
    tunegate's token audit, mini-run and full run render with the tokenizer's."""
    cmap.note("TG156", "warning", key, message, hint)


COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")


def compile_settings(cmap: ConfigMap) -> None:
    """torch.compile as transformers' TrainingArguments take it (axolotl, TRL and LLaMA-Factory pass
    these on): `torch_compile`, `torch_compile_mode` (a mode alone switches compiling on, as
    TrainingArguments does), `torch_compile_backend` (tunegate's run compiles with inductor: another
    backend is TG147). axolotl's `torch_compile: auto` compiles where the run's torch is 2.6 or newer,
    which a GPU box with transformers 5 has."""
    wanted, mode = cmap.get("torch_compile"), cmap.get("torch_compile_mode")
    on = wanted == "auto" or (wanted is not None and wanted is not False) or mode is not None
    if not isinstance(wanted, (bool, str, type(None))):  # no flag: the spec's TG102 says what it takes
        cmap.set("training.compile", wanted, "torch_compile")
        return
    cmap.set("training.compile", on, "torch_compile" if cmap.has("torch_compile") else
             "torch_compile_mode" if mode is not None else None)
    if mode is not None:
        cmap.set("training.compile_mode", mode, "torch_compile_mode")
    backend = cmap.get("torch_compile_backend")
    if on and backend not in (None, "inductor"):
        not_honoured(cmap, "torch_compile_backend", f"torch_compile_backend {as_written(backend)} compiles with "
                     "another backend than tunegate's run (inductor)", "Remove torch_compile_backend (inductor is "
                     "the default) to launch it with tunegate.")
