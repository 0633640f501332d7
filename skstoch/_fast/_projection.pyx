"""Exact Euclidean projection onto {w : ||w||_1 <= radius} (Duchi et al. 2008, sort based,
O(n log n)); the kernel version works in place on a raw buffer so per-step projections in
nogil loops (the projected-SGD baseline) use the same code as the Python API."""
import numpy as np

from libc.math cimport fabs
from libc.stdlib cimport qsort


cdef int _compare_descending(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0]
    cdef double y = (<const double*>b)[0]
    return (x < y) - (x > y)


cdef void project_l1_ball(double* w, Py_ssize_t n, double radius, double* work) noexcept nogil:
    """Project w (length n) in place onto the l1 ball of the given radius >= 0.

    ``work`` is scratch space of length n.  Already-feasible points are left untouched.
    """
    cdef Py_ssize_t j, rho = 0
    cdef double norm1 = 0.0, cumsum = 0.0, theta = 0.0, a
    for j in range(n):
        work[j] = fabs(w[j])
        norm1 += work[j]
    if norm1 <= radius:
        return
    if radius <= 0.0:
        for j in range(n):
            w[j] = 0.0
        return
    qsort(work, n, sizeof(double), _compare_descending)
    # theta is set by the last j with u_j > (sum_{i<=j} u_i - radius) / (j + 1).  j = 0
    # always qualifies (radius > 0), also where u_0 - radius rounds to u_0 (a radius below
    # u_0's rounding), which the test below would reject, leaving theta = 0: no projection
    theta = work[0] - radius
    cumsum = work[0]
    for j in range(1, n):
        cumsum += work[j]
        a = (cumsum - radius) / (j + 1)
        if work[j] > a:
            rho = j
            theta = a
    for j in range(n):
        a = fabs(w[j]) - theta
        if a > 0:
            w[j] = a if w[j] > 0 else -a
        else:
            w[j] = 0.0


def l1_ball_projection(const double[::1] v, double radius):
    """Return the projection of v onto the l1 ball (a new array; v is not modified)."""
    if not radius >= 0:
        raise ValueError(f"radius must be >= 0, got {radius}")
    cdef double[::1] w = np.array(v, dtype=np.float64, copy=True)
    cdef double[::1] work = np.empty_like(w)
    if w.shape[0] > 0:
        with nogil:
            project_l1_ball(&w[0], w.shape[0], radius, &work[0])
    return np.asarray(w)
