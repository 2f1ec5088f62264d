"""The contract between the gate and its stages: what a stage reads, what it writes, its signature.

Every stage's front door is `tunegate/<stage>/stage.py` with

    def run_stage(ctx: GateContext) -> StageResult: ...

and, for a stage that must see records while the dataset stage reads them (overlap, the
fingerprints), an optional `prepare(ctx)` that registers its `RecordObserver`s first. A stage
reads the spec, the files and the facts of the stages before it from `ctx`, and writes what later
stages need into `ctx.facts` (typed: `tunegate.facts.GateFacts`). This module sits below every
stage, so no stage imports the gate that runs it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tunegate.facts import GateFacts
from tunegate.report import LAUNCH, StageResult
from tunegate.spec.path_names import split_files

if TYPE_CHECKING:  # a type only: a check of bare data files loads no spec model
    from tunegate.spec.model import Spec


@runtime_checkable
class RecordObserver(Protocol):
    """Sees every record of every file as the dataset stage reads it (so files are read once).

    `observe` is called for each line holding a JSON object, valid against the contract or not,
    in file order: `line` is the 1-based physical line, `index` the 0-based record index (blank
    lines take no index; lines that are not JSON objects do, so indexes match the findings'
    `record`). A split of several files is read as one stream, its files in order: `line` is the
    line in the record's own file, and `index` the record's key in the split
    (`tunegate.dataset.split.record_key`: the index itself in the first file, so a split of one
    file is seen exactly as before). Records nested deeper than the dataset stage's MAX_DEPTH (64)
    are reported (TG224) and withheld, so observers may serialise or recurse freely.
    `finish(role)` is called once per role after all its files have been read, also when a file
    could not be opened. Do not mutate `record`. An observer may also define
    `exact_repeat(role, index)`: the dataset stage calls it with the key of every record it
    reported as a byte-identical repeat of an earlier one (TG210), so a later stage need not
    report the same repeat again: in increasing key order, before `finish(role)`, and for a file
    past the repeat index's memory budget only after its last record was read. An observer may
    define `observe_line(role, line, index, record, raw)` instead of `observe`: the stage then also
    hands it the JSONL line `record` was parsed from (None when the record is not that line's
    object: another container, or a record the stage rewrote), so it can use bytes the read
    already has (the fingerprint's canonical line).

    An observer that must see one role's file before the others (the near-duplicate pass indexes
    the smaller split first) says so with an attribute `read_first` naming that role; the dataset
    stage then reads that split first, and still reports the splits in their given order.
    """

    def observe(self, role: str, line: int, index: int, record: dict) -> None: ...

    def finish(self, role: str) -> None: ...


@dataclass
class GateContext:
    """What the stages share: the inputs, and what earlier stages learned."""

    spec_path: Path | None
    spec: Spec | None
    files: dict[str, list[Path]]  # role -> the split's files, in reading order (one path is taken as a list of one)
    cap: int
    mini_run: bool = False
    advisor: bool = False
    observers: list[RecordObserver] = field(default_factory=list)
    facts: GateFacts = field(default_factory=GateFacts)
    # Content digests of the data, keyed by role; the dataset read fills them (see dataset.fingerprint).
    fingerprints: dict[str, Any] = field(default_factory=dict)
    # The records' format when there is no spec to say it (`check --train ... --data-format`).
    data_format: str = "auto"
    # What tunegate's own trainer cannot run (the spec stage's `tunegate_launch`: TG160, an import's
    # TG147), and what the run machine needs (its `requirements`): the mini-run, which approves
    # tunegate's own full run, refuses the first and checks the second where it runs on a GPU.
    launch_refusals: list[str] = field(default_factory=list)
    trainer: str = LAUNCH  # the config's own trainer (axolotl, trl sft), or tunegate launch for a tunegate spec
    # role -> "also" or "only": that trainer trains the split's language-modeling text records ({"text": ...}),
    # as the spec stage found (ConfigMap.trains_text)
    trains_text: dict[str, str] = field(default_factory=dict)
    # Settings of the config's trainer that lower GPU memory and the estimate does not model (memory_savers):
    # the estimate then judges no "does not fit" (TG429)
    memory_savers: list[str] = field(default_factory=list)
    requirements: list[dict[str, Any]] = field(default_factory=list)
    # Roles whose data cannot be had here (ParsedSpec.unavailable): not in `files`; the gate reports them
    # as the dataset stage's findings, and the estimate works without their token counts.
    unavailable: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.files = {role: split_files(value) for role, value in self.files.items()}

    @property
    def base_dir(self) -> Path | None:
        """The spec's folder, against which a relative local model folder resolves."""
        return self.spec_path.resolve().parent if self.spec_path else None

    @property
    def spec_file(self) -> str | None:
        """The spec's path as findings name it."""
        return str(self.spec_path) if self.spec_path else None


Stage = Callable[[GateContext], StageResult]
