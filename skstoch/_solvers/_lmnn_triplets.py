"""Triplet tables of LMNNMetric: target pairs, impostor searches, the prior matrix and the
automatic step (paper 001, section 4; Weinberger & Saul's k-NN recipe).

A triplet (i, j, l) has j a target neighbour of i (same label) and l an impostor (another
label).  :class:`TripletSource` draws the target pairs once per fit and hands out the
table: fixed random impostors ('random', the paper's recipe) or the nearest impostors in
the current metric, re-searched when the solver asks ('knn').  Every search is blocked
(memory O(block x n_candidates)), never an n x n matrix.
"""
import numpy as np
import scipy.linalg
from sklearn.neighbors import NearestNeighbors

from .._fast._lmnn import select_ksmallest

# Rows per block when forming the prior matrix from pair differences (memory O(block d)),
# and pairs per block when drawing the 'random' tables (memory O(block k q) beyond the table).
_BLOCK = 4096
# dtype of the triplet tables and target pairs (half the bytes of int64; the kernels read it).
INDEX = np.int32
# Impostor searches with at most this many anchor x candidate distances run as one chunked
# pass over all classes; larger ones as one NearestNeighbors search per class.
_SMALL_SEARCH = 1 << 22
# Working memory (MB) of the blocked distance pass; _LEAN_WORKING_MEMORY_MB where the fit
# reads a float32 X (its leave-one-out check of c='auto', see loo_knn_accuracy).
_WORKING_MEMORY_MB = 64
_LEAN_WORKING_MEMORY_MB = 2
# Rows of a float32 X widened to float64 at a time by map_rows.
_MAP_BLOCK = 1024
# Triplets sampled to set the automatic step size.
_N_SCALE_SAMPLES = 2000
# eta0="auto" = _AUTO_FACTOR / (c s), s = mean squared length of triplet differences.
_AUTO_FACTOR = 5.0
# c="auto" for the 'random' recipe: c / (1 - c) = _AUTO_C_MARGIN / rho (at least
# _AUTO_C_MIN, at most _AUTO_C_MAX), rho the largest generalized eigenvalue of (impostor
# scatter - target scatter, prior) on the table; see auto_c.
AUTO_C_DEFAULT = _AUTO_C_MIN = 0.5
_AUTO_C_MAX = 0.9
_AUTO_C_MARGIN = 1.4
# Leave-one-out 3-NN accuracy of a candidate metric (c='auto'): queries and reference rows,
# evenly spaced among the training rows (the queries are every 4th reference row).
_LOO_REFERENCE = 4096
_LOO_NEIGHBORS = 3
# Triplets (evenly spaced in the table) on which auto_c estimates the scatters.
_N_BALANCE_TRIPLETS = 20000


class TripletSource:
    """The target pairs and the triplet tables of one fit, bounded by ``search_size``.

    'random' (the paper's recipe): ``n_neighbors`` random same-class partners per point and
    ``n_impostors`` random differently-labelled points per pair, drawn once (O(n)).

    'knn', exhaustive when ``n_samples <= search_size`` (or ``search_size=None``): every
    point is an anchor, its targets are its nearest same-class points (Euclidean), and its
    impostors are searched among all differently-labelled points at every refresh.
    Otherwise (large data) a fixed random pool of ``search_size`` anchors gets its target
    neighbours among the pool once (searching them among all class members would make
    targets far denser than the sampled impostors, so that almost every triplet is
    inactive: measured, that metric was worse than Euclidean at n=100,000); each refresh
    re-searches the impostors of only as many pool anchors as the coming epoch's stochastic
    gradients can use (at least ``search_size // 4``), among ``search_size`` randomly drawn
    points redrawn at every refresh.  Cost O(n_anchors n_candidates d) per refresh.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64 or float32 (read as float64 a
        block of rows at a time)
    y : ndarray of shape (n_samples,)
        Class codes 0 .. n_classes - 1 (some class has 2 members: checked by the front
        end).  The points of 1-member classes are impostors of the others, never anchors.
    params : LMNNParams
        Reads ``triplet_strategy``, ``n_neighbors``, ``n_impostors``, ``search_size`` and
        ``batch_size``.
    rng : numpy.random.Generator
        Draws the pool, the random pairs and impostors and the refreshed samples.

    Attributes
    ----------
    pairs : ndarray of shape (n_pairs, 2), int32
        (anchor, target) pairs, ``n_neighbors`` consecutive rows per anchor (for 'random', a
        view of the table's first two columns: no copy).
    layout : tuple (k, q) or None
        For 'knn' tables: anchor a's k targets times q impostors are rows
        ``(a k + j) q + r`` (the objective computes each distance once); None for 'random'.
    refreshes : bool
        Whether :meth:`table` depends on the metric ('knn').
    n_anchors : int
        Anchors of the pool (the number of draws after which a refresh pays).
    """

    def __init__(self, X, y, params, rng):
        n = X.shape[0]
        if n > np.iinfo(INDEX).max:
            raise ValueError(f"LMNNMetric handles at most {np.iinfo(INDEX).max} samples, "
                             f"got {n}.")
        self.X = X
        self.y = y
        self.counts = np.bincount(y)
        self.rng = rng
        self.k = params.n_neighbors
        self.batch = params.batch_size
        self.refreshes = params.triplet_strategy == "knn"
        self.q = params.n_impostors     # at most the smallest complement (front end)
        size = params.search_size
        self.exhaustive = not self.refreshes or size is None or n <= size
        self.size = n if self.exhaustive else int(size)
        if self.exhaustive:
            self.pool = np.arange(n, dtype=INDEX)
        else:
            self.pool = np.sort(rng.choice(n, size=self.size, replace=False)).astype(np.int64)
        # a point of a 1-member class has no target neighbour: an impostor only, no anchor
        self.pool = self.pool[self.counts[y[self.pool]] >= 2]
        self.n_anchors = len(self.pool)
        order = np.argsort(y, kind="stable")
        starts = np.concatenate(([0], np.cumsum(self.counts)))
        if self.refreshes:
            self.pairs = self._nearest_pairs(order, starts)
            self.layout = (self.k, self.q)
            self._fixed = None
        else:
            self.pairs = self._random_pairs(order, starts)
            self.layout = None
            self._fixed = self._random_triplets(order, starts, self.q)
            # the table repeats each pair q times: read the pairs from it
            self.pairs = self._fixed.reshape(-1, self.q, 3)[:, 0, :2]

    def table(self, A, n_steps, mapped=None):
        """The triplet table for an epoch of ``n_steps`` stochastic gradients at metric A
        (``mapped``: ``X R`` with ``A = R R'`` if already computed)."""
        if self._fixed is not None:
            return self._fixed
        return self._knn_triplets(A, n_steps, mapped)

    # ------------------------------------------------------------------ target pairs
    def _random_pairs(self, order, starts):
        """k random same-class partners per pool anchor, never the anchor itself (drawn
        _BLOCK anchors at a time: the same draws as one call, no (n, k) temporaries)."""
        anchors, k = self.pool, self.k
        n, m = len(self.y), len(anchors)
        counts = np.diff(starts)
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n)
        pairs = np.empty((m, k, 2), dtype=INDEX)
        pairs[:, :, 0] = anchors[:, None]
        for start in range(0, m, _BLOCK):
            stop = min(m, start + _BLOCK)
            block = anchors[start:stop]
            y = self.y[block]
            cls_size = counts[y][:, None]
            cls_start = starts[y][:, None]
            within = pos[block, None] - cls_start
            shift = 1 + (self.rng.random((stop - start, k)) * (cls_size - 1)).astype(np.int64)
            pairs[start:stop, :, 1] = order[cls_start + (within + shift) % cls_size]
        return pairs.reshape(-1, 2)

    def _nearest_pairs(self, order, starts):
        """The k nearest same-class points of each pool anchor, searched among the pool
        (the same sampling density as the impostor candidates); a class with too few pool
        members searches all its members.  An anchor of a class of m <= k members has only
        m - 1 neighbours: it repeats them in turn to fill its k rows (the table keeps k rows
        per anchor), so that one small class does not cut every other class's k."""
        X, pool, k = self.X, self.pool, self.k
        partners = np.empty((len(pool), k), dtype=np.int64)
        pool_cls = self.y[pool]
        for cls in range(len(starts) - 1):
            in_pool = np.flatnonzero(pool_cls == cls)
            if len(in_pool) == 0:
                continue
            queries = pool[in_pool]
            members = queries if len(queries) > k else np.sort(order[starts[cls]:starts[cls + 1]])
            k_cls = min(k, len(members) - 1)
            self_pos = np.searchsorted(members, queries)
            Xm = rows64(X, members)
            Xq = Xm if members is queries else rows64(X, queries)    # one copy if the same
            if len(queries) * len(members) <= _SMALL_SEARCH:
                # small class: one blocked GEMM pass (NearestNeighbors' per-call overhead
                # dominated small fits)
                ind = blocked_ksmallest(Xq, Xm, k_cls, exclude=self_pos)
            else:
                nn = NearestNeighbors(n_neighbors=k_cls + 1).fit(Xm)
                ind = _drop_self(nn.kneighbors(Xq, return_distance=False), self_pos, k_cls)
            del Xm, Xq
            partners[in_pool] = members[ind[:, np.arange(k) % k_cls]]
        return np.column_stack([np.repeat(pool, k), partners.ravel()]).astype(INDEX)

    # ------------------------------------------------------------------ impostors
    def _random_triplets(self, order, starts, q):
        """The paper's recipe: q random differently-labelled points per pair, written into
        the table _BLOCK pairs at a time (the same draws as one call)."""
        n = len(self.y)
        counts = np.diff(starts)
        pairs = self.pairs
        table = np.empty((len(pairs), q, 3), dtype=INDEX)
        table[:, :, :2] = pairs[:, None, :]
        for start in range(0, len(pairs), _BLOCK):
            stop = min(len(pairs), start + _BLOCK)
            anchor_cls = self.y[pairs[start:stop, 0]]
            size = counts[anchor_cls][:, None]
            r = (self.rng.random((stop - start, q)) * (n - size)).astype(np.int64)
            r = np.where(r >= starts[anchor_cls][:, None], r + size, r)
            table[start:stop, :, 2] = order[r]
        return table.reshape(-1, 3)

    def _refreshed_anchors(self, n_steps):
        """Anchors refreshed for an epoch of ``n_steps`` stochastic gradients."""
        if self.exhaustive:
            return self.n_anchors
        need = -(-2 * n_steps * self.batch // (self.k * self.q))
        return int(min(self.n_anchors, max(self.size // 4, need)))

    def _candidates(self):
        """Impostor candidates: all points, or a fresh random sample of ``size`` points
        (all points if the sample misses too many members of some class's complement)."""
        n = self.X.shape[0]
        if self.exhaustive:
            return np.arange(n, dtype=np.int64)
        cand = np.sort(self.rng.choice(n, size=self.size, replace=False)).astype(np.int64)
        in_sample = np.bincount(self.y[cand], minlength=len(self.counts))
        if np.min(len(cand) - in_sample) < self.q:
            return np.arange(n, dtype=np.int64)
        return cand

    def _knn_triplets(self, A, n_steps, mapped=None):
        """Triplets (i, j, l): target pairs (i, j) of the refreshed anchors with the
        ``q`` nearest differently-labelled candidates l of i in the metric A."""
        k, q, pairs = self.k, self.q, self.pairs
        m = self._refreshed_anchors(n_steps)
        if m < self.n_anchors:
            rows = np.sort(self.rng.choice(self.n_anchors, size=m, replace=False))
            pairs = pairs.reshape(self.n_anchors, k, 2)[rows].reshape(-1, 2)
        anchors = pairs[::k, 0]
        cand = self._candidates()
        if self.exhaustive:
            # anchors and candidates are all points: map X once (or reuse X R of the
            # objective just evaluated at this A)
            Zc = mapped if mapped is not None else map_rows(self.X, factor(A))
            # every point in order (the whole pool): no copy
            Zq = Zc if len(anchors) == len(Zc) else Zc[anchors]
        else:
            R = factor(A)
            Zq = map_rows(self.X, R, anchors)
            Zc = map_rows(self.X, R, cand)
        imp = cand[_impostors(Zq, Zc, q, self.y[anchors], self.y[cand])]
        # written in place by broadcasting (no repeated temporaries of the table's size)
        table = np.empty((len(anchors), k, q, 3), dtype=INDEX)
        table[..., :2] = pairs.reshape(len(anchors), k, 1, 2)
        table[..., 2] = imp[:, None, :]
        return table.reshape(-1, 3)


def _impostors(Zq, Zc, q, yq, yc):
    """Positions in Zc of the q nearest rows with another label, for each row of Zq."""
    if len(Zq) * len(Zc) <= _SMALL_SEARCH:
        # one blocked pass over all classes (small data: per-call overheads dominate)
        return blocked_ksmallest(Zq, Zc, q, yq, yc)
    # one fused distance + k-smallest search (sklearn's chunked brute force) per class
    imp = np.empty((len(Zq), q), dtype=np.int64)
    for cls in np.unique(yq):
        inside = np.flatnonzero(yq == cls)
        outside = np.flatnonzero(yc != cls)
        nn = NearestNeighbors(n_neighbors=q, algorithm="brute").fit(Zc[outside])
        imp[inside] = outside[nn.kneighbors(Zq[inside], return_distance=False)]
    return imp


def check_triplets(triplets, n_samples):
    """The table as C-contiguous int32 (INDEX) after checking its shape and index range (the
    kernels read it without bounds checks)."""
    if triplets.ndim != 2 or triplets.shape[1] != 3 or len(triplets) == 0:
        raise RuntimeError("internal error: no triplets were formed")
    if triplets.min() < 0 or triplets.max() >= n_samples:
        raise RuntimeError("internal error: triplet index out of range")
    return np.ascontiguousarray(triplets, dtype=INDEX)


def _drop_self(ind, self_pos, k):
    """Remove each row's own index ``self_pos`` from a (n, k+1) neighbour table (duplicates
    may put it anywhere); rows where it is absent drop their last column."""
    n = ind.shape[0]
    is_self = ind == np.asarray(self_pos)[:, None]
    has_self = is_self.any(axis=1)
    is_self[~has_self, -1] = True
    first = np.argmax(is_self, axis=1)
    keep = np.ones_like(ind, dtype=bool)
    keep[np.arange(n), first] = False
    return ind[keep].reshape(n, k)


def factor(A):
    """R with A = R R' for a positive definite A (Cholesky; eigh fallback)."""
    try:
        return np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        w, V = np.linalg.eigh(0.5 * (A + A.T))
        return V * np.sqrt(np.maximum(w, 0.0))


def rows64(X, rows):
    """``X[rows]`` as float64: a float64 X indexes as always, a float32 X converts only the
    selected rows (never a float64 copy of the whole X)."""
    out = X[rows]
    return out if out.dtype == np.float64 else out.astype(np.float64)


def map_rows(X, R, rows=None):
    """``X[rows] @ R`` (all rows when ``rows`` is None) in float64; a float32 X is widened
    one block of _MAP_BLOCK rows at a time (memory O(block d) beyond the output)."""
    if X.dtype == np.float64:
        return (X if rows is None else X[rows]) @ R
    n = X.shape[0] if rows is None else len(rows)
    out = np.empty((n, R.shape[1]))
    for start in range(0, n, _MAP_BLOCK):
        stop = min(n, start + _MAP_BLOCK)
        block = X[start:stop] if rows is None else X[rows[start:stop]]
        np.matmul(block.astype(np.float64), R, out=out[start:stop])
    return out


def pair_scatter(X, pairs):
    """(1/m) sum over pairs of (x_i - x_j)(x_i - x_j)' in blocks (memory O(block d))."""
    d = X.shape[1]
    S = np.zeros((d, d))
    buffer = np.empty((min(_BLOCK, len(pairs)), d))
    for start in range(0, len(pairs), _BLOCK):
        block = pairs[start:start + _BLOCK]
        D = buffer[:len(block)]
        # widened (exactly) and subtracted in float64, into one buffer for all blocks
        np.subtract(X[block[:, 0]], X[block[:, 1]], out=D, dtype=np.float64)
        S += D.T @ D
    S /= len(pairs)
    return 0.5 * (S + S.T)


def blocked_ksmallest(Zq, Zc, q, yq=None, yc=None, exclude=None, lean=False):
    """Column indices of the ``q`` smallest squared distances of each row of Zq to the rows
    of Zc (increasing distance), skipping the pairs where ``yq[a] == yc[b]`` and the columns
    ``exclude[a]`` (a row's own position).  Per row block (bounded by
    ``_WORKING_MEMORY_MB``: memory O(block n_candidates), never larger) one BLAS GEMM and
    one pass of the ``select_ksmallest`` kernel.  ``lean``: blocks bounded by
    ``_LEAN_WORKING_MEMORY_MB`` and no transposed copy of Zc."""
    n_q, n_c = len(Zq), len(Zc)
    sq_c = np.einsum("ij,ij->i", Zc, Zc)
    memory = _LEAN_WORKING_MEMORY_MB if lean else _WORKING_MEMORY_MB
    block = max(1, min(n_q, (memory << 20) // (8 * max(n_c, 1))))
    out = np.empty((n_q, q), dtype=np.int64)
    empty = np.empty(0, dtype=np.int64)
    yq = empty if yq is None else np.ascontiguousarray(yq, dtype=np.int64)
    yc = empty if yc is None else np.ascontiguousarray(yc, dtype=np.int64)
    exclude = empty if exclude is None else np.ascontiguousarray(exclude, dtype=np.int64)
    ZcT = Zc.T if lean else np.ascontiguousarray(Zc.T)
    for start in range(0, n_q, block):
        stop = min(start + block, n_q)
        G = Zq[start:stop] @ ZcT
        found = select_ksmallest(
            G, sq_c, yq[start:stop] if len(yq) else yq, yc,
            exclude[start:stop] if len(exclude) else exclude, q, out[start:stop])
        del G   # not alive while the next block's product is formed
        if found < q or out[start:stop].min() < 0:
            raise RuntimeError(
                f"internal error: fewer than {q} admissible neighbours in a search")
    return out


def _sum_sq(D):
    return float(np.einsum("ij,ij->", D, D))


def auto_step(X, triplets, c, rng, layout=None):
    """_AUTO_FACTOR / (c s), s = mean squared length of the pair and impostor differences of
    the triplets: a step then moves A by O(1) along the sampled directions.  For the 'knn'
    table (``layout`` = (k, q)) s is the exact table mean, computed from the distinct
    (anchor, target) and (anchor, impostor) pairs (each repeats q resp. k times in the
    table), over at most _N_SCALE_SAMPLES anchors; otherwise on _N_SCALE_SAMPLES random
    triplets."""
    if layout is not None and len(triplets) % (layout[0] * layout[1]) == 0:
        k, q = layout
        grid = triplets.reshape(-1, k, q, 3)
        if len(grid) > _N_SCALE_SAMPLES:
            grid = grid[rng.choice(len(grid), _N_SCALE_SAMPLES, replace=False)]
        anchors = rows64(X, grid[:, 0, 0, 0])
        # one (anchors x d) difference at a time: memory O(n d), not O(n k q d)
        sq_targets = sum(_sum_sq(anchors - rows64(X, grid[:, j, 0, 1])) for j in range(k))
        sq_impostors = sum(_sum_sq(anchors - rows64(X, grid[:, 0, j, 2])) for j in range(q))
        s = 0.5 * (sq_targets / (len(grid) * k) + sq_impostors / (len(grid) * q))
    else:
        sample = triplets[rng.integers(0, len(triplets),
                                       size=min(_N_SCALE_SAMPLES, len(triplets)))]
        a = rows64(X, sample[:, 0]) - rows64(X, sample[:, 1])
        b = rows64(X, sample[:, 0]) - rows64(X, sample[:, 2])
        s = 0.5 * (np.mean(np.sum(a * a, axis=1)) + np.mean(np.sum(b * b, axis=1)))
    if not np.isfinite(s) or s <= 0.0:
        s = 1.0
    return _AUTO_FACTOR / (max(c, 1e-3) * s)


def auto_c(X, triplets, prior, refreshed):
    """The push/pull trade-off of ``c='auto'``: 0.5 for the 'knn' recipe (``refreshed``)
    and without a prior; for the 'random' recipe the value below.

    Near the collapsed metric ``A = epsilon I`` every hinge is active and the gradient of
    Eq. (21) is ``c (P - I) + (1 - c) L`` (P, I: scatter of the table's target and impostor
    differences, L the prior).  Some direction v then lowers the objective by growing only
    if ``c v'(I - P)v > (1 - c) v'Lv``, i.e. ``c / (1 - c) > 1 / rho`` with ``rho`` the
    largest generalized eigenvalue of ``(I - P, L)``: how much farther the impostors are
    than the targets, against the pull, along the best direction.  With c too small the
    pull wins in every direction and the metric collapses to a multiple of the identity
    (Euclidean neighbours).  ``c / (1 - c) = _AUTO_C_MARGIN / rho`` gives that direction a
    fixed margin; clipped to [_AUTO_C_MIN, _AUTO_C_MAX].  The 'knn' recipe re-searches the
    impostors that invade the margin in the current metric, so the push does not fade and
    a larger c lost accuracy there (training-side validation, see the user guide).  The
    scatters use at most _N_BALANCE_TRIPLETS triplets of the table (evenly spaced: no
    random draw).
    """
    if refreshed or prior is None:
        return _AUTO_C_MIN
    d = X.shape[1]
    rows = triplets[_evenly_spaced(len(triplets), _N_BALANCE_TRIPLETS)]
    push = pair_scatter(X, rows[:, [0, 2]]) - pair_scatter(X, rows[:, :2])
    # a (numerically) singular prior: regularize by a tiny multiple of its mean eigenvalue
    pull = prior + (1e-9 * max(np.trace(prior) / d, 1e-300)) * np.eye(d)
    try:
        rho = float(scipy.linalg.eigh(push, pull, eigvals_only=True,
                                      subset_by_index=[d - 1, d - 1])[0])
    except (np.linalg.LinAlgError, ValueError):
        return _AUTO_C_MIN
    if not np.isfinite(rho) or rho <= 0.0:
        return _AUTO_C_MAX
    ratio = _AUTO_C_MARGIN / rho
    return float(np.clip(ratio / (1.0 + ratio), _AUTO_C_MIN, _AUTO_C_MAX))


def _evenly_spaced(n, m):
    """At most m evenly spaced positions in range(n)."""
    if n <= m:
        return np.arange(n)
    return np.linspace(0, n - 1, m).round().astype(np.int64)


def loo_knn_accuracy(X, y, A):
    """Leave-one-out 3-NN accuracy in the metric A of every 4th row of an evenly spaced
    sample of at most _LOO_REFERENCE training rows, their neighbours searched in that
    sample (blocked: memory O(block x sample), a smaller block for a float32 X)."""
    ref = _evenly_spaced(X.shape[0], _LOO_REFERENCE)
    Z = map_rows(X, factor(A), ref)
    pos = np.arange(0, len(ref), 4)
    k = min(_LOO_NEIGHBORS, len(ref) - 1)
    nearest = blocked_ksmallest(Z[pos], Z, k, exclude=pos, lean=X.dtype == np.float32)
    labels = y[ref][nearest]
    # majority vote, ties to the smallest label (as KNeighborsClassifier)
    votes = np.zeros((len(pos), int(y.max()) + 1), dtype=np.int64)
    np.add.at(votes, (np.repeat(np.arange(len(pos)), k), labels.ravel()), 1)
    return float(np.mean(np.argmax(votes, axis=1) == y[ref][pos]))
