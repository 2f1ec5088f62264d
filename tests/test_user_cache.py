"""The user cache: $TUNEGATE_CACHE or ~/.cache/tunegate, made when first needed, or a usage error."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tunegate.errors import UsageError
from tunegate.user_cache import cache_folder, cache_root


def test_the_cache_is_the_folder_the_variable_names_made_on_first_use(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path / "cache"))
    assert cache_root() == tmp_path / "cache"
    assert cache_folder("param-counts") == tmp_path / "cache" / "param-counts"
    assert (tmp_path / "cache" / "param-counts").is_dir()


def test_without_the_variable_it_is_under_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("TUNEGATE_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_folder() == tmp_path / ".cache" / "tunegate"


def test_a_variable_naming_a_file_is_a_usage_error_naming_the_variable_and_the_fix(tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path / "afile"))
    with pytest.raises(UsageError) as raised:
        cache_folder()
    assert str(raised.value) == (f"TUNEGATE_CACHE={tmp_path / 'afile'} is not a folder tunegate can use: File exists "
                                 f"({tmp_path / 'afile'}); point TUNEGATE_CACHE at a folder tunegate may write in")


def test_a_home_whose_cache_cannot_be_made_says_the_variable_is_unset(tmp_path, monkeypatch):
    (tmp_path / ".cache").write_text("a file where the folder goes")
    monkeypatch.delenv("TUNEGATE_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(UsageError, match=r"the cache folder .*/\.cache/tunegate \(TUNEGATE_CACHE unset\) is not a "
                                         r"folder tunegate can use: Not a directory"):
        cache_folder()


ROOT_USER = os.geteuid() == 0


@pytest.fixture
def read_only_cache(tmp_path):
    """A cache folder that exists and this user cannot write in: made read-only, or, for root (who
    writes anywhere else), a procfs folder."""
    if ROOT_USER:
        yield Path("/proc/1")
        return
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o555)
    yield cache
    cache.chmod(0o755)


def test_a_folder_this_user_cannot_write_in_cannot_take_the_built_in_model(read_only_cache, monkeypatch):
    # Before: the build's PermissionError became the mini-run's TG508, "model.id cannot be loaded".
    from tunegate.training.tiny_model import ensure_buildable

    monkeypatch.setenv("TUNEGATE_CACHE", str(read_only_cache))
    with pytest.raises(UsageError) as raised:
        ensure_buildable()
    assert str(raised.value) == (f"TUNEGATE_CACHE={read_only_cache} is a folder this user cannot write in "
                                 f"({read_only_cache}); point TUNEGATE_CACHE at a folder tunegate may write in")


@pytest.mark.skipif(ROOT_USER, reason="root writes in any folder it can make here")
def test_a_read_only_cache_that_holds_the_built_model_is_enough(tmp_path, monkeypatch):
    from tunegate.training.tiny_model import VERSION, ensure_buildable

    built = tmp_path / "cache" / f"tiny-llama-{VERSION}"
    built.mkdir(parents=True)
    (built / "config.json").write_text("{}")
    (tmp_path / "cache").chmod(0o555)
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path / "cache"))
    try:
        ensure_buildable()  # only read from there
    finally:
        (tmp_path / "cache").chmod(0o755)
