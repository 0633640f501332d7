"""Defaults that work (issue 19): every public estimator with default parameters, on
standardized bundled datasets that fit its task, converges without any warning and scores at
least as well as the scikit-learn estimator a user would otherwise pick with its defaults.

Scores are 5-fold (stratified for classification) shuffled cross-validation means on the
same folds for both estimators; "at least as well" allows ``TOLERANCE`` below the reference
(half a point of accuracy or R^2), the size of a one-sample difference in a fold.
"""
import warnings

import numpy as np
import pytest
from sklearn.datasets import (load_breast_cancer, load_diabetes, load_digits, load_iris,
                              load_wine, make_circles, make_moons)
from sklearn.linear_model import Lasso, LassoCV, LogisticRegression, Ridge
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score, train_test_split
from sklearn.neighbors import KNeighborsClassifier, NeighborhoodComponentsAnalysis
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import LabelSpreading

import skstoch
from skstoch.datasets import make_semisupervised, make_triplets

TOLERANCE = 0.005

CLASSIFICATION = {"breast_cancer": load_breast_cancer, "digits": load_digits,
                  "wine": load_wine, "iris": load_iris}


def _standardized(loader):
    X, y = loader(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _cv_score(estimator, X, y, classification):
    cv = (StratifiedKFold if classification else KFold)(5, shuffle=True, random_state=0)
    return float(np.mean(cross_val_score(estimator, X, y, cv=cv)))


def _no_warnings(fn):
    """Run ``fn`` with every warning recorded; return (result, warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught]


# (id, our default estimator, reference, dataset name, classification)
ROWS = []
for name in CLASSIFICATION:
    ROWS.append((f"CGVRClassifier-{name}", skstoch.CGVRClassifier, LogisticRegression,
                 name, True))
    ROWS.append((f"S3GDClassifier-{name}", skstoch.S3GDClassifier, LogisticRegression,
                 name, True))
ROWS += [
    ("CGVRRegressor-diabetes", skstoch.CGVRRegressor, Ridge, "diabetes", False),
    ("S3GDRegressor-diabetes", skstoch.S3GDRegressor, Ridge, "diabetes", False),
    ("ConstrainedLasso-diabetes", skstoch.ConstrainedLasso, Lasso, "diabetes", False),
    ("ConstrainedLassoCV-diabetes", skstoch.ConstrainedLassoCV, LassoCV, "diabetes", False),
]

# {row id: reason} rows known to fail today; strict, so a fixed row must leave the list
KNOWN_FAILURES = {
    # the rows that still fail (17 of 24 failed before issue 19)
    "LMNNMetric-iris": "3-NN accuracy 0.947 against NCA's 0.960 (142 against 144 of 150 "
                       "rows; over RepeatedStratifiedKFold(5, 10 repeats) 0.955 against "
                       "0.961). The gap is LMNN's objective on iris, not the fit: "
                       "metric-learn's LMNN also scores 142/150, and 16 times the budget "
                       "or the optimum gain at most 0.2 points on nested iris. Seven rounds "
                       "of studies (budget, c, neighbours, impostors, mu2, rank and "
                       "eigenvalue rules, editing, target passes, smooth / squared / "
                       "truncated hinges, bagging, whitened targets, a relative margin) "
                       "found no change that gains 0.6 points on nested iris without "
                       "losing 0.1 elsewhere; the best scored 143/150 here. "
                       "n_components=1 gains about a point on iris but loses 1.7 to 77 "
                       "elsewhere. doc/user_guide/lmnn.rst, 'How the defaults were "
                       "chosen', gives the numbers and the commits of the studies",
}


def _mark(row_id):
    if row_id in KNOWN_FAILURES:
        return pytest.mark.xfail(reason=KNOWN_FAILURES[row_id], strict=True)
    return []


@pytest.mark.slow
@pytest.mark.parametrize("row_id, ours, reference, dataset, classification",
                         [pytest.param(*row, marks=_mark(row[0]), id=row[0]) for row in ROWS])
def test_default_supervised_estimator(row_id, ours, reference, dataset, classification):
    loader = CLASSIFICATION.get(dataset, load_diabetes)
    X, y = _standardized(loader)
    # random_state=0 as the other tables.  CGVRClassifier() on these datasets (fewer than
    # 5,000 rows) runs full-batch CG, which draws nothing; when it ran CGVR, a fresh draw per
    # fit scored 0.9533 on iris in 2 of 400 runs (fold 5 holds iris row 83 at probabilities
    # 0.4990 / 0.4981 at the optimum, within both solvers' default tol)
    score, caught = _no_warnings(lambda: _cv_score(ours(random_state=0), X, y,
                                                   classification))
    ref = _cv_score(reference(), X, y, classification)
    assert not caught, f"{row_id}: default fit warned: {caught[:3]}"
    assert score >= ref - TOLERANCE, f"{row_id}: {score:.4f} < reference {ref:.4f}"


METRIC_ROWS = [f"LMNNMetric-{name}" for name in CLASSIFICATION]


@pytest.mark.slow
@pytest.mark.parametrize("row_id", [pytest.param(r, marks=_mark(r)) for r in METRIC_ROWS])
def test_default_metric_learner(row_id):
    """3-NN accuracy after LMNNMetric() against after NeighborhoodComponentsAnalysis()."""
    X, y = _standardized(CLASSIFICATION[row_id.split("-", 1)[1]])
    ours, caught = _no_warnings(lambda: _cv_score(
        make_pipeline(skstoch.LMNNMetric(random_state=0), KNeighborsClassifier(3)), X, y, True))
    ref = _cv_score(make_pipeline(NeighborhoodComponentsAnalysis(random_state=0),
                                  KNeighborsClassifier(3)), X, y, True)
    assert not caught, f"{row_id}: default fit warned: {caught[:3]}"
    assert ours >= ref - TOLERANCE, f"{row_id}: {ours:.4f} < reference {ref:.4f}"


SEMI_ROWS = ["S3VMClassifier-moons", "S3VMClassifier-circles"]


def _semi_data(name, seed):
    make = make_moons if name == "moons" else make_circles
    kwargs = {"noise": 0.1} if name == "moons" else {"noise": 0.05, "factor": 0.5}
    X, y = make(n_samples=600, random_state=seed, **kwargs)
    X = StandardScaler().fit_transform(X)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=seed,
                                              stratify=y)
    y_semi, _ = make_semisupervised(y_tr, n_labeled=20, random_state=seed)
    return X_tr, y_semi, X_te, y_te


@pytest.mark.slow
@pytest.mark.parametrize("row_id", [pytest.param(r, marks=_mark(r)) for r in SEMI_ROWS])
def test_default_semi_supervised(row_id):
    """Held-out accuracy with 20 labels (mean over 3 draws) against LabelSpreading()."""
    name = row_id.split("-", 1)[1]
    ours, ref, caught = [], [], []
    for seed in range(3):
        X, y_semi, X_te, y_te = _semi_data(name, seed)
        score, w = _no_warnings(
            lambda: skstoch.S3VMClassifier(random_state=0).fit(X, y_semi).predict(X_te))
        ours.append(np.mean(score == y_te))
        caught += w
        ref.append(np.mean(LabelSpreading().fit(X, y_semi).predict(X_te) == y_te))
    assert not caught, f"{row_id}: default fit warned: {caught[:3]}"
    assert np.mean(ours) >= np.mean(ref) - TOLERANCE, (row_id, ours, ref)


ORDINAL_LOSSES = ["ste", "tste", "gnmds", "ckl", "soe"]


@pytest.mark.slow
@pytest.mark.parametrize("loss", [pytest.param(l, marks=_mark(f"OrdinalEmbedding-{l}"))
                                  for l in ORDINAL_LOSSES])
def test_default_ordinal_embedding(loss):
    """scikit-learn has no triplet embedding to compare with: the default fit must instead
    converge without warning to the held-out triplet accuracy of the same loss solved to a
    tight tolerance (so the defaults do not stop early)."""
    T = make_triplets(random_state=0)   # the generator's defaults: 100 objects, 10,000
    train, test = T[:8000], T[8000:]
    est, caught = _no_warnings(lambda: skstoch.OrdinalEmbedding(loss=loss, random_state=0)
                               .fit(train, n_objects=100))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tight = skstoch.OrdinalEmbedding(loss=loss, tol=1e-9, max_iter=3000, random_state=0)
        ref = tight.fit(train, n_objects=100).score(test)
    assert not caught, f"OrdinalEmbedding(loss={loss!r}): default fit warned: {caught[:3]}"
    assert est.score(test) >= ref - TOLERANCE, (loss, est.score(test), ref)


def test_rows_cover_every_public_estimator():
    covered = {r[1].__name__ for r in ROWS} | {"LMNNMetric", "S3VMClassifier",
                                               "OrdinalEmbedding"}
    public = {n for n in skstoch.__all__ if n[0].isupper()}
    assert public <= covered, public - covered
