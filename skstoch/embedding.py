"""Ordinal embedding from triplet / quadruplet comparisons: full-batch L-BFGS by default, the
paper's mini-batch SVRG with a stabilized Barzilai-Borwein step (paper 000) as
``solver='svrg_sbb'``."""
from numbers import Integral, Real

import numpy as np
from sklearn.base import (BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                          _fit_context)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils._set_output import _wrap_data_with_container
from sklearn.utils.validation import check_is_fitted

from ._comparisons import check_comparisons
from ._solvers.ordinal import (OrdinalParams, OrdinalProblem, satisfied, solve,
                               warn_if_risen, warn_line_search_failed)
from .base import STOCHASTIC_SOLVER_CONSTRAINTS, StochasticSolverMixin
from .utils._validation import (available_memory, check_fitted_array, fitted_state_error,
                                is_integer, reject_string_input)
from .utils._warnings import warn

__all__ = ["OrdinalEmbedding"]


# (n_objects, n_components) float64 arrays a fit keeps alive at once, by solver: iterate,
# gradient, best and previous iterates, snapshot; L-BFGS-B adds its 10 correction pairs and
# work arrays (scipy's wa of 2mn + 5n + 11m^2 + 8m doubles, m = 10).
_INT32_MAX = 2**31 - 1   # bound of the integers that reach the kernels' loop counters
_ARRAYS_PER_FIT = {"lbfgs": 32, "svrg_sbb": 10, "svrg": 10, "sgd": 8, "gd": 8}
_MINI_BATCH_SOLVERS = ("svrg_sbb", "svrg", "sgd")


class OrdinalEmbedding(ClassNamePrefixFeaturesOutMixin, TransformerMixin, StochasticSolverMixin,
                       BaseEstimator, auto_wrap_output_keys=None):
    """Embedding of objects from ordinal comparisons, fitted by default by full-batch L-BFGS;
    ``solver='svrg_sbb'`` runs the paper's mini-batch SVRG with a stabilized Barzilai-Borwein
    step (SVRG-SBB, Ma et al., TKDE 2019, Algorithm 1, errata fixed); it is the published
    method with a float ``epsilon``, e.g. ``epsilon=0.01`` (the default ``epsilon='auto'``
    is ours).

    Given comparisons "object i is closer to j than to k" (triplets) or "pair (i, j) is closer
    than pair (l, k)" (quadruplets), find points ``x_1, ..., x_n`` in ``R^p`` minimising the
    mean over comparisons of a loss of the squared distances ``d^2(i, j)`` and ``d^2(l, k)``.
    The problem is solved directly in the points (non-convex, no Gram matrix, no PSD
    projection), as in the paper.

    Read more in the :ref:`User Guide <ordinal_embedding>`.

    Parameters
    ----------
    n_components : int, default=2
        Dimension ``p`` of the embedding.
    loss : {'ste', 'tste', 'gnmds', 'ckl', 'soe'}, default='ste'
        Per-comparison loss with ``a = d^2(i, j)``, ``c = d^2(l, k)``:

        - ``'ste'``: ``log(1 + exp(a - c))`` (stochastic triplet embedding);
        - ``'tste'``: ``-log(w_a / (w_a + w_c))``, ``w = (1 + d^2 / alpha)^(-(alpha + 1) / 2)``;
        - ``'gnmds'``: hinge ``max(0, margin + a - c)``;
        - ``'ckl'``: ``-log((mu + c) / (2 mu + a + c))`` (Tamuz et al.'s crowd kernel; the
          paper's eq. 47 as printed equals STE, see the user guide);
        - ``'soe'``: ``max(0, sqrt(a) + margin - sqrt(c))^2`` (soft ordinal embedding, not in
          the paper; the same objective as cblearn's ``SOE``).
    solver : {'lbfgs', 'svrg_sbb', 'svrg', 'sgd', 'gd'}, default='lbfgs'
        ``'svrg_sbb'``: Algorithm 1 of the paper as published, errata fixed (mini-batch
        SVRG, stabilized BB step from the second epoch on, the last snapshot returned); with
        ``epsilon=0.01`` also the paper's absolute stabilizer (the paper gives no value; its
        reference code uses 1e-5 to 2.5e-2).  ``'svrg'``: the same with the fixed step
        ``eta0``; ``'sgd'``: mini-batch SGD with step ``eta0 / (1 + 0.01 epoch)``; ``'gd'``:
        full-batch gradient descent with the fixed step ``eta0``.  The last three are the
        paper's baselines.
        ``'lbfgs'`` (not in the paper; the default): full-batch L-BFGS (scipy's L-BFGS-B
        without bounds) on the same compiled one-pass loss and gradient, one pass per
        iteration plus line-search passes, returning the lowest-objective iterate.  It is the
        default because at the default budget (``n_components=2``) it ends at a lower
        objective than ``'svrg_sbb'`` for all five losses, with the same held-out accuracy
        within 0.01, in less CPU time (``benchmarks/results/ordinal_embedding_defaults.md``;
        at ``n_components=10`` the paper's solver generalizes slightly better on STE, GNMDS and
        SOE): an SVRG epoch costs three passes over the comparisons, and the
        quasi-Newton direction makes more progress per pass on these small, smooth problems.
        ``epsilon``, ``eta0`` and ``batch_size`` are ignored by ``'lbfgs'``.
    epsilon : float or 'auto', default='auto'
        Stabilizer of the SBB step (eq. 14): ``eta = |dx|^2 / (m (|<dx, dg>| + epsilon
        |dx|^2))``, which bounds the step by ``1 / (m epsilon)``.  A float is the paper's
        absolute ``epsilon`` (``0.01``: a value inside the reference code's range); ``0`` is
        its SBB0 (allowed; it can blow up on non-convex problems).  ``'auto'`` (not in the
        paper, which leaves ``epsilon`` to the user) sets it once, before the first epoch, to
        ``0.05 * kappa0``, where ``kappa0 = |<dx, dg>| / |dx|^2`` is the curvature probed along
        the first gradient: the step then never exceeds 20 times the BB step ``1 / (m kappa0)``
        at the start, whatever the number of objects and comparisons (an absolute epsilon that
        suits 100 objects caps the step far below the curvature scale for thousands of
        objects).
    batch_size : int, default=10
        Mini-batch size ``b`` (comparisons drawn uniformly with replacement per inner step);
        an inner step moves by ``b * eta`` (``'svrg_sbb'``, ``'svrg'``, ``'sgd'``).
    inner_iter : int, default=None
        ``m`` of the paper; an epoch runs ``max(m // batch_size, 1)`` inner steps.  ``None``
        uses the number of comparisons (the paper's setting).
    inner_update : {'lazy', 'dense'}, default='lazy'
        How ``'svrg_sbb'`` and ``'svrg'`` apply the dense full-gradient term ``b eta g`` of
        each inner step.  ``'lazy'``: each row catches up on the dense steps it owes when it
        is next read, and all rows at the end of the epoch (exact; ``O(b p)`` per step).
        ``'dense'``: subtract it from all ``n_objects`` rows at every step, ``O(n p)`` per
        step, as the paper's code does.  Both give the same iterates up to rounding;
        ``'dense'`` exists only to reproduce the paper's cost model (Table I: time against
        batch size), where mini-batches pay off because they cut the number of dense updates
        by ``b``.  Ignored by the other solvers.
    eta0 : float, default=None
        Step of the first epoch (``'svrg_sbb'``) or of every epoch (``'svrg'``, ``'sgd'``),
        in the units of Algorithm 1 (an epoch moves the embedding by about ``m * eta0`` times
        the gradient); for ``'gd'`` the step of each full-gradient iteration.  ``None``
        probes the curvature along the first gradient (one extra full-gradient pass) and uses
        the SBB formula on it, divided by ``m`` except for ``'gd'``.
    max_iter : int, default=300
        Maximum number of epochs (iterations for ``'gd'`` and ``'lbfgs'``).
    tol : float, default=1e-5
        Stop when the best training objective improved by at most ``tol`` over the last
        ``n_iter_no_change`` epochs (iterations): ``(b[t - n_iter_no_change] - b[t]) /
        max(|b[t - n_iter_no_change]|, 1) <= tol``, where ``b[t]`` is the lowest objective
        recorded up to epoch ``t`` (:attr:`history_` column ``improvement``), for every
        solver.  The objective, not the embedding, is tested because for t-STE, CKL and GNMDS
        the embedding keeps drifting along directions that barely change the objective.
        The best objective also stops improving when the objective rises (a step that
        overshoots): after this stop, the paper's solvers ('svrg_sbb', 'svrg', 'sgd', 'gd'),
        which return the last iterate, raise a ConvergenceWarning when its objective is above
        the lowest recorded one by more than 0.005 of the decrease from the start (and by more
        than ``tol * max(|best|, 1)``).  The rule measures progress, not the distance to a
        minimum: these solvers can also stop short of L-BFGS's objective without a warning
        (see the user guide).
    n_iter_no_change : int, default=5
        Window of the ``tol`` test, in epochs (iterations for ``'gd'`` and ``'lbfgs'``).
    margin : float, default=None
        Margin of ``'gnmds'`` (``None``: 1, the paper's value) and ``'soe'`` (``None``: 0.1,
        cblearn's default).  Ignored by the other losses.
    alpha : float, default=None
        Degrees of freedom of ``'tste'``; ``None`` uses ``max(n_components - 1, 1)``.
    mu : float, default=0.05
        Regulariser of ``'ckl'`` (``mu = 0`` makes the loss scale-invariant).
    init : 'random' or array of shape (n_objects, n_components), default='random'
        ``'random'``: independent ``N(0, 1 / n_components)`` coordinates (mean squared
        distance 2), drawn with skstoch's counter-based generator.  An array is copied; its
        rows must not all be equal (coincident points are a stationary point of every loss:
        ValueError).  ``fit(..., init=...)`` overrides this parameter.
    random_state : int, RandomState instance or None, default=None
        Seeds the initialisation and the mini-batch sampling; the same value gives bitwise
        identical results.
    verbose : int, default=0
        Print one line per epoch when > 0.
    callback : callable, default=None
        Called after every epoch with the record of :attr:`history_` plus ``"x"`` (the current
        embedding); a true return value stops the fit.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_objects, n_components)
        The fitted points, centred (a translation changes no distance): for ``'lbfgs'`` the
        iterate with the lowest training objective among those recorded and the last one;
        for the paper's solvers the last iterate, as the paper (SBB steps are not
        monotone, so an epoch can end higher than an earlier snapshot).
    n_objects_ : int
        Number of embedded objects.
    n_features_in_ : int
        3 for triplets, 4 for quadruplets.
    n_iter_ : int
        Epochs (iterations for ``'gd'`` and ``'lbfgs'``) run: the last
        ``history_['iteration']``.
    history_ : dict of ndarray
        One entry at the start of every epoch (iteration for ``'gd'`` and ``'lbfgs'``) and
        one at the last iterate, with the columns

        - ``iteration``: epochs (iterations) completed, 0 at the start; ``epoch`` is the same
          count under its earlier name;
        - ``objective``: the mean loss over the training comparisons at that iterate,
          evaluated exactly (by the full-gradient pass at an SVRG snapshot and for ``'gd'``
          and ``'lbfgs'``, by a loss pass for ``'sgd'`` and at the last iterate);
        - ``time``: seconds since the start of the fit;
        - ``step_size`` (not ``'lbfgs'``): the step of the epoch that starts there, NaN at
          the last record (the returned fit starts no epoch); ``'lbfgs'`` has none, because
          scipy's L-BFGS-B does not report its accepted line-search step;
        - ``grad_norm`` (``'svrg_sbb'``, ``'svrg'``, ``'gd'``): norm of the full gradient;
        - ``improvement``: the stopping criterion that ``tol`` bounds (infinite until
          ``n_iter_no_change + 1`` records exist).

        When the callback stops the fit, its record is the last one.
    objective_ : float
        Mean loss of :attr:`embedding_` over the training comparisons.
    eta0_ : float or None
        The first step actually used (the probed one when ``eta0=None``; None for
        ``'lbfgs'`` unless given).
    epsilon_ : float or None
        The SBB stabilizer actually used (resolved from ``'auto'``); None, unless given, for
        ``'lbfgs'`` and, when ``eta0`` is given, for ``'svrg'``, ``'sgd'`` and ``'gd'`` (which
        use it only in the probed ``eta0``: no probe runs then).
    seed_ : int
        Seed of the counter-based generator drawn from ``random_state``.

    See Also
    --------
    sklearn.manifold.MDS : metric and non-metric MDS from a dissimilarity matrix.

    Notes
    -----
    Cost per epoch: one full pass over the ``n_comparisons`` comparisons (loss and gradient)
    and ``m / b`` inner steps of ``O(b p)`` each (the dense full-gradient term of SVRG is
    applied lazily per row, which is exact; ``inner_update='dense'`` makes a step
    ``O((b + n_objects) p)``, as in the paper).  Memory: ``O(n_comparisons + n_objects p)``.

    References
    ----------
    .. [1] K. Ma, J. Zeng, J. Xiong, Q. Xu, X. Cao, W. Liu, Y. Yao, "Fast Stochastic Ordinal
       Embedding with Variance Reduction and Adaptive Step Size", IEEE TKDE, 2019.

    Examples
    --------
    >>> from skstoch import OrdinalEmbedding
    >>> from skstoch.datasets import make_triplets
    >>> T = make_triplets(n_objects=30, n_triplets=2000, n_components=2, random_state=0)
    >>> est = OrdinalEmbedding(n_components=2, random_state=0).fit(T)
    >>> est.embedding_.shape
    (30, 2)
    >>> est.score(T) > 0.95
    True
    """
    _scale_hint = False   # X holds comparisons of object indices, not features

    _parameter_constraints = {
        **STOCHASTIC_SOLVER_CONSTRAINTS,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions({"ste", "tste", "gnmds", "ckl", "soe"})],
        "solver": [StrOptions({"svrg_sbb", "svrg", "sgd", "gd", "lbfgs"})],
        "epsilon": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "batch_size": [Interval(Integral, 1, _INT32_MAX, closed="both")],
        "inner_iter": [Interval(Integral, 1, _INT32_MAX, closed="both"), None],
        "inner_update": [StrOptions({"lazy", "dense"})],
        "eta0": [Interval(Real, 0, None, closed="neither"), None],
        "margin": [Interval(Real, 0, None, closed="neither"), None],
        "alpha": [Interval(Real, 0, None, closed="neither"), None],
        "mu": [Interval(Real, 0, None, closed="left")],
        "init": [StrOptions({"random"}), "array-like"],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, n_components=2, *, loss="ste", solver="lbfgs", epsilon="auto",
                 batch_size=10, inner_iter=None, inner_update="lazy", eta0=None,
                 max_iter=300, tol=1e-5, n_iter_no_change=5, margin=None, alpha=None,
                 mu=0.05, init="random", random_state=None, verbose=0, callback=None):
        self.n_components = n_components
        self.loss = loss
        self.solver = solver
        self.epsilon = epsilon
        self.batch_size = batch_size
        self.inner_iter = inner_iter
        self.inner_update = inner_update
        self.eta0 = eta0
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.margin = margin
        self.alpha = alpha
        self.mu = mu
        self.init = init
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, n_objects=None, init=None):
        """Fit the embedding to comparisons.

        Parameters
        ----------
        X : array-like of int, shape (n_comparisons, 3) or (n_comparisons, 4)
            Triplets ``(i, j, k)`` meaning ``d(i, j) < d(i, k)``, or quadruplets
            ``(i, j, l, k)`` meaning ``d(i, j) < d(l, k)`` (0-based object indices).
        y : array-like of shape (n_comparisons,), default=None
            Optional responses (cblearn's 'list-boolean' / 'list-count'): ``True`` or ``+1``
            keeps a row, ``False`` or ``-1`` flips it.
        n_objects : int, default=None
            Number of objects (default: largest index + 1).  An object that appears in no
            comparison is not learned: its row stays at its starting position (centred with
            the others), and ``fit`` warns.
        init : array-like of shape (n_objects, n_components), default=None
            Starting embedding; overrides the ``init`` parameter.

        Returns
        -------
        self : OrdinalEmbedding
        """
        Q, width, n_obj = check_comparisons(X, y, n_objects=n_objects)
        self._check_memory(n_obj, inferred=n_objects is None)
        init = self._check_init(self.init if init is None else init, n_obj)
        _warn_unconstrained_objects(Q, n_obj)
        params = self._solver_params(Q.shape[0], self._draw_seed())
        monitor = self._make_monitor(f"OrdinalEmbedding(loss={self.loss!r}, "
                                     f"solver={self.solver!r})")
        result = solve(OrdinalProblem(Q, n_obj, init), params, monitor)
        if result.extra["line_search_failed"] and not monitor.stopped_by_callback:
            # stopped by the line search, not by the budget: the monitor's advice would mislead
            warn_line_search_failed(result, monitor.solver_name, self.tol)
        else:
            monitor.finish(converged=result.converged, criterion=result.criterion_name,
                           value=result.criterion, tol=self.tol, max_iter=int(self.max_iter))
        if not monitor.stopped_by_callback:
            warn_if_risen(result, monitor.solver_name, self.tol)
        self.embedding_ = result.x
        self.objective_ = result.extra["objective"]
        self.n_objects_ = n_obj
        self.n_features_in_ = width
        self.n_iter_ = result.n_iter
        self.history_ = monitor.history()
        self.eta0_ = result.extra["eta0"]
        self.epsilon_ = result.extra["epsilon"]
        self.seed_ = params.seed
        return self

    def _check_memory(self, n_objects, inferred):
        """Raise before allocating when the fit would need more memory than is available.

        ``n_objects`` comes from the largest index of ``X`` unless given, so one mistyped
        index can ask for terabytes; the estimate counts the ``(n_objects, n_components)``
        arrays the solver keeps and the mini-batch buffers."""
        p = int(self.n_components)
        objects = 8 * (n_objects * p * _ARRAYS_PER_FIT[self.solver] + n_objects)
        # the mini-batch buffers ('lbfgs' and 'gd' ignore batch_size)
        batches = 16 * int(self.batch_size) * p if self.solver in _MINI_BATCH_SOLVERS else 0
        n_bytes = objects + batches
        available = available_memory()
        if available is None or n_bytes <= available:
            return
        if batches > objects:
            source, remedy = f"batch_size={int(self.batch_size)}", "Lower batch_size."
        else:
            source = (f"the largest object index in X ({n_objects - 1}) implies n_objects="
                      f"{n_objects}" if inferred else f"n_objects={n_objects}")
            remedy = ("Object indices must be 0-based and contiguous (relabel them, e.g. "
                      "with np.unique(X, return_inverse=True)).")
        raise ValueError(
            f"OrdinalEmbedding(solver={self.solver!r}) would need about {n_bytes / 2**30:.3g} "
            f"GiB ({n_bytes} bytes) but about {available / 2**30:.3g} GiB is available: "
            f"{source}, n_components={p}. {remedy}")

    def _solver_params(self, n_comparisons, seed):
        """The parameters resolved for the driver (defaults that depend on the data)."""
        return OrdinalParams(
            n_components=int(self.n_components), loss=self.loss,
            loss_parameter=self._loss_parameter(), solver=self.solver,
            max_iter=int(self.max_iter), tol=self.tol, seed=seed, eta0=self.eta0,
            epsilon=self.epsilon, batch_size=int(self.batch_size),
            inner_iter=n_comparisons if self.inner_iter is None else int(self.inner_iter),
            dense_update=self.inner_update == "dense",
            n_iter_no_change=int(self.n_iter_no_change))

    def _loss_parameter(self):
        """t-STE's alpha, GNMDS's or SOE's margin, CKL's mu (None for STE)."""
        if self.loss == "tste":
            n_components = int(self.n_components)
            return float(self.alpha if self.alpha is not None else max(n_components - 1, 1))
        if self.loss in ("gnmds", "soe"):
            default = 1.0 if self.loss == "gnmds" else 0.1
            return default if self.margin is None else float(self.margin)
        if self.loss == "ckl":
            return float(self.mu)
        return None

    def _check_init(self, init, n_objects):
        """None for a random start, else the validated starting embedding."""
        if isinstance(init, str):
            return None
        reject_string_input(init, "init")
        if np.iscomplexobj(init):
            raise ValueError("init holds complex numbers; Complex data not supported.")
        X0 = np.array(init, dtype=np.float64, copy=True, order="C")
        shape = (n_objects, int(self.n_components))
        if X0.shape != shape:
            raise ValueError(f"init must have shape (n_objects, n_components) = {shape}, "
                             f"got {X0.shape}")
        if not np.all(np.isfinite(X0)):
            raise ValueError("init contains NaN or infinity")
        if n_objects > 1 and np.all(X0 == X0[0]):
            raise ValueError(
                "init has all rows equal: coincident points are a stationary point of every "
                "loss (zero gradient), so no solver would move them; pass distinct rows, e.g. "
                "init='random'.")
        return X0

    # ------------------------------------------------------------------ use
    def transform(self, X=None):
        """Return the embedding (ordinal embedding is transductive: ``X`` is ignored).

        Parameters
        ----------
        X : ignored
            Accepted for pipeline compatibility.

        Returns
        -------
        embedding : ndarray or DataFrame of shape (n_objects, n_components)
            A copy of :attr:`embedding_` (a DataFrame indexed by object after
            ``set_output(transform="pandas")``, columns :meth:`get_feature_names_out`).
        """
        return _wrap_data_with_container("transform", self._fitted_embedding().copy(), None,
                                         self)

    def fit_transform(self, X, y=None, **fit_params):
        """Fit to the comparisons and return the embedding.

        Parameters
        ----------
        X, y : see :meth:`fit`.
        **fit_params : dict
            ``n_objects`` and ``init`` of :meth:`fit`.

        Returns
        -------
        embedding : ndarray or DataFrame of shape (n_objects, n_components)
            As :meth:`transform` (a DataFrame after ``set_output(transform="pandas")``).
        """
        return self.fit(X, y, **fit_params).transform(X)

    @property
    def _n_features_out(self):
        """Number of output columns, for ``get_feature_names_out``."""
        return self.embedding_.shape[1]

    def _fitted_embedding(self):
        """:attr:`embedding_` after checking it against the other fitted attributes (the
        kernels read it without bounds checks: a truncated or replaced array must raise)."""
        check_is_fitted(self)
        n = self.n_objects_
        if not is_integer(n) or n < 1:
            raise fitted_state_error(self, f"n_objects_={n!r} is not a positive integer")
        E = check_fitted_array(self, "embedding_", (n, None), finite=True)
        if E.shape[1] < 1:
            raise fitted_state_error(self, "embedding_ has no column")
        return np.ascontiguousarray(E)

    def _satisfied(self, X, y=None):
        E = self._fitted_embedding()
        Q, _, _ = check_comparisons(X, y, n_objects=E.shape[0], allow_degenerate=True)
        return satisfied(Q, E)

    def predict(self, X):
        """Answer comparisons with the embedding.

        Parameters
        ----------
        X : array-like of int, shape (n_comparisons, 3) or (n_comparisons, 4)
            Triplets or quadruplets of object indices below ``n_objects_``.

        Returns
        -------
        y : ndarray of shape (n_comparisons,)
            ``+1`` where ``d(i, j) < d(i, k)`` (``d(i, j) < d(l, k)``) strictly holds in the
            embedding, ``-1`` otherwise (ties count as ``-1``).
        """
        out, _ = self._satisfied(X)
        return np.where(out == 1, 1, -1)

    def score(self, X, y=None):
        """Fraction of comparisons the embedding satisfies (strict inequality).

        Parameters
        ----------
        X : array-like of int, shape (n_comparisons, 3) or (n_comparisons, 4)
            Comparisons.
        y : array-like of shape (n_comparisons,), default=None
            Optional responses (booleans or +1/-1) as in :meth:`fit`.

        Returns
        -------
        score : float
            1 minus the triplet error.
        """
        out, count = self._satisfied(X, y)
        return count / out.shape[0]

    def get_feature_names_out(self, input_features=None):
        """Names of the embedding's columns: ``ordinalembedding0``, ``ordinalembedding1``, ...

        Parameters
        ----------
        input_features : ignored
            The input is comparisons, whose columns are not features.

        Returns
        -------
        feature_names_out : ndarray of str, shape (n_components,)
        """
        self._fitted_embedding()
        return super().get_feature_names_out()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        tags.input_tags.two_d_array = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


# transform wraps its own output (set_output): its rows are the objects, not the rows of X,
# so scikit-learn's automatic wrapper (which copies X's index) cannot be used.
OrdinalEmbedding._sklearn_auto_wrap_output_keys = {"transform"}


def _warn_unconstrained_objects(Q, n_objects):
    """``UserWarning`` naming the objects that no comparison of ``Q`` mentions: no term of
    the objective sees their rows, so the fit leaves them where they started."""
    absent = np.flatnonzero(np.bincount(Q.ravel(), minlength=n_objects) == 0)
    if absent.size == 0:
        return
    shown = ", ".join(map(str, absent[:10])) + (", ..." if absent.size > 10 else "")
    warn(
        f"{absent.size} of {n_objects} objects appear in no comparison (indices {shown}): "
        f"nothing constrains them, so their rows of embedding_ are their starting positions, "
        f"not learned from X. Drop them and relabel the rest 0-based and contiguous (for "
        f"example with np.unique(X, return_inverse=True)).",
        UserWarning)
