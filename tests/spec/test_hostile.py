"""Hostile specs: every tag we do not read, nesting, alias bombs, size, and paths that are not files.

Each is a finding at its line (or a usage error naming the path), never an internal error, a
constructed object, a hang or a runaway read.
"""
from __future__ import annotations

import os
import time

import pytest

from tests.support.paths import DATA
from tunegate.errors import UsageError
from tunegate.spec import yaml_loader
from tunegate.spec.check import MAX_SPEC_BYTES, parse_spec

HOSTILE = DATA / "spec" / "hostile"
GOOD = DATA / "spec" / "good.yaml"

# file -> what the finding's message names. The tag sits on model.revision, line 5, column 13.
TAGS = {
    "python_object": "'!!python/object:os.system' is not supported",
    "python_name": "'!!python/name:os.system' is not supported",
    "python_apply": "'!!python/object/apply:os.mkdir' is not supported on a list",
    "local_tag": "'!foo' is not supported",
    "int_abc": "'abc' is not a valid '!!int'",
    "bool_maybe": "'maybe' is not a valid '!!bool'",
    "timestamp_nope": "'!!timestamp' is not supported",
    "timestamp_date": "'!!timestamp' is not supported",
    "set_scalar": "'!!set' is not supported",
    "set_mapping": "'!!set' is not supported on a mapping",
    "binary": "'!!binary' is not supported",
    "omap": "'!!omap' is not supported on a list",
    "float_abc": "'abc' is not a valid '!!float'",
    "str_on_mapping": "'!!str' is not supported on a mapping",
    "int_5000_digits": "an integer of 5,000 digits is too long to read",
}


@pytest.mark.parametrize("name", sorted(TAGS))
def test_an_unsupported_tag_is_a_tg130_finding_at_its_line(name):
    parsed = parse_spec(HOSTILE / f"{name}.yaml")
    assert not parsed.valid
    (finding,) = parsed.result.findings
    assert (finding.code, finding.line, finding.column, finding.key) == ("TG130", 5, 13, "model.revision")
    assert TAGS[name] in finding.message and finding.hint


def test_a_tag_never_constructs_an_object(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # python_apply.yaml would create ./tunegate-pwned if it ran
    parsed = parse_spec(HOSTILE / "python_apply.yaml")
    assert parsed.raw["model"]["revision"] is None
    assert list(tmp_path.iterdir()) == []


def test_plain_values_and_core_tags_that_fit_still_read():
    located = yaml_loader.load("a: !!float 5\nb: !!str 7\nc: !!int 0x1f\nd: !!bool true\ne: !!null ~\nf: .inf\n")
    assert located.data == {"a": 5.0, "b": "7", "c": 31, "d": True, "e": None, "f": float("inf")}
    assert located.refused == []


def test_flow_nesting_1000_deep_is_tg131_not_a_recursion_error():
    (finding,) = parse_spec(HOSTILE / "flow_1000_deep.yaml").result.findings
    assert (finding.code, finding.line) == ("TG131", 2)


def test_block_nesting_1000_deep_is_tg131(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("".join(" " * i + f"k{i}:\n" for i in range(1000)))
    (finding,) = parse_spec(path).result.findings
    assert (finding.code, finding.line) == ("TG131", yaml_loader.MAX_DEPTH)


def test_a_million_open_brackets_are_refused_within_a_second(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 1_000_000)  # just under the size limit, so the loader sees it
    start = time.perf_counter()
    (finding,) = parse_spec(path).result.findings
    assert finding.code == "TG131" and time.perf_counter() - start < 30  # a hang guard: PyYAML alone is quadratic here


def test_an_alias_inside_its_own_anchor_is_tg131():
    (finding,) = parse_spec(HOSTILE / "self_alias.yaml").result.findings
    assert finding.code == "TG131" and finding.line == 2


def test_billion_laughs_stop_at_the_node_budget():
    start = time.perf_counter()
    (finding,) = parse_spec(HOSTILE / "billion_laughs.yaml").result.findings
    assert finding.code == "TG132" and f"{yaml_loader.MAX_NODES:,}" in finding.message
    assert time.perf_counter() - start < 30  # a hang guard: 10^7 values alone took 42 s


def test_a_spec_over_the_size_limit_is_refused_without_reading_it_all(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_bytes(GOOD.read_bytes() + b"# " + b"x" * 98 + b"\n" * 1)
    with path.open("ab") as f:
        f.truncate(100 * 1024 * 1024)  # 100 MB, sparse: a comment of NUL bytes
    start = time.perf_counter()
    (finding,) = parse_spec(path).result.findings
    assert (finding.code, finding.line) == ("TG133", 1) and "100.0 MiB" in finding.message
    assert time.perf_counter() - start < 5  # a hang guard: parsing 100 MB took 67 s


def test_a_spec_just_under_the_limit_is_read(tmp_path):
    path = tmp_path / "long.yaml"
    text = GOOD.read_text()
    path.write_text(text + "#" * (MAX_SPEC_BYTES - len(text) - 1) + "\n")
    assert parse_spec(path).valid


def _fifo(tmp_path):
    path = tmp_path / "spec.fifo"
    os.mkfifo(path)
    return path


def _loop(tmp_path):
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    return tmp_path / "a"


PATHS = {
    "folder": (lambda tmp: tmp, "is a folder, not a file"),
    "device": (lambda tmp: "/dev/zero", "is not a regular file"),
    "fifo": (_fifo, "is not a regular file"),
    "symlink loop": (_loop, "Too many levels of symbolic links"),
    "dangling symlink": (lambda tmp: (os.symlink(tmp / "gone", tmp / "s"), tmp / "s")[1], "does not exist"),
}


@pytest.mark.parametrize("kind", sorted(PATHS))
def test_a_spec_path_that_is_not_a_file_is_a_usage_error_naming_it(kind, tmp_path):
    make, reason = PATHS[kind]
    path = make(tmp_path)
    with pytest.raises(UsageError, match=reason) as caught:
        parse_spec(path)
    assert str(path) in str(caught.value)
