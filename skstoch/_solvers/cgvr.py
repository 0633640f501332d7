"""Driver of CGVR (Jin et al., paper 004) and of the paper's baselines, for one binary or
single-output head of :class:`~skstoch.CGVRClassifier` / :class:`~skstoch.CGVRRegressor`.

``solve`` minimises ``f(x) = (1/n) sum_i s_i loss(X_i . w + b, y_i) + (alpha/2) ||w||^2
(+ (alpha/2) b^2)`` over ``x = (w, b)`` with one of four solvers:

* ``"cgvr"``: Algorithm 3, the shared SVRG outer loop (``_svrg.svrg``) around the compiled
  CG inner loop, with the safeguard that rejects an outer iteration which did not decrease f;
* ``"svrg"`` / ``"minibatch_svrg"``: the same outer loop around fixed-step SVRG inner steps;
* ``"cg"``: full-batch nonlinear CG, one CG step per outer iteration.

Every solver stops when ``max |grad f| <= tol`` (as scikit-learn's lbfgs ``gtol``) and
records one history entry per outer iteration (entry 0 is the start).  The warm-start state
(restart gradient ``h``, batch size, step cap) comes in as ``state`` and goes out as
``SolverResult.state``.
"""
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .._fast import _cgvr
from .._fast._loss import Hinge, LogLoss, SquaredError, SquaredHinge
from ..utils import check_allocation
from ..utils._dataset import checked_row_sqnorms, dataset_matrix
from ._fit_cache import FitCache
from ._monitor import SCALERS, check_finite_iterate
from ._result import SolverResult
from ._stopping import check_divergence
from ._stationarity import column_moments, gradient_ratio, warn_if_far
from ._svrg import svrg

LOSSES = {
    "log_loss": LogLoss,
    "squared_hinge": SquaredHinge,
    "hinge": Hinge,
    "squared_error": SquaredError,
}
BETA_RULES = tuple(_cgvr.BETA_RULES)
LINE_SEARCHES = tuple(_cgvr.LINE_SEARCHES)
SOLVERS = ("cgvr", "cg", "svrg", "minibatch_svrg")
# the estimators' solver='cgvr_paper': the paper's Algorithm 3, i.e. 'cgvr' with the line
# search on the mini-batch objective (Eqs. 11-12) and no safeguard
PAPER_SOLVER = "cgvr_paper"
CRITERION = "max |gradient|"
# times a search along -grad that found no decrease is repeated on a direction shorter by
# 2^zoom_max_iter (full-batch CG, see _cg_loop), or an inner loop that took no step lowers
# the first trial step of the line searches by that factor (CGVR, see shrink_first_step):
# at least this, more when the rows' scale needs it (rescale_limit)
MAX_RESCALES = 3
# the largest curvature of the losses (the squared hinge's), in the bound of rescale_limit
MAX_LOSS_CURVATURE = 2.0
# the history columns of the inner loops, NaN in the entry of the start (iteration 0)
INNER_COLUMNS_AT_START = dict.fromkeys(("restarts", "skipped_steps", "line_search_evals",
                                        "rejected_epochs", "step_cap", "batch"), np.nan)
# tol bounds max |gradient| in the units of X and y: after a tol stop the gradient measured
# on standardized features (relative to its value at zero) is checked against
# max(FAR_FROM_OPTIMUM, 100 tol) (it scales with tol).  Default fits stop at 2e-4 to 5e-4
# on standardized breast cancer, wine, digits and iris, at most 0.0064 on standardized
# diabetes with y x 1, 1e-2, 1e-4 (full data and 10 cross-validation training folds each);
# on raw diabetes with y x 1e-4 the fit stopped at 0.029 with R2 0.489 where Ridge reaches
# 0.518 (benchmarks/studies/cgvr_tol_check.py)
FAR_FROM_OPTIMUM = 0.01


@dataclass(frozen=True)
class CGVRParams:
    """Resolved parameters of one fit (see the estimators for their meaning).

    ``batch_size`` is a number of rows (``'sqrt'`` resolved), ``step_max`` a float
    (``inf`` for no cap) and ``n_threads`` the threads of the full passes (the fixed row
    blocks of ``_cgvr.n_blocks`` run in parallel) and of the team running each inner loop
    (fixed blocks of the batch and of the features); the result does not depend on it.
    """

    loss: str
    alpha: float
    solver: str
    beta: str
    line_search: str
    inner_iter: int
    batch_size: int
    c1: float
    c2: float
    step_init: float
    step_max: float
    ls_max_iter: int
    zoom_max_iter: int
    restart: str
    w_selection: str
    init: str
    eta0: float
    fit_intercept: bool
    regularize_intercept: bool
    safeguard: bool
    max_iter: int
    tol: float
    n_threads: int = 1


def check_outer_divergence(run, k, objective):
    """:func:`check_divergence` of outer iteration ``k``'s objective against the start's
    (``k == 0``, kept on ``run``): a blow-up that stays finite (1e306) would otherwise end as
    a mere ConvergenceWarning."""
    if k == 0:
        run.start_objective = objective
        return
    check_divergence(objective, run.start_objective, run.monitor.solver_name, f"iteration {k}",
                     remedy=("decrease the step size (eta0)" if "svrg" in run.params.solver
                             else "use solver='cg' (full-batch, a descent method)"))


class FitShared(FitCache):
    """What the heads of one fit share (``problem.shared``): the resolved ``params``, the
    estimator's name of the ``solver`` that runs (``params.solver`` reads 'cgvr' for
    'cgvr_paper') and the columns' moments of X that the check after a tol stop reads."""

    def __init__(self, params, solver=None):
        super().__init__()
        self.params = params
        self.solver = params.solver if solver is None else solver

    def column_moments(self, X):
        """:func:`._stationarity.column_moments` of X, once per fit."""
        return self.cached("column_moments", lambda: column_moments(X))

    def row_sqnorms(self, ds):
        """The dataset's checked squared row norms, once per fit (every head reads them)."""
        return self.cached("row_sqnorms", lambda: checked_row_sqnorms(ds))


def solve(problem, params, monitor, state=None):
    """Fit one head.

    Parameters
    ----------
    problem : skstoch.base._LinearProblem
        Rows, targets, weights, warm-start coefficients, seed and stream of the head;
        ``problem.shared`` a :class:`FitShared` of ``params`` (None: this head's own).
    params : CGVRParams
    monitor : FitMonitor
        Receives one record per outer iteration.
    state : dict or None
        ``SolverResult.state`` of the previous fit of this head (warm start): the restart
        gradient ``h``, the batch size and the step cap the safeguard reached.

    Returns
    -------
    SolverResult
        ``x`` the coefficients, ``intercept``, ``n_iter`` the outer iterations run,
        ``state`` the warm-start state, ``extra`` the kernel counters (``stats``) and the
        effective passes over the data (``passes``).
    """
    run = _Run(problem, params, monitor, state)
    x = _start(problem, params, warm=state is not None)
    loop = {"cgvr": _cgvr_loop, "cg": _cg_loop, "svrg": _svrg_loop,
            "minibatch_svrg": _svrg_loop}[params.solver]
    n_threads = min(params.n_threads, run.tables.n_blocks)
    if n_threads > 1:
        with ThreadPoolExecutor(n_threads) as executor:
            run.tables.set_executor(executor, n_threads)
            try:
                result = loop(run, x)
            finally:
                run.tables.set_executor(None)
    else:
        result = loop(run, x)
    criterion = result.criterion
    monitor.finish(converged=result.converged, criterion=CRITERION, value=criterion,
                   tol=params.tol, max_iter=params.max_iter,
                   stalled_at=result.extra.get("stalled_at"))
    if result.converged and not monitor.stopped_by_callback:
        warn_if_far_after_tol(run.gradient_ratio(result.x), monitor.solver_name, params.tol)
    d = run.d
    return SolverResult(
        x=result.x[:d].copy(), intercept=float(result.x[d]) if params.fit_intercept else 0.0,
        n_iter=result.n_iter, converged=result.converged, criterion=criterion,
        criterion_name=CRITERION, state={"h": run.h, "batch": run.batch, "cap": run.cap},
        extra={"stats": run.stats.copy(), "passes": run.passes})


def split_gradient(u, d, fit_intercept):
    """``(g_w, g_b)`` of a gradient ``[w | b]`` of length ``d + 1`` (``g_b = 0`` without an
    intercept)."""
    return u[:d], (u[d] if fit_intercept else 0.0)


def warn_if_far_after_tol(ratio, solver_name, tol):
    """:func:`._stationarity.warn_if_far` for the ``max |gradient| <= tol`` stop."""
    warn_if_far(ratio, solver_name, tol, threshold=max(FAR_FROM_OPTIMUM, 100.0 * tol),
                stopped=f"max |gradient| <= tol={tol:.3g}",
                advice="tol bounds the gradient in the units of X and y, which features of "
                       "very different scales or a target on a small scale make loose: "
                       f"standardize the features (for example with {SCALERS}) or lower "
                       "tol.")


class _Run:
    """The tables, counters and adaptive settings (batch, step cap, restart gradient) of one
    solve, and the full-gradient, stopping and record hooks every solver shares."""

    def __init__(self, problem, params, monitor, state):
        ds = problem.dataset
        self._init_state(params, monitor, state, ds.n_samples, ds.n_features)
        self.ds = ds
        self.shared = problem.shared if problem.shared is not None else FitShared(params)
        self.loss = LOSSES[params.loss]()
        self.y = np.ascontiguousarray(problem.y, dtype=np.float64)
        self.tables = _cgvr.HeadTables(
            ds, self.y, np.ascontiguousarray(problem.sample_weight, dtype=np.float64),
            self.loss, self.alpha, self.alpha_b, params.fit_intercept, problem.seed,
            2 * problem.stream)
        # margins X x, kept up to date for the line searches on f itself
        full = params.solver == "cg" or (params.solver == "cgvr" and params.line_search == "full")
        self.z = np.empty(self.n) if full else None
        self.batch_limit = self.n     # the safeguard doubles the batch up to this
        self.row_bound = row_bound(self.shared.row_sqnorms(ds),
                                   self.tables.full_weights * self.n)

    def _init_state(self, params, monitor, state, n, d):
        """What every solve starts from, in memory or on Dask data: the sizes, penalties,
        CG options, counters, and the restart gradient, batch and step cap (``_resume``)."""
        self.params, self.monitor = params, monitor
        self.n, self.d = n, d
        self.alpha = params.alpha
        self.alpha_b = params.alpha if params.fit_intercept and params.regularize_intercept \
            else 0.0
        self.step_init, self.rescales = params.step_init, 0
        self.options = cg_options(params, self.step_init)
        self.tol = params.tol
        self.z = None
        self.passes = 0.0
        self.stats = np.zeros(_cgvr.N_STATS, dtype=np.int64)
        self.counter = 0
        self.rejected = 0
        self.step_size = 0.0
        self.crit = np.inf
        self.h, self.batch, self.cap = _resume(state, params, n, d)

    def inner_data(self, snapshot, n_rows):
        """The tables and ``loss'(X x0)`` an inner loop reading about ``n_rows`` sampled
        rows runs on: the whole data here (a Dask fit gathers a sample instead)."""
        return self.tables, snapshot[1]

    def inner_passes(self, rows):
        """Passes counted for ``rows`` rows read by an inner loop."""
        return rows / self.n

    def full_gradient(self, x):
        """f(x), and (grad f(x), loss'(X x)) as the snapshot; updates z when it is kept."""
        u, dl0 = np.empty(self.d + 1), np.empty(self.n)
        objective = self.tables.objective_gradient(x, u, dl0, self.z)
        self.passes += 1.0
        if self.h is None:
            self.h = u.copy()     # cold start: the first restart gradient is grad f(w_0)
        return objective, (u, dl0)

    def gradient_max(self, objective, snapshot):
        """The stopping criterion max |grad f| (converged when <= tol)."""
        self.crit = float(np.max(np.abs(snapshot[0])))
        return self.crit

    def gradient_ratio(self, x):
        """:func:`._stationarity.gradient_ratio` at ``x`` (passes over X not counted in
        ``passes``: the gradients at ``x`` and at zero, and the columns' moments once per
        fit)."""
        d, fit_intercept = self.d, self.params.fit_intercept
        gradients = []
        for point in (x, np.zeros(d + 1)):
            u = np.empty(d + 1)
            self.tables.objective_gradient(np.ascontiguousarray(point), u, np.empty(self.n),
                                           None)
            gradients.append(split_gradient(u, d, fit_intercept))
        return gradient_ratio(gradients[0], gradients[1], x[:d], 0.0,
                              self.shared.column_moments(dataset_matrix(self.ds)),
                              fit_intercept)

    def record(self, k, x, objective, snapshot=None, step=None):
        """One history entry for outer iteration k (0: the start)."""
        x = x[:self.d]
        check_outer_divergence(self, k, objective)
        if k == 0:
            return self.monitor.record(iteration=0, objective=objective, grad_max=self.crit,
                                       step_size=0.0, passes=self.passes, x=x,
                                       **INNER_COLUMNS_AT_START)
        return self.monitor.record(
            iteration=k, objective=objective, grad_max=self.crit, step_size=self.step_size,
            passes=self.passes, restarts=int(self.stats[0]), skipped_steps=int(self.stats[1]),
            line_search_evals=int(self.stats[2]), rejected_epochs=self.rejected,
            step_cap=self.cap, batch=self.batch, x=x)

    def outer_loop(self, x, inner_loop, accept=None, eta0=0.0):
        """The shared SVRG outer loop around ``inner_loop`` (``eta0``: the fixed step it is
        handed; the CG inner loop finds its own steps by line search)."""
        return svrg(x, self.full_gradient, inner_loop, step_size="fixed", eta0=eta0,
                    inner_iter=self.params.inner_iter, max_iter=self.params.max_iter,
                    tol=self.tol, monitor=self.monitor, stop=self.gradient_max,
                    accept=accept, record=self.record)


def _resume(state, params, n, d):
    """Restart gradient (None: grad f(w_0)), batch size and step cap: those of the previous
    fit when its state fits this problem (the batch never below the parameter's)."""
    if state is None or state["h"].shape != (d + 1,):
        return None, params.batch_size, params.step_max
    batch = min(max(params.batch_size, state["batch"]), max(params.batch_size, n))
    return state["h"], batch, min(params.step_max, state["cap"])


def _start(problem, params, warm):
    """w_0: the previous solution (warm start), zeros, or U[0, 1) entries (the paper)."""
    d = problem.dataset.n_features
    x = np.zeros(d + 1)
    if warm:
        x[:d] = problem.coef_init
        x[d] = problem.intercept_init if params.fit_intercept else 0.0
    elif params.init == "uniform":
        stream = 2 * problem.stream + 1
        x[:d] = _cgvr.uniform_vector(problem.seed, stream, d)
        if params.fit_intercept:
            x[d] = _cgvr.uniform_vector(problem.seed, stream + 2**32, 1)[0]
    return x


def cg_options(params, step_init):
    """The kernel's settings of the inner loop and line search, with this first trial step."""
    return _cgvr.CGOptions(params.inner_iter, params.beta, params.line_search, params.c1,
                           params.c2, step_init, params.ls_max_iter, params.zoom_max_iter,
                           params.w_selection == "random")


def row_bound(row_sq, sample_weight):
    """``max_i s_i (||x_i||^2 + 1)`` from the squared row norms ``row_sq`` and the weights
    ``s_i``."""
    return float(np.max(sample_weight * (row_sq + 1.0))) if row_sq.size else 0.0


def rescale_limit(run):
    """How many times the safeguard may shorten the steps by 2^zoom_max_iter: enough for
    the searches to reach ``1 / L``, a step that decreases f along -grad f, for the bound
    ``L = MAX_LOSS_CURVATURE * run.row_bound + alpha`` on f's curvature; at least
    ``MAX_RESCALES``.  Scaling every feature by 1e15 needs 7 (a fit that stopped at the
    start with 3)."""
    params = run.params
    if params.zoom_max_iter == 0:
        return MAX_RESCALES      # the searches try step_init only: no rescale goes further
    bound = MAX_LOSS_CURVATURE * run.row_bound + params.alpha
    bits = math.log2(max(params.step_init * bound, 1.0))
    return max(MAX_RESCALES, math.ceil(bits / params.zoom_max_iter) + 1)


def shrink_first_step(run, steps):
    """After an inner loop that took no step (``steps`` all 0), lower ``run.step_init`` by
    2^zoom_max_iter, at most ``rescale_limit`` times: its searches tried steps down to
    step_init / 2^zoom_max_iter without a decrease, so the curvature along the directions is
    beyond their reach (features on large or very different scales).  Part of
    ``safeguard``.  Returns whether it did."""
    if not run.params.safeguard or np.any(steps) or run.rescales >= rescale_limit(run):
        return False
    run.rescales += 1
    run.step_init *= 2.0 ** -run.params.zoom_max_iter
    return True


def _cgvr_loop(run, x):
    """Algorithm 3: CG inner loops from the restart gradient h_k; with ``safeguard`` an outer
    iteration that does not decrease f is discarded and the batch doubled (at the full batch,
    the step cap halved), see the user guide."""
    params = run.params
    D = run.d + 1
    g, direction = np.empty(D), np.empty(D)
    check_allocation(8 * params.inner_iter, f"inner_iter={params.inner_iter}")
    steps = np.zeros(params.inner_iter)
    full_ls = params.line_search == "full"
    z_start = None

    def inner_loop(x, x0, snapshot, step, epoch):
        nonlocal z_start
        u = snapshot[0]
        tables, dl0 = run.inner_data(snapshot, params.inner_iter * run.batch)
        g[:] = run.h if params.restart == "h" else u
        np.negative(g, out=direction)
        restarts = int(run.stats[0])
        if full_ls:
            z_start = run.z.copy()
        run.counter = _cgvr.cgvr_inner(tables, run.options, x, x0, u, dl0, g, direction,
                                       run.batch, run.cap, run.counter, run.stats, steps,
                                       run.z)
        restarts = int(run.stats[0]) - restarts
        if shrink_first_step(run, steps):
            run.options = cg_options(params, run.step_init)
        run.passes += run.inner_passes((2 * params.inner_iter + restarts) * run.batch)
        if full_ls:
            run.passes += params.inner_iter + restarts
        run.step_size = float(np.mean(steps))
        if not params.safeguard:
            check_finite_iterate(x, run.monitor.solver_name, f"outer iteration {epoch + 1}")
        return x

    def accept(objective, previous):
        if _safeguard_rejects(run, objective, previous, steps):
            if full_ls:
                run.z[:] = z_start
            return False
        run.h = g.copy()
        return True

    return run.outer_loop(x, inner_loop, accept)


def _safeguard_rejects(run, objective, previous, steps):
    """Whether ``safeguard`` discards an outer iteration that took f from ``previous`` to
    ``objective``; if so, count it and double the batch (to the full batch once that is at
    least half the rows; at the full batch: cap the step at half the longest of ``steps``,
    the inner loop's steps)."""
    # rounding of f (n terms) limits how small a decrease can be seen
    if not run.params.safeguard or objective <= previous + 1e-14 * abs(previous):
        return False
    run.rejected += 1
    if run.batch < run.batch_limit:
        # the batch curvature along p underestimated the true one: a larger batch keeps the
        # long steps of CG in flat directions (a step cap would forbid them, which stalls
        # ill-conditioned problems)
        batch = 2 * run.batch
        if 2 * batch >= run.n:
            # half the rows or more, drawn with replacement, cost at least half a full pass
            # per step and are still noisy; the full batch (each row once) is exact
            batch = run.n
        run.batch = min(batch, run.batch_limit)
    else:
        big = float(np.max(steps))
        run.cap = 0.5 * big if 0.0 < big < np.inf else 0.5 * min(run.cap, 1.0)
    return True


def _svrg_loop(run, x):
    """The paper's SVRG baselines: fixed step ``eta0``, one sample (``"svrg"``) or
    ``batch_size`` samples (``"minibatch_svrg"``) per inner step."""
    params = run.params
    batch = 1 if params.solver == "svrg" else run.batch

    def inner_loop(x, x0, snapshot, step, epoch):
        u = snapshot[0]
        tables, dl0 = run.inner_data(snapshot, params.inner_iter * batch)
        run.counter = _cgvr.svrg_inner(tables, x, x0, u, dl0, params.inner_iter, batch,
                                       step, run.counter)
        run.passes += run.inner_passes(params.inner_iter * batch)
        run.step_size = step
        return x

    return run.outer_loop(x, inner_loop, eta0=params.eta0)


def _cg_loop(run, x, line_search=None):
    """Full-batch nonlinear CG (the paper's "CG" baseline): one strong-Wolfe step on all n
    margins per outer iteration, restarted with -grad at the start and whenever the direction
    is not a descent direction.  ``line_search(run, x, p) -> step`` (counting its
    evaluations and skipped steps) defaults to the binary one; the multinomial driver passes
    its own (its iterate is a (K, d + 1) matrix)."""
    params = run.params
    line_search = _full_line_search if line_search is None else line_search
    x = x.copy()
    objective, (u, _) = run.full_gradient(x)
    direction = None
    k, stalled_at = 0, None
    # the lines are searched along scale * direction: a search that finds no decrease along
    # -grad has tried steps down to step_init / 2^zoom_max_iter, so the objective's curvature
    # along it is beyond the search's reach (features on large or very different scales);
    # the scale then drops by that factor, up to rescale_limit times, and stays
    scale, shrink = 1.0, 2.0 ** -params.zoom_max_iter
    rescales = rescale_limit(run) if params.safeguard else 0
    while True:
        crit = run.gradient_max(objective, (u,))
        if run.record(k, x, objective) or crit <= run.tol or k == params.max_iter:
            break
        steepest = direction is None or not float(np.vdot(u, direction)) < 0
        if steepest:
            direction = -u
        step = line_search(run, x, scale * direction)
        for _ in range(rescales if steepest else 0):
            if step != 0.0:
                break
            scale *= shrink
            step = line_search(run, x, scale * direction)
        step *= scale
        if step == 0.0 and steepest:   # no step along -grad: every further one would repeat it
            stalled_at = k
            break
        x += step * direction
        run.passes += 1.0
        run.step_size = step
        check_finite_iterate(x, run.monitor.solver_name, f"outer iteration {k + 1}")
        k += 1
        g = u
        objective, (u, _) = run.full_gradient(x)
        # a failed step along a CG direction restarts from -grad (which, failing, ends the fit)
        direction = None if step == 0.0 else \
            -u + _cg_beta(params.beta, u, g, direction) * direction
    return SolverResult(x=x, n_iter=k, converged=crit <= run.tol, criterion=crit,
                        extra={"stalled_at": stalled_at})


def _full_line_search(run, x, p):
    """Strong-Wolfe step along p on f itself (run.z holds the margins X x)."""
    params, d = run.params, run.d
    q = run.ds.margins(p[:d], p[d])
    r0 = run.alpha * (x[:d] @ p[:d]) + run.alpha_b * x[d] * p[d]
    rpp = run.alpha * (p[:d] @ p[:d]) + run.alpha_b * p[d] * p[d]
    step, _, _, n_evals, failed = _cgvr.line_search_margins(
        run.options, run.loss, run.z, q, run.y, run.tables.full_weights, r0, rpp, 0.0,
        params.step_max)
    run.stats[2] += n_evals
    run.stats[3] += int(failed)
    if step == 0.0:
        run.stats[1] += 1
    return step


def _cg_beta(rule, g_new, g_old, p):
    """beta of nonlinear CG from the flattened gradients and direction (0 on a vanishing or
    non-finite denominator; PR+ clipped at 0)."""
    g_new, g_old, p = g_new.ravel(), g_old.ravel(), p.ravel()
    y = g_new - g_old
    if rule == "FR":
        num, den = g_new @ g_new, g_old @ g_old
    elif rule in ("PR", "PR+"):
        num, den = g_new @ y, g_old @ g_old
    elif rule == "HS":
        num, den = g_new @ y, p @ y
    elif rule == "DY":
        num, den = g_new @ g_new, p @ y
    else:
        return 0.0
    if not abs(den) > 1e-300:
        return 0.0
    beta = num / den
    if not np.isfinite(beta):
        return 0.0
    if rule == "PR+":
        beta = max(beta, 0.0)
    return float(beta)
