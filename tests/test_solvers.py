"""Shared solver pieces: BB step, monitor convention, SVRG loop, epoch-projection loop."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skstoch._solvers import (DivergenceError, FitMonitor, epoch_lengths, epoch_projection,
                              project_l1_ball, rayleigh_power_iteration, stabilized_bb_step,
                              svrg)


def test_sbb_step_formula_and_bounds():
    rng = np.random.RandomState(0)
    for _ in range(100):
        dx, dg = rng.randn(10), rng.randn(10)
        m, eps = rng.randint(1, 50), rng.uniform(0, 1)
        step, kept = stabilized_bb_step(dx, dg, inner_iter=m, epsilon=eps, previous=1.0)
        expected = dx @ dx / (m * (abs(dx @ dg) + eps * dx @ dx))
        assert not kept and step == pytest.approx(expected, rel=1e-14)
        if eps > 0:
            assert step <= 1.0 / (m * eps) * (1 + 1e-12)  # eq. 15 upper bound (with 1/m)
    # with dg = L dx (a quadratic), SBB0 is 1/(m L): the inverse curvature
    dx = rng.randn(5)
    step, _ = stabilized_bb_step(dx, 4.0 * dx, inner_iter=2, epsilon=0.0, previous=1.0)
    assert step == pytest.approx(1 / 8)
    # lower bound of eq. 15: 1 / (m (L + eps)) when ||dg|| <= L ||dx||
    step, _ = stabilized_bb_step(dx, -4.0 * dx, inner_iter=1, epsilon=0.5, previous=1.0)
    assert step >= 1 / (4.0 + 0.5) - 1e-15


def test_sbb_guards_keep_previous_step():
    assert stabilized_bb_step(np.zeros(3), np.ones(3), inner_iter=1, epsilon=0.1,
                              previous=0.25) == (0.25, True)
    dx = np.array([1.0, 0.0])
    dg = np.array([0.0, 1.0])  # no curvature along dx
    assert stabilized_bb_step(dx, dg, inner_iter=1, epsilon=0.0, previous=0.5) == (0.5, True)
    assert stabilized_bb_step(dx, dg, inner_iter=1, epsilon=2.0, previous=0.3) == (0.5, False)
    assert stabilized_bb_step(dx, np.array([np.nan, 0]), inner_iter=1, epsilon=0.0,
                              previous=0.5) == (0.5, True)


def test_monitor_records_prints_and_stops(capsys):
    seen = []
    monitor = FitMonitor("Demo", verbose=1, callback=lambda rec: seen.append(rec) or rec["epoch"] == 2)
    stops = [monitor.record(epoch=e, objective=1.0 / (e + 1), x=np.full(2, e)) for e in range(4)]
    assert stops == [False, False, True, False]
    assert monitor.stopped_by_callback
    out = capsys.readouterr().out
    assert out.count("[Demo]") == 4 and "objective=0.5" in out
    assert seen[1]["x"].tolist() == [1, 1] and "time" in seen[1]
    history = monitor.history()
    np.testing.assert_allclose(history["objective"], [1, 1 / 2, 1 / 3, 1 / 4])
    assert np.all(np.diff(history["time"]) >= 0)
    assert "x" not in history


def test_monitor_warns_names_criterion_and_detects_divergence():
    monitor = FitMonitor("Demo")
    with pytest.warns(ConvergenceWarning, match="relative change is 0.5.*tol=0.001"):
        monitor.finish(converged=False, criterion="relative change", value=0.5, tol=1e-3,
                       max_iter=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        monitor.finish(converged=True, criterion="x", value=0.0, tol=1.0, max_iter=1)
    with pytest.raises(DivergenceError, match="objective became inf"):
        monitor.record(epoch=0, objective=np.inf)


def _least_squares(rng, n=200, d=5):
    A = rng.randn(n, d)
    b = A @ rng.randn(d) + 0.1 * rng.randn(n)
    return A, b, np.linalg.lstsq(A, b, rcond=None)[0]


def test_svrg_loop_with_sbb_converges_to_least_squares_optimum():
    rng = np.random.RandomState(0)
    A, b, x_star = _least_squares(rng)
    n = A.shape[0]

    def full_gradient(x):
        r = A @ x - b
        return 0.5 * r @ r / n, A.T @ r / n

    def inner_loop(x, snapshot, mu, step, epoch):
        idx = np.random.RandomState(epoch).randint(n, size=n)  # numpy stand-in for a kernel
        for i in idx:
            gi = A[i] * (A[i] @ x - b[i]) - A[i] * (A[i] @ snapshot - b[i]) + mu
            x = x - step * gi
        return x

    result = svrg(np.zeros(5), full_gradient, inner_loop, step_size="sbb", eta0=0.01,
                  inner_iter=n, max_iter=50, tol=1e-10, monitor=FitMonitor("t"), epsilon=0.0)
    np.testing.assert_allclose(result.x, x_star, atol=1e-6)
    assert result.converged and result.n_iter < 50


def test_svrg_fixed_step_keeps_eta0_and_reports_divergence():
    rng = np.random.RandomState(1)
    A, b, _ = _least_squares(rng)
    n = A.shape[0]
    steps = []
    monitor = FitMonitor("t", callback=lambda rec: steps.append(rec["step_size"]))

    def full_gradient(x):
        r = A @ x - b
        return 0.5 * r @ r / n, A.T @ r / n

    svrg(np.zeros(5), full_gradient, lambda x, s, mu, step, e: x - step * mu, step_size="fixed",
         eta0=0.1, inner_iter=1, max_iter=5, tol=0.0, monitor=monitor)
    assert steps == [0.1] * 5
    with pytest.raises(DivergenceError), np.errstate(over="ignore", invalid="ignore"):
        svrg(np.zeros(5), full_gradient, lambda x, s, mu, step, e: x - 1e3 * step * mu,
             step_size="fixed", eta0=10.0, inner_iter=1, max_iter=400, tol=0.0,
             monitor=FitMonitor("t"))


def test_epoch_lengths_match_paper_budget_accounting():
    lengths = epoch_lengths(2000, 8)
    assert lengths == [8, 16, 32, 64, 128, 256, 512] and sum(lengths) == 1016
    assert sum(epoch_lengths(4000, 8)) == 2040 and len(epoch_lengths(4000, 8)) == 8
    assert sum(epoch_lengths(2000, 8, use_full_budget=True)) == 2000
    # ORDA: T_k + 1 gradient calls per epoch (Theorem 3's accounting)
    orda = epoch_lengths(2000, 16, extra_per_epoch=1)
    assert sum(orda) + len(orda) <= 2000 < sum(orda) + len(orda) + 2 * orda[-1] + 1
    assert epoch_lengths(5, 8) == []


def test_epoch_projection_loop_stays_feasible_and_halves_steps():
    rng = np.random.RandomState(2)
    target = rng.randn(10) * 3
    records = []

    def run_epoch(x, eta, n_steps, epoch):  # averaged SGD on 0.5||x - target||^2 with noise
        noise = np.random.RandomState(epoch).randn(n_steps, 10)
        total = np.zeros_like(x)
        for t in range(n_steps):
            total += x
            x = x - eta * (x - target + 0.1 * noise[t])
        return total / n_steps

    result = epoch_projection(np.zeros(10), run_epoch, lambda x: project_l1_ball(x, 2.0),
                              budget=4000, first_epoch_length=8, eta0=0.5, step_decay=2.0,
                              monitor=FitMonitor("t", callback=records.append),
                              objective=lambda x: 0.5 * np.sum((x - target) ** 2))
    np.testing.assert_allclose(result.x, project_l1_ball(target, 2.0), atol=0.05)
    assert np.abs(result.x).sum() <= 2.0 + 1e-12
    assert result.extra["n_projections"] == 8 and result.n_iter == 2040
    steps = [r["step_size"] for r in records]
    assert steps == [0.5 / 2**k for k in range(8)]
    assert all(np.abs(r["x"]).sum() <= 2.0 + 1e-12 for r in records)


def test_epoch_projection_rejects_a_budget_below_the_first_epoch():
    # without the check no epoch runs and x0 comes back looking like a converged fit
    with pytest.raises(ValueError, match="max_iter=5 is smaller than the first epoch"):
        epoch_projection(np.zeros(3), lambda x, eta, n, k: x, lambda x: x, budget=5,
                         first_epoch_length=8, eta0=0.1, step_decay=2.0,
                         monitor=FitMonitor("t"))


def test_rayleigh_power_iteration_finds_the_largest_eigenvalue():
    rng = np.random.RandomState(0)
    Q, _ = np.linalg.qr(rng.randn(6, 6))
    H = Q @ np.diag([5.0, 2.0, 1.0, 0.5, 0.1, 0.0]) @ Q.T
    assert abs(rayleigh_power_iteration(lambda v: H @ v, rng.randn(6), 100) - 5.0) < 1e-8
    assert rayleigh_power_iteration(lambda v: 0 * v, np.ones(3)) == 0.0
