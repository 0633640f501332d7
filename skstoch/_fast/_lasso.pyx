"""Kernels of the l1-ball constrained least squares (paper 001, section 5.1).

Objective (per output): F(w, b) = 1/(2S) sum_i s_i (x_i.w + b - y_i)^2 + alpha ||w||^2,
S = sum_i s_i, subject to ||w||_1 <= radius.  A sampled row i (uniform) gives the unbiased
stochastic gradient c_i r_i x_i + 2 alpha w with r_i = x_i.w + b - y_i and c_i = n s_i / S
(``cweight`` below, computed in Python).

Kernels (one call = one epoch or one whole run; Python validated every array and index):

* ``epro_sgd_epoch``: one unprojected epoch of Epro-SGD (Alg. 1, step 6) on the augmented
  objective F + lam [||w||_1 - radius]_+, returning the average of the iterates x_1..x_T.
  Dense rows take the direct O(d) step.  Sparse rows take a lazy O(nnz log d) step: w is
  stored as w_j = sign_j * scale * max(K_j - C, 0), where ``scale`` carries the ridge factor
  (1 - 2 eta alpha) and ``C`` the accumulated penalty shrinkage, an indexed min-heap on K_j
  keeps ||w||_1 exact (it is needed at every step for the penalty's indicator), and the
  geometric sums of the scale with prefix sums of scale*C give the per-coordinate sums of the iterates for the average.
  Both paths apply the penalty subgradient lam*sign(w_j) *truncated at zero* (a coordinate
  that would cross zero stops at zero); the dense path does the same so the two agree.
* ``projected_sgd``: the 'sgd' baseline, projection onto the l1 ball after every step
  (CSR rows: the same lazy representation, the projection by a heap, O(nnz log d)).
* ``oneproj_sgd``: the 'oneproj' baseline (smoothed penalty, no projection inside).
* ``orda_epoch``: one ORDA run (Alg. 2) with g(w) = alpha ||w||^2, used by Epro-ORDA (Alg. 3).
"""
import numpy as np

from libc.math cimport fabs, sqrt, exp, expm1, log1p
from libc.stdint cimport int32_t, uint64_t

from ._dataset cimport RowDataset, rows_t, dataset_row, row_dot, row_axpy
from ._projection cimport project_l1_ball
from ._random cimport rng_state, rng_init, rng_randint


cdef inline double _shrink(double v, double a, double b) noexcept nogil:
    """a*v moved toward zero by b >= 0, stopping at zero (a > 0)."""
    v = a * v
    if v > b:
        return v - b
    if v < -b:
        return v + b
    return 0.0


cdef inline double _sign(double v) noexcept nogil:
    return (v > 0) - (v < 0)


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


cdef inline double _window_sum(const double* sarr, const double* p2, const double* carr,
                               Py_ssize_t lo, Py_ssize_t hi, double key, double q,
                               double log_a) noexcept nogil:
    """sum_{t in [lo, hi)} scale_t * max(key - C_t, 0).

    scale_t = sarr[lo] a^(t - lo) inside a window (a = 1 - q constant in an epoch), so its
    sum is computed in closed form, accurate relative to sarr[lo] (prefix sums of the scale
    would be dominated by the window's first terms and lose the late ones);
    p2[t+1] = sum_{u<=t} scale_u C_u has terms of bounded size, so its differences are safe.
    """
    cdef Py_ssize_t last = _last_alive(carr, lo, hi, key)
    cdef Py_ssize_t m
    cdef double total
    if last < lo:
        return 0.0
    m = last + 1 - lo
    if q == 0.0:
        total = sarr[lo] * m
    else:
        total = sarr[lo] * (-expm1(m * log_a) / q)
    return key * total - (p2[last + 1] - p2[lo])


def epro_sgd_epoch(RowDataset ds, const double[::1] y, const double[::1] cweight,
                   double[::1] w, double intercept, double eta, double alpha, double lam,
                   double radius, Py_ssize_t n_steps, bint fit_intercept, uint64_t seed,
                   uint64_t stream, uint64_t counter, double[::1] w_avg,
                   Py_ssize_t window=0):
    """One unprojected Epro-SGD epoch (Alg. 1, steps 4-8) of ``n_steps`` sampled rows.

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
    cdef rows_t* X = &ds.rows
    cdef Py_ssize_t d = X.n_features
    cdef rng_state rng
    cdef double a = 1.0 - 2.0 * eta * alpha
    cdef double b = intercept, b_avg
    if n_steps <= 0:
        w_avg[:] = w
        return intercept, intercept, counter
    if not a > 0.0:
        raise ValueError(
            f"the step size is too large for the ridge term: eta * alpha = {eta * alpha:.3g} "
            f"must be < 0.5 (decrease eta0)")
    rng_init(&rng, seed, stream, counter)
    if X.indptr == NULL:
        with nogil:
            b_avg = _epro_dense(X, &y[0], &cweight[0], &w[0], &b, eta, a, lam, radius,
                                n_steps, fit_intercept, &rng, &w_avg[0])
        return b, b_avg, rng.counter
    if window <= 0:
        window = max(1024, d)
    window = min(window, n_steps)
    cdef double[::1] K = np.empty(d)
    cdef double[::1] sgn = np.empty(d)
    cdef Py_ssize_t[::1] last = np.empty(d, dtype=np.intp)
    cdef Py_ssize_t[::1] heap = np.empty(max(d, 1), dtype=np.intp)
    cdef Py_ssize_t[::1] pos = np.empty(max(d, 1), dtype=np.intp)
    cdef double[::1] carr = np.empty(window + 1)
    cdef double[::1] sarr = np.empty(window + 1)
    cdef double[::1] p2 = np.empty(window + 2)
    with nogil:
        b_avg = _epro_sparse(X, &y[0], &cweight[0], &w[0], &b, eta, a, lam, radius, n_steps,
                             fit_intercept, &rng, &w_avg[0], window, &K[0], &sgn[0],
                             &last[0], &heap[0], &pos[0], &carr[0], &sarr[0], &p2[0])
    return b, b_avg, rng.counter


cdef double _epro_dense(const rows_t* X, const double* y, const double* cw, double* w,
                        double* b, double eta, double a, double lam, double radius,
                        Py_ssize_t n_steps, bint fit_intercept, rng_state* rng,
                        double* w_avg) noexcept nogil:
    """Dense rows: direct step.  Returns the intercept average; b holds the last iterate."""
    cdef Py_ssize_t d = X.n_features, t, j, i
    cdef const double* data
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
            v = _shrink(v, a, shrink) - g * data[j]
            w[j] = v
            new_norm += fabs(v)
        norm1 = new_norm
        if fit_intercept:
            b[0] -= g
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


cdef double _epro_sparse(const rows_t* X, const double* y, const double* cw, double* w,
                         double* b, double eta, double a, double lam, double radius,
                         Py_ssize_t n_steps, bint fit_intercept, rng_state* rng,
                         double* w_avg, Py_ssize_t window, double* K, double* sgn,
                         Py_ssize_t* last, Py_ssize_t* heap, Py_ssize_t* pos,
                         double* carr, double* sarr, double* p2) noexcept nogil:
    """CSR rows: lazy O(nnz log d) step, identical in exact arithmetic to ``_epro_dense``.

    Inside a window, w_j(tau) = sgn_j * s_tau * max(K_j - C_tau, 0); the step maps
    (s, C) -> (a s, C + eta lam I / (a s)) for all coordinates at once, and only the
    sampled row's coordinates get new (K_j, sgn_j).  ||w||_1 = s (sum_alive K - C n_alive),
    the heap removes coordinates as C passes their K.  The sum of the iterates of
    coordinate j over the window's times [lo, hi) comes from ``_window_sum``.
    """
    cdef Py_ssize_t d = X.n_features, t, j, i, k, tau = 0, size
    cdef const double* data
    cdef const int32_t* indices
    cdef int nnz
    cdef double r, g, shrink, b_sum = 0.0, v, dot, s = 1.0, C = 0.0, s_new, C_new
    cdef double sumK = 0.0, norm1
    cdef Py_ssize_t cnt = 0
    cdef double q = 1.0 - a, log_a = log1p(-(1.0 - a))
    for j in range(d):
        w_avg[j] = 0.0
    size = _lazy_init(d, w, K, sgn, last, heap, pos, &sumK, &cnt)
    p2[0] = 0.0
    for t in range(n_steps):
        carr[tau] = C
        sarr[tau] = s
        p2[tau + 1] = p2[tau] + s * C
        i = rng_randint(rng, X.n_samples)
        nnz = dataset_row(X, i, &data, &indices)
        dot = 0.0
        for k in range(nnz):
            j = indices[k]
            w_avg[j] += sgn[j] * _window_sum(sarr, p2, carr, last[j], tau + 1, K[j], q, log_a)
            last[j] = tau + 1
            if K[j] > C:
                dot += data[k] * sgn[j] * s * (K[j] - C)
        r = dot + b[0] - y[i]
        g = eta * cw[i] * r
        norm1 = s * (sumK - C * cnt)
        shrink = eta * lam if norm1 > radius else 0.0
        b_sum += b[0]
        s_new = a * s
        C_new = C + shrink / s_new
        for k in range(nnz):
            j = indices[k]
            v = sgn[j] * s_new * (K[j] - C_new) if K[j] > C_new else 0.0
            v -= g * data[k]
            if pos[j] >= 0:
                size = _heap_remove(heap, pos, K, size, j)
                sumK -= K[j]
                cnt -= 1
            K[j] = fabs(v) / s_new + C_new
            sgn[j] = _sign(v)
            if v != 0.0:
                size = _heap_push(heap, pos, K, size, j)
                sumK += K[j]
                cnt += 1
        s = s_new
        C = C_new
        while size > 0 and K[heap[0]] <= C:
            j = heap[0]
            size = _heap_remove(heap, pos, K, size, j)
            sumK -= K[j]
            cnt -= 1
        if fit_intercept:
            b[0] -= g
        tau += 1
        if tau == window or s < 1e-100 or t == n_steps - 1:
            # materialize every coordinate at time tau and restart the window at scale 1
            for j in range(d):
                w_avg[j] += sgn[j] * _window_sum(sarr, p2, carr, last[j], tau, K[j], q, log_a)
                w[j] = sgn[j] * s * (K[j] - C) if K[j] > C else 0.0
            if t < n_steps - 1:
                size = _lazy_init(d, w, K, sgn, last, heap, pos, &sumK, &cnt)
                s = 1.0
                C = 0.0
                tau = 0
                p2[0] = 0.0
    for j in range(d):
        w_avg[j] /= n_steps
    return b_sum / n_steps


def projected_sgd(RowDataset ds, const double[::1] y, const double[::1] cweight,
                  double[::1] w, double intercept, double eta0, double decay, double alpha,
                  double radius, Py_ssize_t t0, Py_ssize_t n_steps, bint fit_intercept,
                  uint64_t seed, uint64_t stream, uint64_t counter, double[::1] w_sum,
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
    cdef rows_t* X = &ds.rows
    cdef Py_ssize_t d = X.n_features, t, j, i
    cdef rng_state rng
    cdef const double* data
    cdef const int32_t* indices
    cdef int nnz
    cdef double r, g, eta, a, b = intercept, b_sum = 0.0
    cdef double[::1] work = np.empty(max(d, 1))
    rng_init(&rng, seed, stream, counter)
    if n_steps <= 0:
        return b, 0.0, rng.counter
    # the last step has the smallest eta, so the first has the smallest ridge factor
    if X.indptr != NULL and 1.0 - 2.0 * alpha * eta0 / (1.0 + decay * t0) > 0.0 and \
            decay >= 0.0:
        if window <= 0:
            window = max(1024, d)
        window = min(window, n_steps)
        return _projected_sgd_lazy(X, y, cweight, w, b, eta0, decay, alpha, radius, t0,
                                   n_steps, fit_intercept, &rng, w_sum, window)
    with nogil:
        for t in range(t0 + 1, t0 + n_steps + 1):
            eta = eta0 / (1.0 + decay * (t - 1))
            a = 1.0 - 2.0 * eta * alpha
            i = rng_randint(&rng, X.n_samples)
            nnz = dataset_row(X, i, &data, &indices)
            r = row_dot(data, indices, nnz, &w[0]) + b - y[i]
            g = eta * cweight[i] * r
            b_sum += b
            for j in range(d):
                w_sum[j] += w[j]
                w[j] *= a
            row_axpy(-g, data, indices, nnz, &w[0])
            if fit_intercept:
                b -= g
            project_l1_ball(&w[0], d, radius, &work[0])
    return b, b_sum, rng.counter


cdef _projected_sgd_lazy(rows_t* X, const double[::1] y, const double[::1] cweight,
                         double[::1] w, double b, double eta0, double decay, double alpha,
                         double radius, Py_ssize_t t0, Py_ssize_t n_steps,
                         bint fit_intercept, rng_state* rng, double[::1] w_sum,
                         Py_ssize_t window):
    cdef Py_ssize_t d = X.n_features
    cdef double b_sum = 0.0
    cdef double[::1] K = np.empty(max(d, 1))
    cdef double[::1] sgn = np.empty(max(d, 1))
    cdef Py_ssize_t[::1] last = np.empty(max(d, 1), dtype=np.intp)
    cdef Py_ssize_t[::1] heap = np.empty(max(d, 1), dtype=np.intp)
    cdef Py_ssize_t[::1] pos = np.empty(max(d, 1), dtype=np.intp)
    cdef double[::1] carr = np.empty(window + 1)
    cdef double[::1] p1 = np.empty(window + 2)
    cdef double[::1] p2 = np.empty(window + 2)
    with nogil:
        _projected_sparse(X, &y[0], &cweight[0], &w[0], &b, &b_sum, eta0, decay, alpha,
                          radius, t0, n_steps, fit_intercept, rng, &w_sum[0], window, &K[0],
                          &sgn[0], &last[0], &heap[0], &pos[0], &carr[0], &p1[0], &p2[0])
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


cdef void _projected_sparse(const rows_t* X, const double* y, const double* cw, double* w,
                            double* b, double* b_sum, double eta0, double decay,
                            double alpha, double radius, Py_ssize_t t0, Py_ssize_t n_steps,
                            bint fit_intercept, rng_state* rng, double* w_sum,
                            Py_ssize_t window, double* K, double* sgn, Py_ssize_t* last,
                            Py_ssize_t* heap, Py_ssize_t* pos, double* carr, double* p1,
                            double* p2) noexcept nogil:
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
    cdef Py_ssize_t d = X.n_features, t, j, i, k, tau = 0, size, cnt = 0
    cdef const double* data
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
                dot += data[k] * sgn[j] * s * (K[j] - C)
        r = dot + b[0] - y[i]
        g = eta * cw[i] * r
        b_sum[0] += b[0]
        s = a * s
        for k in range(nnz):
            j = indices[k]
            v = sgn[j] * s * (K[j] - C) if K[j] > C else 0.0
            v -= g * data[k]
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


def oneproj_sgd(RowDataset ds, const double[::1] y, const double[::1] cweight,
                double[::1] w, double intercept, double eta0, double decay, double alpha,
                double lam, double gamma, double radius, Py_ssize_t t0, Py_ssize_t n_steps,
                bint fit_intercept, uint64_t seed, uint64_t stream, uint64_t counter,
                double[::1] w_sum):
    """The 'oneproj' baseline (Mahdavi et al. 2012): SGD on the smoothed augmented objective
    F + gamma log(1 + exp(lam (||w||_1 - radius) / gamma)), no projection inside.

    Same conventions as :func:`projected_sgd`.
    """
    cdef rows_t* X = &ds.rows
    cdef Py_ssize_t d = X.n_features, t, j, i
    cdef rng_state rng
    cdef const double* data
    cdef const int32_t* indices
    cdef int nnz
    cdef double r, g, eta, a, b = intercept, b_sum = 0.0, norm1 = 0.0, z, sig, pen, v
    rng_init(&rng, seed, stream, counter)
    with nogil:
        for j in range(d):
            norm1 += fabs(w[j])
        for t in range(t0 + 1, t0 + n_steps + 1):
            eta = eta0 / (1.0 + decay * (t - 1))
            a = 1.0 - 2.0 * eta * alpha
            i = rng_randint(&rng, X.n_samples)
            nnz = dataset_row(X, i, &data, &indices)
            r = row_dot(data, indices, nnz, &w[0]) + b - y[i]
            g = eta * cweight[i] * r
            # derivative of gamma*log(1+exp(z)), z = lam c / gamma: lam * sigmoid(z)
            z = lam * (norm1 - radius) / gamma
            if z >= 0:
                sig = 1.0 / (1.0 + exp(-z))
            else:
                sig = exp(z) / (1.0 + exp(z))
            pen = eta * lam * sig
            b_sum += b
            for j in range(d):
                v = w[j]
                w_sum[j] += v
                w[j] = a * v - pen * _sign(v)
            row_axpy(-g, data, indices, nnz, &w[0])
            norm1 = 0.0
            for j in range(d):
                norm1 += fabs(w[j])
            if fit_intercept:
                b -= g
    return b, b_sum, rng.counter


def orda_epoch(RowDataset ds, const double[::1] y, const double[::1] cweight,
               double[::1] x, double intercept, double eta, double alpha, double lam,
               double radius, Py_ssize_t n_steps, bint fit_intercept, uint64_t seed,
               uint64_t stream, uint64_t counter, bint at_u=False):
    """One ORDA run (paper 001, Alg. 2) of T = ``n_steps`` (T + 1 gradient calls) on the
    augmented objective with g(w) = alpha ||w||^2 (the intercept has g = 0).

    The stochastic gradient (data term and penalty subgradient) is taken at x_t, as the
    paper writes it, or at the extrapolated point u_t (``at_u``, the original ORDA).
    ``x`` (the start
    x_1, also the anchor of z) is overwritten with the output x_{T+2}.  O(d) per step.
    Returns (intercept, counter).
    """
    cdef rows_t* X = &ds.rows
    cdef Py_ssize_t d = X.n_features, t, j, i, k
    cdef rng_state rng
    cdef const double* data
    cdef const int32_t* indices
    cdef int nnz
    cdef double[::1] x1 = np.array(x, copy=True)
    cdef double[::1] z = np.array(x, copy=True)
    cdef double[::1] S = np.zeros(max(d, 1))
    cdef double[::1] ubuf = np.zeros(max(d, 1))
    cdef double norm1u, dotu
    cdef double b = intercept, b1 = intercept, zb = intercept, Sb = 0.0, ub
    cdef double theta, r, cr, pen, norm1 = 0.0, acoef, gam, u, sg, xold, tw, gbar_scale
    rng_init(&rng, seed, stream, counter)
    with nogil:
        for j in range(d):
            norm1 += fabs(x[j])
        for t in range(1, n_steps + 2):
            theta = 2.0 / (t + 1.0)
            i = rng_randint(&rng, X.n_samples)
            nnz = dataset_row(X, i, &data, &indices)
            if at_u:
                norm1u = 0.0
                for j in range(d):
                    ubuf[j] = (1.0 - theta) * x[j] + theta * z[j]
                    norm1u += fabs(ubuf[j])
                r = row_dot(data, indices, nnz, &ubuf[0]) + \
                    ((1.0 - theta) * b + theta * zb) - y[i]
                pen = lam if norm1u > radius else 0.0
            else:
                r = row_dot(data, indices, nnz, &x[0]) + b - y[i]
                pen = lam if norm1 > radius else 0.0
            cr = cweight[i] * r
            tw = <double>t
            gbar_scale = 2.0 / (tw * (tw + 1.0))
            acoef = 4.0 * sqrt(tw + 1.0) / (tw * eta)
            gam = tw * sqrt(tw) / eta
            # row part of S (the gradient's data term)
            if indices == NULL:
                for k in range(nnz):
                    S[k] += tw * cr * data[k]
            else:
                for k in range(nnz):
                    S[indices[k]] += tw * cr * data[k]
            norm1 = 0.0
            for j in range(d):
                u = (1.0 - theta) * x[j] + theta * z[j]
                sg = _sign(u) if at_u else _sign(x[j])
                S[j] += tw * pen * sg
                z[j] = (acoef * x1[j] - gbar_scale * S[j]) / (acoef + 2.0 * alpha)
                x[j] = (gam * u - pen * sg) / (gam + 2.0 * alpha)
                norm1 += fabs(x[j])
            for k in range(nnz):
                j = k if indices == NULL else indices[k]
                xold = x[j]
                x[j] = xold - cr * data[k] / (gam + 2.0 * alpha)
                norm1 += fabs(x[j]) - fabs(xold)
            if fit_intercept:
                ub = (1.0 - theta) * b + theta * zb
                Sb += tw * cr
                zb = b1 - gbar_scale * Sb / acoef
                b = ub - cr / gam
    return b, rng.counter
