"""The near-duplicate index on plain bytes, looked up by the compiled loops: the numpy index's findings."""
from __future__ import annotations

import pytest

from tests.support.paths import DATA
from tunegate.dataset.split import iter_split
from tunegate.native import compiled
from tunegate.overlap.bands import band_layout
from tunegate.overlap.near import NearSettings
from tunegate.overlap.near_index import matrix_of, places_of
from tunegate.overlap.normalize import normalise_record_bytes
from tunegate.overlap.exact import record_hashes
from tunegate.overlap.plain_index import PLACE, MappedPlaces, PlainIndex, pack_places
from tunegate.overlap.shared_index import drop_index, load_index, share_index
from tunegate.overlap.plain_rows import rows_with_words

pytestmark = pytest.mark.skipif(compiled is None, reason="tunegate/native/_loops is not built: the index is numpy's")

FLOWS = DATA / "flows"
# Templated answers: hundreds of candidates at the low thresholds, a few exact copies among them.
SPLITS = {"train": FLOWS / "leaky_train.jsonl", "validation": FLOWS / "validation.jsonl"}


def sketched(path, settings: NearSettings) -> tuple[bytes, list]:
    texts, places = [], []
    for line, index, record in iter_split([path]):
        norm = normalise_record_bytes(record)
        if norm is not None:
            texts.append(norm.text)
            places.append((line, index, record_hashes(norm)[0]))
    return rows_with_words(texts, places, settings.shingle_size, settings.num_perm)


def numpy_index(rows: bytes, places: list, settings: NearSettings):
    from tunegate.overlap.lsh import BandIndex, PlacedIndex

    bands = band_layout(settings.threshold, settings.num_perm)
    return PlacedIndex(BandIndex.build(matrix_of(rows, settings.num_perm), bands), places_of(places))


@pytest.mark.parametrize("settings", [NearSettings(0.8, 5, 128), NearSettings(0.3, 1, 64), NearSettings(0.5, 2, 16)])
def test_a_plain_index_finds_the_pairs_candidates_and_similarities_of_the_numpy_index(settings):
    rows, places = sketched(SPLITS["validation"], settings)
    batch, batch_places = sketched(SPLITS["train"], settings)
    plain = PlainIndex.build(rows, places, settings.num_perm, band_layout(settings.threshold, settings.num_perm))
    got = plain.matches(batch, batch_places, settings.threshold)
    assert got == numpy_index(rows, places, settings).matches(batch, batch_places, settings.threshold)
    if settings.threshold < 0.5:
        assert got[1] > 400 and len(got[0]) >= 3


def test_exact_copies_are_neither_candidates_nor_pairs():
    settings = NearSettings(0.8, 5, 128)
    rows, places = sketched(SPLITS["validation"], settings)
    plain = PlainIndex.build(rows, places, 128, band_layout(0.8, 128))
    assert plain.matches(rows, places, 0.8) == ([], 0)  # the split against itself: every pair a copy


def test_a_shared_plain_index_mapped_back_from_its_files_finds_what_the_one_in_memory_finds():
    settings = NearSettings(0.3, 1, 64)
    bands = band_layout(0.3, 64)
    rows, places = sketched(SPLITS["validation"], settings)
    batch, batch_places = sketched(SPLITS["train"], settings)
    built = PlainIndex.build(rows, places, 64, bands)
    folder = share_index(built)
    try:
        mapped = load_index(folder, 64, bands)
        assert load_index(folder, 64, bands) is mapped  # once per process
        assert isinstance(mapped.places, MappedPlaces) and list(mapped.places) == places
        assert mapped._table is not None and mapped._table.in_buffer  # the look-up written once, in a file
        assert mapped.matches(batch, batch_places, 0.3) == built.matches(batch, batch_places, 0.3)
    finally:
        drop_index(folder)


def test_places_packed_for_a_shared_index_read_back_one_at_a_time():
    places = [(1, 0, bytes(range(16))), (2**40, 7, b"\xff" * 16), (-1, 2, bytes(16))]
    packed = pack_places(places)
    assert len(packed) == 3 * PLACE.size == 96
    mapped = MappedPlaces(packed)
    assert (len(mapped), mapped[1], mapped[0:3:2]) == (3, places[1], [places[0], places[2]])
    with pytest.raises(IndexError):
        mapped[3]


def test_an_empty_index_finds_nothing():
    index = PlainIndex.build(b"", [], 128, (14, 9))
    rows, places = sketched(SPLITS["validation"], NearSettings(0.8, 5, 128))
    assert index.matches(rows, places, 0.8) == ([], 0)


def test_an_index_written_beside_its_rows_file_is_the_same_sorted_in_c_as_in_numpy(tmp_path, monkeypatch):
    from tunegate.overlap import shared_index

    settings = NearSettings(0.5, 2, 64)  # (21, 3): short bands, so keys repeat and a run's order matters
    bands = band_layout(0.5, 64)
    rows, places = sketched(SPLITS["train"], settings)
    written = {}
    for way in ("compiled", "numpy"):
        if way == "numpy":
            monkeypatch.setattr(shared_index, "compiled", None)
        folder = tmp_path / way
        folder.mkdir()
        (folder / "rows").write_bytes(rows)
        shared_index.write_index(folder, 64, bands)
        written[way] = [(folder / name).read_bytes() for name in ("sorted_keys", "order")]
    assert written["compiled"] == written["numpy"]
    keys = memoryview(written["compiled"][0]).cast("Q")
    assert len(keys) == bands[0] * len(places) and len(set(keys)) < len(keys)


def test_a_batch_looked_up_a_slice_of_rows_at_a_time_finds_what_it_finds_at_once(monkeypatch):
    # templated answers: many candidates; one row a slice makes every slice's pairs count from its start
    from tunegate.overlap import plain_index

    settings = NearSettings(0.3, 1, 64)
    rows, places = sketched(SPLITS["validation"], settings)
    batch, batch_places = sketched(SPLITS["train"], settings)
    index = PlainIndex.build(rows, places, 64, band_layout(0.3, 64))
    at_once = index.matches(batch, batch_places, 0.3)
    monkeypatch.setattr(plain_index, "PAIRS_AT_ONCE", 1)
    assert index.matches(batch, batch_places, 0.3) == at_once
    assert at_once[1] > 400 and len(at_once[0]) >= 3
