"""Build the Cython kernels of skstoch.

Every ``skstoch/_fast/*.pyx`` becomes one extension module; new kernel modules need no edit here.

Set ``SKSTOCH_DEBUG_BUILD=1`` to compile with bounds and wraparound checks on (used by the
robustness tests: an out-of-bounds access then raises instead of corrupting memory).
"""
import os
import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("SKSTOCH_DEBUG_BUILD", "0") not in ("", "0")

LINK_ARGS = []
if sys.platform == "win32":
    # /fp:precise keeps IEEE semantics (no contraction), needed for bitwise reproducible RNG streams.
    COMPILE_ARGS = ["/O2", "/fp:precise"]
elif DEBUG:
    COMPILE_ARGS = ["-O0", "-g", "-ffp-contract=off"]
else:
    # -ffp-contract=off: no fused multiply-add contraction, so the counter-based RNG (and every
    # kernel) gives the same bits on x86-64 and aarch64.  Release builds carry no debug
    # information (-g0 overrides Python's -g; -s strips the symbol table at link time): the
    # wheel is a fraction of the size, and SKSTOCH_DEBUG_BUILD=1 keeps a debuggable build.
    COMPILE_ARGS = ["-O3", "-ffp-contract=off", "-g0"]
    if sys.platform.startswith("linux"):
        LINK_ARGS = ["-s"]


def extensions():
    sources = sorted(Path("skstoch", "_fast").glob("*.pyx"))
    return [
        Extension(
            ".".join(src.with_suffix("").parts),
            [str(src)],
            extra_compile_args=COMPILE_ARGS,
            extra_link_args=LINK_ARGS,
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        )
        for src in sources
    ]


directives = dict(
    language_level=3,
    boundscheck=DEBUG,
    wraparound=DEBUG,
    initializedcheck=DEBUG,
    cdivision=not DEBUG,
    embedsignature=True,
)

setup(
    ext_modules=cythonize(extensions(), compiler_directives=directives, nthreads=os.cpu_count() or 1),
    # compile the extensions in parallel too (one C file per kernel module)
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
)
