"""Split fingerprints: stable under formatting, sensitive to content and order; `tunegate fingerprint`."""
from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import blake3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.paths import DATA as TEST_DATA
from tests.support.paths import ROOT
from tunegate.dataset.fingerprint import (
    FingerprintObserver,
    SplitDigest,
    algorithm_of,
    canonical_bytes,
    canonical_line,
    fingerprint_file,
)
from tunegate.dataset.split import feed_observers
from tunegate.errors import UnreadableRecord

DATA = TEST_DATA / "overlap"
RECORDS = DATA / "records.jsonl"


def digest(path: Path) -> str:
    return fingerprint_file(path).digest


def copy_with(tmp_path: Path, data: bytes, name: str = "copy.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def sorted_key_compact_jsonl(path: Path) -> bytes:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return "".join(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
                   for r in rows).encode("utf-8")


def test_digest_is_blake3_of_the_sorted_key_compact_jsonl():
    fp = fingerprint_file(RECORDS)
    assert fp.digest == "blake3:" + blake3.blake3(sorted_key_compact_jsonl(RECORDS)).hexdigest()
    assert fp.algorithm == "blake3-canonical-jsonl"
    assert fp.records == 3


def test_the_first_version_is_sha256_of_the_same_lines_in_bare_hex():
    fp = fingerprint_file(RECORDS, "sha256-canonical-jsonl")
    assert fp.digest == hashlib.sha256(sorted_key_compact_jsonl(RECORDS)).hexdigest()
    assert fp.algorithm == "sha256-canonical-jsonl"


def test_a_digest_names_its_own_version():
    assert algorithm_of(fingerprint_file(RECORDS).digest) == "blake3-canonical-jsonl"
    assert algorithm_of(fingerprint_file(RECORDS, "sha256-canonical-jsonl").digest) == "sha256-canonical-jsonl"


def test_json_whitespace_key_order_and_blank_lines_do_not_change_the_digest():
    assert digest(DATA / "records_reformatted.jsonl") == digest(RECORDS)


def test_crlf_line_endings_do_not_change_the_digest(tmp_path):
    crlf = copy_with(tmp_path, RECORDS.read_bytes().replace(b"\n", b"\r\n"))
    assert digest(crlf) == digest(RECORDS)


def test_a_gzipped_file_has_the_digest_of_its_content(tmp_path):
    assert digest(copy_with(tmp_path, gzip.compress(RECORDS.read_bytes()), "r.jsonl.gz")) == digest(RECORDS)


def test_one_changed_character_changes_the_digest(tmp_path):
    changed = copy_with(tmp_path, RECORDS.read_bytes().replace(b"Paris.", b"Paris!"))
    assert digest(changed) != digest(RECORDS)


def test_record_order_changes_the_digest(tmp_path):
    lines = RECORDS.read_bytes().splitlines(keepends=True)
    swapped = copy_with(tmp_path, lines[1] + lines[0] + b"".join(lines[2:]))
    assert fingerprint_file(swapped).records == 3
    assert digest(swapped) != digest(RECORDS)


def test_digest_is_the_same_in_another_process_with_another_hash_seed():
    code = f"from tunegate.dataset.fingerprint import fingerprint_file; print(fingerprint_file(__import__('pathlib').Path({str(RECORDS)!r})).digest)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == digest(RECORDS)


def test_observer_records_the_same_fingerprint_as_the_file_reader():
    sink: dict = {}
    feed_observers({"validation": RECORDS}, [FingerprintObserver(sink, {"validation": RECORDS})])
    assert sink["validation"] == fingerprint_file(RECORDS).model_dump()


@pytest.mark.parametrize("record", [
    {"messages": [{"role": "user", "content": "héllo ✓ 👋"}], "b": 1, "a": [1.5, None, True]},
    {"messages": [{"role": "user", "content": "lone \ud800 surrogate"}]},  # orjson refuses: the stdlib writes it
    {"n": Decimal("123456789012345678901234567890"), "x": Decimal("1.25e-400")},
    {"messages": []},
])
def test_the_canonical_line_is_the_canonical_bytes_and_a_newline(record):
    assert canonical_line(record) == canonical_bytes(record) + b"\n"


def test_integers_beyond_64_bits_are_still_hashed():
    assert canonical_bytes({"n": 2**70}) == b'{"n":1180591620717411303424}'


def test_a_line_that_is_not_json_is_refused_with_its_line(tmp_path):
    bad = copy_with(tmp_path, RECORDS.read_bytes() + b"{not json\n")
    with pytest.raises(UnreadableRecord, match=r"copy.jsonl:4: not valid JSON"):
        fingerprint_file(bad)


def tunegate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT, capture_output=True, text=True)


def test_cli_prints_digest_records_and_file_per_file():
    out = tunegate("fingerprint", str(RECORDS), str(DATA / "train.jsonl"))
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first.split() == [digest(RECORDS), "3", "records", str(RECORDS)]
    assert second.split()[1:] == ["12", "records", str(DATA / "train.jsonl")]


def test_cli_prints_the_first_versions_digest_when_asked():
    out = tunegate("fingerprint", "--algorithm", "sha256", str(RECORDS))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == hashlib.sha256(sorted_key_compact_jsonl(RECORDS)).hexdigest()


def test_short_and_long_pieces_are_hashed_in_the_order_given():
    pieces = [b"a" * 10, b"b" * 70_000, b"c" * 5, b"d" * 65_536, b"e" * 3]
    digest = SplitDigest()
    for piece in pieces:
        digest._take(piece)
    assert digest.result().digest == "blake3:" + blake3.blake3(b"".join(pieces)).hexdigest()


def test_cli_json_is_a_list_of_fingerprints():
    out = tunegate("fingerprint", "--json", str(RECORDS))
    assert json.loads(out.stdout) == [fingerprint_file(RECORDS).model_dump()]


def test_cli_exits_1_on_an_unreadable_line_and_2_on_a_missing_file(tmp_path):
    bad = copy_with(tmp_path, b'{"messages": []}\n[1, 2]\n')
    out = tunegate("fingerprint", str(bad))
    assert (out.returncode, out.stdout) == (1, "")
    assert f"{bad}:2: a record must be a JSON object, got list" in out.stderr
    missing = tunegate("fingerprint", str(tmp_path / "nope.jsonl"), str(RECORDS))
    assert missing.returncode == 2
    assert "file not found" in missing.stderr and digest(RECORDS) in missing.stdout


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.dictionaries(st.text(max_size=5), st.text(max_size=20), min_size=1), min_size=1, max_size=5),
       data=st.data())
def test_any_single_character_edit_changes_the_digest(tmp_path_factory, rows, data):
    where = data.draw(st.integers(0, len(rows) - 1))
    key = data.draw(st.sampled_from(sorted(rows[where])))
    edited = [dict(r) for r in rows]
    edited[where][key] = rows[where][key] + data.draw(st.characters(codec="utf-8"))
    folder = tmp_path_factory.mktemp("edit")
    a = copy_with(folder, "".join(json.dumps(r) + "\n" for r in rows).encode(), "a.jsonl")
    b = copy_with(folder, "".join(json.dumps(r) + "\n" for r in edited).encode(), "b.jsonl")
    assert digest(a) != digest(b)


def test_the_dataset_stage_digests_lines_it_copies_as_the_file_reader_does():
    from tunegate.dataset.stage import validate_dataset

    lines = TEST_DATA / "fingerprint" / "lines.jsonl"
    sink: dict = {}
    validate_dataset({"train": lines}, observers=[FingerprintObserver(sink, {"train": lines})], workers=1)
    assert sink["train"] == fingerprint_file(lines).model_dump()
    assert sink["train"]["records"] == 25
