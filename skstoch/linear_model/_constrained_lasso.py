"""l1-ball constrained least squares (paper 001, section 5.1, eq. 22).

    minimize_{w, b}  1/(2 S) sum_i s_i (x_i.w + b - y_i)^2 + alpha ||w||_2^2
    subject to       ||w||_1 <= radius                     (S = sum_i s_i)

Solvers: Epro-SGD (Alg. 1), Epro-ORDA (Alg. 3), the paper's baselines (projected SGD,
OneProj) and an exact accelerated projected-gradient solver (FISTA with the l1-ball
projection, backtracking and adaptive restart, stopped on a Frank-Wolfe duality gap).
"""
import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import check_cv
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from .._fast import _lasso
from .._solvers import (SolverResult, check_finite_iterate, epoch_projection, project_l1_ball,
                        rayleigh_power_iteration)
from ..base import STOCHASTIC_SOLVER_CONSTRAINTS, BaseLinearRegressor, StochasticSolverMixin
from ..utils import make_dataset, seed_from_random_state, single_thread_blas

STOCHASTIC_SOLVERS = ("epro_sgd", "epro_orda", "epro_svrg", "sgd", "oneproj")
SOLVERS = ("auto", "fista") + STOCHASTIC_SOLVERS

# 'epro_svrg': first epoch length as a fraction of n and the step as a multiple of the
# per-row bound 1 / max_i (c_i ||x_i||^2 + 2 alpha) (measured, see the user guide)
SVRG_FIRST_EPOCH_FRACTION = 0.125
SVRG_STEP_FACTOR = 1.0

# lam='auto' for Epro-SGD / Epro-ORDA / OneProj: this fraction of the multiplier estimate.
# The SGD noise of the iterate smooths the penalty's kink, so an epoch run at lam >= nu*
# ends with its average pulled inside the ball (a first-order error the projection cannot
# undo); slightly below nu* the average ends outside and the projection corrects it.
# Measured (round 7, user guide): 0.9 made 3 passes better than 1 on an isotropic and a
# correlated design where 1.0 made them 1.5-3.5x worse; 0.8 was similar, 1.0 worst.
LAM_AUTO_FACTOR = 0.9



# ---------------------------------------------------------------------------------------
# the problem: weighted least squares with the exact intercept

def _max_abs(A):
    """Largest |entry| of a dense or sparse array (0 when empty), in float64."""
    data = A.data if sp.issparse(A) else np.asarray(A)
    if data.size == 0:
        return 0.0
    with np.errstate(all="ignore"):
        return float(np.max(np.abs(data)))


def _scale_error(X, what):
    """The ValueError raised when the scale of X makes the least-squares quantities
    overflow float64 (instead of a hang, a division by zero or a NaN fit)."""
    return ValueError(
        f"X is too large in magnitude for float64 (max |X| = {_max_abs(X):.3g}): {what} "
        f"overflowed. Scale X, e.g. with sklearn.preprocessing.MaxAbsScaler or "
        f"StandardScaler, so that its squared row norms stay well below 1e308.")


class _LSProblem:
    """Full-pass quantities of one output: objective, gradient, optimal intercept, gap."""

    def __init__(self, X, dataset, y, sample_weight, alpha, radius, fit_intercept):
        self.X = X
        self.dataset = dataset
        self.y = np.asarray(y, dtype=np.float64)
        sw = np.asarray(sample_weight, dtype=np.float64)
        self.sw = sw
        self.S = float(sw.sum())
        self.alpha = float(alpha)
        self.radius = float(radius)
        self.fit_intercept = bool(fit_intercept)
        n = X.shape[0]
        # c_i = n s_i / S makes the uniformly sampled row's gradient unbiased
        self.cweight = np.ascontiguousarray(sw * (n / self.S))
        with np.errstate(over="ignore", invalid="ignore"):
            if fit_intercept:
                self.x_mean = np.asarray(X.T @ sw, dtype=np.float64).ravel() / self.S
                self.y_mean = float(sw @ self.y) / self.S
            else:
                self.x_mean = np.zeros(X.shape[1])
                self.y_mean = 0.0
            yc = self.y - self.y_mean
            # objective at w = 0 with the optimal intercept: the scale of tolerances
            self.f_zero = 0.5 * float(sw @ (yc * yc)) / self.S
        if not np.all(np.isfinite(self.x_mean)):
            raise _scale_error(X, "the weighted column means of X")
        if not (math.isfinite(self.y_mean) and math.isfinite(self.f_zero)):
            raise ValueError(
                f"y is too large in magnitude for float64 (max |y| = "
                f"{float(np.max(np.abs(self.y), initial=0.0)):.3g}): the weighted sum of "
                f"squared residuals at w = 0 overflowed. Scale y (e.g. divide it by its "
                f"standard deviation).")

    def optimal_intercept(self, w):
        return self.y_mean - float(self.x_mean @ w) if self.fit_intercept else 0.0

    def residual(self, w, b):
        return self.dataset.margins(np.ascontiguousarray(w, dtype=np.float64), b) - self.y

    def objective(self, w, b):
        r = self.residual(w, b)
        return 0.5 * float(self.sw @ (r * r)) / self.S + self.alpha * float(w @ w)

    def gradient(self, w, b):
        """Gradient in w at (w, b)."""
        r = self.residual(w, b)
        return np.asarray(self.X.T @ (self.sw * r)).ravel() / self.S + 2.0 * self.alpha * w

    def gap(self, w, grad=None):
        """Frank-Wolfe duality gap at (w, optimal intercept): an upper bound on the
        suboptimality F(w) - F* for any feasible w (exact convexity bound)."""
        if grad is None:
            grad = self.gradient(w, self.optimal_intercept(w))
        return float(grad @ w) + self.radius * float(np.max(np.abs(grad), initial=0.0))

    def multiplier(self, w, grad=None):
        """Estimate of the constraint's Lagrange multiplier at a feasible w.

        At the optimum, -grad_j = nu sign(w_j) on the support, so nu = -grad.w / ||w||_1;
        0 when w is strictly inside the ball (the constraint is then inactive there).
        """
        norm1 = float(np.abs(w).sum())
        if not self.radius > 0 or norm1 < self.radius * (1.0 - 1e-9):
            return 0.0
        if grad is None:
            grad = self.gradient(w, self.optimal_intercept(w))
        return max(0.0, -float(grad @ w) / norm1)

    def multiplier_estimate(self, w):
        """The multiplier of the exact penalty for an Epro-SGD/ORDA epoch that starts at
        the feasible w (lam='auto').

        ``nu_step``: the multiplier implied by the projection of one exact line-search
        (Cauchy) step along -grad, t = g.g / g.H g (one more pass over X), i.e. the soft
        threshold that brings w - t g back onto the ball, divided by t (0 when the step
        stays inside the ball: the constraint looks inactive).  Strictly inside the ball
        (e.g. the start w = 0) it is the estimate; :meth:`multiplier` is 0 there even when
        the constraint is active at the optimum, and an epoch with lam = 0 is plain ridge SGD
        whose projected average is a different estimator (round 7).  On the boundary: the
        smaller of ``nu_step`` and :meth:`multiplier` (both equal the Lagrange multiplier at
        the optimum; a lam above it pulls the averaged iterate inside the ball, which the
        projection cannot undo, so the estimate errs low).
        """
        norm1 = float(np.abs(w).sum())
        if not self.radius > 0:
            return 0.0
        grad = self.gradient(w, self.optimal_intercept(w))
        on_boundary = norm1 >= self.radius * (1.0 - 1e-9)
        gg = float(grad @ grad)
        if not gg > 0:
            return 0.0
        mv, _ = _centered_matvecs(self)
        Xg = mv(grad)
        gHg = float(self.sw @ (Xg * Xg)) / self.S + 2.0 * self.alpha * gg
        if not (gHg > 0 and math.isfinite(gHg)):
            return 0.0
        nu = _step_multiplier(w, grad, self.radius, gg / gHg)
        if on_boundary:
            nu = min(nu, self.multiplier(w, grad))
        return nu

    def _row_sq(self):
        """Squared row norms of X in float64 (cached)."""
        if getattr(self, "_row_sq_cache", None) is None:
            X = self.X
            with np.errstate(over="ignore", invalid="ignore"):
                if sp.issparse(X):
                    # row sums of squares from a running sum (a few times faster than
                    # bincount over repeated row ids; absolute error ~ eps * sum, a step bound)
                    data = X.data.astype(np.float64, copy=False)
                    csum = np.concatenate([[0.0], np.cumsum(data * data)])
                    sq = csum[X.indptr[1:]] - csum[X.indptr[:-1]]
                else:
                    sq = np.einsum("ij,ij->i", X, X, dtype=np.float64)
            self._row_sq_cache = sq
        return self._row_sq_cache

    def mean_row_curvature(self):
        """mean_i c_i (||x_i||^2 + [fit_intercept]) + 2 alpha: the trace of the Hessian, an
        upper bound on its largest eigenvalue."""
        with np.errstate(over="ignore", invalid="ignore"):
            value = float(self.cweight @ (self._row_sq() + self.fit_intercept)) / \
                self.X.shape[0] + 2.0 * self.alpha
        if not (math.isfinite(value) and value > 0):
            raise _scale_error(self.X, "the squared row norms (the step-size bound)")
        return value

    def max_row_curvature(self):
        """max_i c_i (||x_i||^2 + [fit_intercept]) + 2 alpha: a safe inverse step for SGD.

        Computed in float64 (a float32 X near its maximum would overflow in float32);
        raises ValueError naming the scale of X when it overflows float64.
        """
        with np.errstate(over="ignore", invalid="ignore"):
            value = float(np.max(self.cweight * (self._row_sq() + self.fit_intercept),
                                 initial=0.0)) + 2.0 * self.alpha
        if not math.isfinite(value):
            raise _scale_error(self.X, "the squared row norms (the step-size bound)")
        return value


def _centered_matvecs(problem):
    """Centered design operator Xc v and Xc^T u (Xc = X - 1 x_mean^T), never formed."""
    X, xm = problem.X, problem.x_mean

    def mv(v):
        return np.asarray(X @ v).ravel() - float(xm @ v)

    def rmv(u):
        return np.asarray(X.T @ u).ravel() - xm * float(u.sum())

    return mv, rmv


def _lipschitz_estimate(problem, n_iter=30, seed=0):
    """Power-iteration estimate of the largest eigenvalue of Xc^T W Xc / S + 2 alpha."""
    mv, rmv = _centered_matvecs(problem)
    d = problem.X.shape[1]
    lam = rayleigh_power_iteration(lambda v: rmv(problem.sw * mv(v)) / problem.S,
                                   np.random.RandomState(seed).standard_normal(d), n_iter)
    return max(lam, 0.0) + 2.0 * problem.alpha


def fista_solve(problem, w0, *, max_iter, tol, monitor, gap_every=5):
    """Accelerated projected gradient (FISTA) on the l1 ball with backtracking and
    gradient-based adaptive restart (O'Donoghue & Candes 2015).

    The intercept is eliminated exactly (centered design), so the iterate is w only.
    Stops when the Frank-Wolfe gap is <= tol * F(0).  Two passes over X per iteration
    (X^T r at the extrapolated point, X x at the new point; X y follows by linearity),
    plus one every ``gap_every`` iterations for the gap.
    """
    mv, rmv = _centered_matvecs(problem)
    sw, S, alpha, radius = problem.sw, problem.S, problem.alpha, problem.radius
    yc = problem.y - problem.y_mean
    threshold = tol * problem.f_zero

    def value(Xw, w):
        r = Xw - yc
        return 0.5 * float(sw @ (r * r)) / S + alpha * float(w @ w), r

    with np.errstate(over="ignore", invalid="ignore"):
        L = _lipschitz_estimate(problem)
    if not math.isfinite(L):
        raise _scale_error(problem.X, "the Lipschitz constant of the least-squares loss")
    L = max(L, 1e-12)
    # backtracking cap: every comparison below is written so that NaN/inf also exits
    L_cap = max(1e30, 1e10 * L)
    x = project_l1_ball(np.asarray(w0, dtype=np.float64), radius)
    Xx = mv(x)
    fx, rx = value(Xx, x)
    yk, Xy, fy, ry = x, Xx, fx, rx
    t = 1.0
    n_proj = 1
    gap = np.inf
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        grad = rmv(sw * ry) / S + 2.0 * alpha * yk
        while True:
            x_new = project_l1_ball(yk - grad / L, radius)
            n_proj += 1
            Xx_new = mv(x_new)
            f_new, r_new = value(Xx_new, x_new)
            diff = x_new - yk
            bound = fy + float(grad @ diff) + 0.5 * L * float(diff @ diff)
            if not (f_new > bound + 1e-12 * abs(fy)) or not (L <= L_cap):
                break
            L *= 2.0
        if not (math.isfinite(f_new) and math.isfinite(L)):
            raise _scale_error(problem.X, "the least-squares objective")
        if float((yk - x_new) @ (x_new - x)) > 0:   # restart the momentum
            t = 1.0
            yk, Xy, fy, ry = x_new, Xx_new, f_new, r_new
        else:
            t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
            beta = (t - 1.0) / t_new
            t = t_new
            yk = x_new + beta * (x_new - x)
            Xy = Xx_new + beta * (Xx_new - Xx)
            fy, ry = value(Xy, yk)
        x, Xx, fx, rx = x_new, Xx_new, f_new, r_new
        if it % gap_every == 0 or it == max_iter:
            grad_x = rmv(sw * rx) / S + 2.0 * alpha * x
            gap = problem.gap(x, grad_x)
            stop = monitor.record(epoch=it, objective=fx, gap=gap, step_size=1.0 / L, x=x)
            if gap <= threshold:
                converged = True
                break
            if stop:
                break
    return SolverResult(x=x, n_iter=it, converged=converged, criterion=gap,
                        extra={"n_projections": n_proj, "n_epochs": it, "budget_used": it,
                               "budget": max_iter, "threshold": threshold})


# Largest working set solved on its Gram matrix (k x k doubles); beyond it, plain FISTA.
GRAM_MAX_FEATURES = 4096
# Initial working-set size.
WS_INITIAL = 256


def _gram_block(problem, cols, chunk_elems=1 << 22):
    """Centered, weighted Gram matrix of the columns ``cols``:
    Xc[:, cols]^T W Xc[:, cols] / S  with  Xc = X - 1 x_mean^T  (never formed).

    Dense X: row chunks of at most ``chunk_elems`` entries (BLAS syrk per chunk), so the
    extra memory is O(chunk + k^2) even for a column subset or sample weights.
    """
    X, sw, S = problem.X, problem.sw, problem.S
    k = len(cols)
    all_cols = k == X.shape[1]
    unit = bool(np.all(sw == sw[0]))
    if sp.issparse(X):
        Xs = (X if all_cols else X[:, cols]).astype(np.float64, copy=False)
        Xw = Xs.multiply(sw[:, None]).tocsr() if not unit else Xs * sw[0]
        G = np.asarray((Xs.T @ Xw).todense())
    else:
        G = np.zeros((k, k))
        step = max(1, chunk_elems // max(k, 1))
        root = np.sqrt(sw)
        _accumulate_gram(G, X, cols, all_cols, unit, sw, root, step)
    G /= S
    xm = problem.x_mean[cols]
    G -= np.outer(xm, xm)
    return G


def _accumulate_gram(G, X, cols, all_cols, unit, sw, root, step):
    for start in range(0, X.shape[0], step):
        block = X[start:start + step]
        if not all_cols:
            block = block[:, cols]
        block = block.astype(np.float64, copy=False)   # float32 X: accumulate in double
        if unit:
            Xb = block if sw[0] == 1.0 else block * root[0]
        else:
            Xb = block * root[start:start + step, None]
        G += Xb.T @ Xb


def _largest_eigenvalue(H, n_iter=30):
    """Power iteration (k x k mat-vecs; a LAPACK eigensolver was slower under load).
    An underestimate is caught by the backtracking of :func:`_fista_gram`."""
    v0 = 1.0 + 0.1 * np.random.RandomState(0).standard_normal(H.shape[0])
    return rayleigh_power_iteration(lambda v: H @ v, v0, n_iter) * 1.01


def _fista_gram(H, q, radius, v0, threshold, max_iter):
    """FISTA with adaptive restart on min 1/2 v^T H v - q^T v s.t. ||v||_1 <= radius.

    One k x k mat-vec per iteration (H diff); the Frank-Wolfe gap comes for free from the
    tracked H x.  Returns (v, n_iter, gap).
    """
    L = _largest_eigenvalue(H) * (1.0 + 1e-10)
    if not math.isfinite(L):
        raise FloatingPointError("the working set's Gram matrix is not finite")
    L = max(L, 1e-300)
    x = project_l1_ball(np.asarray(v0, dtype=np.float64), radius)
    Hx = H @ x
    y, Hy = x, Hx
    t = 1.0
    gap = np.inf
    it = 0
    while it < max_iter:
        it += 1
        g = Hy - q
        while True:
            x_new = project_l1_ball(y - g / L, radius)
            diff = x_new - y
            Hd = H @ diff
            dd = float(diff @ diff)
            # written so that NaN/inf also exits (no hang on non-finite values)
            if not (float(diff @ Hd) > L * dd * (1.0 + 1e-12)) or not (L <= 1e300):
                break
            L *= 1.5          # the power-iteration estimate was low
        Hx_new = Hy + Hd
        g_new = Hx_new - q
        gap = float(g_new @ x_new) + radius * float(np.max(np.abs(g_new), initial=0.0))
        if gap <= threshold:
            Hx_new = H @ x_new            # exact, no recurrence drift
            g_new = Hx_new - q
            gap = float(g_new @ x_new) + radius * float(np.max(np.abs(g_new), initial=0.0))
            if gap <= threshold:
                x = x_new
                break
        if float((y - x_new) @ (x_new - x)) > 0:   # restart the momentum
            t = 1.0
            y, Hy = x_new, Hx_new
        else:
            t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
            beta = (t - 1.0) / t_new
            t = t_new
            y = x_new + beta * (x_new - x)
            Hy = Hx_new + beta * (Hx_new - Hx)
        x, Hx = x_new, Hx_new
    return x, it, gap


def fista_ws_solve(problem, w0, *, max_iter, tol, monitor, max_outer=50):
    """Exact solver: FISTA on working sets, each solved on its Gram matrix.

    Outer iteration: one full gradient (two passes over X) gives the Frank-Wolfe gap
    (stop when <= tol * F(0)); the working set is the support of w plus the coordinates
    with the largest |gradient| (size max(256, 2 |support|), growing); FISTA with restart
    solves the restricted problem on its centered Gram matrix (no pass over X).  When the
    working set holds every feature (d <= 256, e.g. the dense 1e6 x 100 benchmark) this is
    FISTA with a cached Gram matrix.  Falls back to :func:`fista_solve` when the working
    set would exceed ``GRAM_MAX_FEATURES`` columns.
    """
    mv, rmv = _centered_matvecs(problem)
    sw, S, alpha, radius = problem.sw, problem.S, problem.alpha, problem.radius
    yc = problem.y - problem.y_mean
    d = problem.X.shape[1]
    threshold = tol * problem.f_zero
    q_full = rmv(sw * yc) / S
    w = project_l1_ball(np.asarray(w0, dtype=np.float64), radius)
    ws_size = min(d, WS_INITIAL)
    n_inner = 0
    n_proj = 1
    gap = np.inf
    converged = False
    ws = None
    for outer in range(1, max_outer + 1):
        r = mv(w) - yc
        f = 0.5 * float(sw @ (r * r)) / S + alpha * float(w @ w)
        grad = rmv(sw * r) / S + 2.0 * alpha * w
        gap = float(grad @ w) + radius * float(np.max(np.abs(grad), initial=0.0))
        stop = monitor.record(epoch=outer - 1, objective=f, gap=gap, n_iter=n_inner,
                              working_set_size=0 if ws is None else len(ws), x=w)
        if gap <= threshold:
            converged = True
            break
        if stop or n_inner >= max_iter:
            break
        support = np.flatnonzero(w)
        ws_size = min(d, max(ws_size, 2 * len(support)))
        if ws is not None and len(ws) >= ws_size and ws_size < d:
            ws_size = min(d, 2 * ws_size)   # the last working set did not suffice: grow
        if ws_size > GRAM_MAX_FEATURES:
            result = fista_solve(problem, w, max_iter=max(1, max_iter - n_inner), tol=tol,
                                 monitor=monitor)
            result.n_iter += n_inner
            result.extra["n_projections"] += n_proj
            return result
        if ws_size >= d:
            ws = np.arange(d)
        else:
            score = np.abs(grad)
            score[support] = np.inf
            ws = np.sort(np.argpartition(-score, ws_size - 1)[:ws_size])
        with np.errstate(over="ignore", invalid="ignore"):
            H = _gram_block(problem, ws)
        H[np.diag_indices_from(H)] += 2.0 * alpha
        if not (np.all(np.isfinite(H)) and np.all(np.isfinite(q_full[ws]))):
            raise _scale_error(problem.X, "the Gram matrix X^T X")
        try:
            v, it, _ = _fista_gram(H, q_full[ws], radius, w[ws], 0.5 * threshold,
                                   max_iter - n_inner)
        except FloatingPointError:
            raise _scale_error(problem.X, "the Gram matrix X^T X") from None
        n_inner += it
        n_proj += it
        w = np.zeros(d)
        w[ws] = v
    return SolverResult(x=w, n_iter=max(n_inner, 1), converged=converged, criterion=gap,
                        extra={"n_projections": n_proj, "n_epochs": outer,
                               "budget_used": n_inner, "budget": max_iter,
                               "threshold": threshold})


class _StallMonitor:
    """Monitor proxy for the epoch solvers: also asks the loop to stop when the objective
    of the projected epoch output no longer decreases by more than ``tol`` (relative),
    i.e. (f_prev - f) <= tol * |f| (round 7: the relative change of consecutive outputs,
    the shared loop's rule, stays above 1e-4 under the SGD noise, so the default budget of
    10 passes always ran to its end).  Everything else is delegated to the FitMonitor."""

    def __init__(self, monitor, tol):
        self._monitor = monitor
        self._tol = tol
        self._previous = None
        self.stalled = False

    def __getattr__(self, name):
        return getattr(self._monitor, name)

    def record(self, **record):
        stop = self._monitor.record(**record)
        f = record.get("objective")
        if f is not None:
            if self._previous is not None and self._previous - f <= self._tol * abs(f):
                self.stalled = True
            self._previous = f
        return stop or self.stalled


def _stochastic_solve(problem, solver, w0, *, budget, eta0, lam, first_epoch_length,
                      use_full_budget, tol, seed, stream, monitor, track_objective,
                      orda_at_u=False):
    """Run one of the stochastic solvers; returns (w, b, SolverResult)."""
    ds, y, cw = problem.dataset, problem.y, problem.cweight
    alpha, radius, fit_intercept = problem.alpha, problem.radius, problem.fit_intercept
    d = problem.X.shape[1]
    auto_step = isinstance(eta0, str)
    curvature = problem.max_row_curvature()
    safe_step = 1.0 / curvature if curvature > 0 else 1.0
    if alpha > 0:
        safe_step = min(safe_step, 0.49 / alpha)
    if auto_step:
        if solver == "epro_orda" and alpha > 0:
            # the paper's theory step eta_1 = mu / beta with mu = 1, beta = 2 alpha (ORDA's
            # explicit step at iteration t is only eta / t^1.5)
            # capped at 64 times the stable SGD step (ORDA diverges beyond ~256x)
            eta0 = min(1.0 / (2.0 * alpha), 64.0 * safe_step)
        elif solver == "epro_orda":
            eta0 = 64.0 * safe_step
        elif solver == "epro_svrg":
            eta0 = min(SVRG_STEP_FACTOR * safe_step, 0.49 / alpha) if alpha > 0 else \
                SVRG_STEP_FACTOR * safe_step
        else:
            eta0 = safe_step
    if not (0.0 < eta0 < math.inf):
        raise _scale_error(problem.X, f"the automatic step size (eta0 = {eta0!r})")
    if first_epoch_length is None and solver == "epro_sgd" and auto_step:
        # keep the theory's epoch "travel" T1 eta1 = 4 mu / beta (T1 = 8, eta1 = mu/(2 beta),
        # mu = 1, beta = 2 alpha) while eta1 is limited by stability: T1 = 2 / (alpha eta1)
        # (alpha eta0 n <= 2 means 2 / (alpha eta0) >= n: no division by an underflow)
        n = problem.X.shape[0]
        travel = alpha * eta0
        t1 = n if travel * n <= 2.0 else math.ceil(2.0 / travel)
        # and at most the budget: a derived T1 longer than max_iter would run no epoch
        first_epoch_length = int(min(max(t1, 8), max(n, 8), max(budget, 8)))
    state = {"b": problem.optimal_intercept(project_l1_ball(w0, radius)), "counter": 0,
             "lams": []}
    auto_lam = isinstance(lam, str)

    def lam_at(w):
        # lam='auto': the exact penalty's multiplier set, before every epoch, to 0.9 times
        # the constraint's Lagrange multiplier estimated at the epoch's (projected) start
        value = LAM_AUTO_FACTOR * problem.multiplier_estimate(w) if auto_lam else lam
        state["lams"].append(value)
        return value

    def objective(w):
        return problem.objective(w, state["b"])

    if tol is not None and track_objective and solver in ("epro_sgd", "epro_orda",
                                                          "epro_svrg"):
        monitor = _StallMonitor(monitor, tol)

    if solver == "epro_svrg":
        return _svrg_solve(problem, w0, state, budget=budget, eta0=eta0,
                           first_epoch_length=first_epoch_length, auto_lam=auto_lam,
                           lam=lam, use_full_budget=use_full_budget, tol=tol, seed=seed,
                           stream=stream, monitor=monitor, objective=objective,
                           track_objective=track_objective)

    if solver in ("epro_sgd", "epro_orda"):
        def project(v):
            w = project_l1_ball(v, radius)
            # the intercept is unconstrained: set it to its exact optimum given w
            state["b"] = problem.optimal_intercept(w)
            return w

        if solver == "epro_sgd":
            def run_epoch(x_start, eta, n_steps, epoch):
                w = np.array(x_start, dtype=np.float64, copy=True)
                w_avg = np.empty(d)
                _, b_avg, state["counter"] = _lasso.epro_sgd_epoch(
                    ds, y, cw, w, state["b"], eta, alpha, lam_at(x_start), radius, n_steps,
                    fit_intercept, seed, stream, state["counter"], w_avg)
                state["b"] = b_avg
                return w_avg
            step_decay, extra, t1 = 2.0, 0, first_epoch_length or 8
        else:
            def run_epoch(x_start, eta, n_steps, epoch):
                x = np.array(x_start, dtype=np.float64, copy=True)
                state["b"], state["counter"] = _lasso.orda_epoch(
                    ds, y, cw, x, state["b"], eta, alpha, lam_at(x_start), radius, n_steps,
                    fit_intercept, seed, stream, state["counter"], orda_at_u)
                return x
            step_decay, extra, t1 = math.sqrt(2.0), 1, first_epoch_length or 16
        result = epoch_projection(
            w0, run_epoch, project, budget=budget, first_epoch_length=t1, eta0=eta0,
            step_decay=step_decay, monitor=monitor,
            objective=objective if track_objective else None, tol=tol,
            use_full_budget=use_full_budget, extra_per_epoch=extra)
        result.extra["eta0"] = eta0
        result.extra["lam"] = state["lams"][-1] if state["lams"] else 0.0
        return result.x, state["b"], result

    # baselines: one continuous run, recorded at the doubling checkpoints 8, 24, 56, ...
    decay = (2.0 * alpha * eta0 if alpha > 0 else 1.0) if auto_step else 1.0
    w = project_l1_ball(w0, radius) if solver == "sgd" else np.array(w0, dtype=np.float64)
    w_sum = np.zeros(d)
    b_sum = 0.0
    b = state["b"]
    gamma = math.log(max(budget, 2)) / max(budget, 2)     # OneProj's smoothing, ln T / T
    t_done = 0
    chunk = 8
    epoch = 0
    counter = 0
    while t_done < budget:
        n_steps = min(chunk, budget - t_done)
        if solver == "sgd":
            b, db, counter = _lasso.projected_sgd(
                ds, y, cw, w, b, eta0, decay, alpha, radius, t_done, n_steps, fit_intercept,
                seed, stream, counter, w_sum)
        else:
            w_ref = project_l1_ball(w_sum / t_done if t_done else w, radius)
            b, db, counter = _lasso.oneproj_sgd(
                ds, y, cw, w, b, eta0, decay, alpha, lam_at(w_ref), gamma, radius, t_done, n_steps,
                fit_intercept, seed, stream, counter, w_sum)
        b_sum += db
        t_done += n_steps
        chunk *= 2
        check_finite_iterate(w, monitor.solver_name, f"iteration {t_done}")
        record = dict(epoch=epoch, step_size=eta0 / (1.0 + decay * (t_done - 1)),
                      n_gradients=t_done)
        if track_objective or t_done == budget:
            # the output if the run stopped here: the (projected) average of the iterates
            w_out = project_l1_ball(w_sum / t_done, radius)
            record["objective"] = problem.objective(w_out, problem.optimal_intercept(w_out))
        epoch += 1
        if monitor.record(x=w, **record):
            break
    w_out = project_l1_ball(w_sum / t_done, radius)
    n_proj = t_done if solver == "sgd" else 1
    result = SolverResult(x=w_out, n_iter=t_done, converged=True, criterion=0.0,
                          extra={"n_projections": n_proj, "n_epochs": epoch,
                                 "budget_used": t_done, "budget": budget, "eta0": eta0,
                                 "lam": state["lams"][-1] if state["lams"] else 0.0})
    return w_out, problem.optimal_intercept(w_out), result


def _step_multiplier(w, grad, radius, t):
    """The constraint's multiplier implied by one projected-gradient step from w:
    P(w - t grad) soft-thresholds w - t grad by theta; nu = theta / t (0 when w - t grad is
    inside the ball).  At the optimum it equals the Lagrange multiplier for every t > 0."""
    z = w - t * grad
    if not radius > 0 or np.abs(z).sum() <= radius:
        return 0.0
    p = project_l1_ball(z, radius)
    nz = p != 0
    theta = float(np.max(np.abs(z[nz]) - np.abs(p[nz]))) if np.any(nz) else \
        float(np.max(np.abs(z)))
    return max(theta, 0.0) / t


class _MultiplierSearch:
    """The l1 penalty nu of the next 'epro_svrg' epoch (lam='auto').

    The penalized problem F + nu ||w||_1 has the constrained solution as its solution
    exactly when nu is the constraint's multiplier nu*, and the l1 norm of its solution is
    nonincreasing in nu.  Each epoch's unprojected output approximately solves it, so its
    l1 norm brackets nu*: above the radius, nu < nu* (``lo``); at or below it, nu >= nu*
    (``hi``; at w = 0, ``||grad||_inf`` is such a bound).  The next nu is the smaller of
    the multiplier implied by one projected-gradient step at the projected snapshot and
    the false position of phi(nu) = ||w(nu)||_1 - radius on the bracket and the secant
    through the last two points below nu*, among those strictly inside the bracket (the first epoch takes the former); else the bracket's
    midpoint (twice ``lo`` while unbounded).  The smaller one, because a nu slightly
    below nu* gives an output slightly outside the ball that the projection corrects, one
    slightly above nu* an output strictly inside the ball that it does not (false
    position and that secant approach nu* from below on this convex path).
    """

    def __init__(self, radius, t):
        self.radius, self.t = radius, t
        self.lo, self.hi = 0.0, math.inf
        self.phi_lo, self.phi_hi = None, None
        self.lo_prev = None
        self.n_epochs = 0

    def propose(self, w, grad):
        if not self.radius > 0:
            return 0.0
        if not np.any(w) and self.n_epochs == 0:
            # w(nu) = 0 from nu = ||grad(0)||_inf on: an upper bound of nu*
            self.hi = min(self.hi, float(np.max(np.abs(grad), initial=0.0)))
            self.phi_hi = -self.radius
        if self.hi <= self.lo:
            return self.hi
        valid = []
        c = _step_multiplier(w, grad, self.radius, self.t)
        if self.lo < c < self.hi or (self.n_epochs == 0 and c < self.hi):
            valid.append(c)
        if self.phi_lo is not None and self.phi_hi is not None and self.phi_hi < 0:
            c = self.lo + self.phi_lo * (self.hi - self.lo) / (self.phi_lo - self.phi_hi)
            if self.lo < c < self.hi:
                valid.append(c)
        if self.lo_prev is not None and self.phi_lo is not None:
            # secant through the last two points below nu*: from below on a convex path
            n0, p0 = self.lo_prev
            if p0 > self.phi_lo:
                c = self.lo + self.phi_lo * (self.lo - n0) / (p0 - self.phi_lo)
                if self.lo < c < self.hi:
                    valid.append(c)
        if valid:
            return min(valid)       # from below (see above)
        if math.isfinite(self.hi):
            return 0.5 * (self.lo + self.hi)
        return 2.0 * self.lo if self.lo > 0 else c

    def observe(self, nu, norm1):
        phi = norm1 - self.radius
        self.n_epochs += 1
        if phi > 0:
            if nu >= self.lo:
                if self.phi_lo is not None and nu > self.lo:
                    self.lo_prev = (self.lo, self.phi_lo)
                self.lo, self.phi_lo = nu, phi
        elif nu <= self.hi:
            self.hi, self.phi_hi = nu, phi


def _svrg_solve(problem, w0, state, *, budget, eta0, first_epoch_length, auto_lam, lam,
                use_full_budget, tol, seed, stream, monitor, objective, track_objective):
    """'epro_svrg' (beyond the paper): the epoch-projection loop with prox-SVRG epochs.

    Epoch k: at the projected snapshot (w~, b~ = its optimal intercept) one full gradient
    (the residuals r~ = X w~ + b~ - y, kept, and mu = X^T W r~ / S); the penalty
    nu = the constraint's Lagrange multiplier estimated there (lam='auto', as for
    Epro-SGD) or ``lam``; then ``T_k`` prox-SVRG steps on F + nu ||w||_1 with a constant
    step (lazy O(nnz) steps on CSR rows), and the last iterate is projected.  Epoch lengths
    double (T_k = T1 2^(k-1), as in SVRG++); the full gradient is counted as n stochastic
    gradients in the budget.
    """
    ds, y, cw = problem.dataset, problem.y, problem.cweight
    alpha, radius, fit_intercept = problem.alpha, problem.radius, problem.fit_intercept
    X, sw, S = problem.X, problem.sw, problem.S
    n = X.shape[0]
    if first_epoch_length is None:
        # n/8, but at most what the budget leaves after the first full gradient (a derived
        # T1 longer than that would run no epoch)
        first_epoch_length = max(8, min(int(SVRG_FIRST_EPOCH_FRACTION * n), budget - n))

    # step of the projected-gradient step whose threshold estimates the multiplier: the
    # inverse of the mean row curvature (an upper bound on the Hessian's largest eigenvalue)
    dual = _MultiplierSearch(radius, 1.0 / problem.mean_row_curvature())

    def project(v):
        w = project_l1_ball(v, radius)
        state["b"] = problem.optimal_intercept(w)
        return w

    def run_epoch(x_start, eta, n_steps, epoch):
        b0 = state["b"]
        r_snap = problem.residual(x_start, b0)
        mu = np.asarray(X.T @ (sw * r_snap)).ravel() / S
        mu_b = float(sw @ r_snap) / S if fit_intercept else 0.0
        if auto_lam:
            nu = dual.propose(x_start, mu + 2.0 * alpha * x_start)
        else:
            nu = lam
        state["lams"].append(nu)
        w = np.array(x_start, dtype=np.float64, copy=True)
        state["b"], state["counter"] = _lasso.svrg_epoch(
            ds, y, cw, np.ascontiguousarray(r_snap), np.ascontiguousarray(mu), mu_b, w,
            b0, eta, alpha, nu, n_steps, fit_intercept, seed, stream, state["counter"])
        if auto_lam:
            dual.observe(nu, float(np.abs(w).sum()))
        return w

    result = epoch_projection(
        w0, run_epoch, project, budget=budget, first_epoch_length=first_epoch_length,
        eta0=eta0, step_decay=1.0, monitor=monitor,
        objective=objective if track_objective else None, tol=tol,
        use_full_budget=use_full_budget, extra_per_epoch=n)
    result.extra["eta0"] = eta0
    result.extra["lam"] = state["lams"][-1] if state["lams"] else 0.0
    result.extra["n_full_gradients"] = result.extra["n_epochs"]
    return result.x, state["b"], result


# ---------------------------------------------------------------------------------------

class ConstrainedLasso(BaseLinearRegressor):
    r"""Least squares with a ridge penalty under an l1-ball constraint (constrained Lasso).

    Solves, for each output independently,

    .. math::

        \min_{w, b} \frac{1}{2S}\sum_i s_i (x_i^\top w + b - y_i)^2 + \alpha \|w\|_2^2
        \quad \text{s.t.} \quad \|w\|_1 \le \text{radius},

    with :math:`S = \sum_i s_i` (``sample_weight``, all ones by default).  The intercept
    :math:`b` is neither constrained nor penalized.  This is eq. 22 of Chen et al.,
    "Optimal Stochastic Strongly Convex Optimization with a Logarithmic Number of
    Projections" (paper 001); note the ridge term has no factor 1/2 (the paper's form).

    Read more in the :doc:`User Guide </user_guide/constrained_lasso>`.

    Parameters
    ----------
    alpha : float, default=1.0
        Ridge strength (>= 0).  The paper's value; the objective is 2*alpha strongly convex.
    radius : float, default=0.5
        Radius of the l1 ball (the paper's beta = 0.5).  Rescale it with your data:
        ``radius = ||w_lasso||_1`` reproduces ``Lasso`` (with ``alpha=0``).
    solver : {'auto', 'fista', 'epro_sgd', 'epro_orda', 'epro_svrg', 'sgd', 'oneproj'}
        Default 'auto'.

        - 'fista': exact accelerated projected gradient (machine precision reachable).
        - 'epro_sgd': Epro-SGD, paper Alg. 1 (one projection per doubling epoch).
        - 'epro_orda': Epro-ORDA, paper Alg. 3 with g(w) = alpha ||w||^2.
        - 'sgd': projected SGD, a projection after every step (paper baseline).
        - 'oneproj': SGD on a smoothed penalty, one final projection (paper baseline).
        - 'epro_svrg': beyond the paper: the epoch-projection loop with prox-SVRG epochs
          (one full gradient per epoch, doubling epochs of constant step, the epoch's
          l1 penalty searched so that its output lands on the ball; see the user guide).
        - 'auto': 'fista' for every input (measured, see the user guide: at the default
          budget and tolerance the stochastic solvers were slower on the dense
          1,000,000 x 100 benchmark and slower and far less accurate on a correlated,
          badly scaled sparse 200,000 x 20,000 problem; they win only with a small budget
          tuned to nearly orthogonal data).
    max_iter : int or None, default=None
        For the stochastic solvers, the budget T of stochastic gradients (sampled rows);
        None means ``10 * n_samples``.  For 'fista', the total number of FISTA iterations;
        None means 10000 with ``working_set=True`` (an iteration costs a mat-vec with the
        working set's Gram matrix) and 1000 without (two passes over X each).
    tol : float, default=1e-4
        'fista' stops when the Frank-Wolfe duality gap (an upper bound on the
        suboptimality) is <= ``tol * F(0)``.  The epoch solvers stop early when the relative
        change of consecutive projected epoch outputs is <= ``tol`` or, with
        ``track_objective=True``, when an epoch lowers the objective of the projected output
        by no more than ``tol`` relative (round 7; measured on the dense 1,000,000 x 100
        benchmark: Epro-SGD's defaults stop after 0.26 passes, 1.9 s, at 3.3e-5 relative
        suboptimality, where the 10-pass default budget took 40 s); 0 disables both.
    eta0 : float or 'auto', default='auto'
        Step size.  Epoch solvers: the first epoch's step (halved per epoch by Epro-SGD,
        divided by sqrt(2) by Epro-ORDA).  Baselines: eta_t = eta0 / t (the paper's rule).
        'auto' uses 1 / max_i (c_i ||x_i||^2 + 2 alpha) (and, for the baselines,
        eta_t = 1 / (1/eta0 + 2 alpha (t - 1))).  The paper's tuned values (0.3 Epro, 0.5 SGD,
        0.1 OneProj) depend on the data scale.
    lam : float or 'auto', default='auto'
        Multiplier of the exact penalty lam [||w||_1 - radius]_+ used inside the epochs
        (the paper's lambda; the paper used 0.03 for its Lasso).  Also OneProj's penalty
        weight.  'auto' (our default, not in the paper) sets it before every epoch (every
        checkpoint for 'oneproj') to 0.9 times the constraint's Lagrange multiplier
        estimated at the projected start: the smaller of ``-grad.w / ||w||_1`` and the
        multiplier implied by projecting an exact line-search step along -grad (the latter
        alone strictly inside the ball, e.g. at the start w = 0), at the cost of about two
        passes over X per epoch.  (Before round 7 the first epoch ran with lam = 0, plain
        ridge SGD, and more budget could give a worse result; see the user guide.)  A fixed lam far above the multiplier makes the
        averaged iterate land strictly inside the ball when the SGD noise keeps the raw
        iterate's l1 norm above the radius (sparse, high-dimensional data): the penalty is
        then always on and acts as a Lasso penalty of strength lam (see the user guide).
        The value used in the last epoch is ``lam_``.
    first_epoch_length : int or None, default=None
        T1; None means the paper's 8 (Epro-SGD) or 16 (Epro-ORDA), and n/8 for
        'epro_svrg' (whose epochs also double, with a constant step).
    use_full_budget : bool, default=True
        The paper runs an epoch only if it fits whole in the budget, which leaves up to half
        of ``max_iter`` unused; True (default) adds the leftover to the last epoch.
        ``budget_used_`` reports what was used.
    working_set : bool, default=True
        'fista' only.  True: outer iterations compute the full gradient and duality gap
        (two passes over X), then FISTA solves the problem restricted to a working set
        (the support plus the coordinates of largest ``|gradient|``, at least 256, growing)
        on that set's centered Gram matrix, with no pass over X.  With d <= 256 the working
        set is every feature, i.e. FISTA on a cached Gram matrix.  Sets beyond 4096
        features fall back to plain FISTA.  False: plain FISTA on all features.
    orda_gradient_point : {'x', 'u'}, default='u'
        'epro_orda' only: where ORDA takes the stochastic gradient, at x_t as the paper's
        Alg. 2 writes it ('x') or at the extrapolated point u_t = (1 - theta_t) x_t +
        theta_t z_t as in the original ORDA of Chen, Lin and Pena ('u', our default: relative
        suboptimality 8.8e-4 against 1.4e-3 for 'x' after 10 passes on a generated dense
        problem, equal on a sparse one).
    fit_intercept : bool, default=True
        Fit an unconstrained, unpenalized intercept.  The exact solver eliminates it
        (centered design, never formed); the stochastic solvers update it with the other
        coordinates and reset it to its exact optimum given w at every projection.
    warm_start : bool, default=False
        Start from the previous ``coef_`` (projected onto the ball).
    track_objective : bool, default=True
        Stochastic solvers: evaluate the objective (one pass over X) at every projection
        for ``history_``.  False saves about log2(max_iter) passes.
    verbose : int, default=0
    random_state : int, RandomState instance or None, default=None
        Seed of the sampling of the stochastic solvers.
    callback : callable or None, default=None
        ``callback(record) -> bool`` after every epoch (see ``history_``); True stops.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
        Always inside the l1 ball (it is the output of an exact projection).
    intercept_ : float or ndarray of shape (n_targets,)
    n_iter_ : int
        Stochastic gradients used (stochastic solvers) or iterations ('fista'); max over
        outputs.
    n_projections_ : int
        l1-ball projections performed (max over outputs).
    n_epochs_ : int
    budget_used_ : int
        Stochastic gradients actually used out of ``max_iter`` (stochastic solvers).
    dual_gap_ : float or ndarray of shape (n_targets,)
        Frank-Wolfe gap at the solution: ``F(coef_) - F* <= dual_gap_``.
    lam_ : float or ndarray of shape (n_targets,)
        Stochastic solvers: the exact-penalty multiplier of the last epoch (``lam`` or its
        'auto' estimate).  'fista': the constraint's Lagrange multiplier at the solution,
        i.e. the l1 penalty of the equivalent penalized (ElasticNet-form) problem.
    solver_ : str
        The solver that ran (resolves 'auto').
    history_ : dict of ndarray or list of dict
        One record per epoch (per checkpoint for the baselines, every 5 iterations for
        'fista'): objective, step_size, time, ...
    seed_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)

    See Also
    --------
    ConstrainedLassoCV : the radius chosen by cross-validation.
    sklearn.linear_model.Lasso : the penalized form.

    References
    ----------
    J. Chen, T. Yang, Q. Lin, L. Zhang and Y. Chang, "Optimal Stochastic Strongly Convex
    Optimization with a Logarithmic Number of Projections" (arXiv:1304.5504). Epro-SGD
    (Alg. 1), Epro-ORDA (Alg. 3), the baselines and the Lasso experiment (section 5.1,
    eq. 22).

    X. Chen, Q. Lin and J. Pena, "Optimal Regularized Dual Averaging Methods for Stochastic
    Optimization", NIPS 2012.  ORDA, the inner solver of Epro-ORDA.

    A. Beck and M. Teboulle, "A Fast Iterative Shrinkage-Thresholding Algorithm for Linear
    Inverse Problems", SIAM J. Imaging Sciences 2(1):183-202, 2009.  FISTA ('fista').

    B. O'Donoghue and E. Candes, "Adaptive Restart for Accelerated Gradient Schemes",
    Foundations of Computational Mathematics 15(3):715-732, 2015.  The momentum restart.

    Examples
    --------
    >>> import numpy as np
    >>> from skstoch import ConstrainedLasso
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(100, 5); y = X @ [1.0, -1.0, 0.0, 0.0, 0.0]
    >>> model = ConstrainedLasso(alpha=0.0, radius=1.0).fit(X, y)
    >>> bool(np.abs(model.coef_).sum() <= 1.0 + 1e-12)
    True
    """

    _parameter_constraints = {
        **STOCHASTIC_SOLVER_CONSTRAINTS,
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "radius": [Interval(Real, 0, None, closed="left")],
        "solver": [StrOptions(set(SOLVERS))],
        "eta0": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "lam": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "first_epoch_length": [Interval(Integral, 1, None, closed="left"), None],
        "use_full_budget": ["boolean"],
        "working_set": ["boolean"],
        "orda_gradient_point": [StrOptions({"x", "u"})],
        "fit_intercept": ["boolean"],
        "warm_start": ["boolean"],
        "track_objective": ["boolean"],
    }

    def __init__(self, alpha=1.0, radius=0.5, *, solver="auto", max_iter=None, tol=1e-4,
                 eta0="auto", lam="auto", first_epoch_length=None, use_full_budget=True,
                 working_set=True, orda_gradient_point="u", fit_intercept=True,
                 warm_start=False, track_objective=True, verbose=0,
                 random_state=None, callback=None):
        self.alpha = alpha
        self.radius = radius
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.eta0 = eta0
        self.lam = lam
        self.first_epoch_length = first_epoch_length
        self.use_full_budget = use_full_budget
        self.working_set = working_set
        self.orda_gradient_point = orda_gradient_point
        self.fit_intercept = fit_intercept
        self.warm_start = warm_start
        self.track_objective = track_objective
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback

    def _resolve_solver(self, n_samples, sparse=False):
        if self.solver != "auto":
            return self.solver
        # round 6 measurements (user guide, "solver='auto'"): at their default budget
        # (10 passes) and tol, epro_sgd / epro_svrg took 40.7 / 16.9 s wall (14.6 / 7.7 s
        # CPU) on the dense 1,000,000 x 100 benchmark against 1.25 s (1.14 s CPU) for
        # fista, and on a correlated, badly scaled sparse 200,000 x 20,000 problem
        # epro_svrg reached 4.6e-3 relative suboptimality in 6.2 s (1.3 s CPU) where fista
        # reached 4e-13 in 0.74 s (0.12 s CPU).  The stochastic solvers only win with a
        # small, tuned budget on nearly orthogonal data, which 'auto' cannot know.
        return "fista"

    def _solver_name(self):
        return f"{type(self).__name__}(solver={getattr(self, 'solver_', self.solver)!r})"

    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR (other sparse formats are converted); float32 is accepted.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Each target column is an independent problem.
        sample_weight : array-like of shape (n_samples,), default=None
            Nonnegative weights (the objective is their weighted mean); not all zero.

        Returns
        -------
        self : object
        """
        self._validate_params()
        n_samples = _num_samples_quick(X)
        self.solver_ = self._resolve_solver(n_samples, sp.issparse(X))
        return super().fit(X, y, sample_weight=sample_weight)

    def _fitted_extras(self, results, shared):
        extras = [r.extra for r in results]
        single = len(extras) == 1
        gaps = np.array([e["gap"] for e in extras])
        lams = np.array([e["lam"] for e in extras])
        return {
            "n_projections_": int(max(e["n_projections"] for e in extras)),
            "n_epochs_": int(max(e["n_epochs"] for e in extras)),
            "budget_used_": int(max(e["budget_used"] for e in extras)),
            "dual_gap_": float(gaps[0]) if single else gaps,
            "lam_": float(lams[0]) if single else lams,
        }

    def _fit_problem(self, problem):
        # one BLAS thread: on the shared 2-core benchmark machine a 2-thread OpenBLAS syrk of
        # 100,000 x 100 took 4.8 s against 0.16 s single-threaded, and X^T u 2x longer
        # (oversubscription); the solvers' passes over X are memory-bound anyway
        with single_thread_blas():
            return self._fit_problem_unlimited(problem)

    def _fit_problem_unlimited(self, problem):
        n, d = problem.X.shape
        if np.any(problem.sample_weight < 0) or problem.sample_weight.sum() <= 0:
            raise ValueError("sample_weight must be nonnegative and not all zero.")
        lsp = _LSProblem(problem.X, problem.dataset, problem.y, problem.sample_weight,
                         self.alpha, self.radius, self.fit_intercept)
        solver = self.solver_
        w0 = np.asarray(problem.coef_init, dtype=np.float64)
        monitor = problem.monitor
        if solver == "fista":
            if self.working_set:
                max_iter = 10000 if self.max_iter is None else self.max_iter
                result = fista_ws_solve(lsp, w0, max_iter=max_iter, tol=self.tol,
                                        monitor=monitor)
            else:
                max_iter = 1000 if self.max_iter is None else self.max_iter
                result = fista_solve(lsp, w0, max_iter=max_iter, tol=self.tol,
                                     monitor=monitor)
            w = result.x
            b = lsp.optimal_intercept(w)
            monitor.finish(converged=result.converged, criterion="Frank-Wolfe duality gap",
                           value=result.criterion, tol=result.extra["threshold"],
                           max_iter=max_iter)
        else:
            budget = 10 * n if self.max_iter is None else self.max_iter
            w, b, result = _stochastic_solve(
                lsp, solver, w0, budget=budget, eta0=self.eta0, lam=self.lam,
                first_epoch_length=self.first_epoch_length,
                use_full_budget=self.use_full_budget,
                tol=self.tol if self.tol > 0 else None, seed=problem.seed,
                stream=problem.stream, monitor=monitor,
                track_objective=self.track_objective,
                orda_at_u=self.orda_gradient_point == "u")
            if result.x is not w:
                w = result.x
            if result.extra["n_epochs"] == 0 and solver in ("epro_sgd", "epro_orda", "epro_svrg"):
                warnings.warn(
                    f"{self._solver_name()}: max_iter={budget} is shorter than the first "
                    f"epoch; no stochastic step was taken (coef_ is the projected start).",
                    ConvergenceWarning, stacklevel=4)
        grad = lsp.gradient(w, lsp.optimal_intercept(w))
        gap = lsp.gap(w, grad)
        result.extra["gap"] = gap
        if "lam" not in result.extra:     # fista: the multiplier at the solution
            result.extra["lam"] = lsp.multiplier(w, grad)
        result.x, result.intercept = w, b
        return result

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _num_samples_quick(X):
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        return 0


# ---------------------------------------------------------------------------------------
# cross-validation along a path of radii

def _radius_max(X, y, sample_weight, alpha, fit_intercept):
    """l1 norm of the unconstrained minimizer (ridge for alpha > 0; the minimum-norm least
    squares solution for alpha = 0): radii beyond it leave the constraint inactive."""
    from scipy.sparse.linalg import LinearOperator, lsqr

    lsp = _LSProblem(X, make_dataset(X), y, sample_weight, alpha, np.inf, fit_intercept)
    mv, rmv = _centered_matvecs(lsp)
    sq = np.sqrt(lsp.sw / lsp.S)
    n, d = X.shape
    op = LinearOperator((n, d), matvec=lambda v: sq * mv(np.ravel(v)),
                        rmatvec=lambda u: rmv(sq * np.ravel(u)), dtype=np.float64)
    # min ||sq (Xc w - yc)||^2 / 2 + alpha ||w||^2  <=>  damp^2 = 2 alpha
    with np.errstate(all="ignore"):
        w = lsqr(op, sq * (lsp.y - lsp.y_mean), damp=math.sqrt(2.0 * alpha), atol=1e-10,
                 btol=1e-10, iter_lim=max(100, 2 * min(n, d)))[0]
        r_max = float(np.abs(w).sum())
    if not math.isfinite(r_max):
        raise _scale_error(X, "the least-squares solution that sets the largest radius")
    return r_max


def _path_fold(X, y, sw, train, test, radii, params):
    """Fit the radii (increasing) on train with warm starts; return the test MSEs."""
    Xtr, ytr, swtr = X[train], y[train], sw[train]
    est = ConstrainedLasso(**params)
    est.set_params(warm_start=True)
    mse = np.empty(len(radii))
    swte = sw[test]
    for k, radius in enumerate(radii):
        est.set_params(radius=radius)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(Xtr, ytr, sample_weight=swtr)
        resid = est.predict(X[test]) - y[test]
        mse[k] = float(swte @ (resid * resid)) / max(float(swte.sum()), 1e-300)
    return mse


class ConstrainedLassoCV(RegressorMixin, StochasticSolverMixin, BaseEstimator):
    """Constrained Lasso with the l1 radius chosen by cross-validation along a path.

    For each fold, the radii are fitted in increasing order, each fit warm-started at the
    previous solution (feasible for the larger ball), and the weighted validation MSE is
    recorded; the radius with the lowest mean MSE is refitted on all the data.  This is the
    constrained-form analogue of :class:`sklearn.linear_model.LassoCV`.

    Read more in the :doc:`User Guide </user_guide/constrained_lasso>`.

    Parameters
    ----------
    alpha : float, default=1.0
        Ridge strength, as in :class:`ConstrainedLasso`.
    radii : array-like of float or None, default=None
        Radii to try.  None: ``n_radii`` values log-spaced from ``eps * r_max`` to
        ``r_max``, where r_max is the l1 norm of the unconstrained (ridge) solution.
    n_radii : int, default=30
    eps : float, default=1e-3
        Smallest radius relative to r_max.
    cv : int, cross-validation generator or iterable, default=5
    solver : str, default='fista'
        Solver of every fit along the path (see :class:`ConstrainedLasso`).
    max_iter, tol, eta0, lam, fit_intercept, verbose, random_state, callback
        As in :class:`ConstrainedLasso` (passed to every fit).
    n_jobs : int or None, default=None
        Folds run in parallel (threads: the kernels and BLAS release the GIL).

    Attributes
    ----------
    With a 2-d ``y`` of n_targets columns, every output is an independent problem with
    its own path and its own chosen radius; the attributes gain a leading n_targets axis.

    radius_ : float or ndarray of shape (n_targets,)
        The chosen radius.
    radii_ : ndarray of shape (n_radii,) or (n_targets, n_radii)
        The path, increasing.
    mse_path_ : ndarray of shape (n_radii, n_folds) or (n_targets, n_radii, n_folds)
        Validation mean squared error per radius and fold.
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
    intercept_ : float or ndarray of shape (n_targets,)
    n_iter_ : int or ndarray of shape (n_targets,)
        Iterations of the final refit.
    n_projections_, dual_gap_, history_ :
        Of the final refit (per output).
    estimator_ : ConstrainedLasso
        The refitted estimator (single output).
    estimators_ : list of ConstrainedLasso
        The refitted estimators, one per output (multi-output only).
    n_features_in_ : int

    See Also
    --------
    ConstrainedLasso : one fit at a given radius.
    sklearn.linear_model.LassoCV : the penalized form's cross-validation.

    References
    ----------
    J. Chen, T. Yang, Q. Lin, L. Zhang and Y. Chang, "Optimal Stochastic Strongly Convex
    Optimization with a Logarithmic Number of Projections" (arXiv:1304.5504). The
    constrained Lasso of section 5.1 (eq. 22), whose radius this estimator selects.

    Examples
    --------
    >>> import numpy as np
    >>> from skstoch import ConstrainedLassoCV
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(200, 10); y = X[:, 0] - X[:, 1] + 0.1 * rng.randn(200)
    >>> cv = ConstrainedLassoCV(alpha=0.0, n_radii=10).fit(X, y)
    >>> bool(0 < cv.radius_ <= cv.radii_[-1])
    True
    """

    _parameter_constraints = {
        **STOCHASTIC_SOLVER_CONSTRAINTS,
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "radii": ["array-like", None],
        "n_radii": [Interval(Integral, 1, None, closed="left")],
        "eps": [Interval(Real, 0, 1, closed="neither")],
        "cv": ["cv_object"],
        "solver": [StrOptions(set(SOLVERS))],
        "eta0": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "lam": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "fit_intercept": ["boolean"],
        "n_jobs": [Integral, None],
    }

    def __init__(self, alpha=1.0, *, radii=None, n_radii=30, eps=1e-3, cv=5, solver="fista",
                 max_iter=None, tol=1e-4, eta0="auto", lam="auto", fit_intercept=True,
                 n_jobs=None, verbose=0, random_state=None, callback=None):
        self.alpha = alpha
        self.radii = radii
        self.n_radii = n_radii
        self.eps = eps
        self.cv = cv
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.eta0 = eta0
        self.lam = lam
        self.fit_intercept = fit_intercept
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback

    def _estimator_params(self):
        return dict(alpha=self.alpha, solver=self.solver, max_iter=self.max_iter,
                    tol=self.tol, eta0=self.eta0, lam=self.lam,
                    fit_intercept=self.fit_intercept, verbose=self.verbose,
                    random_state=self.random_state, callback=self.callback)

    def fit(self, X, y, sample_weight=None):
        """Choose the radius by cross-validation, then refit on all the data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Each column is an independent problem with its own radius.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             order="C", y_numeric=True, multi_output=True)
        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        if np.any(sw < 0) or sw.sum() <= 0:
            raise ValueError("sample_weight must be nonnegative and not all zero.")
        if self.radii is not None:
            radii = np.sort(np.asarray(self.radii, dtype=np.float64).ravel())
            if radii.size == 0 or not np.all(np.isfinite(radii)) or np.any(radii < 0):
                raise ValueError(
                    f"radii must be a non-empty array of finite nonnegative floats, "
                    f"got {self.radii!r}.")
        cv = check_cv(self.cv)
        folds = list(cv.split(X, y))
        params = self._estimator_params()
        targets = [y] if y.ndim == 1 else [np.ascontiguousarray(y[:, k])
                                           for k in range(y.shape[1])]
        fits = [self._fit_one(X, t, sw, folds, params) for t in targets]
        if y.ndim == 1:
            (self.radii_, self.mse_path_, self.radius_, est), = fits
            self.estimator_ = est
            self.coef_ = est.coef_
            self.intercept_ = est.intercept_
            self.n_iter_ = est.n_iter_
            self.n_projections_ = est.n_projections_
            self.dual_gap_ = est.dual_gap_
            self.history_ = est.history_
            return self
        # multi-output: independent problems, one radius chosen per output
        self.radii_ = np.array([f[0] for f in fits])
        self.mse_path_ = np.array([f[1] for f in fits])
        self.radius_ = np.array([f[2] for f in fits])
        self.estimators_ = [f[3] for f in fits]
        self.coef_ = np.array([e.coef_ for e in self.estimators_])
        self.intercept_ = np.array([e.intercept_ for e in self.estimators_])
        self.n_iter_ = np.array([e.n_iter_ for e in self.estimators_])
        self.n_projections_ = np.array([e.n_projections_ for e in self.estimators_])
        self.dual_gap_ = np.array([e.dual_gap_ for e in self.estimators_])
        self.history_ = [e.history_ for e in self.estimators_]
        return self

    def _fit_one(self, X, y, sw, folds, params):
        """The path, the CV choice and the refit of one output."""
        if self.radii is None:
            r_max = _radius_max(X, y, sw, self.alpha, self.fit_intercept)
            if r_max <= 0:
                radii = np.zeros(1)
            else:
                radii = r_max * np.logspace(math.log10(self.eps), 0, self.n_radii)
        else:
            radii = np.sort(np.asarray(self.radii, dtype=np.float64).ravel())
        mse = Parallel(n_jobs=self.n_jobs, prefer="threads")(
            delayed(_path_fold)(X, y, sw, train, test, radii, params)
            for train, test in folds)
        mse_path = np.column_stack(mse)
        radius = float(radii[int(np.argmin(mse_path.mean(axis=1)))])
        est = ConstrainedLasso(radius=radius, **params)
        est.fit(X, y, sample_weight=sw)
        return radii, mse_path, radius, est

    def predict(self, X):
        """Predict with the refitted model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                          reset=False)
        if np.ndim(self.coef_) == 2:
            return np.asarray(X @ self.coef_.T) + self.intercept_
        return np.asarray(X @ self.coef_).ravel() + self.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        return tags
