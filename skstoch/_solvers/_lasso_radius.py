"""The default radius of ConstrainedLasso (``radius=None``) on tall data: the point of the
exact path of radii with the smallest Akaike information criterion.

The constrained and the penalized Lasso share one path, and the number of non-zero
coefficients is an unbiased estimate of the Lasso's degrees of freedom (Zou, Hastie &
Tibshirani 2007), so along the path

    AIC(r) = n msr(r) / sigma^2 + 2 df(r),    sigma^2 = n msr_ls / (n - d - 1)

(n - d without an intercept; msr: weighted mean squared residual, ls: the unconstrained
least-squares or ridge fit, n the rows of non-zero weight), as scikit-learn's
``LassoLarsIC``.  The whole path runs on the centred Gram matrix
(:class:`~._lasso_gram_path.GramPath`).  The noise estimate needs residual degrees of
freedom: :func:`aic_applies`.
"""
import numpy as np
import scipy.linalg

from ._lasso_fista import gram_fits
from ._lasso_gram_path import GramPath
from ._lasso_problem import negligible_weights_to_zero

# The path: N_RADII radii log-spaced from EPS r_max to r_max (r_max: the l1 norm of the
# unconstrained fit), each a FISTA on the Gram matrix warm-started at the previous one.
N_RADII = 100
EPS = 1e-3
# Each path point is solved to a Frank-Wolfe gap of SEARCH_TOL * F(0) (the estimator's
# default tol, whatever the fit's: tol=0 asks a stochastic solver for its whole budget) in
# at most _MAX_ITER FISTA iterations (warm starts need few; the default for 'fista').
SEARCH_TOL = 1e-4
_MAX_ITER = 10000


def _residual_dof(sample_weight, n_features, fit_intercept):
    """Rows of non-zero weight minus the coefficients of the least-squares fit; weights
    below float64's resolution relative to the largest count as 0, as in the fit
    (:func:`~._lasso_problem.negligible_weights_to_zero`)."""
    sw = negligible_weights_to_zero(np.asarray(sample_weight, dtype=np.float64))
    return np.count_nonzero(sw) - n_features - int(fit_intercept)


def aic_applies(X, sample_weight, fit_intercept):
    """Whether the AIC rule applies: at least as many residual degrees of freedom as
    coefficients (sigma^2 then has a relative standard error of at most sqrt(2 / (d + 1))),
    and a Gram matrix that may be formed (:func:`~._lasso_fista.gram_fits`)."""
    d = X.shape[1]
    return (gram_fits(X)
            and _residual_dof(sample_weight, d, fit_intercept) >= d + int(fit_intercept))


def _least_squares(H, q):
    """A solution of H w = q for the symmetric positive semi-definite H: by Cholesky when H
    is well conditioned (27 times faster than ``lstsq`` at d = 4200), else ``lstsq``'s
    minimum-norm solution (constant or collinear columns)."""
    try:
        factor = scipy.linalg.cho_factor(H, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(H, q, rcond=None)[0]
    # about lstsq's rank cut-off (singular values below d eps times the largest): its
    # minimum-norm solution
    rcond, _ = scipy.linalg.lapack.dpocon(factor[0], np.abs(H).sum(axis=0).max(), uplo="L")
    if not rcond > H.shape[0] * np.finfo(np.float64).eps:
        return np.linalg.lstsq(H, q, rcond=None)[0]
    return scipy.linalg.cho_solve(factor, q, check_finite=False)


def aic_radius(X, dataset, y, sample_weight, alpha, fit_intercept):
    """The radius of smallest AIC along the path, and the path's solution at the radius
    before it (the start of the estimator's fit at that radius: its fit then does the last
    step of the path).

    Parameters
    ----------
    X, dataset, y, sample_weight, alpha, fit_intercept
        One output's problem (as :class:`~._lasso_problem.LSProblem`).

    Returns
    -------
    radius : float
    start : ndarray of shape (n_features,)
    """
    path = GramPath(X, dataset, y, sample_weight, alpha, fit_intercept)
    G, H, q = path.G, path.H, path.q
    yy = 2.0 * path.problem.f_zero

    def msr(w):
        return yy - 2.0 * float(q @ w) + float(w @ G @ w)

    d = X.shape[1]
    w_ls = _least_squares(H, q)
    r_max = float(np.abs(w_ls).sum())
    msr_ls = msr(w_ls)
    if not (r_max > 0.0 and msr_ls > 1e-12 * yy):
        # y constant (nothing to fit) or fitted exactly (nothing to trade): no constraint
        return r_max, np.zeros(d)
    residual_dof = _residual_dof(path.problem.sw, d, fit_intercept)
    best_aic, best_radius, best_start = np.inf, r_max, np.zeros(d)
    v = np.zeros(d)
    for radius in r_max * np.logspace(np.log10(EPS), 0.0, N_RADII):
        previous = v
        v = path.solve(radius, v, SEARCH_TOL, _MAX_ITER)
        aic = residual_dof * msr(v) / msr_ls + 2.0 * np.count_nonzero(v)
        if aic < best_aic:
            best_aic, best_radius, best_start = aic, float(radius), previous
    return best_radius, best_start
