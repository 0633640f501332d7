"""Driver of ConstrainedLasso (paper 001, section 5.1, eq. 22): one output of

    minimize_{w, b}  1/(2 S) sum_i s_i (x_i.w + b - y_i)^2 + alpha ||w||_2^2
    subject to       ||w||_1 <= radius                     (S = sum_i s_i)

(``alpha`` is the estimator's ``l2_reg``)
by the exact solver (FISTA with the l1-ball projection, :mod:`._lasso_fista`) or one of
the stochastic solvers (:mod:`._lasso_sgd`).  :func:`solve` is the only entry point of the
estimator's fits; :func:`radius_max` sets the path of ConstrainedLassoCV.
"""
import math
from dataclasses import dataclass

import numpy as np

from ..utils import make_dataset, single_thread_blas
from ._lasso_fista import fista_full, fista_working_set
from ._lasso_problem import LSProblem, centered_matvecs, constant_columns, scale_error
from ._lasso_sgd import BASELINES, EPOCH_SOLVERS, solve_stochastic

STOCHASTIC_SOLVERS = EPOCH_SOLVERS + BASELINES
SOLVERS = ("fista",) + STOCHASTIC_SOLVERS


@dataclass(frozen=True)
class LassoParams:
    """The resolved parameters of one ConstrainedLasso fit (see the estimator's docstring).

    ``solver`` is resolved ('auto' is not allowed here) and ``max_iter`` is an int: the
    budget of stochastic gradients, or the FISTA iterations.  ``eta0`` and ``lam`` may be
    'auto' (resolved per output, from its data).
    """

    alpha: float
    radius: float
    solver: str
    max_iter: int
    tol: float
    eta0: object = "auto"
    lam: object = "auto"
    first_epoch_length: object = None
    use_full_budget: bool = True
    working_set: bool = True
    orda_at_u: bool = True
    fit_intercept: bool = True
    track_objective: bool = True

    def __post_init__(self):
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")


def solve(problem, params, monitor, state=None):
    """Solve one output.

    Parameters
    ----------
    problem : skstoch.base._LinearProblem
        ``X``, ``dataset``, ``y``, ``sample_weight``, ``coef_init`` (the start, projected
        onto the ball), ``seed`` and ``stream`` (the sampling of the stochastic solvers).
    params : LassoParams
    monitor : FitMonitor
        Receives one record per epoch / checkpoint / gap evaluation.
    state : None
        No solver state beyond the iterate is kept between fits (warm starts start from
        ``problem.coef_init``); accepted for the common driver signature.

    Returns
    -------
    SolverResult
        ``x`` the coefficients (inside the ball), ``intercept`` (its exact optimum given
        ``x``), ``n_iter`` (stochastic gradients, or FISTA iterations), and in ``extra``:
        ``n_projections``, ``n_epochs``, ``budget_used``, ``gap`` (the Frank-Wolfe gap at
        ``x``) and ``lam`` (the last epoch's multiplier; for 'fista' the constraint's
        Lagrange multiplier at ``x``); 'fista' adds ``threshold`` (tol * F(0)).
    """
    # one BLAS thread: on the shared 2-core benchmark machine a 2-thread OpenBLAS syrk of
    # 100,000 x 100 took 4.8 s against 0.16 s single-threaded, and X^T u 2x longer
    # (oversubscription); the solvers' passes over X are memory-bound anyway
    with single_thread_blas():
        lsp = LSProblem(problem.X, problem.dataset, problem.y, problem.sample_weight,
                        params.alpha, params.radius, params.fit_intercept,
                        with_xty=params.solver == "fista" and params.working_set)
        w0 = np.asarray(problem.coef_init, dtype=np.float64)
        if params.solver == "fista":
            solver = fista_working_set if params.working_set else fista_full
            result = solver(lsp, w0, max_iter=params.max_iter, tol=params.tol,
                            monitor=monitor)
        else:
            result = solve_stochastic(lsp, w0, params, problem.seed, problem.stream, monitor)
        w = result.x
        if lsp.f_zero == 0:
            # a constant y (0 without intercept): F >= 0 = F(0), so w = 0 is a solution; the
            # stochastic iterates carry only rounding, and the gap relative to F(0) is inf
            w = result.x = np.zeros_like(w)
        b = lsp.optimal_intercept(w)
        # the working-set solver's last gradient is the one at w (no second pass over X)
        grad = result.extra.pop("gradient", None)
        if grad is None:
            grad = lsp.gradient(w, b)
        result.extra["gap"] = lsp.gap(w, grad)
        result.extra["radius"] = lsp.radius
        # every solver's criterion: the relative duality gap at the returned point
        result.criterion = lsp.relative_gap(result.extra["gap"])
        result.criterion_name = "relative duality gap (Frank-Wolfe gap / F(0))"
        if params.tol <= 0:
            result.converged = True     # no target: the whole budget was asked for
        elif params.solver != "fista":
            result.converged = result.criterion <= params.tol
        if "lam" not in result.extra:     # fista: the multiplier at the solution
            result.extra["lam"] = lsp.multiplier(w, grad)
        result.intercept = b
        return result


def radius_max(X, y, sample_weight, alpha, fit_intercept):
    """l1 norm of the unconstrained minimizer (ridge for alpha > 0; the minimum-norm least
    squares solution for alpha = 0): radii beyond it leave the constraint inactive."""
    from scipy.sparse.linalg import LinearOperator, lsqr

    # a float32 X is read in place (float64 products, no float64 copy)
    lsp = LSProblem(X, make_dataset(X, float32=True), y, sample_weight, alpha, np.inf,
                    fit_intercept)
    mv, rmv = centered_matvecs(lsp)
    sq = np.sqrt(lsp.sw / lsp.S)
    n, d = X.shape
    # constant columns are exactly 0 once centred (LSQR would fit their rounding noise)
    keep = ~constant_columns(lsp)
    if not keep.any():
        return 0.0
    op = LinearOperator((n, d), matvec=lambda v: sq * mv(np.ravel(v) * keep),
                        rmatvec=lambda u: rmv(sq * np.ravel(u)) * keep, dtype=np.float64)
    # min ||sq (Xc w - yc)||^2 / 2 + alpha ||w||^2  <=>  damp^2 = 2 alpha
    with np.errstate(all="ignore"):
        w = lsqr(op, sq * (lsp.y - lsp.y_mean), damp=math.sqrt(2.0 * alpha), atol=1e-10,
                 btol=1e-10, iter_lim=max(100, 2 * min(n, d)))[0]
        r_max = float(np.abs(w).sum())
    if not math.isfinite(r_max):
        raise scale_error(X, "the least-squares solution that sets the largest radius")
    return r_max
