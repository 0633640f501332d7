"""CGVR: stochastic conjugate gradient with variance reduction (Jin, Zhang, Huang & Geng,
IEEE TNNLS 2019, arXiv:1710.09979), for L2-regularised linear classification and ridge
regression, with the paper's baselines (full-batch CG, SVRG and mini-batch SVRG).
"""
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._fast import _cgvr
from .._fast._loss import Hinge, LogLoss, SquaredError, SquaredHinge
from .._solvers import SolverResult, check_finite_iterate
from ..base import STOCHASTIC_SOLVER_CONSTRAINTS, BaseLinearClassifier, BaseLinearRegressor

_LOSSES = {
    "log_loss": LogLoss,
    "squared_hinge": SquaredHinge,
    "hinge": Hinge,
    "squared_error": SquaredError,
}


def _cgvr_constraints():
    return {
        **STOCHASTIC_SOLVER_CONSTRAINTS,
        "alpha": [Interval(Real, 0, None, closed="left")],
        "solver": [StrOptions({"cgvr", "cg", "svrg", "minibatch_svrg"})],
        "beta": [StrOptions(set(_cgvr.BETA_RULES))],
        "line_search": [StrOptions(set(_cgvr.LINE_SEARCHES))],
        "inner_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [StrOptions({"sqrt"}), Interval(Integral, 1, None, closed="left")],
        "c1": [Interval(Real, 0, 1, closed="neither")],
        "c2": [Interval(Real, 0, 1, closed="neither")],
        "step_init": [Interval(Real, 0, None, closed="neither")],
        "step_max": [Interval(Real, 0, None, closed="neither"), None],
        "ls_max_iter": [Interval(Integral, 1, None, closed="left")],
        "zoom_max_iter": [Interval(Integral, 0, None, closed="left")],
        "restart": [StrOptions({"h", "full"})],
        "w_selection": [StrOptions({"last", "random"})],
        "init": [StrOptions({"zeros", "uniform"})],
        "eta0": [Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "regularize_intercept": ["boolean"],
        "warm_start": ["boolean"],
    }


class _CGVRMixin:
    """The solver shared by :class:`CGVRClassifier` and :class:`CGVRRegressor`."""

    def _solver_name(self):
        return f"{type(self).__name__}(solver={self.solver!r})"

    def _check_cgvr_params(self):
        if not self.c1 < self.c2:
            raise ValueError(
                f"The line search needs 0 < c1 < c2 < 1; got c1={self.c1!r} and c2={self.c2!r}."
            )
        if self.solver in ("cgvr", "cg") and self.alpha == 0 and self.loss == "hinge":
            raise ValueError(
                "loss='hinge' with alpha=0 has no minimiser along most directions; "
                "use alpha > 0."
            )

    def _prepare_state(self):
        """Keep the restart gradients h_k of the previous fit for ``warm_start``."""
        self._check_cgvr_params()
        self._cgvr_warm = bool(self.warm_start) and hasattr(self, "coef_")
        if not self._cgvr_warm or not hasattr(self, "_cgvr_state"):
            self._cgvr_state = {}

    def _fit_problem(self, problem):
        ds = problem.dataset
        n, d = ds.n_samples, ds.n_features
        D = d + 1
        loss = _LOSSES[self.loss]()
        alpha = float(self.alpha)
        alpha_b = alpha if (self.fit_intercept and self.regularize_intercept) else 0.0
        fit_intercept = bool(self.fit_intercept)
        y = np.ascontiguousarray(problem.y, dtype=np.float64)
        sw = np.ascontiguousarray(problem.sample_weight, dtype=np.float64)
        monitor = problem.monitor
        seed = problem.seed
        batch_stream, init_stream = 2 * problem.stream, 2 * problem.stream + 1

        state = self._cgvr_state
        warm = self._cgvr_warm
        x = np.zeros(D)
        if warm:
            x[:d] = problem.coef_init
            x[d] = problem.intercept_init if fit_intercept else 0.0
        elif self.init == "uniform":
            x[:d] = _cgvr.uniform_vector(seed, init_stream, d)
            if fit_intercept:
                x[d] = _cgvr.uniform_vector(seed, init_stream + 2**32, 1)[0]

        u = np.empty(D)
        dl0 = np.empty(n)
        need_z = self.solver == "cg" or (self.solver == "cgvr" and self.line_search == "full")
        z = np.empty(n) if need_z else None
        obj = _cgvr.full_objective_gradient(ds, y, sw, loss, x, alpha, alpha_b, fit_intercept,
                                            u, dl0, z)
        scale = alpha if alpha > 0 else 1.0
        crit = float(np.max(np.abs(u)))
        passes = 1.0
        stop = monitor.record(epoch=0, objective=obj, grad_max=crit, step_size=0.0,
                              passes=passes, x=x[:d])
        converged = crit <= self.tol * scale
        batch = _batch_size(self.batch_size, n)
        stats = np.zeros(_cgvr.N_STATS, dtype=np.int64)
        steps = np.zeros(self.inner_iter)
        counter = 0
        h = state.get(problem.stream) if warm else None
        if h is None or h.shape != (D,):
            h = u.copy()
        g = np.empty(D)
        p = np.empty(D)
        if need_z:
            q_full = np.empty(n)
            ys_full = sw / n
        else:
            q_full = ys_full = np.empty(1)
            z = np.empty(1)
        step_max = np.inf if self.step_max is None else float(self.step_max)
        first = True
        k = 0
        while not converged and not stop and k < self.max_iter:
            if self.solver == "cgvr":
                g[:] = h if self.restart == "h" else u
                np.negative(g, out=p)
                x0 = x.copy()
                before = stats.copy()
                counter = _cgvr.cgvr_inner(
                    ds, y, sw, loss, x, x0, u, dl0, g, p, self.inner_iter, batch,
                    _cgvr.BETA_RULES[self.beta], _cgvr.LINE_SEARCHES[self.line_search],
                    self.c1, self.c2, self.step_init, step_max, self.ls_max_iter,
                    self.zoom_max_iter, alpha, alpha_b, fit_intercept,
                    self.w_selection == "random", seed, batch_stream, counter, z, q_full,
                    ys_full, stats, steps)
                h = g.copy()
                restarts = int(stats[0] - before[0])
                passes += (2 * self.inner_iter + restarts) * batch / n
                if self.line_search == "full":
                    passes += self.inner_iter + restarts
                step_size = float(np.mean(steps))
            elif self.solver == "cg":
                # full-batch nonlinear CG (the paper's "CG" baseline), restarted with -grad at
                # the first iteration and whenever the direction is not a descent direction
                if first or not float(u @ p) < 0:
                    p = -u
                    first = False
                q = ds.margins(p[:d], p[d])
                r0 = alpha * (x[:d] @ p[:d]) + alpha_b * x[d] * p[d]
                rpp = alpha * (p[:d] @ p[:d]) + alpha_b * p[d] * p[d]
                step, _, _, n_evals, failed = _cgvr.line_search_margins(
                    loss, z, q, y, ys_full, r0, rpp, 0.0, self.step_init, step_max, self.c1,
                    self.c2, self.ls_max_iter, self.zoom_max_iter)
                stats[2] += n_evals
                stats[3] += int(failed)
                if step == 0.0:
                    stats[1] += 1
                x += step * p
                passes += 1.0
                step_size = step
                g[:] = u
            else:
                x0 = x.copy()
                sb = 1 if self.solver == "svrg" else batch
                counter = _cgvr.svrg_inner(ds, y, sw, loss, x, x0, u, dl0, self.inner_iter,
                                           sb, self.eta0, alpha, alpha_b, fit_intercept,
                                           seed, batch_stream, counter)
                passes += self.inner_iter * sb / n
                step_size = self.eta0
            check_finite_iterate(x, monitor.solver_name, f"outer iteration {k + 1}")
            k += 1
            obj = _cgvr.full_objective_gradient(ds, y, sw, loss, x, alpha, alpha_b,
                                                fit_intercept, u, dl0,
                                                z if need_z else None)
            passes += 1.0
            if self.solver == "cg":
                beta = _cg_beta(self.beta, u, g, p)
                p = -u + beta * p
            crit = float(np.max(np.abs(u)))
            converged = crit <= self.tol * scale
            stop = monitor.record(epoch=k, objective=obj, grad_max=crit, step_size=step_size,
                                  passes=passes, restarts=int(stats[0]),
                                  skipped_steps=int(stats[1]),
                                  line_search_evals=int(stats[2]), x=x[:d])
        monitor.finish(converged=converged, criterion="max |gradient| / alpha",
                       value=crit / scale, tol=self.tol, max_iter=self.max_iter)
        state[problem.stream] = h
        intercept = float(x[d]) if fit_intercept else 0.0
        result = SolverResult(x=x, n_iter=k, converged=converged,
                              criterion="max |gradient| / alpha",
                              extra={"stats": stats.copy(), "passes": passes})
        return x[:d].copy(), intercept, k, result


def _cg_beta(rule, g_new, g_old, p):
    y = g_new - g_old
    if rule == "FR":
        num, den = g_new @ g_new, g_old @ g_old
    elif rule in ("PR", "PR+"):
        num, den = g_new @ y, g_old @ g_old
    elif rule == "HS":
        num, den = g_new @ y, p @ y
    elif rule == "DY":
        num, den = g_new @ g_new, p @ y
    else:
        return 0.0
    if not abs(den) > 1e-300:
        return 0.0
    beta = num / den
    if not np.isfinite(beta):
        return 0.0
    if rule == "PR+":
        beta = max(beta, 0.0)
    return float(beta)


def _batch_size(batch_size, n):
    if batch_size == "sqrt":
        return max(1, int(np.sqrt(n)))
    return int(batch_size)


class CGVRClassifier(_CGVRMixin, BaseLinearClassifier):
    """PLACEHOLDER"""

    _parameter_constraints = {
        **_cgvr_constraints(),
        "loss": [StrOptions({"log_loss", "squared_hinge", "hinge", "squared_error"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "n_jobs": [Integral, None],
    }

    def __init__(self, loss="log_loss", *, alpha=1e-4, solver="cgvr", beta="PR+",
                 line_search="vr", inner_iter=50, batch_size="sqrt", c1=1e-4, c2=0.1,
                 step_init=1.0, step_max=None, ls_max_iter=20, zoom_max_iter=20, restart="h",
                 w_selection="last", init="zeros", eta0=1e-3, fit_intercept=True,
                 regularize_intercept=False, max_iter=100, tol=1e-4, class_weight=None,
                 n_jobs=None, warm_start=False, verbose=0, random_state=None, callback=None):
        self.loss = loss
        self.alpha = alpha
        self.solver = solver
        self.beta = beta
        self.line_search = line_search
        self.inner_iter = inner_iter
        self.batch_size = batch_size
        self.c1 = c1
        self.c2 = c2
        self.step_init = step_init
        self.step_max = step_max
        self.ls_max_iter = ls_max_iter
        self.zoom_max_iter = zoom_max_iter
        self.restart = restart
        self.w_selection = w_selection
        self.init = init
        self.eta0 = eta0
        self.fit_intercept = fit_intercept
        self.regularize_intercept = regularize_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback

    def fit(self, X, y, sample_weight=None):
        """FIT"""
        self._validate_params()
        self._prepare_state()
        return super().fit(X, y, sample_weight=sample_weight)


class CGVRRegressor(_CGVRMixin, BaseLinearRegressor):
    """PLACEHOLDER"""

    _parameter_constraints = {
        **_cgvr_constraints(),
        "loss": [StrOptions({"squared_error"})],
    }

    def __init__(self, loss="squared_error", *, alpha=1e-4, solver="cgvr", beta="PR+",
                 line_search="vr", inner_iter=50, batch_size="sqrt", c1=1e-4, c2=0.1,
                 step_init=1.0, step_max=None, ls_max_iter=20, zoom_max_iter=20, restart="h",
                 w_selection="last", init="zeros", eta0=1e-3, fit_intercept=True,
                 regularize_intercept=False, max_iter=100, tol=1e-4, warm_start=False,
                 verbose=0, random_state=None, callback=None):
        self.loss = loss
        self.alpha = alpha
        self.solver = solver
        self.beta = beta
        self.line_search = line_search
        self.inner_iter = inner_iter
        self.batch_size = batch_size
        self.c1 = c1
        self.c2 = c2
        self.step_init = step_init
        self.step_max = step_max
        self.ls_max_iter = ls_max_iter
        self.zoom_max_iter = zoom_max_iter
        self.restart = restart
        self.w_selection = w_selection
        self.init = init
        self.eta0 = eta0
        self.fit_intercept = fit_intercept
        self.regularize_intercept = regularize_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback

    def fit(self, X, y, sample_weight=None):
        """FIT"""
        self._validate_params()
        self._prepare_state()
        return super().fit(X, y, sample_weight=sample_weight)
