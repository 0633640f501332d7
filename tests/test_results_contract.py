"""One results contract for every public estimator and solver (issue 17).

After ``fit``:

* ``history_`` is a dict of equal-length 1-D arrays (a list of such dicts, one per head, for
  one-vs-rest) with at least ``objective`` (the quantity the method minimises, or the
  documented estimate of it), ``time`` (seconds since the fit started, non-decreasing),
  ``iteration`` (the count ``n_iter_`` is in, non-decreasing) and ``step_size`` where the
  method takes a step;
* ``n_iter_`` is the last ``iteration`` (the largest over heads);
* every attribute ``fit`` sets is public, ends in ``_`` and is documented in the class
  docstring's Attributes section (no private side channels on the estimator).

The cases are the golden test's: every estimator x solver.
"""
import re
import warnings

import numpy as np
import pytest
from numpydoc.docscrape import ClassDoc
from test_golden import CASES
from threadpoolctl import threadpool_limits

# {(estimator class, solver): reason} for solvers that take no step (or none they can report)
STEP_FREE = {
    ("OrdinalEmbedding", "lbfgs"): "scipy's L-BFGS-B takes a line-search step along its "
                                   "quasi-Newton direction but does not report it (the "
                                   "callback receives only x and fun); the history has no "
                                   "step_size column rather than a column of NaN",
}

# estimators whose migration to the contract has not landed yet (issue 17); strict, so an
# entry must go as soon as its estimator passes
NOT_MIGRATED = {
}


def _fit(case):
    make, data = CASES[case]
    with warnings.catch_warnings(), threadpool_limits(limits=1):
        warnings.simplefilter("ignore")
        unfitted = make()
        est = getattr(unfitted, "estimator", unfitted)
        before = set(vars(est))
        unfitted.fit(*data())
    return est, before


def _documented_attributes(cls):
    names = set()
    for entry in ClassDoc(cls)["Attributes"]:
        names.update(part.strip() for part in entry.name.split(","))
    return names


def _check_history(history, expect_step):
    assert isinstance(history, dict), type(history)
    lengths = {key: np.shape(val) for key, val in history.items()}
    assert all(isinstance(val, np.ndarray) and val.ndim == 1 for val in history.values()), \
        lengths
    assert len({shape for shape in lengths.values()}) == 1, f"unequal lengths: {lengths}"
    required = {"objective", "time", "iteration"} | ({"step_size"} if expect_step else set())
    assert required <= set(history), f"missing columns: {sorted(required - set(history))}"
    assert len(history["time"]) >= 1
    time = history["time"]
    assert np.all(np.isfinite(time)) and np.all(time >= 0) and np.all(np.diff(time) >= 0)
    iteration = history["iteration"]
    assert np.array_equal(iteration, np.round(iteration)) and np.all(np.diff(iteration) >= 0)
    assert np.isfinite(history["objective"][-1]), "the last objective is not finite"
    return int(iteration[-1])


def _case_params(case):
    name = case.split("-")[0]
    marks = []
    if name in NOT_MIGRATED:
        marks.append(pytest.mark.xfail(reason=NOT_MIGRATED[name], strict=True))
    return pytest.param(case, marks=marks)


@pytest.mark.parametrize("case", [_case_params(c) for c in sorted(CASES)])
def test_results_contract(case):
    est, before = _fit(case)
    cls = type(est)
    solver = getattr(est, "solver", None)
    expect_step = (cls.__name__, solver) not in STEP_FREE
    histories = est.history_ if isinstance(est.history_, list) else [est.history_]
    if isinstance(est.history_, list):
        assert len(histories) == np.atleast_2d(est.coef_).shape[0], "one history per head"
    last = [_check_history(h, expect_step) for h in histories]
    assert est.n_iter_ == max(last), (est.n_iter_, last)

    set_by_fit = set(vars(est)) - before
    private = sorted(a for a in set_by_fit if a.startswith("_"))
    assert not private, f"fit sets private attributes: {private}"
    undocumented = sorted(a for a in set_by_fit if a not in _documented_attributes(cls))
    assert not undocumented, f"fit sets undocumented attributes: {undocumented}"
    # capitals allowed: scikit-learn names attributes after capitalised parameters
    # (LogisticRegressionCV.C_; S3VMClassifier.C_ and C_star_ after C and C_star)
    assert all(re.fullmatch(r"[A-Za-z0-9_]+_", a) for a in set_by_fit), sorted(set_by_fit)


def test_not_migrated_names_are_estimators():
    names = {case.split("-")[0] for case in CASES}
    assert set(NOT_MIGRATED) <= names and set(k[0] for k in STEP_FREE) <= names
