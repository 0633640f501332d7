"""Euclidean projections used by the constrained solvers."""
import numpy as np

from .._fast._projection import l1_ball_projection


def project_l1_ball(v, radius):
    """Project ``v`` onto ``{w : ||w||_1 <= radius}`` (exact; a new array is returned).

    Sort based (Duchi et al. 2008), O(d log d); the same nogil code serves the kernels.
    """
    if not np.isfinite(radius) and radius > 0:
        return np.array(v, dtype=np.float64, copy=True)
    v = np.ascontiguousarray(v, dtype=np.float64)
    return l1_ball_projection(v.ravel(), float(radius)).reshape(v.shape)


def project_psd(matrix, eps=0.0):
    """Project a square matrix onto ``{A symmetric, A >= eps I}`` in Frobenius norm.

    The symmetric part is eigendecomposed and its eigenvalues are clipped at ``eps``.

    Returns
    -------
    projected : ndarray of shape (d, d)
    min_eigenvalue : float
        Smallest eigenvalue of the symmetric part before clipping.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix must be square, got shape {matrix.shape}")
    sym = 0.5 * (matrix + matrix.T)
    eigvals, eigvecs = np.linalg.eigh(sym)
    lowest = float(eigvals[0]) if eigvals.size else np.inf
    if lowest >= eps:
        return sym, lowest
    clipped = np.maximum(eigvals, eps)
    projected = (eigvecs * clipped) @ eigvecs.T
    return 0.5 * (projected + projected.T), lowest
