"""The check after S3GD's plateau stop: the gradient ratio it measures on raw and standardized
data, against the training accuracy (or R2) the fit reached and LogisticRegression's.

After a plateau stop, ``solver='hybrid'`` / ``'svrg'`` warn when the gradient measured on
standardized features is above ``FAR_FROM_OPTIMUM`` (0.03) of its value at zero
(``skstoch/_solvers/_stationarity.py``).  This records the ratio of every head / fit of
``solver='hybrid'`` (the default from 5,000 rows; ``random_state=0``) on the bundled
datasets, raw and through ``StandardScaler`` (and the largest over 20 cross-validation
training folds of the standardized data), and of the unchecked SGD solvers on well-scaled
``make_classification`` data (why they are not checked).  Re-run before changing the threshold.

Run: ``PYTHONPATH=. python benchmarks/studies/s3gd_plateau_check.py`` (about a minute); writes
``benchmarks/studies/results/s3gd_plateau_check.md``.
"""
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
from sklearn.datasets import (load_breast_cancer, load_diabetes, load_digits, load_iris,
                              load_wine, make_classification)
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import RepeatedKFold, RepeatedStratifiedKFold
from sklearn.preprocessing import StandardScaler

from skstoch import S3GDClassifier, S3GDRegressor
from skstoch._solvers import s3gd, s3gd_multinomial
from skstoch._solvers._stationarity import FAR_FROM_OPTIMUM, warn_if_far

OUT = Path(__file__).parent / "results" / "s3gd_plateau_check.md"


def measured_fit(estimator, X, y):
    """(ratios of the checked heads, warned, training score) of one fit."""
    ratios = []

    def spy(ratio, *args):
        ratios.append(ratio)
        return warn_if_far(ratio, *args)
    with mock.patch.object(s3gd, "warn_if_far", spy), \
            mock.patch.object(s3gd_multinomial, "warn_if_far", spy), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return ratios, warned, estimator.score(X, y)


def rows():
    for load in (load_breast_cancer, load_wine, load_iris, load_digits):
        X, y = load(return_X_y=True)
        reference = f"{LogisticRegression(max_iter=5000).fit(X, y).score(X, y):.4f}"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            LogisticRegression().fit(X, y)
        if any(issubclass(w.category, ConvergenceWarning) for w in caught):
            reference += " (LogisticRegression() warns)"
        for kind, Z in (("raw", X), ("standardized", StandardScaler().fit_transform(X))):
            ratios, warned, score = measured_fit(
                S3GDClassifier(solver="hybrid", random_state=0), Z, y)
            yield (f"{load.__name__[5:]} {kind}", "S3GDClassifier(solver='hybrid')", ratios,
                   warned, score, reference if kind == "raw" else None)
    X, y = load_diabetes(return_X_y=True, scaled=False)
    for kind, Z in (("raw", X), ("standardized", StandardScaler().fit_transform(X))):
        ratios, warned, score = measured_fit(S3GDRegressor(solver="hybrid", random_state=0), Z, y)
        yield f"diabetes {kind}", "S3GDRegressor(solver='hybrid')", ratios, warned, score, None
    # how far the raw fit stopped: a long fit (no plateau stop) and Ridge()'s training R2
    long = S3GDRegressor(solver="hybrid", tol=1e-12, max_iter=20_000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # it runs out of max_iter
        long.fit(X, y)
    yield ("diabetes raw", "S3GDRegressor(solver='hybrid', tol=1e-12, max_iter=20000)", [], None,
           long.score(X, y), None)
    yield "diabetes raw", "Ridge()", [], None, Ridge().fit(X, y).score(X, y), None
    yield from fold_rows()
    for seed in range(3):
        X, y = make_classification(5000, 50, n_informative=10, random_state=seed)
        for solver in ("s3gd", "sgd"):
            ratios, _, score = measured_fit(
                S3GDClassifier(solver=solver, random_state=0), X, y)
            # the SGD solvers are not checked: their ratio, measured as if they were
            ratios = [_ratio_as_if_checked(solver, X, y)]
            yield (f"make_classification seed {seed}", f"solver={solver!r} (unchecked)",
                   ratios, None, score, None)


def fold_rows():
    """The largest ratio over 20 training folds (5-fold CV, 4 repeats) of standardized data,
    the way the defaults table fits (``random_state`` = fold number)."""
    for load in (load_breast_cancer, load_wine, load_iris, load_digits, load_diabetes):
        X, y = load(return_X_y=True)
        X = StandardScaler().fit_transform(X)
        regression = load is load_diabetes
        cv = (RepeatedKFold if regression else RepeatedStratifiedKFold)(
            n_splits=5, n_repeats=4, random_state=0)
        worst, scores = 0.0, []
        for k, (train, _) in enumerate(cv.split(X, y)):
            est = (S3GDRegressor if regression else S3GDClassifier)(solver="hybrid",
                                                                  random_state=k)
            ratios, _, score = measured_fit(est, X[train], y[train])
            worst, scores = max(worst, *ratios), scores + [score]
        yield (f"{load.__name__[5:]} standardized, 20 training folds (largest)",
               f"{'S3GDRegressor' if regression else 'S3GDClassifier'}(solver='hybrid')",
               [worst], None, float(np.mean(scores)), None)


def _ratio_as_if_checked(solver, X, y):
    ratios = []
    with mock.patch.object(s3gd, "_VARIANCE_REDUCED", ("hybrid", "svrg", solver)), \
            mock.patch.object(s3gd, "warn_if_far", lambda ratio, *a: ratios.append(ratio)):
        S3GDClassifier(solver=solver, random_state=0).fit(X, y)
    return ratios[0]


def main():
    lines = [f"# S3GD plateau check (at the default tol: warns above {FAR_FROM_OPTIMUM})", "",
             "| data | estimator | gradient ratio (per head) | warned | training score | "
             "LogisticRegression(max_iter=5000) |", "|---|---|---|---|---|---|"]
    for data, name, ratios, warned, score, reference in rows():
        lines.append(f"| {data} | {name} | {', '.join(f'{r:.3g}' for r in ratios)} | "
                     f"{'' if warned is None else warned} | {score:.4f} | "
                     f"{reference or ''} |")
        print(lines[-1], flush=True)
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
