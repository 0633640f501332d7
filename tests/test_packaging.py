"""The package as users receive it: the source distribution and the compiled kernels.

* the sdist carries the licence, every file of tests/ (the conftest fixtures and the golden
  digests included, so its test suite runs from the unpacked archive), the docs, examples and
  benchmarks the tests read, and metadata naming the licence;
* release builds carry no debug information (``SKSTOCH_DEBUG_BUILD=1`` builds are the
  debuggable ones).
"""
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import skstoch

ROOT = Path(__file__).resolve().parents[1]
_BUILD_OUTPUTS = shutil.ignore_patterns(".git", "build", "dist", ".venv*", "*.egg-info",
                                        "__pycache__", "*.so", "*.c", "_build", "auto_examples",
                                        "gen_modules", ".pytest_cache")


@pytest.fixture(scope="module")
def sdist_members(tmp_path_factory):
    pytest.importorskip("Cython", reason="building the sdist runs setup.py, which needs Cython")
    src = tmp_path_factory.mktemp("src") / "skstoch"
    shutil.copytree(ROOT, src, ignore=_BUILD_OUTPUTS)
    dist = src / "dist"
    proc = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(dist)],
                          cwd=src, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (archive,) = dist.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        top = names[0].split("/")[0]
        pkg_info = tar.extractfile(f"{top}/PKG-INFO").read().decode()
    return {name.split("/", 1)[1] for name in names if "/" in name}, pkg_info


@pytest.mark.slow
def test_sdist_ships_licence_and_every_test_file(sdist_members):
    members, pkg_info = sdist_members
    assert "LICENSE" in members
    assert "License-Expression: BSD-3-Clause" in pkg_info and "License-File: LICENSE" in pkg_info
    tests = {f"tests/{p.name}" for p in (ROOT / "tests").iterdir() if p.is_file()
             and p.suffix in (".py", ".json")}
    assert tests <= members, f"test files missing from the sdist: {sorted(tests - members)}"
    for needed in ("README.md", "doc/conf.py", "examples/demo.py", "benchmarks/_harness.py",
                   "skstoch/_fast/_prox.pxd"):
        assert needed in members, needed
    assert not any(m.endswith((".so", ".c")) for m in members), "build outputs in the sdist"


def test_release_kernels_carry_no_debug_information():
    if os.environ.get("SKSTOCH_DEBUG_BUILD", "0") not in ("", "0"):
        pytest.skip("this environment asked for the debug build (SKSTOCH_DEBUG_BUILD)")
    kernels = list(Path(skstoch.__file__).parent.joinpath("_fast").glob("*.so"))
    if not kernels:
        pytest.skip("no ELF extension modules here (not a Linux build)")
    with_debug = [k.name for k in kernels if b".debug_info" in k.read_bytes()]
    assert not with_debug, f"kernels built with debug information: {with_debug}"
