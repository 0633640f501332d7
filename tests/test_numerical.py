"""Numerical robustness (issue 10): losses and kernels stay finite on extreme margins; a
diverging run (step size far too large) is detected, stopped and reported with a clear
message (``DivergenceError``, a ``ValueError``), never returned as NaN coefficients."""
import math
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

import skstoch
from skstoch._fast._comparison_loss import CKLLoss, GNMDSLoss, SOELoss, STELoss, TSTELoss
from skstoch._fast._loss import Hinge, LogLoss, SmoothHinge, SquaredError, SquaredHinge
from skstoch._solvers import DivergenceError, FitMonitor, check_finite_iterate

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

EXTREME = np.array([0.0, 5e-324, 1e-300, 1e-8, 1.0, 36.0, 40.0, 709.0, 710.0, 745.0, 1e10,
                    1e100, 1e150, 1e300, np.finfo(np.float64).max])
MARGINS = np.concatenate([-EXTREME[::-1], EXTREME])


# ----------------------------------------------------------------------------- losses
@pytest.mark.parametrize("loss", [LogLoss(), Hinge(1.0), SmoothHinge(1.0), SmoothHinge(1e-3),
                                  SquaredHinge(1.0), SquaredError()], ids=repr)
@pytest.mark.parametrize("y", [-1.0, 1.0])
def test_margin_losses_finite_on_extreme_margins(loss, y):
    quadratic = isinstance(loss, (SquaredHinge, SquaredError))
    # a quadratic loss can only be finite where p^2 is representable
    p = MARGINS[np.abs(MARGINS) <= (1e150 if quadratic else np.inf)]
    yy = np.full_like(p, y)
    val, d1, d2 = loss.loss_array(p, yy), loss.dloss_array(p, yy), loss.d2loss_array(p, yy)
    for name, arr in (("loss", val), ("dloss", d1), ("d2loss", d2)):
        assert np.all(np.isfinite(arr)), (name, p[~np.isfinite(arr)])
    assert np.all(val >= 0) and np.all(d2 >= 0)
    if not isinstance(loss, SquaredError):
        # the derivative has the right sign: the loss decreases as the margin y p grows
        assert np.all(y * d1 <= 0)
    # dloss of the convex margin losses is bounded by the quadratic ones only
    if not quadratic:
        assert np.all(np.abs(d1) <= 1.0 + 1e-12)
    # the weighted one-pass evaluation agrees and stays finite
    # (the sum over every extreme margin at once may overflow: sum the ones up to 1e300)
    p = np.ascontiguousarray(p[np.abs(p) <= 1e300])
    yy = np.full_like(p, y)
    out = np.empty_like(p)
    total = loss.weighted_loss_dloss(p, yy, np.ones_like(p) * 1e-8, out)
    assert np.isfinite(total) and np.array_equal(out, 1e-8 * loss.dloss_array(p, yy))


def test_log_loss_accurate_in_the_tails():
    loss = LogLoss()
    for z in (-1e300, -745.0, -40.0, -1.0, 0.0, 1.0, 40.0, 700.0, 745.0):
        ref = max(-z, 0.0) + math.log1p(math.exp(-abs(z)))   # log(1 + exp(-z)), stable
        assert loss.py_loss(z, 1.0) == pytest.approx(ref, rel=1e-12, abs=1e-320)
        assert loss.py_loss(-z, -1.0) == pytest.approx(ref, rel=1e-12, abs=1e-320)
    # exp(-40) is representable: the tail is not flushed to zero
    assert loss.py_loss(40.0, 1.0) > 0
    assert abs(loss.py_dloss(40.0, 1.0)) > 0


DIST = np.array([0.0, 5e-324, 1e-300, 1e-8, 1.0, 50.0, 800.0, 1e10, 1e100, 1e300])


@pytest.mark.parametrize("loss", [STELoss(), TSTELoss(1.0), TSTELoss(5.0), GNMDSLoss(1.0),
                                  CKLLoss(0.05), CKLLoss(0.0), SOELoss(0.1)], ids=repr)
def test_comparison_losses_finite_on_extreme_distances(loss):
    a, c = np.meshgrid(DIST, DIST)
    a, c = np.ascontiguousarray(a.ravel()), np.ascontiguousarray(c.ravel())
    if isinstance(loss, CKLLoss) and loss.py_loss_grad(0.0, 0.0) is not None:
        keep = (a + c) > 0   # mu = 0: 0/0 at a = c = 0 is outside the loss's domain
        if repr(loss).endswith("0.0)"):
            a, c = a[keep], c[keep]
    val, ga, gc = loss.loss_grad_array(a, c)
    for name, arr in (("loss", val), ("g_a", ga), ("g_c", gc)):
        bad = ~np.isfinite(arr)
        assert not bad.any(), (name, list(zip(a[bad], c[bad]))[:5])
    assert np.all(val >= 0)
    # more distance to the "closer" pair never helps: d loss / d a >= 0 >= d loss / d c
    assert np.all(ga >= 0) and np.all(gc <= 0)


# ------------------------------------------------------------------------ estimators
def _separable(scale, n=80, d=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = (X[:, 0] > 0).astype(int)
    X[:, 0] += np.where(y == 1, 3.0, -3.0)
    return X * scale, y


@pytest.mark.parametrize("make", [
    lambda: skstoch.CGVRClassifier(alpha=1e-8, max_iter=10, random_state=0),
    lambda: skstoch.S3GDClassifier(alpha=1e-8, n_anchors=10, max_iter=5, random_state=0),
    lambda: skstoch.S3VMClassifier(n_components=16, max_iter=20, random_state=0),
], ids=["CGVR", "S3GD", "S3VM"])
@pytest.mark.parametrize("scale", [1.0, 1e4, 1e8])
# every row is labelled here: S3VMClassifier says it then fits a supervised model (expected)
@pytest.mark.filterwarnings("ignore:y contains no unlabeled samples:UserWarning")
def test_classifiers_finite_on_separable_data_with_huge_margins(make, scale):
    X, y = _separable(scale)
    est = make()
    try:
        est.fit(X, y)
    except ValueError as exc:
        assert "diverg" in str(exc).lower() or "scale" in str(exc).lower(), exc
        return
    for key in ("coef_", "intercept_", "alpha_"):
        if hasattr(est, key):
            assert np.all(np.isfinite(getattr(est, key))), key
    proba = est.predict_proba(X * 1e3)   # margins far beyond exp's range
    assert np.all(np.isfinite(proba)) and np.all((proba >= 0) & (proba <= 1))
    assert np.allclose(proba.sum(axis=1), 1.0)
    if scale == 1.0:
        assert est.score(X, y) > 0.9


def test_predict_proba_of_infinite_decision_is_not_nan():
    est = skstoch.CGVRClassifier(max_iter=5, random_state=0).fit(*_separable(1.0))
    X = np.array([[1e308, 0.0, 0.0], [-1e308, 0.0, 0.0]]) * 10 ** 0
    with np.errstate(over="ignore"):
        proba = est.predict_proba(X)
    assert not np.any(np.isnan(proba))


# ------------------------------------------------------------------- divergence
def _reg(seed=0, n=60, d=4):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) * 10
    return X, X @ rng.randn(d) * 100


DIVERGING = {
    "CGVRRegressor[svrg]": (lambda: skstoch.CGVRRegressor(solver="svrg", eta0=1e6,
                                                          max_iter=30, random_state=0), _reg),
    "CGVRClassifier[minibatch_svrg]": (lambda: skstoch.CGVRClassifier(
        solver="minibatch_svrg", eta0=1e9, alpha=1.0, max_iter=30, random_state=0),
        lambda: _separable(10.0)),
    "S3GDRegressor": (lambda: skstoch.S3GDRegressor(eta0=1e6, n_anchors=10, max_iter=30,
                                                    random_state=0), _reg),
    "S3GDClassifier[svrg]": (lambda: skstoch.S3GDClassifier(
        loss="squared_hinge", solver="svrg", eta0=1e6, n_anchors=10, max_iter=30,
        random_state=0), lambda: _separable(10.0)),
    "ConstrainedLasso[sgd]": (lambda: skstoch.ConstrainedLasso(
        solver="sgd", eta0=1e12, radius=1e6, max_iter=2000, random_state=0), _reg),
    "OrdinalEmbedding[gd]": (lambda: skstoch.OrdinalEmbedding(solver="gd", eta0=1e12,
                                                              max_iter=50, random_state=0),
                             lambda: (skstoch.datasets.make_triplets(
                                 n_objects=15, n_triplets=300, random_state=0),)),
    "OrdinalEmbedding[sgd]": (lambda: skstoch.OrdinalEmbedding(
        loss="soe", solver="sgd", eta0=1e12, max_iter=50, random_state=0),
        lambda: (skstoch.datasets.make_triplets(n_objects=15, n_triplets=300,
                                                random_state=0),)),
    "LMNNMetric[sgd]": (lambda: skstoch.LMNNMetric(solver="sgd", eta0=1e15, max_iter=200,
                                                   n_neighbors=2, random_state=0),
                        lambda: _separable(10.0)),
}


@pytest.mark.parametrize("name", sorted(DIVERGING))
def test_diverging_run_is_reported_never_nan(name):
    import skstoch.datasets  # noqa: F401  (used by the data builders)

    make, make_data = DIVERGING[name]
    est = make()
    args = make_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                est.fit(*args)
            except ValueError as exc:   # DivergenceError is a ValueError
                msg = str(exc).lower()
                assert isinstance(exc, DivergenceError) or "diverg" in msg, exc
                assert "diverg" in msg and ("step" in msg or "eta0" in msg), exc
                # the fit was stopped and nothing of it was kept
                with pytest.raises(NotFittedError):
                    check_is_fitted(est)
                return
    # no divergence detected: then the result must be finite (e.g. projected solvers)
    for key, val in vars(est).items():
        if key.endswith("_") and isinstance(val, np.ndarray) and val.dtype.kind == "f":
            assert np.all(np.isfinite(val)), f"{name}: {key} is not finite"


def test_monitor_reports_divergence_clearly():
    monitor = FitMonitor("Toy(solver='x')")
    monitor.record(epoch=0, objective=1.0)
    for bad in (np.nan, np.inf):
        with pytest.raises(DivergenceError, match=r"Toy\(solver='x'\) diverged.*step size"):
            monitor.record(epoch=1, objective=bad)
    with pytest.raises(ValueError, match="non-finite coefficients after epoch 3"):
        check_finite_iterate(np.array([1.0, np.nan]), "Toy", "epoch 3")
    check_finite_iterate(np.array([1.0, 1e308]), "Toy", "epoch 3")
    assert issubclass(DivergenceError, FloatingPointError)
    assert issubclass(DivergenceError, ValueError)
