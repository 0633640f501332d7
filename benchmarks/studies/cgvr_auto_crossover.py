"""Where CGVR's ``solver='auto'`` switches from full-batch CG to CGVR: median CPU seconds of
default fits with ``solver='cg'`` and ``solver='cgvr'`` (``LogisticRegression()`` / ``Ridge()``
as a reference) on standardised generated problems of growing n.

``'auto'`` runs ``'cg'`` below ``skstoch.linear_model._cgvr.CG_BELOW_ROWS`` rows.  Re-run
before changing that number (or the kernels of either solver).

Run: ``PYTHONPATH=. python benchmarks/studies/cgvr_auto_crossover.py`` (about two minutes);
writes ``benchmarks/studies/results/cgvr_auto_crossover.md``.
"""
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from skstoch import CGVRClassifier, CGVRRegressor
from skstoch.linear_model._cgvr import CG_BELOW_ROWS

SIZES = (1000, 3000, 5000, 7000, 10000, 30000)
SEEDS = (0, 1, 2)
# (label, data(n), skstoch estimator, scikit-learn reference)
PROBLEMS = (
    ("binary, d=50", lambda n: make_classification(n, 50, n_informative=20, random_state=0),
     CGVRClassifier, LogisticRegression),
    ("binary, d=200", lambda n: make_classification(n, 200, n_informative=20, random_state=0),
     CGVRClassifier, LogisticRegression),
    ("5 classes, d=50", lambda n: make_classification(n, 50, n_informative=20, n_classes=5,
                                                      random_state=0),
     CGVRClassifier, LogisticRegression),
    ("regression, d=100", lambda n: make_regression(n, 100, noise=10, random_state=0),
     CGVRRegressor, Ridge),
)


def _cpu(fit):
    start = time.process_time()
    fit()
    return time.process_time() - start


def _row(label, data, ours, reference, n):
    X, y = data(n)
    X = StandardScaler().fit_transform(X)
    if ours is CGVRRegressor:
        y = (y - y.mean()) / y.std()
    seconds = {"cg": [], "cgvr": [], "ref": []}
    for seed in SEEDS:
        for solver in ("cg", "cgvr"):
            est = ours(solver=solver, random_state=seed)
            seconds[solver].append(_cpu(lambda: est.fit(X, y)))
        seconds["ref"].append(_cpu(lambda: reference().fit(X, y)))
    med = {k: float(np.median(v)) for k, v in seconds.items()}
    return (f"| {label} | {n} | {med['cg']:.3f} | {med['cgvr']:.3f} | "
            f"{med['cgvr'] / med['cg']:.2f} | {med['ref']:.3f} |")


def main():
    lines = ["# cgvr_auto_crossover", "",
             "Median CPU s of 3 default fits (random_state 0-2, one BLAS thread) of "
             "`solver='cg'` and `solver='cgvr'`; ratio = cgvr / cg (above 1: CG is faster); "
             "reference = LogisticRegression() or Ridge(). Standardised "
             "make_classification / make_regression (target standardised). "
             f"`solver='auto'` runs 'cg' below {CG_BELOW_ROWS} rows.", "",
             "| problem | n | cg s | cgvr s | cgvr / cg | reference s |",
             "|---|---|---|---|---|---|"]
    with threadpool_limits(1):
        for label, data, ours, reference in PROBLEMS:
            for n in SIZES:
                lines.append(_row(label, data, ours, reference, n))
                print(lines[-1], flush=True)
    out = Path(__file__).parent / "results" / "cgvr_auto_crossover.md"
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
