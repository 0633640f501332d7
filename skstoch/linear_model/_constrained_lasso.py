"""ConstrainedLasso and ConstrainedLassoCV: the front ends of l1-ball constrained least
squares (paper 001, section 5.1, eq. 22).

    minimize_{w, b}  1/(2 S) sum_i s_i (x_i.w + b - y_i)^2 + l2_reg ||w||_2^2
    subject to       ||w||_1 <= radius                     (S = sum_i s_i)

The estimators validate their input and parameters and store the fitted attributes; the
solvers (Epro-SGD, Epro-ORDA, 'epro_svrg', the paper's baselines and the exact FISTA) are in
the driver :mod:`skstoch._solvers.lasso`.
"""
import dataclasses
import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold, check_cv
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metadata_routing import (MetadataRouter, MethodMapping, _raise_for_params,
                                             _routing_enabled, process_routing)
from sklearn.utils.validation import check_is_fitted

from .._solvers import lasso
from .._solvers._lasso_gram_path import GramPath, gram_path_applies
from .._solvers._lasso_problem import negligible_weights_to_zero
from .._solvers._lasso_radius import SEARCH_TOL, aic_applies, aic_radius
from ..base import (STOCHASTIC_SOLVER_CONSTRAINTS, BaseLinearRegressor, StochasticSolverMixin,
                    regression_targets)
from ..utils import check_sample_weight, make_dataset, validate_data
from ..utils._dataset import full_margins
from ..utils._validation import check_fitted_shapes, fitted_attribute

# the paper's algorithms exactly as published (paper 001, section 5.1): {name: (the
# solver that runs them, the paper's T1, its tuned first step or None for ours)}; whole
# epochs only and the fixed multiplier lam = 0.03 of the paper's Lasso unless given
PAPER_SOLVERS = {"epro_sgd_paper": ("epro_sgd", 8, 0.3), "epro_orda_paper": ("epro_orda", 16, None)}
PAPER_LAM = 0.03
SOLVERS = ("auto",) + lasso.SOLVERS + tuple(PAPER_SOLVERS)

# ConstrainedLassoCV's default path (radii from EPS r_max to r_max) and folds; radius=None
# uses them where the AIC rule does not apply (KFold over the rows of non-zero weight).
# 100 radii as LassoCV's 100 alphas: 30 were too coarse on nearly square data (5-fold CV R²
# 0.934 against LassoCV's 0.987 on make_regression 130 x 100; the user guide's Defaults)
DEFAULT_N_RADII = 100
DEFAULT_EPS = 1e-3
DEFAULT_CV_FOLDS = 5


class ConstrainedLasso(BaseLinearRegressor):
    r"""Least squares under an l1-ball constraint (constrained Lasso), optional ridge term.

    Solves, for each output independently,

    .. math::

        \min_{w, b} \frac{1}{2S}\sum_i s_i (x_i^\top w + b - y_i)^2
        + \text{l2\_reg} \, \|w\|_2^2
        \quad \text{s.t.} \quad \|w\|_1 \le \text{radius},

    with :math:`S = \sum_i s_i` (``sample_weight``, all ones by default).  The intercept
    :math:`b` is neither constrained nor penalized.  This is eq. 22 of Chen et al.,
    "Optimal Stochastic Strongly Convex Optimization with a Logarithmic Number of
    Projections" (paper 001), whose ridge strength is ``l2_reg`` here (the paper used
    ``l2_reg=1``, ``radius=0.5``); the ridge term has no factor 1/2 (the paper's form).  By
    default there is no ridge term (``l2_reg=0``: the constrained Lasso) and the radius is
    chosen along the path of radii, by AIC or, on wide data, by cross-validation (see
    ``radius``).

    Read more in the :doc:`User Guide </user_guide/constrained_lasso>`.

    Parameters
    ----------
    radius : float or None, default=None
        Radius of the l1 ball (>= 0).  None: chosen from the data per output, along the
        path of radii up to ``||w_ls||_1`` (the unconstrained least-squares or ridge fit),
        fitted by the exact solver with warm starts; the value used is ``radius_``.  With
        at least twice as many samples of non-zero weight as coefficients, the radius of
        smallest AIC (as scikit-learn's ``LassoLarsIC``: degrees of freedom = non-zero
        coefficients, noise variance from the least-squares residuals; 100 radii, on the
        centred Gram matrix, so about one pass over X); otherwise (wide or nearly square
        data, no noise estimate; or a sparse X of more than 4096 features whose values
        take less memory than its d x d Gram matrix)
        :class:`ConstrainedLassoCV`'s default cross-validated choice, KFold(5) over the rows
        of non-zero weight, at about its cost.  The fit then starts from the
        path's solution at the radius before it (this replaces a ``warm_start``).  Pass a
        radius to skip the search.
        ``radius = ||w_lasso||_1`` reproduces a ``Lasso`` solution (with ``l2_reg=0``).
        The paper used 0.5 on its own data.
    l2_reg : float, default=0.0
        Strength of the ridge term ``l2_reg ||w||_2^2`` (>= 0); the objective is then
        ``2 * l2_reg`` strongly convex, which the paper's rates assume (the paper used 1).
        Not an l1 weight: the l1 norm is bounded by ``radius``.
    solver : str, default='auto'
        One of 'auto', 'fista', 'epro_sgd', 'epro_orda', 'epro_svrg', 'sgd', 'oneproj',
        'epro_sgd_paper', 'epro_orda_paper'.

        - 'fista': exact accelerated projected gradient (machine precision reachable).
        - 'epro_sgd': Epro-SGD, paper Alg. 1 (one projection per doubling epoch).
        - 'epro_orda': Epro-ORDA, paper Alg. 3 with g(w) = l2_reg ||w||^2.
        - 'epro_sgd_paper', 'epro_orda_paper': Alg. 1 / Alg. 3 as published, with the
          paper's settings where ours differ: first epoch T1 = 8 / 16, whole epochs only
          (``use_full_budget`` ignored), the fixed multiplier ``lam=0.03`` (unless a float
          is given) and, for Epro-SGD, the paper's tuned first step ``eta0=0.3`` (unless
          given; it was tuned for the paper's normalized data).  One difference remains in
          the kernel: the penalty subgradient is truncated at zero (see the user guide).
        - 'sgd': projected SGD, a projection after every step (paper baseline).
        - 'oneproj': SGD on a smoothed penalty, one final projection (paper baseline).
        - 'epro_svrg': beyond the paper: the epoch-projection loop with prox-SVRG epochs
          (one full gradient per epoch, doubling epochs of constant step, the epoch's
          l1 penalty searched so that its output lands on the ball; see the user guide).
        - 'auto': 'fista' for every input (measured, see the user guide: at the default
          budget and tolerance the stochastic solvers were slower on the dense
          1,000,000 x 100 benchmark and slower and far less accurate on a correlated,
          badly scaled sparse 200,000 x 20,000 problem; they win only with a small budget
          tuned to nearly orthogonal data).
    max_iter : int or None, default=None
        For the stochastic solvers, the budget T of stochastic gradients (sampled rows);
        None means ``max(10 * n_samples, 100)``.  For 'fista', the total number of FISTA
        iterations; None means 10000 with ``working_set=True`` (an iteration costs a mat-vec
        with the working set's Gram matrix) and 1000 without (two passes over X each).
    tol : float, default=1e-4
        Every solver stops when the relative duality gap, the Frank-Wolfe gap divided by
        F(0) (the objective at w = 0 with its optimal intercept, half the weighted variance
        of y), is <= ``tol``: the ``relative_gap`` column of ``history_``, an upper bound on
        ``(F(coef_) - F*) / F(0)``.  'fista' evaluates it every outer iteration (every 5
        iterations without working sets), the stochastic solvers at every projection (every
        checkpoint for the baselines; one more pass over X each).  A fit that ends its
        budget (``max_iter``) above ``tol`` raises a ConvergenceWarning giving the value
        reached.  ``tol=0`` runs the whole budget without that warning.
    eta0 : float or 'auto', default='auto'
        Step size.  Epoch solvers: the first epoch's step (halved per epoch by Epro-SGD,
        divided by sqrt(2) by Epro-ORDA).  Baselines: eta_t = eta0 / t (the paper's rule).
        'auto' uses the safe row step 1 / max_i (c_i ||x_i||^2 + 2 l2_reg), except for
        'epro_orda' (and 'epro_orda_paper'): min(1 / (2 l2_reg), 64 times the safe row
        step), 64 times it when l2_reg = 0; for the baselines, eta_t = 1 / (1/eta0 +
        2 l2_reg (t - 1)); 'epro_sgd_paper' uses 0.3.  The paper's tuned values (0.3 Epro,
        0.5 SGD, 0.1 OneProj) depend on the data scale.
    lam : float or 'auto', default='auto'
        Multiplier of the exact penalty lam [||w||_1 - radius]_+ used inside the epochs
        (the paper's lambda; the paper used 0.03 for its Lasso).  Also OneProj's penalty
        weight.  'auto' (our default, not in the paper) sets it before every epoch (every
        checkpoint for 'oneproj') to 0.9 times the constraint's Lagrange multiplier
        estimated at the projected start: the smaller of ``-grad.w / ||w||_1`` and the
        multiplier implied by projecting an exact line-search step along -grad (the latter
        alone strictly inside the ball, e.g. at the start w = 0), at the cost of about two
        passes over X per epoch.  A
        fixed lam far above the multiplier makes the averaged iterate land strictly inside
        the ball when the SGD noise keeps the raw iterate's l1 norm above the radius
        (sparse, high-dimensional data): the penalty is then always on and acts as a Lasso
        penalty of strength lam (see the user guide).
        The value used in the last epoch is ``lam_``.
    first_epoch_length : int or None, default=None
        T1.  None means: for 'epro_sgd' with ``eta0='auto'``, T1 = ceil(2 / (l2_reg eta0))
        (the theory's T1 eta_1 kept for the stable step; n when l2_reg = 0), capped at n and
        at ``max_iter // 7`` (at least three epochs), at least 8 (user guide); for
        'epro_sgd' with a float ``eta0`` and for 'epro_sgd_paper', the paper's 8; for
        'epro_orda' and 'epro_orda_paper', the paper's 16; for 'epro_svrg' (whose epochs
        also double, with a constant step), n/8, at most ``max_iter - n``, at least 8.
        Ignored by 'sgd', 'oneproj' and 'fista'.
    use_full_budget : bool, default=True
        The paper runs an epoch only if it fits whole in the budget, which leaves up to half
        of ``max_iter`` unused; True (default) adds the leftover to the last epoch.
        ``budget_used_`` reports what was used.
    working_set : bool, default=True
        'fista' only.  True: outer iterations compute the full gradient and duality gap
        (two passes over X; one for a CSR X when the last working set holds at most 1/8
        of the features: X w then comes from its columns), then FISTA solves the problem
        restricted to a working set (the support plus the coordinates of largest
        ``|gradient|``, at least 256, growing) on that set's centered Gram matrix (formed
        in one pass over X), with no pass over X per iteration.  With d <= 256 the working
        set is every feature, i.e. FISTA on a cached Gram matrix.  Sets beyond 4096
        features fall back to plain FISTA.  False: plain FISTA on all features.
    orda_gradient_point : {'x', 'u'}, default='u'
        'epro_orda' only: where ORDA takes the stochastic gradient, at x_t as the paper's
        Alg. 2 writes it ('x') or at the extrapolated point u_t = (1 - theta_t) x_t +
        theta_t z_t as in the original ORDA of Chen, Lin and Pena ('u', our default: relative
        suboptimality 8.8e-4 against 1.4e-3 for 'x' after 10 passes on a generated dense
        problem, equal on a sparse one).
    fit_intercept : bool, default=True
        Fit an unconstrained, unpenalized intercept.  The exact solver eliminates it
        (centered design, never formed); the stochastic solvers update it with the other
        coordinates and reset it to its exact optimum given w at every projection.
    warm_start : bool, default=False
        Start from the previous ``coef_`` (projected onto the ball); a previous fit of
        another shape (features or outputs) is no start: the fit starts from zero.
    track_objective : bool, default=True
        Stochastic solvers with ``tol=0``: evaluate the objective and the gap (two passes
        over X) at every projection (every checkpoint for the baselines) for ``history_``.
        False evaluates them for the last record only, which saves about 2 log2(max_iter)
        passes.  With ``tol > 0`` they are evaluated at every record (the stopping rule).
    verbose : int, default=0
    random_state : int, RandomState instance or None, default=None
        Seed of the sampling of the stochastic solvers.
    callback : callable or None, default=None
        ``callback(record) -> bool`` after every record of ``history_``, with the
        current point (projected, inside the ball) under ``"x"``; True stops.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
        Always inside the l1 ball (it is the output of an exact projection).
    intercept_ : float or ndarray of shape (n_targets,)
    n_iter_ : int
        Stochastic gradients used (stochastic solvers, full gradients of 'epro_svrg'
        counted as n each) or FISTA iterations ('fista'; 0 when the start already meets
        ``tol``, e.g. a warm start at the solution); max over outputs.  It is the last
        ``iteration`` of ``history_``.
    n_projections_ : int
        l1-ball projections performed (max over outputs).
    n_epochs_ : int
    budget_used_ : int
        Stochastic gradients actually used out of ``max_iter`` (stochastic solvers).
    dual_gap_ : float or ndarray of shape (n_targets,)
        Frank-Wolfe gap at the solution: ``F(coef_) - F* <= dual_gap_``.
    radius_ : float or ndarray of shape (n_targets,)
        The radius used (``radius``, or its value derived from the data when None).
    lam_ : float or ndarray of shape (n_targets,)
        Stochastic solvers: the exact-penalty multiplier of the last epoch (``lam`` or its
        'auto' estimate).  'fista': the constraint's Lagrange multiplier at the solution,
        i.e. the l1 penalty of the equivalent penalized (ElasticNet-form) problem.
    solver_ : str
        The solver that ran (resolves 'auto').
    history_ : dict of ndarray or list of dict
        One record per epoch (per doubling checkpoint 8, 24, 56, ... for the baselines;
        per outer working-set iteration and at the end for 'fista', every 5 iterations with
        ``working_set=False``), as equal-length arrays (a list of them for a 2-d ``y``):
        ``iteration`` (the unit of ``n_iter_``), ``objective`` (the exact objective at the
        recorded point: the projected epoch output, the projected running average for the
        baselines, the FISTA iterate; NaN where ``track_objective=False`` skipped it),
        ``step_size`` (the epoch's step; for 'fista' 1 / L, with working sets the last
        working set's, NaN before the first), ``time`` (seconds since the fit started),
        ``gap`` (Frank-Wolfe) and ``relative_gap`` (the ``tol`` criterion), and per solver
        ``epoch``, ``epoch_length``, ``n_gradients``, ``relative_change`` (of the recorded
        point), ``working_set_size``.
    seed_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)

    See Also
    --------
    ConstrainedLassoCV : the radius chosen by cross-validation.
    sklearn.linear_model.Lasso : the penalized form.

    References
    ----------
    J. Chen, T. Yang, Q. Lin, L. Zhang and Y. Chang, "Optimal Stochastic Strongly Convex
    Optimization with a Logarithmic Number of Projections" (arXiv:1304.5504). Epro-SGD
    (Alg. 1), Epro-ORDA (Alg. 3), the baselines and the Lasso experiment (section 5.1,
    eq. 22).

    X. Chen, Q. Lin and J. Pena, "Optimal Regularized Dual Averaging Methods for Stochastic
    Optimization", NIPS 2012.  ORDA, the inner solver of Epro-ORDA.

    A. Beck and M. Teboulle, "A Fast Iterative Shrinkage-Thresholding Algorithm for Linear
    Inverse Problems", SIAM J. Imaging Sciences 2(1):183-202, 2009.  FISTA ('fista').

    B. O'Donoghue and E. Candes, "Adaptive Restart for Accelerated Gradient Schemes",
    Foundations of Computational Mathematics 15(3):715-732, 2015.  The momentum restart.

    Examples
    --------
    >>> import numpy as np
    >>> from skstoch import ConstrainedLasso
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(100, 5); y = X @ [1.0, -1.0, 0.0, 0.0, 0.0]
    >>> model = ConstrainedLasso(radius=1.0).fit(X, y)
    >>> bool(np.abs(model.coef_).sum() <= 1.0 + 1e-12)
    True
    """


    _parameter_constraints = {
        **STOCHASTIC_SOLVER_CONSTRAINTS,
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "radius": [Interval(Real, 0, None, closed="left"), None],
        "l2_reg": [Interval(Real, 0, None, closed="left")],
        "solver": [StrOptions(set(SOLVERS))],
        "eta0": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "lam": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "first_epoch_length": [Interval(Integral, 1, None, closed="left"), None],
        "use_full_budget": ["boolean"],
        "working_set": ["boolean"],
        "orda_gradient_point": [StrOptions({"x", "u"})],
        "fit_intercept": ["boolean"],
        "warm_start": ["boolean"],
        "track_objective": ["boolean"],
    }

    def __init__(self, *, radius=None, l2_reg=0.0, solver="auto",
                 max_iter=None, tol=1e-4, eta0="auto", lam="auto", first_epoch_length=None,
                 use_full_budget=True, working_set=True, orda_gradient_point="u",
                 fit_intercept=True, warm_start=False, track_objective=True, verbose=0,
                 random_state=None, callback=None):
        self.radius = radius
        self.l2_reg = l2_reg
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.eta0 = eta0
        self.lam = lam
        self.first_epoch_length = first_epoch_length
        self.use_full_budget = use_full_budget
        self.working_set = working_set
        self.orda_gradient_point = orda_gradient_point
        self.fit_intercept = fit_intercept
        self.warm_start = warm_start
        self.track_objective = track_objective
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback

    def _resolve_solver(self, n_samples, sparse=False):
        if self.solver != "auto":
            return self.solver
        # FISTA for every size and format: the stochastic solvers win only with a small
        # budget on nearly orthogonal data, which 'auto' cannot know; on correlated, badly
        # scaled data none reaches 1e-3 relative suboptimality where FISTA reaches machine
        # precision (doc/user_guide/constrained_lasso.rst, "Why solver='auto' is FISTA").
        return "fista"

    def _solver_name(self, X):
        return f"{type(self).__name__}(solver={self._resolve_solver(0)!r})"

    def _check_targets(self, Y, sample_weight):
        pass    # the solvers centre y: LSProblem checks the centred squares

    def _reads_float32(self, X):
        return True    # every solver reads float32 rows in place (products in double)

    def _prepare_fit(self, X, sample_weights, seed):
        """The resolved parameters, the same for every output (``problem.shared``)."""
        solver = self._resolve_solver(X.shape[0], sp.issparse(X))
        eta0, lam = self.eta0, self.lam
        first, use_full_budget = self.first_epoch_length, self.use_full_budget
        if solver in PAPER_SOLVERS:
            solver, paper_t1, paper_eta0 = PAPER_SOLVERS[solver]
            first = paper_t1 if first is None else first
            use_full_budget = False
            lam = PAPER_LAM if isinstance(lam, str) else lam
            if isinstance(eta0, str) and paper_eta0 is not None:
                eta0 = paper_eta0
        max_iter = self.max_iter
        if max_iter is None:
            # at least a few epochs' worth on tiny data (10 rows give 100 gradients)
            max_iter = (10000 if self.working_set else 1000) if solver == "fista" else \
                max(10 * X.shape[0], 100)
        max_iter = int(max_iter)    # a numpy integer at its maximum wraps in max_iter + 1
        return lasso.LassoParams(
            alpha=self.l2_reg, radius=self.radius, solver=solver, max_iter=max_iter,
            tol=self.tol, eta0=eta0, lam=lam,
            first_epoch_length=first, use_full_budget=use_full_budget,
            working_set=self.working_set, orda_at_u=self.orda_gradient_point == "u",
            fit_intercept=self.fit_intercept, track_objective=self.track_objective)

    def _fit_problem(self, problem):
        params = problem.shared
        if params.radius is None:
            if aic_applies(problem.X, problem.sample_weight, params.fit_intercept):
                radius, start = aic_radius(problem.X, problem.dataset, problem.y,
                                           problem.sample_weight, params.alpha,
                                           params.fit_intercept)
            else:
                radius, start = _cv_radius(problem.X, problem.y, problem.sample_weight,
                                           self._path_params(params))
            params = dataclasses.replace(params, radius=radius)
            problem.coef_init = start    # the path's solution at the radius before it
        result = lasso.solve(problem, params, problem.monitor, problem.state)
        problem.monitor.finish(converged=result.converged, criterion=result.criterion_name,
                               value=result.criterion, tol=params.tol,
                               max_iter=params.max_iter)
        return result

    def _path_params(self, params):
        """The parameters of the exact fits along the path of ``radius=None``'s
        cross-validation."""
        return dict(l2_reg=params.alpha, solver="fista", tol=SEARCH_TOL,
                    working_set=self.working_set, fit_intercept=params.fit_intercept,
                    verbose=0)

    def _fitted_extras(self, results, params):
        extras = [r.extra for r in results]
        single = len(extras) == 1
        gaps = np.array([e["gap"] for e in extras])
        lams = np.array([e["lam"] for e in extras])
        radii = np.array([e["radius"] for e in extras])
        return {
            "radius_": float(radii[0]) if single else radii,
            "n_projections_": int(max(e["n_projections"] for e in extras)),
            "n_epochs_": int(max(e["n_epochs"] for e in extras)),
            "budget_used_": int(max(e["budget_used"] for e in extras)),
            "dual_gap_": float(gaps[0]) if single else gaps,
            "lam_": float(lams[0]) if single else lams,
            "solver_": self._resolve_solver(0),
        }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


# ---------------------------------------------------------------------------------------
# cross-validation along a path of radii

# every radius is a fit per fold: a bound that keeps an absurd n_radii an error, not a hang
MAX_RADII = 10_000
# a float32 X with the exact solver: the folds' fits read X in place (test rows weighted 0);
# False copies the training rows, as for float64 (the tests compare the two)
_FOLD_IN_PLACE = True


def _checked_folds(splits, n_samples):
    """The (train, test) index arrays of a cv splitter or iterable, checked: integer
    indices within [0, n_samples) (or boolean masks of length n_samples), train and test
    non-empty, returned as int32 (intp beyond 2**31 - 1 rows).  An unchecked index would
    read past X in the kernels."""
    folds = []
    # int32 indices when they fit: the folds live through every fit of the path
    index_dtype = np.int32 if n_samples <= np.iinfo(np.int32).max else np.intp
    try:
        splits = list(splits)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cv must yield (train, test) index pairs: {exc}") from None
    for k, split in enumerate(splits):
        try:
            train, test = split
        except (TypeError, ValueError):
            raise ValueError(f"cv must yield (train, test) index pairs; split {k} is "
                             f"{split!r}.") from None
        pair = []
        for name, idx in (("train", train), ("test", test)):
            idx = np.asarray(idx)
            if idx.dtype == bool:
                if idx.shape != (n_samples,):
                    raise ValueError(f"cv split {k}: the boolean {name} mask has shape "
                                     f"{idx.shape}, expected ({n_samples},).")
                idx = np.flatnonzero(idx)
            elif idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
                raise ValueError(f"cv split {k}: {name} indices must be a 1-d array of "
                                 f"integers, got dtype {idx.dtype} and shape {idx.shape}.")
            if idx.size == 0:
                raise ValueError(f"cv split {k}: the {name} set is empty.")
            lo, hi = int(idx.min()), int(idx.max())
            if lo < 0 or hi >= n_samples:
                raise ValueError(f"cv split {k}: {name} indices must lie in "
                                 f"[0, {n_samples}) (n_samples), got min {lo} and max {hi}.")
            pair.append(idx.astype(index_dtype, copy=False))
        folds.append(tuple(pair))
    if not folds:
        raise ValueError("cv yielded no split.")
    return folds

def _fold_rows(X, y, sw, train, exact):
    """The training fold's (X, y, sample_weight).  For the exact solver a float32 X is read
    in place, the rows outside the fold weighted 0: the objective divides by the weights'
    sum, so this is the fold's problem without a copy of its rows (a repeated training
    index counts twice, as in a copy)."""
    if _FOLD_IN_PLACE and X.dtype == np.float32 and exact:
        swtr = np.zeros_like(sw)
        np.add.at(swtr, train, sw[train])
        return X, y, swtr
    return X[train], y[train], sw[train]


def _on_gram(est, X, sw):
    """Whether ``est``'s fits along a path of radii on (X, sw) run on one Gram matrix
    (:class:`~skstoch._solvers._lasso_gram_path.GramPath`): the exact solver with working
    sets (which solves each fit on a Gram matrix too), where the Gram matrix is the cheaper
    (:func:`~skstoch._solvers._lasso_gram_path.gram_path_applies`)."""
    return (est._resolve_solver(X.shape[0]) == "fista" and est.working_set
            and gram_path_applies(X, np.count_nonzero(sw)))


def _gram_solutions(X, y, sw, radii, est):
    """(coef, intercept) at each of ``radii`` (increasing) on one Gram matrix, warm-started
    along the path and stopped as ``est``'s exact fits (its ``tol`` and ``max_iter``)."""
    path = GramPath(X, make_dataset(X, float32=True), y, sw, est.l2_reg,
                    est.fit_intercept)
    max_iter = est._prepare_fit(X, None, None).max_iter
    coef = np.zeros(X.shape[1])
    for radius in radii:
        coef = path.solve(radius, coef, est.tol, max_iter)
        yield coef, path.intercept(coef)


def _estimator_solutions(X, y, sw, radii, est):
    """(coef, intercept) at each of ``radii`` (increasing): ``est`` fitted with warm
    starts."""
    est.set_params(warm_start=True)
    for radius in radii:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.set_params(radius=radius).fit(X, y, sample_weight=sw)
        yield est.coef_, est.intercept_


def _path_solutions(X, y, sw, radii, est):
    """(coef, intercept) at each of ``radii`` (increasing) as ``est`` fits the path: on one
    Gram matrix where :func:`_on_gram`, else the estimator radius by radius."""
    solve = _gram_solutions if _on_gram(est, X, sw) else _estimator_solutions
    return solve(X, y, sw, radii, est)


def _path_fold(X, y, sw, fold, train, test, radii, params):
    """Fit the radii (increasing) on train with warm starts; return the test MSEs (printed
    with ``params["verbose"]``, one line per radius), NaN when every test sample has weight
    0 (the fold has nothing to validate on)."""
    if not sw[test].sum() > 0:
        return np.full(len(radii), np.nan)
    est = ConstrainedLasso(**params)
    Xtr, ytr, swtr = _fold_rows(X, y, sw, train, est._resolve_solver(X.shape[0]) == "fista")
    solutions = _path_solutions(Xtr, ytr, swtr, radii, est)
    # a float32 X: test predictions from its rows in place (numpy's X[test] @ coef would
    # cast the test rows to float64)
    rows = make_dataset(X, float32=True) if X.dtype == np.float32 else None
    Xte = X[test] if rows is None else None
    swte, yte = sw[test], y[test]
    mse = np.empty(len(radii))
    for k, (coef, intercept) in enumerate(solutions):
        if rows is None:
            resid = np.asarray(Xte @ coef).ravel() + intercept - yte
        else:
            resid = full_margins(rows, coef, intercept)[test] - yte
        mse[k] = float(swte @ (resid * resid)) / float(swte.sum())
        if params["verbose"]:
            print(f"[ConstrainedLassoCV] fold {fold}: radius={radii[k]:.6g} validation "
                  f"MSE {mse[k]:.6g}")
    return mse


def _radius_path(X, y, sw, l2_reg, fit_intercept, eps, n_radii):
    """ConstrainedLassoCV's radii: ``n_radii`` log-spaced from ``eps r_max`` to ``r_max``
    (the l1 norm of the unconstrained fit), or ``n_radii`` zeros when r_max is 0 (a
    constant target: the same length as the other outputs' paths)."""
    r_max = lasso.radius_max(X, y, sw, l2_reg, fit_intercept)
    if r_max <= 0:
        return np.zeros(n_radii)
    return r_max * np.logspace(math.log10(eps), 0, n_radii)


def _validation_path(X, y, sw, folds, radii, path_params, n_jobs=None):
    """The validation MSE of every radius on every fold, shape (n_radii, n_folds) (the
    folds in parallel threads), and the index of the lowest mean over the folds with test
    weight."""
    mse = Parallel(n_jobs=n_jobs, backend="threading")(
        delayed(_path_fold)(X, y, sw, k, train, test, radii, path_params)
        for k, (train, test) in enumerate(folds))
    mse_path = np.column_stack(mse)
    return mse_path, int(np.argmin(np.nanmean(mse_path, axis=1)))


def _path_refit(X, y, sw, radii, params, path_params):
    """The last of ``radii`` (increasing) refitted on all the data as the folds fitted it:
    warm-started along the path.  Where the constraint is inactive (wide data, radii up to
    interpolation) the minimizers are many: the path's is the one the validation scored,
    while a fit from zero at that radius lands on another (R² 0.63 against 0.99 on a
    fold of make_regression(100, 300, n_informative=5, noise=10))."""
    est = ConstrainedLasso(**path_params)
    if len(radii) > 1:
        coef, intercept = list(_path_solutions(X, y, sw, radii[:-1], est))[-1]
        # the path's solution at the radius before: the warm start of the fit at the last
        est.coef_, est.intercept_ = np.array(coef), float(intercept)
    est.set_params(radius=float(radii[-1]), verbose=params["verbose"], warm_start=True)
    return est.fit(X, y, sample_weight=sw).set_params(warm_start=False)


def _cv_radius(X, y, sw, path_params):
    """``radius=None`` where the AIC rule does not apply (wide or nearly square data):
    ConstrainedLassoCV's default choice (KFold(5) over the rows of non-zero weight along its
    path of radii), and the path's solution on all the data at the radius before it."""
    # weights below float64's resolution count as 0, as in the fits
    rows = np.flatnonzero(negligible_weights_to_zero(sw) > 0)
    start = np.zeros(X.shape[1])
    radii = _radius_path(X, y, sw, path_params["l2_reg"], path_params["fit_intercept"],
                         DEFAULT_EPS, DEFAULT_N_RADII)
    n_splits = min(DEFAULT_CV_FOLDS, len(rows))
    if len(radii) == 1 or n_splits < 2:
        return float(radii[-1]), start
    folds = [(rows[train], rows[test]) for train, test in KFold(n_splits).split(rows)]
    _, best = _validation_path(X, y, sw, folds, radii, path_params)
    if best > 0:
        start = _path_refit(X, y, sw, radii[:best], path_params, path_params).coef_
    return float(radii[best]), start


# the refit's attributes that ConstrainedLassoCV exposes (per output)
_REFIT_ATTRIBUTES = ("coef_", "intercept_", "n_iter_", "n_projections_", "dual_gap_",
                     "history_")


def _cv_attributes(fits, single):
    """The fitted attributes of ConstrainedLassoCV from one (radii, mse_path, radius,
    refitted estimator) per output."""
    radii, mse_paths, radius, estimators = zip(*fits)
    if single:
        est = estimators[0]
        return dict(radii_=radii[0], mse_path_=mse_paths[0], radius_=radius[0],
                    estimator_=est, **{k: getattr(est, k) for k in _REFIT_ATTRIBUTES})
    fitted = dict(radii_=np.array(radii), mse_path_=np.array(mse_paths),
                  radius_=np.array(radius), estimators_=list(estimators),
                  history_=[e.history_ for e in estimators])
    fitted.update({k: np.array([getattr(e, k) for e in estimators])
                   for k in _REFIT_ATTRIBUTES if k != "history_"})
    return fitted


def _splits_with_metadata(cv):
    """Whether ``cv`` is a splitter (or an int / None, scikit-learn's KFold) whose ``split``
    may take routed metadata, rather than an iterable of splits."""
    return cv is None or isinstance(cv, Integral) or hasattr(cv, "split")


class ConstrainedLassoCV(RegressorMixin, StochasticSolverMixin, BaseEstimator):
    """Constrained Lasso with the l1 radius chosen by cross-validation along a path.

    For each fold, the radii are fitted in increasing order, each fit warm-started at the
    previous solution (feasible for the larger ball), and the weighted validation MSE is
    recorded; the radius with the lowest mean MSE is refitted on all the data, along the
    path up to it as the folds fitted it (where the constraint is inactive the minimizers
    are many, and the path's is the one the folds scored).  This is the
    constrained-form analogue of :class:`sklearn.linear_model.LassoCV`.  With a 2-d ``y`` of
    n_targets columns, every output is an independent problem with its own path and its own
    chosen radius; the fitted attributes then gain a leading n_targets axis.

    Read more in the :doc:`User Guide </user_guide/constrained_lasso>`.

    Parameters
    ----------
    l2_reg : float, default=0.0
        Ridge strength, as in :class:`ConstrainedLasso` (not an l1 weight).
    radii : array-like of float or None, default=None
        Radii to try.  None: ``n_radii`` values log-spaced from ``eps * r_max`` to
        ``r_max``, where r_max is the l1 norm of the unconstrained (ridge) solution.
    n_radii : int, default=100
        Number of radii on the path (as :class:`~sklearn.linear_model.LassoCV`'s 100
        alphas; 30 until the path ran on the Gram matrix, and too coarse on nearly square
        data).
    eps : float, default=1e-3
        Smallest radius relative to r_max.
    cv : int, cross-validation generator or iterable, default=5
    solver : str, default='fista'
        Solver of every fit along the path (see :class:`ConstrainedLasso`).
    max_iter, tol, eta0, lam, fit_intercept, random_state
        As in :class:`ConstrainedLasso` (passed to every fit).
    callback : callable or None, default=None
        As in :class:`ConstrainedLasso`, after every record of the refit and of the fits
        along the folds' paths.  With the exact solver and at most 16 times as many
        features as rows, or at most 512 features, a fold's path runs on its Gram matrix
        (beyond 4096 features, when it takes no more memory than X's values; the user
        guide's ``ConstrainedLassoCV`` section) and makes no records: only the refit calls
        it.
    verbose : int, default=0
        1: print the chosen radius, then the refit's records (as :class:`ConstrainedLasso`);
        2 and more: also every fold's validation MSE at every radius, and the records of
        the fits along its path (none where the path runs on the fold's Gram matrix).
    n_jobs : int or None, default=None
        Folds run in parallel (threads: the kernels and BLAS release the GIL).

    Attributes
    ----------
    radius_ : float or ndarray of shape (n_targets,)
        The chosen radius.
    radii_ : ndarray of shape (n_radii,) or (n_targets, n_radii)
        The path, increasing.
    mse_path_ : ndarray of shape (n_radii, n_folds) or (n_targets, n_radii, n_folds)
        Validation mean squared error per radius and fold; NaN for a fold whose test
        samples all have weight 0 (it is left out of the mean that chooses the radius).
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
    intercept_ : float or ndarray of shape (n_targets,)
    n_iter_ : int or ndarray of shape (n_targets,)
        Iterations of the final refit.
    n_projections_, dual_gap_, history_ :
        Of the final refit (per output).
    estimator_ : ConstrainedLasso
        The refitted estimator (single output).
    estimators_ : list of ConstrainedLasso
        The refitted estimators, one per output (multi-output only).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen in ``fit``, when X has string column names.

    See Also
    --------
    ConstrainedLasso : one fit at a given radius.
    sklearn.linear_model.LassoCV : the penalized form's cross-validation.

    References
    ----------
    J. Chen, T. Yang, Q. Lin, L. Zhang and Y. Chang, "Optimal Stochastic Strongly Convex
    Optimization with a Logarithmic Number of Projections" (arXiv:1304.5504). The
    constrained Lasso of section 5.1 (eq. 22), whose radius this estimator selects.

    Examples
    --------
    >>> import numpy as np
    >>> from skstoch import ConstrainedLassoCV
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(200, 10); y = X[:, 0] - X[:, 1] + 0.1 * rng.randn(200)
    >>> cv = ConstrainedLassoCV(n_radii=10).fit(X, y)
    >>> bool(0 < cv.radius_ <= cv.radii_[-1])
    True
    """


    _parameter_constraints = {
        **STOCHASTIC_SOLVER_CONSTRAINTS,
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "l2_reg": [Interval(Real, 0, None, closed="left")],
        "radii": ["array-like", None],
        "n_radii": [Interval(Integral, 1, MAX_RADII, closed="both")],
        "eps": [Interval(Real, 0, 1, closed="neither")],
        "cv": ["cv_object"],
        "solver": [StrOptions(set(SOLVERS))],
        "eta0": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "lam": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "fit_intercept": ["boolean"],
        "n_jobs": [Integral, None],
    }

    def __init__(self, *, l2_reg=0.0, radii=None,
                 n_radii=DEFAULT_N_RADII, eps=DEFAULT_EPS,
                 cv=5, solver="fista", max_iter=None, tol=1e-4, eta0="auto", lam="auto",
                 fit_intercept=True, n_jobs=None, verbose=0, random_state=None,
                 callback=None):
        self.l2_reg = l2_reg
        self.radii = radii
        self.n_radii = n_radii
        self.eps = eps
        self.cv = cv
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.eta0 = eta0
        self.lam = lam
        self.fit_intercept = fit_intercept
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback

    def _estimator_params(self, l2_reg):
        return dict(l2_reg=l2_reg, solver=self.solver, max_iter=self.max_iter,
                    tol=self.tol, eta0=self.eta0, lam=self.lam,
                    fit_intercept=self.fit_intercept, verbose=self.verbose,
                    random_state=self.random_state, callback=self.callback)

    def fit(self, X, y, sample_weight=None, **params):
        """Choose the radius by cross-validation, then refit on all the data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            float32 is read in place (no float64 copy).  With the exact solver
            ('fista', the default) the folds' fits read all of X, the rows outside the
            training fold weighted 0 (the same problem, no copy); the stochastic solvers
            (and a float64 X) copy each fold's training rows, in X's dtype.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Each column is an independent problem with its own radius.
        sample_weight : array-like of shape (n_samples,), default=None
        **params : dict
            Metadata for the ``cv`` splitter, such as ``groups`` for ``GroupKFold``; only
            with ``sklearn.set_config(enable_metadata_routing=True)``, as for
            :class:`sklearn.linear_model.LassoCV`.

        Returns
        -------
        self : object
        """
        _raise_for_params(params, self, "fit")
        self._validate_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             order="C", y_numeric=True, multi_output=True)
        y = regression_targets(y)
        sw = check_sample_weight(sample_weight, X)
        if np.any(sw < 0) or sw.sum() <= 0:
            raise ValueError("sample_weight must be nonnegative and not all zero.")
        radii = None
        if self.radii is not None:
            radii = np.sort(np.asarray(self.radii, dtype=np.float64).ravel())
            if radii.size == 0 or not np.all(np.isfinite(radii)) or np.any(radii < 0):
                raise ValueError(
                    f"radii must be a non-empty array of finite nonnegative floats, "
                    f"got {self.radii!r}.")
        if radii is not None and radii.size > MAX_RADII:
            raise ValueError(f"radii has {radii.size} values; at most {MAX_RADII} are "
                             f"allowed.")
        # a generator cv is drawn once, here (the routing reads only splitters)
        cv = check_cv(self.cv)
        split_params = {}
        if _routing_enabled():
            routed = process_routing(self, "fit", **params)
            if _splits_with_metadata(self.cv):
                split_params = routed.splitter.split
        folds = _checked_folds(cv.split(X, y, **split_params), X.shape[0])
        for k, (train, _) in enumerate(folds):
            if not sw[train].sum() > 0:
                raise ValueError(
                    f"cv split {k}: all {len(train)} training samples have sample_weight 0 "
                    f"(only {np.count_nonzero(sw)} of the {len(sw)} samples have a "
                    f"non-zero weight), so the fold has nothing to fit; every training set "
                    f"needs a sample of non-zero weight (shuffle the splitter, e.g. "
                    f"cv=KFold(5, shuffle=True), or use fewer folds).")
        if not any(sw[test].sum() > 0 for _, test in folds):
            raise ValueError(
                f"every cv split's test samples have sample_weight 0 (only "
                f"{np.count_nonzero(sw)} of the {len(sw)} samples have a non-zero weight): "
                f"no fold can validate a radius; shuffle the splitter, e.g. "
                f"cv=KFold(5, shuffle=True).")
        l2_reg = self.l2_reg
        targets = [y] if y.ndim == 1 else [np.ascontiguousarray(y[:, k])
                                           for k in range(y.shape[1])]
        fits = [self._fit_one(X, t, sw, folds, radii, l2_reg) for t in targets]
        if hasattr(self, "feature_names_in_"):
            # the refits saw the validated array; they predict on the user's DataFrame too
            for _, _, _, est in fits:
                est.feature_names_in_ = self.feature_names_in_
        self.__dict__.update(_cv_attributes(fits, single=y.ndim == 1))
        return self

    def _fit_one(self, X, y, sw, folds, radii, l2_reg):
        """The path, the CV choice and the refit of one output."""
        if radii is None:
            radii = _radius_path(X, y, sw, l2_reg, self.fit_intercept, self.eps,
                                 self.n_radii)
        params = self._estimator_params(l2_reg)
        # the path's n_radii x n_folds fits print their epochs only from verbose=2 on
        path_params = dict(params, verbose=max(self.verbose - 1, 0))
        mse_path, best = _validation_path(X, y, sw, folds, radii, path_params, self.n_jobs)
        radius = float(radii[best])
        if self.verbose:
            print(f"[{type(self).__name__}] radius={radius:.6g} chosen among {len(radii)} "
                  f"radii (mean validation MSE {np.nanmean(mse_path[best]):.6g} over "
                  f"{mse_path.shape[1]} folds); refitting on all the data")
        return radii, mse_path, radius, _path_refit(X, y, sw, radii[:best + 1], params,
                                                    path_params)

    def get_metadata_routing(self):
        """Metadata routing of this estimator: ``fit`` consumes ``sample_weight`` and
        routes the ``cv`` splitter's metadata (``groups``) to its ``split``.

        Returns
        -------
        routing : MetadataRouter
        """
        router = MetadataRouter(owner=type(self).__name__).add_self_request(self)
        if not _splits_with_metadata(self.cv):
            # an iterable of splits takes no metadata (and check_cv would draw a generator)
            return router
        return router.add(splitter=check_cv(self.cv),
                          method_mapping=MethodMapping().add(caller="fit", callee="split"))

    def predict(self, X):
        """Predict with the refitted model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_targets)
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                          reset=False)
        coef = np.asarray(fitted_attribute(self, "coef_"))
        check_fitted_shapes(self, (coef.shape[0] if coef.ndim == 2 else 0, X.shape[1]))
        if np.ndim(self.coef_) == 2:
            return np.asarray(X @ self.coef_.T) + self.intercept_
        return np.asarray(X @ self.coef_).ravel() + self.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        return tags
