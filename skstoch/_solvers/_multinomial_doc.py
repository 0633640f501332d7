"""The ``solve`` docstring shared by the multinomial drivers (``s3gd_multinomial``,
``cgvr_multinomial``)."""

__all__ = ["solve_doc"]


def solve_doc(params, monitor="", more_parameters="", returns=""):
    """The docstring of a multinomial ``solve``: the common parameters, then the driver's
    own (``more_parameters``, ``returns``: numpydoc text indented by four spaces)."""
    monitor = f"\n        {monitor}" if monitor else ""
    return f"""Fit the multinomial model.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    y : ndarray of int of shape (n_samples,)
        Encoded classes 0..K-1.
    sample_weight : ndarray of shape (n_samples,)
    n_classes : int
    params : {params}
    monitor : FitMonitor{monitor}
    seed : int
    coef_init, intercept_init : ndarray or None
        Warm start (K, d) and (K,).
{more_parameters}
    Returns
    -------
    SolverResult
{returns}    """
