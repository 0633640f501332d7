"""scikit-learn's estimator checks over every public estimator of skstoch.

Each estimator module's tests register nothing here: the list below is the single place.
Every expected failure carries the reason it is expected.
"""
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import skstoch
from skstoch import S3VMClassifier

# Small, fast configurations: the checks fit hundreds of times.
ESTIMATORS = [
    # one constructor call per public estimator, added as estimators land
    # n_neighbors=1: some checks fit on 10 samples whose classes have 2-3 members
    skstoch.LMNNMetric(n_neighbors=1, max_iter=64, random_state=0),
    S3VMClassifier(n_components=16, batch_size=16, max_iter=20, random_state=0),
]

# {estimator class name: {check name: reason}}
EXPECTED_FAILED_CHECKS = {
    "S3VMClassifier": {
        "check_classifiers_classes": (
            "the check fits labels {-1, 1}; -1 marks unlabeled rows in scikit-learn's "
            "semi-supervised convention, so only one labeled class remains and fit raises "
            "(sklearn exempts LabelSpreading/SelfTrainingClassifier from this by name)"
        ),
    },
}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {})


def test_every_public_estimator_is_checked():
    checked = {type(est).__name__ for est in ESTIMATORS}
    public = {name for name in skstoch.__all__ if name[0].isupper()}
    assert public <= checked, f"public estimators missing from ESTIMATORS: {public - checked}"


if ESTIMATORS:

    @parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
    def test_sklearn_compatible_estimator(estimator, check):
        check(estimator)
