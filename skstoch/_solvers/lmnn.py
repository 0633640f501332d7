"""Driver of LMNNMetric (paper 001, section 4).

``solve`` learns the Mahalanobis matrix A >= epsilon I of Eq. (21) with Epro-SGD or
Epro-ORDA (the shared :func:`~skstoch._solvers.epoch_projection` loop around the compiled
epochs of ``skstoch._fast._lmnn``) or with one of the paper's baselines ('sgd': projection
every iteration, 'oneproj': one projection at the end), averaged SGD recorded at doubling
checkpoints.  Between epochs the 'knn' recipe re-searches the impostors in the current
metric (:mod:`skstoch._solvers._lmnn_triplets`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .._fast import _lmnn
from ..utils import single_thread_blas
from ._averaged_sgd import averaged_sgd, checkpoint_lengths
from ._epoch_projection import epoch_projection
from ._lmnn_span import (canonical_signs, data_span, floor_unspanned, lift,
                         unspanned_directions)
from ._lmnn_triplets import (AUTO_C_DEFAULT, INDEX, TripletSource, auto_c, auto_step,
                             check_triplets, factor, loo_knn_accuracy, map_rows,
                             pair_scatter)
from ._monitor import FitMonitor
from ._projections import project_psd

__all__ = ["LMNNParams", "LMNNProblem", "solve"]

EPRO_SOLVERS = ("epro_sgd", "epro_orda")
# Lanczos steps of the per-iteration lambda_min check (each costs one d x d mat-vec).
_LANCZOS_STEPS = 4
# Triplets on which the objective (history_, objective_) is estimated when there are more.
_OBJECTIVE_SAMPLE = 16384
# The baselines' step eta0 / (1 + t / _BASELINE_DECAY) (the decay of Epro's halving
# schedule, so the solvers can share eta0) and their records at Epro's epoch ends.
_BASELINE_DECAY = 8.0
_BASELINE_FIRST_CHECKPOINT = 8
# float32 X (read without a float64 copy): when the rows one objective evaluation maps
# (X R, float64) would take more than _LEAN_BYTES and the table's row references are
# spread over at least _LEAN_SPREAD times as many rows (so few rows repeat between blocks),
# the hinge is summed over blocks that map at most _LEAN_ROWS rows each (the same terms
# added in the same order).  Measured (CPU time, 16,384 sampled triplets, d = 100): the
# blocks cost what the one-shot map costs at n = 100,000, 1.26x at 50,000, 3.5x at 12,000.
_LEAN_BYTES = 8 << 20
_LEAN_SPREAD = 2
_LEAN_ROWS = 2048


@dataclass(frozen=True)
class LMNNParams:
    """The resolved parameters of one fit (see :class:`skstoch.LMNNMetric` for each).

    ``triplet_strategy`` is 'knn' or 'random', ``n_impostors`` an int, ``max_iter`` the
    budget T in stochastic gradient calls, ``c`` and ``eta0`` None for their automatic
    values and
    ``seed`` the counter-based generator's seed.
    """

    solver: str
    triplet_strategy: str
    n_neighbors: int
    n_impostors: int
    search_size: int | None
    c: float | None
    mu1: float
    mu2: float
    epsilon: float
    prior: str
    eta0: float | None
    lam: float
    batch_size: int
    max_iter: int
    first_epoch_length: int | None
    use_full_budget: bool
    orda_gradient_point: str
    tol: float
    n_components: int
    seed: int


@dataclass(frozen=True)
class LMNNProblem:
    """Validated training data: ``X`` (n, d) float64 or float32 (read without a float64
    copy unless n_features >= n_samples), C-contiguous and finite, ``y`` class
    codes 0 .. n_classes - 1 with enough members per class for the recipe."""

    X: np.ndarray
    y: np.ndarray


def solve(problem, params, monitor, state=None):
    """Learn the Mahalanobis matrix.

    Parameters
    ----------
    problem : LMNNProblem
    params : LMNNParams
    monitor : FitMonitor
        One record per epoch (checkpoint for the baselines): ``objective`` (Eq. 21 at the
        projected point on the current table, see :class:`_Objective`), ``iteration``
        (stochastic gradient calls so far), ``step_size``, ``relative_change``, ...
    state : None
        LMNNMetric keeps no warm-start state (accepted for the common driver signature).

    Returns
    -------
    SolverResult
        ``x`` the metric (projected onto ``A >= epsilon I``), ``n_iter`` the stochastic
        gradient calls used; ``extra``: ``components`` (the top ``n_components`` rows of
        the factor), ``prior``, ``triplets`` (the last table), ``objective``, ``eta0``, ``c``,
        ``n_projections``, ``n_epochs``.
    """
    if state is not None:
        raise ValueError("LMNN's solvers keep no warm-start state; pass state=None.")
    # one BLAS thread for the whole fit: the eigendecompositions and products then give
    # the same bits whatever the caller's BLAS thread count (with several threads the
    # basis of the eigenspace clipped at epsilon moved components_ by up to 2.4%), and
    # the per-epoch d x d work is too small to gain from threads
    with single_thread_blas():
        return _solve(problem, params, monitor)


def _solve(problem, params, monitor):
    n, d = problem.X.shape
    if d >= n:
        # wide data: the differences span at most n - 1 directions (see _lmnn_span);
        # a float32 X is converted here (the SVD runs in float64)
        X = np.asarray(problem.X, dtype=np.float64)
        basis = data_span(X)
        r = basis.shape[1]
        reduced = replace(params, n_components=min(params.n_components, r))
        result = _solve_dense(LMNNProblem(np.ascontiguousarray(X @ basis),
                                          problem.y), reduced, monitor)
        return lift(result, basis, params, d)
    return _solve_dense(problem, params, monitor)


def _solve_dense(problem, params, monitor, setup=None):
    """The fit with a dense d x d matrix (O(d^3) per epoch); ``setup``: the triplet source,
    prior, initial table, directions the data do not span and generator state that
    :func:`_select_c` shares between its candidate fits (each would build the same ones
    from the same seed)."""
    X = problem.X
    d = X.shape[1]
    rng = np.random.default_rng(params.seed)
    if setup is None:
        source = TripletSource(X, problem.y, params, rng)
        if params.prior == "pairs":
            prior = pair_scatter(X, source.pairs)
        else:
            prior = np.eye(d) if params.prior == "identity" else None
        table = check_triplets(source.table(np.eye(d), _first_length(params)), X.shape[0])
        unspanned = unspanned_directions(X)
    else:
        source, prior, table, unspanned, state = setup
        rng.bit_generator.state = state     # as it was after building them
        source.rng = rng
    if params.c is None:
        c = auto_c(X, table, prior, source.refreshes)
        if c > AUTO_C_DEFAULT:
            return _select_c(problem, params, monitor, (AUTO_C_DEFAULT, c),
                             (source, prior, table, unspanned, rng.bit_generator.state))
        params = replace(params, c=c)
    eta0 = params.eta0
    if eta0 is None:
        eta0 = auto_step(X, table, params.c, rng, source.layout)
    run = _Run(X, prior, source, table, params)
    A0 = max(1.0, params.epsilon) * np.eye(d)
    if params.solver in EPRO_SOLVERS:
        result = _solve_epro(run, A0, eta0, monitor)
    else:
        result = _solve_baseline(run, A0, eta0, monitor)
    # no term of Eq. (21) but the regularizers moves the directions the data do not span:
    # give them the floor (see _lmnn_span), not the starting identity
    result.x, components = _final_metric(floor_unspanned(result.x, unspanned, params.epsilon),
                                         params.epsilon, params.n_components)
    result.extra.update(components=components, triplets=run.triplets, eta0=eta0, c=params.c,
                        prior=prior if prior is not None else np.zeros((d, d)),
                        objective=run.objective(result.x))
    return result


def _select_c(problem, params, monitor, candidates, setup):
    """c='auto' when the balance rule (:func:`auto_c`) asks for more push than 0.5: fit
    each candidate and keep the one whose metric has the higher leave-one-out 3-NN accuracy
    on a fixed sample of the training rows (ties keep the first, the paper's 0.5); the
    chosen fit's records become the monitor's.  ``setup`` (see :func:`_solve_dense`) is
    shared, so the candidates hold one triplet table between them."""
    best = None
    for c in candidates:
        # verbose lines say which candidate they belong to (each fit restarts at epoch 0)
        scratch = FitMonitor(monitor.solver_name, verbose=monitor.verbose,
                             callback=monitor.callback, label=f"c={c:.4g} candidate")
        result = _solve_dense(problem, replace(params, c=c), scratch, setup)
        score = loo_knn_accuracy(problem.X, problem.y, result.x)
        if monitor.verbose:
            print(f"[{monitor.solver_name}] c={c:.4g}: leave-one-out 3-NN accuracy "
                  f"{score:.4f} on the training sample\n", end="")
        if best is None or score > best[0]:
            best = (score, result, scratch)
    _, result, scratch = best
    if monitor.verbose:
        print(f"[{monitor.solver_name}] c='auto' keeps c={result.extra['c']:.4g}\n", end="")
    monitor.records = scratch.records
    monitor.stopped_by_callback = scratch.stopped_by_callback
    return result


def first_epoch_budget(solver, first_epoch_length):
    """Stochastic gradients an Epro solver's first epoch takes (T1: the paper's 8 for
    'epro_sgd', 16 for 'epro_orda', by default), plus ORDA's extra gradient per epoch: the
    least ``max_iter`` that runs an epoch."""
    orda = solver == "epro_orda"
    return (first_epoch_length or (16 if orda else 8)) + (1 if orda else 0)


def _first_length(params):
    """Stochastic gradients of the first epoch (checkpoint), for which the initial table
    is searched."""
    if params.solver in EPRO_SOLVERS:
        return params.first_epoch_length or (16 if params.solver == "epro_orda" else 8)
    return _checkpoints(params.max_iter)[0]


def _checkpoints(budget):
    """Chunk lengths of the baselines: Epro's epochs 8, 16, 32, ..., the last one taking
    the rest of the budget."""
    return checkpoint_lengths(budget, _BASELINE_FIRST_CHECKPOINT, merge_leftover=True)


def _solve_epro(run, A0, eta0, monitor):
    """Algorithm 1 (prox step, Eq. 18) or Algorithm 3 (ORDA epochs) through the shared
    epoch-projection loop; the 'knn' table is refreshed before an epoch."""
    p = run.params
    orda = p.solver == "epro_orda"

    def run_epoch(A_start, eta, n_steps, epoch):
        if epoch > 0:
            run.refresh(A_start, n_steps)
        return run.orda_epoch(A_start, eta, n_steps) if orda else \
            run.sgd_epoch(A_start, eta, n_steps)

    result = epoch_projection(
        A0, run_epoch, lambda A: project_psd(A, p.epsilon)[0], budget=p.max_iter,
        first_epoch_length=_first_length(p), eta0=eta0,
        step_decay=np.sqrt(2.0) if orda else 2.0, monitor=monitor, objective=run.objective,
        tol=p.tol, use_full_budget=p.use_full_budget, extra_per_epoch=1 if orda else 0,
        record_iteration=True)
    result.criterion_name = "relative change of A"
    return result


def _solve_baseline(run, A0, eta0, monitor):
    """'sgd' (projection every iteration) and 'oneproj' (smoothed penalty, one final
    projection): all ``max_iter`` iterations at step eta0 / (1 + t / 8) on the shared
    averaged-SGD loop, output the average of the iterates; recorded at the Epro epoch
    boundaries 8, 24, 56, ... (the last checkpoint takes the rest of the budget)."""
    p = run.params
    sgd = p.solver == "sgd"
    T = p.max_iter
    gamma = np.log(T + 1.0) / T     # OneProj's smoothing, ln T / T
    A = np.array(A0, dtype=np.float64, order="C", copy=True)
    total = np.zeros_like(A)

    def run_chunk(t0, n_steps, point):
        if point is not None:
            run.refresh(point, n_steps)
        chunk_mean = run.baseline_chunk(A, 1 if sgd else 2, eta0, t0, n_steps, gamma)
        total[...] += n_steps * chunk_mean
        return A, total / (t0 + n_steps)

    result = averaged_sgd(
        A, run_chunk, _checkpoints(T),
        # 'oneproj' records the projected running average (monitoring only, not counted)
        output=(lambda avg: avg) if sgd else (lambda avg: project_psd(avg, p.epsilon)[0]),
        step_size=lambda t: eta0 / (1.0 + t / _BASELINE_DECAY), monitor=monitor,
        objective=run.objective, tol=p.tol)
    result.x = result.extra["average"]     # projected once, by _final_metric
    result.criterion_name = "relative change of the average"
    result.extra.update(n_projections=result.n_iter if sgd else 1,
                        n_epochs=result.extra["n_checkpoints"])
    return result


def _final_metric(A, eps, n_components):
    """The projection of A onto {A >= eps I} and the top ``n_components`` rows of its factor
    (largest eigenvalues first), from one eigendecomposition; each row's sign is fixed so
    that its entry of largest magnitude is positive (as scikit-learn's ``svd_flip``)."""
    eigvals, eigvecs = np.linalg.eigh(0.5 * (A + A.T))
    eigvals = np.maximum(eigvals, eps)
    metric = (eigvecs * eigvals) @ eigvecs.T
    top = eigvals[::-1]
    vecs = eigvecs[:, ::-1][:, :n_components]
    components = np.sqrt(top[:n_components])[:, None] * canonical_signs(vecs.T)
    return 0.5 * (metric + metric.T), components


class _Run:
    """What the loops of one fit share: the kernel tables, the current triplet table and
    its refresh rule, the kernels' state (eigenvector estimate, RNG counters) and the
    objective."""

    def __init__(self, X, prior, source, table, params):
        # table: the initial triplets, checked by check_triplets
        self.params = params
        self.source = source
        self.n_samples, d = X.shape
        self.triplets = table
        prior = None if prior is None else np.ascontiguousarray(prior)
        self.tables = _lmnn.Tables(X, self.triplets, prior, params.c, params.mu1,
                                   params.mu2, params.lam, params.epsilon, params.batch_size,
                                   _LANCZOS_STEPS, params.seed)
        self.u = np.zeros(d)
        self.counters = np.zeros(2, dtype=np.uint64)
        self.since_refresh = 0
        self._objective = _Objective(X, prior, params, source.layout)

    def objective(self, A):
        """Eq. (21) at A on the current table (see :class:`_Objective`)."""
        return self._objective(A, self.triplets)

    def refresh(self, A, n_steps):
        """Re-search the 'knn' table at A once the stochastic gradients since the last
        search have drawn about one triplet per anchor (after the very short first epochs
        the metric has barely moved and a search would return the same table at O(n^2 d)
        cost)."""
        if (self.source.refreshes
                and self.since_refresh * self.params.batch_size >= self.source.n_anchors):
            self.since_refresh = 0
            table = self.source.table(A, n_steps, self._objective.mapped_at(A))
            self.triplets = check_triplets(table, self.n_samples)
            self.tables.set_triplets(self.triplets)

    def sgd_epoch(self, A_start, eta, n_steps):
        """One Epro-SGD epoch from A_start: the average of its iterates."""
        A = np.array(A_start, dtype=np.float64, order="C", copy=True)
        return self.baseline_chunk(A, 0, eta, 0, n_steps)

    def baseline_chunk(self, A, mode, eta, t0, n_steps, gamma=1.0):
        """``n_steps`` kernel steps on A in place (mode 0 Epro, 1 'sgd', 2 'oneproj');
        returns the mean of the iterates."""
        avg = np.empty_like(A)
        self.since_refresh += n_steps
        _lmnn.run_sgd(self.tables, A, avg, self.u, self.counters, mode, eta, t0, n_steps,
                      gamma, _BASELINE_DECAY)
        return avg

    def orda_epoch(self, A_start, eta, n_steps):
        """One Epro-ORDA epoch from A_start (n_steps + 1 gradient calls): its last iterate."""
        out = np.empty_like(A_start)
        self.since_refresh += n_steps
        _lmnn.run_orda(self.tables, np.ascontiguousarray(A_start), out, self.u,
                       self.counters, eta, n_steps, self.params.orda_gradient_point == "u")
        return out


def _grouped_anchors(P, anchors, targets, impostors, total, n_active):
    """grouped_hinge with the anchors of :meth:`_Objective._blocked_hinge` (one column)."""
    return _lmnn.grouped_hinge(P, np.ascontiguousarray(anchors[:, 0]), targets, impostors,
                               total, n_active)


class _Objective:
    """Eq. (21) at a feasible (positive definite) A on a triplet table; only the rows the
    table uses are mapped (O(n_rows d^2)).

    Exact on the whole table for the 'knn' recipe (``layout`` given: each distance computed
    once); for other tables larger than ``_OBJECTIVE_SAMPLE`` triplets, the documented
    estimate: the hinge mean on a fixed random sample of that many triplets (the same
    sample while the table is unchanged, so the history curve is comparable).
    """

    def __init__(self, X, prior, params, layout):
        self.X = X
        self.prior = prior
        self.c, self.mu1, self.mu2 = params.c, params.mu1, params.mu2
        self.seed = params.seed
        self.layout = layout
        self._sample = (None, None)     # (table, sampled rows)
        self._mapped = (None, None)     # (A, X R) of the last call that mapped every row
        self._blocks = (None, None)     # (table, its blocks) of _blocked_hinge

    def mapped_at(self, A):
        """``X R`` (A = R R') if the last evaluation mapped every row at this very A."""
        return self._mapped[1] if self._mapped[0] is A else None

    def __call__(self, A, trip):
        R = factor(A)
        k_q = self.layout
        table = trip
        if k_q is not None and len(trip) % (k_q[0] * k_q[1]) == 0:
            hinge = self._grouped_hinge(A, R, trip.reshape(-1, k_q[0], k_q[1], 3), table)
            return self._value(A, hinge, len(trip))
        n_triplets = len(trip)
        if len(trip) > _OBJECTIVE_SAMPLE:
            if self._sample[0] is not trip:
                rng = np.random.default_rng([self.seed, len(trip)])
                self._sample = (trip, rng.choice(len(trip), _OBJECTIVE_SAMPLE, replace=False))
            trip = trip[self._sample[1]]
            n_triplets = len(trip)
        if self._lean(3 * len(trip)):
            hinge = self._blocked_hinge(R, [trip], _LEAN_ROWS // 3, _lmnn.triplet_hinge,
                                        table)
        elif 3 * len(trip) >= self.X.shape[0]:
            # the table touches about every row: map all rows (no np.unique sort)
            hinge, _ = _lmnn.triplet_hinge(np.ascontiguousarray(map_rows(self.X, R)), trip)
        else:
            rows, local = np.unique(trip, return_inverse=True)
            local = np.ascontiguousarray(local.reshape(trip.shape), dtype=INDEX)
            hinge, _ = _lmnn.triplet_hinge(np.ascontiguousarray(map_rows(self.X, R, rows)),
                                           local)
        return self._value(A, hinge, n_triplets)

    def _grouped_hinge(self, A, R, grid, table):
        """Hinge sum of a 'knn' table (anchors x k targets x q impostors), each distance
        once."""
        groups = (grid[:, 0, 0, 0], grid[:, :, 0, 1], grid[:, 0, :, 2])
        if 2 * len(groups[0]) >= self.X.shape[0]:
            # (about) every point is an anchor: map all rows (no np.unique sort)
            P = map_rows(self.X, R)
            self._mapped = (A, P)
        elif self._lean(sum(g.size for g in groups)):
            groups = [g.reshape(len(g), -1) for g in groups]
            step = max(1, _LEAN_ROWS // sum(g.shape[1] for g in groups))
            return self._blocked_hinge(R, groups, step, _grouped_anchors, table)
        else:
            rows, local = np.unique(np.concatenate([g.ravel() for g in groups]),
                                    return_inverse=True)
            sizes = np.cumsum([g.size for g in groups])[:-1]
            groups = [part.reshape(g.shape) for part, g in
                      zip(np.split(local.astype(INDEX), sizes), groups)]
            P = map_rows(self.X, R, rows)
        groups = [np.ascontiguousarray(g, dtype=INDEX) for g in groups]
        hinge, _ = _lmnn.grouped_hinge(np.ascontiguousarray(P), *groups)
        return hinge

    def _lean(self, n_refs):
        """Whether to map a float32 X's rows block by block for a table that references
        ``n_refs`` rows (see _LEAN_BYTES)."""
        n, d = self.X.shape
        return (self.X.dtype == np.float32 and n >= _LEAN_SPREAD * n_refs
                and n_refs * d * 8 > _LEAN_BYTES)

    def _blocked_hinge(self, R, groups, step, kernel, table):
        """``kernel`` (hinge sum and active count, continued from block to block) on
        ``step`` rows of the index arrays ``groups`` at a time, each block mapping only the
        rows it uses: memory O(_LEAN_ROWS d) instead of O(n_rows d).  The blocks' rows and
        local indices are kept while ``table`` is unchanged."""
        if self._blocks[0] is not table:
            blocks = []
            for start in range(0, len(groups[0]), step):
                block = [g[start:start + step] for g in groups]
                rows, local = np.unique(np.concatenate([b.ravel() for b in block]),
                                        return_inverse=True)
                local = np.split(local.astype(INDEX), np.cumsum([b.size for b in block])[:-1])
                blocks.append((rows, [part.reshape(b.shape) for part, b in zip(local, block)]))
            self._blocks = (table, blocks)
        total, n_active = 0.0, 0
        for rows, local in self._blocks[1]:
            total, n_active = kernel(np.ascontiguousarray(map_rows(self.X, R, rows)), *local,
                                     total, n_active)
        return total

    def _value(self, A, hinge, n_triplets):
        value = self.c * hinge / n_triplets
        if self.prior is not None:
            value += (1.0 - self.c) * float(np.sum(A * self.prior))
        value += 0.5 * self.mu1 * float(np.sum(A * A))
        value += self.mu2 * float(np.sum(np.abs(A)) - np.sum(np.abs(np.diag(A))))
        return value
