"""Stopping rules shared by the solvers.

Every rule is a small function or class with no estimator state, so that a driver composes
the ones its method needs and the history shows the value each rule tested.
"""
import numpy as np


def relative_change(x_new, x_old):
    """||x_new - x_old|| / max(||x_old||, 1e-12)."""
    return float(np.linalg.norm(x_new - x_old) / max(np.linalg.norm(x_old), 1e-12))


class RelativeChangeStop:
    """Stop when the relative change of the iterate between two iterations is at most ``tol``.

    ``update(x_new, x_old)`` stores :func:`relative_change` in ``value`` and returns
    ``reached``: whether ``value <= tol`` (False before the first update, when ``value`` is
    infinite).
    """

    def __init__(self, tol):
        self.tol = tol
        self.value = np.inf

    @property
    def reached(self):
        return self.value <= self.tol

    def update(self, x_new, x_old):
        self.value = relative_change(x_new, x_old)
        return self.reached
