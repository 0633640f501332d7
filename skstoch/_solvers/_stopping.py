"""Stopping rules shared by the solvers.

Every rule is a small function or class with no estimator state, so that a driver composes
the ones its method needs and the history shows the value each rule tested.
"""
import numpy as np


def relative_change(x_new, x_old):
    """||x_new - x_old|| / max(||x_old||, 1e-12)."""
    return float(np.linalg.norm(x_new - x_old) / max(np.linalg.norm(x_old), 1e-12))
