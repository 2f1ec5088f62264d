"""What the data stages put on the board: a file read in parts shows the bytes merged so far."""
from __future__ import annotations

import io
import re

import pytest

from tests.support.paths import EXAMPLES
from tunegate import progress
from tunegate.dataset.stage import validate_dataset
from tunegate.progress.draw import LinePainter, visible


@pytest.fixture
def screen(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    stream = io.StringIO()
    progress.enable(stream, delay_s=0.0, painter=LinePainter(stream))
    yield stream
    progress.disable()


def test_a_file_read_in_parts_shows_its_parts_and_bytes(screen):
    train = EXAMPLES / "data" / "train.jsonl"  # 43 kB: 4 kB parts put it over the size read in parts
    result = validate_dataset({"train": train}, workers=2, part_bytes=4096)
    assert result.status == "passed" and result.stats["train"]["records"] == 85
    frames = visible(screen.getvalue()).split("\r")
    parts = [f for f in frames if re.search(r"reading train\.jsonl in \d+ parts", f)]
    assert parts, frames[-5:]  # spawning the workers alone outlasts one 0.1 s frame
    assert re.search(r"\d+%\s+[\d.]+ k?B/42\.0 kB", parts[-1]), parts[-1]  # of the file's 43,007 bytes
