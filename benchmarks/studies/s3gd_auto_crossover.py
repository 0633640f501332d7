"""Where S3GD's ``solver='auto'`` runs ``'cd'`` instead of ``'hybrid'`` for the l2 penalty,
and full-batch CG instead of multinomial Prox-SVRG for the multinomial model: median CPU
seconds of default fits with either solver and the relative objective gap each stops at
(against a ``'cd'`` fit at ``tol=1e-8``; multinomial: a CG fit at ``tol=1e-10``), on the
standardized bundled datasets, on standardized generated problems of growing n, on noisy
copies of digits (dense, correlated features) and on text-like sparse problems.

In memory ``'auto'`` runs ``'cd'`` on a dense float64 X and below
``skstoch.linear_model._s3gd.CD_BELOW_ROWS`` rows (multinomial: ``'cg'`` below that many
rows).  ``'cg'`` is not a value of
S3GD's ``solver``: its rows fit ``CGVRClassifier(solver='cg')``, the same driver and model
(``alpha = 1/n``, unpenalised intercepts).  Re-run before changing that number or a solver.

Run: ``PYTHONPATH=. python benchmarks/studies/s3gd_auto_crossover.py`` (a few minutes);
writes ``benchmarks/studies/results/s3gd_auto_crossover.md``.
"""
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.datasets import (load_breast_cancer, load_diabetes, load_digits, load_iris,
                              load_wine, make_classification, make_regression)
from sklearn.preprocessing import StandardScaler, normalize
from threadpoolctl import threadpool_limits

from skstoch import CGVRClassifier, S3GDClassifier, S3GDRegressor
from skstoch.linear_model._s3gd import CD_BELOW_ROWS

SEEDS = (0, 1, 2)


def _bundled(load):
    return lambda: load(return_X_y=True)


def _noisy_digits(copies, target=None):
    """Digits repeated ``copies`` times plus 0.3 N(0, 1) noise (dense, correlated features);
    ``target``: that digit against the rest (binary, imbalanced)."""
    def data():
        X, y = load_digits(return_X_y=True)
        rng = np.random.RandomState(0)
        X = np.repeat(X, copies, axis=0) + 0.3 * rng.standard_normal((copies * len(X), 64))
        y = np.repeat(y, copies)
        return X, y if target is None else (y == target).astype(int)
    return data


def _text(n, d, positive=0.5):
    """Text-like CSR rows of unit norm (50 stored entries, exponential values), labels from a
    sparse linear model: its top ``positive`` share of margins is class 1."""
    def data():
        rng = np.random.RandomState(0)
        cols = rng.randint(0, d, size=(n, 50))
        X = sp.csr_matrix((rng.exponential(1.0, n * 50), cols.ravel(),
                           np.arange(0, n * 50 + 1, 50)), shape=(n, d))
        X.sum_duplicates()
        X = normalize(X)
        w = np.zeros(d)
        support = rng.choice(d, d // 20, replace=False)
        w[support] = 10 * rng.standard_normal(len(support))
        margin = X @ w
        return X, (margin > np.quantile(margin, 1 - positive)).astype(int)
    return data


# (label, data(), estimator)
PROBLEMS = [
    ("breast_cancer", _bundled(load_breast_cancer), S3GDClassifier),
    ("wine, one-vs-rest", _bundled(load_wine), S3GDClassifier),
    ("digits, one-vs-rest", _bundled(load_digits), S3GDClassifier),
    ("diabetes", _bundled(load_diabetes), S3GDRegressor),
] + [
    (f"make_classification d={d}", lambda n=n, d=d: make_classification(
        n, d, n_informative=d // 2, flip_y=0.05, random_state=0), S3GDClassifier)
    for d in (20, 100) for n in (2000, 5000, 20000, 100000)
] + [
    ("make_regression d=100", lambda n=n: make_regression(n, 100, noise=10, random_state=0),
     S3GDRegressor)
    for n in (2000, 20000)
]


# from CD_BELOW_ROWS rows: dense data with correlated features, and sparse data
LARGE = [
    ("covtype-like make_classification d=54", lambda: make_classification(
        100_000, 54, n_informative=20, n_redundant=10, n_clusters_per_class=4, flip_y=0.05,
        random_state=0), S3GDClassifier),
    ("noisy digits x4, 0 against the rest", _noisy_digits(4, 0), S3GDClassifier),
    ("noisy digits x4, 3 against the rest", _noisy_digits(4, 3), S3GDClassifier),
    ("noisy digits x4, one-vs-rest", _noisy_digits(4), S3GDClassifier),
    ("noisy digits x12, one-vs-rest", _noisy_digits(12), S3GDClassifier),
    ("text-like CSR d=20000", _text(30_000, 20_000), S3GDClassifier),
    ("text-like CSR d=20000, 5% positive", _text(30_000, 20_000, 0.05), S3GDClassifier),
    ("text-like CSR d=50000", _text(100_000, 50_000), S3GDClassifier),
]


# the multinomial model: (label, data())
MULTINOMIAL = [
    ("iris", _bundled(load_iris)),
    ("wine", _bundled(load_wine)),
    ("digits", _bundled(load_digits)),
] + [
    (f"make_classification d={d}, 5 classes", lambda n=n, d=d: make_classification(
        n, d, n_informative=d // 2, n_classes=5, flip_y=0.05, random_state=0))
    for d in (20, 100) for n in (2000, 5000, 20000, 100000)
]


def _softmax_objective(est, X, y):
    Z = X @ est.coef_.T + est.intercept_
    codes = np.searchsorted(est.classes_, y)
    loss = logsumexp(Z, axis=1) - Z[np.arange(len(y)), codes]
    return np.mean(loss) + 0.5 / X.shape[0] * np.sum(est.coef_ ** 2)


def _objective(est, X, y):
    """The summed objective of the fit's heads (one-vs-rest classes, or the regression)."""
    alpha = 1.0 / X.shape[0]
    W, b = np.atleast_2d(est.coef_), np.atleast_1d(est.intercept_)
    if isinstance(est, S3GDRegressor):
        r = y - X @ W[0] - b[0]
        return 0.5 * np.mean(r * r) + 0.5 * alpha * W[0] @ W[0]
    classes = est.classes_
    heads = classes[1:] if len(classes) == 2 else classes
    total = 0.0
    for k, c in enumerate(heads):
        s = np.where(y == c, 1.0, -1.0)
        total += np.mean(np.logaddexp(0, -s * (X @ W[k] + b[k]))) + 0.5 * alpha * W[k] @ W[k]
    return total


def _fits(make, X, y):
    """Median CPU seconds of fits with ``make(seed)`` over SEEDS, the last fit and the
    warnings raised."""
    seconds, warned = [], 0
    for seed in SEEDS:
        est = make(seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            seconds.append(_cpu_fit(est, X, y))
        warned += len(caught)
    return np.median(seconds), est, warned


def _multinomial_row(label, data):
    X, y = data()
    X = StandardScaler().fit_transform(X)
    best = _softmax_objective(CGVRClassifier(solver="cg", tol=1e-10).fit(X, y), X, y)
    cells = []
    for make in (lambda seed: CGVRClassifier(solver="cg", random_state=seed),
                 lambda seed: S3GDClassifier(solver="hybrid", random_state=seed)):
        seconds, est, warned = _fits(make, X, y)
        gap = (_softmax_objective(est, X, y) - best) / abs(best)
        cells.append(f"{seconds:.3f} | {max(gap, 0.0):.1e} | {warned}")
    return f"| {label} | {X.shape[0]} | " + " | ".join(cells) + " |"


def _cpu_fit(est, X, y):
    start = time.process_time()
    est.fit(X, y)
    return time.process_time() - start


def _row(label, data, estimator):
    X, y = data()
    X = X if sp.issparse(X) else StandardScaler().fit_transform(X)
    if estimator is S3GDRegressor:
        y = (y - y.mean()) / y.std()
    kw = {} if estimator is S3GDRegressor else {"multi_class": "ovr"}
    best = _objective(estimator(solver="cd", tol=1e-8, **kw).fit(X, y), X, y)
    cells = []
    for solver in ("cd", "hybrid"):
        seconds, est, warned = _fits(
            lambda seed: estimator(solver=solver, random_state=seed, **kw), X, y)
        gap = (_objective(est, X, y) - best) / abs(best)
        cells.append(f"{seconds:.3f} | {max(gap, 0.0):.1e} | {warned}")
    return f"| {label} | {X.shape[0]} | " + " | ".join(cells) + " |"


def main():
    lines = ["# s3gd_auto_crossover", "",
             "Median CPU s of 3 fits (random_state 0-2, one BLAS thread) with default "
             "parameters but `solver`, l2 penalty, `alpha=1/n`, one-vs-rest for several "
             "classes; gap = relative objective gap of the last fit (seed 2) over a "
             "`solver='cd', tol=1e-8` fit; warnings = warnings over the 3 fits. Standardized "
             "dense features (regression target standardized); text-like CSR rows have "
             "unit norm. Noisy digits: digits repeated 4 or 12 times plus 0.3 N(0, 1). "
             f"`solver='auto'` runs 'cd' on a dense float64 X and below {CD_BELOW_ROWS} rows, "
             "'hybrid' on a sparse or float32 X from there.", "",
             "| problem | n | cd s | cd gap | cd warnings | hybrid s | hybrid gap "
             "| hybrid warnings |",
             "|---|---|---|---|---|---|---|---|"]
    multinomial = ["", "## The multinomial model", "",
                   "Default parameters but `solver`, more than two classes, log loss: "
                   "`'cg'` is full-batch CG (`CGVRClassifier(solver='cg')`, the driver "
                   "S3GD's `'auto'` runs), `'hybrid'` multinomial Prox-SVRG; gap over a "
                   "`'cg'` fit at `tol=1e-10`; otherwise as above. `solver='auto'` runs "
                   f"'cg' below {CD_BELOW_ROWS} rows.", "",
                   "| problem | n | cg s | cg gap | cg warnings | hybrid s | hybrid gap "
                   "| hybrid warnings |",
                   "|---|---|---|---|---|---|---|---|"]
    large = ["", "## From 5,000 rows: dense and sparse", "",
             "As the first table, on noisy copies of digits (dense, correlated features; "
             "binary problems of one digit against the rest, and one-vs-rest), a "
             "covtype-like generated problem and text-like CSR problems. `solver='auto'` "
             "runs 'cd' on the dense float64 rows and 'hybrid' on the CSR rows.", "",
             lines[-2], lines[-1]]
    with threadpool_limits(1):
        for label, data, estimator in PROBLEMS:
            lines.append(_row(label, data, estimator))
            print(lines[-1], flush=True)
        for label, data, estimator in LARGE:
            large.append(_row(label, data, estimator))
            print(large[-1], flush=True)
        for label, data in MULTINOMIAL:
            multinomial.append(_multinomial_row(label, data))
            print(multinomial[-1], flush=True)
    lines += large + multinomial
    out = Path(__file__).parent / "results" / "s3gd_auto_crossover.md"
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
