"""CSV files read as `load_dataset("csv")` reads them (pandas.read_csv's defaults), each row at its first line."""
from __future__ import annotations

import gzip
import io
import math

import pytest

from tests.support.paths import DATA
from tunegate.dataset import validate_dataset
from tunegate.dataset.fingerprint import fingerprint_file
from tunegate.dataset.records import iter_chats, iter_records
from tunegate.dataset.csv_rows import CsvTable
from tunegate.errors import BrokenContainer, UnreadableRecord

FORMATS = DATA / "formats"
GOOD = sorted((FORMATS / "good").glob("*.csv"))


def _pandas_records(path):
    """The reference: what datasets' CSV builder hands a trainer (pandas' defaults, nulls left out)."""
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(path, dtype=str)
    return [{k: v for k, v in row.items() if not (isinstance(v, float) and math.isnan(v))}
            for row in frame.to_dict("records")]


def _findings(tmp_path, text: bytes, name: str = "d.csv"):
    (tmp_path / name).write_bytes(text)
    return validate_dataset({"train": tmp_path / name}).findings


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_a_csv_file_reads_as_the_records_pandas_reads(path):
    assert [record for _, _, record in iter_records(path)] == _pandas_records(path)


def test_missing_value_strings_and_short_rows_read_as_pandas_reads_them(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("prompt,completion,source\nNA,x,\n\"\",None\nHi,there,web\n", encoding="utf-8")
    assert [record for _, _, record in iter_records(path)] == _pandas_records(path)


def test_a_row_starts_at_its_own_line_past_quoted_newlines_and_blank_lines():
    path = FORMATS / "good" / "alpaca.csv"
    lines = [line for line, _, _ in iter_records(path)]
    text = path.read_text(encoding="utf-8").splitlines()
    assert [text[n - 1].split(",")[0] for n in lines] == [
        "Describe a process of making crepes.", "Translate the sentence into French.",
        "Give three tips for staying healthy.", "Punctuate the quote."]
    assert lines[3] - lines[2] == 3  # the third reply spans three lines


def test_a_finding_in_a_row_is_placed_at_its_line_without_a_json_column(tmp_path):
    [finding] = _findings(tmp_path, b"instruction,output\nName a colour.,Blue.\n\n\"Say\nhi\",{{name}} says hi\n")
    assert (finding.code, finding.line, finding.column) == ("TG266", 4, None)
    assert finding.place().endswith("d.csv:4")


def test_a_utf8_bom_is_read_past_in_a_csv_file_but_not_in_jsonl(tmp_path):
    assert _findings(tmp_path, "\ufeffprompt,completion\nThe sky is, blue.\n".encode()) == []
    codes = [f.code for f in _findings(tmp_path, '\ufeff{"prompt": "a", "completion": "b"}\n'.encode(), "d.jsonl")]
    assert codes == ["TG244"]


def test_bytes_that_are_not_utf8_stop_the_read_at_their_line_and_column(tmp_path):
    [finding] = _findings(tmp_path, b"prompt,completion\nCaf\xe9 means,coffee\nx,y\n")
    assert (finding.code, finding.line, finding.column) == ("TG221", 2, 4)


def test_a_row_wider_than_the_header_is_an_error_and_not_a_record(tmp_path):
    found = _findings(tmp_path, b"prompt,completion\na,b\nc,d,e\nf,g\n")
    assert [(f.code, f.line) for f in found] == [("TG275", 3)]
    assert "Expected 2 fields in line 3, saw 3" in found[0].message


def test_a_first_row_wider_than_the_header_says_pandas_shifts_every_column(tmp_path):
    [finding] = _findings(tmp_path, b"prompt,completion\n0,a,b\n1,c,d\n")[:1]
    assert finding.code == "TG275" and "index" in finding.message and finding.line == 2


def test_the_strict_reader_refuses_a_row_wider_than_the_header(tmp_path):
    (tmp_path / "d.csv").write_bytes(b"prompt,completion\na,b\nc,d,e\n")
    with pytest.raises(UnreadableRecord, match="d.csv:3"):
        list(iter_records(tmp_path / "d.csv", strict=True))


def test_a_header_without_rows_is_no_dataset(tmp_path):
    [finding] = _findings(tmp_path, b"instruction,input,output\r\n")
    assert finding.code == "TG242" and "header but no rows" in finding.message


def test_a_gzipped_csv_reads_as_the_plain_one(tmp_path):
    plain = FORMATS / "good" / "alpaca.csv"
    (tmp_path / "alpaca.csv.gz").write_bytes(gzip.compress(plain.read_bytes()))
    assert list(iter_records(tmp_path / "alpaca.csv.gz")) == list(iter_records(plain))
    assert validate_dataset({"train": tmp_path / "alpaca.csv.gz"}).status == "passed"


def test_a_line_over_the_limit_stops_the_read_there():
    table = CsvTable(io.BufferedReader(io.BytesIO(b"prompt,completion\na,b\n" + b"x" * 5000 + b",y\n")), 1000)
    rows = table.rows()
    assert next(rows).record == {"prompt": "a", "completion": "b"}
    with pytest.raises(BrokenContainer) as broken:
        next(rows)
    assert (broken.value.kind, broken.value.line) == ("size", 3)


def test_the_rows_become_chats_and_the_digest_follows_the_text():
    path = FORMATS / "good" / "alpaca.csv"
    chats = list(iter_chats(path))
    assert chats[1].messages == [{"role": "user", "content": "Translate the sentence into French.\n"
                                  "The library opens at nine."},
                                 {"role": "assistant", "content": "La bibliothèque ouvre à neuf heures."}]
    assert fingerprint_file(path) != fingerprint_file(FORMATS / "good" / "prompt_completion_excel.csv")


def test_a_validation_csv_row_that_is_a_train_jsonl_record_is_an_exact_overlap(tmp_path):
    from tunegate.gate import check

    data = DATA / "configs" / "data"
    rows = (data / "alpaca_train.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "val.csv").write_text(rows[0] + rows[2] + rows[5], encoding="utf-8")  # the header and two rows
    report = check(train=data / "alpaca_train.jsonl", validation=tmp_path / "val.csv")
    leaks = [f for f in report.findings if f.code == "TG301"]
    assert [(f.line, f.column) for f in leaks] == [(2, None), (3, None)]
    assert "alpaca_train.jsonl:2 == val.csv:2" in leaks[0].message


@pytest.mark.parametrize(("sep", "named"), [(";", "semicolons"), ("\t", "tabs")])
def test_a_file_separated_by_another_character_says_so_at_its_header(tmp_path, sep, named):
    found = _findings(tmp_path, f"instruction{sep}input{sep}output\nSay hi.{sep}{sep}Hi!\n".encode())
    assert [(f.code, f.line) for f in found][:1] == [("TG279", 1)]
    assert named in found[0].message and "split on commas only" in found[0].message


def test_hostile_csv_text_reads_as_pandas_reads_it_or_is_refused_where_pandas_fails(tmp_path):
    """A property over 300 seeded files of quotes, separators, line ends and missing-value strings."""
    pytest.importorskip("pandas")
    import random

    rng = random.Random(29)
    atoms = ["a", "b c", ",", '"', '""', "\n", "\r\n", " ", "NA", "None", 'x"y', "é", "\t", "1", "#", "'", ",,"]
    for n in range(300):
        path = tmp_path / f"f{n}.csv"
        path.write_text("prompt,completion\n" + "".join(rng.choice(atoms) for _ in range(rng.randint(1, 25))),
                        encoding="utf-8")
        found = validate_dataset({"train": path}).findings
        breaks = [f for f in found if f.code in {"TG275", "TG276"}]
        try:
            expected = _pandas_records(path)
        except Exception:  # pandas' ParserError: the load fails, so tunegate must refuse the file
            assert breaks, path.read_text(encoding="utf-8")
            continue
        if any(f.code == "TG275" and f.record == 0 for f in breaks):
            continue  # pandas silently took the first field(s) as the index: refused on purpose
        assert not breaks and [r for _, _, r in iter_records(path)] == expected, path.read_text(encoding="utf-8")


def test_a_tsv_file_reads_with_tabs_as_load_dataset_reads_it():
    pd = pytest.importorskip("pandas")
    path = DATA / "configs" / "data" / "pc_tsv" / "train.tsv"
    frame = pd.read_csv(path, sep="\t", dtype=str)
    assert [record for _, _, record in iter_records(path)] == frame.to_dict("records")
    assert validate_dataset({"train": path}).stats["train"]["container"] == "csv"


def test_a_comma_separated_file_named_tsv_says_so_at_its_header(tmp_path):
    found = _findings(tmp_path, b"prompt,completion\nThe sky is, blue.\n", "d.tsv")
    assert found[0].code == "TG279" and "separated by commas" in found[0].message and "on tabs only" in found[0].message
