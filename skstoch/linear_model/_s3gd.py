"""S3GD: stratified semi-stochastic gradient descent by manifold propagation (paper 002).

``S3GDClassifier`` and ``S3GDRegressor`` minimise

    (1/n) sum_i s_i loss(y_i, x_i.w + b) + alpha (l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2)

with proximal mini-batch steps whose variance is reduced by a control variate built on an
anchor-sample graph (Algorithms 1 and 2 of Mu, Liu & Fan).  The paper's baselines (plain
mini-batch SGD, stratified SGD and Prox-SVRG) are available through ``solver``.
"""
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.utils._param_validation import Interval, StrOptions

from .._fast._loss import LogLoss, SmoothHinge, SquaredError, SquaredHinge
from .._fast._s3gd import (MODE_S3GD, MODE_SGD, MODE_SSGD, MODE_SVRG, row_sqnorms,
                            run_epoch, sgd_pass, weighted_anchor_sums)
from .._solvers import DivergenceError, SolverResult, check_finite_iterate
from ..base import STOCHASTIC_SOLVER_CONSTRAINTS, BaseLinearClassifier, BaseLinearRegressor
from ..utils import make_dataset, seed_from_random_state, single_thread_blas
from ..utils._dataset import (N_ROW_BLOCKS, full_margins, full_transpose_product,
                              run_row_blocks)
from ._anchor_graph import build_anchor_graph

_MODES = {"s3gd": MODE_S3GD, "svrg": MODE_SVRG, "sgd": MODE_SGD, "ssgd": MODE_SSGD}
# losses whose derivative splits as f(p) - g(y): one label-free anchor table and a label term
_DECOUPLED = {"log_loss": -1.0, "squared_error": 0.0}
# upper bound of the second derivative of each loss (smoothness constant per unit ||x||^2)
_ADAPTIVE_MIN = 1e-3   # 'adaptive' stops dividing the step below eta0 * this
# eta0='auto' is 1/(_STEP_FACTOR L_b): Theorem 3.1 allows S3GD steps below 1/(8L), Prox-SVRG's
# analysis (Xiao & Zhang 2014) steps below 1/(4L)
_STEP_FACTOR = {"s3gd": 8.0, "sgd": 8.0, "ssgd": 8.0, "svrg": 4.0}
_DIVERGENCE_FACTOR = 1e4   # objective / starting objective beyond which the fit diverged
_MIN_INNER = 20        # the paper's k_in: n_inner='auto' never goes below it
# warm-up decay: mu_data = _WARMUP_CURVATURE * (mean eigenvalue of the curvature bound) when
# n >= _WARMUP_LONG_PASS * d (see _warmup_schedule; both measured, user guide)
_WARMUP_CURVATURE = 0.5
_WARMUP_LONG_PASS = 100
_WARMUP_CHUNKS = 5     # the first warm-up pass is recorded after 1/16, 1/8, 1/4, 1/2, 1 of it
_CURVATURE = {"log_loss": 0.25, "squared_hinge": 2.0, "squared_error": 1.0}

_COMMON_CONSTRAINTS = {
    **STOCHASTIC_SOLVER_CONSTRAINTS,
    "penalty": [StrOptions({"l2", "l1", "elasticnet"}), None],
    "alpha": [Interval(Real, 0, None, closed="left")],
    "l1_ratio": [Interval(Real, 0, 1, closed="both")],
    "fit_intercept": ["boolean"],
    "solver": [StrOptions(set(_MODES) | {"hybrid"})],
    "anchor_epochs": [Interval(Integral, 0, None, closed="left")],
    "warmup_epochs": [Interval(Integral, 0, None, closed="left")],
    "init_step": [StrOptions({"line_search", "auto"}), None],
    "eta0": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
    "learning_rate": [StrOptions({"constant", "adaptive"})],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "n_inner": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
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


class _S3GDMixin:
    """The solver shared by the classifier and the regressor."""

    # ----- parameters -----
    def _loss_object(self):
        if self.loss == "log_loss":
            return LogLoss()
        if self.loss == "squared_hinge":
            return SquaredHinge(1.0)
        if self.loss == "smooth_hinge":
            return SmoothHinge(self.smoothing)
        return SquaredError()

    def _penalty_coefs(self):
        if self.penalty is None or self.alpha == 0:
            return 0.0, 0.0
        if self.penalty == "l2":
            return 0.0, float(self.alpha)
        if self.penalty == "l1":
            return float(self.alpha), 0.0
        return float(self.alpha * self.l1_ratio), float(self.alpha * (1.0 - self.l1_ratio))

    def _curvature(self):
        if self.loss == "smooth_hinge":
            return 1.0 / self.smoothing
        return _CURVATURE[self.loss]

    # ----- shared preprocessing (anchors, graph, strata) for every problem of one fit -----
    def _draw_seed(self):
        return self._fit_seed

    def _run_problems(self, X, targets, sample_weights, coef_init, intercept_init):
        if sp.issparse(X):
            X = X.astype(np.float64) if X.dtype != np.float64 else X
        else:
            X = np.ascontiguousarray(X, dtype=np.float64)
        self._fit_seed = seed_from_random_state(self.random_state)
        n = X.shape[0]
        sq = np.empty(n)
        row_sqnorms(make_dataset(X), sq)    # one compiled pass, no copy of X
        if not np.all(np.isfinite(sq)):
            raise ValueError(
                "X is too large: its squared row norms overflow float64 (the largest "
                f"|entry| is {_max_abs(X):.3g}), so distances, steps and gradients would not be "
                "finite; scale X (e.g. with StandardScaler or MaxAbsScaler) before fitting.")
        self._shared = {}
        if self.solver == "s3gd" or (self.solver == "hybrid" and self.anchor_epochs > 0
                                     and self.max_iter > 0):
            graph = build_anchor_graph(
                X, n_anchors=self.n_anchors, n_neighbors=self.n_neighbors,
                kernel_width=self.kernel_width, kernel_eps=self.kernel_eps,
                method=self.anchor_method, kmeans_max_iter=self.kmeans_max_iter,
                random_state=self._fit_seed,
            )
            self._shared["graph"] = graph
            self._shared["M"] = graph.matrix()
        elif self.solver == "ssgd":
            self._shared["strata"] = _strata(X, min(self.batch_size, n), self.anchor_method,
                                             self.kmeans_max_iter, self._fit_seed)
        self._shared["row_sqnorm"] = sq
        self._shared["X"] = X
        try:
            # the solver's BLAS calls are vector ops of length d (dot, norm, axpy on w) that
            # OpenBLAS threads from d ~ 10^4 on: a second thread saves nothing measurable
            # (sparse 100,000 x 50,000 default fit, user guide) but busy-waits after each
            # call, doubling the process CPU time and competing with the kernel thread on a
            # loaded machine; one-vs-rest heads run in their own threads (n_jobs) anyway.
            # The limit is process-wide and restored on exit (also on error).
            with single_thread_blas():
                return super()._run_problems(X, targets, sample_weights, coef_init,
                                             intercept_init)
        finally:
            self._shared = None
            del self._fit_seed

    def _fitted_extras(self, results, shared):
        steps = [r.extra["step_size"] for r in results]
        extras = {"step_size_": steps[0] if len(steps) == 1 else np.array(steps)}
        graph = self._shared.get("graph")
        if graph is not None:
            extras["anchor_indices_"] = graph.anchor_indices.astype(np.intp)
            extras["n_anchors_"] = graph.n_anchors
        return extras

    def _resolve_eta0(self, sample_weight, batch):
        """Steps of the anchor phase (or of the baseline solver) and of Prox-SVRG, and the
        squared scale ``s2`` of the intercept feature (the intercept steps by ``eta * s2``).

        A float ``eta0`` is used as is by every phase (``s2 = 1``, the paper's constant
        feature); ``'auto'`` is ``1/(8 L_b)`` for the S3GD / SGD phases and ``1/(4 L_b)`` for
        Prox-SVRG (the two theory bounds), see :meth:`_batch_smoothness`.
        """
        if self.eta0 != "auto":
            return float(self.eta0), float(self.eta0), 1.0
        L_b, s2 = self._batch_smoothness(sample_weight, batch)
        first = "svrg" if self.solver == "svrg" else ("s3gd" if self.solver == "hybrid"
                                                      else self.solver)
        return 1.0 / (_STEP_FACTOR[first] * L_b), 1.0 / (_STEP_FACTOR["svrg"] * L_b), s2

    def _warmup_schedule(self, sample_weight, lam2):
        """``(eta0, mu)`` of the per-sample warm-up pass, ``eta_t = 1 / (1 / eta0 + mu t)``.

        ``eta0 = 1 / (2 L_max)``, ``L_max = c max_i s_i (||x_i||^2 + fit_intercept)`` (the
        classical safe step of per-sample SGD on an L_max-smooth loss, intercept feature
        unscaled) and ``mu = max(alpha (1 - l1_ratio) + mu_data, 1 / (eta0 n))``: the
        ``1 / (mu t)`` schedule of strongly convex SGD with the known strong convexity (the
        l2 term), which at least halves the step over the pass.  ``mu_data`` is a cheap
        curvature estimate of the data term, half the mean eigenvalue of the curvature bound
        ``c X^T S X / n`` (its trace over d, ``c mean_i s_i ||x_i||^2 / (2 d)``, from the row
        norms), used only in the long-pass regime ``n >= 100 d`` (``_WARMUP_LONG_PASS``).
        Needs no spectrum estimate.  Measured against other decays in the user guide ("The
        SGD warm-up"): ``mu_data`` divides the gap after the pass by 20-1000 on the dense
        benchmark problem (n / d = 9,259) and by 3-150 at n / d of 200-1,000, but made it
        1.5-3x worse at n / d of 17-28, hence the guard.
        """
        sq = self._shared["row_sqnorm"]
        n = sq.shape[0]
        c = self._curvature()
        L_max = c * float(np.max(sample_weight * (sq + self.fit_intercept)))
        eta0 = 1.0 / (2.0 * max(L_max, 1e-12))
        d = self._shared["X"].shape[1]
        mu = lam2
        if n >= _WARMUP_LONG_PASS * d:
            mu += _WARMUP_CURVATURE * c * float(np.mean(sample_weight * sq)) / max(d, 1)
        return eta0, max(mu, 1.0 / (eta0 * n))

    def _start_is_well_conditioned(self, sample_weight, lam2):
        """``init_step='auto'``: take the line-search start when ``c lambda_max <= lam2``,
        i.e. the Hessian of ``F`` at zero, ``c X^T S X / n + lam2 I`` (exact for the log
        loss), has condition number at most 2 (the intercept direction is not counted).

        ``lambda_max`` is estimated on ``_START_SUBSAMPLE`` rows drawn with replacement
        (biased upwards by about ``max_i ||x_i||^2 / 2000`` on nearly orthogonal rows) and
        power iteration stopped at a 5% change (it can underestimate by ~30% on a flat
        spectrum); ~3 ms where the full estimate (:meth:`_spectrum`) costs a pass over
        20,000 rows.  Measured (round 11): ``c lambda_max / lam2`` is 0.14 on the sparse
        benchmark at alpha 1e-3 (the start alone reaches a gap of 5e-6) and 14-1,500 on the
        three other benchmark cells (the start reaches 2e-2 to 9e-2 only), so the threshold
        1 sits 7x above the first and at least 14x below the others.
        """
        if lam2 <= 0.0:
            return False
        key = ("start_spectrum", id(sample_weight))
        if key not in self._shared:
            X = self._shared["X"]
            n = X.shape[0]
            rows = slice(None)
            if n > _START_SUBSAMPLE:   # with replacement: no O(n) permutation for 2,000 rows
                rng = np.random.RandomState(self._fit_seed % (2**32))
                rows = np.sort(rng.randint(0, n, _START_SUBSAMPLE))
            # a decision with a margin of 7x or more each way (docstring): a 5% stop suffices
            self._shared[key] = _gram_spectrum(X[rows], sample_weight[rows], self._fit_seed,
                                               rtol=0.05)[0]
        return self._curvature() * self._shared[key] <= _START_CONDITION * lam2

    def _spectrum(self, sample_weight):
        """(lambda_max of X^T S X / n, ||X^T s / n||, mean s) estimated on a row subsample;
        cached per weight vector (shared by the one-vs-rest heads)."""
        key = ("spectrum", id(sample_weight))
        if key not in self._shared:
            self._shared[key] = _gram_spectrum(self._shared["X"], sample_weight,
                                               self._fit_seed)
        return self._shared[key]

    def _batch_smoothness(self, sample_weight, batch):
        """Expected smoothness ``L_b`` of b-nice mini-batches (Gower et al. 2019, Prop. 3.8),
        ``L_b = [n (b - 1) L + (n - b) L_max] / (b (n - 1)) + alpha (1 - l1_ratio)``, with
        ``L = c lambda_max([X, s 1]^T S [X, s 1] / n)`` the smoothness of the average loss
        (estimated, :func:`_gram_spectrum`) and ``L_max = c max_i s_i (||x_i||^2 + s^2)``
        the per-sample bound; ``c`` is the loss curvature bound.  The intercept feature is
        scaled to ``s = sqrt(lambda_max(X^T S X / n))`` (at most 1) so that it does not
        dominate ``L`` on normalised data (an exact reparametrisation ``b = s b'``).

        Returns ``(L_b, s^2)``.
        """
        sq = self._shared["row_sqnorm"]
        c = self._curvature()
        lam, mean_norm, mean_w = self._spectrum(sample_weight)
        if self.fit_intercept:
            s2 = min(1.0, lam) if lam > 0 else 1.0
            # lambda_max of [[G, s m], [s m^T, s^2 mean_w]] <= that of the 2 x 2 matrix of norms
            off = np.sqrt(s2) * mean_norm
            tr, det = lam + s2 * mean_w, lam * s2 * mean_w - off * off
            lam_aug = 0.5 * (tr + np.sqrt(max(tr * tr - 4.0 * det, 0.0)))
        else:
            s2, lam_aug = 1.0, lam
        L = c * lam_aug
        L_max = c * float(np.max(sample_weight * (sq + (s2 if self.fit_intercept else 0.0))))
        L = min(L, L_max)   # the subsample estimate never exceeds the per-sample bound
        n = sq.shape[0]
        if n > 1:
            L_b = (n * (batch - 1) * L + (n - batch) * L_max) / (batch * (n - 1))
        else:
            L_b = L_max
        L_b += self._penalty_coefs()[1]
        return max(L_b, 1e-12), s2

    def _anchor_tables(self, problem, loss):
        """BT (n_slots, m, d), column sums, slot labels, per-sample offsets and the label term."""
        X, y, sw = problem.X, problem.y, problem.sample_weight
        n = X.shape[0]
        M = self._shared["M"]
        if self.loss in _DECOUPLED:
            # psi'(p; y) = psi'(p; y0) + [psi'(0; y) - psi'(0; y0)]: one label-free table
            y0 = _DECOUPLED[self.loss]
            key = ("decoupled", id(sw))
            if key not in self._shared:   # shared by every OvR head / output
                BT = _weighted_anchor_sums(problem.dataset, self._shared["graph"], sw)
                colsum = np.asarray(M.T @ sw).reshape(1, -1)
                self._shared[key] = (BT[np.newaxis], colsum)
            BT, colsum = self._shared[key]
            offset = loss.dloss_array(np.zeros(n), y) - loss.py_dloss(0.0, y0)
            Lw = np.asarray(X.T @ (sw * offset)).ravel() / n
            Lb = float(np.sum(sw * offset)) / n
            return BT, colsum, np.array([y0]), np.ascontiguousarray(offset), Lw, Lb
        # labels cannot be factored out: one table per class (slot 0: y = -1, slot 1: y = +1)
        pos = (y > 0).astype(np.float64)
        sws = [sw * (1.0 - pos), sw * pos]
        BT = np.stack([_weighted_anchor_sums(problem.dataset, self._shared["graph"], s)
                       for s in sws])
        colsum = np.vstack([np.asarray(M.T @ s).ravel() for s in sws])
        return BT, colsum, np.array([-1.0, 1.0]), np.zeros(n), np.zeros(X.shape[1]), 0.0

    # ----- one binary / single-output problem -----
    def _anchor_inner(self, ds, X, batch, n_slots, m, k, lazy):
        """n_inner='auto' for the anchor phase: an outer loop's correction (m anchor dots and
        n_slots m dense axpys of length d) costs about as much as the inner steps, and never
        fewer than the paper's 20 steps (dense data keeps 20; sparse high-dimensional data,
        where the O(m d) correction dwarfs an O(p nnz) step, gets long inner loops)."""
        n, d = ds.n_samples, ds.n_features
        nnz = (X.nnz / max(n, 1)) if sp.issparse(X) else d
        outer = m * (nnz + n_slots * d) + 2 * d
        inner = batch * (2 * nnz + k) + (0 if lazy else 3 * d)
        return int(max(_MIN_INNER, np.ceil(outer / max(inner, 1))))

    def _fit_problem(self, problem):
        ds, y = problem.dataset, np.ascontiguousarray(problem.y, dtype=np.float64)
        sw = np.ascontiguousarray(problem.sample_weight, dtype=np.float64)
        n, d = ds.n_samples, ds.n_features
        loss = self._loss_object()
        lam1, lam2 = self._penalty_coefs()
        batch = min(self.batch_size, n)
        # the steps need the spectrum estimate (a pass over a row subsample): resolved when
        # the first phase that uses them starts, so the warm-up pass runs before it
        resolved = []

        def steps():
            if not resolved:
                resolved.append(self._resolve_eta0(sw, batch))
            return resolved[0]
        monitor = problem.monitor
        lazy = ds.is_sparse
        # sparse rows: O(nnz) steps (scaled vector for l2, just-in-time prox for l1)
        last = np.zeros(d if lazy and lam1 > 0.0 else 0, dtype=np.int64)
        last_u = np.zeros(d if lam1 > 0.0 and self.solver == "hybrid" else 0)

        n_warm = 0
        if self.solver == "hybrid":
            n_anchor_epochs = self.anchor_epochs
            first_mode = MODE_S3GD
            # the SGD warm-up only starts a fit from scratch (a warm start is already close)
            if not np.any(problem.coef_init) and not (self.fit_intercept
                                                      and problem.intercept_init != 0.0):
                n_warm = self.warmup_epochs
        else:
            first_mode = _MODES[self.solver]
            n_anchor_epochs = self.max_iter if first_mode != MODE_SVRG else 0

        empty_i = np.empty((0, 0), dtype=np.int32)
        empty_d = np.empty((0, 0), dtype=np.float64)
        anchor_idx = np.empty(0, dtype=np.int32)
        nbr, nbr_w = empty_i, empty_d
        BT, colsum = np.empty((0, 0, 0)), empty_d
        slot_label = offset = Lw = np.empty(0)
        Lb = 0.0
        strata_order = np.empty(0, dtype=np.int32)
        strata_ptr = np.empty(0, dtype=np.int64)
        first_batch = batch
        if first_mode == MODE_S3GD and n_anchor_epochs > 0:
            graph = self._shared["graph"]
            anchor_idx, nbr, nbr_w = graph.anchor_indices, graph.neighbors, graph.weights
            BT, colsum, slot_label, offset, Lw, Lb = self._anchor_tables(problem, loss)
        elif first_mode == MODE_SSGD:
            strata_order, strata_ptr = self._shared["strata"]
            first_batch = strata_ptr.shape[0] - 1
        steps_first = -(-n // first_batch)
        steps_svrg = -(-n // batch)
        if self.n_inner == "auto":
            if first_mode == MODE_S3GD:
                inner_first = self._anchor_inner(ds, problem.X, batch, BT.shape[0], anchor_idx.shape[0],
                                                 nbr.shape[1] if nbr.shape[0] else 0, lazy)
            elif first_mode == MODE_SVRG:
                inner_first = steps_svrg
            else:
                inner_first = _MIN_INNER
        else:
            inner_first = self.n_inner
        # hybrid: Prox-SVRG with one snapshot (full pass) per epoch
        inner_svrg = inner_first if self.solver == "svrg" else steps_svrg
        phases = {   # (mode, index of the step in steps(), inner steps, outer loops)
            "first": (first_mode, 0, min(inner_first, steps_first) if first_mode != MODE_SVRG
                      else inner_first, max(1, -(-steps_first // inner_first))),
            "svrg": (MODE_SVRG, 1, inner_svrg, max(1, -(-steps_svrg // inner_svrg))),
        }
        # warm-up: one pass over a random permutation (each sample once, as SGDClassifier)
        # of plain SGD from the start, see _warmup_schedule
        steps_w = steps_svrg
        phases["warmup"] = (MODE_SGD, 1, steps_w, 1)
        dsnap = np.empty(n if (self.solver in ("svrg", "hybrid")) else 0)

        w = np.array(problem.coef_init, dtype=np.float64, copy=True)
        b = np.array([problem.intercept_init if self.fit_intercept else 0.0])
        perm = np.arange(n, dtype=np.int32)
        gH = np.zeros(d)
        dA = np.zeros((max(BT.shape[0], 1), max(anchor_idx.shape[0], 1)))
        ibuf = np.zeros(2 * max(first_batch, batch, 1), dtype=np.int32)
        cbuf = np.zeros(max(first_batch, batch, 1))
        counter = 0

        best = np.inf
        no_improvement = 0
        converged = False
        rel_improvement = np.inf
        n_iter = 0
        stopped_in_warmup = False
        scale = 1.0          # 'adaptive' divides the steps of every phase by 5 per plateau
        # objective at the start (one pass): an objective far above it means divergence
        if np.any(w):
            f_start = _objective(ds, w, b[0], y, sw, loss) + lam1 * np.abs(w).sum() \
                + 0.5 * lam2 * w.dot(w)
        else:   # all margins equal the intercept: no pass over X
            f_start = float(sw.dot(loss.loss_array(np.full(n, b[0]), y))) / n
        stopped_at_start = False
        use_start = False
        if self.solver == "hybrid" and lam1 == 0.0 and self.max_iter > 0:
            if self.init_step == "line_search":
                use_start = True
            elif self.init_step == "auto":
                # only from scratch (a warm start skips the warm-up too) and only when the
                # Hessian at the start is well conditioned (see _start_is_well_conditioned)
                use_start = n_warm > 0 and self._start_is_well_conditioned(sw, lam2)
        if use_start:
            # steepest-descent start (not in the paper): the exact minimiser of F along -grad F
            # at the initial point, two passes over X (user guide, "The line-search start")
            start = _line_search_start(ds, y, sw, loss, w, b, lam2,
                                       self.fit_intercept)
            if start is not None:
                t_star, f_new = start
                check_finite_iterate(np.append(w, b), monitor.solver_name, "line-search start")
                stopped_at_start = monitor.record(
                    x=w.copy(), epoch=0, pass_fraction=0.0, step_size=t_star,
                    solver="line_search", loss_estimate=f_new, objective=f_new)
                # the start replaces the SGD warm-up (round 11): the warm-up's first steps
                # (1 / (2 L_max), decaying from there) are sized for a start at zero and
                # threw a good start back by 3-4 orders of magnitude (user guide)
                n_warm = 0
        for epoch in range(0 if stopped_at_start else self.max_iter):
            if epoch < n_warm:
                phase = "warmup"
            elif epoch < n_warm + n_anchor_epochs:
                phase = "first"
            else:
                phase = "svrg"
            mode, which, n_inner, n_outer = phases[phase]
            snap_penalty = lam1 * np.abs(w).sum() + 0.5 * lam2 * w.dot(w)
            snap_loss = 0.0
            if phase == "warmup":
                # per-sample SGD, O(nnz) per step (w kept as a scaled vector, l1 thresholds
                # accumulated per coordinate); the first pass runs in doubling chunks
                # (1/16, 1/8, 1/4, 1/2, 1 of the pass) with a record after each
                eta, warm_decay = self._warmup_schedule(sw, lam2)
                ends = _warmup_chunk_ends(n) if epoch == 0 else [n]
                start = 0
                for k, end in enumerate(ends):
                    loss_sum, counter = sgd_pass(
                        ds, y, sw, loss, w, b, self.fit_intercept, eta, warm_decay, 1.0,
                        lam2, perm, problem.seed, problem.stream, counter, float(epoch * n),
                        lam1, last_u if lam1 > 0.0 else None, start, end)
                    n_seen = end - start
                    start = end
                    if end == n:
                        break
                    # intermediate record: the progressive loss of the chunk (free)
                    check_finite_iterate(np.append(w, b), monitor.solver_name,
                                         f"epoch {epoch} (warm-up chunk)")
                    penalty = lam1 * np.abs(w).sum() + 0.5 * lam2 * w.dot(w)
                    record = {"epoch": epoch, "pass_fraction": end / n, "step_size": eta,
                              "solver": "sgd_warmup",
                              "loss_estimate": loss_sum / max(n_seen, 1) + penalty}
                    if self.track_objective:
                        record["objective"] = _objective(ds, w, b[0], y, sw, loss) + penalty
                    if monitor.record(x=w.copy(), **record):
                        stopped_in_warmup = True
                        break
                if stopped_in_warmup:
                    n_iter = epoch + 1
                    break
            else:
                step_first, step_svrg, s2 = steps()
                eta = (step_svrg if which == 1 else step_first) * scale
                loss_sum, n_seen, counter, snap_loss = run_epoch(
                    ds, y, sw, loss, w, b, mode, self.fit_intercept, eta, eta * s2, lam1,
                    lam2, batch, n_inner, n_outer, anchor_idx, nbr, nbr_w, BT, colsum,
                    slot_label, offset, Lw, Lb, dsnap, strata_order, strata_ptr, perm,
                    problem.seed, problem.stream, counter, gH, dA, ibuf, cbuf, lazy, 0.0,
                    0.0, False, last if last.shape[0] else None,
                )
            n_iter = epoch + 1
            check_finite_iterate(np.append(w, b), monitor.solver_name, f"epoch {epoch}")
            penalty = lam1 * np.abs(w).sum() + 0.5 * lam2 * w.dot(w)
            record = {"epoch": epoch, "pass_fraction": 1.0, "step_size": eta,
                      "solver": ("svrg" if mode == MODE_SVRG else
                                 "sgd_warmup" if phase == "warmup" else self.solver),
                      "loss_estimate": loss_sum / max(n_seen, 1) + penalty}
            exact = None
            if self.track_objective:
                exact = _objective(ds, w, b[0], y, sw, loss) + penalty
                record["objective"] = exact
            if mode == MODE_SVRG and n_outer == 1:
                # the full pass evaluated F exactly at the snapshot (the previous iterate)
                snap = snap_loss / n + snap_penalty
                record["snapshot_objective"] = snap
                current = exact if exact is not None else snap
            else:
                current = exact if exact is not None else record["loss_estimate"]
            if not np.isfinite(current):
                check_finite_iterate(np.array([current]), monitor.solver_name,
                                     f"epoch {epoch} (objective)")
            stop = monitor.record(x=w.copy(), **record)
            if current > _DIVERGENCE_FACTOR * max(f_start, 1.0):
                raise DivergenceError(
                    f"{monitor.solver_name} diverged: the objective grew from {f_start:.3g} "
                    f"to {current:.3g} after epoch {epoch}; decrease the step size (eta0).")
            counts = self.solver != "hybrid" or epoch >= n_warm + n_anchor_epochs
            rel_improvement = (best - current) / max(abs(best), 1.0) if np.isfinite(best) \
                else np.inf
            if counts:
                no_improvement = 0 if rel_improvement > self.tol else no_improvement + 1
                best = min(best, current)
            if no_improvement >= self.n_iter_no_change:
                if self.learning_rate == "adaptive" and scale > _ADAPTIVE_MIN:
                    scale /= 5.0      # plateau reached: shrink the noise floor
                    no_improvement = 0
                    continue
                converged = True
                break
            if stop:
                break
        monitor.finish(converged=converged,
                       criterion="relative objective improvement of the last epoch",
                       value=float(rel_improvement), tol=self.tol, max_iter=self.max_iter)
        if resolved or n_iter > n_warm or n_warm == 0:
            step_first, step_svrg = steps()[:2]
            step = step_first if n_anchor_epochs > 0 or first_mode != MODE_S3GD else step_svrg
        else:   # the fit ended in the warm-up: no spectrum estimate for an unused step
            step = self._warmup_schedule(sw, lam2)[0]
        return SolverResult(x=w, intercept=float(b[0]), n_iter=n_iter, converged=converged,
                            criterion=float(rel_improvement), extra={"step_size": step})


_LS_MAX_ITER = 20      # safeguarded Newton steps of the line-search start
_LS_RTOL = 1e-8        # stop when |phi'(t)| <= this * |phi'(0)|
_LS_THREAD_ROWS = 1 << 15   # from this many rows the line search's loops run in two threads


def _line_search_start(ds, y, sw, loss, w, b, lam2, fit_intercept):
    """Steepest-descent start: move ``(w, b)`` in place to ``(w, b) - t* g`` where ``g`` is
    the gradient of the smooth objective ``F`` at ``(w, b)`` (intercept included) and
    ``t* = argmin_t phi(t)``, ``phi(t) = F((w, b) - t g)``.

    One pass for ``g`` (margins, then ``X^T r``), one for ``z = X g_w + g_b`` (each in two
    row blocks run in threads); ``phi`` and its derivatives are then one O(n) loop over the
    margins ``p - t z`` per Newton step (no further pass over X).  ``phi`` is convex;
    safeguarded Newton from ``t = 0`` (bracket kept, a step outside it bisects, doubling
    while no upper end is known) until ``|phi'(t)| <= 1e-8 |phi'(0)|`` or 20 steps.  Only
    smooth penalties (``lam1 = 0``).

    Returns ``(t*, F(new point))``, or None (nothing changed) when the gradient is zero or
    not finite or the point found is not better than the start.
    """
    n = y.shape[0]
    # from zero (a fit from scratch) every margin is the intercept: no pass over X
    p = full_margins(ds, w, b[0]) if np.any(w) else np.full(n, float(b[0]))
    r = np.empty(n)
    f_loss = loss.weighted_loss_dloss(p, y, sw, r) / n      # r_i = s_i loss'(p_i, y_i)
    g = full_transpose_product(ds, r) / n + lam2 * w
    gb = float(r.sum()) / n if fit_intercept else 0.0
    ggw = float(g.dot(g))
    gg = ggw + gb * gb
    ww, wg = float(w.dot(w)), float(w.dot(g))
    f0 = f_loss + 0.5 * lam2 * ww
    if not (gg > 0.0 and np.isfinite(gg) and np.isfinite(f0)):
        return None
    z = full_margins(ds, g, gb)

    sums = np.zeros((N_ROW_BLOCKS, 3))

    def phi(t, with_value=False):
        """phi(t) (nan unless ``with_value``), phi'(t), phi''(t): one pass over the margins
        p - t z, in row blocks (threads from _LS_THREAD_ROWS rows; fixed block sums)."""
        def block(k, start, end):
            sums[k] = loss.along_line(p[start:end], z[start:end], y[start:end],
                                      sw[start:end], -t, with_value)
        run_row_blocks(n, block, n >= _LS_THREAD_ROWS)
        value, d1, d2 = sums.sum(axis=0)
        value = value / n + 0.5 * lam2 * (ww - 2.0 * t * wg + t * t * ggw) if with_value \
            else np.nan
        return value, -d1 / n + lam2 * (t * ggw - wg), d2 / n + lam2 * ggw

    lo, hi, t = 0.0, np.inf, 0.0
    _, d1, d2 = phi(0.0)
    for _ in range(_LS_MAX_ITER):
        if d2 > 0.0 and np.isfinite(d2):
            t_new = t - d1 / d2
        else:
            t_new = np.inf
        if not (lo < t_new < hi):     # safeguard: bisect the bracket, or double
            t_new = 0.5 * (lo + hi) if np.isfinite(hi) else max(2.0 * t, 1.0 / max(d2, gg))
        t = t_new
        _, d1, d2 = phi(t)
        if not np.isfinite(d1):
            hi = t
            continue
        if abs(d1) <= _LS_RTOL * gg:
            break
        if d1 < 0.0:
            lo = t
        else:
            hi = t
    f_new = phi(t, with_value=True)[0]
    if not (np.isfinite(f_new) and f_new < f0):
        return None
    w -= t * g
    b[0] -= t * gb
    return t, f_new


def _warmup_chunk_ends(n):
    """Ends of the warm-up pass's chunks: 1/16, 1/8, 1/4, 1/2 and all of the n samples
    (empty chunks dropped).  SGD with a 1/(mu t) step gains about a constant factor per
    doubling of t, so doubling chunks record its progress at evenly spaced gains."""
    ends = sorted({n >> k for k in range(_WARMUP_CHUNKS - 1, -1, -1)} - {0})
    return ends or [n]


_EIG_SUBSAMPLE = 20_000   # rows of the smoothness estimate
_EIG_GRAM_MAX = 500       # up to this many features: exact eigenvalue of the subsample Gram
_START_SUBSAMPLE = 2_000  # rows of init_step='auto''s conditioning estimate
_START_CONDITION = 1.0    # 'auto' starts by a line search when c lambda_max <= this * lam2


def _gram_spectrum(X, sw, seed, rtol=1e-3):
    """Largest eigenvalue of ``X^T diag(sw) X / n``, ``||X^T sw / n||`` and ``mean(sw)``.

    Estimated on a uniform subsample of ``_EIG_SUBSAMPLE`` rows (all rows when n is
    smaller): an unbiased estimate of the matrix, whose largest eigenvalue is biased
    upwards (lambda_max is convex), so the step errs on the safe side.  Up to
    ``_EIG_GRAM_MAX`` features the subsample Gram matrix is formed and its eigenvalue is
    exact; above, power iteration (relative change below ``rtol``, at most 100 products).
    """
    n, d = X.shape
    rng = np.random.RandomState(seed % (2**32))
    if n > _EIG_SUBSAMPLE:
        rows = np.sort(rng.choice(n, _EIG_SUBSAMPLE, replace=False))
        Xs, ws = X[rows], sw[rows]
    else:
        Xs, ws = X, sw
    s = Xs.shape[0]
    mean_row = np.asarray(Xs.T @ ws).ravel()
    mean_norm = float(np.linalg.norm(mean_row)) / s
    if d <= _EIG_GRAM_MAX:
        root = np.sqrt(ws)
        if sp.issparse(Xs):
            Y = sp.diags(root) @ Xs
            G = (Y.T @ Y).toarray()
        else:
            Y = Xs * root[:, np.newaxis]
            G = Y.T @ Y          # symmetric rank-k product (much faster than a general one)
        G /= s
        lam = float(np.linalg.eigvalsh(G)[-1]) if np.all(np.isfinite(G)) else np.inf
    else:
        # start from the weighted mean row (plus a random part, so the top eigenvector is
        # never orthogonal to the start): for non-negative data such as text it is close to
        # the top eigenvector and the iteration stops after 2-3 products instead of 10-30
        v = rng.standard_normal(d)
        v /= np.linalg.norm(v)
        mnorm = mean_norm * s
        if mnorm > 0.0 and np.isfinite(mnorm):
            v = mean_row / mnorm + 0.1 * v
            v /= np.linalg.norm(v)
        lam = 0.0
        for _ in range(100):
            g = np.asarray(Xs.T @ (ws * (Xs @ v))).ravel() / s
            nrm = float(np.linalg.norm(g))
            if nrm == 0.0 or not np.isfinite(nrm):
                lam = nrm
                break
            v = g / nrm
            done = abs(nrm - lam) <= rtol * nrm
            lam = nrm
            if done:
                break
    return max(lam, 0.0), mean_norm, float(ws.mean())


def _max_abs(X):
    data = X.data if sp.issparse(X) else X
    return float(np.max(np.abs(data))) if data.size else 0.0


def _objective(ds, w, b, y, sw, loss):
    p = ds.margins(w, b)
    out = np.empty_like(p)
    return loss.weighted_loss_dloss(p, y, sw, out) / p.shape[0]


def _weighted_anchor_sums(ds, graph, weights):
    """BT = M^T diag(weights) X as a dense C-contiguous (m, d) array (compiled, O(n k nnz))."""
    nbr = graph.neighbors
    m = graph.n_anchors
    if nbr.size and (nbr.min() < 0 or nbr.max() >= m):   # the kernel does not bounds-check
        raise ValueError(f"anchor graph neighbours must lie in [0, {m}), got "
                         f"[{nbr.min()}, {nbr.max()}]")
    if nbr.shape[0] != ds.n_samples or graph.weights.shape != nbr.shape:
        raise ValueError("anchor graph and data have inconsistent shapes")
    BT = np.zeros((m, ds.n_features))
    weighted_anchor_sums(ds, nbr, graph.weights, np.ascontiguousarray(weights, dtype=np.float64),
                         BT)
    return BT


def _strata(X, n_strata, method, max_iter, seed):
    """Strata of stratified SGD: k-means with ``n_strata`` clusters (paper: p clusters)."""
    rs = int(seed % (2**31 - 1))
    n = X.shape[0]
    if method == "minibatch_kmeans" or (method == "auto" and n > 50_000):
        km = MiniBatchKMeans(n_clusters=n_strata, n_init=1, max_iter=max_iter, random_state=rs)
    elif method == "random":
        labels = np.random.RandomState(rs).randint(0, n_strata, n)
        km = None
    else:
        km = KMeans(n_clusters=n_strata, n_init=1, max_iter=max_iter, random_state=rs)
    if km is not None:
        labels = km.fit(X).labels_
    order = np.argsort(labels, kind="stable").astype(np.int32)
    counts = np.bincount(labels, minlength=n_strata)
    counts = counts[counts > 0]
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return order, ptr


_SOLVER_DOC = """
    penalty : {'l2', 'l1', 'elasticnet'} or None, default='l2'
        Regulariser, applied by its proximal operator after every step.
    alpha : float, default=1e-4
        Regularisation strength (``SGDClassifier`` convention: the penalty is
        ``alpha * (l1_ratio * ||w||_1 + (1 - l1_ratio) / 2 * ||w||^2)``).  The paper's
        Tikhonov ``lambda ||w||^2`` with ``lambda = 1e-3`` is ``alpha = 2e-3``.
    l1_ratio : float, default=0.15
        Share of the l1 part for ``penalty='elasticnet'``.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept (the paper appends a penalised constant feature instead).
    solver : {'hybrid', 's3gd', 'svrg', 'sgd', 'ssgd'}, default='hybrid'
        ``'s3gd'``: the paper's Algorithm 1 with the anchor-graph control variate throughout
        (converges to a noise floor above the optimum, Theorem 3.1).  ``'hybrid'`` (default,
        the paper's suggested remedy, not implemented there; with the default
        ``anchor_epochs=0`` it is Prox-SVRG with one snapshot per epoch): ``anchor_epochs`` epochs of
        S3GD, then Prox-SVRG with one full pass per epoch, which converges linearly to the
        optimum.  The paper's baselines: ``'svrg'`` Prox-SVRG (a full pass per outer loop of
        ``n_inner`` steps; the paper uses ``n_inner=50``), ``'sgd'`` plain proximal mini-batch
        SGD, ``'ssgd'`` stratified SGD (``batch_size`` k-means strata, one sample of each per
        step).
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
        and all of it, with ``pass_fraction`` and the chunk's progressive loss as
        ``loss_estimate``; ``n_iter_`` counts whole passes); it does
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
        benchmark at alpha 1e-3 only (1e-3 reached in 0.037 s vs 0.065 s for ``None``; a
        complete default fit 0.62 vs 0.65 s, same objective) and runs ``None``'s iterates
        bitwise on the other three benchmark cells.
    eta0 : 'auto' or float, default='auto'
        Step size.  ``'auto'`` is ``1 / (8 L_b)`` for S3GD, SGD and stratified SGD (the bound
        of Theorem 3.1) and ``1 / (4 L_b)`` for Prox-SVRG and the Prox-SVRG phase of
        ``'hybrid'`` (Xiao & Zhang's bound), with ``L_b`` the expected smoothness of
        mini-batches of ``batch_size`` samples drawn without replacement (Gower et al. 2019),
        ``L_b = [n (b - 1) mean_i L_i + (n - b) max_i L_i] / (b (n - 1)) + alpha (1 - l1_ratio)``,
        ``L_i = c s_i (||x_i||^2 + fit_intercept)`` and ``c`` the loss curvature bound (1/4 for
        the log loss).  On unit-norm rows with the log loss this is 0.5 and 1.  A float is used
        by every phase except the per-sample warm-up (``warmup_epochs``).  The paper picks the largest stable value of the grid
        {0.1, 1, 5, 10} on normalised data.
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
        The Prox-SVRG phase of ``'hybrid'`` always takes one snapshot per epoch.
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
        ``max(10,000, 20 n_anchors)`` samples, centres snapped to subsampled samples;
        ``'minibatch_kmeans'``: MiniBatchKMeans on all samples; ``'random'``: uniform samples.
    kmeans_max_iter : int, default=10
        Iterations (epochs for MiniBatchKMeans) of the clustering (paper: not reported).
    max_iter : int, default=50
        Maximum number of epochs (one epoch = ``n_samples`` sampled gradients).
    tol : float, default=1e-4
        The fit stops after ``n_iter_no_change`` epochs whose objective improves on the best
        so far by less than ``tol * max(1, |best|)``.  The objective is the exact one with
        ``track_objective``; otherwise, in Prox-SVRG epochs, the exact objective at the
        snapshot (computed by the full pass for free, one epoch behind), and in the other
        epochs the epoch average of the mini-batch losses (noisy).  The anchor epochs of
        ``'hybrid'`` do not count.
    n_iter_no_change : int, default=5
    track_objective : bool, default=False
        Compute the exact objective after each epoch (one extra pass over the data) and stop
        on it.  Not needed by ``'hybrid'`` and ``'svrg'``, whose full passes give the exact
        objective at each snapshot for free.
    warm_start : bool, default=False
        Start from the previous ``coef_`` and ``intercept_``.
    random_state : int, RandomState instance or None, default=None
        Seeds the clustering and the kernel's counter-based generator.
    verbose : int, default=0
        Print one line per epoch.
    callback : callable or None, default=None
        ``callback(record) -> bool`` after each epoch; a true value stops the fit.
"""

_ATTRIBUTES_DOC = """
    n_iter_ : int
        Epochs run (the largest over the one-vs-rest / output problems).
    history_ : dict of ndarray (list of dicts for several problems)
        Per epoch: ``epoch``, ``step_size``, ``solver`` (the phase), ``loss_estimate``,
        ``objective`` (with ``track_objective``), ``snapshot_objective`` (Prox-SVRG epochs:
        the exact objective at the start of the epoch) and ``time``.
    step_size_ : float or ndarray
        The resolved ``eta0`` of the first phase (one per problem when there are several).
    anchor_indices_ : ndarray of int
        Rows of the training X used as anchors (``solver='s3gd'``).
    n_anchors_ : int
        Number of distinct anchors (``solver='s3gd'``).
    seed_ : int
        The seed drawn from ``random_state``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
"""


class S3GDClassifier(_S3GDMixin, BaseLinearClassifier):
    __doc__ = f"""Linear classifier trained by S3GD (semi-stochastic gradient by manifold
    propagation, Mu, Liu & Fan, paper 002).

    Minimises ``(1/n) sum_i s_i loss(y_i, x_i.w + b) + penalty(w)`` with proximal mini-batch
    steps ``w <- prox(w - eta (grad psi_I(w) - grad h_I(w~) + grad H(w~)))`` where ``h`` replaces
    each sample's loss derivative at the snapshot ``w~`` by a weighted average of the
    derivatives at its ``n_neighbors`` nearest anchors.  ``grad H`` costs O(m d) per outer loop
    from the precomputed ``X^T M``.  More than two classes: one-vs-rest, all heads sharing one
    anchor graph (threads with ``n_jobs``).

    Parameters
    ----------
    loss : {{'log_loss', 'squared_hinge', 'smooth_hinge'}}, default='log_loss'
        ``'log_loss'`` (the paper's), ``'squared_hinge'`` ``max(0, 1 - y p)^2``,
        ``'smooth_hinge'`` the smoothed hinge with smoothing ``smoothing``.
    smoothing : float, default=1.0
        Width of the quadratic part of ``'smooth_hinge'``.
    {_SOLVER_DOC}
    class_weight : dict, 'balanced' or None, default=None
        ``'balanced'`` is the paper's eq. (46) up to a factor 2.
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
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "n_jobs": [Integral, None],
    }

    def __init__(self, loss="log_loss", *, smoothing=1.0, penalty="l2", alpha=1e-4,
                 l1_ratio=0.15, fit_intercept=True, solver="hybrid", anchor_epochs=0,
                 warmup_epochs=1, init_step="auto", eta0="auto",
                 learning_rate="constant", batch_size=10, n_inner="auto",
                 n_anchors=100, n_neighbors=5, kernel_width="nearest", kernel_eps=1e-4,
                 anchor_method="auto", kmeans_max_iter=10, max_iter=50, tol=1e-4,
                 n_iter_no_change=5, track_objective=False, class_weight=None,
                 warm_start=False, n_jobs=None, random_state=None, verbose=0, callback=None):
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
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback


class S3GDRegressor(_S3GDMixin, BaseLinearRegressor):
    __doc__ = f"""Linear regressor trained by S3GD (paper 002): ridge, lasso or elastic net.

    Minimises ``(1/n) sum_i s_i (x_i.w + b - y_i)^2 / 2 + penalty(w)``.  The label enters the
    loss derivative additively, so the anchor correction is label free and shared by all
    outputs: ``grad H = (1/n) (X^T M) (Z w~ + b~) - (1/n) X^T (s y)``.

    Parameters
    ----------
    loss : {{'squared_error'}}, default='squared_error'
    {_SOLVER_DOC}
    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
    intercept_ : float or ndarray of shape (n_targets,)
    {_ATTRIBUTES_DOC}
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

    def __init__(self, loss="squared_error", *, penalty="l2", alpha=1e-4, l1_ratio=0.15,
                 fit_intercept=True, solver="hybrid", anchor_epochs=0,
                 warmup_epochs=1, init_step="auto", eta0="auto",
                 learning_rate="constant", batch_size=10, n_inner="auto", n_anchors=100, n_neighbors=5,
                 kernel_width="nearest", kernel_eps=1e-4, anchor_method="auto",
                 kmeans_max_iter=10, max_iter=50, tol=1e-4, n_iter_no_change=5,
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
