"""The check after a CGVR ``tol`` stop: the gradient ratio it measures (the gradient on
standardized features relative to its value at zero, ``skstoch/_solvers/_stationarity.py``),
against the training score the fit reached and scikit-learn's on the same objective.

``tol`` bounds max |gradient| in the units of X and y.  After a tol stop the in-memory fits
warn when the ratio is above ``max(cgvr.FAR_FROM_OPTIMUM, 100 tol)``.  This records the
ratio of the default fits (``random_state`` 0 and 1) on the standardized bundled datasets
(full data and 5 cross-validation training folds, two repeats; diabetes also with the target
times 1e-2 and 1e-4), and on the raw data (diabetes with the target times 1 to 1e-6), with
the training score of LogisticRegression(tol=1e-12) / Ridge(alpha=1), the same objective.
Re-run before changing the threshold.

Run: ``PYTHONPATH=. python benchmarks/studies/cgvr_tol_check.py`` (about a minute); writes
``benchmarks/studies/results/cgvr_tol_check.md``.
"""
import warnings
from pathlib import Path

import numpy as np
from scipy.special import expit, softmax
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.preprocessing import StandardScaler

from skstoch import CGVRClassifier, CGVRRegressor
from skstoch._solvers._stationarity import column_moments, gradient_ratio

CLASSIFICATION = {"breast_cancer": load_breast_cancer, "wine": load_wine,
                  "digits": load_digits, "iris": load_iris}


def _classifier_gradient(X, y, W, c, classes):
    """Gradient of the mean log loss + (1 / 2n) ||W||^2 (alpha='auto'), as (d, K), (K,)."""
    n = len(y)
    if W.shape[0] == 1:
        r = (expit(X @ W[0] + c[0]) - (y == classes[1])) / n
        return (X.T @ r + W[0] / n)[:, None], np.array([r.sum()])
    R = (softmax(X @ W.T + c, axis=1) - (y[:, None] == classes)) / n
    return X.T @ R + W.T / n, R.sum(axis=0)


def classifier_ratio(X, y, est):
    W, c = est.coef_, est.intercept_
    return gradient_ratio(_classifier_gradient(X, y, W, c, est.classes_),
                          _classifier_gradient(X, y, 0 * W, 0 * c, est.classes_), W.T, 0.0,
                          column_moments(X), True)


def regressor_ratio(X, y, est):
    n = len(y)

    def gradient(w, b):
        r = X @ w + b - y
        return X.T @ r / n + w / n, r.mean()

    w = est.coef_
    return gradient_ratio(gradient(w, est.intercept_), gradient(0 * w, 0.0), w, 0.0,
                          column_moments(X), True)


def fit(est, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    return est, ("far" if any("far from" in str(w.message) for w in caught) else
                 "budget" if caught else "-")


def main():
    lines = ["# CGVR: gradient ratio after the fit (warns above max(0.01, 100 tol) after a "
             "tol stop)", "", "## Standardized, default fits (full data + 10 CV training folds)",
             "", "| data | fits | largest ratio | warnings |", "|---|---|---|---|"]
    for name, load in CLASSIFICATION.items():
        X0, y0 = load(return_X_y=True)
        ratios, warned = [], 0
        for rep in range(2):
            folds = StratifiedKFold(5, shuffle=True, random_state=rep).split(X0, y0)
            for rows in [np.arange(len(y0))] + [tr for tr, _ in folds]:
                X, y = StandardScaler().fit_transform(X0[rows]), y0[rows]
                est, kind = fit(CGVRClassifier(random_state=rep), X, y)
                ratios.append(classifier_ratio(X, y, est))
                warned += kind != "-"
        lines.append(f"| {name} | {len(ratios)} | {max(ratios):.2g} | {warned} |")
    X0, y0 = load_diabetes(return_X_y=True, scaled=False)
    for scale in (1, 1e-2, 1e-4):
        ratios, warned = [], 0
        for rep in range(2):
            folds = KFold(5, shuffle=True, random_state=rep).split(X0)
            for rows in [np.arange(len(y0))] + [tr for tr, _ in folds]:
                X, y = StandardScaler().fit_transform(X0[rows]), y0[rows] * scale
                est, kind = fit(CGVRRegressor(random_state=rep), X, y)
                ratios.append(regressor_ratio(X, y, est))
                warned += kind != "-"
        lines.append(f"| diabetes, y x {scale:g} | {len(ratios)} | {max(ratios):.2g} | "
                     f"{warned} |")
    lines += ["", "## Raw data, default fit (random_state=0)", "",
              "| data | stop | warning | ratio | training score | scikit-learn |",
              "|---|---|---|---|---|---|"]
    for name, load in CLASSIFICATION.items():
        X, y = load(return_X_y=True)
        est, kind = fit(CGVRClassifier(random_state=0), X, y)
        ref = LogisticRegression(tol=1e-12, max_iter=100_000).fit(X, y)
        stop = "tol" if est.n_iter_ < est._cgvr_params(X, None).max_iter else "max_iter"
        lines.append(f"| {name} | {stop} | {kind} | {classifier_ratio(X, y, est):.2g} | "
                     f"{est.score(X, y):.4f} | {ref.score(X, y):.4f} |")
    for scale in (1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6):
        y = y0 * scale
        est, kind = fit(CGVRRegressor(random_state=0), X0, y)
        ref = Ridge(alpha=1.0, solver="cholesky").fit(X0, y)
        stop = "tol" if est.n_iter_ < est._cgvr_params(X0, None).max_iter else "max_iter"
        lines.append(f"| diabetes, y x {scale:g} | {stop} | {kind} | "
                     f"{regressor_ratio(X0, y, est):.2g} | {est.score(X0, y):.4f} | "
                     f"{ref.score(X0, y):.4f} |")
    out = Path(__file__).parent / "results" / "cgvr_tol_check.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
