"""The S3GD driver (paper 002): the only Python that calls the S3GD kernels.

:func:`solve` runs one binary or single-output problem of an S3GD fit; :func:`prepare`
computes once per fit what its problems share (``problem.shared``).  A fit is

1. optionally a steepest-descent start (``init_step``, :func:`_line_search_phase`);
2. ``warmup_epochs`` passes of per-sample SGD (``solver='hybrid'`` from scratch,
   :func:`_warmup_epoch`);
3. the first phase: S3GD epochs with the anchor correction (``anchor_epochs`` of
   ``'hybrid'``, every epoch of ``'s3gd'``) or the baseline (``'sgd'``, ``'ssgd'``);
4. Prox-SVRG epochs (the rest of ``'hybrid'``; every epoch of ``'svrg'``);

each epoch ends with one monitor record and the plateau stop (:func:`_end_of_epoch`).
"""
from dataclasses import dataclass

import numpy as np

from .._fast._loss import LogLoss, SmoothHinge, SquaredError, SquaredHinge
from .._fast._s3gd import EpochProblem, SnapshotTables, run_epoch, sgd_pass
from ..utils import single_thread_blas
from ..utils._dataset import dataset_matrix
from ._monitor import check_finite_iterate
from ._result import SolverResult
from ._s3gd_setup import (anchor_tables, data_objective, line_search_start, prepare,
                          smooth_gradient, strata_tables)
from ._step_size import (expected_batch_smoothness, gram_spectrum, intercept_gram_bound,
                         strongly_convex_sgd_schedule)
from ._stationarity import column_moments, gradient_ratio, warn_if_far
from ._stopping import Plateau, check_divergence

__all__ = ["S3GDParams", "prepare", "solve"]

# upper bound of the second derivative of each loss (smoothness constant per unit ||x||^2)
_CURVATURE = {"log_loss": 0.25, "squared_hinge": 2.0, "squared_error": 1.0}
# eta0='auto' is 1/(_STEP_FACTOR L_b): Theorem 3.1 allows S3GD steps below 1/(8L), Prox-SVRG's
# analysis (Xiao & Zhang 2014) steps below 1/(4L)
_STEP_FACTOR = {"s3gd": 8.0, "sgd": 8.0, "ssgd": 8.0, "svrg": 4.0}
MAX_INNER = 2**31 - 1   # the kernels count an outer loop's inner steps in a C int
_MIN_INNER = 20        # the paper's k_in: n_inner='auto' never goes below it
_ADAPTIVE_MIN = 1e-3   # 'adaptive' stops dividing the step below eta0 * this
# warm-up decay: mu_data = _WARMUP_CURVATURE * (mean eigenvalue of the curvature bound) when
# n >= _WARMUP_LONG_PASS * d (see _Run.warmup_schedule; both measured, user guide)
_WARMUP_CURVATURE = 0.5
_WARMUP_LONG_PASS = 100
_WARMUP_CHUNKS = 5     # the first warm-up pass is recorded after 1/16, 1/8, 1/4, 1/2, 1 of it
_START_SUBSAMPLE = 2_000  # rows of init_step='auto''s conditioning estimate
_START_CONDITION = 1.0    # 'auto' starts by a line search when c lambda_max <= this * lam2
_CRITERION = "relative objective improvement of the last epoch"
_VARIANCE_REDUCED = ("hybrid", "svrg")   # the solvers whose last epochs are Prox-SVRG


@dataclass(frozen=True)
class S3GDParams:
    """The resolved parameters of an S3GD fit (their meaning: ``S3GDClassifier``).

    ``lam1`` and ``lam2`` are the penalty ``lam1 ||w||_1 + lam2 / 2 ||w||^2`` resolved from
    ``penalty``, ``alpha`` and ``l1_ratio``.
    """

    loss: str
    lam1: float
    lam2: float
    fit_intercept: bool
    solver: str
    max_iter: int
    tol: float
    smoothing: float = 1.0
    anchor_epochs: int = 0
    warmup_epochs: int = 1
    init_step: object = "auto"
    eta0: object = "auto"
    learning_rate: str = "constant"
    batch_size: int = 10
    n_inner: object = "auto"
    n_iter_no_change: int = 5
    track_objective: bool = False
    n_anchors: int = 100
    n_neighbors: int = 5
    kernel_width: str = "nearest"
    kernel_eps: float = 1e-4
    anchor_method: str = "auto"
    kmeans_max_iter: int = 10

    @property
    def uses_anchor_graph(self):
        return self.solver == "s3gd" or (self.solver == "hybrid" and self.anchor_epochs > 0
                                         and self.max_iter > 0)

    @property
    def curvature(self):
        """Upper bound of the loss's second derivative."""
        return 1.0 / self.smoothing if self.loss == "smooth_hinge" else _CURVATURE[self.loss]

    def loss_object(self):
        if self.loss == "log_loss":
            return LogLoss()
        if self.loss == "squared_hinge":
            return SquaredHinge(1.0)
        if self.loss == "smooth_hinge":
            return SmoothHinge(self.smoothing)
        return SquaredError()


class _Run:
    """One problem while :func:`solve` runs: data, kernel objects, the iterate ``(w, b)``
    and the steps (resolved on first use: they need a spectrum estimate, a pass over a row
    subsample, which a fit that ends in the warm-up never pays)."""

    def __init__(self, problem, params, monitor):
        self.params, self.monitor, self.shared = params, monitor, problem.shared
        self.group = self.shared.weight_group[problem.stream]
        self.ds = problem.dataset
        self.n, self.d = self.ds.n_samples, self.ds.n_features
        self.y = np.ascontiguousarray(problem.y, dtype=np.float64)
        self.sw = np.ascontiguousarray(problem.sample_weight, dtype=np.float64)
        self.loss = params.loss_object()
        self.batch = min(params.batch_size, self.n)
        self.kernel = EpochProblem(self.ds, self.y, self.sw, self.loss, params.fit_intercept,
                                   params.lam1, params.lam2, self.batch, problem.seed,
                                   problem.stream)
        self.w = np.array(problem.coef_init, dtype=np.float64, copy=True)
        self.b = np.array([problem.intercept_init if params.fit_intercept else 0.0])
        self._steps = None

    def penalty(self):
        w, p = self.w, self.params
        return p.lam1 * np.abs(w).sum() + 0.5 * p.lam2 * w.dot(w)

    def objective(self, penalty):
        """The exact objective at ``(w, b)`` (one pass), given the penalty there."""
        return data_objective(self.ds, self.w, self.b[0], self.y, self.sw, self.loss) + penalty

    def check_finite(self, where):
        check_finite_iterate(np.append(self.w, self.b), self.monitor.solver_name, where)

    @property
    def steps_resolved(self):
        return self._steps is not None

    def steps(self):
        """``(eta of the first phase, eta of Prox-SVRG, s2)``: a float ``eta0`` is used as
        is (``s2 = 1``, the paper's constant feature); ``'auto'`` is ``1/(8 L_b)`` for the
        S3GD / SGD phases and ``1/(4 L_b)`` for Prox-SVRG (the two theory bounds), with the
        intercept feature scaled to ``sqrt(s2)`` (see :meth:`batch_smoothness`)."""
        if self._steps is None:
            p = self.params
            if p.eta0 != "auto":
                self._steps = (float(p.eta0), float(p.eta0), 1.0)
            else:
                L_b, s2 = self.batch_smoothness()
                first = "svrg" if p.solver == "svrg" else ("s3gd" if p.solver == "hybrid"
                                                           else p.solver)
                self._steps = (1.0 / (_STEP_FACTOR[first] * L_b),
                               1.0 / (_STEP_FACTOR["svrg"] * L_b), s2)
        return self._steps

    def batch_smoothness(self):
        """``(L_b, s2)``: the expected smoothness of mini-batches (b-nice sampling) plus
        ``lam2``, with ``L = c lambda_max([X, s 1]^T S [X, s 1] / n)`` the smoothness of the
        average loss (estimated on a row subsample, capped by ``L_max``) and
        ``L_max = c max_i s_i (||x_i||^2 + s^2)`` the per-sample bound; ``c`` is the loss
        curvature bound.  The intercept feature is scaled to ``s = sqrt(lambda_max(X^T S X
        / n))`` (an exact reparametrisation ``b = s b'``): its curvature then matches the
        data's, so it neither dominates ``L`` on normalised data nor crawls with a step
        sized for large rows (unscaled data, extreme class weights)."""
        p, sq = self.params, self.shared.row_sqnorm
        lam, mean_norm, mean_w = self.shared.cached(
            ("spectrum", self.group), lambda: gram_spectrum(self.matrix(), self.sw,
                                                            self.shared.seed))
        if p.fit_intercept:
            s2 = lam if lam > 0 else 1.0
            lam_aug = intercept_gram_bound(lam, mean_norm, mean_w, s2)
        else:
            s2, lam_aug = 1.0, lam
        L_max = p.curvature * float(np.max(self.sw * (sq + (s2 if p.fit_intercept else 0.0))))
        L = min(p.curvature * lam_aug, L_max)   # the subsample estimate never exceeds L_max
        L_b = expected_batch_smoothness(L, L_max, self.n, self.batch) + p.lam2
        return max(L_b, 1e-12), s2

    def warmup_schedule(self):
        """``(eta0, mu)`` of the warm-up pass, ``eta_t = 1 / (1 / eta0 + mu t)``: the safe
        per-sample step ``1 / (2 L_max)``, ``L_max = c max_i s_i (||x_i||^2 +
        fit_intercept)``, and ``mu = lam2 + mu_data``; ``mu_data = c mean_i s_i ||x_i||^2 /
        (2 d)`` is half the mean eigenvalue of the curvature bound ``c X^T S X / n``, used
        only when ``n >= 100 d`` (measured: user guide, "The SGD warm-up")."""
        p, sq = self.params, self.shared.row_sqnorm
        c = p.curvature
        L_max = c * float(np.max(self.sw * (sq + p.fit_intercept)))
        mu = p.lam2
        if self.n >= _WARMUP_LONG_PASS * self.d:
            mu += _WARMUP_CURVATURE * c * float(np.mean(self.sw * sq)) / max(self.d, 1)
        return strongly_convex_sgd_schedule(L_max, mu, self.n)

    def start_is_well_conditioned(self):
        """``init_step='auto'``: take the line-search start when ``c lambda_max <= lam2``,
        i.e. the Hessian of ``F`` at zero (exact for the log loss), ``c X^T S X / n + lam2
        I``, has condition number at most 2 (the intercept direction is not counted).

        ``lambda_max`` is estimated on 2,000 rows drawn with replacement (biased upwards by
        about ``max_i ||x_i||^2 / 2000`` on nearly orthogonal rows) with a 5% stop of the
        power iteration (it can underestimate by ~30% on a flat spectrum); ~3 ms.  Measured
        (user guide, "The line-search start"): ``c lambda_max / lam2`` is 0.14 on the sparse
        benchmark at alpha 1e-3 (the start alone reaches a gap of 5e-6) and 14-1,500 on the
        three other benchmark cells, so the threshold 1 has a margin of 7x or more each way.
        """
        lam2 = self.params.lam2
        if lam2 <= 0.0:
            return False

        def estimate():
            X, seed = self.matrix(), self.shared.seed
            rows = slice(None)
            if self.n > _START_SUBSAMPLE:   # with replacement: no O(n) permutation
                rng = np.random.RandomState(seed % (2**32))
                rows = np.sort(rng.randint(0, self.n, _START_SUBSAMPLE))
            return gram_spectrum(X[rows], self.sw[rows], seed, rtol=0.05)[0]
        lam = self.shared.cached(("start_spectrum", self.group), estimate)
        return self.params.curvature * lam <= _START_CONDITION * lam2

    def matrix(self):
        return dataset_matrix(self.ds)

    def gradient_ratio(self):
        """:func:`._stationarity.gradient_ratio` at ``(w, b)`` (three passes: the gradient
        at ``(w, b)``, two; at zero, one)."""
        p = self.params
        moments = self.shared.cached(("column_moments",),
                                     lambda: column_moments(self.matrix()))

        def gradient(w, b):
            return smooth_gradient(self.ds, self.y, self.sw, self.loss, w, b, p.lam2,
                                   p.fit_intercept)[2:]
        return gradient_ratio(gradient(self.w, self.b[0]), gradient(np.zeros(self.d), 0.0),
                              self.w, p.lam1, moments, p.fit_intercept)


@dataclass
class _Phase:
    """Epochs of one algorithm: its kernel tables (None: plain SGD), inner steps, outer
    loops per epoch, whether it takes the Prox-SVRG step of :meth:`_Run.steps` (else the
    first phase's) and its history label."""

    tables: object
    n_inner: int
    n_outer: int
    svrg_step: bool
    label: str


def _ceil_div(a, b):
    return -(-a // b)


def anchor_inner_steps(n, d, nnz, batch, n_slots, m, k, lazy):
    """``n_inner='auto'`` of the anchor phase: an outer loop's correction (m anchor dots and
    ``n_slots m`` dense axpys of length d) costs about as much as the inner steps, and never
    fewer than the paper's 20 steps (dense data keeps 20; sparse high-dimensional data,
    where the O(m d) correction dwarfs an O(p nnz) step, gets long inner loops).  ``nnz`` is
    the mean number of stored entries per row."""
    outer = m * (nnz + n_slots * d) + 2 * d
    inner = batch * (2 * nnz + k) + (0 if lazy else 3 * d)
    return int(max(_MIN_INNER, np.ceil(outer / max(inner, 1))))


def _phases(run, n_first):
    """The first phase (built only when it runs: ``n_first`` epochs) and Prox-SVRG."""
    p, n, batch = run.params, run.n, run.batch
    steps_svrg = _ceil_div(n, batch)
    first = None
    if p.solver in ("hybrid", "s3gd") and n_first > 0:
        tables = anchor_tables(run.kernel, run.ds, run.y, run.sw, run.loss, p.loss,
                               run.shared, run.group)
        ds = run.ds
        nnz = ds.n_stored / max(n, 1) if ds.is_sparse else run.d
        inner = p.n_inner if p.n_inner != "auto" else anchor_inner_steps(
            n, run.d, nnz, batch, tables.n_slots, tables.n_anchors, tables.n_neighbors,
            ds.is_sparse)
        first = _Phase(tables, min(inner, steps_svrg), max(1, _ceil_div(steps_svrg, inner)),
                       False, p.solver)
    elif p.solver in ("sgd", "ssgd"):
        tables = strata_tables(run.kernel, run.shared) if p.solver == "ssgd" else None
        steps = steps_svrg if tables is None else _ceil_div(n, tables.n_strata)
        inner = _MIN_INNER if p.n_inner == "auto" else p.n_inner
        first = _Phase(tables, min(inner, steps), max(1, _ceil_div(steps, inner)), False,
                       p.solver)
    svrg = None
    if p.solver in ("hybrid", "svrg"):
        # Prox-SVRG: 'hybrid' takes one snapshot (full pass) per epoch
        inner = p.n_inner if p.solver == "svrg" and p.n_inner != "auto" else steps_svrg
        svrg = _Phase(SnapshotTables(run.kernel), min(inner, steps_svrg),
                      max(1, _ceil_div(steps_svrg, inner)), True, "svrg")
    return first, svrg


def _warmup_chunk_ends(n):
    """Ends of the warm-up pass's chunks: 1/16, 1/8, 1/4, 1/2 and all of the n samples
    (empty chunks dropped).  SGD with a 1/(mu t) step gains about a constant factor per
    doubling of t, so doubling chunks record its progress at evenly spaced gains."""
    ends = sorted({n >> k for k in range(_WARMUP_CHUNKS - 1, -1, -1)} - {0})
    return ends or [n]


def _warmup_epoch(run, epoch):
    """One warm-up pass of per-sample SGD (each sample once, in a fresh random order, as
    ``SGDClassifier``); the first pass in doubling chunks with a record after each chunk but
    the last.  Returns ``(eta0, loss sum, samples)`` of the last chunk, or None when the
    callback stopped the fit inside the pass."""
    n = run.n
    eta, decay = run.warmup_schedule()
    start = 0
    for end in (_warmup_chunk_ends(n) if epoch == 0 else [n]):
        loss_sum = sgd_pass(run.kernel, run.w, run.b, eta, decay, float(epoch * n), start, end)
        n_seen, start = end - start, end
        if end == n:
            break
        # intermediate record: the progressive loss of the chunk (free)
        run.check_finite(f"epoch {epoch} (warm-up chunk)")
        objective, kind = _recorded_objective(run, loss_sum, n_seen)
        if run.monitor.record(x=run.w.copy(), iteration=epoch + 1, pass_fraction=end / n,
                              step_size=eta, solver="sgd_warmup", objective=objective,
                              objective_kind=kind):
            return None
    return eta, loss_sum, n_seen


def _line_search_phase(run, n_warm):
    """The steepest-descent start (not in the paper; user guide, "The line-search start"):
    with ``init_step='line_search'``, or ``'auto'`` on a fit from scratch whose Hessian at the
    start is well conditioned.  Only ``'hybrid'`` with a smooth penalty.  Returns ``(taken,
    stop)``: whether the start was taken (it replaces the SGD warm-up, whose first steps,
    sized for a start at zero, threw a good start back) and whether the callback stopped."""
    p = run.params
    if not (p.solver == "hybrid" and p.lam1 == 0.0 and p.max_iter > 0):
        return False, False
    if not (p.init_step == "line_search" or (
            p.init_step == "auto" and n_warm > 0 and run.start_is_well_conditioned())):
        return False, False
    start = line_search_start(run.ds, run.y, run.sw, run.loss, run.w, run.b, p.lam2,
                              p.fit_intercept)
    if start is None:
        return False, False
    t_star, f_new = start
    run.check_finite("line-search start")
    stop = run.monitor.record(x=run.w.copy(), iteration=0, pass_fraction=0.0, step_size=t_star,
                              solver="line_search", objective=f_new, objective_kind="exact")
    return True, stop


def _phase_epoch(run, phase, scale):
    """One epoch of the first phase or of Prox-SVRG (``phase.n_outer`` outer loops).
    Returns ``(eta, loss sum, samples drawn, exact objective at the snapshot or None)``."""
    step_first, step_svrg, s2 = run.steps()
    eta = (step_svrg if phase.svrg_step else step_first) * scale
    snap_penalty = run.penalty()
    loss_sum, n_seen, snap_loss = run_epoch(run.kernel, run.w, run.b, eta, eta * s2,
                                            phase.n_inner, phase.n_outer, phase.tables)
    # one snapshot per epoch: its full pass evaluated F exactly at the previous iterate
    snapshot = (snap_loss / run.n + snap_penalty
                if isinstance(phase.tables, SnapshotTables) and phase.n_outer == 1 else None)
    return eta, loss_sum, n_seen, snapshot


def _recorded_objective(run, loss_sum, n_seen, snapshot=None):
    """``(objective, kind)`` at the current iterate, as the history records it and the stop
    tests it: the exact objective with ``track_objective`` (``'exact'``, one pass), else the
    exact objective at the snapshot, the previous iterate (``'snapshot'``: Prox-SVRG epochs,
    free), else the average of the sample losses ``loss_sum / n_seen`` taken along the way
    plus the penalty now (``'estimate'``)."""
    penalty = run.penalty()
    if run.params.track_objective:
        return run.objective(penalty), "exact"
    if snapshot is not None:
        return snapshot, "snapshot"
    return loss_sum / max(n_seen, 1) + penalty, "estimate"


def _end_of_epoch(run, epoch, eta, label, loss_sum, n_seen, snapshot):
    """Record the epoch.  Returns ``(objective, callback stop)`` (the objective: see
    :func:`_recorded_objective`)."""
    run.check_finite(f"epoch {epoch}")
    objective, kind = _recorded_objective(run, loss_sum, n_seen, snapshot)
    if not np.isfinite(objective):
        check_finite_iterate(np.array([objective]), run.monitor.solver_name,
                             f"epoch {epoch} (objective)")
    return objective, run.monitor.record(x=run.w.copy(), iteration=epoch + 1,
                                         pass_fraction=1.0, step_size=eta, solver=label,
                                         objective=objective, objective_kind=kind)


def _start_objective(run):
    """The objective at the start (an objective far above it means divergence)."""
    if np.any(run.w):
        return run.objective(run.penalty())
    # all margins equal the intercept: no pass over X
    return float(run.sw.dot(run.loss.loss_array(np.full(run.n, run.b[0]), run.y))) / run.n


def _epochs(run, n_warm, n_first, f_start):
    """The epoch loop: ``n_warm`` warm-up passes, ``n_first`` epochs of the first phase,
    then Prox-SVRG; ``f_start`` is the objective at the start.  Returns ``(n_iter,
    converged, plateau)``."""
    p = run.params
    first, svrg = _phases(run, n_first)
    plateau = Plateau(p.tol, p.n_iter_no_change)
    scale, n_iter, converged = 1.0, 0, False   # 'adaptive' divides every step by 5 per plateau
    for epoch in range(p.max_iter):
        n_iter = epoch + 1
        if epoch < n_warm:
            out = _warmup_epoch(run, epoch)
            if out is None:   # the callback stopped the fit inside the pass
                break
            (eta, loss_sum, n_seen), snapshot, label = out, None, "sgd_warmup"
        else:
            phase = first if epoch < n_warm + n_first else svrg
            eta, loss_sum, n_seen, snapshot = _phase_epoch(run, phase, scale)
            label = phase.label
        current, stop = _end_of_epoch(run, epoch, eta, label, loss_sum, n_seen, snapshot)
        check_divergence(current, f_start, run.monitor.solver_name, f"epoch {epoch}")
        # the warm-up and anchor epochs of 'hybrid' do not count towards the plateau
        counts = p.solver != "hybrid" or epoch >= n_warm + n_first
        if plateau.update(current, counts):
            if p.learning_rate == "adaptive" and scale > _ADAPTIVE_MIN:
                # plateau reached: shrink the noise floor, down to eta0 / 1000
                scale = max(scale / 5.0, _ADAPTIVE_MIN)
                plateau.restart()
            else:
                converged = True
                break
        if stop:
            break
    return n_iter, converged, plateau


def solve(problem, params, monitor, state=None):
    """Fit one binary or single-output problem by S3GD or one of its baselines.

    Parameters
    ----------
    problem : skstoch.base._LinearProblem
        Data, targets, weights, warm start, seed and stream; ``problem.shared`` is what
        :func:`prepare` returned for the fit.
    params : S3GDParams
    monitor : FitMonitor
        One record per epoch (and per chunk of the first warm-up pass, and for the
        line-search start).
    state : None
        S3GD keeps no solver state besides the iterate (a warm start is ``coef_init``).

    Returns
    -------
    SolverResult
        ``x`` the coefficients, ``intercept``, ``n_iter`` the epochs run (a pass the callback
        stopped counts), ``criterion`` the relative objective improvement of the last epoch;
        ``extra["step_size"]`` the resolved ``eta0`` of the first phase.
    """
    run = _Run(problem, params, monitor)
    # the solver's BLAS calls are vector ops of length d (dot, norm, axpy on w) that OpenBLAS
    # threads from d ~ 10^4 on: a second thread saves nothing measurable (sparse 100,000 x
    # 50,000 default fit, user guide) but busy-waits after each call, doubling the process CPU
    # time; one-vs-rest heads run in their own threads (n_jobs) anyway
    with single_thread_blas():
        # the SGD warm-up only starts a fit from scratch (a warm start is already close)
        from_scratch = not np.any(run.w) and not (params.fit_intercept and run.b[0] != 0.0)
        n_warm = params.warmup_epochs if params.solver == "hybrid" and from_scratch else 0
        n_first = (params.anchor_epochs if params.solver == "hybrid" else
                   0 if params.solver == "svrg" else params.max_iter)
        f_start = _start_objective(run)
        taken, stopped = _line_search_phase(run, n_warm)
        n_warm = 0 if taken else n_warm
        if stopped:
            n_iter, converged, plateau = 0, False, Plateau(params.tol, params.n_iter_no_change)
        else:
            n_iter, converged, plateau = _epochs(run, n_warm, n_first, f_start)
        monitor.finish(converged=converged, criterion=_CRITERION,
                       value=float(plateau.rel_improvement), tol=params.tol,
                       max_iter=params.max_iter)
        # the SGD solvers stop at their noise floor, well above the optimum on any scaling
        if converged and params.solver in _VARIANCE_REDUCED:
            warn_if_far(run.gradient_ratio(), monitor.solver_name, params.tol)
        if run.steps_resolved or n_iter > n_warm or n_warm == 0:
            step_first, step_svrg, _ = run.steps()
            anchorless_hybrid = params.solver == "hybrid" and n_first == 0
            step = step_svrg if anchorless_hybrid else step_first
        else:   # the fit ended in the warm-up: no spectrum estimate for an unused step
            step = run.warmup_schedule()[0]
    return SolverResult(x=run.w, intercept=float(run.b[0]), n_iter=n_iter, converged=converged,
                        criterion=float(plateau.rel_improvement), criterion_name=_CRITERION,
                        extra={"step_size": step})
