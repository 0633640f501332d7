"""Fits of CGVR and S3GD estimators on Dask arrays, on a real ``distributed.LocalCluster``
(two worker processes, 127.0.0.1 only) (issue 22).

A Dask fit does every full pass on the workers and gathers only mini-batch samples, so it
does not run the in-memory fit's iterates; it must reach the same optimum: the objective of
its coefficients equals the in-memory fit's to 1e-8 relative.  Also: sparse and uneven
chunks, sample weights as a Dask array, lazy predictions, a worker killed during a fit, and
that the client never receives X (only size-d vectors and samples within the gather
budget).
"""
import os
import signal
import threading
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

distributed = pytest.importorskip(
    "distributed", reason="Dask fits are tested on a distributed.LocalCluster (pip install "
    "'skstoch[test]' or dask[distributed])")
da = pytest.importorskip("dask.array")
import dask  # noqa: E402

from skstoch import CGVRClassifier, CGVRRegressor, S3GDClassifier, S3GDRegressor  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]

N, D = 1200, 8
ALPHA = 1e-2
# tight stops: both fits end at the optimum, to far below the 1e-8 compared
CGVR_KW = dict(alpha=ALPHA, tol=1e-8, max_iter=300, random_state=0)
S3GD_KW = dict(alpha=ALPHA, tol=1e-12, n_iter_no_change=3, max_iter=500, random_state=0)


@pytest.fixture(scope="module")
def client():
    """Two workers in this process (in-process transport, no network): the scheduler,
    task graphs and transfers of a real cluster at a fraction of the start-up cost."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture
def process_client():
    """Two worker processes on 127.0.0.1, each under a nanny that restarts it."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _data(task, seed=0, sparse=False):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((N, D))
    if sparse:
        X[rng.uniform(size=X.shape) < 0.6] = 0.0
    w = rng.standard_normal(D)
    z = X @ w + 0.5 * rng.standard_normal(N)
    y = (z > 0).astype(int) if task == "clf" else z + 1.0
    return (sp.csr_matrix(X) if sparse else X), y


def _to_dask(X, y, chunks, sample_weight=None):
    if sp.issparse(X):
        bounds = np.concatenate([[0], np.cumsum(chunks)])
        blocks = [da.from_array(X[a:b], chunks=(b - a, D), asarray=False)
                  for a, b in zip(bounds[:-1], bounds[1:])]
        Xd = da.concatenate(blocks, axis=0)
    else:
        Xd = da.from_array(X, chunks=(tuple(chunks), D))
    out = [Xd, da.from_array(y, chunks=(tuple(chunks),))]
    if sample_weight is not None:
        out.append(da.from_array(sample_weight, chunks=(tuple(chunks),)))
    return list(dask.persist(*out))      # as users should: the passes then read worker memory


def _objective(est, X, y, sample_weight=None):
    """The documented objective (weights rescaled to sum to n), computed in NumPy."""
    n = X.shape[0]
    s = np.ones(n) if sample_weight is None else sample_weight * (n / sample_weight.sum())
    w = np.ravel(est.coef_)
    p = np.asarray(X @ w).ravel() + float(np.ravel(est.intercept_)[0])
    if hasattr(est, "classes_"):
        t = np.where(y == est.classes_[1], 1.0, -1.0)
        loss = np.logaddexp(0.0, -t * p)
    else:
        loss = 0.5 * (p - y) ** 2
    return float(s @ loss) / n + 0.5 * ALPHA * float(w @ w)


EST = {
    "CGVRClassifier": (CGVRClassifier, CGVR_KW, "clf"),
    "CGVRRegressor": (CGVRRegressor, CGVR_KW, "reg"),
    "S3GDClassifier": (S3GDClassifier, S3GD_KW, "clf"),
    "S3GDRegressor": (S3GDRegressor, S3GD_KW, "reg"),
}
UNEVEN = (500, 137, 300, 263)


def _fit_both(name, sparse=False, chunks=(400, 400, 400), weighted=False):
    Est, kw, task = EST[name]
    X, y = _data(task, sparse=sparse)
    sw = np.random.RandomState(1).uniform(0.2, 3.0, N) if weighted else None
    local = Est(**kw).fit(X, y, sample_weight=sw)
    parts = _to_dask(X, y, chunks, sw)
    dist = Est(**kw).fit(parts[0], parts[1], sample_weight=parts[2] if weighted else None)
    return X, y, sw, local, dist, parts[0]


def _rel(a, b):
    return abs(a - b) / abs(b)


@pytest.mark.parametrize("name", list(EST))
def test_same_objective_as_in_memory(client, name):
    X, y, _, local, dist, Xd = _fit_both(name)
    f_local, f_dist = _objective(local, X, y), _objective(dist, X, y)
    assert _rel(f_dist, f_local) <= 1e-8, (f_dist, f_local)
    hist = dist.history_
    # one distributed pass per recorded outer iteration; each gather brings at most a
    # quarter of the rows (a rejected CGVR iteration gathers a second sample for its retry)
    assert hist["passes"][-1] == len(hist["passes"])
    assert np.all(np.diff(hist["gathered_rows"]) <= N // 4 * np.diff(hist["gathers"]))
    assert hist["gathered_rows"][-1] <= N // 4 * hist["gathers"][-1]
    # lazy predictions, equal to the in-memory ones of the same model
    pred = dist.predict(Xd)
    assert isinstance(pred, da.Array)
    np.testing.assert_array_equal(pred.compute(), dist.predict(X))
    if hasattr(dist, "predict_proba"):
        proba = dist.predict_proba(Xd)
        assert isinstance(proba, da.Array) and proba.shape == (N, 2)
        np.testing.assert_array_equal(proba.compute(), dist.predict_proba(X))
        np.testing.assert_array_equal(dist.decision_function(Xd).compute(),
                                      dist.decision_function(X))


@pytest.mark.parametrize("name", ["CGVRClassifier", "S3GDRegressor"])
def test_sparse_uneven_chunks(client, name):
    """CSR chunks of uneven sizes, under a gather budget of 50 rows of the mean size the
    workers measure (12 nnz + 28 bytes per row)."""
    X, y = _data(EST[name][2], sparse=True)
    row_bytes = 12 * X.nnz / N + 28
    with dask.config.set({"skstoch.gather-budget": int(50 * row_bytes)}):
        X, y, _, local, dist, Xd = _fit_both(name, sparse=True, chunks=UNEVEN)
    assert _rel(_objective(dist, X, y), _objective(local, X, y)) <= 1e-8
    assert _max_rows_per_gather(dist.history_) <= 50
    np.testing.assert_array_equal(dist.predict(Xd).compute(), dist.predict(X))


@pytest.mark.parametrize("name", ["CGVRRegressor", "S3GDClassifier"])
def test_dask_sample_weight(client, name):
    X, y, sw, local, dist, _ = _fit_both(name, chunks=UNEVEN, weighted=True)
    f_local, f_dist = _objective(local, X, y, sw), _objective(dist, X, y, sw)
    assert _rel(f_dist, f_local) <= 1e-8
    # the weights matter: the unweighted optimum is another point
    unweighted = EST[name][0](**EST[name][1]).fit(X, y)
    assert _objective(unweighted, X, y, sw) > f_local * (1 + 1e-6)


@pytest.mark.parametrize("scale", [1.0, 1e-320])
def test_dask_balanced_class_weight_counts_the_sample_weights(client, scale):
    """class_weight='balanced' counts each class by its sample weights, as in memory (the
    Dask fit counted rows); weights of extreme scale are rescaled before they are summed."""
    Est, _, task = EST["CGVRClassifier"]
    X, y = _data(task)
    base = np.random.RandomState(1).uniform(0.2, 3.0, N) * np.where(y == 1, 4.0, 1.0)
    counted = base * (base.sum() / (2 * np.bincount(y, weights=base)))[y]
    kw = dict(CGVR_KW, solver="cg", tol=1e-6)
    reference = Est(**kw).fit(X, y, sample_weight=counted)
    parts = _to_dask(X, y, UNEVEN, base * scale)
    dist = Est(class_weight="balanced", **kw).fit(*parts)
    f_ref, f_dist = _objective(reference, X, y, counted), _objective(dist, X, y, counted)
    assert _rel(f_dist, f_ref) <= 1e-8, (f_dist, f_ref)


def test_one_vs_rest_and_multi_output(client):
    """One head per class (one-vs-rest) or per target, each at the in-memory optimum."""
    rng = np.random.RandomState(2)
    X = rng.standard_normal((600, 5))
    y = np.argmax(X[:, :3] + 0.3 * rng.standard_normal((600, 3)), axis=1)
    Xd, yd = _to_dask(X, y, (250, 350))
    # max |grad| <= 1e-6 and strong convexity 1e-2: each fit within 3e-4 of the optimum
    kw = dict(CGVR_KW, tol=1e-6)
    local = CGVRClassifier(loss="squared_hinge", **kw).fit(X, y)
    dist = CGVRClassifier(loss="squared_hinge", **kw).fit(Xd, yd)
    assert dist.coef_.shape == (3, 5) and len(dist.history_) == 3
    # solver='auto': full-batch CG on the 600 rows in memory, CGVR on the Dask array
    assert (local.solver_, dist.solver_) == ("cg", "cgvr")
    np.testing.assert_allclose(dist.coef_, local.coef_, rtol=0, atol=1e-3)
    np.testing.assert_array_equal(dist.predict(Xd).compute(), dist.predict(X))
    # three one-vs-rest heads (two epochs each: only the heads are checked here)
    ovr = S3GDClassifier(multi_class="ovr", **dict(S3GD_KW, max_iter=2)).fit(Xd, yd)
    assert ovr.coef_.shape == (3, 5) and len(ovr.history_) == 3
    Y = np.column_stack([X @ np.arange(5.0), X[:, 0] - 1.0])
    Yd = da.from_array(Y, chunks=((250, 350), 2))
    local, dist = CGVRRegressor(**kw).fit(X, Y), CGVRRegressor(**kw).fit(Xd, Yd)
    assert dist.coef_.shape == (2, 5) and dist.intercept_.shape == (2,)
    np.testing.assert_allclose(dist.coef_, local.coef_, rtol=0, atol=1e-3)
    np.testing.assert_array_equal(dist.predict(Xd).compute(), dist.predict(X))


K = 4


def _multiclass(sparse=False):
    rng = np.random.RandomState(4)
    X = rng.standard_normal((N, D))
    if sparse:
        X[rng.uniform(size=X.shape) < 0.6] = 0.0
    y = np.argmax(X @ rng.standard_normal((D, K)) + 0.8 * rng.standard_normal((N, K)), axis=1)
    y[y == 3] = np.where(rng.uniform(size=(y == 3).sum()) < 0.5, 3, 0)    # unbalanced
    return (sp.csr_matrix(X) if sparse else X), y


def _multinomial_objective(est, X, y, sample_weight=None):
    """The multinomial objective (scikit-learn's), in NumPy: weights rescaled to sum to n,
    class_weight included, penalty (ALPHA/2) ||W||^2."""
    n = X.shape[0]
    s = np.ones(n) if sample_weight is None else sample_weight.copy()
    if est.class_weight == "balanced":
        s *= (n / (K * np.bincount(y, minlength=K)))[y]
    s *= n / s.sum()
    Z = np.asarray(X @ est.coef_.T) + est.intercept_
    lse = np.logaddexp.reduce(Z, axis=1)
    return float(s @ (lse - Z[np.arange(n), y])) / n + 0.5 * ALPHA * float(np.vdot(est.coef_,
                                                                                 est.coef_))


MULTINOMIAL_CASES = {
    # dense, even chunks; the defaults resolve to the multinomial model
    "dense": dict(sparse=False, chunks=(400, 400, 400), weighted=False, kw={}),
    # CSR chunks of uneven sizes, sample_weight as a Dask array
    "sparse-uneven-weighted": dict(sparse=True, chunks=UNEVEN, weighted=True, kw={}),
    # no intercept, class weights, uneven dense chunks, a gather budget of 40 rows
    "no-intercept-class_weight-budget": dict(
        sparse=False, chunks=UNEVEN[::-1], weighted=False, budget_rows=40,
        kw=dict(fit_intercept=False, class_weight="balanced")),
}
# the client's bytes per gathered row: X's row, class index and weight, and two K-vectors
# (snapshot probabilities, one-hot target or X B) computed on the client
MULTINOMIAL_ROW_BYTES = 8 * D + 16 + 16 * K


@pytest.mark.parametrize("case", list(MULTINOMIAL_CASES))
@pytest.mark.parametrize("name", ["CGVRClassifier", "S3GDClassifier"])
def test_multinomial_same_objective_as_in_memory(client, received, name, case):
    """More than two classes with the log loss: the Dask fit is the multinomial model, at
    the in-memory fit's optimum, and its lazy predict_proba is that model's softmax.  Under
    a gather budget, every result the client receives is within it (plus the K (d + 1) + 2
    sums of a pass)."""
    Est, kw, _ = EST[name]
    spec = MULTINOMIAL_CASES[case]
    X, y = _multiclass(spec["sparse"])
    sw = np.random.RandomState(1).uniform(0.2, 3.0, N) if spec["weighted"] else None
    # CGVR: max |grad| <= 1e-6 and strong convexity 1e-2, within 5e-11 of the optimum
    kw = dict(kw, **spec["kw"], **({"tol": 1e-6} if Est is CGVRClassifier else {}))
    local = Est(**kw).fit(X, y, sample_weight=sw)
    parts = _to_dask(X, y, spec["chunks"], sw)
    rows = spec.get("budget_rows", N // 4)
    received.clear()
    with dask.config.set({"skstoch.gather-budget": rows * MULTINOMIAL_ROW_BYTES}):
        dist = Est(**kw).fit(parts[0], parts[1],
                             sample_weight=parts[2] if sw is not None else None)
    if "budget_rows" in spec:
        assert max(received) <= rows * MULTINOMIAL_ROW_BYTES + 8 * (K * (D + 1) + 2)
    assert dist.coef_.shape == local.coef_.shape == (K, D)
    assert dist.intercept_.shape == (K,)
    assert np.any(dist.intercept_ != 0) == spec["kw"].get("fit_intercept", True)
    f_local, f_dist = (_multinomial_objective(e, X, y, sw) for e in (local, dist))
    assert _rel(f_dist, f_local) <= 1e-8, (f_dist, f_local)
    hist = dist.history_
    # one distributed pass per outer iteration (epoch), plus the start's
    assert isinstance(hist, dict) and hist["passes"][-1] == dist.n_iter_ + 1
    assert _max_rows_per_gather(hist) <= rows
    Xd = parts[0]
    proba = dist.predict_proba(Xd)
    assert isinstance(proba, da.Array) and proba.shape == (N, K)
    proba = proba.compute()
    scores = dist.decision_function(X)
    softmax = np.exp(scores - np.logaddexp.reduce(scores, axis=1)[:, None])
    np.testing.assert_allclose(proba, softmax, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(dist.predict(Xd).compute(), dist.predict(X))
    if spec["weighted"]:
        # the weights matter: the unweighted optimum is another point
        unweighted = S3GDClassifier(**S3GD_KW).fit(X, y)
        assert _multinomial_objective(unweighted, X, y, sw) > f_local * (1 + 1e-6)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_multinomial_reproducible_and_warm_start(client):
    """For a given chunking and random_state, a multinomial Dask fit is the same bits; a
    warm start from the in-memory optimum stops at once."""
    X, y = _multiclass()
    Xd, yd = _to_dask(X, y, UNEVEN)
    for Est in (CGVRClassifier, S3GDClassifier):
        a, b = (Est(max_iter=3, random_state=0).fit(Xd, yd) for _ in range(2))
        np.testing.assert_array_equal(a.coef_, b.coef_)
        np.testing.assert_array_equal(a.intercept_, b.intercept_)
    warm = CGVRClassifier(warm_start=True, **dict(CGVR_KW, tol=1e-6)).fit(X, y)
    coef = warm.coef_.copy()
    warm.fit(Xd, yd)
    assert warm.n_iter_ <= 1
    np.testing.assert_allclose(warm.coef_, coef, rtol=0, atol=1e-4)


def test_multinomial_errors(client):
    """A multinomial setting the Dask fit does not support raises a ValueError naming it;
    so does multi_class='multinomial' with a loss that is not the log loss (as in
    memory)."""
    X, y = _multiclass()
    Xd, yd = _to_dask(X, y, (600, 600))
    with pytest.raises(ValueError, match="line_search='full'"):
        CGVRClassifier(line_search="full").fit(Xd, yd)
    with pytest.raises(ValueError, match="solver='cg'"):
        CGVRClassifier(solver="cg").fit(Xd, yd)
    for est in (S3GDClassifier(loss="squared_hinge", multi_class="multinomial"),
                CGVRClassifier(loss="squared_hinge", multi_class="multinomial")):
        with pytest.raises(ValueError, match="multi_class='multinomial' needs"):
            est.fit(Xd, yd)


def _nbytes(obj):
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(o) for o in obj)
    if sp.issparse(obj):
        return obj.data.nbytes + obj.indices.nbytes + obj.indptr.nbytes
    return getattr(obj, "nbytes", 8)


@pytest.fixture
def received(monkeypatch):
    """The sizes (bytes of the arrays) of every result the client receives; a Dask X
    converted on the client fails."""
    sizes = []
    real_compute, delayed_cls = dask.compute, dask.delayed(int).__class__
    real_delayed_compute = delayed_cls.compute

    def spy_compute(*args, **kwargs):
        out = real_compute(*args, **kwargs)
        sizes.append(_nbytes(out))
        return out

    def spy_delayed_compute(self, **kwargs):
        out = real_delayed_compute(self, **kwargs)
        sizes.append(_nbytes(out))
        return out

    def refuse(self, *args, **kwargs):
        raise AssertionError("X was converted to a NumPy array on the client")

    monkeypatch.setattr(dask, "compute", spy_compute)
    monkeypatch.setattr(delayed_cls, "compute", spy_delayed_compute)
    monkeypatch.setattr(da.Array, "__array__", refuse)
    return sizes


def _max_rows_per_gather(hist):
    gathers, rows = np.diff(hist["gathers"], prepend=0), np.diff(hist["gathered_rows"],
                                                                    prepend=0)
    return max(r / g for r, g in zip(rows, gathers) if g)


ROW_BYTES = 8 * (D + 3)     # a gathered dense row with its target, weight and dl0


# budgets of 60 and 30 rows (CGVR's batch is 34); S3GD's epochs are then bounded by 32
# sweeps of the sample (960 rows' worth of steps instead of N)
@pytest.mark.parametrize("name, rows", [("CGVRClassifier", 60), ("S3GDRegressor", 30)])
def test_gather_budget_bounds_what_the_client_receives(client, received, name, rows):
    """With a tiny gather budget, every result the client receives is at most the budget
    plus a few size-d vectors (never X), and the fit still reaches the in-memory optimum
    (the distributed passes give the exact gradient and the stop)."""
    Est, kw, task = EST[name]
    X, y = _data(task)
    local = Est(**kw).fit(X, y)
    Xd, yd = _to_dask(X, y, UNEVEN)
    received.clear()
    budget = rows * ROW_BYTES
    with dask.config.set({"skstoch.gather-budget": budget}):
        dist = Est(**kw).fit(Xd, yd)
    assert received and dist.n_iter_ > 0
    assert max(received) <= budget + 4 * ROW_BYTES, (max(received), X.nbytes)
    assert _rel(_objective(dist, X, y), _objective(local, X, y)) <= 1e-8
    hist = dist.history_
    assert hist["gathers"][-1] >= hist["passes"][-1] and _max_rows_per_gather(hist) <= rows
    # a float budget (what Dask reads from DASK_SKSTOCH__GATHER_BUDGET=1e9) is a byte count;
    # it was refused as not 'a non-negative number of bytes'
    with dask.config.set({"skstoch.gather-budget": float(budget)}):
        np.testing.assert_array_equal(Est(**kw).fit(Xd, yd).coef_, dist.coef_)
    for bad in (-1, -1.0, float("nan"), float("inf"), True):
        with dask.config.set({"skstoch.gather-budget": bad}), \
                pytest.raises(ValueError, match="gather-budget"):
            Est(**kw).fit(Xd, yd)


def _generated(seed, n_classes=2):
    """X and y generated by the task graph (not held by the client), so that Dask can
    recompute any chunk a dead worker held."""
    X = da.random.RandomState(seed).standard_normal((N, D), chunks=(300, D))
    if n_classes == 2:
        y = (X @ da.from_array(np.linspace(-1, 1, D)) > 0).astype(int)
    else:
        B = np.random.RandomState(seed).standard_normal((D, n_classes))
        y = da.argmax(X @ da.from_array(B), axis=1)
    return X, y


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n_classes", [2, 3])     # binary, and the multinomial fit
def test_worker_killed_during_fit(process_client, n_classes):
    """A worker process killed (SIGKILL) after the second outer iteration: Dask recomputes
    the chunks it held (X persisted, reproducible from its graph) and the fit ends at exactly
    the point of an undisturbed fit."""
    kw = dict(CGVR_KW, max_iter=5)      # kill in iteration 2 of 5 (a ConvergenceWarning)
    with dask.config.set(scheduler="sync"):      # the same chunks and passes, in this process
        reference = CGVRClassifier(**kw).fit(*_generated(3, n_classes))
    X, y = dask.persist(*_generated(3, n_classes))
    pids = process_client.run(os.getpid)
    victim = sorted(pids)[0]
    killed = threading.Event()

    def kill(record):
        if record["iteration"] == 2 and not killed.is_set():
            killed.set()
            os.kill(pids[victim], signal.SIGKILL)

    est = CGVRClassifier(callback=kill, **kw)
    est.fit(X, y)
    assert killed.is_set()
    # the recomputed chunks are the same, so is every pass and the whole fit
    np.testing.assert_array_equal(est.coef_, reference.coef_)
    assert est.n_iter_ == reference.n_iter_ == 5
    # predictions on the worker processes (the tasks drop the unpicklable callback)
    np.testing.assert_array_equal(est.predict_proba(X).compute(),
                                  reference.predict_proba(X.compute()))


@pytest.mark.parametrize("Est", [CGVRRegressor, S3GDRegressor])
def test_a_target_whose_squares_overflow_is_named(client, Est):
    # "the objective became inf at record 0; decrease the step size", before any step
    X, y = _data("reg")
    Xd, yd = _to_dask(X, y * 1e160, (600, 600))
    with pytest.raises(ValueError, match="For a regressor, y is too large in magnitude"):
        Est().fit(Xd, yd)


def test_dask_errors_keep_previous_state(client):
    X, y = _data("clf")
    Xd, yd = _to_dask(X, y, (600, 600))
    est = S3GDClassifier(**S3GD_KW).fit(Xd, yd)
    coef = est.coef_.copy()
    for bad in ({"solver": "cd"}, {"solver": "s3gd"}, {"solver": "cd", "penalty": "l1"}):
        with pytest.raises(ValueError, match="Dask"):
            est.set_params(**bad).fit(Xd, yd)
        est.set_params(**S3GD_KW, solver="auto", penalty="l2")
        np.testing.assert_array_equal(est.coef_, coef)
    with pytest.raises(ValueError, match="line_search='full'"):
        CGVRClassifier(line_search="full").fit(Xd, yd)
    Xbad = Xd.copy()
    Xbad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(Xbad, yd)
    np.testing.assert_array_equal(est.coef_, coef)

    # squared row norms that overflow (|X| of 1e200; a row of weight 0 too): the Dask fits
    # returned zero coefficients where the in-memory fits raise
    weights = da.from_array(np.r_[0.0, np.ones(len(y) - 1)], chunks=600)
    for Est, kw in ((S3GDClassifier, S3GD_KW), (CGVRClassifier, {})):
        with pytest.raises(ValueError, match="squared row norms overflow"):
            Est(**kw).fit(Xd * 1e200, yd)
        with pytest.raises(ValueError, match="squared row norms overflow"):
            Est(**kw).fit(da.concatenate([Xd[:1] * 1e200, Xd[1:]]), yd,
                          sample_weight=weights)

    # a chunk that cannot be computed (its source is gone): Dask's error reaches the caller
    # and the estimator keeps its previous fit
    def lost(block):
        raise OSError("the chunk's source is gone")

    with pytest.raises(OSError, match="source is gone"):
        est.fit(Xd.map_blocks(lost, dtype=Xd.dtype), yd)
    np.testing.assert_array_equal(est.coef_, coef)
    assert est.n_features_in_ == D



@pytest.mark.parametrize("name, penalty, sparse, weighted", [
    ("S3GDClassifier", "l1", False, False),
    ("S3GDClassifier", "elasticnet", True, True),
    ("S3GDRegressor", "l1", True, False),
    ("S3GDRegressor", "elasticnet", False, True),
])
def test_l1_penalties_prox_svrg(client, name, penalty, sparse, weighted):
    """penalty='l1' / 'elasticnet' on Dask data: Prox-SVRG (solver='auto' is 'hybrid'
    there; in memory it is coordinate descent) reaches the in-memory optimum to 1e-8,
    with one distributed pass per epoch and sparse coefficients."""
    Est, _, task = EST[name]
    X, y = _data(task, sparse=sparse)
    sw = np.random.RandomState(1).uniform(0.2, 3.0, N) if weighted else None
    kw = dict(S3GD_KW, penalty=penalty, l1_ratio=0.5, alpha=0.2)
    local = Est(**kw).fit(X, y, sample_weight=sw)
    parts = _to_dask(X, y, UNEVEN, sw)
    dist = Est(**kw).fit(parts[0], parts[1], sample_weight=parts[2] if weighted else None)
    ratio = 1.0 if penalty == "l1" else 0.5
    lam1, lam2 = 0.2 * ratio, 0.2 * (1 - ratio)

    def objective(est):
        w = np.ravel(est.coef_)
        smooth = _objective(est, X, y, sw) - 0.5 * ALPHA * float(w @ w)
        return smooth + lam1 * np.abs(w).sum() + 0.5 * lam2 * float(w @ w)

    f_local, f_dist = objective(local), objective(dist)
    assert _rel(f_dist, f_local) <= 1e-8, (f_dist, f_local)
    # the l1 part matters: some coefficients are exactly zero, the same ones as in memory
    assert 0 < np.count_nonzero(dist.coef_) < D
    np.testing.assert_array_equal(dist.coef_ != 0, local.coef_ != 0)
    hist = dist.history_
    assert hist["passes"][-1] == len(hist["passes"])
    assert _max_rows_per_gather(hist) <= N // 4
    with pytest.raises(ValueError, match="reads a column of X"):
        Est(**dict(kw, solver="cd")).fit(parts[0], parts[1])


def test_l1_gather_budget(client, received):
    """An l1 fit under a gather budget of 30 rows: the client receives at most the budget
    (never X) and the fit still reaches the in-memory (coordinate descent) optimum."""
    X, y = _data("reg")
    kw = dict(S3GD_KW, penalty="l1", alpha=0.1)
    local = S3GDRegressor(**kw).fit(X, y)
    Xd, yd = _to_dask(X, y, UNEVEN)
    received.clear()
    budget = 30 * ROW_BYTES
    with dask.config.set({"skstoch.gather-budget": budget}):
        dist = S3GDRegressor(**kw).fit(Xd, yd)
    assert received and max(received) <= budget + 4 * ROW_BYTES
    assert _max_rows_per_gather(dist.history_) <= 30

    def objective(est):
        return 0.5 * np.mean((X @ est.coef_ + est.intercept_ - y) ** 2) \
            + 0.1 * np.abs(est.coef_).sum()

    assert _rel(objective(dist), objective(local)) <= 1e-8


@pytest.mark.parametrize("name, sparse, weighted", [("CGVRClassifier", False, True),
                                                    ("CGVRRegressor", True, False)])
def test_full_batch_cg(client, received, name, sparse, weighted):
    """solver='cg' on Dask data: every gradient is a distributed pass and every line search
    one more (the margins X x, X p kept on the workers; its trial steps read only them),
    as in memory; the client receives size-d vectors and line values, never rows."""
    Est, _, task = EST[name]
    X, y = _data(task, sparse=sparse)
    sw = np.random.RandomState(1).uniform(0.2, 3.0, N) if weighted else None
    # max |grad| <= 1e-6 and strong convexity 1e-2: far below the 1e-8 compared
    kw = dict(CGVR_KW, solver="cg", tol=1e-6)
    local = Est(**kw).fit(X, y, sample_weight=sw)
    parts = _to_dask(X, y, UNEVEN, sw)
    received.clear()
    dist = Est(**kw).fit(parts[0], parts[1], sample_weight=parts[2] if weighted else None)
    f_local, f_dist = _objective(local, X, y, sw), _objective(dist, X, y, sw)
    assert _rel(f_dist, f_local) <= 1e-8, (f_dist, f_local)
    hist = dist.history_
    assert hist["passes"][-1] == 1 + 2 * dist.n_iter_ and hist["gathers"][-1] == 0
    assert hist["line_search_evals"][-1] >= dist.n_iter_
    assert max(received) < 1000     # X: 76,800 bytes dense


@pytest.mark.parametrize("name", ["CGVRClassifier", "CGVRRegressor"])
def test_full_batch_cg_reaches_a_tight_tol(client, name):
    # the workers summed f itself: near the optimum its decrease fell below the rounding of
    # that sum, and the fit stopped at max |gradient| 2.5e-9 ("the iterate no longer changes
    # in floating point") for tol=1e-10; a line without a decrease is now searched again on
    # the rows' loss changes
    from sklearn.exceptions import ConvergenceWarning
    Est, _, task = EST[name]
    X, y = _data(task)
    parts = _to_dask(X, y, UNEVEN)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = Est(solver="cg", tol=1e-10, max_iter=300).fit(parts[0], parts[1])
    assert est.history_["grad_max"][-1] <= 1e-10


def test_unsupported_options_say_why(client):
    """The options a Dask fit refuses name the reason (checked before any pass)."""
    X, y = _data("clf")
    Xd, yd = _to_dask(X, y, (600, 600))
    reasons = {"s3gd": "anchor graph", "ssgd": "strata", "sgd": "noise floor",
               "cd": "column of X"}
    for solver, reason in reasons.items():
        with pytest.raises(ValueError, match=reason):
            S3GDClassifier(solver=solver, penalty="l1").fit(Xd, yd)
    with pytest.raises(ValueError, match="inner step"):
        CGVRClassifier(line_search="full").fit(Xd, yd)
    # solver='auto' is 'hybrid' with the anchor epochs in memory: it fitted without them
    with pytest.raises(ValueError, match="anchor_epochs > 0 builds an anchor graph"):
        S3GDClassifier(anchor_epochs=1).fit(Xd, yd)


@pytest.mark.parametrize("name", ["CGVRClassifier", "S3GDClassifier", "CGVRRegressor",
                                  "S3GDRegressor"])
def test_predictions_on_filtered_dask_x(client, name):
    # boolean filtering leaves chunks of 0 rows (and unknown chunk sizes): each chunk ran the
    # in-memory method, which refused "0 sample(s)"; before fit, AttributeError on classes_
    # or coef_ instead of NotFittedError
    from sklearn.exceptions import NotFittedError
    X, y = _data("clf" if "Classifier" in name else "reg")
    X = X[np.argsort(X[:, 0])]
    Xd, yd = _to_dask(X, y, (400, 400, 400))
    Est = {"CGVRClassifier": CGVRClassifier, "S3GDClassifier": S3GDClassifier,
           "CGVRRegressor": CGVRRegressor, "S3GDRegressor": S3GDRegressor}[name]
    methods = (["predict", "decision_function", "predict_proba"] if "Classifier" in name
               else ["predict"])
    for method in methods:
        with pytest.raises(NotFittedError):
            getattr(Est(), method)(Xd)
    est = Est(random_state=0).fit(X, y)
    keep = X[:, 0] > 0.5
    filtered = Xd[Xd[:, 0] > 0.5]
    for method in methods:
        got = getattr(est, method)(filtered).compute()
        np.testing.assert_array_equal(got, getattr(est, method)(X[keep]))


def test_dask_targets_and_weights_must_be_numbers_of_the_right_length(client):
    # astype(float64) parsed numeric strings and dropped imaginary parts, where the in-memory
    # fit refuses both; a short NumPy y reached Dask's "Chunks do not add up to shape"
    X, y = _data("reg")
    Xd, yd = _to_dask(X, y, (600, 600))
    for bad_y, match in [(y.astype(str), "y must hold numbers"),
                         (y + 1j, "Complex data not supported"),
                         (y[:-50], "y has 1150 samples but X has 1200")]:
        with pytest.raises(ValueError, match=match):
            CGVRRegressor().fit(Xd, bad_y)
    for bad_w, match in [(np.ones(len(y)).astype(str), "sample_weight must hold numbers"),
                         (np.ones(len(y)) + 1j, "Complex data not supported"),
                         (np.ones(len(y) - 1), "sample_weight has 1199 samples")]:
        with pytest.raises(ValueError, match=match):
            CGVRRegressor().fit(Xd, yd, sample_weight=bad_w)
    unknown = yd[yd > -np.inf]
    with pytest.raises(ValueError, match="y has unknown chunk sizes"):
        CGVRRegressor().fit(Xd, unknown)


@pytest.mark.parametrize("penalty", ["l1", "elasticnet"])
def test_multinomial_l1_penalties(client, penalty):
    """Multinomial Prox-SVRG with an l1 part (solver='svrg'; 'auto' picks one-vs-rest
    coordinate descent in memory) reaches the in-memory objective with the same zeros."""
    X, y = _multiclass()
    kw = dict(solver="svrg", penalty=penalty, alpha=1e-2, tol=1e-10, max_iter=500,
              random_state=0)
    local = S3GDClassifier(**kw).fit(X, y)
    dist = S3GDClassifier(**kw).fit(*_to_dask(X, y, UNEVEN)[:2])
    assert dist.coef_.shape == (K, D)
    f_local, f_dist = (e.history_["objective"][-1] for e in (local, dist))
    assert _rel(f_dist, f_local) <= 1e-8, (f_dist, f_local)
    np.testing.assert_array_equal(dist.coef_ == 0, local.coef_ == 0)
    assert np.any(local.coef_ == 0)


@pytest.mark.parametrize("name", list(EST))
@pytest.mark.parametrize("dask_y", [True, False])
def test_column_vector_target_is_raveled_with_a_warning(client, name, dask_y):
    """An (n, 1) y on Dask X is one target with a DataConversionWarning, as in memory (the
    regressors fitted a 2-D coef_ and predicted (n, 1); the classifiers raised)."""
    from sklearn.exceptions import DataConversionWarning

    Est, kw, task = EST[name]
    X, y = _data(task)
    Xd, yd = _to_dask(X, y, (600, 600))
    col = yd[:, None] if dask_y else y[:, None]
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        est = Est(**kw).fit(Xd, col)
    flat = Est(**kw).fit(Xd, yd)
    np.testing.assert_array_equal(est.coef_, flat.coef_)
    assert est.predict(Xd).compute().shape == (N,)



@pytest.mark.parametrize("scale", [1e-320, 1e307])
@pytest.mark.parametrize("name", ["CGVRClassifier", "S3GDRegressor"])
def test_uniform_weights_of_extreme_scale_fit_as_unit_weights(client, name, scale):
    """Uniform weights 1e-320 (their sum underflows) or 1e307 (it overflows) fit as unit
    weights, as in memory (before: 'diverged: decrease the step size', and 'every sample has
    weight zero' for 1e307)."""
    Est, kw, task = EST[name]
    X, y = _data(task)
    Xd, yd, swd = _to_dask(X, y, (600, 600), np.full(N, scale))
    est = Est(**kw).fit(Xd, yd, sample_weight=swd)
    unit = Est(**kw).fit(Xd, yd)
    np.testing.assert_array_equal(est.coef_, unit.coef_)


def test_svrg_n_inner_beyond_the_kernels_int_is_a_value_error(client):
    """S3GD solver='svrg' with n_inner=2**40 ran 2**40 steps per epoch on Dask data (a fit
    on 1200 rows that did not return); now the parameter error of the in-memory fit."""
    X, y = _data("reg")
    Xd, yd = _to_dask(X, y, (600, 600))
    with pytest.raises(ValueError, match="'n_inner' parameter"):
        S3GDRegressor(solver="svrg", n_inner=2 ** 40).fit(Xd, yd)


@pytest.mark.parametrize("binary", [True, False])
def test_plateau_stop_far_from_the_optimum_warns_on_dask_data(client, binary):
    """The in-memory fit's check after a plateau stop (raw wine: the default classifier
    stopped silently at a training accuracy of 0.70) runs on Dask data too (binary: a
    loose tol keeps the raw fit short; its threshold is 0.3)."""
    import warnings

    from sklearn.datasets import load_wine
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True)
    y, kw = ((y == 1).astype(int), {"tol": 1e-2}) if binary else (y, {})
    raw, Z, y = (da.from_array(A, chunks=100) for A in (X, StandardScaler().fit_transform(X), y))
    with pytest.warns(ConvergenceWarning, match="likely far from the optimum"):
        clf = S3GDClassifier(random_state=0, **kw).fit(raw, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        S3GDClassifier(random_state=0, **kw).fit(Z, y)
    # from a warm start the gradient at zero takes one more distributed pass
    with pytest.warns(ConvergenceWarning, match="likely far from the optimum"):
        clf.set_params(warm_start=True).fit(raw, y)


def _far_cgvr_case(case, solver="cgvr"):
    """``(X raw, X standardized, y, estimator)`` of a case where the in-memory CGVR fit
    warns after its tol stop: raw diabetes with y x 1e-4 (R2 0.491 where Ridge reaches
    0.518; y x 1e-5 for solver='cg', which runs out of iterations at 1e-4), or standardized
    make_classification data (2 or 3 classes) of which every second feature is in units
    1e3 times larger (x 1e-3)."""
    from sklearn.datasets import load_diabetes, make_classification
    from sklearn.preprocessing import StandardScaler

    if case == "regressor":
        X, y = load_diabetes(return_X_y=True, scaled=False)
        y = y * (1e-4 if solver == "cgvr" else 1e-5)
        return X, StandardScaler().fit_transform(X), y, CGVRRegressor(solver=solver,
                                                                      random_state=0)
    X, y = make_classification(n_samples=N, n_features=D, n_informative=5,
                               n_classes=2 if case == "binary" else 3, random_state=0)
    Z = StandardScaler().fit_transform(X)
    raw = Z * np.where(np.arange(D) % 2, 1e-3, 1.0)
    return raw, Z, y, CGVRClassifier(solver=solver, random_state=0)


@pytest.mark.parametrize("case, solver", [("regressor", "cgvr"), ("regressor", "cg"),
                                          ("binary", "cgvr"), ("binary", "cg"),
                                          ("multinomial", "cgvr")])
def test_cgvr_tol_stop_far_from_the_optimum_warns_on_dask_data(client, case, solver):
    """The in-memory CGVR check after a tol stop (gradient on standardized features
    relative to zero, above max(0.01, 100 tol)) runs on Dask data too: where the in-memory
    fit warns the Dask fit warns, on the standardized data it does not; also from a warm
    start at the fit (a stop at the first pass: no sample, so the moments take one pass
    over the chunks, and the gradient at zero one more pass) and with solver='cg' (no
    sample)."""
    import warnings

    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning

    raw, Z, y, est = _far_cgvr_case(case, solver)
    match = r"max \|gradient\| <= tol.*standardized"
    with pytest.warns(ConvergenceWarning, match=match):
        clone(est).fit(raw, y)       # the in-memory fit warns
    raw_d, Z_d, y_d = (da.from_array(A, chunks=100) for A in (raw, Z, y))
    with pytest.warns(ConvergenceWarning, match=match):
        fitted = clone(est).fit(raw_d, y_d)
    # a tol stop, not the budget's warning (max_iter=None: 1000 CG steps, 100 for 'cgvr')
    assert fitted.n_iter_ < (1000 if solver == "cg" else 100)
    with pytest.warns(ConvergenceWarning, match=match):
        fitted.set_params(warm_start=True).fit(raw_d, y_d)
    assert fitted.n_iter_ == 0
    if (case, solver) != ("regressor", "cg"):   # standardized y x 1e-5: still too loose
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            clone(est).fit(Z_d, y_d)


@pytest.mark.parametrize("sparse", [False, True])
def test_dask_column_moments_match_numpy(client, sparse):
    """The tol check's one pass over the chunks (a Dask fit with no gathered sample) gives
    the columns' means and standard deviations of all rows: uneven chunks, CSR chunks, a
    column of large mean and small spread (the chunks' moments are merged pairwise, not
    from sums of squares)."""
    from skstoch._solvers import dask_fit

    X, y = _data("reg", sparse=sparse)
    if not sparse:
        X[:, 0] = 1e6 + 1e-3 * X[:, 0]
    Xd, yd = _to_dask(X, y, (500, 100, 1, 599))
    data = dask_fit.make_data(Xd, yd, da.ones_like(yd),
                              dask_fit.cgvr_loss_spec("squared_error"))
    mean, std = data.column_moments()
    dense = X.toarray() if sparse else X
    np.testing.assert_allclose(mean, dense.mean(axis=0), rtol=1e-12, atol=1e-15)
    # (sums of squares would lose all digits of column 0: 1e12 against a variance of 1e-6)
    np.testing.assert_allclose(std, dense.std(axis=0), rtol=1e-6)


def test_cgvr_full_batch_tol_check_matches_in_memory(client, monkeypatch):
    """solver='cg' runs the in-memory iterates on Dask data, so its tol check (the
    gradient the stop tested, the first pass's at zero, the moments by one pass over the
    chunks) measures the in-memory fit's ratio."""
    from skstoch._solvers import cgvr

    ratios = []
    monkeypatch.setattr(cgvr, "warn_if_far_after_tol",
                        lambda ratio, name, tol: ratios.append(ratio))
    raw, _, y, est = _far_cgvr_case("binary", "cg")
    est.fit(raw, y)
    est.fit(*_to_dask(raw, y, (500, 100, 600)))
    assert len(ratios) == 2 and ratios[0] > 0.1
    assert ratios[1] == pytest.approx(ratios[0], rel=1e-10)


def _declared(X, load):
    """A Dask array of X's shape and dtype whose four row chunks ``load(chunk)`` computes:
    a source whose data can differ from what the array declares."""
    rows = X.shape[0] // 4
    return da.concatenate([
        da.from_delayed(dask.delayed(load)(X[i * rows:(i + 1) * rows]),
                        shape=(rows, X.shape[1]), dtype=X.dtype) for i in range(4)])


@pytest.mark.parametrize("load, message", [
    (lambda b: b + 1j, "a chunk of X holds dtype complex128"),
    (lambda b: b.astype(str), "a chunk of X holds dtype <U"),
    (lambda b: b[:-10], r"a chunk of X has shape \(290, 8\), where its Dask array declares"),
    (lambda b: np.column_stack([b, b[:, :1]]), r"a chunk of X has shape \(300, 9\)"),
])
@pytest.mark.parametrize("name", ["CGVRRegressor", "S3GDClassifier", "multinomial"])
def test_chunks_that_differ_from_their_declared_dtype_or_shape(client, name, load, message):
    # delayed sources only declare a dtype and a shape: complex chunks lost their imaginary
    # parts and string chunks were parsed, silently; wrong shapes raised numpy's
    # broadcasting errors that did not name X
    Est, kw, task = EST["S3GDClassifier" if name == "multinomial" else name]
    X, y = _data(task)
    if name == "multinomial":
        y = np.digitize(X[:, 0], [-0.5, 0.5])
    with pytest.raises(ValueError, match=message):
        Est(**kw).fit(_declared(X, load), y)


def test_scalar_sample_weight_and_targets_without_columns(client):
    """A number as sample_weight weighs every row alike, as in memory (it was 'sample_weight
    has 0 samples'); a y of 0 columns is named (it was 'need at least one array to
    concatenate')."""
    X, y = _data("reg")
    Xd, yd = _to_dask(X, y, UNEVEN)[:2]
    unweighted = CGVRRegressor(**CGVR_KW).fit(Xd, yd)
    np.testing.assert_array_equal(CGVRRegressor(**CGVR_KW).fit(Xd, yd, sample_weight=2.5).coef_,
                                  unweighted.coef_)
    for bad, message in ((0.0, "at least one non-zero"), (-1.0, "Negative values"),
                         (np.nan, "contains NaN"), (np.inf, "contains infinity")):
        with pytest.raises(ValueError, match=message):
            CGVRRegressor(**CGVR_KW).fit(Xd, yd, sample_weight=bad)
    with pytest.raises(ValueError, match=r"y has 0 columns \(shape \(1200, 0\)\)"):
        CGVRRegressor(**CGVR_KW).fit(Xd, np.empty((N, 0)))
