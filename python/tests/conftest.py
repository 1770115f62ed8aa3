"""Fixtures: datasets written by `pagefeed gen` into temporary directories.

The library comes from python/pagefeed/libpagefeed.so (make python) or
$PAGEFEED_LIB; the gen binary from $PAGEFEED_BIN (make sets it), else it
is built with go into a temporary directory.
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
ROOT = os.path.dirname(PYDIR)
sys.path.insert(0, PYDIR)

ROWS = 6000  # rows of the corpus fixture: ids 0..ROWS-1


@pytest.fixture(scope="session")
def pagefeed_bin(tmp_path_factory):
    d = os.environ.get("PAGEFEED_BIN")
    if d and os.path.exists(os.path.join(d, "pagefeed")):
        return os.path.join(d, "pagefeed")
    out = str(tmp_path_factory.mktemp("bin") / "pagefeed")
    subprocess.run(["go", "build", "-o", out, "./cmd/pagefeed"], cwd=ROOT, check=True, timeout=600)
    return out


def gen(bin_, out, files=2, rows=ROWS // 2, codec="none", page_size=8192, seed=0):
    subprocess.run([bin_, "gen", "--out", str(out), "--files", str(files), "--rows-per-file", str(rows),
                    "--codec", codec, "--page-size", str(page_size), "--seed", str(seed), "--quiet"],
                   check=True, timeout=300)
    return str(out)


@pytest.fixture(scope="session")
def corpus(pagefeed_bin, tmp_path_factory):
    """2 files of 3000 rows, uncompressed 8 KiB pages: id 0..5999."""
    return gen(pagefeed_bin, tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="session")
def corpus_zstd(pagefeed_bin, tmp_path_factory):
    """The same schema, zstd pages, another seed: another dataset."""
    return gen(pagefeed_bin, tmp_path_factory.mktemp("corpus_zstd"), codec="zstd", seed=7)


def run_py(code, *args, timeout=120, env=None):
    """Runs code in a new interpreter (this one) with the package on its path."""
    e = dict(os.environ)
    e["PYTHONPATH"] = PYDIR + os.pathsep + e.get("PYTHONPATH", "")
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout, env=e)


@pytest.fixture(autouse=True)
def _bounded():
    """A test that hangs (a next() blocked for good) ends the run with every
    thread's traceback instead of hanging CI."""
    import faulthandler
    faulthandler.dump_traceback_later(240, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()
