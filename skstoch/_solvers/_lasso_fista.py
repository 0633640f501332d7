"""The exact solvers of ConstrainedLasso: FISTA (:mod:`._fista`) with the l1-ball
projection, on the centered design (:func:`fista_full`) or on working sets solved on their
Gram matrices (:func:`fista_working_set`), both stopped on the Frank-Wolfe duality gap.
"""
import math

import numpy as np
import scipy.sparse as sp

from ._fista import Point, fista
from ._lasso_problem import (centered_matvecs, frank_wolfe_gap, gram_block, scale_error,
                             sparse_gram_block)
from ._projections import project_l1_ball
from ._result import SolverResult
from ._step_size import rayleigh_power_iteration

# Largest working set solved on its Gram matrix (k x k doubles); beyond it, plain FISTA.
GRAM_MAX_FEATURES = 4096
# Initial working-set size.
WS_INITIAL = 256
# The working sets' FISTA recomputes its tracked images H x (two k x k mat-vecs) every this
# many iterations: the recurrence's rounding drift otherwise grows without bound (see
# _fista.fista's refresh_every).
REFRESH_EVERY = 1000
# A CSR X's working-set columns are kept (X w from them, not from all of X) when the set
# holds at most 1/8 of the features: about nnz / 8 entries of 12 bytes, below a fifth of a
# float32 X's bytes.
COLUMNS_MAX_FRACTION = 8


def gram_fits(X):
    """Whether the d x d Gram matrix (float64) of all of X's columns may be formed: at
    most ``GRAM_MAX_FEATURES`` columns, or no more bytes than X's stored values (a tall X:
    the Gram matrix then never takes more memory than the data)."""
    d = X.shape[1]
    values = X.data if sp.issparse(X) else X
    return d <= GRAM_MAX_FEATURES or 8 * d * d <= values.nbytes


class CenteredLeastSquares:
    """Smooth part 1/(2S) ||W^1/2 (Xc w - yc)||^2 + alpha ||w||^2 of an :class:`LSProblem`
    with the intercept eliminated (centered design Xc, never formed): image z = Xc w, cached
    value and residual, so one iteration costs two passes over X (X^T r at the extrapolated
    point, X x at the new point; X y follows by linearity)."""

    def __init__(self, problem):
        self.problem = problem
        self.mv, self.rmv = centered_matvecs(problem)
        self.yc = problem.y - problem.y_mean

    def point(self, x, z=None):
        p = self.problem
        if z is None:
            z = self.mv(x)
        r = z - self.yc
        value = 0.5 * float(p.sw @ (r * r)) / p.S + p.alpha * float(x @ x)
        return Point(x, z, value, r)

    def gradient(self, point):
        p = self.problem
        return self.rmv(p.sw * point.aux) / p.S + 2.0 * p.alpha * point.x

    def trial(self, y, grad, x_new, L):
        new = self.point(x_new)
        diff = x_new - y.x
        bound = y.value + float(grad @ diff) + 0.5 * L * float(diff @ diff)
        return new, not (new.value > bound + 1e-12 * abs(y.value))

    def check(self, point, L):
        if not (math.isfinite(point.value) and math.isfinite(L)):
            raise scale_error(self.problem.X, "the least-squares objective")


def gram_times(H, v):
    """H v for the symmetric H.  With at least 512 columns and at most a tenth of v
    non-zero (FISTA's iterates on the l1 ball are sparse), only the rows of v's non-zeros
    are read: on one thread 0.08 times the full mat-vec's time at 2% non-zeros of 4200
    and 0.55 to 0.73 at 10%, but 2.4 times at 25% and 1.8 to 3.3 times below 256 columns."""
    if v.size >= 512:
        nz = np.flatnonzero(v)
        if 10 * nz.size <= v.size:
            return v[nz] @ H[nz]
    return H @ v


class Quadratic:
    """Smooth part 1/2 v^T H v - q^T v of a working set, with the Frank-Wolfe gap of the
    l1 ball as its stopping criterion: image z = H v, updated by one k x k mat-vec per
    iteration (H diff) and recomputed exactly once the gap passes ``threshold`` (no
    recurrence drift in the certificate)."""

    def __init__(self, H, q, radius, threshold):
        self.H, self.q, self.radius, self.threshold = H, q, radius, threshold

    def point(self, x, z=None):
        return Point(x, gram_times(self.H, x) if z is None else z)

    def gradient(self, point):
        return point.z - self.q

    def trial(self, y, grad, x_new, L):
        diff = x_new - y.x
        Hd = gram_times(self.H, diff)
        dd = float(diff @ diff)
        return Point(x_new, y.z + Hd), not (float(diff @ Hd) > L * dd * (1.0 + 1e-12))

    def check(self, point, L):
        pass

    def gap(self, point):
        value = frank_wolfe_gap(point.z - self.q, point.x, self.radius)
        if value <= self.threshold:
            point.z = gram_times(self.H, point.x)
            value = frank_wolfe_gap(point.z - self.q, point.x, self.radius)
        return value


def _lipschitz_estimate(problem, n_iter=30, seed=0):
    """Power-iteration estimate of the largest eigenvalue of Xc^T W Xc / S + 2 alpha."""
    mv, rmv = centered_matvecs(problem)
    d = problem.X.shape[1]
    lam = rayleigh_power_iteration(lambda v: rmv(problem.sw * mv(v)) / problem.S,
                                   np.random.RandomState(seed).standard_normal(d), n_iter)
    return max(lam, 0.0) + 2.0 * problem.alpha


def _largest_eigenvalue(H, n_iter=30):
    """Power iteration (k x k mat-vecs; a LAPACK eigensolver was slower under load).
    An underestimate is caught by the backtracking of :func:`fista_gram`."""
    v0 = 1.0 + 0.1 * np.random.RandomState(0).standard_normal(H.shape[0])
    return rayleigh_power_iteration(lambda v: H @ v, v0, n_iter) * 1.01


def _project(radius):
    return lambda v, step: project_l1_ball(v, radius)


def fista_full(problem, w0, *, max_iter, tol, monitor, gap_every=5, offset=0):
    """FISTA on the l1 ball, the intercept eliminated exactly (centered design).

    Stops when the Frank-Wolfe gap is <= tol * F(0), evaluated (and recorded) every
    ``gap_every`` iterations (one more pass over X).  ``offset`` counts the iterations a
    caller ran before (added to the records' ``iteration``).
    """
    smooth = CenteredLeastSquares(problem)
    with np.errstate(over="ignore", invalid="ignore"):
        L = _lipschitz_estimate(problem)
    if not math.isfinite(L):
        raise scale_error(problem.X, "the Lipschitz constant of the least-squares loss")
    L = max(L, 1e-12)
    threshold = tol * problem.f_zero

    def gap(point):
        return frank_wolfe_gap(smooth.gradient(point), point.x, problem.radius)

    def record(it, point, value, lipschitz):
        return monitor.record(epoch=it, iteration=offset + it, objective=point.value,
                              gap=value, relative_gap=problem.relative_gap(value),
                              step_size=1.0 / lipschitz, x=point.x)

    x0 = project_l1_ball(np.asarray(w0, dtype=np.float64), problem.radius)
    result = fista(x0, smooth, _project(problem.radius), gap, lipschitz=L, max_iter=max_iter,
                   threshold=threshold, grow=2.0, max_lipschitz=max(1e30, 1e10 * L),
                   gap_every=gap_every, record=record)
    result.criterion_name = "Frank-Wolfe duality gap"
    result.extra.update(n_projections=result.extra["n_prox"] + 1, n_epochs=result.n_iter,
                        budget_used=result.n_iter, budget=max_iter, threshold=threshold)
    return result


def gram_lipschitz(H):
    """The first step's Lipschitz constant for ``1/2 v^T H v``: H's largest eigenvalue
    (power iteration) with a margin; FloatingPointError when it is not finite."""
    L = _largest_eigenvalue(H) * (1.0 + 1e-10)
    if not math.isfinite(L):
        raise FloatingPointError("the working set's Gram matrix is not finite")
    return L


def fista_gram(H, q, radius, v0, threshold, max_iter, lipschitz=None):
    """FISTA with adaptive restart on min 1/2 v^T H v - q^T v s.t. ||v||_1 <= radius.

    One k x k mat-vec per iteration; the Frank-Wolfe gap comes from the tracked H x.
    ``lipschitz``: :func:`gram_lipschitz` of H when already known (a path of radii on one
    H).  Returns the :class:`SolverResult` of :func:`fista` (``extra["lipschitz"]``: the
    final Lipschitz estimate, the inverse of the last step).
    """
    L = gram_lipschitz(H) if lipschitz is None else lipschitz
    smooth = Quadratic(H, q, radius, threshold)
    x0 = project_l1_ball(np.asarray(v0, dtype=np.float64), radius)
    return fista(x0, smooth, _project(radius), smooth.gap, lipschitz=max(L, 1e-300),
                 max_iter=max_iter, threshold=threshold, grow=1.5, max_lipschitz=1e300,
                 refresh_every=REFRESH_EVERY)


def _grow_working_set(grad, w, ws, ws_size):
    """The next working set and its size: the support of w plus the coordinates of
    largest |gradient|, of size max(ws_size, 2 |support|), doubled when the last set did
    not suffice, quadrupled (up to ``GRAM_MAX_FEATURES``) when w used every feature of it
    (the set was far too small: the constraint need not even be active on it); None when
    it would exceed ``GRAM_MAX_FEATURES``."""
    d = w.shape[0]
    support = np.flatnonzero(w)
    ws_size = min(d, max(ws_size, 2 * len(support)))
    if ws is not None and len(ws) >= ws_size and ws_size < d:
        ws_size = min(d, 2 * ws_size)   # the last working set did not suffice: grow
    if ws is not None and 0 < len(ws) == len(support) and ws_size < d:
        ws_size = min(d, max(ws_size, min(4 * len(ws), GRAM_MAX_FEATURES)))
    if ws_size > GRAM_MAX_FEATURES:
        return None, ws_size
    if ws_size >= d:
        return np.arange(d), ws_size
    score = np.abs(grad)
    score[support] = np.inf
    return np.sort(np.argpartition(-score, ws_size - 1)[:ws_size]), ws_size


def _solve_working_set(problem, ws, q_full, w, threshold, max_iter):
    """FISTA on the working set ``ws`` from w[ws]: its :class:`SolverResult` and, for a
    CSR X when ``ws`` holds at most ``1 / COLUMNS_MAX_FRACTION`` of the features, the columns
    X[:, ws] (CSR, from the Gram matrix's pass; else None)."""
    Xs = None
    with np.errstate(over="ignore", invalid="ignore"):
        if sp.issparse(problem.X) and COLUMNS_MAX_FRACTION * len(ws) <= problem.X.shape[1]:
            H, Xs = sparse_gram_block(problem, ws)
        else:
            H = gram_block(problem, ws)
    H[np.diag_indices_from(H)] += 2.0 * problem.alpha
    if not (np.all(np.isfinite(H)) and np.all(np.isfinite(q_full[ws]))):
        raise scale_error(problem.X, "the Gram matrix X^T X")
    try:
        return fista_gram(H, q_full[ws], problem.radius, w[ws], threshold, max_iter), Xs
    except FloatingPointError:
        raise scale_error(problem.X, "the Gram matrix X^T X") from None


def fista_working_set(problem, w0, *, max_iter, tol, monitor, max_outer=50):
    """Exact solver: FISTA on working sets, each solved on its Gram matrix.

    Outer iteration: one full gradient (two passes over X; one for a CSR X whose last
    working set's columns were kept, none at w = 0) gives the Frank-Wolfe gap
    (stop when <= tol * F(0), after at most ``max_outer`` working sets or ``max_iter``
    FISTA iterations; every outer iteration and the result are recorded, with the step
    1 / L the last working set's FISTA ended with, NaN before the first); the working set
    is the support of w plus the coordinates with the largest |gradient| (size
    max(256, 2 |support|), growing: :func:`_grow_working_set`); FISTA with restart solves the restricted problem on
    its centered Gram matrix (no pass over X).  When the
    working set holds every feature (d <= 256, e.g. the dense 1e6 x 100 benchmark) this is
    FISTA with a cached Gram matrix.  Falls back to :func:`fista_full` when the working
    set would exceed ``GRAM_MAX_FEATURES`` columns.
    """
    full = CenteredLeastSquares(problem)
    d = problem.X.shape[1]
    threshold = tol * problem.f_zero
    q_full = problem.xty if problem.xty is not None else \
        full.rmv(problem.sw * full.yc) / problem.S
    w = project_l1_ball(np.asarray(w0, dtype=np.float64), problem.radius)
    ws_size, ws, Xs = min(d, WS_INITIAL), None, None
    n_inner, n_proj, converged, outer, step = 0, 1, False, 0, np.nan
    while True:
        # the record of every outer iteration, and of the result: the last one
        if not w.any():
            # w = 0: X w = 0 and the gradient is -X^T W yc / S, known (no pass over X)
            point, grad = full.point(w, np.zeros(problem.X.shape[0])), -q_full
        else:
            # w lives on the last working set: X w from its columns (CSR X), not all of X
            z = None if Xs is None else Xs @ w[ws] - float(problem.x_mean @ w)
            point = full.point(w, z)
            grad = full.gradient(point)
        gap = frank_wolfe_gap(grad, w, problem.radius)
        stop = monitor.record(epoch=outer, iteration=n_inner, objective=point.value, gap=gap,
                              relative_gap=problem.relative_gap(gap), step_size=step, working_set_size=0 if ws is None else len(ws),
                              x=w)
        point = None     # its (n,) image and residual go before the next point's are made
        if gap <= threshold:
            converged = True
            break
        if stop or n_inner >= max_iter or outer >= max_outer:
            break
        outer += 1
        ws, ws_size = _grow_working_set(grad, w, ws, ws_size)
        if ws is None:
            result = fista_full(problem, w, max_iter=max(1, max_iter - n_inner), tol=tol,
                                monitor=monitor, offset=n_inner)
            result.n_iter += n_inner
            result.extra["n_projections"] += n_proj
            return result
        Xs = None   # the last set's columns are freed before the next set's are made
        inner, Xs = _solve_working_set(problem, ws, q_full, w, 0.5 * threshold,
                                       max_iter - n_inner)
        n_inner += inner.n_iter
        n_proj += inner.n_iter
        step = 1.0 / inner.extra["lipschitz"]
        w = np.zeros(d)
        w[ws] = inner.x
    return SolverResult(x=w, n_iter=n_inner, converged=converged, criterion=gap,
                        criterion_name="Frank-Wolfe duality gap",
                        extra={"n_projections": n_proj, "n_epochs": outer + 1,
                               "budget_used": n_inner, "budget": max_iter,
                               "threshold": threshold, "gradient": grad})
