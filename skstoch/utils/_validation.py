"""Validation helpers shared by the estimators (on top of scikit-learn's ``validate_data``)."""
import numpy as np

__all__ = ["reject_string_input"]


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
