"""Multinomial log loss of S3GDClassifier (issue 21.2): one objective over all classes, as
scikit-learn's LogisticRegression, fitted by multinomial Prox-SVRG ('hybrid', 'svrg') or
full-batch CG ('auto' below CD_BELOW_ROWS rows)."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.datasets import load_digits, load_wine, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from skstoch import CGVRClassifier, S3GDClassifier
from skstoch.linear_model._s3gd import CD_BELOW_ROWS
from skstoch._solvers._monitor import DivergenceError


def _data(n=300, d=6, n_classes=4, seed=0):
    return make_classification(n, d, n_informative=4, n_redundant=0, n_classes=n_classes,
                               random_state=seed)


def _weights(n, seed=1):
    """Sample weights with mean 1 (our s_i are rescaled to sum to n: then they are these)."""
    w = np.random.RandomState(seed).uniform(0.2, 2.0, n)
    return w / w.mean()


def _objective(X, y, coef, intercept, lam2, lam1=0.0, sw=None):
    sw = np.ones(len(y)) if sw is None else sw
    Z = np.asarray(X @ coef.T) + intercept
    loss = logsumexp(Z, axis=1) - Z[np.arange(len(y)), y]
    return (float(sw @ loss) / len(y) + lam1 * np.abs(coef).sum()
            + 0.5 * lam2 * np.sum(coef ** 2))


@pytest.mark.parametrize("solver", ["auto", "hybrid"])      # 'auto': full-batch CG
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_reaches_logistic_regression_optimum(sparse, fit_intercept, weighted, solver):
    X, y = _data()
    n, alpha = X.shape[0], 1e-2
    sw = _weights(n) if weighted else None
    lr = LogisticRegression(C=1 / (n * alpha), fit_intercept=fit_intercept, tol=1e-12,
                            max_iter=10000).fit(X, y, sample_weight=sw)
    clf = S3GDClassifier(solver=solver, alpha=alpha, fit_intercept=fit_intercept,
                         tol=1e-10 if solver == "auto" else 1e-12, n_iter_no_change=3,
                         max_iter=1000, random_state=0)
    clf.fit(sp.csr_matrix(X) if sparse else X, y, sample_weight=sw)
    assert isinstance(clf.history_, dict)      # one multinomial problem
    assert clf.coef_.shape == (4, 6) and clf.intercept_.shape == (4,)
    f_ours = _objective(X, y, clf.coef_, clf.intercept_, alpha, sw=sw)
    f_ref = _objective(X, y, lr.coef_, lr.intercept_, alpha, sw=sw)
    assert f_ours - f_ref <= 1e-8 * f_ref
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(proba, lr.predict_proba(X), atol=1e-5)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(proba, axis=1)])
    np.testing.assert_allclose(clf.predict_log_proba(X), np.log(proba))


@pytest.mark.parametrize("penalty, l1_ratio", [("l1", 1.0), ("elasticnet", 0.5)])
def test_l1_multinomial_satisfies_optimality_conditions(penalty, l1_ratio):
    X, y = _data(seed=2)
    n, alpha = X.shape[0], 2e-2
    clf = S3GDClassifier(penalty=penalty, l1_ratio=l1_ratio, alpha=alpha,
                         multi_class="multinomial", tol=1e-13, n_iter_no_change=3,
                         max_iter=3000, random_state=0).fit(X, y)
    assert isinstance(clf.history_, dict)
    lam1, lam2 = alpha * l1_ratio, alpha * (1 - l1_ratio)
    W, b = clf.coef_, clf.intercept_
    Z = X @ W.T + b
    P = np.exp(Z - logsumexp(Z, axis=1, keepdims=True))
    P[np.arange(n), y] -= 1.0
    G = P.T @ X / n + lam2 * W          # gradient of the smooth part
    assert np.abs(P.sum(axis=0) / n).max() < 1e-6       # the intercepts
    nz = W != 0
    assert nz.any() and (~nz).any()
    np.testing.assert_allclose(G[nz], -lam1 * np.sign(W[nz]), atol=1e-6)
    assert np.all(np.abs(G[~nz]) <= lam1 + 1e-6)


def test_default_multiclass_is_multinomial_and_ovr_stays_available():
    X, y = _data(n_classes=3)
    kw = dict(alpha=1e-2, random_state=0)
    mn = S3GDClassifier(**kw).fit(X, y)
    ovr = S3GDClassifier(multi_class="ovr", **kw).fit(X, y)
    assert isinstance(mn.history_, dict) and isinstance(ovr.history_, list)
    assert len(ovr.history_) == 3
    # the one-vs-rest head k is the binary fit of class k against the rest
    tight = dict(multi_class="ovr", tol=1e-10, max_iter=3000, **kw)
    head = S3GDClassifier(**tight).fit(X, y == 1)
    np.testing.assert_allclose(S3GDClassifier(**tight).fit(X, y).coef_[1], head.coef_[0],
                               rtol=1e-6, atol=1e-8)
    # OvR probabilities are the normalised sigmoids, the multinomial ones the softmax
    s = 1 / (1 + np.exp(-ovr.decision_function(X)))
    np.testing.assert_allclose(ovr.predict_proba(X), s / s.sum(1, keepdims=True))
    Z = mn.decision_function(X)
    np.testing.assert_allclose(mn.predict_proba(X),
                               np.exp(Z - logsumexp(Z, axis=1, keepdims=True)))
    # binary problems are the same whatever multi_class
    Xb, yb = _data(n_classes=2)
    np.testing.assert_array_equal(S3GDClassifier(**kw).fit(Xb, yb).coef_,
                                  S3GDClassifier(multi_class="ovr", **kw).fit(Xb, yb).coef_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("params, multinomial", [
    ({}, True), ({"solver": "svrg"}, True), ({"solver": "hybrid"}, True),
    ({"solver": "s3gd", "n_anchors": 10, "max_iter": 3}, False),   # the paper: binary
    ({"solver": "sgd", "max_iter": 3}, False), ({"penalty": "l1", "alpha": 1e-2}, False),
    ({"penalty": "l1", "alpha": 1e-2, "multi_class": "multinomial"}, True),
    ({"loss": "squared_hinge"}, False), ({"loss": "squared_hinge", "solver": "svrg"}, False)])
def test_auto_resolution(params, multinomial):
    X, y = _data(n_classes=3)
    clf = S3GDClassifier(random_state=0, **params).fit(X, y)
    assert isinstance(clf.history_, dict) is multinomial


@pytest.mark.parametrize("params, match", [
    ({"loss": "squared_hinge"}, "needs loss='log_loss'"),
    ({"solver": "s3gd"}, "solver 'auto', 'hybrid' or 'svrg'"),
    ({"solver": "cd", "penalty": "l1"}, "solver 'auto', 'hybrid' or 'svrg'")])
def test_multinomial_rejects_what_it_cannot_fit(params, match):
    X, y = _data(n_classes=3)
    with pytest.raises(ValueError, match=match):
        S3GDClassifier(multi_class="multinomial", **params).fit(X, y)


def test_class_weight_is_sample_weight_and_fit_is_reproducible():
    X, y = _data(n_classes=3)
    weights = {0: 1.0, 1: 3.0, 2: 0.5}
    kw = dict(alpha=1e-2, tol=1e-10, max_iter=500, random_state=0)
    by_class = S3GDClassifier(class_weight=weights, **kw).fit(X, y)
    by_sample = S3GDClassifier(**kw).fit(X, y, sample_weight=np.vectorize(weights.get)(y))
    np.testing.assert_allclose(by_class.coef_, by_sample.coef_, rtol=1e-6, atol=1e-8)
    again = S3GDClassifier(class_weight=weights, **kw).fit(X, y)
    np.testing.assert_array_equal(again.coef_, by_class.coef_)
    np.testing.assert_array_equal(again.history_["objective"], by_class.history_["objective"])


def test_history_warm_start_and_convergence_warning():
    X, y = _data(n_classes=3)
    clf = S3GDClassifier(solver="hybrid", alpha=1e-2, tol=1e-6, warm_start=True,
                         random_state=0).fit(X, y)
    h = clf.history_
    assert clf.n_iter_ == h["iteration"][-1] == len(h["iteration"])
    assert np.all(np.diff(h["objective"]) <= 1e-15)      # exact objectives, kept iterates
    assert set(h["objective_kind"]) == {"exact"} and isinstance(clf.step_size_, float)
    first = clf.n_iter_
    clf.fit(X, y)         # from the optimum: a first epoch, then the plateau of 5 epochs
    assert clf.n_iter_ <= 6 < first
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        S3GDClassifier(solver="hybrid", alpha=1e-2, tol=1e-12, max_iter=2,
                       random_state=0).fit(X, y)


def test_safeguard_halves_a_step_that_increases_the_objective():
    X, y = _data(n_classes=3)
    clf = S3GDClassifier(solver="hybrid", alpha=1e-2, eta0=50.0, tol=1e-8, max_iter=300,
                         random_state=0).fit(X, y)
    h = clf.history_
    assert h["rejected_epochs"][-1] > 0
    assert clf.step_size_ < 50.0
    assert np.all(np.diff(h["objective"]) <= 1e-15)
    lr = LogisticRegression(C=1 / (len(y) * 1e-2), tol=1e-12, max_iter=10000).fit(X, y)
    f_ref = _objective(X, y, lr.coef_, lr.intercept_, 1e-2)
    assert _objective(X, y, clf.coef_, clf.intercept_, 1e-2) - f_ref <= 1e-6 * f_ref


def test_callback_stops_and_divergence_is_reported():
    X, y = _data(n_classes=3)
    seen = []
    clf = S3GDClassifier(solver="hybrid", random_state=0,
                         callback=lambda rec: seen.append(rec["x"].shape) or True).fit(X, y)
    assert clf.n_iter_ == 1 and seen == [(3, 6)]
    clf = S3GDClassifier(random_state=0,       # 'cg': the callback sees the start first
                         callback=lambda rec: seen.append(rec["iteration"]) or True).fit(X, y)
    assert clf.solver_ == "cg" and clf.n_iter_ == 0 and seen[1:] == [0]
    with pytest.raises(DivergenceError, match="did not decrease"):
        S3GDClassifier(solver="hybrid", eta0=1e300, max_iter=100,
                       random_state=0).fit(X * 1e100, y)
    with pytest.raises(DivergenceError, match="overflows float64"):
        S3GDClassifier(solver="hybrid", random_state=0).fit(X * 1e200, y)
    with pytest.raises(ValueError, match="X is too large"):    # 'cg' checks the row norms
        S3GDClassifier(random_state=0).fit(X * 1e200, y)


def test_multi_class_means_the_same_in_cgvr():
    X, y = _data(n_classes=3)
    kw = dict(alpha=1e-2, tol=1e-8, random_state=0)
    mn = CGVRClassifier(**kw).fit(X, y)
    ovr = CGVRClassifier(multi_class="ovr", **kw).fit(X, y)
    assert isinstance(mn.history_, dict) and isinstance(ovr.history_, list)
    head = CGVRClassifier(**kw).fit(X, y == 2)
    np.testing.assert_allclose(ovr.coef_[2], head.coef_[0], rtol=1e-5, atol=1e-7)
    s = 1 / (1 + np.exp(-ovr.decision_function(X)))
    np.testing.assert_allclose(ovr.predict_proba(X), s / s.sum(1, keepdims=True))
    ours = S3GDClassifier(**kw).fit(X, y)       # both multinomial fits: the same optimum
    np.testing.assert_allclose(ours.predict_proba(X), mn.predict_proba(X), atol=1e-5)
    with pytest.raises(ValueError, match="needs loss='log_loss'"):
        CGVRClassifier("squared_hinge", multi_class="multinomial").fit(X, y)


@pytest.mark.parametrize("load", [load_digits, load_wine])
def test_default_fits_small_multinomial_data_as_logistic_regression(load):
    # multinomial Prox-SVRG stopped on its plateau 10% above the optimum on standardized
    # digits (wine 2e-3) without a warning; below CD_BELOW_ROWS rows 'auto' runs full-batch
    # CG with LogisticRegression's stop, max |gradient| <= tol (LogisticRegression()'s own
    # default fit: 8.4e-4 above the optimum on digits, 2.4e-5 on wine)
    X, y = load(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = S3GDClassifier(random_state=0, warm_start=True).fit(X, y)
    assert clf.solver_ == "cg" and clf.history_["grad_max"][-1] <= clf.tol
    alpha = 1 / len(y)
    opt = LogisticRegression(tol=1e-12, max_iter=100_000).fit(X, y)
    f_opt = _objective(X, y, opt.coef_, opt.intercept_, alpha)
    assert _objective(X, y, clf.coef_, clf.intercept_, alpha) - f_opt < 1e-3 * f_opt
    first = clf.n_iter_
    assert clf.fit(X, y).n_iter_ < first / 2      # the warm start begins near the optimum


def test_auto_is_full_batch_cg_for_a_multinomial_fit_below_cd_below_rows():
    X, y = _data(n=CD_BELOW_ROWS, d=4, n_classes=3)
    for rows, runs in ((slice(None), "hybrid"), (slice(1, None), "cg")):
        clf = S3GDClassifier(random_state=0).fit(X[rows], y[rows])
        assert clf.solver == "auto" and clf.solver_ == runs
        assert ("grad_max" in clf.history_) == (runs == "cg")
    # with an l1 part full-batch CG does not apply: Prox-SVRG with the l1 prox
    clf = S3GDClassifier(penalty="l1", multi_class="multinomial", random_state=0)
    assert clf.fit(X[:300], y[:300]).solver_ == "hybrid"


@pytest.mark.parametrize("kw", [{}, dict(alpha=0.01, tol=1e-6, max_iter=20),
                                dict(fit_intercept=False)])
def test_small_multinomial_default_is_cgvr_classifier_cg(kw):
    # the docs name the 'cg' default as CGVRClassifier(solver='cg')'s driver with its
    # line-search defaults: s3gd_multinomial restates those settings, so a change on either
    # side must show here
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)    # max_iter=20 stops short
        ours = S3GDClassifier(random_state=0, **kw).fit(X, y)
        cg = CGVRClassifier(solver="cg", **kw).fit(X, y)
    assert ours.solver_ == "cg" and ours.n_iter_ == cg.n_iter_
    np.testing.assert_array_equal(ours.coef_, cg.coef_)
    np.testing.assert_array_equal(ours.intercept_, cg.intercept_)


@pytest.mark.parametrize("make", [lambda: S3GDClassifier(random_state=0),
                                  lambda: S3GDClassifier(solver="hybrid", random_state=0),
                                  lambda: CGVRClassifier()])
def test_constant_features_and_balanced_classes_fit_zero_without_a_warning(make):
    # zero is the optimum; the gradient at zero is a rounding remainder of 1/3 - 10/30
    # (about 1e-17), and the check after the stop divided it by itself and warned "still 1
    # of its size at zero"
    X, y = np.ones((30, 4)), np.arange(30) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = make().fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X), 1 / 3)
