"""The linear bases, exercised through a tiny exact subclass (L-BFGS on the shared losses):
what every linear estimator of the suite inherits."""
import pickle
import warnings
from numbers import Integral, Real

import numpy as np
import pytest
import sklearn.base
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.estimator_checks import check_estimator

import skstoch
from skstoch._fast._loss import LogLoss, SquaredError, SquaredHinge
from skstoch._solvers import SolverResult
from skstoch.base import STOCHASTIC_SOLVER_CONSTRAINTS, BaseLinearClassifier, BaseLinearRegressor

# the toy subclasses below run a fixed budget of plain gradient steps: these tests check the
# base classes' plumbing, not convergence, so the budget's ConvergenceWarning is expected
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

LOSSES = {"log_loss": LogLoss, "squared_hinge": SquaredHinge, "squared_error": SquaredError}


class _ExactSolver:
    """(1/n) sum s_i loss(y_i, x_i.w + b) + alpha/2 ||w||^2 by L-BFGS (test-only)."""

    def _fit_problem(self, problem):
        loss = LOSSES[self.loss]()
        X, y, s = problem.X, problem.y, problem.sample_weight
        n, d = X.shape
        g = np.empty(n)

        def fun(theta):
            w, b = theta[:d], theta[d]
            p = problem.dataset.margins(w, b)
            value = loss.weighted_loss_dloss(p, y, s, g) / n + 0.5 * self.alpha * w @ w
            grad = np.append(X.T @ g / n + self.alpha * w, g.sum() / n)
            return value, grad

        theta0 = np.append(problem.coef_init, problem.intercept_init)
        res = minimize(fun, theta0, jac=True, method="L-BFGS-B",
                       options={"maxiter": self.max_iter, "gtol": self.tol, "ftol": 0, "maxcor": 30})
        problem.monitor.record(epoch=0, objective=res.fun, x=res.x)
        problem.monitor.finish(converged=res.success, criterion="projected gradient",
                               value=np.abs(res.jac).max(), tol=self.tol, max_iter=self.max_iter)
        return SolverResult(x=res.x[:d], intercept=res.x[d], n_iter=res.nit,
                            converged=res.success, criterion=0.0)


COMMON = {**STOCHASTIC_SOLVER_CONSTRAINTS, "alpha": [Interval(Real, 0, None, closed="neither")],
          "warm_start": ["boolean"]}


class ExactClassifier(_ExactSolver, BaseLinearClassifier):
    _parameter_constraints = {**COMMON, "loss": [StrOptions({"log_loss", "squared_hinge"})],
                              "class_weight": [dict, StrOptions({"balanced"}), None],
                              "n_jobs": [None, Integral]}

    def __init__(self, loss="log_loss", alpha=1e-2, max_iter=5000, tol=1e-13, verbose=0,
                 random_state=None, callback=None, class_weight=None, n_jobs=None,
                 warm_start=False):
        self.loss = loss
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.warm_start = warm_start


class ExactRegressor(_ExactSolver, BaseLinearRegressor):
    _parameter_constraints = COMMON
    loss = "squared_error"

    def __init__(self, alpha=1e-2, max_iter=5000, tol=1e-13, verbose=0, random_state=None,
                 callback=None, warm_start=False):
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback
        self.warm_start = warm_start


@pytest.fixture
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


# array-API checks skip themselves (SCIPY_ARRAY_API unset): not a support claim we make
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
@pytest.mark.parametrize("estimator", [ExactClassifier(), ExactRegressor()], ids=type)
def test_bases_pass_sklearn_checks(estimator):
    check_estimator(estimator)


def test_binary_matches_logistic_regression(iris):
    X, y = iris
    y = y == 2
    alpha = 0.01
    ours = ExactClassifier(alpha=alpha).fit(X, y)
    ref = LogisticRegression(C=1 / (alpha * len(y)), tol=1e-12, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-6)
    assert ours.coef_.shape == (1, 4) and list(ours.classes_) == [False, True]


def test_multiclass_is_one_vs_rest_and_threads_do_not_change_it(iris):
    X, y = iris
    serial = ExactClassifier().fit(X, y)
    threaded = ExactClassifier(n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(serial.coef_, threaded.coef_)
    for k in range(3):
        head = ExactClassifier().fit(X, y == k)
        np.testing.assert_allclose(serial.coef_[k], head.coef_[0], rtol=1e-10)
    proba = serial.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert isinstance(serial.history_, list) and len(serial.history_) == 3


def test_class_weight_equals_sample_weight(iris):
    X, y = iris
    weights = {0: 1.0, 1: 3.0, 2: 0.5}
    by_class = ExactClassifier(class_weight=weights).fit(X, y)
    by_sample = ExactClassifier().fit(X, y, sample_weight=np.vectorize(weights.get)(y))
    np.testing.assert_allclose(by_class.coef_, by_sample.coef_, rtol=1e-6)


def test_sparse_float32_and_string_labels(iris):
    X, y = iris
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    dense = ExactClassifier().fit(X, labels)
    sparse = ExactClassifier().fit(sp.csr_matrix(X), labels)
    single = ExactClassifier().fit(X.astype(np.float32), labels)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, rtol=1e-6)
    np.testing.assert_allclose(dense.coef_, single.coef_, rtol=1e-4, atol=1e-5)
    assert set(dense.predict(X)) <= set(labels)


def test_predict_proba_only_for_log_loss(iris):
    X, y = iris
    est = ExactClassifier(loss="squared_hinge").fit(X, y)
    assert not hasattr(est, "predict_proba")
    with pytest.raises(AttributeError, match="predict_proba"):
        est.predict_proba(X)


def test_warm_start_starts_from_previous_coef(iris):
    X, y = iris
    est = ExactClassifier(warm_start=True, max_iter=500).fit(X, y)
    first = est.coef_.copy()
    est.set_params(max_iter=1)
    est.fit(X, y)
    np.testing.assert_allclose(est.coef_, first, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("attr, value, message", [
    ("coef_", "x", "coef_ is a str, expected numbers"),
    ("intercept_", "a", "intercept_ is a str, expected numbers"),
    ("coef_", np.full((3, 4), np.nan), "coef_ holds NaN or infinity")])
def test_warm_start_from_a_tampered_state_names_it(iris, attr, value, message):
    # a string coef_ reached np.asarray: "could not convert string to float: 'x'"
    X, y = iris
    est = ExactClassifier(warm_start=True, max_iter=50).fit(X, y)
    setattr(est, attr, value)
    with pytest.raises(ValueError, match=f"inconsistent fitted state: {message}"):
        est.fit(X, y)


def test_warm_start_after_sparsify_and_after_coef_none(iris):
    # a sparse coef_ (sparsify()) failed in np.asarray ("setting an array element with a
    # sequence"); None means no start, as in SGDClassifier
    X, y = iris
    est = ExactClassifier(warm_start=True, max_iter=500).fit(X, y)
    first = est.coef_.copy()
    est.sparsify()
    est.set_params(max_iter=1).fit(X, y)
    np.testing.assert_allclose(est.coef_, first, rtol=1e-6, atol=1e-8)
    est.coef_ = None
    est.fit(X, y)
    assert isinstance(est.coef_, np.ndarray)


def test_regressor_single_and_multi_output_match_ridge():
    X, y = make_regression(80, 6, n_targets=2, noise=1.0, random_state=0)
    alpha = 0.1
    multi = ExactRegressor(alpha=alpha).fit(X, y)
    single = ExactRegressor(alpha=alpha).fit(X, y[:, 0])
    # (1/n) sum (1/2) r^2 + alpha/2 ||w||^2  <=>  Ridge(alpha = n alpha)
    ridge = Ridge(alpha=alpha * len(X)).fit(X, y)
    np.testing.assert_allclose(multi.coef_, ridge.coef_, rtol=1e-6)
    np.testing.assert_allclose(single.coef_, ridge.coef_[0], rtol=1e-6)
    assert single.coef_.shape == (6,) and isinstance(single.intercept_, float)
    assert multi.predict(X).shape == (80, 2)


def test_fitted_estimator_pickles(iris):
    X, y = iris
    est = ExactClassifier().fit(X, y)
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.decision_function(X), est.decision_function(X))


# -- scikit-learn conventions the linear bases give every estimator (issue 19) -------------

_NON_PROBABILISTIC = [
    lambda: skstoch.CGVRClassifier(loss="squared_hinge", max_iter=5, random_state=0),
    lambda: skstoch.CGVRClassifier(loss="hinge", alpha=1e-2, max_iter=5, random_state=0),
    lambda: skstoch.S3GDClassifier(loss="squared_hinge", max_iter=3, random_state=0),
    lambda: skstoch.S3GDClassifier(loss="smooth_hinge", max_iter=3, random_state=0),
]


@pytest.mark.parametrize("make", _NON_PROBABILISTIC)
def test_predict_proba_exists_only_for_the_log_loss(make):
    """As SGDClassifier(loss='hinge'): a loss without probabilities hides predict_proba, so
    meta-estimators pick decision_function (CalibratedClassifierCV, StackingClassifier)."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import StackingClassifier
    from sklearn.model_selection import cross_val_predict

    X, y = make_classification(n_samples=120, n_features=5, random_state=0)
    est = make()
    assert not hasattr(est, "predict_proba") and not hasattr(est, "predict_log_proba")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert not hasattr(est.fit(X, y), "predict_proba")
        proba = CalibratedClassifierCV(make(), cv=3).fit(X, y).predict_proba(X)
        assert proba.shape == (120, 2)
        StackingClassifier([("a", make())], cv=3).fit(X, y).predict(X)
        with pytest.raises(AttributeError):
            cross_val_predict(make(), X, y, cv=3, method="predict_proba")
    assert hasattr(skstoch.CGVRClassifier(), "predict_proba")


@pytest.mark.parametrize("make", [
    lambda: skstoch.CGVRRegressor(max_iter=5, random_state=0),
    lambda: skstoch.S3GDRegressor(max_iter=3, random_state=0),
    lambda: skstoch.ConstrainedLasso(radius=1.0),
])
def test_column_vector_target_is_raveled_with_a_warning(make):
    """An (n, 1) y is one target, as for SGDRegressor: 1-D coef_ and predictions, and a
    DataConversionWarning."""
    from sklearn.exceptions import DataConversionWarning

    rng = np.random.RandomState(0)
    X = rng.randn(80, 4)
    y = (X @ rng.randn(4))[:, None]
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est = make().fit(X, y)
    assert np.ndim(est.coef_) == 1 and np.ndim(est.intercept_) == 0
    assert est.predict(X).shape == (80,)


@pytest.mark.parametrize("est", [
    skstoch.CGVRClassifier(solver="cg", alpha=1e-2, class_weight="balanced", tol=1e-12,
                           max_iter=1000),
    skstoch.S3GDClassifier(solver="cd", penalty="elasticnet", l1_ratio=0.0, alpha=1e-2,
                           class_weight="balanced", tol=1e-12, max_iter=1000),
], ids=["CGVRClassifier", "S3GDClassifier"])
def test_balanced_class_weight_counts_the_sample_weights(est):
    """class_weight='balanced' with an integer sample_weight fits as the repeated rows, as
    LogisticRegression's does: the class counts are the weights' sums (they were the rows'
    counts, 0.06 off in the coefficients)."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + rng.normal(size=300) > 1).astype(int)
    counts = np.where(y == 1, 3, 1)
    weighted = sklearn.base.clone(est).fit(X, y, sample_weight=counts.astype(float))
    repeated = sklearn.base.clone(est).fit(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(weighted.intercept_, repeated.intercept_, rtol=1e-7,
                               atol=1e-9)


def test_balanced_class_weight_of_a_class_without_weight():
    # a class whose samples all weigh 0 gets weight 0 (not inf * 0 = nan)
    np.testing.assert_array_equal(skstoch.base.balanced_class_weights([3.0, 0.0, 1.0]),
                                  [4 / 9, 0.0, 4 / 3])


@pytest.mark.parametrize("label, shown", [(np.int64(7), "7"), ("a", "'a'"), (True, "True")])
def test_one_class_error_shows_the_label_as_written(label, shown):
    # numpy 2's repr showed 'np.int64(7)'
    y = np.array([label] * 4, dtype=object if isinstance(label, str) else None)
    with pytest.raises(ValueError, match=rf"only one class: {shown}\.$"):
        skstoch.CGVRClassifier().fit(np.ones((4, 2)), y)


def test_warnings_point_at_the_line_that_called_fit():
    # fixed stacklevels attributed them to skstoch's own modules (_s3gd.py, _monitor.py,
    # embedding.py through fit_transform): a warning names the user's line, through
    # fit_transform, a Pipeline and scikit-learn's fit-context wrapper alike
    from sklearn.pipeline import make_pipeline

    from skstoch.datasets import make_triplets

    X, y = make_classification(200, 5, random_state=0)
    triplets = make_triplets(n_objects=20, n_triplets=200, random_state=0)
    calls = [
        (ConvergenceWarning, lambda: skstoch.S3GDClassifier(solver="hybrid", max_iter=1)
         .fit(X, y)),
        (ConvergenceWarning, lambda: make_pipeline(
            StandardScaler(), skstoch.CGVRClassifier(max_iter=1, random_state=0)).fit(X, y)),
        (UserWarning, lambda: skstoch.OrdinalEmbedding(random_state=0)
         .fit_transform(triplets, n_objects=25)),
        (DataConversionWarning, lambda: skstoch.S3GDRegressor()
         .fit(X, y.reshape(-1, 1).astype(float))),
    ]
    for category, call in calls:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        ours = [w for w in caught if issubclass(w.category, category)]
        assert ours, category
        assert {w.filename for w in ours} == {__file__}, [(w.filename, w.lineno) for w in ours]
