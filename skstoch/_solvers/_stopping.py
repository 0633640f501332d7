"""Stopping rules shared by the solvers.

Every rule is a small function or class with no estimator state, so that a driver composes
the ones its method needs and the history shows the value each rule tested.
"""
import numpy as np


def relative_change(x_new, x_old):
    """||x_new - x_old|| / max(||x_old||, 1e-12)."""
    return float(np.linalg.norm(x_new - x_old) / max(np.linalg.norm(x_old), 1e-12))


class ObjectiveStall:
    """Stop once the objective no longer decreases by more than ``tol`` (relative) between
    two consecutive records: ``f_prev - f <= tol |f|``.

    For loops whose records carry a noisy objective (a stochastic solver's projected epoch
    outputs), where the relative change of the iterate stays above a small ``tol`` under
    the sampling noise.  Call it with each record (a dict); records without an
    ``"objective"`` are ignored.
    """

    name = "relative decrease of the objective"

    def __init__(self, tol):
        self.tol = tol
        self.previous = None

    def __call__(self, record):
        f = record.get("objective")
        if f is None:
            return False
        stalled = self.previous is not None and self.previous - f <= self.tol * abs(f)
        self.previous = f
        return stalled
