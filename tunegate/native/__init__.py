"""Compiled hot loops (tunegate/native/*.c, one module: _loops), when they can be used; else None.

    from tunegate.native import compiled
    if compiled is not None: ...

The extension is built by `pip install` where a C compiler is present (setup.py; optional, so an
install without one still works). It is used only when its casefold table was written from the
same Unicode version as this interpreter's (its folds must be this interpreter's `str.casefold`),
and not when TUNEGATE_NATIVE=0 (the pure-Python definitions then run: the tests compare the two).
Either way every result is the same; only the speed differs.
"""
from __future__ import annotations

import os
import unicodedata
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("TUNEGATE_NATIVE", "1") == "0":
        return None
    try:
        from tunegate.native import _loops
    except ImportError:  # not built: no compiler at install time
        return None
    return _loops if _loops.UNIDATA_VERSION == unicodedata.unidata_version else None


compiled = _load()
