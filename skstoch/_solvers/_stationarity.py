"""After a plateau stop: is the fit still far from the optimum?

The plateau rule (``tol``) measures progress.  On features of very different scales the
small-scale coordinates move so slowly that progress stalls long before the optimum, and
the rule stops there without a warning (so does SGDClassifier's).  After a plateau stop the
S3GD drivers measure the gradient of the objective in standardized coordinates (with respect
to the coefficients of ``(x_j - mean_j) / std_j``, which do not depend on the features'
scales) relative to its value at zero, and warn above :func:`far_threshold` (measured: user
guide, "Stopping rule").  The CGVR drivers run the same measure after their ``max |gradient|
<= tol`` stop, whose bound is in the units of X and y (threshold ``cgvr.FAR_FROM_OPTIMUM``).
"""

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.sparsefuncs import mean_variance_axis

from ..utils._dataset import rows_per_block
from ..utils._warnings import warn
from ._monitor import SCALERS

__all__ = ["FAR_FROM_OPTIMUM", "SOFTMAX_ROUNDING", "column_moments", "far_threshold",
           "gradient_ratio", "warn_if_far"]

# solver='hybrid' fits stop at 0.0015-0.009 on standardized breast cancer, wine, iris, digits
# and diabetes (at most 0.0114 over 20 cross-validation training folds of each); at 0.047-0.69
# on raw digits, diabetes, breast cancer and wine, all short of the optimum (training score
# 0.998 / 0.45 / 0.92 / 0.70, where a long fit or LogisticRegression reaches 1.0 / 0.49+ /
# 0.96 / 0.99); at 0.02 on raw iris, whose fit matches LogisticRegression's
# (benchmarks/studies/s3gd_plateau_check.py)
FAR_FROM_OPTIMUM = 0.03
# a standardized multinomial gradient at zero at most this is rounding, not a direction: its
# terms are probabilities minus one-hot targets times standardized features, and class
# shares such as 1/3 leave a remainder of about 1e-17 where it vanishes (constant features,
# balanced classes: zero is the optimum, and the ratio of two rounding errors is about 1)
SOFTMAX_ROUNDING = 1e-12
_CONSTANT = 1e-7        # std / |mean| below this: a constant column
_MOMENT_ROWS = 20_000   # the columns' moments from at most this many rows (evenly spaced)


def column_moments(X, max_rows=_MOMENT_ROWS):
    """Column means and standard deviations (float64) of a dense or CSR ``X``, from every
    ``ceil(n / max_rows)``-th row (a scale for the check, not an estimate to report)."""
    X = X[::-(-X.shape[0] // max_rows)] if X.shape[0] > max_rows else X
    if sp.issparse(X):
        mean, var = mean_variance_axis(sp.csr_matrix(X), axis=0)
        return np.asarray(mean, np.float64), np.sqrt(np.asarray(var, np.float64))
    mean = X.mean(axis=0, dtype=np.float64)
    squares = np.zeros(X.shape[1])
    step = rows_per_block(X)     # dense variances a block of rows at a time
    for start in range(0, X.shape[0], step):
        centred = X[start:start + step] - mean
        squares += np.einsum("ij,ij->j", centred, centred)
    return mean, np.sqrt(squares / max(X.shape[0], 1))


def _min_norm_subgradient(G, W, lam1):
    """The smallest element of ``G + lam1 d||W||_1`` (``G`` itself when ``lam1 = 0``)."""
    if lam1 == 0.0:
        return G
    shrunk = np.sign(G) * np.maximum(np.abs(G) - lam1, 0.0)
    return np.where(W != 0.0, G + lam1 * np.sign(W), shrunk)


def _standardized_max(G, Gb, moments, fit_intercept):
    """max |gradient| with respect to the standardized features' coefficients (and the
    intercept): ``(G_j - mean_j Gb) / std_j``, or ``G_j / rms_j`` without an intercept;
    constant columns are left out."""
    mean, std = moments
    G, Gb = G.reshape(G.shape[0], -1), np.reshape(Gb, -1)
    if fit_intercept:
        Z, scale, top = G - np.outer(mean, Gb), std, float(np.abs(Gb).max(initial=0.0))
    else:
        Z, scale, top = G, np.hypot(mean, std), 0.0
    # a constant column (std at rounding level: a training fold of standardized data) has
    # no standardized coefficient
    live = scale > _CONSTANT * np.abs(mean)
    return max(top, float(np.abs(Z[live] / scale[live, None]).max(initial=0.0)))


def gradient_ratio(final, at_zero, W, lam1, moments, fit_intercept, negligible=0.0):
    """The standardized gradient at the fit relative to the one at zero.

    Parameters
    ----------
    final, at_zero : tuple of (ndarray of shape (d,) or (d, K), float or ndarray of shape (K,))
        The gradients of the smooth part of the objective (data term and l2 penalty) with
        respect to ``w`` and the intercept, at the fit and at zero.
    W : ndarray of the shape of ``final[0]``
        The fitted coefficients (for the l1 part's subgradient).
    lam1 : float
    moments : tuple of ndarray
        :func:`column_moments` of X.
    fit_intercept : bool
    negligible : float, default=0.0
        A standardized gradient at zero at most this counts as zero
        (:data:`SOFTMAX_ROUNDING` for the multinomial model).

    Returns
    -------
    float
        0 when the gradient at zero vanishes (zero is the optimum).
    """
    top = _standardized_max(_min_norm_subgradient(at_zero[0], 0.0 * W, lam1), at_zero[1],
                            moments, fit_intercept)
    if not top > negligible:
        return 0.0
    now = _standardized_max(_min_norm_subgradient(final[0], W, lam1), final[1], moments,
                            fit_intercept)
    return now / top


def far_threshold(tol):
    """The ratio above which a plateau stop at ``tol`` warns: :data:`FAR_FROM_OPTIMUM` at the
    default ``tol=1e-4`` and below, ``3 sqrt(tol)`` above it (a looser ``tol`` asks for a
    rougher fit; near the optimum the objective's gap grows as the gradient squared)."""
    return max(FAR_FROM_OPTIMUM, 3.0 * np.sqrt(tol))


def warn_if_far(ratio, solver_name, tol, *, threshold=None, stopped=None, advice=None):
    """``ConvergenceWarning`` when a plateau stop at ``tol`` left the gradient ratio above
    :func:`far_threshold` (or ``threshold``).  ``stopped`` and ``advice`` replace the plateau
    rule's wording of why the fit stopped and what to do (for another stopping rule)."""
    threshold = far_threshold(tol) if threshold is None else threshold
    if stopped is None:
        stopped = f"the objective improved by less than tol={tol:.3g} per epoch"
    if advice is None:
        advice = ("Features of very different scales slow the fit: standardize them (for "
                  f"example with {SCALERS}); a lower tol or a larger n_iter_no_change fits "
                  "longer.")
    if ratio > threshold:
        warn(
            f"{solver_name} stopped because {stopped}, but it is likely far from the "
            f"optimum: measured on standardized features, the gradient is still "
            f"{ratio:.3g} of its size at zero (above {threshold:.3g}). {advice}",
            ConvergenceWarning)
