"""`convert_file`: any format to OpenAI chat JSONL as a library call, its digest checked, the input never replaced.

The command's own behaviour (exit codes, messages, the input checked first) is tests/cli/test_convert.py.
"""
from __future__ import annotations

import gzip
import json
import shutil

import pytest

from tests.support.paths import DATA
from tunegate.dataset import validate_dataset
from tunegate.dataset.convert import convert_file
from tunegate.dataset.fingerprint import fingerprint_file
from tunegate.errors import TunegateError, UsageError

GOOD = DATA / "formats" / "good"


def test_every_record_is_written_in_chat_form_and_counted(tmp_path):
    out = tmp_path / "train.jsonl"
    assert convert_file(GOOD / "alpaca.json", out) == fingerprint_file(GOOD / "alpaca.json").records
    checked = validate_dataset({"train": out})
    assert checked.findings == [] and checked.stats["train"]["format"] == "messages"
    assert fingerprint_file(out).digest == fingerprint_file(GOOD / "alpaca.json").digest


def test_a_written_file_that_differs_from_the_records_read_is_removed_as_our_bug(tmp_path, monkeypatch):
    """The input is read once and digested as it is written; the output, read back, must match."""
    import types

    import orjson

    import tunegate.dataset.convert as convert

    def dropping_a_message(record, **kwargs):  # the writer's serialiser only; the digests keep orjson's
        return orjson.dumps({**record, "messages": record["messages"][:1]}, **kwargs)

    monkeypatch.setattr(convert, "orjson", types.SimpleNamespace(dumps=dropping_a_message))
    out = tmp_path / "train.jsonl"
    with pytest.raises(TunegateError, match="the written file does not match .*digests differ.*it was removed"):
        convert_file(GOOD / "alpaca.json", out)
    assert not out.exists()


def test_a_declared_format_is_read_as_declared_and_gz_is_compressed(tmp_path):
    out = tmp_path / "train.jsonl.gz"
    convert_file(GOOD / "sharegpt.jsonl", out, "sharegpt")
    first = json.loads(gzip.decompress(out.read_bytes()).splitlines()[0])
    assert first["messages"][0] == {"role": "user", "content": "How do I reverse a list in Python?"}


def test_the_input_is_never_replaced_even_when_forced(tmp_path):
    src = tmp_path / "data.jsonl"
    shutil.copy(GOOD / "sharegpt.jsonl", src)
    with pytest.raises(UsageError, match="refusing to overwrite the input"):
        convert_file(src, src, force=True)
    assert src.read_bytes() == (GOOD / "sharegpt.jsonl").read_bytes()


def test_an_existing_output_is_replaced_only_when_forced(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("keep me\n")
    with pytest.raises(UsageError, match="pass --force"):
        convert_file(GOOD / "sharegpt.jsonl", out)
    assert out.read_text() == "keep me\n"
    assert convert_file(GOOD / "sharegpt.jsonl", out, force=True) > 0


def test_a_folder_is_never_replaced(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(UsageError, match="is a folder, not a file"):
        convert_file(GOOD / "sharegpt.jsonl", tmp_path / "out", force=True)
    assert (tmp_path / "out").is_dir()


def test_the_board_shows_the_records_being_written_and_the_digest_check(tmp_path, monkeypatch):
    import io

    from tunegate import progress
    from tunegate.progress.draw import LinePainter, visible

    monkeypatch.setenv("COLUMNS", "200")
    screen = io.StringIO()
    progress.enable(screen, delay_s=0.0, painter=LinePainter(screen))
    try:
        convert_file(GOOD / "alpaca.json", tmp_path / "out.jsonl")
    finally:
        progress.disable()
    frames = visible(screen.getvalue())
    assert "writing out.jsonl" in frames and "checking out.jsonl against alpaca.json" in frames, frames[-300:]
