"""`tunegate convert`: any format to OpenAI chat JSONL, every key kept, the input never overwritten."""
from __future__ import annotations

import json
import shutil

import pytest

from tests.support.paths import DATA
from tunegate.cli.main import main
from tunegate.dataset import validate_dataset
from tunegate.dataset.fingerprint import fingerprint_file

GOOD, BAD = DATA / "formats" / "good", DATA / "formats" / "bad"


@pytest.mark.parametrize("name", ["sharegpt.jsonl", "alpaca.json", "sharegpt.parquet", "prompt_completion_chat.jsonl",
                                  "openai_typed_columns.parquet", "sharegpt_binary_text.parquet"])
def test_the_output_is_clean_openai_chat_with_the_same_digest(tmp_path, name):
    out = tmp_path / "train.jsonl"
    assert main(["convert", str(GOOD / name), str(out), "--to", "messages"]) == 0
    checked = validate_dataset({"train": out})
    assert checked.findings == [] and checked.stats["train"]["format"] == "messages"
    before, after = fingerprint_file(GOOD / name), fingerprint_file(out)
    assert (before.digest, before.records) == (after.digest, after.records)


def test_every_key_is_kept_and_sharegpt_roles_are_renamed(tmp_path):
    out = tmp_path / "train.jsonl.gz"
    assert main(["convert", str(GOOD / "sharegpt.jsonl"), str(out)]) == 0
    import gzip

    records = [json.loads(line) for line in gzip.decompress(out.read_bytes()).splitlines()]
    assert records[0]["messages"][0] == {"role": "user", "content": "How do I reverse a list in Python?"}
    assert records[3]["messages"][0] == {"role": "system", "content": "Reply in the language asked for."}


def test_a_trl_prompts_own_reply_becomes_a_weight_0_turn(tmp_path):
    out = tmp_path / "train.jsonl"
    assert main(["convert", str(GOOD / "prompt_completion_chat.jsonl"), str(out)]) == 0
    second = json.loads(out.read_text().splitlines()[1])["messages"]
    assert [m.get("weight") for m in second] == [None, None, 0, None, None]


def test_the_input_is_never_overwritten(tmp_path, capsys):
    src = tmp_path / "data.jsonl"
    shutil.copy(GOOD / "sharegpt.jsonl", src)
    before = src.read_bytes()
    assert main(["convert", str(src), str(src), "--force"]) == 2
    (tmp_path / "link.jsonl").symlink_to(src)
    assert main(["convert", str(src), str(tmp_path / "link.jsonl"), "--force"]) == 2
    assert src.read_bytes() == before
    assert "refusing to overwrite the input" in capsys.readouterr().err


def test_an_existing_output_needs_force(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("keep me\n")
    assert main(["convert", str(GOOD / "sharegpt.jsonl"), str(out)]) == 2
    assert out.read_text() == "keep me\n"
    assert main(["convert", str(GOOD / "sharegpt.jsonl"), str(out), "--force"]) == 0


def test_an_input_with_errors_is_not_converted(tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(BAD / "sharegpt_robot.jsonl"), str(out)]) == 1
    assert not out.exists() and not list(tmp_path.iterdir())
    assert "conversations[2].from is 'robot'" in capsys.readouterr().err


def test_numbers_a_double_cannot_hold_are_written_back_digit_for_digit(tmp_path):
    out = tmp_path / "train.jsonl"
    assert main(["convert", str(DATA / "dataset" / "good" / "exact_numbers.jsonl"), str(out)]) == 0
    text = out.read_text()
    assert "123456789012345678901234567890" in text and "1.0000000000000000000001e-1" in text
    assert "-9223372036854775809" in text


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_an_output_that_is_not_a_file_is_never_replaced_even_with_force(tmp_path, capsys, kind):
    import os
    import stat

    out = tmp_path / "out"
    out.mkdir() if kind == "folder" else os.mkfifo(out)
    before = os.lstat(out).st_mode
    assert main(["convert", str(GOOD / "sharegpt.jsonl"), str(out), "--force"]) == 2
    assert os.lstat(out).st_mode == before and not stat.S_ISREG(before)
    assert "not a file" in capsys.readouterr().err


def test_binary_that_is_not_text_is_written_as_base64(tmp_path):
    out = tmp_path / "train.jsonl"
    assert main(["convert", str(GOOD / "openai_typed_columns.parquet"), str(out)]) == 0
    first = json.loads(out.read_text().splitlines()[0])
    assert first["thumbnail"] == "iVBORw0KGgoAAA==" and first["handled_in"] == "P0DT1H30M0.5S"
