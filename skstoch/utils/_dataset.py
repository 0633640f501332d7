"""Turn validated input into the row datasets the kernels read."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from .._fast._dataset import RowDataset
from .._fast._s3gd import row_sqnorms
from ._validation import canonical_csr, max_abs, row_norms_error

_INT32_MAX = np.iinfo(np.int32).max


def make_dataset(X, float32=False):
    """Wrap X (dense or sparse, already validated for finiteness) as a :class:`RowDataset`.

    Dense input becomes a C-contiguous float64 array; sparse input becomes canonical CSR
    (sorted indices, duplicates summed) with int32 column indices and int64 row pointers.
    With ``float32=True`` a float32 X keeps its float32 values (the kernels that read them,
    see ``_fast/_dataset.pxd``, accumulate in double); other dtypes still become float64.
    The caller's arrays are never modified: a copy is made whenever a conversion is needed.
    """
    dtype = np.float32 if float32 and X.dtype == np.float32 else np.float64
    if sp.issparse(X):
        # checked in O(nnz) here too: the kernels index with these arrays unchecked
        X = canonical_csr(X)
        if X.dtype != dtype:
            X = X.astype(dtype)
        if X.shape[1] > _INT32_MAX:
            raise ValueError(f"X has {X.shape[1]} columns; at most {_INT32_MAX} are supported")
        indices = np.ascontiguousarray(X.indices, dtype=np.int32)
        indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
        data = np.ascontiguousarray(X.data, dtype=dtype)
        return RowDataset(data, indices, indptr, X.shape[1])
    X = np.ascontiguousarray(X, dtype=dtype)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got {X.ndim} dimension(s)")
    return RowDataset(X, None, None, X.shape[1])


WIDEN_ELEMENTS = 1 << 16   # entries of a float32 X widened to float64 at once


def rows_per_block(X, elements=WIDEN_ELEMENTS):
    """The rows of a block of X (dense or sparse) of about ``elements`` entries: ``elements
    // width``, and for a sparse X at least the rows that hold ``elements / 4`` stored
    entries (a stored entry costs its value, its index and their copies in a sparse
    product; a block as wide as a text X's vocabulary would be one row)."""
    rows = elements // max(X.shape[1], 1)
    if sp.issparse(X):
        per_row = max(X.nnz / max(X.shape[0], 1), 1.0)
        rows = max(rows, int(elements / 4 // per_row))
    return max(1, rows)


def float64_row_blocks(X, elements=WIDEN_ELEMENTS, rows=None):
    """``(positions, block)``: the rows of X (dense or CSR), or only ``rows`` (an index
    array, gathered a block at a time), as float64 blocks of about ``elements`` entries
    (:func:`rows_per_block`), one at a time, so that a float32 X is never widened whole
    (numpy casts all of it in every product with a float64 operand).  ``positions`` is the
    slice of the block's rows in X or in ``rows``; a block of a float64 X may be a view of
    it (read only)."""
    step = rows_per_block(X, elements)
    for start in range(0, X.shape[0] if rows is None else len(rows), step):
        positions = slice(start, start + step)
        block = X[positions] if rows is None else X[rows[positions]]
        yield positions, block.astype(np.float64, copy=False)


def dataset_matrix(ds):
    """The matrix a :class:`RowDataset` reads (float64, or float32 when so stored), sharing
    its arrays (no copy of the values): the C-contiguous ndarray, or a CSR matrix over the
    dataset's canonical arrays."""
    arrays = ds.arrays()
    if not ds.is_sparse:
        return arrays[0]
    data, indices, indptr = arrays
    return sp.csr_matrix((data, indices, indptr), shape=(ds.n_samples, ds.n_features))


def checked_row_sqnorms(ds):
    """The squared row norms of a :class:`RowDataset` (one compiled pass, no copy of X);
    ValueError when one overflows float64 (steps, gradients and distances read them)."""
    sq = np.empty(ds.n_samples)
    row_sqnorms(ds, sq)
    if not np.all(np.isfinite(sq)):
        raise row_norms_error(max_abs(dataset_matrix(ds)))
    return sq


# The full-pass products below split the rows into this many blocks, a fixed number so that
# the results (the order of the floating-point sums) do not depend on the machine.
N_ROW_BLOCKS = 2
_MIN_BLOCK_NNZ = 1 << 18    # smaller blocks run in the calling thread (a thread costs ~0.1 ms)


def run_row_blocks(n_rows, work, threaded):
    """Run ``work(k, start, end)`` on the k-th of ``N_ROW_BLOCKS`` blocks of equal row
    counts (so that dense and CSR rows sum alike), the blocks after the first in threads when
    ``threaded`` (the kernels release the GIL)."""
    bounds = [n_rows * k // N_ROW_BLOCKS for k in range(N_ROW_BLOCKS + 1)]
    blocks = [(k, start, end) for k, (start, end) in enumerate(zip(bounds[:-1], bounds[1:]))]
    if not threaded:
        for block in blocks:
            work(*block)
        return
    with ThreadPoolExecutor(max_workers=len(blocks) - 1) as pool:
        futures = [pool.submit(work, *block) for block in blocks[1:]]
        work(*blocks[0])
        for future in futures:
            future.result()     # re-raises an error of the thread


def _threaded(ds):
    return ds.n_stored >= N_ROW_BLOCKS * _MIN_BLOCK_NNZ


def full_margins(ds, w, intercept=0.0):
    """``X @ w + intercept`` over all rows, row blocks in parallel threads (the same values as
    ``ds.margins``, bitwise)."""
    out = np.empty(ds.n_samples)
    w = np.ascontiguousarray(w, dtype=np.float64)
    run_row_blocks(ds.n_samples,
                   lambda k, start, end: ds.margins_into(w, float(intercept), out, start, end),
                   _threaded(ds))
    return out


def full_transpose_product(ds, r):
    """``X.T @ r``: one partial sum per row block (in parallel threads), added in block order,
    so the result is the same on any machine."""
    r = np.ascontiguousarray(r, dtype=np.float64)
    parts = np.zeros((N_ROW_BLOCKS, ds.n_features))
    run_row_blocks(ds.n_samples,
                   lambda k, start, end: ds.add_transpose_product(r, parts[k], start, end),
                   _threaded(ds))
    return parts.sum(axis=0)
