"""What every shared outer loop returns."""
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
        Outer iterations (epochs) run.
    converged : bool
        Whether the stopping criterion reached ``tol``.
    criterion : float
        Last value of the stopping criterion.
    extra : dict
        Solver-specific counters (``n_gradients``, ``n_projections``, ...).
    """

    x: np.ndarray
    n_iter: int
    converged: bool
    criterion: float
    extra: dict = field(default_factory=dict)
