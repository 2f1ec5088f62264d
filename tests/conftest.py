"""Shared fixtures. Tests use committed files under tests/data, not mocks."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def root() -> Path:
    return ROOT
