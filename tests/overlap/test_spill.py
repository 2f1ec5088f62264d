"""Splits too big for memory: their exact hashes and near-duplicate index go to disk, same findings.

`TUNEGATE_OVERLAP_SPILL_RECORDS` lowers the number of records a split keeps in memory and
`TUNEGATE_NEAR_SPILL_ROWS` the MinHash rows the near-duplicate index does, so the spilled joins
(tunegate.overlap.buckets, near_join) run on small files here; their findings, stats and order
must be those of the in-memory ones. The bound itself is measured on a generated gzip of half a
million records (and a copy as validation) read by the overlap stage in its own process.
"""
from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path

from tests.overlap.test_exact import DATA, EXACT_ONLY, chat, run_stage, write_jsonl
from tests.support.peak_rss import run_measured
from tunegate.overlap import buckets, exact, near, near_index, near_join, shared_index
from tunegate.overlap.near_index import NEAR_SPILL_VARIABLE
from tunegate.overlap.shared_index import write_index
from tunegate.overlap.spill import SPILL_VARIABLE
from tunegate.report import StageResult
from tunegate.spec.model import OverlapSpec

BUDGET_MB = 150


def _report(result: StageResult) -> tuple:
    stats = {k: v for k, v in result.stats.items() if k != "timing_s"}
    return [f.model_dump() for f in result.findings], result.totals_by_code, stats


def _crowded(tmp_path: Path) -> tuple[Path, Path]:
    """Train and validation files with many copies, variants, leaks and repeats."""
    rnd = random.Random(7)
    train = [chat(f"q{rnd.randrange(60)}", f"a{rnd.randrange(3)}") for _ in range(700)]
    val = [chat(f"Q{rnd.randrange(90)} ", f"a{rnd.randrange(4)}") for _ in range(300)]
    return write_jsonl(tmp_path / "train.jsonl", train), write_jsonl(tmp_path / "val.jsonl", val)


def _near_copies(tmp_path: Path) -> tuple[Path, Path]:
    """Validation records that are one- or two-word edits of train records, and some exact copies."""
    rnd = random.Random(11)
    words = [f"w{i}" for i in range(40)]
    texts = [" ".join(rnd.choice(words) for _ in range(40)) for _ in range(400)]
    edited = []
    for text in rnd.sample(texts, 150):
        cut = text.split()
        for _ in range(rnd.choice([0, 1, 1])):
            cut[rnd.randrange(len(cut))] = "edit"
        edited.append(" ".join(cut))
    return (write_jsonl(tmp_path / "near_train.jsonl", [chat(t, "ok") for t in texts]),
            write_jsonl(tmp_path / "near_val.jsonl", [chat(t, "ok") for t in edited]))


def test_spilled_joins_and_index_report_what_the_in_memory_ones_report(tmp_path, monkeypatch):
    train, val = _crowded(tmp_path)
    near_train, near_val = _near_copies(tmp_path)
    cases = [(DATA / "train.jsonl", DATA / "validation.jsonl", OverlapSpec()), (train, val, EXACT_ONLY),
             (near_train, near_val, OverlapSpec(threshold=0.6)), (near_val, near_train, OverlapSpec(threshold=0.6))]
    expected = [_report(run_stage(t, v, s, cap=5)) for t, v, s in cases]
    monkeypatch.setenv(SPILL_VARIABLE, "3")
    monkeypatch.setenv(NEAR_SPILL_VARIABLE, "2")
    monkeypatch.setattr(buckets, "BUCKET_KEYS", 16)  # many buckets and result files
    monkeypatch.setattr(buckets, "RANGE", 50)
    monkeypatch.setattr(exact, "WHOLE_COLUMN_RECORDS", 2)  # a spilled split's repeats in buckets too
    monkeypatch.setattr(near_join, "BUCKET_ROWS", 7)  # many buckets and query ranges
    monkeypatch.setattr(near_join, "RANGE", 5)
    assert [_report(run_stage(t, v, s, cap=5)) for t, v, s in cases] == expected
    assert expected[1][1]["TG301"] > 5 and expected[1][1]["TG302"] > 5 and expected[1][1]["TG304"] > 5
    assert expected[2][1]["TG303"] > 5 and expected[3][1]["TG303"] > 5  # each split indexed once


def test_a_spilled_train_split_is_joined_in_memory_as_the_in_memory_joins_join(tmp_path, monkeypatch):
    train, val = _crowded(tmp_path)  # 700 train records, 300 validation
    expected = _report(run_stage(train, val, EXACT_ONLY, cap=5))
    monkeypatch.setenv(SPILL_VARIABLE, "400")  # train spills, validation stays in memory
    monkeypatch.setattr(exact, "CHUNK_ROWS", 64)  # train's file read in many chunks

    def bucketed(*args):
        raise AssertionError("validation is in memory: no hash buckets on disk")

    monkeypatch.setattr(buckets, "spilled_duplicates", bucketed)
    monkeypatch.setattr(buckets, "spilled_leaks", bucketed)
    monkeypatch.setattr(buckets, "spilled_repeats", bucketed)  # train's whole-record column fits in memory
    assert _report(run_stage(train, val, EXACT_ONLY, cap=5)) == expected
    assert expected[1]["TG301"] > 5 and expected[1]["TG302"] > 5 and expected[1]["TG304"] > 5


def test_an_index_mapped_from_files_reports_what_the_one_in_the_heap_reports(tmp_path, monkeypatch):
    near_train, near_val = _near_copies(tmp_path)
    cases = [(DATA / "train.jsonl", DATA / "validation.jsonl", OverlapSpec()),
             (near_train, near_val, OverlapSpec(threshold=0.6)), (near_val, near_train, OverlapSpec(threshold=0.6))]
    monkeypatch.setattr(near, "BATCH_ROWS", 2)  # numpy batches, not the small splits' one compiled pass
    expected = [_report(run_stage(t, v, s, cap=5)) for t, v, s in cases]
    monkeypatch.setattr(near_index, "MAP_BYTES", 3 * 4 * 128)  # past 3 rows the index goes to files
    written = []
    monkeypatch.setattr(near, "write_index", lambda *a: written.append(a) or write_index(*a))
    assert [_report(run_stage(t, v, s, cap=5)) for t, v, s in cases] == expected
    assert len(written) == 3  # each case's index was built from its files
    assert expected[1][1]["TG303"] > 5 and expected[2][1]["TG303"] > 5


def test_a_disk_without_room_for_the_index_look_up_is_an_environment_error_not_a_crash(tmp_path, monkeypatch):
    import errno

    import pytest

    from tunegate.errors import OutputError
    from tunegate.native import compiled

    if compiled is None:
        pytest.skip("the look-up is the compiled extension's")

    def full(*_):  # where the look-up's blocks are taken: a full disk answers ENOSPC there
        raise OSError(errno.ENOSPC, "No space left on device")

    near_train, near_val = _near_copies(tmp_path)
    monkeypatch.setattr(near, "BATCH_ROWS", 2)
    monkeypatch.setattr(near_index, "MAP_BYTES", 3 * 4 * 128)
    monkeypatch.setattr(shared_index.os, "posix_fallocate", full)
    with pytest.raises(OutputError, match="set TMPDIR"):
        run_stage(near_train, near_val, OverlapSpec(threshold=0.6))


def test_a_spilled_split_leaves_no_temporary_files(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setenv(SPILL_VARIABLE, "2")
    from tunegate.overlap.exact import OverlapObserver
    from tunegate.overlap.stage import find_overlap
    from tunegate.dataset.split import feed_observers

    train, val = _crowded(tmp_path)
    observer = OverlapObserver()
    feed_observers({"train": train, "validation": val}, [observer])
    assert observer.split("train").spilled and list((tmp_path / "tmp").iterdir())
    find_overlap({"train": train, "validation": val}, observer, EXACT_ONLY)
    for split in observer.splits.values():
        split.close()
    assert list((tmp_path / "tmp").iterdir()) == []


_READ_AND_JUDGE = """
import sys
from tunegate.dataset.split import feed_observers
from tunegate.overlap.exact import OverlapObserver
from tunegate.overlap.stage import find_overlap
from tunegate.spec.model import OverlapSpec
files = {"train": sys.argv[1], "validation": sys.argv[2]}
observer = OverlapObserver()
feed_observers(files, [observer])
result = find_overlap(files, observer, OverlapSpec())
print(result.stats["exact_duplicates"], result.stats["train_repeats"]["groups"], result.stats["near_duplicates"])
"""


def test_the_overlap_of_half_a_million_records_stays_in_a_fixed_budget(tmp_path):
    data = tmp_path / "train.jsonl.gz"
    count = 500_000  # in memory the joins and the near-duplicate index would take ~1.2 GB here
    with gzip.open(data, "wb", compresslevel=1) as f:
        for start in range(0, count, 100_000):
            f.write(b"".join(b'{"messages":[{"role":"user","content":"q %d"},{"role":"assistant","content":"a %d"}]}\n'
                             % (i, i % 1000) for i in range(start, start + 100_000)))
    copy = tmp_path / "validation.jsonl.gz"
    copy.write_bytes(data.read_bytes())
    done = run_measured([sys.executable, "-c", _READ_AND_JUDGE, str(data), str(copy)])
    assert done.stdout.split() == [str(count), "0", "0"]  # every validation record is in train, exactly
    assert done.peak_mb <= BUDGET_MB, f"peak RSS {done.peak_mb:.0f} MB"


def test_a_big_validation_index_read_by_two_workers_stays_in_the_budget(tmp_path):
    """40,000 validation records, a near-duplicate index of 40,000 MinHash rows (its look-up ~29 MB):
    the workers share the index's files and one look-up; built in each worker, it took ~200 MB PSS."""
    from tests.support.peak_rss import tunegate_args

    rnd = random.Random(5)
    words = [f"w{i}" for i in range(3000)]

    def records(count: int) -> bytes:
        return b"".join(json.dumps(chat(" ".join(rnd.choices(words, k=30)), " ".join(rnd.choices(words, k=8))))
                        .encode() + b"\n" for _ in range(count))

    (tmp_path / "validation.jsonl").write_bytes(records(40_000))
    (tmp_path / "train.jsonl").write_bytes(records(120_000))
    done = run_measured(tunegate_args("check", "--train", tmp_path / "train.jsonl", "--validation",
                                      tmp_path / "validation.jsonl", "--json"), pss=True, env={"TUNEGATE_WORKERS": "2"})
    assert done.returncode in (0, 1), done.stderr
    overlap = next(s for s in json.loads(done.stdout)["stages"] if s["name"] == "overlap")
    assert overlap["stats"]["near_duplicate_pass"]["indexed"] == "validation"
    assert done.peak_mb <= BUDGET_MB, done.peak_mb


def test_a_plain_file_of_many_short_records_read_by_two_workers_stays_in_the_budget(tmp_path):
    """800,000 short records (~110 MB): the TG210 index of byte-identical repeats grew to 2**21 slots
    (and held both tables while growing) and each worker sketched 16,384 records a batch: 182 MB PSS
    over the tree with two workers at c82a8da, ~137 MB now (18.5 M such records: 168 -> 131 MB)."""
    from tests.support.peak_rss import tunegate_args

    train = tmp_path / "train.jsonl"
    with open(train, "wb") as f:
        for start in range(0, 800_000, 100_000):
            f.write(b"".join(b'{"messages": [{"role": "user", "content": "question %d about things"}, '
                             b'{"role": "assistant", "content": "answer %d here."}]}\n' % (i, i * 7)
                             for i in range(start, start + 100_000)))
    done = run_measured(tunegate_args("check", "--train", train, "--validation", DATA / "validation.jsonl", "--json"),
                        pss=True, env={"TUNEGATE_WORKERS": "2"})
    assert done.returncode in (0, 1), done.stderr
    dataset = next(s for s in json.loads(done.stdout)["stages"] if s["name"] == "dataset")
    assert dataset["stats"]["train"]["records"] == 800_000
    assert done.peak_mb <= BUDGET_MB, done.peak_mb


def test_a_validation_file_that_is_the_training_file_builds_no_near_duplicate_index():
    from tunegate.overlap.stage import prepare
    from tunegate.stage import GateContext

    ctx = GateContext(None, None, {"train": [DATA / "train.jsonl"], "validation": [DATA / "train.jsonl"]}, cap=20)
    prepare(ctx)  # TG306 ends the stage before any comparison: an index of a copy of train would be waste
    [observer] = ctx.observers
    assert observer.near is None


def test_a_temporary_folder_that_cannot_be_written_is_an_environment_error(tmp_path, monkeypatch):
    import pytest

    from tunegate.errors import OutputError
    from tunegate.overlap.exact import SplitHashes
    from tunegate.overlap.normalize import normalise_record_bytes

    monkeypatch.setenv(SPILL_VARIABLE, "1")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "missing"))
    split = SplitHashes()
    split.add(1, 0, normalise_record_bytes(chat("hi", "there")))
    with pytest.raises(OutputError, match="set TMPDIR"):
        split.add(2, 1, normalise_record_bytes(chat("hello", "again")))


def test_the_arrays_freed_by_a_splits_first_spill_are_given_back_and_no_later_chunks(tmp_path, monkeypatch):
    from tunegate.overlap import exact
    from tunegate.overlap.normalize import normalise_record_bytes

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setenv(SPILL_VARIABLE, "5")
    given_back = []
    monkeypatch.setattr(exact, "give_back_freed", lambda: given_back.append(len(split)) or True)
    split = exact.SplitHashes()
    for i in range(40):
        split.add(i + 1, i, normalise_record_bytes(chat(f"q{i}", "a")))
    split.flush()  # a later chunk (what the file's end writes): nothing freed at the spill's size
    assert split.spilled and len(split) == 40
    assert given_back == [6]  # once: when the first spill moved the 6 records' arrays to disk
    split.close()
