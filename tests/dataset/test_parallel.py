"""Reading a file in parts, in worker processes, gives exactly the report of one read.

Each test reads the same file both ways (workers=1: one read in this process; workers=2 with tiny
parts: every part boundary lands somewhere different) and compares everything the stage and its
observers produce: findings in order, totals, stats, fingerprints, overlap hashes, near pairs.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.paths import DATA, ROOT
from tunegate.dataset.fingerprint import FingerprintObserver
from tunegate.dataset.records import BOM
from tunegate.dataset import forked_pool, parallel
from tunegate.dataset.parallel import WORKERS_ENV, worker_count
from tunegate.dataset.segments import cut, splittable
from tunegate.dataset.stage import validate_dataset
from tunegate.errors import WorkerDied
from tunegate.native import compiled
from tunegate.overlap.exact import OverlapObserver
from tunegate.overlap.near import NearPass, NearSettings
from tunegate.overlap.stage import find_overlap
from tunegate.spec.model import OverlapSpec

BAD = DATA / "dataset" / "bad"
GOOD = DATA / "dataset" / "good"
# Files whose defect is in the file as a whole (its start, its end, its encoding): not mixable.
WHOLE_FILE = {"empty.jsonl", "blank_only.jsonl", "json_array.jsonl", "bom.jsonl", "utf16.jsonl", "bzip2.jsonl",
              "truncated.jsonl.gz", "blank_run.jsonl.gz", "pretty_printed.jsonl"}


def mixed_file(path: Path) -> Path:
    """Good records, then every line-level defect of the committed corpus, three times over
    (so repeats span parts and every code passes the cap), ending without a newline."""
    lines = (ROOT / "examples" / "data" / "train.jsonl").read_bytes().splitlines(keepends=True)
    for name in sorted(p.name for p in BAD.iterdir() if p.name not in WHOLE_FILE):
        lines += (BAD / name).read_bytes().splitlines(keepends=True)
    for name in ("blank_lines.jsonl", "crlf.jsonl", "emoji.jsonl", "persian_rtl.jsonl", "long_records.jsonl"):
        lines += (GOOD / name).read_bytes().splitlines(keepends=True)
    body = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
    path.write_bytes(body * 3 + b'{"messages": [{"role": "user", "content": "end"}]}')
    return path


def read_both_ways(files: dict[str, Path], part_bytes: int, cap: int = 5):
    results = []
    for workers in (1, 2):
        prints: dict = {}
        overlap = OverlapObserver(NearPass("validation", NearSettings(0.5, 2, 64)) if "validation" in files else None)
        stage = validate_dataset(files, cap, [FingerprintObserver(prints, files), overlap], workers=workers,
                                 part_bytes=part_bytes)
        results.append((stage.model_dump(exclude={"duration_s"}), prints, overlap))
    return results


@pytest.mark.parametrize("part_bytes", [97, 1000, 4096])
def test_a_file_read_in_parts_gives_the_report_of_one_read(tmp_path, part_bytes):
    path = mixed_file(tmp_path / "mixed.jsonl")
    (one, one_prints, one_overlap), (parts, part_prints, part_overlap) = read_both_ways({"train": path}, part_bytes)
    assert parts == one
    assert part_prints == one_prints
    a, b = one_overlap.split("train"), part_overlap.split("train")
    assert (a.full, a.prompt, a.answer, a.lines, a.indexes, a.seen, a.skipped) == \
           (b.full, b.prompt, b.answer, b.lines, b.indexes, b.seen, b.skipped)
    assert one["totals_by_code"]["TG210"] > 5 and one["stats"]["train"]["duplicates"] > 5


def test_overlap_and_near_pairs_are_the_same_when_both_splits_are_read_in_parts(tmp_path):
    train = mixed_file(tmp_path / "train.jsonl")
    copied = train.read_bytes().splitlines(keepends=True)[:40]  # exact copies, and copies with one word changed
    edited = [line.replace(b" the ", b" one ", 1) for line in copied if b" the " in line]
    val = tmp_path / "validation.jsonl"
    val.write_bytes((DATA / "overlap" / "validation.jsonl").read_bytes() * 4 + b"".join(copied[:10] + edited))
    files = {"train": train, "validation": val}
    (_, _, one), (_, _, parts) = read_both_ways(files, 600)
    settings = OverlapSpec(threshold=0.5, shingle_size=2, num_perm=64)
    first, second = find_overlap(files, one, settings), find_overlap(files, parts, settings)
    for result in (first, second):
        result.stats.pop("timing_s")
    assert second.model_dump(exclude={"duration_s"}) == first.model_dump(exclude={"duration_s"})
    assert first.stats["near_duplicates"] > 0 and first.stats["exact_duplicates"] > 0


def test_an_array_line_that_starts_a_later_part_is_not_taken_for_the_start_of_the_file(tmp_path):
    record = b'{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}\n'
    array = (BAD / "json_array_one_line.jsonl").read_bytes().splitlines(keepends=True)[0]
    path = tmp_path / "array_later.jsonl"
    path.write_bytes(record + array + record * 8)
    (one, _, _), (parts, _, _) = read_both_ways({"train": path}, len(record))
    assert parts == one
    assert [f["code"] for f in one["findings"]][:1] == ["TG227"]


def test_a_file_with_a_byte_order_mark_reads_the_same_in_parts(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes((BAD / "bom.jsonl").read_bytes() + (GOOD / "emoji.jsonl").read_bytes() * 20)
    (one, _, _), (parts, _, _) = read_both_ways({"train": path}, 300)
    assert parts == one and one["findings"][0]["code"] == "TG244"


def test_fingerprints_in_parts_are_those_of_one_read_whoever_makes_each_line(tmp_path):
    # The parent copies a chat record's canonical line from the file; a worker sends the others
    # (lines left to orjson, records made exact, other formats): a BOM, CRLF and a last line without
    # a newline must not move either.
    lines = (DATA / "fingerprint" / "lines.jsonl").read_bytes().splitlines(keepends=True)
    body = b"".join(lines) + b'{"messages": [{"role": "user", "content": "1e400 is 1.5"}], "n": 1.5}\r\n\n'
    path = tmp_path / "lines.jsonl"
    path.write_bytes(BOM + body * 4 + b'{"messages": [{"role": "user", "content": "end"}]}')
    for part_bytes in (60, 700):
        (_, one_prints, _), (_, part_prints, _) = read_both_ways({"train": path}, part_bytes)
        assert part_prints == one_prints and one_prints["train"]["records"] > 4 * len(lines)


def test_without_the_compiled_copy_every_line_travels_from_the_worker_to_the_same_fingerprint(tmp_path, monkeypatch):
    from tunegate.dataset import fingerprint

    path = mixed_file(tmp_path / "mixed.jsonl")
    (_, one_prints, _), _ = read_both_ways({"train": path}, 4096)
    monkeypatch.setattr(fingerprint, "from_file", None)  # an extension built before canonical_lines (forked workers see it)
    _, (_, part_prints, _) = read_both_ways({"train": path}, 4096)
    assert part_prints == one_prints


@pytest.mark.skipif(compiled is None, reason="line numbers travel only where canonical.c makes the lines again")
def test_a_part_whose_lines_are_gone_when_the_parent_hashes_it_is_refused(tmp_path):
    from array import array

    from tunegate.dataset.fingerprint import canonical_line
    from tunegate.dataset.part_lines import hash_part
    from tunegate.errors import UnreadableRecord

    path = tmp_path / "changing.jsonl"
    path.write_bytes(b'{"messages": []}\n' * 3)
    taken: list[bytes] = []
    hash_part(lambda chunk: taken.append(bytes(chunk)), (str(path), 0, path.stat().st_size, None),  # a view, lent
              array("q", [1, 2, 3]), [], bytearray(), canonical_line)
    assert b"".join(taken) == b'{"messages":[]}\n' * 3
    path.write_bytes(b'{"messages": []}\n')  # rewritten before the part was hashed
    with pytest.raises(UnreadableRecord, match="changed while it was read"):
        hash_part(lambda chunk: taken.append(bytes(chunk)), (str(path), 0, 51, None), array("q", [1, 2, 3]), [],
                  bytearray(), canonical_line)


def test_a_part_rewritten_in_place_after_the_worker_read_it_is_refused(tmp_path):
    """The same size, other bytes: the parent would hash lines the checks never saw."""
    import os
    from array import array

    from tunegate.dataset.fingerprint import canonical_line
    from tunegate.dataset.part_lines import hash_part, stamp_of
    from tunegate.errors import UnreadableRecord

    path = tmp_path / "changing.jsonl"
    path.write_bytes(b'{"messages": [1]}\n' * 3)
    stamp = stamp_of(str(path))  # as the worker took it when it began the part
    with path.open("r+b") as f:
        f.write(b'{"messages": [2]}\n')
    os.utime(path, ns=(stamp[2] + 10**9, stamp[2] + 10**9))  # as a write a tick later leaves it
    with pytest.raises(UnreadableRecord, match="changed while it was read"):
        hash_part([].append, (str(path), 0, stamp[1], stamp), array("q", [1, 2, 3]), [], bytearray(), canonical_line)


def test_a_blank_file_in_parts_is_still_a_file_without_records(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"   \n\n\t\n" * 400)
    (one, _, _), (parts, _, _) = read_both_ways({"train": path}, 128)
    assert parts == one and [f["code"] for f in one["findings"]] == ["TG242"]


FORMATS = DATA / "formats"


def lines_of(*paths: Path) -> bytes:
    return b"".join(line if line.endswith(b"\n") else line + b"\n"
                    for path in paths for line in path.read_bytes().splitlines(keepends=True))


def test_a_sharegpt_file_with_records_of_other_formats_reads_the_same_in_parts(tmp_path):
    path = tmp_path / "sharegpt.jsonl"
    odd = [FORMATS / "bad" / name for name in ("mixed_sharegpt_alpaca.jsonl", "sharegpt_robot.jsonl",
                                               "sharegpt_ends_with_human.jsonl", "alpaca_no_output.jsonl")]
    path.write_bytes(lines_of(FORMATS / "good" / "sharegpt.jsonl") * 6 + lines_of(*odd) * 3)
    assert splittable(path, [], "auto").format == "sharegpt"  # so it is read in parts, fixed as one read fixes it
    (one, one_prints, _), (parts, part_prints, _) = read_both_ways({"train": path}, 700)
    assert parts == one and part_prints == one_prints
    assert one["stats"]["train"]["format"] == "sharegpt"
    assert "TG260" in one["totals_by_code"]  # a record of another format, placed after the file's first record


def test_openai_records_with_tools_and_weights_read_the_same_in_parts(tmp_path):
    path = tmp_path / "openai.jsonl"
    bad = sorted(p for p in (FORMATS / "bad").glob("openai_*.jsonl"))
    path.write_bytes(lines_of(FORMATS / "good" / "openai_tools.jsonl", *bad) * 5)
    assert splittable(path, [], "auto").format == "messages"
    (one, one_prints, _), (parts, part_prints, _) = read_both_ways({"train": path}, 500)
    assert parts == one and part_prints == one_prints
    assert sum(one["totals_by_code"].values()) > 5


def test_a_json_array_file_is_read_in_one_process_with_the_same_report(tmp_path):
    path = FORMATS / "good" / "alpaca.json"
    assert splittable(path, [], "auto") is None
    (one, _, _), (parts, _, _) = read_both_ways({"train": path}, 97)
    assert parts == one and one["stats"]["train"]["container"] == "json"


class Exploding:
    """An observer whose part fails in the worker: a bug of ours, never a finding."""

    def observe(self, role, line, index, record):
        raise RuntimeError("observer bug")

    def finish(self, role):
        pass

    def part(self, role):
        return Exploding()

    def payload(self):
        return None

    def join(self, role, payload, lines, records):
        pass


def test_a_failure_inside_a_worker_is_raised_not_reported_as_a_finding(tmp_path):
    path = mixed_file(tmp_path / "mixed.jsonl")
    with pytest.raises(RuntimeError, match="observer bug"):
        validate_dataset({"train": path}, 5, [Exploding()], workers=2, part_bytes=1000)


def test_the_worker_count_follows_the_environment(monkeypatch):
    monkeypatch.setenv(WORKERS_ENV, "3")
    assert worker_count() == 3
    monkeypatch.setenv(WORKERS_ENV, "1")
    assert worker_count() == 1


def _usable() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _loadavg(monkeypatch, tmp_path: Path, text: str) -> None:
    """The machine's load as /proc/loadavg writes it."""
    (tmp_path / "loadavg").write_text(text, encoding="ascii")
    monkeypatch.setattr(parallel, "LOADAVG", str(tmp_path / "loadavg"))
    monkeypatch.delenv(WORKERS_ENV, raising=False)


def test_an_idle_machine_reads_with_every_usable_cpu(monkeypatch, tmp_path):
    _loadavg(monkeypatch, tmp_path, "0.10 0.20 0.30 1/300 4242\n")
    assert worker_count() == min(_usable(), 8)


def test_a_machine_whose_cpus_are_all_busy_reads_in_one_process(monkeypatch, tmp_path):
    _loadavg(monkeypatch, tmp_path, f"{_usable() + 5}.00 8.00 6.00 {_usable() + 6}/300 4242\n")
    assert worker_count() == 1


def test_the_load_a_finished_command_leaves_behind_does_not_count(monkeypatch, tmp_path):
    _loadavg(monkeypatch, tmp_path, f"{_usable() + 5}.00 8.00 6.00 1/300 4242\n")  # only this process runs now
    assert worker_count() == min(_usable(), 8)


def test_the_environment_overrides_the_load(monkeypatch, tmp_path):
    _loadavg(monkeypatch, tmp_path, "50.00 50.00 50.00 51/300 4242\n")
    monkeypatch.setenv(WORKERS_ENV, "2")
    assert worker_count() == 2


def test_the_gate_reports_the_same_whether_it_reads_in_parts_or_not(tmp_path, monkeypatch):
    from tunegate.dataset import stage
    from tunegate.gate import check

    records = (ROOT / "examples" / "data" / "train.jsonl").read_bytes().splitlines(keepends=True)
    train, val = tmp_path / "train.jsonl", tmp_path / "validation.jsonl"
    # Byte-identical repeats (TG210) and copies that differ in case only (TG304): warnings, so the
    # overlap stage runs too.
    train.write_bytes(b"".join(records) * 4 + b"".join(r.replace(b" the ", b" THE ", 1) for r in records[:10]))
    val.write_bytes(b"".join(records[:5] + [r.replace(b" the ", b" one ", 1) for r in records[5:40]]))
    reports, cuts = [], []
    real_cut = stage.cut
    monkeypatch.setattr(stage, "cut", lambda path, size, **kw: cuts.append(path) or real_cut(path, size, **kw))
    for workers in ("1", "2"):
        monkeypatch.setenv(WORKERS_ENV, workers)
        for name in ("SPLIT_FORKED", "SPLIT_SPAWNED", "MIN_PART", "PART_BYTES"):  # gate sizes scaled to test files
            monkeypatch.setattr(stage, name, 512)
        report = check(train=train, validation=val).model_dump(mode="json")
        for s in report["stages"]:
            s.pop("duration_s")
            s["stats"].pop("timing_s", None)
        reports.append(report)
    assert reports[1] == reports[0]
    assert sorted(cuts) == [train, val]  # the second run read both files in parts
    assert {"TG210", "TG301", "TG303", "TG304"} <= {f["code"] for f in reports[0]["findings"]}


def test_the_last_parts_are_cut_finer_and_the_parts_still_cover_the_file_at_line_ends(tmp_path):
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"".join(b'{"n": %d, "pad": "%s"}\n' % (i, b"x" * (i % 50)) for i in range(20_000)))
    size = 64 << 10
    spans = cut(path, size, tail=2, least=1 << 10)
    data = path.read_bytes()
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert all(data[end - 1:end] == b"\n" for _, end in spans)
    lengths = [end - start for start, end in spans]
    assert max(lengths[-6:]) < size // 2 < min(lengths[:-9])  # quarters in the last 2 x size bytes
    plain = [end - start for start, end in cut(path, size)]
    assert min(plain[:-1]) >= size and max(plain) < size + 100  # without a tail: every part ~size


def test_a_part_ends_at_the_newline_of_a_line_longer_than_the_first_look_for_it(tmp_path):
    path = tmp_path / "long.jsonl"
    long_line = b'{"pad": "' + b"x" * 3_000_000 + b'"}\n'  # past the 64 KiB and the 1 MiB blocks read
    path.write_bytes(b'{"n": 1}\n' * 10 + long_line + b'{"n": 2}\n' * 10)
    spans = cut(path, 50, least=10)
    assert spans[:3] == [(0, 54), (54, 90 + len(long_line)), (90 + len(long_line), 144 + len(long_line))]  # 9-byte lines
    assert spans[-1][1] == path.stat().st_size


def _cut_files(monkeypatch, files: dict[str, Path], forked: int, alongside: int) -> list[Path]:
    """The files `validate_dataset` reads in parts with two workers, at these thresholds."""
    from tunegate.dataset import stage

    cuts: list[Path] = []
    real_cut = stage.cut
    monkeypatch.setattr(stage, "cut", lambda path, size, **kw: cuts.append(path) or real_cut(path, size, **kw))
    monkeypatch.setattr(stage, "SPLIT_FORKED", forked)
    monkeypatch.setattr(stage, "SPLIT_SPAWNED", forked)
    monkeypatch.setattr(stage, "SPLIT_ALONGSIDE", alongside)
    monkeypatch.setattr(stage, "MIN_PART", 512)
    validate_dataset(files, 5, [FingerprintObserver({}, files)], workers=2)
    return sorted(cuts)


def test_a_smaller_file_joins_the_workers_a_larger_one_started(tmp_path, monkeypatch):
    records = (ROOT / "examples" / "data" / "train.jsonl").read_bytes()
    train, val = tmp_path / "train.jsonl", tmp_path / "validation.jsonl"
    train.write_bytes(records * 8)
    val.write_bytes(records)
    assert _cut_files(monkeypatch, {"train": train, "validation": val}, len(records) * 4, len(records) // 2) == [
        train, val]


def test_a_smaller_file_is_read_here_when_no_file_needs_the_workers(tmp_path, monkeypatch):
    records = (ROOT / "examples" / "data" / "train.jsonl").read_bytes()
    train, val = tmp_path / "train.jsonl", tmp_path / "validation.jsonl"
    train.write_bytes(records * 2)
    val.write_bytes(records)
    assert _cut_files(monkeypatch, {"train": train, "validation": val}, len(records) * 4, len(records) // 2) == []


def test_a_file_below_the_alongside_size_is_read_here_even_beside_a_split_one(tmp_path, monkeypatch):
    records = (ROOT / "examples" / "data" / "train.jsonl").read_bytes()
    train, val = tmp_path / "train.jsonl", tmp_path / "validation.jsonl"
    train.write_bytes(records * 8)
    val.write_bytes(records[:len(records) // 4].rsplit(b"\n", 1)[0] + b"\n")
    assert _cut_files(monkeypatch, {"train": train, "validation": val}, len(records) * 4, len(records) // 2) == [
        train]


def test_a_split_of_two_files_read_in_parts_gives_the_report_of_one_read(tmp_path):
    first = mixed_file(tmp_path / "first.jsonl")
    second = tmp_path / "second.jsonl"
    second.write_bytes(b"".join(reversed(first.read_bytes().splitlines(keepends=True)[:-1])))  # repeats of the first
    val = DATA / "overlap" / "validation.jsonl"
    files = {"train": [first, second], "validation": val}
    (one, one_prints, one_overlap), (parts, part_prints, part_overlap) = read_both_ways(files, 1000)
    assert parts == one and part_prints == one_prints
    a, b = one_overlap.split("train"), part_overlap.split("train")
    assert (a.full, a.lines, a.indexes, a.seen) == (b.full, b.lines, b.indexes, b.seen)
    assert [(s["file"], s["records"] > 0) for s in one["stats"]["train"]["files"]] == [
        (str(first), True), (str(second), True)]
    settings = OverlapSpec(threshold=0.5, shingle_size=2, num_perm=64)
    judged = [find_overlap(files, o, settings).model_dump(exclude={"duration_s"}) for o in (one_overlap, part_overlap)]
    for result in judged:
        result["stats"].pop("timing_s")
    assert judged[0] == judged[1]
    assert any(f["file"] == str(second) for f in judged[0]["findings"] if f["code"] == "TG304")


# -- the pool: the gate's process reads too ------------------------------------------------------


def _slow_pid(item: list[int]) -> tuple[int, int]:
    import time

    time.sleep(0.03)  # long enough that the next result is never ready at once
    item.append(os.getpid())  # what reading an item changes stays with the reader's copy
    return item[0], os.getpid()


def _fails(item: tuple[int, set[int]]) -> int:
    import time

    time.sleep(0.01)
    if item[0] in item[1]:
        raise ValueError(f"bad item {item[0]}")
    return item[0]


def test_two_processes_are_this_one_and_one_worker_and_the_results_keep_the_items_order():
    items = [[n] for n in range(24)]
    with parallel.Workers(2) as pool:
        got = list(pool.in_order(_slow_pid, items))
    assert [n for n, _ in got] == list(range(24))
    readers = {pid for _, pid in got}
    assert os.getpid() in readers and len(readers - {os.getpid()}) == 1
    assert items == [[n] for n in range(24)]  # each item read here was a copy, as a worker's is


def test_the_items_drawn_ahead_of_the_results_yielded_stay_bounded_while_this_process_reads_ahead():
    drawn = []

    def items():
        for n in range(40):
            drawn.append(n)
            yield [n]

    with parallel.Workers(2) as pool:
        for yielded, (n, _) in enumerate(pool.in_order(_slow_pid, items()), start=1):
            assert n == yielded - 1 and len(drawn) - yielded <= pool.window + pool.ahead


def test_an_exception_of_an_item_is_raised_at_its_turn_wherever_the_item_was_read():
    # whichever process reads 3 or 5 (the worker is given two items at a time, this process reads
    # the next ones while it waits), the error comes after every result before it
    for bad in ({3, 5}, {5}, {0}):
        got = []
        with parallel.Workers(2) as pool, pytest.raises(ValueError, match=f"bad item {min(bad)}"):
            for value in pool.in_order(_fails, [(n, bad) for n in range(40)]):
                got.append(value)
        assert got == list(range(min(bad)))


@pytest.mark.skipif(not Path("/proc/sys/fs/pipe-max-size").exists(), reason="Linux sets a pipe's size")
def test_the_pipe_the_workers_send_results_on_holds_a_parts_results_whole():
    import fcntl

    most = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    with parallel.Workers(2) as pool:
        assert list(pool.in_order(_slow_pid, [[1]]))[0][0] == 1
        size = fcntl.fcntl(pool._pool._workers[0].results, fcntl.F_GETPIPE_SZ)
    assert size >= min(forked_pool.RESULT_PIPE, most) and forked_pool.RESULT_PIPE >= 1 << 20


def test_a_process_with_other_threads_spawns_its_worker_and_reads_while_it_starts():
    import threading

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)  # as a Prefect task's threads: forking could deadlock
    other.start()
    try:
        with parallel.Workers(2) as pool:
            assert not pool.forks
            got = list(pool.in_order(_slow_pid, [[n] for n in range(12)]))
    finally:
        stop.set()
        other.join()
    assert [n for n, _ in got] == list(range(12))
    assert os.getpid() in {pid for _, pid in got}  # the worker imports for a while: this process does not wait


def test_a_terminal_s_progress_board_drawing_does_not_stop_the_worker_being_forked(monkeypatch):
    # the board's drawer is a thread of the gate's process, running while the parts are read: the
    # worker is forked all the same (spawning it cost a terminal's every check its imports)
    import io

    from tunegate import progress
    from tunegate.dataset.forked_pool import ForkedPool
    from tunegate.progress.draw import LinePainter

    monkeypatch.setenv("COLUMNS", "200")
    screen = io.StringIO()
    progress.enable(screen, delay_s=0.0, painter=LinePainter(screen))
    try:
        with progress.step("reading train.jsonl", total=12, unit="parts"):
            assert progress.drawer_threads()  # drawing now
            with parallel.Workers(2) as pool:
                got = list(pool.in_order(_slow_pid, [[n] for n in range(12)]))
                assert pool.forks and isinstance(pool._pool, ForkedPool)
    finally:
        progress.disable()
    assert [n for n, _ in got] == list(range(12)) and len({pid for _, pid in got}) == 2
    assert "reading train.jsonl" in screen.getvalue()


def _dies_in_a_worker(item: tuple[int, int]) -> int:
    import time

    time.sleep(0.02)
    if os.getpid() != item[0]:
        os._exit(3)  # as a worker the kernel kills for memory
    return item[1]


def test_a_worker_that_dies_is_raised_not_waited_for_while_this_process_reads_on():
    got = []
    with pytest.raises(WorkerDied):
        with parallel.Workers(2) as pool:
            for value in pool.in_order(_dies_in_a_worker, [(os.getpid(), n) for n in range(40)]):
                got.append(value)
    assert got == list(range(len(got))) and len(got) < 40
