"""Every shared fixture, registered once. Tests use committed files under tests/data, not mocks.

Support code lives in tests/support; each fixture below is defined there beside the helpers it
belongs with and made available to every test here.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.browser import chromium
from tests.support.flows import prefect_api, workdir
from tests.support.minirun import tiny_cache
from tests.support.paths import DATA, ROOT
from tests.support.tracking import client, store_template, store_uri
from tests.support.trainer import encoded

__all__ = ["chromium", "client", "data_dir", "encoded", "prefect_api", "root", "store_template", "store_uri",
           "tiny_cache", "workdir"]


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def root() -> Path:
    return ROOT
