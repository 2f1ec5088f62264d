"""Every shared fixture, registered once. Tests use committed files under tests/data, not mocks.

Support code lives in tests/support; each fixture below is defined there beside the helpers it
belongs with and made available to every test here.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.browser import chromium
from tests.support.flows import prefect_api, workdir
from tests.support.local_api import local_api_home
from tests.support.minirun import tiny_cache
from tests.support.paths import DATA, ROOT
from tests.support.tracking import client, store_template, store_uri
from tests.support.trainer import encoded

# Every flow command a test runs gets a Prefect API of its own, gone with the command: the user's
# shared local API (tunegate.local_api.shared) would outlive each test's Prefect home by its idle
# time. tests/local_api sets its own.
os.environ["TUNEGATE_LOCAL_API_IDLE_S"] = "0"

__all__ = ["chromium", "client", "data_dir", "encoded", "local_api_home", "prefect_api", "root", "store_template", "store_uri",
           "tiny_cache", "workdir"]


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def root() -> Path:
    return ROOT
