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
