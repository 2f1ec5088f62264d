"""Near duplicates between train and validation, by MinHash LSH (datasketch).

Each record's normalised text (see tunegate.overlap.normalize) is cut into word shingles; datasketch's
MinHash estimates the Jaccard similarity of two records' shingle sets and its LSH index finds the
candidate pairs above the threshold without comparing every pair. The smaller split is indexed
and the larger one streamed past it in batches, so memory grows with the smaller split only
(num_perm 4-byte values and one LSH key per band a record) and no text is held beyond one batch.

This pass needs the text, which the first pass never keeps, so it reads both files again; that
is why it is optional (`gate.overlap.near_duplicates`).
"""
from __future__ import annotations

import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from tunegate.dataset.records import iter_canonical
from tunegate.overlap.exact import record_hashes
from tunegate.overlap.normalize import normalise_record

# LSH band layout weights (false positive, false negative): candidates are verified against the
# threshold with the MinHash estimate anyway, so a missed pair costs more than a spare candidate.
# At threshold 0.8 and 128 permutations this gives 14 bands of 9 rows instead of 9 of 13, which
# raises the chance of catching a pair at Jaccard 0.83 from 0.57 to 0.95.
RECALL_WEIGHTS = (0.1, 0.9)
BATCH = 2048  # records hashed per MinHash.bulk call: amortises numpy overhead, bounds the text held
SEED = 1  # fixed, so the same data gives the same pairs on every run
_MULTIPLIER = 0x100000001B3  # the 64-bit FNV prime: odd, so the word-hash polynomial loses no bits


class Sketch(NamedTuple):
    """What one record contributes to the pass: its place, exact hash and shingle hashes."""

    line: int
    index: int
    exact: bytes
    shingles: list[int]


class NearPair(NamedTuple):
    """A validation record's closest train record above the threshold."""

    validation: tuple[int, int]  # (line, index)
    train: tuple[int, int]
    similarity: float  # MinHash estimate of the Jaccard similarity of the shingle sets
    count: int  # train records above the threshold for this validation record


class NearResult(NamedTuple):
    pairs: list[NearPair]
    indexed: str  # the role held in the LSH index
    candidates: int  # LSH candidates checked against the threshold
    seconds: float


def shingle_hashes(text: str, size: int) -> list[int]:
    """32-bit hashes of every distinct run of `size` words (the whole text when shorter), sorted.

    Each word is hashed once with CRC32 (deterministic across runs, unlike Python's hash()), and
    the hashes of `size` consecutive words are combined as a polynomial in numpy, so no per-shingle
    string is ever built. CRC32 is weak on its own, but datasketch's default scheme pre-mixes
    every input with the MurmurHash3 finaliser.
    """
    import numpy as np

    words = text.encode("utf-8", "surrogatepass").split()
    if not words:
        return []
    word_hashes = np.fromiter(map(zlib.crc32, words), dtype=np.uint64, count=len(words))
    span = min(size, len(words))
    runs = len(words) - span + 1
    combined = word_hashes[:runs].copy()
    for offset in range(1, span):  # uint64 arithmetic wraps, i.e. works modulo 2**64 as intended
        combined = combined * _MULTIPLIER + word_hashes[offset:offset + runs]
    folded = (combined ^ (combined >> np.uint64(32))) & np.uint64(0xFFFFFFFF)
    return np.unique(folded).tolist()


def _identity(value: int) -> int:
    return value


def sketches(path: Path, size: int) -> Iterator[list[Sketch]]:
    """The file's records as sketches, in batches of BATCH (records without text are skipped)."""
    batch: list[Sketch] = []
    for line, index, record in iter_canonical(path):  # any format, as the chat the dataset stage handed on
        norm = normalise_record(record)
        if norm is None:
            continue
        text = norm.text
        shingles = shingle_hashes(text, size)
        if shingles:
            batch.append(Sketch(line, index, record_hashes(norm)[0], shingles))
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def find_near_duplicates(files: dict[str, Path], index_role: str, *, threshold: float,
                         shingle_size: int, num_perm: int) -> NearResult:
    """Pairs of train/validation records whose estimated Jaccard similarity is >= threshold.

    `index_role` names the split to index (the smaller one). Exact normalised duplicates are left
    out: the exact pass already reports them.
    """
    from datasketch import MinHash, MinHashLSH  # imports scipy: only when this pass runs

    start = time.perf_counter()
    query_role = "train" if index_role == "validation" else "validation"
    kwargs = {"num_perm": num_perm, "seed": SEED, "hashfunc": _identity}
    lsh = _lsh_index(MinHashLSH, threshold, num_perm)
    index = _build_index(files[index_role], lsh, shingle_size, MinHash, kwargs)
    best: dict[int, list[Any]] = {}  # validation index -> [similarity, val place, train place, count]
    checked = 0
    for batch in sketches(files[query_role], shingle_size):
        minhashes = MinHash.bulk([s.shingles for s in batch], **kwargs)
        for sketch, minhash in zip(batch, minhashes):
            checked += _match(sketch, minhash, lsh, index, threshold, best, query_role)
    pairs = [NearPair(val, train, round(sim, 4), n) for sim, val, train, n in
             (best[k] for k in sorted(best))]
    return NearResult(pairs, index_role, checked, time.perf_counter() - start)


def _lsh_index(lsh_cls: Any, threshold: float, num_perm: int) -> Any:
    """An LSH index for the threshold; above ~0.98 datasketch's optimum is a single band, which it
    refuses, so two bands of half the permutations each are used there."""
    try:
        return lsh_cls(threshold=threshold, num_perm=num_perm, weights=RECALL_WEIGHTS)
    except ValueError:
        return lsh_cls(threshold=threshold, num_perm=num_perm, params=(2, num_perm // 2))


class _Index(NamedTuple):
    signatures: Any  # numpy array (records, num_perm) of the indexed split's MinHash values
    places: list[tuple[int, int]]
    exact: list[bytes]


def _build_index(path: Path, lsh: Any, size: int, minhash_cls: Any, kwargs: dict[str, Any]) -> _Index:
    import numpy as np

    signatures: list[Any] = []
    places: list[tuple[int, int]] = []
    exact: list[bytes] = []
    for batch in sketches(path, size):
        for sketch, minhash in zip(batch, minhash_cls.bulk([s.shingles for s in batch], **kwargs)):
            lsh.insert(len(places), minhash, check_duplication=False)
            signatures.append(minhash.hashvalues)
            places.append((sketch.line, sketch.index))
            exact.append(sketch.exact)
    matrix = np.vstack(signatures) if signatures else np.empty((0, kwargs["num_perm"]), dtype=np.uint32)
    return _Index(matrix, places, exact)


def _match(sketch: Sketch, minhash: Any, lsh: Any, index: _Index, threshold: float,
           best: dict[int, list[Any]], query_role: str) -> int:
    """Check one streamed record's LSH candidates; record the pairs above the threshold."""
    candidates = sorted(c for c in lsh.query(minhash) if index.exact[c] != sketch.exact)
    if not candidates:
        return 0
    similarities = (index.signatures[candidates] == minhash.hashvalues).mean(axis=1)
    here = (sketch.line, sketch.index)
    for c, sim in zip(candidates, similarities.tolist()):
        if sim < threshold:
            continue
        val, train = (here, index.places[c]) if query_role == "validation" else (index.places[c], here)
        key = val[1]
        entry = best.get(key)
        if entry is None:
            best[key] = [sim, val, train, 1]
            continue
        entry[3] += 1
        if sim > entry[0]:
            entry[0], entry[2] = sim, train
    return len(candidates)
