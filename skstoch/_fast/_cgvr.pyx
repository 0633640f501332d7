"""Kernels of CGVR (Jin et al., paper 004): stochastic conjugate gradient with variance
reduction, and the paper's baselines (full-batch CG, SVRG with a fixed step).

Problem (one binary or single-output head)::

    f(x) = (1/n) sum_i s_i loss(X_i . w + b, y_i) + (alpha/2) ||w||^2 + (alpha_b/2) b^2

The iterate ``x`` has length ``d + 1``: ``x[:d] = w`` and ``x[d] = b`` (``x[d]`` stays 0 when the
model has no intercept, because every gradient coordinate ``d`` is then forced to 0).

The per-head tables (rows, targets, weights, loss, penalties, random stream) are bundled in a
:class:`HeadTables` and the inner-loop settings in a :class:`CGOptions`, both built once per
head.  Every line search works on margins: for a batch S with margins ``z = X_S x`` and
``q = X_S p``, ``phi(a) = sum_S s_i loss(z_i + a q_i) / |S| + reg(x + a p)`` and its derivative
cost O(|S|) per evaluation after one O(nnz(X_S)) pass.  All random draws come from the
counter-based generator of ``_random.pxd``.  The kernels run without bounds checks: the
Python entry points check every array length first.
"""
import numpy as np

from libc.math cimport fabs, sqrt, isfinite
from libc.stdint cimport int32_t, uint64_t

from ._dataset cimport (RowDataset, rows_t, rowvals_t, dataset_row, row_dot, row_axpy,
                        dense_dot, dense_axpy)
from ._loss cimport MarginLoss, sum_along_line
from ._random cimport rng_state, rng_init, rng_randint, rng_uniform

cdef enum:
    # beta rules
    BETA_PRP = 0      # PR+ (paper Option I, experiments)
    BETA_FR = 1       # Fletcher-Reeves (paper Option II, theory)
    BETA_PR = 2       # plain Polak-Ribiere
    BETA_HS = 3       # Hestenes-Stiefel
    BETA_DY = 4       # Dai-Yuan
    BETA_NONE = 5     # steepest descent on the VR gradient (beta = 0)
    # line-search objectives
    LS_BATCH = 0      # f_S, the paper's (11)-(12)
    LS_VR = 1         # f_S + (u - grad f_S(x0)) . x : its gradient is the VR gradient
    LS_FULL = 2       # f, on all n margins

BETA_RULES = {"PR+": BETA_PRP, "FR": BETA_FR, "PR": BETA_PR, "HS": BETA_HS, "DY": BETA_DY,
              "none": BETA_NONE}
LINE_SEARCHES = {"batch": LS_BATCH, "vr": LS_VR, "full": LS_FULL}

# indices of the statistics array filled by cgvr_inner
STAT_RESTARTS = 0         # direction reset to -g because it was not a descent direction
STAT_SKIPPED = 1          # no step taken (still not a descent direction, or no decrease found)
STAT_LS_EVALS = 2         # phi evaluations
STAT_WOLFE_FAIL = 3       # line search ended by its budget (best point returned)
STAT_BETA_RESET = 4       # beta rejected (non finite or denominator ~ 0)
N_STATS = 5



cdef _check_length(str name, Py_ssize_t got, Py_ssize_t expected):
    if got != expected:
        raise ValueError(f"{name} has length {got}, expected {expected}")


# ---------------------------------------------------------------------------------------------
# per-head tables and inner-loop settings


cdef class HeadTables:
    """What the kernels read about one head, built once per head.

    Parameters
    ----------
    ds : RowDataset
        The rows of X.
    y, sample_weight : ndarray of float64 of shape (n_samples,)
        Targets and per-sample weights ``s_i``.
    loss : MarginLoss
    alpha, alpha_b : float
        L2 penalties of w and of the intercept b.
    fit_intercept : bool
        False keeps the gradient coordinate of b at 0.
    seed, stream : int
        The head's stream of the counter-based generator (mini-batches, Option II).
    """

    cdef RowDataset ds
    cdef const double[::1] y
    cdef const double[::1] sw
    cdef object sw_n              # s_i / n, made on first use (line searches on f itself)
    cdef MarginLoss loss
    cdef double alpha, alpha_b
    cdef bint fit_intercept
    cdef uint64_t seed, stream
    # full passes over fixed row blocks (see n_blocks), reduced in block order
    cdef readonly Py_ssize_t n_blocks
    cdef double[:, ::1] parts     # per block: the loss part of the gradient (length d + 1)
    cdef double[:, ::1] sums      # per block: sum s_i loss_i and the intercept gradient
    cdef object executor
    cdef const double* cur_x      # arrays of the pass in progress (read by _block)
    cdef double* cur_dl
    cdef double* cur_z

    def __init__(self, RowDataset ds, const double[::1] y, const double[::1] sample_weight,
                 MarginLoss loss, double alpha, double alpha_b, bint fit_intercept,
                 uint64_t seed=0, uint64_t stream=0):
        cdef Py_ssize_t n = ds.rows.n_samples
        if n < 1:
            raise ValueError("the dataset has no rows")
        _check_length("y", y.shape[0], n)
        _check_length("sample_weight", sample_weight.shape[0], n)
        self.ds, self.y, self.sw, self.loss = ds, y, sample_weight, loss
        self.alpha, self.alpha_b, self.fit_intercept = alpha, alpha_b, fit_intercept
        self.seed, self.stream = seed, stream
        self.n_blocks = n_blocks(n)
        self.parts = np.zeros((self.n_blocks, ds.rows.n_features + 1))
        self.sums = np.zeros((self.n_blocks, 2))
        self.executor = None

    def set_executor(self, executor):
        """Run the blocks of the full passes in ``executor`` (a ``ThreadPoolExecutor``; None:
        in the calling thread).  The blocks and their reduction order do not depend on it,
        so the results are bitwise the same."""
        self.executor = executor

    @property
    def full_weights(self):
        """``s_i / n``, the weights of a line search on f itself."""
        if self.sw_n is None:
            self.sw_n = np.asarray(self.sw) / self.ds.rows.n_samples
        return self.sw_n

    def objective_gradient(self, const double[::1] x, double[::1] grad, double[::1] dl,
                           double[::1] z=None):
        """f(x) in one nogil pass; writes grad f(x) (length d + 1), loss'(X_i x, y_i)
        (length n) and, when ``z`` is given, the margins X_i x (length n)."""
        cdef Py_ssize_t n = self.ds.rows.n_samples, D = self.ds.rows.n_features + 1
        _check_length("x", x.shape[0], D)
        _check_length("grad", grad.shape[0], D)
        _check_length("dl", dl.shape[0], n)
        if z is not None:
            _check_length("z", z.shape[0], n)
        cdef double obj
        cdef Py_ssize_t k
        self.cur_x, self.cur_dl = &x[0], &dl[0]
        self.cur_z = &z[0] if z is not None else NULL
        if self.executor is None or self.n_blocks == 1:
            with nogil:
                for k in range(self.n_blocks):
                    self._block(k)
        else:
            for _ in self.executor.map(self._run_block, range(self.n_blocks)):
                pass
        with nogil:
            obj = reduce_blocks(&self.parts[0, 0], &self.sums[0, 0], self.n_blocks, n,
                                D - 1, &x[0], self.alpha, self.alpha_b, self.fit_intercept,
                                &grad[0])
        return obj

    def _run_block(self, Py_ssize_t k):
        with nogil:
            self._block(k)

    cdef void _block(self, Py_ssize_t k) noexcept nogil:
        cdef Py_ssize_t n = self.ds.rows.n_samples, j
        cdef Py_ssize_t start = k * n // self.n_blocks, end = (k + 1) * n // self.n_blocks
        cdef double* part = &self.parts[k, 0]
        for j in range(self.ds.rows.n_features + 1):
            part[j] = 0.0
        block_pass(&self.ds.rows, start, end, &self.y[0], &self.sw[0], self.loss, self.cur_x,
                   part, self.cur_dl, self.cur_z, &self.sums[k, 0])


cdef struct wolfe_t:
    double c1
    double c2
    double a_init
    int max_iter
    int zoom_iter


cdef class CGOptions:
    """Settings of the CGVR inner loop and of its strong-Wolfe line search, fixed for a fit.

    Parameters
    ----------
    inner_iter : int
        Inner steps m per outer iteration.
    beta : str
        A key of ``BETA_RULES``.
    line_search : str
        A key of ``LINE_SEARCHES``.
    c1, c2 : float
        Strong-Wolfe constants, ``0 < c1 < c2 < 1``.
    step_init : float
        First trial step of every line search.
    ls_max_iter, zoom_max_iter : int
        Budgets of the bracketing and zoom phases.
    option_two : bool
        Option II (w_{k+1} = a random inner iterate) instead of Option I (the last one).
    """

    cdef Py_ssize_t inner_iter
    cdef int beta_rule, ls_mode
    cdef wolfe_t wolfe
    cdef bint option_two

    def __init__(self, Py_ssize_t inner_iter=50, str beta="PR+", str line_search="vr",
                 double c1=1e-4, double c2=0.1, double step_init=1.0, int ls_max_iter=20,
                 int zoom_max_iter=20, bint option_two=False):
        if inner_iter < 1 or ls_max_iter < 1 or zoom_max_iter < 0:
            raise ValueError("inner_iter and ls_max_iter must be >= 1, zoom_max_iter >= 0")
        if beta not in BETA_RULES or line_search not in LINE_SEARCHES:
            raise ValueError(f"unknown beta rule {beta!r} or line search {line_search!r}")
        if not (0 < c1 < c2 < 1 and step_init > 0):
            raise ValueError("the line search needs 0 < c1 < c2 < 1 and step_init > 0")
        self.inner_iter = inner_iter
        self.beta_rule = BETA_RULES[beta]
        self.ls_mode = LINE_SEARCHES[line_search]
        self.wolfe = wolfe_t(c1, c2, step_init, ls_max_iter, zoom_max_iter)
        self.option_two = option_two


# ---------------------------------------------------------------------------------------------
# full pass


cdef inline double reg_dot(const double* a, const double* b, Py_ssize_t d, double alpha,
                           double alpha_b) noexcept nogil:
    """alpha a[:d].b[:d] + alpha_b a[d] b[d]."""
    return alpha * dense_dot(a, b, d) + alpha_b * a[d] * b[d]


# Rows per block of a full pass, and the most blocks: the partition depends on n only
# (never on the thread count), so a pass gives bitwise the same result for any n_jobs.
# Below 2 * BLOCK_ROWS rows there is one block (the sequential pass).
cdef enum:
    BLOCK_ROWS = 8192
    MAX_BLOCKS = 16


cpdef Py_ssize_t n_blocks(Py_ssize_t n):
    """Number of fixed row blocks of a full pass over n rows."""
    cdef Py_ssize_t k = n // BLOCK_ROWS
    return 1 if k < 2 else (MAX_BLOCKS if k > MAX_BLOCKS else k)


cdef inline void block_pass(const rows_t* X, Py_ssize_t start, Py_ssize_t end, const double* y,
                            const double* sw, MarginLoss loss, const double* x, double* part,
                            double* dl, double* z, double* sums) noexcept nogil:
    """Rows start..end-1 of a full pass: part += sum s_i loss'_i X_i / n (part zeroed by the
    caller), sums = (sum s_i loss_i, sum s_i loss'_i / n); dl_i = loss'(z_i, y_i), z_i = X_i x."""
    cdef Py_ssize_t d = X.n_features, i
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    cdef double zi, total = 0.0, gb = 0.0, di, inv_n = 1.0 / X.n_samples
    for i in range(start, end):
        nnz = dataset_row(X, i, &data, &indices)
        zi = row_dot(data, indices, nnz, x) + x[d]
        total += sw[i] * loss.loss(zi, y[i])
        di = loss.dloss(zi, y[i])
        dl[i] = di
        if z != NULL:
            z[i] = zi
        di *= sw[i] * inv_n
        if di != 0.0:
            row_axpy(di, data, indices, nnz, part)
            gb += di
    sums[0] = total
    sums[1] = gb


cdef inline double reduce_blocks(const double* parts, const double* sums, Py_ssize_t n_blk,
                                 Py_ssize_t n, Py_ssize_t d, const double* x, double alpha,
                                 double alpha_b, bint fit_intercept,
                                 double* grad) noexcept nogil:
    """Sum the blocks in block order, add the penalty: return f(x) and write grad f(x)."""
    cdef Py_ssize_t j, k
    cdef double total = 0.0, gb = 0.0
    for j in range(d + 1):
        grad[j] = 0.0
    for k in range(n_blk):
        for j in range(d):
            grad[j] += parts[k * (d + 1) + j]
        total += sums[2 * k]
        gb += sums[2 * k + 1]
    for j in range(d):
        grad[j] += alpha * x[j]
    if fit_intercept:
        grad[d] = gb + alpha_b * x[d]
    else:
        grad[d] = 0.0
    return total * (1.0 / n) + 0.5 * reg_dot(x, x, d, alpha, alpha_b)


# ---------------------------------------------------------------------------------------------
# line search along p on margins


cdef struct phi_t:
    # phi(a) = sum_k s_k loss(z_k + a q_k, y_k) + a r0 + a^2 rpp / 2 + a lin  (+ const)
    const double* z
    const double* q
    const double* y
    const double* s
    Py_ssize_t n
    double r0
    double rpp
    double lin


cdef inline double phi_value(phi_t* P, MarginLoss loss, double a, double* deriv) noexcept nogil:
    cdef double dv
    cdef double v = sum_along_line(loss, P.z, P.q, P.y, P.s, P.n, a, True, &dv, NULL)
    deriv[0] = dv + P.r0 + a * P.rpp + P.lin
    return v + a * (P.r0 + 0.5 * a * P.rpp + P.lin)


cdef double strong_wolfe(phi_t* P, MarginLoss loss, double phi0, double dphi0,
                         const wolfe_t* W, double a_max, int* n_evals,
                         int* failed) noexcept nogil:
    """Strong-Wolfe line search (Nocedal & Wright Alg. 3.5, zoom Alg. 3.6 with the paper's
    midpoint rule).  Expansion doubles the step up to ``a_max``.  If the budget runs out the
    step with the lowest phi seen is returned (0 if none decreased phi)."""
    cdef double c1 = W.c1, c2 = W.c2
    cdef double a_prev = 0.0, f_prev = phi0, d_prev = dphi0
    cdef double a = W.a_init, fa, da
    cdef double lo, hi, f_lo, d_lo, mid, fm, dm
    cdef double best_a = 0.0, best_f = phi0
    cdef int i, j
    failed[0] = 0
    if a > a_max:
        a = a_max
    for i in range(W.max_iter):
        fa = phi_value(P, loss, a, &da)
        n_evals[0] += 1
        if fa < best_f:
            best_f = fa
            best_a = a
        if (not isfinite(fa)) or fa > phi0 + c1 * a * dphi0 or (i > 0 and fa >= f_prev):
            lo = a_prev; f_lo = f_prev; d_lo = d_prev; hi = a
            break
        if fabs(da) <= -c2 * dphi0:
            return a
        if da >= 0:
            lo = a; f_lo = fa; d_lo = da; hi = a_prev
            break
        if a >= a_max:
            return a
        a_prev = a; f_prev = fa; d_prev = da
        a = 2.0 * a
        if a > a_max:
            a = a_max
    else:
        failed[0] = 1
        return best_a
    # zoom between lo (sufficient decrease holds, lowest phi so far) and hi
    for j in range(W.zoom_iter):
        mid = 0.5 * (lo + hi)
        fm = phi_value(P, loss, mid, &dm)
        n_evals[0] += 1
        if fm < best_f:
            best_f = fm
            best_a = mid
        if (not isfinite(fm)) or fm > phi0 + c1 * mid * dphi0 or fm >= f_lo:
            hi = mid
        else:
            if fabs(dm) <= -c2 * dphi0:
                return mid
            if dm * (hi - lo) >= 0:
                hi = lo
            lo = mid; f_lo = fm; d_lo = dm
    failed[0] = 1
    return best_a


def line_search_margins(CGOptions options, MarginLoss loss, const double[::1] z,
                        const double[::1] q, const double[::1] y, const double[::1] s,
                        double r0, double rpp, double lin, double a_max):
    """Strong-Wolfe step along a line given by margins (full-batch CG and the tests).

    ``phi(a) = sum_k s_k loss(z_k + a q_k, y_k) + a r0 + a^2 rpp / 2 + a lin``, searched with
    the constants and budgets of ``options`` and steps up to ``a_max``.  Returns
    ``(step, phi(0), phi'(0), n_evals, failed)``; step is 0 when ``phi'(0) >= 0``.
    """
    cdef Py_ssize_t n = z.shape[0]
    if n < 1:
        raise ValueError("the line needs at least one margin")
    _check_length("q", q.shape[0], n)
    _check_length("y", y.shape[0], n)
    _check_length("s", s.shape[0], n)
    cdef phi_t P = phi_t(&z[0], &q[0], &y[0], &s[0], n, r0, rpp, lin)
    cdef double phi0, dphi0, a = 0.0
    cdef int n_evals = 0, failed = 0
    with nogil:
        phi0 = phi_value(&P, loss, 0.0, &dphi0)
        if dphi0 < 0:
            a = strong_wolfe(&P, loss, phi0, dphi0, &options.wolfe, a_max, &n_evals, &failed)
    return a, phi0, dphi0, n_evals, bool(failed)


# ---------------------------------------------------------------------------------------------
# CGVR inner loop (Algorithm 3, one outer iteration)


cdef inline double beta_from_dots(int rule, double gg_new, double g_new_old, double gg_old,
                                  double p_new, double p_old, int* reset) noexcept nogil:
    """beta_{t+1} from the dot products of g_{t+1}, g_t and p_t (guards: non-finite or ~0
    denominators give 0)."""
    cdef double num, den, beta
    if rule == BETA_NONE:
        return 0.0
    if rule == BETA_FR:
        num = gg_new; den = gg_old
    elif rule == BETA_PR or rule == BETA_PRP:
        num = gg_new - g_new_old; den = gg_old
    elif rule == BETA_HS:
        num = gg_new - g_new_old; den = p_new - p_old
    else:  # DY
        num = gg_new; den = p_new - p_old
    if not (fabs(den) > 1e-300):
        reset[0] += 1
        return 0.0
    beta = num / den
    if not isfinite(beta):
        reset[0] += 1
        return 0.0
    if rule == BETA_PRP and beta < 0:
        return 0.0
    return beta


cdef inline void direction_scalars(const double* x, const double* p, const double* base,
                                   Py_ssize_t d, double* sc) noexcept nogil:
    """sc = (x[:d].p[:d], p[:d].p[:d], base[:d].p[:d]) in one sweep."""
    cdef Py_ssize_t j
    cdef double a0 = 0.0, a1 = 0.0, a2 = 0.0
    for j in range(d):
        a0 += x[j] * p[j]
        a1 += p[j] * p[j]
        a2 += base[j] * p[j]
    sc[0] = a0; sc[1] = a1; sc[2] = a2


cdef inline void restart_direction(const double* x, double* p, const double* g,
                                   const double* base, Py_ssize_t d, double* sc) noexcept nogil:
    """p = -g, and the scalars of the new direction."""
    cdef Py_ssize_t j
    for j in range(d + 1):
        p[j] = -g[j]
    direction_scalars(x, p, base, d, sc)


cdef inline void batch_margins(const rows_t* X, const Py_ssize_t* idx, Py_ssize_t b,
                               const double* x, const double* p, double* z, double* q,
                               bint want_z) noexcept nogil:
    cdef Py_ssize_t k, d = X.n_features
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    for k in range(b):
        nnz = dataset_row(X, idx[k], &data, &indices)
        if want_z:
            z[k] = row_dot(data, indices, nnz, x) + x[d]
        q[k] = row_dot(data, indices, nnz, p) + p[d]


cdef inline void all_margins(const rows_t* X, const double* p, double* q) noexcept nogil:
    cdef Py_ssize_t i, d = X.n_features
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    for i in range(X.n_samples):
        nnz = dataset_row(X, i, &data, &indices)
        q[i] = row_dot(data, indices, nnz, p) + p[d]


cdef struct line_t:
    # what opening a line search along p reads (pointers fixed for one outer iteration)
    const rows_t* X
    Py_ssize_t d
    Py_ssize_t b
    int ls_mode
    double alpha
    double alpha_b
    const Py_ssize_t* idx
    const double* x
    const double* p
    const double* base
    const double* sS
    const double* d0S
    double* zS
    double* qS
    double* q_full


cdef inline double open_line(const line_t* L, phi_t* P, MarginLoss loss, const double* sc,
                             bint want_z, double* dphi0) noexcept nogil:
    """Margins along p (of the batch; of every row for a line search on f), the scalars of
    phi from ``sc`` = (x.p, p.p, base.p); returns phi(0) and writes phi'(0)."""
    cdef Py_ssize_t k, d = L.d
    cdef double lin_vr
    batch_margins(L.X, L.idx, L.b, L.x, L.p, L.zS, L.qS, want_z)
    if L.ls_mode == LS_FULL:
        all_margins(L.X, L.p, L.q_full)
    P.r0 = L.alpha * sc[0] + L.alpha_b * L.x[d] * L.p[d]
    P.rpp = L.alpha * sc[1] + L.alpha_b * L.p[d] * L.p[d]
    P.lin = 0.0
    if L.ls_mode == LS_VR:
        # (u - reg x0) . p - sum_S s_k loss'(z0_k) q_k
        lin_vr = sc[2] + L.base[d] * L.p[d]
        for k in range(L.b):
            lin_vr -= L.sS[k] * L.d0S[k] * L.qS[k]
        P.lin = lin_vr
    return phi_value(P, loss, 0.0, dphi0)


def cgvr_inner(HeadTables tables, CGOptions options, double[::1] x, const double[::1] x0,
               const double[::1] u, const double[::1] dl0, double[::1] g, double[::1] p,
               Py_ssize_t batch_size, double step_max, uint64_t counter, long[::1] stats,
               double[::1] steps, double[::1] z_full=None):
    """Run the m inner steps of one CGVR outer iteration in place.

    A ``batch_size`` >= n means the deterministic full batch (each row once, no draws): the
    inner loop is then exact nonlinear CG on f.  On entry ``x`` = ``x0`` = w_k, ``u`` =
    grad f(w_k), ``dl0`` = loss'(X w_k), ``g`` = the restart gradient (h_k or u_k) and ``p`` =
    -g.  On exit ``x`` = w_{k+1} (Option I: x_m; Option II: x_t for a random t in 0..m-1),
    ``g`` = g_m (= h_{k+1}).  Steps are capped at ``step_max``.  The line search on f
    (``options`` line search "full") needs ``z_full`` = X w_k, updated in place.  ``stats``
    accumulates the counters listed in N_STATS, ``steps[t]`` receives the accepted step of
    inner step t.  Returns the RNG counter after the last draw.
    """
    cdef const rows_t* X = &tables.ds.rows
    cdef Py_ssize_t n = X.n_samples, d = X.n_features, D = d + 1
    cdef Py_ssize_t inner_iter = options.inner_iter
    for name, arr in (("x", x), ("x0", x0), ("u", u), ("g", g), ("p", p)):
        _check_length(name, arr.shape[0], D)
    _check_length("dl0", dl0.shape[0], n)
    if batch_size < 1 or stats.shape[0] < N_STATS or steps.shape[0] < inner_iter:
        raise ValueError("batch_size must be >= 1, stats hold N_STATS and steps inner_iter "
                         "entries")
    if options.ls_mode == LS_FULL and (z_full is None or z_full.shape[0] != n):
        raise ValueError("the line search on f needs z_full = X w_k (length n_samples)")
    cdef MarginLoss loss = tables.loss
    cdef const double* y = &tables.y[0]
    cdef const double* sw = &tables.sw[0]
    cdef double alpha = tables.alpha, alpha_b = tables.alpha_b
    cdef bint fit_intercept = tables.fit_intercept
    cdef int beta_rule = options.beta_rule, ls_mode = options.ls_mode
    cdef const wolfe_t* wolfe = &options.wolfe
    cdef bint full_batch = batch_size >= n
    cdef Py_ssize_t b = n if full_batch else batch_size, t, k, j, i
    cdef double inv_b = 1.0 / b
    cdef rng_state rng
    # batch workspaces
    cdef Py_ssize_t[::1] idx = np.empty(b, dtype=np.intp)
    cdef double[::1] zS = np.empty(b), qS = np.empty(b), yS = np.empty(b), sS = np.empty(b)
    cdef double[::1] d0S = np.empty(b)
    cdef double[::1] g_new = np.empty(D), base = np.empty(D), x_sel = np.empty(D)
    cdef double[::1] acc = np.zeros(D)
    cdef double[::1] q_full = None     # margins X p (line search on f)
    cdef const double[::1] sw_n = None
    cdef double sc[3]
    cdef double gb, gn, xj, pj, gg_new, g_new_old, gg_old, p_new, p_old
    cdef phi_t P
    cdef line_t L = line_t(X, d, b, ls_mode, alpha, alpha_b, &idx[0], &x[0], &p[0], &base[0],
                           &sS[0], &d0S[0], &zS[0], &qS[0], NULL)
    cdef double phi0, dphi0, a, beta, gp, coef
    cdef int n_evals = 0, failed = 0, beta_resets = 0
    cdef long restarts = 0, skipped = 0, wolfe_fail = 0
    cdef Py_ssize_t tau = -1
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz

    if ls_mode == LS_FULL:
        q_full = np.empty(n)
        L.q_full = &q_full[0]
        sw_n = tables.full_weights
        P = phi_t(&z_full[0], &q_full[0], y, &sw_n[0], n, 0.0, 0.0, 0.0)
    else:
        P = phi_t(&zS[0], &qS[0], &yS[0], &sS[0], b, 0.0, 0.0, 0.0)
    rng_init(&rng, tables.seed, tables.stream, counter)
    with nogil:
        if options.option_two:
            tau = rng_randint(&rng, inner_iter)
        # base = u - reg(x0): the VR gradient at x on batch S is
        # base + reg(x) + sum_S s_k (loss'(z_k) - loss'(z0_k)) X_k / b
        for j in range(d):
            base[j] = u[j] - alpha * x0[j]
        base[d] = u[d] - alpha_b * x0[d] if fit_intercept else 0.0
        # dense scalars x.p, p.p, base.p of the current direction (then kept up to date by
        # the sweep that forms the next direction)
        direction_scalars(&x[0], &p[0], &base[0], d, sc)

        for t in range(inner_iter):
            if t == tau:
                for j in range(D):
                    x_sel[j] = x[j]
            if not full_batch:
                for k in range(b):
                    i = rng_randint(&rng, n)
                    idx[k] = i
                    yS[k] = y[i]
                    sS[k] = sw[i] * inv_b
                    d0S[k] = dl0[i]
            elif t == 0:
                # deterministic full batch: the inner loop is exact nonlinear CG on f
                for k in range(b):
                    idx[k] = k
                    yS[k] = y[k]
                    sS[k] = sw[k] * inv_b
                    d0S[k] = dl0[k]
            # full batch: zS = X x is carried over from the previous step (zS += a qS)
            phi0 = open_line(&L, &P, loss, sc, not full_batch or t == 0, &dphi0)
            n_evals += 1
            if not (dphi0 < 0):
                # not a descent direction of the line-search objective: restart with -g
                restarts += 1
                restart_direction(&x[0], &p[0], &g[0], &base[0], d, sc)
                phi0 = open_line(&L, &P, loss, sc, False, &dphi0)
                n_evals += 1
            a = 0.0
            if dphi0 < 0:
                a = strong_wolfe(&P, loss, phi0, dphi0, wolfe, step_max, &n_evals, &failed)
                wolfe_fail += failed
            if a == 0.0:
                skipped += 1
            steps[t] = a
            if a != 0.0:
                for k in range(b):
                    zS[k] += a * qS[k]
                if ls_mode == LS_FULL:
                    for i in range(n):
                        z_full[i] += a * q_full[i]
            # g_{t+1}: VR gradient at x_{t+1} on the same batch (Eq. 3).  The batch part
            # sum_S s_k (loss'(z_k) - loss'(z0_k)) X_k is scattered into acc (all zeros on
            # entry) in O(nnz(X_S)); one fused sweep then moves x, forms g_{t+1} and the dot
            # products of the beta rules, a second one forms p_{t+1} and the scalars of the
            # next line search.
            gb = 0.0
            for k in range(b):
                coef = sS[k] * (loss.dloss(zS[k], yS[k]) - d0S[k])
                if coef != 0.0:
                    nnz = dataset_row(X, idx[k], &data, &indices)
                    row_axpy(coef, data, indices, nnz, &acc[0])
                    gb += coef
            gg_new = 0.0; g_new_old = 0.0; gg_old = 0.0; p_new = 0.0; p_old = 0.0
            for j in range(d):
                xj = x[j] + a * p[j]
                x[j] = xj
                gn = base[j] + alpha * xj + acc[j]
                acc[j] = 0.0
                g_new[j] = gn
                gg_new += gn * gn
                g_new_old += gn * g[j]
                gg_old += g[j] * g[j]
                p_new += p[j] * gn
                p_old += p[j] * g[j]
            x[d] += a * p[d]
            if fit_intercept:
                gn = base[d] + alpha_b * x[d] + gb
            else:
                gn = 0.0
            g_new[d] = gn
            gg_new += gn * gn
            g_new_old += gn * g[d]
            gg_old += g[d] * g[d]
            p_new += p[d] * gn
            p_old += p[d] * g[d]
            beta = beta_from_dots(beta_rule, gg_new, g_new_old, gg_old, p_new, p_old,
                                  &beta_resets)
            gp = 0.0; sc[0] = 0.0; sc[1] = 0.0; sc[2] = 0.0
            for j in range(d):
                pj = -g_new[j] + beta * p[j]
                p[j] = pj
                g[j] = g_new[j]
                gp += pj * g_new[j]
                sc[0] += x[j] * pj
                sc[1] += pj * pj
                sc[2] += base[j] * pj
            p[d] = -g_new[d] + beta * p[d]
            g[d] = g_new[d]
            gp += p[d] * g_new[d]
            if not (gp < 0):
                # descent guard on the VR gradient
                restarts += 1
                restart_direction(&x[0], &p[0], &g[0], &base[0], d, sc)
        if options.option_two:
            for j in range(D):
                x[j] = x_sel[j]
    stats[STAT_RESTARTS] += restarts
    stats[STAT_SKIPPED] += skipped
    stats[STAT_LS_EVALS] += n_evals
    stats[STAT_WOLFE_FAIL] += wolfe_fail
    stats[STAT_BETA_RESET] += beta_resets
    return rng.counter


# ---------------------------------------------------------------------------------------------
# baseline: (mini-batch) SVRG with a fixed step (paper Alg. 1; batch sqrt(n) = the reference
# code's "SLBFGS", whose curvature update never runs)


def svrg_inner(HeadTables tables, double[::1] x, const double[::1] x0, const double[::1] u,
               const double[::1] dl0, Py_ssize_t inner_iter, Py_ssize_t batch_size,
               double step, uint64_t counter):
    """m steps x <- x - step * g_VR(x) in place (Option I).  Returns the RNG counter."""
    cdef const rows_t* X = &tables.ds.rows
    cdef Py_ssize_t n = X.n_samples, d = X.n_features, D = d + 1
    for name, arr in (("x", x), ("x0", x0), ("u", u)):
        _check_length(name, arr.shape[0], D)
    _check_length("dl0", dl0.shape[0], n)
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    cdef MarginLoss loss = tables.loss
    cdef const double* y = &tables.y[0]
    cdef const double* sw = &tables.sw[0]
    cdef double alpha = tables.alpha, alpha_b = tables.alpha_b
    cdef bint fit_intercept = tables.fit_intercept
    cdef Py_ssize_t b = batch_size, t, k, j, i
    cdef rng_state rng
    cdef double inv_b = 1.0 / b, zk, coef
    cdef double[::1] gv = np.empty(D), base = np.empty(D)
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    rng_init(&rng, tables.seed, tables.stream, counter)
    with nogil:
        for j in range(d):
            base[j] = u[j] - alpha * x0[j]
        base[d] = u[d] - alpha_b * x0[d] if fit_intercept else 0.0
        for t in range(inner_iter):
            for j in range(d):
                gv[j] = base[j] + alpha * x[j]
            gv[d] = base[d] + alpha_b * x[d] if fit_intercept else 0.0
            for k in range(b):
                i = rng_randint(&rng, n)
                nnz = dataset_row(X, i, &data, &indices)
                zk = row_dot(data, indices, nnz, &x[0]) + x[d]
                coef = sw[i] * inv_b * (loss.dloss(zk, y[i]) - dl0[i])
                if coef != 0.0:
                    row_axpy(coef, data, indices, nnz, &gv[0])
                    if fit_intercept:
                        gv[d] += coef
            dense_axpy(-step, &gv[0], &x[0], D)
    return rng.counter


def uniform_vector(uint64_t seed, uint64_t stream, Py_ssize_t size):
    """``size`` uniform draws in [0, 1) from stream (seed, stream) (the paper's w_0 ~ U[0,1]^d)."""
    cdef rng_state rng
    cdef double[::1] out = np.empty(size)
    cdef Py_ssize_t j
    rng_init(&rng, seed, stream, 0)
    for j in range(size):
        out[j] = rng_uniform(&rng)
    return np.asarray(out)
