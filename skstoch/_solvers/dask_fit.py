"""Drivers of the Dask fits of CGVR and S3GD (one binary or single-output head on a
``dask.array.Array``; the passes and samples: :mod:`._dask_passes`).

* :func:`solve_cgvr` runs the drivers of :mod:`.cgvr` (``'cgvr'``, ``'cgvr_paper'``,
  ``'svrg'``, ``'minibatch_svrg'``, ``'cg'``) with a :class:`_DaskCGVRRun`: its full
  gradient is a distributed pass and each inner loop runs the compiled kernel on a
  gathered sample of ``inner_iter * batch`` rows (at most the gather cap
  ``DaskData.max_rows``: a quarter of the rows and the byte budget; the safeguard's batch
  doubling stops there and then halves the step cap, as the in-memory fit does at the
  full batch).  ``'cg'`` gathers no sample: its strong-Wolfe line search
  (:func:`_dask_line_search`) costs one pass that keeps the margins on the workers, then
  one round trip per trial step.
* :func:`solve_s3gd` is Prox-SVRG: per epoch one distributed pass (the snapshot gradient
  and the exact objective there) and ``n_inner`` fixed-step steps drawn from a gathered
  sample (at most the gather cap; with an l1 part, the proximal steps of the in-memory
  kernel ``run_epoch`` given that snapshot); by default one pass's worth (as in
  memory), at most ``SAMPLE_SWEEPS`` sweeps of the sample (the client's work per epoch
  stays bounded when the byte budget makes the sample a small part of X).

After a ``tol`` stop, a CGVR fit measures the gradient ratio of the in-memory fit
(``cgvr.warn_if_far_after_tol``) from what it already holds: the gradient the stop tested,
the one at zero (the first pass's in a fit from zero, else one more pass) and the columns'
moments of the last sample gathered with a pass (without one: one pass over the chunks,
:meth:`._dask_passes.DaskData.column_moments`).

``history_['passes']`` counts the distributed full passes over X; ``gathers`` and
``gathered_rows`` the sample gathers and the rows they brought to the client.
"""
from types import SimpleNamespace

import numpy as np

from .._fast import _cgvr
from .._fast._loss import LogLoss, SmoothHinge, SquaredError, SquaredHinge
from .._fast._s3gd import EpochProblem, SnapshotTables, run_epoch
from ..utils import make_dataset
from . import cgvr
from ._dask_passes import DaskData, penalty, sample_indices, sample_tables
from ._line_search import strong_wolfe
from ._monitor import check_finite_iterate
from ._result import SolverResult
from ._stationarity import column_moments, gradient_ratio, warn_if_far
from ._step_size import expected_batch_smoothness, gram_spectrum
from ._stopping import Plateau, check_divergence

CGVR_SOLVERS = ("cgvr", "svrg", "minibatch_svrg")
_S3GD_CRITERION = "relative objective improvement of the last epoch"
_SVRG_STEP_FACTOR = 4.0    # Prox-SVRG's 1 / (4 L_b), as the in-memory driver
# S3GD's epoch reads its gathered sample at most this many times (n_inner='auto')
SAMPLE_SWEEPS = 32
# the proximal epochs' batches: streams _PROX_STREAM + (epoch << 16) + head (apart from the
# heads' kernel streams and the gather streams _dask_passes._GATHER_STREAM + 2 head)
_PROX_STREAM = 2**41


def cgvr_loss_spec(name):
    """``(loss class, args)``: what the workers build the loss from (picklable)."""
    return cgvr.LOSSES[name], ()


def s3gd_loss_spec(params):
    if params.loss == "log_loss":
        return LogLoss, ()
    if params.loss == "squared_hinge":
        return SquaredHinge, (1.0,)
    if params.loss == "smooth_hinge":
        return SmoothHinge, (float(params.smoothing),)
    return SquaredError, ()


def make_data(X, y, sample_weight, loss_spec):
    return DaskData(X, y, sample_weight, loss_spec)


class SampleStream:
    """The gathered samples of a Dask run's inner loops (a mixin of the binary and the
    multinomial :class:`_DaskCGVRRun`): ``min(n_rows, sample_cap)`` indices at a time,
    drawn by the counter-based generator from stream ``self.stream`` of ``self.seed``
    (``self.draws`` indices drawn so far), and what the check after a tol stop reads.
    Needs ``params``, ``n`` and ``batch``; :meth:`_init_stream` sets the rest."""

    def _init_stream(self, data, seed, stream):
        """The stream's state at the start of a fit (nothing drawn, nothing remembered)."""
        self.data, self.seed, self.stream, self.draws = data, seed, stream, 0
        self.at_zero = self.tested = self.moment_rows = None     # see _remember

    @property
    def sample_cap(self):
        """The most rows one gather brings (known after the first pass)."""
        return self.data.max_rows(self.params.batch_size)

    @property
    def row_bound(self):
        """``max_i s_i (||x_i||^2 + 1)`` (known after the first pass)."""
        return self.data.row_bound()

    def _sample_rows(self, n_rows):
        """The next ``min(n_rows, sample_cap)`` sample indices of this run's stream."""
        size = min(n_rows, self.sample_cap)
        rows = sample_indices(self.seed, self.stream, self.draws, size, self.n)
        self.draws += size
        return rows

    def _rows_per_inner_loop(self):
        batch = 1 if self.params.solver == "svrg" else self.batch
        return self.params.inner_iter * batch

    def _inner_sample(self, sample, x0, n_rows):
        """``sample`` (prefetched with the last pass) if it has the rows of an inner loop of
        ``n_rows``, else a fresh gather (a retry after the safeguard doubled the batch)."""
        if sample is None or sample[0].shape[0] != min(n_rows, self.sample_cap):
            sample = self.data.gather(x0, self._sample_rows(n_rows))
        return sample

    def inner_passes(self, rows):
        return 0.0     # the inner loops read gathered rows, not X

    def _remember(self, x, gradient, sample):
        """Keep what the check after a tol stop reads: the gradient at zero (a pass there)
        and the rows of the last sample gathered with a pass."""
        if not np.any(x):
            self.at_zero = gradient.copy()
        if sample is not None:
            self.moment_rows = sample[0]

    def gradient_max(self, objective, snapshot):
        self.tested = snapshot[0]     # the gradient at the iterate the stop tests
        return super().gradient_max(objective, snapshot)

    def tol_check_moments(self):
        """The columns' moments of the check after a tol stop: of the last sample gathered
        with a pass (on the client already), else (a stop at the first pass, or
        ``solver='cg'``, which gathers none) of every row by one pass over the chunks."""
        if self.moment_rows is not None:
            return column_moments(self.moment_rows)
        return self.data.column_moments()


class _DaskCGVRRun(SampleStream, cgvr._Run):
    """``cgvr._Run`` over a Dask array: the same loops, with distributed full gradients and
    inner loops on gathered samples."""

    def __init__(self, data, params, monitor, state, seed, stream):
        self._init_state(params, monitor, state, data.n, data.d)
        self._init_stream(data, seed, 2 * stream)
        self.last = None     # solver='cg': (f, grad f) of the last full gradient

    @property
    def batch_limit(self):
        return min(self.n, self.sample_cap)

    def full_gradient(self, x):
        # the next inner loop's sample comes back with the pass (one round trip), except
        # after the first pass, which measures the bytes per row the gather cap needs
        first = self.data.row_bytes is None
        full_batch = self.params.solver == "cg"     # no inner loop: no sample
        rows = None if first or full_batch else self._sample_rows(self._rows_per_inner_loop())
        loss_f, u, sample = self.data.full_pass(x, rows)
        if first:
            self.batch = min(self.batch, self.batch_limit)
        pen, pen_grad = penalty(x, self.d, self.alpha, self.alpha_b)
        u = u + pen_grad
        if not self.params.fit_intercept:
            u[self.d] = 0.0
        self.passes = float(self.data.passes)
        if self.h is None:
            self.h = u.copy()
        self._remember(x, u, sample)
        if full_batch:
            self.last = (loss_f + pen, u)     # phi(0), phi'(0) of the next line search
            return loss_f + pen, (u, None)
        return loss_f + pen, (u, x.copy(), [sample])

    def inner_data(self, snapshot, n_rows):
        _, x0, box = snapshot
        sample, box[0] = box[0], None      # a prefetched sample serves one inner loop
        sample = self._inner_sample(sample, x0, n_rows)
        return sample_tables(sample, cgvr_loss_spec(self.params.loss), self.alpha,
                             self.alpha_b, self.params.fit_intercept, self.seed, self.stream)

    def gradient_ratio(self, x):
        """:func:`._stationarity.gradient_ratio` at ``x`` (the iterate the stop tested)
        from the gradient the stop tested, the one at zero (one more distributed pass
        when the fit did not start there) and :meth:`tol_check_moments`."""
        d, fit_intercept = self.d, self.params.fit_intercept
        if self.at_zero is None:
            _, self.at_zero, _ = self.data.full_pass(np.zeros(d + 1))
        return gradient_ratio(cgvr.split_gradient(self.tested, d, fit_intercept),
                              cgvr.split_gradient(self.at_zero, d, fit_intercept), x[:d], 0.0,
                              self.tol_check_moments(), fit_intercept)

    def record(self, k, x, objective, snapshot=None, step=None):
        x = x[:self.d]
        dist = {"gathers": self.data.gathers, "gathered_rows": self.data.gathered_rows}
        if k == 0:
            return self.monitor.record(iteration=0, objective=objective, grad_max=self.crit,
                                       step_size=0.0, passes=self.passes, x=x,
                                       **cgvr.INNER_COLUMNS_AT_START, **dist)
        return self.monitor.record(
            iteration=k, objective=objective, grad_max=self.crit, step_size=self.step_size,
            passes=self.passes, restarts=int(self.stats[0]), skipped_steps=int(self.stats[1]),
            line_search_evals=int(self.stats[2]), rejected_epochs=self.rejected,
            step_cap=self.cap, batch=self.batch, x=x, **dist)


def _dask_line_search(run, x, p):
    """``solver='cg'``'s strong-Wolfe step along p on f itself (``cgvr._full_line_search``
    on Dask data): one distributed pass keeps the margins ``X x``, ``X p`` on the workers;
    a round trip over them evaluates a trial step with the next ones the search may try
    (the expansion's doublings, the zoom's next midpoints); ``phi(0)``, ``phi'(0)`` come
    from the last full gradient."""
    d, alpha, alpha_b = run.d, run.alpha, run.alpha_b
    run.data.line(x, p)
    r0 = alpha * float(x[:d] @ p[:d]) + alpha_b * x[d] * p[d]
    rpp = alpha * float(p[:d] @ p[:d]) + alpha_b * p[d] * p[d]
    rxx = alpha * float(x[:d] @ x[:d]) + alpha_b * x[d] * x[d]
    calls = []

    def search(phi0, changes):
        """The search on f, or (``changes``) on f(x + a p) - f(x) summed as loss changes."""
        seen = {}

        def phi(a, ahead):
            calls.append(a)
            if a not in seen:
                steps = [a] + [s for s in ahead if s not in seen]
                values = run.data.line_values(steps, changes)
                for k, s in enumerate(steps):
                    penalty = (s * (r0 + 0.5 * s * rpp) if changes else
                               0.5 * (rxx + 2 * s * r0 + s * s * rpp))
                    seen[s] = (values[0, k] + penalty, values[1, k] + r0 + s * rpp)
            return seen[a]

        ps = run.params
        return strong_wolfe(phi, phi0, float(u @ p), ps.c1, ps.c2, ps.step_init,
                            ps.ls_max_iter, ps.zoom_max_iter, ps.step_max, lookahead=True)

    objective, u = run.last
    step, failed = search(objective, False)
    # a hinge (a subgradient) fails lines at its kinks, not at the rounding of f
    if step == 0.0 and float(u @ p) < 0 and cgvr.LOSSES[run.params.loss].differentiable:
        # no step decreased f: near the optimum its decrease is below the rounding of f, a
        # sum over the rows; search again on the loss changes (in memory, line_search_margins
        # sums them from the start)
        step, failed = search(0.0, True)
    run.stats[2] += len(calls)
    run.stats[3] += int(failed)
    if step == 0.0:
        run.stats[1] += 1
    return step


def _dask_cg_loop(run, x):
    return cgvr._cg_loop(run, x, line_search=_dask_line_search)


def solve_cgvr(data, params, monitor, seed, stream, coef_init, intercept_init, state=None):
    """Fit one head of a CGVR estimator on Dask data (see ``cgvr.solve``)."""
    run = _DaskCGVRRun(data, params, monitor, state, seed, stream)
    problem = SimpleNamespace(dataset=SimpleNamespace(n_features=data.d), seed=seed,
                              stream=stream, coef_init=coef_init,
                              intercept_init=intercept_init)
    x = cgvr._start(problem, params, warm=state is not None)
    loop = {"cgvr": cgvr._cgvr_loop, "cg": _dask_cg_loop}.get(params.solver, cgvr._svrg_loop)
    result = loop(run, x)
    monitor.finish(converged=result.converged, criterion=cgvr.CRITERION,
                   value=result.criterion, tol=params.tol, max_iter=params.max_iter,
                   stalled_at=result.extra.get("stalled_at"))
    if result.converged and not monitor.stopped_by_callback:
        cgvr.warn_if_far_after_tol(run.gradient_ratio(result.x), monitor.solver_name,
                                   params.tol)
    d = data.d
    return SolverResult(
        x=result.x[:d].copy(), intercept=float(result.x[d]) if params.fit_intercept else 0.0,
        n_iter=result.n_iter, converged=result.converged, criterion=result.criterion,
        criterion_name=cgvr.CRITERION,
        state={"h": run.h, "batch": run.batch, "cap": run.cap},
        extra={"stats": run.stats.copy(), "passes": run.passes})


def _svrg_step(data, params, Xs, sws, batch, seed):
    """``eta0='auto'``: ``1 / (4 L_b)`` (the in-memory Prox-SVRG step) with ``L_max = c
    max_i s_i (||x_i||^2 + 1)`` from the first pass and ``L = min(c lambda_max, L_max)``,
    ``lambda_max`` of ``[X, 1]^T S [X, 1] / n`` estimated on the gathered sample."""
    if params.eta0 != "auto":
        return float(params.eta0)
    c = params.curvature
    L_max = c * data.stats["row_bound"]
    if params.fit_intercept:
        ones = np.ones((Xs.shape[0], 1))
        import scipy.sparse as sp
        Xs = sp.hstack([Xs, ones], format="csr") if sp.issparse(Xs) else np.hstack([Xs, ones])
    lam = gram_spectrum(Xs, sws, seed)[0]
    L = min(c * lam, L_max)
    L_b = expected_batch_smoothness(L, L_max, data.n, batch) + params.lam2
    return 1.0 / (_SVRG_STEP_FACTOR * max(L_b, 1e-12))


def _prox_svrg_epoch(sample, loss_spec, params, x, u, n_inner, batch, eta, seed, stream):
    """``n_inner`` proximal steps of the in-memory Prox-SVRG kernel (``run_epoch``, the
    elastic-net prox ``soft(v, eta lam1) / (1 + eta lam2)``) on the gathered sample, with
    the snapshot's full gradient ``u`` (loss part, length d + 1) from the distributed pass
    and the sample's ``loss'(X_i x)``; ``x`` is updated in place."""
    Xs, ys, sws, dl0 = sample
    cls, args = loss_spec
    d = x.shape[0] - 1
    problem = EpochProblem(make_dataset(Xs), np.ascontiguousarray(ys, dtype=np.float64),
                           np.ascontiguousarray(sws, dtype=np.float64), cls(*args),
                           params.fit_intercept, params.lam1, params.lam2,
                           min(batch, Xs.shape[0]), seed, stream)
    tables = SnapshotTables(problem)
    tables.set_snapshot(np.ascontiguousarray(u), np.ascontiguousarray(dl0, dtype=np.float64))
    w, b = x[:d].copy(), x[d:].copy()
    run_epoch(problem, w, b, eta, eta, n_inner, 1, tables)
    x[:d] = w
    x[d] = b[0] if params.fit_intercept else 0.0


def _plateau_ratio(data, params, at_snapshot, at_zero, X_sample):
    """The plateau check's gradient ratio on Dask data: the gradient of the last snapshot
    (free, one epoch behind the iterate, as the objective the stop tested), the one at zero
    (free from a fit from scratch, else one distributed pass) and the columns' moments of
    the gathered sample."""
    if at_zero is None:
        _, u_zero, _ = data.full_pass(np.zeros(data.d + 1), None)
        at_zero = cgvr.split_gradient(u_zero, data.d, params.fit_intercept)
    g_w, g_b, w = at_snapshot
    return gradient_ratio((g_w, g_b), at_zero, w, params.lam1, column_moments(X_sample),
                          params.fit_intercept)


def solve_s3gd(data, params, monitor, seed, stream, coef_init, intercept_init):
    """Prox-SVRG on Dask data: one distributed pass per epoch (l1 / elastic-net: the
    proximal steps of the in-memory kernel on the gathered sample)."""
    n, d = data.n, data.d
    loss_spec = s3gd_loss_spec(params)
    batch = min(params.batch_size, n)
    auto = params.n_inner == "auto" or params.solver != "svrg"
    x = np.zeros(d + 1)
    x[:d] = coef_init
    x[d] = intercept_init if params.fit_intercept else 0.0
    plateau = Plateau(params.tol, params.n_iter_no_change)
    eta, f_start, counter, draws = None, None, 0, 0
    scale, n_iter, converged = 1.0, 0, False
    name = monitor.solver_name
    n_inner = sample_size = None     # known after the first pass (the gather cap)
    from_zero = not np.any(x)
    at_zero = at_snapshot = None     # the plateau check's gradients (w, b)

    def draw():
        nonlocal draws
        rows = sample_indices(seed, 2 * stream, draws, sample_size, n)
        draws += rows.size
        return rows

    for epoch in range(params.max_iter):
        n_iter = epoch + 1
        # the sample comes back with the pass, except after the first one (which measures
        # the bytes per row the gather cap needs)
        loss_f, u, sample = data.full_pass(x, None if sample_size is None else draw())
        if sample_size is None:
            cap = data.max_rows(batch)
            # one pass's worth of steps, at most SAMPLE_SWEEPS sweeps of the sample
            epoch_rows = min(n, SAMPLE_SWEEPS * cap)
            n_inner = max(1, -(-epoch_rows // batch) if auto else int(params.n_inner))
            sample_size = min(n_inner * batch, cap)
            sample = data.gather(x, draw())
        pen, pen_grad = penalty(x, d, params.lam2, 0.0)
        objective = loss_f + pen + params.lam1 * float(np.abs(x[:d]).sum())
        if not params.fit_intercept:
            u[d] = 0.0
        at_snapshot = (u[:d] + pen_grad[:d], u[d], x[:d].copy())
        if at_zero is None and from_zero:
            at_zero = at_snapshot[:2]
        f_start = objective if f_start is None else f_start
        check_divergence(objective, f_start, name, f"epoch {epoch}")
        if eta is None:
            eta = _svrg_step(data, params, sample[0], sample[2], batch, seed)
        if params.lam1 > 0:
            _prox_svrg_epoch(sample, loss_spec, params, x, u, n_inner, batch, eta * scale,
                             seed, _PROX_STREAM + (epoch << 16) + stream)
        else:
            tables, dl0 = sample_tables(sample, loss_spec, params.lam2, 0.0,
                                        params.fit_intercept, seed, 2 * stream)
            counter = _cgvr.svrg_inner(tables, x, x.copy(), u + pen_grad, dl0, n_inner,
                                       batch, eta * scale, counter)
        check_finite_iterate(x, name, f"epoch {epoch}")
        stop = monitor.record(x=x[:d].copy(), iteration=epoch + 1, pass_fraction=1.0,
                              step_size=eta * scale, solver="svrg", objective=objective,
                              objective_kind="snapshot", passes=float(data.passes),
                              gathers=data.gathers, gathered_rows=data.gathered_rows)
        if plateau.update(objective):
            if params.learning_rate == "adaptive" and scale > 1e-3:
                scale /= 5.0
                plateau.restart()
            else:
                converged = True
                break
        if stop:
            break
    monitor.finish(converged=converged, criterion=_S3GD_CRITERION,
                   value=float(plateau.rel_improvement), tol=params.tol,
                   max_iter=params.max_iter)
    if converged:
        warn_if_far(_plateau_ratio(data, params, at_snapshot, at_zero, sample[0]), name,
                    params.tol)
    return SolverResult(x=x[:d].copy(), intercept=float(x[d]) if params.fit_intercept else 0.0,
                        n_iter=n_iter, converged=converged,
                        criterion=float(plateau.rel_improvement),
                        criterion_name=_S3GD_CRITERION,
                        extra={"step_size": eta if eta is not None else 0.0})
