# pip install ./python: the pure-Python package and the libpagefeed.so that
# `make python` builds into python/pagefeed/. No pyproject.toml on purpose:
# pip then builds with the setuptools already installed (no isolated build
# environment to download), so it works offline.
import os
import sys

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
if not os.path.exists(os.path.join(here, "pagefeed", "libpagefeed.so")):
    sys.exit("pagefeed: python/pagefeed/libpagefeed.so is missing; run `make python` first")

setup(
    name="pagefeed",
    version="0.1.0",
    description="Shuffled Parquet pages to PyTorch through io_uring (ctypes over libpagefeed.so)",
    packages=["pagefeed"],
    package_data={"pagefeed": ["libpagefeed.so", "libpagefeed.h", "pagefeed.h"]},
    install_requires=["numpy"],
    python_requires=">=3.9",
    zip_safe=False,
)
