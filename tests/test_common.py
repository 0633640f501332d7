"""scikit-learn's estimator checks over every public estimator of skstoch.

Each estimator module's tests register nothing here: the list below is the single place.
Every expected failure carries the reason it is expected, and the list is strict: a check
listed here that passes fails the suite, so the list stays the smallest one that is true.
scikit-learn >= 1.7 takes ``xfail_strict=True``; 1.6 has no such argument and leaves
strictness to pytest's ``xfail_strict`` option, which ``pyproject.toml`` sets for the suite.
"""
import inspect
import os
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils._available_if import available_if
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.validation import check_is_fitted, validate_data

import skstoch
from skstoch import OrdinalEmbedding, S3VMClassifier

# scikit-learn's checks cap max_iter (to 5 where the estimator has one) and fit on tiny data
# for speed: a budget that runs out there is expected (tests/test_defaults.py checks that the
# defaults converge without a warning); they also fit S3VMClassifier on fully labelled y,
# which it then says it fits as a supervised model
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
              pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning"),
              pytest.mark.filterwarnings("ignore:y contains no unlabeled samples:UserWarning")]


class FeatureMatrixOrdinalEmbedding(OrdinalEmbedding):
    """Test-only adapter: OrdinalEmbedding fitted on the checks' feature matrices.

    The rows of X are the objects; each row r yields the triplets (r, r+1, r+2) and
    (r, r+2, r+3) (indices mod n), ordered by the Euclidean distances between the rows, and the
    estimator embeds the objects from those comparisons.  ``transform`` maps each row to the
    embedding of its nearest training row, so the transformer checks (subset invariance,
    fit_transform vs fit().transform, pickling, idempotence, dtypes) exercise the estimator.
    ``predict`` and ``score`` take comparisons, not feature rows: the adapter hides them.
    """

    def fit(self, X, y=None):
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=4)
        n = X.shape[0]
        r = np.arange(n)
        rows = np.concatenate([np.stack([r, (r + 1) % n, (r + 2) % n], axis=1),
                               np.stack([r, (r + 2) % n, (r + 3) % n], axis=1)])
        d = lambda a, b: np.sum((X[a] - X[b]) ** 2, axis=1)
        closer = d(rows[:, 0], rows[:, 1]) <= d(rows[:, 0], rows[:, 2])
        super().fit(rows, np.where(closer, 1, -1), n_objects=n)
        self.n_features_in_ = X.shape[1]
        self.X_fit_ = X
        return self

    def transform(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        sq = (np.sum(X ** 2, axis=1)[:, None] - 2 * X @ self.X_fit_.T
              + np.sum(self.X_fit_ ** 2, axis=1)[None, :])
        return self.embedding_[np.argmin(sq, axis=1)]

    @available_if(lambda self: False)
    def predict(self, X):  # pragma: no cover - hidden
        raise NotImplementedError

    @available_if(lambda self: False)
    def score(self, X, y=None):  # pragma: no cover - hidden
        raise NotImplementedError


# Small, fast configurations: the checks fit hundreds of times.
ESTIMATORS = [
    # one constructor call per public estimator, added as estimators land
    skstoch.ConstrainedLasso(),
    # a given radius: the exact solver's sample-weight equivalence (the default radius's
    # search is exempt, see _DEFAULT_RADIUS_SW_REASON)
    skstoch.ConstrainedLasso(radius=1.0),
    # a ridge term: check_regressors_train sets alpha=0.01, which the removed alias of l2_reg
    # turned into an l2_reg clash
    skstoch.ConstrainedLasso(radius=1.0, l2_reg=0.1),
    skstoch.ConstrainedLasso(solver="epro_sgd", max_iter=2000, tol=0, random_state=0),
    skstoch.ConstrainedLassoCV(n_radii=3, cv=3),
    FeatureMatrixOrdinalEmbedding(n_components=2, max_iter=5, tol=1e-3),
    # S3GD: default parameters, every solver (issue 19.2)
    *[skstoch.S3GDClassifier(solver=solver, random_state=0)
      for solver in ("hybrid", "s3gd", "svrg", "sgd", "ssgd")],
    *[skstoch.S3GDRegressor(solver=solver, random_state=0)
      for solver in ("hybrid", "s3gd", "svrg", "sgd", "ssgd")],
    skstoch.S3GDClassifier(penalty="l1", alpha=1e-2, solver="cd", tol=1e-10, max_iter=200),
    skstoch.S3GDRegressor(penalty="l1", alpha=1e-2, solver="cd", tol=1e-10, max_iter=200),
    skstoch.CGVRClassifier(max_iter=20, inner_iter=10, random_state=0),
    skstoch.CGVRRegressor(max_iter=20, inner_iter=10, random_state=0),
    # n_neighbors=1: some checks fit on 10 samples whose classes have 2-3 members
    skstoch.LMNNMetric(n_neighbors=1, max_iter=64, random_state=0),
    skstoch.LMNNMetric(),   # defaults (issue 19.2): n_neighbors=3 clamped to small classes
    S3VMClassifier(n_components=16, batch_size=16, max_iter=20, random_state=0),
]

# alpha='auto' (the default of CGVR and S3GD) is 1 / n_samples: repeated rows change
# n_samples and so the penalty, integer weights do not (measured in the 'cg' / 'cd' reasons of
# the defaults test below); with a fixed alpha only the random streams differ
_S3GD_SW_REASON = (
    "stochastic solver: integer sample weights and repeated rows give the same objective for "
    "a fixed alpha (not for the default alpha='auto' = 1/n_samples) but not the same random "
    "mini-batches, k-means anchors and anchor graph, so the fits differ (as for "
    "scikit-learn's SGDClassifier)"
)

_CGVR_SW_REASON = (
    "stochastic solver: sample weights are rescaled to sum to n_samples, so integer weights and "
    "repeated rows define the same objective for a fixed alpha (not for the default "
    "alpha='auto' = 1/n_samples), but the random mini-batches (drawn over rows) "
    "differ, and the check compares fits to 1e-7, tighter than the solver's tolerance "
    "(as for scikit-learn's SGDClassifier)"
)

# {estimator class name: {check name: reason}}
EXPECTED_FAILED_CHECKS = {
    "ConstrainedLasso": {
        "check_sample_weight_equivalence_on_dense_data": (
            "stochastic solvers only (the 'epro_sgd' entry): repeating rows changes the "
            "uniform sampling stream, so the estimates agree only in expectation; the exact "
            "solver ('fista', the default entry) passes this check"),
        "check_sample_weight_equivalence_on_sparse_data": (
            "stochastic solvers only, as for the dense check"),
    },
    "S3GDClassifier": {
        "check_sample_weight_equivalence_on_dense_data": _S3GD_SW_REASON,
        "check_sample_weight_equivalence_on_sparse_data": _S3GD_SW_REASON,
    },
    "S3GDRegressor": {
        "check_sample_weight_equivalence_on_dense_data": _S3GD_SW_REASON,
        "check_sample_weight_equivalence_on_sparse_data": _S3GD_SW_REASON,
    },
    "CGVRClassifier": {
        "check_sample_weight_equivalence_on_dense_data": _CGVR_SW_REASON,
        "check_sample_weight_equivalence_on_sparse_data": _CGVR_SW_REASON,
    },
    "CGVRRegressor": {
        "check_sample_weight_equivalence_on_dense_data": _CGVR_SW_REASON,
        "check_sample_weight_equivalence_on_sparse_data": _CGVR_SW_REASON,
    },
    "S3VMClassifier": {
        "check_classifiers_classes": (
            "the check fits labels {-1, 1}; -1 marks unlabeled rows in scikit-learn's "
            "semi-supervised convention, so only one labeled class remains and fit raises "
            "(sklearn exempts LabelSpreading/SelfTrainingClassifier from this by name)"
        ),
    },
}


# test-only adapters stand for the public estimator they wrap
ADAPTED = {"FeatureMatrixOrdinalEmbedding": "OrdinalEmbedding"}


# estimators whose exact solver passes a check that their stochastic solvers cannot
EXACT_SOLVERS = {"ConstrainedLasso": {"auto", "fista"}, "S3GDClassifier": {"cd"},
                 "S3GDRegressor": {"cd"}}


# scikit-learn 1.6 has no xfail_strict argument (see the module docstring)
_STRICT = ({"xfail_strict": True}
           if "xfail_strict" in inspect.signature(parametrize_with_checks).parameters else {})


_DEFAULT_RADIUS_SW_REASON = (
    "radius=None searches the radius on the rows: on this check's wide 15 x 30 data by "
    "KFold(5) cross-validation, where repeated rows fall into other folds than their "
    "weighted original (scikit-learn exempts TunedThresholdClassifierCV for the same "
    "reason), and on tall data by AIC, whose n counts the rows of non-zero weight; with a "
    "given radius the exact solver passes (the ConstrainedLasso(radius=1.0) entry)")


def _expected_failed_checks(estimator):
    name = type(estimator).__name__
    out = ({} if getattr(estimator, "solver", None) in EXACT_SOLVERS.get(name, ())
           else dict(EXPECTED_FAILED_CHECKS.get(name, {})))
    if name == "ConstrainedLasso" and estimator.radius is None:
        out.update(dict.fromkeys(("check_sample_weight_equivalence_on_dense_data",
                                  "check_sample_weight_equivalence_on_sparse_data"),
                                 _DEFAULT_RADIUS_SW_REASON))
    return out


def test_every_public_estimator_is_checked():
    checked = {ADAPTED.get(type(est).__name__, type(est).__name__) for est in ESTIMATORS}
    public = {name for name in skstoch.__all__ if name[0].isupper()}
    assert public <= checked, f"public estimators missing from ESTIMATORS: {public - checked}"


def test_expected_failures_have_reasons():
    for est in ESTIMATORS:
        for check, reason in _expected_failed_checks(est).items():
            assert check.startswith("check_") and len(reason) > 40, (type(est).__name__, check)


def test_expected_failures_are_strict(pytestconfig):
    assert _STRICT or pytestconfig.getini("xfail_strict"), (
        "this scikit-learn takes no xfail_strict argument: set xfail_strict = true in "
        "pyproject.toml's [tool.pytest.ini_options] so that a listed check that passes fails")


if ESTIMATORS:

    @parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks,
                             **_STRICT)
    def test_sklearn_compatible_estimator(estimator, check):
        check(estimator)


# -- default parameters, every solver (issue 19.2) --------------------------------------------
def _default_solver_estimators():
    """One estimator per public class and ``solver`` option of its ``_parameter_constraints``,
    every other parameter at its default (OrdinalEmbedding through the feature-matrix
    adapter)."""
    from sklearn.utils._param_validation import StrOptions

    out = []
    for name in sorted(n for n in skstoch.__all__ if n[0].isupper()):
        cls = getattr(skstoch, name)
        make = FeatureMatrixOrdinalEmbedding if cls is OrdinalEmbedding else cls
        options = [c for c in cls._parameter_constraints.get("solver", [])
                   if isinstance(c, StrOptions)]
        solvers = sorted(options[0].options) if options else [None]
        out += [make() if s is None else make(solver=s) for s in solvers]
    return out


DEFAULT_SOLVER_ESTIMATORS = _default_solver_estimators()

# Checks that judge what the fit learned (convergence matters): they run with the default
# budget.  Every other check tests the API (input validation, shapes, pickling, dtypes, ...)
# and runs with max_iter=API_MAX_ITER where the estimator has one, to keep this test's time
# reasonable (about 40 configurations; the default budgets fit for seconds each).
RESULT_CHECKS = {
    "check_classifiers_train", "check_regressors_train", "check_fit_idempotent",
    "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weight_equivalence_on_sparse_data", "check_class_weight_classifiers",
    "check_class_weight_balanced_classifiers", "check_class_weight_balanced_linear_classifier",
    "check_classifiers_classes", "check_supervised_y_2d", "check_decision_proba_consistency",
    "check_classifiers_regression_target", "check_regressors_int",
    "check_classifier_data_not_an_array", "check_regressor_data_not_an_array",
    "check_methods_sample_order_invariance", "check_methods_subset_invariance",
    "check_estimators_pickle", "check_readonly_memmap_input", "check_f_contiguous_array_estimator",
    "check_transformer_general", "check_transformer_data_not_an_array",
}
API_MAX_ITER = 5
# LMNN's stochastic solvers count gradients in max_iter (their first epoch needs up to 17)
API_MAX_ITER_OF = {"LMNNMetric": 64}
# not capped: max_iter counts stochastic gradients there too, and the default budget (10
# passes, or FISTA to tol) already fits in milliseconds
UNCAPPED = {"ConstrainedLasso", "ConstrainedLassoCV"}

_CGVR_AUTO_ALPHA_REASON = (
    "alpha='auto' is 1 / n_samples: removing or repeating rows changes n_samples and so the "
    "penalty, while integer sample weights keep it; the two objectives differ at the optimum "
    "(measured with solver='cg', tol=1e-10: predict_proba 0.657 against 0.529), so even the "
    "deterministic full-batch solvers fail this check with the default alpha; with alpha "
    "fixed to the repeated data's 1/n the classifier passes at the default tol, the regressor "
    "needs tol=1e-10 and about 190 CG steps (max_iter=100 leaves them 5e-5 apart)")
_CD_AUTO_ALPHA_REASON = (
    "alpha='auto' is 1 / n_samples, as for CGVR's 'cg' entry: the repeated data's penalty is "
    "not the weighted data's, so the optimum differs (measured at tol=1e-10: decision values "
    "0.38 (classifier) and 0.34 (regressor) apart); with alpha fixed to the repeated data's "
    "1/n the classifier passes at the default tol and the regressor at tol=1e-10 (7e-5 apart "
    "at the default tol=1e-4)")
_LASSO_CV_SW_REASON = (
    "stochastic solvers only: every fold's fit and the refit sample rows uniformly, so "
    "repeated rows change the random stream (as for ConstrainedLasso); 'auto'/'fista' pass")

# {(class name, solver): {check: reason}} on top of EXPECTED_FAILED_CHECKS' class entries
EXPECTED_FAILED_DEFAULT_CHECKS = {
    **{(cls, "cg"): {"check_sample_weight_equivalence_on_dense_data": _CGVR_AUTO_ALPHA_REASON,
                     "check_sample_weight_equivalence_on_sparse_data": _CGVR_AUTO_ALPHA_REASON}
       for cls in ("CGVRClassifier", "CGVRRegressor")},
    **{(cls, "cd"): {"check_sample_weight_equivalence_on_dense_data": _CD_AUTO_ALPHA_REASON,
                     "check_sample_weight_equivalence_on_sparse_data": _CD_AUTO_ALPHA_REASON}
       for cls in ("S3GDClassifier", "S3GDRegressor")},
    **{("ConstrainedLassoCV", solver): {
        "check_sample_weight_equivalence_on_dense_data": _LASSO_CV_SW_REASON,
        "check_sample_weight_equivalence_on_sparse_data": _LASSO_CV_SW_REASON}
       for solver in ("epro_orda", "epro_orda_paper", "epro_sgd", "epro_sgd_paper",
                      "epro_svrg", "oneproj", "sgd")},
}

# The paper's Epro-SGD runs the paper's fixed step (eta0=0.3, tuned for its unit-variance
# synthetic data): on the checks' unscaled data it diverges, and fit raises DivergenceError
# (a ValueError that says to decrease eta0), as a constant-step SGD does; the other solvers pass
_PAPER_SGD_DIVERGES = (
    "solver='epro_sgd_paper' keeps the paper's fixed step eta0=0.3 (paper 001, section 5.1, "
    "unit-variance data); on the checks' unscaled data it diverges and fit raises "
    "DivergenceError asking for a smaller eta0 (checked in tests/test_constrained_lasso.py)")
# CGVR's SVRG baselines keep the paper's fixed step eta0=1e-3 (its grid 1e-3, 1e-4, 1e-5): for
# the squared loss a single-row step is stable below 2 / ||x_i||^2, and the rows of
# N(100, 1)^2 data plus the intercept have ||x_i||^2 = 2e4, so the regressor diverges
# there (the classifier's bounded log-loss gradients do not); every other check passes.
# Until a data-scaled default step exists this is the fixed-step trade-off, with the error
# checked in tests/test_cgvr.py.
_SVRG_FIXED_STEP_DIVERGES = (
    "solver='svrg' / 'minibatch_svrg' take the fixed step eta0=1e-3 (the paper's grid); on "
    "the checks' rows of mean 100 (squared norm 2e4, stable squared-loss steps < 1e-4) the "
    "regressor diverges and fit raises DivergenceError asking for a smaller eta0 "
    "(checked in tests/test_cgvr.py)")
KNOWN_DEFAULT_FINDINGS = {
    **{("CGVRRegressor", solver): dict.fromkeys(
        ("check_fit_idempotent", "check_fit_check_is_fitted", "check_n_features_in"),
        _SVRG_FIXED_STEP_DIVERGES) for solver in ("svrg", "minibatch_svrg")},
    ("ConstrainedLasso", "epro_sgd_paper"): dict.fromkeys(
        ("check_fit_idempotent", "check_fit_check_is_fitted", "check_n_features_in"),
        _PAPER_SGD_DIVERGES),
    ("ConstrainedLassoCV", "epro_sgd_paper"): dict.fromkeys(
        ("check_fit_idempotent", "check_fit_check_is_fitted", "check_n_features_in",
         "check_non_transformer_estimators_n_iter"), _PAPER_SGD_DIVERGES),
}


def _expected_failed_default_checks(estimator):
    name = ADAPTED.get(type(estimator).__name__, type(estimator).__name__)
    out = dict(_expected_failed_checks(estimator))
    key = (name, getattr(estimator, "solver", None))
    out.update(EXPECTED_FAILED_DEFAULT_CHECKS.get(key, {}))
    out.update(KNOWN_DEFAULT_FINDINGS.get(key, {}))
    return out


def test_default_solver_estimators_cover_every_solver():
    seen = {(type(e).__name__, getattr(e, "solver", None)) for e in DEFAULT_SOLVER_ESTIMATORS}
    assert ("S3VMClassifier", "tsgs3vm") in seen and ("LMNNMetric", "oneproj") in seen
    assert len(seen) == len(DEFAULT_SOLVER_ESTIMATORS)
    for est in DEFAULT_SOLVER_ESTIMATORS:
        for check, reason in _expected_failed_default_checks(est).items():
            assert check.startswith("check_") and len(reason) > 40, (type(est).__name__, check)


def _check_names(estimator):
    from sklearn.utils.estimator_checks import estimator_checks_generator

    return {getattr(check, "func", check).__name__
            for _, check in estimator_checks_generator(estimator)}


def test_expected_failures_name_checks_that_run():
    """A listed check that scikit-learn no longer yields (renamed, removed, misspelled) would
    never XPASS: every entry must name a check generated for its estimator."""
    for est, expected in ([(e, _expected_failed_checks(e)) for e in ESTIMATORS]
                          + [(e, _expected_failed_default_checks(e))
                             for e in DEFAULT_SOLVER_ESTIMATORS]):
        stale = set(expected) - _check_names(est)
        assert not stale, (type(est).__name__, getattr(est, "solver", None), stale)


# The whole test is opt-in (SKSTOCH_CHECK_DEFAULTS=1): 53 configurations x about 60 checks,
# too long for the suite's 15 min.  Without it, every configuration still runs the checks
# below (the suite's share): what a default fit learned on the checks' data (train scores,
# the transformer's consistency, class weights), where default steps and budgets meet data
# they were not tuned for.  The opt-in run adds the API checks (input validation, shapes,
# dtypes, pickling, n_features_in_, ..., max_iter capped) and the other result checks
# (idempotence, sample-weight equivalence, sample-order and subset invariance, ...).
CI_DEFAULT_CHECKS = {"check_classifiers_train", "check_regressors_train",
                     "check_transformer_general", "check_class_weight_classifiers"}
OPT_IN_DEFAULTS = os.environ.get("SKSTOCH_CHECK_DEFAULTS") == "1"


@pytest.mark.slow
@parametrize_with_checks(DEFAULT_SOLVER_ESTIMATORS,
                         expected_failed_checks=_expected_failed_default_checks, **_STRICT)
def test_sklearn_compatible_with_defaults_every_solver(estimator, check):
    name = getattr(check, "func", check).__name__
    if not OPT_IN_DEFAULTS and name not in CI_DEFAULT_CHECKS:
        pytest.skip("opt-in: set SKSTOCH_CHECK_DEFAULTS=1 for every check (about 20 min)")
    cls = type(estimator).__name__
    if (name not in RESULT_CHECKS and "max_iter" in estimator.get_params()
            and cls not in UNCAPPED):
        # a copy: pytest hands every check of one configuration the same instance, and
        # capping it in place would cap the result checks that run after this one
        estimator = clone(estimator).set_params(
            max_iter=API_MAX_ITER_OF.get(cls, API_MAX_ITER))
    check(estimator)


# -- what a pandas user meets after fit ---------------------------------------------------------
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: repr(e)[:60])
def test_dataframe_fit_then_dataframe_methods_do_not_warn(estimator):
    """Fitted on a DataFrame, every prediction method called on the same DataFrame is silent.

    scikit-learn's check_dataframe_column_names_consistency checks only that ``fit`` is
    silent and that wrong names raise; a method that validates X twice (the second time on
    the array the first call returned) warns "X does not have valid feature names" here.
    """
    pd = pytest.importorskip("pandas")
    from sklearn.base import is_classifier, is_regressor

    rng = np.random.RandomState(0)
    X = pd.DataFrame(rng.normal(size=(60, 4)), columns=[f"f{j}" for j in range(4)])
    y = np.arange(60) % 2
    if is_regressor(estimator):
        y = X.to_numpy() @ np.arange(1.0, 5.0)
    elif isinstance(estimator, S3VMClassifier):
        y = np.where(np.arange(60) < 20, y, -1)
    est = clone(estimator)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="X does not have valid feature names")
        warnings.filterwarnings("error", message="X has feature names")
        est.fit(X, y)
        for method in ("predict", "decision_function", "predict_proba", "predict_log_proba",
                       "transform"):
            if hasattr(est, method):
                getattr(est, method)(X)
        if is_classifier(est) or is_regressor(est):
            est.score(X, y)
