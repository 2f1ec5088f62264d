"""The compiled part of tunegate: the overlap stage's normalisation and MinHash loops.

Everything else is in pyproject.toml. The extension is optional: without a C compiler the install
still succeeds and tunegate runs the same checks in pure Python/numpy, slower (tunegate.overlap.native).
"""
import runpy
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
TABLE = HERE / "tunegate" / "overlap" / "_fold_table.h"


class BuildNative(build_ext):
    """Writes the casefold table from the building interpreter first (its Unicode version)."""

    def run(self):
        TABLE.write_text(runpy.run_path(str(HERE / "tunegate" / "overlap" / "fold_table.py"))["header"](),
                         encoding="ascii")
        super().run()


setup(
    ext_modules=[Extension("tunegate.overlap._native", ["tunegate/overlap/_native.c"],
                           extra_compile_args=["-O2"], optional=True)],
    cmdclass={"build_ext": BuildNative},
)
