"""Driver of OrdinalEmbedding (paper 000): SVRG-SBB, SVRG, SGD, full-batch GD and L-BFGS on
the mean loss over comparisons, keeping the best iterate seen.  The only Python that calls the
``_ordinal`` kernels.

RNG streams of one fit: 0 = random initialisation, ``1 + epoch`` = sampling of that epoch.
"""
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._fast import _ordinal
from .._fast._comparison_loss import CKLLoss, GNMDSLoss, SOELoss, STELoss, TSTELoss
from ..utils import single_thread_blas
from ..utils._warnings import warn
from ._monitor import check_finite_iterate
from ._result import SolverResult
from ._step_size import curvature_step, decaying_step, probe_curvature
from ._stopping import BestObjectiveWindow, check_divergence
from ._svrg import svrg

__all__ = ["OrdinalParams", "OrdinalProblem", "satisfied", "solve", "warn_if_risen",
           "warn_line_search_failed"]

CRITERION = BestObjectiveWindow.name
COLUMN = "improvement"   # the history column holding the criterion
_INIT_STREAM = 0
_PAPER_SOLVERS = ("svrg_sbb", "svrg", "sgd", "gd")
_LBFGS_ABNORMAL = 2  # scipy's L-BFGS-B status of an abnormal line-search termination
_SGD_DECAY = 0.01     # SGD step eta0 / (1 + 0.01 epoch), as in the paper's reference scripts
_AUTO_EPSILON = 0.05  # epsilon='auto' is 0.05 times the probed curvature
# a plateau stop whose returned (last) iterate lies above the best recorded objective by more
# than this fraction of the decrease from the start warns: the objective rose, so the best
# one stopped improving because the steps overshoot, not because a minimum was reached.  On
# make_triplets (4 draws x 5 losses x 4 paper solvers) 7 fits were above it (0.006 to 0.094,
# each 0.017 to 0.10 of the start's gap above the tight L-BFGS objective; SOE with 'gd' 7.6
# to 12.6 points of held-out triplet accuracy short), 73 below (0.0038 at most); 'lbfgs'
# returns the best iterate: 0.
RISE_TOLERANCE = 0.005
_LOSSES = {"ste": STELoss, "tste": TSTELoss, "gnmds": GNMDSLoss, "ckl": CKLLoss,
           "soe": SOELoss}


@dataclass(frozen=True)
class OrdinalProblem:
    """The comparisons of one fit.

    Attributes
    ----------
    Q : ndarray of int32, shape (n_comparisons, 4)
        Canonical quadruplets from ``check_comparisons`` (every index below ``n_objects``).
    n_objects : int
    init : ndarray of shape (n_objects, n_components) or None
        Validated starting embedding; None draws ``N(0, 1 / n_components)`` coordinates.
    """

    Q: np.ndarray
    n_objects: int
    init: np.ndarray = None


@dataclass(frozen=True)
class OrdinalParams:
    """Resolved parameters of one fit (see ``OrdinalEmbedding`` for their meaning).

    ``loss_parameter`` is t-STE's ``alpha``, GNMDS's and SOE's ``margin`` or CKL's ``mu``
    (None for STE); ``inner_iter`` is ``m`` (an epoch runs ``max(m // batch_size, 1)``
    steps); ``eta0`` may be None and ``epsilon`` ``'auto'`` (probed by the driver).
    """

    n_components: int
    loss: str
    loss_parameter: float
    solver: str
    max_iter: int
    tol: float
    seed: int
    eta0: float = None
    epsilon: object = "auto"
    batch_size: int = 10
    inner_iter: int = 1
    dense_update: bool = False
    n_iter_no_change: int = 5


def solve(problem, params, monitor, state=None):
    """Fit an embedding to the comparisons of ``problem``.

    Parameters
    ----------
    problem : OrdinalProblem
    params : OrdinalParams
    monitor : FitMonitor
        Receives one record per epoch (iteration for ``'gd'`` and ``'lbfgs'``) at the iterate
        it starts from, and one at the returned iterate, each with ``iteration`` = epochs
        (iterations) completed; see ``OrdinalEmbedding.history_``.
    state : None
        OrdinalEmbedding keeps no solver state between fits (a warm start is ``init``).

    Returns
    -------
    SolverResult
        ``x``, centred: the last iterate for the paper's solvers (``'svrg_sbb'``, ``'svrg'``,
        ``'sgd'``, ``'gd'``: Algorithm 1 returns the last snapshot); for ``'lbfgs'`` the
        iterate with the lowest objective among those evaluated (the recorded ones and the
        last one);
        ``n_iter``, ``converged`` and ``criterion``: epochs (iterations) run and the relative
        decrease of the best objective over the last ``n_iter_no_change`` records against
        ``tol`` (the history column ``improvement``); ``extra``: ``objective`` (the mean loss of
        ``x``), ``eta0`` and ``epsilon`` (the values used; None for L-BFGS unless given).
    """
    # The only BLAS work of a fit is on (n_objects, n_components) arrays (norms, dots and
    # scipy's L-BFGS two-loop recursion): far too small for threads, and OpenBLAS's thread
    # wake-ups made each L-BFGS iteration ~25x slower on a busy 2-core machine.
    with single_thread_blas():
        objective = _Objective(_make_loss(params), problem.Q)
        x0 = _initial_embedding(problem, params)
        start = objective.start_value = _check_finite_start(objective, x0, params)
        eta0, epsilon = _resolve_steps(objective, x0, params)
        result = _RUNNERS[params.solver](objective, x0, eta0, epsilon, params, monitor)
        value = objective.value(result.x)
        _record_final(monitor, result, value)
        objective.offer(value, result.x)
    if params.solver in _PAPER_SOLVERS:     # the paper returns the last snapshot
        x, value = result.x, float(value)
    else:
        x, value = objective.best_x, objective.best_value
    return replace(result, x=np.ascontiguousarray(x - x.mean(axis=0)),
                   criterion_name=CRITERION,
                   extra={"objective": value, "eta0": eta0, "epsilon": epsilon,
                          "start_objective": float(start),
                          "best_objective": objective.best_value,
                          "line_search_failed": result.extra.get("line_search_failed", False)})


def warn_line_search_failed(result, solver_name, tol):
    """``ConvergenceWarning`` when scipy's L-BFGS-B ended on an abnormal line-search
    termination: no step along the search direction met the Wolfe conditions, so the fit
    stopped there whatever ``max_iter``."""
    value = result.criterion
    state = (f"is {value:.3g} (tol={tol:.3g})" if np.isfinite(value) else
             f"could not be measured yet (tol={tol:.3g})")
    warn(
        f"{solver_name} stopped after {result.n_iter} iterations because L-BFGS's line "
        f"search failed: no step along its search direction decreased the objective enough "
        f"(scipy's ABNORMAL termination); the relative decrease of the best objective "
        f"{state}. The objective is either flat at float64 precision there (tol below what "
        f"float64 resolves: loosen tol) or badly scaled (e.g. an init with huge "
        f"coordinates: rescale it). A larger max_iter would not help.",
        ConvergenceWarning)


def warn_if_risen(result, solver_name, tol):
    """``ConvergenceWarning`` when a plateau stop (``result.converged``) returned an iterate
    whose objective is above the lowest one recorded by more than :data:`RISE_TOLERANCE` of
    the decrease from the start, and by more than ``tol`` resolves (``tol * max(|best|,
    1)``, the scale of the stopping rule: a warm start near a minimum decreases little):
    the best objective stopped improving because the objective rose (steps too large), not
    at a minimum."""
    extra = result.extra
    best = extra["best_objective"]
    excess = extra["objective"] - best
    drop = extra["start_objective"] - best
    # no decrease at all (the best is the start) and a rise: the fit only went up
    rise = excess / drop if drop > 0.0 else (np.inf if excess > 0.0 else 0.0)
    if not (result.converged and rise > RISE_TOLERANCE
            and excess > tol * max(abs(best), 1.0)):
        return
    how = (f"above the lowest one recorded ({best:.4g}) by {rise:.2g} of the decrease from "
           f"the start (above {RISE_TOLERANCE:g})" if drop > 0.0 else
           f"above its value at the start ({best:.4g}), the lowest one recorded")
    warn(
        f"{solver_name} stopped because the best objective improved by less than "
        f"tol={tol:.3g}, but the objective rose meanwhile: the returned embedding (the "
        f"last iterate) has objective {extra['objective']:.4g}, {how}. The steps "
        "overshoot: pass a smaller eta0, or solver='lbfgs' (which returns the best iterate).",
        ConvergenceWarning)


def _check_finite_start(objective, x0, params):
    """ValueError when the objective overflows at the starting embedding (a huge init, or a
    margin / mu whose square overflows): no step size can help, so the divergence message
    of the loops ('decrease the step size') would mislead.  Returns the objective at ``x0``:
    one gradient pass (kept by the objective) for the solvers that start with the gradient at
    ``x0``, one loss pass for ``'sgd'``, which never needs it."""
    if params.solver == "sgd":
        value = objective.value(x0)
    else:
        value, _ = objective.value_and_gradient(x0)
    if not np.isfinite(value):
        parameter = ("" if params.loss_parameter is None else
                     f" and its parameter {params.loss_parameter:.3g} (margin, alpha or mu)")
        raise ValueError(
            f"The objective is not finite ({value}) at the initial embedding: the "
            f"{params.loss!r} loss{parameter} overflows float64 for these squared distances "
            f"(largest |init| = {float(np.max(np.abs(x0))):.3g}); rescale init or use a smaller "
            f"loss parameter.")
    return value


def _record_final(monitor, result, value):
    """Record the returned iterate unless a record holds it already (the loops record at the
    start of an iteration; a callback stop or L-BFGS leaves the last iterate recorded).  The
    columns not evaluated there (step, gradient norm) are NaN."""
    last = monitor.records[-1] if monitor.records else None
    if last is None or last["iteration"] >= result.n_iter:
        return
    values = {key: np.nan for key in last if key != "time"}
    values.update(iteration=result.n_iter, epoch=result.n_iter, objective=value)
    monitor.record(x=result.x, **values)


def satisfied(Q, X):
    """``(out, count)``: ``out[q] = 1`` where comparison ``q`` holds strictly in ``X``."""
    out = np.empty(Q.shape[0], dtype=np.int8)
    return out, _ordinal.satisfied(Q, X, out)


def _make_loss(params):
    loss = _LOSSES[params.loss]
    return loss() if params.loss_parameter is None else loss(float(params.loss_parameter))


def _initial_embedding(problem, params):
    if problem.init is not None:
        return np.array(problem.init, dtype=np.float64, copy=True, order="C")
    X0 = np.empty((problem.n_objects, params.n_components), dtype=np.float64)
    _ordinal.normal_fill(X0, 1.0 / np.sqrt(params.n_components), params.seed, _INIT_STREAM)
    return X0


def _resolve_steps(objective, x0, params):
    """``(eta0, epsilon)`` the solver uses: the given values, or from the curvature probed
    along the first gradient (passes at ``x0``, whose gradient the solver's start reuses, and at
    one further point).  L-BFGS uses neither, and 'svrg', 'sgd' and 'gd' given ``eta0`` no
    epsilon: given values are reported, missing ones are None (no probe)."""
    eta0, epsilon = params.eta0, params.epsilon
    # only 'svrg_sbb' steps with epsilon; the others use it only in the probed eta0
    if params.solver == "lbfgs" or (eta0 is not None and params.solver != "svrg_sbb"):
        return (None if eta0 is None else float(eta0),
                None if epsilon == "auto" else float(epsilon))
    if eta0 is None or epsilon == "auto":
        # the probe's second point is no iterate (never the best one); keep x0's gradient
        # for the solver's start
        kappa0 = probe_curvature(partial(objective.value_and_gradient, keep=False), x0)
        if epsilon == "auto":
            epsilon = _AUTO_EPSILON * kappa0
        if eta0 is None:
            eta0 = curvature_step(kappa0, epsilon)
            if params.solver != "gd":
                eta0 /= params.inner_iter
    return float(eta0), float(epsilon)


class _Objective:
    """Mean loss over the comparisons, its gradient, and the lowest-objective iterate offered
    (the first one on ties).

    The last evaluation is kept: a fit asks again at the same point (the start check, then
    the step probe, the first snapshot, L-BFGS's first step and scipy's first call; the
    returned iterate after L-BFGS's last call), and each ask would be a pass over every
    comparison."""

    def __init__(self, loss, Q):
        self.loss = loss
        self.Q = Q
        self.inv_m = 1.0 / Q.shape[0]
        self.best_value = np.inf
        self.best_x = None
        self.start_value = None     # at the initial embedding, set by solve
        self._last = (None, None, None)     # x, value, gradient (None: not computed)

    def _cached(self, x):
        last_x, value, grad = self._last
        if last_x is not None and last_x.shape == x.shape and np.array_equal(last_x, x):
            return value, grad
        return None, None

    def value(self, x):
        value, _ = self._cached(x)
        if value is None:
            value = _ordinal.loss_sum(self.loss, self.Q, x) * self.inv_m
            self._last = (np.array(x, copy=True), value, None)
        return value

    def value_and_gradient(self, x, keep=True):
        """The mean loss at ``x`` and its gradient; ``keep=False`` leaves the kept
        evaluation as it is."""
        value, grad = self._cached(x)
        if grad is None:
            grad = np.empty_like(x)
            value = (_ordinal.full_gradient(self.loss, self.Q, x, grad, self.inv_m)
                     * self.inv_m)
            if keep:
                self._last = (np.array(x, copy=True), value, grad.copy())
            return value, grad
        return value, grad.copy()

    def tracked_gradient(self, x, keep=True):
        """:meth:`value_and_gradient`, offering ``x`` as the best iterate."""
        value, grad = self.value_and_gradient(x, keep)
        self.offer(value, x)
        return value, grad

    def offer(self, value, x):
        if value < self.best_value or self.best_x is None:
            self.best_value = float(value)
            self.best_x = np.array(x, copy=True)


def _n_steps(params):
    return max(params.inner_iter // params.batch_size, 1)


def _svrg(objective, x0, eta0, epsilon, params, monitor):
    """``'svrg_sbb'`` (paper 000, Algorithm 1) and ``'svrg'`` (fixed step) on the shared loop."""
    tables = _ordinal.InnerLoop(objective.loss, objective.Q, *x0.shape, _n_steps(params),
                                params.batch_size, params.seed, params.dense_update)

    def inner_loop(x, snapshot, grad, step, epoch):
        _ordinal.svrg_inner(tables, x, snapshot, grad, step, 1 + epoch)
        return x

    stop = _stop(params)

    def record(epoch, x, value, grad, step):
        check_divergence(value, objective.start_value, monitor.solver_name, f"epoch {epoch}")
        if stop.reached or epoch == params.max_iter:
            step = np.nan    # no epoch starts at the last record
        return monitor.record(iteration=epoch, epoch=epoch, objective=value, step_size=step,
                              grad_norm=float(np.linalg.norm(grad)),
                              **{COLUMN: stop.value}, x=x)

    return svrg(x0, objective.tracked_gradient, inner_loop,
                step_size="sbb" if params.solver == "svrg_sbb" else "fixed", eta0=eta0,
                inner_iter=params.inner_iter, max_iter=params.max_iter, tol=params.tol,
                monitor=monitor, epsilon=epsilon,
                stop=lambda value, grad: _criterion(stop, value), record=record)


def _sgd(objective, x0, eta0, epsilon, params, monitor):
    """Mini-batch SGD baseline (paper 000 'ncvx SGD'), step ``eta0 / (1 + 0.01 epoch)``."""
    tables = _ordinal.InnerLoop(objective.loss, objective.Q, *x0.shape, _n_steps(params),
                                params.batch_size, params.seed)

    def evaluate(x, epoch):
        step = decaying_step(eta0, epoch, _SGD_DECAY)
        value = objective.value(x)
        objective.offer(value, x)
        return {"objective": value, "step_size": step}, step

    def advance(x, epoch, step):
        x = x.copy()
        _ordinal.sgd_inner(tables, x, step, 1 + epoch)
        return x

    return _iterate(x0, evaluate, advance, params, monitor, "epoch", objective.start_value)


def _gd(objective, x0, eta0, epsilon, params, monitor):
    """Full-batch gradient descent baseline with a fixed step (paper 000 'ncvx Batch')."""

    def evaluate(x, it):
        value, grad = objective.tracked_gradient(x)
        return {"objective": value, "step_size": eta0,
                "grad_norm": float(np.linalg.norm(grad))}, grad

    def advance(x, it, grad):
        return x - eta0 * grad

    return _iterate(x0, evaluate, advance, params, monitor, "iteration",
                    objective.start_value)


def _iterate(x, evaluate, advance, params, monitor, unit, start):
    """Outer loop of the ``'sgd'`` and ``'gd'`` baselines: record at the iterate
    (``evaluate(x, it) -> (record, work)``), stop on the criterion of :func:`_stop`, else
    step (``advance(x, it, work) -> x_new``, a new array); ``start`` is the objective at the
    initial embedding (:func:`check_divergence`)."""
    stop = _stop(params)
    n_iter = 0
    for it in range(params.max_iter + 1):
        values, work = evaluate(x, it)
        check_divergence(values["objective"], start, monitor.solver_name, f"{unit} {it}")
        stop.update(values["objective"])
        if stop.reached or it == params.max_iter:
            values["step_size"] = np.nan    # no step is taken from the last record
        if (monitor.record(iteration=it, epoch=it, **values, **{COLUMN: stop.value}, x=x)
                or stop.reached or it == params.max_iter):
            break
        x = advance(x, it, work)
        n_iter = it + 1
        check_finite_iterate(x, monitor.solver_name, f"{unit} {it}")
    return SolverResult(x=x, n_iter=n_iter, converged=stop.reached, criterion=stop.value)


def _criterion(stop, value):
    stop.update(value)
    return stop.value


def _stop(params):
    """The stopping rule of every solver: the best objective improved by at most ``tol``
    (relative) over the last ``n_iter_no_change`` records."""
    return BestObjectiveWindow(params.tol, params.n_iter_no_change)


def _lbfgs(objective, x0, eta0, epsilon, params, monitor):
    """Full-batch L-BFGS (scipy's L-BFGS-B without bounds) on the compiled one-pass loss and
    gradient.  Not in the paper: a deterministic quasi-Newton alternative to SVRG-SBB.

    Stops when the criterion of :func:`_stop` is at most ``tol`` (as the other solvers), when
    scipy reports convergence (gradient or objective stagnation at machine precision) or after
    ``max_iter`` iterations.  The history has no ``step_size``: scipy does not report the
    accepted line-search step (its callback receives only the iterate and the objective).
    """
    from scipy.optimize import minimize

    value, _ = objective.value_and_gradient(x0)
    objective.offer(value, x0)
    progress = _LbfgsProgress(objective, x0, _stop(params), monitor)
    progress.stop.update(value)
    if monitor.record(iteration=0, epoch=0, objective=value, **{COLUMN: progress.stop.value},
                      x=x0):
        return SolverResult(x=x0.copy(), n_iter=0, converged=False, criterion=np.inf)
    result = minimize(progress.fun, x0.ravel(), jac=True, method="L-BFGS-B",
                      callback=progress.callback,
                      options={"maxiter": params.max_iter, "ftol": 0.0, "gtol": 0.0,
                               "maxfun": 20 * max(params.max_iter, 1), "maxls": 40})
    x = result.x.reshape(x0.shape).copy()
    check_finite_iterate(x, monitor.solver_name, f"iteration {progress.n_iter}")
    stop = progress.stop
    converged = stop.reached or (result.success and not progress.stopped
                                 and progress.n_iter < params.max_iter)
    return SolverResult(x=x, n_iter=progress.n_iter, converged=bool(converged),
                        criterion=stop.value,
                        extra={"line_search_failed": result.status == _LBFGS_ABNORMAL})


class _LbfgsProgress:
    """scipy's two hooks for :func:`_lbfgs`: ``fun`` (objective and gradient of a flat
    iterate) and ``callback`` (per accepted iterate: offer it as the best one, record it, stop
    on the criterion or when the user's callback asks).  The line search's trial points
    are never offered as the best iterate."""

    def __init__(self, objective, x0, stop, monitor):
        self.objective = objective
        self.monitor = monitor
        self.shape = x0.shape
        self.stop = stop
        self.n_iter = 0
        self.stopped = False

    def fun(self, v):
        value, grad = self.objective.value_and_gradient(v.reshape(self.shape))
        return value, grad.ravel()

    def callback(self, intermediate_result):
        v = intermediate_result.x
        x = v.reshape(self.shape)
        self.n_iter += 1
        value = float(intermediate_result.fun)
        self.objective.offer(value, x)
        self.stop.update(value)
        if (self.monitor.record(iteration=self.n_iter, epoch=self.n_iter, objective=value,
                                **{COLUMN: self.stop.value}, x=x)
                or self.stop.reached):
            self.stopped = True
            raise StopIteration


_RUNNERS = {"svrg_sbb": _svrg, "svrg": _svrg, "sgd": _sgd, "gd": _gd, "lbfgs": _lbfgs}
