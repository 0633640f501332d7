"""Anchors and the sparse anchor-sample graph of S3GD (paper 002, Algorithm 2).

Anchors are k-means centres snapped to their nearest training sample (eq. 13); every sample is
linked to its ``k`` nearest anchors with normalised Gaussian weights (eq. 14).  The graph is stored
as two ``(n_samples, k)`` arrays (anchor index, weight): every row has exactly ``k`` entries.
Distances are computed in row chunks against the ``m`` anchors only, so memory is
``O(chunk * m + n * k)``, never ``O(n^2)``.
"""
import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.metrics.pairwise import euclidean_distances, pairwise_distances_argmin

# anchor_method="auto" clusters a uniform subsample of at most max(this, 20 m) rows
_AUTO_SUBSAMPLE = 10_000
_CHUNK_ELEMENTS = 2_000_000   # distances held at once: chunk_rows * m


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
        ``"auto"``: the same on a uniform subsample of ``max(10,000, 20 m)`` rows (all rows when
        n is smaller), centres snapped to the nearest subsampled row, so the cost is
        O(subsample m d) instead of O(n m d) per k-means iteration.  ``"minibatch_kmeans"``:
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
    rows = None
    if method == "auto":
        size = max(_AUTO_SUBSAMPLE, 20 * n_anchors)
        if size < n:
            rows = np.sort(rng.choice(n, size, replace=False))
            X = X[rows]
        method = "kmeans"
    if method == "kmeans":
        km = KMeans(n_clusters=n_anchors, n_init=1, max_iter=kmeans_max_iter, random_state=seed)
    else:
        km = MiniBatchKMeans(n_clusters=n_anchors, n_init=1, max_iter=kmeans_max_iter,
                             batch_size=min(n, max(1024, 3 * n_anchors)), random_state=seed)
    km.fit(X)
    centers = km.cluster_centers_
    snapped = pairwise_distances_argmin(centers, X)
    if rows is not None:
        snapped = rows[snapped]
    return np.unique(snapped).astype(np.int32)


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
    neighbors = np.empty((n, k), dtype=np.int32)
    weights = np.empty((n, k), dtype=np.float64)
    z_sq = _row_sqnorms(Z)[np.newaxis, :]
    chunk = max(1, _CHUNK_ELEMENTS // max(m, 1))
    position = None
    if anchor_indices is not None:
        position = np.full(n, -1, dtype=np.int64)
        position[anchor_indices] = np.arange(m)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        Xc = X[start:stop]
        d2 = euclidean_distances(Xc, Z, squared=True, Y_norm_squared=z_sq)
        if position is not None:
            pos = position[start:stop]
            rows = np.flatnonzero(pos >= 0)
            d2[rows, pos[rows]] = -1.0   # below every true distance: self comes first
        if k < m:
            part = np.argpartition(d2, k - 1, axis=1)[:, :k]
        else:
            part = np.broadcast_to(np.arange(m), d2.shape).copy()
        pd = np.take_along_axis(d2, part, axis=1)
        order = np.argsort(pd, axis=1, kind="stable")
        idx = np.take_along_axis(part, order, axis=1)
        sq = np.maximum(np.take_along_axis(pd, order, axis=1), 0.0)
        neighbors[start:stop] = idx
        weights[start:stop] = anchor_weights(sq, kernel_width=kernel_width, eps=eps)
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
