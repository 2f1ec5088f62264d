"""Stage 1, dataset: every data file read once, strictly, against the chat contract, with stats.

    from tunegate.dataset import validate_dataset
    result = validate_dataset({"train": Path("train.jsonl"), "validation": Path("val.jsonl")}, cap=20)
    result = validate_dataset({"train": Path("train.json")}, fmt="sharegpt")   # any format, any container
    result = validate_dataset({"train": [Path("a.jsonl"), Path("b.parquet")]})  # a split of several files

Records in any format (`tunegate.formats`: OpenAI chat, ShareGPT, Alpaca, TRL prompt-completion;
`auto` fixes each file's format from its first record) are checked against that format's contract
and handed to observers in chat form, the form every later stage reads.

Each file is streamed once, in bounded memory: the index of byte-identical repeats holds 21-43 bytes a
record up to 500,000 records of a file, then goes to disk (tunegate.dataset.repeats); a split of
several files is read file after file as one stream of records, each found at its own file and
line (byte-identical repeats, TG210, are found within a file; a record repeated in another file of
the split is the overlap stage's TG304). Later stages that need every record (overlap,
fingerprints) plug in as `RecordObserver`s (`tunegate.stage`) instead of reading the file again.
Reading rules: `tunegate.dataset.jsonl_reader`; the contract: `tunegate.dataset.contract`; codes
and fixes: docs/checks.md, "Dataset (TG2xx)".
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tunegate import formats, progress
from tunegate.dataset.fingerprint import FingerprintObserver
from tunegate.dataset.jsonl_reader import JsonlReader
from tunegate.dataset.parallel import Workers, worker_count
from tunegate.dataset.record_checks import RecordChecks
from tunegate.dataset.repeats import RepeatedRecords
from tunegate.dataset.segments import KeyLog, Part, PartReader, PartResult, absorb_part, cut, splittable
from tunegate.dataset.split import record_key
from tunegate.dataset.stats import SplitStats
from tunegate.facts import SplitContent
from tunegate.formats.other_types import OTHER_TYPE
from tunegate.report import Finding, FindingCollector, StageResult
from tunegate.spec.path_names import split_files
from tunegate.stage import GateContext, RecordObserver

STAGE = "dataset"
# The largest part per worker task: amortises a task, keeps the results waiting small. 4 MB, not 8:
# the same CPU (220 MB and 1.1 GB, 2 workers, paired), 12 MB less over the process tree at 1.1 GB.
PART_BYTES = 4 << 20
# Smallest file read in parts: forking a worker costs ~20 ms, so from 8 MB (~0.1 s of work) it pays;
# where workers must be spawned (the process runs threads, or not on Linux) each one imports for
# ~0.5 s, so only from 64 MB.
SPLIT_FORKED, SPLIT_SPAWNED = 8 << 20, 64 << 20
# Once one file of the run needs the workers, a smaller one joins them from here: the pool is
# started anyway, and the validation file, read first because the near pass indexes it, would
# otherwise be read here alone while every worker waits (~0.1 s of a 50 MB check's 0.8 s).
SPLIT_ALONGSIDE = 2 << 20
MIN_PART = 1 << 20  # below this a task's overhead shows


def run_stage(ctx: GateContext) -> StageResult:
    """Stage 1 in the gate: every file read once, its fingerprint and content counts into the context."""
    prints = FingerprintObserver(ctx.fingerprints, ctx.files)
    fmt = ctx.spec.data.format if ctx.spec is not None else ctx.data_format
    trains_all = ctx.spec is not None and ctx.spec.training.loss_on == "all"
    result = validate_dataset(ctx.files, cap=ctx.cap, observers=[prints, *ctx.observers], fmt=fmt,
                              trains_all=trains_all)
    for role in [r for r in ctx.files if r in ctx.fingerprints]:  # the files' order, whatever was read first
        ctx.fingerprints[role] = ctx.fingerprints.pop(role)
    for role, stats in result.stats.items():
        ctx.facts.content[role] = SplitContent(records=stats["records"], content_chars=stats["content_chars"])
    return _text_trained(result, ctx.trainer, ctx.trains_text) if ctx.trains_text else result


NO_TEXT = "TG280"  # a record without the text a trainer of plain text only reads


def _text_trained(result: StageResult, trainer: str, trains_text: dict[str, str]) -> StageResult:
    """The result where the config's trainer trains a split's language-modeling text records ({"text": ...},
    as TRL's SFTTrainer and axolotl's completion type do): when every TG271 is such a record of such a
    split, it is no reason that trainer refuses the run, only that tunegate gates none of it (`launch_only`).
    Where it trains nothing else ("only"), a split with records that hold no text is TG280: it stops on them."""
    splits = {role: s for role, s in result.stats.items() if isinstance(s, dict) and isinstance(s.get("records"), int)}
    text = sum(s.get("text_records", 0) for role, s in splits.items() if role in trains_text)
    findings, totals, stats = list(result.findings), dict(result.totals_by_code), dict(result.stats)
    for role, s in splits.items():
        if trains_text.get(role) == "only" and s["records"] > s.get("text_records", 0):
            findings.append(Finding(code=NO_TEXT, severity="error", stage=STAGE, file=s.get("file"), message=(
                f"{s['records'] - s.get('text_records', 0)} of {s['records']} {role} records have no 'text': the "
                f"config's dataset type makes {trainer} read each record's plain text (language modeling), and it "
                "stops on a record without one"), hint="Write each record as {\"text\": ...}, or set the dataset "
                "type its records are in (chat_template for messages, alpaca for instruction/output)."))
            totals[NO_TEXT] = totals.get(NO_TEXT, 0) + 1
    if text and totals.get(OTHER_TYPE) == text:
        ours = stats.get("launch_only")
        stats["launch_only"] = [*(ours if isinstance(ours, list) else []), OTHER_TYPE]
    failed = any(f.severity == "error" for f in findings)
    return result.model_copy(update={"findings": findings, "totals_by_code": totals, "stats": stats,
                                     "status": "failed" if failed else result.status})


def validate_dataset(files: Mapping[str, Path | Sequence[Path]], cap: int = 20,
                     observers: Sequence[RecordObserver] = (), fmt: str = "auto", workers: int | None = None,
                     part_bytes: int | None = None, trains_all: bool = False) -> StageResult:
    """Check each split (role -> its file, or its files read in order, e.g. {"train": ..., "validation":
    ...}) and return the stage result.

    Never raises for any file content; every problem is a finding at its own file and line (at
    most `cap` kept per code, all counted). Stats are keyed by role (a split of several files adds
    up its files' counts, each file's own under `files`). `fmt` is the records' format, or "auto"
    (each file's first record decides). A large plain JSONL file is read in parts by `workers`
    processes (default: tunegate.dataset.parallel's count) when every observer can ride along in
    parts; the result is the same as one read. `part_bytes` fixes the part size (and reads in parts
    every file of at least 4 parts); by default parts are a quarter of a file's share per worker,
    1-8 MiB. `trains_all`: the spec trains every token of a conversation (training.loss_on: all),
    so one whose every reply has weight 0 is no TG265.
    """
    start = time.perf_counter()
    if not files:
        return StageResult.skipped(STAGE, "no data files given")
    splits = {role: split_files(paths) for role, paths in files.items()}
    first = {getattr(o, "read_first", None) for o in observers}
    order = sorted(splits, key=lambda role: role not in first)  # stable: the files' order otherwise
    found = {role: FindingCollector(STAGE, cap) for role in order}
    with Workers(worker_count() if workers is None else workers) as pool:
        plan = _plan_parts(splits, observers, fmt, pool, part_bytes)
        checked = {role: _check_split(role, splits[role], found[role], observers, fmt, pool, part_bytes,
                                      plan[role], trains_all) for role in order}
    out = FindingCollector(STAGE, cap)
    for role in splits:  # reported in the files' order, as if read in it
        out.absorb(found[role])
    return out.result(time.perf_counter() - start, {role: checked[role] for role in splits})


Plan = list[formats.FileFormat | None]  # per file of a split: the format that lets it be read in parts, or None


def _plan_parts(splits: Mapping[str, list[Path]], observers: Sequence[RecordObserver], fmt: str, pool: Workers,
                part_bytes: int | None) -> dict[str, Plan]:
    """Which files are read in parts: per role and file, the format their first record fixes, or None
    (one read here)."""
    plan: dict[str, Plan] = {role: [None] * len(paths) for role, paths in splits.items()}
    if pool.count <= 1:
        return plan
    sizes = {role: [_size(path) for path in paths] for role, paths in splits.items()}
    least = 4 * part_bytes if part_bytes else (SPLIT_FORKED if pool.forks else SPLIT_SPAWNED)
    for role, paths in splits.items():
        for number, path in enumerate(paths):
            if sizes[role][number] >= least:
                plan[role][number] = splittable(path, observers, fmt)
    if part_bytes is None and any(any(p) for p in plan.values()):
        for role, paths in splits.items():
            for number, path in enumerate(paths):
                if plan[role][number] is None and SPLIT_ALONGSIDE <= sizes[role][number] < least:
                    plan[role][number] = splittable(path, observers, fmt)
    return plan


def _check_split(role: str, paths: list[Path], out: FindingCollector, observers: Sequence[RecordObserver],
                 fmt: str, pool: Workers, part_bytes: int | None, plan: Plan,
                 trains_all: bool = False) -> dict[str, Any]:
    """Check a split's files in order, as one stream for the observers; its stats (summed over several files)."""
    checked = [_check_file(role, path, out, observers, fmt, pool, part_bytes, plan[number], trains_all,
                           record_key(number, 0)) for number, path in enumerate(paths)]
    for observer in observers:
        observer.finish(role)
    if len(checked) == 1:
        return checked[0][0]
    return _summed(checked)


def _summed(checked: list[tuple[dict[str, Any], SplitStats]]) -> dict[str, Any]:
    """A split of several files: the counts added up, the distributions over every record, and each
    file's own stats under `files`. `format` and `container` are the files' one value, or None."""
    total = SplitStats()
    for _, stats in checked:
        total.absorb(stats)
    each = [summary for summary, _ in checked]
    sums = {key: sum(s[key] for s in each) for key in ("records", "blank_lines", "lines", "duplicates")}
    shared = {key: each[0][key] if len({s[key] for s in each}) == 1 else None for key in ("format", "container")}
    return {"files": each, **sums, **shared, **total.summary()}


def _check_file(role: str, path: Path, out: FindingCollector, observers: Sequence[RecordObserver], fmt: str,
                pool: Workers, part_bytes: int | None, file_format: formats.FileFormat | None,
                trains_all: bool = False, shift: int = 0) -> tuple[dict[str, Any], SplitStats]:
    """One file's checks and stats; observers see its records at keys `shift` + index (its place in the split)."""
    size = _size(path)
    if file_format is not None:
        part = part_bytes or max(MIN_PART, min(PART_BYTES, size // (4 * pool.count)))
        return _check_in_parts(role, path, out, observers, pool, part, file_format, fine_tail=not part_bytes,
                               trains_all=trains_all, shift=shift)
    reader = JsonlReader(path, out)
    check = RecordChecks(out, reader.file, fmt, _repeat_hook(role, observers, shift), trains_all=trains_all)
    check.repeats.reader = reader  # where each record starts on its line, for a repeat found after the read
    observes, with_line = _feeds(observers)
    try:
        with progress.step(f"reading {path.name}", total=size or None, unit="bytes", poll=reader.bytes_read):
            for line, index, raw, record in reader.records():
                seen = check(line, index, raw, record)
                if seen is not None:
                    for observe in observes:
                        observe(role, line, index + shift, seen)
                    if with_line:  # a JSONL line is exactly the record parsed from it
                        own = raw if seen is record and reader.container == "jsonl" else None
                        for observe_line in with_line:
                            observe_line(role, line, index + shift, seen, own)
        check.repeats.finish()  # the repeats an index on disk holds (TG210), past its budget
    finally:
        check.repeats.close()
    return {"file": reader.file, "records": reader.records_seen, "blank_lines": reader.blank_lines,
            "lines": reader.lines, "gzip": reader.gzip, "container": reader.container, **check.summary()}, check.stats


def _feeds(observers: Sequence[Any]) -> tuple[list[Callable[..., Any]], list[Callable[..., Any]]]:
    """What the read calls per record: `observe` of each observer, and `observe_line` instead of it for
    one that can use the JSONL line the record was parsed from (the fingerprint: `tunegate.stage`)."""
    return ([o.observe for o in observers if not hasattr(o, "observe_line")],
            [o.observe_line for o in observers if hasattr(o, "observe_line")])


def _repeat_hook(role: str, observers: Sequence[Any], shift: int = 0) -> Callable[[int], Any]:
    """Tells every observer with `exact_repeat` the key of each exact repeat reported (TG210)."""
    hooks = [o.exact_repeat for o in observers if hasattr(o, "exact_repeat")]
    return lambda index: [hook(role, index + shift) for hook in hooks]


# -- one file in parts, each read in a worker process, merged in file order ---------------------


def _size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except (OSError, ValueError):  # unreadable, or a NUL in the name: the read's guard names it (TG240)
        return 0


def read_part(part: Part) -> PartResult:
    """Read and check one byte range of a file (the work of one worker process)."""
    out = FindingCollector(STAGE, part.cap)
    reader = PartReader(Path(part.path), out, part.start, part.end)
    log = KeyLog()
    check = RecordChecks(out, reader.file, repeats=log, trains_all=part.trains_all)
    check.file_format = part.file_format  # fixed by the file's first record, as in one read
    for observer in part.observers:  # an observer that reads the part's bytes again (the fingerprint's)
        if hasattr(observer, "reads"):
            observer.reads(part.path, part.start, part.end)
    observes, with_line = _feeds(part.observers)
    for line, index, raw, record in reader.records():
        seen = check(line, index, raw, record)
        if seen is not None:
            for observe in observes:
                observe(part.role, line, index, seen)
            for observe_line in with_line:  # a part is always JSONL
                observe_line(part.role, line, index, seen, raw if seen is record else None)
    return PartResult(out, check.stats, log, reader.lines, reader.records_seen, reader.blank_lines,
                      reader.failure, [o.payload() for o in part.observers])


def _check_in_parts(role: str, path: Path, out: FindingCollector, observers: Sequence[Any], pool: Workers,
                    part_bytes: int, file_format: formats.FileFormat, fine_tail: bool,
                    trains_all: bool = False, shift: int = 0) -> tuple[dict[str, Any], SplitStats]:
    templates = [o.part(role) for o in observers]
    spans = cut(path, part_bytes, tail=pool.count if fine_tail else 0, least=MIN_PART)
    parts = (Part(role, str(path), a, b, out.cap, templates, file_format, trains_all) for a, b in spans)
    stats, repeats = SplitStats(), RepeatedRecords(out, str(path), _repeat_hook(role, observers, shift))
    try:
        lines, records, blank = _merge_parts(role, path, out, observers, pool, spans, parts, stats, repeats, shift)
        repeats.finish()  # the repeats an index on disk holds (TG210), past its budget
    finally:
        repeats.close()
    if not records:  # the file-level findings one read makes at its end (TG241, TG242)
        whole = JsonlReader(path, out)
        whole.lines = lines
        whole._report_emptiness()
    return {"file": str(path), "records": records, "blank_lines": blank, "lines": lines, "gzip": False,
            "container": "jsonl", "duplicates": repeats.duplicates, "format": file_format.format,
            **stats.summary()}, stats


def _merge_parts(role: str, path: Path, out: FindingCollector, observers: Sequence[Any], pool: Workers,
                 spans: list[tuple[int, int]], parts: Any, stats: SplitStats, repeats: RepeatedRecords,
                 shift: int) -> tuple[int, int, int]:
    """The parts' results taken in file order: (lines, records, blank lines) of the file."""
    lines = records = blank = 0
    shown = progress.step(f"reading {path.name} in {len(spans)} parts", total=spans[-1][1] if spans else None,
                          unit="bytes")
    with shown:
        for (_, end), got in zip(spans, pool.in_order(read_part, parts)):
            shown.update(done=end)  # parts merge in file order: everything before `end` is read
            absorb_part(out, got, repeats, lines, records)
            stats.absorb(got.stats)
            for observer, payload in zip(observers, got.payloads):
                observer.join(role, payload, lines, records + shift)
            if got.failure is not None:  # reading stopped there, as one read would have
                JsonlReader(path, out).read_failed(lines + got.failure[0], got.failure[1])  # type: ignore[arg-type]
            lines, records, blank = lines + got.lines, records + got.records, blank + got.blank_lines
            if got.failure is not None:
                break
    return lines, records, blank
