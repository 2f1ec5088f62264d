"""The dataset stage's behaviour: observers, stats, caps, roles, gzip, line splitting."""
from __future__ import annotations

import gzip
import json
import shutil
import statistics
from collections import Counter

from tests.support.paths import DATA, ROOT
from tunegate.dataset import validate_dataset
from tunegate.dataset.stats import summarize
from tunegate.report import StageResult
from tunegate.stage import RecordObserver

CORPUS = DATA / "dataset"
EXAMPLES = ROOT / "examples" / "data"


class Recorder:
    """A RecordObserver that keeps what it was shown."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, int, dict]] = []
        self.finished: list[str] = []

    def observe(self, role: str, line: int, index: int, record: dict) -> None:
        self.seen.append((role, line, index, record))

    def finish(self, role: str) -> None:
        self.finished.append(role)


def test_recorder_satisfies_the_observer_protocol():
    assert isinstance(Recorder(), RecordObserver)


def test_observers_see_every_object_line_in_order_with_line_and_index(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b'\n{"messages": []}\n[1]\n\n{"messages": [{"role": "user", "content": "a"}, '
                     b'{"role": "assistant", "content": "b"}]}\nnot json\n{"x": 1}\n')
    rec = Recorder()
    validate_dataset({"train": path}, observers=[rec])
    # blank lines take no index; the array and the bad line do (they are records that failed)
    assert [(r, line, i) for r, line, i, _ in rec.seen] == [("train", 2, 0), ("train", 5, 2), ("train", 7, 4)]
    assert rec.seen[0][3] == {"messages": []}
    assert rec.finished == ["train"]


def test_each_role_is_observed_then_finished(tmp_path):
    rec = Recorder()
    validate_dataset({"train": EXAMPLES / "train.jsonl", "validation": EXAMPLES / "validation.jsonl"},
                  observers=[rec, Recorder()])
    roles = Counter(r for r, *_ in rec.seen)
    assert roles == {"train": 85, "validation": 20}
    assert rec.finished == ["train", "validation"]


def test_finish_is_called_for_a_file_that_cannot_be_read(tmp_path):
    rec = Recorder()
    validate_dataset({"validation": tmp_path / "missing.jsonl"}, observers=[rec])
    assert rec.seen == [] and rec.finished == ["validation"]


def test_only_the_given_role_is_checked():
    result = validate_dataset({"validation": EXAMPLES / "validation.jsonl"})
    assert list(result.stats) == ["validation"] and result.status == "passed"


def test_no_files_skips_the_stage():
    assert validate_dataset({}).status == "skipped"


def test_stats_match_an_independent_count():
    path = EXAMPLES / "train.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    stats = validate_dataset({"train": path}).stats["train"]
    turns = [len(r["messages"]) for r in records]
    assert stats["records"] == len(records) and stats["blank_lines"] == 0
    assert stats["turns"]["min"] == min(turns) and stats["turns"]["max"] == max(turns)
    assert stats["turns"]["median"] == statistics.median_low(turns)
    for role in ("system", "user", "assistant"):
        chars = [len(m["content"]) for r in records for m in r["messages"] if m["role"] == role]
        assert stats["roles"][role] == len(chars)
        assert stats["chars_per_role"][role]["max"] == max(chars)
        assert stats["chars_per_role"][role]["median"] == statistics.median_low(chars)


def test_blank_lines_are_counted_and_numbered():
    result = validate_dataset({"train": CORPUS / "good" / "blank_lines.jsonl"})
    assert result.stats["train"]["blank_lines"] == 4 and result.stats["train"]["lines"] == 6


def test_quantiles_are_nearest_rank():
    assert summarize(Counter(range(1, 101))) == {"min": 1, "median": 50, "p95": 95, "max": 100}
    assert summarize(Counter({7: 1})) == {"min": 7, "median": 7, "p95": 7, "max": 7}
    assert summarize(Counter()) == {}


def test_every_problem_is_counted_but_only_cap_are_kept(tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                                     {"role": "user", "content": "again"}]}) + "\n"
                            for i in range(30)))
    result = validate_dataset({"train": path}, cap=5)
    assert result.totals_by_code == {"TG204": 30}
    assert [f.line for f in result.findings] == [1, 2, 3, 4, 5]


def test_findings_past_the_cap_skip_the_column_search_but_keep_the_count(tmp_path):
    path = tmp_path / "empty_replies.jsonl"
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                                     {"role": "assistant", "content": ""}]}) + "\n"
                            for i in range(3)))
    result = validate_dataset({"train": path}, cap=1)
    assert result.totals_by_code == {"TG207": 3} and result.findings[0].column > 1


def test_gzip_is_recognised_by_its_bytes_not_its_name(tmp_path):
    renamed = tmp_path / "data.jsonl"
    shutil.copy(CORPUS / "good" / "compressed.jsonl.gz", renamed)
    result = validate_dataset({"train": renamed})
    assert result.status == "passed" and result.stats["train"]["gzip"] is True


def test_a_plain_file_named_gz_is_read_as_plain(tmp_path):
    named = tmp_path / "data.jsonl.gz"
    shutil.copy(EXAMPLES / "validation.jsonl", named)
    result = validate_dataset({"validation": named})
    assert result.status == "passed" and result.stats["validation"]["gzip"] is False


def test_gzip_content_gets_the_same_findings_with_the_same_lines(tmp_path):
    bad = CORPUS / "bad" / "last_from_user.jsonl"
    packed = tmp_path / "last.jsonl.gz"
    packed.write_bytes(gzip.compress(bad.read_bytes()))
    plain, zipped = validate_dataset({"t": bad}), validate_dataset({"t": packed})
    assert [(f.code, f.line, f.column) for f in zipped.findings] == \
           [(f.code, f.line, f.column) for f in plain.findings]


def test_unicode_line_separators_inside_strings_do_not_split_records():
    result = validate_dataset({"train": CORPUS / "good" / "unicode_line_separators.jsonl"})
    assert result.stats["train"]["records"] == 2 and result.findings == []


def test_crlf_duplicates_of_lf_records_are_still_duplicates(tmp_path):
    line = b'{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}'
    path = tmp_path / "mixed_endings.jsonl"
    path.write_bytes(line + b"\n" + line + b"\r\n" + b"  " + line)
    result = validate_dataset({"train": path})
    assert [(f.code, f.line) for f in result.findings] == [("TG210", 2), ("TG210", 3)]
    assert result.stats["train"]["duplicates"] == 2


def test_duplicate_keys_are_found_at_any_depth(tmp_path):
    path = tmp_path / "deep_dup.jsonl"
    path.write_bytes(b'{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], '
                     b'"meta": {"source": {"id": 1, "id": 2}}}\n')
    result = validate_dataset({"train": path})
    assert [(f.code, f.message.split()[1]) for f in result.findings] == [("TG226", "'id'")]


def test_duplicate_keys_with_spaces_before_colons_in_a_bad_record(tmp_path):
    path = tmp_path / "spaced.jsonl"
    path.write_bytes(b'{"messages" : [{"role" : "user", "role" : "user", "content" : "a"}]}\n')
    codes = {f.code for f in validate_dataset({"train": path}).findings}
    assert codes == {"TG202", "TG226"}


def test_stage_result_is_a_stage_result_named_dataset():
    result = validate_dataset({"train": EXAMPLES / "train.jsonl"})
    assert isinstance(result, StageResult) and result.name == "dataset" and result.duration_s >= 0


def test_duplicate_keys_in_a_valid_record_written_with_spaces_before_colons(tmp_path):
    path = tmp_path / "spaced_valid.jsonl"
    line = ('{"messages" : [{"role" : "user", "content" : "a", "content" : "b"}, '
            '{"role" : "assistant", "content" : "c"}]}')
    path.write_text(line + "\n")
    found = validate_dataset({"train": path}).findings
    assert [(f.code, f.column) for f in found] == [("TG226", line.index('"content" : "b"') + 1)]


def test_quoted_json_inside_content_is_not_a_duplicate_key(tmp_path):
    path = tmp_path / "quoted.jsonl"
    content = 'Send {"role": "x", "role": "y"} and "a": "b" as the body'
    path.write_text(json.dumps({"messages": [{"role": "user", "content": content},
                                             {"role": "assistant", "content": 'ok "role": fine'}]}) + "\n")
    assert validate_dataset({"train": path}).findings == []


def test_records_nested_past_the_limit_are_reported_and_withheld_from_observers(tmp_path):
    ok = {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
    deep: object = "leaf"
    for _ in range(100):  # orjson parses 100 levels; 64 is the stage's limit
        deep = [deep]
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps({**ok, "meta": deep}) + "\n" + json.dumps({**ok, "meta": {"a": [[1]]}}) + "\n")
    rec = Recorder()
    result = validate_dataset({"train": path}, observers=[rec])
    assert [(f.code, f.line) for f in result.findings] == [("TG224", 1)]
    assert [line for _, line, _, _ in rec.seen] == [2]


def test_extra_keys_inside_messages_are_checked_for_depth_too(tmp_path):
    deep: object = 1
    for _ in range(70):
        deep = {"k": deep}
    path = tmp_path / "deep_message.jsonl"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "a", "tool": deep},
                                             {"role": "assistant", "content": "b"}]}) + "\n")
    assert [f.code for f in validate_dataset({"train": path}).findings] == ["TG224"]
