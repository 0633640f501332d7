"""The SVRG outer loop (snapshot, full gradient, step rule, compiled inner loop) shared by the
variance-reduced estimators."""
import numpy as np

from ._monitor import check_finite_iterate
from ._result import SolverResult
from ._step_size import stabilized_bb_step
from ._stopping import relative_change


def svrg(x0, full_gradient, inner_loop, *, step_size, eta0, inner_iter, max_iter, tol,
         monitor, epsilon=0.0):
    """Run SVRG epochs with a fixed or stabilized Barzilai-Borwein step (paper 000, Alg. 1).

    Parameters
    ----------
    x0 : ndarray
        Starting point (not modified).
    full_gradient : callable
        ``full_gradient(x) -> (objective, gradient)`` over all samples (gradient shaped as x).
    inner_loop : callable
        ``inner_loop(x, snapshot, full_grad, step, epoch) -> x`` runs the compiled inner
        iterations from ``x`` (it may update ``x`` in place and return it).
    step_size : {"sbb", "fixed"}
        ``"sbb"``: the step of eq. 17 from the second epoch on (``eta0`` in the first);
        ``"fixed"``: ``eta0`` throughout (plain SVRG).
    eta0 : float
        Step of the first epoch (of every epoch with ``"fixed"``).
    inner_iter : int
        m, the number of inner iterations (the 1/m factor of eq. 17).
    max_iter : int
        Maximum number of epochs.
    tol : float
        Stop when the relative change of the snapshot between two epochs is <= tol.
    monitor : FitMonitor
        Receives one record per epoch (objective and step size at the snapshot).
    epsilon : float
        SBB stabilizer (0 gives SBB0).
    """
    x = np.array(x0, dtype=np.float64, copy=True)
    step = float(eta0)
    prev_x = prev_g = None
    change = np.inf
    n_iter = 0
    for epoch in range(max_iter):
        objective, grad = full_gradient(x)
        if step_size == "sbb" and prev_x is not None:
            step, _ = stabilized_bb_step(
                x - prev_x, grad - prev_g, inner_iter=inner_iter, epsilon=epsilon, previous=step
            )
        if monitor.record(epoch=epoch, objective=objective, step_size=step,
                          grad_norm=float(np.linalg.norm(grad)), x=x):
            break
        prev_x, prev_g = x.copy(), grad
        x = inner_loop(x, prev_x, grad, step, epoch)
        n_iter = epoch + 1
        check_finite_iterate(x, monitor.solver_name, f"epoch {epoch}")
        change = relative_change(x, prev_x)
        if change <= tol:
            break
    return SolverResult(x=x, n_iter=n_iter, converged=change <= tol, criterion=change,
                        extra={"step_size": step})
