"""ConstrainedLasso's exact solutions along a path of radii on one centred Gram matrix.

One pass over X forms H = Xc^T W Xc / S + 2 alpha I and q = Xc^T W yc / S (the problem with
the intercept eliminated, as :func:`~._lasso_fista.fista_working_set` solves it); every
radius is then a FISTA on d x d products only, warm-started at the previous radius, stopped
on the same Frank-Wolfe gap (``tol * F(0)``).  The exact solver instead forms the Gram
matrix of its working set again at every fit: n_radii x n_folds Gram matrices for a
cross-validated path where this needs n_folds.
"""
import numpy as np

from ._lasso_fista import fista_gram, gram_fits, gram_lipschitz
from ._lasso_problem import LSProblem, constant_columns, gram_block, scale_error


# Up to this many features, or WIDE_ROWS_FACTOR times the rows, the path runs on the Gram
# matrix also on wide data: FISTA on all d features costs d^2 per iteration (less on sparse
# iterates, _lasso_fista.gram_times), the working sets' fits (at least 256 features) a Gram
# matrix and a power iteration per radius.  CPU s of ConstrainedLassoCV() (5 folds, so the
# folds fit 0.8 n rows) on standardized make_regression, the Gram path against radius by
# radius, two alternated runs each (2026-11-29, the machine shared with a CI run):
# 150 x 700 0.8-1.1 against 2.9-3.0, 200 x 1000 2.0 against 2.9-3.2, 300 x 1000 1.7 against
# 3.6-3.7, 100 x 1024 2.0-2.2 against 2.4-3.0, 300 x 1500 2.3-2.4 against 3.0-3.3 (d at most
# 12.8 times the fold's rows); 100 x 1500 2.7-2.9 against 2.3, 50 x 1000 2.2-3.0 against
# 2.0-2.1, 100 x 2000 4.3-4.4 against 2.2-2.7 (at least 18.75 times).  The same radius in
# every case.
WIDE_MAX_FEATURES = 512
WIDE_ROWS_FACTOR = 16


def gram_path_applies(X, n_rows):
    """Whether the path on X is cheaper on the Gram matrix than fitted radius by radius:
    at most ``WIDE_ROWS_FACTOR`` times as many features as rows of non-zero weight
    (``n_rows``) or at most ``WIDE_MAX_FEATURES`` features, and a Gram matrix that may be
    formed (:func:`~._lasso_fista.gram_fits`)."""
    d = X.shape[1]
    return d <= max(WIDE_ROWS_FACTOR * n_rows, WIDE_MAX_FEATURES) and gram_fits(X)


class GramPath:
    """One output's problem on its centred Gram matrix (see the module docstring).

    Parameters
    ----------
    X, dataset, y, sample_weight, alpha, fit_intercept
        As :class:`~._lasso_problem.LSProblem`.

    Attributes
    ----------
    problem : LSProblem
    G : ndarray of shape (n_features, n_features)
        The centred, weighted Gram matrix Xc^T W Xc / S (without the ridge term).
    H, q : ndarray
        The quadratic 1/2 v^T H v - q^T v that FISTA minimizes on the l1 ball.
    """

    def __init__(self, X, dataset, y, sample_weight, alpha, fit_intercept):
        self.problem = LSProblem(X, dataset, y, sample_weight, alpha, np.inf, fit_intercept,
                                 with_xty=True)
        d = X.shape[1]
        self.q = self.problem.xty
        with np.errstate(over="ignore", invalid="ignore"):
            self.G = gram_block(self.problem, np.arange(d))
            constant = constant_columns(self.problem, np.diag(self.G))
            if constant.any():
                # exactly 0 where the centred columns are: no path along rounding noise
                self.G[constant, :] = 0.0
                self.G[:, constant] = 0.0
                self.q = np.where(constant, 0.0, self.q)
            # no d x d identity (or copy without a ridge term): three Gram-sized matrices
            # at once were 423 MB at d = 4200
            self.H = self.G
            if alpha != 0.0:
                self.H = self.G.copy()
                self.H.flat[::d + 1] += 2.0 * alpha
        if not np.all(np.isfinite(self.H)):
            raise scale_error(X, "the Gram matrix X^T X")
        self._lipschitz = None

    def solve(self, radius, start, tol, max_iter):
        """The solution at ``radius`` from ``start``: FISTA until the Frank-Wolfe gap is at
        most ``tol * F(0)`` or ``max_iter`` iterations."""
        if self._lipschitz is None:
            # once per path: the power iteration cost more than the path's FISTA (78%)
            try:
                self._lipschitz = gram_lipschitz(self.H)
            except FloatingPointError:
                raise scale_error(self.problem.X, "the Gram matrix X^T X") from None
        threshold = tol * self.problem.f_zero
        return fista_gram(self.H, self.q, radius, start, threshold, max_iter,
                          self._lipschitz).x

    def intercept(self, w):
        """The optimal intercept at w (0 without ``fit_intercept``)."""
        return self.problem.optimal_intercept(w)
