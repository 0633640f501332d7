"""The k-nearest-neighbour graph of a Laplacian (manifold) term and its curvature bound.

Both work on the nodes ``X[rows]`` and never form an n x n matrix: the graph is an
(n_nodes, k) array of neighbour numbers, O(n_nodes k) memory.
"""
import numpy as np


def knn_graph(X, rows, n_neighbors):
    """Directed k-nearest-neighbour graph of the nodes ``X[rows]`` (Euclidean, self excluded).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    rows : int64 array of shape (n_nodes,)
        The rows of X that are the nodes; node ``j`` is ``X[rows[j]]``.
    n_neighbors : int
        k (at most ``n_nodes - 1`` are used).

    Returns
    -------
    neighbors : int64 array of shape (n_nodes, k)
        Node numbers (in ``[0, n_nodes)``, checked: the kernels index with them unchecked).
    """
    # imported here: sklearn.neighbors is needed only with a Laplacian term and costs
    # about as much to import as the rest of skstoch
    from sklearn.neighbors import NearestNeighbors

    Xn = X[rows]
    n_nodes = rows.shape[0]
    k = min(int(n_neighbors), n_nodes - 1)
    nn = NearestNeighbors(n_neighbors=k + 1).fit(Xn)
    ind = nn.kneighbors(Xn, return_distance=False)
    # drop each node itself (the first column, unless duplicates put another node first)
    self_col = ind == np.arange(n_nodes)[:, None]
    keep = np.where(self_col.any(axis=1)[:, None], ~self_col, np.arange(k + 1) < k)
    out = np.ascontiguousarray(ind[keep].reshape(n_nodes, k), dtype=np.int64)
    if out.size and (out.min() < 0 or out.max() >= n_nodes):
        raise RuntimeError("kNN graph index out of range")   # checked before any kernel use
    return out


def laplacian_curvature_bound(X, rows, neighbors, kernel_gamma, weight):
    """Upper bound on the curvature of ``weight * mean_E (f(x_a) - f(x_b))^2`` in the RKHS of
    the RBF kernel ``exp(-kernel_gamma ||x - x'||^2)``.

    The term is a mean of rank-one terms, so its curvature is at most
    ``2 weight max_e ||k(x_a, .) - k(x_b, .)||^2 = 4 weight max_e (1 - exp(-gamma ||x_a -
    x_b||^2))`` over the edges ``e = (a, b)`` of ``neighbors`` (nodes ``X[rows]``), computed
    in chunks of about 2**16 coordinates (O(1) extra memory).
    """
    n_nodes, k = neighbors.shape
    if k == 0:
        return 0.0
    sparse = hasattr(X, "toarray")
    max_sq = 0.0
    chunk = max(1, 2**16 // (k * max(1, X.shape[1])))
    for start in range(0, n_nodes, chunk):
        stop = min(n_nodes, start + chunk)
        a = X[rows[start:stop]]
        b = X[rows[neighbors[start:stop].ravel()]]
        diff = np.repeat(a.toarray() if sparse else a, k, axis=0)
        diff -= b.toarray() if sparse else b
        max_sq = max(max_sq, float(np.max(np.einsum("ij,ij->i", diff, diff))))
    return 4.0 * float(weight) * float(-np.expm1(-kernel_gamma * max_sq))
