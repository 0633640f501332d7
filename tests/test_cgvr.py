"""Tests of CGVRClassifier / CGVRRegressor (paper 004) and of their kernels."""
import os
import pickle
import runpy
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.svm import LinearSVC

from skstoch import CGVRClassifier, CGVRRegressor
from skstoch._fast import _cgvr
from skstoch._fast._loss import Hinge, LogLoss, SquaredError, SquaredHinge
from skstoch._solvers import FitMonitor, svrg
from skstoch._solvers._line_search import strong_wolfe
from skstoch.utils import make_dataset
from skstoch.utils._random_reference import ReferenceStream

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- helpers


def _np_loss(name, p, y):
    if name == "log_loss":
        return np.logaddexp(0, -y * p)
    if name == "squared_hinge":
        return np.maximum(0, 1 - y * p) ** 2
    if name == "hinge":
        return np.maximum(0, 1 - y * p)
    return 0.5 * (p - y) ** 2


def _np_dloss(name, p, y):
    if name == "log_loss":
        return -y / (1 + np.exp(y * p))
    if name == "squared_hinge":
        return -2 * y * np.maximum(0, 1 - y * p)
    if name == "hinge":
        return np.where(1 - y * p > 0, -y, 0.0)
    return p - y


LOSS_OBJ = {"log_loss": LogLoss, "squared_hinge": SquaredHinge, "hinge": Hinge,
            "squared_error": SquaredError}


def objective(X, y, sw, w, b, alpha, loss, alpha_b=0.0):
    """(1/n) sum s_i loss + alpha/2 ||w||^2 + alpha_b/2 b^2 in plain numpy."""
    p = np.asarray(X @ w).ravel() + b
    return np.mean(sw * _np_loss(loss, p, y)) + 0.5 * alpha * w @ w + 0.5 * alpha_b * b * b


def signed(y):
    return np.where(y == y.max(), 1.0, -1.0)


@pytest.fixture(scope="module")
def clf_data():
    X, y = make_classification(3000, 20, n_informative=10, random_state=0)
    return X, y


# ----------------------------------------------------------------------------- kernels


@pytest.mark.parametrize("loss", ["log_loss", "squared_hinge", "squared_error"])
@pytest.mark.parametrize("sparse", [False, True])
def test_full_gradient_matches_finite_differences(loss, sparse, rng):
    n, d = 40, 6
    X = rng.randn(n, d)
    X[rng.rand(n, d) < 0.4] = 0.0
    y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    sw = rng.rand(n) + 0.5
    x = rng.randn(d + 1) * 0.3
    alpha, alpha_b = 0.1, 0.05
    ds = make_dataset(sp.csr_matrix(X) if sparse else X)
    grad, dl = np.empty(d + 1), np.empty(n)
    f = _cgvr.HeadTables(ds, y, sw, LOSS_OBJ[loss](), alpha, alpha_b, True).objective_gradient(
        x, grad, dl)
    assert f == pytest.approx(objective(X, y, sw, x[:d], x[d], alpha, loss, alpha_b), rel=1e-12)
    eps = 1e-6
    fd = np.empty(d + 1)
    for j in range(d + 1):
        e = np.zeros(d + 1)
        e[j] = eps
        fp = objective(X, y, sw, (x + e)[:d], (x + e)[d], alpha, loss, alpha_b)
        fm = objective(X, y, sw, (x - e)[:d], (x - e)[d], alpha, loss, alpha_b)
        fd[j] = (fp - fm) / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dl, _np_dloss(loss, X @ x[:d] + x[d], y), rtol=1e-12)
    # no intercept: its gradient coordinate is 0
    _cgvr.HeadTables(ds, y, sw, LOSS_OBJ[loss](), alpha, alpha_b, False).objective_gradient(
        x, grad, dl)
    assert grad[d] == 0.0


def reference_cgvr_epoch(X, y, sw, loss, x0, u, h, m, b, alpha, line_search, seed, stream,
                         c1=1e-4, c2=0.1, full=False):
    """Algorithm 3 (one outer iteration, Option I, PR+) in numpy, with the estimator's
    safeguards: restart with -g when p is not a descent direction of the line-search
    objective, PR+ beta, restart when the new direction is not a descent direction.
    ``full=True``: every row once per step (the deterministic full batch, b = n)."""
    n, d = X.shape
    Xa = np.hstack([X, np.ones((n, 1))])          # intercept as the last coordinate
    reg = np.full(d + 1, alpha)
    reg[d] = 0.0                                  # intercept not penalised
    dl0 = _np_dloss(loss, Xa @ x0, y)
    rs = ReferenceStream(seed, stream, 0)
    x, g = x0.copy(), h.copy()
    p = -g
    for _ in range(m):
        if full:
            idx, b = np.arange(n), n
        else:
            idx = np.array([rs.randint(n) for _ in range(b)])
        XS, yS, sS = Xa[idx], y[idx], sw[idx] / b

        def phi_factory(p):
            lin = 0.0
            if line_search == "vr":
                lin = (u - reg * x0) @ p - np.sum(sS * dl0[idx] * (XS @ p))

            def phi(a):
                xa = x + a * p
                za = XS @ xa
                val = np.sum(sS * _np_loss(loss, za, yS)) + 0.5 * (reg * xa) @ xa - \
                    0.5 * (reg * x) @ x + a * lin
                der = np.sum(sS * _np_dloss(loss, za, yS) * (XS @ p)) + (reg * xa) @ p + lin
                return val, der
            return phi

        phi = phi_factory(p)
        if not phi(0.0)[1] < 0:
            p = -g
            phi = phi_factory(p)
        a = 0.0
        if phi(0.0)[1] < 0:
            # the Python search the multinomial and Dask drivers run (the same steps as
            # the kernel's)
            a = strong_wolfe(phi, *phi(0.0), c1, c2, 1.0, 20, 20, np.inf)[0]
        x = x + a * p
        g_new = XS.T @ (sS * (_np_dloss(loss, XS @ x, yS) - dl0[idx])) + reg * x + \
            (u - reg * x0)
        beta = max(g_new @ (g_new - g) / (g @ g), 0.0)
        p = -g_new + beta * p
        g = g_new
        if not g @ p < 0:
            p = -g
    return x, g


@pytest.mark.parametrize("line_search", ["vr", "batch"])
@pytest.mark.parametrize("loss", ["log_loss", "squared_hinge"])
def test_inner_kernel_matches_numpy_reference(line_search, loss, rng):
    n, d, m, b = 60, 5, 8, 7
    X = rng.randn(n, d)
    y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    sw = rng.rand(n) + 0.5
    alpha = 0.05
    x0 = rng.randn(d + 1) * 0.2
    ds = make_dataset(X)
    u, dl0 = np.empty(d + 1), np.empty(n)
    seed, stream = 12345, 3
    tables = _cgvr.HeadTables(ds, y, sw, LOSS_OBJ[loss](), alpha, 0.0, True, seed, stream)
    tables.objective_gradient(x0, u, dl0)
    x, g, p = x0.copy(), u.copy(), -u
    stats = np.zeros(_cgvr.N_STATS, dtype=np.int64)
    steps = np.zeros(m)
    options = _cgvr.CGOptions(m, "PR+", line_search)
    _cgvr.cgvr_inner(tables, options, x, x0.copy(), u, dl0, g, p, b, np.inf, 0, stats, steps)
    x_ref, g_ref = reference_cgvr_epoch(X, y, sw, loss, x0, u, u.copy(), m, b, alpha,
                                        line_search, seed, stream)
    np.testing.assert_allclose(x, x_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g, g_ref, rtol=1e-9, atol=1e-12)
    assert np.count_nonzero(steps) > 0


@pytest.mark.parametrize("sparse", [False, True])
def test_full_batch_inner_kernel_is_exact_cg(sparse, rng):
    # batch_size >= n: each row once, no draws; g is then the exact gradient of f and the
    # VR line search is a line search on f itself
    n, d, m = 40, 6, 6
    X = rng.randn(n, d)
    X[rng.rand(n, d) < 0.5] = 0.0
    y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    sw = rng.rand(n) + 0.5
    alpha = 0.02
    x0 = rng.randn(d + 1) * 0.2
    ds = make_dataset(sp.csr_matrix(X) if sparse else X)
    u, dl0 = np.empty(d + 1), np.empty(n)
    loss = LogLoss()
    tables = _cgvr.HeadTables(ds, y, sw, loss, alpha, 0.0, True, 1, 0)
    tables.objective_gradient(x0, u, dl0)
    x, g, p = x0.copy(), u.copy(), -u
    stats = np.zeros(_cgvr.N_STATS, dtype=np.int64)
    _cgvr.cgvr_inner(tables, _cgvr.CGOptions(m), x, x0.copy(), u, dl0, g, p, 2 * n, np.inf, 0,
                     stats, np.zeros(m))
    x_ref, g_ref = reference_cgvr_epoch(X, y, sw, "log_loss", x0, u, u.copy(), m, n, alpha,
                                        "vr", 1, 0, full=True)
    np.testing.assert_allclose(x, x_ref, rtol=1e-9, atol=1e-12)
    # g_m is the exact gradient of f at x_m
    u_m = np.empty(d + 1)
    tables.objective_gradient(x, u_m, np.empty(n))
    np.testing.assert_allclose(g, u_m, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(g, g_ref, rtol=1e-9, atol=1e-12)


def test_kernels_check_array_lengths(rng):
    # the kernels run without bounds checks: their entry points check every length first
    n, d = 20, 3
    X, y, sw = rng.randn(n, d), np.where(rng.rand(n) < 0.5, 1.0, -1.0), np.ones(n)
    ds = make_dataset(X)
    with pytest.raises(ValueError, match="y has length 19"):
        _cgvr.HeadTables(ds, y[:-1], sw, LogLoss(), 0.1, 0.0, True)
    tables = _cgvr.HeadTables(ds, y, sw, LogLoss(), 0.1, 0.0, True)
    u, dl0 = np.empty(d + 1), np.empty(n)
    with pytest.raises(ValueError, match="x has length 3"):
        tables.objective_gradient(np.zeros(d), u, dl0)
    x0 = np.zeros(d + 1)
    tables.objective_gradient(x0, u, dl0)
    stats, steps = np.zeros(_cgvr.N_STATS, dtype=np.int64), np.zeros(4)

    def inner(options, z_full=None, g=u.copy(), dl=dl0):
        return _cgvr.cgvr_inner(tables, options, x0.copy(), x0, u, dl, g, -u, 5, np.inf, 0,
                                stats, steps, z_full)

    with pytest.raises(ValueError, match="g has length 2"):
        inner(_cgvr.CGOptions(4), g=u[:2].copy())
    with pytest.raises(ValueError, match="dl0 has length 19"):
        inner(_cgvr.CGOptions(4), dl=dl0[:-1])
    with pytest.raises(ValueError, match="steps"):
        inner(_cgvr.CGOptions(5))
    with pytest.raises(ValueError, match="z_full"):
        inner(_cgvr.CGOptions(4, line_search="full"))
    with pytest.raises(ValueError, match="unknown beta"):
        _cgvr.CGOptions(4, beta="XY")
    with pytest.raises(ValueError, match="c1 < c2"):
        _cgvr.CGOptions(4, c1=0.5, c2=0.1)
    # valid arrays run: at least one draw per sampled row (4 steps of 5 rows)
    assert inner(_cgvr.CGOptions(4, line_search="full"), z_full=X @ x0[:d]) >= 20
    with pytest.raises(ValueError, match="q has length 3"):
        _cgvr.line_search_margins(_cgvr.CGOptions(), LogLoss(), y, y[:3], y, sw, 0.0, 0.1,
                                  0.0, np.inf)


def test_line_search_satisfies_strong_wolfe(rng):
    z, q = rng.randn(50), rng.randn(50)
    y = np.where(rng.rand(50) < 0.5, 1.0, -1.0)
    s = np.full(50, 1 / 50)
    loss = LogLoss()
    # make p a descent direction: q aligned with -dloss
    q = -np.sign(loss.dloss_array(z, y)) * np.abs(q)
    options = _cgvr.CGOptions(c1=1e-4, c2=0.1, step_init=1.0, ls_max_iter=20, zoom_max_iter=20)
    a, phi0, dphi0, n_evals, failed = _cgvr.line_search_margins(
        options, loss, z, q, y, s, 0.0, 0.01, 0.0, np.inf)
    assert dphi0 < 0 and a > 0 and not failed

    def phi(t):
        return np.sum(s * loss.loss_array(z + t * q, y)) + 0.005 * t * t

    def dphi(t):
        return np.sum(s * loss.dloss_array(z + t * q, y) * q) + 0.01 * t

    assert phi(a) <= phi0 + 1e-4 * a * dphi0
    assert abs(dphi(a)) <= 0.1 * abs(dphi0)
    # not a descent direction: no step
    a, *_ = _cgvr.line_search_margins(options, loss, z, -q, y, s, 0.0, 0.01, 0.0, np.inf)
    assert a == 0.0


@pytest.mark.parametrize("n, ran", [(4999, "cg"), (5000, "cgvr")])
def test_auto_solver_is_cg_below_5000_rows_else_cgvr(n, ran):
    # solver='auto' is the fit of the solver it names (bitwise), for both estimators and
    # the multinomial model; max_iter=None is 1000 CG steps or 100 outer iterations
    X, y = make_classification(n, 10, n_informative=5, n_classes=3, random_state=0)
    for est, data in [(CGVRClassifier(random_state=0), (X, y)),
                      (CGVRClassifier(random_state=0), (X, y == 0)),
                      (CGVRRegressor(random_state=0), (X, X[:, 0] + y))]:
        auto = est.fit(*data)
        same = clone(est).set_params(solver=ran).fit(*data)
        assert auto.solver_ == same.solver_ == ran
        np.testing.assert_array_equal(auto.coef_, same.coef_)
        assert auto.n_iter_ == same.n_iter_
        # a warning names the solver that ran (the multinomial fit's named 'auto')
        with pytest.warns(ConvergenceWarning, match=f"solver='{ran}'"):
            clone(est).set_params(max_iter=1).fit(*data)
    budget = 1000 if ran == "cg" else 100
    assert CGVRClassifier()._cgvr_params(X, None).max_iter == budget
    assert CGVRClassifier(max_iter=7)._cgvr_params(X, None).max_iter == 7


def test_cgvr_paper_solver_is_named_as_given():
    X, y = make_classification(300, 5, random_state=0)
    est = CGVRClassifier(solver="cgvr_paper", max_iter=2, tol=0, random_state=0)
    with pytest.warns(ConvergenceWarning, match="solver='cgvr_paper'"):
        est.fit(X, y)
    assert est.solver_ == "cgvr_paper"


@pytest.mark.skipif(np.finfo(np.longdouble).eps > 1e-18,
                    reason="the reference needs an extended-precision long double")
@pytest.mark.parametrize("loss", [LogLoss(), SquaredHinge(), Hinge(), SquaredError()],
                         ids=lambda loss: type(loss).__name__)
def test_loss_change_keeps_the_digits_of_the_change(rng, loss):
    # loss(p + dp) - loss(p) for small dp, against the same difference in long double
    p = rng.randn(200) * 2
    y = np.where(rng.rand(200) < 0.5, 1.0, -1.0)
    if isinstance(loss, SquaredError):
        y = rng.randn(200)
    dp = rng.randn(200) * 1e-3
    L = np.longdouble
    if isinstance(loss, LogLoss):
        def exact(q):
            return np.log1p(np.exp(-L(y) * q))
    elif isinstance(loss, SquaredError):
        def exact(q):
            return (q - L(y)) ** 2 / 2
    else:
        power = 2 if isinstance(loss, SquaredHinge) else 1

        def exact(q):
            return np.maximum(L(1) - L(y) * q, 0) ** power
    reference = exact(L(p) + L(dp)) - exact(L(p))
    # a few roundings of the change, plus the reference's own (long double's, about 1e-19
    # times the size of p and of the losses), far below float64's roundings of the losses
    size = 1.0 + np.abs(p) + np.abs(exact(L(p)).astype(float))
    bound = 1e-15 * np.abs(reference).astype(float) + 2e-18 * size
    got = np.array([loss.py_loss_change(a, b, t) for a, b, t in zip(p, dp, y)])
    assert np.all(np.abs(got - reference.astype(float)) <= bound)
    # the plain difference (the base class's) keeps only the roundings of the two losses
    plain = np.array([loss.py_loss(a + b, t) - loss.py_loss(a, t) for a, b, t in zip(p, dp, y)])
    assert np.any(np.abs(plain - reference.astype(float)) > bound)


@pytest.mark.parametrize("Est", [CGVRClassifier, CGVRRegressor])
def test_full_batch_cg_reaches_a_tight_tol(Est):
    # the line search of 'cg' sums loss changes: with phi(a) summed as a difference of two
    # sums over the 500 rows it stalled (ConvergenceWarning) at max |gradient| 3e-8 to 5e-8
    X, y = make_classification(500, 20, random_state=0)
    target = y if Est is CGVRClassifier else X[:, 0] + y
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = Est(solver="cg", tol=1e-10).fit(X, target)
    assert est.history_["grad_max"][-1] <= 1e-10


def test_logistic_line_sums_are_those_of_the_loss(rng):
    # the line search sums the log-loss and its derivative with one exp per margin: the
    # same bits as the loss's own sums (margins of both signs, large ones and zeros)
    z = np.concatenate([rng.randn(200) * 3, [0.0, -0.0, 40.0, -40.0, 800.0, -800.0]])
    q = np.concatenate([rng.randn(200), [1.0, -1.0, 0.5, -0.5, 2.0, -2.0]])
    y = np.where(rng.rand(z.size) < 0.5, 1.0, -1.0)
    s = rng.rand(z.size)
    loss = LogLoss()
    _, phi0, dphi0, *_ = _cgvr.line_search_margins(_cgvr.CGOptions(), loss, z, q, y, s, 0.0,
                                                   0.0, 0.0, np.inf)
    value, d1, _ = loss.along_line(z, q, y, s, 0.0)
    assert phi0 == value and dphi0 == d1


def test_logistic_full_pass_is_that_of_the_loss(rng):
    # the full pass takes the log-loss and its derivative with one exp per row: the same
    # bits as the loss's own (one block of rows: the loss summed in row order)
    n, d = 300, 5
    X = rng.randn(n, d) * 4
    X[:3] = [[0.0] * d, [300.0] * d, [-300.0] * d]
    y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    sw = rng.rand(n)
    x = np.append(rng.randn(d), 0.0)
    grad, dl, z = np.empty(d + 1), np.empty(n), np.empty(n)
    f = _cgvr.HeadTables(make_dataset(X), y, sw, LogLoss(), 0.0, 0.0, True).objective_gradient(
        x, grad, dl, z)
    loss = LogLoss()
    np.testing.assert_array_equal(dl, loss.dloss_array(z, y))
    total = 0.0
    for s_i, l_i in zip(sw, loss.loss_array(z, y)):
        total += s_i * l_i
    assert f == total * (1.0 / n)


# ----------------------------------------------------------------------------- shared loop


def _quadratic_loop(**hooks):
    """The shared SVRG loop on f(x) = ||x - c||^2 / 2 with a gradient step as inner loop."""
    c = np.array([1.0, -2.0])
    monitor = FitMonitor("toy")
    evaluated = []

    def full_gradient(x):
        evaluated.append(x.copy())
        return 0.5 * float((x - c) @ (x - c)), x - c

    def inner_loop(x, snapshot, grad, step, epoch):
        return x - step * grad

    result = svrg(np.zeros(2), full_gradient, inner_loop, step_size="fixed", eta0=0.5,
                  inner_iter=1, max_iter=4, tol=0.0, monitor=monitor, **hooks)
    return result, monitor.history(), evaluated


def test_shared_svrg_loop_stop_and_accept_hooks():
    # default: relative-change stop after the inner loop, the last iterate never evaluated
    result, history, evaluated = _quadratic_loop()
    assert result.n_iter == 4 and len(evaluated) == 4 and list(history["epoch"]) == [0, 1, 2, 3]
    np.testing.assert_allclose(result.x, [1 - 0.5**4, -2 * (1 - 0.5**4)])
    # a stop hook is tested at every snapshot: the iterate after the last epoch is evaluated
    # and recorded too, and a criterion <= tol ends the loop before the next inner loop
    result, history, evaluated = _quadratic_loop(stop=lambda f, g: f)
    assert result.n_iter == 4 and len(evaluated) == 5 and not result.converged
    assert result.criterion == pytest.approx(0.5 * 5 * 0.5**8)
    result, _, evaluated = _quadratic_loop(stop=lambda f, g: float(f > 0.1))
    assert result.converged and result.n_iter == 3 and len(evaluated) == 4   # f(x_3) < 0.1
    # accept: a rejected epoch goes back to its snapshot, whose objective is kept
    seen = []

    def accept(objective, previous):
        seen.append((objective, previous))
        return len(seen) != 2

    result, history, _ = _quadratic_loop(stop=lambda f, g: 1.0, accept=accept)
    assert len(seen) == 4 and seen[2][1] == seen[0][0]        # epoch 2 rejected
    assert history["objective"][2] == history["objective"][1]
    np.testing.assert_allclose(result.x, [1 - 0.5**3, -2 * (1 - 0.5**3)])


# ----------------------------------------------------------------------------- optimum


def test_log_loss_reaches_logistic_regression_optimum(clf_data):
    X, y = clf_data
    n, alpha = X.shape[0], 1e-3
    clf = CGVRClassifier(alpha=alpha, tol=1e-6, max_iter=200, random_state=0, solver="cgvr").fit(X, y)
    lr = LogisticRegression(C=1 / (n * alpha), tol=1e-12, max_iter=10000).fit(X, y)
    ys, sw = signed(y), np.ones(n)
    f_ours = objective(X, ys, sw, clf.coef_[0], clf.intercept_[0], alpha, "log_loss")
    f_ref = objective(X, ys, sw, lr.coef_[0], lr.intercept_[0], alpha, "log_loss")
    assert abs(f_ours - f_ref) <= 1e-8 * f_ref
    assert clf.history_["objective"][-1] == pytest.approx(f_ours, rel=1e-12)
    np.testing.assert_allclose(clf.coef_, lr.coef_, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("alpha, tol", [(1e-4, 1e-4), (1e-5, 1e-4)])
def test_ill_conditioned_breast_cancer_reaches_optimum(alpha, tol):
    # standardised breast_cancer at small alpha: nearly separable, condition number ~1e5.
    # Batch curvature along p underestimates the true one, an epoch overshoots and is
    # rejected; the batch then grows (up to the deterministic full batch) until it converges.
    # (At alpha=1e-5, max|grad| <= 1e-9 lies below the rounding of f's sum over the rows:
    # the line searches reach it on the rows' loss changes; it stalled at 1.06e-9 without)
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    n = X.shape[0]
    lr = LogisticRegression(C=1 / (n * alpha), tol=1e-12, max_iter=100000).fit(X, y)
    ys, sw = signed(y), np.ones(n)
    f_ref = objective(X, ys, sw, lr.coef_[0], lr.intercept_[0], alpha, "log_loss")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)   # the default tol is reached
        clf = CGVRClassifier(alpha=alpha, tol=tol * alpha, random_state=0, solver="cgvr").fit(X, y)
    f_ours = objective(X, ys, sw, clf.coef_[0], clf.intercept_[0], alpha, "log_loss")
    assert f_ours - f_ref <= 1e-8 * f_ref
    assert clf.history_["batch"][-1] > int(np.sqrt(n))   # the batch did grow


@pytest.mark.parametrize("dataset", ["breast_cancer", "digits"])
def test_safeguard_takes_the_full_batch_once_doubling_reaches_half_the_rows(dataset):
    # binary (the kernel's inner loop) and multinomial (the Python driver): on these small
    # standardised problems the safeguard rejects epochs until the batch is large; a doubled
    # batch of n/2 rows or more becomes the full batch, never a draw of >= n/2 rows
    from sklearn import datasets
    from sklearn.preprocessing import StandardScaler
    X, y = getattr(datasets, f"load_{dataset}")(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    n = X.shape[0]
    clf = CGVRClassifier(random_state=0, solver="cgvr").fit(X, y)
    batches = np.unique(clf.history_["batch"][1:])
    assert batches[-1] == n, batches
    assert np.all(2 * batches[:-1] < n), batches
    steps = np.log2(batches[:-1] / int(np.sqrt(n)))     # doublings of int(sqrt(n))
    assert np.array_equal(steps, np.round(steps)), batches


def test_squared_hinge_reaches_linear_svc_optimum(clf_data):
    X, y = clf_data
    n, alpha = X.shape[0], 1e-3
    # LIBLINEAR penalises the intercept (intercept_scaling=1): regularize_intercept=True
    clf = CGVRClassifier("squared_hinge", alpha=alpha, regularize_intercept=True, tol=1e-6,
                         max_iter=200, random_state=0, solver="cgvr").fit(X, y)
    svc = LinearSVC(C=1 / (n * alpha), tol=1e-12, max_iter=100000).fit(X, y)
    ys, sw = signed(y), np.ones(n)
    f_ours = objective(X, ys, sw, clf.coef_[0], clf.intercept_[0], alpha, "squared_hinge",
                       alpha)
    f_ref = objective(X, ys, sw, svc.coef_[0], svc.intercept_[0], alpha, "squared_hinge",
                      alpha)
    assert f_ours <= f_ref * (1 + 1e-8)
    assert f_ours >= f_ref * (1 - 1e-6)


def test_regressor_reaches_ridge_optimum():
    X, y = make_regression(2000, 15, noise=5.0, random_state=0)
    n, alpha = X.shape[0], 1e-2
    reg = CGVRRegressor(alpha=alpha, tol=1e-6, max_iter=200, random_state=0, solver="cgvr").fit(X, y)
    ridge = Ridge(alpha=n * alpha, tol=1e-12).fit(X, y)
    sw = np.ones(n)
    f_ours = objective(X, y, sw, reg.coef_, reg.intercept_, alpha, "squared_error")
    f_ref = objective(X, y, sw, ridge.coef_, ridge.intercept_, alpha, "squared_error")
    assert abs(f_ours - f_ref) <= 1e-8 * f_ref
    assert reg.coef_.shape == (15,) and isinstance(reg.intercept_, float)


def test_sample_weight_matches_logistic_regression(clf_data, rng):
    X, y = clf_data
    n, alpha = X.shape[0], 1e-3
    sw = rng.rand(n) * 2
    clf = CGVRClassifier(alpha=alpha, tol=1e-6, max_iter=200, random_state=0, solver="cgvr")
    clf.fit(X, y, sample_weight=sw)
    lr = LogisticRegression(C=1 / (n * alpha), tol=1e-12, max_iter=10000)
    lr.fit(X, y, sample_weight=sw)
    ys = signed(y)
    f_ours = objective(X, ys, sw, clf.coef_[0], clf.intercept_[0], alpha, "log_loss")
    f_ref = objective(X, ys, sw, lr.coef_[0], lr.intercept_[0], alpha, "log_loss")
    assert abs(f_ours - f_ref) <= 1e-8 * f_ref


def test_class_weight_equals_sample_weight(clf_data):
    X, y = clf_data
    cw = {0: 2.0, 1: 0.5}
    a = CGVRClassifier(alpha=1e-3, class_weight=cw, max_iter=5, tol=0, random_state=1, solver="cgvr")
    b = CGVRClassifier(alpha=1e-3, max_iter=5, tol=0, random_state=1, solver="cgvr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a.fit(X, y)
        b.fit(X, y, sample_weight=np.where(y == 0, 2.0, 0.5))
    np.testing.assert_array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("solver", ["cg"])
def test_full_batch_cg_baseline_reaches_optimum(clf_data, solver):
    X, y = clf_data
    n, alpha = X.shape[0], 1e-3
    clf = CGVRClassifier(alpha=alpha, solver=solver, tol=1e-7, max_iter=300).fit(X, y)
    lr = LogisticRegression(C=1 / (n * alpha), tol=1e-12, max_iter=10000).fit(X, y)
    ys, sw = signed(y), np.ones(n)
    f_ours = objective(X, ys, sw, clf.coef_[0], clf.intercept_[0], alpha, "log_loss")
    f_ref = objective(X, ys, sw, lr.coef_[0], lr.intercept_[0], alpha, "log_loss")
    assert abs(f_ours - f_ref) <= 1e-8 * f_ref


@pytest.mark.parametrize("kwargs", [
    dict(solver="svrg", eta0=0.05), dict(solver="minibatch_svrg", eta0=0.5),
    dict(line_search="batch"), dict(line_search="full", max_iter=3), dict(beta="FR"),
    dict(beta="HS"), dict(beta="DY"), dict(beta="PR"), dict(beta="none"),
    dict(w_selection="random"), dict(restart="full"), dict(init="uniform"),
    dict(safeguard=False), dict(step_max=0.5), dict(loss="hinge"),
    dict(loss="squared_error"), dict(fit_intercept=False),
])
def test_options_decrease_objective(clf_data, kwargs):
    X, y = clf_data
    kwargs = {"max_iter": 5, "tol": 0, "random_state": 0, "alpha": 1e-3, **kwargs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = CGVRClassifier(**{"solver": "cgvr", **kwargs}).fit(X, y)
    obj = clf.history_["objective"]
    assert np.all(np.isfinite(obj))
    assert obj[-1] < obj[0]
    if kwargs.get("fit_intercept") is False:
        assert clf.intercept_[0] == 0.0
    if "eta0" not in kwargs and kwargs.get("line_search") != "batch":
        # the fixed-step SVRG baselines and the paper's batch line search are slow here
        assert clf.score(X, y) > 0.7


def test_vr_line_search_beats_paper_batch_line_search(clf_data):
    """The paper's batch line search stalls at a noise floor; the VR line search does not."""
    X, y = clf_data
    common = dict(alpha=1e-3, max_iter=15, tol=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        vr = CGVRClassifier(line_search="vr", **common, solver="cgvr").fit(X, y)
        paper = CGVRClassifier(line_search="batch", safeguard=False, **common, solver="cgvr").fit(X, y)
    lr = LogisticRegression(C=1 / (X.shape[0] * 1e-3), tol=1e-12, max_iter=10000).fit(X, y)
    f_ref = objective(X, signed(y), np.ones(len(y)), lr.coef_[0], lr.intercept_[0], 1e-3,
                      "log_loss")
    gap_vr = vr.history_["objective"][-1] - f_ref
    gap_paper = paper.history_["objective"][-1] - f_ref
    assert gap_vr < 1e-9 * f_ref
    assert gap_paper > 100 * gap_vr


# ----------------------------------------------------------------------------- API


def test_dense_and_csr_give_the_same_result(clf_data):
    X, y = clf_data
    Xs = X.copy()
    Xs[np.abs(Xs) < 0.7] = 0.0
    kw = dict(alpha=1e-3, max_iter=4, tol=0, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = CGVRClassifier(**kw, solver="cgvr").fit(Xs, y)
        b = CGVRClassifier(**kw, solver="cgvr").fit(sp.csr_matrix(Xs), y)
    # the margins sum in lanes by column index, so the zeros a CSR row leaves out change
    # no bit (with d = 20 > 8 every lane is used); CSR batch margins add the sums of their
    # feature blocks (one block below 2 * TEAM_COLS = 32 features), dense ones the lanes
    # of the whole row: with d >= 32 the two agree to rounding only
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


def test_same_seed_same_coef_and_threads_do_not_matter():
    X, y = make_classification(600, 8, n_informative=5, n_classes=3, random_state=0)
    kw = dict(alpha=1e-3, max_iter=3, tol=0, random_state=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = CGVRClassifier(**kw, solver="cgvr").fit(X, y)
        b = CGVRClassifier(**kw, solver="cgvr").fit(X, y)
        c = CGVRClassifier(n_jobs=2, **kw, solver="cgvr").fit(X, y)
        e = CGVRClassifier(**{**kw, "random_state": 8}, solver="cgvr").fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.coef_, c.coef_)
    np.testing.assert_array_equal(a.intercept_, c.intercept_)
    assert not np.array_equal(a.coef_, e.coef_)


def test_multiclass_shapes_and_proba():
    X, y = make_classification(600, 8, n_informative=5, n_classes=3, random_state=0)
    clf = CGVRClassifier(alpha=1e-2, random_state=0, solver="cgvr").fit(X, y)
    assert clf.coef_.shape == (3, 8) and clf.intercept_.shape == (3,)
    assert clf.decision_function(X).shape == (600, 3)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(clf.predict_log_proba(X), np.log(proba))
    assert isinstance(clf.history_, dict)    # one multinomial problem
    assert clf.score(X, y) > 0.7
    svm = CGVRClassifier("squared_hinge", alpha=1e-2, random_state=0, solver="cgvr").fit(X, y)
    with pytest.raises(AttributeError, match="predict_proba"):
        svm.predict_proba(X)


@pytest.mark.parametrize("n_classes, kw", [(2, {}), (3, {}), (3, {"multi_class": "ovr"}),
                                          (0, {})])
def test_history_has_every_column_when_the_fit_stops_at_the_start(n_classes, kw):
    # a fit stopped at iteration 0 (tol met at w = 0) had only the start's six columns:
    # history_["line_search_evals"] raised KeyError where the docstring promised NaN
    columns = {"iteration", "objective", "grad_max", "step_size", "passes", "time",
               "restarts", "skipped_steps", "line_search_evals", "rejected_epochs",
               "step_cap", "batch"}
    X, y = make_classification(200, 6, n_informative=4, n_classes=max(n_classes, 2),
                               random_state=0)
    est = CGVRRegressor(tol=1e300) if n_classes == 0 else CGVRClassifier(tol=1e300, **kw)
    est.fit(X, y)
    assert est.n_iter_ == 0
    for h in est.history_ if isinstance(est.history_, list) else [est.history_]:
        assert set(h) == columns
        assert np.isnan(h["line_search_evals"][0]) and np.isnan(h["batch"][0])


@pytest.mark.parametrize("n_rows", [1000, 6000], ids=["cg", "cgvr"])
@pytest.mark.parametrize("n_classes", [0, 2, 3])
def test_a_feature_on_a_large_scale_still_gets_steps(n_classes, n_rows):
    # one raw column in the tens of thousands: the line searches (first trial step 1, then
    # 20 halvings) found no decrease along -grad, and the default fit returned all-zero
    # coefficients (accuracy 0.50 / 0.33, R^2 -0.01) with a warning to loosen tol.  The
    # searches now go on at steps 2^20 times shorter
    rng = np.random.RandomState(0)
    if n_classes:
        X, y = make_classification(n_rows, 10, n_informative=5, n_classes=n_classes,
                                   random_state=0)
        X[:, 0] = X[:, 0] * 2e4 + 5e4
        est, reference = CGVRClassifier(random_state=0), LogisticRegression()
    else:
        X = rng.randn(n_rows, 10) * 1e4
        y = X @ rng.randn(10) / 1e4 + 0.1 * rng.randn(n_rows)
        est, reference = CGVRRegressor(random_state=0), Ridge()
    assert est._solver_name(X).endswith(f"(solver='{'cg' if n_rows < 5000 else 'cgvr'}')")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # both may need more iterations
        est.fit(X, y)
        reference.fit(X, y)
    assert est.n_iter_ > 0 and np.all(est.coef_ != 0)
    assert est.score(X, y) >= reference.score(X, y) - 0.005


@pytest.mark.parametrize("n_rows", [1000, 6000], ids=["cg", "cgvr"])
@pytest.mark.parametrize("n_classes", [0, 2, 3])
@pytest.mark.parametrize("scale", [1e15, 1e40])
def test_every_feature_on_a_large_scale_still_gets_steps(scale, n_classes, n_rows):
    # X times 1e15: the step that decreases f is about 1e-30, beyond the 3 rescales by 2^-20
    # of the test above, and the default fit returned all-zero coefficients (accuracy 0.50 /
    # 0.33, R^2 0.00) telling the user to loosen tol.  The rescales now reach 1 / L (L from
    # the rows' norms).  tol is on the gradient, which scales with X: the fits still warn
    if n_classes:
        X, y = make_classification(n_rows, 10, n_informative=5, n_classes=n_classes,
                                   random_state=0)
        est, reference = CGVRClassifier(random_state=0), LogisticRegression()
    else:
        X, y = make_regression(n_rows, 10, noise=10, random_state=0)
        est, reference = CGVRRegressor(random_state=0), Ridge()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X * scale, y)
    assert est.score(X * scale, y) >= reference.fit(X, y).score(X, y) - 0.005


@pytest.mark.parametrize("kw", [{}, dict(solver="cgvr")], ids=["cg", "cgvr"])
@pytest.mark.parametrize("n_classes", [0, 2, 3])
def test_rows_whose_squared_norms_overflow_are_refused(kw, n_classes):
    # |X| of 1e200: the fits returned zero coefficients after overflow RuntimeWarnings
    X, y = make_classification(60, 4, n_informative=2, n_classes=max(n_classes, 2),
                               n_clusters_per_class=1, random_state=0)
    est = CGVRClassifier(**kw) if n_classes else CGVRRegressor(**kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="squared row norms overflow"):
            est.fit(X * 1e200, y)


def test_history_verbose_callback_and_warning(clf_data, capsys):
    X, y = clf_data
    with pytest.warns(ConvergenceWarning, match="max \\|gradient\\|"):
        clf = CGVRClassifier(max_iter=2, tol=1e-12, verbose=1, random_state=0, solver="cgvr").fit(X, y)
    assert "CGVRClassifier" in capsys.readouterr().out
    h = clf.history_
    for key in ("objective", "grad_max", "step_size", "passes", "time", "restarts"):
        assert len(h[key]) == 3
    assert np.all(np.diff(h["passes"]) > 0)
    seen = []
    clf = CGVRClassifier(callback=lambda rec: seen.append(rec["iteration"]) or len(seen) >= 2,
                         tol=0, random_state=0, solver="cgvr").fit(X, y)
    assert clf.n_iter_ == 1 and seen == [0, 1]


def test_warm_start_continues_from_previous_solution(clf_data):
    X, y = clf_data
    clf = CGVRClassifier(alpha=1e-3, tol=1e-6, warm_start=True, random_state=0, solver="cgvr").fit(X, y)
    first = clf.n_iter_
    coef = clf.coef_.copy()
    clf.fit(X, y)
    assert first > 2 and clf.n_iter_ == 0
    np.testing.assert_array_equal(clf.coef_, coef)
    clf.set_params(tol=1e-8).fit(X, y)
    assert 0 < clf.n_iter_ < first


def test_float32_pickle_and_input_not_modified(clf_data):
    X, y = clf_data
    X32 = X.astype(np.float32)
    X_copy = X32.copy()
    clf = CGVRClassifier(alpha=1e-3, random_state=0, solver="cgvr").fit(X32, y)
    np.testing.assert_array_equal(X32, X_copy)
    clf2 = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(clf2.decision_function(X), clf.decision_function(X))


@pytest.mark.parametrize("make_bad, match", [
    (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X), y), "NaN"),
    (lambda X, y: (X, np.zeros_like(y)), "only one class"),
    (lambda X, y: (X[:0], y[:0]), "0 sample"),
])
def test_bad_input_raises_clear_errors(clf_data, make_bad, match):
    X, y = clf_data
    Xb, yb = make_bad(X[:50], y[:50])
    with pytest.raises(ValueError, match=match):
        CGVRClassifier(solver="cgvr").fit(Xb, yb)


def test_bad_parameters_raise_clear_errors(clf_data):
    X, y = clf_data
    X, y = X[:50], y[:50]
    with pytest.raises(ValueError, match="sample_weight"):
        CGVRClassifier(solver="cgvr").fit(X, y, sample_weight=np.ones(10))
    with pytest.raises(ValueError, match="c1 < c2"):
        CGVRClassifier(c1=0.5, c2=0.1, solver="cgvr").fit(X, y)
    with pytest.raises(ValueError, match="'beta' parameter"):
        CGVRClassifier(beta="XY", solver="cgvr").fit(X, y)
    with pytest.raises(ValueError, match="'batch_size' parameter"):
        CGVRClassifier(batch_size=0, solver="cgvr").fit(X, y)
    with pytest.raises(ValueError, match="'loss' parameter"):
        CGVRRegressor(loss="log_loss", solver="cgvr").fit(X, y)
    with pytest.raises(ValueError, match="Input y contains infinity"):
        CGVRRegressor(solver="cgvr").fit(X, np.where(np.arange(50) == 2, np.inf, 1.0))


def test_compare_with_lightning_svrg_if_installed(clf_data):
    lightning = pytest.importorskip("lightning.classification")
    X, y = clf_data
    n, alpha = X.shape[0], 1e-3
    ours = CGVRClassifier(alpha=alpha, fit_intercept=False, tol=1e-6, random_state=0, solver="cgvr").fit(X, y)
    theirs = lightning.SVRGClassifier(loss="log", alpha=alpha, eta=0.1, n_inner=1.0,
                                      max_iter=100, tol=1e-12, random_state=0).fit(X, y)
    ys, sw = signed(y), np.ones(n)
    f_ours = objective(X, ys, sw, ours.coef_[0], 0.0, alpha, "log_loss")
    f_theirs = objective(X, ys, sw, np.ravel(theirs.coef_), 0.0, alpha, "log_loss")
    assert f_ours <= f_theirs * (1 + 1e-6)


@pytest.mark.parametrize("path", sorted(ROOT.glob("examples/plot_cgvr*.py")))
def test_example_runs_in_fast_mode(path, monkeypatch):
    monkeypatch.setenv("SKSTOCH_EXAMPLE_FAST", "1")
    pytest.importorskip("matplotlib")
    runpy.run_path(str(path), run_name="__main__")


def test_tol_is_absolute_max_gradient(clf_data):
    # issue 19.2: tol bounds max |grad f| of the mean objective, as LogisticRegression's gtol
    X, y = clf_data
    tol = 1e-3
    clf = CGVRClassifier(alpha=1e-2, tol=tol, random_state=0, solver="cgvr").fit(X, y)
    grad_max = clf.history_["grad_max"]
    assert grad_max[-1] <= tol < grad_max[-2]


def test_default_alpha_is_logistic_regression_default(clf_data):
    # issue 19.1: alpha='auto' is 1/n_samples, LogisticRegression(C=1)'s penalty
    X, y = clf_data
    X, y = X[:500], y[:500]
    clf = CGVRClassifier(tol=1e-8, random_state=0).fit(X, y)
    lr = LogisticRegression(tol=1e-10, max_iter=10000).fit(X, y)
    np.testing.assert_allclose(clf.coef_, lr.coef_, rtol=1e-5, atol=1e-6)
    reg = CGVRRegressor(tol=1e-8, random_state=0).fit(X, X[:, 0] + y)
    ridge = Ridge().fit(X, X[:, 0] + y)
    np.testing.assert_allclose(reg.coef_, ridge.coef_, rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_integer_parameters_bounded_and_batch_clamped():
    # issue 18.2: a huge batch_size is clamped to n before anything is allocated (the same
    # fit as batch_size=n); integer budgets that reach C ints are bounded
    import tracemalloc
    X, y = make_classification(60, 5, random_state=0)
    kw = dict(alpha=1e-2, max_iter=3, inner_iter=3, random_state=0)
    ref = CGVRClassifier(batch_size=60, **kw, solver="cgvr").fit(X, y)
    for solver in ("cgvr", "minibatch_svrg"):
        tracemalloc.start()
        clf = CGVRClassifier(batch_size=10**15, solver=solver, **kw).fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 10**7
    clf = CGVRClassifier(batch_size=10**15, **kw, solver="cgvr").fit(X, y)
    np.testing.assert_array_equal(clf.coef_, ref.coef_)
    for name in ("ls_max_iter", "zoom_max_iter", "inner_iter"):
        with pytest.raises(ValueError, match=name):
            CGVRClassifier(**{name: 2**40}, solver="cgvr").fit(X, y)


def _multinomial_objective(X, y, coef, intercept, alpha):
    Z = X @ coef.T + intercept
    m = Z.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(Z - m).sum(axis=1, keepdims=True)))[:, 0]
    return np.mean(lse - Z[np.arange(len(y)), y]) + 0.5 * alpha * np.sum(coef ** 2)


@pytest.mark.parametrize("solver, sparse", [("cgvr", False), ("cgvr", True), ("cg", False)])
def test_multinomial_reaches_logistic_regression_optimum(solver, sparse):
    # issue 21.2: one objective over all classes, LogisticRegression's (multinomial)
    X, y = make_classification(300, 6, n_informative=4, n_classes=4, random_state=0)
    n, alpha = X.shape[0], 1e-2
    lr = LogisticRegression(C=1 / (n * alpha), tol=1e-12, max_iter=10000).fit(X, y)
    clf = CGVRClassifier(alpha=alpha, solver=solver, tol=1e-8, max_iter=500, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)     # tol is reached
        clf.fit(sp.csr_matrix(X) if sparse else X, y)
    assert clf.coef_.shape == (4, 6) and clf.intercept_.shape == (4,)
    f_ours = _multinomial_objective(X, y, clf.coef_, clf.intercept_, alpha)
    f_ref = _multinomial_objective(X, y, lr.coef_, lr.intercept_, alpha)
    assert f_ours - f_ref <= 1e-8 * f_ref
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(proba, lr.predict_proba(X), atol=1e-6)
    np.testing.assert_array_equal(clf.predict(X), np.argmax(proba, axis=1))


def test_multinomial_line_kernels_match_scipy():
    # the batch sums of the multinomial line search, read in one pass over Z and Q
    from scipy.special import logsumexp, softmax
    from skstoch._fast._multinomial import line_sums, softmax_along
    rng = np.random.default_rng(0)
    n, K = 40, 5
    Z, Q = rng.normal(scale=30.0, size=(n, K)), rng.normal(scale=10.0, size=(n, K))
    Z[0] = [800.0, -800.0, 0.0, 700.0, 1.0]     # exp overflows without the max shift
    y, s = rng.integers(0, K, size=n), rng.random(n)
    rows = np.arange(n)
    for a in (0.0, 0.3, 7.0):
        Za = Z + a * Q
        P = softmax(Za, axis=1)
        value, deriv = line_sums(Z, Q, y, s, a)
        assert value == pytest.approx(s @ (logsumexp(Za, axis=1) - Za[rows, y]), rel=1e-12)
        assert deriv == pytest.approx(s @ ((P * Q).sum(axis=1) - Q[rows, y]), rel=1e-12)
        out = np.empty_like(Z)
        softmax_along(Z, Q, a, out)
        np.testing.assert_allclose(out, P, rtol=1e-12, atol=1e-300)
    bad = y.copy()
    bad[3] = K
    with pytest.raises(ValueError, match=r"y\[3\] = 5 is not in 0..4"):
        line_sums(Z, Q, bad, s, 1.0)
    with pytest.raises(ValueError, match="rows disagree"):
        line_sums(Z, Q[:-1], y, s, 1.0)
    with pytest.raises(ValueError, match="weights"):
        line_sums(Z, Q, y, s[:-1], 1.0)
    with pytest.raises(ValueError, match="columns"):
        softmax_along(Z, Q, 1.0, np.empty((n, K + 1)))


def test_multinomial_line_sums_are_compensated():
    # near the optimum the line search compares values equal to their last digits: a plain
    # running sum over 200,000 rows is off by about 1e-14 relative (full-batch CG then
    # stalled above tol=1e-8 with numpy 1.25); compensated, it matches an exact sum
    import math
    from scipy.special import logsumexp
    from skstoch._fast._multinomial import line_sums
    rng = np.random.default_rng(1)
    n, K = 200_000, 3
    Z, Q = rng.normal(size=(n, K)), rng.normal(size=(n, K))
    y, s = rng.integers(0, K, size=n), np.full(n, 1.0 / n)
    terms = s * (logsumexp(Z, axis=1) - Z[np.arange(n), y])
    value, _ = line_sums(Z, Q, y, s, 0.0)
    assert value == pytest.approx(math.fsum(terms), rel=1e-15, abs=0)


@pytest.mark.skipif(np.finfo(np.longdouble).eps > 1e-18,
                    reason="the reference needs an extended-precision long double")
def test_multinomial_line_changes_keep_the_digits_of_the_change():
    # line_sums(..., changes=True) sums each row's lse(z + a q) - lse(z) - a q_y: against the
    # same change in long double, both for |a q| <= 1 (log1p of expm1) and beyond (the plain
    # difference); the derivative is line_sums' own
    from skstoch._fast._multinomial import line_sums
    rng = np.random.default_rng(2)
    n, K = 300, 4
    Z, Q = rng.normal(scale=3.0, size=(n, K)), rng.normal(size=(n, K))
    y, s = rng.integers(0, K, size=n), rng.random(n) / n
    L, rows = np.longdouble, np.arange(n)

    def losses(a):
        Za = L(Z) + L(a) * L(Q)
        m = Za.max(axis=1)
        return m + np.log(np.exp(Za - m[:, None]).sum(axis=1)) - Za[rows, y]

    for a in (1e-7, 1e-3, 0.2, 5.0):
        reference = float(L(s) @ (losses(a) - losses(0.0)))
        value, deriv = line_sums(Z, Q, y, s, a, changes=True)
        assert deriv == line_sums(Z, Q, y, s, a)[1]
        assert value == pytest.approx(reference, rel=1e-13, abs=1e-18)
    # the plain difference keeps only the roundings of the two sums
    a = 1e-7
    reference = float(L(s) @ (losses(a) - losses(0.0)))
    plain = line_sums(Z, Q, y, s, a)[0] - line_sums(Z, Q, y, s, 0.0)[0]
    assert plain != pytest.approx(reference, rel=1e-11, abs=0)


@pytest.mark.parametrize("n_classes, solver, line_search", [
    (2, "cgvr", "batch"), (2, "cgvr", "full"),
    (3, "cg", "vr"), (3, "cgvr", "batch"), (3, "cgvr", "full")])
def test_line_searches_reach_a_tight_tol(n_classes, solver, line_search):
    # a line on which no step decreased phi is searched again on the rows' loss changes:
    # compared as differences of two sums over the rows, these fits stalled (every step
    # skipped, ConvergenceWarning) at max |gradient| 1.6e-9 to 3.3e-9
    X, y = make_classification(600, 20, n_informative=6, n_classes=n_classes,
                               random_state=0)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = CGVRClassifier(solver=solver, line_search=line_search, tol=1e-10, max_iter=100,
                             random_state=0).fit(X, y)
    assert est.history_["grad_max"][-1] <= 1e-10


def test_one_vs_rest_still_available():
    from sklearn.multiclass import OneVsRestClassifier
    X, y = make_classification(200, 5, n_informative=3, n_classes=3, random_state=0)
    kw = dict(alpha=1e-2, tol=1e-8, random_state=0)
    ovr = OneVsRestClassifier(CGVRClassifier(**kw, solver="cgvr")).fit(X, y)
    head = CGVRClassifier(**kw, solver="cgvr").fit(X, y == 1)
    np.testing.assert_allclose(ovr.estimators_[1].coef_, head.coef_)
    # the squared hinge stays one-vs-rest inside the estimator
    svm = CGVRClassifier("squared_hinge", **kw, solver="cgvr").fit(X, y)
    assert isinstance(svm.history_, list) and len(svm.history_) == 3
    mn = CGVRClassifier(**kw, solver="cgvr").fit(X, y)
    assert isinstance(mn.history_, dict) and len(mn.solver_state_) == 1


def test_multinomial_warm_start_and_reproducible():
    X, y = make_classification(200, 5, n_informative=3, n_classes=3, random_state=1)
    kw = dict(alpha=1e-2, tol=1e-6, random_state=0)
    a = CGVRClassifier(**kw, solver="cgvr").fit(X, y)
    b = CGVRClassifier(**kw, solver="cgvr").fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    warm = CGVRClassifier(warm_start=True, **kw, solver="cgvr").fit(X, y)
    warm.fit(X, y)
    assert warm.n_iter_ == 0


@pytest.mark.parametrize("sparse", [False, True])
def test_threads_inside_one_fit_are_bitwise_identical(sparse):
    # issue 21.3: the full passes run over fixed row blocks (a function of n only) in
    # threads and are reduced in block order: the same bits for every n_jobs
    from skstoch._fast._cgvr import n_blocks
    X, y = make_classification(3 * 8192, 8, random_state=0)
    assert n_blocks(X.shape[0]) == 3
    X = sp.csr_matrix(X) if sparse else X
    kw = dict(max_iter=3, inner_iter=5, tol=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fits = [CGVRClassifier(n_jobs=j, **kw, solver="cgvr").fit(X, y) for j in (1, 2, 3)]
        regs = [CGVRRegressor(n_jobs=j, **kw, solver="cgvr").fit(X, y * 1.0) for j in (1, 2)]
    for clf in fits[1:]:
        np.testing.assert_array_equal(clf.coef_, fits[0].coef_)
        np.testing.assert_array_equal(clf.intercept_, fits[0].intercept_)
        np.testing.assert_array_equal(clf.history_["objective"], fits[0].history_["objective"])
    np.testing.assert_array_equal(regs[1].coef_, regs[0].coef_)


def test_block_pass_matches_sequential_sum():
    # the blocked objective/gradient is the same function (to rounding) as a plain pass
    from skstoch._fast._loss import LogLoss
    from skstoch.utils import make_dataset
    X, y = make_classification(2 * 8192 + 5, 6, random_state=1)
    ys = np.where(y == 1, 1.0, -1.0)
    tables = _cgvr.HeadTables(make_dataset(X), ys, np.ones(len(y)), LogLoss(), 0.1, 0.0, True)
    assert tables.n_blocks == 2
    x = np.linspace(-1, 1, 7)
    grad, dl = np.empty(7), np.empty(len(y))
    f = tables.objective_gradient(x, grad, dl)
    z = X @ x[:6] + x[6]
    np.testing.assert_allclose(f, np.mean(np.logaddexp(0, -ys * z)) + 0.05 * x[:6] @ x[:6],
                               rtol=1e-12)
    np.testing.assert_allclose(grad[:6], X.T @ dl / len(y) + 0.1 * x[:6], rtol=1e-10)


def test_paper_solver_is_batch_line_search_without_safeguard(clf_data):
    # issue 20.1: Algorithm 3 as published is one parameter value away
    X, y = clf_data
    kw = dict(alpha=1e-3, max_iter=4, tol=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        paper = CGVRClassifier(solver="cgvr_paper", **kw).fit(X, y)
        same = CGVRClassifier(line_search="batch", safeguard=False, **kw, solver="cgvr").fit(X, y)
        ours = CGVRClassifier(**kw, solver="cgvr").fit(X, y)
    np.testing.assert_array_equal(paper.coef_, same.coef_)
    assert not np.array_equal(paper.coef_, ours.coef_)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_full_batch_cg_stops_when_no_step_is_possible(n_classes):
    # tol=0 is below float64's resolution: once no step along -grad decreases f, the fit
    # ends with a warning that says so instead of repeating that iteration max_iter times
    X, y = make_classification(300, 6, n_informative=4, n_classes=n_classes, random_state=0)
    clf = CGVRClassifier(alpha=1e-2, solver="cg", tol=0, max_iter=5000, random_state=0)
    with pytest.warns(ConvergenceWarning, match="no longer improves in floating point"):
        clf.fit(X, y)
    assert clf.n_iter_ < 5000


# the small stable step converges slowly: only a finite fit is checked
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["svrg", "minibatch_svrg"])
def test_fixed_step_baselines_diverge_with_a_clear_error(solver):
    """The SVRG baselines keep the paper's fixed step eta0=1e-3: on rows of squared norm 2e4
    (mean 100, scikit-learn's check data) a squared-loss step beyond 2 / ||x||^2 diverges and
    fit says to decrease eta0 (test_common's written reason); a step below that bound fits."""
    from skstoch._solvers import DivergenceError

    rng = np.random.RandomState(0)
    X = rng.normal(loc=100, size=(100, 2))
    y = rng.normal(size=100)
    with pytest.raises(DivergenceError, match=r"decrease the step size \(eta0"):
        CGVRRegressor(solver=solver, random_state=0).fit(X, y)
    est = CGVRRegressor(solver=solver, eta0=1e-5, random_state=0).fit(X, y)
    assert np.all(np.isfinite(est.coef_))


def _team_inner(X, y, sw, x0, n_threads, batch, options, loss=None, alpha=0.05, seed=3,
                intercept=True, z_full=None, m=12, out_p=None):
    """One cgvr_inner call on a team of n_threads threads: (x, g, steps, stats, counter);
    the direction on exit is copied to ``out_p`` when given."""
    from concurrent.futures import ThreadPoolExecutor
    n, d = X.shape
    tables = _cgvr.HeadTables(make_dataset(X, float32=X.dtype == np.float32), y, sw,
                              loss or LogLoss(), alpha, alpha if intercept else 0.0,
                              intercept, seed, 1)
    u, dl0 = np.empty(d + 1), np.empty(n)
    z = None if z_full is None else np.empty(n)
    tables.objective_gradient(x0, u, dl0, z)
    x, g, p = x0.copy(), u.copy(), -u
    stats = np.zeros(_cgvr.N_STATS, dtype=np.int64)
    steps = np.zeros(m)
    with ThreadPoolExecutor(max(n_threads, 1)) as ex:
        if n_threads > 1:
            tables.set_executor(ex, n_threads)
        counter = _cgvr.cgvr_inner(tables, options, x, x0.copy(), u, dl0, g, p, batch, np.inf,
                                   0, stats, steps, z)
    if out_p is not None:
        out_p[:] = p
    return x, g, steps, stats, counter, z


def _inner_case(case, rng, zero_share):
    """A 700 x 70 inner-loop problem (``zero_share`` of X's entries 0) and the options of
    ``case``: X, y, sample weights, x0, batch size, CGOptions, loss, intercept, z_full."""
    n, d, batch = 700, 70, 160
    X = rng.randn(n, d)
    X[rng.rand(n, d) < zero_share] = 0.0
    y = np.where(X[:, :5].sum(axis=1) + rng.randn(n) > 0, 1.0, -1.0)
    sw = rng.rand(n) + 0.5
    x0 = rng.randn(d + 1) * 0.1
    kw = dict(inner_iter=12, beta="PR+", line_search="vr")
    loss, intercept, z_full = None, True, None
    if case in ("full_ls", "dense_full_ls"):
        kw["line_search"], z_full = "full", True
    elif case == "option2":
        kw["option_two"], kw["beta"] = True, "HS"
    elif case == "no_intercept":
        intercept = False
        x0[d] = 0.0
    elif case == "full_batch":
        batch = 2 * n
    elif case == "hinge":
        loss, kw["beta"] = Hinge(), "FR"
    elif case == "dy":
        kw["beta"] = "DY"
    return X, y, sw, x0, batch, _cgvr.CGOptions(**kw), loss, intercept, z_full


@pytest.mark.parametrize("case", ["dense", "csr", "float32", "full_ls", "option2",
                                  "no_intercept", "full_batch", "hinge"])
def test_inner_loop_team_is_bitwise_the_same_for_any_thread_count(case, rng):
    # issue 21.3: the inner loop's batch rows and features are split into fixed blocks
    # (a function of the batch size and d only), reduced in block order, so 1-4 threads
    # give the same bits; the blocks have more than one block on each axis here
    X, y, sw, x0, batch, options, loss, intercept, z_full = _inner_case(case, rng, 0.3)
    if case == "csr":
        X = sp.csr_matrix(X)
    elif case == "float32":
        X = X.astype(np.float32)
    runs = [_team_inner(X, y, sw, x0, t, batch, options, loss, intercept=intercept,
                        z_full=z_full) for t in (1, 2, 3, 4)]
    x1, g1, steps1, stats1, counter1, z1 = runs[0]
    assert np.count_nonzero(steps1) > 0
    for x, g, steps, stats, counter, z in runs[1:]:
        np.testing.assert_array_equal(x, x1)
        np.testing.assert_array_equal(g, g1)
        np.testing.assert_array_equal(steps, steps1)
        np.testing.assert_array_equal(stats, stats1)
        assert counter == counter1
        if z_full:
            np.testing.assert_array_equal(z, z1)


@pytest.mark.parametrize("case", ["csr", "float32", "full_ls", "option2", "no_intercept",
                                  "full_batch", "hinge", "dy", "dense", "dense_full_ls"])
def test_pending_direction_matches_the_eager_sweeps(case, rng):
    # issue 21.3: the inner loop keeps p_{t+1} = -g_{t+1} + beta p_t pending
    # (one O(d) sweep per step instead of two, its sums in two lanes) and takes the scalars
    # of the next line search from the algebra of that formula, or (the cancellation
    # fallback, forced here) sums them from the stored direction.  Both agree with the
    # eager sweeps (two per step) to rounding and keep their bits for every thread count
    X, y, sw, x0, batch, options, loss, intercept, z_full = _inner_case(case, rng, 0.7)
    d = X.shape[1]
    X = X.astype(np.float32 if case == "float32" else np.float64)
    X = X if case.startswith("dense") else sp.csr_matrix(X)

    def run(n_threads, lazy, cancel=None):
        old = _cgvr.set_lazy_direction(lazy, cancel)
        try:
            p = np.empty(d + 1)
            out = _team_inner(X, y, sw, x0, n_threads, batch, options, loss,
                              intercept=intercept, z_full=z_full, out_p=p)
        finally:
            _cgvr.set_lazy_direction(*old)
        return out[:5] + (p,)

    eager = run(1, False)
    assert np.count_nonzero(eager[2]) > 0
    for cancel in (np.inf, None):
        lazy = run(1, True, cancel)
        for a, b in zip(lazy[:2] + lazy[5:], eager[:2] + eager[5:]):    # x, g, p
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
        for n_threads in (2, 3):
            for a, b in zip(run(n_threads, True, cancel), lazy):
                np.testing.assert_array_equal(a, b)


def test_inner_loop_blocks_match_numpy_reference(rng):
    # several row and feature blocks: the blocked sums are the same function (to rounding)
    # as the sequential numpy reference of Algorithm 3
    n, d, m, b = 400, 48, 8, 100
    X = rng.randn(n, d)
    y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    sw = rng.rand(n) + 0.5
    x0 = rng.randn(d + 1) * 0.1
    seed, stream, alpha = 12345, 3, 0.05
    tables = _cgvr.HeadTables(make_dataset(X), y, sw, LogLoss(), alpha, 0.0, True, seed,
                              stream)
    u, dl0 = np.empty(d + 1), np.empty(n)
    tables.objective_gradient(x0, u, dl0)
    x, g, p = x0.copy(), u.copy(), -u
    _cgvr.cgvr_inner(tables, _cgvr.CGOptions(m), x, x0.copy(), u, dl0, g, p, b, np.inf, 0,
                     np.zeros(_cgvr.N_STATS, dtype=np.int64), np.zeros(m))
    x_ref, g_ref = reference_cgvr_epoch(X, y, sw, "log_loss", x0, u, u.copy(), m, b, alpha,
                                        "vr", seed, stream)
    np.testing.assert_allclose(x, x_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g, g_ref, rtol=1e-9, atol=1e-12)


def test_full_pass_column_sums_split_over_threads_keep_the_bits(rng):
    # wide data: the blocks' column sums of the gradient are split over threads too, each
    # column still summed in block order
    from concurrent.futures import ThreadPoolExecutor
    n, d = 2 * 8192, 9000
    nnz = 20 * n      # O(nnz) draws (sp.random permutes n * d)
    X = sp.csr_matrix((rng.rand(nnz), (rng.randint(0, n, nnz), rng.randint(0, d, nnz))),
                      shape=(n, d))
    X.sum_duplicates()
    y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    x = rng.randn(d + 1)
    out = []
    for n_threads in (1, 2, 3):
        tables = _cgvr.HeadTables(make_dataset(X), y, np.ones(n), LogLoss(), 0.1, 0.1, True)
        grad, dl = np.empty(d + 1), np.empty(n)
        with ThreadPoolExecutor(n_threads) as ex:
            if n_threads > 1:
                tables.set_executor(ex, n_threads)
            f = tables.objective_gradient(x, grad, dl)
        out.append((f, grad))
    for f, grad in out[1:]:
        assert f == out[0][0]
        np.testing.assert_array_equal(grad, out[0][1])
    ref = X.T @ (dl / n) + 0.1 * x[:d]
    np.testing.assert_allclose(out[0][1][:d], ref, rtol=1e-10, atol=1e-14)


def test_one_vs_rest_heads_share_the_threads_and_keep_the_bits():
    # heads fitted in parallel threads share n_jobs (no team per head beyond the cores)
    X, y = make_classification(2 * 8192, 40, n_informative=10, n_classes=3, random_state=0)
    kw = dict(loss="squared_hinge", max_iter=2, inner_iter=5, tol=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fits = [CGVRClassifier(n_jobs=j, **kw, solver="cgvr").fit(X, y) for j in (1, 2, 6)]
    assert fits[2]._threads_per_head([None] * 3) == 2
    for clf in fits[1:]:
        np.testing.assert_array_equal(clf.coef_, fits[0].coef_)
        np.testing.assert_array_equal(clf.intercept_, fits[0].intercept_)


@pytest.fixture
def small_team(rng):
    """A small inner-loop problem: its tables (grad f(x0) done), and the x and g of the same
    inner loop run by one thread (what every team must reproduce)."""
    n, d, batch = 300, 40, 100
    X = rng.randn(n, d)
    y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    x0 = rng.randn(d + 1) * 0.1
    options = _cgvr.CGOptions(5)
    x_alone, g_alone = _team_inner(X, y, np.ones(n), x0, 1, batch, options, m=5)[:2]
    tables = _cgvr.HeadTables(make_dataset(X), y, np.ones(n), LogLoss(), 0.05, 0.05, True, 3,
                              1)
    u, dl0 = np.empty(d + 1), np.empty(n)
    tables.objective_gradient(x0, u, dl0)

    def run():
        """One inner loop on ``tables`` (with its executor): returns (x, g)."""
        x, g = x0.copy(), u.copy()
        _cgvr.cgvr_inner(tables, options, x, x0.copy(), u, dl0, g, -u, batch, np.inf, 0,
                         np.zeros(_cgvr.N_STATS, dtype=np.int64), np.zeros(5))
        return x, g

    return tables, run, x_alone, g_alone


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="moving a thread needs Linux and at least two allowed cores")
def test_a_worker_leaves_the_callers_core_and_keeps_its_affinity():
    # the team's start gate moves a worker that woke on the caller's core (team_leave_core)
    allowed = os.sched_getaffinity(0)
    before, after = _cgvr.leave_core()
    assert before in allowed and after in allowed
    assert after != before
    assert os.sched_getaffinity(0) == allowed


def test_inner_loop_team_runs_alone_when_its_workers_do_not_start(small_team):
    # a busy executor: the worker of the team never starts, the caller gives up waiting
    # (after about 1 s) and runs every block itself, with the same bits; no deadlock
    import threading
    from concurrent.futures import ThreadPoolExecutor
    tables, run, x_alone, g_alone = small_team
    release = threading.Event()
    with ThreadPoolExecutor(1) as ex:
        ex.submit(release.wait)             # occupies the only worker
        tables.set_executor(ex, 2)
        x, g = run()
        release.set()
    np.testing.assert_array_equal(x, x_alone)
    np.testing.assert_array_equal(g, g_alone)


def test_inner_loop_team_can_be_set_aside_for_some_calls(small_team):
    # after a team mostly waited at its barriers (a loaded machine) the next inner loops
    # run alone (solo_calls counts them down), with the same bits
    from concurrent.futures import ThreadPoolExecutor
    tables, run, x_alone, g_alone = small_team
    with ThreadPoolExecutor(2) as ex:
        tables.set_executor(ex, 2)
        tables.solo_calls = 2
        for left in (1, 0):
            x, g = run()
            assert tables.solo_calls == left
            np.testing.assert_array_equal(x, x_alone)
            np.testing.assert_array_equal(g, g_alone)
        x, g = run()                        # the team again
        np.testing.assert_array_equal(x, x_alone)
        assert 0.0 <= tables.wait_share < 1.0


@pytest.mark.parametrize("case", ["dense", "csr"])
def test_inner_loop_team_caller_can_go_on_alone_mid_loop(case, rng):
    # a team its caller waited for too long is left after its probe windows: the
    # workers return and the caller runs every block of the remaining steps, same bits
    from concurrent.futures import ThreadPoolExecutor
    n, d, batch = 700, 70, 160
    X = rng.randn(n, d)
    X[rng.rand(n, d) < 0.3] = 0.0
    X = sp.csr_matrix(X) if case == "csr" else X
    y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    x0 = rng.randn(d + 1) * 0.1
    options = _cgvr.CGOptions(12)
    alone = _team_inner(X, y, np.ones(n), x0, 1, batch, options)
    tables = _cgvr.HeadTables(make_dataset(X), y, np.ones(n), LogLoss(), 0.05, 0.05, True, 3,
                              1)
    u, dl0 = np.empty(d + 1), np.empty(n)
    tables.objective_gradient(x0, u, dl0)
    # any wait is too long: both probe windows of 3 steps fail, it leaves after 6 steps
    old = _cgvr.set_team_policy(-1.0, 3, 2)
    try:
        with ThreadPoolExecutor(2) as ex:
            tables.set_executor(ex, 2)
            x, g, steps = x0.copy(), u.copy(), np.zeros(12)
            _cgvr.cgvr_inner(tables, options, x, x0.copy(), u, dl0, g, -u, batch, np.inf, 0,
                             np.zeros(_cgvr.N_STATS, dtype=np.int64), steps)
    finally:
        _cgvr.set_team_policy(*old)
    assert tables.bailed_at == 6
    assert tables.solo_calls == 0            # the next inner loop tries a team again
    np.testing.assert_array_equal(x, alone[0])
    np.testing.assert_array_equal(g, alone[1])
    np.testing.assert_array_equal(steps, alone[2])


def test_verbose_lines_of_one_vs_rest_heads_name_their_class_and_are_whole(monkeypatch):
    """With one-vs-rest heads fitted in threads (n_jobs=2) the progress lines of different
    classes interleave: each line names its class, and is written in one call (print wrote
    the newline separately, so two threads' lines could run together)."""
    import io
    import sys

    class Writes(io.StringIO):
        calls = []

        def write(self, text):
            self.calls.append(text)
            return super().write(text)

    out = Writes()
    monkeypatch.setattr(sys, "stdout", out)
    X, y = make_classification(n_samples=90, n_features=4, n_informative=3, n_redundant=0,
                               n_classes=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        CGVRClassifier(multi_class="ovr", verbose=1, max_iter=3, n_jobs=2,
                       random_state=0, solver="cgvr").fit(X, y)
    lines = out.getvalue().splitlines()
    assert {line.split("] ")[0].rsplit(" ", 1)[-1] for line in lines} == {
        "class=0", "class=1", "class=2"}
    assert all(call.endswith("\n") for call in Writes.calls if call)


def test_convergence_warning_suggests_standardizing_the_features():
    """Unscaled features are a new user's usual cause of a budget that runs out (raw
    breast_cancer: CGVRClassifier(solver="cgvr") warned with max |gradient| 0.048 after 100 iterations);
    the warning names the fix, as LogisticRegression's does."""
    X, y = make_classification(n_samples=80, n_features=4, random_state=0)
    with pytest.warns(ConvergenceWarning, match="StandardScaler, or MaxAbsScaler for sparse X"):
        CGVRClassifier(max_iter=1, random_state=0, solver="cgvr").fit(X * [1.0, 1e3, 1.0, 1e-2], y)


# ------------------------------------------- a tol stop far from the optimum (unscaled data)
def test_tol_stop_far_from_the_optimum_warns():
    """tol bounds max |gradient| in the units of X and y.  On raw diabetes with the target in
    units 1e4 times larger (y x 1e-4), the default fit reached it after 87 iterations at R2
    0.491 where Ridge (the same objective) reaches 0.518, silently: the gradient measured
    on standardized features was still 0.029 of its value at zero.  That stop warns; the
    standardized data, same target, does not."""
    from sklearn.datasets import load_diabetes
    from sklearn.preprocessing import StandardScaler

    X, y = load_diabetes(return_X_y=True, scaled=False)
    y = y * 1e-4
    est = CGVRRegressor(random_state=0, solver="cgvr")
    with pytest.warns(ConvergenceWarning,
                      match=r"max \|gradient\| <= tol.*standardized.*MaxAbsScaler for sparse X"):
        est.fit(X, y)
    assert est.n_iter_ < 100      # a tol stop, not the budget's warning (max_iter=None: 100)
    assert est.score(X, y) < Ridge(alpha=1.0).fit(X, y).score(X, y) - 0.02
    Xs = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        CGVRRegressor(random_state=0, solver="cgvr").fit(Xs, y)


def test_multinomial_tol_stop_measures_the_standardized_gradient(monkeypatch):
    """The multinomial fit's check measures the gradient of its objective (mean log loss +
    alpha/2 ||W||^2) on standardized features relative to zero, as numpy does from coef_."""
    from scipy.special import softmax
    from sklearn.datasets import load_iris

    from skstoch._solvers import cgvr_multinomial
    from skstoch._solvers._stationarity import column_moments, gradient_ratio

    seen = []
    monkeypatch.setattr(cgvr_multinomial, "warn_if_far_after_tol",
                        lambda ratio, name, tol: seen.append(ratio))
    X, y = load_iris(return_X_y=True)
    est = CGVRClassifier(random_state=0, solver="cgvr").fit(X, y)
    n, Y = len(y), np.eye(3)[y]

    def gradient(W, c):
        R = (softmax(X @ W.T + c, axis=1) - Y) / n
        return X.T @ R + W.T / n, R.sum(axis=0)

    W, c = est.coef_, est.intercept_
    expected = gradient_ratio(gradient(W, c), gradient(0 * W, 0 * c), W.T, 0.0,
                              column_moments(X), True)
    assert seen == [pytest.approx(expected, rel=1e-6)]


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_tol_check_computes_the_column_moments_once_per_fit(monkeypatch, n_jobs):
    """The columns' moments of X are the same for every one-vs-rest head (and target): the
    check after a tol stop computed them once per head (a pass over X each); now once per
    fit, heads in threads included."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    from skstoch._solvers import cgvr

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    calls, ratios = [], []
    column_moments = cgvr.column_moments
    monkeypatch.setattr(cgvr, "column_moments", lambda X: calls.append(X) or column_moments(X))
    monkeypatch.setattr(cgvr, "warn_if_far_after_tol",
                        lambda ratio, name, tol: ratios.append(ratio))
    CGVRClassifier(multi_class="ovr", n_jobs=n_jobs, random_state=0, solver="cgvr").fit(X, y)
    assert len(ratios) == 3       # three heads stopped at tol and were checked
    assert len(calls) == 1


@pytest.mark.parametrize("solver, remedy", [("cgvr_paper", "use solver='cg'"),
                                            ("svrg", r"decrease the step size \(eta0\)")])
def test_a_finite_blow_up_is_a_divergence(solver, remedy):
    """p >> n: the paper's CGVR and the SVRG baseline blow up (objective 0.52 -> 7.6e306,
    coef 3.6e151) without reaching inf, which alone raised: the fit ended with a
    ConvergenceWarning advising a larger max_iter, and score() was -inf."""
    from skstoch._solvers import DivergenceError

    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((20, 2000)), rng.standard_normal(20)
    with pytest.raises(DivergenceError, match=rf"diverged: the objective grew from .*{remedy}"):
        CGVRRegressor(solver=solver, random_state=0).fit(X, y)


def test_a_fit_that_ends_above_its_start_says_so():
    """p >> n: the paper's CGVR ends at objective 94.6 from log 2 (its best 0.014), below the
    1e4-fold divergence test; the warning advised a larger max_iter, which cannot help."""
    rng = np.random.default_rng(0)
    rng.standard_normal((40, 3))
    X, y = rng.standard_normal((20, 2000)), (rng.random(20) > 0.5).astype(int)
    with pytest.warns(ConvergenceWarning, match=r"The objective rose over the fit, from "
                                                r"0\.6931 to .*Decrease the step size") as caught:
        CGVRClassifier(solver="cgvr_paper", random_state=0).fit(X, y)
    assert not any("Increase max_iter" in str(w.message) for w in caught)
