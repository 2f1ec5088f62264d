"""The near-duplicate pass: MinHash LSH between train and validation."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.paths import DATA as TEST_DATA
from tunegate.dataset.split import feed_observers, iter_split
from tunegate.native import compiled
from tunegate.overlap import near, near_index
from tunegate.overlap.exact import OverlapObserver
from tunegate.overlap.near import NearPass, NearSettings, feed, find_near_duplicates, shingle_hashes
from tunegate.overlap.stage import find_overlap
from tunegate.spec.model import OverlapSpec

DATA = TEST_DATA / "overlap"
FILES = {"train": DATA / "train.jsonl", "validation": DATA / "validation.jsonl"}


def run_stage(settings: OverlapSpec):
    observer = OverlapObserver()
    feed_observers(FILES, [observer])
    return find_overlap(FILES, observer, settings)


def test_near_duplicate_is_reported_with_both_places_and_its_similarity():
    result = run_stage(OverlapSpec())
    [near] = [f for f in result.findings if f.code == "TG303"]
    assert (near.severity, near.file, near.line, near.record) == ("warning", str(FILES["validation"]), 6, 5)
    assert "train.jsonl:4 ~ validation.jsonl:6" in near.message
    similarity = float(near.message.split("estimated Jaccard ")[1].split(" ")[0])
    assert 0.8 <= similarity < 1.0


def test_exact_duplicates_are_not_reported_again_as_near_duplicates():
    found = find_near_duplicates(FILES, "validation", threshold=0.5, shingle_size=2, num_perm=128)
    lines = {p.validation[0] for p in found.pairs}
    assert 6 in lines and not lines & {2, 3, 4}


def test_the_same_pairs_are_found_whichever_split_is_indexed():
    by_val = find_near_duplicates(FILES, "validation", threshold=0.8, shingle_size=5, num_perm=128)
    by_train = find_near_duplicates(FILES, "train", threshold=0.8, shingle_size=5, num_perm=128)
    assert (by_val.indexed, by_train.indexed) == ("validation", "train")
    assert by_val.pairs == by_train.pairs
    assert by_val.pairs[0].validation == (6, 5) and by_val.pairs[0].train == (4, 3)


def test_the_smaller_split_is_indexed():
    result = run_stage(OverlapSpec())
    assert result.stats["near_duplicate_pass"]["indexed"] == "validation"


def test_near_duplicate_severity_can_make_it_an_error():
    result = run_stage(OverlapSpec(near_duplicate_severity="error", threshold=0.8))
    assert next(f for f in result.findings if f.code == "TG303").severity == "error"


def test_pairs_below_the_threshold_are_not_reported():
    result = run_stage(OverlapSpec(threshold=0.99))
    assert result.stats["near_duplicates"] == 0


def test_a_threshold_of_one_runs_and_leaves_exact_copies_to_the_exact_pass():
    result = run_stage(OverlapSpec(threshold=1.0))
    assert result.stats["near_duplicates"] == 0
    assert result.stats["exact_duplicates"] == 3


def test_shingles_are_word_runs_of_the_given_size():
    assert len(shingle_hashes("a b c d e f", 5)) == 2
    assert len(shingle_hashes("a b", 5)) == 1  # shorter than a shingle: the whole text is one
    assert shingle_hashes("   ", 5) == []
    assert len(shingle_hashes("a b a b a b", 2)) == 2  # distinct runs only: "a b", "b a"
    assert shingle_hashes("a b c d e f", 5) == shingle_hashes("a b c d e f", 5)  # deterministic


def test_too_few_permutations_skip_the_pass_with_a_warning():
    result = run_stage(OverlapSpec(num_perm=1))
    [warning] = [f for f in result.findings if f.code == "TG307"]
    assert (warning.severity, warning.key) == ("warning", "gate.overlap.num_perm")
    assert result.stats["near_duplicates"] is None


def fed(index_role: str, files: dict, settings: NearSettings) -> NearPass:
    """A pass fed both splits, the indexed one first, as the dataset read feeds it."""
    found = NearPass(index_role, settings)
    for role in sorted(files, key=lambda r: r != index_role):
        for line, index, record in iter_split([files[role]]):
            feed(found, role, line, index, record)
        found.finish(role)
    return found


@pytest.mark.skipif(compiled is None, reason="tunegate/native/_loops is not built: every pass runs in numpy")
@pytest.mark.parametrize("settings", [NearSettings(0.8, 5, 128), NearSettings(0.5, 2, 128),
                                      NearSettings(0.3, 1, 64), NearSettings(0.2, 1, 16)])
@pytest.mark.parametrize("index_role", ["validation", "train"])
def test_a_pass_held_whole_finds_the_pairs_and_candidates_of_the_numpy_batches(settings, index_role, monkeypatch):
    # Small splits wait whole for the answer, which the compiled loops then give without numpy; one
    # record a batch sends every record through the numpy batches instead. The flows files share
    # templated answers: hundreds of candidates at the low thresholds.
    flows = TEST_DATA / "flows"
    cases = [{"train": flows / "leaky_train.jsonl", "validation": flows / "validation.jsonl"}, FILES]
    held = [fed(index_role, files, settings) for files in cases]
    assert all(p._all_held() for p in held)
    monkeypatch.setattr(near, "BATCH_ROWS", 1)
    batched = [fed(index_role, files, settings) for files in cases]
    assert not any(p._all_held() for p in batched)
    got, want = ([p.result()._replace(seconds=0) for p in passes] for passes in (held, batched))
    assert got == want
    if settings.threshold < 0.5:
        assert got[0].candidates > 400 and len(got[0].pairs) >= 3


@pytest.mark.parametrize("map_bytes", [near_index.MAP_BYTES, 4 * 128])
def test_the_gate_process_keeps_an_index_it_shares_as_the_shared_files_map_and_its_look_up_in_a_shared_file(
        map_bytes, monkeypatch):
    """Once workers read the streamed split, this process only merges their matches: its index is the
    map of the files the workers read (pages shared with theirs), and the look-up table, 16-32 bytes a
    row and band, is written once into a file every worker maps instead of built in each (a check of
    1.1 GB with two workers: 253-265 -> ~200 MB PSS over the process tree with the shared index,
    less again with the shared look-up)."""
    import mmap

    import numpy as np

    as_files = map_bytes < near_index.MAP_BYTES
    monkeypatch.setattr(near_index, "MAP_BYTES", map_bytes)  # the second: an index built as files from the start
    settings = NearSettings(0.8, 5, 128)
    found = NearPass("validation", settings)
    for line, index, record in iter_split([FILES["validation"]]):
        feed(found, "validation", line, index, record)
    found.finish("validation")
    part = found.part("train")
    assert part._shared == found._shared
    assert (found._shared == str(found._index_rows.folder)) == as_files  # not written twice
    table = Path(found._shared) / "table.bin"
    if compiled is not None:  # a PlainIndex over the files' maps
        assert isinstance(found._index.rows, mmap.mmap)
        rows = len(found._index.places)
        assert len(found._index.rows) == rows * 4 * 128
        assert table.stat().st_size == compiled.BandTable.slots_bytes(rows, found._index.bands[0])
        assert found._index._table.in_buffer
    else:
        assert isinstance(found._index.index.rows, np.memmap)
        assert not table.exists() and found._index.index._table is None
    for line, index, record in iter_split([FILES["train"]]):
        feed(part, "train", line, index, record)
    assert part.payload()[0] == "matches"
    assert part._index is found._index  # one process: the pass reads the same loaded index
