"""The path guard never waits on a file forever: kernel files are refused by their file system, and a
file off the local disks must answer a first read within a deadline.

/proc/kmsg is the real case (a "regular" file whose read waits for the next kernel message); each
test that could block runs its work in a subprocess with a timeout, or under a short deadline.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tunegate import pathguard
from tunegate.errors import UsageError
from tunegate.pathguard import answers_in_time, open_regular, refusal

KMSG = Path("/proc/kmsg")
needs_kmsg = pytest.mark.skipif(not KMSG.exists(), reason="no /proc/kmsg (not Linux)")


@needs_kmsg
def test_a_kernel_file_that_blocks_is_refused_by_its_file_system_without_being_read():
    assert "kernel's proc file system" in refusal(KMSG)
    with pytest.raises(UsageError, match="proc file system"):
        open_regular(KMSG)


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="no sysfs")
def test_a_sysfs_file_is_refused_too():
    found = next((p for p in Path("/sys/kernel").iterdir() if p.is_file()), None)
    if found is None:
        pytest.skip("no file under /sys/kernel")
    assert "sysfs file system" in refusal(found)


def test_a_file_on_the_local_disk_is_read(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(b"{}\n")
    assert refusal(tmp_path / "a.jsonl") is None
    with open_regular(tmp_path / "a.jsonl") as f:
        assert f.read() == b"{}\n"


def test_a_read_that_does_not_answer_is_given_up_at_the_deadline(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    fd = os.open(tmp_path / "fifo", os.O_RDWR)  # its own writer: a read waits for bytes that never come
    try:
        start = time.monotonic()
        assert not answers_in_time(lambda: os.read(fd, 1), deadline_s=0.2)
        assert time.monotonic() - start < 2
        assert answers_in_time(lambda: b"", deadline_s=0.2)
    finally:
        os.write(fd, b"x")  # let the abandoned read end
        os.close(fd)


@pytest.fixture
def stalled_mount(monkeypatch, tmp_path) -> Path:
    """A file on a mount that has stopped answering (a FUSE or NFS server gone): its first read blocks."""
    release = threading.Event()
    monkeypatch.setattr(pathguard, "file_system", lambda device: "fuse.sshfs")
    monkeypatch.setattr(pathguard, "READ_DEADLINE_S", 0.3)
    monkeypatch.setattr(pathguard.os, "pread", lambda fd, n, offset: release.wait(30))
    path = tmp_path / "train.jsonl"
    path.write_bytes(b'{"messages": []}\n')
    yield path
    release.set()


def test_a_stalled_mount_is_a_usage_error_naming_the_file_within_the_deadline(stalled_mount):
    start = time.monotonic()
    with pytest.raises(UsageError, match="did not answer a read within") as caught:
        open_regular(stalled_mount)
    assert str(stalled_mount) in str(caught.value) and time.monotonic() - start < 2


def test_a_stalled_data_file_is_a_tg240_finding(stalled_mount):
    from tunegate.dataset import validate_dataset

    result = validate_dataset({"train": stalled_mount}, cap=5)
    assert [(f.code, "did not answer" in f.message) for f in result.findings] == [("TG240", True)]


def test_a_mount_that_answers_is_read_through_the_deadline(monkeypatch, tmp_path):
    monkeypatch.setattr(pathguard, "file_system", lambda device: "nfs4")
    (tmp_path / "a.jsonl").write_bytes(b"{}\n")
    with open_regular(tmp_path / "a.jsonl") as f:
        assert f.read() == b"{}\n"


@needs_kmsg
@pytest.mark.parametrize("argv", [["check", "/proc/kmsg"], ["check", "--train", "/proc/kmsg"], ["lint", "/proc/kmsg"],
                                  ["fingerprint", "/proc/kmsg"], ["runs", "--spec", "/proc/kmsg"]],
                         ids=" ".join)
def test_no_command_waits_on_proc_kmsg(argv):
    proc = subprocess.run([sys.executable, "-m", "tunegate", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode in (1, 2) and "proc file system" in proc.stdout + proc.stderr, proc.stderr


def test_two_names_of_one_file_are_the_same_file_and_a_copy_is_not(tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text("{}\n")
    (tmp_path / "link.jsonl").symlink_to(data)
    (tmp_path / "copy.jsonl").write_text("{}\n")
    assert pathguard.same_file(data, tmp_path / "link.jsonl")
    assert not pathguard.same_file(data, tmp_path / "copy.jsonl")


def test_paths_no_file_system_can_follow_are_compared_by_name_without_raising(tmp_path):
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    assert pathguard.same_file(tmp_path / "loop-a", tmp_path / "loop-a")
    assert not pathguard.same_file(tmp_path / "loop-a", tmp_path / "loop-b")
    assert not pathguard.same_file("bad\0name", tmp_path / "loop-a")
