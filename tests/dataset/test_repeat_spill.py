"""Byte-identical repeats (TG210) found on disk past a size report what the in-memory index reports.

`TUNEGATE_REPEAT_SPILL_RECORDS` lowers the records a file's TG210 index holds in memory, so the
spilled join (tunegate.dataset.repeat_spill) runs on small files here: findings in order, totals
(in the order codes were first counted), stats and the repeats handed to the overlap stage must
be those of the in-memory index, read in one process, in parts, and for a split of several files.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.dataset.test_parallel import mixed_file
from tunegate.dataset import repeat_spill
from tunegate.dataset.repeats import REPEATS_VARIABLE
from tunegate.dataset.stage import validate_dataset
from tunegate.overlap.exact import OverlapObserver


def _read(files: dict[str, Path | list[Path]], workers: int, part_bytes: int | None = None, cap: int = 5):
    overlap = OverlapObserver()
    stage = validate_dataset(files, cap, [overlap], workers=workers, part_bytes=part_bytes)
    reported = {role: keys.all().tolist() for role, keys in overlap.exact_repeats.items()}
    return stage.model_dump(exclude={"duration_s"}), list(stage.totals_by_code), reported


def _spills(monkeypatch) -> list[Path]:
    """The folders of every index that goes to disk from now on."""
    made = []
    real = repeat_spill.RepeatSpill.__init__

    def spy(self, *args):
        real(self, *args)
        made.append(self.folder)

    monkeypatch.setattr(repeat_spill.RepeatSpill, "__init__", spy)
    return made


def _both(monkeypatch, files, **how):
    kept = _read(files, **how)
    monkeypatch.setenv(REPEATS_VARIABLE, "7")
    monkeypatch.setattr(repeat_spill, "BUCKET_KEYS", 16)  # many buckets and ranges of repeats
    monkeypatch.setattr(repeat_spill, "RANGE", 10)
    monkeypatch.setattr(repeat_spill, "CHUNK_ROWS", 8)
    made = _spills(monkeypatch)
    spilled = _read(files, **how)
    assert made, "no index went to disk"
    return kept, spilled


@pytest.mark.parametrize("cap", [1, 5, 1000])
def test_a_file_read_in_one_process_reports_the_same_repeats_from_disk(tmp_path, monkeypatch, cap):
    files = {"train": mixed_file(tmp_path / "mixed.jsonl")}
    kept, spilled = _both(monkeypatch, files, workers=1, cap=cap)
    assert spilled == kept
    assert kept[0]["totals_by_code"]["TG210"] > 5


def test_a_json_array_with_records_sharing_lines_reports_the_same_repeats_from_disk(tmp_path, monkeypatch):
    good = '{"messages": [{"role": "user", "content": "q%d"}, {"role": "assistant", "content": "a"}]}'
    bad = '{"messages": [{"role": "user", "content": "q%d"}]}'  # no reply: a finding of its own
    rows = [", ".join((good if n % 3 else bad) % (n % 11) for n in range(start, start + 4))
            for start in range(0, 160, 4)]
    path = tmp_path / "array.json"
    path.write_text("[" + ",\n".join(rows) + "]\n")
    kept, spilled = _both(monkeypatch, {"train": path}, workers=1, cap=30)
    assert spilled == kept
    assert kept[0]["totals_by_code"]["TG210"] > 30


@pytest.mark.parametrize("part_bytes", [97, 4096])
def test_a_file_read_in_parts_reports_the_same_repeats_from_disk(tmp_path, monkeypatch, part_bytes):
    files = {"train": mixed_file(tmp_path / "mixed.jsonl")}
    kept, spilled = _both(monkeypatch, files, workers=2, part_bytes=part_bytes)
    assert spilled == kept
    assert kept[0] == _read(files, workers=1)[0]  # and the same report as one read


def test_a_split_of_several_files_reports_the_same_repeats_from_disk(tmp_path, monkeypatch):
    first, second = mixed_file(tmp_path / "a.jsonl"), mixed_file(tmp_path / "b.jsonl")
    small = tmp_path / "small.jsonl"
    small.write_bytes(b'{"messages": [{"role": "user", "content": "hi"}, '
                      b'{"role": "assistant", "content": "yo"}]}\n' * 3)
    files = {"train": [small, first, second], "validation": [second, small]}
    for how in ({"workers": 1}, {"workers": 2, "part_bytes": 1000}):
        monkeypatch.delenv(REPEATS_VARIABLE, raising=False)
        kept, spilled = _both(monkeypatch, files, **how)
        assert spilled == kept


def test_an_index_on_disk_leaves_no_temporary_files(tmp_path, monkeypatch):
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setenv(REPEATS_VARIABLE, "3")
    made = _spills(monkeypatch)
    _read({"train": mixed_file(tmp_path / "mixed.jsonl")}, workers=1)
    assert made and list((tmp_path / "tmp").iterdir()) == []


BUDGET_MB = 150
RECORDS = 2_200_000  # past 2**21 keys the in-memory index alone took 128 MB (264 MB for the check at 3 M)
REPEATED = (0, 700_000, 1_400_000, 2_100_000)  # records copied byte for byte at the end: a few TG210


@pytest.fixture(scope="module")
def millions(tmp_path_factory) -> Path:
    """A gzip of RECORDS short valid chat records, each unique, with a few exact copies at the end."""
    import gzip

    line = b'{"messages":[{"role":"user","content":"question %d"},{"role":"assistant","content":"answer %d"}]}\n'
    data = tmp_path_factory.mktemp("millions") / "train.jsonl.gz"
    with gzip.open(data, "wb", compresslevel=1) as f:
        for start in range(0, RECORDS, 100_000):
            f.write(b"".join(line % (i, i) for i in range(start, min(start + 100_000, RECORDS))))
        f.write(b"".join(line % (i, i) for i in REPEATED))
    return data


@pytest.mark.slow
@pytest.mark.parametrize("role", ["train", "validation"])
def test_a_check_of_millions_of_records_stays_in_150_mb(millions, role):
    from tests.support.paths import DATA
    from tests.support.peak_rss import run_measured, tunegate_args
    import json

    small = DATA / "flows" / ("validation.jsonl" if role == "train" else "train.jsonl")
    files = {"train": millions, "validation": small} if role == "train" else {"train": small, "validation": millions}
    done = run_measured(tunegate_args("check", "--train", files["train"], "--validation", files["validation"],
                                      "--json"), timeout_s=400)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    [dataset] = [s for s in json.loads(done.stdout)["stages"] if s["name"] == "dataset"]
    assert dataset["totals_by_code"].get("TG210") == len(REPEATED)
    assert done.peak_mb <= BUDGET_MB, f"peak RSS {done.peak_mb:.0f} MB"


def test_a_temporary_folder_that_cannot_be_written_is_an_environment_error(tmp_path, monkeypatch):
    from tunegate.errors import OutputError

    monkeypatch.setenv(REPEATS_VARIABLE, "2")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "missing"))
    with pytest.raises(OutputError, match="set TMPDIR"):
        _read({"train": mixed_file(tmp_path / "mixed.jsonl")}, workers=1)
