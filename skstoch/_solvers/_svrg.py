"""The SVRG outer loop (snapshot, full gradient, step rule, compiled inner loop) shared by the
variance-reduced estimators."""
import numpy as np

from ._monitor import check_finite_iterate
from ._result import SolverResult
from ._step_size import stabilized_bb_step
from ._stopping import relative_change


def svrg(x0, full_gradient, inner_loop, *, step_size, eta0, inner_iter, max_iter, tol,
         monitor, epsilon=0.0, stop=None, accept=None, record=None):
    """Run SVRG epochs with a fixed or stabilized Barzilai-Borwein step (paper 000, Alg. 1).

    Every epoch evaluates the objective and the full gradient at its snapshot, records it,
    tests the stopping rule and runs the compiled inner loop from the snapshot.

    Parameters
    ----------
    x0 : ndarray
        Starting point (not modified).
    full_gradient : callable
        ``full_gradient(x) -> (objective, gradient)`` over all samples.  ``gradient`` is an
        array shaped as x for ``step_size="sbb"`` and the default ``record``; otherwise it is
        handed as it is to ``inner_loop`` and the hooks (it may bundle more snapshot data).
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
        Maximum number of epochs (inner loops).
    tol : float
        Tolerance of the stopping rule.
    monitor : FitMonitor
        Its ``record`` stops the fit when the callback asks to; ``solver_name`` names the
        solver in errors.
    epsilon : float
        SBB stabilizer (0 gives SBB0).
    stop : callable or None
        ``stop(objective, gradient) -> float``, tested at every snapshot (after its record):
        the loop has converged when the value is <= tol.  The iterate after the last epoch
        is then evaluated and recorded too.  None: the relative change of the snapshot over
        an epoch, tested right after the inner loop (so the last iterate is not evaluated).
    accept : callable or None
        ``accept(objective, previous_objective) -> bool``, called after every epoch with the
        objective at the new iterate: False discards the epoch (the iterate goes back to the
        snapshot, whose objective and gradient are kept).  With ``accept`` the loop does not
        check the iterates for non-finite values (the hooks own that: a rejected non-finite
        iterate is never kept).
    record : callable or None
        ``record(epoch, x, objective, gradient, step) -> bool``, one call per snapshot;
        True stops the fit.  None: ``monitor.record`` of the epoch, objective, step and
        gradient norm.

    Returns
    -------
    SolverResult
        ``x`` the last kept iterate, ``n_iter`` the epochs run, ``criterion`` the last value
        of the stopping rule; ``extra["step_size"]`` the last step.
    """
    if record is None:
        def record(epoch, x, objective, grad, step):
            return monitor.record(epoch=epoch, objective=objective, step_size=step,
                                  grad_norm=float(np.linalg.norm(grad)), x=x)
    x = np.array(x0, dtype=np.float64, copy=True)
    step = float(eta0)
    prev_x = prev_g = objective = None
    change = np.inf
    n_iter = 0
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
