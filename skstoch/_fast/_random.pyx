"""Python hooks on the counter-based generator of ``_random.pxd`` (for tests and for
Python code that must reproduce a kernel's stream)."""
import numpy as np

from libc.stdint cimport uint64_t

from ._random cimport (rng_state, rng_init, rng_u64, rng_uniform, rng_randint, rng_normal,
                       portable_log)


cdef enum Draw:
    RAW_WORD
    UNIFORM
    RANDINT
    NORMAL


cdef tuple _draws(Draw kind, uint64_t seed, uint64_t stream, Py_ssize_t n, uint64_t counter,
                  Py_ssize_t high=1):
    """``n`` draws of ``kind`` from stream ``(seed, stream)`` from ``counter`` on, and the
    counter after them."""
    if kind == RAW_WORD:
        out = np.empty(n, dtype=np.uint64)
    elif kind == RANDINT:
        out = np.empty(n, dtype=np.intp)
    else:
        out = np.empty(n, dtype=np.float64)
    cdef uint64_t[::1] words = out if kind == RAW_WORD else None
    cdef Py_ssize_t[::1] ints = out if kind == RANDINT else None
    cdef double[::1] reals = out if kind == UNIFORM or kind == NORMAL else None
    cdef rng_state s
    cdef Py_ssize_t i
    rng_init(&s, seed, stream, counter)
    with nogil:
        for i in range(n):
            if kind == RAW_WORD:
                words[i] = rng_u64(&s)
            elif kind == UNIFORM:
                reals[i] = rng_uniform(&s)
            elif kind == RANDINT:
                ints[i] = rng_randint(&s, high)
            else:
                reals[i] = rng_normal(&s)
    return out, s.counter


def u64_stream(uint64_t seed, uint64_t stream, Py_ssize_t n, uint64_t counter=0):
    """The first ``n`` raw 64-bit words of stream ``(seed, stream)`` from ``counter`` on."""
    return _draws(RAW_WORD, seed, stream, n, counter)[0]


def uniform_stream(uint64_t seed, uint64_t stream, Py_ssize_t n, uint64_t counter=0):
    """``n`` uniform doubles in [0, 1)."""
    return _draws(UNIFORM, seed, stream, n, counter)[0]


def randint_stream(uint64_t seed, uint64_t stream, Py_ssize_t n, Py_ssize_t high,
                   uint64_t counter=0):
    """``n`` integers uniform in [0, high); ``high`` must be >= 1."""
    if high < 1:
        raise ValueError(f"high must be >= 1, got {high}")
    return _draws(RANDINT, seed, stream, n, counter, high)[0]


def normal_stream(uint64_t seed, uint64_t stream, Py_ssize_t n, uint64_t counter=0):
    """``n`` standard normal doubles; returns ``(values, final_counter)``."""
    return _draws(NORMAL, seed, stream, n, counter)


def py_portable_log(double x):
    """The RNG's own logarithm (for accuracy tests)."""
    if not x > 0:
        raise ValueError("x must be > 0")
    return portable_log(x)
