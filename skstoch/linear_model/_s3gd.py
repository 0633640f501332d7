"""Linear models of the S3GD paper (002): by default working-set coordinate descent (l1 /
elastic-net, a dense float64 X, and any penalty below ``CD_BELOW_ROWS`` rows) or Prox-SVRG after
one SGD pass (l2 penalty on a sparse or float32 X from ``CD_BELOW_ROWS`` rows); for a multiclass
log loss, full-batch nonlinear CG below ``CD_BELOW_ROWS`` rows and multinomial Prox-SVRG from
there; the paper's S3GD with ``solver='s3gd'``.

``S3GDClassifier`` and ``S3GDRegressor`` minimise

    (1/n) sum_i s_i loss(y_i, x_i.w + b) + alpha (l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2)

(``s_i`` the sample times class weights rescaled to sum to n, ``b`` unpenalised).  The default
``solver='auto'`` runs ``'cd'`` (working-set coordinate descent) when the penalty has an l1
part, X is dense float64, or X has fewer than ``CD_BELOW_ROWS`` rows (the multinomial model:
``'cg'``, full-batch CG, below ``CD_BELOW_ROWS`` rows, dense or sparse), else ``'hybrid'``,
which with ``anchor_epochs=0`` builds no anchor graph: one pass of per-sample SGD, then
Prox-SVRG (Xiao & Zhang).  ``solver='s3gd'`` is Algorithm 1 of Mu, Liu & Fan (proximal mini-batch
steps with the anchor-graph control variate, Algorithm 2); the paper's baselines (mini-batch
SGD, stratified SGD, Prox-SVRG) are ``'sgd'``, ``'ssgd'``, ``'svrg'``.
"""
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from .._solvers import (_working_set, dask_fit, dask_multinomial, s3gd,
                        s3gd_multinomial)
from ..base import STOCHASTIC_SOLVER_CONSTRAINTS, BaseLinearClassifier, BaseLinearRegressor
from ._dask import (MULTINOMIAL_DASK_NOTES, S3GD_DASK_NOTES, DaskClassifierMixin,
                    DaskRegressorMixin, is_dask_array)

_COMMON_CONSTRAINTS = {
    **STOCHASTIC_SOLVER_CONSTRAINTS,
    "penalty": [StrOptions({"l2", "l1", "elasticnet"}), None],
    "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    "l1_ratio": [Interval(Real, 0, 1, closed="both")],
    "fit_intercept": ["boolean"],
    "solver": [StrOptions({"auto", "hybrid", "s3gd", "svrg", "sgd", "ssgd", "cd"})],
    "anchor_epochs": [Interval(Integral, 0, None, closed="left")],
    "warmup_epochs": [Interval(Integral, 0, None, closed="left")],
    "init_step": [StrOptions({"line_search", "auto"}), None],
    "eta0": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
    "learning_rate": [StrOptions({"constant", "adaptive"})],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "n_inner": [StrOptions({"auto"}), Interval(Integral, 1, s3gd.MAX_INNER, closed="both")],
    "n_anchors": [Interval(Integral, 1, None, closed="left")],
    "n_neighbors": [Interval(Integral, 1, None, closed="left")],
    "kernel_width": [StrOptions({"nearest", "paper"})],
    "kernel_eps": [Interval(Real, 0, None, closed="neither")],
    "anchor_method": [StrOptions({"auto", "kmeans", "minibatch_kmeans", "random"})],
    "kmeans_max_iter": [Interval(Integral, 1, None, closed="left")],
    "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
    "track_objective": ["boolean"],
    "warm_start": ["boolean"],
}


# solver='auto' runs 'cd' below this many rows (in memory; 'cg' for a multinomial fit): on
# standardized breast cancer 'hybrid' stopped on its plateau 8% above the optimum (digits
# one-vs-rest 49%) where 'cd' stops within 4e-6 of it in half the time or less; on generated
# problems 'cd' is as fast up to 5,000 rows, 'hybrid' faster from 20,000 rows at d = 100
# (benchmarks/studies/s3gd_auto_crossover.py; user guide, "Choosing the default solver").  From
# there 'auto' keeps 'hybrid' for a sparse or float32 X only: on dense data with correlated
# features 'hybrid' stopped up to 99% above the optimum without a warning.  Multinomial: 'hybrid'
# stopped 10% above the optimum on standardized digits, 'cg' 7e-4 above it
# (LogisticRegression()'s stop) in a third of the CPU time
CD_BELOW_ROWS = 5000

# the solvers whose multiclass log loss can be multinomial ('auto' below CD_BELOW_ROWS rows:
# full-batch CG; else multinomial Prox-SVRG)
_MULTINOMIAL_SOLVERS = ("auto", "hybrid", "svrg")


class _S3GDMixin:
    """The front end shared by the classifier and the regressor: resolves the parameters
    into :class:`skstoch._solvers.s3gd.S3GDParams` and calls the driver."""

    _CONDITIONAL_ATTRIBUTES = ("solver_state_", "anchor_indices_", "n_anchors_")

    def _penalty_coefs(self, n_samples):
        """``(lam1, lam2)`` of the penalty ``lam1 ||w||_1 + lam2 / 2 ||w||^2``."""
        alpha = 1.0 / n_samples if isinstance(self.alpha, str) else float(self.alpha)
        if self.penalty is None or alpha == 0:
            return 0.0, 0.0
        if self.penalty == "l2":
            return 0.0, alpha
        if self.penalty == "l1":
            return alpha, 0.0
        return alpha * self.l1_ratio, alpha * (1.0 - self.l1_ratio)

    def _has_l1_part(self):
        # alpha='auto' (1 / n) is positive for every n
        return self._penalty_coefs(2)[0] > 0

    def _resolved_solver(self, X, multinomial=False):
        """The solver a fit on ``X`` runs: ``solver='auto'`` is ``'hybrid'`` on a Dask X
        (Prox-SVRG epochs for every penalty and size; ``'cd'`` reads columns of X); in
        memory, a multinomial fit runs ``'cg'`` below ``CD_BELOW_ROWS`` rows without an l1
        part (full-batch CG needs a smooth objective), else ``'hybrid'``; the other fits run
        ``'cd'`` with an l1 part, on a dense float64 X, or below ``CD_BELOW_ROWS`` rows,
        else (a sparse or float32 X without an l1 part) ``'hybrid'``."""
        if self.solver != "auto":
            return self.solver
        if is_dask_array(X):
            return "hybrid"
        few_rows = X.shape[0] < CD_BELOW_ROWS
        if multinomial:
            return "cg" if few_rows and not self._has_l1_part() else "hybrid"
        # 'cd' copies a dense X's columns in float64: a float32 X is kept in place
        dense64 = not sp.issparse(X) and X.dtype == np.float64
        return "cd" if self._has_l1_part() or few_rows or dense64 else "hybrid"

    def _solver_name(self, X, multinomial=False):
        return f"{type(self).__name__}(solver={self._resolved_solver(X, multinomial)!r})"

    def _solver_params(self, X, multinomial=False):
        lam1, lam2 = self._penalty_coefs(X.shape[0])
        names = ("fit_intercept", "solver", "max_iter", "tol", "anchor_epochs",
                 "warmup_epochs", "init_step", "eta0", "learning_rate", "batch_size",
                 "n_inner", "n_iter_no_change", "track_objective", "n_anchors", "n_neighbors",
                 "kernel_width", "kernel_eps", "anchor_method", "kmeans_max_iter")
        # numpy scalars as Python numbers: np.int32(2**31 - 1) wrapped to 0 in arithmetic
        values = {k: v.item() if isinstance(v, np.generic) else v
                  for k, v in ((k, getattr(self, k)) for k in names)}
        values["solver"] = self._resolved_solver(X, multinomial)
        return s3gd.S3GDParams(loss=self.loss, smoothing=getattr(self, "smoothing", 1.0),
                               lam1=lam1, lam2=lam2, **values)

    def _prepare_fit(self, X, sample_weights, seed):
        """Row norms and the anchor graph (or strata), shared by every problem of the fit."""
        if self._resolved_solver(X) == "cd":
            return _working_set.prepare(X, seed)
        return s3gd.prepare(X, sample_weights, seed, self._solver_params(X))

    def _reads_float32(self, X):
        # the epoch kernels read float32 rows; 'cd' float32 column blocks (fused kernels)
        return True

    def _fit_problem(self, problem):
        params = self._solver_params(problem.X)
        if params.solver == "cd":
            return _working_set.solve(problem, params, problem.monitor)
        return s3gd.solve(problem, params, problem.monitor, problem.state)

    def _dask_check(self):
        """A Dask fit runs Prox-SVRG: the solvers that need X in memory are refused."""
        if self.solver == "cd":
            raise ValueError(
                "solver='cd' (coordinate descent) reads a column of X at every step and is "
                "not supported for a Dask array X (row chunks); use solver='auto', 'hybrid' "
                "or 'svrg' (Prox-SVRG with the l1 / elastic-net prox, one distributed pass "
                "per epoch).")
        why = {
            "s3gd": "builds an anchor graph over X in memory (k-means anchors, every row's "
                    "nearest anchors, per-anchor sums of the rows) that its steps read for "
                    "each sampled row",
            "ssgd": "clusters X in memory into k-means strata and draws each step's rows "
                    "from them",
            "sgd": "(the paper's baseline) stops at the noise floor of its steps above the "
                   "optimum; without full passes it cannot use the cluster, and each epoch "
                   "would only bring rows to the client",
        }
        if self.solver in why:
            raise ValueError(
                f"solver={self.solver!r} {why[self.solver]}: it is not supported for a Dask "
                "array X; use solver='auto', 'hybrid' or 'svrg' (Prox-SVRG, one distributed "
                "pass per epoch, to the optimum).")
        if self.solver in ("hybrid", "auto") and self.anchor_epochs > 0:
            raise ValueError(
                "anchor_epochs > 0 builds an anchor graph over X in memory and is not "
                "supported for a Dask array X; use anchor_epochs=0.")

    def _dask_solve(self, X, target, sample_weight, seed, k, monitor, coef_init,
                    intercept_init, state):
        params = self._solver_params(X)
        data = dask_fit.make_data(X, target, sample_weight, dask_fit.s3gd_loss_spec(params))
        return dask_fit.solve_s3gd(data, params, monitor, seed, k, coef_init, intercept_init)

    def _dask_extras(self, results, X):
        steps = [r.extra["step_size"] for r in results]
        return {"step_size_": steps[0] if len(steps) == 1 else np.array(steps),
                "solver_": self._resolved_solver(X)}

    def _run_problems(self, X, *args, **kwargs):
        fitted = super()._run_problems(X, *args, **kwargs)
        fitted["solver_"] = self._resolved_solver(X)
        return fitted

    def _fitted_extras(self, results, shared):
        steps = [r.extra["step_size"] for r in results]
        extras = {"step_size_": steps[0] if len(steps) == 1 else np.array(steps)}
        if shared.graph is not None:
            extras["anchor_indices_"] = shared.graph.anchor_indices.astype(np.intp)
            extras["n_anchors_"] = shared.graph.n_anchors
        return extras


_SOLVER_DOC = """
    penalty : {'l2', 'l1', 'elasticnet'} or None, default='l2'
        Regulariser, applied by its proximal operator after every step.
    alpha : float or 'auto', default='auto'
        Regularisation strength (``SGDClassifier`` convention: the penalty is
        ``alpha * (l1_ratio * ||w||_1 + (1 - l1_ratio) / 2 * ||w||^2)``).  ``'auto'`` is
        ``1 / n_samples``: with ``penalty='l2'`` the penalty of scikit-learn's defaults
        ``LogisticRegression(C=1)`` and ``Ridge(alpha=1)`` (``C = 1 / (n_samples alpha)``,
        Ridge's ``alpha`` is ``n_samples alpha``).  The paper's Tikhonov ``lambda ||w||^2``
        with ``lambda = 1e-3`` is ``alpha = 2e-3``.
    l1_ratio : float, default=0.15
        Share of the l1 part for ``penalty='elasticnet'``.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept (the paper appends a penalised constant feature instead).
    solver : {'auto', 'hybrid', 's3gd', 'svrg', 'sgd', 'ssgd', 'cd'}, default='auto'
        ``'auto'``: ``'cd'`` when the penalty has an l1 part (``penalty='l1'``, or
        ``'elasticnet'`` with ``l1_ratio > 0``, and ``alpha > 0``), X is dense float64, or X
        has fewer than 5,000 rows, else (a sparse or float32 X) ``'hybrid'``; ``solver_``
        says which ran. The multinomial model of ``S3GDClassifier`` (which ``'cd'`` does not
        fit) runs ``'cg'`` below 5,000 rows without an l1 part: full-batch nonlinear CG with
        strong-Wolfe line searches (not in the paper; the driver of
        ``CGVRClassifier(solver='cg')``, not a value of this parameter), else ``'hybrid'``.
        Measured decisions: with an l1 part (``benchmarks/bench_s3gd.py l1``) ``'cd'``
        reached a relative suboptimality of 1e-6 4-8x sooner than ``'hybrid'`` on dense
        problems and 30x sooner on sparse regression (``'hybrid'`` did not reach it on
        sparse logistic regression); below 5,000 rows
        (``benchmarks/studies/s3gd_auto_crossover.py``) ``'cd'`` stopped within 4e-6 of the
        optimum on the standardized bundled datasets, where ``'hybrid'``'s plateau stop came
        8% above it on breast cancer and 49% on digits one-vs-rest, in at most the same
        time; from 5,000 rows (the same study) ``'hybrid'`` was at most 1.35x faster on
        dense generated problems at the default ``tol`` (up to 4.2x to a relative
        suboptimality of 1e-6, user guide) but stopped 21-99% above the optimum on noisy copies of
        digits (binary and one-vs-rest), where ``'cd'`` stops within 6e-5 of it in at most
        the same time; on text-like sparse rows of unit norm ``'hybrid'`` was 2.3-4.1x
        faster and stopped within 3e-6 of it.  ``'cd'`` keeps a column-major float64 copy of
        a dense X (a peak of up to 1.25 times X beyond it): a float32 X, which ``'hybrid'``
        reads in place, keeps ``'hybrid'``; for a dense float64 X near the memory limit pass
        ``'hybrid'``.  On standardized digits the multinomial ``'hybrid'`` stopped 10% above
        its optimum where ``'cg'`` stops 7e-4 above it in a third of the time.  On a Dask
        array X, ``'auto'`` is ``'hybrid'`` (Prox-SVRG) for every penalty and size (see
        Notes).
        ``'s3gd'``: the paper's Algorithm 1 with the anchor-graph control variate throughout
        (converges to a noise floor above the optimum, Theorem 3.1).  ``'hybrid'``
        (default for the l2 penalty on a sparse or float32 X from 5,000 rows; the paper's suggested
        remedy, not implemented there; with the default ``anchor_epochs=0`` it is Prox-SVRG
        with one snapshot per epoch):
        ``anchor_epochs`` epochs of S3GD, then Prox-SVRG with one full pass per epoch,
        which converges linearly to the optimum.  The paper's baselines: ``'svrg'``
        Prox-SVRG (a full pass per outer loop of ``n_inner`` steps; the paper uses
        ``n_inner=50``), ``'sgd'`` plain proximal mini-batch SGD, ``'ssgd'`` stratified SGD
        (``batch_size`` k-means strata, one sample of each per
        step).  ``'cd'`` (not in the paper; for ``penalty='l1'``/``'elasticnet'``): working-set
        coordinate descent as skglm's: each iteration computes the full gradient, picks the
        support and the most violating features (``max(10, 2 nnz(w))``) and minimises the
        objective on them by cyclic coordinate descent with Anderson extrapolation (exactly
        for the squared error; proximal Newton steps with a backtracking line search for the
        classification losses); it uses none of the step, anchor, batch and epoch
        parameters, copies the working sets' columns of X (dense: at most X's size, below
        1.25 times it while the copy grows; sparse: in CSC form, all of X once those columns
        would hold half of its entries), and reaches
        the optimum to the precision ``tol`` asks.  It takes the l2 penalty too (the default
        on small data): with far from uniform sample weights, or on ill-conditioned data, it
        reaches the optimum sooner than the stochastic solvers, whose plateau stop can come
        well above it (user guide, "Practical advice").
    anchor_epochs : int, default=0
        ``solver='hybrid'`` only: epochs with the anchor correction (S3GD) before the switch
        to Prox-SVRG; 0 runs Prox-SVRG from the start and builds no anchor graph.  The default
        0 is a measured decision (user guide, "Choosing the default"): at 500,000 x 54 dense
        and 100,000 x 50,000 sparse the anchor graph and tables cost about 2.5 s and 1.4 s,
        i.e. 2-5 Prox-SVRG epochs, while the S3GD epoch saves less than one epoch (its first
        correction at w~ = 0 is exact for the log loss, the same as Prox-SVRG's snapshot), so
        every time-to-tolerance was worse with anchors.  Use ``anchor_epochs=1`` (one cheap
        S3GD epoch, then Prox-SVRG) or ``solver='s3gd'`` (the paper) to use the anchors.
    warmup_epochs : int, default=1
        ``solver='hybrid'`` only: passes of plain SGD before the anchor epochs and Prox-SVRG
        (not in the paper; the "SGD warm start" of SVRG variants).  Each pass takes every
        sample once, one at a time, in a fresh random order (as ``SGDClassifier``), with the
        step ``eta_t = 1 / (1 / eta0 + mu t)``, ``eta0 = 1 / (2 L_max)`` (``L_max = c max_i
        s_i (||x_i||^2 + fit_intercept)``, the safe step of per-sample SGD) and
        ``mu = max(alpha (1 - l1_ratio) + mu_data, 1 / (eta0 n))`` (the ``1 / (mu t)``
        schedule of strongly convex SGD with the known strong convexity, capped at ``eta0``;
        ``mu_data = c mean_i s_i ||x_i||^2 / (2 d)``, half the mean eigenvalue of the
        curvature bound, only when ``n >= 100 d``).  The first pass is recorded in chunks
        (``history_``, ``verbose`` and ``callback`` get a record after 1/16, 1/8, 1/4, 1/2
        and all of it, with ``pass_fraction`` and, as ``objective``, the chunk's progressive
        loss; ``n_iter_`` counts passes, a pass the callback stopped included); it does
        not use ``eta0``.  A step costs O(nnz of the row) (the l2 shrink rescales ``w``,
        the l1 thresholds are summed and applied to a coordinate when a row touches it).
        It costs less than ``SGDClassifier``'s epoch and moves the first snapshot, whose
        full gradient is otherwise taken at zero, to a good point.  Skipped when the fit
        starts from a warm start.  0 gives the plain Prox-SVRG.  The default 1 is a
        measured decision (user guide, "The SGD warm-up").
    init_step : {'auto', 'line_search'} or None, default='auto'
        ``solver='hybrid'`` only: how the fit leaves the initial point (zero or the warm
        start).  ``'line_search'`` (not in the paper) first takes the exact steepest-descent
        step ``(w, b) <- (w, b) - t* grad F(w, b)``, ``t*`` minimising ``F`` along the
        direction (two passes over X from a nonzero point, one and a half from zero, in two
        row blocks run in threads; then safeguarded Newton steps on the n margins), recorded
        in ``history_`` as the first entry (``solver='line_search'``, ``pass_fraction=0``,
        exact ``objective``) and seen by ``callback``; Prox-SVRG continues from there and the
        SGD warm-up is skipped (its first steps, sized for a start at zero, threw a good start
        back from a gap of 5e-6 to 2e-2).  Skipped with an l1 part in the penalty
        (``penalty='l1'``/``'elasticnet'`` with ``alpha > 0``: the proximal path is not a line
        in margin space) and when it does not decrease ``F`` (the warm-up then runs).
        ``'auto'`` (default): the line-search start only for a fit from scratch whose Hessian
        at zero is well conditioned, ``c lambda_max(X^T S X / n) <= alpha (1 - l1_ratio)``
        (``c`` the loss curvature bound, ``lambda_max`` estimated on 2,000 rows, ~3 ms), where
        one exact step already lands near the optimum; otherwise exactly ``None``.  ``None``:
        start the SGD warm-up at the initial point (the paper has no warm-up).  Measured
        (user guide, "The line-search start"): ``'auto'`` takes the start on the sparse
        benchmark at alpha 1e-3 only and runs ``None``'s iterates bitwise on the other three
        benchmark cells.  It became the default on a run where the start reached 1e-3 first;
        on that cell the current run (``benchmarks/results/s3gd_sparse.md``) has it barely
        faster than ``None`` to 1e-3 (0.04 s against 0.05 s CPU) and slower to 1e-6 (0.12 s
        against 0.05 s CPU).
    eta0 : 'auto' or float, default='auto'
        Step size.  ``'auto'`` is ``1 / (8 L_b)`` for S3GD, SGD and stratified SGD (the bound
        of Theorem 3.1) and ``1 / (4 L_b)`` for Prox-SVRG and the Prox-SVRG phase of
        ``'hybrid'`` (Xiao & Zhang's bound), with ``L_b`` the expected smoothness of
        mini-batches of ``batch_size`` samples drawn without replacement (Gower et al. 2019),
        ``L_b = [n (b - 1) L + (n - b) L_max] / (b (n - 1)) + alpha (1 - l1_ratio)``, where
        ``L = min(c lambda_max(X'^T S X' / n), L_max)`` is the smoothness of the average loss
        (``lambda_max`` estimated on a row subsample; ``X'`` is X with the scaled intercept
        column), ``L_max = c max_i s_i ||x'_i||^2`` the per-sample bound and ``c`` the loss
        curvature bound (1/4 for the log loss).  A float is used by every phase except the
        per-sample warm-up (``warmup_epochs``).  The paper picks the largest stable value of
        the grid {0.1, 1, 5, 10} on normalised data.
    learning_rate : {'constant', 'adaptive'}, default='constant'
        ``'constant'`` is the paper's choice.  ``'adaptive'`` (not in the paper, as
        ``SGDClassifier``): the step is divided by 5 each time ``n_iter_no_change`` epochs
        bring no improvement larger than ``tol``, down to ``eta0 / 1000``; it removes the
        noise floor of ``'s3gd'`` at the cost of more epochs (use it with
        ``track_objective=True`` for a noise-free criterion).
    batch_size : int, default=10
        Mini-batch size p (paper: 10).
    n_inner : 'auto' or int, default='auto'
        Inner steps per outer loop k_in (paper: 20 for S3GD, 50 for SVRG).  ``'auto'``: for
        the anchor phase, the smallest length (at least the paper's 20) for which the inner
        steps cost about as much as the O(m d) correction of an outer loop -- 20 on dense
        low-dimensional data, thousands on sparse high-dimensional data, where a step costs
        O(p nnz); for ``'svrg'`` one full pass per epoch (``ceil(n / batch_size)`` steps).
        The Prox-SVRG phase of ``'hybrid'`` always takes one snapshot per epoch.  Every
        solver caps it at one pass (``ceil(n / batch_size)`` steps; ``ceil(n / n_strata)``
        for ``'ssgd'``), so that an epoch stays ``n_samples`` sampled gradients.  At most
        2**31 - 1.
    n_anchors : int, default=100
        Number of anchors m (paper: 100).  Anchors are k-means centres snapped to their
        nearest training sample; duplicates are merged (``n_anchors_`` is the number kept).
        With ``n_anchors >= n_samples`` every sample is an anchor, and with ``n_neighbors=1``
        S3GD is then exactly Prox-SVRG.
    n_neighbors : int, default=5
        Anchors k linked to each sample (paper: not reported).
    kernel_width : {'nearest', 'paper'}, default='nearest'
        ``'nearest'``: Gaussian width = distance to the nearest anchor (scale free);
        ``'paper'``: eq. (14) literally (width^2 = that distance, not scale invariant).
    kernel_eps : float, default=1e-4
        Floor of the kernel width (eq. 14).
    anchor_method : {'auto', 'kmeans', 'minibatch_kmeans', 'random'}, default='auto'
        Clustering for anchors (and strata of ``'ssgd'``).  ``'kmeans'``: KMeans on all
        samples (the paper); ``'auto'``: KMeans on a uniform subsample of
        ``max(2,000, 20 n_anchors)`` samples (all of them when there are fewer), centres
        snapped to subsampled samples; ``'minibatch_kmeans'``: MiniBatchKMeans on all samples; ``'random'``: uniform samples.
    kmeans_max_iter : int, default=10
        Iterations (epochs for MiniBatchKMeans) of the clustering (paper: not reported).
    max_iter : int, default=1000
        Maximum number of epochs (one epoch = ``n_samples`` sampled gradients), as
        ``SGDClassifier``; of working-set iterations for ``'cd'``.  A fit that reaches it
        without meeting ``tol`` warns (``ConvergenceWarning``).
    tol : float, default=1e-4
        The stopping rule of ``SGDClassifier`` (``n_iter_no_change`` epochs without an
        improvement larger than ``tol``), made relative for objectives above 1: the fit
        stops after ``n_iter_no_change`` consecutive epochs whose ``history_["objective"]``
        improves on the best so far by at most ``tol * max(1, |best|)``.  That objective
        is the exact one with ``track_objective``; otherwise, in Prox-SVRG epochs, the
        exact objective at the snapshot (computed by the full pass for free, one epoch
        behind), and in the other epochs the epoch average of the mini-batch losses
        (noisy).  The warm-up and anchor epochs of ``'hybrid'`` do not count.  The rule
        measures progress, not the distance to the optimum: on features of very different
        scales it can stop far from it.  After such a stop ``'hybrid'`` and ``'svrg'``
        check the gradient measured on standardized features (three passes) and raise
        ``ConvergenceWarning`` while it is above 0.03 of its value at zero (``3 sqrt(tol)``
        for ``tol`` above 1e-4; user guide, "Stopping rule"; not for the SGD solvers,
        which stop at their noise floor): standardize the features.
        ``solver='cd'`` (which ``'auto'`` runs with an l1 part, on a dense float64 X or below
        5,000 rows): the
        fit stops when the largest optimality violation (over the features, the distance of
        the negative gradient of the smooth part to the l1 subdifferential; and the
        intercept's gradient), divided by its value at ``w = 0, b = 0``, is at most ``tol``
        (``history_['criterion']``) after a round that lowered the objective by at most
        ``tol * max(1, |F|)``; ``max_iter`` counts working-set iterations.  The multinomial
        model's full-batch CG (``solver_='cg'``) stops when ``max |gradient| <= tol``
        (``history_['grad_max']``), as ``LogisticRegression``; ``max_iter`` counts CG steps.
    n_iter_no_change : int, default=5
    track_objective : bool, default=False
        Compute the exact objective after each epoch (one extra pass over the data) and stop
        on it.  Not needed by ``'hybrid'`` and ``'svrg'``, whose full passes give the exact
        objective at each snapshot for free.
    warm_start : bool, default=False
        Start from the previous ``coef_`` and ``intercept_`` (a previous fit of another
        shape, in features, classes or outputs, is no start: the fit starts from zero).
    random_state : int, RandomState instance or None, default=None
        Seeds the clustering and the kernel's counter-based generator.
    verbose : int, default=0
        Print one line per epoch.
    callback : callable or None, default=None
        ``callback(record) -> bool`` after each epoch; a true value stops the fit.
"""

_ATTRIBUTES_DOC = """
    n_iter_ : int
        Epochs run, working-set iterations for ``'cd'``, CG steps for ``'cg'`` (the largest
        over the one-vs-rest / output problems).
    history_ : dict of ndarray (list of dicts, one per problem, for several problems)
        One record per epoch, per chunk of the first warm-up pass and for the line-search
        start, with ``iteration`` (the epoch the record belongs to, counting from 1 as
        ``n_iter_`` does; 0 for the line-search start), ``pass_fraction`` (the share of the
        epoch's pass done), ``step_size``, ``solver`` (the phase: ``'line_search'``,
        ``'sgd_warmup'``, ``'svrg'`` for Prox-SVRG, else the solver's name), ``objective``,
        ``objective_kind`` and ``time`` (seconds since the fit started).  ``objective`` is
        the value the ``tol`` test uses, of the kind ``objective_kind`` names: ``'exact'``,
        the objective at the record's iterate (with ``track_objective``, and for the
        line-search start); ``'snapshot'``, the exact objective at the epoch's snapshot, i.e.
        at the previous record's iterate (Prox-SVRG epochs: computed by the full pass for
        free, one epoch behind); ``'estimate'`` otherwise, the average of the epoch's (or the
        warm-up chunk's) sample losses, each at the iterate before its step, plus the
        penalty at the end (noisy, and above the objective while the fit improves).
        ``solver='cd'``: one record per working-set iteration (``iteration`` 0 the start),
        with the exact ``objective``, ``criterion`` (see ``tol``), ``working_set_size``,
        ``sweeps`` (coordinate sweeps of the iteration) and ``step_size`` (the last Newton
        step, 1.0 for the squared error).  The multinomial model's ``'cg'``: one record per
        CG step (``iteration`` 0 the start) with ``CGVRClassifier``'s columns: the exact
        ``objective``, ``grad_max`` (max |gradient|, see ``tol``), ``step_size`` (the CG
        step), ``passes``, ``restarts``, ``skipped_steps``, ``line_search_evals``,
        ``rejected_epochs``, ``batch``, ``step_cap`` (NaN in entry 0) and ``time``.  A Dask
        array X (Prox-SVRG, see Notes): one
        record per epoch with ``objective_kind='snapshot'``, plus ``passes`` (distributed
        full passes over X), ``gathers`` and ``gathered_rows`` (samples brought to the
        client and their rows; each sample at most a quarter of the rows and the gather
        byte budget, see Notes), all cumulative.
    step_size_ : float or ndarray
        The step of the first phase that uses ``eta0`` (one per problem when there are
        several): the Prox-SVRG step for the default ``'hybrid'`` with ``anchor_epochs=0``
        (the SGD warm-up before it does not use ``eta0``), the S3GD phase's step for
        ``'hybrid'`` with anchor epochs, the solver's step for ``'s3gd'``, ``'svrg'``,
        ``'sgd'`` and ``'ssgd'``; the warm-up's first step when the fit ended in the warm-up.
        ``'cd'``: the last Newton step (1.0 for the squared error).  Multinomial fit: the
        Prox-SVRG step after any halvings by rejected epochs; ``'cg'``: the last line-search
        step (0.0 when the fit took none).
    solver_ : str
        The solver that ran (resolves ``solver='auto'``: ``'cd'`` or ``'hybrid'``; for
        a multinomial fit ``'cg'``, full-batch CG, or ``'hybrid'``, multinomial Prox-SVRG).
    anchor_indices_ : ndarray of int
        Rows of the training X used as anchors (set when the fit built an anchor graph:
        ``solver='s3gd'``, or ``'hybrid'`` with ``anchor_epochs > 0``).
    n_anchors_ : int
        Number of distinct anchors (set with ``anchor_indices_``).
    seed_ : int
        The seed drawn from ``random_state``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
"""


class S3GDClassifier(_S3GDMixin, DaskClassifierMixin, BaseLinearClassifier):
    __doc__ = f"""Linear classifier trained by working-set coordinate descent (default for l1 /
    elastic-net, a dense float64 X, and below 5,000 rows), Prox-SVRG after one SGD pass (default
    for the l2 penalty on a sparse or float32 X from 5,000 rows; for the log loss with more than
    two classes full-batch CG below 5,000 rows, multinomial Prox-SVRG from there), or by the
    S3GD of Mu, Liu & Fan (``solver='s3gd'``) and the paper's baselines.

    The default is not S3GD.  With an l1 part, on a dense float64 X, or below 5,000 rows,
    ``solver='auto'`` resolves to ``'cd'`` (see ``solver``); for the l2 penalty on a sparse
    or float32 X from 5,000 rows it resolves to ``'hybrid'`` with ``anchor_epochs=0``: one pass of
    per-sample SGD (``warmup_epochs``; on a well-conditioned problem one exact
    steepest-descent step instead, ``init_step``), then Prox-SVRG with one full pass per
    epoch; it builds no anchor graph.  Each binary problem (one per class, one-vs-rest, for
    more than two classes when the fit is not multinomial, see ``multi_class``; all heads
    share one anchor graph, threads with ``n_jobs``) minimises, with ``y_i`` in {{-1, +1}},

    ``F(w, b) = (1/n) sum_i s_i loss(y_i, x_i.w + b)
    + alpha (l1_ratio ||w||_1 + (1 - l1_ratio) / 2 ||w||^2)``

    where ``s_i`` is ``sample_weight`` times the ``class_weight`` of the sample's class,
    rescaled so that the ``s_i`` sum to ``n``; ``l1_ratio`` is 0 for ``penalty='l2'``, 1
    for ``'l1'``, and the penalty is 0 for ``penalty=None``; the intercept ``b`` is not
    penalised; ``alpha='auto'`` is ``1 / n``.  Nothing else is added (the warm-up and the
    solvers change the path, not the minimiser).

    With more than two classes and the log loss, the default (``multi_class='auto'`` with
    ``solver`` resolving to ``'hybrid'`` or ``'svrg'``) is multinomial, one objective over
    the (K, d) coefficients and K intercepts as scikit-learn's ``LogisticRegression``:

    ``F(W, b) = (1/n) sum_i s_i [log sum_k exp(x_i.w_k + b_k) - (x_i.w_{{y_i}} + b_{{y_i}})]
    + alpha (l1_ratio ||W||_1 + (1 - l1_ratio) / 2 ||W||_F^2)``

    fitted by full-batch CG below 5,000 rows, else by multinomial Prox-SVRG (see
    ``multi_class``); ``predict_proba`` is its softmax.

    ``solver='s3gd'`` is the paper's Algorithm 1: proximal mini-batch steps
    ``w <- prox(w - eta (grad psi_I(w) - grad h_I(w~) + grad H(w~)))`` where ``h`` replaces
    each sample's loss derivative at the snapshot ``w~`` by a weighted average of the
    derivatives at its ``n_neighbors`` nearest anchors; ``grad H`` costs O(m d) per outer loop
    from the precomputed ``X^T M``.  The paper's own settings are
    ``S3GDClassifier(solver='s3gd', alpha=2e-3, batch_size=10, n_inner=20, n_anchors=100,
    anchor_method='kmeans', kernel_eps=1e-4)`` with ``eta0`` the largest step of the grid
    {{0.1, 1, 5, 10}} that passes its rule (47) (a tuning protocol over fits, run in the
    gallery example, not by the estimator); on imbalanced data the paper's class-balanced
    objective (eq. 46) is ``class_weight='balanced'``, ``alpha=1e-3`` and ``eta0`` twice the
    paper's step (eq. 46 is twice our rescaled objective).  The paper appends a penalised
    constant feature instead of ``b``: ``fit_intercept=False`` on ``X`` with a column of ones.
    ``kernel_width='nearest'`` fixes the scale dependence of eq. (14) as printed
    (``kernel_width='paper'``).

    Parameters
    ----------
    loss : {{'log_loss', 'squared_hinge', 'smooth_hinge'}}, default='log_loss'
        ``'log_loss'`` (the paper's), ``'squared_hinge'`` ``max(0, 1 - y p)^2``,
        ``'smooth_hinge'`` the smoothed hinge with smoothing ``smoothing``.
    smoothing : float, default=1.0
        Width of the quadratic part of ``'smooth_hinge'``.
    {_SOLVER_DOC}
    multi_class : {{'auto', 'multinomial', 'ovr'}}, default='auto'
        How more than two classes are fitted (two classes are one binary problem whatever
        the value).  ``'multinomial'``: the softmax log loss above, one problem over all
        classes (as ``LogisticRegression`` and ``CGVRClassifier``); log loss only.
        ``solver='auto'`` fits it below 5,000 rows without an l1 part (``solver_='cg'``) by
        full-batch nonlinear CG (not in the paper; Polak-Ribiere+ directions, strong-Wolfe
        line searches on the objective, a restart along the negative gradient whenever a
        direction does not descend: the driver of ``CGVRClassifier(solver='cg')``), which
        stops when ``max |gradient| <= tol``, the rule of ``LogisticRegression`` (lbfgs),
        within ``max_iter`` CG steps; it uses none of the step, batch, epoch and anchor
        parameters and draws nothing.  Otherwise by multinomial Prox-SVRG (not in the
        paper; ``solver`` ``'auto'``, ``'hybrid'`` or ``'svrg'``): each epoch one full pass
        (exact objective, gradient and probabilities at the snapshot) and one pass of
        proximal steps over mini-batches of ``batch_size`` consecutive rows of a copy of X
        made once with the rows in a random order (each epoch from a random offset:
        sequential reads, about twice as fast as a fresh random order; the copy costs X's
        size), step ``eta0`` (``'auto'``: ``2 / L_b``, ``L_b`` as for ``eta0`` with the
        curvature bound 1/2 of the softmax, 8x Prox-SVRG's theory step; measured, user
        guide); an epoch that does not decrease the objective is undone and halves the step
        (``history_['rejected_epochs']``); on small ill-conditioned data it stops on its
        plateau above the optimum (10% on standardized digits, where ``'cg'`` stops 7e-4
        above it; user guide, "Multinomial log loss").  It takes an l1 part (the l1 prox;
        no warm-up, line-search start or anchors: ``warmup_epochs``, ``init_step``,
        ``anchor_epochs``, ``n_inner`` and the anchor parameters are not used) and stops by
        ``tol``'s plateau rule on the exact objective.  ``'ovr'``: one binary problem per class (the
        heads share one anchor graph; threads with ``n_jobs``), ``predict_proba`` normalises
        the one-vs-rest sigmoids (as ``SGDClassifier``).  ``'auto'``: ``'multinomial'`` for
        the log loss when ``solver`` is ``'hybrid'`` or ``'svrg'``, or ``'auto'`` without an
        l1 part, whatever the number of rows (the l2 default: what ``LogisticRegression``
        fits; ``'cd'``, which ``'auto'`` picks otherwise, fits only binary and
        one-vs-rest problems), else ``'ovr'``: the other losses,
        ``solver='cd'`` (the default with an l1 part: coordinate descent per head; also on
        a Dask X, where 'auto' runs Prox-SVRG, so that the same parameters fit the same
        model) and the paper's ``'s3gd'`` with its baselines ``'sgd'`` and ``'ssgd'``
        (binary algorithms, as in the paper).
    class_weight : dict, 'balanced' or None, default=None
        Multiplies the sample weights by class (then all are rescaled to sum to ``n``).
        ``'balanced'`` is the paper's eq. (46) divided by 2: ``n_samples / (n_classes *
        class count)``, the samples counted by their ``sample_weight``, as in
        ``LogisticRegression``.
    n_jobs : int or None, default=None
        Threads for the one-vs-rest problems.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    {_ATTRIBUTES_DOC}
    Notes
    -----
    With ``solver='s3gd'`` and a constant step the iterates converge geometrically to a
    neighbourhood of the optimum whose size grows with the step and with the anchor
    approximation error (Theorem 3.1).  ``solver='hybrid'`` runs ``anchor_epochs`` S3GD
    epochs (cheap: no full pass) and then switches to Prox-SVRG, which converges linearly to
    the optimum.  By measurement the default is ``anchor_epochs=0`` (Prox-SVRG from the
    start, no anchor graph): on the benchmark problems building the graph cost more than the
    anchor epoch saved.  See the user guide for the differences from the paper.

{S3GD_DASK_NOTES}{MULTINOMIAL_DASK_NOTES}

    References
    ----------
    .. [1] Y. Mu, W. Liu and W. Fan, "Stochastic Gradient Made Stable: A Manifold Propagation
       Approach for Large-Scale Optimization".
    .. [2] L. Xiao and T. Zhang, "A Proximal Stochastic Gradient Method with Progressive
       Variance Reduction", SIAM J. Optim. 24(4), 2014 (Prox-SVRG).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skstoch import S3GDClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = S3GDClassifier(random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.95
    True
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        "loss": [StrOptions({"log_loss", "squared_hinge", "smooth_hinge"})],
        "smoothing": [Interval(Real, 0, None, closed="neither")],
        "multi_class": [StrOptions({"auto", "multinomial", "ovr"})],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "n_jobs": [Integral, None],
    }

    def __init__(self, loss="log_loss", *, smoothing=1.0, penalty="l2", alpha="auto",
                 l1_ratio=0.15, fit_intercept=True, solver="auto", anchor_epochs=0,
                 warmup_epochs=1, init_step="auto", eta0="auto",
                 learning_rate="constant", batch_size=10, n_inner="auto",
                 n_anchors=100, n_neighbors=5, kernel_width="nearest", kernel_eps=1e-4,
                 anchor_method="auto", kmeans_max_iter=10, max_iter=1000, tol=1e-4,
                 n_iter_no_change=5, track_objective=False, multi_class="auto",
                 class_weight=None, warm_start=False, n_jobs=None, random_state=None,
                 verbose=0, callback=None):
        self.loss = loss
        self.smoothing = smoothing
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.anchor_epochs = anchor_epochs
        self.warmup_epochs = warmup_epochs
        self.init_step = init_step
        self.eta0 = eta0
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.n_inner = n_inner
        self.n_anchors = n_anchors
        self.n_neighbors = n_neighbors
        self.kernel_width = kernel_width
        self.kernel_eps = kernel_eps
        self.anchor_method = anchor_method
        self.kmeans_max_iter = kmeans_max_iter
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.track_objective = track_objective
        self.multi_class = multi_class
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _check_multi_class(self):
        if self.multi_class != "multinomial":
            return
        if self.loss != "log_loss":
            raise ValueError(
                f"multi_class='multinomial' needs loss='log_loss'; got "
                f"loss={self.loss!r} (use multi_class='ovr').")
        if self.solver not in _MULTINOMIAL_SOLVERS:
            raise ValueError(
                f"multi_class='multinomial' runs full-batch CG or multinomial Prox-SVRG, "
                f"with solver 'auto', 'hybrid' or 'svrg'; got solver={self.solver!r} (use "
                f"multi_class='ovr').")

    def _multinomial(self, n_classes):
        """Whether a fit with ``n_classes`` classes is one multinomial problem."""
        if n_classes <= 2 or self.loss != "log_loss" or self.multi_class == "ovr":
            return False
        if self.multi_class == "multinomial":
            return True
        # with an l1 part 'auto' runs one-vs-rest 'cd' whatever the number of rows
        return (self.solver in _MULTINOMIAL_SOLVERS
                and not (self.solver == "auto" and self._has_l1_part()))

    def _dask_check_multinomial(self):
        """Every setting ``_dask_check`` accepts is supported by the multinomial Dask fit."""

    def _dask_solve_multinomial(self, X, codes, sample_weight, n_classes, seed, monitor,
                                coef_init, intercept_init, state):
        params = self._solver_params(X, multinomial=True)
        data = dask_multinomial.make_data(X, codes, sample_weight, n_classes,
                                          params.fit_intercept)
        return dask_multinomial.solve_s3gd(data, params, monitor, seed, coef_init,
                                           intercept_init)

    def _run_problems(self, X, targets, sample_weights, coef_init, intercept_init,
                      head_labels=None):
        """One multinomial problem (the one-vs-rest targets are the columns of the one-hot
        matrix) or the one-vs-rest heads."""
        self._check_multi_class()
        n_classes = len(targets)
        if not self._multinomial(n_classes):
            return super()._run_problems(X, targets, sample_weights, coef_init,
                                         intercept_init, head_labels)
        seed = self._draw_seed()
        params = self._solver_params(X, multinomial=True)
        y = targets.codes    # a multinomial fit gets ClassTargets
        warm = self.warm_start and hasattr(self, "coef_")
        monitor = self._make_monitor(self._solver_name(X, multinomial=True))
        solve = (s3gd_multinomial.solve_cg if params.solver == "cg"
                 else s3gd_multinomial.solve)
        result = solve(
            X, y, sample_weights[0], n_classes, params, monitor, seed,
            coef_init=coef_init if warm else None,
            intercept_init=intercept_init if warm else None)
        return {"coef_": result.x, "intercept_": np.asarray(result.intercept, dtype=float),
                "n_iter_": int(result.n_iter), "history_": monitor.history(), "seed_": seed,
                "step_size_": float(result.extra["step_size"]),
                "solver_": params.solver}


class S3GDRegressor(_S3GDMixin, DaskRegressorMixin, BaseLinearRegressor):
    __doc__ = f"""Ridge, lasso or elastic net trained by working-set coordinate descent (default
    for lasso / elastic net, a dense float64 X, and below 5,000 rows), Prox-SVRG after one SGD
    pass (default for ridge on a sparse or float32 X from 5,000 rows), or by the S3GD of Mu, Liu
    & Fan (``solver='s3gd'``) and the paper's baselines.

    The default is not S3GD.  With an l1 part, on a dense float64 X, or below 5,000 rows,
    ``solver='auto'`` resolves to ``'cd'`` (see ``solver``); for ridge on a sparse or float32
    X from 5,000 rows it resolves to ``'hybrid'`` with ``anchor_epochs=0``: one pass of per-sample
    SGD, then Prox-SVRG; it builds no anchor graph.  Each output minimises

    ``F(w, b) = (1/n) sum_i s_i (x_i.w + b - y_i)^2 / 2
    + alpha (l1_ratio ||w||_1 + (1 - l1_ratio) / 2 ||w||^2)``

    with ``s_i`` the sample weights rescaled to sum to ``n``, ``l1_ratio`` 0 for
    ``penalty='l2'`` and 1 for ``'l1'`` (no penalty for ``None``), ``b`` not penalised and
    ``alpha='auto'`` equal to ``1 / n`` (``Ridge(alpha=1)``'s penalty).  The paper only
    reports logistic experiments; ``solver='s3gd'`` applies its Algorithm 1 to this loss.
    The label enters the loss derivative additively, so the anchor correction is label free
    and shared by all outputs: ``grad H = (1/n) (X^T M) (Z w~ + b~) - (1/n) X^T (s y)``.

    Parameters
    ----------
    loss : {{'squared_error'}}, default='squared_error'
    {_SOLVER_DOC}
    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
    intercept_ : float or ndarray of shape (n_targets,)
    {_ATTRIBUTES_DOC}
    Notes
    -----
{S3GD_DASK_NOTES}

    References
    ----------
    .. [1] Y. Mu, W. Liu and W. Fan, "Stochastic Gradient Made Stable: A Manifold Propagation
       Approach for Large-Scale Optimization".
    .. [2] L. Xiao and T. Zhang, "A Proximal Stochastic Gradient Method with Progressive
       Variance Reduction", SIAM J. Optim. 24(4), 2014 (Prox-SVRG).

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skstoch import S3GDRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> reg = S3GDRegressor(random_state=0).fit(X, y)
    >>> reg.score(X, y) > 0.4
    True
    """

    _parameter_constraints = {
        **_COMMON_CONSTRAINTS,
        "loss": [StrOptions({"squared_error"})],
    }

    def __init__(self, loss="squared_error", *, penalty="l2", alpha="auto", l1_ratio=0.15,
                 fit_intercept=True, solver="auto", anchor_epochs=0,
                 warmup_epochs=1, init_step="auto", eta0="auto",
                 learning_rate="constant", batch_size=10, n_inner="auto", n_anchors=100,
                 n_neighbors=5,
                 kernel_width="nearest", kernel_eps=1e-4, anchor_method="auto",
                 kmeans_max_iter=10, max_iter=1000, tol=1e-4, n_iter_no_change=5,
                 track_objective=False, warm_start=False, random_state=None, verbose=0,
                 callback=None):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.anchor_epochs = anchor_epochs
        self.warmup_epochs = warmup_epochs
        self.init_step = init_step
        self.eta0 = eta0
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.n_inner = n_inner
        self.n_anchors = n_anchors
        self.n_neighbors = n_neighbors
        self.kernel_width = kernel_width
        self.kernel_eps = kernel_eps
        self.anchor_method = anchor_method
        self.kmeans_max_iter = kmeans_max_iter
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.track_objective = track_objective
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback
