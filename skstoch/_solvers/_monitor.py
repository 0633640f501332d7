"""The history / verbose / callback / ConvergenceWarning convention shared by every solver.

Every outer loop (epoch, outer iteration) ends with one call to :meth:`FitMonitor.record`,
which appends a record to the history, prints a progress line when ``verbose > 0``, and calls
the user's callback; the fit stops when the callback returns a true value.  After the loop,
:meth:`FitMonitor.finish` raises a ``ConvergenceWarning`` naming the criterion when the solver
did not reach ``tol``.
"""
import time

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..utils._warnings import warn

# what the convergence warnings advise for features of very different scales (StandardScaler
# refuses sparse X unless with_mean=False, so sparse input needs the other one)
SCALERS = "sklearn.preprocessing.StandardScaler, or MaxAbsScaler for sparse X"


class DivergenceError(FloatingPointError, ValueError):
    """Raised when iterates or the objective stop being finite (step size too large).

    It is also a ``ValueError`` (as scikit-learn's SGD estimators raise ``ValueError`` on
    floating-point overflow), so code that handles bad input or bad parameters with
    ``except ValueError`` also catches a run that diverged because of them.
    """


class FitMonitor:
    """Collect per-epoch records, print progress, run the callback, warn on non-convergence.

    Parameters
    ----------
    solver_name : str
        Name used in progress lines and warnings (e.g. ``"CGVRClassifier(solver='cgvr')"``).
    verbose : int
        Print one line per record when > 0.
    callback : callable or None
        ``callback(record) -> bool``; ``record`` is the dict just recorded plus the current
        iterate under ``"x"`` when the solver passes one.  A true return value stops the fit.
    label : str or None
        Appended to the progress lines' prefix (e.g. ``"class=2"``: which one-vs-rest head
        or output a line belongs to when several are fitted, possibly in parallel).
    scale_hint : bool
        The ConvergenceWarning also suggests standardizing the features (unscaled features
        are the usual cause, as scikit-learn's LogisticRegression says); False for
        estimators whose input has no features (ordinal comparisons).
    """

    def __init__(self, solver_name, *, verbose=0, callback=None, label=None,
                 scale_hint=True):
        self.solver_name = solver_name
        self.label = label
        self.scale_hint = scale_hint
        self.verbose = verbose
        self.callback = callback
        self.records = []
        self.stopped_by_callback = False
        self._start = time.perf_counter()

    def elapsed(self):
        """Seconds since the monitor was created."""
        return time.perf_counter() - self._start

    def record(self, *, x=None, **values):
        """Append one record (``time`` is added) and return True if the fit must stop."""
        values = {key: _as_scalar(val) for key, val in values.items()}
        values["time"] = self.elapsed()
        for key, val in values.items():
            if isinstance(val, float) and not np.isfinite(val) and key in ("objective", "loss"):
                raise DivergenceError(
                    f"{self.solver_name} diverged: the {key} became {val} at record "
                    f"{len(self.records)}; decrease the step size (eta0 / learning rate)."
                )
        self.records.append(values)
        if self.verbose > 0:
            prefix = self.solver_name if self.label is None else f"{self.solver_name} {self.label}"
            # one write per line: one-vs-rest heads fitted in threads print concurrently, and
            # print's separate write of the newline let their lines run together
            print(f"[{prefix}] " + ", ".join(_format(k, v) for k, v in values.items()) + "\n",
                  end="")
        if self.callback is not None:
            info = dict(values)
            if x is not None:
                # a copy: solvers hand their live iterate, which a stored record would see
                # change and a callback writing to it would corrupt
                info["x"] = np.array(x, copy=True)
            if self.callback(info):
                self.stopped_by_callback = True
                return True
        return False

    def history(self):
        """The records as a dict of 1-D arrays (one entry per record), ready to plot."""
        keys = []
        for rec in self.records:
            keys.extend(k for k in rec if k not in keys)
        return {k: np.array([rec.get(k, np.nan) for rec in self.records]) for k in keys}

    def finish(self, *, converged, criterion, value, tol, max_iter, stalled_at=None):
        """Warn with ``ConvergenceWarning`` unless converged or stopped by the callback.

        ``stalled_at``: the iteration after which the iterate stopped changing or improving
        in floating point (a tol below what float64 resolves for this problem), if that
        ended the fit.
        """
        if converged or self.stopped_by_callback:
            return
        if stalled_at is not None:
            warn(
                f"{self.solver_name} stopped after {stalled_at} iterations: the iterate no "
                f"longer improves in floating point and the {criterion} is {value:.3g}, above "
                f"tol={tol:.3g}, which is below what float64 resolves here. Loosen tol.",
                ConvergenceWarning)
            return
        # inf / nan: the criterion compares records that the budget never reached
        state = (f"is {value:.3g}, above tol={tol:.3g}" if np.isfinite(value) else
                 f"could not be measured yet (too few iterations; tol={tol:.3g})")
        objectives = [r["objective"] for r in self.records
                      if isinstance(r.get("objective"), float)]
        if len(objectives) >= 2 and objectives[0] < objectives[-1]:
            # the fit ended above its start: more iterations of the same steps will not help
            advice = (f"The objective rose over the fit, from {objectives[0]:.4g} to "
                      f"{objectives[-1]:.4g}: the steps overshoot. Decrease the step size or "
                      f"use another solver.")
        else:
            advice = ("Increase max_iter, loosen tol or check the step size"
                      + ("; features of very different scales slow the fit: standardize them "
                         f"(for example with {SCALERS})." if self.scale_hint else "."))
        warn(
            f"{self.solver_name} did not converge: after max_iter={max_iter} iterations the "
            f"{criterion} {state}. {advice}",
            ConvergenceWarning)


def check_finite_iterate(x, solver_name, where):
    """Raise :class:`DivergenceError` if the array ``x`` has a non-finite entry."""
    if not np.all(np.isfinite(x)):
        raise DivergenceError(
            f"{solver_name} diverged: non-finite coefficients after {where}; "
            f"decrease the step size (eta0 / learning rate)."
        )


def _as_scalar(val):
    if isinstance(val, np.generic):
        return val.item()
    return val


def _format(key, val):
    if isinstance(val, float):
        return f"{key}={val:.6g}"
    return f"{key}={val}"
