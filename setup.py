"""The compiled part of tunegate: its hot loops (tunegate/native/*.c, one module: _loops).

Everything else is in pyproject.toml. The extension is optional: without a C compiler the install
still succeeds and tunegate runs the same checks in pure Python/numpy, slower (tunegate.native).
"""
import runpy
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
NATIVE = HERE / "tunegate" / "native"
TABLE = NATIVE / "_fold_table.h"


class BuildNative(build_ext):
    """Writes the casefold table from the building interpreter first (its Unicode version)."""

    def run(self):
        TABLE.write_text(runpy.run_path(str(HERE / "tunegate" / "native" / "fold_table.py"))["header"](),
                         encoding="ascii")
        super().run()


setup(
    ext_modules=[Extension("tunegate.native._loops", sorted(str(p.relative_to(HERE)) for p in NATIVE.glob("*.c")),
                           depends=[str(p.relative_to(HERE)) for p in NATIVE.glob("*.h")],
                           extra_compile_args=["-O3"], optional=True)],
    cmdclass={"build_ext": BuildNative},
)
