"""Compiled inner loop of multinomial Prox-SVRG (``S3GDClassifier``'s multinomial log loss).

One epoch of ``n_steps`` proximal steps on the (d, K) coefficients ``W`` and the K
intercepts ``c``: a step over the mini-batch ``S`` (consecutive entries of ``order``) takes

    V = W - eta (B + G_S),   G_S = (1/|S|) sum_{i in S} s_i x_i (p_i(W) - P0_i)^T
    W <- soft_threshold(V, eta lam1) / (1 + eta lam2)
    c <- c - eta_c (Bc + (1/|S|) sum_{i in S} s_i (p_i(W) - P0_i))

with ``p_i`` the softmax of the margins ``x_i W + c``, ``P0`` the probabilities and ``B``,
``Bc`` the data gradient at the snapshot (the driver's full pass).  Without an l1 part
(``lazy``) ``W`` is kept as ``a U + beta B``: the step then touches only the batch rows'
features (O(nnz K)), the margins read ``x_i B`` from ``BX``; with an l1 part ``W`` is ``U``
itself and every step updates all d K entries.  Rows are dense (``indices`` empty:
``data`` is the C-ordered (n, d) array) or CSR; ``U`` and ``B`` are (d, K), so the K
entries of a feature are contiguous for both storages.
"""
from libc.math cimport exp
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc

from ._prox cimport soft_threshold

# W = a U + beta B: U is rescaled into W when a falls below this (a shrinks by 1/(1+eta lam2)
# per step; the rescale costs one O(d K) pass)
cdef double _A_MIN = 1e-100


cdef inline Py_ssize_t _row(const double* data, const int32_t* indices,
                            const int64_t* indptr, Py_ssize_t d, Py_ssize_t i,
                            const double** x, const int32_t** idx) noexcept nogil:
    if indptr == NULL:
        x[0] = data + i * d
        idx[0] = NULL
        return d
    x[0] = data + indptr[i]
    idx[0] = indices + indptr[i]
    return <Py_ssize_t>(indptr[i + 1] - indptr[i])


cdef inline void _row_times(const double* x, const int32_t* idx, Py_ssize_t nnz,
                            const double* M, Py_ssize_t K, double scale,
                            double* out) noexcept nogil:
    """out += scale * (x M) for a (d, K) C-ordered M."""
    cdef Py_ssize_t t, k
    cdef const double* m
    cdef double v
    for t in range(nnz):
        m = M + (t if idx == NULL else idx[t]) * K
        v = scale * x[t]
        for k in range(K):
            out[k] += v * m[k]


cdef inline void _row_outer(const double* x, const int32_t* idx, Py_ssize_t nnz,
                            const double* r, Py_ssize_t K, double scale,
                            double* M) noexcept nogil:
    """M += scale * x^T r for a (d, K) C-ordered M."""
    cdef Py_ssize_t t, k
    cdef double* m
    cdef double v
    for t in range(nnz):
        m = M + (t if idx == NULL else idx[t]) * K
        v = scale * x[t]
        for k in range(K):
            m[k] += v * r[k]


cdef inline void _softmax(double* z, Py_ssize_t K) noexcept nogil:
    cdef Py_ssize_t k
    cdef double m = z[0], s = 0.0
    for k in range(1, K):
        if z[k] > m:
            m = z[k]
    for k in range(K):
        z[k] = exp(z[k] - m)
        s += z[k]
    for k in range(K):
        z[k] /= s


cdef class MultinomialTables:
    """What :func:`svrg_epoch` reads about one fit, built once per solve.

    Parameters
    ----------
    data, indices, indptr : ndarray
        The rows: CSR arrays (float64, int32, int64), or the C-ordered (n, d) array
        raveled with ``indices`` and ``indptr`` empty.
    d : int
        Number of features.
    sw : ndarray of float64 of shape (n_samples,)
        Per-sample weights ``s_i``.
    n_steps, batch : int
        Steps per epoch and mini-batch size.
    lam1, lam2 : float
        The l1 and l2 penalty constants.
    fit_intercept, lazy : bool
        Whether ``c`` moves; whether ``W`` is kept as ``a U + beta B`` (no l1 part).
    """

    cdef const double[::1] data
    cdef const int32_t[::1] indices
    cdef const int64_t[::1] indptr
    cdef const double[::1] sw
    cdef Py_ssize_t d, n_steps, batch
    cdef double lam1, lam2
    cdef bint fit_intercept, lazy

    def __init__(self, const double[::1] data, const int32_t[::1] indices,
                 const int64_t[::1] indptr, Py_ssize_t d, const double[::1] sw,
                 Py_ssize_t n_steps, Py_ssize_t batch, double lam1, double lam2,
                 bint fit_intercept, bint lazy):
        self.data, self.indices, self.indptr, self.d, self.sw = data, indices, indptr, d, sw
        self.n_steps, self.batch, self.lam1, self.lam2 = n_steps, batch, lam1, lam2
        self.fit_intercept, self.lazy = fit_intercept, lazy


def svrg_epoch(MultinomialTables T, const Py_ssize_t[::1] order,
               const double[:, ::1] P0, const double[:, ::1] BX, const double[:, ::1] B,
               const double[::1] Bc, double[:, ::1] U, double[::1] c, double[::1] scale,
               double eta, double eta_c):
    """Run ``T.n_steps`` steps over ``order`` (mini-batches of ``T.batch`` consecutive rows,
    wrapping around) from the snapshot ``P0``, ``BX``, ``B``, ``Bc``; ``scale`` is
    ``[a, beta]`` of the lazy form (read and updated)."""
    cdef const double[::1] data = T.data
    cdef const int32_t[::1] indices = T.indices
    cdef const int64_t[::1] indptr = T.indptr
    cdef const double[::1] sw = T.sw
    cdef Py_ssize_t d = T.d, n_steps = T.n_steps, batch = T.batch
    cdef double lam1 = T.lam1, lam2 = T.lam2
    cdef bint fit_intercept = T.fit_intercept, lazy = T.lazy
    cdef Py_ssize_t K = c.shape[0]
    cdef Py_ssize_t n_order = order.shape[0]
    cdef const double* X = &data[0]
    cdef const int32_t* ind = NULL
    cdef const int64_t* ptr = NULL
    cdef const double* x
    cdef const int32_t* idx
    cdef Py_ssize_t step, j, i, k, t, nnz, pos = 0, dK = d * K
    cdef double a = scale[0], beta = scale[1], shrink = 1.0 / (1.0 + eta * lam2)
    cdef double thr = eta * lam1, wgt
    cdef double* R = <double*>malloc(batch * K * sizeof(double))
    cdef Py_ssize_t* rows = <Py_ssize_t*>malloc(batch * sizeof(Py_ssize_t))
    cdef double* Up = &U[0, 0]
    cdef const double* Bp = &B[0, 0]
    cdef double* r
    if R == NULL or rows == NULL:
        free(R)
        free(rows)
        raise MemoryError()
    if indptr.shape[0] > 0:
        ind = &indices[0] if indices.shape[0] > 0 else NULL
        ptr = &indptr[0]
    with nogil:
        for step in range(n_steps):
            # residuals p_i(W) - P0_i of the batch, all at the current W
            for j in range(batch):
                i = order[pos]
                pos = pos + 1 if pos + 1 < n_order else 0
                rows[j] = i
                r = R + j * K
                nnz = _row(X, ind, ptr, d, i, &x, &idx)
                for k in range(K):
                    r[k] = c[k] + (beta * BX[i, k] if lazy else 0.0)
                _row_times(x, idx, nnz, Up, K, a if lazy else 1.0, r)
                _softmax(r, K)
                for k in range(K):
                    r[k] -= P0[i, k]
            # the step
            if lazy:
                for j in range(batch):
                    i = rows[j]
                    nnz = _row(X, ind, ptr, d, i, &x, &idx)
                    _row_outer(x, idx, nnz, R + j * K, K, -eta * sw[i] / (batch * a), Up)
                a *= shrink
                beta = (beta - eta) * shrink
                if a < _A_MIN:
                    for t in range(dK):
                        Up[t] *= a
                    a = 1.0
            else:
                for t in range(dK):
                    Up[t] -= eta * Bp[t]
                for j in range(batch):
                    i = rows[j]
                    nnz = _row(X, ind, ptr, d, i, &x, &idx)
                    _row_outer(x, idx, nnz, R + j * K, K, -eta * sw[i] / batch, Up)
                for t in range(dK):
                    Up[t] = soft_threshold(Up[t], thr) * shrink
            if fit_intercept:
                for k in range(K):
                    wgt = Bc[k]
                    for j in range(batch):
                        wgt += sw[rows[j]] * R[j * K + k] / batch
                    c[k] -= eta_c * wgt
    free(R)
    free(rows)
    scale[0] = a
    scale[1] = beta
