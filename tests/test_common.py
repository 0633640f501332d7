"""scikit-learn's estimator checks over every public estimator of skstoch.

Each estimator module's tests register nothing here: the list below is the single place.
Every expected failure carries the reason it is expected, and the list is strict
(``xfail_strict=True``): a check listed here that passes fails the suite, so the list stays
the smallest one that is true.
"""
import numpy as np
import pytest
from sklearn.utils._available_if import available_if
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.validation import check_is_fitted, validate_data

import skstoch
from skstoch import OrdinalEmbedding, S3VMClassifier


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
    # one constructor call per public estimator (two for ConstrainedLasso: exact and
    # stochastic solver)
    skstoch.CGVRClassifier(max_iter=20, inner_iter=10, random_state=0),
    skstoch.CGVRRegressor(max_iter=20, inner_iter=10, random_state=0),
    skstoch.ConstrainedLasso(),
    skstoch.ConstrainedLasso(solver="epro_sgd", max_iter=2000, random_state=0),
    skstoch.ConstrainedLassoCV(n_radii=3, cv=3),
    # n_neighbors=1: some checks fit on 10 samples whose classes have 2-3 members
    skstoch.LMNNMetric(n_neighbors=1, max_iter=64, random_state=0),
    FeatureMatrixOrdinalEmbedding(n_components=2, max_iter=5, tol=1e-3),
    skstoch.S3GDClassifier(n_anchors=10, max_iter=5, random_state=0),
    skstoch.S3GDRegressor(n_anchors=10, max_iter=5, random_state=0),
    S3VMClassifier(n_components=16, batch_size=16, max_iter=20, random_state=0),
]

# test-only adapters stand for the public estimator they wrap
ADAPTED = {"FeatureMatrixOrdinalEmbedding": "OrdinalEmbedding"}

_STOCHASTIC_SW_REASON = (
    "stochastic solver: integer sample weights and repeated rows give the same objective but "
    "not the same random mini-batches (and, for S3GD, k-means anchors and anchor graph), so the "
    "fits agree only in expectation (as for scikit-learn's SGDClassifier)"
)
_SW_CHECKS = ("check_sample_weight_equivalence_on_dense_data",
              "check_sample_weight_equivalence_on_sparse_data")

# {estimator class name: {check name: reason}}; see _expected_failed_checks for the
# per-configuration refinements
EXPECTED_FAILED_CHECKS = {
    "CGVRClassifier": dict.fromkeys(_SW_CHECKS, _STOCHASTIC_SW_REASON),
    "CGVRRegressor": dict.fromkeys(_SW_CHECKS, _STOCHASTIC_SW_REASON),
    "S3GDClassifier": dict.fromkeys(_SW_CHECKS, _STOCHASTIC_SW_REASON),
    "S3GDRegressor": dict.fromkeys(_SW_CHECKS, _STOCHASTIC_SW_REASON),
    "S3VMClassifier": {
        "check_classifiers_classes": (
            "the check fits labels {-1, 1}; -1 marks unlabeled rows in scikit-learn's "
            "semi-supervised convention, so only one labeled class remains and fit raises "
            "(sklearn exempts LabelSpreading/SelfTrainingClassifier from this by name)"
        ),
    },
}


def _expected_failed_checks(estimator):
    name = type(estimator).__name__
    if name == "ConstrainedLasso" and estimator.solver not in ("auto", "fista"):
        # the exact solver passes every check; only the stochastic configurations differ
        return dict.fromkeys(_SW_CHECKS, _STOCHASTIC_SW_REASON)
    return EXPECTED_FAILED_CHECKS.get(name, {})


def test_every_public_estimator_is_checked():
    checked = {ADAPTED.get(type(est).__name__, type(est).__name__) for est in ESTIMATORS}
    public = {name for name in skstoch.__all__ if name[0].isupper()}
    assert public <= checked, f"public estimators missing from ESTIMATORS: {public - checked}"


def test_expected_failures_have_reasons():
    for est in ESTIMATORS:
        for check, reason in _expected_failed_checks(est).items():
            assert check.startswith("check_") and len(reason) > 40, (type(est).__name__, check)


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks,
                         xfail_strict=True)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
