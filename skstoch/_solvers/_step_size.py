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


def step_schedule(learning_rate, eta0, power_t, theta, n_iter):
    """The steps gamma_0, ..., gamma_{T-1} of a stochastic functional-gradient schedule.

    ``"constant"``: ``eta0``; ``"invscaling"``: ``eta0 / (t + 1)^power_t``; ``"theory"``:
    ``theta / T^(3/4)`` (paper 003, Theorems 1-2), which must be at most 1 (ValueError
    otherwise).
    """
    if learning_rate == "theory" and theta > n_iter ** 0.75:
        raise ValueError(
            f"learning_rate='theory' uses step theta / T^(3/4), which must be at most 1: "
            f"theta={theta} is larger than T^(3/4)={n_iter ** 0.75:.4g} for T={n_iter}."
        )
    t = np.arange(n_iter, dtype=np.float64)
    if learning_rate == "constant":
        return np.full(n_iter, float(eta0))
    if learning_rate == "invscaling":
        return eta0 / (t + 1.0) ** power_t
    return np.full(n_iter, theta / n_iter ** 0.75)


def row_loss_step(n_rows, weight, *, row_step=0.2, cap=0.02):
    """Constant step for a loss weighted ``weight`` as a mean over ``n_rows`` rows.

    ``min(cap, row_step * n_rows / weight)``: each row (weight ``weight / n_rows``) gets the
    loss step ``row_step``, and the step is at most ``cap`` (with shrinkage ``1 - step`` per
    iteration, a memory of about ``1 / cap`` iterations).
    """
    return min(cap, row_step * n_rows / weight)


def cap_steps(steps, curvature):
    """``min(steps, 1 / (1 + curvature))``: the update ``f <- (1 - g) f - g grad`` of a term of
    curvature ``curvature`` (plus the unit-curvature regulariser) is stable for
    ``g (1 + curvature) < 2``; the cap keeps every step within that with a margin of 2."""
    return np.minimum(steps, 1.0 / (1.0 + curvature))
