"""Step-size rules shared by the solvers."""
import numpy as np
import scipy.sparse as sp


def stabilized_bb_step(dx, dg, *, inner_iter, epsilon, previous):
    """Stabilized Barzilai-Borwein step of paper 000 (eq. 14 with the 1/m factor of eq. 17).

    ``eta = ||dx||^2 / (m (|<dx, dg>| + epsilon ||dx||^2))`` with ``dx`` the change of the
    snapshot and ``dg`` the change of the full gradient between two epochs and ``m`` the number
    of inner iterations.  ``epsilon = 0`` is the paper's SBB0 (BB with an absolute value);
    ``epsilon > 0`` bounds the step by ``1 / (m epsilon)`` (eq. 15).

    Guards (paper note §2.2): when ``dx`` is zero, or ``epsilon = 0`` and the curvature
    ``<dx, dg>`` vanishes, or the result is not finite and positive, the previous step is kept.

    Returns
    -------
    step : float
    used_previous : bool
        True when a guard kept the previous step.
    """
    dx = np.ravel(dx)
    dg = np.ravel(dg)
    sq = float(dx @ dx)
    denom = inner_iter * (abs(float(dx @ dg)) + epsilon * sq)
    if sq == 0.0 or denom == 0.0:
        return previous, True
    step = sq / denom
    if not np.isfinite(step) or step <= 0.0:
        return previous, True
    return step, False


def rayleigh_power_iteration(matvec, v0, n_iter=30):
    """Largest eigenvalue of a symmetric positive semi-definite operator by power iteration.

    ``matvec(v)`` applies the operator; ``v0`` (overwritten) is the start.  Returns the
    Rayleigh quotient after ``n_iter`` products (a lower bound; 0 if the iterate vanishes).
    """
    v = v0
    lam = 0.0
    for _ in range(n_iter):
        norm = np.linalg.norm(v)
        if norm == 0:
            break
        v /= norm
        u = matvec(v)
        lam = float(v @ u)
        v = u
    return lam


def squared_row_norms(X):
    """||x_i||^2 of every row of a dense or CSR ``X``, accumulated in float64 (the squares
    of a float32 X near its maximum overflow float32, not float64); inf where they overflow.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        if sp.issparse(X):
            # row sums of squares from a running sum (a few times faster than bincount over
            # repeated row ids; absolute error ~ eps * sum, enough for a step bound)
            data = X.data.astype(np.float64, copy=False)
            csum = np.concatenate([[0.0], np.cumsum(data * data)])
            return csum[X.indptr[1:]] - csum[X.indptr[:-1]]
        return np.einsum("ij,ij->i", X, X, dtype=np.float64)


def row_curvature(row_sqnorms, weights, *, intercept=False, ridge=0.0, reduce="max"):
    """Curvature of a sampled squared-loss row: weights_i (||x_i||^2 + [intercept]) + ridge.

    ``reduce="max"``: its largest value, the inverse of an SGD step that is stable for every
    row (the safe row step); ``reduce="mean"``: its mean, the trace of the full objective's
    Hessian divided by n, an upper bound on the Hessian's largest eigenvalue.  ``weights``
    are the sampling weights (c_i = n s_i / S, so that a uniformly sampled row is unbiased),
    ``intercept`` adds the intercept's unit feature, ``ridge`` the ridge term's curvature.
    The value may be inf when the rows overflow (the caller names the cause).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        if reduce == "max":
            return float(np.max(weights * (row_sqnorms + intercept), initial=0.0)) + ridge
        return float(weights @ (row_sqnorms + intercept)) / row_sqnorms.shape[0] + ridge


def safe_sgd_step(max_curvature, alpha=0.0):
    """1 / ``max_curvature`` (1 when it is 0), and at most 0.49 / alpha for a ridge term
    alpha ||w||^2 (no factor 1/2), so that the ridge contraction 1 - 2 eta alpha stays
    positive (at least 0.02)."""
    step = 1.0 / max_curvature if max_curvature > 0 else 1.0
    if alpha > 0:
        step = min(step, 0.49 / alpha)
    return step
