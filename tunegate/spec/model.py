"""The spec: one YAML file describing a fine-tuning run, validated by pydantic.

Every field's description is written once here and reused by `tunegate schema`, the docs and
Prefect's parameter forms. Structural rules (types, ranges) live in the fields; rules that need
the GPU catalog or several fields together live in `tunegate.spec.rules`.
"""
# Annotations are real types here, not `from __future__ import annotations` strings: pydantic
# would compile and evaluate each field's type from its text when the models are built, at every
# start-up (~2 % of a rejection's instructions over the report, facts and spec models; issue 15).

import os
from pathlib import Path
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (AfterValidator, BaseModel, Field, PlainValidator, Strict, TypeAdapter,
                      ValidationError, ValidationInfo, field_validator, model_validator)
from pydantic_core import PydanticCustomError

from tunegate import formats
from tunegate.spec import bounds as b
from tunegate.spec import checkpoint
from tunegate.spec.bounds import Positive, PositiveInt, Real
from tunegate.spec.overlap_settings import OverlapSpec
from tunegate.spec.search_space import NomadSpace
from tunegate.plain_record import new_dict, new_list  # factories pydantic reads cheaply (see there)
from tunegate.spec.section import Section
from tunegate.spec.path_names import split_files, usable_path

# A path is written as a string in YAML: the one coercion strict mode must still allow. A NUL byte
# or a component longer than any file system allows is refused at its key (tunegate.spec.path_names).
FilePath = Annotated[Path, Strict(False), AfterValidator(usable_path)]


def defaults(section: type[BaseModel]) -> Callable[[], BaseModel]:
    """The `default_factory` of a section left out of the spec: its defaults.

    A plain function rather than the class itself: pydantic reads a factory's signature, and a
    model class's it must first build from every field (~0.1 ms a section, at every start-up).
    """
    def build() -> BaseModel:
        return section()

    return build


class ModelSpec(Section):
    id: str = Field("tunegate/tiny-llama",
                    description="Hugging Face repo id or local folder of the base model (a relative "
                                "folder beside the spec is that one, from any working folder). "
                                "'tunegate/tiny-llama' is the built-in offline test model.")
    revision: str | None = Field(None, description="Git revision (commit sha) of the model repo.")
    trust_remote_code: bool = Field(False, description="Run the model repo's own Python code. "
                                                       "Only with a pinned revision.")
    hub_kernels: bool = Field(False, description="Let transformers download and run kernels from the Hugging "
                                                 "Face Hub (its `kernels` integration: unpinned remote code, and "
                                                 "a crash on an offline GPU box). Off: every load passes "
                                                 "use_kernels=False and training runs with USE_HUB_KERNELS=NO.")
    quantization: Literal["none", "4bit", "8bit"] = Field(
        "none", description="'4bit' loads the frozen base in NF4 (QLoRA); '8bit' in LLM.int8 (bitsandbytes).")
    pad_token: str | None = Field(None, description="Token to pad with (axolotl's special_tokens.pad_token); "
                                                    "default: the tokenizer's own, else unk, else EOS.")
    params: Positive | None = Field(
        None, ge=b.MIN_PARAMS_B, le=b.MAX_PARAMS_B,
        description="The model's size in billions of parameters (8 for Llama-3.1-8B): lets the estimate run when no "
                    "config.json can be read (offline, a gated repo), from a Llama-like shape of that size with a "
                    "wider memory band (TG419). A readable config.json is always used instead.")
    hidden_size: PositiveInt | None = Field(
        None, le=b.MAX_HIDDEN_SIZE,
        description="With model.params: the model's hidden size, when known (default: from the size).")
    num_layers: PositiveInt | None = Field(
        None, le=b.MAX_LAYERS,
        description="With model.params: the model's decoder layers, when known (default: from the size).")

    @field_validator("hidden_size", "num_layers")
    @classmethod
    def _shape_needs_size(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and info.data.get("params") is None:
            raise ValueError("it is only used with model.params (the size in billions): set model.params too")
        return value


# The choices are the registry's: a new format module is a new choice (tunegate.formats.registry).
DataFormat = Literal[formats.CHOICES]  # type: ignore[valid-type]


def _one_file(value: Any, where: str = "") -> Path:
    """`value` validated as a FilePath; its error as pydantic's own, at the split's key (`where`: which list item)."""
    try:
        return _FILE.validate_python(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise PydanticCustomError(error["type"], where + error["msg"]) from None


def _files(value: Any) -> Path | list[Path]:
    """One file as it always was, or a non-empty list of files: validated here rather than as a union,
    whose errors would name both of its types at a key no spec has."""
    if not isinstance(value, list):
        return _one_file(value)
    if not value:
        raise PydanticCustomError("too_short", "a list of files must name at least one file")
    return [_one_file(item, f"file {number} of the list: ") for number, item in enumerate(value, 1)]


_FILE = TypeAdapter(FilePath)
# One file, or several read in order as one split (a mixture of datasets, a dataset's shards).
DataFiles = Annotated[Path | list[Path], PlainValidator(
    _files, json_schema_input_type=FilePath | Annotated[list[FilePath], Field(min_length=1)])]


class DataSpec(Section):
    train: DataFiles = Field(description="Training set: .jsonl, .jsonl.gz, a .json array or .parquet; or a list "
                                         "of such files, read in order as one set (a mixture of datasets, shards).")
    validation: DataFiles = Field(description="Validation set, same kinds; must be a different file, "
                                              "frozen across every candidate run.")
    version: str | None = Field(None, description="Your label for this dataset version, logged with every run.")
    format: DataFormat = Field(
        "auto", description=f"Record format: {formats.described()}, "
                            "or auto (each file's first record decides; a file mixing formats is an error).")

    def files(self, role: str) -> list[Path]:
        """The files of split `role` (train or validation), in the order every reader reads them."""
        return split_files(getattr(self, role))

    def names(self, role: str) -> str:
        """The split's file names as messages show them: `train.jsonl`, or `a.jsonl + b.jsonl` (each
        escaped: a name's control characters never reach a terminal raw)."""
        from tunegate.pathguard import shown

        return " + ".join(shown(path.name) for path in self.files(role))


class LoraSpec(Section):
    r: PositiveInt = Field(16, le=b.MAX_RANK, description="LoRA rank.")
    alpha: Positive = Field(32, le=b.MAX_ALPHA, description="LoRA alpha; the update is scaled by alpha / r.")
    dropout: Real = Field(0.05, ge=0, lt=1, allow_inf_nan=False, description="LoRA dropout, in [0, 1).")
    target_modules: list[str] | Literal["all-linear"] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
        description="Module names (or 'all-linear') that get LoRA adapters.")
    modules_to_save: list[str] = Field(
        default_factory=new_list, description="Modules trained in full and saved with the adapter "
                                          "(e.g. embed_tokens, lm_head after adding tokens).")


# The optimizers and schedules the full run passes to the HF Trainer by these names.
Optimizer = Literal["adamw_torch", "adamw_torch_fused", "adamw_8bit", "adamw_bnb_8bit", "paged_adamw_8bit",
                    "paged_adamw_32bit", "adafactor", "sgd"]
EIGHT_BIT_OPTIMIZERS = ("adamw_8bit", "adamw_bnb_8bit", "paged_adamw_8bit")
BNB_OPTIMIZERS = (*EIGHT_BIT_OPTIMIZERS, "paged_adamw_32bit")
Scheduler = Literal["linear", "cosine", "cosine_with_restarts", "polynomial", "constant",
                    "constant_with_warmup", "inverse_sqrt", "cosine_with_min_lr", "warmup_stable_decay"]


class TrainingSpec(Section):
    learning_rate: Positive = Field(2e-4, description="Peak learning rate of AdamW.")
    micro_batch_size: PositiveInt = Field(4, le=b.MAX_BATCH, description="Sequences per device per forward pass.")
    grad_accum_steps: PositiveInt = Field(1, le=b.MAX_BATCH,
                                          description="Micro batches accumulated per optimizer step.")
    epochs: Positive | None = Field(None, le=b.MAX_EPOCHS,
                                    description="Passes over the training set (or set max_steps).")
    max_steps: PositiveInt | None = Field(None, le=b.MAX_STEPS, description="Optimizer steps; overrides epochs.")
    max_seq_len: PositiveInt = Field(2048, le=b.MAX_SEQ_LEN, description="Tokens per sequence after truncation.")
    precision: Literal["bf16", "fp16", "fp32"] = Field("bf16", description="Training precision.")
    gradient_checkpointing: bool = Field(False, description="Recompute activations in the backward pass.")
    attention: Literal["sdpa", "flash_attention_2", "eager"] = Field(
        "sdpa", description="Attention kernel.")
    compile: bool = Field(False, description="Wrap the model in torch.compile.")
    compile_mode: Literal["default", "reduce-overhead", "max-autotune"] = Field(
        "default", description="torch.compile's mode, used only with training.compile: reduce-overhead adds CUDA "
                               "graphs, max-autotune also benchmarks matmul kernels at the start; the estimate adds "
                               "each mode's compilation warm-up to the hours.")

    @field_validator("compile_mode")
    @classmethod
    def _mode_needs_compile(cls, value: str, info: ValidationInfo) -> str:
        if value != "default" and info.data.get("compile") is False:
            raise ValueError("the mode is torch.compile's, and training.compile is false: set training.compile: true")
        return value
    sharding: Literal["none", "zero2", "zero3", "fsdp"] = Field(
        "none", description="Optimizer/parameter sharding across data-parallel GPUs.")
    method: Literal["lora", "qlora", "full"] = Field(
        "lora", description="What trains: LoRA adapters on a 16-bit base, QLoRA (adapters on a 4-bit "
                            "base, as model.quantization: 4bit), or every weight (full fine-tuning).")
    master_weights: Literal["fp32", "none"] = Field(
        "fp32", description="Full fine-tuning only: 'fp32' keeps fp32 weights (or an fp32 master copy) and "
                            "fp32 AdamW moments (HF Trainer on an fp32-loaded model, DeepSpeed, FSDP); "
                            "'none' keeps weights, gradients and moments in training.precision (pure bf16).")
    seed: int = Field(0, ge=0, le=b.MAX_SEED, description="Random seed for sampling, initialisation and data order.")
    optimizer: Optimizer = Field(
        "adamw_torch_fused", description="Optimizer (Hugging Face names); the 8-bit and paged ones need bitsandbytes.")
    lr_scheduler: Scheduler = Field("linear", description="Learning-rate schedule after warmup.")
    warmup_steps: int = Field(0, ge=0, le=b.MAX_STEPS,
                              description="Optimizer steps of linear warmup from 0 to learning_rate.")
    warmup_ratio: Real = Field(0.0, ge=0, lt=1, allow_inf_nan=False,
                                description="Warmup as a share of all steps (used when warmup_steps is 0).")
    weight_decay: Real = Field(0.0, ge=0, allow_inf_nan=False, description="AdamW weight decay.")
    adam_beta1: Real = Field(0.9, ge=0, lt=1, allow_inf_nan=False, description="AdamW's beta1 (first-moment decay).")
    adam_beta2: Real = Field(0.999, ge=0, lt=1, allow_inf_nan=False,
                              description="AdamW's beta2 (second-moment decay; 0.95 is common for LLMs).")
    adam_epsilon: Real = Field(1e-8, gt=0, allow_inf_nan=False, description="AdamW's epsilon.")
    max_grad_norm: Real = Field(1.0, ge=0, allow_inf_nan=False,
                                 description="Gradient clipping norm; 0 turns clipping off.")
    loss_on: Literal["replies", "all"] = Field(
        "replies", description="Tokens a conversation trains: the model's replies only, or every token "
                               "(axolotl's train_on_inputs, TRL's default without assistant_only_loss). "
                               "Prompt-completion records always train the completion only.")
    packing: bool = Field(False, description="Pack several records into each max_seq_len row (attention kept "
                                             "within each record), as TRL's packing and axolotl's sample_packing.")

    @model_validator(mode="after")
    def _one_length(self) -> "TrainingSpec":
        if self.epochs is None and self.max_steps is None:
            self.epochs = 1.0
        return self


class CustomGPU(Section):
    memory_gib: Positive = Field(ge=b.MIN_GPU_MEMORY_GIB, le=b.MAX_GPU_MEMORY_GIB,
                                 description="Memory the device reports to CUDA/ROCm, in GiB.")
    bf16_tflops: Positive | None = Field(None, ge=b.MIN_TFLOPS, le=b.MAX_TFLOPS,
                                         description="Dense bf16 tensor TFLOP/s; unset: no bf16.")
    fp16_tflops: Positive | None = Field(None, ge=b.MIN_TFLOPS, le=b.MAX_TFLOPS,
                                         description="Dense fp16 tensor TFLOP/s (default: bf16's).")
    fp32_tflops: Positive = Field(ge=b.MIN_TFLOPS, le=b.MAX_TFLOPS, description="Plain FP32 TFLOP/s (not TF32).")
    bandwidth_gbs: Positive = Field(ge=b.MIN_BANDWIDTH_GBS, le=b.MAX_BANDWIDTH_GBS,
                                    description="Memory bandwidth, GB/s.")
    flash_attention: bool = Field(False, description="Whether FlashAttention-2 runs on it.")


class HardwareSpec(Section):
    gpu: str = Field("A100-80GB", description="GPU model from the catalog (`tunegate gpus`), or the "
                                              "name of the `custom` one.")
    count: PositiveInt = Field(1, le=b.MAX_GPUS, description="GPUs in the full run.")
    hourly_usd: Positive | None = Field(None, ge=b.MIN_HOURLY_USD, le=b.MAX_HOURLY_USD,
                                        description="Price of one GPU hour, for the cost estimate.")
    custom: CustomGPU | None = Field(None, description="A GPU the catalog lacks: its memory, dense "
                                                       "TFLOP/s per dtype and bandwidth.")


class EstimateSpec(Section):
    wall_clock_hours: Positive | None = Field(None, ge=b.MIN_HOURS, le=b.MAX_HOURS,
                                              description="Your own estimate of the full run's hours.")
    advised_hours: Positive | None = Field(
        None, ge=b.MIN_HOURS, le=b.MAX_HOURS,
        description="Hours someone else projected for the run (an LLM advisor, a colleague); "
                    "checked against the GPUs' peak like wall_clock_hours.")
    dataset_tokens: PositiveInt | None = Field(
        None, le=b.MAX_TOKENS, description="Tokens in the full training set, when the files here are a sample of it.")


class MiniRunSpec(Section):
    sample_size: PositiveInt = Field(8, le=b.MAX_SAMPLE, description="Training records the mini-run uses.")
    steps: PositiveInt = Field(4, le=b.MAX_SAMPLE, description="Optimizer steps of the mini-run.")
    device: Literal["auto", "cuda", "mps", "cpu"] = Field("auto", description="Device; auto tries cuda, mps, cpu.")


class GateSpec(Section):
    max_findings_per_code: PositiveInt = Field(20, le=b.MAX_FINDINGS,
                                               description="Findings shown per code; all are counted.")
    mini_run: MiniRunSpec = Field(default_factory=defaults(MiniRunSpec))
    overlap: OverlapSpec = Field(default_factory=defaults(OverlapSpec))


class AdvisorSpec(Section):
    enabled: bool = Field(True, description="Run the advisor stage.")
    base_url: str = Field("https://api.oxlo.ai/v1", description="OpenAI-compatible endpoint.")
    model: str = Field("deepseek-v3.2", description="Model name at that endpoint.")
    api_key_env: str = Field("OXLO_API_KEY", description="NAME of the environment variable holding the key "
                                                         "(never the key itself).")
    timeout_s: Positive = Field(60, le=b.MAX_TIMEOUT_S, description="Seconds per request.")
    max_retries: int = Field(2, ge=0, le=b.MAX_RETRIES, description="Retries on 429/5xx/timeouts.")
    max_tokens: PositiveInt = Field(2048, le=b.MAX_COMPLETION_TOKENS,
                                    description="Completion tokens asked for; some providers default to 256.")


class TrackingSpec(Section):
    mlflow_uri: str | None = Field(None, description="MLflow tracking URI; default sqlite:///mlflow.db beside the spec.")
    experiment: str = Field("tunegate", description="MLflow experiment name.")


class SweepSpec(Section):
    strategy: Literal["list", "grid", "nomad"] = Field("list", description="How candidates are proposed.")
    candidates: list[dict[str, Any]] = Field(
        default_factory=new_list, description="Explicit candidates: dotted-key overrides, e.g. {'lora.r': 8}.")
    grid: dict[str, list[Any]] = Field(
        default_factory=new_dict, description="Grid: dotted key -> values; every combination is a candidate.")
    space: NomadSpace = Field(default_factory=defaults(NomadSpace),
                              description="NOMAD search space (strategy nomad); see docs/nomad.md.")
    max_evals: PositiveInt = Field(10, le=b.MAX_EVALS, description="Most candidates evaluated.")
    train_steps: PositiveInt = Field(20, le=b.MAX_STEPS, description="Short training budget per candidate.")
    max_parallel: PositiveInt = Field(1, le=b.MAX_PROCESSES, description="Candidates evaluated at once: on threads, "
                                      "their jobs (mini-run, short training), the others gated or logged beside them.")
    task_runner: Literal["threads", "dask", "ray"] = Field(
        "threads", description="Where candidates run: threads of the sweep's process (each training in a process "
        "of its own), Dask worker processes (prefect-dask) or Ray workers (prefect-ray); a local cluster "
        "unless sweep.address is set.")
    address: str | None = Field(None, description="An existing cluster: a Dask scheduler (tcp://10.0.0.5:8786) or "
                                "Ray (ray://10.0.0.5:10001, or auto: the one `ray start` runs here); none: a local "
                                "cluster of max_parallel worker processes.")
    gpu_per_candidate: bool | None = Field(
        None, description="Each candidate asks its engine for one GPU (Dask resources GPU=1, Ray num_gpus=1); a "
        "local cluster then declares hardware.count GPUs. Default: when gate.mini_run.device is cuda.")
    seed: int = Field(0, ge=0, le=b.MAX_SEED, description="Seed of the proposal strategy.")
    eval_every: PositiveInt | None = Field(
        None, le=b.MAX_STEPS, description="Optimizer steps between a candidate's evaluations on the frozen validation "
        "set (its val/loss curve; what sweep.prune reads), 1 to train_steps. Default: a quarter of train_steps "
        "(rounded up) when sweep.prune is set, else only the evaluation at the end.")
    prune: Literal["none", "median", "asha"] = Field(
        "none", description="Stop a candidate early from its validation loss: median (Optuna's MedianPruner: its "
        "best loss so far is worse than the median of the completed candidates at the same step) or asha "
        "(successive halving: at steps eval_every * prune_eta**i only the best 1/prune_eta go on); none trains "
        "every approved candidate for the whole train_steps.")
    prune_warmup_steps: int = Field(0, ge=0, le=b.MAX_STEPS, description="median: no candidate is stopped before this "
                                    "step (Optuna's n_warmup_steps).")
    prune_startup: PositiveInt = Field(
        2, le=b.MAX_EVALS, description="median: completed candidates with a loss at a step before any is stopped there "
        "(Optuna's n_startup_trials, 5 there: sweeps here are small).")
    prune_eta: int = Field(3, ge=2, le=16, description="asha: the reduction factor; rungs at eval_every * eta**i, "
                           "the best 1/eta of the candidates at a rung go on (3: the Hyperband paper's).")
    candidates_on: Literal["task_runner", "deployment"] = Field(
        "task_runner", description="Where each candidate runs: on sweep.task_runner (threads, Dask, Ray), or as a "
        "flow run of sweep.deployment on its work pool (the gpu pool in prefect.yaml; needs a Prefect server).")
    deployment: str = Field("sweep-candidate/sweep-candidate", min_length=3, max_length=200,
                            description="The deployment each candidate runs as, with candidates_on: deployment.")


class FullRunSpec(Section):
    output_dir: FilePath = Field(Path("runs/full"), description="Where checkpoints and the adapter go.")
    launcher: Literal["accelerate", "torchrun", "python"] = Field("accelerate", description="Process launcher.")
    num_processes: PositiveInt | None = Field(None, le=b.MAX_PROCESSES,
                                              description="Processes per node; default hardware.count. "
                                                          "Without CUDA only this launches several: CPU "
                                                          "processes in data parallel over gloo (torchrun).")
    save_steps: PositiveInt = Field(500, le=b.MAX_STEPS, description="Optimizer steps between checkpoints.")


class Spec(Section):
    """A whole tunegate spec."""

    model: ModelSpec = Field(default_factory=defaults(ModelSpec))
    data: DataSpec
    lora: LoraSpec = Field(default_factory=defaults(LoraSpec))
    training: TrainingSpec = Field(default_factory=defaults(TrainingSpec))
    hardware: HardwareSpec = Field(default_factory=defaults(HardwareSpec))
    estimate: EstimateSpec = Field(default_factory=defaults(EstimateSpec))
    gate: GateSpec = Field(default_factory=defaults(GateSpec))
    advisor: AdvisorSpec = Field(default_factory=defaults(AdvisorSpec))
    tracking: TrackingSpec = Field(default_factory=defaults(TrackingSpec))
    sweep: SweepSpec = Field(default_factory=defaults(SweepSpec))
    full_run: FullRunSpec = Field(default_factory=defaults(FullRunSpec))

    def resolve_paths(self, base: Path) -> "Spec":
        """Return a copy with relative data and output paths made absolute against `base`, and
        model.id too where it names a local model there (the mini-run and the trainer load what
        the estimate read, from any working folder, and so does a sweep candidate's copy)."""
        def res(p: Path) -> Path:
            if p.is_absolute():
                return p
            try:
                return (base / p).resolve()
            except (RuntimeError, OSError, ValueError):  # a loop, a name too long: the dataset stage names it (TG240)
                return Path(os.path.abspath(base / p))
        def each(value: Path | list[Path]) -> Path | list[Path]:
            return [res(p) for p in value] if isinstance(value, list) else res(value)
        data = self.data.model_copy(update={"train": each(self.data.train),
                                            "validation": each(self.data.validation)})
        full = self.full_run.model_copy(update={"output_dir": res(self.full_run.output_dir)})
        local = checkpoint.beside_spec(self.model.id, base)
        model = self.model if local is None else self.model.model_copy(update={"id": str(local)})
        return self.model_copy(update={"data": data, "full_run": full, "model": model})


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the spec, for editors and `tunegate schema`."""
    schema = Spec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "tunegate spec"
    return schema
