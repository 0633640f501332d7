"""The shared loops and rules of ``skstoch._solvers`` written for issue 17: FISTA (one loop,
smooth part / prox / gap passed in), averaged SGD with doubling checkpoints, the
objective-stall stopping rule, the row step-size rules and the epoch-projection loop's
hooks (``stop``, ``record_iteration``, ``objective_every_epoch``)."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import Lasso

from skstoch._solvers import (DivergenceError, FitMonitor, ObjectiveStall, Point,
                              epoch_projection, fista, project_l1_ball, row_curvature,
                              safe_sgd_step, squared_row_norms)
from skstoch._solvers._averaged_sgd import averaged_sgd, checkpoint_lengths
from skstoch._solvers._lasso_fista import Quadratic


# ------------------------------------------------------------------------------ FISTA

class _LeastSquares:
    """1/(2n) ||A x - b||^2 for the test: image A x, cached value and residual."""

    def __init__(self, A, b):
        self.A, self.b, self.n = A, b, A.shape[0]

    def point(self, x, z=None):
        z = self.A @ x if z is None else z
        r = z - self.b
        return Point(x, z, 0.5 * float(r @ r) / self.n, r)

    def gradient(self, p):
        return self.A.T @ p.aux / self.n

    def trial(self, y, grad, x_new, L):
        new = self.point(x_new)
        diff = x_new - y.x
        return new, new.value <= y.value + grad @ diff + 0.5 * L * diff @ diff + 1e-15

    def check(self, p, L):
        assert np.isfinite(p.value)


def _soft(v, t):
    return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)


def test_fista_with_a_penalty_prox_solves_the_lasso():
    """The same loop with a soft-threshold prox (a penalty, not a projection) and a
    prox-gradient-mapping gap reaches scikit-learn's Lasso solution."""
    rng = np.random.RandomState(0)
    A = rng.randn(80, 12)
    b = A[:, :3] @ [1.0, -2.0, 0.5] + 0.1 * rng.randn(80)
    lam = 0.1
    smooth = _LeastSquares(A, b)

    def gap(p):     # norm of the prox-gradient mapping at step 1
        return float(np.linalg.norm(p.x - _soft(p.x - smooth.gradient(p), lam)))

    seen = []
    result = fista(np.zeros(12), smooth, lambda v, step: _soft(v, lam * step), gap,
                   lipschitz=1e-3, max_iter=5000, threshold=1e-12,
                   record=lambda it, p, g, L: seen.append((it, g, L)) and False)
    ref = Lasso(alpha=lam, fit_intercept=False, tol=1e-14, max_iter=100000).fit(A, b)
    assert result.converged and result.criterion <= 1e-12
    np.testing.assert_allclose(result.x, ref.coef_, atol=1e-9)
    # the low start of L grew by backtracking; one record per gap evaluation
    assert result.extra["lipschitz"] > 1e-3 and len(seen) == result.n_iter
    assert result.extra["n_prox"] > result.n_iter


def test_fista_on_the_l1_ball_matches_projected_gradient():
    """The working-set smooth part (Gram matrix, Frank-Wolfe gap) against plain projected
    gradient descent run to convergence."""
    rng = np.random.RandomState(1)
    M = rng.randn(30, 8)
    H = M.T @ M / 30 + 0.01 * np.eye(8)
    q = rng.randn(8)
    radius = 0.7
    smooth = Quadratic(H, q, radius, threshold=1e-13)
    result = fista(np.zeros(8), smooth, lambda v, s: project_l1_ball(v, radius), smooth.gap,
                   lipschitz=0.5, max_iter=10000, threshold=1e-13, grow=1.5)
    x = np.zeros(8)
    step = 1.0 / np.linalg.eigvalsh(H)[-1]
    for _ in range(20000):
        x = project_l1_ball(x - step * (H @ x - q), radius)
    assert result.converged
    np.testing.assert_allclose(result.x, x, atol=1e-8)
    assert np.abs(result.x).sum() <= radius * (1 + 1e-12)


def test_fista_stops_when_record_asks_and_every_gap_every():
    rng = np.random.RandomState(2)
    A, b = rng.randn(40, 5), rng.randn(40)
    smooth = _LeastSquares(A, b)
    calls = []
    result = fista(np.zeros(5), smooth, lambda v, s: v, lambda p: 1.0, lipschitz=10.0,
                   max_iter=100, threshold=0.0, gap_every=3,
                   record=lambda it, p, g, L: calls.append(it) or it >= 9)
    assert calls == [3, 6, 9] and result.n_iter == 9 and not result.converged


# ------------------------------------------------------------------------------ averaged SGD

def test_checkpoint_lengths_both_leftover_rules():
    assert checkpoint_lengths(900, 8) == [8, 16, 32, 64, 128, 256, 396]
    assert checkpoint_lengths(900, 8, merge_leftover=True) == [8, 16, 32, 64, 128, 652]
    assert checkpoint_lengths(5, 8) == [5] == checkpoint_lengths(5, 8, merge_leftover=True)
    assert sum(checkpoint_lengths(12345, 8)) == 12345


def _counting_run(start=0.0):
    """iterate x_t = start + t (a 1-d array); the running average of x_1..x_t."""
    state = {"x": np.array([start]), "sum": np.zeros(1), "points": []}

    def run_chunk(t0, n_steps, point):
        state["points"].append(point)
        for _ in range(n_steps):
            state["sum"] += state["x"]
            state["x"] = state["x"] + 1.0
        return state["x"], state["sum"] / (t0 + n_steps)
    return run_chunk, state


def test_averaged_sgd_records_each_checkpoint():
    run_chunk, state = _counting_run(1.0)
    monitor = FitMonitor("demo")
    result = averaged_sgd(np.array([1.0]), run_chunk, [8, 16, 4], output=lambda a: 2 * a,
                          step_size=lambda t: 1.0 / t, monitor=monitor,
                          objective=lambda p: float(p[0]), objective_every_checkpoint=False)
    h = monitor.history()
    np.testing.assert_array_equal(h["iteration"], [8, 24, 28])
    np.testing.assert_array_equal(h["n_gradients"], h["iteration"])
    np.testing.assert_array_equal(h["epoch_length"], [8, 16, 4])
    np.testing.assert_allclose(h["step_size"], [1 / 8, 1 / 24, 1 / 28])
    # the objective only at the last checkpoint: the output of the average of 1..28
    assert np.isnan(h["objective"][:2]).all() and h["objective"][2] == 2 * 14.5
    assert result.n_iter == 28 and result.x[0] == 29.0 and result.extra["average"][0] == 14.5
    assert result.extra["n_checkpoints"] == 3 and result.converged
    # run_chunk saw the previous checkpoint's point (None first)
    assert state["points"][0] is None and state["points"][1][0] == 2 * 4.5
    assert h["relative_change"][0] == pytest.approx(abs(9.0 - 1.0) / 1.0)


def test_averaged_sgd_stops_on_tol_callback_and_divergence():
    # the point 1, 1, ... never changes after the first checkpoint: tol stops at the second
    monitor = FitMonitor("demo")
    result = averaged_sgd(np.zeros(2), lambda t0, n, p: (np.zeros(2), np.zeros(2)), [8, 16, 32],
                          output=lambda a: a + 1.0, step_size=lambda t: 1.0,
                          monitor=monitor, tol=1e-12)
    assert result.n_iter == 24 and result.converged and result.criterion == 0.0
    stop = FitMonitor("demo", callback=lambda rec: rec["epoch"] == 0)
    result = averaged_sgd(np.ones(1), _counting_run()[0], [8, 16], output=lambda a: a,
                          step_size=lambda t: 1.0, monitor=stop)
    assert result.n_iter == 8 and len(stop.records) == 1 and "x" not in stop.history()
    with pytest.raises(DivergenceError, match="iteration 8"):
        averaged_sgd(np.ones(1), lambda t0, n, p: (np.array([np.inf]), np.zeros(1)), [8],
                     output=lambda a: a, step_size=lambda t: 1.0, monitor=FitMonitor("d"))


# ------------------------------------------------------------------------------ rules

def test_objective_stall_rule():
    rule = ObjectiveStall(1e-2)
    assert [rule({"objective": f}) for f in (10.0, 5.0, 4.99, 1.0)] == \
        [False, False, True, False]
    assert rule({"epoch": 3}) is False      # records without an objective are ignored
    assert rule({"objective": 1.0}) is True  # no decrease at all


def test_row_step_rules():
    rng = np.random.RandomState(3)
    X = rng.randn(20, 7) * (rng.rand(20, 7) < 0.4)
    sq = (X * X).sum(axis=1)
    np.testing.assert_allclose(squared_row_norms(X), sq, rtol=1e-14)
    np.testing.assert_allclose(squared_row_norms(sp.csr_matrix(X)), sq, rtol=1e-12,
                               atol=1e-12)
    big = np.full((2, 2), 3e38, dtype=np.float32)   # the squares overflow float32 only
    assert np.all(np.isfinite(squared_row_norms(big)))
    c = rng.uniform(0.5, 1.5, 20)
    assert row_curvature(sq, c, intercept=True, ridge=0.2) == pytest.approx(
        np.max(c * (sq + 1)) + 0.2)
    assert row_curvature(sq, c, ridge=0.2, reduce="mean") == pytest.approx(
        np.mean(c * sq) + 0.2)
    assert safe_sgd_step(4.0) == 0.25 and safe_sgd_step(0.0) == 1.0
    assert safe_sgd_step(0.1, alpha=1.0) == 0.49      # 1 - 2 eta alpha stays >= 0.02


# ------------------------------------------------------------------------------ epoch projection

def test_epoch_projection_hooks():
    seen = []

    def run_epoch(x, eta, n_steps, epoch):
        return x * 0.5

    monitor = FitMonitor("demo")
    result = epoch_projection(
        np.ones(3), run_epoch, lambda x: x, budget=100, first_epoch_length=8, eta0=1.0,
        step_decay=2.0, monitor=monitor, objective=lambda x: float(x.sum()),
        stop=lambda rec: seen.append(rec["epoch"]) or rec["epoch"] == 1,
        record_iteration=True, objective_every_epoch=False)
    h = monitor.history()
    assert seen == [0, 1] and result.extra["n_epochs"] == 2
    np.testing.assert_array_equal(h["iteration"], [8, 24])
    # without objective_every_epoch, only the budget's last epoch would evaluate it
    assert "objective" not in h
    monitor = FitMonitor("demo")
    epoch_projection(np.ones(3), run_epoch, lambda x: x, budget=100, first_epoch_length=8,
                     eta0=1.0, step_decay=2.0, monitor=monitor,
                     objective=lambda x: float(x.sum()), objective_every_epoch=False)
    h = monitor.history()
    assert "iteration" not in h and np.isnan(h["objective"][:-1]).all()
    assert h["objective"][-1] == pytest.approx(3 * 0.5 ** 3)
