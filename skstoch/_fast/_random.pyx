"""Python hooks on the counter-based generator of ``_random.pxd`` (for tests and for
Python code that must reproduce a kernel's stream)."""
import numpy as np

from libc.stdint cimport uint64_t

from ._random cimport (rng_state, rng_init, rng_u64, rng_uniform, rng_randint, rng_normal,
                       portable_log)


def u64_stream(uint64_t seed, uint64_t stream, Py_ssize_t n, uint64_t counter=0):
    """The first ``n`` raw 64-bit words of stream ``(seed, stream)`` from ``counter`` on."""
    cdef rng_state s
    cdef uint64_t[::1] out = np.empty(n, dtype=np.uint64)
    cdef Py_ssize_t i
    rng_init(&s, seed, stream, counter)
    with nogil:
        for i in range(n):
            out[i] = rng_u64(&s)
    return np.asarray(out)


def uniform_stream(uint64_t seed, uint64_t stream, Py_ssize_t n, uint64_t counter=0):
    """``n`` uniform doubles in [0, 1)."""
    cdef rng_state s
    cdef double[::1] out = np.empty(n, dtype=np.float64)
    cdef Py_ssize_t i
    rng_init(&s, seed, stream, counter)
    with nogil:
        for i in range(n):
            out[i] = rng_uniform(&s)
    return np.asarray(out)


def randint_stream(uint64_t seed, uint64_t stream, Py_ssize_t n, Py_ssize_t high,
                   uint64_t counter=0):
    """``n`` integers uniform in [0, high); ``high`` must be >= 1."""
    if high < 1:
        raise ValueError(f"high must be >= 1, got {high}")
    cdef rng_state s
    cdef Py_ssize_t[::1] out = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t i
    rng_init(&s, seed, stream, counter)
    with nogil:
        for i in range(n):
            out[i] = rng_randint(&s, high)
    return np.asarray(out)


def normal_stream(uint64_t seed, uint64_t stream, Py_ssize_t n, uint64_t counter=0):
    """``n`` standard normal doubles; returns ``(values, final_counter)``."""
    cdef rng_state s
    cdef double[::1] out = np.empty(n, dtype=np.float64)
    cdef Py_ssize_t i
    rng_init(&s, seed, stream, counter)
    with nogil:
        for i in range(n):
            out[i] = rng_normal(&s)
    return np.asarray(out), s.counter


def py_portable_log(double x):
    """The RNG's own logarithm (for accuracy tests)."""
    if not x > 0:
        raise ValueError("x must be > 0")
    return portable_log(x)
