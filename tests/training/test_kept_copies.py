"""Copies candidates keep for each other: written whole, the most recently used kept, cut writes tidied."""
from __future__ import annotations

import os
import time

from tunegate.training.kept_copies import STALE_WRITE_NS, keep_whole, recently_used


def test_a_copy_is_written_whole_under_its_key(tmp_path):
    keep_whole(tmp_path / "kept", "abc", b'{"key": "abc"}', most=2)
    assert (tmp_path / "kept" / "abc.json").read_bytes() == b'{"key": "abc"}'
    assert [p.name for p in (tmp_path / "kept").iterdir()] == ["abc.json"]  # nothing left aside


def test_the_most_recently_used_copies_stay_and_the_others_go(tmp_path):
    for i, key in enumerate(["first", "second"]):
        keep_whole(tmp_path, key, b"{}", most=2)
        os.utime(tmp_path / f"{key}.json", ns=(time.time_ns() - (10 - i) * 10**9,) * 2)
    recently_used(tmp_path, "first")  # read again just now: the second is now the least recent
    keep_whole(tmp_path, "third", b"{}", most=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.json", "third.json"]


def test_a_write_a_kill_cut_short_goes_after_an_hour_and_not_before(tmp_path):
    (tmp_path / ".old.123").write_bytes(b"half")
    (tmp_path / ".new.456").write_bytes(b"half")
    long_ago = time.time_ns() - STALE_WRITE_NS - 10**9
    os.utime(tmp_path / ".old.123", ns=(long_ago, long_ago))
    keep_whole(tmp_path, "copy", b"{}", most=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".new.456", "copy.json"]


def test_a_folder_that_cannot_hold_a_copy_keeps_nothing_and_says_nothing(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    keep_whole(blocker / "kept", "abc", b"{}", most=2)  # no exception: the next candidate does the work
    assert blocker.read_text() == "not a folder"


def test_threads_writing_the_same_key_leave_one_whole_copy(tmp_path):
    import threading

    bodies = [bytes([65 + i]) * 2_000_000 for i in range(6)]  # six candidates' copies, each 2 MB
    threads = [threading.Thread(target=keep_whole, args=(tmp_path, "same", body, 2)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (tmp_path / "same.json").read_bytes() in bodies
    assert [p.name for p in tmp_path.iterdir()] == ["same.json"]
