"""The vectorised MinHash and LSH bands: the shingles they hash, how well they estimate Jaccard, recall."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import pytest
from xxhash import xxh3_64_intdigest

from tests.support.paths import ROOT
from tunegate.overlap import minhash
from tunegate.overlap.bands import KNOWN, band_layout, worked_out_layout
from tunegate.overlap.lsh import BandIndex
from tunegate.overlap.near import find_near_duplicates

M64 = (1 << 64) - 1


def mix(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def word_hash(word: bytes) -> int:
    """The word hash written plainly, one word at a time."""
    length = len(word)
    if length > minhash.LONG_WORD:
        h = xxh3_64_intdigest(word)
    else:
        h = int.from_bytes(word[:8], "little")
        for at in range(8, length, 8):
            h = (h * 0x100000001B3 + int.from_bytes(word[at:at + 8], "little")) & M64
    return mix((h + length * 0x9E3779B97F4A7C15) & M64)


def reference_shingles(text: bytes, size: int) -> set[int]:
    """Runs of `size` words (the whole text when shorter), each a polynomial of its word hashes."""
    words = [word_hash(w) for w in text.split()]
    span = min(size, len(words))
    found = set()
    for start in range(len(words) - span + 1) if words else ():
        value = 0
        for w in words[start:start + span]:
            value = (value * 0x100000001B3 + w) & M64
        found.add(mix(value))
    return found


def shingles_of(texts: list[bytes], size: int) -> list[set[int]]:
    values, owners = minhash.shingle_values(texts, size)
    return [set(values[owners == i].tolist()) for i in range(len(texts))]


def test_shingles_are_the_word_runs_bytes_split_gives_whatever_the_bytes():
    rng = random.Random(0)
    alphabet = b"ab \t\n\r\x0b\x0c\x00\xff\x1c"  # \x1c is not a separator for bytes.split(), \x00 is a byte like any
    texts = [bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 120))) for _ in range(300)]
    texts += [b"x" * n for n in (8, 9, 16, 17, 64, 65, 200)]  # the 8-byte loads and the long-word path
    for size in (1, 2, 5):
        assert shingles_of(texts, size) == [reference_shingles(t, size) for t in texts]


@pytest.mark.parametrize("text", [
    b"x" * (minhash.WINDOW - 3) + b" abc" + b" def" * 5,            # a word just over the first cut
    b"y" * int(2.5 * minhash.WINDOW),                                # one word over three windows
    b"p q " * (minhash.WINDOW // 3) + b"zz",                          # many words, cut between them
    b"a b" + b" " * (2 * minhash.WINDOW) + b"c",                     # fewer words than a shingle
], ids=["word-at-cut", "one-huge-word", "many-words", "short-but-long"])
def test_a_text_longer_than_a_window_gets_the_same_shingles_as_if_hashed_whole(text):
    assert shingles_of([b"before it", text, b"after"], 5) == [
        reference_shingles(b"before it", 5), reference_shingles(text, 5), reference_shingles(b"after", 5)]


def edited_pairs(rng: random.Random, words: int, count: int) -> list[tuple[bytes, bytes]]:
    vocabulary = [f"w{i}" for i in range(50_000)]
    pairs = []
    for _ in range(count):
        a = [rng.choice(vocabulary) for _ in range(words)]
        b = list(a)
        for _ in range(rng.randint(0, max(1, words // 10))):
            b[rng.randrange(words)] = rng.choice(vocabulary)
        pairs.append((" ".join(a).encode(), " ".join(b).encode()))
    return pairs


def jaccard(a: bytes, b: bytes, size: int = 5) -> float:
    x, y = reference_shingles(a, size), reference_shingles(b, size)
    return len(x & y) / len(x | y)


@pytest.mark.parametrize(("words", "count"), [(16, 1500), (60, 400), (400, 200)])
def test_the_estimate_is_unbiased_and_as_tight_as_classic_minhash(words, count):
    pairs = edited_pairs(random.Random(words), words, count)
    rows = minhash.signatures([t for pair in pairs for t in pair], 5, 128).matrix
    estimate = minhash.similarity(rows[0::2], rows[1::2])
    truth = np.array([jaccard(a, b) for a, b in pairs])
    near = (truth > 0.6) & (truth < 0.97)
    error = estimate[near] - truth[near]
    classic_sd = np.sqrt(truth[near] * (1 - truth[near]) / 128).mean()  # k independent permutations
    assert near.sum() >= 100
    assert abs(error.mean()) < 0.01
    assert error.std() < classic_sd * 1.25


def test_identical_texts_get_identical_rows_and_a_text_without_words_none():
    rows = minhash.signatures([b"the same words here", b"  \n ", b"the same words here"], 5, 64)
    assert rows.has.tolist() == [True, False, True]
    assert (rows.matrix[0] == rows.matrix[2]).all()


def test_rows_are_the_same_in_another_process():
    texts = [f"record {i} says hello to the world in words".encode() for i in range(50)]
    code = ("import json, sys; from tunegate.overlap.minhash import signatures; "
            "texts = [t.encode() for t in json.load(sys.stdin)]; "
            "print(json.dumps(signatures(texts, 5, 128).matrix.tolist()))")
    other = subprocess.run([sys.executable, "-c", code], input=json.dumps([t.decode() for t in texts]),
                           capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(other.stdout) == minhash.signatures(texts, 5, 128).matrix.tolist()


@pytest.mark.parametrize(("threshold", "num_perm", "layout"), [
    (0.8, 128, (14, 9)), (0.5, 128, (32, 4)), (0.9, 64, (5, 12)), (0.7, 256, (32, 8)),
    (0.95, 128, (5, 25)), (0.99, 128, (2, 64))])
def test_band_layout_is_the_one_datasketch_chooses_for_the_same_weights(threshold, num_perm, layout):
    assert band_layout(threshold, num_perm) == layout


def test_the_layouts_written_down_are_the_ones_worked_out():
    assert all(worked_out_layout(threshold, num_perm) == layout for (threshold, num_perm), layout in KNOWN.items())
    assert band_layout(0.8, 128) == (14, 9) and (0.8, 128) in KNOWN  # the defaults need no numpy


def layout_by_pow(threshold: float, num_perm: int, weights=(0.1, 0.9), steps: int = 2048) -> tuple[int, int]:
    """The band layout's definition, plainly: each (1 - s**r)**b by pow, each integral by Simpson's
    rule as a sum of slices, (b, r) tried b-major, the first smallest error kept."""
    def integral(values, width):
        h = width / (len(values) - 1)
        return float(h / 3 * (values[0] + values[-1] + 4 * values[1:-1:2].sum() + 2 * values[2:-1:2].sum()))

    low, high = np.linspace(0.0, threshold, steps + 1), np.linspace(threshold, 1.0, steps + 1)
    best, layout = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            error = (integral(1 - (1 - low ** r) ** b, threshold) * weights[0]
                     + integral((1 - high ** r) ** b, 1.0 - threshold) * weights[1])
            if error < best:
                best, layout = error, (b, r)
    return layout if layout[0] >= 2 else (2, num_perm // 2)


@pytest.mark.parametrize("num_perm", [16, 64, 128, 256])
def test_band_layout_is_its_plain_definition_at_every_threshold(num_perm):
    thresholds = [round(t, 2) for t in np.arange(0.30, 0.995, 0.03)]
    assert [band_layout(t, num_perm) for t in thresholds] == [layout_by_pow(t, num_perm) for t in thresholds]


def test_band_index_finds_rows_sharing_a_band_and_only_those():
    rng = np.random.default_rng(0)
    stored = rng.integers(0, 1 << 32, size=(5, 8), dtype=np.uint64).astype(np.uint32)
    query = rng.integers(0, 1 << 32, size=(3, 8), dtype=np.uint64).astype(np.uint32)
    query[1, :4] = stored[3, :4]  # shares band 0 with stored row 3
    query[2] = stored[0]          # shares both bands with stored row 0
    rows, hits = BandIndex.build(stored, (2, 4)).candidates(query)
    assert list(zip(rows.tolist(), hits.tolist())) == [(1, 3), (2, 0)]


def write_split(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def chat(question: str, answer: str) -> dict:
    return {"messages": [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]}


def test_recall_every_close_pair_is_found_and_no_distant_one(tmp_path):
    rng = random.Random(7)
    vocabulary = [f"term{i}" for i in range(20_000)]
    train, validation, close, distant = [], [], set(), set()
    for i in range(400):
        answer = [rng.choice(vocabulary) for _ in range(rng.randint(60, 200))]
        train.append(chat(f"question {i} " + " ".join(rng.choices(vocabulary, k=12)), " ".join(answer)))
    for i, source in enumerate(rng.sample(range(400), 200)):
        prompt, answer = train[source]["messages"][0]["content"], train[source]["messages"][1]["content"].split()
        keep = i % 2 == 0  # even: one word changed (Jaccard >= 0.9); odd: half the words changed (<= 0.5)
        for at in rng.sample(range(len(answer)), 1 if keep else len(answer) // 2):
            answer[at] = rng.choice(vocabulary)
        validation.append(chat(prompt, " ".join(answer)))
        (close if keep else distant).add((i + 1, source + 1))
    write_split(tmp_path / "train.jsonl", train)
    write_split(tmp_path / "validation.jsonl", validation)
    files = {"train": tmp_path / "train.jsonl", "validation": tmp_path / "validation.jsonl"}
    found = find_near_duplicates(files, "validation", threshold=0.8, shingle_size=5, num_perm=128)
    pairs = {(p.validation[0], p.train[0]) for p in found.pairs}
    assert len(pairs & close) >= 0.98 * len(close)
    assert not pairs & distant
