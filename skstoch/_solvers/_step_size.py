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


def probe_curvature(gradient, x0, *, relative_step=1e-4):
    """Curvature ``|<dx, dg>| / |dx|^2`` along a small step down the gradient at ``x0``.

    ``dx = -delta g0`` with ``delta = relative_step * max(|x0|, 1e-12) / |g0|``, and ``dg`` the
    change of the gradient over it: the denominator of a Barzilai-Borwein step probed before
    the first iteration (paper 000 gives no first step; OrdinalEmbedding uses it for ``eta0``
    and ``epsilon='auto'``).

    Parameters
    ----------
    gradient : callable
        ``gradient(x) -> (value, grad)``; called twice.
    x0 : ndarray
        The starting point.
    relative_step : float
        Length of the probe step relative to ``|x0|``.

    Returns
    -------
    kappa : float
        The curvature, or 0 when the probe is degenerate (zero or non-finite gradient,
        non-finite curvature).
    """
    _, g0 = gradient(x0)
    gnorm = np.linalg.norm(g0)
    if gnorm == 0.0 or not np.isfinite(gnorm):
        return 0.0
    delta = relative_step * max(np.linalg.norm(x0), 1e-12) / gnorm
    dx = -delta * g0
    _, g1 = gradient(x0 + dx)
    sq = float(np.vdot(dx, dx))
    kappa = abs(float(np.vdot(dx, g1 - g0))) / sq
    return kappa if np.isfinite(kappa) else 0.0


def curvature_step(kappa, epsilon):
    """The stabilized BB step ``1 / (kappa + epsilon)`` at a probed curvature ``kappa``
    (eq. 14 of paper 000 with ``|<dx, dg>| / |dx|^2 = kappa``, before the ``1/m`` of eq. 17).

    Returns 1 when ``kappa + epsilon`` is not positive and finite (a degenerate probe).
    """
    denom = kappa + epsilon
    return 1.0 / denom if denom > 0.0 and np.isfinite(denom) else 1.0


def decaying_step(eta0, iteration, decay):
    """The step ``eta0 / (1 + decay * iteration)`` of a decaying SGD schedule."""
    return eta0 / (1.0 + decay * iteration)
