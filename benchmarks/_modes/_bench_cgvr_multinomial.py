"""Multinomial log loss (issue 21.2): CGVRClassifier against LogisticRegression (lbfgs) on a
10-class 100k x 50 dense problem, both with their defaults (C=1 / alpha='auto', tol=1e-4),
timed in one process, with the relative objective gap to a tight lbfgs fit (tol=1e-10).

    PYTHONPATH=. python benchmarks/bench_cgvr.py multinomial
"""
import os
import time

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from skstoch import CGVRClassifier


def objective(X, y, coef, intercept):
    n = len(y)
    Z = X @ coef.T + intercept
    m = Z.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(Z - m).sum(axis=1, keepdims=True)))[:, 0]
    return np.mean(lse - Z[np.arange(n), y]) + 0.5 / n * np.sum(coef ** 2)


def main(n_samples=100_000, n_features=50, n_classes=10):
    X, y = make_classification(n_samples, n_features, n_informative=30, n_classes=n_classes,
                               random_state=0)
    f_star = objective(X, y, *_coefs(LogisticRegression(tol=1e-10, max_iter=10000).fit(X, y)))
    print(f"{n_samples} x {n_features}, {n_classes} classes, load {os.getloadavg()}")
    for name, est in [("LogisticRegression lbfgs", LogisticRegression(max_iter=1000)),
                      ("CGVRClassifier", CGVRClassifier(random_state=0))]:
        start = time.perf_counter()
        est.fit(X, y)
        elapsed = time.perf_counter() - start
        gap = (objective(X, y, *_coefs(est)) - f_star) / f_star
        print(f"{name:26s} {elapsed:6.2f} s   relative gap {gap:.1e}")


def _coefs(est):
    return est.coef_, est.intercept_


if __name__ == "__main__":
    main()
