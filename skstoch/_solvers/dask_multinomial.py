"""The multinomial log loss (more than two classes, one objective over all K classes) of
``CGVRClassifier`` and ``S3GDClassifier`` on a ``dask.array.Array``.

The design of :mod:`._dask_passes` with a (K, d + 1) iterate ``[W | b]``: each distributed
pass maps :func:`_chunk_pass` over the row chunks, where the in-memory driver's full pass
(``cgvr_multinomial._Problem.objective_gradient``: the margins and the data gradient by
BLAS, the softmax and log-sum-exp in NumPy) computes the chunk's share of ``f`` and of the
(K, d + 1) gradient; the ``K (d + 1) + 2`` numbers per chunk are summed by the fixed binary
tree of tasks, and the rows of the next inner loop's sample (drawn by the counter-based
generator, within the gather cap) come back in the same ``dask.compute``.  A sample is
rows only (X, class indices, weights): the snapshot probabilities of its rows are computed
on the client from the gathered rows, so a sample fetched with a pass serves whatever
snapshot the next inner loop starts from (a rejected iteration included).  The inner loops
are those of the in-memory drivers, on the sample:

* :func:`solve_cgvr` runs ``cgvr_multinomial``'s outer loop (Algorithm 3 or the SVRG
  baselines) with a :class:`_DaskCGVRRun`, whose full gradient is a distributed pass and
  whose inner loops draw their mini-batches from a sample of ``inner_iter * batch`` rows
  (at most the gather cap, where the safeguard's batch doubling stops); after a ``tol``
  stop, the in-memory fit's check (``cgvr.warn_if_far_after_tol``) on the gradient the
  stop tested, the one at zero (the first pass's in a fit from zero, else one more pass)
  and the columns' moments of the last sample
  (``dask_fit.SampleStream.tol_check_moments``);
* :func:`solve_s3gd` runs ``s3gd_multinomial``'s epochs (compiled Prox-SVRG kernel,
  safeguard, plateau stop): per epoch one distributed pass at the epoch's iterate (exact
  objective, the data gradient ``B``, ``Bc``) and one pass's worth of kernel steps, at most
  ``SAMPLE_SWEEPS`` sweeps, over a random order of the gathered sample.
"""
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from .._fast._multinomial import MultinomialTables
from .._fast._s3gd import row_sqnorms
from ..utils import make_dataset
from . import cgvr_multinomial, s3gd_multinomial
from .cgvr import warn_if_far_after_tol
from ._dask_passes import (DaskData, _as_chunk, _check_chunk_shape, _sample_bytes,
                           sample_indices)
from ._stationarity import SOFTMAX_ROUNDING, column_moments, gradient_ratio
from .dask_fit import SAMPLE_SWEEPS, SampleStream

def _row_bytes(n_classes):
    """The client's bytes per gathered row besides X's: class index and weight (gathered),
    the snapshot probabilities and the one-hot target or ``X B`` (K floats each)."""
    return 16 + 16 * n_classes


def _chunk_pass(block, y, sw, x, n_classes, fit_intercept, n_total, stats):
    """On a worker: ``(sums, extra)`` of one chunk.  ``sums`` is the chunk's share of the
    (K, d + 1) data gradient (raveled), of the data part of f, then ``sum sw``; with
    ``stats``, ``extra`` is ``(whether every value is finite, max sw_i ||x_i||^2, bytes of
    the chunk's rows once gathered, max sw_i)`` (else None)."""
    X = _as_chunk(block)
    y = np.asarray(y).reshape(-1).astype(np.intp)
    sw = _as_chunk(sw, "sample_weight").reshape(-1)
    _check_chunk_shape(X, y.shape[0], np.size(x) // n_classes - 1)   # (K, d + 1) coefficients
    n_c, d = X.shape
    sums = np.zeros(n_classes * (d + 1) + 2)
    sums[-1] = sw.sum()
    extra = None
    if stats:
        data = X.data if sp.issparse(X) else X
        finite = bool(np.all(np.isfinite(data)) and np.all(np.isfinite(sw))
                      and np.all(sw >= 0))
        extra = (finite, 0.0, _sample_bytes(X, n_c, _row_bytes(n_classes)), 0.0)
        if not finite:
            return sums, extra
    if n_c == 0:
        return sums, extra
    if stats:
        sq = np.empty(n_c)
        row_sqnorms(make_dataset(X), sq)
        bound = float(np.max(sw * sq)) if np.all(np.isfinite(sq)) else np.inf
        extra = (True, bound, extra[2], float(np.max(sw)))
    prob = cgvr_multinomial._Problem(X, y, sw * (n_c / n_total), n_classes, 0.0, 0.0,
                                     fit_intercept)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        f, G, _ = prob.objective_gradient(np.asarray(x))
    sums[:-2] = G.ravel()
    sums[-2] = f
    return sums, extra


def _take(block, y, sw, rows):
    """On a worker: the rows ``rows`` of one chunk with their class indices and weights."""
    X = _as_chunk(block)[rows]
    return (X, np.asarray(y).reshape(-1)[rows].astype(np.intp),
            np.asarray(sw, dtype=np.float64).reshape(-1)[rows])


class MultinomialDaskData(DaskData):
    """X, class indices and weights of one multinomial fit on the cluster; passes at a
    (K, d + 1) iterate ``[W | b]`` (see :class:`DaskData`)."""

    def __init__(self, X, codes, sample_weight, n_classes, fit_intercept):
        super().__init__(X, codes, sample_weight, None)
        self.n_classes, self.fit_intercept = int(n_classes), bool(fit_intercept)

    def _pass_task(self, k, x, stats):
        return self._dask.delayed(_chunk_pass, pure=True)(
            self.X[k], self.y[k], self.sw[k], x, self.n_classes, self.fit_intercept, self.n,
            stats)

    def _take_task(self, k, x, rows):
        return self._dask.delayed(_take, pure=True)(self.X[k], self.y[k], self.sw[k], rows)

    def _check_first(self, total_w, extras):
        super()._check_first(total_w, extras)
        # max_i s_i (||x_i||^2 + s2) <= row_bound + s2 max_weight (normalised weights)
        self.stats["max_weight"] = max(extra[3] for extra in extras) * self.weight_scale

    def row_bound(self):
        return self.stats["row_bound"] + self.stats["max_weight"]

    def _assemble(self, pieces, rows):
        self.gathers += 1
        self.gathered_rows += len(rows)
        blocks = [p[0] for p in pieces]
        X = sp.vstack(blocks, format="csr") if sp.issparse(blocks[0]) else np.vstack(blocks)
        y, sw = (np.concatenate([p[j] for p in pieces]) for j in (1, 2))
        return X, y, sw * self.weight_scale

    def pass_at(self, x, rows=None):
        """``(data part of f, data gradient (K, d + 1), sample)`` at ``x`` (K, d + 1)."""
        loss, grad, sample = self.full_pass(x, rows)
        return loss, grad.reshape(self.n_classes, self.d + 1), sample

    def columns(self):
        """The history columns of the distributed work so far."""
        return {"passes": float(self.passes), "gathers": self.gathers,
                "gathered_rows": self.gathered_rows}


def make_data(X, codes, sample_weight, n_classes, fit_intercept):
    return MultinomialDaskData(X, codes, sample_weight, n_classes, fit_intercept)


class _DaskCGVRRun(SampleStream, cgvr_multinomial._Run):
    """``cgvr_multinomial._Run`` over a Dask array: distributed full gradients; each inner
    loop runs on a gathered sample (``self.prob``)."""

    def __init__(self, data, params, monitor, state, seed):
        K, d = data.n_classes, data.d
        super().__init__(SimpleNamespace(n=data.n, K=K, d=d), params, monitor, state, seed)
        alpha_b = params.alpha if params.fit_intercept and params.regularize_intercept \
            else 0.0
        self.prob = cgvr_multinomial._Problem(np.empty((0, d)), np.empty(0, np.intp),
                                              np.empty(0), K, params.alpha, alpha_b,
                                              params.fit_intercept)
        self._init_stream(data, seed, 0)
        self.sample = None      # the rows prefetched with the last pass

    def full_gradient(self, x):
        # the next inner loop's sample comes with the pass, except after the first pass
        # (which measures the bytes per row the gather cap needs)
        first = self.data.row_bytes is None
        loss, G, sample = self.data.pass_at(
            x, None if first else self._sample_rows(self._rows_per_inner_loop()))
        if first:
            self.batch_limit = min(self.n, self.sample_cap)
            self.batch = min(self.batch, self.batch_limit)
        self.sample = sample
        objective = loss + 0.5 * self.prob.reg_dot(x, x)
        G = G + self.prob.reg_grad(x)
        self.passes = float(self.data.passes)
        if self.h is None:
            self.h = G.copy()
        self._remember(x, G, sample)
        return objective, (G, None)

    def inner_data(self, snapshot, x0, n_rows):
        sample, self.sample = self.sample, None
        sample = self._inner_sample(sample, x0, n_rows)
        p = self.prob
        self.prob = cgvr_multinomial._Problem(*sample, p.K, p.alpha, p.alpha_b,
                                              p.fit_intercept)
        return snapshot[0], cgvr_multinomial.softmax(self.prob.margins(x0))

    def columns(self):
        return {"gathers": self.data.gathers, "gathered_rows": self.data.gathered_rows}

    def gradient_ratio(self, result):
        """:func:`._stationarity.gradient_ratio` at the fit (``cgvr_multinomial``'s
        ``_gradient_ratio`` from the gradient the stop tested, the one at zero, one more
        distributed pass when the fit did not start there, and
        :meth:`tol_check_moments`)."""
        d, K = self.prob.d, self.prob.K
        if self.at_zero is None:
            _, self.at_zero, _ = self.data.pass_at(np.zeros((K, d + 1)))
        return cgvr_multinomial.stacked_gradient_ratio(self.tested, self.at_zero, result.x,
                                                       self.tol_check_moments(),
                                                       self.prob.fit_intercept)


def solve_cgvr(data, params, monitor, seed, coef_init=None, intercept_init=None, state=None):
    """The multinomial CGVR fit (``cgvr_multinomial.solve``) on Dask data: solvers
    ``'cgvr'`` (line search ``'vr'`` or ``'batch'``), ``'svrg'`` and ``'minibatch_svrg'``."""
    if params.solver == "cg" or params.line_search == "full":
        raise ValueError("solver='cg' and line_search='full' read every row at every step; "
                         "the multinomial fit of a Dask array X does not support them.")
    run = _DaskCGVRRun(data, params, monitor, state, seed)
    result = cgvr_multinomial.run_solve(run, cgvr_multinomial._outer_loop, data.n_classes,
                                        data.d, coef_init, intercept_init)
    if result.converged and not monitor.stopped_by_callback:
        warn_if_far_after_tol(run.gradient_ratio(result), monitor.solver_name, params.tol)
    return result


def solve_s3gd(data, params, monitor, seed, coef_init=None, intercept_init=None,
               step_factor=s3gd_multinomial._STEP_FACTOR):
    """Multinomial Prox-SVRG (``s3gd_multinomial.solve``) on Dask data."""
    n, d, K = data.n, data.d, data.n_classes
    rng = np.random.Generator(np.random.Philox(key=[seed, 2**32 + 11]))
    W, c = np.zeros((d, K)), np.zeros(K)
    if coef_init is not None:
        W[:] = np.asarray(coef_init, dtype=np.float64).T
        if params.fit_intercept:
            c[:] = intercept_init
    batch = min(params.batch_size, n)
    lazy = params.lam1 == 0.0
    empty = s3gd_multinomial._Problem(np.empty((0, d)), np.empty(0, np.intp), np.empty(0), K,
                                      params)
    fit = SimpleNamespace(size=None, draws=0, sample=None, n_steps=None)

    def draw():
        rows = sample_indices(seed, 0, fit.draws, fit.size, n)
        fit.draws += fit.size
        return rows

    def snapshot(W, c):
        """The distributed pass at (W, c); the next epoch's sample comes with it."""
        x = np.hstack([W.T, c[:, None]])
        loss, G, fit.sample = data.pass_at(x, None if fit.size is None else draw())
        objective = loss + empty.penalty(W)
        return SimpleNamespace(W=W, c=c, B=np.ascontiguousarray(G[:, :d].T),
                               Bc=G[:, d].copy(),
                               objective=objective if np.isfinite(objective) else np.inf)

    def epoch_step(kept, eta, eta_c):
        prob = s3gd_multinomial._Problem(*fit.sample, K, params)
        P0 = np.ascontiguousarray(prob.probabilities(kept.W, kept.c))
        BX = (np.ascontiguousarray(prob.X @ kept.B) if lazy else np.empty((0, K)))
        tables = MultinomialTables(*prob.rows, d, prob.sw, fit.n_steps, batch, params.lam1,
                                   params.lam2, params.fit_intercept, lazy)
        order = rng.permutation(prob.n).astype(np.intp)
        return s3gd_multinomial.inner_epoch(tables, order, kept, P0, BX, eta, eta_c, lazy)

    def stationarity(kept):
        """The plateau check's gradient ratio: the kept snapshot's gradient, the one at zero
        (the first snapshot's in a fit from scratch, else one distributed pass) and the
        columns' moments of the gathered sample."""
        B0, Bc0 = at_start
        if np.any(W) or np.any(c):
            _, G, _ = data.pass_at(np.zeros((K, d + 1)), None)
            B0, Bc0 = G[:, :d].T, (G[:, d] if params.fit_intercept else np.zeros(K))
        return gradient_ratio((kept.B + params.lam2 * kept.W, kept.Bc), (B0, Bc0), kept.W,
                              params.lam1, column_moments(fit.sample[0]),
                              params.fit_intercept, negligible=SOFTMAX_ROUNDING)

    with np.errstate(over="ignore", invalid="ignore"):
        kept = snapshot(W, c)
        at_start = (kept.B, kept.Bc)
        # the first pass measured the bytes per row: one pass's worth of steps per epoch,
        # at most SAMPLE_SWEEPS sweeps of a sample within the gather cap
        cap = data.max_rows(batch)
        fit.n_steps = max(1, -(-min(n, SAMPLE_SWEEPS * cap) // batch))
        fit.size = min(fit.n_steps * batch, cap)
        fit.sample = data.gather(None, draw())
        stats = data.stats
        eta, eta_c = s3gd_multinomial._Problem(*fit.sample, K, params).steps(
            seed, batch, step_factor, n=n,
            row_max=lambda s2: stats["row_bound"] + s2 * stats["max_weight"])
    return s3gd_multinomial.run_epochs(kept, epoch_step, snapshot, eta, eta_c, params,
                                       monitor, columns=data.columns,
                                       stationarity=stationarity)
