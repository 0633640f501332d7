"""Tests of OrdinalEmbedding (paper 000): losses, kernels vs numpy references, solver, API."""
import os
import pickle
import runpy
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from skstoch import OrdinalEmbedding
from skstoch._comparisons import check_comparisons
from skstoch._fast import _ordinal
from skstoch._fast._comparison_loss import CKLLoss, GNMDSLoss, SOELoss, STELoss, TSTELoss
from skstoch.datasets import make_triplets
from skstoch.utils._random_reference import ReferenceStream

LOSSES = {
    "ste": STELoss(),
    "tste": TSTELoss(3.0),
    "gnmds": GNMDSLoss(1.0),
    "ckl": CKLLoss(0.05),
    "soe": SOELoss(0.1),
}


# ---------------------------------------------------------------- numpy references
def ref_loss(name, a, c):
    """Per-comparison losses written directly from their definitions."""
    if name == "ste":
        return -np.log(np.exp(-a) / (np.exp(-a) + np.exp(-c)))
    if name == "tste":
        alpha = 3.0
        wa = (1 + a / alpha) ** (-(alpha + 1) / 2)
        wc = (1 + c / alpha) ** (-(alpha + 1) / 2)
        return -np.log(wa / (wa + wc))
    if name == "gnmds":
        return max(0.0, 1.0 + a - c)
    if name == "ckl":
        return -np.log((0.05 + c) / (0.1 + a + c))
    if name == "soe":
        return max(0.0, np.sqrt(a) + 0.1 - np.sqrt(c)) ** 2
    raise ValueError(name)


def ref_objective(name, Q, X):
    a = np.sum((X[Q[:, 0]] - X[Q[:, 1]]) ** 2, axis=1)
    c = np.sum((X[Q[:, 2]] - X[Q[:, 3]]) ** 2, axis=1)
    return np.mean([ref_loss(name, ai, ci) for ai, ci in zip(a, c)])


def ref_grad_q(loss, X, q):
    """Dense gradient of one comparison's loss (the chain rule of the paper note, Sec. 1.4)."""
    i, j, l, k = q
    a = np.sum((X[i] - X[j]) ** 2)
    c = np.sum((X[l] - X[k]) ** 2)
    _, ga, gc = loss.py_loss_grad(a, c)
    G = np.zeros_like(X)
    G[i] += 2 * ga * (X[i] - X[j])
    G[j] -= 2 * ga * (X[i] - X[j])
    G[l] += 2 * gc * (X[l] - X[k])
    G[k] -= 2 * gc * (X[l] - X[k])
    return G


def ref_inner(loss, Q, x, snap, g, step, n_steps, b, seed, stream, variance_reduced=True):
    """Algorithm 1's inner loop, dense update at every step (no laziness)."""
    rs = ReferenceStream(seed, stream)
    x = x.copy()
    m = Q.shape[0]
    for _ in range(n_steps):
        batch = [rs.randint(m) for _ in range(b)]
        if variance_reduced:
            u = sum(ref_grad_q(loss, x, Q[q]) - ref_grad_q(loss, snap, Q[q]) for q in batch) / b
            x = x - b * step * (u + g)
        else:
            x = x - step * sum(ref_grad_q(loss, x, Q[q]) for q in batch)
    return x


def ref_full_grad(loss, Q, X):
    return sum(ref_grad_q(loss, X, q) for q in Q) / Q.shape[0]


@pytest.fixture
def small_problem():
    rng = np.random.RandomState(0)
    T = make_triplets(12, 60, 3, random_state=rng)
    Q, _, n = check_comparisons(T)
    X = rng.normal(size=(n, 3))
    return Q, X


def quadruplets(n_objects, m, rng):
    rows = []
    while len(rows) < m:
        i, j, l, k = rng.randint(0, n_objects, size=4)
        if i != j and l != k and {i, j} != {l, k}:
            rows.append((i, j, l, k))
    return np.array(rows)


# ---------------------------------------------------------------- losses
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_values_and_partials_vs_finite_differences(name):
    loss = LOSSES[name]
    rng = np.random.RandomState(1)
    h = 1e-6
    for a, c in rng.uniform(0.05, 4.0, size=(30, 2)):
        val, ga, gc = loss.py_loss_grad(a, c)
        assert val == pytest.approx(ref_loss(name, a, c), rel=1e-10, abs=1e-12)
        fd_a = (ref_loss(name, a + h, c) - ref_loss(name, a - h, c)) / (2 * h)
        fd_c = (ref_loss(name, a, c + h) - ref_loss(name, a, c - h)) / (2 * h)
        if name in ("gnmds", "soe") and abs(ref_loss(name, a, c)) < 1e-3:
            continue  # near the kink
        assert ga == pytest.approx(fd_a, rel=1e-5, abs=1e-8)
        assert gc == pytest.approx(fd_c, rel=1e-5, abs=1e-8)
        assert loss.py_grad(a, c) == pytest.approx((ga, gc), rel=1e-14, abs=0)


def test_losses_are_stable_for_extreme_distances():
    for loss in LOSSES.values():
        for a, c in [(1e6, 0.0), (0.0, 1e6), (0.0, 0.0), (1e300, 1e300)]:
            val, ga, gc = loss.py_loss_grad(a, c)
            assert np.isfinite([val, ga, gc]).all(), (loss, a, c)
    # STE: loss ~ a - c for large a - c, without overflow
    assert STELoss().py_loss_grad(1000.0, 0.0)[0] == pytest.approx(1000.0)


def test_losses_pickle():
    for loss in LOSSES.values():
        clone = pickle.loads(pickle.dumps(loss))
        assert type(clone) is type(loss)
        assert clone.py_loss_grad(0.3, 1.2) == loss.py_loss_grad(0.3, 1.2)


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("kind", ["triplets", "quadruplets"])
def test_full_gradient_vs_finite_differences(name, kind):
    loss = LOSSES[name]
    rng = np.random.RandomState(2)
    n, p = 9, 3
    C = make_triplets(n, 40, p, random_state=rng) if kind == "triplets" else quadruplets(n, 40, rng)
    Q, _, _ = check_comparisons(C, n_objects=n)
    X = rng.normal(size=(n, p))
    G = np.empty_like(X)
    total = _ordinal.full_gradient(loss, Q, X, G, 1.0 / len(Q))
    assert total / len(Q) == pytest.approx(ref_objective(name, Q, X), rel=1e-10)
    assert _ordinal.loss_sum(loss, Q, X) == pytest.approx(total, rel=1e-12)
    h = 1e-6
    fd = np.empty_like(X)
    for r in range(n):
        for f in range(p):
            Xp, Xm = X.copy(), X.copy()
            Xp[r, f] += h
            Xm[r, f] -= h
            fd[r, f] = (_ordinal.loss_sum(loss, Q, Xp) - _ordinal.loss_sum(loss, Q, Xm)) / (2 * h)
    fd /= len(Q)
    np.testing.assert_allclose(G, fd, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(G, ref_full_grad(loss, Q, X), rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- kernels vs references
@pytest.mark.parametrize("name", ["ste", "gnmds", "tste"])
@pytest.mark.parametrize("b", [1, 4])
def test_svrg_inner_loop_matches_numpy_reference(small_problem, name, b):
    Q, X = small_problem
    loss = LOSSES[name]
    rng = np.random.RandomState(3)
    snap = X + 0.1 * rng.normal(size=X.shape)
    G = np.empty_like(X)
    _ordinal.full_gradient(loss, Q, snap, G, 1.0 / len(Q))
    step, n_steps, seed, stream = 0.05, 15, 1234, 7
    n, p = X.shape
    x = X.copy()
    lazy = _ordinal.InnerLoop(loss, Q, n, p, n_steps, b, seed)
    counter = _ordinal.svrg_inner(lazy, x, snap, G, step, stream)
    expected = ref_inner(loss, Q, X, snap, G, step, n_steps, b, seed, stream)
    # the lazy dense update is exact up to rounding
    np.testing.assert_allclose(x, expected, rtol=1e-11, atol=1e-12)
    assert not np.allclose(x, X)
    # the tables are reusable: a second call on the same stream repeats the same draws
    x_again = X.copy()
    assert _ordinal.svrg_inner(lazy, x_again, snap, G, step, stream) == counter
    np.testing.assert_array_equal(x_again, x)
    # the paper's literal update (dense term on every row at every step): same iterates
    x_dense = X.copy()
    dense = _ordinal.InnerLoop(loss, Q, n, p, n_steps, b, seed, True)
    _ordinal.svrg_inner(dense, x_dense, snap, G, step, stream)
    np.testing.assert_allclose(x_dense, expected, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(x_dense, x, rtol=1e-11, atol=1e-12)


def test_sgd_inner_loop_matches_numpy_reference(small_problem):
    Q, X = small_problem
    loss = LOSSES["ste"]
    x = X.copy()
    b = 3
    _ordinal.sgd_inner(_ordinal.InnerLoop(loss, Q, len(X), 3, 10, b, 99), x, 0.02, 2)
    expected = ref_inner(loss, Q, X, None, None, 0.02, 10, b, 99, 2, variance_reduced=False)
    np.testing.assert_allclose(x, expected, rtol=1e-12, atol=1e-13)


def test_kernels_reject_wrong_shapes(small_problem):
    """The kernels run without bounds checks: arrays that do not match the tables must raise
    (the inner loop's workspaces are sized by its tables)."""
    Q, X = small_problem
    loss = LOSSES["ste"]
    b, (n, p) = 4, X.shape
    tables = _ordinal.InnerLoop(loss, Q, n, p, 3, b, 1)
    for bad in (np.zeros((n - 1, p)), np.zeros((n, p + 1))):
        with pytest.raises(ValueError, match="must have shape"):
            _ordinal.sgd_inner(tables, bad, 0.01, 1)
        for args in ((bad, X, X), (X.copy(), bad, X), (X.copy(), X, bad)):
            with pytest.raises(ValueError, match="must have shape"):
                _ordinal.svrg_inner(tables, *args, 0.01, 1)
    for bad in (dict(batch_size=0), dict(n_objects=0), dict(n_steps=-1)):
        kw = {**dict(n_objects=n, n_components=p, n_steps=3, batch_size=b, seed=1), **bad}
        with pytest.raises(ValueError, match="must be positive"):
            _ordinal.InnerLoop(loss, Q, **kw)
    with pytest.raises(ValueError, match="Q must have shape"):
        _ordinal.InnerLoop(loss, Q[:0], n, p, 3, b, 1)
    with pytest.raises(ValueError, match="shape of X"):
        _ordinal.full_gradient(loss, Q, X, np.empty((n + 1, X.shape[1])), 1.0)
    with pytest.raises(ValueError, match="length"):
        _ordinal.satisfied(Q, X, np.empty(len(Q) - 1, np.int8))


def test_full_gradient_many_comparisons_vs_reference():
    """Past the prefetch distance, with quadruplets over many objects."""
    rng = np.random.RandomState(5)
    Q, _, n = check_comparisons(quadruplets(300, 500, rng), n_objects=300)
    X = rng.normal(size=(n, 4))
    for name in ("ste", "tste", "gnmds"):
        G = np.empty_like(X)
        total = _ordinal.full_gradient(LOSSES[name], Q, X, G, 1.0 / len(Q))
        np.testing.assert_allclose(G, ref_full_grad(LOSSES[name], Q, X), rtol=1e-10,
                                   atol=1e-13)
        assert total == pytest.approx(_ordinal.loss_sum(LOSSES[name], Q, X), rel=1e-13)


@pytest.mark.parametrize("name", ["ste", "tste", "ckl", "gnmds"])
@pytest.mark.parametrize("solver", ["svrg_sbb", "svrg"])
def test_dense_and_lazy_inner_update_give_the_same_fit(name, solver):
    """inner_update='dense' (the paper's O(n p) step) and 'lazy' (ours): same iterates."""
    T = make_triplets(15, 300, 3, random_state=2)
    fits = {}
    for mode in ("lazy", "dense"):
        est = OrdinalEmbedding(3, loss=name, solver=solver, batch_size=4, max_iter=6, tol=0.0,
                               inner_update=mode, random_state=3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fits[mode] = est.fit(T)
    lazy, dense = fits["lazy"], fits["dense"]
    assert lazy.n_iter_ == dense.n_iter_ == 6
    np.testing.assert_allclose(dense.embedding_, lazy.embedding_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(dense.history_["objective"], lazy.history_["objective"],
                               rtol=1e-9)
    np.testing.assert_allclose(dense.history_["step_size"], lazy.history_["step_size"],
                               rtol=1e-7)
    assert lazy.history_["objective"][-1] < lazy.history_["objective"][0]


def test_invalid_inner_update_raises():
    T = make_triplets(10, 50, 2, random_state=0)
    with pytest.raises(ValueError, match="inner_update"):
        OrdinalEmbedding(inner_update="eager").fit(T)


@pytest.mark.parametrize("name", ["ste", "gnmds"])
@pytest.mark.parametrize("inner_update", ["lazy", "dense"])
def test_fit_equals_numpy_reference_of_algorithm_1(name, inner_update):
    """Whole SVRG-SBB mini-batch fit (Algorithm 1, errata fixed) vs a numpy transcription."""
    T = make_triplets(10, 50, 2, random_state=4)
    Q, _, n = check_comparisons(T)
    init = np.random.RandomState(5).normal(size=(n, 2))
    b, m, eps, eta0, S = 5, 50, 0.05, 0.002, 4
    est = OrdinalEmbedding(2, loss=name, solver="svrg_sbb", batch_size=b, epsilon=eps,
                           eta0=eta0, max_iter=S, tol=0.0, random_state=0,
                           inner_update=inner_update)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(T, init=init)
    loss = LOSSES[name]
    x, prev_x, prev_g, step = init.copy(), None, None, eta0
    steps, snapshots = [], [init]
    for s in range(S):
        g = ref_full_grad(loss, Q, x)
        if s > 0:
            dx, dy = x - prev_x, g - prev_g
            step = np.sum(dx * dx) / (m * (abs(np.sum(dx * dy)) + eps * np.sum(dx * dx)))
        steps.append(step)
        prev_x, prev_g = x.copy(), g
        x = ref_inner(loss, Q, x, prev_x, g, step, m // b, b, est.seed_, 1 + s)
        snapshots.append(x)
    assert any(not np.allclose(snapshots[-1], z) for z in snapshots[:-1])
    # the estimator returns the last snapshot, as Algorithm 1
    objectives = [ref_objective(name, Q, z) for z in snapshots]
    x = snapshots[-1]
    assert est.objective_ == pytest.approx(objectives[-1], rel=1e-9)
    np.testing.assert_allclose(est.embedding_, x - x.mean(axis=0), rtol=1e-9, atol=1e-11)
    # one record per snapshot and one at the last iterate, where no step is taken
    np.testing.assert_allclose(est.history_["objective"], objectives, rtol=1e-9)
    np.testing.assert_allclose(est.history_["step_size"][:-1], steps, rtol=1e-9)
    assert np.isnan(est.history_["step_size"][-1])
    np.testing.assert_array_equal(est.history_["iteration"], np.arange(S + 1))
    assert est.n_iter_ == S


def test_sbb_steps_stay_within_their_bounds():
    T = make_triplets(40, 3000, 3, random_state=0)
    Q, _, n = check_comparisons(T)
    eps = 0.05
    est = OrdinalEmbedding(3, loss="ste", solver="svrg_sbb", epsilon=eps, max_iter=25, tol=0.0,
                           random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(T)
    m = len(Q)
    steps = est.history_["step_size"][1:-1]   # the last record takes no step
    # eq. 15 with the 1/m of eq. 17: 1/(m(L + eps)) <= eta <= 1/(m eps).  L bounds the
    # per-comparison curvature; for STE on this embedding it is far below 1e3.
    assert np.all(steps <= 1.0 / (m * eps) * (1 + 1e-12))
    assert np.all(steps >= 1.0 / (m * (1e3 + eps)))
    # 'auto' bounds the step by 100x the probed initial BB step
    est_auto = OrdinalEmbedding(3, solver="svrg_sbb", max_iter=25, tol=0.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est_auto.fit(T)
    assert np.all(est_auto.history_["step_size"][1:-1]
                  <= 1.0 / (m * est_auto.epsilon_) * (1 + 1e-12))
    assert est_auto.epsilon_ > 0


# ---------------------------------------------------------------- solver quality
@pytest.mark.parametrize("solver", ["lbfgs", "svrg_sbb"])
@pytest.mark.parametrize("loss", ["ste", "tste", "gnmds", "soe"])
def test_fit_satisfies_noise_free_training_triplets(loss, solver):
    T = make_triplets(30, 3000, 2, random_state=0)
    est = OrdinalEmbedding(2, loss=loss, solver=solver, max_iter=150, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(T)
    # t-STE's heavy tails make far violated triplets cheap, so it converges more slowly
    assert est.score(T) >= (0.99 if loss != "tste" else 0.93)
    # the objective decreased from the start
    assert est.history_["objective"][-1] < est.history_["objective"][0]


@pytest.mark.parametrize("solver", ["svrg", "sgd", "gd"])
def test_baseline_solvers_learn(solver):
    T_all = make_triplets(30, 4000, 2, random_state=1)
    T, T_test = T_all[:3000], T_all[3000:]
    records = []
    est = OrdinalEmbedding(2, solver=solver, max_iter=60, random_state=0,
                           callback=records.append)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(T)
    assert est.score(T_test) > 0.9
    # a record at the start of every epoch (iteration) and one at the last iterate, whose
    # objective is the mean loss there; the best iterate is at most the best recorded one
    np.testing.assert_array_equal(est.history_["iteration"], np.arange(est.n_iter_ + 1))
    assert len(records) == est.n_iter_ + 1 and records[-1]["iteration"] == est.n_iter_
    Q = check_comparisons(T)[0]
    assert est.history_["objective"][-1] == pytest.approx(
        ref_objective("ste", Q, records[-1]["x"]), rel=1e-9)
    assert est.objective_ <= est.history_["objective"].min()


@pytest.mark.parametrize("name", ["ste", "ckl"])
def test_lbfgs_equals_scipy_on_numpy_reference_objective(name):
    """solver='lbfgs' is scipy's L-BFGS-B on the mean loss: same iterates as L-BFGS-B driven
    by the numpy reference objective and gradient."""
    from scipy.optimize import minimize

    T = make_triplets(12, 200, 2, random_state=2)
    Q, _, n = check_comparisons(T)
    init = np.random.RandomState(1).normal(size=(n, 2))
    loss = LOSSES[name]
    fun = lambda v: (ref_objective(name, Q, v.reshape(n, 2)),
                     ref_full_grad(loss, Q, v.reshape(n, 2)).ravel())
    iterates = []
    ref = minimize(fun, init.ravel(), jac=True, method="L-BFGS-B",
                   callback=lambda xk: iterates.append(xk.copy()),
                   options={"maxiter": 6, "ftol": 0.0, "gtol": 0.0, "maxls": 40})
    est = OrdinalEmbedding(2, loss=name, solver="lbfgs", max_iter=6, tol=0.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(T, init=init)
    assert est.n_iter_ == 6 == len(iterates)
    objectives = est.history_["objective"]
    np.testing.assert_allclose(objectives[1:], [ref_objective(name, Q, v.reshape(n, 2))
                                                for v in iterates], rtol=1e-7)
    # a Wolfe line search never increases the objective, and it did decrease
    assert np.all(np.diff(objectives) <= 1e-15) and objectives[-1] < objectives[0]
    x = ref.x.reshape(n, 2)
    np.testing.assert_allclose(est.embedding_, x - x.mean(axis=0), rtol=1e-6, atol=1e-8)
    assert est.objective_ == pytest.approx(ref.fun, rel=1e-7)


@pytest.mark.parametrize("solver", ["lbfgs", "svrg_sbb", "svrg", "sgd", "gd"])
def test_every_solver_stops_on_the_documented_criterion(solver):
    """``tol`` bounds the history column ``improvement``: the relative decrease of the best
    objective over the last ``n_iter_no_change`` records, recomputed here from the objectives
    the history holds."""
    T = make_triplets(20, 1000, 2, random_state=0)
    k = 4
    est = OrdinalEmbedding(2, loss="gnmds", solver=solver, max_iter=2000, tol=1e-3,
                           n_iter_no_change=k, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        # 'gd' at its probed step overshoots here (objective 0.124 at the stop, 0.106 at its
        # best, 0 for L-BFGS): the plateau stop is reached, and rightly warns (tested below)
        warnings.filterwarnings("ignore", "(?s).*objective rose meanwhile",
                                ConvergenceWarning)
        est.fit(T)
    h = est.history_
    assert 0 < est.n_iter_ < 2000
    assert len(h["objective"]) == est.n_iter_ + 1   # the start is record 0
    best = np.minimum.accumulate(h["objective"])
    expected = np.full(best.shape, np.inf)
    expected[k:] = (best[:-k] - best[k:]) / np.maximum(np.abs(best[:-k]), 1.0)
    np.testing.assert_allclose(h["improvement"], expected, rtol=1e-12)
    assert h["improvement"][-1] <= 1e-3 and np.all(h["improvement"][:-1] > 1e-3)


def test_plateau_stop_on_a_rising_objective_warns():
    """The best objective also stops improving when the objective rises (a fixed step that
    overshoots): SOE with full-batch GD at its probed step climbed from 0.0096 to 0.0438 over
    its last records, stopped as 'converged' and returned the last iterate, 7.6 points of
    held-out triplet accuracy below L-BFGS, silently.  That stop warns; a step a quarter as
    large converges to L-BFGS's objective without a warning."""
    T = make_triplets(random_state=0)[:8000]
    est = OrdinalEmbedding(loss="soe", solver="gd", random_state=0)
    with pytest.warns(ConvergenceWarning, match="objective rose meanwhile.*smaller eta0"):
        est.fit(T, n_objects=100)
    assert est.n_iter_ < est.max_iter        # a plateau stop, not the budget's warning
    assert est.objective_ > 2 * est.history_["objective"].min()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        small = OrdinalEmbedding(loss="soe", solver="gd", eta0=est.eta0_ / 4,
                                 random_state=0).fit(T, n_objects=100)
        best = OrdinalEmbedding(loss="soe", random_state=0).fit(T, n_objects=100)
    assert small.objective_ < 1.01 * best.objective_


def test_rise_below_what_tol_resolves_does_not_warn():
    """A warm start at a minimum decreases by almost nothing, so any rise is many times the
    decrease: SVRG-SBB (t-STE) started at L-BFGS's minimum decreased by 1.5e-6 and ended
    6.4e-6 above its best, and warned.  The rise must also exceed tol * max(|best|, 1), the
    scale the tol rule resolves.  (Checked on the rule itself: how far that fit rises
    depends on the platform's rounding, 6.4e-6 here and 1e-4 with the oldest pinned
    numpy.)"""
    from skstoch._solvers._result import SolverResult
    from skstoch._solvers.ordinal import warn_if_risen

    def result(excess, converged=True):
        best = 0.4955
        return SolverResult(x=np.zeros((2, 2)), n_iter=10, converged=converged, criterion=0.0,
                            extra={"objective": best + excess, "best_objective": best,
                                   "start_objective": best + 1.5e-6})

    tol = 1e-5
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        warn_if_risen(result(0.9 * tol), "fit", tol)         # 600 x the decrease, below tol
        warn_if_risen(result(1.0, converged=False), "fit", tol)   # not a plateau stop
    with pytest.warns(ConvergenceWarning, match="objective rose meanwhile"):
        warn_if_risen(result(1.1 * tol), "fit", tol)


@pytest.mark.parametrize("loss", ["tste", "gnmds", "ckl"])
def test_defaults_converge_on_drifting_losses(loss):
    """For t-STE, GNMDS and CKL the embedding keeps drifting once the objective is flat (the
    relative change of the embedding stayed above 1e-5 after 1,000 L-BFGS iterations): the
    default stop must still be reached, without a ConvergenceWarning."""
    T = make_triplets(40, 3000, 5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = OrdinalEmbedding(loss=loss, random_state=0).fit(T)
    assert est.n_iter_ < est.max_iter


def test_best_objective_window_stop():
    from skstoch._solvers._stopping import BestObjectiveWindow

    stop = BestObjectiveWindow(0.01, 2)
    assert not stop.update(10.0) and stop.value == np.inf
    assert not stop.update(9.0) and stop.value == np.inf
    assert not stop.update(9.5)               # best 10 -> 9 over two records
    assert stop.value == pytest.approx(0.1)
    assert stop.update(8.99) and stop.reached     # best 9 -> 8.99 over the last two records
    assert stop.value == pytest.approx(0.01 / 9)
    stop = BestObjectiveWindow(0.01, 1)             # objective 0: the denominator is 1
    stop.update(0.5)
    assert not stop.update(0.0) and stop.value == pytest.approx(0.5)


def test_quadruplets_fit():
    rng = np.random.RandomState(0)
    E = rng.normal(size=(20, 2))
    C = quadruplets(20, 3000, rng)
    d = lambda u, v: np.sum((E[u] - E[v]) ** 2, axis=1)
    y = np.where(d(C[:, 0], C[:, 1]) < d(C[:, 2], C[:, 3]), 1, -1)
    est = OrdinalEmbedding(2, max_iter=100, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(C, y)
    assert est.n_features_in_ == 4
    assert est.score(C, y) > 0.97
    np.testing.assert_array_equal(est.predict(C) == y, est._satisfied(C, y)[0] == 1)


# ---------------------------------------------------------------- cblearn
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_objective_and_gradient_equal_cblearn(name):
    pytest.importorskip("cblearn")
    from cblearn.embedding import _ckl, _gnmds, _soe, _ste

    rng = np.random.RandomState(0)
    T = make_triplets(15, 200, 3, random_state=rng)
    X = rng.normal(size=(15, 3))
    Q, _, _ = check_comparisons(T)
    G = np.empty_like(X)
    m = len(T)
    ours = _ordinal.full_gradient(
        {"ste": STELoss(), "tste": TSTELoss(2.0), "gnmds": GNMDSLoss(1.0), "ckl": CKLLoss(0.05),
         "soe": SOELoss(0.1)}[name], Q, X, G, 1.0)
    if name in ("ste", "tste"):
        theirs, grad = _ste._ste_x_grad(X.ravel(), X.shape, T, name == "tste")
    elif name == "gnmds":
        theirs, grad = _gnmds._gnmds_x_grad(X.ravel(), X.shape, T, 0.0)
    elif name == "ckl":
        theirs, grad = _ckl._ckl_x_loss(X.ravel(), X.shape, T, 0.05)
    else:  # cblearn's SOE is a mean over quadruplets (i, j, i, k)
        theirs, grad = _soe._soe_loss(X.ravel(), X.shape, T[:, [0, 1, 0, 2]], 0.1)
        theirs, grad = theirs * m, grad * m
    # cblearn adds 1e-12 to the STE/t-STE denominators: agreement to ~1e-7, not to rounding
    assert ours == pytest.approx(theirs, rel=1e-6)
    np.testing.assert_allclose(G.ravel(), grad, rtol=1e-5, atol=1e-8)


# ---------------------------------------------------------------- API
def test_responses_flip_comparisons_like_cblearn_formats():
    T, y_bool = make_triplets(20, 500, 2, response="boolean", random_state=0)
    _, y_count = make_triplets(20, 500, 2, response="count", random_state=0)
    T_order = make_triplets(20, 500, 2, response="order", random_state=0)
    fits = [OrdinalEmbedding(2, max_iter=5, random_state=0) for _ in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fits[0].fit(T_order)
        fits[1].fit(T, y_bool)
        fits[2].fit(T, y_count)
    np.testing.assert_array_equal(fits[0].embedding_, fits[1].embedding_)
    np.testing.assert_array_equal(fits[0].embedding_, fits[2].embedding_)
    assert fits[1].score(T, y_bool) == fits[0].score(T_order)


def test_reproducible_and_pickles():
    T = make_triplets(20, 500, 2, random_state=0)
    kw = dict(max_iter=8, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = OrdinalEmbedding(2, **kw).fit(T)
        b = OrdinalEmbedding(2, **kw).fit(T)
        c = OrdinalEmbedding(2, max_iter=8, random_state=4).fit(T)
    np.testing.assert_array_equal(a.embedding_, b.embedding_)
    assert not np.array_equal(a.embedding_, c.embedding_)
    clone = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(clone.transform(), a.embedding_)
    np.testing.assert_array_equal(clone.predict(T), a.predict(T))


def test_input_dtypes_and_input_not_modified():
    T = make_triplets(20, 300, 2, random_state=0)
    T_copy = T.copy()
    kw = dict(max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = OrdinalEmbedding(2, **kw).fit(T)
        for dtype in (np.int32, np.uint16, np.int64):
            est = OrdinalEmbedding(2, **kw).fit(T.astype(dtype))
            np.testing.assert_array_equal(est.embedding_, ref.embedding_)
        OrdinalEmbedding(2, **kw).fit(T.tolist())
    np.testing.assert_array_equal(T, T_copy)


def test_predict_score_transform():
    E = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [0.0, 2.0]])
    est = OrdinalEmbedding(2, max_iter=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(np.array([[0, 1, 2], [0, 1, 3]]), n_objects=4)
    est.embedding_ = E
    T = np.array([[0, 1, 2], [0, 2, 1], [0, 1, 3], [1, 0, 3]])
    # squared distances: d(0,1)=1, d(0,2)=9, d(0,3)=4, d(1,3)=5
    np.testing.assert_array_equal(est.predict(T), [1, -1, 1, 1])
    assert est.score(T) == 0.75
    # quadruplet: d(0,1)=1 < d(2,3)=13, and the reverse pair order is violated
    np.testing.assert_array_equal(est.predict(np.array([[0, 1, 2, 3], [2, 3, 0, 1]])), [1, -1])
    assert est.score(T, np.array([1, -1, 1, 1])) == 1.0


def test_score_ties_count_as_violations():
    est = OrdinalEmbedding(1, max_iter=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(np.array([[0, 1, 2]]))
    est.embedding_ = np.array([[0.0], [1.0], [-1.0]])
    assert est.score(np.array([[0, 1, 2]])) == 0.0
    assert est.predict(np.array([[0, 1, 2]]))[0] == -1


@pytest.mark.parametrize(
    "X, y, match",
    [
        (np.array([[0, 1, 5]]), None, "out of range"),
        (np.array([[0, -1, 2]]), None, "negative"),
        (np.array([[0, 0, 2]]), None, "repeats an object"),
        (np.array([[0, 1, 1]]), None, "repeats an object"),
        (np.array([[0, 1, 0, 1]]), None, "pair with itself"),
        (np.array([[0, 1, 1, 0]]), None, "pair with itself"),
        (np.array([[0, 1]]), None, "shape"),
        (np.array([0, 1, 2]), None, "shape"),
        (np.array([[0.0, 1.0, 2.0]]), None, "integer"),
        (np.array([[True, False, True]]), None, "integer"),
        (np.zeros((0, 3), dtype=int), None, "no comparison"),
        (np.array([[0, 1, 2]]), np.array([0]), "undecided"),
        (np.array([[0, 1, 2]]), np.array([1, 1]), "one response per comparison"),
        (np.array([[0, 1, 2]]), np.array([2]), r"\+1/-1"),
        (np.array([["0", "1", "2"]]), None, "integer"),
        (np.array([[0, 1, None]], dtype=object), None, "integer"),
        (np.array([[0.5, 1.0, 2.0]]), None, "integer"),
        (np.array([[0, 1, np.nan]]), None, "integer"),
        (np.array([[0, 1, 2 + 1j]]), None, "integer"),
        (np.array([[0, 1, 2**63 + 5]], dtype=np.uint64), None, "int32 index range"),
    ],
)
def test_invalid_comparisons_raise(X, y, match):
    with pytest.raises(ValueError, match=match):
        OrdinalEmbedding(2, max_iter=1).fit(X, y, n_objects=3 if match == "out of range" else None)


@pytest.mark.parametrize("kwargs", [
    dict(loss="soe", margin=1e300), dict(loss="ckl", mu=1e308),
    dict(init="huge"), dict(init="huge", solver="svrg_sbb"),
])
def test_an_objective_overflowing_at_the_start_names_the_cause_not_the_step(kwargs):
    """These raised DivergenceError '... at record 0; decrease the step size' although no
    step had been taken."""
    T = make_triplets(12, 80, 2, random_state=0)
    if kwargs.get("init") == "huge":
        kwargs = {**kwargs, "init": 1e200 * np.random.RandomState(0).standard_normal((12, 2))}
    with pytest.raises(ValueError, match="not finite .* at the initial embedding") as info:
        OrdinalEmbedding(max_iter=5, random_state=0, **kwargs).fit(T)
    assert "step" not in str(info.value)


def test_complex_or_string_init_is_rejected():
    """A complex init lost its imaginary part with only a ComplexWarning, numeric strings
    were parsed: scikit-learn's check_array refuses both."""
    T = np.array([[0, 1, 2], [1, 2, 0]])
    with pytest.raises(ValueError, match="init.*[Cc]omplex"):
        OrdinalEmbedding(2, max_iter=1).fit(T, init=np.zeros((3, 2)) + 1j)
    with pytest.raises(ValueError, match="init.*[Cc]omplex"):
        OrdinalEmbedding(2, max_iter=1, init=np.zeros((3, 2)) + 1j).fit(T)
    with pytest.raises(ValueError, match="init holds strings"):
        OrdinalEmbedding(2, max_iter=1).fit(T, init=np.zeros((3, 2)).astype(str))


def test_invalid_fit_arguments_raise():
    T = np.array([[0, 1, 2], [1, 2, 0]])
    with pytest.raises(ValueError, match="init must have shape"):
        OrdinalEmbedding(2).fit(T, init=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="n_objects"):
        OrdinalEmbedding(2).fit(T, n_objects=0)
    with pytest.raises(ValueError, match="loss"):
        OrdinalEmbedding(2, loss="hinge").fit(T)
    with pytest.raises(TypeError, match="sparse"):
        import scipy.sparse as sp
        OrdinalEmbedding(2).fit(sp.csr_matrix(T))
    est = OrdinalEmbedding(2, max_iter=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(T)
    with pytest.raises(ValueError, match="out of range"):
        est.predict(np.array([[0, 1, 3]]))


def test_convergence_warning_callback_verbose(capsys):
    T = make_triplets(20, 300, 2, random_state=0)
    with pytest.warns(ConvergenceWarning, match="relative decrease of the best objective"):
        OrdinalEmbedding(2, max_iter=2, random_state=0).fit(T)
    seen = []

    def stop_after_three(record):
        seen.append(record)
        return len(seen) == 3

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # stopping by callback: no warning
        est = OrdinalEmbedding(2, max_iter=50, random_state=0, callback=stop_after_three,
                               verbose=1).fit(T)
    assert len(seen) == 3 and "x" in seen[0] and seen[0]["x"].shape == (20, 2)
    assert est.n_iter_ == 2 and len(est.history_["objective"]) == 3
    assert set(est.history_) >= {"objective", "iteration", "time"}
    # a stochastic solver stopped by the callback: no record after the one that stopped it
    seen.clear()
    est = OrdinalEmbedding(2, solver="svrg_sbb", max_iter=50, random_state=0,
                           callback=stop_after_three).fit(T)
    assert est.n_iter_ == 2 and list(est.history_["iteration"]) == [0, 1, 2]
    assert np.all(np.isfinite(est.history_["step_size"]))
    assert "OrdinalEmbedding" in capsys.readouterr().out


def test_fit_transform_and_pipeline_friendly():
    T = make_triplets(20, 300, 2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with pytest.warns(UserWarning, match="5 of 25 objects appear in no comparison"):
            E = OrdinalEmbedding(2, max_iter=5, random_state=0).fit_transform(
                T, n_objects=25)
        with pytest.warns(UserWarning, match="5 of 25 objects appear in no comparison"):
            est = OrdinalEmbedding(2, max_iter=5, random_state=0).fit(T, n_objects=25)
    assert E.shape == (25, 2)
    np.testing.assert_array_equal(E, est.transform(T))
    np.testing.assert_allclose(E.mean(axis=0), 0.0, atol=1e-12)


# ---------------------------------------------------------------- example
def test_example_runs_in_fast_mode(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("SKSTOCH_FIGURES_DIR", str(tmp_path))
    examples = sorted(Path(__file__).resolve().parents[1].glob("examples/plot_ordinal_embedding*.py"))
    assert examples
    monkeypatch.setenv("SKSTOCH_EXAMPLE_FAST", "1")
    for path in examples:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runpy.run_path(str(path), run_name="__main__")
    import json

    (record,) = (tmp_path / "reproduction").glob("plot_ordinal_embedding_svrg_sbb.json")
    claims = json.loads(record.read_text())["claims"]
    assert {c["algorithm"] for c in claims} == {"paper", "ours"}
    assert any("tuned" in c["claim"] for c in claims)


# ---------------------------------------------------------------- step and stop rules
def test_probe_curvature_is_the_rayleigh_quotient_along_the_gradient():
    from skstoch._solvers import curvature_step, probe_curvature

    A = np.diag([1.0, 4.0, 9.0])
    x0 = np.array([1.0, -2.0, 0.5])
    calls = []
    kappa = probe_curvature(lambda x: calls.append(x) or (0.5 * x @ A @ x, A @ x), x0)
    g = A @ x0
    assert len(calls) == 2
    assert kappa == pytest.approx(g @ A @ g / (g @ g), rel=1e-10)
    # degenerate probes: zero gradient, then no positive curvature to divide by
    assert probe_curvature(lambda x: (0.0, np.zeros_like(x)), x0) == 0.0
    assert curvature_step(0.0, 0.0) == 1.0
    assert curvature_step(3.0, 1.0) == 0.25


def test_relative_change_stop():
    from skstoch._solvers import RelativeChangeStop

    stop = RelativeChangeStop(0.1)
    assert not stop.reached and stop.value == np.inf
    assert not stop.update(np.array([1.0, 1.2]), np.array([1.0, 1.0]))
    assert stop.value == pytest.approx(0.2 / np.sqrt(2))
    assert stop.update(np.array([1.0, 1.05]), np.array([1.0, 1.0])) and stop.reached


def test_one_huge_index_raises_at_once_naming_input_and_bytes():
    """n_objects is inferred from the largest index: one mistyped index must not make the fit
    allocate (it allocated for a minute before)."""
    T = make_triplets(20, 200, 2, random_state=0)
    T[7, 2] = np.iinfo(np.int32).max - 1
    for solver in ("lbfgs", "svrg_sbb"):
        with pytest.raises(ValueError, match=r"bytes.*largest object index in X "
                                             r"\(2147483646\)"):
            OrdinalEmbedding(solver=solver).fit(T)
    with pytest.raises(ValueError, match=r"bytes.*n_objects=2000000000"):
        OrdinalEmbedding().fit(T[:5], n_objects=2 * 10**9)
    with pytest.raises(ValueError, match=r"n_components=1000000000"):
        OrdinalEmbedding(n_components=10**9).fit(T[:5])
    with pytest.raises(ValueError, match=r"batch_size=1000000000, n_components=1000\. "
                                         r"Lower batch_size\.$"):
        OrdinalEmbedding(1000, solver="svrg_sbb", batch_size=10**9).fit(T[:5])
    # the full-batch solvers ignore batch_size: it was counted, and the message blamed the
    # object indices
    T = make_triplets(20, 200, 2, random_state=0)
    for solver in ("lbfgs", "gd"):
        with pytest.warns(ConvergenceWarning, match="max_iter=3"):
            OrdinalEmbedding(solver=solver, batch_size=2**31 - 1, max_iter=3, tol=0).fit(T)
    for name in ("batch_size", "inner_iter"):   # bounded before they reach C (no Overflow)
        with pytest.raises(ValueError, match=name):
            OrdinalEmbedding(solver="svrg_sbb", **{name: 10**20}).fit(T[:5])


def _fitted():
    T = make_triplets(20, 300, 2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return OrdinalEmbedding(2, max_iter=3, random_state=0).fit(T), T


@pytest.mark.parametrize("tamper", [
    lambda e: setattr(e, "embedding_", e.embedding_[:5]),
    lambda e: setattr(e, "embedding_", e.embedding_[:, :0]),
    lambda e: setattr(e, "embedding_", e.embedding_.ravel()),
    lambda e: setattr(e, "embedding_", e.embedding_.astype(np.float32)),
    lambda e: setattr(e, "embedding_", e.embedding_.tolist()),
    lambda e: setattr(e, "embedding_", np.full_like(e.embedding_, np.nan)),
    lambda e: setattr(e, "n_objects_", 10**6),
    lambda e: setattr(e, "n_objects_", 5.0),
])
@pytest.mark.parametrize("method", ["predict", "score", "transform", "get_feature_names_out"])
def test_tampered_fitted_state_raises_before_any_kernel(tamper, method):
    est, T = _fitted()
    tamper(est)
    call = {"predict": lambda: est.predict(T), "score": lambda: est.score(T),
            "transform": lambda: est.transform(T),
            "get_feature_names_out": est.get_feature_names_out}[method]
    with pytest.raises(ValueError, match="fitted attributes were modified"):
        call()


def test_non_contiguous_embedding_is_read_correctly():
    est, T = _fitted()
    expected = est.predict(T)
    est.embedding_ = np.asfortranarray(est.embedding_)
    np.testing.assert_array_equal(est.predict(T), expected)


def test_get_feature_names_out_and_set_output():
    pd = pytest.importorskip("pandas")
    T = make_triplets(20, 300, 2, random_state=0)
    est = OrdinalEmbedding(3, random_state=0)
    with pytest.raises(NotFittedError):
        est.get_feature_names_out()
    out = est.set_output(transform="pandas").fit_transform(pd.DataFrame(T))
    names = ["ordinalembedding0", "ordinalembedding1", "ordinalembedding2"]
    assert list(est.get_feature_names_out()) == names
    assert isinstance(out, pd.DataFrame) and list(out.columns) == names
    assert out.shape == (20, 3) and list(out.index) == list(range(20))  # rows are objects
    np.testing.assert_array_equal(out.to_numpy(), est.embedding_)
    assert isinstance(est.transform(), pd.DataFrame)
    assert isinstance(est.set_output(transform="default").transform(T), np.ndarray)


@pytest.mark.parametrize("solver", ["svrg_sbb", "lbfgs"])
def test_returned_iterate_last_for_the_paper_best_for_lbfgs(solver):
    """'svrg_sbb' is Algorithm 1 as published: it returns the last snapshot even when an
    earlier one had a lower objective; 'lbfgs' (ours) returns the lowest-objective iterate."""
    T = make_triplets(20, 400, 2, random_state=1)
    seen = []
    # a first step too long: the epoch ends above the start (SVRG-SBB; 1.4 -> 80 -> 10 ->
    # 2.4; eta0=1 now diverges, 1.4 -> 1e26, a DivergenceError)
    est = OrdinalEmbedding(2, solver=solver, max_iter=3, tol=0.0, eta0=0.3, random_state=0,
                           callback=lambda r: seen.append(r) and False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(T)
    objectives = est.history_["objective"]
    assert len(seen) == len(objectives)
    i = len(objectives) - 1 if solver == "svrg_sbb" else int(np.argmin(objectives))
    if solver == "svrg_sbb":
        assert objectives[-1] > objectives.min()   # the case the test is about
    x = seen[i]["x"]
    np.testing.assert_allclose(est.embedding_, x - x.mean(axis=0), rtol=1e-12, atol=1e-12)
    assert est.objective_ == pytest.approx(objectives[i], rel=1e-12)


def test_auto_epsilon_factor_is_the_documented_one():
    """The docstring and the user guide state the factor of epsilon='auto' that the code uses
    (they once disagreed: 0.01 against 0.05)."""
    import re

    from skstoch._solvers.ordinal import _AUTO_EPSILON

    guide = (Path(__file__).resolve().parents[1] / "doc" / "user_guide"
             / "ordinal_embedding.rst").read_text()
    for text in (OrdinalEmbedding.__doc__, guide):
        factors = {float(f) for f in re.findall(r"``([0-9.]+) \* kappa0``", text)}
        assert factors == {_AUTO_EPSILON}, factors
    T = make_triplets(20, 300, 2, random_state=0)
    from skstoch._solvers._step_size import probe_curvature
    from skstoch._solvers.ordinal import OrdinalProblem, _initial_embedding, _make_loss, \
        _Objective
    est = OrdinalEmbedding(2, solver="svrg_sbb", max_iter=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(T)
    params = est._solver_params(len(T), est.seed_)
    Q, _, n = check_comparisons(T)
    objective = _Objective(_make_loss(params), Q)
    kappa0 = probe_curvature(objective.value_and_gradient,
                             _initial_embedding(OrdinalProblem(Q, n), params))
    assert est.epsilon_ == pytest.approx(_AUTO_EPSILON * kappa0, rel=1e-12)


def test_docstring_example_runs_without_warnings():
    import doctest

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for test in doctest.DocTestFinder().find(OrdinalEmbedding):
            runner.run(test, out=lambda text: None)
    assert runner.tries > 0 and runner.failures == 0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_object_arrays_of_integers_are_accepted_as_indices():
    """pandas' nullable Int64 columns (and object arrays of ints) reach numpy as object
    arrays, which were refused ('got dtype object') although check_array takes them as
    numbers; missing values, floats and booleans in them are still refused."""
    pd = pytest.importorskip("pandas")
    T = make_triplets(12, 80, 2, random_state=0)
    expected = OrdinalEmbedding(max_iter=5, random_state=0).fit(T).embedding_
    for X in (pd.DataFrame(T).astype("Int64"), T.astype(object)):
        got = OrdinalEmbedding(max_iter=5, random_state=0).fit(X).embedding_
        np.testing.assert_array_equal(got, expected)
    bad = pd.DataFrame(T).astype("Int64")
    bad.iloc[0, 1] = pd.NA
    for X in (bad, np.array([[0, 1, True]], dtype=object), np.array([[0, 1, 2.0]], dtype=object)):
        with pytest.raises(ValueError, match="integer array"):
            OrdinalEmbedding(max_iter=5).fit(X)
    with pytest.raises(ValueError, match="int64 range"):
        OrdinalEmbedding(max_iter=5).fit(np.array([[0, 1, 2**70]], dtype=object))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (tests/_isolation.py)")
def test_memory_check_respects_the_address_space_limit():
    # about 4 GiB of fit arrays, less than this machine's physical memory, in a child whose
    # address space leaves 1 GiB: a clear ValueError before allocating, not a MemoryError
    # from numpy (the check once compared with physical memory only)
    from _isolation import run_isolated

    from skstoch.embedding import _ARRAYS_PER_FIT
    n_objects = 4 * 2**30 // (8 * (2 * _ARRAYS_PER_FIT["lbfgs"] + 1))
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if physical < 5 * 2**30:
        pytest.skip("needs more than 5 GiB of physical memory to tell the two checks apart")

    def fit():
        X = np.array([[0, 1, n_objects - 1]])
        OrdinalEmbedding(n_components=2, max_iter=1, random_state=0).fit(X)

    out = run_isolated(fit, timeout=60)
    assert out["status"] == "raised", out
    assert out["exc_type"] == "ValueError" and "available" in out["message"], out


def test_convergence_warning_does_not_suggest_scaling_comparisons():
    """The shared ConvergenceWarning suggests standardizing features; an embedding's input
    is object indices, which have none."""
    T = make_triplets(20, 300, 2, random_state=0)
    with pytest.warns(ConvergenceWarning) as rec:
        OrdinalEmbedding(max_iter=2, random_state=0).fit(T)
    assert "StandardScaler" not in str(rec[0].message)


def test_fit_transform_documents_the_dataframe_it_returns_under_set_output():
    """fit_transform's Returns said ndarray while set_output(transform="pandas") makes it
    return a DataFrame (transform's docstring said so)."""
    docscrape = pytest.importorskip("numpydoc.docscrape")
    T = make_triplets(15, 200, 2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        out = OrdinalEmbedding(random_state=0).set_output(transform="pandas").fit_transform(T)
    returned = docscrape.FunctionDoc(OrdinalEmbedding.fit_transform)["Returns"][0].type
    assert type(out).__name__ in returned


class _CountingKernels:
    """``_ordinal`` with its two full passes recorded (kind, iterate bytes)."""

    def __init__(self):
        self.passes = []

    def __getattr__(self, name):
        return getattr(_ordinal, name)

    def loss_sum(self, loss, Q, x):
        self.passes.append(("loss", np.asarray(x).tobytes()))
        return _ordinal.loss_sum(loss, Q, x)

    def full_gradient(self, loss, Q, x, grad, scale):
        self.passes.append(("gradient", np.asarray(x).tobytes()))
        return _ordinal.full_gradient(loss, Q, x, grad, scale)


@pytest.mark.parametrize("solver", ["lbfgs", "svrg_sbb", "gd"])
def test_no_pass_repeats_the_previous_one(monkeypatch, solver):
    """The start check, L-BFGS's first step, scipy's first call and the final objective each
    ran a pass at the same iterate (3 of the 32 passes of a default soe fit); the objective
    now keeps its last evaluation and the start check runs the gradient pass the solver
    needs next, so no pass repeats the point of the one before it, and the fit is
    unchanged."""
    from skstoch._solvers import ordinal

    T = make_triplets(random_state=0)[:4000]
    reference = OrdinalEmbedding(loss="ste", solver=solver, random_state=0).fit(T, n_objects=100)
    counting = _CountingKernels()
    monkeypatch.setattr(ordinal, "_ordinal", counting)
    est = OrdinalEmbedding(loss="ste", solver=solver, random_state=0).fit(T, n_objects=100)
    np.testing.assert_array_equal(est.embedding_, reference.embedding_)
    for (kind_a, x_a), (kind_b, x_b) in zip(counting.passes, counting.passes[1:]):
        assert x_a != x_b, (kind_a, kind_b)


def test_objective_cache_hands_out_independent_gradients():
    """The kept gradient is a copy: a caller that updates its gradient in place (scipy, the
    loops) cannot change what the next ask at the same point returns."""
    from skstoch._solvers.ordinal import _Objective

    Q, _, n_objects = check_comparisons(make_triplets(random_state=0)[:500], n_objects=100)
    objective = _Objective(STELoss(), Q)
    x = np.random.RandomState(0).standard_normal((n_objects, 2))
    value, grad = objective.value_and_gradient(x)
    expected = grad.copy()
    grad[:] = 0.0
    again_value, again = objective.value_and_gradient(x)
    assert again_value == value and objective.value(x) == value
    np.testing.assert_array_equal(again, expected)
    again[:] = 1.0
    np.testing.assert_array_equal(objective.value_and_gradient(x)[1], expected)
    x[0, 0] += 1.0      # a new point is evaluated, not read from the cache
    assert objective.value(x) != value


def test_step_probe_costs_one_gradient_pass(monkeypatch):
    """The curvature probe of ``eta0=None`` evaluates one point besides the start; its
    gradient there once replaced the start's kept one, so the first snapshot ran the start's
    pass again (6 passes for 3 epochs against 4 with given steps)."""
    from skstoch._solvers import ordinal

    T = make_triplets(random_state=0)[:4000]
    passes = {}
    for label, steps in (("probed", {}), ("given", {"eta0": 1e-3, "epsilon": 1e-3})):
        counting = _CountingKernels()
        monkeypatch.setattr(ordinal, "_ordinal", counting)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)   # tol=0: a fixed budget
            OrdinalEmbedding(loss="ste", solver="svrg_sbb", max_iter=3, tol=0.0,
                             random_state=0, **steps).fit(T, n_objects=100)
        passes[label] = len(counting.passes)
    assert passes["probed"] == passes["given"] + 1, passes


def test_objects_in_no_comparison_warn_and_keep_their_start():
    """No loss term sees an object that no comparison mentions: fit says so instead of
    returning its starting position as if it were learned (its row only moves with the
    centring, by the same translation as every other such row)."""
    T = make_triplets(n_objects=30, n_triplets=2000, random_state=0)
    T = T[np.all((T != 5) & (T != 7), axis=1)]
    init = np.random.default_rng(1).normal(size=(32, 2))
    with pytest.warns(UserWarning, match=r"4 of 32 objects appear in no comparison "
                                         r"\(indices 5, 7, 30, 31\)"):
        est = OrdinalEmbedding(random_state=0).fit(T, n_objects=32, init=init)
    moved = est.embedding_ - init
    np.testing.assert_allclose(moved[[7, 30, 31]], np.tile(moved[5], (3, 1)), atol=1e-12)
    assert not np.allclose(moved[0], moved[5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OrdinalEmbedding(random_state=0).fit(make_triplets(n_objects=30, n_triplets=2000,
                                                           random_state=0))


@pytest.mark.parametrize("solver", ["lbfgs", "svrg_sbb", "svrg", "sgd", "gd"])
@pytest.mark.parametrize("fill", [0.0, 1.0])
def test_init_with_all_rows_equal_is_rejected(solver, fill):
    """Coincident points are a stationary point of every loss: every solver returned the
    collapsed init (score 0.0) silently.  The fit raises before drawing a seed."""
    T = make_triplets(n_objects=20, n_triplets=300, n_components=2, random_state=0)
    rng = np.random.RandomState(0)
    est = OrdinalEmbedding(solver=solver, random_state=rng)
    with pytest.raises(ValueError, match="init has all rows equal.*stationary point"):
        est.fit(T, init=np.full((20, 2), fill))
    assert rng.randint(2**31) == np.random.RandomState(0).randint(2**31)
    with pytest.raises(ValueError, match="init has all rows equal"):
        OrdinalEmbedding(solver=solver, init=np.full((20, 2), fill)).fit(T)


def test_n_components_true_is_one():
    """Interval(Integral) accepts bools and the other integer parameters read True as 1;
    n_components=True reached np.empty as a bool ('an integer is required')."""
    T = make_triplets(n_objects=20, n_triplets=300, n_components=2, random_state=0)
    got = OrdinalEmbedding(n_components=True, loss="tste", random_state=0).fit(T)
    ref = OrdinalEmbedding(n_components=1, loss="tste", random_state=0).fit(T)
    np.testing.assert_array_equal(got.embedding_, ref.embedding_)
    got = OrdinalEmbedding(n_components=True).fit(T, init=np.arange(20.0)[:, None])
    assert got.embedding_.shape == (20, 1)


def test_lbfgs_line_search_failure_is_not_blamed_on_max_iter():
    """scipy's ABNORMAL line-search termination ended the fit after 0 (a huge init) or 532
    (tol=0, at float64 precision) iterations, and the warning said 'after max_iter=...
    iterations ... Increase max_iter'."""
    T = make_triplets(n_objects=20, n_triplets=300, n_components=2, random_state=0)
    init = np.random.RandomState(0).randn(20, 2) * 1e8
    for est, fit_args in [(OrdinalEmbedding(loss="tste", random_state=0), {"init": init}),
                          (OrdinalEmbedding(tol=0, max_iter=2000, random_state=0), {})]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(T, **fit_args)
        messages = [str(w.message) for w in caught if w.category is ConvergenceWarning]
        assert len(messages) == 1, messages
        assert f"stopped after {est.n_iter_} iterations because L-BFGS's line search " \
               "failed" in messages[0]
        assert est.n_iter_ < est.max_iter
        assert "Increase max_iter" not in messages[0]
        assert "badly scaled" in messages[0] and "loosen tol" in messages[0]


@pytest.mark.parametrize("solver, eta0", [("gd", 1e-6), ("sgd", 1e-9), ("svrg", 1e-9)])
def test_step_probe_is_not_an_iterate(solver, eta0):
    """The curvature probe's second point was offered as the best iterate: with a tiny eta0
    the history decreased monotonically yet the fit warned that 'the objective rose
    meanwhile'.  Given eta0, 'gd', 'sgd' and 'svrg' do not probe (they use no epsilon)."""
    T = make_triplets(n_objects=20, n_triplets=300, n_components=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = OrdinalEmbedding(solver=solver, eta0=eta0, random_state=0).fit(T)
    h = est.history_["objective"]
    assert np.all(np.diff(h) <= 0)
    assert est.epsilon_ is None


def test_best_objective_is_the_lowest_recorded_one():
    """Where the probe runs ('svrg_sbb' with epsilon='auto'), its second point is still not
    offered as the best iterate: with eta0=1e-9 the first epoch barely moves, and the probe's
    point was below every recorded one."""
    from skstoch._solvers._monitor import FitMonitor
    from skstoch._solvers.ordinal import OrdinalParams, OrdinalProblem, solve

    Q, _, n = check_comparisons(make_triplets(n_objects=20, n_triplets=300, n_components=2,
                                              random_state=0))
    params = OrdinalParams(n_components=2, loss="ste", loss_parameter=None, solver="svrg_sbb",
                           max_iter=1, tol=1e-5, seed=0, eta0=1e-9, inner_iter=300)
    monitor = FitMonitor("test")
    result = solve(OrdinalProblem(Q, n), params, monitor)
    assert result.extra["best_objective"] == monitor.history()["objective"].min()


@pytest.mark.parametrize("solver, loss, n_triplets", [("svrg_sbb", "ste", 1), ("svrg", "gnmds", 1),
                                                      ("sgd", "gnmds", 1), ("gd", "gnmds", 11)])
def test_a_fit_that_only_rises_is_not_silent(solver, loss, n_triplets):
    """On a handful of triplets the automatic step of the paper's solvers overshoots and the
    objective only grows (1 triplet: 4.4 -> 4.7e12), which no check saw: the warning for a
    risen objective measured the rise against the decrease from the start, here 0, and only
    an infinite objective raised.  A growth beyond 1e4 times the start is now a
    DivergenceError, and a smaller one above the start a ConvergenceWarning."""
    from skstoch._solvers import DivergenceError

    T = (np.array([[0, 1, 2]]) if n_triplets == 1
         else make_triplets(n_objects=8, n_triplets=n_triplets, random_state=1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            OrdinalEmbedding(solver=solver, loss=loss, random_state=0).fit(T)
        except DivergenceError as error:
            assert "diverged: the objective grew from" in str(error)
            return
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught), caught


def test_the_warning_for_an_objective_that_never_fell():
    """warn_if_risen: a plateau stop whose best objective is the start and whose last
    iterate is above it warns (it divided by a decrease of 0 and stayed silent)."""
    from skstoch._solvers import SolverResult
    from skstoch._solvers.ordinal import warn_if_risen

    result = SolverResult(x=None, n_iter=5, converged=True, criterion=0.0,
                          extra={"best_objective": 2.0, "objective": 50.0,
                                 "start_objective": 2.0})
    with pytest.warns(ConvergenceWarning, match=r"above its value at the start \(2\)"):
        warn_if_risen(result, "OrdinalEmbedding", 1e-5)
