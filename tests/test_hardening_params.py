"""Parameter extremes derived from ``_parameter_constraints`` (issue 18.2).

For every public estimator and every parameter with an ``Interval`` constraint, the boundary
values (each bound, one step outside it), zero, -1 and huge values (2**31, 2**62 for integers;
1e-300, 1e300, inf, nan for reals) are set on the small configuration of tests/test_fuzz.py
and fitted in a forked child under an address-space cap and a wall-clock limit
(tests/_isolation.py).  Each fit must succeed with finite outputs or raise ValueError /
TypeError: a crash, a hang, a MemoryError or any other exception is a failure naming the case.

A callback stops every fit after a few records: a huge iteration count is a long fit the
user asked for, not a defect, but it must get to its first record without allocating or
overflowing.  Run ``python tests/test_hardening_params.py`` for a report of every case.
"""
import math
import sys
import warnings
from numbers import Integral

import numpy as np
import pytest
from sklearn.utils._param_validation import Interval

from _isolation import describe, run_isolated
from test_fuzz import SPECS, _base, _triplets, make_estimator

CASE_TIMEOUT = 30.0
N_RECORDS = 3          # the callback stops a fit after this many calls


class StopFit(Exception):
    """Raised by the test's callback: the fit got that far without failing."""


def _interval_values(c):
    integral = isinstance(c.type, type) and issubclass(c.type, Integral)
    values = []
    for bound in (c.left, c.right):
        if bound is None:
            continue
        if integral:
            values += [int(bound), int(bound) - 1, int(bound) + 1]
        else:
            step = max(abs(bound) * 1e-9, 1e-300)
            values += [float(bound), bound - step, bound + step]
    if integral:
        values += [0, -1, 2 ** 31, 2 ** 62]
    else:
        values += [0.0, -1.0, 1e-300, 1e300, math.inf, math.nan]
    return values


def extreme_values(constraints):
    """Boundary and absurd values of one parameter (deduplicated, in order)."""
    values = []
    for c in constraints:
        if isinstance(c, Interval):
            values += _interval_values(c)
    out = []
    for v in values:
        if not any(type(v) is type(u) and (v == u or (v != v and u != u)) for u in out):
            out.append(v)
    return out


def param_cases(name):
    """(case name, {param: value}) for the estimator configuration ``name`` of SPECS."""
    est = make_estimator(name)
    cases = []
    for param, constraints in sorted(type(est)._parameter_constraints.items()):
        for value in extreme_values(constraints):
            cases.append((f"{param}={value!r}", {param: value}))
    return cases


def _data(name):
    task = SPECS[name][1]
    rng = np.random.default_rng(0)
    if task == "ordinal":
        return _triplets(rng), None
    return _base("clf" if task == "metric" else task, rng)


def _stopper():
    calls = [0]

    def callback(*args, **kwargs):
        calls[0] += 1
        if calls[0] >= N_RECORDS:
            raise StopFit()

    return callback


def fit_with(name, params):
    """The child's work: fit, then call the first output method; return its finiteness."""
    X, y = _data(name)
    est = make_estimator(name)
    if "callback" in est.get_params():
        est.set_params(callback=_stopper())
    est.set_params(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                est.fit(X) if y is None else est.fit(X, y)
            except StopFit:
                return "stopped"
            for meth in ("decision_function", "transform", "predict"):
                if hasattr(est, meth):
                    out = np.asarray(getattr(est, meth)(X))
                    return "finite" if np.all(np.isfinite(out)) else "NONFINITE"
    return "finite"


def run_param_case(name, params, timeout=CASE_TIMEOUT):
    """None when the case passes, else a description of the failure."""
    result = run_isolated(lambda: fit_with(name, params), timeout=timeout)
    if result["status"] == "ok":
        return None if result["value"] != "NONFINITE" else "fit returned non-finite output"
    if result["status"] == "raised" and isinstance(result.get("exc"), (ValueError, TypeError)):
        return None
    return describe(result)


def _warm_up(name):
    X, y = _data(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make_estimator(name)
        est.fit(X) if y is None else est.fit(X, y)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SPECS))
def test_parameter_extremes(name):
    _warm_up(name)
    cases = param_cases(name)
    assert cases, name
    failures = []
    for case, params in cases:
        why = run_param_case(name, params)
        if why is not None:
            failures.append(f"{name} {case}: {why}")
    print(f"\n[params] {name}: {len(cases)} cases, {len(failures)} failures")
    assert not failures, "\n".join(failures)


if __name__ == "__main__":
    names = sys.argv[1:] or sorted(SPECS)
    for est_name in names:
        _warm_up(est_name)
        est_cases = param_cases(est_name)
        bad = [(c, run_param_case(est_name, p)) for c, p in est_cases]
        bad = [(c, w) for c, w in bad if w]
        print(f"{est_name}: {len(est_cases)} cases, {len(bad)} failures", flush=True)
        for c, w in bad:
            print("   ", c, "->", w.splitlines()[0][:300], flush=True)
