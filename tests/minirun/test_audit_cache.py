"""A sweep's candidates share one token audit: the second reads back what the first audited, with the
same findings, stats and facts, and audits again when the data changed or the kept copy is broken."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.minirun import DATA, load_spec, run_stage
from tunegate.minirun import audit_cache, session


@pytest.fixture
def audits(monkeypatch) -> list[str]:
    """The splits the mini-run tokenised and audited (its calls of audit_split), in order."""
    calls: list[str] = []
    real = session.audit_split

    def counted(paths, *args, **kwargs):
        calls.append(str(paths))
        return real(paths, *args, **kwargs)

    monkeypatch.setattr(session, "audit_split", counted)
    return calls


def _spec(folder: Path):
    """long_user.yaml on copies of its files (its record 3 loses every trainable token to truncation)."""
    for name in ("train_long_user.jsonl", "validation.jsonl"):
        shutil.copy(DATA / name, folder / name)
    return load_spec("long_user", **{"data.train": folder / "train_long_user.jsonl",
                                     "data.validation": folder / "validation.jsonl"})


def _seen(result, ctx) -> tuple:
    """What a candidate's mini-run reports of its audit."""
    return ([f.model_dump() for f in result.findings if f.code.startswith(("TG50", "TG51", "TG52", "TG53"))],
            result.stats["token_audit"], ctx.facts.tokens)


def test_a_second_candidate_reads_the_audit_back_with_the_same_findings_stats_and_facts(tiny_cache, tmp_path,
                                                                                        audits):
    spec = _spec(tmp_path)
    alone = _seen(*run_stage(spec))  # a preflight's mini-run: nothing kept
    assert len(audits) == 2 and not list(tmp_path.rglob("audits"))
    with audit_cache.kept_in(tmp_path / "tokens"):
        first = _seen(*run_stage(spec))
        second = _seen(*run_stage(spec))
    assert len(audits) == 4  # the first candidate audited both splits; the second read them back
    assert first == second == alone
    assert "TG510" in {f["code"] for f in first[0]}  # the record truncation leaves nothing to train on
    assert len(list((tmp_path / "tokens" / "audits").glob("*.json"))) == 1


def test_a_data_file_edited_between_two_candidates_is_audited_again(tiny_cache, tmp_path, audits):
    spec = _spec(tmp_path)
    with audit_cache.kept_in(tmp_path / "tokens"):
        first = _seen(*run_stage(spec))
        train = tmp_path / "train_long_user.jsonl"
        train.write_text("".join(train.read_text().splitlines(keepends=True)[:2]))  # two records left
        second = _seen(*run_stage(spec))
    assert len(audits) == 4
    assert first[1]["train"]["records"] == 6 and second[1]["train"]["records"] == 2


def test_a_kept_audit_that_does_not_read_back_whole_is_audited_again(tiny_cache, tmp_path, audits):
    spec = _spec(tmp_path)
    with audit_cache.kept_in(tmp_path / "tokens"):
        first = _seen(*run_stage(spec))
        [kept] = (tmp_path / "tokens" / "audits").glob("*.json")
        kept.write_bytes(kept.read_bytes()[:-40])  # a write cut short
        second = _seen(*run_stage(spec))
    assert len(audits) == 4 and first == second
