"""Driver of S3VMClassifier: triply stochastic functional gradients (TSGS3VM, paper 003).

Algorithm 1 of Geng et al. (IJCAI 2019) with mini-batches and one-vs-rest heads that share the
batches and the feature blocks.  Iteration ``i`` samples a labeled batch, an unlabeled batch
and the random Fourier block ``i`` (a pure function of ``(seed, i)``), evaluates f on the
batches from the blocks ``< i``, and adds the block

    alpha_i = -gamma_i (C/B sum_b l'_b phi_i(x^l_b) + C*/B sum_b u'_b phi_i(x^u_b)),
    alpha_j <- (1 - gamma_i) alpha_j   (j < i).

Beyond the paper (each documented in the estimator): a bounded random pool of unlabeled rows,
the class-balance constraint (blocks centred on a probe set, intercept fixed at mean_l y), a
linear warm-up of C*, a label-change stopping test on the probe set, polynomial-decay iterate
averaging, a Laplacian term on a kNN graph (a fourth source of randomness: sampled edges) with
a step cap from its curvature, restarts with other seeds, and retries with other seeds while
no run has passed the stopping test and the last one came near it.

f on a pool of rows (labeled, unlabeled pool, probe set) is either kept up to date with every
new block (``F <- (1 - gamma_i) F + phi_i(X_pool) alpha_i``, cost n_pool m d per iteration) or
evaluated on the sampled batch from all previous blocks (cost B i m d at iteration i); both
are exact.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._fast import _s3vm
from ..utils import make_dataset, single_thread_blas
from ._knn_graph import knn_graph, laplacian_curvature_bound
from ._monitor import DivergenceError, FitMonitor, check_finite_iterate
from ._result import SolverResult
from ._step_size import cap_steps
from ._stopping import LabelChangeStop
from ._tsg_losses import labeled_hinge, manifold_edge_terms, unlabeled_loss

CRITERION = "fraction of probe labels changed per window"
# seed of restart r = seed + r * this (mod 2**64): the golden-ratio increment of splitmix64
RESTART_SEED_STEP = 0x9E3779B97F4A7C15
# n_restarts="auto" retries a fit that failed the stopping test only when it came within this
# factor of the threshold (two consecutive probe changes below RETRY_NEAR x threshold): a fit
# whose probe labels keep changing far above the threshold after the warm-up is dominated by
# its own stochastic noise, which another seed reproduces (the half-labeled 20-D rows of
# bench_s3vm.py: 15-20% of the probe labels per record, 150-200 x the threshold, for every
# seed), while the fits that a retry rescues flip a few probe labels per record (2-7 x on
# two moons at 10^5 rows, bench_s3vm.py seeds)
RETRY_NEAR = 10.0
# polynomial-decay averaging (Shamir & Zhang 2013): the average after t iterates moves toward
# the t-th by (eta + 1) / (t + eta); with eta = 3 iterate t weighs ~ t^3, 94% of the weight
# on the last half of the iterates
AVERAGE_ETA = 3.0
# sample_pool block number of the pool and probe draws (stream 2 * (2**64 - 1) + 1 mod 2**64 =
# 2**64 - 1, never used by an iteration's batches, which use streams 2 i + 1)
_POOL_BLOCK = -1
# block of the labeled pool draw (stream 2**64 - 3, also never used by an iteration)
_LABELED_POOL_BLOCK = -2


@dataclass(frozen=True, eq=False)
class TSGProblem:
    """The data of one fit.

    Attributes
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Validated training matrix (the kNN graph and the kernels read its rows).
    labeled_rows : int64 array of shape (n_l,)
    Y : float64 array of shape (n_l, n_heads)
        +1/-1 targets of each head for the labeled rows.
    unlabeled_rows : int64 array of shape (n_u,)
        The unlabeled rows U.
    seed : int
        Seed of the counter-based generator (batches, features, pool, edges).
    """

    X: object
    labeled_rows: np.ndarray
    Y: np.ndarray
    unlabeled_rows: np.ndarray
    seed: int


@dataclass(frozen=True, eq=False)
class TSGParams:
    """Resolved parameters of a TSGS3VM fit.

    Attributes
    ----------
    C, C_star : float
        Weights of the mean labeled hinge and of the expected unlabeled loss.
    loss : {"hinge", "squared_hinge", "ramp", "exp"}
        Unlabeled loss; ``ramp_s`` the plateau of "ramp".
    step_sizes : float array of shape (T,)
        gamma_0, ..., gamma_{T-1}, all in (0, 1] (T = number of iterations).
    batch_size, n_components : int
        B (each side) and m (features per block).
    kernel_gamma : float
        RBF coefficient: the frequencies are ``sqrt(2 kernel_gamma) N(0, I)``.
    cache_features : bool
        Keep every block's omega and offset (returned in ``extra``).
    balance : bool
        Class-balance constraint ``mean_probe f = mean_l y`` per head.
    probe_size : int
        Probe set: the unlabeled pool when it has at most this many rows, else a uniform
        subsample of this size (its first rows when the pool is a random subsample).
    tol : float or None
        :class:`LabelChangeStop` on the probe set every ``record_every`` iterations, not before
        ``max(warmup T, 2 / gamma_0)`` iterations; None runs T iterations.
    record_every : int
        Record (history, verbose, callback) and test every this many iterations and at the end.
    warmup : float
        C* rises linearly from 0 over this fraction of T.
    pool_size : int or None
        Unlabeled rows drawn once without replacement (in random order) to sample from and
        cache f on; None uses all of U in its own order. The labeled rows get the same
        bound: when there are more, this many are drawn once (without replacement, in
        random order) and are the labeled rows of the run (batches, cached f, graph nodes,
        objective), except that the balance target ``mean_l y`` is over every labeled row.
        So the cost of a run is linear in n whatever the labeled fraction.
    average : bool
        Return the polynomial-decay average of the iterates (the stopping test watches the
        last iterate).
    manifold_weight : float
        gamma_M of ``gamma_M mean_{(a, b) in E} (f(x_a) - f(x_b))^2`` over the directed
        ``n_neighbors``-NN graph E of the labeled rows and the pool (0: no term, no graph).
    n_restarts : int
        Fits with seeds ``seed + r * RESTART_SEED_STEP``; the one with the lowest objective
        estimate is kept (one fit without unlabeled term).
    retries : int
        Up to this many more fits (continuing the seed sequence) while no fit so far has
        converged and the last one came near the test (``stop_gap <= RETRY_NEAR``; not when
        the callback stopped it); the kept fit is then the lowest objective among the
        converged fits, or among all when none converged. Only when the stopping test can
        fire (:func:`can_converge`): a fit too short for the test is not retried.
    cache_labeled, cache_unlabeled : bool or None
        Keep f on the whole labeled rows (unlabeled pool); None picks the cheaper, cached when
        the pool has at most ``B T / 2`` rows.
    """

    C: float
    C_star: float
    loss: str
    ramp_s: float
    step_sizes: np.ndarray
    batch_size: int
    n_components: int
    kernel_gamma: float
    cache_features: bool = True
    balance: bool = False
    probe_size: int = 2048
    tol: float | None = None
    record_every: int = 1
    warmup: float = 0.0
    pool_size: int | None = None
    average: bool = False
    manifold_weight: float = 0.0
    n_neighbors: int = 10
    n_restarts: int = 1
    retries: int = 0
    cache_labeled: bool | None = None
    cache_unlabeled: bool | None = None


# ------------------------------------------------------------------------------ driver
def solve(problem, params, monitor, state=None):
    """Fit TSGS3VM (with restarts) and return the kept run.

    Parameters
    ----------
    problem : TSGProblem
    params : TSGParams
    monitor : FitMonitor
        Receives the history of the kept run (each run records on its own monitor with the
        same verbose and callback; ``time`` counts from the creation of ``monitor``).
    state : None
        TSGS3VM has no warm start.

    Returns
    -------
    SolverResult
        ``x`` the coefficients alpha (n_iter, n_heads, m), ``intercept`` (n_heads,),
        ``n_iter`` the blocks fitted, ``criterion`` the last fraction of probe labels changed.
        ``extra``: ``seed`` (of the kept run), ``objective`` and ``restart_objectives`` (one
        per run made, restarts and retries; see :meth:`_Run.objective`), ``step_sizes``
        (after the Laplacian step cap), ``random_weights`` / ``random_offset`` (the blocks'
        omega and offset, None unless ``cache_features``), ``f_labeled`` (f on the labeled
        rows of the run: all, or the labeled pool), ``Y_labeled`` (their targets) and
        ``stop_gap`` (how near the kept run came to passing the stopping test:
        ``LabelChangeStop.closest``).
    """
    if state is not None:
        raise ValueError("TSGS3VM has no warm start: state must be None")
    cols = None
    if sp.issparse(problem.X) and not params.cache_features:
        # regenerated features: only the columns that hold an entry are ever generated
        X_used, cols = compress_columns(problem.X)
    else:
        X_used = problem.X
    dataset = make_dataset(X_used, float32=True)   # a float32 X is read in place
    _check_problem(problem, dataset.n_samples)
    use_unlabeled = problem.unlabeled_rows.shape[0] > 0 and params.C_star > 0
    n_runs = params.n_restarts if use_unlabeled else 1
    retries = params.retries if use_unlabeled and can_converge(params) else 0
    objectives, converged = [], []
    # the runs the choice below can keep, (index, result, monitor, start): the first minimum
    # of the objective, and of the converged runs' objective; the others are dropped as
    # they end (each holds its cached random features)
    best = best_converged = None
    retry = False
    # the per-iteration matrix products are small (pool x m times m x heads): BLAS threads
    # cost more than they save there (and spin on a loaded machine), so one thread
    with single_thread_blas():
        r = 0
        while r < n_runs or (r < n_runs + retries and retry):
            start = monitor.elapsed()
            # the verbose lines of a restart say so (its iterations start again at 0)
            run_monitor = FitMonitor(monitor.solver_name, verbose=monitor.verbose,
                                     callback=monitor.callback,
                                     label=f"restart={r}" if r else None)
            result = _fit_once(dataset, problem, params, restart_seed(problem.seed, r),
                               run_monitor, cols)
            value = result.extra["objective"]
            run = (r, result, run_monitor, start)
            # a running strict minimum: the earliest on ties, a nan kept only if first
            if best is None or value < objectives[best[0]]:
                best = run
            if result.converged and (best_converged is None
                                     or value < objectives[best_converged[0]]):
                best_converged = run
            objectives.append(value)
            converged.append(result.converged)
            retry = _retry_can_help(converged, result, run_monitor)
            del result, run
            r += 1
    # retried: a converged fit is preferred (the objective estimate is noisy, the
    # unconverged fits are the ones that failed the label-change test)
    kept, result, run_monitor, start = (best_converged if r > n_runs and best_converged
                                        else best)
    if monitor.verbose and len(objectives) > 1:
        which = "the first fit" if kept == 0 else f"restart={kept}"
        print(f"[{monitor.solver_name}] keeps {which} (restart_objectives_: "
              f"{', '.join(f'{v:.6g}' for v in objectives)})\n", end="")
    _adopt_history(monitor, run_monitor, start)
    result.extra["restart_objectives"] = np.array(objectives)
    where = f"{result.n_iter} iterations"
    check_finite_iterate(result.x, monitor.solver_name, where)
    check_finite_iterate(result.intercept, monitor.solver_name, where)
    return result


def _retry_can_help(converged, last, last_monitor):
    """n_restarts="auto": fit again when no run converged (``converged``: one flag per run)
    and the last one came near the stopping test (``stop_gap <= RETRY_NEAR``) and was not
    stopped by the callback."""
    if any(converged):
        return False
    return last.extra["stop_gap"] <= RETRY_NEAR and not last_monitor.stopped_by_callback


def _check_problem(problem, n_samples):
    """The kernels index rows unchecked: every row number must be an int64 in range."""
    for name in ("labeled_rows", "unlabeled_rows"):
        rows = getattr(problem, name)
        if rows.dtype != np.int64 or rows.ndim != 1 or not rows.flags.c_contiguous:
            raise ValueError(f"{name} must be a contiguous 1-D int64 array")
        if rows.size and (rows.min() < 0 or rows.max() >= n_samples):
            raise ValueError(f"{name} has row numbers outside [0, {n_samples})")
    if problem.Y.ndim != 2 or problem.Y.shape[0] != problem.labeled_rows.shape[0]:
        raise ValueError("Y must have one row of head targets per labeled row")


def _adopt_history(monitor, run_monitor, start):
    """Give ``monitor`` the records of the kept run, timed from ``monitor``'s start (the run
    started ``start`` seconds after it)."""
    monitor.records.extend(dict(rec, time=rec["time"] + start) for rec in run_monitor.records)
    monitor.stopped_by_callback = run_monitor.stopped_by_callback


def min_stop_iter(params):
    """First iteration at which the label-change test may stop a run: not during the C*
    warm-up nor before 2 / gamma_0 iterations (the memory of a constant step: labels that
    settle while the start is not forgotten are not converged)."""
    return max(params.warmup * params.step_sizes.shape[0],
               int(np.ceil(2.0 / params.step_sizes[0])))


def can_converge(params):
    """Whether the label-change test can stop a run: ``tol`` set and
    :func:`min_stop_iter` within the budget."""
    return params.tol is not None and min_stop_iter(params) <= params.step_sizes.shape[0]


def _fit_once(dataset, problem, params, seed, monitor, cols=None):
    """One run of Algorithm 1 from f = 0 with ``seed`` (``cols``: see :class:`_Run`)."""
    run = _Run(dataset, problem, params, seed, cols)
    average = _IterateAverage(run) if params.average else None
    stop = LabelChangeStop(params.tol, run.n_probe, min_stop_iter(params))
    # steps too large for the loss weights (a huge C_star with a given eta0) make f overflow:
    # one error, not a RuntimeWarning per iteration and coefficients of 1e300
    with np.errstate(over="raise"):
        try:
            for i in range(run.n_iter):
                batch = run.sample(i)
                run.add_block(i, run.gradient(i, batch))
                if average is not None:
                    average.update(run)
                if (i + 1) % params.record_every == 0 or i + 1 == run.n_iter:
                    if run.record(i, batch, stop, monitor) or stop.converged:
                        break
            if average is not None:
                average.replace(run)
            result = run.result(seed, stop)
        except DivergenceError:
            raise
        except FloatingPointError as exc:
            raise DivergenceError(
                f"{monitor.solver_name} diverged: f overflowed float64 after {run.n_done} "
                f"iterations ({exc}): the steps (first {params.step_sizes[0]:.3g}) are too "
                f"large for the loss weights C={params.C:.3g} and C_star="
                f"{params.C_star:.3g}. Decrease the step (eta0, or theta with "
                f"learning_rate='theory'; eta0='auto' keeps each row's loss step at 0.2 at "
                f"most) or C and C_star.") from exc
    result.extra["stop_gap"] = stop.closest
    return result


def restart_seed(seed, restart):
    """Seed of restart ``restart`` of a fit seeded ``seed``."""
    return (seed + restart * RESTART_SEED_STEP) % 2**64


# ------------------------------------------------------------------------------ one run
class _Batch:
    """What iteration i sampled: batch positions and the gradient coefficients of each term."""

    __slots__ = ("pos_l", "rows_l", "loss_l", "coef_l", "pos_u", "rows_u", "loss_u", "coef_u",
                 "edges", "loss_m", "coef_m")


class _Block:
    """The new block's gradient and the features it was computed from."""

    __slots__ = ("grad", "phi_l", "phi_u", "phi_p", "mu")


class _Run:
    """State of one run: the blocks, f cached on the pools, the probe set and the graph.

    ``cols``: the input coordinates of the dataset's columns when X was compressed to the
    columns that hold an entry (:func:`compress_columns`), else None."""

    def __init__(self, dataset, problem, params, seed, cols=None):
        self.dataset, self.params, self.seed, self.cols = dataset, params, seed, cols
        self._init_labeled_pool(problem.labeled_rows, problem.Y)
        self.n_iter = params.step_sizes.shape[0]
        self.n_l, self.K = self.Y.shape
        self.m, self.d = params.n_components, dataset.n_features
        self.B = params.batch_size
        self.scale = np.sqrt(2.0 * params.kernel_gamma)
        self.steps = params.step_sizes
        self._init_pool(problem.unlabeled_rows)
        self.use_u = self.n_u > 0 and params.C_star > 0
        self.balance = bool(params.balance) and self.n_u > 0
        self.use_probe = self.n_u > 0 and (self.balance or params.tol is not None)
        self.use_m = params.manifold_weight > 0 and self.n_l + self.n_u > 1
        self._init_blocks()
        self._init_caches()
        self._init_probe()
        self.target = problem.Y.mean(axis=0) if self.balance else np.zeros(self.K)
        self.c_raw = np.zeros(self.K)       # sum_i alpha_i^T mu_i (balance)
        self.intercept = self.target - self.c_raw
        if self.use_m:
            self._init_graph(problem.X)
        self.n_done = 0

    # -- setup ---------------------------------------------------------------------------
    def _init_labeled_pool(self, labeled_rows, Y):
        size = self.params.pool_size
        if size is not None and labeled_rows.shape[0] > size:
            pos = np.empty(int(size), dtype=np.int64)
            _s3vm.sample_pool(self.seed, _LABELED_POOL_BLOCK, labeled_rows.shape[0], pos)
            labeled_rows, Y = np.ascontiguousarray(labeled_rows[pos]), np.ascontiguousarray(Y[pos])
        self.labeled_rows, self.Y = labeled_rows, Y

    def _init_pool(self, unlabeled_rows):
        n_u = unlabeled_rows.shape[0]
        self.pool_random = self.params.pool_size is not None and n_u > 0
        if self.pool_random:
            pool_pos = np.empty(min(n_u, int(self.params.pool_size)), dtype=np.int64)
            _s3vm.sample_pool(self.seed, _POOL_BLOCK, n_u, pool_pos)
            unlabeled_rows = np.ascontiguousarray(unlabeled_rows[pool_pos])
        self.unlabeled_rows = unlabeled_rows
        self.n_u = unlabeled_rows.shape[0]

    def _init_blocks(self):
        T, K, m, d = self.n_iter, self.K, self.m, self.d
        self.alpha = np.zeros((T, K, m))
        if self.params.cache_features:
            self.omega, self.offset = np.empty((T, m, d)), np.empty((T, m))
            self.blocks = _s3vm.FeatureBlocks(self.seed, self.scale, m, d, self.omega,
                                              self.offset)
        else:
            self.omega = self.offset = None
            self._work = np.empty((m, d)), np.empty(m)
            self.blocks = _s3vm.FeatureBlocks(self.seed, self.scale, m, d, cols=self.cols)

    def _init_caches(self):
        p, half = self.params, self.B * self.n_iter / 2
        cache_l = self.n_l <= half if p.cache_labeled is None else p.cache_labeled
        cache_u = self.n_u <= half if p.cache_unlabeled is None else p.cache_unlabeled
        cache_u = cache_u and (self.use_u or self.use_probe or self.use_m)
        self.F_l = np.zeros((self.n_l, self.K)) if cache_l else None
        self.F_u = np.zeros((self.n_u, self.K)) if cache_u else None
        self.pos_l = np.empty(self.B, dtype=np.int64)
        self.pos_u = np.empty(self.B if self.use_u else 0, dtype=np.int64)

    def _init_probe(self):
        self.n_probe, self.probe_prefix = 0, False
        if not self.use_probe:
            return
        size = self.params.probe_size
        if self.n_u <= size:
            probe_pos = np.arange(self.n_u, dtype=np.int64)
        elif self.pool_random:
            probe_pos = np.arange(size, dtype=np.int64)
        else:
            probe_pos = np.empty(size, dtype=np.int64)
            _s3vm.sample_pool(self.seed, _POOL_BLOCK, self.n_u, probe_pos)
        self.n_probe = probe_pos.shape[0]
        # the probe set is the first rows of the pool (f on it is a view of F_u)
        self.probe_prefix = self.pool_random or self.n_u <= size
        self.probe_rows = np.ascontiguousarray(self.unlabeled_rows[probe_pos])
        if self.F_u is not None and self.probe_prefix:
            self.F_p = self.F_u[:self.n_probe]
        else:
            self.F_p = np.zeros((self.n_probe, self.K))

    def _init_graph(self, X):
        self.nodes = np.concatenate([self.labeled_rows, self.unlabeled_rows])
        self.neighbors = knn_graph(X, self.nodes, self.params.n_neighbors)
        self.e_src = np.empty(self.B, dtype=np.int64)
        self.e_dst = np.empty(self.B, dtype=np.int64)
        # the Laplacian term's curvature bound caps every step (inactive on 2-D moons/circles
        # at weights <= ~100; active on digits/breast_cancer already at the default 30)
        curvature = laplacian_curvature_bound(X, self.nodes, self.neighbors,
                                              self.params.kernel_gamma,
                                              self.params.manifold_weight)
        self.steps = cap_steps(self.steps, curvature)

    # -- f on rows -----------------------------------------------------------------------
    def values(self, i, rows, pos, cache):
        """f (blocks < i, with the intercept) on ``rows``: from ``cache[pos]`` or evaluated."""
        if cache is not None:
            return cache[pos] + self.intercept
        out = np.zeros((rows.shape[0], self.K))
        _s3vm.decision(self.blocks, self.dataset, rows, self.alpha, i, out)
        return out + self.intercept

    def node_values(self, i, nodes):
        """f (blocks < i, with the intercept) on graph nodes (labeled positions, then pool)."""
        out = np.empty((nodes.shape[0], self.K))
        lab = nodes < self.n_l
        pl, pu = nodes[lab], nodes[~lab] - self.n_l
        out[lab] = self.values(i, self.labeled_rows[pl], pl, self.F_l)
        out[~lab] = self.values(i, self.unlabeled_rows[pu], pu, self.F_u)
        return out

    # -- one iteration -------------------------------------------------------------------
    def sample(self, i):
        """Steps 2-3 and 5-6: the batches of iteration i, f on them and the loss terms."""
        p, b = self.params, _Batch()
        _s3vm.sample_batch(self.seed, i, self.n_l, self.n_u if self.use_u else 0, self.pos_l,
                           self.pos_u)
        b.pos_l, b.rows_l = self.pos_l, self.labeled_rows[self.pos_l]
        b.loss_l, dl = labeled_hinge(self.values(i, b.rows_l, b.pos_l, self.F_l),
                                     self.Y[b.pos_l])
        b.coef_l = np.ascontiguousarray((p.C / self.B) * dl)
        b.loss_u = None
        if self.use_u:
            b.pos_u, b.rows_u = self.pos_u, self.unlabeled_rows[self.pos_u]
            b.loss_u, du = unlabeled_loss(p.loss, self.values(i, b.rows_u, b.pos_u, self.F_u),
                                          p.ramp_s)
            b.coef_u = np.ascontiguousarray((self._c_star(i) / self.B) * du)
        if self.use_m:
            # fourth source of randomness: a batch of kNN-graph edges (beyond the paper)
            _s3vm.sample_edges(self.seed, i, self.neighbors, self.e_src, self.e_dst)
            b.loss_m, b.coef_m = manifold_edge_terms(
                self.node_values(i, self.e_src), self.node_values(i, self.e_dst),
                p.manifold_weight)
        return b

    def _c_star(self, i):
        """C* at iteration i: ramped linearly from 0 over the warm-up."""
        p = self.params
        return p.C_star * min(1.0, (i + 1) / (p.warmup * self.n_iter)) if p.warmup > 0 \
            else p.C_star

    def _feature_block(self, i):
        """Step 4: omega_i and b_i from (seed, i), into the cache or a work buffer."""
        om, off = (self.omega[i], self.offset[i]) if self.omega is not None else self._work
        _s3vm.random_block(self.seed, i, self.scale, om, off, self.cols)
        return om, off

    def _pool_features(self, rows, om, off):
        phi = np.empty((rows.shape[0], self.m))
        _s3vm.block_features(self.dataset, rows, om, off, phi)
        return phi

    def gradient(self, i, b):
        """Step 7 before the step: sum_b coef_b phi_i(x_b) over the terms (projected on the
        balance constraint)."""
        om, off = self._feature_block(i)
        blk = _Block()
        blk.grad = grad = np.zeros((self.K, self.m))
        blk.phi_l = blk.phi_u = blk.phi_p = blk.mu = None
        if self.F_l is not None:
            # the features of every labeled row are needed for the cached f anyway: the batch
            # gradient is sum_b coef_b phi(x_b) = (coefficients summed per row)^T phi_pool
            blk.phi_l = self._pool_features(self.labeled_rows, om, off)
            grad += _pool_sum(b.pos_l, b.coef_l, self.n_l).T @ blk.phi_l
        else:
            _s3vm.block_gradient(self.dataset, b.rows_l, b.coef_l, om, off, grad)
        if self.F_u is not None:
            blk.phi_u = self._pool_features(self.unlabeled_rows, om, off)
            if self.use_u:
                grad += _pool_sum(b.pos_u, b.coef_u, self.n_u).T @ blk.phi_u
        elif self.use_u:
            _s3vm.block_gradient(self.dataset, b.rows_u, b.coef_u, om, off, grad)
        if self.use_m:
            self._add_node_gradient(self.e_src, b.coef_m, om, off, blk)
            self._add_node_gradient(self.e_dst, -b.coef_m, om, off, blk)
        if self.use_probe:
            blk.phi_p = (blk.phi_u[:self.n_probe] if self.probe_prefix and blk.phi_u is not None
                         else self._pool_features(self.probe_rows, om, off))
        if self.balance:
            # projected gradient: features centred on the probe set, so the new block leaves
            # mean_probe f unchanged and the intercept stays at mean_l y
            blk.mu = blk.phi_p.mean(axis=0)
            total = b.coef_l.sum(axis=0)
            if self.use_u:
                total = total + b.coef_u.sum(axis=0)
            grad -= total[:, None] * blk.mu[None, :]     # (the edge coefficients sum to 0)
        return blk

    def _add_node_gradient(self, nodes, coef, om, off, blk):
        """grad += sum_b coef[b] phi(x_{nodes[b]}) for graph nodes."""
        lab = nodes < self.n_l
        for sel, rows, phi, n_pool, shift in (
                (lab, self.labeled_rows, blk.phi_l, self.n_l, 0),
                (~lab, self.unlabeled_rows, blk.phi_u, self.n_u, self.n_l)):
            if not sel.any():
                continue
            pos = nodes[sel] - shift
            c = np.ascontiguousarray(coef[sel])
            if phi is not None:
                blk.grad += _pool_sum(pos, c, n_pool).T @ phi
            else:
                _s3vm.block_gradient(self.dataset, np.ascontiguousarray(rows[pos]), c, om, off,
                                     blk.grad)

    def add_block(self, i, blk):
        """Steps 7-8: shrink the old blocks, add block i, update the intercept and cached f."""
        g = self.steps[i]
        alpha = self.alpha
        alpha[:i] *= 1.0 - g
        alpha[i] = -g * blk.grad
        if self.balance:
            self.c_raw = (1.0 - g) * self.c_raw + alpha[i] @ blk.mu
            self.intercept = self.target - self.c_raw
        for F, phi in ((self.F_l, blk.phi_l), (self.F_u, blk.phi_u)):
            if F is not None:
                F *= 1.0 - g
                F += phi @ alpha[i].T
        if self.use_probe and not (self.F_u is not None and self.probe_prefix):
            self.F_p *= 1.0 - g
            self.F_p += blk.phi_p @ alpha[i].T
        self.n_done = i + 1

    def record(self, i, b, stop, monitor):
        """Test the probe labels and record iteration i; True when the callback stops.

        ``objective`` is the batch estimate of the data terms only (C mean labeled hinge +
        C* mean u on the batches, at f before block i; no 1/2 ||f||^2, no Laplacian term)."""
        p = self.params
        if self.use_probe:
            values = self.F_p + self.intercept
            stop.update(values > 0 if self.K == 1 else np.argmax(values, axis=1), i + 1)
        loss_l = p.C * b.loss_l.mean()
        loss_u = p.C_star * b.loss_u.mean() if self.use_u else 0.0
        record = dict(iteration=i + 1, objective=float(loss_l + loss_u),
                      labeled_loss=float(loss_l),
                      unlabeled_loss=float(loss_u), step_size=float(self.steps[i]),
                      probe_change=stop.change)
        if self.use_m:
            record["manifold_loss"] = float(b.loss_m)
        return monitor.record(**record)

    # -- end of the run ------------------------------------------------------------------
    def objective(self):
        """Training objective estimate of the final model: 1/2 sum_i ||alpha_i||^2 (the norm
        of f in the space of its random features) + C mean labeled hinge on all labeled rows
        + C* mean u on the probe set + the Laplacian term on the whole graph (heads summed).

        Returns the objective and f on the labeled rows."""
        p, n, intercept = self.params, self.n_done, self.intercept
        if self.F_l is not None:
            f_l = self.F_l + intercept
        else:
            f_l = self.values(n, self.labeled_rows, None, None)
        objective = 0.5 * float(np.sum(self.alpha[:n] ** 2)) + p.C * float(
            np.mean(np.sum(labeled_hinge(f_l, self.Y)[0], axis=1)))
        if self.use_u and self.use_probe:
            objective += p.C_star * float(np.mean(np.sum(
                unlabeled_loss(p.loss, self.F_p + intercept, p.ramp_s)[0], axis=1)))
        if self.use_m:
            k = self.neighbors.shape[1]
            src = np.repeat(np.arange(self.neighbors.shape[0], dtype=np.int64), k)
            if self.F_l is not None and self.F_u is not None and not p.average:
                f_nodes = np.concatenate([self.F_l, self.F_u]) + intercept
            else:
                f_nodes = np.concatenate([f_l, self.values(n, self.unlabeled_rows, None, None)])
            objective += manifold_edge_terms(f_nodes[src], f_nodes[self.neighbors.ravel()],
                                             p.manifold_weight)[0]
        return objective, f_l

    def result(self, seed, stop):
        n = self.n_done
        objective, f_l = self.objective()
        cached = self.omega is not None
        return SolverResult(
            x=self.alpha[:n].copy(), n_iter=n, converged=stop.converged,
            criterion=stop.change, criterion_name=CRITERION, intercept=self.intercept.copy(),
            extra={"seed": seed, "objective": objective, "step_sizes": self.steps[:n].copy(),
                   "random_weights": self.omega[:n].copy() if cached else None,
                   "random_offset": self.offset[:n].copy() if cached else None,
                   "f_labeled": f_l, "Y_labeled": self.Y})


class _IterateAverage:
    """Polynomial-decay average (eta = AVERAGE_ETA) of the iterates of a run, with f on the
    labeled rows and the probe set (f is linear in alpha and the intercept)."""

    def __init__(self, run):
        self.alpha = np.zeros_like(run.alpha)
        self.intercept = run.intercept.copy()
        self.F_l = None if run.F_l is None else np.zeros_like(run.F_l)
        self.F_p = np.zeros_like(run.F_p) if run.use_probe else None

    def update(self, run):
        n = run.n_done
        w = min(1.0, (AVERAGE_ETA + 1.0) / (n + AVERAGE_ETA))
        self.alpha[:n] *= 1.0 - w
        self.alpha[:n] += w * run.alpha[:n]
        self.intercept = (1.0 - w) * self.intercept + w * run.intercept
        for avg, last in ((self.F_l, run.F_l), (self.F_p, run.F_p if run.use_probe else None)):
            if avg is not None:
                avg *= 1.0 - w
                avg += w * last

    def replace(self, run):
        """The averaged model replaces the run's last iterate."""
        run.alpha[:run.n_done] = self.alpha[:run.n_done]
        run.intercept = self.intercept
        run.F_l = self.F_l
        run.F_p = self.F_p


def _pool_sum(pos, coef, n):
    """(n, K): coef[b] summed over the batch entries b drawn at each pool position."""
    out = np.empty((n, coef.shape[1]))
    for h in range(coef.shape[1]):
        out[:, h] = np.bincount(pos, weights=coef[:, h], minlength=n)
    return out


# ------------------------------------------------------------------------------ prediction
def decision_values(X, alpha, intercept, *, seed, kernel_gamma, omega=None, offset=None,
                    rows=None):
    """f(x) of each head (Algorithm 2): ``sum_i alpha_i^T phi_i(x) + intercept``.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    alpha : float64 array of shape (T, n_heads, m)
    intercept : float64 array of shape (n_heads,)
    seed, kernel_gamma
        The features of block i are regenerated from ``(seed, i)`` ...
    omega, offset : arrays of shape (T, m, n_features) and (T, m), optional
        ... unless cached.
    rows : int64 array, optional
        Rows of X to evaluate (all by default).

    Returns
    -------
    ndarray of shape (n_rows, n_heads)
    """
    cols = None
    if omega is None and sp.issparse(X):
        X, cols = compress_columns(X)
    dataset = make_dataset(X, float32=True)   # a float32 X is read in place
    if rows is None:
        rows = np.arange(dataset.n_samples, dtype=np.int64)
    cache = () if omega is None else (omega, offset)
    blocks = _s3vm.FeatureBlocks(seed, np.sqrt(2.0 * kernel_gamma), alpha.shape[2],
                                 dataset.n_features, *cache, cols=cols)
    out = np.zeros((rows.shape[0], alpha.shape[1]))
    _s3vm.decision(blocks, dataset, rows, alpha, alpha.shape[0], out)
    out += intercept
    return out


def compress_columns(X):
    """Sparse X restricted to the columns that hold an entry, and those columns.

    Returns a CSR matrix of shape (n_samples, n_cols) whose column j is column ``cols[j]``
    of X (entries in the same order, so every dot product with a block is bitwise the
    uncompressed one), and ``cols`` (int64, increasing; ``[0]`` when X has no entry). The
    features then cost O(m n_cols) to generate per block, not O(m n_features).
    """
    X = X.tocsr()
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    cols = np.unique(X.indices).astype(np.int64)
    if cols.shape[0] and (cols[0] < 0 or cols[-1] >= X.shape[1]):
        raise ValueError(f"X has column indices outside [0, {X.shape[1]})")
    if cols.shape[0] == 0:
        cols = np.zeros(1, dtype=np.int64)
    indices = np.searchsorted(cols, X.indices).astype(np.int32)
    Xc = sp.csr_matrix((X.data, indices, X.indptr), shape=(X.shape[0], cols.shape[0]))
    return Xc, cols


def random_block(seed, i, kernel_gamma, n_components, n_features):
    """The random features of block ``i``: omega of shape (n_components, n_features) and the
    offsets of shape (n_components,), regenerated from ``(seed, i)``."""
    omega = np.empty((n_components, n_features))
    offset = np.empty(n_components)
    _s3vm.random_block(seed, i, np.sqrt(2.0 * kernel_gamma), omega, offset)
    return omega, offset
