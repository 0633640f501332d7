"""Tests of ConstrainedLasso / ConstrainedLassoCV (paper 001, section 5.1)."""
import math
import pickle
import runpy
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, LinearRegression, Ridge

from skstoch import ConstrainedLasso, ConstrainedLassoCV
from skstoch._fast import _lasso
from skstoch._solvers import project_l1_ball
from skstoch._solvers._lasso_fista import fista_gram
from skstoch._solvers._lasso_problem import LSProblem, gram_block
from skstoch.utils import make_dataset
from skstoch.utils._random_reference import ReferenceStream

STOCHASTIC = ["epro_sgd", "epro_orda", "epro_svrg", "sgd", "oneproj"]
ALL_SOLVERS = ["fista"] + STOCHASTIC


def make_problem(n=300, d=20, k=4, density=1.0, noise=0.3, seed=0, offset=2.0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    if density < 1:
        X *= rng.rand(n, d) < density
    w = np.zeros(d)
    w[:k] = rng.randn(k)
    y = X @ w + noise * rng.randn(n) + offset
    return X, y


def objective(X, y, w, b, alpha, sw=None):
    sw = np.ones(X.shape[0]) if sw is None else sw
    r = X @ w + b - y
    return 0.5 * np.sum(sw * r * r) / sw.sum() + alpha * w @ w


def exact(X, y, alpha, radius, **kw):
    return ConstrainedLasso(l2_reg=alpha, radius=radius, solver="fista", tol=1e-14,
                            max_iter=20000, **kw).fit(X, y)


def tables(X, y, cw, alpha, radius, seed, stream, fit_intercept=True):
    """The kernels' per-problem tables."""
    return _lasso.LassoData(make_dataset(X), y, cw, alpha, radius, fit_intercept, seed, stream)


# --------------------------------------------------------------------- numpy references

def ref_epro_epoch(X, y, cw, w, b, eta, alpha, lam, radius, T, seed, stream, fit_intercept,
                   indicator=None):
    """Paper Alg. 1 steps 4-8 (penalty subgradient truncated at zero), numpy.
    ``indicator`` (a list) receives the penalty's indicator [||w_t||_1 > radius] per step."""
    st = ReferenceStream(seed, stream)
    a = 1 - 2 * eta * alpha
    w = w.copy()
    avg, b_sum = np.zeros_like(w), 0.0
    for _ in range(T):
        i = st.randint(X.shape[0])
        g = eta * cw[i] * (X[i] @ w + b - y[i])
        shrink = eta * lam if np.abs(w).sum() > radius else 0.0
        if indicator is not None:
            indicator.append(shrink > 0)
        avg += w
        b_sum += b
        v = a * w
        w = np.sign(v) * np.maximum(np.abs(v) - shrink, 0) - g * X[i]
        if fit_intercept:
            b -= g
    return w, b, avg / T, b_sum / T, st.counter


def ref_orda(X, y, cw, x, b, eta, alpha, lam, radius, T, seed, stream, at_u=False):
    """Paper Alg. 2 with g = alpha ||w||^2 (intercept: g = 0), gradient at x_t (or at the
    extrapolated point u_t, the original ORDA), numpy."""
    st = ReferenceStream(seed, stream)
    x1, z, S = x.copy(), x.copy(), np.zeros_like(x)
    b1, zb, Sb = b, b, 0.0
    x = x.copy()
    for t in range(1, T + 2):
        theta = 2 / (t + 1)
        u, ub = (1 - theta) * x + theta * z, (1 - theta) * b + theta * zb
        i = st.randint(X.shape[0])
        p, pb = (u, ub) if at_u else (x, b)
        cr = cw[i] * (X[i] @ p + pb - y[i])
        G = cr * X[i] + (lam * np.sign(p) if np.abs(p).sum() > radius else 0.0)
        S += t * G
        Sb += t * cr
        gbar, gbar_b = 2 * S / (t * (t + 1)), 2 * Sb / (t * (t + 1))
        a = 4 * math.sqrt(t + 1) / (t * eta)
        gam = t ** 1.5 / eta
        z, zb = (a * x1 - gbar) / (a + 2 * alpha), b1 - gbar_b / a
        x, b = (gam * u - G) / (gam + 2 * alpha), ub - cr / gam
    return x, b


def ref_projected_sgd(X, y, cw, w, b, eta0, decay, alpha, radius, T, seed, stream):
    st = ReferenceStream(seed, stream)
    w_sum = np.zeros_like(w)
    w = w.copy()
    for t in range(1, T + 1):
        eta = eta0 / (1 + decay * (t - 1))
        i = st.randint(X.shape[0])
        g = eta * cw[i] * (X[i] @ w + b - y[i])
        w_sum += w
        w = project_l1_ball((1 - 2 * eta * alpha) * w - g * X[i], radius)
        b -= g
    return w, b, w_sum


def ref_svrg_epoch(X, y, cw, r_snap, mu, mu_b, w, b, eta, alpha, nu, T, seed, stream):
    """prox-SVRG steps on F + nu ||w||_1 ('epro_svrg', beyond the paper), numpy."""
    st = ReferenceStream(seed, stream)
    a, h = 1 - 2 * eta * alpha, eta * nu
    w = w.copy()
    for _ in range(T):
        i = st.randint(X.shape[0])
        delta = cw[i] * (X[i] @ w + b - y[i] - r_snap[i])
        v = a * w - eta * (mu + delta * X[i])
        w = np.sign(v) * np.maximum(np.abs(v) - h, 0)
        b -= eta * (mu_b + delta)
    return w, b, st.counter


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("alpha", [0.0, 0.4])
@pytest.mark.parametrize("nu", [0.0, 0.15, 1.0])
@pytest.mark.parametrize("window", [0, 7])
def test_svrg_epoch_matches_reference(sparse, alpha, nu, window):
    """The lazy sparse step (closed-form drift of untouched coordinates, including sign
    changes driven by |mu_j| > nu and deaths at zero) equals the direct numpy step."""
    rng = np.random.RandomState(0)
    n, d = 40, 25
    X = rng.randn(n, d) * (rng.rand(n, d) < 0.2)
    y, cw = rng.randn(n), rng.uniform(0.5, 1.5, n)
    r_snap, mu, w0 = 0.3 * rng.randn(n), 0.3 * rng.randn(d), 0.2 * rng.randn(d)
    M = sp.csr_matrix(X) if sparse else X
    w = w0.copy()
    b, counter = _lasso.svrg_epoch(tables(M, y, cw, alpha, np.inf, 11, 2), r_snap, mu, 0.1,
                                   w, 0.5, 0.05, nu, 300, 0, window)
    rw, rb, rcounter = ref_svrg_epoch(X, y, cw, r_snap, mu, 0.1, w0, 0.5, 0.05, alpha, nu,
                                      300, 11, 2)
    np.testing.assert_allclose(w, rw, rtol=0, atol=1e-12)
    assert b == pytest.approx(rb, abs=1e-12) and counter == rcounter
    if nu == 0.15:
        # the case exercises both dynamics: coordinates pushed across zero by the drift
        # and coordinates held at zero
        assert np.any(np.sign(rw) * np.sign(w0) < 0) and np.any(rw == 0)


def test_epoch_kernels_reject_a_step_too_large_for_the_ridge_term():
    """eta * alpha >= 0.5 would flip the sign of the ridge shrink: both epoch kernels
    raise before touching w."""
    X, y = make_problem(n=20, d=6, density=0.5, seed=0)
    cw, w = np.ones(20), np.full(6, 0.3)
    with pytest.raises(ValueError, match="too large for the ridge term"):
        _lasso.epro_sgd_epoch(tables(X, y, cw, 0.5, 1.0, 0, 0), w, 0.0, 1.0, 0.0, 5, 0,
                              np.empty(6))
    with pytest.raises(ValueError, match="too large for the ridge term"):
        _lasso.svrg_epoch(tables(X, y, cw, 0.6, np.inf, 0, 0), np.zeros(20), np.zeros(6),
                          0.0, w, 0.0, 1.0, 0.0, 5, 0)
    np.testing.assert_array_equal(w, 0.3)


def test_epro_svrg_converges_linearly_on_correlated_features():
    """Beyond SGD's O(1/T): on correlated features, 'epro_svrg' (lam='auto', whose
    penalty is searched across epochs) reaches 1e-6 relative suboptimality, far below
    Epro-SGD at the same budget (about 1.5e-3); the full gradients are counted in the
    budget (n per epoch)."""
    rng = np.random.RandomState(0)
    n, d = 2000, 30
    X = rng.randn(n, d) @ (np.eye(d) + 0.8 * rng.rand(d, d)) / 4
    y = X[:, :4] @ rng.randn(4) + 0.3 * rng.randn(n)
    ref = exact(X, y, 0.01, 1.0)
    f_star = objective(X, y, ref.coef_, ref.intercept_, 0.01)
    for M in (X, sp.csr_matrix(X)):
        m = ConstrainedLasso(l2_reg=0.01, radius=1.0, solver="epro_svrg", max_iter=30 * n,
                             tol=0, random_state=0).fit(M, y)
        rel = (objective(X, y, m.coef_, m.intercept_, 0.01) - f_star) / f_star
        assert -1e-12 <= rel < 1e-6, rel
        sgd = ConstrainedLasso(l2_reg=0.01, radius=1.0, solver="epro_sgd", max_iter=30 * n,
                               tol=0, random_state=0).fit(M, y)
        rel_sgd = (objective(X, y, sgd.coef_, sgd.intercept_, 0.01) - f_star) / f_star
        assert rel < rel_sgd / 100, (rel, rel_sgd)
        assert m.lam_ == pytest.approx(ref.lam_, rel=1e-3)   # the searched penalty
        lengths = m.history_["epoch_length"]
        assert m.budget_used_ == lengths.sum() + n * len(lengths) <= 30 * n
        assert np.all(lengths[1:-1] == 2 * lengths[:-2])      # doubling epochs


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("lam", [0.0, 0.3, 5.0])
@pytest.mark.parametrize("window", [0, 7])
def test_epro_sgd_epoch_matches_reference(sparse, lam, window):
    X, y = make_problem(n=40, d=25, density=0.3, seed=1)
    cw = np.random.RandomState(2).uniform(0.5, 1.5, 40)
    w0 = np.random.RandomState(3).randn(25) * 0.2
    M = sp.csr_matrix(X) if sparse else X
    w, w_avg = w0.copy(), np.empty(25)
    b, b_avg, counter = _lasso.epro_sgd_epoch(tables(M, y, cw, 1.0, 0.8, 11, 2), w, 0.5,
                                              0.02, lam, 90, 0, w_avg, window)
    rw, rb, ravg, rbavg, rcounter = ref_epro_epoch(X, y, cw, w0, 0.5, 0.02, 1.0, lam, 0.8,
                                                   90, 11, 2, True)
    np.testing.assert_allclose(w, rw, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w_avg, ravg, rtol=0, atol=1e-11)
    assert b == pytest.approx(rb, abs=1e-12) and b_avg == pytest.approx(rbavg, abs=1e-12)
    assert counter == rcounter   # the same draws of the counter-based stream


@pytest.mark.parametrize("sparse", [False, True])
def test_orda_and_projected_sgd_match_reference(sparse):
    X, y = make_problem(n=30, d=12, density=0.5, seed=4)
    cw = np.ones(30)
    M = sp.csr_matrix(X) if sparse else X
    x0 = project_l1_ball(np.random.RandomState(5).randn(12), 1.0)
    x = x0.copy()
    b, _ = _lasso.orda_epoch(tables(M, y, cw, 0.5, 1.0, 7, 0), x, 0.1, 0.5, 0.2, 20, 0)
    rx, rb = ref_orda(X, y, cw, x0, 0.1, 0.5, 0.5, 0.2, 1.0, 20, 7, 0)
    np.testing.assert_allclose(x, rx, atol=1e-12)
    assert b == pytest.approx(rb, abs=1e-12)
    xu = x0.copy()
    bu, _ = _lasso.orda_epoch(tables(M, y, cw, 0.5, 1.0, 7, 0), xu, 0.1, 0.5, 0.2, 20, 0,
                              True)
    rxu, rbu = ref_orda(X, y, cw, x0, 0.1, 0.5, 0.5, 0.2, 1.0, 20, 7, 0, at_u=True)
    np.testing.assert_allclose(xu, rxu, atol=1e-12)
    assert bu == pytest.approx(rbu, abs=1e-12)
    assert np.abs(xu - x).max() > 1e-6     # the two gradient points differ
    w, w_sum = x0.copy(), np.zeros(12)
    b, _, _ = _lasso.projected_sgd(tables(M, y, cw, 0.5, 1.0, 7, 1), w, 0.0, 0.05, 1.0, 0,
                                   25, 0, w_sum)
    rw, rb, rsum = ref_projected_sgd(X, y, cw, x0, 0.0, 0.05, 1.0, 0.5, 1.0, 25, 7, 1)
    np.testing.assert_allclose(w, rw, atol=1e-12)
    np.testing.assert_allclose(w_sum, rsum, atol=1e-12)


@pytest.mark.parametrize("eta, alpha, lam, radius, window", [
    (0.3, 1.0, 0.05, 1.0, 0),       # strong ridge: the scale decays (closed-form sums)
    (0.3, 1e-4, 0.05, 1.0, 0),      # weak ridge: prefix sums of the scale
    (0.3, 0.0, 0.05, 1.0, 0),       # no ridge: constant scale
    (0.5, 0.01, 0.5, 2.0, 64),      # large multiplier, short windows: many zero crossings
    (0.5, 0.01, 0.02, 2.0, 0),      # penalty switching on and off around the radius
])
def test_lazy_sparse_epoch_on_wide_data_matches_dense(eta, alpha, lam, radius, window):
    """Long epoch, renormalization windows, zero crossings found by the radix heap, the
    penalty's indicator switching: the lazy CSR epoch equals the direct dense one."""
    rng = np.random.RandomState(0)
    X = sp.random(200, 500, density=0.02, random_state=rng, format="csr")
    y = rng.randn(200)
    cw = np.ones(200)
    w0 = project_l1_ball(rng.randn(500), 3.0)
    out = []
    for M in (X, X.toarray()):
        w, avg = w0.copy(), np.empty(500)
        b = _lasso.epro_sgd_epoch(tables(M, y, cw, alpha, radius, 3, 0), w, 0.0, eta, lam,
                                  3000, 0, avg, window)
        out.append((w, avg, b))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=0, atol=1e-10)
    assert out[0][2][0] == pytest.approx(out[1][2][0], abs=1e-10)
    assert out[0][2][1] == pytest.approx(out[1][2][1], abs=1e-10)
    # the cases exercise zero crossings: coordinates of the start went to exactly zero
    assert np.sum((w0 != 0) & (out[1][0] == 0)) > 0


def test_lazy_sparse_epoch_penalty_switches_like_dense():
    """The l1 norm of the lazy iterate (which decides the penalty at every step) is exact:
    with a radius that the iterate crosses often, the lazy CSR epoch equals the numpy
    reference of the paper's step."""
    rng = np.random.RandomState(5)
    X = sp.random(60, 80, density=0.1, random_state=rng, format="csr")
    y = rng.randn(60)
    cw = np.ones(60)
    w0 = np.zeros(80)
    w, avg = w0.copy(), np.empty(80)
    b, b_avg, _ = _lasso.epro_sgd_epoch(tables(X, y, cw, 0.05, 0.6, 9, 1), w, 0.0, 0.4, 0.3,
                                        400, 0, avg, 0)
    on = []
    rw, rb, ravg, rbavg, _ = ref_epro_epoch(X.toarray(), y, cw, w0, 0.0, 0.4, 0.05, 0.3, 0.6,
                                            400, 9, 1, True, indicator=on)
    np.testing.assert_allclose(w, rw, rtol=0, atol=1e-12)
    np.testing.assert_allclose(avg, ravg, rtol=0, atol=1e-12)
    assert b == pytest.approx(rb, abs=1e-12) and b_avg == pytest.approx(rbavg, abs=1e-12)
    switches = int(np.sum(np.diff(np.array(on, dtype=int)) != 0))
    assert switches >= 20 and 0.05 < np.mean(on) < 0.95


@pytest.mark.parametrize("radius", [0.0, 0.3, 3.0, 1e6])
@pytest.mark.parametrize("window", [0, 7])
@pytest.mark.parametrize("eta0, decay, t0", [(0.3, 0.0, 0), (0.45, 1.0, 0), (0.2, 0.4, 50)])
def test_lazy_sparse_projected_sgd_matches_dense(radius, window, eta0, decay, t0):
    """The lazy CSR projected SGD (heap projection, prefix sums, renormalization by window
    and by scale) against the direct dense step with an exact projection, same draws."""
    rng = np.random.RandomState(1)
    X = sp.random(120, 300, density=0.03, random_state=rng, format="csr")
    y = rng.randn(120)
    cw = rng.uniform(0.5, 1.5, 120)
    w0 = project_l1_ball(rng.randn(300), min(radius, 2.0))
    out = []
    for M in (X, X.toarray()):
        w, w_sum = w0.copy(), np.zeros(300)
        b, b_sum, counter = _lasso.projected_sgd(tables(M, y, cw, 1.0, radius, 3, 0), w, 0.2,
                                                 eta0, decay, t0, 1500, 0, w_sum, window)
        out.append((w, w_sum, b, b_sum, counter))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=0, atol=1e-8)
    assert out[0][2] == pytest.approx(out[1][2], abs=1e-10)
    assert out[0][3] == pytest.approx(out[1][3], abs=1e-8)
    assert out[0][4] == out[1][4]
    assert np.abs(out[0][0]).sum() <= radius * (1 + 1e-12) + 1e-15


# --------------------------------------------------------------------- the problem

def test_gradient_matches_finite_differences():
    X, y = make_problem(n=50, d=6)
    sw = np.random.RandomState(1).uniform(0.1, 2, 50)
    P = LSProblem(X, make_dataset(X), y, sw, 0.7, 1.0, True)
    w = np.random.RandomState(2).randn(6)
    b = 0.3
    grad = P.gradient(w, b)
    eps = 1e-6
    fd = np.array([(P.objective(w + eps * e, b) - P.objective(w - eps * e, b)) / (2 * eps)
                   for e in np.eye(6)])
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    assert P.objective(w, b) == pytest.approx(objective(X, y, w, b, 0.7, sw))
    # the optimal intercept zeroes the intercept derivative
    b_opt = P.optimal_intercept(w)
    assert np.sum(sw * (X @ w + b_opt - y)) == pytest.approx(0, abs=1e-9)


def test_fista_matches_lasso_at_matching_radius():
    X, y = make_problem(n=200, d=30)
    lasso = Lasso(alpha=0.05, tol=1e-12, max_iter=100000).fit(X, y)
    radius = np.abs(lasso.coef_).sum()
    model = exact(X, y, 0.0, radius)
    np.testing.assert_allclose(model.coef_, lasso.coef_, atol=1e-7)
    assert model.intercept_ == pytest.approx(lasso.intercept_, abs=1e-7)
    assert model.dual_gap_ < 1e-10


def test_large_radius_gives_ridge():
    X, y = make_problem(n=150, d=10)
    alpha = 0.3
    # (1/2n)||r||^2 + alpha ||w||^2  ==  (1/2n) (||r||^2 + 2 n alpha ||w||^2)
    ridge = Ridge(alpha=2 * alpha * X.shape[0]).fit(X, y)
    radius = 2 * np.abs(ridge.coef_).sum()
    model = exact(X, y, alpha, radius)
    np.testing.assert_allclose(model.coef_, ridge.coef_, atol=1e-9)
    assert model.intercept_ == pytest.approx(ridge.intercept_, abs=1e-9)


def test_fista_gap_bounds_suboptimality_and_kkt():
    X, y = make_problem(n=200, d=25)
    radius = 1.0
    ref = exact(X, y, 0.2, radius)
    f_star = objective(X, y, ref.coef_, ref.intercept_, 0.2)
    loose = ConstrainedLasso(l2_reg=0.2, radius=radius, solver="fista", tol=1e-2).fit(X, y)
    sub = objective(X, y, loose.coef_, loose.intercept_, 0.2) - f_star
    assert -1e-12 <= sub <= loose.dual_gap_ + 1e-12
    # KKT: the constraint is active and the gradient is -theta sign(w) on the support
    assert np.abs(ref.coef_).sum() == pytest.approx(radius, rel=1e-9)
    P = LSProblem(X, make_dataset(X), y, np.ones(200), 0.2, radius, True)
    g = P.gradient(ref.coef_, ref.intercept_)
    support = np.abs(ref.coef_) > 1e-10
    theta = np.abs(g[support])
    np.testing.assert_allclose(theta, theta.max(), rtol=1e-6)
    assert np.all(np.abs(g[~support]) <= theta.max() * (1 + 1e-6))


@pytest.mark.parametrize("sparse", [False, True])
def test_gram_block_is_the_centered_weighted_gram(sparse):
    X, y = make_problem(n=70, d=12, density=0.4, seed=8)
    sw = np.random.RandomState(1).uniform(0, 2, 70)
    M = sp.csr_matrix(X) if sparse else X
    P = LSProblem(M, make_dataset(M), y, sw, 0.1, 1.0, True)
    cols = np.array([0, 3, 4, 11])
    xm = sw @ X / sw.sum()
    Xc = (X - xm)[:, cols]
    expected = Xc.T @ (sw[:, None] * Xc) / sw.sum()
    np.testing.assert_allclose(gram_block(P, cols, chunk_elems=40), expected, atol=1e-13)
    np.testing.assert_allclose(gram_block(P, np.arange(12))[np.ix_(cols, cols)], expected,
                               atol=1e-13)


def _working_set_fit_equals_plain(X, y, sw, atol, **params):
    """The FISTA fit with working sets, checked against the one without (same solution
    within ``atol``)."""
    common = dict(l2_reg=0.05, solver="fista", max_iter=50000, **params)
    ws = ConstrainedLasso(working_set=True, **common).fit(X, y, sample_weight=sw)
    plain = ConstrainedLasso(working_set=False, **common).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(ws.coef_, plain.coef_, atol=atol)
    assert ws.intercept_ == pytest.approx(plain.intercept_, abs=atol)
    return ws


@pytest.mark.parametrize("sparse", [False, True])
def test_working_set_fista_equals_plain_fista(sparse):
    """d = 600 > 256: several growing working sets, then the full certificate."""
    X, y = make_problem(n=300, d=600, k=8, density=0.3, noise=0.3, seed=5)
    X = sp.csr_matrix(X) if sparse else X
    sw = np.random.RandomState(0).uniform(0.5, 2.0, 300)
    ws = _working_set_fit_equals_plain(X, y, sw, 1e-8, radius=2.0, tol=1e-13)
    assert ws.dual_gap_ <= 1e-13 * ws.history_["objective"][0] * 10 + 1e-15
    # the working sets were used (the first one is smaller than d)
    assert 0 < ws.history_["working_set_size"][1] < 600


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("kind", ["dense", "csr", "csr32"])
def test_lsproblem_xty_is_the_centered_weighted_product(kind, fit_intercept):
    X, y = make_problem(n=80, d=15, density=0.4, seed=4)
    sw = np.random.RandomState(3).uniform(0, 2, 80)
    M = {"dense": X, "csr": sp.csr_matrix(X),
         "csr32": sp.csr_matrix(X.astype(np.float32))}[kind]
    Xd = M.toarray().astype(np.float64) if sp.issparse(M) else M
    P = LSProblem(M, make_dataset(M, float32=True), y, sw, 0.1, 1.0, fit_intercept,
                  with_xty=True)
    plain = LSProblem(M, make_dataset(M, float32=True), y, sw, 0.1, 1.0, fit_intercept)
    xm = sw @ Xd / sw.sum() if fit_intercept else np.zeros(15)
    ym = sw @ y / sw.sum() if fit_intercept else 0.0
    np.testing.assert_allclose(P.xty, (Xd - xm).T @ (sw * (y - ym)) / sw.sum(), rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_array_equal(P.x_mean, plain.x_mean)
    assert plain.xty is None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sparse_gram_columns_is_the_gram_and_the_columns(dtype):
    X, _ = make_problem(n=90, d=40, density=0.3, seed=3)
    X = sp.csr_matrix(X.astype(dtype))
    sw = np.random.RandomState(2).uniform(0, 2, 90)
    sw[::7] = 0.0
    cols = np.array([1, 5, 6, 30, 39])
    col_pos = np.full(40, -1, dtype=np.int32)
    col_pos[cols] = np.arange(5, dtype=np.int32)
    G = np.zeros((5, 5))
    indptr, indices, values = _lasso.sparse_gram_columns(make_dataset(X, float32=True), col_pos,
                                                         sw, G)
    Xs = X[:, cols].astype(np.float64)
    np.testing.assert_allclose(G, (Xs.T @ sp.diags(sw) @ Xs).toarray(), rtol=1e-12,
                               atol=1e-12)
    got = sp.csr_matrix((values, indices, indptr), shape=(90, 5))
    assert abs(got - Xs).max() == 0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_working_set_columns_path_equals_plain_fista(dtype):
    """d = 2400: the working sets (256, 512) hold at most 1/8 of the features, so X w comes
    from their columns; same solution as FISTA on all of X."""
    X, y = make_problem(n=400, d=2400, k=40, density=0.03, noise=0.3, seed=6)
    X = sp.csr_matrix(X.astype(dtype))
    sw = np.random.RandomState(0).uniform(0.5, 2.0, 400)
    ws = _working_set_fit_equals_plain(X, y, sw, 1e-7, radius=3.0, tol=1e-12)
    sizes = ws.history_["working_set_size"]
    assert 0 < sizes[1] and 8 * max(sizes) <= 2400
    # the last record (X w from the columns) and the returned gap (its gradient) are those
    # of the returned point
    Xd = X.toarray().astype(np.float64)
    w, b = ws.coef_, ws.intercept_
    assert ws.history_["objective"][-1] == pytest.approx(
        objective(Xd, y, w, b, 0.05, sw), rel=1e-12)
    grad = Xd.T @ (sw * (Xd @ w + b - y)) / sw.sum() + 0.1 * w
    gap = float(grad @ w) + 3.0 * np.max(np.abs(grad))
    assert ws.dual_gap_ == pytest.approx(gap, rel=1e-6, abs=1e-15)
    assert ws.history_["gap"][-1] == ws.dual_gap_


def test_lam_is_the_lasso_penalty_at_the_matching_radius():
    X, y = make_problem(n=200, d=30)
    lasso = Lasso(alpha=0.05, tol=1e-12, max_iter=100000).fit(X, y)
    model = exact(X, y, 0.0, np.abs(lasso.coef_).sum())
    assert model.lam_ == pytest.approx(0.05, rel=1e-6)


def test_auto_lam_avoids_the_interior_bias_on_sparse_wide_data():
    """Sparse wide design: the SGD noise keeps the raw iterate's l1 norm above the radius,
    so a fixed lam far above the multiplier acts as a Lasso penalty and the output lands
    strictly inside the ball; lam='auto' (the multiplier estimate) does not."""
    rng = np.random.RandomState(0)
    n, d = 4000, 2000
    X = sp.random(n, d, density=0.01, random_state=rng, format="csr", data_rvs=rng.randn)
    w = np.zeros(d)
    w[:20] = rng.randn(20)
    y = X @ w + 0.5 * rng.randn(n)
    ref = exact(X, y, 0.01, 2.0)
    f_star = objective(X, y, ref.coef_, ref.intercept_, 0.01)
    common = dict(l2_reg=0.01, radius=2.0, solver="epro_sgd", max_iter=5 * n, tol=0,
                  random_state=0, track_objective=False)
    auto = ConstrainedLasso(lam="auto", **common).fit(X, y)
    fixed = ConstrainedLasso(lam=30 * ref.lam_, **common).fit(X, y)
    gap = lambda m: (objective(X, y, m.coef_, m.intercept_, 0.01) - f_star) / f_star
    assert np.abs(fixed.coef_).sum() < 0.95 * 2.0
    assert gap(auto) < gap(fixed) / 3
    assert np.abs(auto.coef_).sum() == pytest.approx(2.0, rel=1e-9)
    assert auto.lam_ == pytest.approx(ref.lam_, rel=0.3)


def test_sample_weight_equals_repetition():
    X, y = make_problem(n=60, d=8)
    sw = np.random.RandomState(0).randint(0, 4, 60)
    a = exact(X, y, 0.1, 1.0).set_params().fit(X, y, sample_weight=sw)
    b = exact(np.repeat(X, sw, axis=0), np.repeat(y, sw), 0.1, 1.0)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-10)
    assert a.intercept_ == pytest.approx(b.intercept_, abs=1e-10)


# --------------------------------------------------------------------- stochastic solvers

@pytest.mark.parametrize("solver", ALL_SOLVERS)
@pytest.mark.parametrize("sparse", [False, True])
def test_coef_always_feasible(solver, sparse):
    X, y = make_problem(n=200, d=15, density=0.5)
    X = sp.csr_matrix(X) if sparse else X
    for radius in (0.0, 0.1, 2.0):
        m = ConstrainedLasso(l2_reg=0.5, radius=radius, solver=solver, max_iter=800, tol=0,
                             random_state=0).fit(X, y)
        assert np.abs(m.coef_).sum() <= radius + 1e-12
        assert np.isfinite(m.intercept_)


@pytest.mark.parametrize("solver", STOCHASTIC)
def test_stochastic_solvers_reach_exact_optimum(solver):
    """Paper's alpha = 1, radius = 0.5, a generated sparse regression problem."""
    X, y = make_problem(n=2000, d=40, k=5, noise=0.5, seed=3)
    X /= np.sqrt(40)   # unit-scale rows, as in the paper's normalized data
    ref = exact(X, y, 1.0, 0.5)
    f_star = objective(X, y, ref.coef_, ref.intercept_, 1.0)
    gaps = []
    for seed in range(3):
        m = ConstrainedLasso(l2_reg=1.0, radius=0.5, solver=solver, max_iter=40 * 2000,
                             random_state=seed, tol=0, track_objective=False).fit(X, y)
        gaps.append((objective(X, y, m.coef_, m.intercept_, 1.0) - f_star) / f_star)
    assert min(gaps) >= -1e-12
    assert np.mean(gaps) < 1e-3, gaps


@pytest.mark.parametrize("solver, frac", [("epro_sgd", 0.1), ("epro_svrg", 1.05)])
def test_derived_first_epoch_fits_a_short_budget(solver, frac):
    """The derived T1 (epro_sgd: 2 / (alpha eta), at most n; epro_svrg: n / 8 after a full
    gradient) is capped by max_iter: a budget below it must still take steps (it used to
    run no epoch and return w = 0)."""
    X, y = make_problem(n=4000, d=30, k=5, seed=2)
    ref = exact(X, y, 0.01, 1.0)
    f_star = objective(X, y, ref.coef_, ref.intercept_, 0.01)
    f_zero = objective(X, y, np.zeros(30), y.mean(), 0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = ConstrainedLasso(l2_reg=0.01, radius=1.0, solver=solver, max_iter=int(frac * 4000),
                             random_state=0, tol=0, track_objective=False).fit(X, y)
    assert m.n_epochs_ >= 1 and m.budget_used_ == int(frac * 4000)
    f = objective(X, y, m.coef_, m.intercept_, 0.01)
    assert f - f_star < 0.2 * (f_zero - f_star)


def test_projection_counts_match_paper():
    X, y = make_problem(n=500, d=10)
    T = 2000
    common = dict(l2_reg=1.0, radius=0.5, max_iter=T, eta0=0.05, random_state=0, tol=0)
    epro = ConstrainedLasso(solver="epro_sgd", first_epoch_length=8, use_full_budget=False,
                            **common).fit(X, y)
    assert epro.n_projections_ == 7 <= math.log2(T / 4)
    assert epro.budget_used_ == epro.n_iter_ == 1016      # the paper's loop: half the budget
    full = ConstrainedLasso(solver="epro_sgd", first_epoch_length=8, **common).fit(X, y)
    assert full.n_projections_ == 7 and full.budget_used_ == T
    assert len(full.history_["objective"]) == 7
    orda = ConstrainedLasso(solver="epro_orda", use_full_budget=False, **common).fit(X, y)
    assert orda.n_projections_ <= math.log2(T / 8)
    assert orda.n_projections_ == math.floor(math.log2(T / 17 + 1))
    sgd = ConstrainedLasso(solver="sgd", **common).fit(X, y)
    assert sgd.n_projections_ == sgd.n_iter_ == T
    one = ConstrainedLasso(solver="oneproj", **common).fit(X, y)
    assert one.n_projections_ == 1


@pytest.mark.parametrize("solver", ALL_SOLVERS)
def test_dense_and_csr_agree(solver):
    X, y = make_problem(n=150, d=30, density=0.2)
    kw = dict(l2_reg=0.5, radius=1.0, solver=solver, max_iter=3000, tol=0,
              random_state=1)
    a = ConstrainedLasso(**kw).fit(X, y)
    b = ConstrainedLasso(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-9)
    assert a.intercept_ == pytest.approx(b.intercept_, abs=1e-9)


@pytest.mark.parametrize("solver", STOCHASTIC)
def test_reproducible_bitwise_and_pickle(solver):
    X, y = make_problem(n=100, d=10)
    kw = dict(l2_reg=0.5, radius=1.0, solver=solver, max_iter=1000, tol=0,
              random_state=42)
    a = ConstrainedLasso(**kw).fit(X, y)
    b = ConstrainedLasso(**kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.intercept_ == b.intercept_
    c = ConstrainedLasso(**dict(kw, random_state=7)).fit(X, y)
    assert not np.array_equal(a.coef_, c.coef_)
    d = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(d.predict(X), a.predict(X))


def test_multi_output_is_independent_problems():
    X, y = make_problem(n=120, d=8)
    Y = np.column_stack([y, -2 * y + 1])
    m = exact(X, Y, 0.1, 0.7)
    assert m.coef_.shape == (2, 8) and m.intercept_.shape == (2,)
    for k in range(2):
        single = exact(X, Y[:, k], 0.1, 0.7)
        np.testing.assert_allclose(m.coef_[k], single.coef_, atol=1e-12)
    assert m.predict(X).shape == (120, 2)


def test_float32_input_and_inputs_not_modified():
    X, y = make_problem(n=80, d=6)
    X32 = X.astype(np.float32)
    X_copy, y_copy = X32.copy(), y.copy()
    m = exact(X32, y, 0.1, 0.7)
    np.testing.assert_array_equal(X32, X_copy)
    np.testing.assert_array_equal(y, y_copy)
    np.testing.assert_allclose(m.coef_, exact(X32.astype(np.float64), y, 0.1, 0.7).coef_,
                               atol=1e-12)


def test_history_callback_verbose(capsys):
    X, y = make_problem(n=200, d=10)
    seen = []
    m = ConstrainedLasso(solver="epro_sgd", max_iter=5000, random_state=0, verbose=1,
                         first_epoch_length=8,
                         callback=lambda rec: seen.append(rec["epoch"]) or len(seen) >= 3)
    m.fit(X, y)
    assert seen == [0, 1, 2] and m.n_epochs_ == 3
    assert "epoch=0" in capsys.readouterr().out
    assert np.all(np.diff(ConstrainedLasso(solver="fista", tol=1e-10).fit(X, y)
                          .history_["objective"]) <= 1e-12)


def test_cv_callback_sees_the_refit_and_the_path_fits_made_radius_by_radius():
    X, y = make_problem(n=200, d=10)
    seen = []
    cv = ConstrainedLassoCV(n_radii=4, cv=3, callback=seen.append).fit(X, y)
    # the folds' paths ran on their Gram matrices: only the refit's records
    assert len(seen) == len(cv.history_["objective"])
    seen.clear()
    cv = ConstrainedLassoCV(n_radii=4, cv=3, solver="epro_sgd", tol=0.1,
                            callback=seen.append).fit(X, y)
    assert len(seen) > len(cv.history_["objective"])


@pytest.mark.parametrize("solver", STOCHASTIC)
def test_history_iteration_is_n_iter_and_the_last_objective_is_recorded(solver):
    """The results contract: the ``iteration`` column counts stochastic gradients as
    ``n_iter_`` does; without track_objective only the last record carries the objective,
    that of the returned model."""
    X, y = make_problem(n=200, d=10)
    m = ConstrainedLasso(l2_reg=1.0, radius=0.5, solver=solver, max_iter=1000, tol=0,
                         track_objective=False,
                         random_state=0).fit(X, y)
    h = m.history_
    assert h["iteration"][-1] == m.n_iter_ == m.budget_used_ == 1000
    assert np.all(np.diff(h["iteration"]) > 0) and len(h["iteration"]) == m.n_epochs_
    f = h["objective"]
    assert np.all(np.isnan(f[:-1]))
    assert f[-1] == pytest.approx(objective(X, y, m.coef_, m.intercept_, 1.0), rel=1e-12)


def test_fista_warm_start_at_the_solution_runs_no_iteration():
    X, y = make_problem(n=100, d=8)
    m = ConstrainedLasso(radius=1.0, warm_start=True, tol=1e-8).fit(X, y)
    assert m.n_iter_ > 0 and m.history_["iteration"][-1] == m.n_iter_
    m.fit(X, y)
    assert m.n_iter_ == 0 and list(m.history_["iteration"]) == [0]
    assert m.history_["gap"][0] <= 1e-8 * m.history_["objective"][0] * 10


def test_fista_warns_when_not_converged():
    X, y = make_problem(n=100, d=30)
    with pytest.warns(ConvergenceWarning, match="relative duality gap"):
        ConstrainedLasso(l2_reg=0.0, radius=5.0, solver="fista", max_iter=5,
                         tol=1e-12).fit(X, y)


@pytest.mark.parametrize("solver", ["fista"] + STOCHASTIC)
def test_tol_is_the_relative_duality_gap_for_every_solver(solver):
    """issue 21.1: one meaning of tol; a fit either reaches it (no warning, the last
    relative_gap <= tol, and it bounds the true relative suboptimality) or warns with the
    value reached."""
    X, y = make_problem(n=300, d=10)
    kw = dict(l2_reg=0.1, radius=1.0, solver=solver, random_state=0)
    f_star = objective(X, y, exact(X, y, 0.1, 1.0).coef_, exact(X, y, 0.1, 1.0).intercept_,
                       0.1)
    yc = y - y.mean()
    f_zero = 0.5 * np.mean(yc * yc)
    loose = 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = ConstrainedLasso(tol=loose, max_iter=None if solver == "fista" else 300 * 300,
                             **kw).fit(X, y)
    rel = m.history_["relative_gap"][-1]
    assert rel <= loose
    sub = (objective(X, y, m.coef_, m.intercept_, 0.1) - f_star) / f_zero
    assert -1e-12 <= sub <= rel + 1e-12
    with pytest.warns(ConvergenceWarning, match=r"relative duality gap .* is ([0-9.e-]+), "
                                                r"above tol=1e-14") as rec:
        short = ConstrainedLasso(tol=1e-14, max_iter=5 if solver == "fista" else 600,
                                 **kw).fit(X, y)
    reported = float(str(rec[0].message).split(" is ")[1].split(",")[0])
    assert reported == pytest.approx(short.history_["relative_gap"][-1], rel=1e-2)


def test_auto_solver_choice():
    X, y = make_problem(n=100, d=5)
    assert ConstrainedLasso().fit(X, y).solver_ == "fista"
    # at every size and format (user guide: the stochastic solvers lost at their default
    # budget on the dense benchmark and on a correlated sparse problem of 200,000 rows)
    for n_samples in (200_000, 2_000_000):
        for sparse in (False, True):
            assert ConstrainedLasso()._resolve_solver(n_samples, sparse) == "fista"
    assert ConstrainedLasso(solver="epro_svrg")._resolve_solver(10, True) == "epro_svrg"


@pytest.mark.parametrize("params, match", [
    (dict(radius=-1.0), "radius"),
    (dict(solver="newton"), "solver"),
    (dict(l2_reg=-0.1), "l2_reg"),
    (dict(eta0=0.0), "eta0"),
    (dict(solver="epro_sgd", eta0=10.0, l2_reg=1.0), "eta0"),
])
def test_bad_parameters_raise(params, match):
    X, y = make_problem(n=50, d=5)
    with pytest.raises(ValueError, match=match):
        ConstrainedLasso(**params).fit(X, y)


def test_bad_sample_weight_raises():
    X, y = make_problem(n=50, d=5)
    with pytest.raises(ValueError, match="sample_weight"):
        ConstrainedLasso().fit(X, y, sample_weight=-np.ones(50))


def test_cv_fold_without_weighted_training_samples_is_named():
    """Weights that are non-zero only on rows one unshuffled fold holds out leave that
    fold's training set with nothing to fit: the error names the fold and the way out
    (it was scikit-learn's 'Sample weights must contain at least one non-zero number',
    raised from inside the path, naming neither)."""
    X, y = make_problem(n=50, d=5)
    sw = np.r_[np.ones(3), np.zeros(47)]
    with pytest.raises(ValueError, match=r"cv split 0: all 40 training samples have "
                                         r"sample_weight 0 \(only 3 of the 50.*shuffle"):
        ConstrainedLassoCV(cv=5).fit(X, y, sample_weight=sw)
    rng = np.random.default_rng(0)
    spread = np.zeros(50)
    spread[rng.choice(50, 10, replace=False)] = 1.0
    ConstrainedLassoCV(cv=2, n_radii=3).fit(X, y, sample_weight=spread)


@pytest.mark.parametrize("scale", [1e160, 1e300])
@pytest.mark.parametrize("solver, working_set", [("fista", True), ("fista", False)] +
                         [(s, True) for s in STOCHASTIC])
@pytest.mark.parametrize("sparse", [False, True])
def test_overflowing_scale_of_X_raises_a_clear_error(scale, solver, working_set, sparse):
    # regression (tests/test_fuzz.py): fista hung forever (NaN Lipschitz constant in a
    # backtracking loop) and the epoch solvers divided by an underflowed eta0
    X, y = make_problem(n=30, d=4)
    X = X * scale
    X = sp.csr_matrix(X) if sparse else X
    est = ConstrainedLasso(radius=1.0, solver=solver, working_set=working_set, max_iter=200,
                           random_state=0)
    with pytest.raises(ValueError, match=r"X is too large in magnitude .*max \|X\| = .*e\+"):
        est.fit(X, y)


def test_overflowing_mean_of_X_or_scale_of_y_raises():
    X, y = make_problem(n=30, d=4)
    with pytest.raises(ValueError, match="X is too large.*column means"):
        ConstrainedLasso().fit(np.sign(X) * np.finfo(np.float64).max, y)
    with pytest.raises(ValueError, match="y is too large"):
        ConstrainedLasso().fit(X, y * 1e300)
    with pytest.raises(ValueError, match="X is too large"):
        ConstrainedLassoCV(n_radii=3, cv=2).fit(X * 1e300, y)


# scikit-learn's finiteness check sums the float32 X and overflows (its warning, not ours)
@pytest.mark.filterwarnings("ignore:invalid value encountered in reduce:RuntimeWarning")
def test_float32_near_its_maximum_fits_in_float64():
    # the row norms of a float32 X are computed in float64 (3e38^2 fits there)
    X, y = make_problem(n=40, d=4)
    X32 = (np.sign(X) * 3e38).astype(np.float32)
    for solver in ALL_SOLVERS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est = ConstrainedLasso(radius=1.0, solver=solver, max_iter=200,
                                   random_state=0).fit(X32, y)
        assert np.all(np.isfinite(est.coef_)) and np.isfinite(est.intercept_)


def test_fista_gram_backtracking_exits_on_non_finite_values():
    H = np.array([[1.0, np.nan], [np.nan, 1.0]])
    with pytest.raises(FloatingPointError):
        fista_gram(H, np.ones(2), 1.0, np.zeros(2), 1e-8, 10)


# --------------------------------------------------------------------- CV

def test_cv_refit_is_the_path_solution_the_folds_scored(monkeypatch):
    """Wide data: above the radius where the constraint stops binding the minimizers are
    many (interpolants); the folds score the warm-started path's, so the refit must follow
    the path too.  A refit from zero at the chosen radius scored held-out R² 0.63 here,
    where LassoCV scores 0.99."""
    from sklearn.datasets import make_regression
    from sklearn.linear_model import LassoCV
    from sklearn.model_selection import KFold
    from sklearn.preprocessing import StandardScaler

    X, y = make_regression(100, 300, n_informative=5, noise=10, random_state=0)
    train, test = list(KFold(5, shuffle=True, random_state=0).split(X))[1]
    scaler = StandardScaler().fit(X[train])
    X_train, X_test = scaler.transform(X[train]), scaler.transform(X[test])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cv = ConstrainedLassoCV().fit(X_train, y[train])
    reference = LassoCV().fit(X_train, y[train]).score(X_test, y[test])
    assert cv.score(X_test, y[test]) >= reference - 0.01
    # where the folds fit the estimator radius by radius (more than 512 features and 16
    # times the rows; here forced, else the path runs on the fold's Gram matrix): the refit
    # is that path's solution on all the data
    from skstoch._solvers import _lasso_gram_path

    monkeypatch.setattr(_lasso_gram_path, "WIDE_ROWS_FACTOR", 1)
    X_wide = np.hstack([X_train, np.random.RandomState(0).standard_normal((80, 300))])
    cv = ConstrainedLassoCV().fit(X_wide, y[train])
    path = ConstrainedLasso(warm_start=True)
    for radius in cv.radii_[cv.radii_ <= cv.radius_]:
        path.set_params(radius=radius).fit(X_wide, y[train])
    np.testing.assert_allclose(cv.coef_, path.coef_, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cv_path_forms_one_gram_matrix_per_fold(monkeypatch, dtype):
    """At most 16 times as many features as rows, or at most 512 features: every fold runs
    its path of radii on one Gram matrix (the refit: one for the path, one for the fit at
    the chosen radius), where a fit per radius formed 30 x 5 + 30 and took 12 times
    LassoCV's time at 20,000 x 100; the validation MSEs are those of the exact fits along
    the path."""
    from sklearn.model_selection import KFold
    from skstoch._solvers import _lasso_fista, _lasso_gram_path

    X, y = make_problem(n=400, d=30, k=5, noise=0.5)
    X = X.astype(dtype)
    sw = np.random.RandomState(1).rand(400)
    calls = []

    def counting(problem, cols, *args):
        calls.append(len(cols))
        return gram_block(problem, cols, *args)

    for module in (_lasso_fista, _lasso_gram_path):
        monkeypatch.setattr(module, "gram_block", counting)
    folds = list(KFold(5, shuffle=True, random_state=0).split(X))
    cv = ConstrainedLassoCV(n_radii=30, cv=folds, tol=1e-10).fit(X, y, sample_weight=sw)
    assert len(calls) == 5 + 2
    # wide data with at most 512 features: one Gram matrix per fold too (there 30 x 5 + 30
    # working-set Gram matrices took 2.5 times as long as the path on the Gram matrix)
    calls.clear()
    X_wide, y_wide = make_problem(n=60, d=100, k=5, noise=0.5)
    ConstrainedLassoCV(n_radii=30, cv=5).fit(X_wide.astype(dtype), y_wide)
    assert len(calls) == 5 + 2
    # more than 512 features, at most 16 times the folds' rows (48): the working sets beat
    # the Gram path only beyond (ConstrainedLassoCV() on 150 x 700: 0.8-1.1 s against
    # 2.9-3.0 radius by radius, _lasso_gram_path's comment)
    calls.clear()
    X_wide, y_wide = make_problem(n=60, d=700, k=5, noise=0.5)
    ConstrainedLassoCV(n_radii=30, cv=5).fit(X_wide.astype(dtype), y_wide)
    assert len(calls) == 5 + 2
    for k, (train, test) in enumerate(folds[:2]):
        path = ConstrainedLasso(tol=1e-10, warm_start=True)
        for j, radius in enumerate(cv.radii_):
            path.set_params(radius=radius).fit(X[train], y[train], sample_weight=sw[train])
            resid = path.predict(X[test]) - y[test]
            mse = np.sum(sw[test] * resid ** 2) / sw[test].sum()
            assert cv.mse_path_[j, k] == pytest.approx(mse, rel=1e-6)


def test_cv_picks_a_radius_and_refits():
    X, y = make_problem(n=200, d=20, k=3, noise=0.5)
    cv = ConstrainedLassoCV(l2_reg=0.0, n_radii=12, cv=3, tol=1e-8).fit(X, y)
    assert cv.mse_path_.shape == (12, 3)
    assert np.all(np.diff(cv.radii_) > 0)
    best = cv.radii_[np.argmin(cv.mse_path_.mean(axis=1))]
    assert cv.radius_ == best
    ref = exact(X, y, 0.0, cv.radius_)
    np.testing.assert_allclose(cv.coef_, ref.coef_, atol=1e-6)
    # the chosen model predicts better out of sample than the smallest radius
    assert cv.mse_path_.mean(axis=1).min() < cv.mse_path_.mean(axis=1)[0]
    # largest radius of the default path = l1 norm of the unconstrained solution
    ols = np.linalg.lstsq(np.column_stack([X, np.ones(200)]), y, rcond=None)[0][:-1]
    assert cv.radii_[-1] == pytest.approx(np.abs(ols).sum(), rel=1e-6)


def test_cv_multi_output_is_independent_per_output():
    X, y1 = make_problem(n=150, d=12, k=3, noise=0.3, seed=1)
    _, y2 = make_problem(n=150, d=12, k=6, noise=1.0, seed=2)
    Y = np.column_stack([y1, 3 * y2])
    cv = ConstrainedLassoCV(l2_reg=0.0, n_radii=8, cv=3, tol=1e-8).fit(X, Y)
    assert cv.coef_.shape == (2, 12) and cv.intercept_.shape == (2,)
    assert cv.radius_.shape == (2,) and cv.mse_path_.shape == (2, 8, 3)
    assert cv.predict(X).shape == (150, 2)
    for k, target in enumerate([y1, 3 * y2]):
        single = ConstrainedLassoCV(l2_reg=0.0, n_radii=8, cv=3, tol=1e-8).fit(X, target)
        assert cv.radius_[k] == single.radius_
        np.testing.assert_allclose(cv.mse_path_[k], single.mse_path_, rtol=1e-10)
        np.testing.assert_allclose(cv.coef_[k], single.coef_, atol=1e-12)
    assert cv.radius_[0] != cv.radius_[1]


def test_cv_explicit_radii_and_errors():
    X, y = make_problem(n=100, d=5)
    cv = ConstrainedLassoCV(radii=[2.0, 0.5, 1.0], cv=2).fit(X, y)
    np.testing.assert_array_equal(cv.radii_, [0.5, 1.0, 2.0])
    with pytest.raises(ValueError, match="radii"):
        ConstrainedLassoCV(radii=[-1.0]).fit(X, y)


# --------------------------------------------------------------------- peers

def test_skglm_agrees_if_installed():
    skglm = pytest.importorskip("skglm")
    X, y = make_problem(n=200, d=30)
    peer = skglm.Lasso(alpha=0.05, tol=1e-12, max_iter=1000).fit(X, y)
    model = exact(X, y, 0.0, np.abs(peer.coef_).sum())
    np.testing.assert_allclose(model.coef_, peer.coef_, atol=1e-6)


# --------------------------------------------------------------------- example

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("plot_constrained_lasso*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_in_fast_mode(path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("SKSTOCH_EXAMPLE_FAST", "1")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runpy.run_path(str(path), run_name="__main__")
    plt.close("all")


def _objective(X, y, coef, alpha):
    Xw = X @ coef
    r = Xw + np.mean(y - Xw) - y
    return 0.5 * float(r @ r) / len(y) + alpha * float(coef @ coef)


@pytest.mark.parametrize("design", ["isotropic", "correlated"])
def test_epro_sgd_more_budget_not_worse(design):
    """Round 7: with lam='auto' the first epoch used lam = 0 (the multiplier estimate at
    the start w = 0, inside the ball), i.e. projected ridge SGD, and later epochs lam ~ nu*;
    on an isotropic design 3 passes ended 12x worse than 1 pass.  Three times the budget must
    not be worse than one pass (mean over seeds, 10% slack for the sampling noise)."""
    rng = np.random.RandomState(0)
    n, d, alpha = 6000, 40, 0.01
    X = rng.randn(n, d)
    if design == "correlated":
        for j in range(1, d):
            X[:, j] = 0.6 * X[:, j - 1] + 0.8 * X[:, j]
    w = np.zeros(d)
    w[rng.choice(d, 4, replace=False)] = rng.randn(4)
    y = X @ w + 0.5 * rng.randn(n) + 1.0
    radius = 0.6 * np.abs(w).sum()
    ref = ConstrainedLasso(l2_reg=alpha, radius=radius, solver="fista", tol=1e-12,
                           max_iter=100000).fit(X, y)
    f_star = _objective(X, y, ref.coef_, alpha)
    assert ref.lam_ > 0     # the constraint is active

    def rel(passes):
        out = []
        for seed in range(3):
            m = ConstrainedLasso(l2_reg=alpha, radius=radius, solver="epro_sgd",
                                 max_iter=int(passes * n), tol=0, random_state=seed,
                                 track_objective=False).fit(X, y)
            out.append((_objective(X, y, m.coef_, alpha) - f_star) / f_star)
        return float(np.mean(out))

    one, three = rel(1), rel(3)
    assert three <= 1.1 * one, (one, three)


@pytest.mark.parametrize("solver", STOCHASTIC)
def test_stochastic_solvers_stop_early_at_the_relative_gap(solver):
    """The budget is a cap: a fit stops at the first record whose relative_gap <= tol."""
    rng = np.random.RandomState(0)
    X = rng.randn(5000, 20)
    y = X[:, 0] - X[:, 1] + 0.5 * rng.randn(5000)
    kw = dict(l2_reg=0.01, radius=1.0, solver=solver, random_state=0)
    full = ConstrainedLasso(tol=0, **kw).fit(X, y)
    gaps = full.history_["relative_gap"]
    tol = float(np.quantile(gaps, 0.5))     # a value reached before the end of the budget
    early = ConstrainedLasso(tol=tol, **kw).fit(X, y)
    assert full.budget_used_ == 10 * 5000
    assert early.budget_used_ < full.budget_used_
    g = early.history_["relative_gap"]
    assert g[-1] <= tol and np.all(g[:-1] > tol)


# --- defaults a user can trust (issue 19.1) ---------------------------------------------

def test_default_radius_on_tall_data_minimizes_the_aic_along_the_path():
    """radius=None with n >= 2 (d + 1): the path point of smallest AIC,
    dof msr(r) / msr_ls + 2 nnz(r), recomputed here from exact fits at every radius of the
    path; no hidden ridge term; scale-equivariant in y."""
    from skstoch._solvers._lasso_radius import EPS, N_RADII

    X, y = make_problem(n=200, d=10)
    m = ConstrainedLasso().fit(X, y)
    ols = LinearRegression().fit(X, y)
    msr_ls = np.mean((y - ols.predict(X)) ** 2)
    dof = len(y) - X.shape[1] - 1
    radii = np.abs(ols.coef_).sum() * np.logspace(np.log10(EPS), 0.0, N_RADII)
    aic = []
    for radius in radii:
        fit = ConstrainedLasso(radius=radius, tol=1e-12).fit(X, y)
        msr = np.mean((y - fit.predict(X)) ** 2)
        aic.append(dof * msr / msr_ls + 2 * np.count_nonzero(fit.coef_))
    chosen = int(np.argmin(np.abs(radii - m.radius_)))
    assert m.radius_ == pytest.approx(radii[chosen], rel=1e-6)
    assert aic[chosen] <= min(aic) + 1e-6 * abs(min(aic))
    # no hidden ridge term: the solution is that of the l2_reg=0 problem at that radius
    ref = ConstrainedLasso(radius=m.radius_, l2_reg=0.0, tol=1e-12).fit(X, y)
    np.testing.assert_allclose(m.coef_, ref.coef_, rtol=1e-3, atol=1e-4)
    scaled = ConstrainedLasso().fit(X, 10.0 * y)
    assert scaled.radius_ == pytest.approx(10.0 * m.radius_, rel=1e-6)
    np.testing.assert_allclose(scaled.coef_, 10.0 * m.coef_, rtol=1e-4, atol=1e-8)


def test_tall_data_beyond_the_gram_limit_keep_the_aic_rule(monkeypatch):
    """A Gram matrix of more than GRAM_MAX_FEATURES columns is formed when it takes no more
    memory than X's values (a tall X): tall data keep the AIC rule and the CV path on Gram
    matrices.  They used the cross-validated radius (standardized make_regression
    12,000 x 4,200, 9,000 training rows: 153.7 CPU s, 8.6 now, against LassoCV()'s 30.9;
    the user guide's Defaults).  A sparse X whose values take less memory still gets no
    Gram matrix.  The limit is patched to 8 columns so that the test stays small."""
    from skstoch._solvers import _lasso_fista, _lasso_gram_path
    from skstoch.linear_model import _constrained_lasso

    X, y = make_problem(n=200, d=10)
    aic = ConstrainedLasso().fit(X, y)
    rng = np.random.RandomState(0)
    X_sparse = sp.random(200, 10, density=0.02, format="csr", random_state=rng)
    y_sparse = X_sparse @ rng.standard_normal(10) + 0.1 * rng.standard_normal(200)
    cv_radius = _constrained_lasso._cv_radius
    cv_calls = []

    def counting(*args):
        cv_calls.append(1)
        return cv_radius(*args)

    monkeypatch.setattr(_constrained_lasso, "_cv_radius", counting)
    monkeypatch.setattr(_lasso_fista, "GRAM_MAX_FEATURES", 8)
    assert ConstrainedLasso().fit(X, y).radius_ == aic.radius_ and not cv_calls
    assert _lasso_gram_path.gram_path_applies(X, X.shape[0])
    assert not _lasso_gram_path.gram_path_applies(X_sparse, X_sparse.shape[0])
    cv = ConstrainedLassoCV().fit(X_sparse, y_sparse)
    assert ConstrainedLasso().fit(X_sparse, y_sparse).radius_ == cv.radius_


@pytest.mark.parametrize("n_nonzero", [0, 1, 60, 61, 600])
def test_gram_times_reads_the_rows_of_the_non_zeros(n_nonzero):
    """FISTA's mat-vecs on a Gram matrix of at least 512 columns read only the rows of a
    sparse iterate's non-zeros (at most a tenth): the same product as H v."""
    from skstoch._solvers._lasso_fista import gram_times

    rng = np.random.RandomState(n_nonzero)
    A = rng.standard_normal((600, 600))
    H = A @ A.T
    v = np.zeros(600)
    v[rng.choice(600, n_nonzero, replace=False)] = rng.standard_normal(n_nonzero)
    np.testing.assert_allclose(gram_times(H, v), H @ v, rtol=0,
                               atol=1e-12 * np.abs(H).max() * max(np.abs(v).sum(), 1.0))


def test_least_squares_of_the_aic_rule_is_lstsq_s_solution():
    """The AIC rule's least-squares fit solves H w = q by Cholesky where H is well
    conditioned (lstsq took 26 of the 40 s of the rule at 9,000 x 4,200) and falls back to
    lstsq's minimum-norm solution where it is not: the same solution in every case."""
    from skstoch._solvers._lasso_radius import _least_squares

    rng = np.random.RandomState(0)
    X, y = rng.standard_normal((200, 10)), rng.standard_normal(200)
    zero, twin, near_twin = X.copy(), X.copy(), X.copy()
    zero[:, 3] = 0.0
    twin[:, 4] = twin[:, 5]
    near_twin[:, 4] = near_twin[:, 5] + 1e-9 * rng.standard_normal(200)
    for A in (X, zero, twin, near_twin):
        H, q = A.T @ A / 200, A.T @ y / 200
        np.testing.assert_allclose(_least_squares(H, q),
                                   np.linalg.lstsq(H, q, rcond=None)[0], rtol=0, atol=1e-12)


def test_cv_multi_output_with_a_constant_target():
    # a constant target's path was [0] beside the others' n_radii radii: the whole CV ran,
    # then the ragged paths made np.array raise "inhomogeneous shape"
    rng = np.random.RandomState(0)
    X = rng.randn(60, 8)
    y = X @ rng.randn(8)
    est = ConstrainedLassoCV(n_radii=20).fit(X, np.c_[y, np.full(60, 2.0)])
    assert est.radii_.shape == (2, 20) and est.mse_path_.shape == (2, 20, 5)
    assert est.radius_[1] == 0 and np.all(est.coef_[1] == 0)
    np.testing.assert_allclose(est.predict(X)[:, 1], 2.0)
    alone = ConstrainedLassoCV(n_radii=20).fit(X, y)
    assert est.radius_[0] == alone.radius_
    np.testing.assert_array_equal(est.coef_[0], alone.coef_)


@pytest.mark.parametrize("solver", ALL_SOLVERS + ["epro_sgd_paper", "epro_orda_paper"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_a_constant_target_gives_zero_coefficients_without_warning(solver, fit_intercept):
    # F(0) = 0 = F*: Epro-ORDA's iterates carried the rounding of the centred y (1e-17) and
    # its relative gap, gap / F(0), was inf, so the fit warned that it "could not be measured"
    X = np.random.RandomState(0).randn(200, 5)
    y = np.full(200, 3.0 if fit_intercept else 0.0)
    est = ConstrainedLasso(radius=1.0, solver=solver, fit_intercept=fit_intercept,
                           random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.fit(X, y)
    assert np.all(est.coef_ == 0.0)
    assert est.intercept_ == (3.0 if fit_intercept else 0.0)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_constant_columns_get_no_coefficient_and_no_warning(sparse):
    """Constant columns are 0 once centred; the exact path fitted their rounding noise:
    ConstrainedLassoCV on a constant X raised a DivergenceError after a storm of overflow
    warnings, and with three constant columns of different scales it returned
    coefficients of 1e9.  LassoCV() returns zeros."""
    rng = np.random.RandomState(0)
    y = rng.standard_normal(30)
    constant = np.column_stack([np.full(30, 7.0), np.full(30, 0.3), np.full(30, -1e5)])
    mixed = np.column_stack([rng.standard_normal((30, 2)), constant])
    for X, zero in ((constant, [0, 1, 2]), (mixed, [2, 3, 4])):
        X = sp.csr_matrix(X) if sparse else X
        for est in (ConstrainedLassoCV(), ConstrainedLasso()):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                est.fit(X, y)
            assert np.all(est.coef_[zero] == 0.0), (type(est).__name__, est.coef_)


def test_default_radius_treats_negligible_weights_as_zero():
    """The fit zeroes weights below float64's resolution relative to the largest; the
    default radius counted them as rows: 30 of 40 rows at 1e-18 chose radius 33.0 (the AIC
    rule with -1 residual degrees of freedom) where zeros choose 1.89."""
    rng = np.random.RandomState(0)
    X = rng.randn(40, 10)
    y = 2 * X[:, 0] + 0.5 * rng.randn(40)
    sw = np.ones(40)
    sw[10:] = 1e-18
    tiny = ConstrainedLasso().fit(X, y, sample_weight=sw)
    sw[10:] = 0.0
    zero = ConstrainedLasso().fit(X, y, sample_weight=sw)
    assert tiny.radius_ == zero.radius_
    np.testing.assert_array_equal(tiny.coef_, zero.coef_)


def test_default_radius_on_wide_data_is_the_cross_validated_one():
    """radius=None with n < 2 (d + 1): no residual degrees of freedom to estimate the noise,
    so the radius is ConstrainedLassoCV's default choice and the coefficients its path's."""
    X, y = make_problem(n=40, d=60, k=3)
    m = ConstrainedLasso().fit(X, y)
    cv = ConstrainedLassoCV().fit(X, y)
    assert m.radius_ == cv.radius_
    np.testing.assert_allclose(m.coef_, cv.coef_, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("shape", [(3000, 100, 10, 1.0), (250, 200, 20, 50.0)])
def test_default_radius_scores_as_lasso_does(shape):
    """Half the l1 norm of the least-squares fit (the former default) over-shrank strong
    signals (R² 0.81 against Lasso()'s 0.9995 on the first problem) and barely constrained
    nearly square data (R² -39 against 0.91 on the second, 200 x 200 training rows)."""
    from sklearn.datasets import make_regression
    from sklearn.model_selection import KFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    n, d, k, noise = shape
    X, y = make_regression(n, d, n_informative=k, noise=noise, random_state=0)
    cv = KFold(5, shuffle=True, random_state=0)
    ours = cross_val_score(make_pipeline(StandardScaler(), ConstrainedLasso()), X, y, cv=cv)
    ref = cross_val_score(make_pipeline(StandardScaler(), Lasso()), X, y, cv=cv)
    assert ours.mean() >= ref.mean() - 0.005


def test_radius_per_output_for_a_2d_y():
    X, y = make_problem(n=120, d=6)
    Y = np.column_stack([y, 3.0 * y])
    m = ConstrainedLasso().fit(X, Y)
    assert m.radius_.shape == (2,)
    assert m.radius_[1] == pytest.approx(3.0 * m.radius_[0], rel=1e-6)


@pytest.mark.parametrize("Est", [ConstrainedLasso, ConstrainedLassoCV])
def test_alpha_is_not_a_parameter(Est):
    # l2_reg's former name is gone before any release: an ``alpha`` read as scikit-learn's l1
    # weight would silently become a ridge strength
    assert "alpha" not in Est().get_params()
    with pytest.raises(TypeError, match="alpha"):
        Est(alpha=0.3)
    with pytest.raises(TypeError):
        Est(0.3)      # keyword-only: a positional number is an error, not a radius


# --- hostile cv and absurd integers (issue 18) ------------------------------------------

@pytest.mark.parametrize("cv, match", [
    ([(np.arange(50), np.arange(50, 81))], r"test indices must lie in \[0, 80\)"),
    ([(np.arange(-1, 50), np.arange(50, 80))], r"train indices must lie in \[0, 80\)"),
    ([(np.arange(50), np.array([], dtype=int))], "test set is empty"),
    ([(np.arange(50.0), np.arange(50, 80))], "must be a 1-d array of integers"),
    ([(np.ones(79, dtype=bool), np.zeros(80, dtype=bool))], "boolean train mask"),
    ([np.arange(5)], r"cv must yield \(train, test\)"),
    ([], "cv yielded no split"),
])
def test_cv_with_bad_indices_is_a_value_error(cv, match):
    X, y = make_problem(n=80, d=5)
    with pytest.raises(ValueError, match=match):
        ConstrainedLassoCV(n_radii=2, cv=cv).fit(X, y)


def test_cv_boolean_masks_and_absurd_n_radii():
    X, y = make_problem(n=80, d=5)
    mask = np.arange(80) < 60
    a = ConstrainedLassoCV(n_radii=3, cv=[(mask, ~mask)]).fit(X, y)
    b = ConstrainedLassoCV(n_radii=3, cv=[(np.arange(60), np.arange(60, 80))]).fit(X, y)
    np.testing.assert_array_equal(a.mse_path_, b.mse_path_)
    with pytest.raises(ValueError, match="n_radii"):
        ConstrainedLassoCV(n_radii=2**62).fit(X, y)
    with pytest.raises(ValueError, match="at most"):
        ConstrainedLassoCV(radii=np.linspace(0, 1, 10_001)).fit(X, y)


@pytest.mark.parametrize("paper, base, t1, eta0", [("epro_sgd_paper", "epro_sgd", 8, 0.3),
                                                  ("epro_orda_paper", "epro_orda", 16, None)])
def test_paper_solvers_are_the_published_settings_one_value_away(paper, base, t1, eta0):
    """solver='epro_*_paper' is the base solver with the paper's T1, whole epochs only,
    lam=0.03 and (Epro-SGD) eta0=0.3: bitwise the same fit as spelling them out."""
    X, y = make_problem(n=300, d=10)
    kw = dict(l2_reg=1.0, radius=0.5, max_iter=2000, tol=0, random_state=0)
    a = ConstrainedLasso(solver=paper, **kw).fit(X, y)
    spelled = dict(first_epoch_length=t1, use_full_budget=False, lam=0.03)
    if eta0 is not None:
        spelled["eta0"] = eta0
    b = ConstrainedLasso(solver=base, **spelled, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.solver_ == paper and b.solver_ == base
    assert a.history_["epoch_length"][0] == t1 and a.budget_used_ < 2000   # whole epochs
    assert a.lam_ == 0.03


def test_auto_step_budget_below_n_still_runs_several_epochs():
    """issue 20: with the automatic step the derived T1 (up to n) was capped only by the
    budget, so a budget T <= n ran one epoch, one projection."""
    rng = np.random.RandomState(0)
    X = rng.randn(4000, 10)
    y = X[:, 0] + 0.1 * rng.randn(4000)
    m = ConstrainedLasso(l2_reg=1e-3, radius=0.5, solver="epro_sgd", max_iter=2000, tol=0,
                         random_state=0).fit(X, y)
    assert m.n_projections_ >= 3 and m.history_["epoch_length"][0] <= 2000 // 7


def test_epro_svrg_multiplier_search_recovers_from_a_wrong_early_bound():
    """A short early epoch put the multiplier bracket's lower end above nu*, and every
    later epoch stayed in that wrong bracket: a stall at 3.6e-4 relative gap whatever the
    budget on this problem (issue 21.1).  Dropping the stale bound reaches tol=1e-4."""
    rng = np.random.RandomState(0)
    X = rng.randn(5000, 50)
    w = np.zeros(50)
    w[:5] = rng.randn(5)
    y = X @ w + 0.5 * rng.randn(5000)
    # the radius of the reproduction (then the default: half the least-squares l1)
    radius = 0.5 * np.abs(LinearRegression().fit(X, y).coef_).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = ConstrainedLasso(radius=radius, solver="epro_svrg", max_iter=30 * 5000, tol=1e-4,
                             random_state=0).fit(X, y)
    assert m.history_["relative_gap"][-1] <= 1e-4
    exact = ConstrainedLasso(radius=radius, tol=1e-12).fit(X, y)
    assert m.lam_ == pytest.approx(exact.lam_, rel=1e-3)


def test_cv_with_one_huge_weight_fits_without_overflow():
    """One weight 1e300 among ones: the other rows' relative weights (1e-300) are below
    float64's resolution; they are treated as 0 (same fit) instead of setting a Gram matrix
    of rounding noise whose FISTA step overflowed (fuzz case sw_huge)."""
    import warnings

    from skstoch import ConstrainedLasso, ConstrainedLassoCV

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    y = X @ rng.standard_normal(4)
    sw = np.where(np.arange(30) == 1, 1e300, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cv = ConstrainedLassoCV(n_radii=3, cv=2, max_iter=50).fit(X, y, sample_weight=sw)
        zeroed = ConstrainedLasso(radius=cv.radius_).fit(X, y, sample_weight=(sw > 1) * 1.0)
        huge = ConstrainedLasso(radius=cv.radius_).fit(X, y, sample_weight=sw)
    assert np.all(np.isfinite(cv.coef_))
    np.testing.assert_array_equal(huge.coef_, zeroed.coef_)
    np.testing.assert_array_equal(cv.coef_, zeroed.coef_)


def test_paper_fixed_step_diverges_with_a_clear_error():
    """The paper's Epro-SGD keeps its fixed step eta0=0.3 (tuned for unit-variance data): on
    data ten times larger it diverges, and fit says so (test_common's written reason)."""
    from skstoch._solvers import DivergenceError

    rng = np.random.RandomState(0)
    X = 10 * rng.standard_normal((60, 4))
    y = X @ np.array([1.0, -1.0, 0.5, 0.0])
    # blown up to inf, or by more than 1e8 per epoch (which, projected exactly, returned zero
    # coefficients with a ConvergenceWarning once the projection onto tiny balls was fixed)
    for seed in range(6):
        with warnings.catch_warnings():
            warnings.simplefilter("error")   # no RuntimeWarning storm before the error
            with pytest.raises(DivergenceError, match="decrease the step size"):
                ConstrainedLasso(solver="epro_sgd_paper", radius=1.0,
                                 random_state=seed).fit(X, y)
    est = ConstrainedLasso(solver="epro_sgd_paper", radius=1.0, tol=0.1).fit(X / 10, y / 10)
    assert np.all(np.isfinite(est.coef_))


@pytest.mark.parametrize("solver", ["epro_orda", "epro_orda_paper", "epro_sgd", "epro_svrg"])
def test_default_budget_runs_on_one_sample(solver):
    """max_iter=None is at least 100 stochastic gradients: one row (10 * n_samples = 10, less
    than ORDA's first epoch of 17) still fits instead of raising."""
    est = ConstrainedLasso(solver=solver).fit(np.ones((1, 3)), np.ones(1))
    assert est.n_iter_ <= 100 and np.all(np.isfinite(est.coef_))


def test_cv_column_vector_target_is_raveled_with_a_warning():
    """An (n, 1) y is one target with a DataConversionWarning, as for LassoCV and the other
    regressors (the CV estimator raveled it without a word)."""
    from sklearn.exceptions import DataConversionWarning

    rng = np.random.RandomState(0)
    X = rng.randn(60, 4)
    y = X @ np.array([1.0, -1.0, 0.5, 0.0])
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        est = ConstrainedLassoCV(n_radii=3, cv=2).fit(X, y[:, None])
    assert np.ndim(est.coef_) == 1 and est.predict(X).shape == (60,)
    np.testing.assert_array_equal(est.coef_, ConstrainedLassoCV(n_radii=3, cv=2).fit(X, y).coef_)


def test_cv_verbose_1_prints_the_choice_and_the_refit_not_every_path_fit(capsys):
    """verbose=1 printed every epoch of the n_radii x n_folds path fits (about 300 lines on
    diabetes, none saying which fold or radius); LassoCV's verbose=1 stays short."""
    X, y = make_problem(n=120, d=6)
    cv = ConstrainedLassoCV(n_radii=5, cv=3, verbose=1).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("[ConstrainedLassoCV] radius=") for line in lines) == 1
    assert len(lines) == 1 + len(cv.history_["objective"])
    ConstrainedLassoCV(n_radii=5, cv=3, verbose=2).fit(X, y)
    lines_2 = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("[ConstrainedLassoCV] fold ") for line in lines_2) == 5 * 3
    # a stochastic solver's path fits print their records too (random_state fixed: one
    # seed in 30 stops the refit at a duality gap of 0.104, above tol, and warns)
    ConstrainedLassoCV(n_radii=5, cv=3, verbose=2, solver="epro_sgd", tol=0.1,
                       random_state=0).fit(X, y)
    assert len(capsys.readouterr().out.splitlines()) > len(lines_2) + 5 * 3


def test_cv_routes_groups_to_the_splitter():
    """``fit(X, y, groups=...)`` reaches a GroupKFold through metadata routing (LassoCV's
    contract); without routing enabled, extra fit parameters raise LassoCV's error."""
    import sklearn
    from sklearn.model_selection import GroupKFold

    X, y = make_problem(n=120, d=6)
    groups = np.arange(120) % 4
    folds = list(GroupKFold(3).split(X, y, groups))
    ref = ConstrainedLassoCV(n_radii=5, cv=folds).fit(X, y)
    with sklearn.config_context(enable_metadata_routing=True):
        routed = ConstrainedLassoCV(n_radii=5, cv=GroupKFold(3)).fit(X, y, groups=groups)
    np.testing.assert_array_equal(routed.mse_path_, ref.mse_path_)
    with pytest.raises(ValueError, match="enable_metadata_routing"):
        ConstrainedLassoCV(n_radii=5, cv=GroupKFold(3)).fit(X, y, groups=groups)


def test_cv_generator_with_routing_enabled():
    # with routing on, fit passed sample_weight to process_routing, whose router ran
    # check_cv(self.cv) and drew the generator: fit then raised "cv yielded no split"
    import sklearn
    from sklearn.model_selection import KFold

    X, y = make_problem(n=120, d=6)
    ref = ConstrainedLassoCV(n_radii=5, cv=list(KFold(3).split(X))).fit(X, y)
    with sklearn.config_context(enable_metadata_routing=True):
        for sample_weight in (None, np.ones(120)):
            est = ConstrainedLassoCV(n_radii=5, cv=KFold(3).split(X))
            est.fit(X, y, sample_weight=sample_weight)
            np.testing.assert_array_equal(est.mse_path_, ref.mse_path_)
        with pytest.raises(TypeError, match="groups"):   # not routed to any object
            ConstrainedLassoCV(n_radii=5, cv=KFold(3).split(X)).fit(X, y, groups=np.ones(120))


def test_summary_line_names_what_the_defaults_fit():
    """The first docstring line (the API table's description) said "with a ridge penalty"
    while the default l2_reg=0 fits no ridge term."""
    summary = ConstrainedLasso.__doc__.strip().splitlines()[0].lower()
    assert ConstrainedLasso().l2_reg == 0.0
    assert "l1-ball" in summary and ("ridge" not in summary or "optional" in summary)


def test_working_set_fista_does_not_drift_over_long_runs():
    """The working sets' FISTA tracks H x by recurrence; its rounding drift grew without
    bound: on raw diabetes with tol=1e-12 (below what float64 reaches there) the relative gap
    was 1e-9 after 3,000 iterations, 4e-3 after 30,000 and 508 (R2 -93) after 100,000."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, scaled=False)
    with warnings.catch_warnings():
        # where float64 bottoms out (3.8e-13 here, 1.7e-8 with the oldest pinned numpy) the
        # budget can run out: its warning is right, the drift is what this test is about
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ConstrainedLasso(tol=1e-12, max_iter=30_000).fit(X, y)
    assert model.history_["relative_gap"][-1] <= 1e-6
    assert model.score(X, y) == pytest.approx(
        ConstrainedLasso(radius=model.radius_).fit(X, y).score(X, y), abs=1e-4)


@pytest.mark.parametrize("scale", [1e77, 1e140])
def test_large_finite_x_fits_where_its_gram_matrix_is_finite(scale):
    # the power iteration's norm squared entries of the Gram matrix's size: from |X| about
    # 1e77 on it overflowed and fit refused X ("the Gram matrix X^T X overflowed") where
    # Lasso fits; the Gram matrix itself overflows only beyond about 1e154
    rng = np.random.RandomState(0)
    X = rng.randn(60, 8)
    y = X @ rng.randn(8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for est in (ConstrainedLasso(), ConstrainedLassoCV()):
            assert est.fit(X * scale, y).score(X * scale, y) > 0.999
    with pytest.raises(ValueError, match="X is too large in magnitude"):
        ConstrainedLasso().fit(X * 1e160, y)


@pytest.mark.parametrize("max_iter", [np.int32(2**31 - 1), np.int64(2**63 - 1),
                                      np.uint64(2**64 - 1)], ids=["int32", "int64", "uint64"])
def test_a_numpy_max_iter_at_its_maximum_fits_as_the_python_int(max_iter):
    # FISTA's range(1, max_iter + 1) wrapped to an empty range: 0 iterations, all-zero
    # coefficients, and ConstrainedLassoCV chose its radius from those
    rng = np.random.RandomState(0)
    X = rng.randn(40, 5)
    y = X @ rng.randn(5)
    for make in (lambda m: ConstrainedLasso(radius=1.0, max_iter=m),
                 lambda m: ConstrainedLassoCV(cv=3, max_iter=m)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            est = make(max_iter).fit(X, y)
        np.testing.assert_array_equal(est.coef_, make(int(max_iter)).fit(X, y).coef_)
        assert np.any(est.coef_ != 0)


def test_cv_fold_without_test_weight_is_nan_and_left_out():
    # every test sample of fold 0 has weight 0: its MSE was 0 / 1e-300 = 0 at every radius,
    # which lowered the reported mean (the choice was unaffected: a constant shift)
    rng = np.random.RandomState(0)
    X = rng.randn(150, 8)
    y = X @ rng.randn(8) + 0.5 * rng.randn(150)
    sw = np.ones(150)
    sw[:30] = 0.0
    est = ConstrainedLassoCV(n_radii=10, cv=5).fit(X, y, sample_weight=sw)
    assert np.all(np.isnan(est.mse_path_[:, 0])) and np.all(np.isfinite(est.mse_path_[:, 1:]))
    best = np.argmin(est.mse_path_[:, 1:].mean(axis=1))
    assert est.radius_ == est.radii_[best]
    folds = [(np.arange(30, 150), np.arange(30)), (np.arange(20, 150), np.arange(20))]
    with pytest.raises(ValueError, match="every cv split's test samples have sample_weight 0"):
        ConstrainedLassoCV(n_radii=10, cv=folds).fit(X, y, sample_weight=sw)


@pytest.mark.parametrize("n_targets", [1, 2])
def test_cv_refit_estimators_keep_the_feature_names(n_targets):
    # the refits were fitted on the validated array: estimator_.predict(X) on the same
    # DataFrame warned "X has feature names, but ConstrainedLasso was fitted without"
    pd = pytest.importorskip("pandas")
    X, y = make_problem(n=100, d=3, k=2)
    X = pd.DataFrame(X, columns=["a", "b", "c"])
    Y = y if n_targets == 1 else np.column_stack([y, -y])
    cv = ConstrainedLassoCV(n_radii=4).fit(X, Y)
    refits = [cv.estimator_] if n_targets == 1 else cv.estimators_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k, est in enumerate(refits):
            assert list(est.feature_names_in_) == ["a", "b", "c"]
            np.testing.assert_allclose(est.predict(X), cv.predict(X) if n_targets == 1
                                       else cv.predict(X)[:, k], rtol=1e-12)
    cv.fit(X.to_numpy(), Y)   # a refit without names drops them everywhere
    assert not any(hasattr(e, "feature_names_in_")
                   for e in ([cv] + ([cv.estimator_] if n_targets == 1 else cv.estimators_)))
