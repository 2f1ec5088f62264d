"""numpy for the indexes that go to disk (the TG210 index, the overlap passes), OpenBLAS at one thread.

    from tunegate.dataset.numeric import np

The passes never multiply matrices, but OpenBLAS starts a thread per core when numpy loads, and
those threads spin for a while: on a 2-core machine ~0.1 CPU s in each process of a check (7 % of
the 50 MB check, measured with and without OPENBLAS_NUM_THREADS=1). The library reads the setting
when it loads, so it is set for the import only and removed again: the trainer processes started
later keep the user's environment. Where numpy is already loaded (a notebook, torch), or the user
set the variable, nothing changes.
"""
from __future__ import annotations

import os
import sys

_VAR = "OPENBLAS_NUM_THREADS"

if "numpy" not in sys.modules and _VAR not in os.environ:
    os.environ[_VAR] = "1"
    try:
        import numpy as np
    finally:
        os.environ.pop(_VAR, None)
else:
    import numpy as np

__all__ = ["np"]
