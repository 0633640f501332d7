"""Compiled loops of S3GD (paper 002, Algorithm 1) and of its baselines.

The per-problem data live in cdef classes built once per problem by the driver
(``skstoch/_solvers/s3gd.py``): :class:`EpochProblem` (rows, targets, weights, loss, penalty,
work buffers and the generator position) and one table object per algorithm, which also
selects it:

* :class:`AnchorTables` (S3GD): per outer loop, the anchor derivatives
  ``dA[s, j] = psi'(z_j.w~ + b~; label_s)`` (m row dots) and the surrogate full gradient
  ``gH = Lw + (1/n) sum_s BT[s]^T dA[s]`` (O(m d), from the precomputed
  ``BT[s] = M_s^T diag(sw) X``); per sample of a mini-batch the correction
  ``approx_i = offset_i + sum_t gamma_it dA[slot_i, nbr_it]`` (O(k)).
* :class:`SnapshotTables` (Prox-SVRG): per outer loop a full pass stores ``psi'_i(w~)`` and
  the full gradient.
* ``None``: plain proximal mini-batch SGD (no correction).
* :class:`StrataTables` (stratified SGD): one sample from each stratum per step, weighted
  by the stratum's share of the data (an unbiased estimate).

One call of :func:`run_epoch` runs ``n_outer`` outer loops of ``n_inner`` proximal mini-batch
steps, entirely without the GIL.  Every step is ``w <- prox(w - eta g)``,
``g = sum_{i in I} coef_i c_i x_i + gH`` with ``c_i = sw_i (psi'(x_i.w + b; y_i) - approx_i)``.
The prox of ``lam1 ||w||_1 + lam2/2 ||w||^2`` is ``soft(v, eta lam1) / (1 + eta lam2)``.
On sparse rows with ``lam1 == 0`` the iterate is kept as ``w = a u + beta gH`` so that a step
costs O(nnz of the batch) instead of O(d) (the scaling trick); with ``lam1 > 0`` the
coordinates that no batch row touches take their constant proximal steps just in time, in
closed form (:func:`_catch_up`), so a step is O(nnz of the batch) too.  :func:`sgd_pass` is
the per-sample SGD pass of the warm-up.

Mini-batches are drawn without replacement by a partial Fisher-Yates shuffle of the
problem's permutation with the counter-based generator; the permutation and the counter carry
over between calls, so a fit is bitwise reproducible.  The constructors validate every index
array (the loops run without bounds checks).
"""
import numpy as np

from libc.math cimport ceil, exp, log, pow, sqrt
from libc.stdint cimport int32_t, int64_t, uint64_t

from ._random cimport rng_state, rng_init, rng_randint
from ._dataset cimport (RowDataset, rows_t, rowvals_t, dataset_row, row_dot, row_axpy,
                        row_sqnorm, dense_axpy)
from ._loss cimport MarginLoss
from ._prox cimport enet_prox, soft_threshold

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define S3GD_PREFETCH(p) __builtin_prefetch((const void*)(p), 0, 1)
    #else
    #define S3GD_PREFETCH(p) ((void)(p))
    #endif
    """
    void S3GD_PREFETCH(const void* p) noexcept nogil

# rows of the random order read ahead of the one being processed: a random row of X is a
# cache miss (several for a dense row of 54 doubles), which dominated a pass in random order
# (measured: SGDClassifier's epoch on 500,000 x 54 takes 0.33 s CPU shuffled, 0.10 s in order;
# our warm-up pass there: 0.30 s without prefetching, 0.20-0.23 s with 4 to 64 rows ahead)
cdef int _AHEAD = 8

cdef int _S3GD = 0
cdef int _SVRG = 1
cdef int _SGD = 2
cdef int _SSGD = 3


cdef inline double _affine_pow(double w, double S, double B, double wstar, double j) noexcept nogil:
    """j applications of w <- S w + B (wstar = B / (1 - S) when S < 1)."""
    if S == 1.0:
        return w + j * B
    return wstar + pow(S, j) * (w - wstar)


cdef double _branch_steps(double w, double S, double B, double wstar, double thr,
                          double m) noexcept nogil:
    """Steps (at most m) that the affine branch w <- S w + B takes from w > thr before the
    iterate drops to <= thr (the branch then ends), counting the step that crosses."""
    cdef double j, r
    if S == 1.0:
        if B >= 0.0:
            return m
        j = ceil((w - thr) / (-B))
    else:
        if wstar > thr:
            return m          # monotone towards a fixed point inside the branch
        r = (thr - wstar) / (w - wstar)
        if r <= 0.0:
            return m
        j = ceil(log(r) / log(S))
    if j < 1.0:
        j = 1.0
    # guard the rounding of log / division: the first j with w_j <= thr
    while j > 1.0 and _affine_pow(w, S, B, wstar, j - 1.0) <= thr:
        j -= 1.0
    while j < m and _affine_pow(w, S, B, wstar, j) > thr:
        j += 1.0
    return j if j < m else m


cdef double _catch_up(double w, double m, double eg, double t1, double S) noexcept nogil:
    """m applications of the constant proximal step w <- S soft(w - eg, t1) (a coordinate
    that no sampled row touched: its gradient is the constant eg / eta of the snapshot),
    in closed form branch by branch (at most three branches: the map is monotone)."""
    cdef double v, B, thr, wstar, j, sgn
    while m > 0.0:
        v = w - eg
        if v > t1 or v < -t1:
            sgn = 1.0 if v > t1 else -1.0
            # in the frame where the branch is the positive one (w -> sgn w):
            # w <- S (w - thr), thr = sgn eg + t1, valid while w > thr
            w = sgn * w
            thr = sgn * eg + t1
            B = -S * thr
            wstar = B / (1.0 - S) if S != 1.0 else 0.0
            j = _branch_steps(w, S, B, wstar, thr, m)
            w = sgn * _affine_pow(w, S, B, wstar, j)
            m -= j
        else:
            w = 0.0
            m -= 1.0
            if eg <= t1 and eg >= -t1:
                return 0.0    # 0 is a fixed point
    return w


cdef void _prox(double* w, Py_ssize_t d, double eta, double lam1, double lam2) noexcept nogil:
    cdef Py_ssize_t f
    cdef double shrink = 1.0 / (1.0 + eta * lam2)
    cdef double t1 = eta * lam1
    if lam1 > 0:
        for f in range(d):
            w[f] = enet_prox(w[f], t1, shrink)
    elif lam2 > 0:
        for f in range(d):
            w[f] *= shrink


def prox(double[::1] w, double eta, double lam1, double lam2):
    """In place: w <- soft(w, eta lam1) / (1 + eta lam2) (test hook of the kernel's prox)."""
    if w.shape[0] > 0:
        with nogil:
            _prox(&w[0], w.shape[0], eta, lam1, lam2)


cdef inline void _draw_batch(rng_state* s, int32_t* perm, Py_ssize_t n, int p) noexcept nogil:
    """perm[0:p] becomes a uniform random p-subset (partial Fisher-Yates)."""
    cdef Py_ssize_t t, j
    cdef int32_t tmp
    for t in range(p):
        j = t + rng_randint(s, n - t)
        tmp = perm[t]
        perm[t] = perm[j]
        perm[j] = tmp


cdef void _materialize(double* u, const double* gH, Py_ssize_t d, double* a, double* beta,
                       bint has_h) noexcept nogil:
    """u <- a u + beta gH; a <- 1; beta <- 0."""
    cdef Py_ssize_t f
    if a[0] != 1.0:
        for f in range(d):
            u[f] *= a[0]
    if has_h and beta[0] != 0.0:
        dense_axpy(beta[0], gH, u, d)
    a[0] = 1.0
    beta[0] = 0.0


cdef inline void _prefetch_row(const rows_t* X, Py_ssize_t i) noexcept nogil:
    """Ask the cache for row i (its values and, for CSR, its column indices)."""
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz = dataset_row(X, i, &data, &indices)
    cdef int q
    if data.f32 != NULL:
        for q in range(0, nnz, 16):
            S3GD_PREFETCH(data.f32 + q)
    else:
        for q in range(0, nnz, 8):
            S3GD_PREFETCH(data.f64 + q)
    if indices != NULL:
        for q in range(0, nnz, 16):
            S3GD_PREFETCH(indices + q)


def row_sqnorms(RowDataset ds, double[::1] out):
    """out[i] = ||x_i||^2 (one sequential pass, no temporary copy of X)."""
    cdef const rows_t* X = &ds.rows
    cdef Py_ssize_t i
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    with nogil:
        for i in range(X.n_samples):
            nnz = dataset_row(X, i, &data, &indices)
            out[i] = row_sqnorm(data, nnz)


cdef class EpochProblem:
    """One binary or single-output problem as the epoch kernels read it (built once).

    It also holds the work buffers of the steps and the position of the counter-based
    generator and the permutation, which :func:`sgd_pass` and :func:`run_epoch` continue from
    call to call (a fit is bitwise reproducible).

    Parameters
    ----------
    ds : RowDataset
    y, sw : ndarray of float64, shape (n_samples,)
        Targets (+1/-1 or real) and sample weights.
    loss : MarginLoss
    fit_intercept : bool
    lam1, lam2 : float
        The penalty ``lam1 ||w||_1 + lam2 / 2 ||w||^2`` (non-negative).
    batch_size : int
        Mini-batch size p, ``1 <= p <= n_samples`` (it also bounds the number of strata).
    seed, stream : int
        Key of the generator (the counter starts at 0).
    """
    cdef RowDataset ds
    cdef const double[::1] y
    cdef const double[::1] sw
    cdef MarginLoss loss
    cdef readonly bint fit_intercept
    cdef readonly double lam1, lam2
    cdef readonly int batch_size
    cdef readonly uint64_t seed, stream, counter
    cdef readonly int32_t[::1] perm   # the permutation batches are drawn from (carries over)
    cdef int32_t[::1] ibuf
    cdef double[::1] cbuf, gH, last_u
    cdef int64_t[::1] last

    def __init__(self, RowDataset ds not None, const double[::1] y, const double[::1] sw,
                 MarginLoss loss not None, bint fit_intercept, double lam1, double lam2,
                 int batch_size, uint64_t seed, uint64_t stream):
        cdef Py_ssize_t n = ds.rows.n_samples, d = ds.rows.n_features
        if n < 1 or d < 1 or y.shape[0] != n or sw.shape[0] != n:
            raise ValueError(f"EpochProblem: need n_samples >= 1, n_features >= 1 and y, sw of "
                             f"n_samples = {n} entries, got {y.shape[0]} and {sw.shape[0]}")
        if not 1 <= batch_size <= n:
            raise ValueError(f"EpochProblem: need 1 <= batch_size <= {n}, got {batch_size}")
        if not (lam1 >= 0.0 and lam2 >= 0.0):
            raise ValueError(f"EpochProblem: penalties must be >= 0, got {lam1}, {lam2}")
        self.ds, self.y, self.sw, self.loss = ds, y, sw, loss
        self.fit_intercept, self.lam1, self.lam2 = fit_intercept, lam1, lam2
        self.batch_size, self.seed, self.stream, self.counter = batch_size, seed, stream, 0
        self.perm = np.arange(n, dtype=np.int32)
        # the current and the next batch (uniform batches are drawn one step ahead)
        self.ibuf = np.zeros(2 * batch_size, dtype=np.int32)
        self.cbuf = np.zeros(batch_size)
        self.gH = np.zeros(d)
        # just-in-time l1 prox on sparse rows: each coordinate's step count (run_epoch) and
        # each coordinate's last applied threshold sum (sgd_pass)
        self.last = np.zeros(d if ds.is_sparse and lam1 > 0.0 else 0, dtype=np.int64)
        self.last_u = np.zeros(d if lam1 > 0.0 else 0)

    @property
    def n_samples(self):
        return self.ds.rows.n_samples

    @property
    def n_features(self):
        return self.ds.rows.n_features


cdef class AnchorTables:
    """The anchor correction of S3GD for one problem (selects S3GD in :func:`run_epoch`).

    Parameters
    ----------
    problem : EpochProblem
        The problem the tables are built for (only its shape is used).
    anchor_idx : ndarray of int32, shape (m,)
        Rows of X that are anchors.
    nbr, nbr_w : ndarray of int32 / float64, shape (n_samples, k)
        Each sample's anchors (positions in ``anchor_idx``) and weights gamma.
    BT : ndarray of float64, shape (n_slots, m, n_features)
        ``M_s^T diag(sw_s) X`` per label slot (1 slot: label-free, 2 slots: y = -1, y = +1).
    colsum : ndarray of float64, shape (n_slots, m)
        ``M_s^T sw_s`` (the intercept column of BT).
    slot_label : ndarray of float64, shape (n_slots,)
        The label at which each slot's anchor derivatives are taken.
    offset : ndarray of float64, shape (n_samples,)
        Per-sample constant of the correction (the label term of a label-free table).
    Lw : ndarray of float64, shape (n_features,); Lb : float
        The label term's full gradient (coefficients, intercept).
    """
    cdef readonly Py_ssize_t n_samples, n_features, n_anchors, n_neighbors, n_slots
    cdef const int32_t[::1] anchor_idx
    cdef const int32_t[:, ::1] nbr
    cdef const double[:, ::1] nbr_w
    cdef const double[:, :, ::1] BT
    cdef const double[:, ::1] colsum
    cdef const double[::1] slot_label, offset, Lw
    cdef double Lb
    cdef double[:, ::1] dA

    def __init__(self, EpochProblem problem not None, const int32_t[::1] anchor_idx,
                 const int32_t[:, ::1] nbr, const double[:, ::1] nbr_w,
                 const double[:, :, ::1] BT, const double[:, ::1] colsum,
                 const double[::1] slot_label, const double[::1] offset,
                 const double[::1] Lw, double Lb):
        cdef Py_ssize_t n = problem.n_samples, d = problem.n_features
        cdef Py_ssize_t m = anchor_idx.shape[0], s = BT.shape[0]
        if m < 1 or nbr.shape[0] != n or nbr.shape[1] < 1 or nbr_w.shape[0] != n \
                or nbr_w.shape[1] != nbr.shape[1]:
            raise ValueError("AnchorTables: need m >= 1 anchors and (n_samples, k >= 1) "
                             "neighbour and weight arrays")
        if s not in (1, 2) or BT.shape[1] != m or BT.shape[2] != d or colsum.shape[0] != s \
                or colsum.shape[1] != m or slot_label.shape[0] != s:
            raise ValueError("AnchorTables: BT must be (1 or 2, m, n_features) with matching "
                             "colsum (n_slots, m) and slot_label (n_slots,)")
        if offset.shape[0] != n or Lw.shape[0] != d:
            raise ValueError("AnchorTables: offset needs n_samples and Lw n_features entries")
        if not (_indices_within(&anchor_idx[0], m, n)
                and _indices_within(&nbr[0, 0], n * nbr.shape[1], m)):
            raise ValueError("AnchorTables: anchor rows must lie in [0, n_samples) and "
                             "neighbours in [0, m)")
        self.n_samples, self.n_features, self.n_anchors = n, d, m
        self.n_neighbors, self.n_slots = nbr.shape[1], s
        self.anchor_idx, self.nbr, self.nbr_w, self.BT, self.colsum = \
            anchor_idx, nbr, nbr_w, BT, colsum
        self.slot_label, self.offset, self.Lw, self.Lb = slot_label, offset, Lw, Lb
        self.dA = np.zeros((s, m))


cdef class SnapshotTables:
    """Prox-SVRG's snapshot derivatives ``psi'_i(w~)`` for one problem (selects Prox-SVRG in
    :func:`run_epoch`)."""
    cdef readonly Py_ssize_t n_samples, n_features
    cdef double[::1] dsnap
    # a snapshot given from outside (:meth:`set_snapshot`): the loss part of the full
    # gradient (length d + 1, the intercept's last); run_epoch then makes no snapshot pass
    cdef readonly bint external
    cdef double[::1] ext_grad

    def __init__(self, EpochProblem problem not None):
        self.n_samples, self.n_features = problem.n_samples, problem.n_features
        self.dsnap = np.zeros(self.n_samples)
        self.external = False

    def set_snapshot(self, const double[::1] grad, const double[::1] dsnap):
        """Use the snapshot ``grad`` (the loss part of the full gradient of the whole data
        at w~, length n_features + 1) and ``dsnap`` (``psi'_i(w~)`` of this problem's rows)
        instead of a pass over the problem's rows: the problem is then a sample of the
        data (a Dask fit, whose full pass runs on the workers)."""
        if grad.shape[0] != self.n_features + 1 or dsnap.shape[0] != self.n_samples:
            raise ValueError(f"set_snapshot: need grad of {self.n_features + 1} and dsnap of "
                             f"{self.n_samples} entries, got {grad.shape[0]} and "
                             f"{dsnap.shape[0]}")
        self.ext_grad = np.array(grad, dtype=np.float64)
        self.dsnap[:] = dsnap
        self.external = True


cdef class StrataTables:
    """The strata of stratified SGD (selects it in :func:`run_epoch`).

    Parameters
    ----------
    problem : EpochProblem
    order : ndarray of int32, shape (n_samples,)
        The rows sorted by stratum.
    ptr : ndarray of int64, shape (n_strata + 1,)
        Stratum c holds ``order[ptr[c]:ptr[c + 1]]`` (non-empty); at most ``batch_size``
        strata (one sample of each per step).
    """
    cdef readonly Py_ssize_t n_samples, n_features, n_strata
    cdef const int32_t[::1] order
    cdef const int64_t[::1] ptr

    def __init__(self, EpochProblem problem not None, const int32_t[::1] order,
                 const int64_t[::1] ptr):
        cdef Py_ssize_t n = problem.n_samples, c, n_strata = ptr.shape[0] - 1
        if order.shape[0] != n or not _indices_within(&order[0], n, n):
            raise ValueError("StrataTables: order must hold n_samples rows in [0, n_samples)")
        if not 1 <= n_strata <= problem.batch_size or ptr[0] != 0 or ptr[n_strata] != n:
            raise ValueError(f"StrataTables: need 1 to batch_size={problem.batch_size} "
                             f"strata covering the n_samples rows")
        for c in range(n_strata):
            if ptr[c + 1] <= ptr[c]:
                raise ValueError("StrataTables: every stratum must be non-empty")
        self.n_samples, self.n_features, self.n_strata = n, problem.n_features, n_strata
        self.order, self.ptr = order, ptr


cdef bint _indices_within(const int32_t* idx, Py_ssize_t size, Py_ssize_t bound) noexcept:
    """All of idx[0:size] lie in [0, bound)."""
    cdef Py_ssize_t t
    for t in range(size):
        if idx[t] < 0 or idx[t] >= bound:
            return False
    return True


cdef _check_iterate(double[::1] w, double[::1] b, Py_ssize_t d):
    if w is None or b is None or w.shape[0] != d or b.shape[0] != 1:
        raise ValueError(f"the iterate needs w of n_features = {d} entries and b of one")


def sgd_pass(EpochProblem problem not None, double[::1] w, double[::1] b, double eta0,
             double decay, double t_offset=0.0, Py_ssize_t start=0, Py_ssize_t stop=-1):
    """One pass of per-sample proximal SGD over a fresh random permutation (the warm-up),
    or the positions ``start <= t < stop`` of it (a chunk).

    The problem's permutation is shuffled in place by a full Fisher-Yates shuffle with the
    counter-based generator; sample ``t`` of the pass, ``i = perm[t]``, takes the step
    ``eta_t = 1 / (1 / eta0 + decay (t_offset + t))``:
    ``w <- (w - eta_t c_t x_i) / (1 + eta_t lam2)``, ``b <- b - eta_t c_t`` with
    ``c_t = sw_i psi'(x_i.w + b; y_i)``.  ``w`` is kept as ``a v`` so that a step costs
    O(nnz(x_i)) for dense and sparse rows alike (the l2 shrink only rescales ``a``, as in
    scikit-learn's plain SGD), and the rows ``_AHEAD`` places further in the order are
    prefetched.  With ``lam1 > 0`` the step is the exact prox of ``lam1 ||w||_1 + lam2/2
    ||w||^2``, ``w <- soft(w - eta_t c_t x_i, eta_t lam1) / (1 + eta_t lam2)``, still O(nnz):
    in the scaled frame the l1 part of step t is ``soft(v, eta_t lam1 / a_t)`` on every
    coordinate and consecutive soft thresholds add up, so a coordinate is brought up to date
    only when a row touches it (``v_j <- soft(v_j, U - last_u[j])`` with the running sum
    ``U``, Tsuruoka et al. 2009 without the need for clipping: no gradient acts between the
    thresholds) and all of them at the end.
    A pass may be run in chunks: ``start == 0`` shuffles the permutation, a later chunk
    (``start > 0``) continues the same permutation without drawing, and ``stop = -1`` means
    ``n``; the scaled vector and the l1 thresholds are folded into ``w`` at the end of each
    chunk, so chunks give the pass up to rounding.
    Returns ``sum_t sw_i loss_i`` at the iterate before step t.
    """
    cdef const rows_t* X = &problem.ds.rows
    cdef Py_ssize_t n = X.n_samples, d = X.n_features
    cdef const double[::1] y = problem.y
    cdef const double[::1] sw = problem.sw
    cdef MarginLoss loss = problem.loss
    cdef bint fit_intercept = problem.fit_intercept
    cdef double lam1 = problem.lam1, lam2 = problem.lam2
    cdef double* wp
    cdef int32_t* pp = &problem.perm[0]
    cdef double a = 1.0, bb, inv_eta = 1.0 / eta0, eta_t, p, c, loss_sum = 0.0
    cdef Py_ssize_t t, i, f
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz, q
    cdef bint l1 = lam1 > 0.0
    cdef double U = 0.0, du
    cdef double* lu = &problem.last_u[0] if l1 else NULL
    cdef rng_state rng
    _check_iterate(w, b, d)
    if not (eta0 > 0.0 and decay >= 0.0):
        raise ValueError(f"sgd_pass: need eta0 > 0 and decay >= 0, got {eta0}, {decay}")
    wp = &w[0]
    bb = b[0]
    if stop < 0 or stop > n:
        stop = n
    if start < 0 or start > stop:
        raise ValueError(f"sgd_pass: need 0 <= start <= stop <= n, got {start}, {stop}")
    rng_init(&rng, problem.seed, problem.stream, problem.counter)
    with nogil:
        if l1:
            for f in range(d):
                lu[f] = 0.0
        if start == 0:
            _draw_batch(&rng, pp, n, <int>n)
        for t in range(start, min(start + <Py_ssize_t>_AHEAD, stop)):
            _prefetch_row(X, pp[t])
        for t in range(start, stop):
            if t + _AHEAD < stop:
                _prefetch_row(X, pp[t + _AHEAD])
            i = pp[t]
            eta_t = 1.0 / (inv_eta + decay * (t_offset + t))
            nnz = dataset_row(X, i, &data, &indices)
            if l1:   # bring the row's coordinates up to date (thresholds of steps < t)
                for q in range(nnz):
                    f = indices[q] if indices != NULL else q
                    du = U - lu[f]
                    if du > 0.0:
                        wp[f] = soft_threshold(wp[f], du)
                        lu[f] = U
            p = a * row_dot(data, indices, nnz, wp) + bb
            loss_sum += sw[i] * loss.loss(p, y[i])
            c = sw[i] * loss.dloss(p, y[i])
            if c != 0.0:
                row_axpy(-eta_t * c / a, data, indices, nnz, wp)
                if fit_intercept:
                    bb -= eta_t * c
            if l1:
                U += eta_t * lam1 / a
            if lam2 > 0.0:
                a /= 1.0 + eta_t * lam2
            if a < 1e-9 or U > 1e300:
                for f in range(d):
                    if l1:
                        wp[f] = soft_threshold(wp[f], U - lu[f])
                        lu[f] = 0.0
                    wp[f] *= a
                a = 1.0
                U = 0.0
        for f in range(d):
            if l1:
                wp[f] = soft_threshold(wp[f], U - lu[f])
            if a != 1.0:
                wp[f] *= a
    b[0] = bb
    problem.counter = rng.counter
    return loss_sum




def anchor_topk(const double[:, ::1] prod, const double[::1] x_sq, const double[::1] z_sq,
                const int64_t[::1] self_pos, int k, bint paper_width, double eps,
                int32_t[:, ::1] neighbors, double[:, ::1] weights, Py_ssize_t row_offset):
    """The k nearest anchors of a chunk of rows and their normalised Gaussian weights.

    ``prod`` (n_rows, m) holds the products ``x_r.z_j``; the squared distance is
    ``x_sq[r] + z_sq[j] - 2 prod[r, j]`` (clipped at 0), except that the anchor column
    ``self_pos[r] >= 0`` of a row that is itself an anchor counts as nearer than everything
    (its distance is exactly 0).  Writes ``neighbors[row_offset + r]`` (columns, nearest first;
    ties keep the lower column first) and the weights of eq. (14) shifted by the nearest
    squared distance so nothing underflows: ``sigma^2 = max(eps^2, d_1^2)`` ("nearest") or
    ``max(eps^2, d_1)`` (``paper_width``, eq. 14 literally).  O(m) per row typically (O(m k)
    at worst), no sort of the whole row.  Python checks ``1 <= k <= m`` and all shapes.
    """
    cdef Py_ssize_t n_rows = prod.shape[0], m = prod.shape[1], r, j, t
    cdef double dv, d1, sigma2, tot, xs
    cdef int64_t sp_
    cdef double* bd
    cdef int32_t* bj
    with nogil:
        for r in range(n_rows):
            bd = &weights[row_offset + r, 0]
            bj = &neighbors[row_offset + r, 0]
            xs = x_sq[r]
            sp_ = self_pos[r]
            for t in range(k):
                bd[t] = 1e308
                bj[t] = -1
            for j in range(m):
                if j == sp_:
                    dv = -1.0
                else:
                    dv = xs + z_sq[j] - 2.0 * prod[r, j]
                    if dv < 0.0:
                        dv = 0.0
                if dv < bd[k - 1]:
                    t = k - 1
                    while t > 0 and bd[t - 1] > dv:
                        bd[t] = bd[t - 1]
                        bj[t] = bj[t - 1]
                        t -= 1
                    bd[t] = dv
                    bj[t] = <int32_t>j
            d1 = bd[0] if bd[0] > 0.0 else 0.0
            if paper_width:
                sigma2 = sqrt(d1)
            else:
                sigma2 = d1
            if sigma2 < eps * eps:
                sigma2 = eps * eps
            tot = 0.0
            for t in range(k):
                dv = bd[t] if bd[t] > 0.0 else 0.0
                bd[t] = exp(-(dv - d1) / sigma2)
                tot += bd[t]
            for t in range(k):
                bd[t] /= tot


def run_epoch(EpochProblem problem not None, double[::1] w, double[::1] b, double eta,
              double eta_b, int n_inner, Py_ssize_t n_outer, tables=None):
    """Run ``n_outer`` outer loops of ``n_inner`` steps (see the module docstring).

    ``tables`` selects the algorithm: :class:`AnchorTables` (S3GD), :class:`SnapshotTables`
    (Prox-SVRG), :class:`StrataTables` (stratified SGD) or None (plain mini-batch SGD).
    ``w`` (n_features,) and ``b`` (length 1) are updated in place; the intercept takes steps
    of ``eta_b`` (``eta`` times the square of its feature scale, see the driver).  Sparse rows
    with an l1 part take O(nnz) steps too: the coordinates that no row of a batch touches all
    take the same proximal step ``w_j <- prox(w_j - eta gH_j)`` (``gH`` is constant within an
    outer loop), applied just in time when a row next touches the coordinate, in closed form
    for any number of missed steps (:func:`_catch_up`), and to every coordinate at the end of
    each outer loop.  Returns ``(sum of sw_i loss_i over the drawn samples, number drawn,
    sum of sw_i loss_i at the last snapshot)`` (the last is 0 except for Prox-SVRG).
    """
    cdef const rows_t* X = &problem.ds.rows
    cdef Py_ssize_t n = X.n_samples
    cdef Py_ssize_t d = X.n_features
    cdef const double[::1] y = problem.y
    cdef const double[::1] sw = problem.sw
    cdef MarginLoss loss = problem.loss
    cdef bint fit_intercept = problem.fit_intercept
    cdef double lam1 = problem.lam1, lam2 = problem.lam2
    cdef int batch_size = problem.batch_size
    cdef int32_t[::1] ibuf = problem.ibuf
    cdef double[::1] cbuf = problem.cbuf
    cdef bint lazy = problem.ds.is_sparse
    cdef int mode
    # the tables of the selected algorithm (the others stay unbound and are never read)
    cdef AnchorTables anchors
    cdef const int32_t[::1] anchor_idx
    cdef const int32_t[:, ::1] nbr
    cdef const double[:, ::1] nbr_w
    cdef const double[:, :, ::1] BT
    cdef const double[:, ::1] colsum
    cdef const double[::1] slot_label, offset, Lw
    cdef double[:, ::1] dA
    cdef double Lb = 0.0
    cdef double[::1] dsnap
    cdef const int32_t[::1] strata_order
    cdef const int64_t[::1] strata_ptr
    cdef Py_ssize_t m = 0, n_slots = 0, k = 0, n_strata = 0
    cdef const double* ext = NULL     # an external snapshot gradient (SnapshotTables)
    _check_iterate(w, b, d)
    if not (eta > 0.0 and n_inner >= 0 and n_outer >= 0):
        raise ValueError("run_epoch: need eta > 0, n_inner >= 0 and n_outer >= 0")
    if tables is None:
        mode = _SGD
    elif isinstance(tables, AnchorTables):
        mode = _S3GD
        anchors = tables
        anchor_idx, nbr, nbr_w, BT = anchors.anchor_idx, anchors.nbr, anchors.nbr_w, anchors.BT
        colsum, slot_label, offset = anchors.colsum, anchors.slot_label, anchors.offset
        Lw, Lb, dA = anchors.Lw, anchors.Lb, anchors.dA
        m, n_slots, k = anchors.n_anchors, anchors.n_slots, anchors.n_neighbors
    elif isinstance(tables, SnapshotTables):
        mode = _SVRG
        dsnap = (<SnapshotTables>tables).dsnap
        if (<SnapshotTables>tables).external:
            ext = &(<SnapshotTables>tables).ext_grad[0]
    elif isinstance(tables, StrataTables):
        mode = _SSGD
        strata_order = (<StrataTables>tables).order
        strata_ptr = (<StrataTables>tables).ptr
        n_strata = (<StrataTables>tables).n_strata
    else:
        raise TypeError(f"run_epoch: tables must be AnchorTables, SnapshotTables, "
                        f"StrataTables or None, got {type(tables).__name__}")
    if tables is not None and (tables.n_samples != n or tables.n_features != d):
        raise ValueError("run_epoch: the tables were built for another problem shape")
    cdef double inv_n = 1.0 / n
    cdef double* wp = &w[0]
    cdef double* gp = &problem.gH[0]
    cdef int32_t* pp = &problem.perm[0]
    cdef bint has_h = mode == _S3GD or mode == _SVRG
    cdef int n_batch = <int>n_strata if mode == _SSGD else batch_size
    cdef double coef_uniform = 1.0 / batch_size
    cdef double a_scale = 1.0, beta = 0.0, shrink = 1.0 / (1.0 + eta * lam2)
    cdef double eta_k = eta, eta_bk = eta_b
    cdef bint use_lazy = lazy and lam1 == 0.0
    cdef bint jit = lazy and lam1 > 0.0
    cdef int64_t* lp = &problem.last[0] if jit else NULL
    cdef int64_t kk = 0
    cdef double t1 = eta * lam1, eg
    cdef int q
    cdef double bb = b[0], gHb = 0.0, loss_sum = 0.0, snap_loss = 0.0
    cdef double u_i, approx, dl, csum, coef, a_j
    cdef Py_ssize_t outer, it, t, t2, i, j, s, f, slot, c, size_c, n_seen = 0
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    cdef rng_state rng
    rng_init(&rng, problem.seed, problem.stream, problem.counter)

    with nogil:
        if jit:
            for f in range(d):
                lp[f] = 0
        for outer in range(n_outer):
            # ---- the correction term at the snapshot (w~, b~) = (w, b) ----
            if use_lazy:
                _materialize(wp, gp, d, &a_scale, &beta, has_h)
            if mode == _S3GD:
                for j in range(m):
                    nnz = dataset_row(X, anchor_idx[j], &data, &indices)
                    a_j = row_dot(data, indices, nnz, wp) + bb
                    for s in range(n_slots):
                        dA[s, j] = loss.dloss(a_j, slot_label[s])
                for f in range(d):
                    gp[f] = Lw[f]
                gHb = Lb
                for s in range(n_slots):
                    for j in range(m):
                        dense_axpy(dA[s, j] * inv_n, &BT[s, j, 0], gp, d)
                        gHb += dA[s, j] * inv_n * colsum[s, j]
            elif mode == _SVRG and ext != NULL:
                for f in range(d):
                    gp[f] = ext[f]
                gHb = ext[d]
            elif mode == _SVRG:
                for f in range(d):
                    gp[f] = 0.0
                gHb = 0.0
                snap_loss = 0.0
                for i in range(n):
                    nnz = dataset_row(X, i, &data, &indices)
                    u_i = row_dot(data, indices, nnz, wp) + bb
                    snap_loss += sw[i] * loss.loss(u_i, y[i])
                    dl = loss.dloss(u_i, y[i])
                    dsnap[i] = dl
                    row_axpy(sw[i] * dl * inv_n, data, indices, nnz, gp)
                    gHb += sw[i] * dl * inv_n
            # ---- inner loop ----
            kk = 0
            if mode != _SSGD and n_inner > 0:
                # uniform batches are drawn one step ahead into ibuf[batch_size:] (the same
                # draws in the same order) so that their rows can be prefetched
                _draw_batch(&rng, pp, n, batch_size)
                for t in range(batch_size):
                    ibuf[batch_size + t] = pp[t]
                    _prefetch_row(X, pp[t])
            for it in range(n_inner):
                if mode == _SSGD:
                    for c in range(n_strata):
                        size_c = strata_ptr[c + 1] - strata_ptr[c]
                        ibuf[c] = strata_order[strata_ptr[c] + rng_randint(&rng, size_c)]
                else:
                    for t in range(batch_size):
                        ibuf[t] = ibuf[batch_size + t]
                    if it + 1 < n_inner:
                        _draw_batch(&rng, pp, n, batch_size)
                        for t in range(batch_size):
                            ibuf[batch_size + t] = pp[t]
                            _prefetch_row(X, pp[t])
                # derivatives at w^{k-1} for the whole batch
                csum = 0.0
                for t in range(n_batch):
                    i = ibuf[t]
                    nnz = dataset_row(X, i, &data, &indices)
                    if jit:   # the row's coordinates take the steps they missed
                        for q in range(nnz):
                            f = indices[q]
                            if lp[f] < kk:
                                eg = eta * gp[f] if has_h else 0.0
                                wp[f] = _catch_up(wp[f], <double>(kk - lp[f]), eg, t1, shrink)
                                lp[f] = kk
                    if use_lazy:
                        u_i = a_scale * row_dot(data, indices, nnz, wp) + bb
                        if has_h and beta != 0.0:
                            u_i += beta * row_dot(data, indices, nnz, gp)
                    else:
                        u_i = row_dot(data, indices, nnz, wp) + bb
                    loss_sum += sw[i] * loss.loss(u_i, y[i])
                    dl = loss.dloss(u_i, y[i])
                    if mode == _S3GD:
                        slot = (1 if y[i] > 0 else 0) if n_slots == 2 else 0
                        approx = offset[i]
                        for t2 in range(k):
                            approx = approx + nbr_w[i, t2] * dA[slot, nbr[i, t2]]
                        dl = dl - approx
                    elif mode == _SVRG:
                        dl = dl - dsnap[i]
                    if mode == _SSGD:
                        c = t
                        size_c = strata_ptr[c + 1] - strata_ptr[c]
                        coef = size_c * inv_n
                    else:
                        coef = coef_uniform
                    cbuf[t] = coef * sw[i] * dl
                    csum += cbuf[t]
                n_seen += n_batch
                # the proximal step
                if use_lazy:
                    for t in range(n_batch):
                        i = ibuf[t]
                        nnz = dataset_row(X, i, &data, &indices)
                        row_axpy(-eta_k * cbuf[t] / a_scale, data, indices, nnz, wp)
                    a_scale *= shrink
                    if has_h:
                        beta = shrink * (beta - eta_k)
                    if a_scale < 1e-8:
                        _materialize(wp, gp, d, &a_scale, &beta, has_h)
                else:
                    for t in range(n_batch):
                        i = ibuf[t]
                        nnz = dataset_row(X, i, &data, &indices)
                        row_axpy(-eta_k * cbuf[t], data, indices, nnz, wp)
                    if jit:   # the step of the touched coordinates (each once)
                        for t in range(n_batch):
                            nnz = dataset_row(X, ibuf[t], &data, &indices)
                            for q in range(nnz):
                                f = indices[q]
                                if lp[f] == kk:
                                    eg = eta * gp[f] if has_h else 0.0
                                    wp[f] = enet_prox(wp[f] - eg, t1, shrink)
                                    lp[f] = kk + 1
                    else:
                        if has_h:
                            dense_axpy(-eta_k, gp, wp, d)
                        _prox(wp, d, eta_k, lam1, lam2)
                kk += 1
                if fit_intercept:
                    if has_h:
                        bb -= eta_bk * (csum + gHb)
                    else:
                        bb -= eta_bk * csum
            if jit:   # every coordinate up to date before the next snapshot
                for f in range(d):
                    if lp[f] < kk:
                        eg = eta * gp[f] if has_h else 0.0
                        wp[f] = _catch_up(wp[f], <double>(kk - lp[f]), eg, t1, shrink)
                    lp[f] = 0
        if use_lazy:
            _materialize(wp, gp, d, &a_scale, &beta, has_h)
    b[0] = bb
    problem.counter = rng.counter
    return loss_sum, n_seen, snap_loss




def weighted_anchor_sums(RowDataset ds, const int32_t[:, ::1] nbr, const double[:, ::1] nbr_w,
                         const double[::1] weights, double[:, ::1] out):
    """out[j] += sum_i weights_i gamma_ij x_i, i.e. ``out += M^T diag(weights) X`` (dense).

    O(n k nnz_row): one sparse/dense row axpy per (sample, neighbour) pair, no sparse-sparse
    product.  Python checks the shapes and that every ``nbr`` entry is in ``[0, out.shape[0])``.
    """
    cdef const rows_t* X = &ds.rows
    cdef Py_ssize_t n = X.n_samples, k = nbr.shape[1], i, t
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    cdef double wi
    with nogil:
        for i in range(n):
            wi = weights[i]
            if wi == 0.0:
                continue
            nnz = dataset_row(X, i, &data, &indices)
            for t in range(k):
                row_axpy(wi * nbr_w[i, t], data, indices, nnz, &out[nbr[i, t], 0])
