"""The stochastic solvers of ConstrainedLasso: Epro-SGD and Epro-ORDA (paper 001, Alg. 1
and 3, on the shared epoch-projection loop), 'epro_svrg' (the same loop with prox-SVRG
epochs, beyond the paper) and the paper's baselines 'sgd' and 'oneproj'.

The kernels (``skstoch._fast._lasso``) run the epochs; this module resolves the automatic
step and penalty multiplier, keeps the intercept (reset to its exact optimum given w at
every projection) and the generator's counter between kernel calls.
"""
import math

import numpy as np

from .._fast import _lasso
from ._averaged_sgd import averaged_sgd, checkpoint_lengths
from ._epoch_projection import epoch_projection
from ._lasso_problem import scale_error, step_multiplier
from ._projections import project_l1_ball
from ._step_size import safe_sgd_step
from ._stopping import check_divergence

EPOCH_SOLVERS = ("epro_sgd", "epro_orda", "epro_svrg")
BASELINES = ("sgd", "oneproj")

# 'epro_svrg': first epoch length as a fraction of n and the step as a multiple of the
# per-row bound 1 / max_i (c_i ||x_i||^2 + 2 alpha) (measured, see the user guide)
SVRG_FIRST_EPOCH_FRACTION = 0.125
SVRG_STEP_FACTOR = 1.0

# lam='auto' for Epro-SGD / Epro-ORDA / OneProj: this fraction of the multiplier estimate.
# The SGD noise of the iterate smooths the penalty's kink, so an epoch run at lam >= nu*
# ends with its average pulled inside the ball (a first-order error the projection cannot
# undo); slightly below nu* the average ends outside and the projection corrects it.
# Measured (round 7, user guide): 0.9 made 3 passes better than 1 on an isotropic and a
# correlated design where 1.0 made them 1.5-3.5x worse; 0.8 was similar, 1.0 worst.
LAM_AUTO_FACTOR = 0.9


def resolve_step(problem, solver, eta0, first_epoch_length, budget):
    """The first step (eta0='auto': the solver's rule from the safe row step) and the first
    epoch length T1 (derived for Epro-SGD with the automatic step, else as given)."""
    alpha = problem.alpha
    auto_step = isinstance(eta0, str)
    safe_step = safe_sgd_step(problem.row_curvature("max"), alpha)
    if auto_step:
        if solver == "epro_orda" and alpha > 0:
            # the paper's theory step eta_1 = mu / beta with mu = 1, beta = 2 alpha (ORDA's
            # explicit step at iteration t is only eta / t^1.5)
            # capped at 64 times the stable SGD step (ORDA diverges beyond ~256x)
            eta0 = min(1.0 / (2.0 * alpha), 64.0 * safe_step)
        elif solver == "epro_orda":
            eta0 = 64.0 * safe_step
        elif solver == "epro_svrg":
            eta0 = min(SVRG_STEP_FACTOR * safe_step, 0.49 / alpha) if alpha > 0 else \
                SVRG_STEP_FACTOR * safe_step
        else:
            eta0 = safe_step
    if not (0.0 < eta0 < math.inf):
        raise scale_error(problem.X, f"the automatic step size (eta0 = {eta0!r})")
    if first_epoch_length is None and solver == "epro_sgd" and auto_step:
        # keep the theory's epoch "travel" T1 eta1 = 4 mu / beta (T1 = 8, eta1 = mu/(2 beta),
        # mu = 1, beta = 2 alpha) while eta1 is limited by stability: T1 = 2 / (alpha eta1)
        # (alpha eta0 n <= 2 means 2 / (alpha eta0) >= n: no division by an underflow)
        n = problem.X.shape[0]
        travel = alpha * eta0
        t1 = n if travel * n <= 2.0 else math.ceil(2.0 / travel)
        # and at most a seventh of the budget, so that at least three epochs (three
        # projections, the step halved twice) run: capped at the budget alone, a budget
        # T <= n made the first epoch the whole run, one projection (issue 20)
        first_epoch_length = int(min(max(t1, 8), max(n, 8), max(budget // 7, 8)))
    return eta0, first_epoch_length


class _Penalty:
    """The exact penalty's multiplier lam of each epoch: fixed, or 'auto' (the fraction
    ``LAM_AUTO_FACTOR`` of the constraint's multiplier estimated at the epoch's projected
    start); ``last`` is the value used last (0 before any)."""

    def __init__(self, problem, lam):
        self.problem = problem
        self.auto = isinstance(lam, str)
        self.lam = lam
        self.last = 0.0

    def __call__(self, w):
        value = LAM_AUTO_FACTOR * self.problem.multiplier_estimate(w) if self.auto else \
            self.lam
        self.last = value
        return value


class _Run:
    """What the kernel calls of one stochastic fit share: the kernel tables, the intercept
    and the generator's counter (each call continues the stream)."""

    def __init__(self, problem, seed, stream, w0):
        self.problem = problem
        self.tables = _lasso.LassoData(problem.dataset, problem.y, problem.cweight,
                                       problem.alpha, problem.radius, problem.fit_intercept,
                                       seed, stream)
        self.b = problem.optimal_intercept(project_l1_ball(w0, problem.radius))
        self.counter = 0

    def project(self, v):
        w = project_l1_ball(v, self.problem.radius)
        # the intercept is unconstrained: set it to its exact optimum given w
        self.b = self.problem.optimal_intercept(w)
        return w

    def objective(self, w):
        return self.problem.objective(w, self.b)

    def criteria(self, w):
        """objective, gap and relative_gap at the projected point (one more pass)."""
        return self.problem.criteria(w, self.b)


class _GapStop:
    """The stopping rule of every ConstrainedLasso solver: the relative duality gap
    (Frank-Wolfe gap / F(0), the ``relative_gap`` column) <= tol; keeps the last value.
    A gap grown beyond 1e4 times its first value raises DivergenceError (a fixed step
    that is too long can blow up without ever producing inf)."""

    def __init__(self, tol, solver_name):
        self.tol = tol
        self.solver_name = solver_name
        self.value = math.inf
        self.first = None

    def __call__(self, record):
        value = record.get("relative_gap")
        if value is None:
            return False
        if self.first is None:
            self.first = value
        check_divergence(value, self.first, self.solver_name,
                         f"{record.get('iteration', len(record))} stochastic gradients")
        self.value = value
        return self.tol is not None and value <= self.tol


def solve_stochastic(problem, w0, params, seed, stream, monitor):
    """Run the stochastic solver ``params.solver`` from w0 (budget ``params.max_iter``
    stochastic gradients); the result's extra holds n_projections, n_epochs, budget_used,
    budget, eta0 and lam (the last epoch's multiplier)."""
    budget = params.max_iter
    eta0, first = resolve_step(problem, params.solver, params.eta0,
                               params.first_epoch_length, budget)
    run = _Run(problem, seed, stream, w0)
    penalty = _Penalty(problem, params.lam)
    # a fixed step that is too long overflows: the iterate checks raise DivergenceError,
    # without a RuntimeWarning per overflowing operation first
    with np.errstate(over="ignore", invalid="ignore"):
        if params.solver in EPOCH_SOLVERS:
            result = _solve_epochs(run, penalty, w0, params, eta0, first, monitor)
        else:
            result = _solve_baseline(run, penalty, w0, params, eta0, monitor)
    result.extra["eta0"] = eta0
    result.extra["lam"] = penalty.last
    return result


def _solve_epochs(run, penalty, w0, params, eta0, first, monitor):
    """Epro-SGD, Epro-ORDA or 'epro_svrg' on the shared epoch-projection loop."""
    solver = params.solver
    tol = params.tol if params.tol > 0 else None
    if solver == "epro_sgd":
        run_epoch, decay, extra, first = _epro_sgd_epochs(run, penalty), 2.0, 0, first or 8
    elif solver == "epro_orda":
        run_epoch = _orda_epochs(run, penalty, params.orda_at_u)
        decay, extra, first = math.sqrt(2.0), 1, first or 16
    else:
        n = run.problem.X.shape[0]
        if first is None:
            # n/8, but at most what the budget leaves after the first full gradient (a
            # derived T1 longer than that would run no epoch)
            first = max(8, min(int(SVRG_FIRST_EPOCH_FRACTION * n), params.max_iter - n))
        run_epoch, decay, extra = _svrg_epochs(run, penalty), 1.0, n
    # the relative duality gap, as for 'fista' (the loop's own rule, the relative change of
    # consecutive outputs, stays above 1e-4 under the SGD noise and says nothing about
    # suboptimality); evaluated at every projection unless tol=0 and track_objective=False
    stop = _GapStop(tol, monitor.solver_name)
    return epoch_projection(
        w0, run_epoch, run.project, budget=params.max_iter, first_epoch_length=first,
        eta0=eta0, step_decay=decay, monitor=monitor, columns=run.criteria,
        use_full_budget=params.use_full_budget, extra_per_epoch=extra, stop=stop,
        record_iteration=True,
        objective_every_epoch=params.track_objective or tol is not None)


def _epro_sgd_epochs(run, penalty):
    def run_epoch(x_start, eta, n_steps, epoch):
        w = np.array(x_start, dtype=np.float64, copy=True)
        w_avg = np.empty(w.shape[0])
        _, run.b, run.counter = _lasso.epro_sgd_epoch(
            run.tables, w, run.b, eta, penalty(x_start), n_steps, run.counter, w_avg)
        return w_avg
    return run_epoch


def _orda_epochs(run, penalty, at_u):
    def run_epoch(x_start, eta, n_steps, epoch):
        x = np.array(x_start, dtype=np.float64, copy=True)
        run.b, run.counter = _lasso.orda_epoch(run.tables, x, run.b, eta, penalty(x_start),
                                               n_steps, run.counter, at_u)
        return x
    return run_epoch


def _svrg_epochs(run, penalty):
    """'epro_svrg' (beyond the paper): prox-SVRG epochs for the epoch-projection loop.

    Epoch k: at the projected snapshot (w~, b~ = its optimal intercept) one full gradient
    (the residuals r~ = X w~ + b~ - y, kept, and mu = X^T W r~ / S); the penalty
    nu = the constraint's Lagrange multiplier searched across epochs (lam='auto',
    :class:`_MultiplierSearch`) or ``lam``; then ``T_k`` prox-SVRG steps on
    F + nu ||w||_1 with a constant step (lazy O(nnz) steps on CSR rows), and the last
    iterate is projected.  Epoch lengths double (T_k = T1 2^(k-1), as in SVRG++); the full
    gradient is counted as n stochastic gradients in the budget.
    """
    problem = run.problem
    sw, S = problem.sw, problem.S
    # step of the projected-gradient step whose threshold estimates the multiplier: the
    # inverse of the mean row curvature (an upper bound on the Hessian's largest eigenvalue)
    dual = _MultiplierSearch(problem.radius, 1.0 / problem.row_curvature("mean"))

    def run_epoch(x_start, eta, n_steps, epoch):
        b0 = run.b
        r_snap = problem.residual(x_start, b0)
        mu = problem.rmatvec(sw * r_snap) / S
        mu_b = float(sw @ r_snap) / S if problem.fit_intercept else 0.0
        if penalty.auto:
            nu = dual.propose(x_start, mu + 2.0 * problem.alpha * x_start)
        else:
            nu = penalty.lam
        penalty.last = nu
        w = np.array(x_start, dtype=np.float64, copy=True)
        run.b, run.counter = _lasso.svrg_epoch(
            run.tables, np.ascontiguousarray(r_snap), np.ascontiguousarray(mu), mu_b, w, b0,
            eta, nu, n_steps, run.counter)
        if penalty.auto:
            dual.observe(nu, float(np.abs(w).sum()))
        return w
    return run_epoch


class _MultiplierSearch:
    """The l1 penalty nu of the next 'epro_svrg' epoch (lam='auto').

    The penalized problem F + nu ||w||_1 has the constrained solution as its solution
    exactly when nu is the constraint's multiplier nu*, and the l1 norm of its solution is
    nonincreasing in nu.  Each epoch's unprojected output approximately solves it, so its
    l1 norm brackets nu*: above the radius, nu < nu* (``lo``); at or below it, nu >= nu*
    (``hi``; at w = 0, ``||grad||_inf`` is such a bound).  The next nu is the smallest of
    the multiplier implied by one projected-gradient step at the projected snapshot, the
    false position of phi(nu) = ||w(nu)||_1 - radius on the bracket and the secant through
    the last two points below nu*, among those strictly inside the bracket (the first epoch
    takes the former); else the bracket's midpoint (twice ``lo`` while unbounded).  The
    smallest, because a nu slightly below nu* gives an output slightly outside the ball
    that the projection corrects, one slightly above nu* an output strictly inside the ball
    that it does not (false position and that secant approach nu* from below on this
    convex path).
    """

    def __init__(self, radius, t):
        self.radius, self.t = radius, t
        self.lo, self.hi = 0.0, math.inf
        self.phi_lo, self.phi_hi = None, None
        self.lo_prev = None
        self.n_epochs = 0
        self.lo_epoch = self.hi_epoch = -1

    def propose(self, w, grad):
        if not self.radius > 0:
            return 0.0
        if not np.any(w) and self.n_epochs == 0:
            # w(nu) = 0 from nu = ||grad(0)||_inf on: an upper bound of nu*
            self.hi = min(self.hi, float(np.max(np.abs(grad), initial=0.0)))
            self.phi_hi = -self.radius
        self._drop_stale_bound()
        if self.hi <= self.lo:
            return self.hi
        c = step_multiplier(w, grad, self.radius, self.t)
        valid = [c] if self.lo < c < self.hi or (self.n_epochs == 0 and c < self.hi) else []
        valid += [v for v in (self._false_position(), self._secant())
                  if v is not None and self.lo < v < self.hi]
        if valid:
            return min(valid)       # from below (see above)
        if math.isfinite(self.hi):
            return 0.5 * (self.lo + self.hi)
        return 2.0 * self.lo if self.lo > 0 else c

    def _drop_stale_bound(self):
        """Forget the older bound when the bracket has collapsed around a jump of phi.

        An epoch only approximately solves the penalized problem, so a short early epoch
        can put ``lo`` above nu* (or ``hi`` below it); the bracket then shrinks onto that
        wrong bound while phi stays far from 0 at both ends and nu never reaches nu*
        (measured: 3.6e-4 relative gap on a dense 5,000 x 50 problem whatever the budget).
        A bracket narrower than 1e-3 of nu across which phi jumps by more than 1e-4 of the
        radius at both ends cannot hold nu* on this continuous path: drop the bound of the
        older (shorter, less accurate) epoch."""
        if not (math.isfinite(self.hi) and self.phi_lo is not None
                and self.phi_hi is not None):
            return
        narrow = self.hi - self.lo <= 1e-3 * self.hi
        jump = min(abs(self.phi_lo), abs(self.phi_hi)) > 1e-4 * self.radius
        if not (narrow and jump):
            return
        if self.lo_epoch < self.hi_epoch:
            self.lo, self.phi_lo, self.lo_prev = 0.0, None, None
        else:
            self.hi, self.phi_hi = math.inf, None

    def _false_position(self):
        if self.phi_lo is not None and self.phi_hi is not None and self.phi_hi < 0:
            return self.lo + self.phi_lo * (self.hi - self.lo) / (self.phi_lo - self.phi_hi)
        return None

    def _secant(self):
        # through the last two points below nu*: from below on a convex path
        if self.lo_prev is not None and self.phi_lo is not None:
            n0, p0 = self.lo_prev
            if p0 > self.phi_lo:
                return self.lo + self.phi_lo * (self.lo - n0) / (p0 - self.phi_lo)
        return None

    def observe(self, nu, norm1):
        phi = norm1 - self.radius
        self.n_epochs += 1
        if phi > 0:
            if nu >= self.lo:
                if self.phi_lo is not None and nu > self.lo:
                    self.lo_prev = (self.lo, self.phi_lo)
                self.lo, self.phi_lo, self.lo_epoch = nu, phi, self.n_epochs
        elif nu <= self.hi:
            self.hi, self.phi_hi, self.hi_epoch = nu, phi, self.n_epochs


def _solve_baseline(run, penalty, w0, params, eta0, monitor):
    """'sgd' / 'oneproj': one continuous run on the shared averaged-SGD loop, recorded at
    the doubling checkpoints 8, 24, 56, ...; the output is the projected average of the
    iterates (step eta_t = eta0 / (1 + decay (t - 1)))."""
    problem, solver, budget = run.problem, params.solver, params.max_iter
    radius, alpha = problem.radius, problem.alpha
    auto_step = isinstance(params.eta0, str)
    decay = (2.0 * alpha * eta0 if alpha > 0 else 1.0) if auto_step else 1.0
    w = project_l1_ball(w0, radius) if solver == "sgd" else np.array(w0, dtype=np.float64)
    w_sum = np.zeros(w.shape[0])
    gamma = math.log(max(budget, 2)) / max(budget, 2)     # OneProj's smoothing, ln T / T

    def run_chunk(t0, n_steps, point):
        if solver == "sgd":
            run.b, _, run.counter = _lasso.projected_sgd(
                run.tables, w, run.b, eta0, decay, t0, n_steps, run.counter, w_sum)
        else:
            # lam='auto': the multiplier estimated at the last checkpoint's output
            w_ref = point if point is not None else project_l1_ball(w, radius)
            run.b, _, run.counter = _lasso.oneproj_sgd(
                run.tables, w, run.b, eta0, decay, penalty(w_ref), gamma, t0, n_steps,
                run.counter, w_sum)
        return w, w_sum / (t0 + n_steps)

    tol = params.tol if params.tol > 0 else None
    result = averaged_sgd(
        w, run_chunk, checkpoint_lengths(budget, 8), output=lambda avg: project_l1_ball(
            avg, radius), step_size=lambda t: eta0 / (1.0 + decay * (t - 1)),
        monitor=monitor, columns=problem.criteria, stop=_GapStop(tol, monitor.solver_name),
        objective_every_checkpoint=params.track_objective or tol is not None)
    used = result.n_iter
    result.extra.update(n_projections=used if solver == "sgd" else 1,
                        n_epochs=result.extra["n_checkpoints"], budget_used=used,
                        budget=budget)
    return result
