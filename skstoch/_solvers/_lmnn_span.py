"""LMNNMetric on wide data (n_features >= n_samples): learn the metric in the span of the
data and lift it back (issue 18.8).

Every quantity of Eq. (21) but the off-diagonal l1 term sees X only through differences
x_i - x_j, which lie in the span of the centred data (dimension r <= n - 1 < d).  Writing
A in an orthonormal basis (U, U_perp) of that span and its complement, the hinge and the
pairs prior depend only on the block B = U' A U; the Frobenius term and the constraint
A >= epsilon I are smallest with the cross block 0 and the complement block epsilon I.  So
the optimum is ``U (B - epsilon I) U' + epsilon I`` with B learned on ``X U`` (n x r):
O(n d r) for the basis instead of O(d^3) per epoch.  The l1 term is then applied to B in
the basis U (not to A in the input basis), and the objective excludes the complement's
constant (documented on the estimator).

The same holds on narrow data whose centred rows span fewer than d directions (a constant
feature, or collinear ones such as a complete one-hot block): no hinge or pairs term sees
those directions, so the fit leaves them near the starting identity (only the small
Frobenius term shrinks them), which then outranks every learned direction in
``components_``.  :func:`floor_unspanned` gives them the optimum's value, epsilon, and no
coupling to the rest (exactly the optimum when they are coordinate directions, as for
constant features; otherwise up to the l1 term's share).
"""
import numpy as np

# Singular values below this fraction of the largest are treated as zero (rank of the
# centred data).
_RANK_RTOL = 1e-10


def data_span(X):
    """Orthonormal basis (d, r) of the span of the centred rows of X."""
    centred = X - X.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    r = max(1, int(np.sum(s > _RANK_RTOL * s[0]))) if s.size and s[0] > 0 else 1
    return np.ascontiguousarray(vt[:r].T)


def unspanned_directions(X, block_rows=4096):
    """Orthonormal basis (d, k) of the directions along which the centred rows of X do not
    vary, k = 0 when they span all d: eigenvectors of the centred scatter whose eigenvalue
    is at most ``d * machine epsilon`` times the largest (numpy's ``matrix_rank`` rule).
    The scatter is summed over blocks of rows, so the memory is O(d^2) beyond X."""
    d = X.shape[1]
    mean = X.mean(axis=0, dtype=np.float64)
    scatter = np.zeros((d, d))
    for start in range(0, X.shape[0], block_rows):
        block = np.asarray(X[start:start + block_rows], dtype=np.float64) - mean
        scatter += block.T @ block
    w, V = np.linalg.eigh(scatter)
    return np.ascontiguousarray(V[:, w <= d * np.finfo(np.float64).eps * max(w[-1], 0.0)])


def floor_unspanned(A, unspanned, eps):
    """``A`` with the directions of ``unspanned`` (from :func:`unspanned_directions`) at
    eigenvalue ``eps`` and decoupled from the others: ``K A K + eps N N'`` with ``N N'`` the
    projector onto them and ``K = I - N N'``.  Distances between rows of the training data
    are unchanged; ``A`` itself is returned when there is no such direction."""
    if unspanned.shape[1] == 0:
        return A
    null = unspanned @ unspanned.T
    keep = np.eye(A.shape[0]) - null
    floored = keep @ A @ keep + eps * null
    return 0.5 * (floored + floored.T)


def canonical_signs(rows):
    """Flip each row so that its entry of largest magnitude is positive (as
    scikit-learn's ``svd_flip``): a deterministic sign for each eigenvector."""
    if rows.shape[0] == 0:
        return rows
    pick = rows[np.arange(rows.shape[0]), np.argmax(np.abs(rows), axis=1)]
    return rows * np.where(pick < 0, -1.0, 1.0)[:, None]


def _gram(basis, S, shift=0.0):
    """``basis (S - shift I) basis'`` for a symmetric S >= shift I, as ``F F'`` (exactly
    symmetric, one O(d^2 r) product)."""
    w, V = np.linalg.eigh(0.5 * (S + S.T))
    F = basis @ (V * np.sqrt(np.maximum(w - shift, 0.0)))
    return F @ F.T


def lift(result, basis, params, n_features):
    """Map a fit on ``X @ basis`` back to the input space (in place on ``result``)."""
    eps = params.epsilon
    r = basis.shape[1]
    metric = _gram(basis, result.x, eps)
    metric[np.diag_indices(n_features)] += eps
    result.x = metric
    extra = result.extra
    rows = [extra["components"] @ basis.T]        # eigenvalues >= epsilon, largest first
    extra_rows = params.n_components - rows[0].shape[0]
    if extra_rows > 0:
        # the complement's directions, all with eigenvalue epsilon
        q, _ = np.linalg.qr(basis, mode="complete")
        rows.append(np.sqrt(eps) * q[:, r:r + extra_rows].T)
    extra["components"] = canonical_signs(np.vstack(rows))
    if params.prior == "identity":
        extra["prior"] = np.eye(n_features)
    else:
        extra["prior"] = _gram(basis, extra["prior"])
    return result
