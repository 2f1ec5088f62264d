"""Stage 2: is the validation set really held out? Findings TG301-TG306 and the split fingerprints.

Run: `tunegate check --train data/train.jsonl --validation data/validation.jsonl`

The exact checks cost one hash pass during the dataset stage's read (see tunegate.overlap.exact); the
near-duplicate pass (on by default) sketches the records during the same read (see
tunegate.overlap.near) and only reads the files again when that read ran elsewhere.
"""
from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tunegate import progress
from tunegate.dataset.fingerprint import FingerprintObserver
from tunegate.dataset.split import SplitNames, feed_observers
from tunegate.errors import TunegateError
from tunegate.overlap.exact import Match, OverlapObserver, Repeat, SplitHashes
from tunegate.overlap.joins import duplicates, leaks, repeat_groups
from tunegate.overlap.near import NearPass, NearSettings, find_near_duplicates
from tunegate.overlap.reported import ReportedKeys
from tunegate.pathguard import same_file
from tunegate.report import FindingCollector, StageResult
from tunegate.spec.overlap_defaults import OVERLAP_DEFAULTS, OverlapDefaults
from tunegate.stage import GateContext

if TYPE_CHECKING:  # a type: a check without a spec reads the defaults, not the section's model
    from tunegate.spec.overlap_settings import OverlapSpec

    Settings = OverlapSpec | OverlapDefaults

STAGE = "overlap"
ROLES = ("train", "validation")
_DEDUP = "Remove the record from one of the splits (usually from train): a score on examples the model trained on says nothing about generalisation."


def prepare(ctx: GateContext) -> None:
    """Ride along the dataset read: hash every record of both splits, and sketch them for the
    near-duplicate pass, as they are read."""
    if all(role in ctx.files for role in ROLES):
        ctx.observers.append(OverlapObserver(_near_pass_for(ctx.files, _settings(ctx))))


def _settings(ctx: GateContext) -> Settings:
    return ctx.spec.gate.overlap if ctx.spec is not None else OVERLAP_DEFAULTS


def _near_pass_for(files: Mapping[str, list[Path]], settings: Settings) -> NearPass | None:
    """The near-duplicate pass to feed during the read, indexing the smaller split; None when off."""
    if not settings.near_duplicates or settings.num_perm < 2:
        return None
    if _shared_file(list(files["train"]), list(files["validation"])) is not None:
        return None  # validation is train (TG306): nothing to compare, so nothing to index
    sizes = {role: sum(_size(path) for path in files[role]) for role in ROLES}
    index_role = "validation" if sizes["validation"] <= sizes["train"] else "train"
    return NearPass(index_role, _near_settings(settings))


def _near_settings(settings: Settings) -> NearSettings:
    return NearSettings(settings.threshold, settings.shingle_size, settings.num_perm)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def run_stage(ctx: GateContext) -> StageResult:
    """Stage 2 in the gate: judge the overlap the dataset read hashed (or read the files here)."""
    missing = [role for role in ROLES if role not in ctx.files]
    if missing:
        return StageResult.skipped(STAGE, f"no {' or '.join(missing)} file given: nothing to compare")
    settings = _settings(ctx)
    observer = next((o for o in ctx.observers if isinstance(o, OverlapObserver)), None)
    if observer is None:
        observer = OverlapObserver(_near_pass_for(ctx.files, settings))
    order = sorted(ROLES, key=lambda role: role != observer.read_first)
    unread = {r: ctx.files[r] for r in order if r not in observer.finished}
    if unread:  # the dataset stage ran in another step (e.g. its own flow task): read here
        try:
            feed_observers(unread, [FingerprintObserver(ctx.fingerprints, ctx.files), observer])
        except TunegateError as exc:
            return StageResult.skipped(STAGE, f"cannot read the data: {exc}")
    try:
        result = find_overlap(ctx.files, observer, settings, ctx.cap)
    finally:
        for split in observer.splits.values():
            split.close()  # a spilled split's file: gone now rather than at exit
    result.stats["read_by"] = "overlap stage" if unread else "dataset stage"
    return result


def find_overlap(files: Mapping[str, Path | Sequence[Path]], observer: OverlapObserver, settings: Settings,
                 cap: int = 20) -> StageResult:
    """Judge the overlap of the train and validation splits (each one file or several) the observer has hashed."""
    start = time.perf_counter()
    out = FindingCollector(STAGE, cap)
    train, val = observer.split("train"), observer.split("validation")
    names = SplitNames({role: files[role] for role in ROLES})
    stats: dict[str, Any] = {role: {"records": len(s), "unreadable": s.skipped}
                             for role, s in (("train", train), ("validation", val))}
    shared = _shared_file(names.files["train"], names.files["validation"])
    if shared is not None:
        whose = "the training file" if len(names.files["train"]) == 1 else "one of the training files"
        out.add("TG306", "error", f"the validation file is {whose} ({shared})",
                "Hold out a separate, frozen validation file.", file=str(shared))
        return out.result(time.perf_counter() - start, _summarise(stats, "validation is train"))
    if val.seen == 0:
        several = len(names.files["validation"]) > 1
        out.add("TG305", "error", f"the validation file{'s' if several else ''} {names.split('validation')} "
                f"hold{'' if several else 's'} no records",
                "Fill it with held-out examples (commonly 5-10% of the data, never seen in training).",
                file=names.file("validation"))
        return out.result(time.perf_counter() - start, _summarise(stats, "validation empty"))
    stats.update(_exact_pass(out, names, train, val, settings, observer.exact_repeats.get("train", ReportedKeys())))
    stats["timing_s"] = {"hashing": round(observer.seconds, 4), "exact": stats.pop("_exact_s")}
    if settings.near_duplicates and settings.num_perm < 2:
        out.add("TG307", "warning", f"gate.overlap.num_perm is {settings.num_perm}; MinHash LSH needs at least 2 "
                "permutations, so the near-duplicate pass did not run", "Set gate.overlap.num_perm to 128 "
                "(the default; more is more precise and slower).", key="gate.overlap.num_perm")
        stats["near_duplicates"] = None
    elif settings.near_duplicates:
        stats.update(_near_pass(out, names, observer, settings))
        stats["timing_s"]["near"] = stats.pop("_near_s")
    else:
        stats["near_duplicates"] = None
    _share_check(out, names, stats, val.seen, settings)
    return out.result(time.perf_counter() - start, _summarise(stats, None))


def _share_check(out: FindingCollector, names: SplitNames, stats: dict[str, Any], total: int,
                 settings: Settings) -> None:
    """TG308: too many validation records have a near copy or their prompt in train (each alone warns)."""
    touched = stats.pop("_leaked") | stats.pop("_near", set())
    share = len(touched) / total if total else 0.0
    stats["contaminated_share"] = round(share, 4)
    if share <= settings.max_contaminated_share:
        return
    out.add("TG308", "error", f"{len(touched)} of {total} validation records ({share:.0%}) have a near duplicate "
            f"or their prompt in {names.split('train')}, above gate.overlap.max_contaminated_share "
            f"({settings.max_contaminated_share:.0%}): the validation score would partly measure recall of "
            "training data", "Remove those records from one split (TG302 and TG303 name each one), or raise "
            "gate.overlap.max_contaminated_share if the overlap is intended.", file=names.file("validation"))


def _exact_pass(out: FindingCollector, names: SplitNames, train: SplitHashes, val: SplitHashes,
                settings: Settings, reported: ReportedKeys) -> dict[str, Any]:
    """TG301, TG302 and TG304 from the joins, streamed: past a code's cap a match is only counted."""
    start = time.perf_counter()
    dupes = 0
    for m in duplicates(train, val):
        dupes += 1
        if out.full("TG301"):
            out.count("TG301", "error")
            continue
        out.add("TG301", "error", f"validation record also in train (after normalising case, whitespace and "
                f"Unicode forms): {_pair(names, train, val, m, '==')}{_more(m)}", _DEDUP,
                **_place(names, val, m.at))
    leaked = _prompt_leaks(out, names, train, val, settings)
    groups = records = 0
    for g in repeat_groups(train, reported):  # byte-identical copies are the dataset stage's TG210
        groups, records = groups + 1, records + g.count
        if out.full("TG304"):
            out.count("TG304", "warning")
            continue
        out.add("TG304", "warning", f"record at {_at(names, 'train', train, g.first)} is repeated {g.count} "
                f"more time(s) in train ({_later(names, train, g)})",
                "Deduplicate train: each copy adds weight to this example in the loss.",
                **_place(names, train, g.later[0], "train"))
    return {"exact_duplicates": dupes, "prompt_leaks": len(leaked), "_leaked": leaked,
            "train_repeats": {"groups": groups, "records": records, "byte_identical": len(reported)},
            "_exact_s": round(time.perf_counter() - start, 4)}


def _prompt_leaks(out: FindingCollector, names: SplitNames, train: SplitHashes, val: SplitHashes,
                  settings: Settings) -> set[int]:
    """TG302 for each leak; the keys of the validation records that leak."""
    leaked: set[int] = set()
    severity = settings.prompt_leakage_severity
    for m in leaks(train, val):
        leaked.add(val.place(m.at)[1])
        if out.full("TG302"):
            out.count("TG302", severity)
            continue
        out.add("TG302", severity,
                f"the prompt of this validation record is also in train with a different answer: "
                f"{_pair(names, train, val, m, 'prompt ==')}{_more(m)}",
                "Keep each prompt in one split: the model has seen this question with its own answer. "
                "Move the record, or set gate.overlap.prompt_leakage_severity.",
                **_place(names, val, m.at))
    return leaked


def _near_pass(out: FindingCollector, names: SplitNames, observer: OverlapObserver,
               settings: Settings) -> dict[str, Any]:
    near = observer.near
    if near is not None and near.complete and near.settings == _near_settings(settings):
        found = near.result()  # fed during the dataset read: no second read
    else:
        train, val = observer.split("train"), observer.split("validation")
        index_role = "validation" if len(val) <= len(train) else "train"
        with progress.step("near duplicates", total=len(train) + len(val), unit="records"):
            found = find_near_duplicates(names.files, index_role, threshold=settings.threshold,
                                         shingle_size=settings.shingle_size, num_perm=settings.num_perm)
    for p in found.pairs:
        more = f"; {p.count} train records in all" if p.count > 1 else ""
        out.add("TG303", settings.near_duplicate_severity,
                f"validation record nearly duplicates a training record (estimated Jaccard {p.similarity:.2f} "
                f">= {settings.threshold:g}): {names.at('train', p.train[1], p.train[0])} ~ "
                f"{names.at('validation', p.validation[1], p.validation[0])}{more}",
                "Remove or rewrite one of the two; set gate.overlap.threshold or gate.overlap.near_duplicates "
                "to tune this check.", **names.place("validation", p.validation[1], p.validation[0]))
    return {"near_duplicates": len(found.pairs), "_near": {p.validation[1] for p in found.pairs},
            "near_duplicate_pass": {"indexed": found.indexed, "threshold": settings.threshold,
                                    "shingle_size": settings.shingle_size, "num_perm": settings.num_perm,
                                    "candidates_checked": found.candidates},
            "_near_s": round(found.seconds, 4)}


def _pair(names: SplitNames, train: SplitHashes, val: SplitHashes, m: Match, sign: str) -> str:
    return f"{_at(names, 'train', train, m.other)} {sign} {_at(names, 'validation', val, m.at)}"


def _at(names: SplitNames, role: str, split: SplitHashes, position: int) -> str:
    """`file:line` of the split's record at `position`."""
    line, key = split.place(position)
    return names.at(role, key, line)


def _later(names: SplitNames, train: SplitHashes, group: Repeat) -> str:
    """Where a repeated record's later copies are: `line 4, 9` in one file, `a.jsonl:4, b.jsonl:2` across several."""
    more = ", ..." if group.count > len(group.later) else ""
    if len(names.files["train"]) == 1:
        return "line " + ", ".join(str(train.place(p)[0]) for p in group.later) + more
    return ", ".join(_at(names, "train", train, p) for p in group.later) + more


def _more(m: Match) -> str:
    return f" ({m.count} copies in train)" if m.count > 1 else ""


def _place(names: SplitNames, split: SplitHashes, position: int, role: str = "validation") -> dict[str, Any]:
    line, key = split.place(position)
    return names.place(role, key, line)


def _shared_file(train: list[Path], validation: list[Path]) -> Path | None:
    """A validation file that is also a training file, if any."""
    return next((v for v in validation if any(same_file(t, v) for t in train)), None)




def _summarise(stats: dict[str, Any], verdict: str | None) -> dict[str, Any]:
    head = f"train {stats['train']['records']} / validation {stats['validation']['records']} records"
    if verdict is not None:
        stats["summary"] = f"{head}: {verdict}"
        return stats
    near = stats.get("near_duplicates")
    parts = [f"{stats['exact_duplicates']} exact", f"{stats['prompt_leaks']} prompt leak(s)",
             "near-duplicate pass off" if near is None else f"{near} near duplicate(s)",
             f"{stats['train_repeats']['records'] + stats['train_repeats']['byte_identical']} repeated in train"]
    stats["summary"] = f"{head}: " + ", ".join(parts)
    return stats
