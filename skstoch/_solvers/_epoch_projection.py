"""Epoch-projection SGD (paper 001, Algorithms 1 and 3): unprojected epochs of doubling
length, one projection of each epoch's output, step divided per epoch."""
import numpy as np

from ._monitor import DivergenceError, check_finite_iterate
from ._result import SolverResult
from ._stopping import relative_change

# no stable epoch's output is this many times larger than the previous epoch's (each starts
# from the projection of the last, with a smaller step): a fixed step too large for the data
# grows the iterates geometrically, and the projection of such an output is decided by its
# rounding (0 on the l1 ball), which only this growth tells from a tiny feasible set
GROWTH_LIMIT = 1e8


def _check_growth(x_hat, previous, solver_name, epoch):
    size = np.max(np.abs(x_hat), initial=0.0)
    before = 0.0 if previous is None else np.max(np.abs(previous), initial=0.0)
    if before > 0 and size > GROWTH_LIMIT * before:
        raise DivergenceError(
            f"{solver_name} diverged: the output of epoch {epoch} ({size:.3g} at most) is "
            f"more than {GROWTH_LIMIT:g} times the previous epoch's; decrease the step size "
            f"(eta0 / learning rate).")


def epoch_lengths(budget, first_epoch_length, *, use_full_budget=False, extra_per_epoch=0):
    """Lengths T_k = T1 2^(k-1) of the epochs that fit into ``budget`` gradient calls.

    The paper runs an epoch only if it fits whole (``sum_k (T_k + extra_per_epoch) <= budget``),
    which leaves up to half of the budget unused.  With ``use_full_budget`` the leftover
    is added to the last epoch.  ``extra_per_epoch`` is 1 for ORDA (T_k + 1 gradient calls).
    """
    lengths = []
    used = 0
    length = int(first_epoch_length)
    while used + length + extra_per_epoch <= budget:
        lengths.append(length)
        used += length + extra_per_epoch
        length *= 2
    if use_full_budget and lengths and used < budget:
        lengths[-1] += budget - used
    return lengths


def record_checkpoint(monitor, x, record, evaluate, objective, columns, stop):
    """Record one checkpoint of ``x`` (with ``evaluate``, ``objective(x)`` and
    ``columns(x)`` added to ``record`` first, for those given); whether the run must stop
    (the monitor's answer, or ``stop(record)``)."""
    if objective is not None and evaluate:
        record["objective"] = objective(x)
    if columns is not None and evaluate:
        record.update(columns(x))
    halt = monitor.record(x=x, **record)
    if stop is not None and stop(record):
        halt = True
    return halt


def epoch_projection(x0, run_epoch, project, *, budget, first_epoch_length, eta0,
                     step_decay, monitor, objective=None, tol=None, use_full_budget=False,
                     extra_per_epoch=0, stop=None, record_iteration=False,
                     objective_every_epoch=True, columns=None):
    """Run epoch-projection SGD.

    Parameters
    ----------
    x0 : ndarray
        Feasible starting point.
    run_epoch : callable
        ``run_epoch(x_start, eta, n_steps, epoch) -> x_hat``: the compiled unprojected epoch,
        returning the epoch's output (the average of its iterates for Epro-SGD, the last ORDA
        iterate for Epro-ORDA).
    project : callable
        ``project(x) -> x`` onto the feasible set.
    budget : int
        Total stochastic gradient calls allowed (T).
    first_epoch_length : int
        T1 (8 for Epro-SGD and 16 for Epro-ORDA in the paper's theorems).
    eta0 : float
        Step of the first epoch.
    step_decay : float
        Divisor of the step between epochs (2 for Epro-SGD, sqrt(2) for Epro-ORDA).
    monitor : FitMonitor
    objective : callable, optional
        ``objective(x) -> float`` evaluated at each projected point for the history.
    tol : float or None
        Stop early when the projected point's relative change is <= tol.
    use_full_budget, extra_per_epoch
        See :func:`epoch_lengths`.
    stop : callable, optional
        A further stopping rule (``skstoch._solvers._stopping``): ``stop(record) -> bool``
        on each epoch's record; True ends the loop.
    record_iteration : bool
        Add the column ``iteration`` (stochastic gradients used so far, the unit of
        ``n_iter``) to every record.
    objective_every_epoch : bool
        False evaluates ``objective`` only for the last record (the last epoch, or the
        epoch whose relative change reaches ``tol``), saving a full pass per epoch.
    columns : callable, optional
        ``columns(x) -> dict`` of further history columns at the projected point (e.g. a
        duality gap that ``stop`` reads), evaluated when ``objective`` is.
    """
    x = project(np.array(x0, dtype=np.float64, copy=True))
    eta = float(eta0)
    used = 0
    change = np.inf
    lengths = epoch_lengths(budget, first_epoch_length, use_full_budget=use_full_budget,
                            extra_per_epoch=extra_per_epoch)
    if not lengths:
        # silently returning x0 would look like a converged fit
        raise ValueError(
            f"max_iter={budget} is smaller than the first epoch "
            f"({int(first_epoch_length) + extra_per_epoch} stochastic gradients), so no epoch "
            "would run: raise max_iter or shorten the first epoch."
        )
    n_epochs, previous = 0, None
    for epoch, n_steps in enumerate(lengths):
        x_hat = run_epoch(x, eta, n_steps, epoch)
        check_finite_iterate(x_hat, monitor.solver_name, f"epoch {epoch}")
        _check_growth(x_hat, previous, monitor.solver_name, epoch)
        previous = x_hat
        x_new = project(x_hat)
        used += n_steps + extra_per_epoch
        n_epochs = epoch + 1
        change = relative_change(x_new, x)
        x = x_new
        record = dict(epoch=epoch, step_size=eta, epoch_length=n_steps, n_gradients=used,
                      relative_change=change)
        if record_iteration:
            record["iteration"] = used
        # an epoch of one step averages only the point it started from: no change to test
        settled = tol is not None and n_steps > 1 and change <= tol
        last = epoch == len(lengths) - 1 or settled
        halt = record_checkpoint(monitor, x, record, objective_every_epoch or last, objective,
                                 columns, stop)
        eta /= step_decay
        if halt or settled:
            break
    converged = tol is None or change <= tol or n_epochs == len(lengths)
    return SolverResult(x=x, n_iter=used, converged=converged, criterion=change,
                        extra={"n_epochs": n_epochs, "n_projections": n_epochs,
                               "budget_used": used, "budget": budget})
