"""Hostile data files: gzip bombs, runs of blank lines, numbers past float precision, odd file names.

Each is a finding that says so and stops (or a digest that sees the change), within seconds,
through the strict reader (the dataset stage), the lenient reader and the command line alike.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.paths import DATA, ROOT
from tunegate.dataset import validate_dataset
from tunegate.dataset.fingerprint import FingerprintObserver, fingerprint_file
from tunegate.dataset.inflate import MAX_RATIO
from tunegate.dataset.records import MAX_BLANK_RUN, iter_records
from tunegate.errors import DecompressionBomb, UnreadableRecord

HOSTILE = DATA / "dataset" / "hostile"
CORPUS = DATA / "dataset"
FORMATS_GOOD = DATA / "formats" / "good"
GOOD_LINE = (CORPUS / "good" / "crlf.jsonl").read_bytes().splitlines()[0] + b"\n"
INFLATED = 64 << 20  # each bomb holds 64 MiB


def stage(path: Path):
    start = time.perf_counter()
    result = validate_dataset({"train": path}, cap=5)
    return result, {f.code for f in result.findings}, time.perf_counter() - start


def test_a_gzip_bomb_of_empty_records_stops_at_tg247_within_seconds():
    result, codes, took = stage(HOSTILE / "empty_objects.jsonl.gz")
    assert "TG247" in codes and result.status == "failed"
    bomb = next(f for f in result.findings if f.code == "TG247")
    assert f"more than {MAX_RATIO}x" in bomb.message and "reading stopped" in bomb.message
    # It stopped after a few MiB of the 64, long before the end.
    assert result.stats["train"]["lines"] < INFLATED // 3 // 4
    assert took < 60  # a hang guard: reading the whole bomb took past 120 s


def test_a_gzip_bomb_of_newlines_stops_at_the_blank_run():
    result, codes, took = stage(HOSTILE / "newlines.jsonl.gz")
    (finding,) = [f for f in result.findings if f.code == "TG248"]
    assert finding.line == 2 and f"over {MAX_BLANK_RUN:,} blank lines" in finding.message
    assert result.stats["train"]["records"] == 1 and took < 60


def test_a_gzip_bomb_of_one_endless_blank_line_stops_at_tg247():
    _, codes, took = stage(HOSTILE / "spaces.jsonl.gz")
    assert "TG247" in codes and took < 60


@pytest.mark.parametrize("strict", [False, True])
def test_the_lenient_reader_stops_at_a_bomb_too(strict):
    with pytest.raises(DecompressionBomb):
        for _ in iter_records(HOSTILE / "empty_objects.jsonl.gz", strict=strict):
            pass


@pytest.mark.parametrize("strict", [False, True])
def test_the_lenient_reader_stops_at_a_run_of_blank_lines(strict):
    with pytest.raises(UnreadableRecord, match=f"over {MAX_BLANK_RUN:,} blank lines"):
        for _ in iter_records(CORPUS / "bad" / "blank_run.jsonl.gz", strict=strict):
            pass


def test_a_plain_file_is_read_through_a_blank_run_so_parts_and_one_read_agree(tmp_path):
    path = tmp_path / "padded.jsonl"
    path.write_bytes(GOOD_LINE + b"\n" * (MAX_BLANK_RUN + 1) + GOOD_LINE.replace(b"}\n", b', "n": 2}\n'))
    result, codes, _ = stage(path)
    assert "TG248" not in codes and result.stats["train"]["records"] == 2
    assert sum(1 for _ in iter_records(path, strict=True)) == 2


@pytest.mark.parametrize("name", ["cut.jsonl.gz", "cut.json.gz"])
def test_a_gzip_stream_cut_inside_its_header_reads_as_nothing_or_is_refused_strictly(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(gzip.compress(GOOD_LINE, mtime=0)[:2])
    assert list(iter_records(path)) == []
    with pytest.raises(UnreadableRecord, match=f"{name}:1: cannot read"):
        list(iter_records(path, strict=True))


def test_blank_lines_short_of_the_limit_are_still_read(tmp_path):
    path = tmp_path / "gaps.jsonl"
    path.write_bytes((GOOD_LINE + b"\n" * (MAX_BLANK_RUN - 1)) * 3)
    result, codes, _ = stage(path)
    assert "TG248" not in codes and result.stats["train"]["blank_lines"] == 3 * (MAX_BLANK_RUN - 1)
    assert sum(1 for _ in iter_records(path)) == 3


def test_a_real_file_of_one_record_repeated_is_not_taken_for_a_bomb(tmp_path):
    """One record 200,000 times: as repetitive as data gets (~290x), still read to the end."""
    path = tmp_path / "repeated.jsonl.gz"
    path.write_bytes(gzip.compress(GOOD_LINE * 200_000, compresslevel=9, mtime=0))
    assert os.path.getsize(path) * 200 < len(GOOD_LINE) * 200_000  # it compresses over 200x
    result, codes, _ = stage(path)
    assert "TG247" not in codes and result.stats["train"]["records"] == 200_000


def test_the_fingerprint_command_refuses_a_bomb_with_exit_1():
    run = subprocess.run([sys.executable, "-m", "tunegate", "fingerprint", str(HOSTILE / "empty_objects.jsonl.gz")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "decompression bomb" in run.stderr and "internal error" not in run.stderr


# -- numbers past float precision -----------------------------------------------------------

RECORD = '{{"messages": [{{"role": "user", "content": "hi"}}, {{"role": "assistant", "content": "yo"}}], "id": {}}}\n'


def digest_of(tmp_path: Path, number: str) -> str:
    path = tmp_path / f"n{len(list(tmp_path.iterdir()))}.jsonl"
    path.write_text(RECORD.format(number))
    return fingerprint_file(path).digest


@pytest.mark.parametrize("base", ["123456789012345678901", "-9223372036854775809", "98765432109876543210987654321"])
def test_every_edit_of_an_integer_beyond_64_bits_changes_the_digest(tmp_path, base):
    digests = {digest_of(tmp_path, str(int(base) + i)) for i in range(100)}
    assert len(digests) == 100


@pytest.mark.parametrize("pair", [("0.10000000000000000000001", "0.10000000000000000000002"),
                                  ("1e-400", "2e-400"), ("1.2345678901234567891e10", "1.2345678901234567892e10")])
def test_an_edit_past_double_precision_changes_the_digest(tmp_path, pair):
    assert digest_of(tmp_path, pair[0]) != digest_of(tmp_path, pair[1])


def test_ordinary_numbers_keep_the_digest_they_always_had(tmp_path):
    """Numbers a double holds are written as orjson writes them: old approvals stay valid."""
    import hashlib

    import orjson

    path = CORPUS / "good" / "extra_fields.jsonl"
    expected = hashlib.sha256()
    for line in path.read_bytes().splitlines():
        expected.update(orjson.dumps(orjson.loads(line), option=orjson.OPT_SORT_KEYS) + b"\n")
    assert fingerprint_file(path, "sha256-canonical-jsonl").digest == expected.hexdigest()
    assert digest_of(tmp_path, "1.5") == digest_of(tmp_path, "1.50") == digest_of(tmp_path, "15e-1")


def test_the_dataset_stage_and_the_fingerprint_command_agree_on_exact_numbers():
    path = CORPUS / "good" / "exact_numbers.jsonl"
    sink: dict = {}
    validate_dataset({"train": path}, observers=[FingerprintObserver(sink, {"train": path})])
    assert sink["train"]["digest"] == fingerprint_file(path).digest


SHAREGPT = '{{"conversations": [{{"from": "human", "value": "hi"}}, {{"from": "gpt", "value": "yo"}}], "id": {}}}'


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_records_in_other_formats_are_hashed_exactly_by_the_stage_and_the_command(tmp_path, suffix):
    digests = set()
    for number in ["12345678901234567890", "12345678901234567891", "1.00000000000000000001", "1.00000000000000000002"]:
        path = tmp_path / f"n{len(digests)}{suffix}"
        path.write_text(SHAREGPT.format(number) + "\n" if suffix == ".jsonl" else f"[{SHAREGPT.format(number)}]")
        sink: dict = {}
        validate_dataset({"train": path}, observers=[FingerprintObserver(sink, {"train": path})])
        assert sink["train"]["digest"] == fingerprint_file(path).digest
        digests.add(sink["train"]["digest"])
    assert len(digests) == 4


def test_an_exponent_past_any_range_is_skipped_leniently_and_refused_strictly():
    path = CORPUS / "bad" / "exponent_past_range.jsonl"
    assert [line for line, _, _ in iter_records(path)] == [1]
    with pytest.raises(UnreadableRecord, match=r"exponent_past_range.jsonl:2: the number 1e-4000+ has an exponent"):
        fingerprint_file(path)


# -- file names that are not UTF-8 ----------------------------------------------------------


@pytest.fixture
def odd_name(tmp_path) -> bytes:
    """A data file whose name holds a byte that is not UTF-8 (and a newline)."""
    name = os.fsencode(tmp_path) + b"/caf\xe9\nAPPROVED.jsonl"
    with open(name, "wb") as f:
        f.write(GOOD_LINE + (CORPUS / "bad" / "last_from_user.jsonl").read_bytes().splitlines()[1] + b"\n")
    return name


@pytest.mark.parametrize("command", [["check", "--json", "--train"], ["lint", "--json"], ["fingerprint", "--json"]],
                         ids=lambda c: c[0])
def test_a_file_name_that_is_not_utf8_is_shown_escaped_in_json(command, odd_name):
    run = subprocess.run([sys.executable, "-m", "tunegate", *command, odd_name], cwd=ROOT,
                         capture_output=True, timeout=120)
    assert run.returncode in (0, 1) and b"internal error" not in run.stderr, run.stderr
    text = run.stdout.decode("utf-8")  # valid UTF-8
    assert "caf\\\\xe9\\\\nAPPROVED.jsonl" in text  # the byte and the newline escaped, inside a JSON string
    json.loads(text)


def test_a_file_name_that_is_not_utf8_keeps_to_one_line_in_the_terminal(odd_name):
    run = subprocess.run([sys.executable, "-m", "tunegate", "lint", odd_name], cwd=ROOT,
                         capture_output=True, timeout=120)
    assert run.returncode == 1
    assert not any(line.startswith(b"APPROVED") for line in run.stdout.splitlines())
    assert b"caf\\xe9\\nAPPROVED.jsonl" in run.stdout


def test_a_record_of_100000_bad_turns_is_counted_in_full_and_only_the_shown_findings_are_placed(tmp_path):
    msgs = [{"role": "user", "content": "q"}] + [{"role": "assistant", "content": f"a{i}"} for i in range(100_000)]
    path = tmp_path / "turns.jsonl"
    path.write_text(json.dumps({"messages": msgs}) + "\n")
    result, codes, took = stage(path)
    shown = [f for f in result.findings if f.code == "TG209"]
    assert len(shown) == 5 and all(f.line == 1 and f.column > 1 for f in shown)
    assert result.totals_by_code["TG209"] == 99_999
    assert took < 15  # a hang guard: placing every one of the 100,000 findings took 30 s


def test_a_truncated_gzipped_json_array_is_reported_where_the_stream_breaks(tmp_path):
    whole = gzip.compress((FORMATS_GOOD / "alpaca.json").read_bytes())
    (tmp_path / "alpaca.json.gz").write_bytes(whole[: len(whole) * 2 // 3])  # a download cut short
    result, codes, _ = stage(tmp_path / "alpaca.json.gz")
    assert "TG246" in codes and result.status == "failed"
    assert "truncated" in next(f for f in result.findings if f.code == "TG246").message


def test_a_gzip_bomb_holding_a_json_array_stops_at_tg247(tmp_path):
    (tmp_path / "bomb.json.gz").write_bytes(gzip.compress(b"[" + b"{}," * (INFLATED // 3) + b"{}]"))
    result, codes, took = stage(tmp_path / "bomb.json.gz")
    assert "TG247" in codes and result.status == "failed" and took < 60
