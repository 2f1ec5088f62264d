"""Property: whatever bytes a data file holds, the dataset stage returns findings, never raises."""
from __future__ import annotations

import gzip
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fuzz import JSONL_SEEDS as LENIENT_SEEDS
from tests.support.fuzz import lenient_input
from tests.support.mutate import JSON_HAZARDS
from tests.support.mutate import mutate as mutate_bytes
from tests.support.paths import DATA
from tunegate.dataset import validate_dataset
from tunegate.report import StageResult

CORPUS = DATA / "dataset"
SEEDS = [p.read_bytes() for p in sorted((CORPUS / "good").glob("*.jsonl")) if p.stat().st_size < 4000]
# Byte strings that tend to break JSON readers, spliced into good records by the mutator.
HAZARDS = [b"\x00", b"\xff", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\\ud800", b"NaN", b"1e400", b"[" * 1100,
           b'"role":', b'"content": "x",', b"\r", b"\n", b"\xe2\x80\xa8", b"}", b"{", b",", b"\x1f\x8b"]
FILE_PLACE_FREE = {"TG240"}  # a file that cannot be opened has no line


def run_stage(data: bytes, name: str = "fuzz.jsonl") -> StageResult:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        return validate_dataset({"train": path}, cap=5)


def assert_well_formed(result: StageResult) -> None:
    assert isinstance(result, StageResult) and result.name == "dataset"
    assert result.status in ("passed", "failed")
    for f in result.findings:
        assert re.fullmatch(r"TG2\d\d", f.code) and f.message
        if f.code not in FILE_PLACE_FREE:
            assert f.line is not None and f.line >= 1 and f.column is not None and f.column >= 1
    assert result.status == "failed" or not any(f.severity == "error" for f in result.findings)


@st.composite
def mutated(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["insert", "delete", "flip"]))
        if action == "insert":
            data[at:at] = draw(st.sampled_from(HAZARDS) | st.binary(min_size=1, max_size=4))
        elif action == "delete":
            del data[at:at + draw(st.integers(1, 8))]
        elif data:
            data[min(at, len(data) - 1)] ^= 1 << draw(st.integers(0, 7))
    return bytes(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_random_bytes_never_raise(data):
    assert_well_formed(run_stage(data))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_records_never_raise(data):
    assert_well_formed(run_stage(data))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.integers(0, 60))
def test_gzip_of_mutated_or_truncated_records_never_raises(data, cut):
    packed = gzip.compress(data, mtime=0)
    assert_well_formed(run_stage(packed[:len(packed) - cut], "fuzz.jsonl.gz"))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(LENIENT_SEEDS), st.randoms(use_true_random=False), st.booleans())
def test_the_lenient_reader_raises_only_tunegates_errors(seed, rng, packed):
    data = mutate_bytes(rng, seed, JSON_HAZARDS)
    with tempfile.TemporaryDirectory() as folder:
        if packed:
            packed_data = gzip.compress(data, mtime=0)
            lenient_input(packed_data[:len(packed_data) - rng.randint(0, 60)], Path(folder), "fuzz.jsonl.gz")
        else:
            lenient_input(data, Path(folder))
