"""Small data: CGVRClassifier() against LogisticRegression() on scikit-learn's bundled
classification datasets (standardised), both with their defaults: below 5,000 rows
``solver='auto'`` runs full-batch CG, since a stochastic method has little to gain there.  CPU time of alternated fits (one BLAS thread), passes
over X (CGVR's ``history_['passes']``; lbfgs's ``n_iter_``, about one pass each), and the
relative objective gap to a tight lbfgs fit (``tol=1e-10``) of the same objective
(``alpha='auto'`` = 1 / n_samples is ``C=1``).

    PYTHONPATH=. python benchmarks/bench_cgvr.py small
"""
import time

import numpy as np
from scipy.special import log_softmax
from sklearn import datasets
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from skstoch import CGVRClassifier

DATASETS = ("breast_cancer", "digits", "wine", "iris")
COLUMNS = ("dataset", "n x d, classes", "CGVR solver_", "CGVR median CPU s", "lbfgs median CPU s", "ratio",
           "CGVR passes", "lbfgs iterations", "CGVR gap", "lbfgs gap")


def objective(X, y, est):
    """Mean log loss (binary or multinomial, as each estimator fits it) + ||W||^2 / (2 n)."""
    Z = np.atleast_2d(est.decision_function(X).T).T
    if Z.shape[1] == 1:
        Z = np.hstack([np.zeros_like(Z), Z])
    n = len(y)
    return -np.mean(log_softmax(Z, axis=1)[np.arange(n), y]) + 0.5 / n * np.sum(est.coef_ ** 2)


def row(name, repeats):
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    f_star = objective(X, y, LogisticRegression(tol=1e-10, max_iter=100000).fit(X, y))
    make = {"CGVR": lambda: CGVRClassifier(random_state=0), "lbfgs": LogisticRegression}
    seconds, fitted = {k: [] for k in make}, {}
    for _ in range(repeats):
        for key, new in make.items():
            est = new()
            start = time.process_time()
            est.fit(X, y)
            seconds[key].append(time.process_time() - start)
            fitted[key] = est
    med = {k: float(np.median(v)) for k, v in seconds.items()}
    gap = {k: (objective(X, y, est) - f_star) / f_star for k, est in fitted.items()}
    return {"dataset": name, "n x d, classes": f"{X.shape[0]} x {X.shape[1]}, {len(set(y))}",
            "CGVR solver_": fitted["CGVR"].solver_,
            "CGVR median CPU s": round(med["CGVR"], 4),
            "lbfgs median CPU s": round(med["lbfgs"], 4),
            "ratio": round(med["CGVR"] / med["lbfgs"], 1),
            "CGVR passes": round(float(fitted["CGVR"].history_["passes"][-1]), 1),
            "lbfgs iterations": int(fitted["lbfgs"].n_iter_[0]),
            "CGVR gap": f"{gap['CGVR']:.1e}", "lbfgs gap": f"{gap['lbfgs']:.1e}"}


def main(repeats=5):
    from _harness import QUICK, markdown_table, write_results
    repeats = 1 if QUICK else repeats
    with threadpool_limits(1):
        rows = [row(name, repeats) for name in DATASETS]
    lines = ["# cgvr_small", "",
             "Default fits on standardised bundled datasets: `CGVRClassifier(random_state=0)` "
             f"against `LogisticRegression()` (lbfgs), median CPU s of {repeats} alternated "
             "fits, one BLAS thread; ratio = CGVR / lbfgs. CGVR passes = rows read / n "
             "(`history_['passes']`); gap = relative objective gap to lbfgs at `tol=1e-10` "
             "(the same objective: alpha='auto' is C=1).", ""]
    lines += markdown_table(COLUMNS, rows)
    write_results("cgvr_small", {"name": "cgvr_small", "repeat": repeats, "results": rows},
                  "\n".join(lines) + "\n")
