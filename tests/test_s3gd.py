"""Tests of S3GDClassifier / S3GDRegressor (paper 002) and of their kernel."""
import itertools
import os
import pickle
import runpy
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import clone
from sklearn.datasets import (load_breast_cancer, load_diabetes, load_digits, load_wine,
                              make_blobs, make_classification)
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet, Lasso, LogisticRegression, Ridge
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler, normalize

from skstoch import S3GDClassifier, S3GDRegressor
from skstoch._fast._loss import LogLoss, SquaredError, SquaredHinge
from skstoch._fast._s3gd import EpochProblem
from skstoch._fast._s3gd import prox as kernel_prox
from skstoch._solvers._anchor_graph import anchor_weights, build_anchor_graph
from skstoch._solvers._s3gd_setup import S3GDShared, anchor_arrays
from skstoch._solvers._stationarity import column_moments, gradient_ratio
from skstoch._solvers.s3gd import anchor_inner_steps
from skstoch.utils import make_dataset
from skstoch.utils._random_reference import ReferenceStream

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- data
def _cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _diabetes():
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return X, (y - y.mean()) / y.std()


def _small(n=40, d=5, seed=0):
    X, y = make_classification(n, d, n_informative=3, n_redundant=0, random_state=seed)
    return StandardScaler().fit_transform(X), y


# ------------------------------------------------------------ numpy reference (paper's algorithm)
def _dloss(name, p, y):
    if name == "log_loss":
        return -y * expit(-y * p)
    if name == "squared_hinge":
        r = 1.0 - y * p
        return np.where(r > 0, -2.0 * y * r, 0.0)
    return p - y


def _prox(v, eta, lam1, lam2):
    return np.sign(v) * np.maximum(np.abs(v) - eta * lam1, 0.0) / (1.0 + eta * lam2)


def _approx(name, graph, Z, wt, bt, y):
    """Eq. (19)/(25): approx_i = sum_t gamma_it psi'(z_j.w~ + b~; y_i), labels coupled."""
    a = Z @ wt + bt
    return np.sum(graph.weights * _dloss(name, a[graph.neighbors], y[:, None]), axis=1)


def _full_grad(name, X, y, sw, w, b):
    c = sw * _dloss(name, X @ w + b, y) / X.shape[0]
    return X.T @ c, c.sum()


def _semi_stochastic_grad(name, X, y, sw, graph, I, w, b, wt, bt):
    """g of eq. (8) for the batch I (paper's Algorithm 1), gradient in (w, b)."""
    n = X.shape[0]
    Z = X[graph.anchor_indices]
    approx = _approx(name, graph, Z, wt, bt, y)
    gH = X.T @ (sw * approx) / n
    gHb = np.sum(sw * approx) / n
    c = sw[I] * (_dloss(name, X[I] @ w + b, y[I]) - approx[I]) / len(I)
    return X[I].T @ c + gH, c.sum() + gHb


def _reference_fit(name, X, y, sw, graph, *, eta, lam1, lam2, batch, n_inner, n_outer, n_epochs,
                   seed, stream, fit_intercept=True):
    """Algorithm 1 in numpy with the kernel's generator and batch draws."""
    n, d = X.shape
    w, b = np.zeros(d), 0.0
    rng = ReferenceStream(seed, stream)
    perm = list(range(n))
    for _ in range(n_epochs):
        for _ in range(n_outer):
            wt, bt = w.copy(), b
            for _ in range(n_inner):
                for t in range(batch):
                    j = t + rng.randint(n - t)
                    perm[t], perm[j] = perm[j], perm[t]
                I = np.array(perm[:batch])
                g, gb = _semi_stochastic_grad(name, X, y, sw, graph, I, w, b, wt, bt)
                w = _prox(w - eta * g, eta, lam1, lam2)
                if fit_intercept:
                    b = b - eta * gb
    return w, b


def _objective(name, X, y, w, b, alpha, l1_ratio=0.0, sw=None):
    p = X @ w + b
    if name == "log_loss":
        losses = np.logaddexp(0, -y * p)
    elif name == "squared_error":
        losses = 0.5 * (p - y) ** 2
    else:
        losses = np.maximum(0, 1 - y * p) ** 2
    sw = np.ones_like(p) if sw is None else sw
    return (np.mean(sw * losses) + alpha * l1_ratio * np.abs(w).sum()
            + 0.5 * alpha * (1 - l1_ratio) * w @ w)


# --------------------------------------------------------------------------- anchor graph
def test_anchor_graph_structure():
    X, _ = _cancer()
    g = build_anchor_graph(X, n_anchors=30, n_neighbors=4, random_state=0)
    assert g.neighbors.shape == (X.shape[0], 4) and g.weights.shape == (X.shape[0], 4)
    assert g.n_anchors <= 30 and len(np.unique(g.anchor_indices)) == g.n_anchors
    np.testing.assert_allclose(g.weights.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(g.neighbors >= 0) and np.all(g.neighbors < g.n_anchors)
    # nearest first, and the neighbours are the truly nearest anchors
    Z = X[g.anchor_indices]
    d2 = ((X[:, None, :] - Z[None]) ** 2).sum(-1)
    expected = np.sort(d2, axis=1)[:, :4]
    got = np.take_along_axis(d2, g.neighbors.astype(np.intp), axis=1)
    np.testing.assert_allclose(got, expected, atol=1e-8)
    # the compiled top-k writes the weights of eq. (14) (python reference: anchor_weights)
    np.testing.assert_allclose(g.weights, anchor_weights(got), rtol=1e-9, atol=1e-12)
    # an anchor sample is its own nearest anchor with weight ~1 (sigma = eps)
    rows = g.anchor_indices
    np.testing.assert_array_equal(g.anchor_indices[g.neighbors[rows, 0]], rows)
    assert np.all(g.weights[rows, 0] > 0.999)
    # each sample: anchors_ kept M sparse with k entries per row
    assert g.matrix().nnz == X.shape[0] * 4


def test_anchor_weights_scale_free_and_paper_width():
    rng = np.random.RandomState(0)
    sq = np.sort(rng.uniform(1, 4, size=(20, 5)), axis=1)
    w1 = anchor_weights(sq, kernel_width="nearest")
    w2 = anchor_weights(100.0**2 * sq, kernel_width="nearest")
    np.testing.assert_allclose(w1, w2, rtol=1e-12)   # scale invariant
    # eq. (14) literally: sigma^2 = d_1 (a distance), exp(-d_j^2 / d_1) normalised
    d1 = np.sqrt(sq[:, :1])
    raw = np.exp(-sq / d1)
    np.testing.assert_allclose(anchor_weights(sq, kernel_width="paper"),
                               raw / raw.sum(1, keepdims=True), rtol=1e-12)
    # huge scales do not give 0/0 (the shift by the nearest distance)
    assert np.all(np.isfinite(anchor_weights(1e8 * sq, kernel_width="paper")))


def test_all_samples_anchors_identity_graph():
    X, _ = _small()
    g = build_anchor_graph(X, n_anchors=10_000, n_neighbors=1)
    np.testing.assert_array_equal(g.anchor_indices, np.arange(X.shape[0]))
    np.testing.assert_array_equal(g.neighbors[:, 0], np.arange(X.shape[0]))
    np.testing.assert_array_equal(g.weights, 1.0)


# --------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("name", ["log_loss", "squared_hinge", "squared_error"])
def test_full_gradient_matches_finite_differences(name):
    X, y = _small(n=15)
    y = (2.0 * y - 1) if name != "squared_error" else X @ np.arange(5.0)
    sw = np.random.RandomState(1).uniform(0.5, 2, size=len(y))
    rng = np.random.RandomState(0)
    w, b = 0.3 * rng.randn(X.shape[1]), 0.2
    gw, gb = _full_grad(name, X, y, sw, w, b)
    f = lambda w_, b_: _objective(name, X, y, w_, b_, 0.0, sw=sw)  # noqa: E731
    h = 1e-6
    fd = np.array([(f(w + h * e, b) - f(w - h * e, b)) / (2 * h) for e in np.eye(len(w))])
    np.testing.assert_allclose(gw, fd, rtol=1e-6, atol=1e-8)
    assert abs(gb - (f(w, b + h) - f(w, b - h)) / (2 * h)) < 1e-7


@pytest.mark.parametrize("name", ["log_loss", "squared_hinge", "squared_error"])
def test_semi_stochastic_gradient_is_unbiased(name):
    """Exact expectation over all mini-batches (without replacement) equals grad P(w)."""
    X, y = _small(n=9, d=3)
    y = (2.0 * y - 1) if name != "squared_error" else X @ np.ones(3) + 0.1
    sw = np.random.RandomState(2).uniform(0.5, 2, size=len(y))
    g = build_anchor_graph(X, n_anchors=3, n_neighbors=2, random_state=0)
    rng = np.random.RandomState(3)
    w, wt = rng.randn(3), rng.randn(3)
    b, bt = 0.3, -0.2
    batches = list(itertools.combinations(range(len(y)), 3))
    gs = [_semi_stochastic_grad(name, X, y, sw, g, np.array(I), w, b, wt, bt) for I in batches]
    mean_w = np.mean([x[0] for x in gs], axis=0)
    mean_b = np.mean([x[1] for x in gs])
    gw, gb = _full_grad(name, X, y, sw, w, b)
    np.testing.assert_allclose(mean_w, gw, rtol=1e-12, atol=1e-14)
    assert abs(mean_b - gb) < 1e-13
    # and a single batch is not the full gradient (the test can fail)
    assert not np.allclose(gs[0][0], gw)


@pytest.mark.parametrize("name,sparse", [("log_loss", False), ("squared_error", False),
                                         ("squared_hinge", False), ("log_loss", True),
                                         ("squared_hinge", True)])
def test_label_decoupled_correction_equals_direct_sum(name, sparse):
    """grad H from the precomputed X^T M (label-decoupled for log/squared loss, one table
    per class for squared hinge) equals the direct sum of eq. (25)."""
    X, y = _cancer()
    y = (2.0 * y - 1) if name != "squared_error" else X[:, 0] - X[:, 3]
    sw = np.random.RandomState(0).uniform(0.5, 2, size=len(y))
    g = build_anchor_graph(X, n_anchors=25, n_neighbors=5, random_state=0)
    est = (S3GDRegressor() if name == "squared_error" else S3GDClassifier(loss=name))
    shared = S3GDShared(0, None, [0], graph=g)
    Xin = sp.csr_matrix(np.where(np.abs(X) < 0.3, 0.0, X)) if sparse else X
    if sparse:
        X = Xin.toarray()
    ds = make_dataset(Xin)
    loss = est._solver_params(X).loss_object()
    BT, colsum, slot_label, offset, Lw, Lb = anchor_arrays(ds, y, sw, loss, name, shared, 0)
    if name in ("log_loss", "squared_error"):
        assert BT.shape[0] == 1   # one label-free table
        np.testing.assert_allclose(Lw, X.T @ (sw * offset) / len(y))
    rng = np.random.RandomState(1)
    wt, bt = 0.2 * rng.randn(X.shape[1]), 0.1
    a = X[g.anchor_indices] @ wt + bt
    dA = np.array([loss.dloss_array(a, np.full_like(a, s)) for s in slot_label])
    n = len(y)
    gH = Lw + np.einsum("smd,sm->d", BT, dA) / n
    gHb = Lb + np.sum(colsum * dA) / n
    approx = _approx(name, g, X[g.anchor_indices], wt, bt, y)
    np.testing.assert_allclose(gH, X.T @ (sw * approx) / n, rtol=1e-10, atol=1e-13)
    assert abs(gHb - np.sum(sw * approx) / n) < 1e-12


def test_prox_operator():
    v = np.array([-2.0, -0.05, 0.0, 0.03, 1.5])
    for lam1, lam2 in [(0.0, 0.0), (0.0, 0.5), (0.1, 0.0), (0.1, 0.5)]:
        w = v.copy()
        kernel_prox(w, 0.5, lam1, lam2)
        np.testing.assert_allclose(w, _prox(v, 0.5, lam1, lam2), rtol=1e-15)


# --------------------------------------------------------------------------- kernel vs reference
@pytest.mark.parametrize("name,penalty,sparse", [
    ("log_loss", "l2", False), ("log_loss", "elasticnet", False), ("log_loss", "l2", True),
    ("squared_hinge", "l1", False),
])
def test_kernel_matches_numpy_reference(name, penalty, sparse):
    X, y01 = _small(n=40, d=5)
    y = 2.0 * y01 - 1
    est = S3GDClassifier(loss=name, penalty=penalty, alpha=0.01, l1_ratio=0.5, eta0=0.05,
                         solver="s3gd", batch_size=4, n_inner=3, n_anchors=8, n_neighbors=3, max_iter=3,
                         tol=0, n_iter_no_change=100, anchor_method="kmeans", random_state=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(sp.csr_matrix(X) if sparse else X, y01)
    g = build_anchor_graph(sp.csr_matrix(X) if sparse else X, n_anchors=8, n_neighbors=3,
                           method="kmeans", kmeans_max_iter=10, random_state=est.seed_)
    np.testing.assert_array_equal(g.anchor_indices, est.anchor_indices_)
    lam1, lam2 = est._penalty_coefs(len(y))
    n_outer = -(-(-(-40 // 4)) // 3)
    w, b = _reference_fit(name, X, y, np.ones(40), g, eta=0.05, lam1=lam1, lam2=lam2, batch=4,
                          n_inner=3, n_outer=n_outer, n_epochs=3, seed=est.seed_, stream=0)
    np.testing.assert_allclose(est.coef_[0], w, rtol=1e-10, atol=1e-12)
    assert abs(est.intercept_[0] - b) < 1e-10


@pytest.mark.parametrize("solver,penalty", [("s3gd", "l1"), ("s3gd", "elasticnet"),
                                            ("svrg", "l1"), ("sgd", "elasticnet")])
def test_sparse_l1_just_in_time_prox_matches_dense_reference(solver, penalty):
    """Sparse rows with an l1 part: the kernel steps only the coordinates of the batch rows
    and brings the others up to date in closed form when a row next touches them (or at the
    end of the outer loop).  It must equal the dense step of the numpy reference (S3GD's
    Algorithm 1), and the dense-input kernel, on data where most coordinates miss most steps
    (200 features, ~4 per row) with l1 strong enough that coordinates cross zero."""
    rng = np.random.RandomState(0)
    n, d = 60, 200
    X = sp.random(n, d, density=0.02, random_state=rng, format="csr")
    X.data = rng.randn(X.data.size) * 2.0
    y01 = (np.asarray(X @ rng.randn(d)).ravel() + 0.3 * rng.randn(n) > 0).astype(int)
    y = 2.0 * y01 - 1
    kw = dict(penalty=penalty, alpha=0.02, l1_ratio=0.7, eta0=0.2, solver=solver,
              batch_size=3, n_inner=7, n_anchors=12, n_neighbors=3, max_iter=3, tol=0,
              n_iter_no_change=100, anchor_method="random", random_state=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = S3GDClassifier(**kw).fit(X, y01)
        dense = S3GDClassifier(**kw).fit(X.toarray(), y01)
    if solver == "s3gd":
        np.testing.assert_array_equal(est.anchor_indices_, dense.anchor_indices_)
    np.testing.assert_allclose(est.coef_, dense.coef_, rtol=1e-9, atol=1e-12)
    assert abs(est.intercept_[0] - dense.intercept_[0]) < 1e-10
    if solver == "s3gd":
        g = build_anchor_graph(X, n_anchors=12, n_neighbors=3, method="random",
                               random_state=est.seed_)
        lam1, lam2 = est._penalty_coefs(len(y))
        steps = -(-n // 3)
        w, b = _reference_fit("log_loss", X.toarray(), y, np.ones(n), g, eta=0.2, lam1=lam1,
                              lam2=lam2, batch=3, n_inner=7, n_outer=-(-steps // 7),
                              n_epochs=3, seed=est.seed_, stream=0)
        np.testing.assert_allclose(est.coef_[0], w, rtol=1e-9, atol=1e-12)
        assert abs(est.intercept_[0] - b) < 1e-10
    nz = est.coef_[0] != 0
    assert 0 < nz.sum() < d and np.array_equal(nz, dense.coef_[0] != 0)


@pytest.mark.parametrize("n_inner", [20, 57, 60, 5000])
def test_all_anchors_one_neighbor_equals_prox_svrg(n_inner):
    """With n_anchors = n and k = 1, h_i = psi_i and S3GD's iterates are Prox-SVRG's, also
    when n_inner is longer than a pass (57 steps of 10 here), where 's3gd' caps it and
    'svrg' ran n_inner steps per epoch."""
    X, y = _cancer()
    common = dict(alpha=1e-3, penalty="elasticnet", l1_ratio=0.3, eta0=0.01, batch_size=10,
                  n_inner=n_inner, max_iter=5, tol=0, n_iter_no_change=100, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        s3gd = S3GDClassifier(solver="s3gd", n_anchors=10_000, n_neighbors=1,
                              **common).fit(X, y)
        svrg = S3GDClassifier(solver="svrg", **common).fit(X, y)
        sgd = S3GDClassifier(solver="sgd", **common).fit(X, y)
    assert s3gd.n_anchors_ == X.shape[0]
    np.testing.assert_allclose(s3gd.coef_, svrg.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(s3gd.intercept_, svrg.intercept_, rtol=1e-9, atol=1e-12)
    assert not np.allclose(sgd.coef_, svrg.coef_, rtol=1e-3)


@pytest.mark.parametrize("solver", ["svrg", "s3gd", "sgd", "ssgd"])
def test_n_inner_is_capped_at_one_pass(solver):
    """An epoch is n_samples sampled gradients whatever n_inner: a value above one pass (57
    steps of 10 on 569 rows) fits as one pass.  'svrg' ran 5000 steps per epoch (88 passes)."""
    X, y = _cancer()
    common = dict(solver=solver, eta0=0.01, max_iter=3, tol=0, n_iter_no_change=100,
                  random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one_pass = S3GDClassifier(n_inner=57, **common).fit(X, y)
        longer = S3GDClassifier(n_inner=5000, **common).fit(X, y)
    np.testing.assert_array_equal(longer.coef_, one_pass.coef_)
    assert longer.n_iter_ == one_pass.n_iter_ == 3


@pytest.mark.parametrize("penalty", ["l2", None, "l1"])
def test_dense_and_csr_agree(penalty):
    X, y = _cancer()
    X[np.abs(X) < 0.5] = 0.0
    kw = dict(penalty=penalty, alpha=1e-3, eta0=0.01, max_iter=4, tol=0, n_iter_no_change=100,
              n_anchors=20, anchor_method="random", anchor_epochs=2, random_state=0,
              solver="hybrid")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        dense = S3GDClassifier(**kw).fit(X, y)
        csr = S3GDClassifier(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(dense.anchor_indices_, csr.anchor_indices_)
    np.testing.assert_allclose(dense.coef_, csr.coef_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(dense.intercept_, csr.intercept_, rtol=1e-8, atol=1e-10)


# --------------------------------------------------------------------------- convergence
def test_log_loss_reaches_noise_floor_and_decay_removes_it():
    """Paper protocol (rows normalised, eta from the paper's grid): the constant step stalls
    at a floor below SGD's; the decaying ('adaptive') step goes well below it; the default
    hybrid (S3GD, then Prox-SVRG) converges to the optimum."""
    X, y = _cancer()
    X = normalize(X)
    n, alpha = X.shape[0], 1e-2
    lr = LogisticRegression(C=1 / (alpha * n), tol=1e-12, max_iter=10_000).fit(X, y)
    ys = 2.0 * y - 1
    fstar = _objective("log_loss", X, ys, lr.coef_[0], lr.intercept_[0], alpha)
    kw = dict(alpha=alpha, eta0=1.0, tol=1e-7, max_iter=200, track_objective=True,
              random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        const = S3GDClassifier(solver="s3gd", **kw).fit(X, y)
        decay = S3GDClassifier(solver="s3gd", learning_rate="adaptive", **kw).fit(X, y)
        sgd = S3GDClassifier(solver="sgd", **kw).fit(X, y)
    hybrid = S3GDClassifier(solver="hybrid", alpha=alpha, tol=1e-10, max_iter=100, anchor_epochs=1,
                            warmup_epochs=0, init_step=None, random_state=0).fit(X, y)
    gap = lambda c: _objective("log_loss", X, ys, c.coef_[0], c.intercept_[0], alpha) - fstar  # noqa
    assert 0 <= gap(const) < 2e-3          # the documented constant-step floor (user guide)
    assert gap(decay) < 1e-4 and gap(decay) < gap(const) / 10
    assert gap(const) < gap(sgd)           # the control variate lowers SGD's floor
    assert abs(gap(hybrid)) < 1e-9 and hybrid.n_iter_ < 100   # linear convergence, no floor
    assert hybrid.history_["solver"][0] == "hybrid" and hybrid.history_["solver"][1] == "svrg"
    np.testing.assert_allclose(decay.coef_, lr.coef_, atol=0.02)


@pytest.mark.parametrize("penalty", ["l2", "l1", "elasticnet"])
def test_regressor_matches_sklearn_exact_solvers(penalty):
    X, y = _diabetes()
    X = normalize(X)
    n, alpha = X.shape[0], 1e-3
    if penalty == "l2":
        ref = Ridge(alpha=alpha * n).fit(X, y)
    elif penalty == "l1":
        ref = Lasso(alpha=alpha, tol=1e-12, max_iter=100_000).fit(X, y)
    else:
        ref = ElasticNet(alpha=alpha, l1_ratio=0.5, tol=1e-12, max_iter=100_000).fit(X, y)
    l1r = {"l2": 0.0, "l1": 1.0, "elasticnet": 0.5}[penalty]
    fstar = _objective("squared_error", X, y, ref.coef_, ref.intercept_, alpha, l1r)
    kw = dict(penalty=penalty, alpha=alpha, l1_ratio=0.5, eta0=0.5, max_iter=300, tol=1e-7,
              track_objective=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        const = S3GDRegressor(solver="s3gd", **kw).fit(X, y)
        reg = S3GDRegressor(solver="s3gd", learning_rate="adaptive", **kw).fit(X, y)
    hybrid = S3GDRegressor(penalty=penalty, alpha=alpha, l1_ratio=0.5, tol=1e-9,
                           max_iter=300, random_state=0).fit(X, y)
    gap = lambda r: _objective("squared_error", X, y, r.coef_, r.intercept_, alpha, l1r) - fstar  # noqa
    assert -1e-12 < gap(const) < 2e-2 * fstar
    assert -1e-12 < gap(reg) < min(1e-3 * fstar, gap(const) / 5)
    # ill-conditioned (collinear) and only 45 steps per epoch: slow, but no floor
    assert abs(gap(hybrid)) < min(1e-4 * fstar, gap(const) / 100)
    # diabetes has collinear features: compare fitted values, not the flat coefficient directions
    assert np.sqrt(np.mean((reg.predict(X) - ref.predict(X)) ** 2)) < 0.05


def test_smooth_hinge_and_squared_hinge_fit():
    X, y = _cancer()
    for loss in ["squared_hinge", "smooth_hinge"]:
        clf = S3GDClassifier(loss=loss, random_state=0).fit(X, y)
        assert clf.score(X, y) > 0.95
        with pytest.raises(AttributeError, match="predict_proba"):
            clf.predict_proba(X)


# --------------------------------------------------------------------------- API behaviour
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=5
def test_multiclass_ovr_shares_graph_and_threads_are_deterministic():
    X, y = make_classification(300, 8, n_informative=5, n_classes=3, random_state=0)
    a = S3GDClassifier(multi_class="ovr", random_state=0, n_jobs=1, max_iter=5).fit(X, y)
    b = S3GDClassifier(multi_class="ovr", random_state=0, n_jobs=2, max_iter=5).fit(X, y)
    assert a.coef_.shape == (3, 8) and len(a.history_) == 3
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    proba = a.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert a.score(X, y) > 0.7


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["hybrid", "s3gd"])
def test_two_threads_fit_one_object_at_once(solver):
    """One estimator fitted from two threads at the same time (both inside the solver: the
    callback waits for the other thread at the first record) on different data: no error,
    each fit's last iterate equals a fit of its own data, and the object ends up holding one
    of the two fits as a whole.  (S3GD used to park per-fit state on the estimator, which
    the first fit to finish deleted under the other.)"""
    import threading
    datasets = [_small(n=400, d=6, seed=s) for s in (0, 1)]
    kw = dict(solver=solver, n_anchors=20, max_iter=6, tol=0, random_state=0)
    refs = [S3GDClassifier(**kw).fit(X, y) for X, y in datasets]
    barrier = threading.Barrier(2, timeout=60)
    last, errors = {}, []

    def callback(record):
        name = threading.current_thread().name
        if name not in last:
            barrier.wait()
        last[name] = record["x"]
        return False

    est = S3GDClassifier(callback=callback, **kw)

    def work(k):
        try:
            est.fit(*datasets[k])
        except BaseException as exc:   # noqa: BLE001 (reported by the assertion below)
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(k,), name=str(k)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in (0, 1):
        np.testing.assert_array_equal(last[str(k)], refs[k].coef_[0])
    assert not np.array_equal(refs[0].coef_, refs[1].coef_)
    whole = [np.array_equal(est.coef_, r.coef_) and np.array_equal(est.intercept_, r.intercept_)
             and est.step_size_ == r.step_size_ and est.n_iter_ == r.n_iter_ for r in refs]
    assert any(whole)
    if solver == "s3gd":
        np.testing.assert_array_equal(est.anchor_indices_, refs[whole.index(True)].anchor_indices_)


def test_reproducible_and_seed_matters():
    X, y = _cancer()
    fits = [S3GDClassifier(solver="hybrid", anchor_epochs=1, random_state=s).fit(X, y)
            for s in (1, 1, 2)]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    np.testing.assert_array_equal(fits[0].anchor_indices_, fits[1].anchor_indices_)
    assert not np.array_equal(fits[0].coef_, fits[2].coef_)
    clone = pickle.loads(pickle.dumps(fits[0]))
    np.testing.assert_array_equal(clone.decision_function(X), fits[0].decision_function(X))


def test_float32_and_input_not_modified():
    X, y = _cancer()
    X32 = X.astype(np.float32)
    before = X32.copy()
    a = S3GDClassifier(random_state=0).fit(X32, y)
    np.testing.assert_array_equal(X32, before)
    b = S3GDClassifier(random_state=0).fit(X32.astype(np.float64), y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_sample_weight_and_class_weight():
    X, y = _cancer()
    n1 = y.sum()
    sw = np.where(y == 1, len(y) / (2 * n1), len(y) / (2 * (len(y) - n1)))
    a = S3GDClassifier(class_weight="balanced", random_state=0).fit(X, y)
    b = S3GDClassifier(random_state=0).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12)
    # zero weights remove samples from the objective: the fit moves
    c = S3GDClassifier(random_state=0).fit(X, y, sample_weight=(y == 1) + 0.1)
    assert not np.allclose(c.coef_, b.coef_)


def test_warm_start_history_callback_verbose(capsys):
    X, y = _cancer()
    clf = S3GDClassifier(solver="hybrid", max_iter=3, tol=0, track_objective=True, warm_start=True,
                         init_step=None, random_state=0, verbose=1)
    with pytest.warns(ConvergenceWarning, match="relative objective improvement"):
        clf.fit(X, y)
    assert "S3GDClassifier" in capsys.readouterr().out
    assert set(clf.history_) == {"iteration", "pass_fraction", "step_size", "solver",
                                 "objective", "objective_kind", "time"}
    assert set(clf.history_["objective_kind"]) == {"exact"}     # track_objective
    # the first (warm-up) pass is recorded after 1/16, 1/8, 1/4, 1/2 and all of it
    n = X.shape[0]
    assert clf.n_iter_ == 3 and len(clf.history_["objective"]) == 3 + 4
    np.testing.assert_array_equal(clf.history_["pass_fraction"][:5],
                                  [(n >> 4) / n, (n >> 3) / n, (n >> 2) / n, (n >> 1) / n, 1])
    np.testing.assert_array_equal(clf.history_["iteration"], [1, 1, 1, 1, 1, 2, 3])
    first = clf.history_["objective"][0]
    with pytest.warns(ConvergenceWarning):
        clf.fit(X, y)
    assert clf.history_["objective"][0] < first     # resumed from the previous coef_
    seen = []
    cb = S3GDClassifier(solver="hybrid", max_iter=50,
                        callback=lambda r: seen.append(r["x"]) or len(seen) == 2,
                        init_step=None, random_state=0).fit(X, y)
    # the second record is the warm-up after 1/8 of the pass: the fit stops inside it
    assert cb.n_iter_ == 1 and seen[0].shape == (X.shape[1],)
    assert cb.history_["pass_fraction"][-1] == (X.shape[0] >> 3) / X.shape[0]
    np.testing.assert_array_equal(cb.history_["iteration"], [1, 1])
    # without track_objective the warm-up records the chunk's progressive loss
    assert list(cb.history_["objective_kind"]) == ["estimate", "estimate"]
    seen.clear()
    cb6 = S3GDClassifier(solver="hybrid", max_iter=50,
                         callback=lambda r: seen.append(r["x"]) or len(seen) == 6,
                         init_step=None, random_state=0).fit(X, y)
    assert cb6.n_iter_ == 2 and list(cb6.history_["solver"][-2:]) == ["sgd_warmup", "svrg"]


def test_stops_on_tol():
    X, y = _cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = S3GDClassifier(tol=1e-2, max_iter=200, random_state=0).fit(X, y)
    assert clf.n_iter_ < 200


@pytest.mark.parametrize("params,match", [
    ({"n_anchors": 0}, "n_anchors"), ({"loss": "hinge"}, "loss"), ({"eta0": -1.0}, "eta0"),
    ({"solver": "sag"}, "solver"), ({"kernel_width": "wide"}, "kernel_width"),
])
def test_bad_parameters(params, match):
    X, y = _small()
    with pytest.raises(ValueError, match=match):
        S3GDClassifier(**params).fit(X, y)


def test_bad_input_and_divergence():
    X, y = _small()
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        S3GDClassifier().fit(Xn, y)
    with pytest.raises(ValueError, match="class"):
        S3GDClassifier().fit(X, np.zeros(len(y)))
    with pytest.raises(FloatingPointError, match="step size"):
        S3GDRegressor(solver="hybrid", eta0=1e3, penalty=None).fit(
            X, X @ np.ones(X.shape[1]) * 1e3)
    # entries near the float maximum: no NaN in X, but ||x||^2 overflows (reliability finding)
    huge = np.sign(X) * np.finfo(np.float64).max
    # 'auto' runs 'cd' on these rows ('cd' returned zeros with a ConvergenceWarning)
    for est, target in [(S3GDClassifier(solver=s), y) for s in ("auto", "cd", "hybrid")] + \
            [(S3GDRegressor(solver=s), X[:, 0]) for s in ("auto", "cd", "hybrid")]:
        for Xh in (huge, sp.csr_matrix(huge)):
            with pytest.raises(ValueError, match="X is too large.*scale"):
                est.fit(Xh, target)


# three rows: the plateau stop leaves the gradient at 0.066 of its value at zero, which the
# check after a plateau stop reports (ConvergenceWarning); this test is about the clamping
@pytest.mark.filterwarnings("ignore:.*likely far from:sklearn.exceptions.ConvergenceWarning")
def test_tiny_problems_clamp_anchors_and_batch():
    X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    clf = S3GDClassifier(solver="hybrid", n_anchors=50, n_neighbors=10, batch_size=10,
                         anchor_epochs=1,
                         random_state=0)
    clf.fit(X, [0, 1, 1])
    assert clf.n_anchors_ == 3 and np.all(np.isfinite(clf.coef_))


# --------------------------------------------------------------------------- peers
def test_close_to_lightning_svrg_when_installed():
    lightning = pytest.importorskip("lightning.classification")
    X, y = _cancer()
    alpha = 1e-2
    ref = lightning.SVRGClassifier(loss="log", alpha=alpha, eta=0.05, max_iter=100,
                                   tol=1e-12, random_state=0).fit(X, y)
    clf = S3GDClassifier(alpha=alpha, fit_intercept=False, learning_rate="invscaling",
                         max_iter=200, tol=0, n_iter_no_change=1000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    np.testing.assert_allclose(clf.coef_.ravel(), np.ravel(ref.coef_), atol=0.05)


# --------------------------------------------------------------------------- example
def test_example_runs_in_fast_mode(monkeypatch):
    examples = sorted((ROOT / "examples").glob("plot_s3gd*.py"))
    assert examples, "the S3GD example is missing"
    monkeypatch.setenv("SKSTOCH_EXAMPLE_FAST", "1")
    import matplotlib
    matplotlib.use("Agg")
    for path in examples:
        runpy.run_path(str(path), run_name="__main__")
    assert os.environ["SKSTOCH_EXAMPLE_FAST"] == "1"


# --------------------------------------------------------------------------- hybrid default
def test_hybrid_snapshot_objective_is_exact_and_phases():
    """One S3GD epoch (its objective the mini-batch estimate), then Prox-SVRG whose full pass
    reports the exact F at the snapshot (the previous epoch's iterate) at twice the step
    (1/(4 L_b) vs 1/(8 L_b))."""
    X, y = _cancer()
    ys, alpha = 2.0 * y - 1, 1e-2
    iterates = []
    clf = S3GDClassifier(solver="hybrid", alpha=alpha, fit_intercept=False, max_iter=4, tol=0,
                         anchor_epochs=1,
                         warmup_epochs=0, init_step=None, n_iter_no_change=100,
                         random_state=0, callback=lambda r: iterates.append(r["x"].copy()) and False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    h = clf.history_
    assert list(h["solver"]) == ["hybrid", "svrg", "svrg", "svrg"]
    assert list(h["objective_kind"]) == ["estimate", "snapshot", "snapshot", "snapshot"]
    np.testing.assert_array_equal(h["iteration"], [1, 2, 3, 4])
    assert h["step_size"][1] == pytest.approx(2 * h["step_size"][0])
    for e in (1, 2, 3):
        np.testing.assert_allclose(h["objective"][e],
                                   _objective("log_loss", X, ys, iterates[e - 1], 0.0, alpha),
                                   rtol=1e-12)
    # the estimate: the epoch's sample losses along the way, above F at the epoch's end
    assert h["objective"][0] > _objective("log_loss", X, ys, iterates[0], 0.0, alpha)


def test_anchor_epochs_zero_is_prox_svrg_and_n_inner_auto():
    X, y = _cancer()
    kw = dict(alpha=1e-3, max_iter=3, tol=0, n_iter_no_change=100, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        h0 = S3GDClassifier(solver="hybrid", anchor_epochs=0, warmup_epochs=0, init_step=None,
                            **kw).fit(X, y)
        sv = S3GDClassifier(solver="svrg", **kw).fit(X, y)
    assert not hasattr(h0, "anchor_indices_")          # no anchor graph built
    np.testing.assert_array_equal(h0.coef_, sv.coef_)  # 'auto': one snapshot per epoch, 1/(4L_b)
    # n_inner='auto' keeps the paper's 20 on dense low-dimensional data and grows on sparse
    # high-dimensional data, where an outer loop's O(m d) correction dwarfs a step
    # (n, d, stored entries per row, batch, slots, anchors m, neighbours k, sparse)
    assert anchor_inner_steps(1000, 30, 30, 10, 1, 50, 5, False) == 20
    Xs = sp.random(1000, 20_000, density=5e-4, format="csr", random_state=0)
    assert anchor_inner_steps(1000, 20_000, Xs.nnz / 1000, 10, 1, 50, 5, True) > 1000


def test_auto_step_uses_largest_eigenvalue_and_per_sample_bound():
    """eta0='auto': L = c lambda_max([X, s 1]^T S [X, s 1] / n) (exact Gram below 500 features,
    power iteration above) combined with L_max by the b-nice expected smoothness."""
    from skstoch._solvers._step_size import gram_spectrum as _gram_spectrum
    X, y = _cancer()
    sw = np.random.RandomState(0).uniform(0.5, 1.5, len(y))
    lam, mean_norm, mean_w = _gram_spectrum(X, sw, 0)
    n = X.shape[0]
    exact = np.linalg.eigvalsh(X.T @ (X * sw[:, None]) / n)[-1]
    assert lam == pytest.approx(exact, rel=1e-10)
    assert mean_norm == pytest.approx(np.linalg.norm(X.T @ sw) / n, rel=1e-10)
    # power iteration branch (d > 500), sparse rows
    Xs = sp.random(600, 800, density=0.02, format="csr", random_state=1)
    lam_p = _gram_spectrum(Xs, np.ones(600), 0)[0]
    assert lam_p == pytest.approx(np.linalg.eigvalsh((Xs.T @ Xs).toarray() / 600)[-1], rel=1e-2)
    # the steps: svrg 1/(4 L_b), intercept scaled by s^2 = min(1, lambda)
    Xn = normalize(X)
    for fit_intercept in (False, True):
        est = S3GDClassifier(solver="svrg", alpha=1e-3, fit_intercept=fit_intercept, max_iter=1,
                             random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(Xn, y)
        A = np.hstack([Xn, np.ones((n, 1))]) if fit_intercept else Xn
        lam = np.linalg.eigvalsh(Xn.T @ Xn / n)[-1]
        if fit_intercept:
            A[:, -1] *= np.sqrt(lam)
        L = 0.25 * np.linalg.eigvalsh(A.T @ A / n)[-1]
        L_max = 0.25 * np.max((A * A).sum(axis=1))
        L_b = (n * 9 * L + (n - 10) * L_max) / (10 * (n - 1)) + 1e-3
        # the intercept block uses an upper bound of lambda_max: the step is never larger
        assert est.step_size_ <= 1 / (4 * L_b) * (1 + 1e-10)
        assert est.step_size_ >= 0.8 / (4 * L_b)
        L_old = 0.25 * np.mean((Xn * Xn).sum(axis=1) + fit_intercept)   # round-2 rule: mean L_i
        assert est.step_size_ > 1.5 / (4 * (L_old + 1e-3))


# --------------------------------------------------------------------------- SGD warm-up
def _shuffled(n, seed, stream):
    """The kernel's full Fisher-Yates shuffle of 0..n-1 with its counter-based generator."""
    rng = ReferenceStream(seed, stream)
    perm = list(range(n))
    for t in range(n):
        j = t + rng.randint(n - t)
        perm[t], perm[j] = perm[j], perm[t]
    return perm


def _reference_warmup(name, X, y, sw, *, lam1=0.0, lam2, seed, stream, fit_intercept=True):
    """The per-sample warm-up pass in numpy: eta0 = 1 / (2 L_max), mu = max(lam2 + mu_data,
    1 / (eta0 n)) with mu_data = c mean(s ||x||^2) / (2 d) when n >= 100 d, step t:
    w <- soft(w - eta_t c x_i, eta_t lam1) / (1 + eta_t lam2), eta_t = 1/(1/eta0 + mu t)."""
    n, d = X.shape
    w, b = np.zeros(d), 0.0
    sq = (X * X).sum(axis=1)
    L_max = 0.25 * np.max(sw * (sq + fit_intercept))
    eta0 = 1.0 / (2.0 * L_max)
    mu = lam2 + (0.5 * 0.25 * np.mean(sw * sq) / d if n >= 100 * d else 0.0)
    mu = max(mu, 1.0 / (eta0 * n))
    for t, i in enumerate(_shuffled(n, seed, stream)):
        eta_t = 1.0 / (1.0 / eta0 + mu * t)
        c = sw[i] * _dloss(name, X[i] @ w + b, y[i])
        w = _prox(w - eta_t * c * X[i], eta_t, lam1, lam2)
        if fit_intercept:
            b = b - eta_t * c
    return w, b


@pytest.mark.parametrize("penalty,sparse,n,alpha", [
    ("l2", False, 43, 0.05), ("l2", True, 43, 0.05), ("elasticnet", False, 43, 0.5),
    ("elasticnet", True, 43, 0.5), ("l1", True, 700, 0.15)])
def test_warmup_pass_matches_numpy_reference(penalty, sparse, n, alpha):
    """The kernel's warm-up pass (each sample once in a random order, 1/(mu t) step from
    1/(2 L_max); w kept as a scaled vector, l1 thresholds accumulated per coordinate and
    applied when a row touches it) against the numpy reference with the exact prox at
    every step and the same generator, dense and CSR (half the entries zero, so sparse
    coordinates miss steps); n = 700 >= 100 d exercises the data-curvature decay."""
    X, y = _small(n=n, d=6, seed=3)
    X[np.random.RandomState(5).rand(*X.shape) < 0.5] = 0.0
    sw = np.random.RandomState(4).uniform(0.5, 2.0, n)
    est = S3GDClassifier(penalty=penalty, alpha=alpha, l1_ratio=0.4, eta0=0.3, batch_size=5,
                         max_iter=1, tol=0, warmup_epochs=1, init_step=None, random_state=7,
                         solver="hybrid")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(sp.csr_matrix(X) if sparse else X, y, sample_weight=sw)
    # the pass ran in five chunks (one record each) and matches the uninterrupted reference
    assert list(est.history_["solver"]) == ["sgd_warmup"] * 5
    assert est.history_["pass_fraction"][-1] == 1.0
    lam1, lam2 = est._penalty_coefs(len(y))
    ys, swn = 2.0 * y - 1, sw * n / sw.sum()
    w, b = _reference_warmup("log_loss", X, ys, swn, lam1=lam1, lam2=lam2, seed=est.seed_,
                             stream=0)
    L_max = 0.25 * np.max(swn * ((X * X).sum(axis=1) + 1))
    assert est.step_size_ == pytest.approx(1 / (2 * L_max))   # no spectrum was needed
    np.testing.assert_allclose(est.coef_[0], w, rtol=1e-10, atol=1e-12)
    assert abs(est.intercept_[0] - b) < 1e-10
    assert np.abs(w).sum() > 0.05          # the pass moved (the comparison is not 0 == 0)
    if lam1 > 0:
        assert np.any(w == 0) and np.all((est.coef_[0] == 0) == (w == 0))


def test_warmup_is_one_pass_without_replacement_then_prox_svrg():
    """The pass uses each sample once: with a strongly l2-dominated objective, the 1/(mu k)
    step makes the iterate the running mean of -grad / mu, so one pass nearly solves it,
    far better than a with-replacement pass would; then Prox-SVRG epochs follow; a warm
    start skips the warm-up; warmup_epochs=0 is the plain Prox-SVRG."""
    X, y = make_classification(2000, 20, random_state=0)
    X = normalize(X)
    ys, alpha = 2.0 * y - 1, 1e-1
    lr = LogisticRegression(C=1 / (alpha * len(y)), fit_intercept=False, tol=1e-12).fit(X, y)
    fstar = _objective("log_loss", X, ys, lr.coef_[0], 0.0, alpha)
    kw = dict(alpha=alpha, fit_intercept=False, tol=0, n_iter_no_change=100, random_state=0,
              init_step=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        rel = {}
        for name, extra in [("warmup", {}), ("svrg_epoch", dict(warmup_epochs=0)),
                            ("sgd_with_replacement", dict(solver="sgd"))]:
            one = S3GDClassifier(max_iter=1, **kw, **{"solver": "hybrid", **extra}).fit(X, y)
            rel[name] = (_objective("log_loss", X, ys, one.coef_[0], 0.0, alpha) - fstar) / fstar
        # measured: 9.0e-6 (round 5, per-sample pass; 2.4e-5 with the round-4 mini-batch pass)
        # vs 6.3e-4 (a Prox-SVRG epoch from 0) and 7.0e-3 (constant-step SGD with replacement)
        assert 0 <= rel["warmup"] < 1e-4
        assert rel["warmup"] < rel["svrg_epoch"] / 10
        assert rel["warmup"] < rel["sgd_with_replacement"] / 100
        three = S3GDClassifier(solver="hybrid", max_iter=3, warm_start=True, **kw).fit(X, y)
        assert list(three.history_["solver"]) == ["sgd_warmup"] * 5 + ["svrg", "svrg"]
        three.set_params(max_iter=2).fit(X, y)         # warm start: no second warm-up
        assert list(three.history_["solver"]) == ["svrg", "svrg"]
        plain = S3GDClassifier(solver="hybrid", max_iter=2, warmup_epochs=0, **kw).fit(X, y)
        svrg = S3GDClassifier(max_iter=2, solver="svrg", **kw).fit(X, y)
    np.testing.assert_array_equal(plain.coef_, svrg.coef_)


@pytest.mark.parametrize("penalty,sparse", [("l2", False), ("elasticnet", True)])
def test_warmup_chunks_continue_one_permutation(penalty, sparse):
    """sgd_pass over [0, s1), [s1, s2), [s2, n) (only the first chunk shuffles) equals one
    uninterrupted pass up to rounding (the scaled vector is folded in at each chunk end);
    the later chunks draw nothing, and a chunk with start > stop is refused."""
    from skstoch._fast._s3gd import sgd_pass
    X, y = _small(n=300, d=6, seed=2)
    X[np.random.RandomState(1).rand(*X.shape) < 0.4] = 0.0
    ds = make_dataset(sp.csr_matrix(X) if sparse else X)
    ys, sw = 2.0 * y - 1.0, np.random.RandomState(0).uniform(0.5, 2.0, 300)
    lam1 = 0.01 if penalty == "elasticnet" else 0.0
    outs = []
    for ends in ([300], [7, 120, 300]):
        problem = EpochProblem(ds, ys, sw, LogLoss(), True, lam1, 0.02, 1, 11, 3)
        w, b = np.zeros(6), np.zeros(1)
        start, total, counters = 0, 0.0, []
        for end in ends:
            total += sgd_pass(problem, w, b, 0.5, 0.01, 0.0, start, end)
            counters.append(problem.counter)
            start = end
        outs.append((w, b[0], total, np.array(problem.perm), counters))
    (w1, b1, l1, p1, c1), (w3, b3, l3, p3, c3) = outs
    np.testing.assert_array_equal(p1, p3)
    assert not np.array_equal(p1, np.arange(300))    # the first chunk shuffled
    assert c3[0] == c3[1] == c3[2] == c1[0] > 0       # only the first chunk draws
    np.testing.assert_allclose(w3, w1, rtol=1e-12, atol=1e-14)
    assert abs(b3 - b1) < 1e-12 and abs(l3 - l1) < 1e-9 * abs(l1)
    assert np.abs(w1).sum() > 0.05
    with pytest.raises(ValueError, match="start <= stop"):
        sgd_pass(problem, np.zeros(6), np.zeros(1), 0.5, 0.01, 0.0, 200, 100)


def test_blas_limited_to_one_thread_during_fit_and_restored_after():
    # the solver runs under a one-thread BLAS limit (its BLAS calls are length-d vector ops
    # whose second thread only busy-waits); the caller's setting is restored after the fit,
    # also when the fit raises
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    if not blas_threads():
        pytest.skip("no BLAS library visible to threadpoolctl")
    X, y = _cancer()
    seen = []

    def cb(record):
        seen.append(blas_threads())

    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            S3GDClassifier(max_iter=2, random_state=0, callback=cb).fit(X, y)
        assert blas_threads() == before
        assert seen and all(t == [1] * len(before) for t in seen)

        def boom(record):
            raise RuntimeError("stop from callback")

        with pytest.raises(RuntimeError, match="stop from callback"):
            S3GDClassifier(max_iter=2, callback=boom).fit(X, y)
        assert blas_threads() == before


# ------------------------------------------------------------------ line-search start (round 10)
def _np_full_grad(name, X, y, sw, w, b, lam2):
    g, gb = _full_grad(name, X, y, sw, w, b)
    return g + lam2 * w, gb


@pytest.mark.parametrize("name,fit_intercept,warm", [
    ("log_loss", True, False), ("log_loss", False, True), ("squared_hinge", True, True),
    ("squared_error", True, False)])
def test_line_search_start_minimises_phi_dense_equals_csr(name, fit_intercept, warm):
    """The start is the exact minimiser of phi(t) = F(x0 - t grad F(x0)) (numpy objective
    and gradient): phi'(t*) ~ 0, phi(t*) <= phi(t) on a grid around t*, F decreases; dense
    and CSR give the same point."""
    from skstoch._solvers._s3gd_setup import line_search_start as _line_search_start
    X, y = _small(n=60, d=6, seed=1)
    X[np.random.RandomState(2).rand(*X.shape) < 0.4] = 0.0
    ys = 2.0 * y - 1 if name != "squared_error" else X @ np.arange(6.0) + 0.3
    sw = np.random.RandomState(3).uniform(0.5, 2.0, 60)
    lam2 = 0.05
    loss = {"log_loss": LogLoss(), "squared_hinge": SquaredHinge(1.0),
            "squared_error": SquaredError()}[name]
    w0 = np.random.RandomState(4).normal(size=6) * (0.3 if warm else 0.0)
    b0 = 0.2 if (warm and fit_intercept) else 0.0
    F = lambda w, b: _objective(name, X, ys, w, b, lam2, sw=sw)  # noqa: E731
    g0, gb0 = _np_full_grad(name, X, ys, sw, w0, b0, lam2)
    gb0 = gb0 if fit_intercept else 0.0
    out = []
    for Xin in (X, sp.csr_matrix(X)):
        w, b = w0.copy(), np.array([b0])
        t, f_new = _line_search_start(make_dataset(Xin), ys, sw, loss, w, b, lam2,
                                      fit_intercept)
        out.append((t, w, b[0]))
        np.testing.assert_allclose(w, w0 - t * g0, rtol=1e-12, atol=1e-14)
        assert b[0] == pytest.approx(b0 - t * gb0, abs=1e-14)
        assert f_new == pytest.approx(F(w, b[0]), rel=1e-12)
        assert f_new < F(w0, b0) and t > 0
        g1, gb1 = _np_full_grad(name, X, ys, sw, w, b[0], lam2)
        dphi = -(g1 @ g0 + (gb1 * gb0 if fit_intercept else 0.0))
        assert abs(dphi) <= 1e-6 * (g0 @ g0 + gb0 * gb0)       # stationary along the line
        for s in (0.9, 0.99, 1.01, 1.1):
            assert f_new <= F(w0 - s * t * g0, b0 - s * t * gb0) + 1e-15
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12, atol=1e-15)
    assert out[0][0] == pytest.approx(out[1][0], rel=1e-12)


def test_line_search_start_is_the_first_record_and_none_is_previous_behaviour():
    X, y = _cancer()
    ys, alpha = 2.0 * y - 1, 1e-3
    seen = []
    kw = dict(alpha=alpha, max_iter=2, tol=0, n_iter_no_change=100, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert S3GDClassifier().init_step == "auto"         # measured default (user guide)
        kw["init_step"] = "line_search"
        clf = S3GDClassifier(solver="hybrid", callback=lambda r: seen.append(r["x"]) and False,
                             **kw).fit(X, y)
        old = S3GDClassifier(solver="hybrid", **{**kw, "init_step": None}).fit(X, y)
        stop = S3GDClassifier(solver="hybrid", callback=lambda r: True, **kw).fit(X, y)
    h = clf.history_
    # round 11: the start replaces the SGD warm-up (Prox-SVRG follows it directly)
    assert list(h["solver"]) == ["line_search", "svrg", "svrg"]
    assert h["pass_fraction"][0] == 0.0 and h["time"][0] <= h["time"][1]
    assert "line_search" not in list(old.history_["solver"])
    assert h["objective"][0] < _objective("log_loss", X, ys, np.zeros(X.shape[1]), 0.0, alpha)
    # a callback that stops at the first record leaves the fit at the start point
    assert stop.n_iter_ == 0 and list(stop.history_["solver"]) == ["line_search"]
    assert list(stop.history_["iteration"]) == [0] and h["objective_kind"][0] == "exact"
    np.testing.assert_array_equal(stop.coef_[0], seen[0])
    assert stop.history_["objective"][0] == pytest.approx(
        _objective("log_loss", X, ys, stop.coef_[0], stop.intercept_[0], alpha), rel=1e-12)
    # the rest of the fit differs from the old start (it continues from the new point) ...
    assert not np.array_equal(clf.coef_, old.coef_)
    # ... and with an l1 part the start is skipped: default == None bitwise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = S3GDClassifier(solver="hybrid", penalty="elasticnet", **kw).fit(X, y)
        b = S3GDClassifier(solver="hybrid", penalty="elasticnet",
                           **{**kw, "init_step": None}).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert "line_search" not in list(a.history_["solver"])


def test_start_replaces_warmup_and_auto_decides_on_conditioning():
    """Round 11: after the line-search start Prox-SVRG follows directly (the SGD warm-up's
    first steps threw a good start back); the next record's exact objective is not above the
    start's.  init_step='auto' takes the start exactly when c lambda_max(X^T X / n) <= alpha
    (all rows used below 2,000: the estimate is exact here), else it equals init_step=None
    bitwise; dense == CSR."""
    from sklearn.preprocessing import normalize
    X, y = _cancer()
    X = normalize(X)
    n = X.shape[0]
    c_lam = 0.25 * np.linalg.eigvalsh(X.T @ X / n)[-1]
    kw = dict(max_iter=3, tol=0, n_iter_no_change=100, random_state=0, track_objective=True,
              fit_intercept=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        good = 2.0 * c_lam   # well conditioned: the start is taken and not undone
        fits = [S3GDClassifier(solver="hybrid", alpha=good, init_step=s, **kw).fit(Xin, y)
                for s in ("auto", "line_search") for Xin in (X, sp.csr_matrix(X))]
        for f in fits:
            h = f.history_
            assert list(h["solver"]) == ["line_search", "svrg", "svrg", "svrg"]
            assert h["objective"][1] <= h["objective"][0] * (1 + 1e-12)
        np.testing.assert_allclose(fits[0].coef_, fits[1].coef_, rtol=1e-10, atol=1e-14)
        np.testing.assert_array_equal(fits[0].coef_, fits[2].coef_)   # same path
        bad = 0.5 * c_lam    # not well conditioned: 'auto' is init_step=None
        a = S3GDClassifier(solver="hybrid", alpha=bad, init_step="auto", **kw).fit(X, y)
        o = S3GDClassifier(solver="hybrid", alpha=bad, init_step=None, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, o.coef_)
    assert "line_search" not in list(a.history_["solver"])
    assert list(a.history_["solver"]).count("sgd_warmup") == 5


# --- issue 19: defaults that converge, alpha='auto', extreme class weights -----------------

def test_defaults_converge_without_warning_on_standardized_data():
    for est, loader in ((S3GDClassifier(random_state=0), load_breast_cancer),
                        (S3GDRegressor(random_state=0), load_diabetes)):
        X, y = loader(return_X_y=True)
        X = StandardScaler().fit_transform(X)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            est.fit(X, y)
        assert est.n_iter_ < est.max_iter


def test_alpha_auto_is_one_over_n_samples():
    X, y = make_classification(n_samples=150, n_features=6, random_state=0)
    auto = S3GDClassifier(max_iter=3, tol=0, random_state=0)
    explicit = clone(auto).set_params(alpha=1.0 / 150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        auto.fit(X, y)
        explicit.fit(X, y)
    np.testing.assert_array_equal(auto.coef_, explicit.coef_)
    assert auto._penalty_coefs(150) == (0.0, 1.0 / 150)


@pytest.mark.parametrize("solver", ["s3gd", "sgd", "ssgd", "hybrid"])
def test_extreme_class_weight_moves_the_intercept(solver):
    # unscaled rows (norm ~30): the intercept must not crawl with a step sized for the rows
    # (before: 's3gd', 'sgd', 'ssgd' predicted the heavy class for ~54% of the rows)
    X, y = make_blobs(centers=2, random_state=0, cluster_std=20)
    clf = S3GDClassifier(solver=solver, class_weight={0: 1000, 1: 1e-4}, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X[:50], y[:50])
    assert np.mean(clf.predict(X[50:]) == 0) > 0.87


@pytest.mark.parametrize("sparse", [False, True])
def test_external_snapshot_equals_the_snapshot_pass(sparse):
    """SnapshotTables.set_snapshot (the Dask fits' snapshot, computed on the workers):
    given the full gradient and psi'_i that the kernel's own snapshot pass computes, a
    Prox-SVRG epoch with an l1 part takes the same steps (up to the rounding of the
    gradient's summation order); wrong lengths are refused."""
    from skstoch._fast._s3gd import SnapshotTables, run_epoch
    X, y = _small(n=300, d=6, seed=2)
    X[np.random.RandomState(1).rand(*X.shape) < 0.4] = 0.0
    ds = make_dataset(sp.csr_matrix(X) if sparse else X)
    ys, sw = 2.0 * y - 1.0, np.random.RandomState(0).uniform(0.5, 2.0, 300)
    w0, b0 = np.random.RandomState(3).standard_normal(6) * 0.3, 0.2
    z = X @ w0 + b0
    dl = np.asarray(LogLoss().dloss_array(np.ascontiguousarray(z), ys))
    grad = np.append(X.T @ (sw * dl), (sw * dl).sum()) / 300
    outs = []
    for snapshot in (None, grad, 1.1 * grad):
        problem = EpochProblem(ds, ys, sw, LogLoss(), True, 0.1, 0.02, 5, 11, 3)
        tables = SnapshotTables(problem)
        if snapshot is not None:
            tables.set_snapshot(snapshot, dl)
        w, b = w0.copy(), np.array([b0])
        run_epoch(problem, w, b, 0.3, 0.3, 60, 1, tables)
        outs.append((w, b[0]))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-10, atol=1e-12)
    assert abs(outs[1][1] - outs[0][1]) < 1e-10
    assert np.count_nonzero(outs[0][0]) < 6 and not np.allclose(outs[0][0], w0)
    # the given gradient is the one used (another one gives other steps)
    assert np.abs(outs[2][0] - outs[0][0]).max() > 1e-4
    with pytest.raises(ValueError, match="set_snapshot"):
        tables.set_snapshot(grad[:-1], dl)


def test_huge_kmeans_max_iter_stops_when_lloyd_has_converged():
    """kmeans_max_iter bounds Lloyd's iterations (anchor_method='auto'): 10**12 ran them all
    (a fit on 60 rows that never ended); now Lloyd stops once the labels repeat, with the
    centres a bound of 1000 gives."""
    from _isolation import describe, run_isolated

    rng = np.random.RandomState(0)
    X = rng.randn(60, 4)
    y = (X[:, 0] > 0).astype(int)

    def fit(bound):
        return S3GDClassifier(solver="s3gd", n_anchors=6, kmeans_max_iter=bound, max_iter=3,
                              random_state=0).fit(X, y).coef_

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = run_isolated(lambda: fit(10 ** 12), timeout=60)
        assert result["status"] == "ok", describe(result)
        np.testing.assert_array_equal(result["value"], fit(1000))


@pytest.mark.parametrize("solver", ["svrg", "s3gd"])
def test_n_inner_beyond_the_kernels_int_is_a_value_error(solver):
    """solver='svrg' runs n_inner steps per epoch: n_inner=2**40 reached the kernel's C int,
    OverflowError ('value too large to convert to int'); now every solver refuses an
    n_inner above that int with the parameter error naming it, and the largest one fits."""
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    with pytest.raises(ValueError, match="'n_inner' parameter"):
        S3GDRegressor(solver=solver, n_inner=2 ** 40).fit(X, X[:, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        S3GDRegressor(solver="s3gd", n_inner=2 ** 31 - 1, n_anchors=5,
                      max_iter=3).fit(X, X[:, 0])


def test_convergence_warning_before_the_criterion_exists_says_so():
    """max_iter=1 stops before the relative improvement compares two epochs: the warning
    said the improvement "is inf, above tol"; it now says it could not be measured yet."""
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    with pytest.warns(ConvergenceWarning) as rec:
        S3GDClassifier(solver="hybrid", max_iter=1, random_state=0).fit(X, y)
    message = str(rec[0].message)
    assert "could not be measured yet" in message and "inf" not in message


# --------------------------------------------------------------------------- plateau stop far
# from the optimum (unscaled features): found on raw wine, where the default classifier
# stopped silently at a training accuracy of 0.70 (LogisticRegression: 0.99)
@pytest.mark.parametrize("tol", [1e-4, 1e-2])   # the default; a loose tol (threshold 0.3)
@pytest.mark.parametrize("load", [load_breast_cancer, load_wine])   # binary, multinomial
def test_plateau_stop_far_from_the_optimum_warns(load, tol):
    X, y = load(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match="likely far from the optimum.*StandardScaler"):
        clf = S3GDClassifier(solver="hybrid", tol=tol, random_state=0).fit(X, y)
    assert clf.score(X, y) < 0.95    # the fit the warning is about
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = S3GDClassifier(solver="hybrid", tol=tol, random_state=0).fit(
            StandardScaler().fit_transform(X), y)
    assert clf.n_iter_ < clf.max_iter


def test_plateau_warning_advises_a_scaler_that_takes_sparse_input():
    """StandardScaler refuses sparse X (it would centre it), so the advice names MaxAbsScaler
    too; on sparse features of very different scales, following it silences the warning."""
    from sklearn.preprocessing import MaxAbsScaler

    rng = np.random.default_rng(0)
    X = sp.random(1000, 500, density=0.01, format="csr", random_state=0,
                  data_rvs=lambda k: rng.exponential(size=k))
    X = X @ sp.diags(np.exp(rng.uniform(-3, 3, size=500)))
    y = (X @ rng.normal(size=500) > 0).astype(int)
    with pytest.warns(ConvergenceWarning, match="MaxAbsScaler for sparse X"):
        S3GDClassifier(solver="hybrid", random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        S3GDClassifier(solver="hybrid", random_state=0).fit(MaxAbsScaler().fit_transform(X), y)


@pytest.mark.parametrize("solver", ["hybrid", "svrg"])
def test_plateau_check_covers_the_regressor(solver):
    # raw diabetes: training R2 0.45 where 20,000 epochs reach 0.49 and Ridge() 0.52
    X, y = load_diabetes(return_X_y=True, scaled=False)
    with pytest.warns(ConvergenceWarning, match="likely far from the optimum"):
        S3GDRegressor(solver=solver, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        S3GDRegressor(solver=solver, random_state=0).fit(StandardScaler().fit_transform(X), y)


def test_plateau_check_ignores_columns_constant_up_to_rounding():
    """A training fold of standardized digits holds columns whose computed std is ~1e-17
    (constant in the fold): divided by it, the ratio was 1e11 and the default fit warned."""
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    train = next(itertools.islice(StratifiedKFold(5).split(X, y), 1, None))[0]
    assert (X[train].std(axis=0) < 1e-15).sum() > (X.std(axis=0) == 0).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        S3GDClassifier(random_state=0).fit(X[train], y[train])


def _log_loss_gradient(X, y, w, b, lam2):
    """Gradient of mean log loss + lam2 / 2 ||w||^2 for y in {0, 1}."""
    t = 2.0 * y - 1.0
    r = -t * expit(-t * (X @ w + b)) / len(y)
    return X.T @ r + lam2 * w, r.sum()


def test_gradient_ratio_is_scale_free_and_vanishes_at_the_optimum():
    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :8]
    rng = np.random.RandomState(0)
    w, b = rng.normal(size=8) * 0.01, 0.1
    zero = np.zeros(8)

    def ratio(X, w):
        return gradient_ratio(_log_loss_gradient(X, y, w, b, 0.0),
                              _log_loss_gradient(X, y, zero, 0.0, 0.0), w, 0.0,
                              column_moments(X), True)
    D = 10.0 ** rng.uniform(-3, 3, size=8)      # rescaled columns, same margins
    assert ratio(X * D, w / D) == pytest.approx(ratio(X, w), rel=1e-6)
    lr = LogisticRegression(C=1e6, tol=1e-12, max_iter=10_000).fit(
        StandardScaler().fit_transform(X), y)
    Z = StandardScaler().fit_transform(X)
    at_optimum = gradient_ratio(_log_loss_gradient(Z, y, lr.coef_[0], lr.intercept_[0], 1e-6),
                                _log_loss_gradient(Z, y, zero, 0.0, 1e-6), lr.coef_[0], 0.0,
                                column_moments(Z), True)
    assert at_optimum < 1e-4
    assert ratio(X, w) > 0.1


def test_column_moments_dense_chunks_sparse_float32_agree():
    X = np.random.RandomState(0).normal(3.0, 2.0, size=(9000, 5))   # more than one chunk
    X[X < 2.0] = 0.0
    mean, std = column_moments(X)
    np.testing.assert_allclose(mean, X.mean(axis=0), rtol=1e-12)
    sub_mean, sub_std = column_moments(X, max_rows=3000)     # every third row
    np.testing.assert_allclose(sub_mean, X[::3].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(sub_std, X[::3].std(axis=0), rtol=1e-10)
    np.testing.assert_allclose(std, X.std(axis=0), rtol=1e-10)
    for other in (sp.csr_matrix(X), X.astype(np.float32)):
        m, s = column_moments(other)
        np.testing.assert_allclose(m, mean, rtol=1e-6)
        np.testing.assert_allclose(s, std, rtol=1e-6)


@pytest.mark.parametrize("scale", [1e80, 1e150])
def test_large_finite_x_fits_as_the_unscaled_x(scale):
    # the step's bound on the Gram matrix with an intercept column multiplied entries of
    # X^2 size: from |X| about 1e77 on it overflowed, and the kernel raised "run_epoch: need
    # eta > 0" after overflow RuntimeWarnings; the squared row norms are far from overflow
    X, y = make_classification(300, 10, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = S3GDClassifier(random_state=0).fit(X * scale, y)
        reg = S3GDRegressor(random_state=0).fit(X * scale, X[:, 0] + 0.1 * y)
    assert clf.score(X * scale, y) == S3GDClassifier(random_state=0).fit(X, y).score(X, y)
    assert reg.score(X * scale, X[:, 0] + 0.1 * y) > 0.99


@pytest.mark.parametrize("kernel_width", ["nearest", "paper"])
def test_tiny_kernel_eps_keeps_the_anchor_weights_finite(kernel_width):
    # kernel_eps=1e-170 squared to 0: a row at distance 0 from its nearest anchor got the
    # weight 0 / 0 and the fit a DivergenceError ("decrease the step size")
    X, y = make_classification(200, 5, random_state=0)
    est = S3GDClassifier(solver="s3gd", kernel_eps=1e-170, kernel_width=kernel_width,
                         random_state=0, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    assert np.all(np.isfinite(est.coef_))


@pytest.mark.parametrize("anchor_epochs", [np.int32(2**31 - 1), np.int64(2**63 - 1)],
                         ids=["int32", "int64"])
def test_a_numpy_anchor_epochs_at_its_maximum_fits_as_the_python_int(anchor_epochs):
    # anchor_epochs + 1 wrapped: the fit ran as anchor_epochs=0 (an unused anchor graph)
    rng = np.random.RandomState(0)
    X = rng.randn(60, 5)
    y = (X[:, 0] > 0).astype(int)
    kw = dict(solver="hybrid", random_state=0, max_iter=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)    # every epoch is an S3GD one
        est = S3GDClassifier(anchor_epochs=anchor_epochs, **kw).fit(X, y)
        reference = S3GDClassifier(anchor_epochs=int(anchor_epochs), **kw).fit(X, y)
        plain = S3GDClassifier(anchor_epochs=0, **kw).fit(X, y)
    np.testing.assert_array_equal(est.coef_, reference.coef_)
    assert not np.array_equal(est.coef_, plain.coef_)


def test_a_refit_without_an_anchor_graph_drops_the_previous_one():
    # anchor_indices_ / n_anchors_ of an earlier solver='s3gd' fit stayed after a refit that
    # built no graph: 100 anchors with row indices up to 198 on a model fitted on 20 rows
    rng = np.random.RandomState(0)
    X = rng.randn(200, 4)
    y = (X[:, 0] > 0).astype(int)
    est = S3GDClassifier(solver="s3gd", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    assert est.n_anchors_ > 0
    est.set_params(solver="svrg").fit(X[:20], y[:20])
    assert not hasattr(est, "anchor_indices_") and not hasattr(est, "n_anchors_")


def test_anchors_are_the_same_rows_for_dense_and_csr_x():
    # a k-means centre halfway between two rows is as far from both; dense (BLAS) and CSR
    # products rounded the tie differently, so 3 of 100 anchors differed and the 's3gd' fits
    # by 0.096 (of coefficients up to 1.8).  n_inner is fixed: 'auto' depends on the format
    rng = np.random.RandomState(0)
    X = rng.randn(300, 6)
    X[rng.rand(300, 6) < 0.4] = 0
    y = X @ rng.randn(6) + 0.1 * rng.randn(300)
    kw = dict(solver="s3gd", n_inner=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        dense = S3GDRegressor(**kw).fit(X, y)
        csr = S3GDRegressor(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(dense.anchor_indices_, csr.anchor_indices_)
    np.testing.assert_allclose(dense.coef_, csr.coef_, rtol=0, atol=1e-12)


def test_adaptive_step_stops_at_a_thousandth_of_eta0():
    # the step was divided by 5 while above eta0 / 1000, so it ended at eta0 / 3125
    X, y = make_classification(200, 8, n_informative=5, random_state=0)
    est = S3GDClassifier(alpha=1e-2, solver="s3gd", learning_rate="adaptive",
                         track_objective=True, tol=1e-6, max_iter=500, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    steps = est.history_["step_size"]
    assert steps.min() == pytest.approx(steps[0] / 1000, rel=1e-12)
