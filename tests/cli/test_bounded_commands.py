"""Bounded by design (issue 36): estimate, advise and convert on millions of records stay under 150 MB
of RSS (summed over the process tree) and price a run from a sample of the data, saying so.

Measured before: on a .jsonl.gz of 18.5 M records `estimate` and `advise` were still running after
150 s (each read every record to count characters; `advise` once per variant it checked).
"""
from __future__ import annotations

import gzip
import json

import orjson
import pytest

from tests.support.peak_rss import run_measured, tunegate_args
from tests.support.paths import ROOT

LIMIT_MB = 150


def chat(i: int) -> dict:
    return {"messages": [{"role": "user", "content": f"question {i} about " + "things " * (i % 7)},
                         {"role": "assistant", "content": f"answer {i * 7} here."}]}


@pytest.fixture(scope="module")
def many_gzip(tmp_path_factory):
    """2 M short chat records in a .jsonl.gz (20 blocks of 10,000 records, each block 10 gzip members)."""
    path = tmp_path_factory.mktemp("bounded") / "train.jsonl.gz"
    with path.open("wb") as out:
        for block in range(20):
            lines = b"".join(orjson.dumps(chat(block * 10_000 + i)) + b"\n" for i in range(10_000))
            out.write(gzip.compress(lines, compresslevel=1) * 10)
    return path


@pytest.fixture(scope="module")
def many_array(tmp_path_factory):
    """100,000 chat records in one .json array, an element per line."""
    path = tmp_path_factory.mktemp("bounded") / "train.json"
    path.write_bytes(b"[\n" + b",\n".join(orjson.dumps(chat(i)) for i in range(100_000)) + b"\n]\n")
    return path


def spec_for(train, folder):
    """The quickstart spec training on `train`."""
    text = (ROOT / "examples" / "quickstart.yaml").read_text()
    spec = folder / f"spec-{train.name}.yaml"
    spec.write_text(text.replace("data/train.jsonl", str(train))
                    .replace("data/validation.jsonl", str(ROOT / "examples" / "data" / "validation.jsonl")))
    return spec


def test_estimate_prices_millions_of_gzip_records_from_a_sample_in_bounded_memory(many_gzip, tmp_path):
    done = run_measured(tunegate_args("estimate", spec_for(many_gzip, tmp_path), "--json"))
    assert done.returncode == 0, done.stderr
    assert done.peak_mb <= LIMIT_MB, done.peak_mb
    sample = json.loads(done.stdout)["tokens"]["sample"]
    assert sample["records_read"] < 100_000 and 1_900_000 < sample["records_estimated"] < 2_100_000, sample
    assert 0 < sample["error_pct"] < 5


def test_advise_states_the_sample_its_hours_rest_on_in_bounded_memory(many_gzip, tmp_path):
    done = run_measured(tunegate_args("advise", spec_for(many_gzip, tmp_path), "--no-llm"))
    assert done.returncode == 0, done.stderr
    assert done.peak_mb <= LIMIT_MB, done.peak_mb
    assert "note: training tokens from characters estimated from a sample of " in done.stdout


def test_samples_reads_millions_of_gzip_records_in_bounded_memory(many_gzip, tmp_path, tiny_cache):
    """Every record is read for the token audit's stats; only a uniform sample is kept and tokenised,
    and the tokenizer loads without torch (386 MB at 3 M records before, most of it torch)."""
    done = run_measured(tunegate_args("samples", spec_for(many_gzip, tmp_path), "-n", "3"), timeout_s=240)
    assert done.returncode == 0, done.stderr
    assert done.peak_mb <= LIMIT_MB, done.peak_mb
    assert done.stdout.startswith("3 of 2000000 records of "), done.stdout[:200]


def test_samples_of_long_records_stay_in_bounded_memory(tmp_path, tiny_cache):
    """20,000 records of ~2,500 characters (~1,000 tokens each): the audit kept every sampled record's
    tokens as Python lists, 1,088 MB for 25,000 such records before."""
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda"]
    train = tmp_path / "long.jsonl"
    with train.open("wb") as out:
        for i in range(20_000):
            reply = " ".join(words[(i * 7 + k * 3) % len(words)] for k in range(400))
            out.write(orjson.dumps({"messages": [{"role": "user", "content": f"question {i}: " + reply[:300]},
                                                 {"role": "assistant", "content": reply}]}) + b"\n")
    done = run_measured(tunegate_args("samples", spec_for(train, tmp_path), "-n", "3", "--json"), timeout_s=240)
    assert done.returncode == 0, done.stderr
    assert done.peak_mb <= LIMIT_MB, done.peak_mb
    assert [s["why"] for s in json.loads(done.stdout)["samples"]] == ["shortest", "median", "longest"]


def test_estimate_samples_a_json_array_spread_over_the_file(many_array, tmp_path):
    done = run_measured(tunegate_args("estimate", spec_for(many_array, tmp_path)))
    assert done.returncode == 0, done.stderr
    assert done.peak_mb <= LIMIT_MB, done.peak_mb
    assert "(characters estimated from a sample of " in done.stdout
    assert "read from windows spread over the file" in done.stdout


def test_convert_streams_a_json_array_in_bounded_memory(many_array, tmp_path):
    out = tmp_path / "out.jsonl"
    done = run_measured(tunegate_args("convert", many_array, out), timeout_s=240)
    assert done.returncode == 0, done.stderr
    assert done.peak_mb <= LIMIT_MB, done.peak_mb
    assert done.stdout.startswith("100000 records:")


def test_a_small_file_is_still_read_whole_with_no_sample_remark(tmp_path):
    spec = spec_for(ROOT / "examples" / "data" / "train.jsonl", tmp_path)
    done = run_measured(tunegate_args("estimate", spec, "--json"))
    assert done.returncode == 0, done.stderr
    assert "sample" not in json.loads(done.stdout)["tokens"]


def test_estimate_on_a_million_empty_elements_reads_a_bounded_part(tmp_path):
    """3 MB of `{}` elements: small by bytes, a million records by count (12 s to read whole before)."""
    train = tmp_path / "empty.json"
    train.write_bytes(b"[" + b",".join([b"{}"] * 1_000_000) + b"]")
    done = run_measured(tunegate_args("estimate", spec_for(train, tmp_path), "--json"))
    assert done.returncode == 0, done.stderr
    tokens = json.loads(done.stdout)["tokens"]
    assert tokens["per_epoch"] == 0 and tokens["sample"]["how"].startswith("the file's start"), tokens
