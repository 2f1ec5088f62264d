"""The tracking tasks hand the tracking layer what it cannot compute itself: the validation data's
digest in the fingerprint version of a digest an MLflow experiment already holds."""
from __future__ import annotations

from tests.support.paths import DATA
from tunegate.dataset.fingerprint import SHA256, fingerprint_file
from tunegate.spec.check import parse_spec
from tunegate.tasks.tracking_tasks import validation_in_version


def test_a_first_version_digest_is_answered_with_the_validation_data_hashed_that_way():
    parsed = parse_spec(DATA / "flows" / "good.yaml")
    validation = parsed.require().data.files("validation")
    legacy = fingerprint_file(validation, SHA256).digest
    assert validation_in_version(parsed)(legacy) == legacy
    assert validation_in_version(parsed)("0" * 64) == legacy  # another first-version digest: the data's own


def test_a_digest_of_todays_version_needs_no_second_hash():
    parsed = parse_spec(DATA / "flows" / "good.yaml")
    assert validation_in_version(parsed)(fingerprint_file(parsed.require().data.files("validation")).digest) is None
