"""Driver of CGVR for the multinomial log loss (one objective over all K classes, as
scikit-learn's LogisticRegression), used by :class:`~skstoch.CGVRClassifier` when
``loss='log_loss'`` and there are more than two classes.

``solve`` minimises over ``W`` (K, d) and ``b`` (K,)::

    f(W, b) = (1/n) sum_i s_i [log sum_k exp(z_ik) - z_{i y_i}] + (alpha/2) ||W||_F^2
              (+ (alpha/2) ||b||^2),      z_ik = X_i . W_k + b_k

with the same algorithms as the binary driver (``skstoch._solvers.cgvr``): Algorithm 3 of
Jin et al. (SVRG outer loop, nonlinear CG inner steps along variance-reduced mini-batch
gradients with a strong-Wolfe line search on the batch margins ``Z_S + a Q_S``), full-batch
CG and the fixed-step SVRG baselines, with the same safeguard, stopping rule
(``max |grad f| <= tol``) and history columns.  The iterate is the (K, d + 1) matrix
``[W | b]``.  The inner loop is vectorised NumPy over the batch (O(|S| (d + K)) per step;
each line-search trial is one compiled pass over the batch margins, ``line_sums``);
mini-batches come from NumPy's Philox generator keyed by (seed, stream), so a fit is
reproducible for a given ``random_state``.  On a Dask array the same loops run on gathered
samples (:mod:`.dask_multinomial`, through ``run_solve`` and the ``_Run`` hooks).
"""
from functools import partial

import numpy as np
import scipy.sparse as sp

from .._fast._multinomial import (MultinomialTables, line_sums, rows_times,
                                  rows_transpose_times, softmax_along, softmax_gradient)
from ..utils import make_dataset
from ..utils._dataset import checked_row_sqnorms, float64_row_blocks
from ..utils._validation import canonical_csr
from ._line_search import strong_wolfe
from ._monitor import check_finite_iterate
from ._result import SolverResult
from ._stationarity import SOFTMAX_ROUNDING, column_moments, gradient_ratio
from ._svrg import svrg
from .cgvr import (INNER_COLUMNS_AT_START, _cg_beta, _cg_loop, _safeguard_rejects,
                   check_outer_divergence, row_bound, shrink_first_step, warn_if_far_after_tol)

CRITERION = "max |gradient|"
STATS = ("restarts", "skipped_steps", "line_search_evals")
# rows per block of a full pass's softmax (its temporaries are O(block K), not O(n))
_BLOCK = 4096


def _softmax_lse(Z, out=None):
    """Row-wise softmax of Z (in ``out``, which may be Z) and log-sum-exp (stable)."""
    m = Z.max(axis=1, keepdims=True)
    E = np.subtract(Z, m, out=out)
    np.exp(E, out=E)
    s = E.sum(axis=1, keepdims=True)
    E /= s
    return E, (m + np.log(s))[:, 0]


def _softmax_losses(Z, y):
    """Turn Z's rows into their softmax probabilities in place, a block of rows at a time
    (the same values as one :func:`_softmax_lse` over all rows), and return each row's loss
    ``lse(z_i) - z_{i y_i}``."""
    n = Z.shape[0]
    out = np.empty(n)
    head = np.arange(min(n, _BLOCK))
    for start in range(0, n, _BLOCK):
        block = slice(start, start + _BLOCK)
        Zb = Z[block]
        zy = Zb[head[:Zb.shape[0]], y[block]]
        _, lse = _softmax_lse(Zb, out=Zb)
        np.subtract(lse, zy, out=out[block])
    return out


def softmax(Z):
    """Row-wise softmax (the multinomial model's probabilities)."""
    return _softmax_lse(np.asarray(Z, dtype=np.float64))[0]


def _widens(X):
    """A dense float32 mini-batch is read in float64 row blocks (numpy would cast all of it to
    float64 in every product with a float64 operand); CSR data is cast by scipy."""
    return X.dtype != np.float64 and not sp.issparse(X)


def _row_pointers(X):
    """A CSR X's indptr as the kernels read it: int32 or int64 as stored (no copy)."""
    return X.indptr if X.indptr.dtype in (np.int32, np.int64) else X.indptr.astype(np.int64)


def _full_pass_tables(X):
    """The kernels' view of a float32 X (dense or CSR, its values shared) for the full
    passes, which read it in place (``rows_times``, ``rows_transpose_times``); None for
    another dtype (NumPy/BLAS or scipy products)."""
    if X.dtype != np.float32 or X.shape[0] == 0:
        return None
    if sp.issparse(X):
        X = canonical_csr(X)
        rows = (X.data, X.indices.astype(np.int32, copy=False),
                _row_pointers(X))
    else:
        rows = (np.ascontiguousarray(X).ravel(), np.empty(0, np.int32), np.empty(0, np.int64))
    return MultinomialTables(*rows, X.shape[1], np.ones(0), 0, 1, 0.0, 0.0, False, False)


class _Problem:
    """Rows, class codes, weights and penalties of a multinomial fit."""

    def __init__(self, X, y, sample_weight, n_classes, alpha, alpha_b, fit_intercept):
        self.X = X
        self.n, self.d = X.shape
        self.K = n_classes
        self.y = np.asarray(y, dtype=np.intp)
        self.sw = np.asarray(sample_weight, dtype=np.float64)
        self.alpha, self.alpha_b, self.fit_intercept = alpha, alpha_b, fit_intercept
        self.tables = _full_pass_tables(X)

    def margins(self, x, rows=None):
        if rows is None and self.tables is not None:
            Z = np.empty((self.n, self.K))
            rows_times(self.tables, np.ascontiguousarray(x[:, :-1].T), Z)
            Z += x[:, -1]
            return Z
        Xr = self.X if rows is None else self.X[rows]
        if _widens(Xr):
            return np.vstack([np.asarray(B @ x[:, :-1].T) for _, B in float64_row_blocks(Xr)]) + x[:, -1]
        return np.asarray(Xr @ x[:, :-1].T) + x[:, -1]

    def reg_dot(self, a, b):
        out = self.alpha * float(np.vdot(a[:, :-1], b[:, :-1]))
        return out + self.alpha_b * float(a[:, -1] @ b[:, -1])

    def reg_grad(self, x):
        g = self.alpha * x
        g[:, -1] = self.alpha_b * x[:, -1]
        return g

    def scatter(self, R, rows=None):
        """[R^T X_rows | sum R] with the intercept column zeroed without an intercept."""
        G = np.empty((self.K, self.d + 1))
        G[:, -1] = R.sum(axis=0) if self.fit_intercept else 0.0
        if rows is None and self.tables is not None:
            out = np.empty((self.d, self.K))
            rows_transpose_times(self.tables, np.ascontiguousarray(R, dtype=np.float64), out)
            G[:, :-1] = out.T
            return G
        Xr = self.X if rows is None else self.X[rows]
        if _widens(Xr):
            G[:, :-1] = 0.0
            for b, B in float64_row_blocks(Xr):
                G[:, :-1] += R[b].T @ B
        else:
            G[:, :-1] = np.asarray(Xr.T @ R).T if sp.issparse(Xr) else R.T @ Xr
        return G

    def objective_gradient(self, x):
        """f(x), grad f(x) and the softmax probabilities P (n, K) at x."""
        P = self.margins(x)
        losses = _softmax_losses(P, self.y)     # the (n, K) margins' memory holds P
        loss = float(self.sw @ losses) / self.n
        if self.tables is not None:
            # the kernel forms each row's residual s_i (p_i - e_{y_i}) as it reads the row
            # (no (n, K) residual table), the same values as ``scatter`` of the table
            G = np.empty((self.K, self.d + 1))
            data, sums = np.empty((self.d, self.K)), np.empty(self.K)
            softmax_gradient(self.tables, P, self.y, np.divide(self.sw, self.n, out=losses),
                             data, sums)
            G[:, :-1] = data.T
            G[:, -1] = sums if self.fit_intercept else 0.0
        else:
            R = P.copy()
            R[np.arange(self.n), self.y] -= 1.0
            R *= (self.sw / self.n)[:, None]
            G = self.scatter(R)
        return loss + 0.5 * self.reg_dot(x, x), G + self.reg_grad(x), P


class _Line:
    """phi(a) = sum_S s_k [lse(Z_k + a Q_k) - (Z + a Q)_{k y_k}] + a r0 + a^2 rpp / 2 + a lin
    (the batch sums in one compiled pass over Z and Q, ``line_sums``); with ``changes``,
    phi(a) - phi(0) summed as the rows' loss changes."""

    def __init__(self, Z, Q, y, s, r0, rpp, lin):
        self.Z, self.Q, self.y, self.s = Z, Q, y, s
        self.r0, self.rpp, self.lin = r0, rpp, lin
        self.n_evals = 0
        self.changes = False

    def __call__(self, a):
        self.n_evals += 1
        value, deriv = line_sums(self.Z, self.Q, self.y, self.s, a, self.changes)
        value += a * (self.r0 + 0.5 * a * self.rpp + self.lin)
        return value, deriv + self.r0 + a * self.rpp + self.lin


def solve(X, y, sample_weight, n_classes, params, monitor, seed, coef_init=None,
          intercept_init=None, state=None):
    """Fit the multinomial model by CGVR (or full-gradient CG with ``solver='cg'``).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Not copied: the full passes read a float32 X in place (fused-type kernels of
        ``skstoch._fast._multinomial``), a dense float32 mini-batch in float64 row blocks.
    y : ndarray of int of shape (n_samples,)
        The classes, encoded 0..K-1.
    sample_weight : ndarray of shape (n_samples,)
    n_classes : int
    params : skstoch._solvers.cgvr.CGVRParams
    monitor : FitMonitor
    seed : int
    coef_init, intercept_init : ndarray or None
        Warm start (K, d) and (K,).
    state : dict or None
        The previous fit's ``SolverResult.state``.

    Returns
    -------
    SolverResult
        ``x`` the (K, d) coefficients, ``intercept`` the (K,) intercepts.
    """
    alpha_b = params.alpha if params.fit_intercept and params.regularize_intercept else 0.0
    prob = _Problem(X, y, sample_weight, n_classes, params.alpha, alpha_b,
                    params.fit_intercept)
    run = _Run(prob, params, monitor, state, seed)
    run.row_bound = row_bound(checked_row_sqnorms(make_dataset(X, float32=True)), prob.sw)
    loop = (partial(_cg_loop, line_search=_full_line_search) if params.solver == "cg"
            else _outer_loop)
    result = run_solve(run, loop, n_classes, prob.d, coef_init, intercept_init)
    if result.converged and not monitor.stopped_by_callback:
        warn_if_far_after_tol(_gradient_ratio(prob, result), monitor.solver_name, params.tol)
    return result


def _gradient_ratio(prob, result):
    """:func:`._stationarity.gradient_ratio` at the fit (three passes over X: the gradients
    at the fit and at zero, the columns' moments)."""
    d, K = prob.d, prob.K
    x = np.hstack([result.x, np.reshape(result.intercept, (K, 1))])
    G, G0 = (prob.objective_gradient(point)[1] for point in (x, np.zeros((K, d + 1))))
    return stacked_gradient_ratio(G, G0, result.x, column_moments(prob.X),
                                  prob.fit_intercept)


def stacked_gradient_ratio(G, G0, W, moments, fit_intercept):
    """:func:`._stationarity.gradient_ratio` from the (K, d + 1) gradients ``[W | b]`` at
    the fit (``G``) and at zero (``G0``), ``W`` of shape (K, d)."""
    d = W.shape[1]
    return gradient_ratio((G[:, :d].T, G[:, d]), (G0[:, :d].T, G0[:, d]), W.T, 0.0, moments,
                          fit_intercept, negligible=SOFTMAX_ROUNDING)


def run_solve(run, loop, K, d, coef_init, intercept_init):
    """``loop(run, x)`` from the start point (``coef_init`` and ``intercept_init``, or
    ``params.init``), the finish record and the result (shared with the Dask fit)."""
    params, monitor = run.params, run.monitor
    x = np.zeros((K, d + 1))
    if coef_init is not None:
        x[:, :d] = coef_init
        if params.fit_intercept:
            x[:, d] = intercept_init
    elif params.init == "uniform":
        x[:] = run.rng.random((K, d + 1))
        if not params.fit_intercept:
            x[:, d] = 0.0
    # a line search may try steps whose margins overflow: those trials fail their Wolfe
    # test, and an iterate that is not finite raises DivergenceError (check_finite_iterate)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        result = loop(run, x)
    monitor.finish(converged=result.converged, criterion=CRITERION, value=result.criterion,
                   tol=params.tol, max_iter=params.max_iter,
                   stalled_at=result.extra.get("stalled_at"))
    xf = result.x
    return SolverResult(
        x=xf[:, :d].copy(),
        intercept=xf[:, d].copy() if params.fit_intercept else np.zeros(K),
        n_iter=result.n_iter, converged=result.converged, criterion=result.criterion,
        criterion_name=CRITERION, state={"h": run.h, "batch": run.batch, "cap": run.cap},
        extra={"stats": dict(run.stats), "passes": run.passes, "step_size": run.step_size})


class _Run:
    """Counters, adaptive settings and the hooks of the shared SVRG outer loop."""

    def __init__(self, prob, params, monitor, state, seed):
        self.prob, self.params, self.monitor = prob, params, monitor
        self.n = prob.n
        self.tol = params.tol
        self.rng = np.random.Generator(np.random.Philox(key=[seed, 2**32 + 7]))
        self.stats = dict.fromkeys(STATS, 0)
        self.rejected = 0
        self.passes = 0.0
        self.step_size = 0.0
        self.step_init, self.rescales = params.step_init, 0
        self.crit = np.inf
        shape = (prob.K, prob.d + 1)
        if state is not None and np.shape(state.get("h")) == shape:
            self.h = state["h"]
            self.batch = min(max(params.batch_size, state["batch"]),
                             max(params.batch_size, self.n))
            self.cap = min(params.step_max, state["cap"])
        else:
            self.h, self.batch, self.cap = None, params.batch_size, params.step_max
        self.batch_limit = self.n     # the safeguard doubles the batch up to this

    def full_gradient(self, x):
        objective, G, P = self.prob.objective_gradient(x)
        self.passes += 1.0
        if self.h is None:
            self.h = G.copy()
        return objective, (G, P)

    def inner_data(self, snapshot, x0, n_rows):
        """The gradient and snapshot probabilities an inner loop reading about ``n_rows``
        rows of ``self.prob`` runs on: all rows here (a Dask fit sets ``prob`` to a gathered
        sample and returns the probabilities of its rows)."""
        return snapshot

    def inner_passes(self, rows):
        """Passes counted for ``rows`` rows read by an inner loop."""
        return rows / self.n

    def columns(self):
        """More history columns (a Dask fit's gathers)."""
        return {}

    def gradient_max(self, objective, snapshot):
        self.crit = float(np.max(np.abs(snapshot[0])))
        return self.crit

    def record(self, k, x, objective, snapshot=None, step=None):
        w = x[:, :-1]
        check_outer_divergence(self, k, objective)
        if k == 0:
            return self.monitor.record(iteration=0, objective=objective, grad_max=self.crit,
                                       step_size=0.0, passes=self.passes, x=w,
                                       **INNER_COLUMNS_AT_START, **self.columns())
        s = self.stats
        return self.monitor.record(
            iteration=k, objective=objective, grad_max=self.crit, step_size=self.step_size,
            passes=self.passes, restarts=s["restarts"], skipped_steps=s["skipped_steps"],
            line_search_evals=s["line_search_evals"], rejected_epochs=self.rejected,
            step_cap=self.cap, batch=self.batch, x=w, **self.columns())

    def rows(self):
        """A mini-batch of ``self.prob``'s rows (uniform with replacement), or None for all
        of them."""
        n = self.prob.n
        if self.batch >= n:
            return None
        return self.rng.integers(0, n, size=self.batch)


def _outer_loop(run, x):
    """Algorithm 3 (``solver='cgvr'``) or the fixed-step SVRG baselines, in the shared SVRG
    outer loop; with ``safeguard`` a CGVR epoch that does not decrease f is discarded."""
    params = run.params
    cgvr = params.solver == "cgvr"
    steps = np.zeros(params.inner_iter)
    g_out = [None]

    def inner_loop(x, x0, snapshot, step, epoch):
        batch = run.batch if cgvr or params.solver == "minibatch_svrg" else 1
        G0, P0 = run.inner_data(snapshot, x0, params.inner_iter * batch)
        base = G0 - run.prob.reg_grad(x0)
        if not cgvr:
            return _svrg_inner(run, x, base, P0, step)
        g = (run.h if params.restart == "h" else G0).copy()
        x, g = _cg_inner(run, x, base, P0, g, steps)
        shrink_first_step(run, steps)
        g_out[0] = g
        run.step_size = float(np.mean(steps))
        if not params.safeguard:
            check_finite_iterate(x, run.monitor.solver_name, f"outer iteration {epoch + 1}")
        return x

    def accept(objective, previous):
        if not cgvr:
            return True
        if _safeguard_rejects(run, objective, previous, steps):
            return False
        run.h = g_out[0]
        return True

    return svrg(x, run.full_gradient, inner_loop, step_size="fixed", eta0=params.eta0,
                inner_iter=params.inner_iter, max_iter=params.max_iter, tol=params.tol,
                monitor=run.monitor, stop=run.gradient_max, accept=accept, record=run.record)


def _batch(run, rows, P0):
    """Class codes, weights s_k / |S| and snapshot probabilities of the rows (None: all)."""
    prob = run.prob
    if rows is None:
        return prob.y, prob.sw / prob.n, P0
    return prob.y[rows], prob.sw[rows] / len(rows), P0[rows]


def _cg_inner(run, x, base, P0, g, steps):
    """m CG steps along variance-reduced gradients (Algorithm 3's inner loop)."""
    params, prob = run.params, run.prob
    mode = params.line_search
    p = -g
    tau = run.rng.integers(params.inner_iter) if params.w_selection == "random" else -1
    x_sel = None
    for t in range(params.inner_iter):
        if t == tau:
            x_sel = x.copy()
        rows = run.rows()
        yS, sS, P0S = _batch(run, rows, P0)
        ZS, QS = prob.margins(x, rows), prob.margins(p, rows)
        line = _open_line(run, x, p, base, rows, ZS, QS, yS, sS, P0S, mode)
        phi0, dphi0 = line(0.0)
        if not dphi0 < 0:
            run.stats["restarts"] += 1
            p = -g
            QS = prob.margins(p, rows)
            line = _open_line(run, x, p, base, rows, ZS, QS, yS, sS, P0S, mode)
            phi0, dphi0 = line(0.0)
        a = _wolfe_step(run, line, phi0, dphi0, run.cap)
        steps[t] = a
        x = x + a * p
        PS = np.empty_like(ZS)
        softmax_along(ZS, QS, a, PS)
        g_new = base + prob.reg_grad(x) + prob.scatter((PS - P0S) * sS[:, None], rows)
        beta = 0.0 if params.beta == "none" else _cg_beta(params.beta, g_new, g, p)
        p = -g_new + beta * p
        g = g_new
        if not np.vdot(p, g) < 0:
            run.stats["restarts"] += 1
            p = -g
        run.passes += run.inner_passes(2 * (prob.n if rows is None else len(rows)))
    return (x_sel if x_sel is not None else x), g


def _open_line(run, x, p, base, rows, ZS, QS, yS, sS, P0S, mode):
    """The line-search objective along p: f_S ('batch'), f_S plus the SVRG correction
    ('vr': its gradient is the VR gradient) or f itself ('full')."""
    prob = run.prob
    r0, rpp = prob.reg_dot(x, p), prob.reg_dot(p, p)
    if mode == "full":
        run.passes += 2.0
        return _Line(prob.margins(x), prob.margins(p), prob.y,
                     prob.sw / prob.n, r0, rpp, 0.0)
    lin = 0.0
    if mode == "vr":
        # (P0_S - Y_S) . Q_S, Y_S the one-hot targets
        batch_dot = np.vdot(P0S * sS[:, None], QS) - sS @ QS[np.arange(len(yS)), yS]
        lin = float(np.vdot(base, p)) - float(batch_dot)
    return _Line(ZS, QS, yS, sS, r0, rpp, lin)


def _svrg_inner(run, x, base, P0, step):
    """m fixed steps x <- x - step g_VR(x) (one row for 'svrg', a batch otherwise)."""
    params, prob = run.params, run.prob
    batch = 1 if params.solver == "svrg" else run.batch
    for _ in range(params.inner_iter):
        rows = run.rng.integers(0, prob.n, size=batch)
        _, sS, P0S = _batch(run, rows, P0)
        PS, _ = _softmax_lse(prob.margins(x, rows))
        x = x - step * (base + prob.reg_grad(x) + prob.scatter((PS - P0S) * sS[:, None], rows))
    check_finite_iterate(x, run.monitor.solver_name, "an outer iteration")
    run.passes += run.inner_passes(params.inner_iter * batch)
    run.step_size = step
    return x


def _wolfe_step(run, line, phi0, dphi0, cap):
    """The strong-Wolfe step along a descent direction of ``line`` (0 if none; counted)."""
    params = run.params

    def search(phi0):
        return strong_wolfe(line, phi0, dphi0, params.c1, params.c2, run.step_init,
                            params.ls_max_iter, params.zoom_max_iter, cap)[0]

    a = 0.0
    if dphi0 < 0:
        a = search(phi0)
        if a == 0.0:
            # no step decreased phi: near the optimum its decrease is below the rounding
            # of phi(0), a sum over many rows.  Search again on the loss changes (as the
            # binary kernel does); away from it the first search suffices
            line.changes = True
            a = search(0.0)
    run.stats["line_search_evals"] += line.n_evals
    if a == 0.0:
        run.stats["skipped_steps"] += 1
    return a


def _full_line_search(run, x, p):
    """Strong-Wolfe step along p on f itself (the full-batch CG baseline)."""
    prob = run.prob
    line = _Line(prob.margins(x), prob.margins(p), prob.y, prob.sw / prob.n,
                 prob.reg_dot(x, p), prob.reg_dot(p, p), 0.0)
    phi0, dphi0 = line(0.0)
    return _wolfe_step(run, line, phi0, dphi0, run.params.step_max)
