"""CGVR: stochastic conjugate gradient with variance reduction (Jin, Zhang, Huang & Geng,
IEEE TNNLS 2019, arXiv:1710.09979), for L2-regularised linear classification and ridge
regression, with the paper's baselines (full-batch CG, SVRG and mini-batch SVRG).
"""
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils._param_validation import Interval, StrOptions

from .._solvers import cgvr, cgvr_multinomial, dask_fit, dask_multinomial
from ..base import STOCHASTIC_SOLVER_CONSTRAINTS, BaseLinearClassifier, BaseLinearRegressor
from ._dask import (CGVR_DASK_NOTES, MULTINOMIAL_DASK_NOTES, DaskClassifierMixin,
                    DaskRegressorMixin, is_dask_array)


MAX_INNER_ITER = 10**6
MAX_LS_ITER = 10**4
# solver='auto' runs full-batch CG ('cg') in memory below this many rows, CGVR from it: the
# classifiers' crossover lies between 1,000 and 7,000 rows on make_classification (d 50 and
# 200, 2 and 5 classes; benchmarks/studies/cgvr_auto_crossover.py, user guide "Choosing the
# solver")
CG_BELOW_ROWS = 5000
# max_iter=None: outer iterations of the variance-reduced solvers (each a full gradient and
# inner_iter inner steps) and of 'cg' (each one CG step)
DEFAULT_MAX_ITER = {"cg": 1000}
DEFAULT_OUTER_ITER = 100


def _cgvr_constraints():
    return {
        **STOCHASTIC_SOLVER_CONSTRAINTS,
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "solver": [StrOptions(set(cgvr.SOLVERS) | {cgvr.PAPER_SOLVER, "auto"})],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "beta": [StrOptions(set(cgvr.BETA_RULES))],
        "line_search": [StrOptions(set(cgvr.LINE_SEARCHES))],
        # integers that reach the kernels are bounded (C int budgets, the inner_iter-sized
        # step table); batch_size is clamped to n_samples before anything is allocated
        "inner_iter": [Interval(Integral, 1, MAX_INNER_ITER, closed="both")],
        "batch_size": [StrOptions({"sqrt"}), Interval(Integral, 1, None, closed="left")],
        "c1": [Interval(Real, 0, 1, closed="neither")],
        "c2": [Interval(Real, 0, 1, closed="neither")],
        "step_init": [Interval(Real, 0, None, closed="neither")],
        "step_max": [Interval(Real, 0, None, closed="neither"), None],
        "ls_max_iter": [Interval(Integral, 1, MAX_LS_ITER, closed="both")],
        "zoom_max_iter": [Interval(Integral, 0, MAX_LS_ITER, closed="both")],
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
    """The front end shared by :class:`CGVRClassifier` and :class:`CGVRRegressor`: checks
    and resolves the parameters, then every head is solved by ``skstoch._solvers.cgvr``."""

    def _resolved_solver(self, X):
        """The solver a fit on ``X`` runs: ``solver='auto'`` is ``'cg'`` for an in-memory X
        of fewer than ``CG_BELOW_ROWS`` rows, else ``'cgvr'`` (a Dask X always)."""
        if self.solver != "auto":
            return self.solver
        return "cg" if not is_dask_array(X) and X.shape[0] < CG_BELOW_ROWS else "cgvr"

    def _solver_name(self, X):
        return f"{type(self).__name__}(solver={self._resolved_solver(X)!r})"

    def _fitted_extras(self, results, shared):
        return {"solver_": shared.solver}

    def _check_cgvr_params(self):
        if not self.c1 < self.c2:
            raise ValueError(
                f"The line search needs 0 < c1 < c2 < 1; got c1={self.c1!r} and c2={self.c2!r}."
            )
        if (self.solver in ("auto", "cgvr", "cg", cgvr.PAPER_SOLVER) and not self.alpha != 0
                and self.loss == "hinge"):
            raise ValueError(
                "loss='hinge' with alpha=0 has no minimiser along most directions; "
                "use alpha > 0."
            )

    def _prepare_fit(self, X, sample_weights, seed):
        """What every head of the fit shares: the resolved parameters (and the columns'
        moments of the check after a tol stop, computed once)."""
        return cgvr.FitShared(self._cgvr_params(X, sample_weights), self._resolved_solver(X))

    def _cgvr_params(self, X, sample_weights):
        """The resolved parameters of a fit (``cgvr.CGVRParams``)."""
        n_samples = X.shape[0]
        batch_size = (max(1, int(np.sqrt(n_samples))) if self.batch_size == "sqrt"
                      else min(int(self.batch_size), n_samples))
        alpha = 1.0 / n_samples if self.alpha == "auto" else float(self.alpha)
        solver = self._resolved_solver(X)
        paper = solver == cgvr.PAPER_SOLVER
        max_iter = (DEFAULT_MAX_ITER.get(solver, DEFAULT_OUTER_ITER) if self.max_iter is None
                    else int(self.max_iter))
        return cgvr.CGVRParams(
            loss=self.loss, alpha=alpha, solver="cgvr" if paper else solver,
            beta=self.beta, line_search="batch" if paper else self.line_search,
            inner_iter=int(self.inner_iter),
            batch_size=batch_size, c1=float(self.c1), c2=float(self.c2),
            step_init=float(self.step_init),
            step_max=np.inf if self.step_max is None else float(self.step_max),
            ls_max_iter=int(self.ls_max_iter), zoom_max_iter=int(self.zoom_max_iter),
            restart=self.restart, w_selection=self.w_selection, init=self.init,
            eta0=float(self.eta0), fit_intercept=bool(self.fit_intercept),
            regularize_intercept=bool(self.regularize_intercept),
            safeguard=bool(self.safeguard) and not paper, max_iter=max_iter,
            tol=float(self.tol),
            n_threads=self._threads_per_head(sample_weights))

    def _threads_per_head(self, sample_weights):
        """Threads inside each head's fit: n_jobs shared out among the heads that run in
        parallel (the inner loops' teams wait at spinning barriers: more threads than cores
        would slow them down; the results do not depend on it)."""
        n_heads = 1 if sample_weights is None else len(sample_weights)
        return max(1, int(effective_n_jobs(self.n_jobs)) // n_heads)

    def _fit_problem(self, problem):
        return cgvr.solve(problem, problem.shared.params, problem.monitor,
                          state=problem.state)

    def _reads_float32(self, X):
        return True    # the binary and regression kernels read float32 rows as they are

    def _dask_check(self):
        """line_search='full' searches on f inside the compiled inner loop: no Dask fit."""
        if self.solver in ("auto", "cgvr") and self.line_search == "full":
            raise ValueError(
                "line_search='full' runs a line search on f over all n margins at every "
                "inner step of the compiled inner loop, which holds X's margins in memory "
                "(on a cluster: a distributed pass per inner step, inner_iter per outer "
                "iteration); it is not supported for a Dask array X: use line_search='vr' "
                "(default) or 'batch', or solver='cg' (full-batch CG, its line search on the "
                "workers).")

    def _dask_solve(self, X, target, sample_weight, seed, k, monitor, coef_init,
                    intercept_init, state):
        params = self._cgvr_params(X, None)
        data = dask_fit.make_data(X, target, sample_weight,
                                  dask_fit.cgvr_loss_spec(params.loss))
        return dask_fit.solve_cgvr(data, params, monitor, seed, k, coef_init, intercept_init,
                                   state)

    def _dask_extras(self, results, X):
        return {"solver_state_": [r.state for r in results], "solver_": self._resolved_solver(X)}


# Parameters documented once for both estimators (substituted into their docstrings below).
_SOLVER_PARAMETERS_DOC = """\
    alpha : float or 'auto', default='auto'
        Strength of the L2 penalty ``(alpha/2) ||w||^2`` (must be >= 0; CG line searches need
        ``alpha > 0`` for the hinge loss). ``'auto'`` is ``1 / n_samples``: the penalty of
        scikit-learn's defaults, ``LogisticRegression(C=1)`` and ``Ridge(alpha=1)`` (with
        sample weights: when they average 1, since they are rescaled to sum to n_samples).
        scikit-learn's ``C`` is ``1 / (n_samples * alpha)`` and Ridge's ``alpha`` is
        ``n_samples * alpha``; the paper's ``lambda`` (penalty ``lambda ||w||^2``, Eqs. 47-50)
        is ``alpha / 2``.
    solver : {'auto', 'cgvr', 'cgvr_paper', 'cg', 'svrg', 'minibatch_svrg'}, default='auto'
        ``'auto'`` (ours): ``'cg'`` for an in-memory X of fewer than 5,000 rows, ``'cgvr'``
        otherwise and for a Dask X; ``solver_`` gives the one that ran. Where a pass over X
        is cheap the stochastic inner loops gain nothing: full-batch CG fits the standardised
        bundled datasets in 4 to 16 times less CPU time (user guide, "Choosing the solver").
        ``'cgvr'``: Algorithm 3 of the paper with our two additions, the line search on the
        variance-reduced batch objective (``line_search='vr'``) and the ``safeguard``.
        ``'cgvr_paper'``: Algorithm 3 with the paper's line search on the mini-batch
        objective ``f_S`` and without the ``safeguard`` (``line_search`` and ``safeguard``
        are then ignored); the user guide's descent safeguards (for steps the paper leaves
        undefined) and second search on loss changes stay on. It stalls near a noise floor
        (about 1e-3 relative suboptimality on a9a-like data, see the example). The paper's
        other choices (PR+, Option I, restart from ``h_k``, ``m = 50``, batch ``sqrt(n)``)
        are the defaults; its ``w_0 ~ U[0, 1)``, penalised intercept and fixed T = 25 are
        ``init='uniform'``, ``regularize_intercept=True``, ``max_iter=25, tol=0``. The
        paper's baselines: ``'cg'`` full-batch nonlinear CG with the same strong-Wolfe line
        search (one outer iteration = one CG step);
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
        Inner iterations ``m`` per outer iteration (paper: 50; at most 10**6).
    batch_size : 'sqrt' or int, default='sqrt'
        Mini-batch size; ``'sqrt'`` is ``int(sqrt(n_samples))`` as in the paper. Batches are
        drawn uniformly with replacement. Clamped to ``n_samples`` (for ``solver='cgvr'``
        a batch of ``n_samples`` rows is the deterministic full batch, every row once).
    c1, c2 : float, default=1e-4, 0.1
        Strong-Wolfe constants, ``0 < c1 < c2 < 1`` (paper values).
    step_init : float, default=1.0
        First trial step of every line search (paper: 1).
    step_max : float or None, default=None
        Largest step; the bracketing phase doubles the step up to it. None: unbounded (paper).
    ls_max_iter, zoom_max_iter : int, default=20, 20
        Budgets of the bracketing and zoom phases (paper: 20 each; zoom bisects; at most
        10**4). When a budget
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
        (small ``alpha``, few samples) converge. For ``'cgvr'`` and ``'cg'``: when the line
        searches find no decrease at all (down to ``step_init / 2**zoom_max_iter``: a feature
        on a far larger scale than the others, or every feature on a large scale), the
        following ones start from a first trial step ``2**zoom_max_iter`` times shorter, until
        the trials reach ``1 / L`` for a bound L on f's curvature from the rows' norms (at
        least three times; see the user guide). False runs Algorithm 3 and CG without these
        checks (as the paper).
    max_iter : int or None, default=None
        Maximal number of outer iterations (paper: a fixed T = 25); for ``'cg'`` an outer
        iteration is one CG step. None: 1000 for ``'cg'``, 100 for the others.
    tol : float, default=1e-4
        Stop when ``max_j |grad f(w_k)_j| <= tol`` (the ``grad_max`` column of ``history_``,
        checked at every full gradient), with f the objective above (a mean over the
        samples). This is the stopping rule of
        :class:`~sklearn.linear_model.LogisticRegression` (lbfgs: ``gtol=tol`` on the same
        mean objective) with the same tol.  It bounds the gradient in the units of X and y:
        after a tol stop the fit measures the gradient on standardized features relative
        to its value at zero and raises ConvergenceWarning above ``max(0.01, 100 tol)``
        (on raw diabetes with ``y * 1e-4`` the default fit stopped at R2 0.489 where Ridge
        reaches 0.518; the user guide's "Other defaults" gives what the check costs, in
        memory and on a Dask X)."""

# The solver's fitted attributes, documented once for both estimators (``%(heads)s``: what
# one problem is, a one-vs-rest head or a target).
_FITTED_ATTRIBUTES_DOC = """\
    n_iter_ : int
        Outer iterations run (maximum over %(heads)ss), the last ``iteration`` of
        ``history_``.
    history_ : dict of ndarray, or list of dict
        One entry per outer iteration: ``iteration`` k (0 is the start), ``objective``
        f(w_k) (exact, from the full pass of the snapshot), ``grad_max`` max |grad f(w_k)|,
        ``step_size`` (mean accepted inner step; the CG step for ``'cg'``, ``eta0`` for
        the SVRG baselines), ``passes`` (cumulative effective passes over the data: rows
        read / n_samples), ``restarts``, ``skipped_steps``, ``line_search_evals``,
        ``rejected_epochs`` (cumulative counters), ``batch`` and ``step_cap`` (batch size
        and step cap of the safeguard; these six are NaN in entry 0) and ``time`` (seconds
        since the fit started).  For a Dask array X, ``passes`` counts the distributed
        full passes over X, and ``gathers`` and ``gathered_rows`` the samples brought to
        the client and their rows (cumulative; each sample at most a quarter of the rows
        and the gather byte budget, see Notes).
        A list with one dict per %(heads)s when there are several.
    seed_ : int
        Seed drawn from ``random_state`` for this fit.
    solver_ : str
        The solver that ran (resolves ``solver='auto'``).
    solver_state_ : list of dict
        The solver state a warm start resumes from, per %(heads)s: the restart
        gradient ``h`` (``h_k``), the ``batch`` size and the step ``cap`` the safeguard
        reached."""


class CGVRClassifier(_CGVRMixin, DaskClassifierMixin, BaseLinearClassifier):
    """Linear classifier trained by stochastic conjugate gradient with variance reduction (CGVR).

    Minimises ``(1/n) sum_i s_i loss(y_i, x_i . w + b) + (alpha/2) ||w||^2`` (``s_i`` the sample
    weights times class weights, rescaled to sum to n) with Algorithm 3 of Jin et al. (2019):
    an SVRG outer loop (a full gradient ``u_k`` at the snapshot ``w_k``) around nonlinear
    conjugate-gradient inner steps along variance-reduced mini-batch gradients, each with a
    strong-Wolfe line search computed on margins (O(batch) per evaluation). That is
    ``solver='cgvr'``, which the default ``solver='auto'`` runs from 5,000 rows; below, where a
    pass over X is cheap, it runs full-batch nonlinear CG with the same line search (the
    paper's ``'cg'`` baseline). With more than two classes the log loss is multinomial, one objective over all classes as scikit-learn's
    LogisticRegression::

        (1/n) sum_i s_i [log sum_k exp(x_i . w_k + b_k) - (x_i . w_{y_i} + b_{y_i})]
        + (alpha/2) sum_k ||w_k||^2

    (``predict_proba`` is its softmax); the other losses, and the log loss with
    ``multi_class='ovr'``, are fitted one-vs-rest, in parallel threads with ``n_jobs``.

    Read more in the :ref:`User Guide <cgvr>`.

    Parameters
    ----------
    loss : {'log_loss', 'squared_hinge', 'hinge', 'squared_error'}, default='log_loss'
        ``'log_loss'`` logistic regression (enables ``predict_proba``); ``'squared_hinge'``
        ``max(0, 1 - y p)^2`` (LinearSVC's loss, the paper's headline model); ``'hinge'`` (a
        subgradient is used, as in the paper; no convergence guarantee); ``'squared_error'``
        ``(p - y)^2 / 2`` on +-1 targets (the paper's ridge classifier).
%(solver_parameters)s
    multi_class : {'auto', 'multinomial', 'ovr'}, default='auto'
        How more than two classes are fitted (as in ``S3GDClassifier``).
        ``'multinomial'`` (log loss only): the multinomial objective above, one problem
        over all classes (scikit-learn's ``LogisticRegression``). ``'ovr'``: one binary
        problem per class, ``predict_proba`` normalises the one-vs-rest sigmoids (as
        ``SGDClassifier``). ``'auto'``: ``'multinomial'`` for the log loss, else ``'ovr'``.
    class_weight : dict, 'balanced' or None, default=None
        Multiplies the sample weights per class.  ``'balanced'``: ``n_samples / (n_classes
        * class count)``, the samples counted by their ``sample_weight``, as in
        ``LogisticRegression``.
    n_jobs : int or None, default=None
        Threads inside one fit and across the one-vs-rest heads (the kernels release the
        GIL): the full passes over X (objective, gradient, snapshot) run over fixed row
        blocks in parallel, and each inner loop runs on a team of threads over fixed
        blocks of the mini-batch rows and of the features; every block sum is reduced in
        block order and the blocks depend on the data sizes only, so the fitted attributes
        are bitwise the same for every ``n_jobs``. Heads fitted in parallel share the
        threads; fits below 16384 rows use one thread per head. None means 1, -1 all
        processors. The multinomial fit's passes use NumPy/BLAS (whose threads BLAS
        controls).
    warm_start : bool, default=False
        Start from the previous solution and resume from the solver state of the previous
        fit (``solver_state_``: the restart gradient ``h_k`` of each head, batch, step cap).
        A previous fit of another shape (features, classes or outputs) is no start: the
        fit then starts from zero.
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
%(fitted_attributes)s
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

%(dask_notes)s

    References
    ----------
    X.-B. Jin, X.-Y. Zhang, K. Huang and G.-G. Geng, "Stochastic conjugate gradient algorithm
    with variance reduction", IEEE TNNLS 30(5):1360-1369, 2019 (arXiv:1710.09979).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skstoch import CGVRClassifier
    >>> X, y = make_classification(n_samples=500, random_state=0)
    >>> clf = CGVRClassifier(random_state=0).fit(X, y)
    >>> print(f"{clf.score(X, y):.3f}")
    0.828

    The defaults fit the model of ``LogisticRegression()`` (``alpha='auto'`` is its C=1)
    and stop at its ``tol``; with a tight ``tol`` the fit reaches the same coefficients.

    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> exact = LogisticRegression(tol=1e-10).fit(X, y)
    >>> tight = CGVRClassifier(tol=1e-8, random_state=0).fit(X, y)
    >>> bool(np.allclose(tight.coef_, exact.coef_, atol=1e-6))
    True
    >>> print(f"{exact.score(X, y):.3f}")
    0.828
    """

    _parameter_constraints = {
        **_cgvr_constraints(),
        "loss": [StrOptions({"log_loss", "squared_hinge", "hinge", "squared_error"})],
        "multi_class": [StrOptions({"auto", "multinomial", "ovr"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "n_jobs": [Integral, None],
    }

    def __init__(self, loss="log_loss", *, alpha="auto", solver="auto", beta="PR+",
                 line_search="vr", inner_iter=50, batch_size="sqrt", c1=1e-4, c2=0.1,
                 step_init=1.0, step_max=None, ls_max_iter=20, zoom_max_iter=20, restart="h",
                 w_selection="last", init="zeros", eta0=1e-3, fit_intercept=True,
                 regularize_intercept=False, safeguard=True, max_iter=None, tol=1e-4,
                 multi_class="auto", class_weight=None,
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
        self.multi_class = multi_class
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback

    def fit(self, X, y, sample_weight=None):
        """Fit the model with the solver ``solver`` resolves to (``solver_``).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Training data (dense or CSR).  float32 X is used without a copy: the kernels
            widen each value and accumulate in float64, so the binary and one-vs-rest fits
            equal those of the same values in float64.  The multinomial model's full passes
            over float32 run in a compiled kernel, in another summation order than the
            float64 BLAS passes, so its coefficients differ in the last bits (user guide,
            Reliability); its mini-batches are widened to float64, a batch at a time.
            A ``dask.array.Array`` is fitted on the Dask workers (see Notes).
        y : {array-like, dask array} of shape (n_samples,)
            Target values.
        sample_weight : {array-like, dask array} of shape (n_samples,), default=None
            Per-sample weights ``s_i`` of the objective, rescaled to sum to n_samples (only
            relative weights matter, as in scikit-learn's ElasticNet).

        Returns
        -------
        self : object
            Fitted estimator.
        """
        self._validate_params()
        self._check_cgvr_params()
        if self.multi_class == "multinomial" and self.loss != "log_loss":
            raise ValueError(
                f"multi_class='multinomial' needs loss='log_loss'; got loss={self.loss!r} "
                f"(use multi_class='ovr').")
        return super().fit(X, y, sample_weight=sample_weight)

    def _multinomial(self, n_classes):
        return self.loss == "log_loss" and n_classes > 2 and self.multi_class != "ovr"

    def _dask_check_multinomial(self):
        if self.solver == "cg" or (self.solver in ("auto", "cgvr")
                                   and self.line_search == "full"):
            what = "solver='cg'" if self.solver == "cg" else "line_search='full'"
            raise ValueError(
                f"{what} reads every row at every step and is not supported for the "
                "multinomial log loss on a Dask array X; use solver='cgvr' with "
                "line_search='vr' (default) or 'batch', 'svrg' / 'minibatch_svrg', or "
                "multi_class='ovr'.")

    def _dask_solve_multinomial(self, X, codes, sample_weight, n_classes, seed, monitor,
                                coef_init, intercept_init, state):
        params = self._cgvr_params(X, None)
        data = dask_multinomial.make_data(X, codes, sample_weight, n_classes,
                                          params.fit_intercept)
        return dask_multinomial.solve_cgvr(data, params, monitor, seed, coef_init,
                                           intercept_init, state)

    def _run_problems(self, X, targets, sample_weights, coef_init, intercept_init,
                      head_labels=None):
        """One multinomial problem for the log loss with more than two classes (the
        one-vs-rest targets are the columns of the one-hot matrix); one-vs-rest heads
        otherwise."""
        n_classes = len(targets)
        if not self._multinomial(n_classes):
            return super()._run_problems(X, targets, sample_weights, coef_init,
                                         intercept_init, head_labels)
        seed = self._draw_seed()
        params = self._cgvr_params(X, sample_weights)
        y = targets.codes    # a multinomial fit gets ClassTargets
        previous = getattr(self, "solver_state_", None)
        state = (previous[0] if self.warm_start and previous is not None
                 and len(previous) == 1 else None)
        warm = self.warm_start and hasattr(self, "coef_")
        monitor = self._make_monitor(self._solver_name(X))
        result = cgvr_multinomial.solve(
            X, y, sample_weights[0], n_classes, params, monitor, seed,
            coef_init=coef_init if warm else None,
            intercept_init=intercept_init if warm else None, state=state)
        return {"coef_": result.x, "intercept_": np.asarray(result.intercept, dtype=float),
                "n_iter_": int(result.n_iter), "history_": monitor.history(), "seed_": seed,
                "solver_state_": [result.state], "solver_": self._resolved_solver(X)}


class CGVRRegressor(_CGVRMixin, DaskRegressorMixin, BaseLinearRegressor):
    """Ridge regression trained by stochastic conjugate gradient with variance reduction (CGVR).

    Minimises ``(1/n) sum_i s_i (y_i - x_i . w - b)^2 / 2 + (alpha/2) ||w||^2`` (``s_i`` the
    sample weights rescaled to sum to n) with Algorithm 3 of Jin et al. (2019) (see
    :class:`CGVRClassifier`; the default ``solver='auto'`` runs it from 5,000 rows and
    full-batch nonlinear CG below). This equals scikit-learn's :class:`~sklearn.linear_model.Ridge`
    with ``alpha_ridge = n_samples * alpha`` (the paper's ridge model, Eq. 47, with
    ``lambda = alpha / 2`` has twice this objective). Several targets are solved as
    independent problems, in parallel threads when ``n_jobs > 1`` (one after the other for
    a Dask X); the results do not depend on ``n_jobs``.

    Read more in the :ref:`User Guide <cgvr>`.

    Parameters
    ----------
    loss : {'squared_error'}, default='squared_error'
        The only loss of the regressor.
%(solver_parameters)s
    n_jobs : int or None, default=None
        Threads inside one fit and across targets (the kernels release the GIL): the full
        passes over X run over fixed row blocks in parallel, and each inner loop runs on a
        team of threads over fixed blocks of the mini-batch rows and of the features;
        every block sum is reduced in block order and the blocks depend on the data sizes
        only, so the fitted attributes are bitwise the same for every ``n_jobs``. Targets
        fitted in parallel share the threads; fits below 16384 rows use one thread per
        target. None means 1, -1 all processors.
    warm_start : bool, default=False
        Start from the previous solution and resume from the solver state of the previous
        fit (``solver_state_``: the restart gradient ``h_k`` of each head, batch, step cap).
        A previous fit of another shape (features, classes or outputs) is no start: the
        fit then starts from zero.
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
%(fitted_attributes)s
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string feature names.

    See Also
    --------
    CGVRClassifier : classification losses.
    sklearn.linear_model.Ridge : exact ridge solvers.

    Notes
    -----
%(dask_notes)s

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
        "n_jobs": [Integral, None],
    }

    def __init__(self, loss="squared_error", *, alpha="auto", solver="auto", beta="PR+",
                 line_search="vr", inner_iter=50, batch_size="sqrt", c1=1e-4, c2=0.1,
                 step_init=1.0, step_max=None, ls_max_iter=20, zoom_max_iter=20, restart="h",
                 w_selection="last", init="zeros", eta0=1e-3, fit_intercept=True,
                 regularize_intercept=False, safeguard=True, max_iter=None, tol=1e-4,
                 n_jobs=None, warm_start=False,
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
        self.n_jobs = n_jobs
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.callback = callback

    def fit(self, X, y, sample_weight=None):
        """Fit the model with the solver ``solver`` resolves to (``solver_``).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Training data (dense or CSR).  float32 X is used without a copy (the kernels
            widen each value and accumulate in float64, so the fit equals that of the same
            values in float64).
            A ``dask.array.Array`` is fitted on the Dask workers (see Notes).
        y : {array-like, dask array} of shape (n_samples,) or (n_samples, n_targets)
            Target values.
        sample_weight : {array-like, dask array} of shape (n_samples,), default=None
            Per-sample weights ``s_i`` of the objective, rescaled to sum to n_samples (only
            relative weights matter, as in scikit-learn's ElasticNet).

        Returns
        -------
        self : object
            Fitted estimator.
        """
        self._validate_params()
        self._check_cgvr_params()
        return super().fit(X, y, sample_weight=sample_weight)


for _estimator, _heads in ((CGVRClassifier, "one-vs-rest head"), (CGVRRegressor, "target")):
    _estimator.__doc__ = _estimator.__doc__ % {
        "solver_parameters": _SOLVER_PARAMETERS_DOC.rstrip("\n"),
        "fitted_attributes": _FITTED_ATTRIBUTES_DOC % {"heads": _heads},
        "dask_notes": CGVR_DASK_NOTES + (MULTINOMIAL_DASK_NOTES
                                         if _estimator is CGVRClassifier else "")}
del _estimator, _heads
