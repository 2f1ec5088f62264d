"""The one-root CA bundle a command's Prefect clients get beside the local API (tunegate.local_api.tls_bundle).

A context loaded from it holds one root (Prefect made six from a bundle of 100+ per sweep, for a
plain-http API); a damaged copy is made again, a cache that cannot hold it leaves Prefect's own,
and a bundle the environment names is never replaced.
"""
from __future__ import annotations

import os
import ssl

import pytest

from tunegate.local_api import tls_bundle
from tunegate.local_api.tls_bundle import CERT_FILE, one_root_bundle, trust_one_root, untrust_one_root


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(CERT_FILE, raising=False)
    monkeypatch.setattr(tls_bundle, "_SET", [])


def test_the_bundle_holds_one_root_that_an_ssl_context_loads():
    bundle = one_root_bundle()
    assert bundle is not None and bundle.read_bytes().count(b"BEGIN CERTIFICATE") == 1
    context = ssl.create_default_context(cafile=str(bundle))
    assert len(context.get_ca_certs()) == 1


def test_a_damaged_bundle_is_made_again():
    bundle = one_root_bundle()
    bundle.write_bytes(b"-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    assert one_root_bundle() == bundle
    assert len(ssl.create_default_context(cafile=str(bundle)).get_ca_certs()) == 1


def test_a_cache_that_cannot_hold_the_bundle_leaves_prefect_its_own(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("TUNEGATE_CACHE", str(blocker))  # the cache root is a file: no folder under it
    trust_one_root()
    assert CERT_FILE not in os.environ


def test_trust_names_the_bundle_and_untrust_takes_it_back():
    trust_one_root()
    assert os.environ[CERT_FILE] == str(one_root_bundle())
    untrust_one_root()
    assert CERT_FILE not in os.environ


def test_a_bundle_the_environment_names_is_kept(tmp_path, monkeypatch):
    mine = tmp_path / "corporate-ca.pem"
    monkeypatch.setenv(CERT_FILE, str(mine))
    trust_one_root()
    untrust_one_root()
    assert os.environ[CERT_FILE] == str(mine)
