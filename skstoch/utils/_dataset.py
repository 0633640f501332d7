"""Turn validated input into the row datasets the kernels read."""
import numpy as np
import scipy.sparse as sp

from .._fast._dataset import RowDataset

_INT32_MAX = np.iinfo(np.int32).max


def make_dataset(X):
    """Wrap X (dense or sparse, already validated for finiteness) as a :class:`RowDataset`.

    Dense input becomes a C-contiguous float64 array; sparse input becomes canonical CSR
    (sorted indices, duplicates summed) with int32 column indices and int64 row pointers.
    The caller's arrays are never modified: a copy is made whenever a conversion is needed.
    """
    if sp.issparse(X):
        X = X.tocsr()
        if X.dtype != np.float64:
            X = X.astype(np.float64)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        if X.shape[1] > _INT32_MAX:
            raise ValueError(f"X has {X.shape[1]} columns; at most {_INT32_MAX} are supported")
        indices = np.ascontiguousarray(X.indices, dtype=np.int32)
        indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
        data = np.ascontiguousarray(X.data, dtype=np.float64)
        return RowDataset(data, indices, indptr, X.shape[1])
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got {X.ndim} dimension(s)")
    return RowDataset(X, None, None, X.shape[1])
