"""ConstrainedLasso's default radius (``radius=None``) against the former default (half the
l1 norm of the least-squares fit), ConstrainedLassoCV, and scikit-learn's Lasso() and
LassoCV(): 5-fold shuffled CV R² of a StandardScaler pipeline on diabetes and on generated
problems, tall (the AIC rule applies), nearly square and wide (the cross-validated rule).
Re-run before changing the rule.

Run: ``PYTHONPATH=. python benchmarks/studies/constrained_lasso_default_radius.py`` (about 2
minutes); writes ``benchmarks/studies/results/constrained_lasso_default_radius.md``.
"""
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.datasets import (load_diabetes, make_friedman1, make_regression,
                              make_sparse_uncorrelated)
from sklearn.linear_model import Lasso, LassoCV
from sklearn.model_selection import KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skstoch import ConstrainedLasso, ConstrainedLassoCV
from skstoch._solvers import lasso

OUT = Path(__file__).with_name("results") / "constrained_lasso_default_radius.md"


class HalfLeastSquaresRadius(RegressorMixin, BaseEstimator):
    """The former default: radius = 0.5 * ||w_ls||_1 (until commit 7062d55)."""

    def fit(self, X, y):
        r_max = lasso.radius_max(X, y, np.ones(len(y)), 0.0, True)
        self.model_ = ConstrainedLasso(radius=0.5 * r_max).fit(X, y)
        return self

    def predict(self, X):
        return self.model_.predict(X)


def problems():
    yield "diabetes (442 x 10)", load_diabetes(return_X_y=True)
    yield "friedman1 (2000 x 20)", make_friedman1(2000, 20, noise=1.0, random_state=0)
    yield "sparse_uncorrelated (500 x 50)", make_sparse_uncorrelated(500, 50, random_state=0)
    for n, d, k, noise in [(3000, 100, 10, 1.0), (3000, 100, 10, 50.0), (3000, 100, 100, 100.0),
                           (300, 100, 5, 50.0), (150, 100, 5, 20.0), (130, 100, 50, 20.0),
                           (250, 200, 20, 50.0), (100, 120, 10, 5.0), (100, 300, 5, 10.0),
                           (200, 1000, 20, 10.0), (300, 500, 50, 50.0)]:
        yield (f"make_regression({n}, {d}, n_informative={k}, noise={noise:g})",
               make_regression(n, d, n_informative=k, noise=noise, random_state=0))


def main():
    contenders = {"ConstrainedLasso()": ConstrainedLasso,
                  "former default (0.5 r_max)": HalfLeastSquaresRadius,
                  "ConstrainedLassoCV()": ConstrainedLassoCV, "Lasso()": Lasso,
                  "LassoCV()": LassoCV}
    cv = KFold(5, shuffle=True, random_state=0)
    lines = ["| problem | rule | " + " | ".join(contenders) + " |",
             "|---|---|" + "---|" * len(contenders)]
    for name, (X, y) in problems():
        n_train = len(y) - len(y) // 5
        rule = "AIC" if n_train >= 2 * (X.shape[1] + 1) else "CV"
        cells = []
        for make in contenders.values():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.process_time()
                score = cross_val_score(make_pipeline(StandardScaler(), make()), X, y, cv=cv)
                seconds = time.process_time() - start
            cells.append(f"{score.mean():.4f} ({seconds:.2f} s)")
        lines.append(f"| {name} | {rule} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(
        "# ConstrainedLasso's default radius\n\n"
        "5-fold shuffled CV R² (KFold(5, shuffle=True, random_state=0)) of "
        "make_pipeline(StandardScaler(), estimator); in parentheses the CPU seconds of the 5 "
        "fits.  `rule`: the default's branch on the training folds (AIC when n_train >= "
        "2 (d + 1)).  Produced by `benchmarks/studies/constrained_lasso_default_radius.py`."
        "\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
