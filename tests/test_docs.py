"""Every finding code used in the source is documented in docs/checks.md."""
from __future__ import annotations

import re

from tests.support.paths import ROOT


def test_every_code_in_the_source_has_a_heading_in_checks_md():
    used = {code for path in (ROOT / "tunegate").rglob("*.py")
            for code in re.findall(r"\bTG\d{3}\b", path.read_text(encoding="utf-8"))}
    documented = set(re.findall(r"^### (TG\d{3})\b", (ROOT / "docs" / "checks.md").read_text(encoding="utf-8"), re.M))
    assert used, "no codes found: the scan is broken"
    assert sorted(used - documented) == []
