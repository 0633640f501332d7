"""CGVR: stochastic conjugate gradient with variance reduction (Jin, Zhang, Huang & Geng,
IEEE TNNLS 2019, arXiv:1710.09979), for L2-regularised linear classification and ridge
regression, with the paper's baselines (full-batch CG, SVRG and mini-batch SVRG).
"""
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._fast import _cgvr
from .._fast._loss import Hinge, LogLoss, SquaredError, SquaredHinge
from .._solvers import SolverResult, check_finite_iterate
from ..base import STOCHASTIC_SOLVER_CONSTRAINTS, BaseLinearClassifier, BaseLinearRegressor

_LOSSES = {
    "log_loss": LogLoss,
    "squared_hinge": SquaredHinge,
    "hinge": Hinge,
    "squared_error": SquaredError,
}


def _cgvr_constraints():
    return {
        **STOCHASTIC_SOLVER_CONSTRAINTS,
        "alpha": [Interval(Real, 0, None, closed="left")],
        "solver": [StrOptions({"cgvr", "cg", "svrg", "minibatch_svrg"})],
        "beta": [StrOptions(set(_cgvr.BETA_RULES))],
        "line_search": [StrOptions(set(_cgvr.LINE_SEARCHES))],
        "inner_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [StrOptions({"sqrt"}), Interval(Integral, 1, None, closed="left")],
        "c1": [Interval(Real, 0, 1, closed="neither")],
        "c2": [Interval(Real, 0, 1, closed="neither")],
        "step_init": [Interval(Real, 0, None, closed="neither")],
        "step_max": [Interval(Real, 0, None, closed="neither"), None],
        "ls_max_iter": [Interval(Integral, 1, None, closed="left")],
        "zoom_max_iter": [Interval(Integral, 0, None, closed="left")],
        "restart": [StrOptions({"h", "full"})],
        "w_selection": [StrOptions({"last", "random"})],
        "init": [StrOptions({"zeros", "uniform"})],
        "eta0": [Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "regularize_intercept": ["boolean"],
        "warm_start": ["boolean"],
        "safeguard": ["boolean"],
    }


class _CGVRMixin:
    """The solver shared by :class:`CGVRClassifier` and :class:`CGVRRegressor`."""

    def _solver_name(self):
        return f"{type(self).__name__}(solver={self.solver!r})"

    def _check_cgvr_params(self):
        if not self.c1 < self.c2:
            raise ValueError(
                f"The line search needs 0 < c1 < c2 < 1; got c1={self.c1!r} and c2={self.c2!r}."
            )
        if self.solver in ("cgvr", "cg") and self.alpha == 0 and self.loss == "hinge":
            raise ValueError(
                "loss='hinge' with alpha=0 has no minimiser along most directions; "
                "use alpha > 0."
            )

    def _fit_problem(self, problem):
        ds = problem.dataset
        n, d = ds.n_samples, ds.n_features
        D = d + 1
        loss = _LOSSES[self.loss]()
        alpha = float(self.alpha)
        alpha_b = alpha if (self.fit_intercept and self.regularize_intercept) else 0.0
        fit_intercept = bool(self.fit_intercept)
        y = np.ascontiguousarray(problem.y, dtype=np.float64)
        sw = np.ascontiguousarray(problem.sample_weight, dtype=np.float64)
        monitor = problem.monitor
        seed = problem.seed
        batch_stream, init_stream = 2 * problem.stream, 2 * problem.stream + 1

        saved = problem.state
        warm = saved is not None
        x = np.zeros(D)
        if warm:
            x[:d] = problem.coef_init
            x[d] = problem.intercept_init if fit_intercept else 0.0
        elif self.init == "uniform":
            x[:d] = _cgvr.uniform_vector(seed, init_stream, d)
            if fit_intercept:
                x[d] = _cgvr.uniform_vector(seed, init_stream + 2**32, 1)[0]

        u = np.empty(D)
        dl0 = np.empty(n)
        need_z = self.solver == "cg" or (self.solver == "cgvr" and self.line_search == "full")
        z = np.empty(n) if need_z else None
        obj = _cgvr.full_objective_gradient(ds, y, sw, loss, x, alpha, alpha_b, fit_intercept,
                                            u, dl0, z)
        scale = alpha if alpha > 0 else 1.0
        crit = float(np.max(np.abs(u)))
        passes = 1.0
        stop = monitor.record(epoch=0, objective=obj, grad_max=crit, step_size=0.0,
                              passes=passes, x=x[:d])
        converged = crit <= self.tol * scale
        batch = _batch_size(self.batch_size, n)
        stats = np.zeros(_cgvr.N_STATS, dtype=np.int64)
        steps = np.zeros(self.inner_iter)
        counter = 0
        h = None
        if saved is not None and saved["h"].shape == (D,):
            # warm start keeps the solver state: restart gradient, adapted batch and cap
            h = saved["h"]
            batch = min(max(batch, saved["batch"]), max(batch, n))
        if h is None:
            h = u.copy()
        g = np.empty(D)
        p = np.empty(D)
        if need_z:
            q_full = np.empty(n)
            ys_full = sw / n
        else:
            q_full = ys_full = np.empty(1)
            z = np.empty(1)
        step_max = np.inf if self.step_max is None else float(self.step_max)
        first = True
        cap = step_max
        if h is not None and saved is not None and saved["h"] is h:
            cap = min(cap, saved["cap"])
        rejected = 0
        k = 0
        while not converged and not stop and k < self.max_iter:
            x0 = x.copy()
            if self.solver == "cgvr":
                g[:] = h if self.restart == "h" else u
                np.negative(g, out=p)
                before = stats.copy()
                z_start = z.copy() if need_z else z
                counter = _cgvr.cgvr_inner(
                    ds, y, sw, loss, x, x0, u, dl0, g, p, self.inner_iter, batch,
                    _cgvr.BETA_RULES[self.beta], _cgvr.LINE_SEARCHES[self.line_search],
                    self.c1, self.c2, self.step_init, cap, self.ls_max_iter,
                    self.zoom_max_iter, alpha, alpha_b, fit_intercept,
                    self.w_selection == "random", seed, batch_stream, counter, z, q_full,
                    ys_full, stats, steps)
                restarts = int(stats[0] - before[0])
                passes += (2 * self.inner_iter + restarts) * batch / n
                if self.line_search == "full":
                    passes += self.inner_iter + restarts
                step_size = float(np.mean(steps))
            elif self.solver == "cg":
                # full-batch nonlinear CG (the paper's "CG" baseline), restarted with -grad at
                # the first iteration and whenever the direction is not a descent direction
                if first or not float(u @ p) < 0:
                    p = -u
                    first = False
                q = ds.margins(p[:d], p[d])
                r0 = alpha * (x[:d] @ p[:d]) + alpha_b * x[d] * p[d]
                rpp = alpha * (p[:d] @ p[:d]) + alpha_b * p[d] * p[d]
                step, _, _, n_evals, failed = _cgvr.line_search_margins(
                    loss, z, q, y, ys_full, r0, rpp, 0.0, self.step_init, step_max, self.c1,
                    self.c2, self.ls_max_iter, self.zoom_max_iter)
                stats[2] += n_evals
                stats[3] += int(failed)
                if step == 0.0:
                    stats[1] += 1
                x += step * p
                passes += 1.0
                step_size = step
                g[:] = u
            else:
                sb = 1 if self.solver == "svrg" else batch
                counter = _cgvr.svrg_inner(ds, y, sw, loss, x, x0, u, dl0, self.inner_iter,
                                           sb, self.eta0, alpha, alpha_b, fit_intercept,
                                           seed, batch_stream, counter)
                passes += self.inner_iter * sb / n
                step_size = self.eta0
            guarded = self.solver == "cgvr" and self.safeguard
            if not guarded:
                check_finite_iterate(x, monitor.solver_name, f"outer iteration {k + 1}")
            k += 1
            u_new = np.empty(D)
            dl0_new = np.empty(n)
            new_obj = _cgvr.full_objective_gradient(ds, y, sw, loss, x, alpha, alpha_b,
                                                    fit_intercept, u_new, dl0_new,
                                                    z if need_z else None)
            passes += 1.0
            # rounding of f (n terms) limits how small a decrease can be seen
            if guarded and not new_obj <= obj + 1e-14 * abs(obj):
                # the outer iteration increased f: discard it, then double the batch (up to
                # n) or, at batch n, halve the step cap below the largest step it took (see
                # the user guide, "safeguards")
                rejected += 1
                x[:] = x0
                if need_z:
                    z[:] = z_start
                if batch < n:
                    # the batch curvature along p underestimated the true one: a larger
                    # batch keeps the long steps of CG in flat directions (a step cap
                    # would forbid them, which stalls ill-conditioned problems)
                    batch = min(2 * batch, n)
                else:
                    big = float(np.max(steps))
                    cap = 0.5 * big if 0.0 < big < np.inf else 0.5 * min(cap, 1.0)
            else:
                obj, u, dl0 = new_obj, u_new, dl0_new
                if self.solver == "cgvr":
                    h = g.copy()
            if self.solver == "cg":
                beta = _cg_beta(self.beta, u, g, p)
                p = -u + beta * p
            crit = float(np.max(np.abs(u)))
            converged = crit <= self.tol * scale
            stop = monitor.record(epoch=k, objective=obj, grad_max=crit, step_size=step_size,
                                  passes=passes, restarts=int(stats[0]),
                                  skipped_steps=int(stats[1]),
                                  line_search_evals=int(stats[2]), rejected_epochs=rejected,
                                  step_cap=cap, batch=batch, x=x[:d])
        monitor.finish(converged=converged, criterion="max |gradient| / alpha",
                       value=crit / scale, tol=self.tol, max_iter=self.max_iter)
        intercept = float(x[d]) if fit_intercept else 0.0
        return SolverResult(x=x[:d].copy(), intercept=intercept, n_iter=k,
                            converged=converged, criterion=crit / scale,
                            criterion_name="max |gradient| / alpha",
                            state={"h": h, "batch": batch, "cap": cap},
                            extra={"stats": stats.copy(), "passes": passes})


def _cg_beta(rule, g_new, g_old, p):
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


def _batch_size(batch_size, n):
    if batch_size == "sqrt":
        return max(1, int(np.sqrt(n)))
    return int(batch_size)


# Parameters documented once for both estimators (substituted into their docstrings below).
_SOLVER_PARAMETERS_DOC = """\
    alpha : float, default=1e-4
        Strength of the L2 penalty ``(alpha/2) ||w||^2`` (must be >= 0; CG line searches need
        ``alpha > 0`` for the hinge loss). scikit-learn's ``C`` is ``1 / (n_samples * alpha)``;
        the paper's ``lambda`` (penalty ``lambda ||w||^2``, Eqs. 47-50) is ``alpha / 2``.
    solver : {'cgvr', 'cg', 'svrg', 'minibatch_svrg'}, default='cgvr'
        ``'cgvr'``: Algorithm 3 of the paper. The paper's baselines: ``'cg'`` full-batch
        nonlinear CG with the same strong-Wolfe line search (one outer iteration = one CG step);
        ``'svrg'`` SVRG with a fixed step ``eta0`` and single-sample inner steps (Alg. 1,
        Option I); ``'minibatch_svrg'`` the same with ``batch_size`` samples per step (what the
        authors' "SLBFGS" code actually runs, see the user guide).
    beta : {'PR+', 'FR', 'PR', 'HS', 'DY', 'none'}, default='PR+'
        Conjugate-direction rule: PR+ (paper Option I, used in its experiments), FR (Option II,
        used in its proof), plain Polak-Ribiere, Hestenes-Stiefel, Dai-Yuan, or ``'none'``
        (steepest descent along the variance-reduced gradient).
    line_search : {'vr', 'batch', 'full'}, default='vr'
        Objective of the strong-Wolfe line search along ``p_t``. ``'batch'`` is the paper's
        mini-batch objective ``f_S`` (Eqs. 11-12); its step is chosen from an un-reduced noisy
        function and the iterates stall at a noise floor. ``'vr'`` (default, ours) adds the
        SVRG correction ``(u_k - grad f_S(w_k)) . x`` to ``f_S``, so that its gradient is exactly
        the variance-reduced gradient ``g_{t+1}`` of Eq. (3): the curvature condition then
        enforces the analysis' condition (13) and the method converges linearly at the same
        O(batch) cost per evaluation. ``'full'`` searches on ``f`` itself (one extra pass over X
        per inner step).
    inner_iter : int, default=50
        Inner iterations ``m`` per outer iteration (paper: 50).
    batch_size : 'sqrt' or int, default='sqrt'
        Mini-batch size; ``'sqrt'`` is ``int(sqrt(n_samples))`` as in the paper. Batches are
        drawn uniformly with replacement.
    c1, c2 : float, default=1e-4, 0.1
        Strong-Wolfe constants, ``0 < c1 < c2 < 1`` (paper values).
    step_init : float, default=1.0
        First trial step of every line search (paper: 1).
    step_max : float or None, default=None
        Largest step; the bracketing phase doubles the step up to it. None: unbounded (paper).
    ls_max_iter, zoom_max_iter : int, default=20, 20
        Budgets of the bracketing and zoom phases (paper: 20 each; zoom bisects). When a budget
        runs out the step with the lowest line-search objective seen is taken (0 if none).
    restart : {'h', 'full'}, default='h'
        Direction at the start of each outer iteration: ``'h'`` is ``-g_m`` of the previous
        outer iteration (Algorithm 3); ``'full'`` is ``-grad f(w_k)``.
    w_selection : {'last', 'random'}, default='last'
        Option I (``w_{k+1} = x_m``, paper experiments) or Option II (a random inner iterate,
        the paper's theory).
    init : {'zeros', 'uniform'}, default='zeros'
        Starting point when not warm starting: zeros, or ``U[0, 1)`` entries as in the paper.
    eta0 : float, default=1e-3
        Fixed step of the ``'svrg'`` and ``'minibatch_svrg'`` baselines (paper grid: 1e-3,
        1e-4, 1e-5).
    fit_intercept : bool, default=True
        Fit an intercept ``b`` (an extra coordinate, as the paper's appended constant feature).
    regularize_intercept : bool, default=False
        Penalise ``b`` as well (``(alpha/2) b^2``), as the paper and LIBLINEAR do.
        False (default) matches scikit-learn's lbfgs/newton solvers and Ridge.
    safeguard : bool, default=True
        ``solver='cgvr'`` only: discard an outer iteration that does not decrease ``f`` (its
        full gradient is computed anyway) and double the batch size for the following ones;
        once the batch reaches ``n_samples`` the inner loop uses every row once per step
        (exact nonlinear CG on f, restarted every ``inner_iter`` steps) and further rejections
        cap the step at half of the largest step taken. This makes ill-conditioned problems
        (small ``alpha``, few samples) converge. False runs Algorithm 3 without this check
        (as the paper).
    max_iter : int, default=100
        Maximal number of outer iterations (paper: a fixed T = 25).
    tol : float, default=1e-4
        Stop when ``max |grad f(w_k)| <= tol * alpha`` (checked at every full gradient; alpha
        is replaced by 1 when it is 0). For ``C = 1 / (n alpha)`` this is exactly the stopping
        rule of :class:`~sklearn.linear_model.LogisticRegression` (lbfgs) with the same tol."""

class CGVRClassifier(_CGVRMixin, BaseLinearClassifier):
    """Linear classifier trained by stochastic conjugate gradient with variance reduction (CGVR).

    Minimises ``(1/n) sum_i s_i loss(y_i, x_i . w + b) + (alpha/2) ||w||^2`` (``s_i`` the sample
    weights times class weights) with Algorithm 3 of Jin et al. (2019): an SVRG outer loop (a
    full gradient ``u_k`` at the snapshot ``w_k``) around nonlinear conjugate-gradient inner
    steps along variance-reduced mini-batch gradients, each with a strong-Wolfe line search
    computed on margins (O(batch) per evaluation). More than two classes are handled
    one-vs-rest, in parallel threads with ``n_jobs``.

    Read more in the :ref:`User Guide <cgvr>`.

    Parameters
    ----------
    loss : {'log_loss', 'squared_hinge', 'hinge', 'squared_error'}, default='log_loss'
        ``'log_loss'`` logistic regression (enables ``predict_proba``); ``'squared_hinge'``
        ``max(0, 1 - y p)^2`` (LinearSVC's loss, the paper's headline model); ``'hinge'`` (a
        subgradient is used, as in the paper; no convergence guarantee); ``'squared_error'``
        ``(p - y)^2 / 2`` on +-1 targets (the paper's ridge classifier).
%(solver_parameters)s
    class_weight : dict, 'balanced' or None, default=None
        Multiplies the sample weights per class.
    n_jobs : int or None, default=None
        Threads for the one-vs-rest heads (the kernels release the GIL).
    warm_start : bool, default=False
        Start from the previous solution and keep the solver state (the restart gradient
        ``h_k`` of each head).
    verbose : int, default=0
        Print one line per outer iteration when > 0.
    random_state : int, RandomState instance or None, default=None
        Seeds the counter-based generator of the kernels (batches, Option II, uniform init).
        The same value gives bitwise identical fitted attributes, for any ``n_jobs``.
    callback : callable or None, default=None
        ``callback(record)`` after every outer iteration (``record`` holds the history entries
        and the coefficients under ``"x"``); returning True stops the fit.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_iter_ : int
        Outer iterations run (maximum over one-vs-rest heads).
    history_ : dict of ndarray, or list of dict
        One entry per outer iteration (entry 0 is the start): ``objective`` f(w_k),
        ``grad_max`` max |grad f(w_k)|, ``step_size`` (mean accepted inner step), ``passes``
        (cumulative effective passes over the data: rows read / n_samples), ``restarts``,
        ``skipped_steps``, ``line_search_evals`` (cumulative counters) and ``time`` (seconds).
        A list with one dict per head for one-vs-rest.
    seed_ : int
        Seed drawn from ``random_state`` for this fit.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string feature names.

    See Also
    --------
    CGVRRegressor : the same solver for ridge regression.
    sklearn.linear_model.LogisticRegression : exact solvers for the log loss.
    sklearn.svm.LinearSVC : LIBLINEAR for the (squared) hinge loss.

    Notes
    -----
    Differences from the paper, all documented in the user guide: the default line search is
    on the variance-reduced batch objective (``line_search='vr'``) instead of the plain batch
    objective, which stalls at a noise floor; a direction that is not a descent direction of
    the line-search objective is replaced by ``-g`` (and the step skipped if that still fails);
    beta falls back to 0 on a vanishing or non-finite denominator; the intercept is not
    penalised and ``w_0 = 0`` by default; ``max_iter``/``tol`` replace the fixed T = 25.

    References
    ----------
    X.-B. Jin, X.-Y. Zhang, K. Huang and G.-G. Geng, "Stochastic conjugate gradient algorithm
    with variance reduction", IEEE TNNLS 30(5):1360-1369, 2019 (arXiv:1710.09979).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skstoch import CGVRClassifier
    >>> X, y = make_classification(n_samples=500, random_state=0)
    >>> clf = CGVRClassifier(alpha=1e-3, random_state=0).fit(X, y)
    >>> print(f"{clf.score(X, y):.3f}")
    0.826

    The fit reaches the regularized optimum: LogisticRegression with the matching
    ``C = 1 / (n_samples * alpha)`` finds the same coefficients (and the same accuracy, so
    0.826 is the model's limit on this data, not the solver's).

    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> exact = LogisticRegression(C=1 / (500 * 1e-3), tol=1e-10).fit(X, y)
    >>> bool(np.allclose(clf.coef_, exact.coef_, atol=1e-4))
    True
    >>> print(f"{exact.score(X, y):.3f}")
    0.826
    """

    _parameter_constraints = {
        **_cgvr_constraints(),
        "loss": [StrOptions({"log_loss", "squared_hinge", "hinge", "squared_error"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "n_jobs": [Integral, None],
    }

    def __init__(self, loss="log_loss", *, alpha=1e-4, solver="cgvr", beta="PR+",
                 line_search="vr", inner_iter=50, batch_size="sqrt", c1=1e-4, c2=0.1,
                 step_init=1.0, step_max=None, ls_max_iter=20, zoom_max_iter=20, restart="h",
                 w_selection="last", init="zeros", eta0=1e-3, fit_intercept=True,
                 regularize_intercept=False, safeguard=True, max_iter=100, tol=1e-4,
                 class_weight=None,
                 n_jobs=None, warm_start=False, verbose=0, random_state=None, callback=None):
        self.loss = loss
        self.alpha = alpha
        self.solver = solver
        self.beta = beta
        self.line_search = line_search
        self.inner_iter = inner_iter
        self.batch_size = batch_size
        self.c1 = c1
        self.c2 = c2
        self.step_init = step_init
        self.step_max = step_max
        self.ls_max_iter = ls_max_iter
        self.zoom_max_iter = zoom_max_iter
        self.restart = restart
        self.w_selection = w_selection
        self.init = init
        self.eta0 = eta0
        self.fit_intercept = fit_intercept
        self.regularize_intercept = regularize_intercept
        self.safeguard = safeguard
        self.max_iter = max_iter
        self.tol = tol
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback

    def fit(self, X, y, sample_weight=None):
        """Fit the model with CGVR (or the selected baseline solver).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (dense or CSR; float32 is accepted and computed in float64).
        y : array-like of shape (n_samples,)
            Target values.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights ``s_i`` of the objective.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        self._validate_params()
        self._check_cgvr_params()
        return super().fit(X, y, sample_weight=sample_weight)


class CGVRRegressor(_CGVRMixin, BaseLinearRegressor):
    """Ridge regression trained by stochastic conjugate gradient with variance reduction (CGVR).

    Minimises ``(1/n) sum_i s_i (y_i - x_i . w - b)^2 / 2 + (alpha/2) ||w||^2`` with Algorithm 3
    of Jin et al. (2019) (see :class:`CGVRClassifier`). This equals scikit-learn's
    :class:`~sklearn.linear_model.Ridge` with ``alpha_ridge = n_samples * alpha`` (the paper's
    ridge model, Eq. 47, with ``lambda = alpha / 2`` has twice this objective). Several targets
    are solved one after the other as independent problems.

    Read more in the :ref:`User Guide <cgvr>`.

    Parameters
    ----------
    loss : {'squared_error'}, default='squared_error'
        The only loss of the regressor.
%(solver_parameters)s
    warm_start : bool, default=False
        Start from the previous solution and keep the solver state (the restart gradient
        ``h_k`` of each head).
    verbose : int, default=0
        Print one line per outer iteration when > 0.
    random_state : int, RandomState instance or None, default=None
        Seeds the counter-based generator of the kernels (batches, Option II, uniform init).
        The same value gives bitwise identical fitted attributes, for any ``n_jobs``.
    callback : callable or None, default=None
        ``callback(record)`` after every outer iteration (``record`` holds the history entries
        and the coefficients under ``"x"``); returning True stops the fit.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
    intercept_ : float or ndarray of shape (n_targets,)
    n_iter_ : int
        Outer iterations run (maximum over one-vs-rest heads).
    history_ : dict of ndarray, or list of dict
        One entry per outer iteration (entry 0 is the start): ``objective`` f(w_k),
        ``grad_max`` max |grad f(w_k)|, ``step_size`` (mean accepted inner step), ``passes``
        (cumulative effective passes over the data: rows read / n_samples), ``restarts``,
        ``skipped_steps``, ``line_search_evals`` (cumulative counters) and ``time`` (seconds).
        A list with one dict per head for one-vs-rest.
    seed_ : int
        Seed drawn from ``random_state`` for this fit.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string feature names.

    See Also
    --------
    CGVRClassifier : classification losses.
    sklearn.linear_model.Ridge : exact ridge solvers.

    References
    ----------
    X.-B. Jin, X.-Y. Zhang, K. Huang and G.-G. Geng, "Stochastic conjugate gradient algorithm
    with variance reduction", IEEE TNNLS 30(5):1360-1369, 2019 (arXiv:1710.09979).

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from skstoch import CGVRRegressor
    >>> X, y = make_regression(n_samples=500, noise=1.0, random_state=0)
    >>> reg = CGVRRegressor(alpha=1e-3, random_state=0).fit(X, y)
    >>> reg.score(X, y) > 0.99
    True
    """

    _parameter_constraints = {
        **_cgvr_constraints(),
        "loss": [StrOptions({"squared_error"})],
    }

    def __init__(self, loss="squared_error", *, alpha=1e-4, solver="cgvr", beta="PR+",
                 line_search="vr", inner_iter=50, batch_size="sqrt", c1=1e-4, c2=0.1,
                 step_init=1.0, step_max=None, ls_max_iter=20, zoom_max_iter=20, restart="h",
                 w_selection="last", init="zeros", eta0=1e-3, fit_intercept=True,
                 regularize_intercept=False, safeguard=True, max_iter=100, tol=1e-4,
                 warm_start=False,
                 verbose=0, random_state=None, callback=None):
        self.loss = loss
        self.alpha = alpha
        self.solver = solver
        self.beta = beta
        self.line_search = line_search
        self.inner_iter = inner_iter
        self.batch_size = batch_size
        self.c1 = c1
        self.c2 = c2
        self.step_init = step_init
        self.step_max = step_max
        self.ls_max_iter = ls_max_iter
        self.zoom_max_iter = zoom_max_iter
        self.restart = restart
        self.w_selection = w_selection
        self.init = init
        self.eta0 = eta0
        self.fit_intercept = fit_intercept
        self.regularize_intercept = regularize_intercept
        self.safeguard = safeguard
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback

    def fit(self, X, y, sample_weight=None):
        """Fit the model with CGVR (or the selected baseline solver).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (dense or CSR; float32 is accepted and computed in float64).
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Target values.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights ``s_i`` of the objective.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        self._validate_params()
        self._check_cgvr_params()
        return super().fit(X, y, sample_weight=sample_weight)


for _estimator in (CGVRClassifier, CGVRRegressor):
    _estimator.__doc__ = _estimator.__doc__ % {
        "solver_parameters": _SOLVER_PARAMETERS_DOC.rstrip("\n")}
del _estimator
