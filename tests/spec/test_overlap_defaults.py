"""A check of bare data files judges overlap with exactly the defaults a spec's `gate.overlap` has."""
from __future__ import annotations

import dataclasses

from tunegate.spec.overlap_defaults import OVERLAP_DEFAULTS
from tunegate.spec.overlap_settings import OverlapSpec


def test_every_setting_of_the_section_has_its_default_without_the_section():
    assert dataclasses.asdict(OVERLAP_DEFAULTS) == OverlapSpec().model_dump()
