"""Large-margin Mahalanobis metric learning by epoch-projection SGD (paper 001, section 4).

The estimator validates its input, resolves its parameters and calls the driver
:func:`skstoch._solvers.lmnn.solve` (the solvers, triplet searches and objective live there).
"""
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._solvers._lmnn_triplets import map_rows
from ._solvers.lmnn import EPRO_SOLVERS, LMNNParams, LMNNProblem, first_epoch_budget, solve
from .base import STOCHASTIC_SOLVER_CONSTRAINTS, StochasticSolverMixin
from .utils import check_allocation, validate_data
from .utils._validation import (check_fitted_array, check_squared_distances, fitted_state_error,
                                reject_string_input)

__all__ = ["LMNNMetric"]

# max_iter="auto", counted in triplet draws (steps x batch_size): _AUTO_DRAWS draws per
# target pair, clipped to [_AUTO_MIN_DRAWS, _AUTO_MAX_DRAWS]; _AUTO_RANDOM_DRAWS for the
# 'random' recipe (validation on training splits only, see the user guide; at batch_size 8
# these are the former 4 passes over a 3-impostor table and 500 / 16,000 / 2,000 steps).
_AUTO_DRAWS = 12
# ... times max(1, n_features / _AUTO_DRAWS_FEATURES): a metric over more features has more
# entries to learn (digits + 20 noise features, 84 features: +0.26 to +0.59 points of
# held-out 3-NN accuracy on training-side validation with 2.6 to 3 times the draws;
# neutral on breast cancer + noise, 50 features; the smaller problems are unchanged)
_AUTO_DRAWS_FEATURES = 32
_AUTO_MIN_DRAWS = 4000
_AUTO_MAX_DRAWS = 128000
_AUTO_RANDOM_DRAWS = 16000
# n_impostors="auto": impostors per target pair for the 'knn' recipe (validation, round 5)
# and for the 'random' recipe (the paper's 3).
_AUTO_IMPOSTORS_KNN = 10
_AUTO_IMPOSTORS_RANDOM = 3
# Upper bound of the step counts (max_iter, first_epoch_length) that reach the kernels as C
# integers (2**40 steps would run for weeks; far larger ones overflowed a C long).
_MAX_STEPS = 2 ** 40
# n_features x n_features float64 arrays a fit may hold at once (see fit)
_DENSE_SQUARE_ARRAYS = 5



def _dense_points(x, name, shape):
    """``x`` as a finite real float64 array of ``shape`` (None: any length on that axis), or a
    ValueError / TypeError naming what is wrong: the arrays a fitted metric is applied to."""
    if hasattr(x, "toarray") or hasattr(x, "tocsr"):
        raise TypeError(f"{name} must be a dense array, got a sparse matrix "
                        f"({type(x).__name__})")
    reject_string_input(x, name)
    if np.iscomplexobj(x):
        raise ValueError(f"{name} holds complex numbers; Complex data not supported.")
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != len(shape) or any(want not in (None, got) for want, got in zip(shape, x.shape)):
        expected = ", ".join("n_pairs" if want is None else str(want) for want in shape)
        raise ValueError(f"{name} must have shape ({expected}{',' * (len(shape) == 1)}), "
                         f"got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or infinity.")
    return x


class _LearnedMetric:
    """``metric(u, v) = sqrt((u - v)' A (u - v))`` for the learned matrix A; a class, not a
    closure, so that a neighbour estimator holding it can be pickled."""

    def __init__(self, A):
        self.A = A

    def __call__(self, u, v):
        d = self.A.shape[0]
        diff = _dense_points(u, "u", (d,)) - _dense_points(v, "v", (d,))
        return float(np.sqrt(max(diff @ self.A @ diff, 0.0)))


class LMNNMetric(ClassNamePrefixFeaturesOutMixin, TransformerMixin, StochasticSolverMixin,
                 BaseEstimator):
    """Large-margin nearest-neighbour Mahalanobis metric learned by epoch-projection SGD.

    Learns a symmetric matrix ``A >= epsilon I`` (the Mahalanobis matrix) minimizing Eq. (21)
    of Chen et al., "Optimal stochastic strongly convex optimization with a logarithmic
    number of projections":

    .. math::

        \\frac{c}{N}\\sum_{(i,j,l)} [\\|x_i-x_j\\|_A^2 - \\|x_i-x_l\\|_A^2 + 1]_+
        + (1-c)\\,\\mathrm{tr}(A L) + \\frac{\\mu_1}{2}\\|A\\|_F^2 + \\mu_2 \\sum_{p\\neq q}|A_{pq}|

    over triplets (i, j, l) where j has the label of i (a target neighbour) and l another
    label (an impostor); ``L`` is the prior matrix (mean outer product of target-pair
    differences: the LMNN "pull" term).  ``transform`` maps X to ``X @ components_.T`` so
    that Euclidean distances there are the learned Mahalanobis distances.

    Read more in the :ref:`User Guide <lmnn>`.

    Parameters
    ----------
    n_components : int, default=None
        Number of rows of ``components_`` kept (the directions of the largest eigenvalues of
        A).  None keeps all ``n_features``; ``metric_`` is always the full matrix.
        Directions along which the training data do not vary have the smallest eigenvalue,
        ``epsilon`` (see Notes), so they come last.
    solver : {'epro_sgd', 'epro_orda', 'sgd', 'oneproj'}, default='epro_sgd'
        'epro_sgd': Algorithm 1 with the proximal step (Eq. 18): unprojected epochs of
        doubling length on the augmented objective, one projection of each epoch average,
        step halved per epoch.  'epro_orda': Algorithm 3 (ORDA epochs, step divided by
        sqrt(2)).  'sgd': proximal SGD projected onto ``A >= epsilon I`` every iteration
        (paper's baseline).  'oneproj': SGD on the smoothed penalty with a single
        projection at the end (Mahdavi et al. 2012, paper's baseline).
    triplet_strategy : {'auto', 'knn', 'random'}, default='auto'
        'knn': the classical LMNN recipe: the ``n_neighbors`` nearest same-class points
        (Euclidean, input space) are the target neighbours, the ``n_impostors`` nearest
        differently-labelled points in the current metric are the impostors, recomputed at
        every epoch end (searches bounded by ``search_size``).  'random': the paper's
        experimental recipe: ``n_neighbors`` random same-class partners per point and
        ``n_impostors`` random differently-labelled points per pair, drawn once (O(n)).
        'auto': 'knn' when ``n_samples <= search_size`` (exact searches), else 'random'
        (measured at n=100,000: 'random' reached 56.4% held-out 3-NN accuracy in 1.964 CPU
        s, the bounded 'knn' searches 51.95% in 1.437 s; ``benchmarks/results/lmnn_scale.md``).
        The recipe used is ``triplet_strategy_``.
    n_neighbors : int, default=3
        Target neighbours per point ('knn') or random same-class partners per point
        ('random', drawn with repetition; the paper used 2).  A class of m points offers
        each of them m - 1 neighbours: with 'knn', the points of a class with
        m <= ``n_neighbors`` repeat their m - 1 neighbours in turn, and every other class
        keeps ``n_neighbors`` distinct ones.  The point of a 1-member class has none: it
        only serves as an impostor of the others (as in NCA, where it gains nothing).  The
        value used, ``n_neighbors_``, is at most the largest class size minus one.
    n_impostors : int or 'auto', default='auto'
        Impostors per target pair.  'auto' gives 10 for the 'knn' recipe (the nearest
        differently-labelled points: with 3 the hinge sees too few of the impostors that
        invade the margin; on the user guide's validation table 3 costs 1.4 points on
        breast cancer with noise) and
        the paper's 3 for the 'random' recipe, at most the size of the smallest set of
        differently-labelled points.  The value used is ``n_impostors_``.
    c : float in [0, 1] or 'auto', default='auto'
        Trade-off between the hinge (push) term and the prior (pull) term.  'auto' gives
        0.5 for the 'knn' recipe (and for ``prior='none'``).  For the 'random' recipe, whose
        fixed random impostors are mostly far, the pull can win: near ``A = epsilon I``
        every hinge is active and a direction v of the metric grows only if
        ``c / (1 - c) > 1 / rho``, rho the largest generalized eigenvalue of (scatter of
        the impostor differences minus scatter of the target differences, prior matrix L)
        on the table.  When ``c / (1 - c) = 1.4 / rho`` (at most 0.9) exceeds 0.5, 'auto'
        fits both 0.5 and that value and keeps the metric with the higher leave-one-out
        3-NN accuracy of every 4th row (1,024 rows) of a fixed, evenly spaced sample of
        4,096 training rows (all rows when fewer), their neighbours searched in that
        sample (0.5 on a tie; the fit then costs about twice as much, and ``history_`` is
        the kept fit's).  On the 20,000 x 50
        synthetic problem with 5 informative features c = 0.5 learned epsilon I, the
        Euclidean metric, on 14 of 20 draws (chosen on training-side validation, see the
        user guide).  The value used is ``c_``.
    mu1 : float, default=1e-4
        Weight of (1/2)||A||_F^2 (strong convexity).
    mu2 : float, default=1e-3
        Weight of the off-diagonal l1 norm of A (sparse metric; 0 gives Eq. 20).
    epsilon : float, default=1e-3
        Lower bound on the eigenvalues of A (the constraint ``A >= epsilon I``).
    prior : {'pairs', 'identity', 'none'}, default='pairs'
        The prior matrix L: mean of (x_i - x_j)(x_i - x_j)' over the target pairs (paper),
        the identity (trace penalty), or none.
    eta0 : 'auto' or float, default='auto'
        Step size of the first epoch.  'auto' sets ``5 / (c s)`` with s the mean squared
        Euclidean length of the pair and impostor differences of a sample of triplets, so
        that a step moves A by O(1) whatever the scale of X (the paper's 1e-5 does nothing
        on standardized data).
    lam : float, default=1.0
        Multiplier of the exact penalty lam [epsilon - lambda_min(A)]_+ inside epochs (and
        of the smoothed penalty of 'oneproj').  Unused by 'sgd'.
    batch_size : int, default=16
        Triplets per stochastic gradient (the paper used 1).  With ``max_iter='auto'`` the
        budget is set in triplet draws, so a larger batch means proportionally fewer steps
        (16 validated as well as 8 at the same number of draws, with fewer Lanczos checks,
        epochs and searches: 21 to 30% less CPU time, as 8 takes 26 to 43% more).  At most the number of triplets
        of a table (anchors x ``n_neighbors_`` x ``n_impostors_``; ``search_size // 4``
        anchors for sampled searches): a larger value is clamped to it.
    max_iter : int or 'auto', default='auto'
        Budget T of stochastic gradient calls (at most 2**40).  Epro runs epochs 8, 16,
        32, ... (16, 32, ... for ORDA) only while they fit completely (paper's rule), so it
        uses between T/2 and T calls unless ``use_full_budget``; 'sgd' and 'oneproj' use T.  'auto'
        sets the number of triplet draws (steps x ``batch_size``): for the 'knn' recipe
        about 12 per target pair and per 32 features, ``12 n_anchors n_neighbors max(1, p /
        32)`` clipped to [4,000, 128,000], n_anchors the points of classes of 2 or more
        (at most ``search_size``), p = min(n_features, n_samples - 1) (chosen by
        validation on training splits: small problems such as wine need a few thousand
        draws, digits + 20 noise features (84) gained with 2 to 3 times 12 per pair, the
        synthetic 5,000 x 200 problem kept improving up to 128,000; it does not grow with
        ``n_impostors``: more impostors at the same budget validated better), and 16,000
        for the 'random' recipe (longer runs there lost accuracy; see
        the user guide); ``max_iter_ = ceil(draws / batch_size)``.
    first_epoch_length : int, default=None
        T1; None gives the paper's 8 ('epro_sgd') or 16 ('epro_orda').  At most 2**40.
    use_full_budget : bool, default=True
        Add the iterations left over by the doubling rule to the last Epro epoch (False is
        the paper's rule).
    search_size : int or None, default=8192
        Bound on the neighbour searches of the 'knn' recipe.  When ``n_samples >
        search_size``, a random pool of ``search_size`` anchors gets its target neighbours
        among the pool, and each epoch end re-searches the impostors of only as many pool
        anchors as the next epoch can use (at least ``search_size // 4``) among
        ``search_size`` freshly drawn points; the cost per refresh is then independent of
        n.  None searches exhaustively (O(n^2 d) per refresh, chunked, memory O(n k)).
    orda_gradient_point : {'x', 'u'}, default='x'
        Where 'epro_orda' evaluates the stochastic gradient: at x_t as the paper's
        Algorithm 2 writes it, or at the extrapolated point u_t = (1 - theta_t) x_t +
        theta_t z_t as in the original ORDA (Chen, Lin & Pena 2012).
    tol : float, default=1e-6
        Stop when ``history_["relative_change"]`` is <= tol: the relative change
        ``||A_k - A_{k-1}||_F / max(||A_{k-1}||_F, 1e-12)`` of the matrix recorded at two
        consecutive epoch ends (Epro: the projected epoch output; 'sgd' / 'oneproj': the (projected)
        running average at the checkpoint).  Otherwise the fit runs its budget ``max_iter``
        (the epoch schedule's guarantee is for the whole budget) without a warning.
    random_state : int, RandomState instance or None, default=None
        Seeds the triplet draws and the kernels' counter-based generator.
    verbose : int, default=0
        Print one line per epoch.
    callback : callable, default=None
        ``callback(record) -> bool`` called after each epoch with the history record and the
        projected matrix under ``"x"``; returning True stops the fit.  When ``c='auto'``
        fits two candidates (see ``c``) it is called for the epochs of both.

    Attributes
    ----------
    metric_ : ndarray of shape (n_features, n_features)
        The learned Mahalanobis matrix A (symmetric, eigenvalues >= epsilon).
    components_ : ndarray of shape (n_components, n_features)
        Factor of A: ``A == components_.T @ components_`` when all components are kept.
    prior_matrix_ : ndarray of shape (n_features, n_features)
        The prior matrix L of the pull term.
    triplets_ : ndarray of shape (n_triplets, 3), int32
        The triplets (anchor, target neighbour, impostor) of the last epoch.
    classes_ : ndarray
    n_iter_ : int
        Stochastic gradient calls used (the last ``history_["iteration"]``; Epro-ORDA's
        epochs make ``T_k + 1`` calls).
    max_iter_ : int
        The budget T used (``max_iter``, or its value under 'auto').
    n_projections_ : int
        Projections onto ``A >= epsilon I`` performed by the solver (one per epoch for
        Epro, one per iteration for 'sgd', one for 'oneproj').
    n_epochs_ : int
    n_neighbors_ : int
        Target neighbours (or partners) per point used (``n_neighbors``, at most the
        largest class size minus one; see ``n_neighbors`` for smaller classes).
    n_impostors_ : int
        Impostors per target pair used (``n_impostors``, or its value under 'auto', at
        most the smallest number of differently-labelled points).
    triplet_strategy_ : str
        The triplet recipe used ('knn' or 'random').
    eta0_ : float
        The step size used for the first epoch.
    c_ : float
        The trade-off ``c`` used (``c``, or its value under 'auto').
    objective_ : float
        Objective (Eq. 21) at ``metric_`` on ``triplets_`` (exact, or the sample estimate
        described under ``history_``).
    history_ : dict of ndarray
        One record per epoch (checkpoint at the same gradient counts for 'sgd'/'oneproj'):
        ``objective``, Eq. (21) at the projected epoch output ('oneproj': the projected
        running average) on the current triplet table, exact for the 'knn' recipe and for
        tables of at most 16,384 triplets, else estimated with the hinge mean on a fixed
        random sample of 16,384 of them; ``iteration`` and ``n_gradients``, the
        stochastic gradient calls used so far (``n_iter_`` is the last); ``step_size``
        (the epoch's step, or the baselines' step at the checkpoint); ``epoch``,
        ``epoch_length``, ``relative_change`` (of the recorded matrix, tested against
        ``tol``) and ``time`` (seconds since the fit started).
    seed_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    sklearn.neighbors.NeighborhoodComponentsAnalysis : full-batch metric learning.

    Notes
    -----
    Deviations from the paper (see the user guide): the paper's step sizes are not portable
    and are replaced by ``eta0='auto'``; the default recipe is the classical k-NN recipe
    rather than the paper's random pairs up to ``search_size`` samples, with 10 nearest
    impostors per target pair; mini-batches of 16 triplets and a budget ``max_iter='auto'``
    (the paper: 1 triplet, 4000 iterations); ``c='auto'`` (the paper's 0.5, except where
    the 'random' recipe's pull would collapse the metric, see ``c``); the per-iteration
    constraint check uses a warm-started Lanczos estimate of lambda_min, which is an upper
    bound, so a violation it misses is repaired by the next epoch-end projection.

    Wide data (``n_features >= n_samples``): every difference of training points lies in
    the span of the centred data (dimension r <= n_samples - 1), so the metric is learned
    as an r x r matrix B on the data expressed in an orthonormal basis U of that span and
    lifted to ``A = U (B - epsilon I) U' + epsilon I`` (the optimum of Eq. 21 when
    ``mu2 = 0``: the directions outside the span get the smallest allowed eigenvalue).
    The cost is then O(n d r) instead of O(d^3) per epoch; the off-diagonal l1 term
    applies to B in the basis U, and ``history_``/``objective_`` are Eq. (21) of that
    r-dimensional problem.  ``metric_`` and ``prior_matrix_`` are still d x d.

    Narrow data whose centred rows span fewer than ``n_features`` directions (a constant
    feature, or collinear ones such as a complete one-hot block): no term of Eq. (21) but
    the regularizers sees those directions, so the solver leaves them near its starting
    identity.  The returned ``metric_`` gives them ``epsilon`` and no coupling to the other
    directions (the optimum's value for constant features); distances between training
    rows are unchanged, and ``n_components`` keeps learned directions first.  ``history_``
    is the solver's; ``objective_`` is Eq. (21) at the returned ``metric_``.

    References
    ----------
    .. [1] J. Chen, T. Yang, Q. Lin, L. Zhang and Y. Chang, "Optimal Stochastic Strongly
       Convex Optimization with a Logarithmic Number of Projections", section 4 (an earlier
       version: T. Yang and L. Zhang, "Efficient Stochastic Gradient Descent for Strongly
       Convex Optimization", arXiv:1304.5504).
    .. [2] K. Q. Weinberger and L. K. Saul, "Distance Metric Learning for Large Margin
       Nearest Neighbor Classification", JMLR 10:207-244, 2009.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skstoch import LMNNMetric
    >>> X, y = load_wine(return_X_y=True)
    >>> model = make_pipeline(StandardScaler(), LMNNMetric(random_state=0),
    ...                       KNeighborsClassifier(3)).fit(X, y)
    >>> model.score(X, y) > 0.9
    True
    """

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "solver": [StrOptions({"epro_sgd", "epro_orda", "sgd", "oneproj"})],
        "triplet_strategy": [StrOptions({"auto", "knn", "random"})],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "n_impostors": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "c": [Interval(Real, 0, 1, closed="both"), StrOptions({"auto"})],
        "mu1": [Interval(Real, 0, None, closed="left")],
        "mu2": [Interval(Real, 0, None, closed="left")],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "prior": [StrOptions({"pairs", "identity", "none"})],
        "eta0": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "lam": [Interval(Real, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "first_epoch_length": [Interval(Integral, 1, _MAX_STEPS, closed="both"), None],
        "use_full_budget": ["boolean"],
        "search_size": [Interval(Integral, 16, None, closed="left"), None],
        "orda_gradient_point": [StrOptions({"x", "u"})],
        **STOCHASTIC_SOLVER_CONSTRAINTS,
        "max_iter": [Interval(Integral, 1, _MAX_STEPS, closed="both"), StrOptions({"auto"})],
    }

    def __init__(self, n_components=None, *, solver="epro_sgd", triplet_strategy="auto",
                 n_neighbors=3, n_impostors="auto", c="auto", mu1=1e-4, mu2=1e-3, epsilon=1e-3,
                 prior="pairs", eta0="auto", lam=1.0, batch_size=16, max_iter="auto",
                 first_epoch_length=None, use_full_budget=True, search_size=8192,
                 orda_gradient_point="x", tol=1e-6, random_state=None, verbose=0,
                 callback=None):
        self.n_components = n_components
        self.solver = solver
        self.triplet_strategy = triplet_strategy
        self.n_neighbors = n_neighbors
        self.n_impostors = n_impostors
        self.c = c
        self.mu1 = mu1
        self.mu2 = mu2
        self.epsilon = epsilon
        self.prior = prior
        self.eta0 = eta0
        self.lam = lam
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.first_epoch_length = first_epoch_length
        self.use_full_budget = use_full_budget
        self.search_size = search_size
        self.orda_gradient_point = orda_gradient_point
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y):
        """Learn the Mahalanobis matrix from labelled data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (dense; standardize it first, e.g. with ``StandardScaler``).
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : LMNNMetric
        """
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], ensure_min_samples=2)
        check_classification_targets(y)
        # float32 stays float32: the kernels and the blocked products read it as float32
        # rows widened to float64 (no float64 copy of X; wide data excepted)
        X = np.ascontiguousarray(X)
        check_squared_distances(X, "compared by the neighbour searches and the hinge terms",
                                "scale X (e.g. with StandardScaler) before fitting")
        d = X.shape[1]
        # metric_, prior_matrix_ and components_ are d x d, and a wide fit's lift builds a
        # d x d product and (n_components > rank) a complete QR basis: on wide data these
        # dwarf X (20 x 200,000 asked numpy for 298 GiB at once)
        check_allocation(8 * _DENSE_SQUARE_ARRAYS * d * d,
                         f"n_features={d} (metric_, prior_matrix_ and components_ are "
                         f"n_features x n_features)")
        if self.n_components is not None and self.n_components > X.shape[1]:
            raise ValueError(
                f"n_components={self.n_components} must be <= n_features={X.shape[1]}."
            )
        classes, y_enc = np.unique(y, return_inverse=True)
        counts = np.bincount(y_enc)
        strategy = self._check_classes(classes, counts, X.shape[0])
        params = self._resolve_params(X.shape, strategy, counts, self._draw_seed())
        monitor = self._make_monitor(f"LMNNMetric(solver={self.solver!r})")
        result = solve(LMNNProblem(X, y_enc), params, monitor)
        if params.solver in EPRO_SOLVERS:
            # the baselines are the paper's fixed-budget comparisons: no warning
            monitor.finish(converged=result.converged, criterion=result.criterion_name,
                           value=result.criterion, tol=self.tol, max_iter=params.max_iter)
        extra = result.extra
        self.classes_ = classes
        self.triplet_strategy_ = strategy
        self.n_neighbors_ = params.n_neighbors
        self.n_impostors_ = params.n_impostors
        self.max_iter_ = params.max_iter
        self.seed_ = params.seed
        self.eta0_ = extra["eta0"]
        self.c_ = float(extra["c"])
        self.prior_matrix_ = extra["prior"]
        self.metric_ = result.x
        self.components_ = extra["components"]
        self.triplets_ = extra["triplets"]
        self.objective_ = extra["objective"]
        self.n_iter_ = int(result.n_iter)
        self.n_projections_ = int(extra["n_projections"])
        self.n_epochs_ = int(extra["n_epochs"])
        self.history_ = monitor.history()
        return self

    def _check_classes(self, classes, counts, n_samples):
        """The triplet recipe used, after checking that every class can form triplets."""
        if len(classes) < 2:
            raise ValueError(
                f"LMNNMetric needs samples of at least 2 classes, got 1 class "
                f"({classes[0]}): there are no impostors to push away."
            )
        if counts.max() < 2:
            raise ValueError(
                f"Every one of the {len(classes)} classes has 1 member: LMNNMetric needs a "
                "class of at least 2 members to form a target pair (a point and a "
                "same-class neighbour)."
            )
        strategy = self.triplet_strategy
        if strategy == "auto":
            exhaustive = self.search_size is None or n_samples <= self.search_size
            strategy = "knn" if exhaustive else "random"
        return strategy

    def _resolve_params(self, shape, strategy, counts, seed):
        """The driver's parameters, with the 'auto' values resolved and the sizes that
        reach the kernels clamped to the data (``counts``: members per class)."""
        n_samples, n_features = shape
        if self.n_impostors == "auto":
            n_impostors = _AUTO_IMPOSTORS_KNN if strategy == "knn" else _AUTO_IMPOSTORS_RANDOM
        else:
            n_impostors = int(self.n_impostors)
        # no more target neighbours than the largest class has other members (anchors of a
        # smaller class repeat theirs), no more impostors than the smallest complement
        n_neighbors = min(int(self.n_neighbors), int(counts.max()) - 1)
        n_impostors = min(n_impostors, n_samples - int(counts.max()))
        # the points of 1-member classes are no anchors (they have no target neighbour)
        n_anchors = int(np.sum(counts[counts >= 2]))
        batch_size = min(int(self.batch_size),
                         _smallest_table(n_samples, n_anchors, self.search_size, strategy,
                                         n_neighbors, n_impostors))
        if self.max_iter != "auto":
            max_iter = int(self.max_iter)
        elif strategy == "random":
            # the draws rule was validated for the k-NN recipe only; with random triplets
            # longer runs drift to the (degenerate) optimum: at n=100,000 x 100, 16,000
            # steps of 8 gave 49.4% 3-NN accuracy against 56.8% with 2,000 (Euclidean 49.6%)
            max_iter = -(-_AUTO_RANDOM_DRAWS // batch_size)
        else:
            if self.search_size is not None:
                n_anchors = min(n_anchors, self.search_size)
            # wide data learns the metric on the data's span, of dimension < n_samples
            width = max(1.0, min(n_features, n_samples - 1) / _AUTO_DRAWS_FEATURES)
            draws = int(np.clip(_AUTO_DRAWS * n_anchors * n_neighbors * width,
                                _AUTO_MIN_DRAWS, _AUTO_MAX_DRAWS))
            max_iter = -(-draws // batch_size)
        if self.max_iter == "auto" and self.solver in EPRO_SOLVERS:
            # a large batch_size divides the draws into fewer steps than the first epoch
            max_iter = max(max_iter, first_epoch_budget(self.solver, self.first_epoch_length))
        return LMNNParams(
            solver=self.solver, triplet_strategy=strategy, n_neighbors=n_neighbors,
            n_impostors=n_impostors, search_size=self.search_size,
            c=None if self.c == "auto" else float(self.c), mu1=self.mu1,
            mu2=self.mu2, epsilon=self.epsilon, prior=self.prior,
            eta0=None if self.eta0 == "auto" else float(self.eta0), lam=self.lam,
            batch_size=batch_size, max_iter=max_iter,
            first_epoch_length=self.first_epoch_length, use_full_budget=self.use_full_budget,
            orda_gradient_point=self.orda_gradient_point, tol=self.tol,
            n_components=n_features if self.n_components is None else self.n_components,
            seed=seed)

    @property
    def _n_features_out(self):
        """Output width for ``get_feature_names_out`` (derived, not stored by ``fit``)."""
        return self._fitted_array("components_", (None, self.n_features_in_)).shape[0]

    def _fitted_array(self, name, shape):
        """``components_`` or ``metric_`` after checking its dtype, shape (``None``: any
        positive length) and values against the fit: a tampered array must raise, not give
        NaN, complex or misshapen outputs."""
        check_is_fitted(self)
        a = check_fitted_array(self, name, shape, finite=True)
        if 0 in a.shape:
            raise fitted_state_error(self, f"{name} is empty (shape {a.shape})")
        return a

    # ------------------------------------------------------------------ API
    def transform(self, X):
        """Map X into the learned space: ``X @ components_.T``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        components = self._fitted_array("components_", (None, X.shape[1]))
        # a float32 X is widened a block of rows at a time (no float64 copy of X)
        return map_rows(X, components.T)

    def get_mahalanobis_matrix(self):
        """The learned Mahalanobis matrix A (``metric_``), checked as ``get_metric`` checks
        it (a tampered ``metric_`` is a ValueError here too)."""
        d = getattr(self, "n_features_in_", None)
        return self._fitted_array("metric_", (d, d))

    def get_metric(self):
        """A callable ``metric(u, v)`` returning the learned distance sqrt((u-v)' A (u-v))
        (usable as ``metric=`` of scikit-learn's neighbour estimators, which then pickle)."""
        return _LearnedMetric(self.get_mahalanobis_matrix().copy())

    def pair_distance(self, pairs):
        """Learned distance of each pair.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)

        Returns
        -------
        distances : ndarray of shape (n_pairs,)
        """
        A = self.get_mahalanobis_matrix()
        pairs = _dense_points(pairs, "pairs", (None, 2, self.n_features_in_))
        diff = pairs[:, 0] - pairs[:, 1]
        return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", diff, A, diff), 0.0))

    def pair_score(self, pairs):
        """Opposite of :meth:`pair_distance` (higher means more similar)."""
        return -self.pair_distance(pairs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags



def _smallest_table(n_samples, n_anchors, search_size, strategy, n_neighbors, n_impostors):
    """Triplets in the smallest table the fit can use (the bound of ``batch_size``): every
    anchor's pairs times impostors, or for sampled 'knn' searches the ``search_size // 4``
    anchors a refresh re-searches at least."""
    if strategy == "knn" and search_size is not None and n_samples > search_size:
        n_anchors = min(n_anchors, search_size // 4)
    return n_anchors * n_neighbors * n_impostors
