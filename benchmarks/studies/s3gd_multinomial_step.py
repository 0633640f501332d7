"""The step of S3GDClassifier's multinomial Prox-SVRG (``eta0='auto'``), issue 21.2.

For multiples 1, 4, 8, 16 of Prox-SVRG's theory step ``1 / (4 L_b)`` (the curvature bound 1/2
of the softmax log loss, ``L_b`` as in the binary driver), the epochs the default fit
(run through the driver with its ``step_factor``; ``tol=0``, at most 300 epochs) needs to a relative objective gap of 1e-8
to a tight LogisticRegression, and the epochs its safeguard rejected, on standardized iris,
wine and digits, raw digits and a 10-class 20,000 x 50 ``make_classification`` problem
(``alpha='auto'`` = ``C=1``).  The table in ``doc/user_guide/s3gd.rst`` ("Multinomial log
loss") comes from this script::

    PYTHONPATH=. python benchmarks/studies/s3gd_multinomial_step.py
"""
import warnings

import numpy as np
from scipy.special import logsumexp
from sklearn.datasets import load_digits, load_iris, load_wine, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from skstoch import S3GDClassifier
from skstoch._solvers import FitMonitor, s3gd_multinomial


def objective(X, y, coef, intercept, alpha):
    Z = X @ coef.T + intercept
    return (np.mean(logsumexp(Z, axis=1) - Z[np.arange(len(y)), y])
            + 0.5 * alpha * np.sum(coef ** 2))


def problems():
    out = {}
    for load in (load_iris, load_wine, load_digits):
        X, y = load(return_X_y=True)
        out[load.__name__[5:]] = (StandardScaler().fit_transform(X), y)
    X, y = load_digits(return_X_y=True)
    out["digits (raw)"] = (X.astype(float), y)
    out["synthetic 20k x 50"] = make_classification(20_000, 50, n_informative=30,
                                                    n_classes=10, random_state=0)
    return out


def fit(X, y, factor, max_iter):
    """The default multinomial fit (``random_state=0``, ``tol=0``) with the step
    ``factor / (4 L_b)``, run through the driver (whose ``step_factor`` is ``4 / factor``)."""
    est = S3GDClassifier(tol=0, max_iter=max_iter, random_state=0)
    params = est._solver_params(X.shape[0])
    seed = np.random.RandomState(0).randint(np.iinfo(np.int32).max)
    monitor = FitMonitor("study")
    classes, y_enc = np.unique(y, return_inverse=True)
    with warnings.catch_warnings():    # tol=0: every fit runs to max_iter or stalls
        warnings.simplefilter("ignore")
        result = s3gd_multinomial.solve(X, y_enc, np.ones(len(y)), len(classes), params,
                                        monitor, seed, step_factor=4.0 / factor)
    return result, monitor.history()


def main(factors=(1, 4, 8, 16), target=1e-8, max_iter=300):
    print("| problem | n | " + " | ".join(f"x{f}" for f in factors) + " |")
    print("|---|---|" + "---|" * len(factors))
    for name, (X, y) in problems().items():
        n, alpha = len(y), 1.0 / len(y)
        ref = LogisticRegression(tol=1e-12, max_iter=100_000).fit(X, y)
        f_star = objective(X, y, ref.coef_, ref.intercept_, alpha)
        cells = []
        for factor in factors:
            result, history = fit(X, y, factor, max_iter)
            gaps = (history["objective"] - f_star) / f_star
            hit = np.flatnonzero(gaps <= target)
            epochs = str(hit[0] + 1) if len(hit) else f">{max_iter}"
            cells.append(f"{epochs} ({int(history['rejected_epochs'][-1])})")
        print(f"| {name} | {n} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
