"""Ordinal embedding from triplet / quadruplet comparisons (paper 000: SVRG with a stabilized
Barzilai-Borwein step, mini-batches)."""
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._comparisons import check_comparisons
from ._fast import _ordinal
from ._fast._comparison_loss import CKLLoss, GNMDSLoss, SOELoss, STELoss, TSTELoss
from ._solvers import check_finite_iterate, relative_change, svrg
from .utils import single_thread_blas
from .base import STOCHASTIC_SOLVER_CONSTRAINTS, StochasticSolverMixin

__all__ = ["OrdinalEmbedding"]

# RNG streams of one fit: 0 = random init, 1 + epoch = sampling of that epoch.
_INIT_STREAM = 0
_SGD_DECAY = 0.01   # SGD step eta0 / (1 + 0.01 * epoch), as in the paper's reference scripts


class OrdinalEmbedding(TransformerMixin, StochasticSolverMixin, BaseEstimator,
                       auto_wrap_output_keys=None):
    """Embedding of objects from ordinal comparisons, fitted by mini-batch SVRG with a
    stabilized Barzilai-Borwein step (SVRG-SBB, Ma et al., TKDE 2019) or by full-batch L-BFGS.

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
        ``'svrg_sbb'``: Algorithm 1 of the paper (mini-batch SVRG, stabilized BB step from the
        second epoch on); ``'svrg'``: the same with the fixed step ``eta0``; ``'sgd'``:
        mini-batch SGD with step ``eta0 / (1 + 0.01 epoch)``; ``'gd'``: full-batch gradient
        descent with the fixed step ``eta0``.  The last three are the paper's baselines.
        ``'lbfgs'`` (not in the paper; the default): full-batch L-BFGS (scipy's L-BFGS-B
        without bounds) on the same compiled one-pass loss and gradient, one pass per
        iteration plus line-search passes.  It is the default because it reached cblearn's
        test error faster than ``'svrg_sbb'`` in our benchmark at every scale we measured
        (see the user guide): an SVRG epoch costs three passes over the comparisons, and the
        quasi-Newton direction makes more progress per pass on these small, smooth problems.
        ``epsilon``, ``eta0`` and ``batch_size`` are ignored by ``'lbfgs'``.
    epsilon : float or 'auto', default='auto'
        Stabilizer of the SBB step (eq. 14): ``eta = |dx|^2 / (m (|<dx, dg>| + epsilon
        |dx|^2))``, which bounds the step by ``1 / (m epsilon)``.  ``0`` is the paper's SBB0
        (allowed; it can blow up on non-convex problems).  ``'auto'`` (not in the paper) uses
        ``0.01 * kappa0``, where ``kappa0 = |<dx, dg>| / |dx|^2`` is the curvature probed along
        the first gradient: the step then never exceeds 100 times the initial BB step, whatever
        the number of objects and comparisons (an absolute epsilon that suits 100 objects caps
        the step far below the curvature scale for thousands of objects).
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
    max_iter : int, default=100
        Maximum number of epochs (iterations for ``'gd'`` and ``'lbfgs'``).
    tol : float, default=1e-5
        Stop when the relative change of the embedding between two epochs,
        ``|X_new - X_old| / |X_old|``, is at most ``tol``.
    margin : float, default=None
        Margin of ``'gnmds'`` (``None``: 1, the paper's value) and ``'soe'`` (``None``: 0.1,
        cblearn's default).  Ignored by the other losses.
    alpha : float, default=None
        Degrees of freedom of ``'tste'``; ``None`` uses ``max(n_components - 1, 1)``.
    mu : float, default=0.05
        Regulariser of ``'ckl'`` (``mu = 0`` makes the loss scale-invariant).
    init : 'random' or array of shape (n_objects, n_components), default='random'
        ``'random'``: independent ``N(0, 1 / n_components)`` coordinates (mean squared
        distance 2), drawn with skstoch's counter-based generator.  An array is copied.
        ``fit(..., init=...)`` overrides this parameter.
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
        The fitted points, centred (a translation changes no distance): the iterate with the
        lowest training objective among the epoch snapshots and the last iterate (the paper
        returns the last snapshot; SBB steps are not monotone, so an epoch can end higher).
    n_objects_ : int
        Number of embedded objects.
    n_features_in_ : int
        3 for triplets, 4 for quadruplets.
    n_iter_ : int
        Epochs (iterations for ``'gd'``) run.
    history_ : dict of ndarray
        One entry per epoch: ``epoch``, ``objective`` (mean loss at the epoch's snapshot),
        ``step_size``, ``grad_norm`` and ``time`` (seconds since the start of the fit).
        For ``'lbfgs'``: one entry for the start and one per iteration, with ``epoch``,
        ``objective``, ``time`` and ``step_size`` = NaN (the line search has no step size
        in the units of Algorithm 1).
    objective_ : float
        Mean loss of :attr:`embedding_` over the training comparisons.
    eta0_ : float or None
        The first step actually used (the probed one when ``eta0=None``; None for
        ``'lbfgs'`` unless given).
    epsilon_ : float or None
        The SBB stabilizer actually used (resolved from ``'auto'``; None for ``'lbfgs'``
        unless given).
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

    _parameter_constraints = {
        **STOCHASTIC_SOLVER_CONSTRAINTS,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions({"ste", "tste", "gnmds", "ckl", "soe"})],
        "solver": [StrOptions({"svrg_sbb", "svrg", "sgd", "gd", "lbfgs"})],
        "epsilon": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "inner_iter": [Interval(Integral, 1, None, closed="left"), None],
        "inner_update": [StrOptions({"lazy", "dense"})],
        "eta0": [Interval(Real, 0, None, closed="neither"), None],
        "margin": [Interval(Real, 0, None, closed="neither"), None],
        "alpha": [Interval(Real, 0, None, closed="neither"), None],
        "mu": [Interval(Real, 0, None, closed="left")],
        "init": [StrOptions({"random"}), "array-like"],
    }

    def __init__(self, n_components=2, *, loss="ste", solver="lbfgs", epsilon="auto",
                 batch_size=10, inner_iter=None, inner_update="lazy", eta0=None,
                 max_iter=100, tol=1e-5, margin=None, alpha=None, mu=0.05, init="random",
                 random_state=None, verbose=0, callback=None):
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
        self.margin = margin
        self.alpha = alpha
        self.mu = mu
        self.init = init
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    # ------------------------------------------------------------------ helpers
    def _loss_object(self):
        """The compiled loss for the current parameters."""
        if self.loss == "ste":
            return STELoss()
        if self.loss == "tste":
            alpha = self.alpha if self.alpha is not None else max(self.n_components - 1, 1)
            return TSTELoss(float(alpha))
        if self.loss == "gnmds":
            return GNMDSLoss(1.0 if self.margin is None else float(self.margin))
        if self.loss == "ckl":
            return CKLLoss(float(self.mu))
        return SOELoss(0.1 if self.margin is None else float(self.margin))

    def _initial_embedding(self, init, n_objects, seed):
        if isinstance(init, str):
            X0 = np.empty((n_objects, self.n_components), dtype=np.float64)
            _ordinal.normal_fill(X0, 1.0 / np.sqrt(self.n_components), seed, _INIT_STREAM)
            return X0
        X0 = np.array(init, dtype=np.float64, copy=True, order="C")
        if X0.shape != (n_objects, self.n_components):
            raise ValueError(f"init must have shape (n_objects, n_components) = "
                             f"({n_objects}, {self.n_components}), got {X0.shape}")
        if not np.all(np.isfinite(X0)):
            raise ValueError("init contains NaN or infinity")
        return X0

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
            Number of objects (default: largest index + 1).
        init : array-like of shape (n_objects, n_components), default=None
            Starting embedding; overrides the ``init`` parameter.

        Returns
        -------
        self : OrdinalEmbedding
        """
        Q, width, n_obj = check_comparisons(X, y, n_objects=n_objects)
        # The only BLAS work of a fit is on (n_objects, n_components) arrays (norms, dots and
        # scipy's L-BFGS two-loop recursion): far too small for threads, and OpenBLAS's
        # thread wake-ups made each L-BFGS iteration ~25x slower on a busy 2-core machine.
        with single_thread_blas():
            return self._fit(Q, width, n_obj, init)

    def _fit(self, Q, width, n_obj, init):
        m = Q.shape[0]
        seed = self._draw_seed()
        X0 = self._initial_embedding(self.init if init is None else init, n_obj, seed)
        loss = self._loss_object()
        inner = int(self.inner_iter) if self.inner_iter is not None else m
        b = int(self.batch_size)
        n_steps = max(inner // b, 1)
        monitor = self._make_monitor(f"OrdinalEmbedding(loss={self.loss!r}, "
                                     f"solver={self.solver!r})")
        G = np.empty_like(X0)
        inv_m = 1.0 / m

        best = _BestIterate()

        def full_gradient(x):
            total = _ordinal.full_gradient(loss, Q, x, G, inv_m)
            best.offer(total * inv_m, x)
            return total * inv_m, G.copy()

        eta0, epsilon = self.eta0, self.epsilon
        if self.solver == "lbfgs":
            eta0 = np.nan if eta0 is None else eta0
            epsilon = np.nan if epsilon == "auto" else epsilon
        elif eta0 is None or epsilon == "auto":
            kappa0 = _probe_curvature(full_gradient, X0)
            if epsilon == "auto":
                epsilon = 0.05 * kappa0
            if eta0 is None:
                denom = kappa0 + epsilon
                eta0 = 1.0 / denom if denom > 0.0 and np.isfinite(denom) else 1.0
                if self.solver != "gd":
                    eta0 /= inner
        eta0, epsilon = float(eta0), float(epsilon)

        if self.solver == "lbfgs":
            x, n_iter, converged, change = _lbfgs(loss, Q, X0, self.max_iter, self.tol,
                                                  monitor, best)
        elif self.solver in ("svrg_sbb", "svrg"):
            tables = _ordinal.InnerLoop(loss, Q, n_obj, self.n_components, n_steps, b, seed,
                                        self.inner_update == "dense")

            def inner_loop(x, snapshot, grad, step, epoch):
                _ordinal.svrg_inner(tables, x, snapshot, grad, step, 1 + epoch)
                return x

            result = svrg(X0, full_gradient, inner_loop,
                          step_size="sbb" if self.solver == "svrg_sbb" else "fixed",
                          eta0=eta0, inner_iter=inner, max_iter=self.max_iter, tol=self.tol,
                          monitor=monitor, epsilon=epsilon)
            x, n_iter, converged, change = (result.x, result.n_iter, result.converged,
                                            result.criterion)
        elif self.solver == "sgd":
            x, n_iter, converged, change = _sgd(loss, Q, X0, eta0, n_steps, b, seed,
                                                self.max_iter, self.tol, monitor, best)
        else:
            x, n_iter, converged, change = _gd(full_gradient, X0, eta0, self.max_iter,
                                               self.tol, monitor)

        monitor.finish(converged=converged, criterion="relative change of the embedding",
                       value=change, tol=self.tol, max_iter=self.max_iter)
        best.offer(_ordinal.loss_sum(loss, Q, x) * inv_m, x)
        x = best.x - best.x.mean(axis=0)
        self.embedding_ = np.ascontiguousarray(x)
        self.objective_ = best.objective
        self.n_objects_ = n_obj
        self.n_features_in_ = width
        self.n_iter_ = n_iter
        self.history_ = monitor.history()
        # None where the solver has no such quantity (L-BFGS's line search has no step size)
        self.eta0_ = eta0 if np.isfinite(eta0) else None
        self.epsilon_ = epsilon if np.isfinite(epsilon) else None
        self.seed_ = seed
        return self

    # ------------------------------------------------------------------ use
    def transform(self, X=None):
        """Return the embedding (ordinal embedding is transductive: ``X`` is ignored).

        Parameters
        ----------
        X : ignored
            Accepted for pipeline compatibility.

        Returns
        -------
        embedding : ndarray of shape (n_objects, n_components)
            A copy of :attr:`embedding_`.
        """
        check_is_fitted(self)
        return self.embedding_.copy()

    def _satisfied(self, X, y=None):
        check_is_fitted(self)
        Q, _, _ = check_comparisons(X, y, n_objects=self.n_objects_, allow_degenerate=True)
        out = np.empty(Q.shape[0], dtype=np.int8)
        count = _ordinal.satisfied(Q, self.embedding_, out)
        return out, count

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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        tags.input_tags.two_d_array = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


def _probe_curvature(full_gradient, X0):
    """Curvature ``|<dx, dg>| / |dx|^2`` along a tiny step down the gradient at ``X0``.

    Costs two full-gradient passes; returns 0 when the probe is degenerate (zero gradient).
    """
    _, g0 = full_gradient(X0)
    gnorm = np.linalg.norm(g0)
    if gnorm == 0.0 or not np.isfinite(gnorm):
        return 0.0
    delta = 1e-4 * max(np.linalg.norm(X0), 1e-12) / gnorm
    dx = -delta * g0
    _, g1 = full_gradient(X0 + dx)
    sq = float(np.vdot(dx, dx))
    kappa = abs(float(np.vdot(dx, g1 - g0))) / sq
    return kappa if np.isfinite(kappa) else 0.0


class _BestIterate:
    """Keep the iterate with the lowest objective seen (first one on ties)."""

    def __init__(self):
        self.objective = np.inf
        self.x = None

    def offer(self, objective, x):
        if objective < self.objective or self.x is None:
            self.objective = float(objective)
            self.x = np.array(x, copy=True)


def _sgd(loss, Q, X0, eta0, n_steps, b, seed, max_iter, tol, monitor, best):
    """Mini-batch SGD baseline (paper 000 'ncvx SGD'), step eta0 / (1 + 0.01 epoch)."""
    x = X0.copy()
    n_obj, p = x.shape
    tables = _ordinal.InnerLoop(loss, Q, n_obj, p, n_steps, b, seed)
    m = Q.shape[0]
    change, n_iter = np.inf, 0
    for epoch in range(max_iter):
        step = eta0 / (1.0 + _SGD_DECAY * epoch)
        objective = _ordinal.loss_sum(loss, Q, x) / m
        best.offer(objective, x)
        if monitor.record(epoch=epoch, objective=objective, step_size=step, x=x):
            break
        prev = x.copy()
        _ordinal.sgd_inner(tables, x, step, 1 + epoch)
        n_iter = epoch + 1
        check_finite_iterate(x, monitor.solver_name, f"epoch {epoch}")
        change = relative_change(x, prev)
        if change <= tol:
            break
    return x, n_iter, change <= tol, change


def _gd(full_gradient, X0, eta0, max_iter, tol, monitor):
    """Full-batch gradient descent baseline with a fixed step (paper 000 'ncvx Batch')."""
    x = X0.copy()
    change, n_iter = np.inf, 0
    for it in range(max_iter):
        objective, grad = full_gradient(x)
        if monitor.record(epoch=it, objective=objective, step_size=eta0,
                          grad_norm=float(np.linalg.norm(grad)), x=x):
            break
        prev = x
        x = x - eta0 * grad
        n_iter = it + 1
        check_finite_iterate(x, monitor.solver_name, f"iteration {it}")
        change = relative_change(x, prev)
        if change <= tol:
            break
    return x, n_iter, change <= tol, change


def _lbfgs(loss, Q, X0, max_iter, tol, monitor, best):
    """Full-batch L-BFGS (scipy's L-BFGS-B without bounds) on the compiled one-pass loss and
    gradient.  Not in the paper: a deterministic quasi-Newton alternative to SVRG-SBB.

    Stops when the relative change of the embedding between two iterations is at most
    ``tol`` (the criterion of the other solvers), when scipy reports convergence (gradient or
    objective stagnation at machine precision) or after ``max_iter`` iterations.
    """
    from scipy.optimize import minimize

    shape = X0.shape
    m = Q.shape[0]
    inv_m = 1.0 / m
    G = np.empty(shape, dtype=np.float64)
    state = {"prev": X0.ravel().copy(), "change": np.inf, "n_iter": 0, "stopped": False}

    def fun(v):
        x = v.reshape(shape)
        objective = _ordinal.full_gradient(loss, Q, x, G, inv_m) * inv_m
        return objective, G.ravel().copy()

    def callback(intermediate_result):
        v = intermediate_result.x
        state["n_iter"] += 1
        x = v.reshape(shape)
        objective = float(intermediate_result.fun)
        best.offer(objective, x)
        state["change"] = relative_change(v, state["prev"])
        state["prev"] = v.copy()
        if monitor.record(epoch=state["n_iter"], objective=objective,
                          step_size=np.nan, x=x) or state["change"] <= tol:
            state["stopped"] = True
            raise StopIteration

    objective, _ = fun(X0.ravel())
    best.offer(objective, X0)
    if monitor.record(epoch=0, objective=objective, step_size=np.nan, x=X0):
        return X0.copy(), 0, False, np.inf
    result = minimize(fun, X0.ravel(), jac=True, method="L-BFGS-B", callback=callback,
                      options={"maxiter": max_iter, "ftol": 0.0, "gtol": 0.0,
                               "maxfun": 20 * max(max_iter, 1), "maxls": 40})
    x = result.x.reshape(shape).copy()
    check_finite_iterate(x, monitor.solver_name, f"iteration {state['n_iter']}")
    change = state["change"]
    converged = change <= tol or (result.success and not state["stopped"]
                                  and state["n_iter"] < max_iter)
    return x, state["n_iter"], bool(converged), change
