"""numpy for the overlap passes, with OpenBLAS at one thread (see tunegate.dataset.numeric).

    from tunegate.overlap.numeric import np
"""
from __future__ import annotations

from tunegate.dataset.numeric import np

__all__ = ["np"]
