"""MinHash rows of many texts at once, vectorised in numpy: word shingles in, one row per text out.

    rows = signatures([b"user\\thi there\\nassistant\\thello", ...], shingle_size=5, num_perm=128)
    rows.matrix        # (texts, num_perm) uint32
    rows.has           # False for a text without a single word (it has no row)

A text's shingles are its runs of `shingle_size` consecutive words (the whole text when it is
shorter), words being the runs of bytes between ASCII whitespace, as `bytes.split()` cuts them.
Two texts' estimated Jaccard similarity is the share of columns where their rows agree.

Why it is fast: every step works on whole arrays, never on one word or one shingle in Python.
- A word is hashed from 8-byte loads at its start (a strided uint64 view of the bytes), a few
  multiply-adds for words up to 64 bytes; longer words (URLs, encoded blobs) are rare and hashed
  one by one with XXH3. Either way the hash depends on the word's bytes alone.
- A shingle's hash is the polynomial of its words' hashes (shingle_size multiply-adds per word).
- One permutation hashing (Li, Owen and Zhang, NIPS 2012): each shingle picks one of `num_perm`
  bins and keeps its minimum there, so a text costs O(shingles), not O(shingles x num_perm) as
  classic MinHash (datasketch) does. Bins no shingle fell into are filled by optimal densification
  (Shrivastava, ICML 2017): empty bin i copies bin T[i, a] for the first attempt a whose bin is
  filled, T being one fixed table for every text. Two texts then agree in a column with
  probability equal to their Jaccard similarity, as with classic MinHash;
  tests/overlap/test_minhash.py measures the estimate's bias and spread.
Texts are hashed in groups of at most WINDOW bytes, a longer text window by window (cut between
words), so temporary arrays stay near 30 bytes per byte of a window whatever the record's size.
Everything is seeded and independent of the process (no Python hash()), so any process computes
the same row for the same text.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

from xxhash import xxh3_64_intdigest

from tunegate.native import compiled
from tunegate.overlap.numeric import np
from tunegate.overlap.sketch import DENSIFY_ATTEMPTS, SEED, compiled_rows

WINDOW = 1 << 20  # bytes hashed per numpy pass
EMPTY = 0xFFFFFFFF  # a bin no shingle fell into; real values are clamped below it
LONG_WORD = 64  # bytes; longer words are hashed one by one
_SEPARATORS = b" \t\n\r\x0b\x0c"  # what bytes.split() splits on
_LENGTH_MUL = np.uint64(0x9E3779B97F4A7C15)  # odd: a word's length enters its hash
_CHUNK_MUL = np.uint64(0x100000001B3)  # the 64-bit FNV prime, for 8-byte chunks and for words in a shingle
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


class Rows(NamedTuple):
    matrix: Any  # (texts, num_perm) uint32
    has: Any  # (texts,) bool


@lru_cache(maxsize=8)
def densify_table(num_perm: int) -> Any:
    return np.random.default_rng(SEED).integers(0, num_perm, size=(num_perm, DENSIFY_ATTEMPTS * num_perm))


def _mix(x: Any) -> Any:
    """The splitmix64 finaliser, in place: every input bit reaches every output bit."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _words(buf: bytes) -> tuple[Any, Any]:
    """(hash of every word in `buf`, in order; the word's start offset)."""
    data = np.frombuffer(buf + bytes(8), dtype=np.uint8)  # 8 bytes of padding for the last loads
    body = data[:len(buf)]
    apart = (body == 32) | ((body - np.uint8(9)) < 5)  # space, or \t \n \v \f \r (9-13)
    edges = np.diff(apart.view(np.int8), prepend=np.int8(1), append=np.int8(1))
    starts, ends = np.flatnonzero(edges == -1), np.flatnonzero(edges == 1)
    lengths = ends - starts
    loads = np.ndarray(shape=(len(buf),), dtype="<u8", buffer=data, strides=(1,))  # bytes i..i+7 at i
    hashes = loads[starts] & _MASKS[np.minimum(lengths, 8)]
    more, chunk = np.flatnonzero((lengths > 8) & (lengths <= LONG_WORD)), 1
    while len(more):
        rest = lengths[more] - 8 * chunk
        hashes[more] = hashes[more] * _CHUNK_MUL + (loads[starts[more] + 8 * chunk] & _MASKS[np.minimum(rest, 8)])
        more, chunk = more[rest > 8], chunk + 1
    for at in np.flatnonzero(lengths > LONG_WORD).tolist():
        start, end = int(starts[at]), int(ends[at])
        hashes[at] = xxh3_64_intdigest(buf[start:end])
    hashes += lengths.astype(np.uint64) * _LENGTH_MUL  # "a" and "a\x00" differ in length, not in their loads
    return _mix(hashes), starts


def _runs(words: Any, size: int) -> Any:
    """combined[i]: the polynomial of words i .. i+size-1 (uint64 arithmetic wraps, modulo 2**64)."""
    combined = words[:len(words) - size + 1].copy()
    for offset in range(1, size):
        combined *= _CHUNK_MUL
        combined += words[offset:len(words) - size + 1 + offset]
    return combined


def _polynomial(words: Any) -> Any:
    """The polynomial of all the given words: the one shingle of a text shorter than a shingle."""
    return _runs(words, len(words))


def _group_shingles(texts: list[bytes], size: int) -> tuple[Any, Any]:
    """(hash of every shingle, index of its text) for texts of at most WINDOW bytes in all."""
    words, starts = _words(b"\n".join(texts))  # the separator keeps words from running across texts
    text_ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) + 1)
    owner = np.searchsorted(text_ends, starts, side="right")
    values, owners = [], []
    if len(words) >= size:
        combined = _runs(words, size)
        inside = owner[:len(combined)] == owner[size - 1:]  # the run stays in one text
        values.append(combined[inside])
        owners.append(owner[:len(combined)][inside])
    per_text = np.bincount(owner, minlength=len(texts))
    first = np.cumsum(per_text) - per_text
    for span in range(1, size):  # a text of fewer words than a shingle is one shingle, all of it
        short = np.flatnonzero(per_text == span)
        if len(short):
            combined = words[first[short]]
            for offset in range(1, span):
                combined = combined * _CHUNK_MUL + words[first[short] + offset]
            values.append(combined)
            owners.append(short)
    if not values:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    return _mix(np.concatenate(values)), np.concatenate(owners)


def _windows(buf: bytes) -> list[tuple[int, int]]:
    """Cuts of a long text into pieces of about WINDOW bytes, each cut just after a separator."""
    cuts, at = [], 0
    while at < len(buf):
        end = min(at + WINDOW, len(buf))
        if end < len(buf):
            split = max(buf.rfind(bytes([c]), at, end) for c in _SEPARATORS)
            if split < at:  # one word fills the window: cut after it, wherever it ends
                found = [i for i in (buf.find(bytes([c]), end) for c in _SEPARATORS) if i >= 0]
                split = min(found) if found else len(buf) - 1
            end = split + 1
        cuts.append((at, end))
        at = end
    return cuts


def _long_text_shingles(buf: bytes, size: int) -> Any:
    """Every shingle hash of one text longer than WINDOW, window by window (words never cut)."""
    values, tail = [], np.empty(0, dtype=np.uint64)  # tail: the last size-1 words before this window
    for start, end in _windows(buf):
        words = np.concatenate((tail, _words(buf[start:end])[0]))
        if len(words) >= size:
            values.append(_runs(words, size))
        tail = words[-(size - 1):] if size > 1 else words[:0]
        if not values:
            tail = words  # still short of one shingle: keep every word so far
    if not values and len(tail):
        values.append(_polynomial(tail))
    return _mix(np.concatenate(values)) if values else np.empty(0, dtype=np.uint64)


def shingle_values(texts: list[bytes], size: int) -> tuple[Any, Any]:
    """(hash of every shingle of every text, index of its text); repeats within a text are kept."""
    values, owners = [], []
    start = total = 0
    for i, text in enumerate([*texts, None]):
        if text is not None and len(text) <= WINDOW and total + len(text) < WINDOW:
            total += len(text) + 1
            continue
        if i > start:  # the group of short texts before this one
            v, o = _group_shingles(texts[start:i], size)
            values.append(v)
            owners.append(o + start)
        if text is not None and len(text) > WINDOW:
            v = _long_text_shingles(text, size)
            values.append(v)
            owners.append(np.full(len(v), i, dtype=np.int64))
            start, total = i + 1, 0
        else:
            start, total = i, (len(text) + 1 if text is not None else 0)
    if not values:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    return np.concatenate(values), np.concatenate(owners)


def signatures(texts: list[bytes], shingle_size: int, num_perm: int) -> Rows:
    """One MinHash row per text (one permutation hashing with optimal densification)."""
    if compiled is not None:  # the same rows, text by text in compiled code (tunegate/native/minhash.c)
        matrix, has = compiled_rows(texts, shingle_size, num_perm)
        return Rows(np.frombuffer(matrix, dtype=np.uint32).reshape(len(texts), num_perm),
                    np.frombuffer(has, dtype=bool))
    return python_signatures(texts, shingle_size, num_perm)


def python_signatures(texts: list[bytes], shingle_size: int, num_perm: int) -> Rows:
    """The definition of `signatures`, in numpy: what runs where the extension is not built."""
    values, owners = shingle_values(texts, shingle_size)
    flat = np.full(len(texts) * num_perm, EMPTY, dtype=np.uint32)
    if len(values):
        bins = ((values >> np.uint64(32)) * np.uint64(num_perm)) >> np.uint64(32)  # uniform in [0, num_perm)
        low = np.minimum(values & np.uint64(0xFFFFFFFF), np.uint64(EMPTY - 1)).astype(np.uint32)
        np.minimum.at(flat, owners * num_perm + bins.astype(np.int64), low)
    matrix = flat.reshape(len(texts), num_perm)
    has = np.zeros(len(texts), dtype=bool)
    has[owners] = True
    _densify(matrix, has, num_perm)
    return Rows(matrix, has)


def _densify(matrix: Any, has: Any, num_perm: int) -> None:
    """Fill every empty bin of the rows that have a shingle, in place."""
    rows, bins = np.nonzero((matrix == EMPTY) & has[:, None])
    if not len(rows):
        return
    source = matrix.copy()
    table = densify_table(num_perm)
    for attempt in range(table.shape[1]):
        donors = table[bins, attempt]
        found = source[rows, donors] != EMPTY
        matrix[rows[found], bins[found]] = source[rows[found], donors[found]]
        rows, bins = rows[~found], bins[~found]
        if not len(rows):
            return
    for row, b in zip(rows.tolist(), bins.tolist()):  # a row with one or two shingles
        filled = np.flatnonzero(source[row] != EMPTY)
        matrix[row, b] = source[row, filled[np.searchsorted(filled, b) % len(filled)]]


def similarity(a: Any, b: Any) -> Any:
    """Estimated Jaccard similarity of rows: the share of columns where they agree."""
    return (a == b).mean(axis=-1)


def shingle_hashes(text: str, size: int) -> list[int]:
    """The distinct shingle hashes of one text, sorted: the set whose Jaccard similarity is estimated."""
    values, _ = shingle_values([text.encode("utf-8", "surrogatepass")], size)
    return np.unique(values).tolist()
