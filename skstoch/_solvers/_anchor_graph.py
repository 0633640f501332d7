"""Anchors and the sparse anchor-sample graph of S3GD (paper 002, Algorithm 2), and the
k-means strata of its stratified-SGD baseline.

Anchors are k-means centres snapped to their nearest training sample (eq. 13); every sample is
linked to its ``k`` nearest anchors with normalised Gaussian weights (eq. 14).  The graph is stored
as two ``(n_samples, k)`` arrays (anchor index, weight): every row has exactly ``k`` entries.
Distances are computed in row chunks against the ``m`` anchors only, so memory is
``O(chunk * m + n * k)``, never ``O(n^2)``.
"""
import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.utils.extmath import safe_sparse_dot

from .._fast._s3gd import anchor_topk

# anchor_method="auto" clusters a uniform subsample of max(this, 20 m) rows
_AUTO_SUBSAMPLE = 2_000
_CHUNK_ELEMENTS = 2_000_000   # distances held at once: chunk_rows * m
TIE_RTOL = 1e-12    # distances this close (relative to their scale) are ties: lowest index
# kernel_eps is floored here: below it eps * eps underflows to 0, and a row at distance 0 from
# its nearest anchor got the weight 0 / 0
SMALLEST_EPS = float(np.sqrt(np.finfo(np.float64).tiny))
# anchor_method="auto" on more than _PROJECT_ABOVE features clusters in a random projection
_PROJECT_ABOVE = 256
_PROJECT_DIM = 64


class AnchorGraph:
    """The anchor-sample graph (ASG) of one training set.

    Attributes
    ----------
    anchor_indices : ndarray of int32, shape (m,)
        Rows of X that are anchors (distinct, sorted).
    neighbors : ndarray of int32, shape (n_samples, k)
        Position in ``anchor_indices`` of each sample's k nearest anchors (nearest first).
    weights : ndarray of float64, shape (n_samples, k)
        Normalised Gaussian weights gamma (each row sums to 1).
    """

    def __init__(self, anchor_indices, neighbors, weights):
        self.anchor_indices = anchor_indices
        self.neighbors = neighbors
        self.weights = weights

    @property
    def n_anchors(self):
        return self.anchor_indices.shape[0]

    @property
    def n_neighbors(self):
        return self.neighbors.shape[1]

    def matrix(self):
        """M as an (n_samples, m) CSR matrix (k entries per row)."""
        n, k = self.neighbors.shape
        indptr = np.arange(0, n * k + 1, k, dtype=np.int64)
        return sp.csr_matrix((self.weights.ravel(), self.neighbors.ravel(), indptr),
                             shape=(n, self.n_anchors))


def _row_sqnorms(X):
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


def select_anchors(X, n_anchors, *, method="auto", kmeans_max_iter=30, random_state=0):
    """Anchor rows of X: k-means centres snapped to their nearest sample (eq. 13).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    n_anchors : int
        Requested number of anchors m; when ``m >= n_samples`` every sample is an anchor.
    method : {"auto", "kmeans", "minibatch_kmeans", "random"}
        ``"kmeans"``: KMeans on all rows, centres snapped to the nearest row (the paper).
        ``"auto"``: the same on a uniform subsample of ``max(2,000, 20 m)`` rows (all rows when
        n is smaller), centres snapped to the nearest subsampled row, so the cost is
        O(subsample m d) instead of O(n m d) per k-means iteration and does not grow with n;
        above 256 features the clustering and the snapping run in a random Gaussian
        projection to 64 dimensions (distances preserved up to ~20%, Johnson-Lindenstrauss),
        so dense centres never have d columns.  ``"minibatch_kmeans"``:
        MiniBatchKMeans on all rows.  ``"random"``: a uniform sample of rows (no clustering).
    kmeans_max_iter : int
    random_state : int

    Returns
    -------
    anchor_indices : ndarray of int32
        Distinct sorted row indices (fewer than ``n_anchors`` when snapped centres coincide).
    """
    n = X.shape[0]
    if n_anchors >= n:
        return np.arange(n, dtype=np.int32)
    rng = np.random.RandomState(random_state % (2**32))
    if method == "random":
        return np.sort(rng.choice(n, n_anchors, replace=False)).astype(np.int32)
    seed = int(rng.randint(0, 2**31 - 1))
    if method == "auto":
        size = max(_AUTO_SUBSAMPLE, 20 * n_anchors)
        rows = np.sort(rng.choice(n, size, replace=False)) if size < n else np.arange(n)
        Xs = X[rows].astype(np.float64, copy=False)   # float32 X: the subsample in float64
        if X.shape[1] > _PROJECT_ABOVE:
            # high-dimensional: cluster in a random Gaussian projection (Johnson-Lindenstrauss)
            # so that Lloyd's dense centres are (m, _PROJECT_DIM) instead of (m, d)
            R = rng.standard_normal((X.shape[1], _PROJECT_DIM)) / np.sqrt(_PROJECT_DIM)
            Xs = np.ascontiguousarray(safe_sparse_dot(Xs, R, dense_output=True))
        centers = _lloyd(Xs, n_anchors, kmeans_max_iter, rng)
        return np.unique(rows[_nearest_rows(centers, Xs)]).astype(np.int32)
    if method == "kmeans":
        km = KMeans(n_clusters=n_anchors, n_init=1, max_iter=kmeans_max_iter, random_state=seed)
    else:
        km = MiniBatchKMeans(n_clusters=n_anchors, n_init=1, max_iter=kmeans_max_iter,
                             batch_size=min(n, max(1024, 3 * n_anchors)), random_state=seed)
    km.fit(X)
    return np.unique(_nearest_rows(km.cluster_centers_, X)).astype(np.int32)


def _lloyd(X, m, n_iter, rng):
    """Plain Lloyd k-means (dense centres), initialised at m distinct random rows.

    A few BLAS products per iteration: on a few thousand rows this is several times faster
    than ``KMeans`` (whose per-call overhead dominates at this size).  Empty clusters keep
    their centre.  Stops once an iteration leaves the labels unchanged (the centres would
    stay the same, bit for bit): ``n_iter`` is a bound, not a count (``kmeans_max_iter=10**12``
    ran 10**12 iterations).
    """
    s = X.shape[0]
    C = X[rng.choice(s, m, replace=False)]
    C = C.toarray() if sp.issparse(C) else np.array(C, dtype=np.float64)
    x_sq = _row_sqnorms(X)
    previous = None
    for _ in range(n_iter):
        d2 = np.asarray(safe_sparse_dot(X, np.ascontiguousarray(C.T), dense_output=True))
        d2 *= -2.0
        d2 += (C * C).sum(axis=1)[np.newaxis, :]
        d2 += x_sq[:, np.newaxis]
        labels = np.argmin(d2, axis=1)
        if previous is not None and np.array_equal(labels, previous):
            break
        previous = labels
        counts = np.bincount(labels, minlength=m)
        onehot = sp.csr_matrix((np.ones(s), (labels, np.arange(s))), shape=(m, s))
        sums = onehot @ X
        sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums)
        keep = counts > 0
        C[keep] = sums[keep] / counts[keep, np.newaxis]
    return C


def _nearest_rows(centers, X):
    """For each centre the index of its nearest row of X (ties: lowest index, ties being
    distances within ``TIE_RTOL`` of their scale: a k-means centre halfway between two rows
    is at the same distance from both, and dense and CSR products round it differently)."""
    x_sq = _row_sqnorms(X)
    largest = x_sq.max(initial=0.0)
    out = np.empty(centers.shape[0], dtype=np.intp)
    chunk = max(1, _CHUNK_ELEMENTS // max(X.shape[0], 1))
    for start in range(0, centers.shape[0], chunk):
        c = centers[start:start + chunk]
        d2 = np.asarray(safe_sparse_dot(X, np.ascontiguousarray(c.T), dense_output=True)).T
        d2 = d2 * -2.0
        d2 += x_sq[np.newaxis, :]
        # ||x||^2 - 2 x.c rounds at the scale of ||x||^2 + ||c||^2
        scale = largest + np.einsum("ij,ij->i", c, c)
        nearest = d2.min(axis=1, initial=np.inf) + TIE_RTOL * scale
        out[start:start + chunk] = np.argmax(d2 <= nearest[:, np.newaxis], axis=1)
    return out


def anchor_weights(sqdist, *, kernel_width="nearest", eps=1e-4):
    """Normalised Gaussian weights from squared distances to the k nearest anchors.

    Parameters
    ----------
    sqdist : ndarray of shape (n, k)
        Squared distances, nearest first (clipped at 0 here).
    kernel_width : {"nearest", "paper"}
        ``"nearest"``: sigma = max(eps, d_1) (scale free); ``"paper"``: eq. (14) literally,
        sigma = max(eps, sqrt(d_1)), i.e. sigma^2 = max(eps^2, d_1).
    eps : float

    Returns
    -------
    weights : ndarray of shape (n, k), rows summing to 1
    """
    sqdist = np.maximum(sqdist, 0.0)
    d1sq = sqdist[:, :1]
    eps = max(eps, SMALLEST_EPS)
    if kernel_width == "nearest":
        sigma2 = np.maximum(eps * eps, d1sq)
    else:
        sigma2 = np.maximum(eps * eps, np.sqrt(d1sq))
    # shift by the nearest distance: the normalisation cancels it and nothing underflows
    g = np.exp(-(sqdist - d1sq) / sigma2)
    return g / g.sum(axis=1, keepdims=True)


def nearest_anchors(X, Z, k, *, kernel_width="nearest", eps=1e-4, anchor_indices=None):
    """The k nearest anchors of every row of X and their weights, computed in row chunks.

    ``anchor_indices`` (rows of X that are the anchors Z) makes each anchor's distance to
    itself exactly 0 (the expanded formula leaves rounding noise there).

    Returns
    -------
    neighbors : ndarray of int32, shape (n, k)
    weights : ndarray of float64, shape (n, k)
    """
    n, m = X.shape[0], Z.shape[0]
    k = min(k, m)
    if k < 1:
        raise ValueError(f"need at least one anchor and one neighbour, got m={m}, k={k}")
    neighbors = np.empty((n, k), dtype=np.int32)
    weights = np.empty((n, k), dtype=np.float64)
    # a float32 X is read in float64 row chunks (distances as for its float64 conversion)
    wide = X.dtype == np.float32
    Z = Z.astype(np.float64) if wide else Z
    z_sq = np.ascontiguousarray(_row_sqnorms(Z), dtype=np.float64)
    x_sq = None if wide else np.ascontiguousarray(_row_sqnorms(X), dtype=np.float64)
    chunk = max(1, _CHUNK_ELEMENTS // max(m, 1))
    if wide and not sp.issparse(X):   # the float64 chunk of X too stays small
        chunk = min(chunk, max(1, _CHUNK_ELEMENTS // 8 // max(X.shape[1], 1)))
    position = np.full(n, -1, dtype=np.int64)
    if anchor_indices is not None:
        position[anchor_indices] = np.arange(m)
    ZT = Z.T
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        Xc = X[start:stop].astype(np.float64) if wide else X[start:stop]
        prod = np.ascontiguousarray(safe_sparse_dot(Xc, ZT, dense_output=True),
                                    dtype=np.float64)
        sq = np.ascontiguousarray(_row_sqnorms(Xc)) if wide else x_sq[start:stop]
        anchor_topk(prod, sq, z_sq, position[start:stop], k,
                    kernel_width == "paper", float(max(eps, SMALLEST_EPS)), neighbors, weights,
                    start)
    return neighbors, weights


def build_anchor_graph(X, *, n_anchors=100, n_neighbors=5, kernel_width="nearest",
                       kernel_eps=1e-4, method="auto", kmeans_max_iter=30, random_state=0):
    """Anchors (Alg. 2, eq. 13) and the k-NN anchor-sample graph (eq. 14) of X.

    When ``n_anchors >= n_samples`` every sample is its own anchor; with ``n_neighbors=1`` the
    graph is then the identity and S3GD is exactly Prox-SVRG.

    Returns
    -------
    AnchorGraph
    """
    anchor_indices = select_anchors(X, n_anchors, method=method,
                                    kmeans_max_iter=kmeans_max_iter, random_state=random_state)
    Z = X[anchor_indices]
    neighbors, weights = nearest_anchors(X, Z, n_neighbors, kernel_width=kernel_width,
                                         eps=kernel_eps, anchor_indices=anchor_indices)
    return AnchorGraph(anchor_indices, neighbors, weights)


def stratify(X, n_strata, *, method="auto", kmeans_max_iter=10, random_state=0):
    """Strata of stratified SGD: k-means with ``n_strata`` clusters (paper: p clusters).

    ``method`` as for :func:`select_anchors`: ``"minibatch_kmeans"`` (and ``"auto"`` above
    50,000 rows) MiniBatchKMeans, ``"random"`` uniform random labels, else KMeans.

    Returns
    -------
    order : ndarray of int32, shape (n_samples,)
        The rows sorted by stratum (stable).
    ptr : ndarray of int64
        Stratum c is ``order[ptr[c]:ptr[c + 1]]``; empty clusters are dropped.
    """
    rs = int(random_state % (2**31 - 1))
    n = X.shape[0]
    if method == "minibatch_kmeans" or (method == "auto" and n > 50_000):
        km = MiniBatchKMeans(n_clusters=n_strata, n_init=1, max_iter=kmeans_max_iter,
                             random_state=rs)
    elif method == "random":
        labels = np.random.RandomState(rs).randint(0, n_strata, n)
        km = None
    else:
        km = KMeans(n_clusters=n_strata, n_init=1, max_iter=kmeans_max_iter, random_state=rs)
    if km is not None:
        labels = km.fit(X).labels_
    order = np.argsort(labels, kind="stable").astype(np.int32)
    counts = np.bincount(labels, minlength=n_strata)
    counts = counts[counts > 0]
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return order, ptr
