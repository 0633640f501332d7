"""Kernels of the l1-ball constrained least squares (paper 001, section 5.1).

Objective (per output): F(w, b) = 1/(2S) sum_i s_i (x_i.w + b - y_i)^2 + alpha ||w||^2,
S = sum_i s_i, subject to ||w||_1 <= radius.  A sampled row i (uniform) gives the unbiased
stochastic gradient c_i r_i x_i + 2 alpha w with r_i = x_i.w + b - y_i and c_i = n s_i / S
(``cweight`` below, computed in Python).

Kernels (one call = one epoch or one whole run; Python validated every array and index):

* ``epro_sgd_epoch``: one unprojected epoch of Epro-SGD (Alg. 1, step 6) on the augmented
  objective F + lam [||w||_1 - radius]_+, returning the average of the iterates x_1..x_T.
  Dense rows take the direct O(d) step.  Sparse rows take a lazy O(nnz) amortized step: w is
  stored as w_j = sign_j * scale * max(K_j - C, 0), where ``scale`` carries the ridge factor
  (1 - 2 eta alpha) and ``C`` the cumulative penalty shrinkage (Tsuruoka et al.'s cumulative
  penalty with clipping); a monotone radix heap on K_j finds the zero crossings at their
  step, which keeps ||w||_1 exact (needed at every step for the penalty's indicator) and
  gives each coordinate's sum of iterates in O(1) from running sums of the scale.
  Both paths apply the penalty subgradient lam*sign(w_j) *truncated at zero* (a coordinate
  that would cross zero stops at zero); the dense path does the same so the two agree.
* ``projected_sgd``: the 'sgd' baseline, projection onto the l1 ball after every step
  (CSR rows: the same lazy representation, the projection by a heap, O(nnz log d)).
* ``oneproj_sgd``: the 'oneproj' baseline (smoothed penalty, no projection inside).
* ``orda_epoch``: one ORDA run (Alg. 2) with g(w) = alpha ||w||^2, used by Epro-ORDA (Alg. 3).
* ``svrg_epoch``: one prox-SVRG epoch of 'epro_svrg' (beyond the paper).
* ``sparse_gram``: the weighted Gram matrix of a working set's columns of CSR rows (float32
  rows without a float64 copy).
* ``sparse_gram_columns``: the same Gram matrix and the working set's columns themselves
  (CSC, double), from one pass over the rows (the exact solver's working sets on CSR X).

Every kernel takes the problem's tables as one :class:`LassoData` (rows, targets, sampling
weights, alpha, radius, fit_intercept, the generator's key), built once per output, and
the per-call values (iterate, step, multiplier, counter) as arguments.
"""
import numpy as np

from libc.math cimport fabs, sqrt, exp, expm1, log1p
from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t
from cpython.mem cimport PyMem_Malloc, PyMem_Free

from ._dataset cimport (RowDataset, rows_t, rowvals_t, dataset_row, row_dot, row_axpy,
                        row_value)
from ._projection cimport project_l1_ball
from ._prox cimport soft_threshold
from ._random cimport rng_state, rng_init, rng_randint


cdef inline const void* _values_ptr(rowvals_t data) noexcept nogil:
    """The first stored value of a row (float64 or float32), for a prefetch."""
    if data.f32 != NULL:
        return <const void*>data.f32
    return <const void*>data.f64


cdef inline double _sign(double v) noexcept nogil:
    return (v > 0) - (v < 0)


# ---------------------------------------------------------------------------------------
# the per-problem tables, bundled once per output

ctypedef struct lasso_t:
    const rows_t* X
    const double* y
    const double* cw          # c_i = n s_i / S
    double alpha
    double radius
    bint fit_intercept


cdef class LassoData:
    """The per-problem tables every kernel of this module reads, built once per output.

    Parameters
    ----------
    ds : RowDataset
        The rows of X, float64 or float32 (read in place, each value widened to double).
    y : ndarray of float64, shape (n_samples,)
        Targets.
    cweight : ndarray of float64, shape (n_samples,)
        Sampling weights c_i = n s_i / S (they make a uniformly sampled row's gradient
        unbiased).
    alpha, radius : float
        Ridge strength and l1 radius.
    fit_intercept : bool
    seed, stream : int
        Key of the counter-based generator that samples the rows.
    """
    cdef lasso_t p
    cdef readonly uint64_t seed, stream
    cdef RowDataset ds
    cdef const double[::1] y_view
    cdef const double[::1] cw_view

    def __cinit__(self, RowDataset ds, const double[::1] y, const double[::1] cweight,
                  double alpha, double radius, bint fit_intercept, uint64_t seed,
                  uint64_t stream):
        cdef Py_ssize_t n = ds.rows.n_samples
        if y.shape[0] != n or cweight.shape[0] != n:
            raise ValueError(f"y ({y.shape[0]}) and cweight ({cweight.shape[0]}) must have "
                             f"one entry per row of X ({n})")
        if n == 0:
            raise ValueError("X has no rows")
        self.ds = ds
        self.y_view = y
        self.cw_view = cweight
        self.p.X = &ds.rows
        self.p.y = &y[0]
        self.p.cw = &cweight[0]
        self.p.alpha = alpha
        self.p.radius = radius
        self.p.fit_intercept = fit_intercept
        self.seed = seed
        self.stream = stream

    @property
    def n_features(self):
        return self.p.X.n_features


# ---------------------------------------------------------------------------------------
# indexed binary min-heap on keys[j] (coordinates of w), used by the lazy sparse epoch

cdef inline void _heap_swap(Py_ssize_t* heap, Py_ssize_t* pos, Py_ssize_t a,
                            Py_ssize_t b) noexcept nogil:
    cdef Py_ssize_t ja = heap[a], jb = heap[b]
    heap[a] = jb
    heap[b] = ja
    pos[jb] = a
    pos[ja] = b


cdef void _heap_up(Py_ssize_t* heap, Py_ssize_t* pos, const double* keys,
                   Py_ssize_t k) noexcept nogil:
    cdef Py_ssize_t parent
    while k > 0:
        parent = (k - 1) >> 1
        if keys[heap[k]] < keys[heap[parent]]:
            _heap_swap(heap, pos, k, parent)
            k = parent
        else:
            break


cdef void _heap_down(Py_ssize_t* heap, Py_ssize_t* pos, const double* keys,
                     Py_ssize_t size, Py_ssize_t k) noexcept nogil:
    cdef Py_ssize_t left, right, smallest
    while True:
        left = 2 * k + 1
        right = left + 1
        smallest = k
        if left < size and keys[heap[left]] < keys[heap[smallest]]:
            smallest = left
        if right < size and keys[heap[right]] < keys[heap[smallest]]:
            smallest = right
        if smallest == k:
            break
        _heap_swap(heap, pos, k, smallest)
        k = smallest


cdef Py_ssize_t _heap_remove(Py_ssize_t* heap, Py_ssize_t* pos, const double* keys,
                             Py_ssize_t size, Py_ssize_t j) noexcept nogil:
    """Remove coordinate j (which is in the heap); return the new size."""
    cdef Py_ssize_t k = pos[j]
    cdef Py_ssize_t last = size - 1
    if k != last:
        _heap_swap(heap, pos, k, last)
    pos[j] = -1
    size = last
    if k < size:
        _heap_down(heap, pos, keys, size, k)
        _heap_up(heap, pos, keys, k)
    return size


cdef Py_ssize_t _heap_push(Py_ssize_t* heap, Py_ssize_t* pos, const double* keys,
                           Py_ssize_t size, Py_ssize_t j) noexcept nogil:
    heap[size] = j
    pos[j] = size
    _heap_up(heap, pos, keys, size)
    return size + 1


cdef Py_ssize_t _last_alive(const double* carr, Py_ssize_t lo, Py_ssize_t hi,
                            double key) noexcept nogil:
    """Largest t in [lo, hi) with carr[t] < key (carr is nondecreasing), or lo - 1."""
    cdef Py_ssize_t mid
    if hi <= lo or carr[lo] >= key:
        return lo - 1
    # invariant: carr[lo] < key; answer in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if carr[mid] < key:
            lo = mid
        else:
            hi = mid
    return lo


cdef int _check_lengths(Py_ssize_t d, const double[::1] a,
                        const double[::1] b) except -1:
    """The kernels run without bounds checks: both vectors must have d entries."""
    if a.shape[0] != d or b.shape[0] != d:
        raise ValueError(f"the coefficient vectors must have n_features = {d} entries, got "
                         f"{a.shape[0]} and {b.shape[0]}")
    return 0


cdef double _ridge_contraction(double eta, double alpha) except -1.0:
    """Factor 1 - 2 eta alpha of a constant-step ridge shrink, checked to be positive."""
    cdef double a = 1.0 - 2.0 * eta * alpha
    if not a > 0.0:
        raise ValueError(
            f"the step size is too large for the ridge term: eta * alpha = {eta * alpha:.3g} "
            f"must be < 0.5 (decrease eta0)")
    return a


def epro_sgd_epoch(LassoData P, double[::1] w, double intercept, double eta, double lam,
                   Py_ssize_t n_steps, uint64_t counter, double[::1] w_avg,
                   Py_ssize_t window=0):
    """One unprojected Epro-SGD epoch (Alg. 1, steps 4-8) of ``n_steps`` sampled rows, step
    ``eta``, exact-penalty multiplier ``lam``.

    ``w`` (the epoch's start, length d) is overwritten with the last iterate; ``w_avg``
    receives the average of the iterates x_1..x_T (start included, last excluded).
    ``window`` (sparse path only) is the number of steps between full materializations
    (0 chooses max(1024, d)).

    Returns
    -------
    intercept_last, intercept_avg : float
        The intercept's last iterate and its average over the epoch.
    counter : int
        The generator's counter after the epoch (the next epoch continues the stream).
    """
    cdef Py_ssize_t d = P.p.X.n_features
    cdef rng_state rng
    cdef double a
    cdef double b = intercept, b_avg
    cdef _LazyState st
    _check_lengths(d, w, w_avg)
    if n_steps <= 0:
        w_avg[:] = w
        return intercept, intercept, counter
    a = _ridge_contraction(eta, P.p.alpha)
    rng_init(&rng, P.seed, P.stream, counter)
    if P.p.X.indptr == NULL:
        with nogil:
            b_avg = _epro_dense(&P.p, &w[0], &b, eta, a, lam, n_steps, &rng, &w_avg[0])
        return b, b_avg, rng.counter
    if window <= 0:
        window = max(1024, d)
    window = min(window, n_steps)
    if window >= 2 ** 31 - 2 or d >= 2 ** 31 - 2:
        raise ValueError("too many features or steps per window for 32-bit indices")
    _lazy_alloc(&st, d, window)
    try:
        with nogil:
            b_avg = _epro_sparse(&P.p, &w[0], &b, eta, a, lam, n_steps, &rng, &w_avg[0],
                                 window, &st)
    finally:
        _lazy_free(&st)
    return b, b_avg, rng.counter


cdef double _epro_dense(const lasso_t* P, double* w, double* b, double eta, double a,
                        double lam, Py_ssize_t n_steps, rng_state* rng,
                        double* w_avg) noexcept nogil:
    """Dense rows: direct step.  Returns the intercept average; b holds the last iterate."""
    cdef const rows_t* X = P.X
    cdef const double* y = P.y
    cdef const double* cw = P.cw
    cdef double radius = P.radius
    cdef bint fit_intercept = P.fit_intercept
    cdef Py_ssize_t d = X.n_features, t, j, i
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    cdef double r, g, shrink, norm1 = 0.0, new_norm, b_sum = 0.0, v
    for j in range(d):
        w_avg[j] = 0.0
        norm1 += fabs(w[j])
    for t in range(n_steps):
        i = rng_randint(rng, X.n_samples)
        nnz = dataset_row(X, i, &data, &indices)
        r = row_dot(data, indices, nnz, w) + b[0] - y[i]
        g = eta * cw[i] * r
        shrink = eta * lam if norm1 > radius else 0.0
        b_sum += b[0]
        new_norm = 0.0
        for j in range(d):
            v = w[j]
            w_avg[j] += v
            v = soft_threshold(a * v, shrink) - g * row_value(data, j)
            w[j] = v
            new_norm += fabs(v)
        norm1 = new_norm
        if fit_intercept:
            b[0] -= g
    for j in range(d):
        w_avg[j] /= n_steps
    return b_sum / n_steps


# ---------------------------------------------------------------------------------------
# lazy sparse Epro-SGD: cumulative penalty with clipping, zero crossings from a radix heap

cdef extern from *:
    """
    #include <string.h>
    #include <stdint.h>
    static inline uint64_t sks_lasso_bits(double x) {
        uint64_t u; memcpy(&u, &x, sizeof(u)); return u;
    }
    #if defined(__GNUC__) || defined(__clang__)
    #define SKS_LASSO_PREFETCH(p) __builtin_prefetch((const void*)(p))
    static inline int sks_lasso_bitlen(uint64_t x) { return x ? 64 - __builtin_clzll(x) : 0; }
    static inline int sks_lasso_ctz(uint64_t x) { return __builtin_ctzll(x); }
    #else
    #define SKS_LASSO_PREFETCH(p) ((void)0)
    static inline int sks_lasso_bitlen(uint64_t x) {
        int n = 0; while (x) { x >>= 1; n++; } return n;
    }
    static inline int sks_lasso_ctz(uint64_t x) {
        int n = 0; while (!(x & 1)) { x >>= 1; n++; } return n;
    }
    #endif
    """
    uint64_t sks_lasso_bits(double x) noexcept nogil
    int sks_lasso_bitlen(uint64_t x) noexcept nogil
    int sks_lasso_ctz(uint64_t x) noexcept nogil
    void SKS_LASSO_PREFETCH(const void* p) noexcept nogil


ctypedef struct _LazyState:
    double* K          # w_j = sgn_j * s * max(K_j - C, 0) inside a window
    double* sgn        # +-1 for registered (nonzero) coordinates, 0 otherwise
    int32_t* last      # window step from which the coordinate's iterates are not yet summed
    int32_t* nxt       # radix heap: doubly linked list per bucket
    int32_t* prv
    int8_t* where      # bucket of j, -1 if none
    int32_t head[65]   # first coordinate of each bucket, -1 if empty
    uint64_t mask      # bit b set <=> bucket b is not empty (b = 1..64; 0 is never used)
    double C           # the heap's reference key ("last popped"): every key is > C
    double* sarr       # sarr[t] = scale s at window step t
    double* p1         # p1[t] = sum_{u < t} sarr[u]
    double* p2         # p2[t] = sum_{u < t} sarr[u] * C_u
    double sumK        # sum of K over registered coordinates
    Py_ssize_t cnt     # number of registered coordinates
    double q           # 1 - a (a = ridge factor per step)
    bint closed_form   # sums of the scale from sarr differences (decaying scale) or p1


cdef void _lazy_alloc(_LazyState* st, Py_ssize_t d, Py_ssize_t window) except *:
    """Allocate the lazy state's arrays (d coordinates, ``window`` steps); free them with
    :func:`_lazy_free`, also after a MemoryError here."""
    cdef size_t nd = max(d, 1)
    st.K = <double*>PyMem_Malloc(nd * sizeof(double))
    st.sgn = <double*>PyMem_Malloc(nd * sizeof(double))
    st.last = <int32_t*>PyMem_Malloc(nd * sizeof(int32_t))
    st.nxt = <int32_t*>PyMem_Malloc(nd * sizeof(int32_t))
    st.prv = <int32_t*>PyMem_Malloc(nd * sizeof(int32_t))
    st.where = <int8_t*>PyMem_Malloc(nd * sizeof(int8_t))
    st.sarr = <double*>PyMem_Malloc((window + 2) * sizeof(double))
    st.p1 = <double*>PyMem_Malloc((window + 2) * sizeof(double))
    st.p2 = <double*>PyMem_Malloc((window + 2) * sizeof(double))
    if (st.K == NULL or st.sgn == NULL or st.last == NULL or st.nxt == NULL or
            st.prv == NULL or st.where == NULL or st.sarr == NULL or
            st.p1 == NULL or st.p2 == NULL):
        _lazy_free(st)
        raise MemoryError()


cdef void _lazy_free(_LazyState* st) noexcept:
    PyMem_Free(st.K)
    PyMem_Free(st.sgn)
    PyMem_Free(st.last)
    PyMem_Free(st.nxt)
    PyMem_Free(st.prv)
    PyMem_Free(st.where)
    PyMem_Free(st.sarr)
    PyMem_Free(st.p1)
    PyMem_Free(st.p2)
    st.K = st.sgn = st.sarr = st.p1 = st.p2 = NULL
    st.last = st.nxt = st.prv = NULL
    st.where = NULL


cdef inline double _alive_sum(const _LazyState* st, Py_ssize_t lo, Py_ssize_t hi,
                              double key) noexcept nogil:
    """sum_{t in [lo, hi)} s_t (key - C_t) for a coordinate alive on the whole range.

    The scale is geometric (s_{t+1} = a s_t), so sum s_t = (s_lo - s_hi) / (1 - a), accurate
    relative to s_lo when the scale decays over a window (the prefix sums p1 would be
    dominated by the window's first terms); p1 when it barely decays (small 1 - a, where
    that difference cancels).  p2 has terms of bounded size (s_t C_t <= lam / (2 alpha)).
    """
    cdef double ssum
    if st.closed_form:
        ssum = (st.sarr[lo] - st.sarr[hi]) / st.q
    else:
        ssum = st.p1[hi] - st.p1[lo]
    return key * ssum - (st.p2[hi] - st.p2[lo])


cdef inline void _rx_insert(_LazyState* st, Py_ssize_t j) noexcept nogil:
    """Put j (K_j > C) in bucket bitlen(bits(K_j) xor bits(C)) (nonnegative doubles order
    like their bit patterns)."""
    cdef int bkt = sks_lasso_bitlen(sks_lasso_bits(st.K[j]) ^ sks_lasso_bits(st.C))
    cdef int32_t h = st.head[bkt]
    st.nxt[j] = h
    st.prv[j] = -1
    if h >= 0:
        st.prv[h] = <int32_t>j
    st.head[bkt] = <int32_t>j
    st.where[j] = <int8_t>bkt
    st.mask |= (<uint64_t>1) << (bkt - 1)


cdef inline void _rx_unlink(_LazyState* st, Py_ssize_t j) noexcept nogil:
    cdef int32_t p = st.prv[j], nx = st.nxt[j]
    cdef int bkt = st.where[j]
    if p >= 0:
        st.nxt[p] = nx
    else:
        st.head[bkt] = nx
        if nx < 0:
            st.mask &= ~((<uint64_t>1) << (bkt - 1))
    if nx >= 0:
        st.prv[nx] = p
    st.where[j] = -1


cdef inline void _rx_kill(_LazyState* st, Py_ssize_t j, Py_ssize_t tau,
                          double* w_avg) noexcept nogil:
    """j's zero crossing is at step tau (C_{tau+1} >= K_j): sum its iterates up to tau."""
    cdef double Kj = st.K[j]
    w_avg[j] += st.sgn[j] * _alive_sum(st, st.last[j], tau + 1, Kj)
    st.last[j] = <int32_t>(tau + 1)
    st.sgn[j] = 0.0
    st.where[j] = -1
    st.sumK -= Kj
    st.cnt -= 1


cdef void _rx_advance(_LazyState* st, double C_new, Py_ssize_t tau,
                      double* w_avg) noexcept nogil:
    """Move the reference key from C to C_new > C, removing every coordinate with
    K_j <= C_new (a monotone radix heap: each key only moves to lower buckets).

    With B = bitlen(bits(C) xor bits(C_new)), every key in a bucket below B is < C_new, the
    buckets above B keep their index relative to C_new, and bucket B is redistributed.
    """
    cdef int B = sks_lasso_bitlen(sks_lasso_bits(st.C) ^ sks_lasso_bits(C_new))
    cdef uint64_t below
    cdef int bkt
    cdef int32_t j, jn
    st.C = C_new
    if B == 0:
        return
    below = st.mask & (((<uint64_t>1) << (B - 1)) - 1)
    while below:
        bkt = sks_lasso_ctz(below) + 1
        below &= below - 1
        j = st.head[bkt]
        while j >= 0:
            jn = st.nxt[j]
            _rx_kill(st, j, tau, w_avg)
            j = jn
        st.head[bkt] = -1
    st.mask &= ~(((<uint64_t>1) << (B - 1)) - 1)
    if st.mask & ((<uint64_t>1) << (B - 1)):
        j = st.head[B]
        st.head[B] = -1
        st.mask &= ~((<uint64_t>1) << (B - 1))
        while j >= 0:
            jn = st.nxt[j]
            if st.K[j] <= C_new:
                _rx_kill(st, j, tau, w_avg)
            else:
                _rx_insert(st, j)       # to a bucket below B
            j = jn
    if st.cnt == 0:
        st.sumK = 0.0


cdef void _lazy_start(_LazyState* st, Py_ssize_t d, const double* w,
                      bint track) noexcept nogil:
    """Lazy state for w at scale 1, shift 0, window step 0."""
    cdef Py_ssize_t j
    for j in range(65):
        st.head[j] = -1
    st.mask = 0
    st.C = 0.0
    st.sumK = 0.0
    st.cnt = 0
    st.sarr[0] = 1.0
    st.p1[0] = 0.0
    st.p2[0] = 0.0
    for j in range(d):
        st.K[j] = fabs(w[j])
        st.sgn[j] = _sign(w[j])
        st.last[j] = 0
        st.where[j] = -1
        if st.sgn[j] != 0.0:
            st.sumK += st.K[j]
            st.cnt += 1
            if track:
                _rx_insert(st, j)


cdef double _epro_sparse(const lasso_t* P, double* w, double* b, double eta, double a,
                         double lam, Py_ssize_t n_steps, rng_state* rng, double* w_avg,
                         Py_ssize_t window, _LazyState* st) noexcept nogil:
    """CSR rows: lazy O(nnz) amortized step, identical in exact arithmetic to ``_epro_dense``.

    Inside a window, w_j(tau) = sgn_j * s_tau * max(K_j - C_tau, 0): the ridge factor and
    the penalty's shrinkage, truncated at zero, act on every coordinate at once through
    (s, C) -> (a s, C + eta lam [||w||_1 > radius] / (a s)) (the cumulative penalty with
    clipping of Tsuruoka et al. 2009, in the scaled variable), and only the sampled row's
    coordinates get new (K_j, sgn_j).  ||w||_1 = s (sum K - C n) over the registered
    (nonzero) coordinates, exact only if a coordinate is unregistered at the step where C
    passes its K: a monotone radix heap on the bit patterns of K (Ahuja et al. 1990)
    finds those zero crossings at their step, with O(1) insertion and removal and at most
    64 bucket moves per key (in practice a few).  The iterates' sum of a coordinate over
    the range where it is alive then comes in O(1) from sums of s_t and s_t C_t.

    The row two steps ahead is drawn early (same draws, same order) to prefetch its data.
    """
    cdef const rows_t* X = P.X
    cdef const double* y = P.y
    cdef const double* cw = P.cw
    cdef double radius = P.radius
    cdef bint fit_intercept = P.fit_intercept
    cdef Py_ssize_t d = X.n_features, t, j, i, k, tau = 0, i_next = 0, i_next2 = 0
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef rowvals_t data_n
    cdef const int32_t* indices_n
    cdef int nnz, nnz_n
    cdef double r, g, shrink, b_sum = 0.0, v, dot, s = 1.0, C = 0.0, s_new, C_new
    cdef double norm1, inv_s_new, sg, Kj, pen = eta * lam
    cdef bint track = lam > 0.0
    st.q = 1.0 - a
    # the scale decays by at least a factor 2 over a window: sums of s from differences
    st.closed_form = st.q > 0.0 and st.q * window > 0.5
    for j in range(d):
        w_avg[j] = 0.0
    _lazy_start(st, d, w, track)
    i_next = rng_randint(rng, X.n_samples)
    if n_steps > 1:
        i_next2 = rng_randint(rng, X.n_samples)
        SKS_LASSO_PREFETCH(&X.indptr[i_next2])
    for t in range(n_steps):
        i = i_next
        i_next = i_next2
        if t + 2 < n_steps:
            i_next2 = rng_randint(rng, X.n_samples)
            SKS_LASSO_PREFETCH(&X.indptr[i_next2])
        if t + 1 < n_steps:
            nnz_n = dataset_row(X, i_next, &data_n, &indices_n)
            SKS_LASSO_PREFETCH(_values_ptr(data_n))
            SKS_LASSO_PREFETCH(indices_n)
            SKS_LASSO_PREFETCH(&y[i_next])
            SKS_LASSO_PREFETCH(&cw[i_next])
        nnz = dataset_row(X, i, &data, &indices)
        norm1 = s * (st.sumK - C * st.cnt)
        shrink = pen if norm1 > radius else 0.0
        s_new = a * s
        inv_s_new = 1.0 / s_new
        C_new = C + shrink * inv_s_new
        st.sarr[tau + 1] = s_new
        st.p1[tau + 1] = st.p1[tau] + s
        st.p2[tau + 1] = st.p2[tau] + s * C
        dot = 0.0
        for k in range(nnz):
            j = indices[k]
            sg = st.sgn[j]
            if sg != 0.0:
                Kj = st.K[j]
                # registered coordinates are alive (K_j > C): sum iterates last_j..tau
                w_avg[j] += sg * _alive_sum(st, st.last[j], tau + 1, Kj)
                dot += row_value(data, k) * sg * s * (Kj - C)
            st.last[j] = <int32_t>(tau + 1)
        r = dot + b[0] - y[i]
        g = eta * cw[i] * r
        b_sum += b[0]
        if C_new > C and track:
            # zero crossings at this step (C passes K_j): iterates tau+1.. of j are zero
            _rx_advance(st, C_new, tau, w_avg)
        for k in range(nnz):
            j = indices[k]
            sg = st.sgn[j]
            v = 0.0
            if sg != 0.0:
                Kj = st.K[j]
                v = sg * s_new * (Kj - C_new)        # alive: K_j > C_new after the advance
                st.sumK -= Kj
                st.cnt -= 1
                if track:
                    _rx_unlink(st, j)
            v -= g * row_value(data, k)
            Kj = fabs(v) * inv_s_new + C_new
            if Kj > C_new:
                # (|v| below the rounding of C_new counts as zero: w_j would read 0)
                st.K[j] = Kj
                st.sgn[j] = _sign(v)
                st.sumK += Kj
                st.cnt += 1
                if track:
                    _rx_insert(st, j)
            else:
                st.sgn[j] = 0.0
        s = s_new
        C = C_new
        if fit_intercept:
            b[0] -= g
        tau += 1
        if tau == window or s < 1e-100 or t == n_steps - 1:
            # materialize every coordinate at time tau and restart the window at scale 1
            for j in range(d):
                sg = st.sgn[j]
                if sg != 0.0:
                    w_avg[j] += sg * _alive_sum(st, st.last[j], tau, st.K[j])
                    w[j] = sg * s * (st.K[j] - C)
                else:
                    w[j] = 0.0
            if t < n_steps - 1:
                _lazy_start(st, d, w, track)
                s = 1.0
                C = 0.0
                tau = 0
    for j in range(d):
        w_avg[j] /= n_steps
    return b_sum / n_steps


cdef Py_ssize_t _lazy_init(Py_ssize_t d, const double* w, double* K, double* sgn,
                           Py_ssize_t* last, Py_ssize_t* heap, Py_ssize_t* pos,
                           double* sumK, Py_ssize_t* cnt) noexcept nogil:
    """Lazy state for w at scale 1, shift 0; returns the heap size."""
    cdef Py_ssize_t j, k, size = 0
    sumK[0] = 0.0
    for j in range(d):
        K[j] = fabs(w[j])
        sgn[j] = _sign(w[j])
        last[j] = 0
        pos[j] = -1
        if K[j] > 0.0:
            heap[size] = j
            pos[j] = size
            size += 1
            sumK[0] += K[j]
    cnt[0] = size
    k = size // 2 - 1
    while k >= 0:
        _heap_down(heap, pos, K, size, k)
        k -= 1
    return size


cdef inline void _averaged_sgd_step(const lasso_t* P, rng_state* rng, double* w, double* b,
                                    double* b_sum, double* w_sum, double eta, double pen,
                                    bint penalized) noexcept nogil:
    """One step of the baselines ('sgd', 'oneproj') at step size ``eta``: sample a row, add
    the current iterate to ``w_sum`` (and the intercept to ``b_sum``), then
    ``w <- (1 - 2 eta alpha) w [- pen sign(w)] - eta c_i r_i x_i`` and
    ``b <- b - eta c_i r_i`` (the penalty term only when ``penalized``)."""
    cdef const rows_t* X = P.X
    cdef Py_ssize_t d = X.n_features, j, i
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    cdef double a = 1.0 - 2.0 * eta * P.alpha, r, g, v
    i = rng_randint(rng, X.n_samples)
    nnz = dataset_row(X, i, &data, &indices)
    r = row_dot(data, indices, nnz, w) + b[0] - P.y[i]
    g = eta * P.cw[i] * r
    b_sum[0] += b[0]
    if penalized:
        for j in range(d):
            v = w[j]
            w_sum[j] += v
            w[j] = a * v - pen * _sign(v)
    else:
        for j in range(d):
            w_sum[j] += w[j]
            w[j] *= a
    row_axpy(-g, data, indices, nnz, w)
    if P.fit_intercept:
        b[0] -= g


def projected_sgd(LassoData P, double[::1] w, double intercept, double eta0, double decay,
                  Py_ssize_t t0, Py_ssize_t n_steps, uint64_t counter, double[::1] w_sum,
                  Py_ssize_t window=0):
    """The 'sgd' baseline: steps t0+1..t0+n_steps of projected SGD (projection onto the l1
    ball after every step), step eta_t = eta0 / (1 + decay (t - 1)).

    ``w`` is updated in place; ``w_sum`` accumulates the iterates x_t (for the average).
    Dense rows: direct O(d) step and exact projection.  CSR rows (with every ridge factor
    1 - 2 eta_t alpha > 0): lazy O(nnz log d) amortized step, the same iterates in exact
    arithmetic (see ``_projected_sparse``); ``window`` is the number of steps between full
    materializations (0 chooses max(1024, d)).
    Returns (intercept, intercept_sum_increment, counter).
    """
    cdef Py_ssize_t d = P.p.X.n_features, t
    cdef rng_state rng
    cdef double eta, b = intercept, b_sum = 0.0, radius = P.p.radius
    cdef double[::1] work = np.empty(max(d, 1))
    _check_lengths(d, w, w_sum)
    rng_init(&rng, P.seed, P.stream, counter)
    if n_steps <= 0:
        return b, 0.0, rng.counter
    # the last step has the smallest eta, so the first has the smallest ridge factor
    if P.p.X.indptr != NULL and 1.0 - 2.0 * P.p.alpha * eta0 / (1.0 + decay * t0) > 0.0 \
            and decay >= 0.0:
        if window <= 0:
            window = max(1024, d)
        window = min(window, n_steps)
        return _projected_sgd_lazy(P, w, b, eta0, decay, t0, n_steps, &rng, w_sum, window)
    with nogil:
        for t in range(t0 + 1, t0 + n_steps + 1):
            eta = eta0 / (1.0 + decay * (t - 1))
            _averaged_sgd_step(&P.p, &rng, &w[0], &b, &b_sum, &w_sum[0], eta, 0.0, False)
            project_l1_ball(&w[0], d, radius, &work[0])
    return b, b_sum, rng.counter


ctypedef struct _HeapState:
    double* K            # w_j = sgn_j * s * max(K_j - C, 0) inside a window
    double* sgn
    Py_ssize_t* last     # window step from which j's iterates are not yet summed
    Py_ssize_t* heap     # indexed min-heap of the alive coordinates on K
    Py_ssize_t* pos
    double* carr         # carr[t] = C at window step t
    double* p1           # p1[t+1] = sum_{u<=t} s_u
    double* p2           # p2[t+1] = sum_{u<=t} s_u C_u


cdef _projected_sgd_lazy(LassoData P, double[::1] w, double b, double eta0, double decay,
                         Py_ssize_t t0, Py_ssize_t n_steps, rng_state* rng,
                         double[::1] w_sum, Py_ssize_t window):
    cdef Py_ssize_t d = P.p.X.n_features
    cdef double b_sum = 0.0
    cdef double[::1] K = np.empty(max(d, 1))
    cdef double[::1] sgn = np.empty(max(d, 1))
    cdef Py_ssize_t[::1] last = np.empty(max(d, 1), dtype=np.intp)
    cdef Py_ssize_t[::1] heap = np.empty(max(d, 1), dtype=np.intp)
    cdef Py_ssize_t[::1] pos = np.empty(max(d, 1), dtype=np.intp)
    cdef double[::1] carr = np.empty(window + 1)
    cdef double[::1] p1 = np.empty(window + 2)
    cdef double[::1] p2 = np.empty(window + 2)
    cdef _HeapState hs
    hs.K, hs.sgn, hs.last, hs.heap, hs.pos = &K[0], &sgn[0], &last[0], &heap[0], &pos[0]
    hs.carr, hs.p1, hs.p2 = &carr[0], &p1[0], &p2[0]
    with nogil:
        _projected_sparse(&P.p, &w[0], &b, &b_sum, eta0, decay, t0, n_steps, rng, &w_sum[0],
                          window, &hs)
    return b, b_sum, rng.counter


cdef inline double _prefix_window_sum(const double* p1, const double* p2, const double* carr,
                                      Py_ssize_t lo, Py_ssize_t hi,
                                      double key) noexcept nogil:
    """sum_{t in [lo, hi)} scale_t * max(key - C_t, 0) from the prefix sums
    p1[t+1] = sum_{u<=t} scale_u and p2[t+1] = sum_{u<=t} scale_u C_u (C nondecreasing)."""
    cdef Py_ssize_t last = _last_alive(carr, lo, hi, key)
    if last < lo:
        return 0.0
    return key * (p1[last + 1] - p1[lo]) - (p2[last + 1] - p2[lo])


cdef void _projected_sparse(const lasso_t* P, double* w, double* b, double* b_sum,
                            double eta0, double decay, Py_ssize_t t0, Py_ssize_t n_steps,
                            rng_state* rng, double* w_sum, Py_ssize_t window,
                            const _HeapState* hs) noexcept nogil:
    """CSR rows: projected SGD with a lazy O(nnz log d) amortized step.

    w_j = sgn_j * s * max(K_j - C, 0) as in ``_epro_sparse``: the ridge factor a_t scales
    s for all coordinates at once, the sampled row's coordinates get new (K_j, sgn_j), and
    the exact projection onto the l1 ball is a soft-threshold by theta, i.e. C += theta / s,
    with theta found as in Duchi et al. (2008): C' = (sum_alive K - radius / s) / n_alive,
    removing from the min-heap the coordinates with K_j <= C' until none is left (each
    removal follows an insertion, so it is amortized O(log d) per row entry).  The sums of
    the iterates come from prefix sums of s_t and s_t C_t (the scale varies with eta_t);
    a window is materialized (O(d)) after ``window`` steps or once s < 1e-3, which keeps
    those prefix sums accurate.
    """
    cdef const rows_t* X = P.X
    cdef const double* y = P.y
    cdef const double* cw = P.cw
    cdef double alpha = P.alpha, radius = P.radius
    cdef bint fit_intercept = P.fit_intercept
    cdef double* K = hs.K
    cdef double* sgn = hs.sgn
    cdef Py_ssize_t* last = hs.last
    cdef Py_ssize_t* heap = hs.heap
    cdef Py_ssize_t* pos = hs.pos
    cdef double* carr = hs.carr
    cdef double* p1 = hs.p1
    cdef double* p2 = hs.p2
    cdef Py_ssize_t d = X.n_features, t, j, i, k, tau = 0, size, cnt = 0
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    cdef double r, g, eta, a, v, dot, s = 1.0, C = 0.0, sumK = 0.0, target, Cn
    size = _lazy_init(d, w, K, sgn, last, heap, pos, &sumK, &cnt)
    p1[0] = 0.0
    p2[0] = 0.0
    for t in range(t0 + 1, t0 + n_steps + 1):
        carr[tau] = C
        p1[tau + 1] = p1[tau] + s
        p2[tau + 1] = p2[tau] + s * C
        eta = eta0 / (1.0 + decay * (t - 1))
        a = 1.0 - 2.0 * eta * alpha
        i = rng_randint(rng, X.n_samples)
        nnz = dataset_row(X, i, &data, &indices)
        dot = 0.0
        for k in range(nnz):
            j = indices[k]
            w_sum[j] += sgn[j] * _prefix_window_sum(p1, p2, carr, last[j], tau + 1, K[j])
            last[j] = tau + 1
            if K[j] > C:
                dot += row_value(data, k) * sgn[j] * s * (K[j] - C)
        r = dot + b[0] - y[i]
        g = eta * cw[i] * r
        b_sum[0] += b[0]
        s = a * s
        for k in range(nnz):
            j = indices[k]
            v = sgn[j] * s * (K[j] - C) if K[j] > C else 0.0
            v -= g * row_value(data, k)
            if pos[j] >= 0:
                size = _heap_remove(heap, pos, K, size, j)
                sumK -= K[j]
                cnt -= 1
            K[j] = fabs(v) / s + C
            sgn[j] = _sign(v)
            if v != 0.0:
                size = _heap_push(heap, pos, K, size, j)
                sumK += K[j]
                cnt += 1
        # exact projection: ||w||_1 = s (sumK - C cnt)
        if s * (sumK - C * cnt) > radius:
            # cnt > 0 here; the candidate Cn never decreases as coordinates are removed,
            # so the final C is >= every removed K_j (they are exactly zero)
            target = radius / s
            Cn = C
            while cnt > 0:
                Cn = (sumK - target) / cnt
                if K[heap[0]] <= Cn:
                    j = heap[0]
                    size = _heap_remove(heap, pos, K, size, j)
                    sumK -= K[j]
                    cnt -= 1
                else:
                    break
            if Cn > C:
                C = Cn
            if cnt == 0:
                sumK = 0.0
        if fit_intercept:
            b[0] -= g
        tau += 1
        if tau == window or s < 1e-3 or t == t0 + n_steps:
            for j in range(d):
                w_sum[j] += sgn[j] * _prefix_window_sum(p1, p2, carr, last[j], tau, K[j])
                w[j] = sgn[j] * s * (K[j] - C) if K[j] > C else 0.0
            if t < t0 + n_steps:
                size = _lazy_init(d, w, K, sgn, last, heap, pos, &sumK, &cnt)
                s = 1.0
                C = 0.0
                tau = 0
                p1[0] = 0.0
                p2[0] = 0.0


def oneproj_sgd(LassoData P, double[::1] w, double intercept, double eta0, double decay,
                double lam, double gamma, Py_ssize_t t0, Py_ssize_t n_steps, uint64_t counter,
                double[::1] w_sum):
    """The 'oneproj' baseline (Mahdavi et al. 2012): SGD on the smoothed augmented objective
    F + gamma log(1 + exp(lam (||w||_1 - radius) / gamma)), no projection inside.

    Same conventions as :func:`projected_sgd`.
    """
    cdef Py_ssize_t d = P.p.X.n_features, t, j
    cdef rng_state rng
    cdef double eta, b = intercept, b_sum = 0.0, norm1 = 0.0, z, sig, radius = P.p.radius
    _check_lengths(d, w, w_sum)
    rng_init(&rng, P.seed, P.stream, counter)
    with nogil:
        for j in range(d):
            norm1 += fabs(w[j])
        for t in range(t0 + 1, t0 + n_steps + 1):
            eta = eta0 / (1.0 + decay * (t - 1))
            # derivative of gamma*log(1+exp(z)), z = lam c / gamma: lam * sigmoid(z)
            z = lam * (norm1 - radius) / gamma
            if z >= 0:
                sig = 1.0 / (1.0 + exp(-z))
            else:
                sig = exp(z) / (1.0 + exp(z))
            _averaged_sgd_step(&P.p, &rng, &w[0], &b, &b_sum, &w_sum[0], eta,
                               eta * lam * sig, True)
            norm1 = 0.0
            for j in range(d):
                norm1 += fabs(w[j])
    return b, b_sum, rng.counter


def orda_epoch(LassoData P, double[::1] x, double intercept, double eta, double lam,
               Py_ssize_t n_steps, uint64_t counter, bint at_u=False):
    """One ORDA run (paper 001, Alg. 2) of T = ``n_steps`` (T + 1 gradient calls) on the
    augmented objective (multiplier ``lam``) with g(w) = alpha ||w||^2 (the intercept has
    g = 0).

    The stochastic gradient (data term and penalty subgradient) is taken at x_t, as the
    paper writes it, or at the extrapolated point u_t (``at_u``, the original ORDA).
    ``x`` (the start x_1, also the anchor of z) is overwritten with the output x_{T+2}.
    O(d) per step.  Returns (intercept, counter).
    """
    cdef const rows_t* X = P.p.X
    cdef const double* y = P.p.y
    cdef const double* cweight = P.p.cw
    cdef double alpha = P.p.alpha, radius = P.p.radius
    cdef bint fit_intercept = P.p.fit_intercept
    cdef Py_ssize_t d = X.n_features, t, j, i, k
    cdef rng_state rng
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    cdef double[::1] x1 = np.array(x, copy=True)
    cdef double[::1] z = np.array(x, copy=True)
    cdef double[::1] S = np.zeros(max(d, 1))
    cdef double[::1] ubuf = np.zeros(max(d, 1))
    cdef double norm1u, dotu
    cdef double b = intercept, b1 = intercept, zb = intercept, Sb = 0.0, ub
    cdef double theta, r, cr, pen, norm1 = 0.0, acoef, gam, u, sg, xold, tw, gbar_scale
    cdef double den_z, den_x, theta_c
    _check_lengths(d, x, x)
    rng_init(&rng, P.seed, P.stream, counter)
    with nogil:
        for j in range(d):
            norm1 += fabs(x[j])
        for t in range(1, n_steps + 2):
            theta = 2.0 / (t + 1.0)
            theta_c = 1.0 - theta
            i = rng_randint(&rng, X.n_samples)
            nnz = dataset_row(X, i, &data, &indices)
            if at_u:
                norm1u = 0.0
                for j in range(d):
                    u = theta_c * x[j] + theta * z[j]
                    ubuf[j] = u
                    norm1u += fabs(u)
                r = row_dot(data, indices, nnz, &ubuf[0]) + \
                    (theta_c * b + theta * zb) - y[i]
                pen = lam if norm1u > radius else 0.0
            else:
                r = row_dot(data, indices, nnz, &x[0]) + b - y[i]
                pen = lam if norm1 > radius else 0.0
            cr = cweight[i] * r
            tw = <double>t
            gbar_scale = 2.0 / (tw * (tw + 1.0))
            acoef = 4.0 * sqrt(tw + 1.0) / (tw * eta)
            gam = tw * sqrt(tw) / eta
            # the denominators of the z and x updates (loop invariants, the same values)
            den_z = acoef + 2.0 * alpha
            den_x = gam + 2.0 * alpha
            # row part of S (the gradient's data term)
            if indices == NULL:
                for k in range(nnz):
                    S[k] += tw * cr * row_value(data, k)
            else:
                for k in range(nnz):
                    S[indices[k]] += tw * cr * row_value(data, k)
            norm1 = 0.0
            for j in range(d):
                u = theta_c * x[j] + theta * z[j]
                sg = _sign(u) if at_u else _sign(x[j])
                S[j] += tw * pen * sg
                z[j] = (acoef * x1[j] - gbar_scale * S[j]) / den_z
                x[j] = (gam * u - pen * sg) / den_x
                norm1 += fabs(x[j])
            for k in range(nnz):
                j = k if indices == NULL else indices[k]
                xold = x[j]
                x[j] = xold - cr * row_value(data, k) / den_x
                norm1 += fabs(x[j]) - fabs(xold)
            if fit_intercept:
                ub = theta_c * b + theta * zb
                Sb += tw * cr
                zb = b1 - gbar_scale * Sb / acoef
                b = ub - cr / gam
    return b, rng.counter


# ---------------------------------------------------------------------------------------
# 'epro_svrg' (beyond the paper): prox-SVRG epochs inside the epoch-projection loop

def svrg_epoch(LassoData P, const double[::1] r_snap, const double[::1] mu, double mu_b,
               double[::1] w, double intercept, double eta, double nu, Py_ssize_t n_steps,
               uint64_t counter, Py_ssize_t window=0):
    """One prox-SVRG epoch of ``n_steps`` sampled rows on F(w, b) + nu ||w||_1.

    Step (the variance-reduced gradient of the data term, the exact ridge gradient):
    with delta = c_i (r_i(w, b) - r_snap_i),
    ``w <- S_{eta nu}((1 - 2 eta alpha) w - eta (mu + delta x_i))`` (S = soft threshold),
    ``b <- b - eta (mu_b + delta)`` (if ``fit_intercept``), where ``r_snap`` are the
    residuals x_i.w~ + b~ - y_i at the snapshot and (``mu``, ``mu_b``) the data term's full
    gradient there.  ``w`` (the start) is overwritten with the last iterate.

    Dense rows: direct O(d) step.  CSR rows: O(nnz_row) amortized lazy step: a coordinate
    that the sampled rows do not touch follows the 1-d map T(v) = S_h(a v - m) (a = 1 -
    2 eta alpha, m = eta mu_j, h = eta nu), whose k-fold iterate has a closed form (at
    most three affine pieces: a^k v - G_k (m +- h) with G_k = sum_{t<k} a^t, from tables;
    the step where a piece ends by a binary search), applied when the coordinate is next
    touched.  Every ``window`` steps (0: max(1024, d)) all coordinates are brought up to
    date (O(d)).  Returns (intercept, counter).
    """
    cdef Py_ssize_t d = P.p.X.n_features
    cdef rng_state rng
    cdef double a
    cdef double b = intercept
    _check_lengths(d, w, mu)
    if r_snap.shape[0] != P.p.X.n_samples:
        raise ValueError("r_snap needs one entry per row of X")
    if n_steps <= 0:
        return intercept, counter
    a = _ridge_contraction(eta, P.p.alpha)
    rng_init(&rng, P.seed, P.stream, counter)
    if P.p.X.indptr == NULL:
        with nogil:
            _svrg_dense(&P.p, &r_snap[0], &mu[0], mu_b, &w[0], &b, eta, a, eta * nu, n_steps,
                        &rng)
        return b, rng.counter
    if window <= 0:
        window = max(1024, d)
    window = min(window, n_steps)
    if window >= 2 ** 31 - 2 or d >= 2 ** 31 - 2:
        raise ValueError("too many features or steps per window for 32-bit indices")
    cdef double[::1] apow = np.empty(window + 1)
    cdef double[::1] geo = np.empty(window + 1)
    cdef int32_t[::1] last = np.zeros(max(d, 1), dtype=np.int32)
    with nogil:
        _svrg_sparse(&P.p, &r_snap[0], &mu[0], mu_b, &w[0], &b, eta, a, eta * nu, n_steps,
                     &rng, window, &apow[0], &geo[0], &last[0])
    return b, rng.counter


cdef void _svrg_dense(const lasso_t* P, const double* rs, const double* mu, double mu_b,
                      double* w, double* b, double eta, double a, double h,
                      Py_ssize_t n_steps, rng_state* rng) noexcept nogil:
    cdef const rows_t* X = P.X
    cdef const double* y = P.y
    cdef const double* cw = P.cw
    cdef bint fit_intercept = P.fit_intercept
    cdef Py_ssize_t d = X.n_features, t, j, i
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    cdef double delta, g
    for t in range(n_steps):
        i = rng_randint(rng, X.n_samples)
        nnz = dataset_row(X, i, &data, &indices)
        delta = cw[i] * (row_dot(data, indices, nnz, w) + b[0] - y[i] - rs[i])
        g = eta * delta
        for j in range(d):
            w[j] = soft_threshold(a * w[j] - eta * mu[j] - g * row_value(data, j), h)
        if fit_intercept:
            b[0] -= eta * mu_b + g


cdef inline double _drift(double v, Py_ssize_t k, double m, double h, const double* apow,
                          const double* geo) noexcept nogil:
    """k-fold iterate of T(v) = S_h(a v - m) (a^t = apow[t], sum_{u<t} a^u = geo[t])."""
    cdef double c, cand
    cdef Py_ssize_t lo, hi, mid
    while k > 0:
        if v == 0.0:
            v = soft_threshold(-m, h)
            if v == 0.0:
                return 0.0          # a fixed point
            k -= 1
            continue
        c = m + h if v > 0.0 else m - h
        cand = apow[k] * v - geo[k] * c
        # the affine piece a^t v - geo_t c is monotone in t: it keeps the sign of v up to
        # t = k iff its value at k does (when it moves toward zero; otherwise it never
        # reaches zero)
        if (v > 0.0 and cand > 0.0) or (v < 0.0 and cand < 0.0):
            return cand
        # first t in [1, k] where the piece leaves the sign of v: binary search
        lo = 0      # piece value at lo keeps the sign
        hi = k      # piece value at hi does not
        while hi - lo > 1:
            mid = (lo + hi) >> 1
            cand = apow[mid] * v - geo[mid] * c
            if (v > 0.0 and cand > 0.0) or (v < 0.0 and cand < 0.0):
                lo = mid
            else:
                hi = mid
        # iterate lo is on the piece; step lo+1 is the exact map from it
        cand = apow[lo] * v - geo[lo] * c
        v = soft_threshold(a_of(apow) * cand - m, h)
        k -= lo + 1
    return v


cdef inline double a_of(const double* apow) noexcept nogil:
    return apow[1]


cdef void _svrg_sparse(const lasso_t* P, const double* rs, const double* mu, double mu_b,
                       double* w, double* b, double eta, double a, double h,
                       Py_ssize_t n_steps, rng_state* rng, Py_ssize_t window, double* apow,
                       double* geo, int32_t* last) noexcept nogil:
    cdef const rows_t* X = P.X
    cdef const double* y = P.y
    cdef const double* cw = P.cw
    cdef bint fit_intercept = P.fit_intercept
    cdef Py_ssize_t d = X.n_features, t, j, i, k, tau = 0, i_next = 0
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef rowvals_t data_n
    cdef const int32_t* indices_n
    cdef int nnz, nnz_n
    cdef double delta, g, dot, v
    apow[0] = 1.0
    geo[0] = 0.0
    for k in range(1, window + 1):
        apow[k] = apow[k - 1] * a
        geo[k] = geo[k - 1] * a + 1.0
    i_next = rng_randint(rng, X.n_samples)
    for t in range(n_steps):
        i = i_next
        if t + 1 < n_steps:
            i_next = rng_randint(rng, X.n_samples)
            nnz_n = dataset_row(X, i_next, &data_n, &indices_n)
            SKS_LASSO_PREFETCH(_values_ptr(data_n))
            SKS_LASSO_PREFETCH(indices_n)
            SKS_LASSO_PREFETCH(&y[i_next])
            SKS_LASSO_PREFETCH(&rs[i_next])
        nnz = dataset_row(X, i, &data, &indices)
        dot = 0.0
        for k in range(nnz):
            j = indices[k]
            v = w[j]
            if last[j] != tau:
                v = _drift(v, tau - last[j], eta * mu[j], h, apow, geo)
                w[j] = v
            dot += row_value(data, k) * v
        delta = cw[i] * (dot + b[0] - y[i] - rs[i])
        g = eta * delta
        for k in range(nnz):
            j = indices[k]
            w[j] = soft_threshold(a * w[j] - eta * mu[j] - g * row_value(data, k), h)
            last[j] = <int32_t>(tau + 1)
        if fit_intercept:
            b[0] -= eta * mu_b + g
        tau += 1
        if tau == window or t == n_steps - 1:
            for j in range(d):
                if last[j] != tau:
                    w[j] = _drift(w[j], tau - last[j], eta * mu[j], h, apow, geo)
                last[j] = 0
            tau = 0


def sparse_gram(RowDataset ds, const int32_t[::1] col_pos, const double[::1] sw,
                double[:, ::1] G):
    """``G += X[:, cols]^T diag(sw) X[:, cols]`` over the CSR rows of ``ds`` (float64 or
    float32, each value widened to double), ``col_pos[j]`` the position of column j in
    ``cols`` or -1.  One pass over the rows, O(max row nnz) extra memory: the Gram matrix of
    a float32 X's working set without a float64 copy of X (scipy would cast all of it)."""
    cdef Py_ssize_t n = ds.rows.n_samples, d = ds.rows.n_features, k = G.shape[0]
    if not ds.is_sparse:
        raise ValueError("sparse_gram reads CSR rows")
    if col_pos.shape[0] != d or sw.shape[0] != n or G.shape[1] != k:
        raise ValueError("col_pos, sw or G has the wrong shape")
    cdef Py_ssize_t i, a, b, m
    cdef int nnz, q
    cdef int32_t p
    cdef double s, va
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int64_t max_nnz = 0
    for i in range(n):
        max_nnz = max(max_nnz, ds.rows.indptr[i + 1] - ds.rows.indptr[i])
    for i in range(d):
        if not -1 <= col_pos[i] < k:
            raise ValueError("col_pos entries must lie in [-1, k)")
    cdef int32_t* pos = <int32_t*>PyMem_Malloc((max_nnz + 1) * sizeof(int32_t))
    cdef double* val = <double*>PyMem_Malloc((max_nnz + 1) * sizeof(double))
    if pos == NULL or val == NULL:
        PyMem_Free(pos)
        PyMem_Free(val)
        raise MemoryError()
    try:
        with nogil:
            for i in range(n):
                s = sw[i]
                if s == 0.0:
                    continue
                nnz = dataset_row(&ds.rows, i, &data, &indices)
                m = 0
                for q in range(nnz):
                    p = col_pos[indices[q]]
                    if p >= 0:
                        pos[m] = p
                        val[m] = row_value(data, q)
                        m += 1
                for a in range(m):
                    va = s * val[a]
                    for b in range(m):
                        G[pos[a], pos[b]] += va * val[b]
    finally:
        PyMem_Free(pos)
        PyMem_Free(val)


def sparse_gram_columns(RowDataset ds, const int32_t[::1] col_pos, const double[::1] sw,
                        double[:, ::1] G):
    """``G += X[:, cols]^T diag(sw) X[:, cols]`` (as :func:`sparse_gram`) and the columns
    ``cols`` themselves, from one pass over the CSR rows: ``col_pos[j]`` is the position of
    column j in ``cols`` or -1.  Returns ``(indptr, indices, values)`` of the (n, k) CSR
    matrix X[:, cols] (values widened to double; 12 bytes per selected entry)."""
    cdef Py_ssize_t n = ds.rows.n_samples, d = ds.rows.n_features, k = G.shape[0]
    if not ds.is_sparse:
        raise ValueError("sparse_gram_columns reads CSR rows")
    if col_pos.shape[0] != d or sw.shape[0] != n or G.shape[1] != k:
        raise ValueError("col_pos, sw or G has the wrong shape")
    cdef Py_ssize_t i, a, b, m = 0, m0, cap
    cdef int nnz = 0, q
    cdef int32_t p
    cdef double s, va
    cdef rowvals_t data
    cdef const int32_t* indices
    for i in range(d):
        if not -1 <= col_pos[i] < k:
            raise ValueError("col_pos entries must lie in [-1, k)")
    # C arithmetic throughout (Cython 3.0.8 casts a Python float here with __index__)
    cdef double total = <double>ds.rows.indptr[n] if n > 0 else 0.0
    cap = <Py_ssize_t>(total * (<double>k / <double>(d if d > 1 else 1)) * 1.125) + 1024
    indptr = np.zeros(n + 1, dtype=np.int64)
    out_pos = np.empty(cap, dtype=np.int32)
    out_val = np.empty(cap, dtype=np.float64)
    cdef int64_t[::1] ip = indptr
    cdef int32_t[::1] hp = out_pos
    cdef double[::1] hv = out_val
    i = 0
    while i < n:
        with nogil:
            while i < n:
                nnz = dataset_row(&ds.rows, i, &data, &indices)
                if m + nnz > cap:
                    break       # grow the buffers (with the GIL), then redo row i
                m0 = m
                if data.f32 == NULL:
                    # branch-free: every entry is written, the selected ones kept (the
                    # buffer has room for the row; ~5% of the entries are selected)
                    for q in range(nnz):
                        p = col_pos[indices[q]]
                        hp[m] = p
                        hv[m] = data.f64[q]
                        m += p >= 0
                else:
                    for q in range(nnz):
                        p = col_pos[indices[q]]
                        hp[m] = p
                        hv[m] = data.f32[q]
                        m += p >= 0
                s = sw[i]
                if s != 0.0:
                    for a in range(m0, m):
                        va = s * hv[a]
                        for b in range(m0, m):
                            G[hp[a], hp[b]] += va * hv[b]
                i += 1
                ip[i] = m
        if i < n:
            cap = cap + cap // 2 + nnz
            out_pos = np.resize(out_pos, cap)
            out_val = np.resize(out_val, cap)
            hp, hv = out_pos, out_val
    return indptr, out_pos[:m], out_val[:m]
