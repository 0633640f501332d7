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
entries of a feature are contiguous for both storages.  The values are float64 or float32
(fused types: a float32 X is read as it is stored, each value widened to double; every
accumulator is a double), and ``rows_times``, ``rows_transpose_times`` and
``row_sqnorms`` are the full passes over them (a float32 X never widened whole).
``line_sums`` and ``softmax_along`` are the batch sums of CGVR's multinomial line search.
"""
from cython cimport floating
from libc.math cimport exp, expm1, fabs, log, log1p

import numpy as np
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from ._prox cimport soft_threshold

# a float32 X read in place (``gather``): the rows of the order are copied, in chunks of at
# most this many rows and entries, to a buffer read sequentially (a random gather is cheaper
# than the kernel's random reads)
cdef Py_ssize_t _GATHER_ROWS = 1024
cdef Py_ssize_t _GATHER_ENTRIES = 1 << 15
# the gather asks the cache for the row this many places ahead (random rows: the loads of
# several rows then overlap)
cdef Py_ssize_t _GATHER_AHEAD = 8

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define SKSTOCH_PREFETCH(p) __builtin_prefetch(p)
    #else
    #define SKSTOCH_PREFETCH(p) ((void)0)
    #endif
    """
    void SKSTOCH_PREFETCH(const void* p) noexcept nogil

# W = a U + beta B: U is rescaled into W when a falls below this (a shrinks by 1/(1+eta lam2)
# per step; the rescale costs one O(d K) pass)
cdef double _A_MIN = 1e-100


# a CSR matrix's row pointers, int64 or int32 (scipy's index dtype, read without a copy);
# both NULL for dense rows
cdef struct _ptr_t:
    const int64_t* p64
    const int32_t* p32


cdef inline bint _sparse(_ptr_t ptr) noexcept nogil:
    return ptr.p64 != NULL or ptr.p32 != NULL


cdef inline Py_ssize_t _row(const floating* data, const int32_t* indices,
                            _ptr_t ptr, Py_ssize_t d, Py_ssize_t i,
                            const floating** x, const int32_t** idx) noexcept nogil:
    cdef int64_t start, stop
    if ptr.p64 != NULL:
        start, stop = ptr.p64[i], ptr.p64[i + 1]
    elif ptr.p32 != NULL:
        start, stop = ptr.p32[i], ptr.p32[i + 1]
    else:
        x[0] = data + i * d
        idx[0] = NULL
        return d
    x[0] = data + start
    idx[0] = indices + start
    return <Py_ssize_t>(stop - start)


cdef inline void _row_times(const floating* x, const int32_t* idx, Py_ssize_t nnz,
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


cdef inline void _row_dots(const floating* x, const int32_t* idx, Py_ssize_t nnz,
                           const double* M, Py_ssize_t K, double* out) noexcept nogil:
    """out = x M for a (d, K) C-ordered M, one column of M at a time in four partial
    sums (no sum through memory: faster than ``_row_times`` for the full passes)."""
    cdef Py_ssize_t t, k, n4 = nnz - nnz % 4
    cdef double s0, s1, s2, s3
    for k in range(K):
        s0 = s1 = s2 = s3 = 0.0
        if idx == NULL:
            for t in range(0, n4, 4):
                s0 += x[t] * M[t * K + k]
                s1 += x[t + 1] * M[(t + 1) * K + k]
                s2 += x[t + 2] * M[(t + 2) * K + k]
                s3 += x[t + 3] * M[(t + 3) * K + k]
            for t in range(n4, nnz):
                s0 += x[t] * M[t * K + k]
        else:
            for t in range(0, n4, 4):
                s0 += x[t] * M[idx[t] * K + k]
                s1 += x[t + 1] * M[idx[t + 1] * K + k]
                s2 += x[t + 2] * M[idx[t + 2] * K + k]
                s3 += x[t + 3] * M[idx[t + 3] * K + k]
            for t in range(n4, nnz):
                s0 += x[t] * M[idx[t] * K + k]
        out[k] = (s0 + s1) + (s2 + s3)


cdef inline void _row_outer(const floating* x, const int32_t* idx, Py_ssize_t nnz,
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
    """What :func:`svrg_epoch` and the full passes read about one fit, built once per solve.

    Parameters
    ----------
    data, indices, indptr : ndarray
        The rows: CSR arrays (float64 or float32, int32, int64 or int32: read in place), or
        the C-ordered (n, d) array raveled (float64 or float32) with ``indices`` and
        ``indptr`` empty.
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
    gather : bool, default=False
        Whether the epochs copy the rows of their (random) order, a chunk at a time, to a
        buffer they read sequentially (X read in place, its rows not in the order).
    """

    cdef const double[::1] data64
    cdef const float[::1] data32
    cdef bint is32
    cdef const int32_t[::1] indices
    cdef const int64_t[::1] indptr
    cdef const int32_t[::1] indptr32
    cdef const double[::1] sw
    cdef Py_ssize_t d, n, n_steps, batch, max_row
    cdef double lam1, lam2
    cdef bint fit_intercept, lazy, gather

    def __init__(self, data, const int32_t[::1] indices,
                 indptr, Py_ssize_t d, const double[::1] sw,
                 Py_ssize_t n_steps, Py_ssize_t batch, double lam1, double lam2,
                 bint fit_intercept, bint lazy, bint gather=False):
        self.is32 = data.dtype == np.float32
        if self.is32:
            self.data32 = data
        else:
            self.data64 = data
        if indptr.dtype == np.int32:
            self.indptr32 = indptr
            self.indptr = np.empty(0, np.int64)
        else:
            self.indptr = indptr
            self.indptr32 = np.empty(0, np.int32)
        self.indices, self.d, self.sw = indices, d, sw
        self.n = indptr.shape[0] - 1 if indptr.shape[0] > 0 else (
            data.shape[0] // d if d > 0 else 0)
        # the most entries of a row (sizes the gather's buffer: wide CSR rows are short)
        cdef Py_ssize_t i
        self.max_row = d if indptr.shape[0] == 0 else 0
        for i in range(self.indptr.shape[0] - 1):
            self.max_row = max(self.max_row, <Py_ssize_t>(self.indptr[i + 1] - self.indptr[i]))
        for i in range(self.indptr32.shape[0] - 1):
            self.max_row = max(self.max_row,
                               <Py_ssize_t>(self.indptr32[i + 1] - self.indptr32[i]))
        self.n_steps, self.batch, self.lam1, self.lam2 = n_steps, batch, lam1, lam2
        self.fit_intercept, self.lazy, self.gather = fit_intercept, lazy, gather

    cdef inline const int32_t* _ind(self) noexcept nogil:
        return &self.indices[0] if self.indices.shape[0] > 0 else NULL

    cdef inline _ptr_t _ptr(self) noexcept nogil:
        cdef _ptr_t ptr
        ptr.p64 = &self.indptr[0] if self.indptr.shape[0] > 0 else NULL
        ptr.p32 = &self.indptr32[0] if self.indptr32.shape[0] > 0 else NULL
        return ptr

    cdef inline const double* _x64(self) noexcept nogil:
        return &self.data64[0] if self.data64.shape[0] > 0 else NULL

    cdef inline const float* _x32(self) noexcept nogil:
        return &self.data32[0] if self.data32.shape[0] > 0 else NULL


def svrg_epoch(MultinomialTables T, const Py_ssize_t[::1] order,
               const double[:, ::1] P0, const double[:, ::1] BX, const double[:, ::1] B,
               const double[::1] Bc, double[:, ::1] U, double[::1] c, double[::1] scale,
               double eta, double eta_c):
    """Run ``T.n_steps`` steps over ``order`` (mini-batches of ``T.batch`` consecutive rows,
    wrapping around) from the snapshot ``P0``, ``BX``, ``B``, ``Bc``; ``scale`` is
    ``[a, beta]`` of the lazy form (read and updated)."""
    cdef double a = scale[0], beta = scale[1]
    cdef int status
    with nogil:
        if T.is32:
            status = _epoch(T._x32(), T, order, P0, BX, B, Bc, U, c, &a, &beta, eta, eta_c)
        else:
            status = _epoch(T._x64(), T, order, P0, BX, B, Bc, U, c, &a, &beta, eta, eta_c)
    if status != 0:
        raise MemoryError()
    scale[0] = a
    scale[1] = beta


cdef struct _buffer_t:
    # the next rows of the order gathered contiguously (``T.gather``): values, indices
    # (CSR) and the start of each row, their snapshot entries (P0, BX) and weights;
    # ``next`` is the first row not yet used
    void* values
    int32_t* indices
    Py_ssize_t* start
    double* p0
    double* bx
    double* sw
    Py_ssize_t capacity, max_rows, n_rows, next


cdef Py_ssize_t _fill(const floating* X, const int32_t* ind, _ptr_t ptr,
                      Py_ssize_t d, const Py_ssize_t[::1] order, Py_ssize_t pos,
                      const double* P0, const double* BX, const double* sw, Py_ssize_t K,
                      _buffer_t* buf) noexcept nogil:
    """Copy the rows ``order[pos], order[pos + 1], ...`` (wrapping) into ``buf`` while they
    fit; return their number."""
    cdef Py_ssize_t r = 0, used = 0, nnz, i, t, n_order = order.shape[0]
    cdef Py_ssize_t ahead = (pos + _GATHER_AHEAD) % n_order
    cdef const floating* x
    cdef const int32_t* idx
    cdef floating* values = <floating*>buf.values
    while r < buf.max_rows:
        i = order[ahead]
        nnz = _row(X, ind, ptr, d, i, &x, &idx)
        t = 0
        while t < nnz:
            SKSTOCH_PREFETCH(x + t)
            if idx != NULL:
                SKSTOCH_PREFETCH(idx + t)
            t += 64 // sizeof(floating)
        SKSTOCH_PREFETCH(P0 + i * K)
        if BX != NULL:
            SKSTOCH_PREFETCH(BX + i * K)
        SKSTOCH_PREFETCH(sw + i)
        ahead = ahead + 1 if ahead + 1 < n_order else 0
        i = order[pos]
        nnz = _row(X, ind, ptr, d, i, &x, &idx)
        if used + nnz > buf.capacity:
            break
        memcpy(values + used, x, nnz * sizeof(floating))
        memcpy(buf.p0 + r * K, P0 + i * K, K * sizeof(double))
        if BX != NULL:
            memcpy(buf.bx + r * K, BX + i * K, K * sizeof(double))
        buf.sw[r] = sw[i]
        if idx != NULL:
            memcpy(buf.indices + used, idx, nnz * sizeof(int32_t))
        buf.start[r] = used
        used += nnz
        r += 1
        pos = pos + 1 if pos + 1 < n_order else 0
    buf.start[r] = used
    buf.n_rows, buf.next = r, 0
    return r


cdef int _epoch(const floating* X, MultinomialTables T, const Py_ssize_t[::1] order,
                const double[:, ::1] P0, const double[:, ::1] BX, const double[:, ::1] B,
                const double[::1] Bc, double[:, ::1] U, double[::1] c, double* a_io,
                double* beta_io, double eta, double eta_c) noexcept nogil:
    cdef const double[::1] sw = T.sw
    cdef Py_ssize_t d = T.d, n_steps = T.n_steps, batch = T.batch
    cdef double lam1 = T.lam1, lam2 = T.lam2
    cdef bint fit_intercept = T.fit_intercept, lazy = T.lazy, gather = T.gather
    cdef Py_ssize_t K = c.shape[0]
    cdef Py_ssize_t n_order = order.shape[0]
    cdef const int32_t* ind = T._ind()
    cdef _ptr_t ptr = T._ptr()
    cdef const floating* x
    cdef const int32_t* idx
    cdef Py_ssize_t step, j, i, k, t, nnz, r, pos = 0, dK = d * K
    cdef double a = a_io[0], beta = beta_io[0], shrink = 1.0 / (1.0 + eta * lam2)
    cdef double thr = eta * lam1, wgt
    cdef double* Up = &U[0, 0]
    cdef const double* Bp = &B[0, 0]
    cdef double* rr
    # the batch: residuals, where its rows' entries are and their weights
    cdef double* R = <double*>malloc(batch * K * sizeof(double))
    cdef const floating** xs = <const floating**>malloc(batch * sizeof(void*))
    cdef const int32_t** idxs = <const int32_t**>malloc(batch * sizeof(void*))
    cdef Py_ssize_t* nnzs = <Py_ssize_t*>malloc(batch * sizeof(Py_ssize_t))
    cdef double* sws = <double*>malloc(batch * sizeof(double))
    cdef _buffer_t buf
    cdef int status = 0
    buf.values, buf.indices, buf.start, buf.p0, buf.bx, buf.sw = NULL, NULL, NULL, NULL, NULL, NULL
    cdef const double* p0 = NULL
    cdef const double* bx = NULL
    cdef const double* BXp = &BX[0, 0] if lazy else NULL
    cdef double s_i
    buf.n_rows, buf.next, buf.max_rows, buf.capacity = 0, 0, 0, 0
    if gather:
        buf.max_rows = max(_GATHER_ROWS, batch)
        buf.capacity = max(_GATHER_ENTRIES, batch * T.max_row)
        buf.values = malloc(buf.capacity * sizeof(floating))
        buf.start = <Py_ssize_t*>malloc((buf.max_rows + 1) * sizeof(Py_ssize_t))
        buf.p0 = <double*>malloc(buf.max_rows * K * sizeof(double))
        buf.bx = <double*>malloc(buf.max_rows * K * sizeof(double))
        buf.sw = <double*>malloc(buf.max_rows * sizeof(double))
        if _sparse(ptr):
            buf.indices = <int32_t*>malloc(buf.capacity * sizeof(int32_t))
    if (R == NULL or xs == NULL or idxs == NULL or nnzs == NULL or sws == NULL
            or gather
            and (buf.values == NULL or buf.start == NULL or buf.p0 == NULL or buf.bx == NULL
                 or buf.sw == NULL or _sparse(ptr) and buf.indices == NULL)):
        status = -1
        n_steps = 0
    for step in range(n_steps):
        if gather and buf.next + batch > buf.n_rows:
            _fill(X, ind, ptr, d, order, pos, &P0[0, 0], BXp, &sw[0], K, &buf)
        # residuals p_i(W) - P0_i of the batch, all at the current W
        for j in range(batch):
            i = order[pos]
            pos = pos + 1 if pos + 1 < n_order else 0
            if gather:
                r = buf.next + j
                x = <const floating*>buf.values + buf.start[r]
                idx = buf.indices + buf.start[r] if _sparse(ptr) else NULL
                nnz = buf.start[r + 1] - buf.start[r]
                p0, bx, s_i = buf.p0 + r * K, buf.bx + r * K, buf.sw[r]
            else:
                nnz = _row(X, ind, ptr, d, i, &x, &idx)
                p0, s_i = &P0[i, 0], sw[i]
                bx = BXp + i * K if lazy else NULL
            xs[j], idxs[j], nnzs[j], sws[j] = x, idx, nnz, s_i
            rr = R + j * K
            for k in range(K):
                rr[k] = c[k] + (beta * bx[k] if lazy else 0.0)
            _row_times(x, idx, nnz, Up, K, a if lazy else 1.0, rr)
            _softmax(rr, K)
            for k in range(K):
                rr[k] -= p0[k]
        buf.next += batch
        # the step
        if lazy:
            for j in range(batch):
                _row_outer(xs[j], idxs[j], nnzs[j], R + j * K, K, -eta * sws[j] / (batch * a),
                           Up)
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
                _row_outer(xs[j], idxs[j], nnzs[j], R + j * K, K, -eta * sws[j] / batch, Up)
            for t in range(dK):
                Up[t] = soft_threshold(Up[t], thr) * shrink
        if fit_intercept:
            for k in range(K):
                wgt = Bc[k]
                for j in range(batch):
                    wgt += sws[j] * R[j * K + k] / batch
                c[k] -= eta_c * wgt
    free(R)
    free(xs)
    free(idxs)
    free(nnzs)
    free(sws)
    free(buf.p0)
    free(buf.bx)
    free(buf.sw)
    free(buf.values)
    free(buf.indices)
    free(buf.start)
    a_io[0] = a
    beta_io[0] = beta
    return status


def rows_times(MultinomialTables T, const double[:, ::1] M, double[:, ::1] out):
    """``out = X M`` for a (d, K) ``M``: the (n, K) products of the rows."""
    with nogil:
        if T.is32:
            _rows_times(T._x32(), T, M, out)
        else:
            _rows_times(T._x64(), T, M, out)


cdef void _rows_times(const floating* X, MultinomialTables T, const double[:, ::1] M,
                      double[:, ::1] out) noexcept nogil:
    cdef Py_ssize_t i, nnz, K = M.shape[1]
    cdef const floating* x
    cdef const int32_t* idx
    for i in range(T.n):
        nnz = _row(X, T._ind(), T._ptr(), T.d, i, &x, &idx)
        _row_dots(x, idx, nnz, &M[0, 0], K, &out[i, 0])


def rows_transpose_times(MultinomialTables T, const double[:, ::1] Rm, double[:, ::1] out):
    """``out = X^T Rm`` for an (n, K) ``Rm``: the (d, K) sum of the rows' outer products,
    in row order."""
    with nogil:
        if T.is32:
            _rows_transpose_times(T._x32(), T, Rm, out)
        else:
            _rows_transpose_times(T._x64(), T, Rm, out)


cdef void _rows_transpose_times(const floating* X, MultinomialTables T,
                                const double[:, ::1] Rm, double[:, ::1] out) noexcept nogil:
    cdef Py_ssize_t i, t, nnz, K = Rm.shape[1]
    cdef const floating* x
    cdef const int32_t* idx
    cdef double* o = &out[0, 0]
    for t in range(T.d * K):
        o[t] = 0.0
    for i in range(T.n):
        nnz = _row(X, T._ind(), T._ptr(), T.d, i, &x, &idx)
        _row_outer(x, idx, nnz, &Rm[i, 0], K, 1.0, o)


def row_sqnorms(MultinomialTables T, double[::1] out):
    """``out[i] = ||x_i||^2`` (accumulated in double)."""
    cdef Py_ssize_t i, t, nnz
    cdef double acc
    cdef const float* x32
    cdef const double* x64
    cdef const int32_t* idx
    with nogil:
        for i in range(T.n):
            acc = 0.0
            if T.is32:
                nnz = _row(T._x32(), T._ind(), T._ptr(), T.d, i, &x32, &idx)
                for t in range(nnz):
                    acc += <double>x32[t] * x32[t]
            else:
                nnz = _row(T._x64(), T._ind(), T._ptr(), T.d, i, &x64, &idx)
                for t in range(nnz):
                    acc += x64[t] * x64[t]
            out[i] = acc


def softmax_gradient(MultinomialTables T, const double[:, ::1] P, const Py_ssize_t[::1] y,
                     const double[::1] s, double[:, ::1] out, double[::1] out_c):
    """``out = X^T R`` and ``out_c = sum_i R_i`` for ``R_ik = s_i (P_ik - [k = y_i])`` (the
    data gradient of the softmax log loss at the probabilities ``P``), without forming the
    (n, K) ``R``."""
    cdef int status
    with nogil:
        if T.is32:
            status = _softmax_gradient(T._x32(), T, P, y, s, out, out_c)
        else:
            status = _softmax_gradient(T._x64(), T, P, y, s, out, out_c)
    if status != 0:
        raise MemoryError()


cdef int _softmax_gradient(const floating* X, MultinomialTables T, const double[:, ::1] P,
                            const Py_ssize_t[::1] y, const double[::1] s, double[:, ::1] out,
                            double[::1] out_c) noexcept nogil:
    cdef Py_ssize_t i, k, t, nnz, K = P.shape[1]
    cdef const floating* x
    cdef const int32_t* idx
    cdef double* o = &out[0, 0]
    cdef double* rr = <double*>malloc(K * sizeof(double))
    if rr == NULL:
        return -1
    for t in range(T.d * K):
        o[t] = 0.0
    for k in range(K):
        out_c[k] = 0.0
    for i in range(T.n):
        for k in range(K):
            rr[k] = P[i, k]
        rr[y[i]] -= 1.0
        for k in range(K):
            rr[k] *= s[i]
            out_c[k] += rr[k]
        nnz = _row(X, T._ind(), T._ptr(), T.d, i, &x, &idx)
        _row_outer(x, idx, nnz, rr, K, 1.0, o)
    free(rr)
    return 0


# ---------------------------------------------------------------------------------------------
# CGVR's multinomial line search (``skstoch._solvers.cgvr_multinomial``): the batch margins
# along a direction, Z + a Q, read once per trial step (no (|S|, K) temporaries)


cdef _check_line(const double[:, ::1] Z, const double[:, ::1] Q, Py_ssize_t n_rows):
    if Z.shape[0] != Q.shape[0] or Z.shape[1] != Q.shape[1] or Z.shape[0] != n_rows:
        raise ValueError(f"Z ({Z.shape[0]}, {Z.shape[1]}), Q ({Q.shape[0]}, {Q.shape[1]}) "
                         f"and {n_rows} rows disagree")
    if Z.shape[1] < 1:
        raise ValueError("the margins need at least one class")


def line_sums(const double[:, ::1] Z, const double[:, ::1] Q, const Py_ssize_t[::1] y,
              const double[::1] s, double a, bint changes=False):
    """``(sum_i s_i (lse(z_i) - z_{i y_i}), sum_i s_i (p_i . q_i - q_{i y_i}))`` at the
    margins ``Z + a Q`` (``p_i`` their softmax): the batch part of the line-search objective
    and of its derivative in ``a``.  ``y`` holds class codes in 0..K-1.

    With ``changes`` the value is taken from a = 0, each row's change
    ``lse(z_i + a q_i) - lse(z_i) - a q_{i y_i}`` to its own rounding where every
    ``|a q_ik| <= 1``: ``log1p(softmax(z_i) . expm1(a q_i))`` (near the optimum a line's
    change is below the rounding of the sum of the losses)."""
    _check_line(Z, Q, y.shape[0])
    if s.shape[0] != y.shape[0]:
        raise ValueError(f"{s.shape[0]} weights for {y.shape[0]} rows")
    cdef Py_ssize_t i, k, K = Z.shape[1], n = Z.shape[0], bad = -1
    cdef double m, e, se, seq, za, loss
    cdef double m0, se0, sem, aq_max
    cdef bint fused
    # compensated sums: near the optimum the line search compares values that differ in
    # their last digits, and a plain running sum over the rows loses n roundings
    cdef double value = 0.0, value_c = 0.0, deriv = 0.0, deriv_c = 0.0
    with nogil:
        for i in range(n):
            if y[i] < 0 or y[i] >= K:
                bad = i
                break
            m = Z[i, 0] + a * Q[i, 0]
            for k in range(1, K):
                za = Z[i, k] + a * Q[i, k]
                if za > m:
                    m = za
            se = 0.0
            seq = 0.0
            for k in range(K):
                e = exp(Z[i, k] + a * Q[i, k] - m)
                se += e
                seq += e * Q[i, k]
            k = y[i]
            loss = m + log(se) - (Z[i, k] + a * Q[i, k])
            if changes:
                m0 = Z[i, 0]
                aq_max = 0.0
                for k in range(K):
                    m0 = Z[i, k] if Z[i, k] > m0 else m0
                    aq_max = fabs(a * Q[i, k]) if fabs(a * Q[i, k]) > aq_max else aq_max
                fused = aq_max <= 1.0
                se0 = 0.0
                sem = 0.0
                for k in range(K):
                    e = exp(Z[i, k] - m0)
                    se0 += e
                    if fused:
                        sem += e * expm1(a * Q[i, k])
                k = y[i]
                if fused:
                    loss = log1p(sem / se0) - a * Q[i, k]
                else:
                    loss -= m0 + log(se0) - Z[i, k]
            _neumaier_add(&value, &value_c, s[i] * loss)
            _neumaier_add(&deriv, &deriv_c, s[i] * (seq / se - Q[i, k]))
    if bad >= 0:
        raise ValueError(f"class code y[{bad}] = {y[bad]} is not in 0..{K - 1}")
    return value + value_c, deriv + deriv_c


cdef inline void _neumaier_add(double* total, double* compensation, double term) noexcept nogil:
    """Add ``term`` to ``total``, keeping the rounding lost in ``compensation`` (Neumaier)."""
    cdef double t = total[0] + term
    if fabs(total[0]) >= fabs(term):
        compensation[0] += (total[0] - t) + term
    else:
        compensation[0] += (term - t) + total[0]
    total[0] = t


def softmax_along(const double[:, ::1] Z, const double[:, ::1] Q, double a,
                  double[:, ::1] out):
    """``out`` = the row-wise softmax of ``Z + a Q`` (the batch probabilities at a step)."""
    _check_line(Z, Q, out.shape[0])
    if out.shape[1] != Z.shape[1]:
        raise ValueError(f"out has {out.shape[1]} columns for {Z.shape[1]} classes")
    cdef Py_ssize_t i, k, K = Z.shape[1]
    with nogil:
        for i in range(Z.shape[0]):
            for k in range(K):
                out[i, k] = Z[i, k] + a * Q[i, k]
            _softmax(&out[i, 0], K)
