"""The HF `TrainingArguments` of a full run, from the spec and the device it lands on.

The spec's optimizer (8-bit and paged ones included), schedule, warmup, weight decay and
gradient clipping are passed as they are (their defaults are the Trainer's own: fused AdamW,
linear decay, no warmup, clipping at 1.0); axolotl and TRL configs map onto these keys
(`tunegate.formats`). A few other arguments are set on purpose, each for the reason in its comment.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tunegate.spec.model import Spec
from tunegate.training.device import RunPlace, available_devices, supported_attention, supported_precision

# At most this many logged points per run: logging every step of a 100k-step run would make the
# result JSON and MLflow's metric table huge. A NaN anywhere in a logging window still makes the
# window's mean NaN, and gradients are checked at every step, so no problem goes unseen.
MAX_LOG_POINTS = 1000
CHECKPOINTS = "checkpoints"


def world_size() -> int:
    """Processes in the run, as the launcher (accelerate, torchrun) tells each of them."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def planned_steps(spec: Spec, records: int, max_steps: int | None = None) -> int:
    """Optimizer steps the run will take, computed as the Trainer does (max_steps overrides epochs).

    `records` counts what one epoch iterates over: records, or packed rows when packing."""
    t = spec.training
    steps = max_steps or t.max_steps
    if steps:
        return steps
    per_process = math.ceil(records / world_size())  # the distributed sampler pads to equal shares
    batches = math.ceil(per_process / t.micro_batch_size)
    per_epoch = max(1, math.ceil(batches / t.grad_accum_steps))
    return math.ceil(per_epoch * (t.epochs or 1.0))


def logging_steps(total_steps: int) -> int:
    return max(1, math.ceil(total_steps / MAX_LOG_POINTS))


def choose_place(spec: Spec, log: Callable[[str], None]) -> RunPlace:
    """Device type (cuda, mps, cpu: the Trainer's own order), precision and attention it supports."""
    device = available_devices()[0]
    precision = supported_precision(spec.training.precision, device)
    if precision != spec.training.precision:
        log(f"training.precision {spec.training.precision} is not supported on this {device}: training in {precision}")
    attention = supported_attention(spec, device)
    if attention != spec.training.attention:
        log(f"training.attention {spec.training.attention} cannot run here (flash_attention_2 needs CUDA and "
            f"flash-attn; the model's class may refuse a kernel): using {attention}")
    if device == "cpu":
        log(f"no GPU here: training on the CPU in {precision}; its speed and memory are not a GPU's")
    return RunPlace(device, precision, attention)


def training_arguments(spec: Spec, output_dir: Path, place: RunPlace, total_steps: int,
                       max_steps: int | None = None, eval_every: int | None = None, checkpoints: bool = True) -> Any:
    """TrainingArguments for the run; creating them sets up the process group under a launcher.

    `eval_every`: steps between evaluations (a sweep candidate's, what its pruning reads); default
    `full_run.save_steps`, where the checkpoints are. `checkpoints` False: none is written (a sweep
    candidate's training).
    """
    from transformers import TrainingArguments

    t, save_steps = spec.training, spec.full_run.save_steps
    steps = max_steps or t.max_steps
    args = TrainingArguments(
        output_dir=str(Path(output_dir) / CHECKPOINTS),
        per_device_train_batch_size=t.micro_batch_size, per_device_eval_batch_size=t.micro_batch_size,
        gradient_accumulation_steps=t.grad_accum_steps, learning_rate=t.learning_rate,
        max_steps=steps or -1, num_train_epochs=t.epochs or 1.0,
        optim=t.optimizer, lr_scheduler_type=t.lr_scheduler, weight_decay=t.weight_decay,
        max_grad_norm=t.max_grad_norm, adam_beta1=t.adam_beta1, adam_beta2=t.adam_beta2, adam_epsilon=t.adam_epsilon,
        # transformers 5 reads a warmup_steps below 1 as a share of all steps (its warmup_ratio)
        warmup_steps=t.warmup_steps or t.warmup_ratio,
        bf16=place.precision == "bf16", fp16=place.precision == "fp16", use_cpu=place.device == "cpu",
        # the mode only with compile: transformers turns torch_compile on whenever a mode is given
        torch_compile=t.compile, torch_compile_mode=t.compile_mode if t.compile else None,
        seed=t.seed, data_seed=t.seed,
        # the HealthCallback refuses the default True, which hides NaN/Inf losses
        logging_nan_inf_filter=False, logging_steps=logging_steps(total_steps), logging_first_step=True,
        # a checkpoint and an evaluation on the frozen validation set every save_steps (a sweep
        # candidate evaluates every sweep.eval_every steps instead, and writes no checkpoint)
        save_strategy="steps" if checkpoints else "no", save_steps=save_steps,
        eval_strategy="steps", eval_steps=eval_every or save_steps,
        prediction_loss_only=True,  # evaluation keeps the loss only, never every logit
        # the flows log to MLflow themselves through an allowlist; the Trainer's MLflow callback
        # would log every TrainingArguments field
        report_to="none", disable_tqdm=True,
        remove_unused_columns=False,  # the dataset holds encoded chats, not model-signature columns
        include_num_input_tokens_seen="non_padding",  # real tokens/s, summed over processes
        # every LoRA parameter of a text model is in the forward pass: DDP's search for unused ones is
        # pure cost (a multimodal class's vision tower is the exception: the trainer turns it on then)
        ddp_find_unused_parameters=False,
    )
    return one_device_per_process(args)


def one_device_per_process(args: Any) -> Any:
    """Never nn.DataParallel: a single process that still sees several GPUs (started by hand,
    without the launcher's CUDA_VISIBLE_DEVICES, tunegate.fullrun.devices) trains on its first."""
    if args.n_gpu > 1:
        args._n_gpu = 1  # the Trainer wraps in DataParallel when n_gpu > 1; one process, one device
    return args
