"""The compiled loops compute exactly what their Python definitions compute.

tunegate/native/*.c (one module, _loops) replace the exact pass's normalisation, the near pass's
MinHash rows, the dataset stage's line marks and its TG210 map when built; an install without a C
compiler runs the Python/numpy definitions instead. Both must give the same bytes, rows and lines
for every input, so the verdicts never depend on how tunegate was installed.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import unicodedata
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xxhash import xxh3_64_intdigest

from tests.overlap.test_normalize import HOSTILE, SPACES, msg, reference_normal_text
from tunegate.native import compiled as native
from tunegate.native import fold_table
from tunegate.overlap import minhash
from tunegate.overlap.normalize import python_normal_bytes, python_normalise_record_bytes
from tunegate.overlap.sketch import densify_bytes

DATA = Path(__file__).parents[1] / "data"
needs_native = pytest.mark.skipif(native is None, reason="tunegate/native/_loops is not built (no C compiler)")


def compiler() -> str | None:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc)


def test_the_extension_is_built_and_used_where_a_compiler_is():
    if compiler() is None:
        pytest.skip("no C compiler here: the pure-Python definitions run (tested below)")
    if os.environ.get("TUNEGATE_NATIVE") == "0":
        pytest.skip("TUNEGATE_NATIVE=0: the suite runs on the pure-Python definitions")
    assert native is not None, "pip install -e . should have built tunegate/native/_loops"
    assert native.UNIDATA_VERSION == unicodedata.unidata_version


def test_the_fold_table_is_taken_from_this_interpreter():
    folds, entry = fold_table.fold_entries()
    for cp, at in entry.items():
        char = chr(cp)
        if at == fold_table.SPACE:
            assert char.isspace()
        else:
            assert "".join(map(chr, folds[at])) == char.casefold()
    unchanged = [cp for cp in range(0x80, 0x3000) if cp not in entry]
    assert all(chr(cp).casefold() == chr(cp) and not chr(cp).isspace() for cp in unchanged)


@needs_native
def test_every_code_point_normalises_as_the_definition_says():
    for start in range(0, sys.maxunicode + 1, 2048):
        chars = [chr(cp) for cp in range(start, min(start + 2048, sys.maxunicode + 1))]
        for text in ("".join(chars), " x ".join(chars)):
            assert native.normal_bytes(text, unicodedata.normalize) == python_normal_bytes(text), hex(start)


@needs_native
def test_hostile_text_normalises_as_the_definition_says():
    long_folds = "Straße İ ﬃ " * 500  # folds that grow past a stretch of 256 characters
    for text in HOSTILE + [a + b for a in HOSTILE for b in HOSTILE] + [long_folds, "  " * 1000, "ß" * 4000]:
        want = python_normal_bytes(text)
        assert native.normal_bytes(text, unicodedata.normalize) == want, repr(text[:40])
        assert want == reference_normal_text(text).encode("utf-8", "surrogatepass")


@needs_native
@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.one_of(st.sampled_from(SPACES + list("aAßİﬁＡ\u0301Σ")), st.characters()), max_size=600))
def test_any_text_normalises_as_the_definition_says(text):
    assert native.normal_bytes(text, unicodedata.normalize) == python_normal_bytes(text)


ODD_RECORDS = [
    None, 1, "messages", [], {}, {"messages": None}, {"messages": []}, {"messages": "hi"}, {"messages": [1]},
    {"messages": [{"role": 1, "content": "x"}]}, {"messages": [{"content": "x"}]},
    {"messages": [{"role": "User ", "content": None}]}, {"messages": [{"role": "user"}]},
    {"messages": [{"role": "user", "content": 5}]}, {"messages": [{"role": "user", "content": {"text": "x"}}]},
    {"messages": [msg("user", [{"type": "text", "text": "A"}, {"text": 3}, "s", {"text": "  B\u2028"}, {}])]},
    {"messages": [msg("user", [])]}, {"messages": [msg("ASSISTANT", "only an answer")]},
    {"messages": [msg("user", "q"), msg(" assistant\t", " \ud800 Ａ ")]},
    {"messages": [msg("user", "q"), msg("assistantx", "a")]}, {"messages": [msg("user", "q"), msg("assistan", "a")]},
    {"messages": [msg("", ""), msg("assistant", "")]}, {"messages": [msg("Ａｓｓｉｓｔａｎｔ", "full-width role")]},
    {"messages": [msg("tool", "ﬁ" * 10000), msg("user", "q"), msg("assistant", "a")], "weight": 1},
    {"messages": [msg("user", "q"), msg("assistant", "a"), "not a message"]},
]


@needs_native
def test_odd_records_normalise_as_the_definition_says():
    for record in ODD_RECORDS:
        want = python_normalise_record_bytes(record)
        got = native.normalise_record(record, unicodedata.normalize)
        assert got == (None if want is None else tuple(want)), repr(record)[:80]


@needs_native
def test_real_chat_records_normalise_as_the_definition_says():
    for path in (DATA / "overlap").glob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            if line.strip():
                record = orjson.loads(line)
                want = python_normalise_record_bytes(record)
                assert native.normalise_record(record, unicodedata.normalize) == (None if want is None else tuple(want))


def as_parts(norm) -> tuple[bytes, int, int] | None:
    """A NormalBytes as normalise_parts gives it: (text, prompt_end, answer_start or -1)."""
    if norm is None:
        return None
    if norm.answer is None:
        return norm.prompt, len(norm.prompt), -1
    return norm.text, len(norm.prompt), len(norm.text) - len(norm.answer)


@needs_native
def test_a_record_in_one_piece_is_its_normal_form_with_the_places_of_its_prompt_and_answer():
    records = ODD_RECORDS + [orjson.loads(line) for path in (DATA / "overlap").glob("*.jsonl")
                             for line in path.read_bytes().splitlines() if line.strip()]
    for record in records:
        want = python_normalise_record_bytes(record)
        got = native.normalise_parts(record, unicodedata.normalize)
        assert got == as_parts(want), repr(record)[:80]
        if got is not None:
            text, prompt_end, answer_start = got
            assert text[:prompt_end] == want.prompt and (text[answer_start:] if answer_start >= 0 else None) == want.answer


def texts_for_rows() -> list[bytes]:
    """Normalised records, and texts that take every branch: no word, fewer words than a shingle,
    words of every length up to and past the 64-byte chunked hash, a text longer than a window,
    rows with 1 to ~40 shingles (a row with few filled bins densifies another way)."""
    rnd = random.Random(7)
    texts = [python_normalise_record_bytes(orjson.loads(line)).text
             for line in (DATA / "overlap" / "train.jsonl").read_bytes().splitlines() if line.strip()]
    words = [bytes(rnd.randrange(33, 256) for _ in range(n)) for n in range(1, 140)]
    texts += [b"", b"   \n\t ", b"one", b"a b", b"a b c d", b"x" * 100 + b" y", b"\x00\x01 \xff\xfe zz",
              b" ".join(rnd.choice(words) for _ in range(3000)), b"w " * (minhash.WINDOW // 2 + 10) + b"end",
              b"\x0b".join(words), b"\x1c".join(words[:20])]  # \x1c is no separator for bytes.split()
    texts += [b" ".join(words[:k]) for k in range(1, 40)]  # few shingles to many: both ways of densifying
    return texts


@needs_native
@pytest.mark.parametrize("shingle_size,num_perm", [(5, 128), (1, 16), (3, 64), (7, 256), (2, 1)])
def test_minhash_rows_are_the_numpy_definitions(shingle_size, num_perm):
    texts = texts_for_rows()
    got = minhash.signatures(texts, shingle_size, num_perm)
    want = minhash.python_signatures(texts, shingle_size, num_perm)
    assert np.array_equal(got.has, want.has)
    assert np.array_equal(got.matrix, want.matrix)


@needs_native
@pytest.mark.parametrize("shingle_size,num_perm", [(5, 128), (1, 16), (3, 64), (7, 256)])
def test_minhash_rows_rolled_shingle_by_shingle_are_those_of_a_vector_at_a_time(shingle_size, num_perm):
    # a CPU without AVX-512 rolls each shingle's hash from the one before (minhash.c): the same rows
    texts = texts_for_rows()
    table = densify_bytes(num_perm)
    rolled = native.signatures(texts, shingle_size, num_perm, table, xxh3_64_intdigest, True)
    assert rolled == native.signatures(texts, shingle_size, num_perm, table, xxh3_64_intdigest)
    want = minhash.python_signatures(texts, shingle_size, num_perm)
    assert np.array_equal(np.frombuffer(rolled[0], dtype=np.uint32).reshape(-1, num_perm), want.matrix)


@needs_native
@pytest.mark.parametrize("num_perm", [1, 2, 3, 7, 64, 128, 255, 256, 1000])
def test_the_densify_table_is_the_one_numpy_random_draws(num_perm):
    want = np.random.default_rng(minhash.SEED).integers(0, num_perm, size=(num_perm, 4 * num_perm))
    assert native.densify_table(minhash.SEED, num_perm, 4 * num_perm) == want.astype(np.int64).tobytes()


@needs_native
@pytest.mark.parametrize("seed", [0, 5, 2**31 + 7, 2**32 - 1])
def test_the_densify_table_follows_numpy_random_for_any_seed_it_takes(seed):
    want = np.random.default_rng(seed).integers(0, 97, size=(5, 300))
    assert native.densify_table(seed, 97, 300)[:5 * 300 * 8] == want.astype(np.int64).tobytes()[:5 * 300 * 8]


@needs_native
def test_the_densify_table_refuses_what_numpy_would_draw_another_way():
    for args in [(2**32, 128, 512), (1, 0, 4), (-1, 128, 512), (1, 128, -1)]:
        with pytest.raises((ValueError, OverflowError)):
            native.densify_table(*args)


def check_json(env_native: str, tmp_path: Path) -> dict:
    env = {**os.environ, "TUNEGATE_NATIVE": env_native, "TUNEGATE_WORKERS": "1"}
    out = subprocess.run([sys.executable, "-m", "tunegate", "check", "--train", str(DATA / "flows" / "train.jsonl"),
                          "--validation", str(DATA / "overlap" / "validation_two_near_copies.jsonl"), "--json"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, check=False)
    assert out.returncode in (0, 1), out.stderr
    report = json.loads(out.stdout)
    for stage in report.get("stages", []):
        stage.pop("seconds", None)
        stage.get("details", {}).pop("seconds", None)
    return report


@needs_native
def test_the_check_reports_the_same_with_and_without_the_extension(tmp_path):
    with_native, without = check_json("1", tmp_path), check_json("0", tmp_path)
    assert [f["code"] for f in with_native["findings"]] == [f["code"] for f in without["findings"]]
    assert with_native["findings"] == without["findings"]
    assert any(f["code"] == "TG303" for f in with_native["findings"])  # the near pass found its copies


@needs_native
def test_the_first_seen_map_keeps_what_dict_setdefault_keeps():
    rnd = random.Random(11)
    keys = [rnd.getrandbits(64) for _ in range(50_000)] + [0, 1, 2**64 - 1]
    keys += rnd.sample(keys, 20_000)  # repeats, in another order
    seen, want = native.FirstSeen(), {}
    for line, key in enumerate(keys, start=1):
        assert seen.setdefault(key, line) == want.setdefault(key, line)
    assert len(seen) == len(want)


@needs_native
def test_the_first_seen_map_holds_at_most_43_bytes_a_key_past_its_first_table():
    # The largest thing the gate's process holds on a big file: at most three quarters full, so a
    # 300,000-record file's map is 2**19 slots (8 MB), not 2**20.
    import sys

    seen, rnd = native.FirstSeen(), random.Random(5)
    for n, key in enumerate(rnd.getrandbits(64) for _ in range(300_000)):
        seen.setdefault(key, n)
        if n + 1 in (1_000, 30_000, 100_000, 196_608, 196_609, 300_000):
            assert 16 * (n + 1) < sys.getsizeof(seen) - 64 <= max(16 * 1024, 43 * (n + 1)), n + 1
    assert sys.getsizeof(seen) < (8 << 20) + 1024


@needs_native
def test_the_first_seen_map_hands_over_every_key_with_its_first_line():
    from array import array

    rnd = random.Random(13)
    seen, want = native.FirstSeen(), {}
    for line, key in enumerate([rnd.getrandbits(64) for _ in range(5_000)] * 2 + [0, 2**64 - 1]):
        seen.setdefault(key, line)
        want.setdefault(key, line)
    keys, lines = seen.dump()  # what the dataset stage writes to disk when its TG210 index spills
    assert dict(zip(array("Q", keys), array("q", lines))) == want
    assert native.FirstSeen().dump() == (b"", b"")


@needs_native
def test_the_first_seen_map_refuses_what_a_key_or_line_cannot_be():
    seen = native.FirstSeen()
    for key, line in ((-1, 1), (2**64, 1), (1, -1)):
        with pytest.raises((OverflowError, ValueError)):
            seen.setdefault(key, line)
    assert len(seen) == 0


@needs_native
def test_a_replayed_log_finds_the_repeats_setdefault_finds():
    from array import array

    rnd = random.Random(12)
    keys = array("Q", [rnd.getrandbits(64) for _ in range(5_000)])
    keys.extend(rnd.sample(list(keys), 1_000))
    lines = array("q", range(1, len(keys) + 1))
    seen, want = native.FirstSeen(), {}
    seen.setdefault(keys[0], 0)  # a key seen in an earlier part
    want.setdefault(keys[0], 0)
    expected = [(i, want.setdefault(k, line + 7)) for i, (k, line) in enumerate(zip(keys, lines))
                if want.setdefault(k, line + 7) != line + 7]
    assert seen.repeats(keys, lines, 7) == expected
    assert len(seen) == len(want)


ROLE_NAMES = ["system", "user", "assistant", "tool", "", "User", "assistant ", "ｕｓｅｒ"]
TEXTS = ["hi", "", " ", "\u3000\n", "\u200b", "ok then", "x" * 300, "\x1c", "مرحبا"]
message = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(ROLE_NAMES), "content": st.sampled_from(TEXTS)}),
    st.fixed_dictionaries({"role": st.sampled_from(ROLE_NAMES)}),
    st.fixed_dictionaries({"content": st.sampled_from(TEXTS)}),
    st.fixed_dictionaries({"role": st.sampled_from(ROLE_NAMES), "content": st.one_of(st.none(), st.integers(),
                                                                                    st.lists(st.text(max_size=3)))}),
    st.fixed_dictionaries({"role": st.sampled_from(ROLE_NAMES), "content": st.sampled_from(TEXTS),
                           "name": st.text(max_size=3)}),
    st.none(), st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=2),
)


def scan_both(msgs):
    from tunegate.dataset.contract import python_scan

    ours, theirs = {r: [] for r in ("system", "user", "assistant")}, {r: [] for r in ("system", "user", "assistant")}
    return (native.scan(msgs, ours), ours), (python_scan(msgs, theirs), theirs)


@needs_native
@settings(max_examples=800, deadline=None)
@given(st.one_of(st.lists(message, max_size=7), st.none(), st.dictionaries(st.text(max_size=2), st.integers())))
def test_the_messages_scan_decides_and_counts_as_the_definition(msgs):
    compiled_result, python_result = scan_both(msgs)
    assert compiled_result == python_result


@needs_native
def test_the_messages_scan_of_real_records_is_the_definition():
    for path in sorted((DATA / "dataset").rglob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            try:
                record = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if isinstance(record, dict):
                compiled_result, python_result = scan_both(record.get("messages"))
                assert compiled_result == python_result, (path.name, raw[:80])


@needs_native
def test_the_messages_scan_uses_whatever_the_role_maps_to():
    class Sink(list):  # not a plain list: its own append runs, as in the Python loop
        def append(self, n):
            super().append(-n)

    from tunegate.dataset.contract import python_scan

    msgs = [{"role": "user", "content": "abc"}, {"role": "tool", "content": "x"},
            {"role": "assistant", "content": "de"}]
    found = []
    for scan in (native.scan, python_scan):
        lengths = {"user": Sink(), "assistant": [], "tool": None}
        found.append((scan(msgs, lengths), lengths))
    assert found[0] == found[1] == (1, {"user": [-3], "assistant": [2], "tool": None})


def band_case(seed: int, n: int, batch: int, num_perm: int, bands: tuple[int, int]):
    """An index of `n` random rows with repeated band keys, and a batch sharing some bands with it."""
    from tunegate.overlap.lsh import BandIndex

    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 4, size=(n, num_perm), dtype=np.uint32)  # few values: bands collide often
    rows[::3] = rng.integers(0, 2**32 - 1, size=(len(rows[::3]), num_perm), dtype=np.uint32)
    queries = rng.integers(0, 2**32 - 1, size=(batch, num_perm), dtype=np.uint32)
    if n and batch:
        take = rng.integers(0, n, size=batch)
        mixed = rng.random((batch, num_perm)) < 0.5
        queries = np.where(mixed, rows[take], queries).astype(np.uint32)
        queries[: batch // 4] = rows[take[: batch // 4]]
    return BandIndex.build(rows, bands), queries


@needs_native
@pytest.mark.parametrize("n,batch,num_perm,bands", [(500, 300, 128, (14, 9)), (40, 60, 16, (2, 8)),
                                                     (1, 5, 8, (3, 2)), (0, 4, 16, (4, 4)), (300, 0, 64, (8, 8)),
                                                     (2000, 50, 256, (20, 12))])
def test_the_band_table_finds_the_pairs_the_binary_search_finds(n, batch, num_perm, bands):
    index, queries = band_case(n + batch, n, batch, num_perm, bands)
    assert index.table is not None
    got, want = index.candidates(queries), index.search(queries)
    assert [a.tolist() for a in got] == [a.tolist() for a in want]
    if n and batch:
        assert len(want[0]) >= batch // 4  # the planted copies are found


@needs_native
@pytest.mark.parametrize("n,batch,num_perm,bands", [(500, 300, 128, (14, 9)), (40, 60, 16, (2, 8)),
                                                     (1, 5, 8, (3, 2)), (0, 4, 16, (4, 4)), (300, 0, 64, (8, 8))])
def test_plain_rows_indexed_and_looked_up_give_the_band_tables_pairs_with_their_agreeing_columns(n, batch, num_perm,
                                                                                                 bands):
    # what plain_index.PlainIndex does: band_index, a BandTable of its keys, pairs, agreement
    index, queries = band_case(n + batch, n, batch, num_perm, bands)
    keys, order = native.band_index(index.rows.tobytes(), num_perm, *bands)
    pairs = native.BandTable(keys, bands[0]).pairs(queries.tobytes(), num_perm, bands[1], order)
    agree = native.agreement(pairs, index.rows.tobytes(), queries.tobytes(), num_perm)
    query, hit = index.search(queries)
    assert np.frombuffer(pairs, dtype=np.int64).tolist() == (query * max(n, 1) + hit).tolist()
    assert np.frombuffer(agree, dtype=np.int32).tolist() == (queries[query] == index.rows[hit]).sum(axis=1).tolist()


@needs_native
@pytest.mark.parametrize("n,num_perm,bands", [(500, 128, (14, 9)), (40, 16, (2, 8)), (1, 8, (3, 2)), (0, 16, (4, 4))])
def test_band_index_sorts_plain_rows_keys_as_the_numpy_index_does(n, num_perm, bands):
    index, _ = band_case(12, n, 10, num_perm, bands)  # repeated band keys: the order of a run matters
    keys, order = native.band_index(index.rows.tobytes(), num_perm, *bands)
    assert keys == np.ascontiguousarray(index.sorted_keys).tobytes()
    assert order == np.ascontiguousarray(index.order, dtype=np.uint32).tobytes()


@needs_native
def test_the_agreement_of_each_pair_is_the_count_of_columns_where_its_rows_agree():
    index, queries = band_case(13, 300, 200, 128, (14, 9))
    query, hit = index.search(queries)
    pairs = (query * 300 + hit).astype(np.int64).tobytes()
    agree = native.agreement(pairs, index.rows.tobytes(), queries.tobytes(), 128)
    assert np.frombuffer(agree, dtype=np.int32).tolist() == (queries[query] == index.rows[hit]).sum(axis=1).tolist()
    assert len(query) > 50 and native.agreement(b"", index.rows.tobytes(), queries.tobytes(), 128) == b""


@needs_native
def test_agreement_and_band_index_refuse_pairs_or_rows_they_would_read_past():
    rows = bytes(4 * 16 * 3)
    outside = np.array([3 * 3], dtype=np.int64).tobytes()  # query row 3 of 3
    with pytest.raises(ValueError, match="outside"):
        native.agreement(outside, rows, rows, 16)
    with pytest.raises(ValueError, match="outside"):
        native.agreement(np.array([0], dtype=np.int64).tobytes(), b"", rows, 16)
    with pytest.raises(ValueError, match="whole rows"):
        native.agreement(b"", rows, rows[:-4], 16)
    with pytest.raises(ValueError, match="whole rows"):
        native.band_index(rows[:-4], 16, 4, 4)
    with pytest.raises(ValueError, match="bands"):
        native.band_index(rows, 16, 4, 5)


def hash_column(rng, n: int, heads: int) -> bytes:
    """n 16-byte hashes drawn from few first halves (so look-ups probe past other hashes) and few
    second halves (so hashes repeat)."""
    first = rng.integers(0, 2**63, size=heads, dtype=np.int64)[rng.integers(0, heads, size=n)]
    second = rng.integers(0, 64, size=n, dtype=np.int64)
    return np.stack([first, second], axis=1).tobytes()


@needs_native
@pytest.mark.parametrize("n,m,heads", [(300, 2000, 7), (1, 50, 1), (0, 10, 3), (40, 0, 3), (500, 500, 500)])
def test_present_finds_the_columns_records_whose_whole_hash_is_among_the_keys(n, m, heads):
    rng = np.random.default_rng(n + m)
    both = hash_column(rng, n + m, heads)  # one draw: keys and column share first halves
    keys, column = both[:16 * n], both[16 * n:]
    wanted = {keys[i:i + 16] for i in range(0, len(keys), 16)}
    expected = [t for t in range(m) if column[16 * t:16 * t + 16] in wanted]
    assert np.frombuffer(native.present(keys, column), dtype=np.int64).tolist() == expected
    if n and m and heads < 10:
        assert 0 < len(expected) < m  # some records share a first half with a key but not the whole hash


@needs_native
@pytest.mark.parametrize("n,heads", [(2000, 5), (1, 1), (0, 1), (300, 300)])
def test_first_copies_names_each_repeated_record_and_the_first_record_with_its_hash(n, heads):
    column = hash_column(np.random.default_rng(n), n, heads)
    first: dict[bytes, int] = {}
    expected = [(i, first.setdefault(column[16 * i:16 * i + 16], i)) for i in range(n)]
    expected = [(i, origin) for i, origin in expected if origin != i]
    later, origin = native.first_copies(column)
    assert list(zip(np.frombuffer(later, dtype=np.int64).tolist(), np.frombuffer(origin, dtype=np.int64).tolist())) \
        == expected


@needs_native
def test_the_hash_joins_refuse_a_column_of_partial_hashes():
    with pytest.raises(ValueError, match="16-byte"):
        native.first_copies(bytes(17))
    with pytest.raises(ValueError, match="16-byte"):
        native.present(bytes(16), bytes(8))


@needs_native
def test_the_band_table_reads_an_index_mapped_read_only(tmp_path):
    from tunegate.overlap.lsh import BandIndex

    index, queries = band_case(7, 400, 100, 128, (14, 9))
    for name in ("sorted_keys", "order"):
        np.save(tmp_path / f"{name}.npy", getattr(index, name))
    mapped = BandIndex.of(index.rows, index.bands, np.load(tmp_path / "sorted_keys.npy", mmap_mode="r"),
                          np.load(tmp_path / "order.npy", mmap_mode="r"))
    assert [a.tolist() for a in mapped.candidates(queries)] == [a.tolist() for a in index.search(queries)]


@needs_native
def test_a_band_table_takes_the_rows_of_the_sorted_keys_as_uint32_as_it_does_as_int64():
    from tunegate.overlap.lsh import BandIndex

    index, queries = band_case(11, 500, 200, 128, (14, 9))
    table, batch = index.table, np.ascontiguousarray(queries, dtype=np.uint32)
    wide = table.pairs(batch, 128, 9, np.ascontiguousarray(index.order, dtype=np.int64))
    assert table.pairs(batch, 128, 9, np.ascontiguousarray(index.order, dtype=np.uint32)) == wide
    narrow = BandIndex.of(index.rows, index.bands, index.sorted_keys, index.order.astype(np.uint32))
    assert [a.tolist() for a in narrow.candidates(queries)] == [a.tolist() for a in index.search(queries)]
    with pytest.raises(ValueError, match="wrong size"):  # neither int64 nor uint32 a key: refused, never read past
        table.pairs(batch, 128, 9, np.ascontiguousarray(index.order, dtype=np.uint16))


@needs_native
def test_a_band_table_written_into_a_buffer_and_read_from_it_elsewhere_finds_the_same_pairs(tmp_path):
    from tunegate.overlap.lsh import BandIndex

    index, queries = band_case(9, 600, 200, 128, (14, 9))
    keys = np.ascontiguousarray(index.sorted_keys)
    size = native.BandTable.slots_bytes(len(index.rows), 14)
    assert size == 14 * 2048 * 8  # a power of two, at least twice the keys, of 8-byte slots
    written = bytearray(size)
    native.BandTable(keys, 14, slots=written, fill=True)
    (tmp_path / "table.bin").write_bytes(written)
    read = native.BandTable(keys, 14, slots=np.memmap(tmp_path / "table.bin", mode="r"))
    assert read.in_buffer and not native.BandTable(keys, 14).in_buffer
    shared = BandIndex.of(index.rows, index.bands, index.sorted_keys, index.order, read)
    assert [a.tolist() for a in shared.candidates(queries)] == [a.tolist() for a in index.search(queries)]


@needs_native
def test_a_band_table_refuses_slots_of_another_size_or_that_point_outside_the_keys():
    index, _ = band_case(9, 100, 10, 64, (8, 8))
    keys = np.ascontiguousarray(index.sorted_keys)
    size = native.BandTable.slots_bytes(100, 8)
    with pytest.raises(ValueError, match="slots_bytes"):
        native.BandTable(keys, 8, slots=bytes(size - 16))
    with pytest.raises(BufferError):  # filling needs a writable buffer
        native.BandTable(keys, 8, slots=bytes(size), fill=True)
    bad = bytearray(size)
    native.BandTable(keys, 8, slots=bad, fill=True)
    slots = np.frombuffer(bad, dtype=[("tag", "<u4"), ("start", "<u4")])  # start: the run's first key, plus one
    slots["start"][np.flatnonzero(slots["start"])[0]] = 101  # a run past the band's 100 keys
    with pytest.raises(ValueError, match="do not hold"):
        native.BandTable(keys, 8, slots=bytes(bad))
    full = np.frombuffer(bytearray(size), dtype=slots.dtype)
    full["start"] = 1  # no free slot: a probe would never end
    with pytest.raises(ValueError, match="do not hold"):
        native.BandTable(keys, 8, slots=full.tobytes())


def test_text_of_characters_nfkc_keeps_is_folded_without_unicodedata_and_the_same():
    """The normaliser skips unicodedata.normalize for text of characters the table calls safe:
    each is its own NFKC, and next to any other such character or to a composition's first half
    (the characters most likely to join a neighbour) the pair is too."""
    unsafe = fold_table.nfkc_unsafe()
    firsts = sorted({int(d.split()[0], 16) for d in map(unicodedata.decomposition, map(chr, range(0x3000)))
                     if d and not d.startswith("<") and len(d.split()) == 2} - unsafe)
    safe = [cp for cp in range(0x80, 0x30000) if cp not in unsafe]
    assert all(unicodedata.normalize("NFKC", chr(cp)) == chr(cp) for cp in safe)
    rng = random.Random(5)
    pairs = [(a, b) for a in firsts for b in rng.sample(safe, 40)] + [(rng.choice(safe), rng.choice(safe))
                                                                     for _ in range(20_000)]
    assert all(unicodedata.normalize("NFKC", chr(a) + chr(b)) == chr(a) + chr(b) for a, b in pairs)
    assert {0x0301, 0x1161, 0x11A8, 0x3099, 0xFB01, 0xFF21} <= unsafe  # marks, jamo, kana voicing, compatibility


@needs_native
@pytest.mark.parametrize("widen", ["", "é", "Ω", "😅"])  # one byte a character (ASCII, Latin-1), two, four
def test_text_folded_sixteen_characters_at_a_time_is_the_definition(widen):
    # The compiled fold takes 16 ASCII characters at once where none collapses: runs of whitespace,
    # capitals and other characters at every offset of a block must give the definition's bytes.
    rng = random.Random(len(widen))
    pieces = ["ab", "CD", " ", "  ", "\t", "\n\n", "\x1c", "\x0b ", "Zz", "0", "é", widen, "@[`{"]
    for size in range(0, 70):
        for _ in range(12):
            text = "".join(rng.choice(pieces) for _ in range(size))[:size] + widen
            assert native.normal_bytes(text, unicodedata.normalize) == python_normal_bytes(text), repr(text)
    text = "x" * 15 + " " + "Y" * 16 + "  " + "q" * 14 + widen  # spaces on the edges of blocks
    assert native.normal_bytes(text, unicodedata.normalize) == python_normal_bytes(text)


@needs_native
@pytest.mark.parametrize("late", ["\ufb01", "\uff21", "e\u0301", "\u1100\u1161"])  # ligature, full-width, mark, jamo
def test_a_character_nfkc_changes_late_in_a_text_normalises_it_from_the_start(late):
    # The fold meets such a character only after it has written the text so far (and grown its
    # buffer): it must start the text again from its NFKC form, leaving earlier messages as they were.
    for text in ("\u00e9" * 3000 + late, "Ω x " * 700 + late + " Ω", "😅" + "a" * 600 + late):
        assert native.normal_bytes(text, unicodedata.normalize) == python_normal_bytes(text)
        record = {"messages": [msg("user", "Héllo  Wörld"), msg("user", text), msg("assistant", text + "!")]}
        assert native.normalise_record(record, unicodedata.normalize) == tuple(python_normalise_record_bytes(record))


LINES = DATA / "fingerprint" / "lines.jsonl"


@needs_native
def test_a_chat_line_is_copied_to_exactly_the_canonical_line_of_its_record():
    from tunegate.dataset.fingerprint import canonical_line

    copied = 0
    for raw in LINES.read_bytes().splitlines(keepends=True):
        line = native.canonical_chat_line(raw)
        if line is not None:
            assert line == canonical_line(orjson.loads(raw)), raw
            copied += 1
    assert copied == 8  # the rest hold what orjson writes otherwise: left to it


@needs_native
def test_many_lines_are_copied_as_each_alone_and_the_copy_stops_where_a_line_is_left_to_orjson():
    from array import array

    raws = LINES.read_bytes().splitlines(keepends=True)
    data = b"".join(raw + b"\n" for raw in raws)  # a blank line after each: line 2k + 1 holds raws[k]
    numbers = array("q", range(1, 2 * len(raws), 2))
    i, at, line, made = 0, 0, 1, []
    while i < len(numbers):
        chunk, i, at, line = native.canonical_lines(data, numbers, i, at, line)
        made.append(chunk)
        if i < len(numbers):  # stopped at a line the caller serialises: at its start, as it says
            assert line == numbers[i] and data[at:].startswith(raws[i]) and native.canonical_chat_line(raws[i]) is None
            made.append(b"<orjson>")
            i, at, line = i + 1, at + len(raws[i]), line + 1
    alone = [native.canonical_chat_line(raw) or b"<orjson>" for raw in raws]
    assert b"".join(made) == b"".join(alone)
    assert native.canonical_lines(data, array("q", [-1, 1]), 0, 0, 1) == (b"", 0, 0, 1)  # a line handed over
    with pytest.raises(ValueError, match="past the data"):
        native.canonical_lines(data, array("q", [2 * len(raws) + 5]), 0, 0, 1)


@needs_native
def test_lines_made_into_a_buffer_kept_by_the_caller_are_the_lines_made_into_a_new_object():
    from array import array

    data = LINES.read_bytes()
    numbers = array("q", range(1, data.count(b"\n") + 1))
    into = bytearray(len(data) + len(numbers))
    chunk, i, at, line = native.canonical_lines(data, numbers, 0, 0, 1)
    assert native.canonical_lines(data, numbers, 0, 0, 1, into)[1:] == (i, at, line) and i > 0
    made = native.canonical_lines(data, numbers, 0, 0, 1, into)[0]
    assert bytes(into[:made]) == chunk
    with pytest.raises(ValueError, match="every line left"):
        native.canonical_lines(data, numbers, 0, 0, 1, bytearray(len(data) // 2))
    both = bytearray(data) + bytearray(len(data) + len(numbers))
    with memoryview(both) as whole, pytest.raises(ValueError, match="apart from data"):
        native.canonical_lines(whole[:len(data)], numbers, 0, 0, 1, whole)  # lines over the bytes still to read


@needs_native
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(), st.text()), max_size=4), st.sampled_from(["orjson", "ascii", "spaced"]))
def test_any_chat_line_is_copied_to_its_canonical_line_or_left_to_orjson(messages, writer):
    from tunegate.dataset.fingerprint import canonical_line

    record = {"messages": [{"role": role, "content": content} for role, content in messages]}
    try:
        if writer == "orjson":
            raw = orjson.dumps(record)
        else:
            raw = json.dumps(record, ensure_ascii=writer == "ascii", separators=(", ", ": ")).encode("utf-8")
        parsed = orjson.loads(raw)
    except (TypeError, orjson.JSONDecodeError, UnicodeEncodeError):  # a lone surrogate: no such line is read
        return
    line = native.canonical_chat_line(raw + b"\n")
    if writer == "orjson" or messages == []:
        assert line is not None
    if line is not None:
        assert line == canonical_line(parsed)
