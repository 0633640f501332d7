"""Step-size rules shared by the solvers."""
import numpy as np


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
