"""Validation helpers shared by the estimators (on top of scikit-learn's ``validate_data``)."""
import copy
from numbers import Integral, Number, Real

import numpy as np
import scipy.sparse as sp

__all__ = ["available_memory", "canonical_csr", "check_allocation",
           "check_sample_weight", "check_sparse_integrity", "reject_string_input",
           "rescale_sample_weight", "validate_data"]


def is_integer(value):
    """Whether ``value`` is a Python or numpy integer (booleans are not counts or indices)."""
    return isinstance(value, Integral) and not isinstance(value, bool)


def is_positive_real(value):
    """Whether ``value`` is a positive finite Python or numpy real number (not a bool)."""
    return (isinstance(value, Real) and not isinstance(value, bool)
            and bool(np.isfinite(value)) and value > 0)


def reject_string_input(X, name="X"):
    """Raise ``ValueError`` when ``X`` holds strings or bytes (or objects that are strings).

    ``validate_data(..., dtype=np.float64)`` silently parses numeric strings such as ``"1.5"``
    in ``fit``, while scikit-learn's ``predict``/``decision_function`` (``dtype="numeric"``)
    reject them: a model fitted on strings then cannot predict on the same data.  Calling this
    before ``validate_data`` in ``fit`` makes both sides reject strings with one clear message.
    Sparse matrices and non-array inputs without a string dtype pass unchanged.
    """
    if hasattr(X, "tocsr") or hasattr(X, "toarray"):
        return
    dtype = getattr(X, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(X).dtype
        except Exception:  # let validate_data report what is wrong
            return
    kind = dtype.kind
    if kind == "O":
        arr = np.asarray(X)
        if arr.size and any(isinstance(v, (str, bytes)) for v in arr.ravel()[:1000]):
            kind = "U"
    if kind in "USa":
        raise ValueError(
            f"{name} holds strings (dtype {dtype}); skstoch estimators need numeric {name}: "
            f"convert it explicitly (for example {name}.astype(float), or encode categories "
            f"with sklearn.preprocessing.OneHotEncoder)."
        )


def _as_index_array(a, what, name):
    a = np.asarray(a)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise ValueError(f"{name} is a corrupted sparse matrix: its {what} must be a 1-D integer "
                         f"array, got dtype {a.dtype} with {a.ndim} dimension(s).")
    return a


def _check_range(a, upper, what, name):
    if a.size:
        lo, hi = int(a.min()), int(a.max())
        if lo < 0 or hi >= upper:
            raise ValueError(f"{name} is a corrupted sparse matrix: its {what} must lie in "
                             f"[0, {upper}), but range from {lo} to {hi}.")


def _check_compressed(indptr, indices, data_len, n_major, n_minor, name):
    indptr = _as_index_array(indptr, "indptr", name)
    indices = _as_index_array(indices, "indices", name)
    nnz = indices.shape[0]
    if indptr.shape[0] != n_major + 1:
        raise ValueError(f"{name} is a corrupted sparse matrix: indptr has {indptr.shape[0]} "
                         f"entries, its shape needs {n_major + 1}.")
    if int(indptr[0]) != 0 or int(indptr[-1]) != nnz:
        raise ValueError(f"{name} is a corrupted sparse matrix: indptr must start at 0 and end "
                         f"at the number of stored entries ({nnz}), got {int(indptr[0])} and "
                         f"{int(indptr[-1])}.")
    if n_major and np.any(indptr[1:] < indptr[:-1]):
        raise ValueError(f"{name} is a corrupted sparse matrix: indptr is not non-decreasing.")
    if data_len != nnz:
        raise ValueError(f"{name} is a corrupted sparse matrix: data has {data_len} entries "
                         f"but indices has {nnz}.")
    _check_range(indices, n_minor, "indices", name)


def check_sparse_integrity(X, name="X"):
    """Check the stored arrays of a sparse matrix against its shape in O(nnz).

    scipy trusts ``indptr``/``indices`` once a matrix is built (a user may edit them, and the
    cached ``has_canonical_format`` flag is not updated), and our kernels and scipy's C
    routines index with them unchecked: a bad index is a crash, not an exception.  Checked:
    CSR/CSC (``indptr`` of length n_major + 1, starting at 0, non-decreasing, ending at the
    number of stored entries; ``indices`` in [0, n_minor); ``data`` as long as ``indices``),
    COO (coordinates within the shape, as many as values) and BSR (the same on blocks).
    Other formats are converted by scipy in Python; check the converted matrix.

    Raises
    ------
    ValueError
        Naming ``name`` and what is inconsistent.
    """
    fmt = getattr(X, "format", None)
    shape = tuple(int(s) for s in X.shape)
    if len(shape) != 2 or min(shape) < 0:
        raise ValueError(f"{name} must be a 2-D sparse matrix, got shape {X.shape}.")
    n_rows, n_cols = shape
    if fmt in ("csr", "csc"):
        n_major, n_minor = (n_rows, n_cols) if fmt == "csr" else (n_cols, n_rows)
        _check_compressed(X.indptr, X.indices, np.asarray(X.data).reshape(-1).shape[0],
                          n_major, n_minor, name)
    elif fmt == "bsr":
        r, c = X.blocksize
        data = np.asarray(X.data)
        if (r <= 0 or c <= 0 or n_rows % r or n_cols % c or data.ndim != 3
                or data.shape[1:] != (r, c)):
            raise ValueError(f"{name} is a corrupted sparse matrix: its blocks "
                             f"{data.shape[1:]} do not tile its shape {shape}.")
        _check_compressed(X.indptr, X.indices, data.shape[0], n_rows // r, n_cols // c, name)
    elif fmt == "coo":
        row = _as_index_array(X.row, "row indices", name)
        col = _as_index_array(X.col, "column indices", name)
        n = np.asarray(X.data).reshape(-1).shape[0]
        if row.shape[0] != n or col.shape[0] != n:
            raise ValueError(f"{name} is a corrupted sparse matrix: {row.shape[0]} row and "
                             f"{col.shape[0]} column indices for {n} values.")
        _check_range(row, n_rows, "row indices", name)
        _check_range(col, n_cols, "column indices", name)


def _csr_is_canonical(X):
    """Sorted column indices without duplicates in every row (computed, not the cached flag),
    in one compiled O(nnz) pass without temporaries."""
    from .._fast._csr import csr_is_canonical
    if X.indices.shape[0] < 2:
        return True
    return csr_is_canonical(np.ascontiguousarray(X.indptr), np.ascontiguousarray(X.indices))


# Marks a matrix returned by canonical_csr: an identity token, so that a pickled (and possibly
# edited) copy does not carry it, and a new matrix derived from it (copy, slice) has none.
_CHECKED = object()
_KERNEL_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
# Formats whose stored arrays check_sparse_integrity checks (scipy converts them in C)
_CHECKED_FORMATS = ("csr", "csc", "coo", "bsr")


def _is_checked(X):
    return getattr(X, "__dict__", {}).get("_skstoch_checked") is _CHECKED


def canonical_csr(X, name="X", checked=False):
    """``X`` checked (:func:`check_sparse_integrity`) and in canonical CSR form.

    Unsorted or duplicate entries are sorted and summed on a copy (the caller's matrix is
    never modified), so a non-canonical matrix fits exactly as its canonical form.  The
    result is a new matrix object (sharing X's arrays when X was canonical CSR) marked as
    checked: passing it again returns it at once, so one fit checks its X once however many
    helpers convert it.  ``checked=True``: X's arrays already passed
    :func:`check_sparse_integrity` in a format it checks (only the canonical form is then
    checked).
    """
    if _is_checked(X):
        return X
    if not checked:
        check_sparse_integrity(X, name)
    if X.format != "csr":
        X = X.tocsr()
        if not checked:
            check_sparse_integrity(X, name)
    if not (X.indices.dtype in _KERNEL_INDEX_DTYPES and X.indptr.dtype in _KERNEL_INDEX_DTYPES):
        # any integer dtype passes scipy once the arrays are set; the kernels read int32 or
        # int64 (the values were checked, so the cast is exact)
        X = type(X)((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)),
                    shape=X.shape)
    if _csr_is_canonical(X):
        X = copy.copy(X)    # the caller's object is never marked
    else:
        X = X.copy()
        # the cached flags may be stale (arrays edited after construction): force the work
        X.has_sorted_indices = False
        X.has_canonical_format = False
        X.sum_duplicates()
    X._skstoch_checked = _CHECKED
    return X


def validate_data(estimator, X="no_validation", y="no_validation", **kwargs):
    """scikit-learn's ``validate_data`` behind our input policy.

    Before scikit-learn (or scipy) touches ``X``: strings are rejected
    (:func:`reject_string_input`) and a sparse ``X`` is checked in O(nnz)
    (:func:`check_sparse_integrity`).  A sparse result is returned as canonical CSR
    (:func:`canonical_csr`; a copy only when the input was not canonical).
    """
    from sklearn.utils.validation import validate_data as _sk_validate_data

    checked = not isinstance(X, str) and X is not None
    if kwargs.get("y_numeric") and not isinstance(y, str) and y is not None:
        reject_string_input(y, "y")
    integrity_checked = False
    if checked:
        reject_string_input(X)
        if sp.issparse(X):
            check_sparse_integrity(X)
            # scipy's conversions of checked arrays need no second check
            integrity_checked = X.format in _CHECKED_FORMATS
    # scikit-learn's finiteness check sums X first: a float32 X near its range overflows
    # that sum and warns once per call, although X is finite (the check then looks closer)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _sk_validate_data(estimator, X, y, **kwargs)
    if not checked:
        return out
    if isinstance(out, tuple):
        Xv = out[0]
        if sp.issparse(Xv):
            return (canonical_csr(Xv, checked=integrity_checked),) + tuple(out[1:])
        return out
    return canonical_csr(out, checked=integrity_checked) if sp.issparse(out) else out


# Weights whose largest value lies outside this range are rescaled by it (see below).
_WEIGHT_SAFE_RANGE = (1e-100, 1e100)


def rescale_sample_weight(sample_weight):
    """Non-negative weights divided by their maximum when their scale is extreme.

    Only relative weights matter to the objectives (weighted means), but sums of weights
    such as 1e-320 (subnormal) or 1e300 underflow or overflow: uniform weights of any positive
    scale must fit as unit weights, so in memory they are returned as ones (their sum's
    rounding would otherwise show in the last bits).  Other weights of ordinary scale are
    returned unchanged (bitwise).  A Dask array costs one pass (its maximum); NaN or
    infinite weights are left to the caller.
    """
    if (isinstance(sample_weight, np.ndarray) and sample_weight.size and sample_weight[0] > 0
            and np.all(sample_weight == sample_weight[0])):
        return np.ones_like(sample_weight)
    if sample_weight.size:
        top = float(sample_weight.max())
        if (top > 0 and np.isfinite(top)
                and not (_WEIGHT_SAFE_RANGE[0] <= top <= _WEIGHT_SAFE_RANGE[1])):
            return sample_weight / top
    return sample_weight


def check_sample_weight(sample_weight, X, name="sample_weight"):
    """``sample_weight`` validated as non-negative float64 of X's length (strings rejected),
    rescaled by :func:`rescale_sample_weight`."""
    from sklearn.utils import assert_all_finite
    from sklearn.utils.validation import _check_sample_weight

    if sample_weight is not None and not isinstance(sample_weight, (int, float)):
        reject_string_input(sample_weight, name)
    sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    if isinstance(sample_weight, Number):   # as scikit-learn tells a number (not np.ndim)
        # scikit-learn fills a number in without checking it (inf fitted, nan was 'every
        # sample has weight zero')
        assert_all_finite(sw[:1], input_name=name)
    return rescale_sample_weight(sw)


def available_memory():
    """Bytes this process can still allocate, as far as the system says (an estimate).

    The smaller of the memory the kernel reports available (``MemAvailable``, else the
    physical memory) and what the address-space limit (``RLIMIT_AS``) leaves.  None when
    nothing is known (the guard is then off).
    """
    import os

    budget = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    budget = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if budget is None:
        try:
            budget = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            budget = None
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit != resource.RLIM_INFINITY:
            with open("/proc/self/statm") as f:
                used = int(f.read().split()[0]) * resource.getpagesize()
            left = max(limit - used, 0)
            budget = left if budget is None else min(budget, left)
    except (ImportError, OSError, ValueError):
        pass
    return budget


def _human(n_bytes):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n_bytes < 1024 or unit == "PiB":
            return f"{n_bytes:.3g} {unit}"
        n_bytes /= 1024
    return f"{n_bytes:.3g} EiB"  # pragma: no cover


def check_allocation(n_bytes, what):
    """Raise ``ValueError`` before allocating ``n_bytes`` the machine cannot provide.

    Call with Python integers (no overflow) before any array whose size a user controls
    (a parameter, the largest index of an input, a sparse shape).  ``what`` names the input or
    parameter and its value, e.g. ``"n_components=2147483648"``.
    """
    n_bytes = int(n_bytes)
    budget = available_memory()
    if budget is not None and n_bytes > budget:
        raise ValueError(f"{what} implies allocating {_human(n_bytes)}, more memory than this "
                         f"machine can provide (about {_human(budget)} available); use a "
                         f"smaller value.")



def max_abs(X):
    """Largest |entry| of a dense or sparse array as a float (0.0 when it stores none),
    without an |X| temporary; NaN when X holds NaN."""
    data = X.data if sp.issparse(X) else np.asarray(X)
    if data.size == 0:
        return 0.0
    return max(abs(float(data.max())), abs(float(data.min())))


def row_norms_error(largest=None):
    """The ValueError for an X whose squared row norms overflow float64 (``largest``: its
    largest |entry|, when known)."""
    found = "" if largest is None else f" (the largest |entry| is {largest:.3g})"
    return ValueError(
        f"X is too large: its squared row norms overflow float64{found}, so distances, "
        "steps and gradients would not be finite; scale X (e.g. with StandardScaler or "
        "MaxAbsScaler) before fitting.")


def check_squared_distances(X, needed_by, remedy):
    """Raise ``ValueError`` when squared distances between rows of ``X`` would overflow
    float64 (``needed_by`` says what compares them, ``remedy`` what the user can do)."""
    largest = max_abs(X)
    with np.errstate(over="ignore"):
        largest_sq_distance = np.float64(2.0 * largest) ** 2 * X.shape[1]
    if not np.isfinite(largest_sq_distance):
        raise ValueError(
            f"X is too large in magnitude (max |X| = {largest:.3g}): squared distances "
            f"between rows, {needed_by}, would overflow float64; {remedy}.")


# -- fitted state (issue 18.4) ------------------------------------------------------------------
def fitted_state_error(estimator, what):
    """The ValueError for a fitted state that disagrees with itself or with X (attributes
    changed after fit, truncated, or unpickled from another version), raised before any
    kernel reads it."""
    return ValueError(f"{type(estimator).__name__} has an inconsistent fitted state: {what}; "
                      "the fitted attributes were modified after fit or come from another "
                      "version: fit again.")


def fitted_attribute(estimator, name):
    """``estimator.name``, or :func:`fitted_state_error` when a fitted estimator lacks it
    (deleted after fit): an AttributeError would read as a bug of ours."""
    try:
        return getattr(estimator, name)
    except AttributeError:
        raise fitted_state_error(estimator, f"{name} is missing") from None


def check_finite_numbers(estimator, name, a):
    """:func:`fitted_state_error` unless ``a`` (an ndarray, sparse matrix or number) holds
    finite numbers: NaN coefficients would predict NaN scores and a silent class."""
    values = a.data if sp.issparse(a) else a
    if not (isinstance(values, (np.ndarray, Real)) and np.asarray(values).dtype.kind in "biuf"):
        kind = (f"{values.dtype} array" if isinstance(values, np.ndarray)
                else type(values).__name__)
        raise fitted_state_error(estimator, f"{name} is a {kind}, expected numbers")
    if not np.all(np.isfinite(values)):
        raise fitted_state_error(estimator, f"{name} holds NaN or infinity")


def fitted_n_heads(estimator):
    """Decision heads that ``classes_`` implies: 1 for two classes, one per class beyond
    (one-vs-rest); :func:`fitted_state_error` unless ``classes_`` is a 1-d array of at least
    two labels."""
    classes = np.asarray(fitted_attribute(estimator, "classes_"))
    if classes.ndim != 1 or classes.shape[0] < 2:
        raise fitted_state_error(estimator, f"classes_ of shape {classes.shape} (at least 2 "
                                            "labels expected)")
    return 1 if classes.shape[0] == 2 else classes.shape[0]


def check_fitted_array(estimator, name, shape, dtype=np.float64, finite=False):
    """:func:`fitted_state_error` unless the attribute ``name`` is an ndarray of ``dtype``
    and ``shape`` (a tuple; ``None`` entries match any length): what a kernel may read.
    ``finite=True`` also refuses NaN and infinity (one pass over the array)."""
    a = getattr(estimator, name)
    ok = (isinstance(a, np.ndarray) and a.dtype == dtype and a.ndim == len(shape)
          and all(s is None or s == t for s, t in zip(shape, a.shape)))
    if not ok:
        got = (f"{a.dtype} array of shape {a.shape}" if isinstance(a, np.ndarray)
               else type(a).__name__)
        want = ", ".join("*" if s is None else str(s) for s in shape)
        raise fitted_state_error(estimator, f"{name} is a {got}, expected a {np.dtype(dtype)} "
                                            f"array of shape ({want})")
    if finite and not np.all(np.isfinite(a)):
        raise fitted_state_error(estimator, f"{name} contains NaN or infinity")
    return a


def check_fitted_shapes(est, coef_shape, reference="n_features_in_"):
    """:func:`fitted_state_error` unless ``coef_`` / ``intercept_`` have the shapes the input
    and ``reference`` imply and hold finite numbers (a tampered or foreign fitted state must
    not reach a kernel, nor predict silently from NaN).
    ``coef_shape`` is ``(n_heads, n_features)``, ``n_heads`` 0 for a 1-D ``coef_`` and a
    scalar ``intercept_``."""
    coef, intercept = fitted_attribute(est, "coef_"), fitted_attribute(est, "intercept_")
    check_finite_numbers(est, "coef_", coef)
    check_finite_numbers(est, "intercept_", intercept)
    coef_shape_now = tuple(np.shape(coef))       # coef_ may be sparse (sparsify)
    intercept_shape = tuple(np.shape(intercept))
    n_heads, n_features = coef_shape
    if n_heads == 0:
        ok = coef_shape_now == (n_features,) and intercept_shape == ()
    else:
        ok = (n_heads > 0 and coef_shape_now == (n_heads, n_features)
              and intercept_shape == (n_heads,))
    if not ok:
        raise fitted_state_error(
            est, f"coef_ {coef_shape_now}, intercept_ {intercept_shape}, {reference} and X "
                 f"with {n_features} features disagree")
