"""The SVRG outer loop (snapshot, full gradient, step rule, compiled inner loop) shared by the
variance-reduced estimators."""
from functools import partial

import numpy as np

from ._monitor import check_finite_iterate
from ._result import SolverResult
from ._step_size import stabilized_bb_step
from ._stopping import relative_change


def svrg(x0, full_gradient, inner_loop, *, step_size, eta0, inner_iter, max_iter, tol,
         monitor, epsilon=0.0, stop=None, accept=None, record=None):
    """Run SVRG epochs with a fixed or stabilized Barzilai-Borwein step (paper 000, Alg. 1).

    Each epoch evaluates and records its snapshot, tests the stop, then runs the inner loop.

    Parameters
    ----------
    x0 : ndarray
        Starting point (not modified).
    full_gradient : callable
        ``full_gradient(x) -> (objective, gradient)`` over all samples.  ``gradient`` is shaped
        as x for ``step_size="sbb"`` and the default ``record``; otherwise it may bundle more
        snapshot data, handed as it is to ``inner_loop`` and the hooks.
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
    max_iter, tol : int, float
        Maximum number of epochs (inner loops); tolerance of the stopping rule.
    monitor : FitMonitor
        Names the solver in errors; records with the default ``record``.
    epsilon : float
        SBB stabilizer (0 gives SBB0).
    stop : callable or None
        ``stop(objective, gradient) -> float`` tested at every snapshot, after its record
        (converged when <= tol); the iterate after the last epoch is then evaluated and
        recorded too.  None: the relative change of the snapshot over an epoch, tested right
        after the inner loop (the last iterate is not evaluated).
    accept : callable or None
        ``accept(objective, previous_objective) -> bool`` after every epoch: False discards
        the epoch (back to the snapshot, its objective and gradient kept).  The loop then
        leaves the check for non-finite iterates to the hooks.
    record : callable or None
        ``record(epoch, x, objective, gradient, step) -> bool`` once per snapshot; True stops
        the fit.  None: ``monitor.record`` of the epoch, objective, step and gradient norm.

    Returns
    -------
    SolverResult
        ``x`` the last kept iterate, ``n_iter`` the epochs run, ``criterion`` the last value
        of the stopping rule, ``extra["step_size"]`` the last step.
    """
    record = record or partial(_record_epoch, monitor)
    x = np.array(x0, dtype=np.float64, copy=True)
    step = float(eta0)
    prev_x = prev_g = objective = None
    change, n_iter = np.inf, 0
    for epoch in range(max_iter if stop is None else max_iter + 1):
        new_objective, new_grad = full_gradient(x)
        if accept is None or prev_x is None or accept(new_objective, objective):
            objective, grad = new_objective, new_grad
        else:
            x = prev_x
        if step_size == "sbb" and prev_x is not None:
            step, _ = stabilized_bb_step(
                x - prev_x, grad - prev_g, inner_iter=inner_iter, epsilon=epsilon, previous=step
            )
        if stop is not None:
            change = stop(objective, grad)
        if (record(epoch, x, objective, grad, step) or epoch == max_iter
                or (stop is not None and change <= tol)):
            break
        prev_x, prev_g = x.copy(), grad
        x = inner_loop(x, prev_x, grad, step, epoch)
        n_iter = epoch + 1
        if accept is None:
            check_finite_iterate(x, monitor.solver_name, f"epoch {epoch}")
        if stop is None:
            change = relative_change(x, prev_x)
            if change <= tol:
                break
    return SolverResult(x=x, n_iter=n_iter, converged=change <= tol, criterion=change,
                        extra={"step_size": step})


def _record_epoch(monitor, epoch, x, objective, grad, step):
    """The default record: epoch, objective, step and full-gradient norm."""
    return monitor.record(epoch=epoch, objective=objective, step_size=step,
                          grad_norm=float(np.linalg.norm(grad)), x=x)
