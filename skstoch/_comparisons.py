"""Triplet and quadruplet comparisons: cblearn-compatible input formats and validation.

A comparison is a row of object indices:

* a triplet ``(i, j, k)`` says ``d(i, j) < d(i, k)`` ("i is closer to j than to k");
* a quadruplet ``(i, j, l, k)`` says ``d(i, j) < d(l, k)``.

The optional responses ``y`` follow cblearn's list formats: without ``y`` (``'list-order'``)
every row is already in canonical order; with booleans (``'list-boolean'``) ``True`` keeps the
row and ``False`` flips it; with integers (``'list-count'``) ``+1`` keeps and ``-1`` flips it.
Undecided responses (``0``) cannot be used for fitting and raise.

:func:`check_comparisons` validates every index (the kernels run without bounds checks) and
returns the canonical int32 quadruplet array ``Q`` of shape (n_comparisons, 4) used by the
kernels (a triplet ``(i, j, k)`` becomes ``(i, j, i, k)``).
"""
import numpy as np

from .utils._validation import is_integer

__all__ = ["check_comparisons", "check_responses", "as_quadruplets"]

_INT32_MAX = np.iinfo(np.int32).max


def check_responses(y, n_comparisons, *, name="y"):
    """Validate responses and return an int8 array of +1/-1 (``None`` gives ``None``)."""
    if y is None:
        return None
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_comparisons:
        raise ValueError(f"{name} must be a 1-D array with one response per comparison "
                         f"({n_comparisons}), got shape {y.shape}")
    if y.dtype.kind == "b":
        return np.where(y, 1, -1).astype(np.int8)
    if y.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold booleans or +1/-1 responses, got dtype {y.dtype}")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{name} contains NaN or infinity; expected +1/-1 or booleans")
    bad = ~np.isin(y, (-1, 1))
    if np.any(bad):
        values = np.unique(y[bad])[:5]
        hint = (" (0 means an undecided comparison, which cannot be used: drop those rows)"
                if np.any(values == 0) else "")
        raise ValueError(f"{name} must contain only +1/-1 (or booleans), found {values.tolist()}"
                         f"{hint}")
    return np.where(y > 0, 1, -1).astype(np.int8)


def check_comparisons(X, y=None, *, n_objects=None, name="X", allow_degenerate=False):
    """Validate comparisons and return canonical quadruplets.

    Parameters
    ----------
    X : array-like of int, shape (n_comparisons, 3) or (n_comparisons, 4)
        Triplets ``(i, j, k)``: ``d(i, j) < d(i, k)``; quadruplets ``(i, j, l, k)``:
        ``d(i, j) < d(l, k)``.  0-based object indices.
    y : array-like of shape (n_comparisons,), optional
        Responses: booleans or +1/-1; ``False`` / ``-1`` flips the comparison.
    n_objects : int, optional
        Number of objects; every index must be below it (default: ``max index + 1``).
    name : str
        Name of the input used in error messages.
    allow_degenerate : bool
        Accept rows whose two pairs coincide (only useful for prediction).

    Returns
    -------
    Q : ndarray of int32, shape (n_comparisons, 4)
        C-contiguous ``(i, j, l, k)`` rows, flipped where ``y`` says so.
    n_columns : int
        3 for triplets, 4 for quadruplets.
    n_objects : int
    """
    arr = _index_array(X, name)
    n_objects = _check_index_range(arr, n_objects, name)
    Q = as_quadruplets(arr)
    if not allow_degenerate:
        _reject_degenerate(Q, arr, name)
    responses = check_responses(y, arr.shape[0])
    if responses is not None:
        flip = responses < 0
        if np.any(flip):
            Q[flip] = Q[flip][:, [2, 3, 0, 1]]
    return Q, arr.shape[1], n_objects


def _index_array(X, name):
    """``X`` as a non-empty 2-D integer array with 3 or 4 columns."""
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise TypeError(f"{name} must be a dense integer array of comparisons, got a sparse "
                        f"matrix ({type(X).__name__})")
    arr = np.asarray(X)
    if arr.dtype.kind == "O":
        arr = _object_indices(arr, name)
    if arr.dtype.kind not in "iu":
        raise ValueError(
            f"{name} must be an integer array of object indices (triplets of shape "
            f"(n_comparisons, 3) or quadruplets (n_comparisons, 4)); got dtype {arr.dtype}. "
            f"Float or boolean indices are not accepted: convert with X.astype(int) if they are "
            f"whole numbers."
        )
    if arr.ndim != 2 or arr.shape[1] not in (3, 4):
        raise ValueError(f"{name} must have shape (n_comparisons, 3) for triplets or "
                         f"(n_comparisons, 4) for quadruplets, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} contains no comparison (0 rows); at least 1 is required")
    return arr


def _object_indices(arr, name):
    """An object array whose entries are all integers (pandas' nullable ``Int64`` columns,
    lists of Python ints mixed with numpy ints) as int64; anything else unchanged (it is
    refused by the dtype check, as floats, booleans and missing values must be)."""
    values = arr.ravel()
    if not values.size or not all(is_integer(v) for v in values):
        return arr
    try:
        return arr.astype(np.int64)
    except OverflowError:
        raise ValueError(f"{name} contains an object index outside the int64 range; indices "
                         f"must be in [0, n_objects)") from None


def _check_index_range(arr, n_objects, name):
    """Every index in ``[0, n_objects)``; return ``n_objects`` (default: max index + 1)."""
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0:
        row = int(np.flatnonzero((arr < 0).any(axis=1))[0])
        raise ValueError(f"{name} contains a negative object index ({lo}, first in row {row}); "
                         f"indices must be in [0, n_objects)")
    if n_objects is None:
        n_objects = hi + 1
    else:
        if not is_integer(n_objects) or n_objects < 1:
            raise ValueError(f"n_objects must be a positive integer, got {n_objects!r}")
        n_objects = int(n_objects)
        if hi >= n_objects:
            row = int(np.flatnonzero((arr >= n_objects).any(axis=1))[0])
            raise ValueError(f"{name} contains object index {hi} (first in row {row}) out of "
                             f"range for n_objects={n_objects}; indices must be in "
                             f"[0, {n_objects})")
    if n_objects > _INT32_MAX:
        raise ValueError(f"n_objects={n_objects} exceeds the int32 index range")
    return n_objects


def _reject_degenerate(Q, arr, name):
    """Raise on rows whose pairs repeat an object or coincide (they carry no information)."""
    i, j, l, k = Q.T
    bad = (i == j) | (l == k) | ((i == l) & (j == k)) | ((i == k) & (j == l))
    if np.any(bad):
        row = int(np.flatnonzero(bad)[0])
        what = ("repeats an object (i == j, i == k or j == k)" if arr.shape[1] == 3 else
                "repeats an object within a pair (i == j or l == k) or compares a pair "
                "with itself")
        raise ValueError(f"{name} row {row} = {arr[row].tolist()} {what}; such a comparison "
                         f"carries no information. Remove the {int(bad.sum())} degenerate "
                         f"row(s).")


def as_quadruplets(arr):
    """(m, 3) triplets or (m, 4) quadruplets as a fresh C-contiguous int32 (m, 4) array."""
    m, width = arr.shape
    Q = np.empty((m, 4), dtype=np.int32)
    if width == 3:
        Q[:, 0] = arr[:, 0]
        Q[:, 1] = arr[:, 1]
        Q[:, 2] = arr[:, 0]
        Q[:, 3] = arr[:, 2]
    else:
        Q[:] = arr
    return Q
