"""One estimator object used from several threads (issue 18.7).

Fitting the same object from two threads, or predicting while it refits, must never crash and
never raise: every fit ends with a consistent fitted estimator, every prediction made while a
refit runs uses one complete set of fitted attributes (right shape, finite).  Each case runs
in a forked child under an address-space cap and a wall-clock limit (tests/_isolation.py).
"""
import threading
import warnings

import numpy as np
import pytest

import skstoch
from _isolation import describe, run_isolated
from test_fuzz import SPECS, _base, _triplets, make_estimator

N_ROUNDS = 3


def _datasets(name):
    """Two different training sets of the same width, and the input of the output method."""
    task = SPECS[name][1]
    out = []
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        if task == "ordinal":
            out.append((_triplets(rng), None))
        else:
            out.append(_base("clf" if task == "metric" else task, rng))
    return out


def _fit(est, X, y):
    return est.fit(X) if y is None else est.fit(X, y)


def _output(est, X):
    for meth in ("decision_function", "transform", "predict"):
        if hasattr(est, meth):
            return np.asarray(getattr(est, meth)(X))
    raise AssertionError(type(est).__name__)  # pragma: no cover


def _run_threads(targets):
    errors = []

    def wrap(fn):
        def run():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fn()
            except BaseException as exc:  # noqa: BLE001 - collected for the report
                errors.append(f"{type(exc).__name__}: {exc}")
        return run

    threads = [threading.Thread(target=wrap(fn)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def two_fits(name):
    (X0, y0), (X1, y1) = _datasets(name)
    est = make_estimator(name)

    def fitter(X, y):
        return lambda: [_fit(est, X, y) for _ in range(N_ROUNDS)]

    errors = _run_threads([fitter(X0, y0), fitter(X1, y1)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = _output(est, X0)
        ref = [_output(_fit(make_estimator(name), X, y), X0) for X, y in ((X0, y0), (X1, y1))]
    if not any(np.array_equal(out, r) for r in ref):
        errors.append("after two concurrent fits the model is neither fit")
    return errors


def predict_while_refitting(name):
    (X0, y0), (X1, y1) = _datasets(name)
    est = make_estimator(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit(est, X0, y0)
        expected_shape = _output(est, X0).shape
    done = threading.Event()
    bad = []

    def refit():
        try:
            for k in range(N_ROUNDS):
                _fit(est, *((X1, y1) if k % 2 == 0 else (X0, y0)))
        finally:
            done.set()

    def predict():
        while not done.is_set():
            out = _output(est, X0)
            if out.shape != expected_shape or (out.dtype.kind == "f"
                                               and not np.all(np.isfinite(out))):
                bad.append(f"prediction during a refit: shape {out.shape}, "
                           f"finite {np.all(np.isfinite(out))}")
                return

    return _run_threads([refit, predict]) + bad


@pytest.mark.parametrize("scenario", [two_fits, predict_while_refitting],
                         ids=["two_fits", "predict_while_refitting"])
@pytest.mark.parametrize("name", sorted(SPECS))
def test_one_estimator_from_two_threads(name, scenario):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y = _datasets(name)[0]
        _fit(make_estimator(name), X, y)   # lazy imports paid once, not in every child
    result = run_isolated(lambda: scenario(name), timeout=120)
    assert result["status"] == "ok", f"{name}: {describe(result)}"
    assert result["value"] == [], f"{name}: " + "\n".join(result["value"])


@pytest.mark.parametrize("make", [
    lambda: skstoch.CGVRClassifier(multi_class="ovr", random_state=0),
    lambda: skstoch.S3GDClassifier(multi_class="ovr", random_state=0),
    lambda: skstoch.CGVRRegressor(random_state=0),
    lambda: skstoch.ConstrainedLassoCV(n_radii=4),
], ids=["CGVRClassifier", "S3GDClassifier", "CGVRRegressor", "ConstrainedLassoCV"])
def test_n_jobs_runs_threads_inside_a_process_backend(make):
    """n_jobs runs the heads (folds) in threads also where a search made another joblib
    backend active: under 'loky' the one-vs-rest fit raised PicklingError (the heads' shared
    state holds a lock) and under joblib's 'dask' backend on a process cluster it hung."""
    import joblib

    rng = np.random.RandomState(0)
    X = rng.standard_normal((200, 4))
    multi = type(make()).__name__ == "CGVRRegressor"
    y = np.column_stack([X[:, 0], X[:, 1]]) if multi else np.digitize(X[:, 0], [-0.5, 0.5])
    if type(make()).__name__ == "ConstrainedLassoCV":
        y = X @ [1.0, 2.0, 0.0, 0.0]
    reference = make().fit(X, y)
    with joblib.parallel_backend("loky"):
        est = make().set_params(n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(est.coef_, reference.coef_)
