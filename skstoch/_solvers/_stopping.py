"""Stopping rules shared by the solvers.

Every rule is a small function or class with no estimator state, so that a driver composes
the ones its method needs and the history shows the value each rule tested.
"""
import numpy as np

from ._monitor import DivergenceError

# LabelChangeStop: flipped labels allowed per check on a small set (one flip, with margin)
SMALL_SET_FLIPS = 1.5


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


class Plateau:
    """Stop after ``n_iter_no_change`` values that improve on the best so far by at most
    ``tol * max(1, |best|)`` (scikit-learn's ``n_iter_no_change`` rule, relative).

    :meth:`update` takes the value of one iteration and returns True once the plateau is
    reached; ``rel_improvement`` is the relative improvement of the last value (``inf``
    before a best exists), the criterion a ``ConvergenceWarning`` reports.
    """

    def __init__(self, tol, n_iter_no_change):
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.best = np.inf
        self.no_improvement = 0
        self.rel_improvement = np.inf

    def update(self, value, counts=True):
        """Record ``value``; with ``counts=False`` (e.g. a warm-up phase) only the
        improvement is computed, neither the best nor the count change."""
        best = self.best
        self.rel_improvement = ((best - value) / max(abs(best), 1.0) if np.isfinite(best)
                                else np.inf)
        if counts:
            self.no_improvement = (0 if self.rel_improvement > self.tol
                                   else self.no_improvement + 1)
            self.best = min(best, value)
        return self.no_improvement >= self.n_iter_no_change

    def restart(self):
        """Count again from zero (the best is kept), e.g. after a step-size decrease."""
        self.no_improvement = 0


def check_divergence(value, start, solver_name, where, factor=1e4,
                     remedy="decrease the step size (eta0)"):
    """Raise :class:`DivergenceError` when an objective grew beyond ``factor`` times
    ``max(start, 1)``, its value at the start of the fit."""
    if value > factor * max(start, 1.0):
        raise DivergenceError(
            f"{solver_name} diverged: the objective grew from {start:.3g} to {value:.3g} "
            f"after {where}; {remedy}.")


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
class BestObjectiveWindow:
    """Stop when the best objective improved by at most ``tol`` over the last ``window``
    records: ``(b[t - window] - b[t]) / max(|b[t - window]|, 1) <= tol``, where ``b[t]`` is
    the lowest objective among records ``0..t`` (scikit-learn's ``n_iter_no_change`` rule,
    relative, as one number).

    For objectives that keep decreasing ever more slowly while the iterate drifts along a
    flat valley (scale-invariant losses), where the relative change of the iterate never
    becomes small.  ``update(objective)`` stores the criterion in ``value`` (``inf`` until
    ``window + 1`` records exist) and returns ``reached``.
    """

    name = "relative decrease of the best objective"

    def __init__(self, tol, window):
        self.tol = tol
        self.window = int(window)
        self.best = []
        self.value = np.inf

    @property
    def reached(self):
        return self.value <= self.tol

    def update(self, objective):
        f = float(objective)
        self.best.append(min(self.best[-1], f) if self.best else f)
        if len(self.best) > self.window:
            old = self.best[-1 - self.window]
            self.value = (old - self.best[-1]) / max(abs(old), 1.0)
            del self.best[0]
        return self.reached


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
    closest : float
        How near the test came to passing: the smallest ``max(change, previous change) /
        threshold`` over the checks from ``min_iter`` on (it passes below 1); inf before
        such a check or when the threshold is None or 0.
    """

    def __init__(self, tol, n_labels, min_iter, small_flips=SMALL_SET_FLIPS):
        self.tol = tol
        self.min_iter = min_iter
        self.threshold = None
        if tol is not None and n_labels > 0:
            self.threshold = max(tol, small_flips / n_labels) if tol > 0 else 0.0
        self.change = np.nan
        self.converged = False
        self.closest = np.inf
        self._previous_change = np.nan
        self._previous_labels = None

    def update(self, labels, iteration):
        """Check the labels predicted at ``iteration``; return ``converged``."""
        if self._previous_labels is not None:
            self.change = float(np.mean(labels != self._previous_labels))
            self.converged = (self.threshold is not None and self.change < self.threshold
                              and self._previous_change < self.threshold
                              and iteration >= self.min_iter)
            if (self.threshold and iteration >= self.min_iter
                    and np.isfinite(self._previous_change)):
                self.closest = min(self.closest, max(self.change, self._previous_change)
                                   / self.threshold)
            self._previous_change = self.change
        self._previous_labels = labels
        return self.converged
