"""The overlap stage's exact checks: train/validation duplicates, prompt leakage, repeats in train.

tests/data/overlap/validation.jsonl holds one case per line against train.jsonl:
  1 disjoint, 2 exact copy of train:9, 3 case/whitespace variant of train:10,
  4 NFKC variant (full-width letters, no-break space) of train:5, 5 train:11's prompt with another
  answer, 6 near duplicate of train:4, 7 disjoint. train.jsonl:6 repeats train:1 (case/spacing).
"""
from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.paths import DATA as TEST_DATA
from tunegate.dataset.split import feed_observers
from tunegate.overlap import exact
from tunegate.overlap.exact import Match, OverlapObserver, Repeat, SplitHashes, cross_duplicates, repeats
from tunegate.overlap.normalize import normalise_record_bytes
from tunegate.overlap.reported import ReportedKeys
from tunegate.overlap.stage import find_overlap
from tunegate.report import StageResult
from tunegate.spec.model import OverlapSpec

DATA = TEST_DATA / "overlap"
EXACT_ONLY = OverlapSpec(near_duplicates=False)


def run_stage(train: Path, validation: Path, settings: OverlapSpec = EXACT_ONLY, cap: int = 20) -> StageResult:
    files = {"train": train, "validation": validation}
    observer = OverlapObserver()
    feed_observers(files, [observer])
    return find_overlap(files, observer, settings, cap)


def findings(result: StageResult, code: str) -> list:
    return [f for f in result.findings if f.code == code]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def chat(question: str, answer: str) -> dict:
    return {"messages": [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]}


def test_exact_copy_is_an_error_naming_both_places():
    result = run_stage(DATA / "train.jsonl", DATA / "validation.jsonl")
    first = findings(result, "TG301")[0]
    assert (first.severity, first.file, first.line, first.record) == ("error", str(DATA / "validation.jsonl"), 2, 1)
    assert "train.jsonl:9 == validation.jsonl:2" in first.message
    assert result.status == "failed"


def test_case_and_whitespace_variant_is_an_exact_duplicate():
    result = run_stage(DATA / "train.jsonl", DATA / "validation.jsonl")
    assert "train.jsonl:10 == validation.jsonl:3" in findings(result, "TG301")[1].message


def test_unicode_compatibility_variant_is_an_exact_duplicate():
    result = run_stage(DATA / "train.jsonl", DATA / "validation.jsonl")
    assert "train.jsonl:5 == validation.jsonl:4" in findings(result, "TG301")[2].message
    assert [f.line for f in findings(result, "TG301")] == [2, 3, 4]


def test_prompt_in_train_with_another_answer_is_a_warning_by_default():
    result = run_stage(DATA / "train.jsonl", DATA / "validation.jsonl")
    [leak] = findings(result, "TG302")
    assert (leak.severity, leak.line) == ("warning", 5)
    assert "train.jsonl:11 prompt == validation.jsonl:5" in leak.message


def test_prompt_leakage_severity_follows_the_spec():
    settings = OverlapSpec(near_duplicates=False, prompt_leakage_severity="error")
    result = run_stage(DATA / "train.jsonl", DATA / "disjoint_validation.jsonl", settings)
    assert result.status == "passed"  # no leak here: the severity alone changes nothing
    result = run_stage(DATA / "train.jsonl", DATA / "validation.jsonl", settings)
    assert findings(result, "TG302")[0].severity == "error"


def test_records_repeated_inside_train_are_a_warning_with_their_lines():
    result = run_stage(DATA / "train.jsonl", DATA / "disjoint_validation.jsonl")
    [repeat] = findings(result, "TG304")
    assert (repeat.severity, repeat.file, repeat.line) == ("warning", str(DATA / "train.jsonl"), 6)
    assert "train.jsonl:1 is repeated 1 more time(s) in train (line 6)" in repeat.message
    assert result.stats["train_repeats"] == {"groups": 1, "records": 1, "byte_identical": 0}


def test_disjoint_splits_pass_without_overlap_findings():
    result = run_stage(DATA / "train.jsonl", DATA / "disjoint_validation.jsonl", OverlapSpec())
    assert result.status == "passed"
    assert not {"TG301", "TG302", "TG303"} & {f.code for f in result.findings}
    assert (result.stats["exact_duplicates"], result.stats["prompt_leaks"], result.stats["near_duplicates"]) == (0, 0, 0)


def test_findings_past_the_cap_are_still_counted():
    result = run_stage(DATA / "train.jsonl", DATA / "validation.jsonl", cap=1)
    assert len(findings(result, "TG301")) == 1
    assert result.totals_by_code["TG301"] == 3
    assert result.stats["exact_duplicates"] == 3


def test_a_record_copied_several_times_in_train_names_the_first_copy_and_the_count(tmp_path):
    train = write_jsonl(tmp_path / "t.jsonl", [chat("hi", "hello"), chat("other", "thing"), chat("Hi", "Hello")])
    val = write_jsonl(tmp_path / "v.jsonl", [chat("HI ", " hello")])
    [dup] = findings(run_stage(train, val), "TG301")
    assert dup.message.endswith("t.jsonl:1 == v.jsonl:1 (2 copies in train)")


def test_empty_validation_is_an_error():
    result = run_stage(DATA / "train.jsonl", DATA / "empty.jsonl")
    [empty] = result.findings
    assert (empty.code, empty.severity, result.status) == ("TG305", "error", "failed")


def test_validation_that_is_the_training_file_is_an_error():
    result = run_stage(DATA / "train.jsonl", DATA / ".." / "overlap" / "train.jsonl")
    assert [f.code for f in result.findings] == ["TG306"]
    assert result.status == "failed"


def test_stats_count_each_kind_and_time_each_pass():
    result = run_stage(DATA / "train.jsonl", DATA / "validation.jsonl", OverlapSpec())
    s = result.stats
    assert (s["train"]["records"], s["validation"]["records"]) == (12, 7)
    assert (s["exact_duplicates"], s["prompt_leaks"], s["near_duplicates"]) == (3, 1, 1)
    assert set(s["timing_s"]) == {"hashing", "exact", "near"}
    assert s["summary"].startswith("train 12 / validation 7 records: 3 exact, 1 prompt leak(s), 1 near")


def test_near_duplicate_pass_can_be_turned_off():
    result = run_stage(DATA / "train.jsonl", DATA / "validation.jsonl", EXACT_ONLY)
    assert not findings(result, "TG303")
    assert result.stats["near_duplicates"] is None
    assert "near-duplicate pass off" in result.stats["summary"]


def test_records_without_readable_messages_are_skipped_not_raised():
    observer = OverlapObserver()
    odd = [{}, {"messages": "text"}, {"messages": [1, 2]}, {"messages": [{"role": 3, "content": "x"}]},
           {"messages": [{"role": "user", "content": {"a": 1}}]}, {"messages": []}]
    for i, record in enumerate(odd):
        observer.observe("train", i + 1, i, record)
    observer.observe("train", 9, 6, chat("fine", "yes"))
    split = observer.split("train")
    assert (split.seen, split.skipped, len(split)) == (7, 6, 1)


@settings(max_examples=40, deadline=None)
@given(words=st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=8), min_size=3, max_size=12, unique=True),
       data=st.data())
def test_a_normalised_variant_injected_into_validation_is_always_found(words, data):
    train, validation = SplitHashes(), SplitHashes()
    questions = [f"question about {w}" for w in words]
    for i, q in enumerate(questions):
        train.add(i + 1, i, normalise_record_bytes(chat(q, f"answer {i}")))
    pick = data.draw(st.integers(0, len(words) - 1))
    variant = data.draw(st.sampled_from([str.upper, str.title, lambda s: "  " + s.replace(" ", "\u00a0\t")]))
    validation.add(1, 0, normalise_record_bytes(chat("something else entirely", "no")))
    validation.add(2, 1, normalise_record_bytes(chat(variant(questions[pick]), variant(f"answer {pick}"))))
    assert cross_duplicates(train, validation) == [Match(at=1, other=pick, count=1)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=80))
def test_repeat_groups_are_every_later_copy_of_a_first_one_in_file_order(values):
    split = SplitHashes()
    for i, v in enumerate(values):
        split.full += bytes([v]) * 16
        split.lines.append(i + 1)
        split.indexes.append(i)
    expected = []
    for origin, v in enumerate(values):
        if v in values[:origin]:
            continue
        later = [p for p in range(origin + 1, len(values)) if values[p] == v]
        if later:
            expected.append(Repeat(origin, later[:5], len(later)))
    assert repeats(split) == expected



def three_ways(monkeypatch, found):
    """`found()` by the compiled loops (where built), then in Python (a dict or a loop), then in numpy."""
    results = [found()] if exact.compiled is not None else []
    monkeypatch.setattr(exact, "compiled", None)
    results.append(found())
    monkeypatch.setattr(exact, "SMALL_SPLIT", 0)  # every split through numpy
    results.append(found())
    return results


def test_a_splits_repeats_are_the_same_compiled_in_a_dict_and_sorted_in_numpy(monkeypatch):
    # two real files' repeats, and a crowded split's with some copies already reported (TG210)
    observer = OverlapObserver()
    feed_observers({"train": DATA / "train.jsonl", "repeat": DATA / "train_exact_repeat.jsonl"}, [observer])
    crowded = SplitHashes()
    for i in range(120):
        crowded.add(i + 1, i, normalise_record_bytes(chat(f"q{i % 7}", f"a{i % 3}")))
    reported = ReportedKeys()
    for key in range(0, 120, 5):
        reported.add(key)
    cases = [(observer.split("train"), None), (observer.split("repeat"), None), (crowded, reported)]
    got = three_ways(monkeypatch, lambda: [repeats(split, reported=keys) for split, keys in cases])
    in_dict = got[-2]
    assert all(found == in_dict for found in got)
    assert in_dict[1] == [Repeat(0, [5], 1), Repeat(1, [12], 1)]
    assert len(in_dict[2]) == 21 and in_dict[2][0] == Repeat(0, [21, 42, 63, 84], 4)  # 105 was reported


def test_the_joins_compiled_or_searched_by_the_hashes_first_bytes_are_the_ones_of_the_loop(monkeypatch):
    # the compiled joins look a hash up by its first 8 bytes, numpy's search a large train split by
    # them; only a whole hash matches: train records 3 and 4 begin as validation's hashes do and differ after
    train, validation = SplitHashes(), SplitHashes()
    for i in range(8):
        train.add(i + 1, i, normalise_record_bytes(chat(f"question {i}", f"answer {i}")))
    validation.add(1, 0, normalise_record_bytes(chat("question 2", "answer 2")))  # a copy of train's 2
    validation.add(2, 1, normalise_record_bytes(chat("question 5", "another answer")))  # 5's prompt, leaked
    validation.add(3, 2, normalise_record_bytes(chat("question 9", "answer 9")))  # in neither
    for column in ("full", "prompt"):
        for t, v in ((3, 0), (4, 1)):
            own = getattr(train, column)
            own[16 * t:16 * t + 8] = getattr(validation, column)[16 * v:16 * v + 8]
    got = three_ways(monkeypatch, lambda: (exact.cross_duplicates(train, validation),
                                           exact.prompt_leaks(train, validation)))
    in_loop = got[-2]
    assert all(found == in_loop for found in got)
    assert in_loop == ([Match(at=0, other=2, count=1)], [Match(at=1, other=5, count=1)])


def test_a_later_parts_places_count_from_its_start_whether_offset_in_python_or_in_numpy(monkeypatch):
    def joined() -> tuple[list[int], list[int]]:
        whole = SplitHashes()
        for start in (0, 3):  # two parts of three records; the second starts at line 31, key 3
            part = SplitHashes(spills=False)
            for i in range(3):
                part.add(i + 1, i, normalise_record_bytes(chat(f"q{start + i}", "a")))
            whole.extend(part, lines=10 * start, records=start)
        return list(whole.lines), list(whole.indexes)

    in_python = joined()  # a small split: no numpy
    monkeypatch.setattr(exact, "compiled", None)
    monkeypatch.setattr(exact, "SMALL_SPLIT", 0)
    assert joined() == in_python == ([1, 2, 3, 31, 32, 33], [0, 1, 2, 3, 4, 5])
