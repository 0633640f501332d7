"""Set-up of the S3GD driver (:mod:`skstoch._solvers.s3gd`).

* :func:`prepare`: the work one fit does once for all its problems (row norms, the anchor
  graph or the strata), returned as the :class:`S3GDShared` every problem receives as
  ``problem.shared``; estimates that only some fits need (spectrum, anchor tables) are
  computed there on first use, once per fit.
* :func:`anchor_tables`, :func:`strata_tables`: the kernel tables of one problem.
* :func:`line_search_start`: the steepest-descent start of ``init_step``.
"""
import numpy as np

from .._fast._s3gd import AnchorTables, StrataTables, weighted_anchor_sums
from ..utils import make_dataset
from ..utils._dataset import (N_ROW_BLOCKS, checked_row_sqnorms, dataset_matrix, full_margins,
                              full_transpose_product, run_row_blocks)
from ._anchor_graph import build_anchor_graph, stratify
from ._fit_cache import FitCache

# losses whose derivative splits as f(p) - g(y): one label-free anchor table and a label term
DECOUPLED = {"log_loss": -1.0, "squared_error": 0.0}


class S3GDShared(FitCache):
    """What one fit computes once for all its problems (``problem.shared``).

    Attributes
    ----------
    seed : int
        The fit's seed (clustering, subsamples).
    row_sqnorm : ndarray of shape (n_samples,)
        ``||x_i||^2``.
    graph : AnchorGraph or None
        The anchor graph (solvers with anchor epochs).
    M : CSR matrix of shape (n_samples, n_anchors) or None
        The graph as a matrix.
    strata : tuple (order, ptr) or None
        The strata of ``solver='ssgd'``.
    weight_group : list of int
        For problem k (its ``stream``), the index of its sample-weight vector among the
        distinct ones of the fit: problems with the same weights share cached estimates.
    """

    def __init__(self, seed, row_sqnorm, weight_group, graph=None, strata=None):
        self.seed = seed
        self.row_sqnorm = row_sqnorm
        self.weight_group = weight_group
        self.graph = graph
        self.M = graph.matrix() if graph is not None else None
        self.strata = strata
        super().__init__()


def prepare(X, sample_weights, seed, params):
    """Row norms and the anchor graph (or strata) of ``X`` for every problem of one fit.

    Raises ValueError when a squared row norm overflows (steps and distances would not be
    finite).
    """
    ds = make_dataset(X, float32=True)   # a float32 X stays float32 (no copy)
    X = dataset_matrix(ds)
    sq = checked_row_sqnorms(ds)
    graph = strata = None
    if params.uses_anchor_graph:
        graph = build_anchor_graph(
            X, n_anchors=params.n_anchors, n_neighbors=params.n_neighbors,
            kernel_width=params.kernel_width, kernel_eps=params.kernel_eps,
            method=params.anchor_method, kmeans_max_iter=params.kmeans_max_iter,
            random_state=seed)
    elif params.solver == "ssgd":
        strata = stratify(X, min(params.batch_size, ds.n_samples),
                          method=params.anchor_method, kmeans_max_iter=params.kmeans_max_iter,
                          random_state=seed)
    groups = [next(j for j, other in enumerate(sample_weights) if other is sw)
              for sw in sample_weights]
    return S3GDShared(seed, sq, groups, graph, strata)


def anchor_tables(kernel_problem, ds, y, sw, loss, loss_name, shared, group):
    """The :class:`AnchorTables` of one problem (see :func:`anchor_arrays`)."""
    graph = shared.graph
    return AnchorTables(kernel_problem, graph.anchor_indices, graph.neighbors, graph.weights,
                        *anchor_arrays(ds, y, sw, loss, loss_name, shared, group))


def anchor_arrays(ds, y, sw, loss, loss_name, shared, group):
    """``(BT, colsum, slot_label, offset, Lw, Lb)`` of one problem: ``BT (n_slots, m, d)``,
    its column sums, the slot labels, the per-sample offsets and the label term (the
    label-free table of a decoupled loss is computed once per fit and weight vector)."""
    graph, M = shared.graph, shared.M
    n = ds.n_samples
    X = dataset_matrix(ds)
    if loss_name in DECOUPLED:
        # psi'(p; y) = psi'(p; y0) + [psi'(0; y) - psi'(0; y0)]: one label-free table,
        # shared by every one-vs-rest head / output with the same weights
        y0 = DECOUPLED[loss_name]

        def decoupled():
            BT = _weighted_anchor_sums(ds, graph, sw)
            return BT[np.newaxis], np.asarray(M.T @ sw).reshape(1, -1)
        BT, colsum = shared.cached(("decoupled", group), decoupled)
        offset = np.ascontiguousarray(loss.dloss_array(np.zeros(n), y) - loss.py_dloss(0.0, y0))
        if ds.dtype == np.float32:   # numpy would cast all of X to float64 first
            Lw = full_transpose_product(ds, sw * offset) / n
        else:
            Lw = np.asarray(X.T @ (sw * offset)).ravel() / n
        Lb = float(np.sum(sw * offset)) / n
        slot_label = np.array([y0])
    else:
        # labels cannot be factored out: one table per class (slot 0: y = -1, slot 1: y = +1)
        pos = (y > 0).astype(np.float64)
        sws = [sw * (1.0 - pos), sw * pos]
        BT = np.stack([_weighted_anchor_sums(ds, graph, s) for s in sws])
        colsum = np.vstack([np.asarray(M.T @ s).ravel() for s in sws])
        slot_label, offset, Lw, Lb = np.array([-1.0, 1.0]), np.zeros(n), np.zeros(X.shape[1]), 0.0
    return BT, colsum, slot_label, offset, Lw, Lb


def strata_tables(kernel_problem, shared):
    order, ptr = shared.strata
    return StrataTables(kernel_problem, order, ptr)


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


def data_objective(ds, w, b, y, sw, loss):
    """``(1/n) sum_i sw_i loss(y_i, x_i.w + b)`` (one pass; no penalty)."""
    p = ds.margins(w, b)
    out = np.empty_like(p)
    return loss.weighted_loss_dloss(p, y, sw, out) / p.shape[0]


def smooth_gradient(ds, y, sw, loss, w, b, lam2, fit_intercept):
    """``(mean loss, margins, g_w, g_b)`` at ``(w, b)``: the gradient of the mean loss plus
    ``lam2 / 2 ||w||^2`` (the margins, then ``X^T r``: two passes, one from zero)."""
    n = y.shape[0]
    # from zero (a fit from scratch) every margin is the intercept: no pass over X
    p = full_margins(ds, w, b) if np.any(w) else np.full(n, float(b))
    r = np.empty(n)
    f_loss = loss.weighted_loss_dloss(p, y, sw, r) / n      # r_i = s_i loss'(p_i, y_i)
    g = full_transpose_product(ds, r) / n + lam2 * w
    gb = float(r.sum()) / n if fit_intercept else 0.0
    return f_loss, p, g, gb


_LS_MAX_ITER = 20      # safeguarded Newton steps of the line-search start
_LS_RTOL = 1e-8        # stop when |phi'(t)| <= this * |phi'(0)|
_LS_THREAD_ROWS = 1 << 15   # from this many rows the line search's loops run in two threads


def line_search_start(ds, y, sw, loss, w, b, lam2, fit_intercept):
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
    f_loss, p, g, gb = smooth_gradient(ds, y, sw, loss, w, b[0], lam2, fit_intercept)
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

    t = _newton_on_line(phi, gg)
    f_new = phi(t, with_value=True)[0]
    if not (np.isfinite(f_new) and f_new < f0):
        return None
    w -= t * g
    b[0] -= t * gb
    return t, f_new


def _newton_on_line(phi, gg):
    """Safeguarded Newton on the convex ``phi`` from ``t = 0`` (see line_search_start)."""
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
    return t
