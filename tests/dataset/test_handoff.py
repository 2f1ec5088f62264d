"""A worker's bytes reach the gate's process through a file in shared memory, or the pipe."""
from __future__ import annotations

import gc
import os
from pathlib import Path

from tunegate.dataset.handoff import SPARES, hand_over, handoff_folder, taken


class Owner:
    """Stands for the observer whose lifetime bounds the folder."""


def test_bytes_handed_over_through_a_file_arrive_whole_and_the_file_is_left_as_a_spare():
    owner = Owner()
    folder = handoff_folder(owner)
    data = bytearray(b'{"messages":[]}\n' * 100_000)
    kind, (path, length) = hand_over(data, folder)
    assert kind == "file" and Path(path).parent == Path(folder) and length == len(data)
    with taken((kind, (path, length))) as received:
        assert bytes(received) == bytes(data)
    assert not Path(path).exists()
    assert [name.endswith(".spare") for name in os.listdir(folder)] == [True]


def test_a_spare_is_written_over_and_only_the_new_bytes_arrive():
    owner = Owner()
    folder = handoff_folder(owner)
    with taken(hand_over(bytearray(b"x" * 50_000), folder)):
        pass
    kind, (path, length) = hand_over(bytearray(b"short\n"), folder)
    assert kind == "file" and os.path.getsize(path) == 50_000  # the spare's pages, reused
    with taken((kind, (path, length))) as received:
        assert bytes(received) == b"short\n"
    with taken(hand_over(bytearray(b"y" * 70_000), folder)) as received:
        assert bytes(received) == b"y" * 70_000


def test_no_more_spares_are_kept_than_the_limit():
    owner = Owner()
    folder = handoff_folder(owner)
    payloads = [hand_over(bytearray(b"%d\n" % i), folder) for i in range(SPARES + 3)]
    for i, payload in enumerate(payloads):
        with taken(payload) as received:
            assert bytes(received) == b"%d\n" % i
    assert sorted(name.endswith(".spare") for name in os.listdir(folder)) == [True] * SPARES


def test_the_folder_goes_with_its_owner():
    owner = Owner()
    folder = handoff_folder(owner)
    hand_over(bytearray(b"left behind by a part that never joined\n"), folder)
    del owner
    gc.collect()
    assert not Path(folder).exists()


def test_without_a_writable_folder_the_bytes_travel_themselves(tmp_path):
    gone = tmp_path / "removed"
    assert hand_over(bytearray(b"abc\n"), str(gone)) == ("bytes", b"abc\n")
    with taken(("bytes", b"abc\n")) as received:
        assert received == b"abc\n"


def test_an_empty_part_needs_no_file(tmp_path):
    assert hand_over(bytearray(), str(tmp_path)) == ("bytes", b"")
    assert os.listdir(tmp_path) == []


def test_lines_handed_over_as_a_list_arrive_as_one_stream_in_order():
    owner = Owner()
    folder = handoff_folder(owner)
    lines = [b'{"n":%d}\n' % i for i in range(5000)]  # more pieces than one writev takes (IOV_MAX, 1024 on Linux)
    kind, (path, length) = hand_over(lines, folder)
    assert kind == "file" and length == len(b"".join(lines))
    with taken((kind, (path, length))) as received:
        assert bytes(received) == b"".join(lines)
