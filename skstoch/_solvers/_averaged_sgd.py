"""Averaged SGD with doubling checkpoints (the baselines of paper 001: projected SGD and
OneProj, for ConstrainedLasso and LMNNMetric).

One continuous SGD run is cut into chunks of doubling length (8, 16, 32, ...: the Epro
epoch boundaries, so that the baselines' histories line up with Epro's).  A compiled chunk
continues the run; at each checkpoint the running average of the iterates, mapped to the
point it stands for (e.g. projected onto the feasible set), is recorded, and the loop may
stop on the relative change of that point.  The output is the last point.
"""
import numpy as np

from ._epoch_projection import epoch_lengths, record_checkpoint
from ._monitor import check_finite_iterate
from ._result import SolverResult
from ._stopping import relative_change


def checkpoint_lengths(budget, first=8, *, merge_leftover=False):
    """Chunk lengths ``first, 2 first, 4 first, ...`` that sum to ``budget``.

    The leftover after the last whole doubling chunk is a last chunk of its own, or, with
    ``merge_leftover``, is added to the last whole chunk (as :func:`epoch_lengths` with
    ``use_full_budget``; a budget below ``first`` is one chunk).
    """
    if merge_leftover:
        return epoch_lengths(budget, first, use_full_budget=True) or [int(budget)]
    lengths = []
    used, chunk = 0, int(first)
    while used < budget:
        n_steps = min(chunk, budget - used)
        lengths.append(n_steps)
        used += n_steps
        chunk *= 2
    return lengths


def averaged_sgd(x0, run_chunk, lengths, *, output, step_size, monitor, objective=None,
                 objective_every_checkpoint=True, tol=None, columns=None, stop=None):
    """Run averaged SGD in chunks of the given lengths, one record per checkpoint.

    Parameters
    ----------
    x0 : ndarray
        The start (copied: the reference of the first relative change).
    run_chunk : callable
        ``run_chunk(t0, n_steps, point) -> (iterate, average)``: the compiled stochastic
        gradients ``t0 + 1 .. t0 + n_steps`` of the run; returns the last raw iterate
        (checked for divergence) and the running average of all iterates so far.
        ``point`` is the previous checkpoint's point (None before the first), e.g. to
        refresh the data or a penalty from it.
    lengths : list of int
        The chunk lengths (:func:`checkpoint_lengths`).
    output : callable
        ``output(average) -> point``: what a checkpoint stands for (the projected average
        for a constrained problem; the average itself when the iterates stay feasible).
    step_size : callable
        ``step_size(t) -> float``: the step recorded at a checkpoint after ``t`` gradients.
    monitor : FitMonitor
    objective : callable, optional
        ``objective(point) -> float`` for the history.
    objective_every_checkpoint : bool
        False evaluates ``objective`` only for the last record (the last checkpoint, or the
        one whose relative change reaches ``tol``), saving a full pass per checkpoint.
    tol : float or None
        Stop when the point's relative change between two checkpoints is <= tol.
    columns : callable, optional
        ``columns(point) -> dict`` of further history columns, evaluated when
        ``objective`` is.
    stop : callable, optional
        ``stop(record) -> bool`` on each checkpoint's record; True ends the run.

    Returns
    -------
    SolverResult
        ``x`` the last point, ``n_iter`` the stochastic gradients run (the ``iteration``
        column of the records counts the same), ``criterion`` the last relative change;
        ``extra`` holds ``average`` (the last running average) and ``n_checkpoints``.
    """
    if not lengths:
        raise ValueError("averaged_sgd needs at least one chunk")
    previous = np.array(x0, dtype=np.float64, copy=True)   # run_chunk may update x0
    used = 0
    change = np.inf
    point = average = None
    k = 0
    for k, n_steps in enumerate(lengths):
        iterate, average = run_chunk(used, n_steps, point)
        used += n_steps
        check_finite_iterate(iterate, monitor.solver_name, f"iteration {used}")
        point = output(average)
        change = relative_change(point, previous)
        previous = point
        record = dict(epoch=k, epoch_length=n_steps, n_gradients=used, iteration=used,
                      step_size=step_size(used), relative_change=change)
        last = k == len(lengths) - 1 or (tol is not None and change <= tol)
        halt = record_checkpoint(monitor, point, record, objective_every_checkpoint or last,
                                 objective, columns, stop)
        if halt or (tol is not None and change <= tol):
            break
    converged = change <= tol if tol is not None else used == sum(lengths)
    return SolverResult(x=point, n_iter=used, converged=converged, criterion=change,
                        criterion_name="relative change of the averaged output",
                        extra={"average": average, "n_checkpoints": k + 1})
