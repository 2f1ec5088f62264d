"""Near duplicates between train and validation: MinHash rows and LSH bands.

    found = find_near_duplicates(files, "validation", threshold=0.8, shingle_size=5, num_perm=128)

Each record's normalised text (tunegate.overlap.normalize) is cut into word shingles; its MinHash
row (tunegate.overlap.minhash) estimates the Jaccard similarity of two records' shingle sets, and
LSH bands (tunegate.overlap.lsh) find the candidate pairs above the threshold without comparing
every pair. The smaller split is indexed first and the other streamed past it in batches, so
no text is held beyond a batch of each split; past a budget of rows the index goes to disk and the
streamed split is joined with it there, in fixed memory (tunegate.overlap.near_index, near_join).
Rows travel as bytes; where the extension is built an index in memory or shared with workers is
looked up by the compiled loops (tunegate.overlap.plain_index), and numpy is imported only for an
index in files or on disk, or where the extension is not built.
`NearPass` does the work record by record: the overlap observer feeds it during the dataset
stage's single read, and `find_near_duplicates` feeds it from the files when that read is not at
hand. Each split's last batch waits until the pass's answer is asked for, so a read that the gate
rejects at the dataset stage, as most small files are, sketches nothing; and where both splits are
still whole in their last batch then, the compiled loops match them in one call
(tunegate.overlap.near_whole).
"""
from __future__ import annotations

import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from tunegate import progress
from tunegate.dataset.split import iter_split
from tunegate.native import compiled
from tunegate.overlap.exact import record_hashes
from tunegate.overlap.normalize import normalise_record_bytes
from tunegate.overlap.shared_index import drop_index, load_index, share_index, write_index

BATCH_BYTES = 1 << 20  # text hashed per batch: amortises the calls, bounds the text held
# and at most this many records: their MinHash rows (512 bytes each at 128 permutations) and band
# keys take ~3 MB for a moment. 16,384 held ~11 MB more in each worker reading short records
# (a 2.6 GB file of 18.5 M records with two workers), for no speed.
BATCH_ROWS = 1 << 12


class NearPair(NamedTuple):
    """A validation record's closest train record above the threshold."""

    validation: tuple[int, int]  # (line, key): the line in its own file, the record's key in its split
    train: tuple[int, int]
    similarity: float  # MinHash estimate of the Jaccard similarity of the shingle sets
    count: int  # train records above the threshold for this validation record


class NearResult(NamedTuple):
    pairs: list[NearPair]
    indexed: str  # the role held in the LSH index
    candidates: int  # LSH candidates checked against the threshold
    seconds: float


class NearSettings(NamedTuple):
    threshold: float
    shingle_size: int
    num_perm: int


class NearPass:
    """The near-duplicate pass, fed one record at a time: first every record of `index_role`, then
    every record of the other split. Fed in the other order it gives up (`usable` turns False),
    and the caller reads the files again with `find_near_duplicates`."""

    def __init__(self, index_role: str, settings: NearSettings, spills: bool = True):
        self.index_role, self.settings = index_role, settings
        self.usable = True
        self.seconds = 0.0
        self._texts: list[bytes] = []
        self._places: list[tuple[int, int, bytes]] = []  # (line, index, exact hash) of each buffered text
        self._size = 0
        # the index split's rows until it is complete (a worker's part keeps them: it sends them back)
        self._spills = spills
        self._index_rows: Any = None
        # once the index split is complete: a PlainIndex (or lsh.PlacedIndex), or a spilled index's QueryRows
        self._index: Any = None
        # The index split's last batch (texts, places), from its end until the index is first used.
        self._held: tuple[list[bytes], list[tuple[int, int, bytes]]] | None = None
        self._queries: Any = None  # the streamed split's rows on disk, when the index spilled (near_join)
        self._joined = False  # the spilled index's join with the streamed split is done
        self._best: dict[int, list[Any]] = {}  # validation index -> [similarity, val place, train place, count]
        self.candidates = 0
        self._done: set[str] = set()
        self._role: str | None = None  # the role being fed
        self._shared: str | None = None  # a folder holding the index for workers (tunegate.overlap.shared_index)

    def add(self, role: str, line: int, index: int, exact: bytes, text: bytes) -> None:
        if not self.usable:
            return
        if role != self.index_role and self._index is None and self._held is None:
            if self._shared is None:
                self.usable = False  # the split to stream came first: its records would have to be kept
                self._texts, self._places = [], []
                return
            self._index = self._load_shared()
        self._role = role
        self._texts.append(text)
        self._places.append((line, index, exact))
        self._size += len(text) + 1
        if self._size >= BATCH_BYTES or len(self._texts) >= BATCH_ROWS:
            self._flush(role)

    def finish(self, role: str) -> None:
        if not self.usable:
            return
        self._done.add(role)
        if role == self.index_role:  # its last batch is sketched when the index is first used
            self._held, self._texts, self._places, self._size = (self._texts, self._places), [], [], 0
        elif self._queries is not None:  # a spilled index: the streamed split is on disk, join them
            self._answer()
        elif self._shared is not None:
            drop_index(self._shared)

    # -- a file read in parts by worker processes (tunegate.dataset.segments) ------------------

    def part(self, role: str) -> NearPass:
        """A fresh pass for one part of `role`'s file; a part of the streamed split reads the index
        from a folder this pass writes once (worker processes share it through the page cache)."""
        _prepare(self.settings)  # here, before the workers fork
        fresh = NearPass(self.index_role, self.settings, spills=False)
        if role == self.index_role:
            return fresh
        if self.index_role in self._done and self.usable:
            self._index_ready()
        if self.index_role not in self._done or not self.usable or self._queries is not None:
            fresh.usable = False  # a spilled index is joined here, after the read: the stage reads again
            return fresh
        if self._shared is None:
            self._shared = share_index(self._index)
            weakref.finalize(self, drop_index, self._shared)  # also if the read is cut short
            # From here this process merges the workers' matches: its index becomes the shared files'
            # map, pages the workers read too, instead of a private copy beside theirs.
            self._index = self._load_shared()
        fresh._shared = self._shared
        return fresh

    def payload(self) -> Any:
        """What a part found: the rows it indexed, or its matches (None when it gave up)."""
        if not self.usable:
            return None
        if self._role is not None:
            self._flush(self._role)
        if self._role != self.index_role and self._role is not None:
            return ("matches", list(self._best.values()), self.candidates, self.seconds)
        return ("rows", self._rows().parts, self.seconds)

    def join(self, role: str, payload: Any, lines: int, records: int) -> None:
        """Take a part's payload, parts in file order; its places count from the part's start."""
        if payload is None or not self.usable:
            self.usable = False
            return
        if payload[0] == "rows":
            for matrix, places in payload[1]:
                self._rows().keep(matrix, [(line + lines, key + records, exact) for line, key, exact in places])
        else:
            for sim, val, train, count in payload[1]:
                if role == "validation":
                    val = (val[0] + lines, val[1] + records)
                else:
                    train = (train[0] + lines, train[1] + records)
                self._record(val, train, sim, count)
            self.candidates += payload[2]
        self.seconds += payload[-1]

    @property
    def complete(self) -> bool:
        return self.usable and len(self._done) == 2

    def result(self) -> NearResult:
        if self.usable and self._all_held():
            self._answer_held()
        elif self.usable:  # the batches still waiting
            self._answer()
        pairs = [NearPair(val, train, round(sim, 4), n) for sim, val, train, n in
                 (self._best[k] for k in sorted(self._best))]
        return NearResult(pairs, self.index_role, self.candidates, self.seconds)

    def _all_held(self) -> bool:
        """Each split whole in its last batch, nothing sketched yet: the compiled loops can do it all."""
        return (compiled is not None and self._held is not None and self._index_rows is None
                and self._index is None and self._shared is None and len(self._done) == 2)

    def _answer_held(self) -> None:
        """Both splits' held batches matched in one compiled pass, without numpy (tunegate.overlap.near_whole)."""
        from tunegate.overlap.near_whole import held_pairs

        start = time.perf_counter()
        found, candidates = held_pairs(self._held, (self._texts, self._places), self.settings)
        self._held, self._texts, self._places, self._size = None, [], [], 0
        self.candidates += candidates
        for here, there, sim in found:  # here: the streamed split's record, there: the indexed one's
            self._record(*((there, here) if self.index_role == "validation" else (here, there)), sim)
        self.seconds += time.perf_counter() - start

    def _answer(self) -> None:
        """Sketch the batches still waiting and, for a spilled index, join the streamed split with it."""
        self._index_ready()
        if self._role is not None:
            self._flush(self._role)
        if self._queries is not None and not self._joined and len(self._done) == 2:
            self._joined = True
            self._join_on_disk("train" if self.index_role == "validation" else "validation")

    def _rows(self) -> Any:
        if self._index_rows is None:
            from tunegate.overlap.near_index import IndexRows

            self._index_rows = IndexRows(self.settings.num_perm, self._spills)
        return self._index_rows

    def _flush(self, role: str) -> None:
        if not self._texts:
            return
        if role != self.index_role:
            self._index_ready()
        texts, places = self._texts, self._places
        self._texts, self._places, self._size = [], [], 0
        self._sketch(texts, places, role)

    def _sketch(self, texts: list[bytes], places: list[tuple[int, int, bytes]], role: str) -> None:
        """MinHash rows of one batch: kept for the index, or matched against it (or kept on disk)."""
        from tunegate.overlap.plain_rows import rows_with_words

        start = time.perf_counter()
        s = self.settings
        rows, places = rows_with_words(texts, places, s.shingle_size, s.num_perm)
        if role == self.index_role:
            self._rows().keep(rows, places)
        elif self._queries is not None:
            from tunegate.overlap.bands import band_layout
            from tunegate.overlap.near_index import matrix_of, places_of

            self._queries.keep(matrix_of(rows, s.num_perm), places_of(places), band_layout(s.threshold, s.num_perm))
        else:
            self._match(rows, places, role)
        self.seconds += time.perf_counter() - start

    def _index_ready(self) -> bool:
        """Sketch the index split's held last batch and build the index, on its first use; whether
        it was built now."""
        if self._held is None:
            return False
        texts, places = self._held
        self._held = None
        if texts:
            self._sketch(texts, places, self.index_role)
        self._build_index()
        return True

    def _build_index(self) -> None:
        from tunegate.overlap.bands import band_layout

        s = self.settings
        rows, bands = self._rows(), band_layout(s.threshold, s.num_perm)
        if rows.in_files:  # looked up from its files' map, which workers map too
            write_index(rows.folder, s.num_perm, bands)
            self._shared = str(rows.folder)
            self._index = self._load_shared()
            return
        self._index = rows.build(bands)
        if rows.spilled:  # too big to look up: the streamed split is joined with it on disk
            from tunegate.overlap.near_join import QueryRows

            self._index = self._queries = QueryRows(rows)

    def _load_shared(self) -> Any:
        from tunegate.overlap.bands import band_layout

        assert self._shared is not None
        s = self.settings
        return load_index(self._shared, s.num_perm, band_layout(s.threshold, s.num_perm))

    def _join_on_disk(self, role: str) -> None:
        """The spilled index's pairs at or above the threshold, once the streamed split is on disk."""
        from tunegate.overlap.bands import band_layout

        s = self.settings
        found, self.candidates = self._queries.pairs(band_layout(s.threshold, s.num_perm), s.threshold)
        for q, h, sim in found:
            here, there = self._queries.place("q", q), self._queries.place("i", h)
            self._record(*((here, there) if role == "validation" else (there, here)), sim)

    def _match(self, rows: bytes, places: list[tuple[int, int, bytes]], role: str) -> None:
        """Check one streamed batch's LSH candidates; record the pairs at or above the threshold."""
        found, candidates = self._index.matches(rows, places, self.settings.threshold)
        self.candidates += candidates
        for here, there, sim in found:
            self._record(*((here, there) if role == "validation" else (there, here)), sim)

    def _record(self, val: tuple[int, int], train: tuple[int, int], sim: float, count: int = 1) -> None:
        entry = self._best.get(val[1])
        if entry is None:
            self._best[val[1]] = [sim, val, train, count]
            return
        entry[3] += count
        if sim > entry[0] or (sim == entry[0] and train[1] < entry[2][1]):  # ties: the earliest train record
            entry[0], entry[2] = sim, train


def _prepare(settings: NearSettings) -> None:
    """Work out the band layout and the densify table (each once per process), also in the process
    that parts the pass before its workers fork: they find them done, where each did them again
    at its first part (numpy's import and 25 ms of band layout, before both were spared)."""
    from tunegate.overlap.bands import band_layout
    from tunegate.overlap.plain_rows import prepare

    band_layout(settings.threshold, settings.num_perm)
    prepare(settings.num_perm)


def feed(near: NearPass, role: str, line: int, index: int, record: Any) -> None:
    """Normalise one record and hand it to the pass (records without readable messages are skipped)."""
    norm = normalise_record_bytes(record)
    if norm is not None:
        near.add(role, line, index, record_hashes(norm)[0], norm.text)


def find_near_duplicates(files: Mapping[str, Path | Sequence[Path]], index_role: str, *, threshold: float,
                         shingle_size: int, num_perm: int) -> NearResult:
    """Pairs of train/validation records whose estimated Jaccard similarity is >= threshold.

    `files` gives each split's file, or its files read in order (places are then record keys,
    `tunegate.dataset.split`). `index_role` names the split to index (the smaller one). Exact
    normalised duplicates are left out: the exact pass already reports them.
    """
    start = time.perf_counter()
    near = NearPass(index_role, NearSettings(threshold, shingle_size, num_perm))
    query_role = "train" if index_role == "validation" else "validation"
    for role in (index_role, query_role):
        label = f"{'indexing' if role == index_role else 'querying'} {role}"
        for line, index, record in iter_split(files[role]):  # any format, as the dataset stage hands it on
            feed(near, role, line, index, record)
            progress.note(label, advance=1)  # one attribute check when progress is off
        near.finish(role)
    found = near.result()
    return found._replace(seconds=time.perf_counter() - start)


def shingle_hashes(text: str, size: int) -> list[int]:
    """The distinct shingle hashes of one normalised text, sorted (see tunegate.overlap.minhash)."""
    from tunegate.overlap.minhash import shingle_hashes as hashes

    return hashes(text, size)
