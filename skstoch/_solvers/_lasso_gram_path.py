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


# Up to this many features the path runs on the Gram matrix also on wide data: FISTA on all
# d features costs d^2 per iteration, the working sets' fits (at least 256 features) a Gram
# matrix and a power iteration per radius.  5-fold CV of ConstrainedLassoCV() on
# make_regression 150 x 500: 2.0 s on the Gram matrix against 4.3 s; 150 x 700: 4.3 s
# against 3.5 s.
WIDE_MAX_FEATURES = 512


def gram_path_applies(X, n_rows):
    """Whether the path on X is cheaper on the Gram matrix than fitted radius by radius:
    at least as many rows of non-zero weight (``n_rows``) as features (a d x d mat-vec
    costs at most an X mat-vec) or at most ``WIDE_MAX_FEATURES`` features, and a Gram
    matrix that may be formed (:func:`~._lasso_fista.gram_fits`)."""
    return X.shape[1] <= max(n_rows, WIDE_MAX_FEATURES) and gram_fits(X)


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
