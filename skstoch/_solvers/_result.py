"""What every solver driver and shared loop returns."""
from dataclasses import dataclass, field

import numpy as np


@dataclass
class SolverResult:
    """Outcome of a solver run.

    Attributes
    ----------
    x : ndarray
        Final iterate (for constrained solvers: the last feasible point).
    n_iter : int
        Iterations run, in the unit the estimator documents for ``n_iter_`` (the history's
        ``iteration`` column counts the same unit).
    converged : bool
        Whether the stopping criterion reached ``tol``.
    criterion : float
        Last value of the stopping criterion.
    criterion_name : str
        What ``criterion`` measures (named in the ``ConvergenceWarning``).
    intercept : float
        Linear models: the intercept (``x`` holds the coefficients).
    state : object or None
        Warm-start state for the next ``solve(..., state=...)`` (None when the solver keeps
        none besides the iterate).
    extra : dict
        Solver-specific counters (``n_gradients``, ``n_projections``, ...).
    """

    x: np.ndarray
    n_iter: int
    converged: bool
    criterion: float
    criterion_name: str = ""
    intercept: float = 0.0
    state: object = None
    extra: dict = field(default_factory=dict)
