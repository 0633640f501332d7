"""Compiled loops of the working-set coordinate descent (``solver='cd'`` of S3GD).

The driver (``skstoch/_solvers/_working_set.py``) minimises, on the columns of a working
set, the quadratic model of the data term around a base point (exact for the squared
error, a proximal Newton model otherwise) plus the elastic-net penalty:

    Q(delta) = sum_i [g_i dm_i + h_i dm_i^2 / 2] + lam1 ||w||_1 + lam2 / 2 ||w||^2,
    dm = X_ws (w - w0) + (b - b0),

with ``g_i = s_i psi'(m_i) / n`` and ``h_i = s_i psi''(m_i) / n`` at the base margins.
The state is ``q = g + h dm`` (the model's derivative in margin space) and ``dm``; a
coordinate step is the exact minimiser of ``Q`` along the coordinate.

A block of columns is either dense (``indices`` empty: column k is
``data[j n:(j + 1) n]`` with ``j = cols[k]``, or ``j = k`` when ``cols`` is empty, rows of a
C-contiguous array of columns) or CSC (column k is column ``cols[k]`` of the CSC arrays).
The values are float64 or float32 (fused types: a float32 X is read as it is stored, each
value widened to double; every accumulator is a double).
"""
from cython cimport floating
from libc.math cimport fabs
from libc.stdint cimport int32_t, int64_t

from ._loss cimport MarginLoss
from ._prox cimport soft_threshold


cdef struct block_t:
    const void* data           # float64 or float32 values (the kernel's fused type)
    const int32_t* indices     # NULL: dense block
    const int64_t* indptr
    const int32_t* cols
    Py_ssize_t n


cdef inline void column(const block_t* B, Py_ssize_t k, const floating** x,
                        const int32_t** idx, Py_ssize_t* nnz) noexcept nogil:
    cdef int64_t start, end
    cdef Py_ssize_t j
    cdef const floating* data = <const floating*>B.data
    if B.indices == NULL:
        j = B.cols[k] if B.cols != NULL else k
        x[0] = data + j * B.n
        idx[0] = NULL
        nnz[0] = B.n
    else:
        j = B.cols[k]
        start, end = B.indptr[j], B.indptr[j + 1]
        x[0] = data + start
        idx[0] = B.indices + start
        nnz[0] = end - start


cdef block_t make_block(const floating[::1] data, const int32_t[::1] indices,
                        const int64_t[::1] indptr, const int32_t[::1] cols, Py_ssize_t n):
    cdef block_t B
    B.data = <const void*>&data[0] if data.shape[0] > 0 else NULL
    B.indices = &indices[0] if indices.shape[0] > 0 else NULL
    B.indptr = &indptr[0] if indptr.shape[0] > 0 else NULL
    B.cols = &cols[0] if cols.shape[0] > 0 else NULL
    B.n = n
    return B


cdef inline double column_dot(const block_t* B, Py_ssize_t k, const double* v,
                              bint square, const floating* kind) noexcept nogil:
    """``sum_t v_t x_tk`` (``x_tk^2`` when ``square``) over the entries of column k
    (``kind``: any pointer of the values' type, selecting the specialisation)."""
    cdef const floating* x
    cdef const int32_t* idx
    cdef Py_ssize_t t, i, nnz
    cdef double acc = 0.0
    column(B, k, &x, &idx, &nnz)
    for t in range(nnz):
        i = t if idx == NULL else idx[t]
        acc += v[i] * x[t] * x[t] if square else v[i] * x[t]
    return acc


cdef inline double dot4(const double* a, const floating* b, Py_ssize_t n) noexcept nogil:
    """``a.b`` in four interleaved partial sums (a fixed order: the same bits everywhere;
    independent sums let the loop pipeline and vectorise)."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t t, n4 = n - n % 4
    for t in range(0, n4, 4):
        s0 += a[t] * b[t]
        s1 += a[t + 1] * b[t + 1]
        s2 += a[t + 2] * b[t + 2]
        s3 += a[t + 3] * b[t + 3]
    for t in range(n4, n):
        s0 += a[t] * b[t]
    return (s0 + s1) + (s2 + s3)


cdef inline double violation(double grad, double w, double lam1) noexcept nogil:
    """Distance of ``-grad`` to ``lam1 d|w|`` (0 at a coordinate-wise optimum)."""
    if w > 0:
        return fabs(grad + lam1)
    if w < 0:
        return fabs(grad - lam1)
    return fabs(grad) - lam1 if fabs(grad) > lam1 else 0.0


def weighted_col_sqnorms(const floating[::1] data, const int32_t[::1] indices,
                         const int64_t[::1] indptr, const int32_t[::1] cols, Py_ssize_t n,
                         const double[::1] h, double[::1] out):
    """``out[k] = sum_i h_i x_ik^2`` for the columns of the block."""
    cdef block_t B = make_block(data, indices, indptr, cols, n)
    cdef const double* hp = &h[0] if h.shape[0] > 0 else NULL
    cdef Py_ssize_t k
    with nogil:
        for k in range(out.shape[0]):
            out[k] = column_dot(&B, k, hp, True, <const floating*>NULL)


def block_matvec(const floating[::1] data, const int32_t[::1] indices,
                 const int64_t[::1] indptr, const int32_t[::1] cols, Py_ssize_t n,
                 const double[::1] coef, double shift, double[::1] out):
    """``out = X_block coef + shift``."""
    cdef block_t B = make_block(data, indices, indptr, cols, n)
    cdef const floating* x
    cdef const int32_t* idx
    cdef Py_ssize_t k, t, nnz
    cdef double c
    with nogil:
        for t in range(n):
            out[t] = shift
        for k in range(coef.shape[0]):
            c = coef[k]
            if c == 0.0:
                continue
            column(&B, k, &x, &idx, &nnz)
            if idx == NULL:
                for t in range(nnz):
                    out[t] += c * x[t]
            else:
                for t in range(nnz):
                    out[idx[t]] += c * x[t]


def cd_epochs(const floating[::1] data, const int32_t[::1] indices, const int64_t[::1] indptr,
              const int32_t[::1] cols, Py_ssize_t n, double[::1] w, const double[::1] lips,
              const double[::1] h, double[::1] q, double[::1] dm, double[::1] b,
              double hsum, bint fit_intercept, double lam1, double lam2, int n_epochs):
    """``n_epochs`` cyclic sweeps of exact coordinate minimisation of the model ``Q`` over
    the block's coefficients ``w`` (and the intercept ``b[0]`` when ``fit_intercept``),
    updating ``q`` and ``dm`` in place.  ``lips[k] = sum_i h_i x_ik^2``, ``hsum = sum h``.

    Returns the largest optimality violation met in the last sweep (each coordinate's
    before its step): the distance of the model gradient to the penalty's subdifferential.
    """
    cdef block_t B = make_block(data, indices, indptr, cols, n)
    cdef const floating* x
    cdef const int32_t* idx
    cdef Py_ssize_t k, t, nnz, p = w.shape[0]
    cdef int epoch
    cdef double grad, old, new, delta, denom, viol = 0.0, hd
    with nogil:
        for epoch in range(n_epochs):
            viol = 0.0
            for k in range(p):
                denom = lips[k] + lam2
                if denom <= 0.0:
                    continue
                column(&B, k, &x, &idx, &nnz)
                grad = dot4(&q[0], x, nnz) if idx == NULL else \
                    column_dot(&B, k, &q[0], False, <const floating*>NULL)
                old = w[k]
                delta = violation(grad + lam2 * old, old, lam1)
                if delta > viol:
                    viol = delta
                new = soft_threshold(lips[k] * old - grad, lam1) / denom
                if new == old:
                    continue
                w[k] = new
                delta = new - old
                if idx == NULL:
                    for t in range(nnz):
                        dm[t] += delta * x[t]
                        q[t] += delta * h[t] * x[t]
                else:
                    for t in range(nnz):
                        dm[idx[t]] += delta * x[t]
                        q[idx[t]] += delta * h[idx[t]] * x[t]
            if fit_intercept and hsum > 0.0:
                grad = 0.0
                for t in range(n):
                    grad += q[t]
                if fabs(grad) > viol:
                    viol = fabs(grad)
                delta = -grad / hsum
                b[0] += delta
                for t in range(n):
                    hd = h[t] * delta
                    dm[t] += delta
                    q[t] += hd
    return viol


def block_rmatvec(const floating[::1] data, const int32_t[::1] indices,
                  const int64_t[::1] indptr, const int32_t[::1] cols, Py_ssize_t n,
                  const double[::1] v, double[::1] out):
    """``out = X_block^T v``."""
    cdef block_t B = make_block(data, indices, indptr, cols, n)
    cdef const double* vp = &v[0] if v.shape[0] > 0 else NULL
    cdef Py_ssize_t k
    with nogil:
        for k in range(out.shape[0]):
            out[k] = column_dot(&B, k, vp, False, <const floating*>NULL)


def loss_derivatives(MarginLoss loss, const double[::1] m, const double[::1] dm, double t,
                     const double[::1] y, const double[::1] swn, double floor,
                     double[::1] m_out, double[::1] g, double[::1] h):
    """At the margins ``m_out = m + t dm`` (``dm`` may be empty: ``t`` is then ignored):
    ``g_i = swn_i psi'``, ``h_i = swn_i max(psi'', floor)`` (``h`` may be empty) in one pass.
    Returns ``sum_i swn_i psi(m_out_i)``."""
    cdef Py_ssize_t i, n = m.shape[0]
    cdef bint shift = dm.shape[0] > 0, curv = h.shape[0] > 0
    cdef double p, total = 0.0, c
    with nogil:
        for i in range(n):
            p = m[i] + t * dm[i] if shift else m[i]
            m_out[i] = p
            total += swn[i] * loss.loss(p, y[i])
            g[i] = swn[i] * loss.dloss(p, y[i])
            if curv:
                c = loss.d2loss(p, y[i])
                h[i] = swn[i] * (c if c > floor else floor)
    return total
