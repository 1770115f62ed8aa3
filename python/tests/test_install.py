import os
import subprocess
import sys

import pytest

from conftest import PYDIR


def test_pip_install_offline_puts_the_library_in_the_package(tmp_path):
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        pytest.skip("pip is not installed for %s" % sys.executable)
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-build-isolation",
                        "--target", str(target), PYDIR], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (target / "pagefeed" / "libpagefeed.so").exists()
    r = subprocess.run([sys.executable, "-c", "import pagefeed, sys; print(pagefeed.__file__); print(pagefeed.version())"],
                       capture_output=True, text=True, timeout=60, cwd=str(tmp_path),
                       env=dict(os.environ, PYTHONPATH=str(target)))
    assert r.returncode == 0, r.stderr
    path, version = r.stdout.split("\n")[:2]
    assert path.startswith(str(target)) and version.startswith("pagefeed capi")


def test_abi_matches_the_header():
    """The ABI the package speaks is the header's PF_ABI_VERSION (the
    library's one definition of it), and PFBatch mirrors pf_batch field by
    field: a field added on one side only fails here, not as garbage."""
    import re

    from conftest import ROOT
    from pagefeed import _lib

    with open(os.path.join(ROOT, "capi", "pagefeed.h")) as f:
        h = f.read()
    assert int(re.search(r"#define PF_ABI_VERSION (\d+)", h).group(1)) == _lib.ABI == _lib.lib().pf_abi_version()
    body = re.search(r"typedef struct pf_batch \{(.*?)\} pf_batch;", h, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    fields = re.findall(r"(\w+)\s*;", body)
    assert fields == [f for f, _ in _lib.PFBatch._fields_]
