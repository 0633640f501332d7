"""Full passes over a Dask array on the Dask workers, and the mini-batch samples the inner
loops of the variance-reduced drivers read (``CGVR*`` and ``S3GD*`` fits of a
``dask.array.Array``).

A fit never brings X to the client.  Each pass maps :func:`_chunk_pass` over the row chunks:
on a worker, the chunk becomes a :class:`RowDataset` and the compiled ``HeadTables`` pass of
the CGVR kernels computes the chunk's share of ``f(x)`` and ``grad f(x)`` (weights scaled by
``n_chunk / n``).  The ``d + 2`` numbers per chunk are summed by a binary tree of tasks in
chunk order (the same result for the same chunking) and only the sum reaches the client.
The next inner loop's sample indices are drawn from the counter-based generator
(:func:`sample_indices`) before the pass, and the same round trip brings just those rows,
with their targets, weights and ``dl0 = loss'(X_i x)`` (computed on the workers by the
compiled margins and loss); the in-memory kernel then runs on them.  Nothing is kept on the
workers between passes (a lost worker only means recomputing chunks of X from its graph).

A gather brings at most ``max(batch, min(n // GATHER_DIVISOR, budget // row_bytes))`` rows
(a quarter of X, and at most ``budget`` bytes: :func:`gather_budget`), so the client never
holds X; ``row_bytes``, the client's bytes per gathered row (``8 (d + 3)`` for dense chunks;
for CSR ones the mean of ``12 nnz + 28``), is measured on the workers in the first pass,
whose sample is therefore fetched right after it.  Everything runs on the scheduler
``dask.compute`` picks: the current ``distributed.Client`` if there is one, else Dask's
default scheduler.
"""
import operator

import numpy as np
import scipy.sparse as sp

from .._fast import _cgvr
from .._fast._random import randint_stream
from .._fast._s3gd import row_sqnorms
from ..utils import make_dataset
from ..utils._validation import row_norms_error
from ._stationarity import column_moments

# the client gathers at most n // GATHER_DIVISOR rows per outer iteration
GATHER_DIVISOR = 4
# ... and at most this many bytes (Dask config key GATHER_BUDGET_KEY overrides it)
GATHER_BUDGET = 256 * 2**20
GATHER_BUDGET_KEY = "skstoch.gather-budget"
# the gather draws come from their own streams of the counter-based generator
_GATHER_STREAM = 2**40


def gather_budget():
    """The most bytes of rows one gather brings to the client: the Dask config value
    ``skstoch.gather-budget`` (bytes, or a string such as ``"1 GiB"``; environment variable
    ``DASK_SKSTOCH__GATHER_BUDGET``), by default ``GATHER_BUDGET`` (256 MiB)."""
    import dask
    from dask.utils import parse_bytes

    budget = dask.config.get(GATHER_BUDGET_KEY, GATHER_BUDGET)
    budget = parse_bytes(budget) if isinstance(budget, str) else budget
    # a float such as 1e9 is what Dask reads from DASK_SKSTOCH__GATHER_BUDGET=1e9
    if (isinstance(budget, bool) or not isinstance(budget, (int, float, np.integer, np.floating))
            or not 0 <= budget < float("inf")):
        raise ValueError(f"The Dask config value {GATHER_BUDGET_KEY!r} must be a "
                         f"non-negative number of bytes, got {budget!r}.")
    return int(budget)


def max_gather_rows(n, batch, row_bytes, budget):
    """The largest sample one gather brings: a quarter of the rows and at most ``budget``
    bytes at ``row_bytes`` bytes per row, at least one batch."""
    return max(int(batch), min(n // GATHER_DIVISOR, int(budget // row_bytes)), 1)


def _sample_bytes(X, n_c, per_row=24):
    """Bytes of all ``n_c`` rows of chunk X once gathered with ``per_row`` more bytes each
    (their targets, weights and dl0; CSR: data, indices and indptr)."""
    if sp.issparse(X):
        return X.data.nbytes + X.indices.nbytes + n_c * (X.indptr.itemsize + per_row)
    return n_c * (8 * X.shape[1] + per_row)


def sample_indices(seed, stream, counter, size, n):
    """``size`` row indices uniform in [0, n) (with replacement), sorted, from the
    counter-based stream ``(seed, _GATHER_STREAM + stream)`` at ``counter``."""
    return np.sort(randint_stream(seed, _GATHER_STREAM + stream, size, n, counter))


def _as_chunk(block, name="X"):
    """A chunk as the kernels read it: C-contiguous float64, or canonical CSR.  The chunk's
    own dtype is checked, since a Dask array built from delayed values only declares one:
    strings would be parsed and imaginary parts dropped."""
    kind = (block.dtype if sp.issparse(block) else np.asarray(block).dtype).kind
    if kind not in "biuf":
        raise ValueError(f"a chunk of {name} holds dtype {block.dtype}, not numbers (its Dask "
                         f"array declares a numeric dtype); Complex data, strings and objects "
                         f"are not supported.")
    if sp.issparse(block):
        return sp.csr_matrix(block)
    return np.ascontiguousarray(block, dtype=np.float64)


def _check_chunk_shape(X, n_rows, n_features):
    """A chunk of X with the rows of its y chunk and the model's features, as its Dask
    array declares (delayed values can differ from the declared shape)."""
    if X.shape != (n_rows, n_features):
        raise ValueError(f"a chunk of X has shape {X.shape}, where its Dask array declares "
                         f"({n_rows}, {n_features}): the chunks' data must match the declared "
                         f"chunk sizes.")


def _chunk_pass(block, y, sw, x, loss_spec, n_total, stats):
    """On a worker: ``(sums, extra)`` of one chunk.  ``sums`` is the chunk's share of
    ``(grad f, f)`` (the loss part, weights ``sw``) followed by ``sum sw``; with ``stats``,
    ``extra`` is ``(whether every value is finite, max sw_i (||x_i||^2 + 1), bytes of the
    chunk's rows once gathered)`` (else None)."""
    X = _as_chunk(block)
    y = _as_chunk(y, "y").reshape(-1)
    sw = _as_chunk(sw, "sample_weight").reshape(-1)
    _check_chunk_shape(X, y.shape[0], x.shape[0] - 1)   # x ends with the intercept
    n_c, d = X.shape
    sums = np.zeros(d + 3)
    sums[d + 2] = sw.sum()
    extra = None
    if stats:
        data = X.data if sp.issparse(X) else X
        finite = bool(np.all(np.isfinite(data)) and np.all(np.isfinite(y))
                      and np.all(np.isfinite(sw)) and np.all(sw >= 0))
        extra = (finite, 0.0, _sample_bytes(X, n_c))
        if not finite:
            return sums, extra
    if n_c == 0:
        return sums, extra
    ds = make_dataset(X)
    if stats:
        sq = np.empty(n_c)
        row_sqnorms(ds, sq)
        # inf: a squared row norm overflows (whatever its weight; _check_first refuses it)
        bound = float(np.max(sw * (sq + 1.0))) if np.all(np.isfinite(sq)) else np.inf
        extra = (True, bound, extra[2])
    cls, args = loss_spec
    tables = _cgvr.HeadTables(ds, y, sw * (n_c / n_total), cls(*args), 0.0, 0.0, True)
    sums[d + 1] = tables.objective_gradient(np.ascontiguousarray(x), sums[:d + 1],
                                            np.empty(n_c))
    return sums, extra


def _chunk_margins(block, x, p):
    """On a worker: the margins ``X x`` and ``X p`` of one chunk (intercepts ``x[d]``,
    ``p[d]``), as the rows of a (2, n_chunk) array."""
    X = _as_chunk(block)
    if X.shape[0] == 0:
        return np.zeros((2, 0))
    ds = make_dataset(X)
    return np.stack([ds.margins(np.ascontiguousarray(x[:-1]), float(x[-1])),
                     ds.margins(np.ascontiguousarray(p[:-1]), float(p[-1]))])


def _chunk_line(zq, y, sw, steps, loss_spec, n_total, changes=False):
    """On a worker: the chunk's share of the loss part of ``f(x + a p)`` (with ``changes``:
    of ``f(x + a p) - f(x)``, summed as the rows' loss changes) and of its derivative in
    ``a`` for each ``a`` in ``steps`` (weights ``sw / n``), from the margins of
    :func:`_chunk_margins`: a (2, len(steps)) array."""
    out = np.zeros((2, len(steps)))
    if zq.shape[1] == 0:
        return out
    y = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
    sw = np.ascontiguousarray(sw, dtype=np.float64).reshape(-1)
    cls, args = loss_spec
    loss = cls(*args)
    z = np.ascontiguousarray(zq[0])
    for k, a in enumerate(steps):
        t = np.ascontiguousarray(zq[0] + a * zq[1])
        out[0, k] = sw @ np.asarray(
            loss.loss_change_array(z, np.ascontiguousarray(a * zq[1]), y) if changes
            else loss.loss_array(t, y))
        out[1, k] = sw @ (np.asarray(loss.dloss_array(t, y)) * zq[1])
    return out / n_total


def _first(part):
    return part[0]


def _extra(part):
    return part[1]


def _take(block, y, sw, x, rows, loss_spec):
    """On a worker: the rows ``rows`` of one chunk with their targets, weights and
    ``dl0 = loss'(X_i x)`` (compiled margins and loss derivative)."""
    X = _as_chunk(block)[rows]
    y = np.ascontiguousarray(np.asarray(y, dtype=np.float64).reshape(-1)[rows])
    sw = np.asarray(sw, dtype=np.float64).reshape(-1)[rows]
    z = make_dataset(X).margins(np.ascontiguousarray(x[:-1]), float(x[-1]))
    cls, args = loss_spec
    return X, y, sw, np.asarray(cls(*args).dloss_array(z, y))


def _chunk_moments(block):
    """On a worker: the rows, column means and column sums of squared deviations of one
    chunk."""
    X = _as_chunk(block)
    n_c = X.shape[0]
    if n_c == 0:
        return 0, np.zeros(X.shape[1]), np.zeros(X.shape[1])
    mean, std = column_moments(X, max_rows=n_c)
    return n_c, mean, n_c * std * std


def _merge_moments(a, b):
    """The moments of two chunks together (Chan, Golub and LeVeque's pairwise update: no
    cancellation for columns of large mean and small spread)."""
    (n_a, mean_a, sq_a), (n_b, mean_b, sq_b) = a, b
    n = n_a + n_b
    if n == 0:
        return a
    delta = mean_b - mean_a
    return n, mean_a + delta * (n_b / n), sq_a + sq_b + delta * delta * (n_a * n_b / n)


def _tree_sum(items, delayed, combine=operator.add):
    """A binary tree of ``combine`` tasks in a fixed order (same chunking, same sum)."""
    while len(items) > 1:
        items = [delayed(combine)(a, b) for a, b in zip(items[::2], items[1::2])] \
            + ([items[-1]] if len(items) % 2 else [])
    return items[0]


class DaskData:
    """One head's data on the cluster: X, targets and weights as lists of delayed chunks.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        One chunk along the columns (dense or CSR chunks).
    y, sample_weight : dask.array.Array of shape (n_samples,)
        Chunked as X's rows.
    loss_spec : tuple (loss class, args)
        Builds the loss on the workers.
    """

    def __init__(self, X, y, sample_weight, loss_spec):
        import dask

        self._dask = dask
        self.n, self.d = (int(s) for s in X.shape)
        self.chunks = tuple(int(c) for c in X.chunks[0])
        self.bounds = np.concatenate([[0], np.cumsum(self.chunks)])
        # the head's targets and weights are computed once and kept on the workers
        y, sample_weight = dask.persist(y, sample_weight)
        self._persisted = (X, y, sample_weight)    # their results live while the fit runs
        self.X = X.to_delayed().ravel().tolist()
        self.y = y.to_delayed().ravel().tolist()
        self.sw = sample_weight.to_delayed().ravel().tolist()
        self.loss_spec = loss_spec
        self.weight_scale = 1.0   # n / sum(sample_weight), known after the first pass
        self.passes = 0
        self.gathers = 0
        self.gathered_rows = 0
        self.stats = None
        self.budget = gather_budget()
        self.row_bytes = None     # bytes per gathered row, known after the first pass

    def full_pass(self, x, rows=None):
        """One distributed pass at ``x`` (length d + 1, ``x[d]`` the intercept).

        Returns ``(loss part of f, loss part of grad f, sample)``: f and grad f without the
        penalty, with the normalised weights, and ``sample`` = :meth:`gather` of ``rows`` at
        ``x``, fetched in the same round trip (None without ``rows``).  The first pass also
        checks the data (finite values, non-negative weights with a positive sum) and sets
        ``weight_scale``, ``stats`` and ``row_bytes``.
        """
        delayed = self._dask.delayed
        first = self.stats is None
        x = np.array(x, dtype=np.float64)
        parts = [self._pass_task(k, x, first) for k in range(len(self.X))]
        total = _tree_sum([delayed(_first)(p) for p in parts], delayed)
        takes = [] if rows is None else self._take_tasks(x, rows)
        extras = [delayed(_extra)(p) for p in parts] if first else []
        total, extras, pieces = self._dask.compute(total, extras, takes)
        self.passes += 1
        if first:
            self._check_first(total[-1], extras)
            if not np.isfinite(total[-2]):
                # X's rows and their squared norms are finite (checked), so are the margins
                raise ValueError(
                    "The objective at the start overflows float64: the losses of the starting "
                    "coefficients (0, or the warm start's) are not finite. For a regressor, y "
                    "is too large in magnitude: scale it (e.g. divide it by its standard "
                    "deviation, or use TransformedTargetRegressor).")
        sample = None if rows is None else self._assemble(pieces, rows)
        scale = self.weight_scale
        return float(total[-2]) * scale, total[:-2] * scale, sample

    def _pass_task(self, k, x, stats):
        """The task of chunk k's share of a pass: ``(sums, extra)`` of :func:`_chunk_pass`
        (sums: the gradient, f, then sum sw)."""
        return self._dask.delayed(_chunk_pass, pure=True)(
            self.X[k], self.y[k], self.sw[k], x, self.loss_spec, self.n, stats)

    def _check_first(self, total_w, extras):
        """Validate what the first pass found; set the weight scale and the data stats."""
        if not all(extra[0] for extra in extras):
            raise ValueError("Input contains NaN or infinity (or a negative sample weight): "
                             "X, y and sample_weight of a Dask fit must be finite, the "
                             "weights non-negative.")
        if not (total_w > 0 and np.isfinite(total_w)):
            raise ValueError("sample_weight (times class_weight) must have a positive "
                             "finite sum; every sample has weight zero.")
        self.weight_scale = self.n / total_w
        if not all(np.isfinite(extra[1]) for extra in extras):
            raise row_norms_error()
        # max_i s_i (||x_i||^2 + 1) with the normalised weights (S3GD's step bound)
        self.stats = {"row_bound": max(extra[1] for extra in extras) * self.weight_scale}
        self.row_bytes = max(sum(extra[2] for extra in extras) / self.n, 1.0)

    def row_bound(self):
        """``max_i s_i (||x_i||^2 + 1)`` with the normalised weights (after the first
        pass)."""
        return self.stats["row_bound"]

    def max_rows(self, batch):
        """The most rows one gather brings (known after the first pass)."""
        return max_gather_rows(self.n, batch, self.row_bytes, self.budget)

    def _take_tasks(self, x, rows):
        which = np.searchsorted(self.bounds, rows, side="right") - 1
        return [self._take_task(k, x, rows[which == k] - self.bounds[k])
                for k in np.unique(which)]

    def _take_task(self, k, x, rows):
        """The task bringing rows ``rows`` of chunk k (:func:`_take`)."""
        return self._dask.delayed(_take, pure=True)(self.X[k], self.y[k], self.sw[k], x,
                                                    rows, self.loss_spec)

    def _assemble(self, pieces, rows):
        self.gathers += 1
        self.gathered_rows += len(rows)
        blocks = [p[0] for p in pieces]
        X = sp.vstack(blocks, format="csr") if sp.issparse(blocks[0]) else np.vstack(blocks)
        y, sw, dl0 = (np.concatenate([p[j] for p in pieces]) for j in (1, 2, 3))
        return X, y, sw * self.weight_scale, dl0

    def line(self, x, p):
        """One distributed pass: the margins ``X x`` and ``X p`` of every chunk, kept on the
        workers (16 bytes per row) for the trial steps of :meth:`line_values` (the
        margins of an earlier line are released)."""
        delayed = self._dask.delayed
        x, p = np.array(x, dtype=np.float64), np.array(p, dtype=np.float64)
        parts = [delayed(_chunk_margins, pure=True)(b, x, p) for b in self.X]
        self._line = self._dask.persist(*parts)
        self.passes += 1

    def line_values(self, steps, changes=False):
        """``(loss part of f, its derivative in a)`` at ``x + a p`` of the last
        :meth:`line` (with ``changes``: of ``f(x + a p) - f(x)``, see :func:`_chunk_line`),
        for each ``a`` in ``steps``: one round trip over the kept margins (no pass over X),
        ``2 len(steps)`` numbers back."""
        delayed = self._dask.delayed
        steps = np.array(steps, dtype=np.float64)
        parts = [delayed(_chunk_line, pure=True)(zq, y, s, steps, self.loss_spec, self.n,
                                                 changes)
                 for zq, y, s in zip(self._line, self.y, self.sw)]
        (total,) = self._dask.compute(_tree_sum(parts, delayed))
        return total * self.weight_scale

    def gather(self, x, rows):
        """The rows ``rows`` (sorted indices, duplicates allowed) of X with their targets,
        normalised weights and ``dl0 = loss'(X_i x)``: ``(X rows, y, sw, dl0)`` on the
        client."""
        x = np.array(x, dtype=np.float64)
        return self._assemble(self._dask.compute(*self._take_tasks(x, rows)), rows)

    def column_moments(self):
        """:func:`._stationarity.column_moments` of X (every row) by one pass over its
        chunks: ``2 d + 1`` numbers per chunk, merged by a binary tree of tasks."""
        delayed = self._dask.delayed
        parts = [delayed(_chunk_moments, pure=True)(block) for block in self.X]
        (n, mean, squares), = self._dask.compute(_tree_sum(parts, delayed, _merge_moments))
        self.passes += 1
        return mean, np.sqrt(squares / max(n, 1))


def penalty(x, d, alpha, alpha_b):
    """``(alpha/2) ||w||^2 + (alpha_b/2) b^2`` and its gradient."""
    grad = np.empty(d + 1)
    grad[:d] = alpha * x[:d]
    grad[d] = alpha_b * x[d]
    return 0.5 * (alpha * float(x[:d] @ x[:d]) + alpha_b * x[d] * x[d]), grad


def sample_tables(sample, loss_spec, alpha, alpha_b, fit_intercept, seed, stream):
    """A gathered sample ``(X, y, sw, dl0)`` as kernel tables (``HeadTables`` over the
    sample), and its dl0."""
    X, y, sw, dl0 = sample
    cls, args = loss_spec
    tables = _cgvr.HeadTables(make_dataset(X), y, sw, cls(*args), alpha, alpha_b,
                              fit_intercept, seed, stream)
    return tables, dl0
