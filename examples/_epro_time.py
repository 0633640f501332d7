"""Paper 001, Fig. 1 (right) at the paper's dimension: objective against CPU time (not an
example; used by ``benchmarks/studies/epro_cpu_time.py`` and, in fast mode at a small
dimension, by ``plot_constrained_lasso_epro.py``, whose Fig. 1 (left) runs use its
``Objective``, ``fit`` and LogT baseline ``logt_sgd`` in both modes).

A generated stand-in for KDD Cup 2010 (algebra): a CSR matrix with ``n_features`` columns,
``nnz_per_row`` binary entries per row scaled to unit norm (half from a pool of 100,000
frequent features, half uniform over all columns), a truth on 200 frequent features,
``y = X w + 0.1 noise`` scaled so that the ridge solution (``radius = inf``) has l1 norm
four times the radius: the ball binds.  Each method is fitted at each budget ``T`` as a
separate run (its output at ``T`` is a feasible point, as in the paper), timed with
``time.process_time`` around the fit alone; the objective is evaluated on all rows after the
timed part.
"""
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from skstoch import ConstrainedLasso
from skstoch._solvers import project_l1_ball

import _reproduction  # its users put examples/ on sys.path

L2_REG, RADIUS = 1.0, 0.5        # the paper's alpha and beta
EPRO = "Epro-SGD (paper)"
METHODS = {
    EPRO: dict(solver="epro_sgd_paper"),
    "SGD (paper, projection every step)": dict(solver="sgd", eta0=0.5),
    "OneProj (paper)": dict(solver="oneproj", eta0=0.1, lam=0.03),
    "LogT (paper's baseline, our reading)": None,
}


def make_problem(n_features, n_samples, nnz_per_row=30, seed=0):
    """Sparse unit-norm rows, 200-sparse truth, y scaled so the ridge l1 norm is 4 radius."""
    rng = np.random.RandomState(seed)
    pool = min(100_000, n_features)
    size = n_samples * nnz_per_row
    cols = np.where(rng.rand(size) < 0.5, rng.randint(pool, size=size),
                    rng.randint(n_features, size=size)).astype(np.int32)
    X = sp.csr_matrix((np.ones(size), cols, np.arange(0, size + 1, nnz_per_row)),
                      shape=(n_samples, n_features))
    X.sum_duplicates()
    X = (sp.diags(1.0 / np.sqrt(X.multiply(X).sum(axis=1).A.ravel())) @ X).tocsr()
    w_true = np.zeros(n_features)
    w_true[rng.choice(pool, 200, replace=False)] = rng.randn(200)
    y = X @ w_true + 0.1 * rng.randn(n_samples)
    ridge_l1 = np.abs(ridge(X, y)).sum()
    return X, y * (4.0 * RADIUS / ridge_l1)


def ridge(X, y, n_iter=60):
    """argmin (1/2n)||X_c w - y_c||^2 + L2_REG ||w||^2 by the fixed point
    w = X_c^T (y_c - X_c w) / (2 n L2_REG), a contraction (factor <= 1 / (2 L2_REG) with
    unit-norm rows), so 60 iterations reach machine precision at L2_REG = 1."""
    n = X.shape[0]
    x_mean, yc = np.asarray(X.mean(axis=0)).ravel(), y - y.mean()
    w = np.zeros(X.shape[1])
    for _ in range(n_iter):
        r = yc - (X @ w - x_mean @ w)
        w = (X.T @ r) / (2.0 * n * L2_REG)
    return w


class Objective:
    """F(w, b*(w)) of eq. 22 with the optimal intercept, on all rows."""

    def __init__(self, X, y):
        self.X, self.y = X, y
        self.x_mean, self.y_mean = np.asarray(X.mean(axis=0)).ravel(), float(y.mean())

    def __call__(self, w):
        r = self.X @ w + (self.y_mean - self.x_mean @ w) - self.y
        return 0.5 * float(np.mean(r * r)) + L2_REG * float(w @ w)


def _project_sparse(w, radius):
    """The l1-ball projection of ``w`` computed on its nonzeros only (zeros stay zero:
    the same point as ``project_l1_ball(w)``, O(nnz log nnz) instead of O(d log d))."""
    nz = np.flatnonzero(w)
    out = np.zeros_like(w)
    out[nz] = project_l1_ball(w[nz], radius)
    return out


def logt_sgd(X, y, x_mean, T, eta, seed):
    """LogT baseline of Fig. 1 (Zhang et al., ICML 2013), the example's reading: projected
    mini-batch gradient steps with a constant step ``eta``; the mini-batch doubles after
    every ``kappa = ceil(L / mu)`` steps, so ``T`` stochastic gradients take O(kappa log T)
    projections; the intercept is set to its optimum given w at every projection.  Gradients
    touch only the mini-batch's columns, the l2 shrink is one scaling, and the projection
    works on the nonzeros (the dense iterate has at most ``T * nnz_per_row`` of them)."""
    rs = np.random.RandomState(seed)
    n = X.shape[0]
    y_mean = float(y.mean())
    kappa = int(np.ceil((1.0 + 1.0 + 2.0 * L2_REG) / (2.0 * L2_REG)))   # ||x_i|| = 1, + b
    w, b, used, batch, n_proj = np.zeros(X.shape[1]), y_mean, 0, 1, 0
    while used < T:
        for _ in range(kappa):
            m = min(batch, T - used)
            if m <= 0:
                break
            idx = rs.randint(n, size=m)
            sub = X[idx]
            cols = np.unique(sub.indices)
            r = sub @ w + b - y[idx]
            grad = sub[:, cols].T @ r / m
            w *= 1.0 - 2.0 * eta * L2_REG
            w[cols] -= eta * grad
            w = _project_sparse(w, RADIUS)
            b = y_mean - x_mean @ w
            used += m
            n_proj += 1
        batch *= 2
    return w, n_proj


def fit(X, y, x_mean, kw, T, seed):
    """One run at budget ``T`` of ``ConstrainedLasso(**kw)`` at the paper's ``l2_reg`` and
    ``radius``, or of :func:`logt_sgd` (step 0.1) if ``kw`` is None: (coef, CPU seconds, wall
    seconds, projections)."""
    cpu, wall = time.process_time(), time.perf_counter()
    if kw is None:
        coef, n_proj = logt_sgd(X, y, x_mean, T, 0.1, seed)
    else:
        model = ConstrainedLasso(l2_reg=L2_REG, radius=RADIUS, max_iter=int(T), tol=0,
                                 track_objective=False, random_state=seed, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X, y)
        coef, n_proj = model.coef_, model.n_projections_
    return coef, time.process_time() - cpu, time.perf_counter() - wall, int(n_proj)


def time_study(X, y, budgets, seeds, cap=2.0, on_seed=None, log=print):
    """Every method at every budget (ascending) and seed; a method's larger budgets are
    skipped once one of its runs has used more than ``cap`` times Epro-SGD's CPU time at the
    largest budget (its objective at Epro's time is then already known).  Returns rows
    {method, seed, T, cpu_s, wall_s, objective, n_projections}; row T=0 is the start w = 0."""
    objective = Objective(X, y)
    f0 = objective(np.zeros(X.shape[1]))
    for label in METHODS:                    # warm-up (imports, first allocations): untimed
        fit(X, y, objective.x_mean, METHODS[label], 8, 0)
    rows = []
    for seed in seeds:
        t_epro = None
        for label in METHODS:
            rows.append(dict(method=label, seed=int(seed), T=0, cpu_s=0.0, wall_s=0.0,
                             objective=f0, n_projections=0))
            for T in budgets:
                coef, cpu, wall, n_proj = fit(X, y, objective.x_mean, METHODS[label], T,
                                              seed)
                rows.append(dict(method=label, seed=int(seed), T=int(T), cpu_s=cpu,
                                 wall_s=wall, objective=objective(coef), n_projections=n_proj))
                log(f"seed {seed} {label:38s} T={T:5d} CPU {cpu:7.2f} s wall {wall:7.2f} s "
                    f"proj {n_proj:5d} F {rows[-1]['objective']:.6g}")
                if label == EPRO and T == budgets[-1]:
                    t_epro = cpu
                if label != EPRO and t_epro is not None and cpu > cap * t_epro:
                    break
        if on_seed is not None:
            on_seed(rows)
    return rows


def at_epro_time(rows):
    """Per seed, Epro-SGD's CPU time at its largest budget and each method's objective at
    that CPU time: the output of its largest-budget run that finished within it (the start
    point w = 0 if none did).  Returns {seed: (t_epro, {method: (objective, T)})}."""
    out = {}
    for seed in sorted({r["seed"] for r in rows}):
        mine = [r for r in rows if r["seed"] == seed]
        epro = max((r for r in mine if r["method"] == EPRO), key=lambda r: r["T"])
        t = epro["cpu_s"]
        best = {}
        for label in METHODS:
            done = [r for r in mine if r["method"] == label and r["cpu_s"] <= t]
            if label == EPRO:
                done = [epro]
            last = max(done, key=lambda r: r["T"])
            best[label] = (last["objective"], last["T"])
        out[seed] = (t, best)
    return out


def verdict(rows):
    """Reproduced if Epro-SGD's mean objective (over seeds) at its own CPU time is below each
    other method's mean objective at that CPU time, partly if below some, refuted if none."""
    per_seed = at_epro_time(rows)
    mean = {label: float(np.mean([b[label][0] for _, b in per_seed.values()]))
            for label in METHODS}
    beaten = [label for label in METHODS if label != EPRO and mean[EPRO] < mean[label]]
    word = _reproduction.verdict(len(beaten), len(METHODS) - 1)
    return word, mean, beaten, per_seed


def time_to_reach(rows):
    """Per method, the mean over seeds of the CPU seconds of its cheapest run whose objective
    is at or below Epro-SGD's at its largest budget (None if no run of some seed got there)."""
    per_seed = at_epro_time(rows)
    out = {}
    for label in METHODS:
        times = []
        for seed, (_, best) in per_seed.items():
            target = best[EPRO][0]
            hits = [r["cpu_s"] for r in rows if r["seed"] == seed and r["method"] == label
                    and r["T"] > 0 and r["objective"] <= target]
            times.append(min(hits) if hits else None)
        out[label] = None if None in times else float(np.mean(times))
    return out


def reference(X, y, tol=1e-10):
    """F* (FISTA to ``tol``), the solution's multiplier (> 0: the ball binds) and l1 norm."""
    model = ConstrainedLasso(l2_reg=L2_REG, radius=RADIUS, solver="fista", tol=tol).fit(X, y)
    return dict(f_star=Objective(X, y)(model.coef_), multiplier=float(model.lam_),
                l1_norm=float(np.abs(model.coef_).sum()), n_iter=int(model.n_iter_))
