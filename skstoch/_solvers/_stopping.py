"""Stopping rules shared by the solvers.

Every rule is a small function or class with no estimator state, so that a driver composes
the ones its method needs and the history shows the value each rule tested.
"""
import numpy as np

# LabelChangeStop: flipped labels allowed per check on a small set (one flip, with margin)
SMALL_SET_FLIPS = 1.5

def relative_change(x_new, x_old):
    """||x_new - x_old|| / max(||x_old||, 1e-12)."""
    return float(np.linalg.norm(x_new - x_old) / max(np.linalg.norm(x_old), 1e-12))


class LabelChangeStop:
    """Stop when few predicted labels change between checks, twice in a row.

    At each check (every few iterations) the fraction of a fixed set of points whose predicted
    label changed since the previous check is compared with ``tol``; the fit has converged when
    it is below ``tol`` at two consecutive checks, at iteration ``min_iter`` or later.  On a
    set of fewer than ``small_flips / tol`` points ``tol`` would forbid every change, so the
    threshold is then ``small_flips / n_labels`` (one flipped label allowed per check).

    Parameters
    ----------
    tol : float or None
        None never stops (the change is still measured).
    n_labels : int
        Size of the set.
    min_iter : float
        No convergence before this iteration.
    small_flips : float, default=SMALL_SET_FLIPS

    Attributes
    ----------
    change : float
        The last fraction of changed labels (nan before the second check).
    converged : bool
    """

    def __init__(self, tol, n_labels, min_iter, small_flips=SMALL_SET_FLIPS):
        self.tol = tol
        self.min_iter = min_iter
        self.threshold = None
        if tol is not None and n_labels > 0:
            self.threshold = max(tol, small_flips / n_labels) if tol > 0 else 0.0
        self.change = np.nan
        self.converged = False
        self._previous_change = np.nan
        self._previous_labels = None

    def update(self, labels, iteration):
        """Check the labels predicted at ``iteration``; return ``converged``."""
        if self._previous_labels is not None:
            self.change = float(np.mean(labels != self._previous_labels))
            self.converged = (self.threshold is not None and self.change < self.threshold
                              and self._previous_change < self.threshold
                              and iteration >= self.min_iter)
            self._previous_change = self.change
        self._previous_labels = labels
        return self.converged
