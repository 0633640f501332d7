"""Tests of LMNNMetric (paper 001, section 4) and its kernels."""
import pickle
import warnings
import runpy
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import eigh_tridiagonal
from sklearn.datasets import load_wine
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skstoch import LMNNMetric
from skstoch._fast import _lmnn
from skstoch._solvers import _lmnn_triplets
from skstoch._solvers import lmnn as driver
from skstoch.utils._random_reference import ReferenceStream

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- helpers
def _noisy_blobs(n=150, n_informative=3, n_noise=12, seed=0):
    """3 well separated classes in a few dimensions plus many large-variance noise
    features: Euclidean k-NN is poor, a good metric ignores the noise."""
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    centers = 2.0 * rng.randn(3, n_informative)
    informative = centers[y] + 0.5 * rng.randn(n, n_informative)
    noise = 3.0 * rng.randn(n, n_noise)
    return np.hstack([informative, noise]), y


def _problem(seed=0, n=40, d=6, n_trip=60):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    trip = rng.randint(0, n, size=(n_trip, 3)).astype(np.int32)   # the kernels read int32 tables
    B = rng.randn(d, d)
    A = B @ B.T / d + 0.05 * np.eye(d)
    prior = np.cov(X.T)
    prior = 0.5 * (prior + prior.T)
    u = rng.randn(d)
    return X, trip, np.ascontiguousarray(prior), A, u


def _tables(X, trip, prior, c, mu1, mu2, lam, eps, batch, m, seed):
    return _lmnn.Tables(X, trip, prior, c, mu1, mu2, lam, eps, batch, m, seed)


def _objective(est, X, prior, layout=None):
    """The driver's objective with the parameters ``est`` resolves (``est`` unfitted or
    fitted)."""
    counts = np.array([X.shape[0] // 2, X.shape[0] - X.shape[0] // 2])
    params = est._resolve_params(X.shape, "knn", counts, getattr(est, "seed_", 0))
    # the c used by the fit (c='auto' is resolved by the driver)
    params = replace(params, c=getattr(est, "c_", params.c))
    return driver._Objective(X, prior, params, layout)


def _ref_lanczos(A, u, m):
    """The kernel's warm-started Lanczos (full reorthogonalization), in numpy."""
    d = len(u)
    m = min(m, d)
    Q = np.zeros((m, d))
    alpha = np.zeros(m)
    beta = np.zeros(m)
    Q[0] = u / np.linalg.norm(u)
    steps = 0
    for j in range(m):
        w = A @ Q[j]
        alpha[j] = Q[j] @ w
        steps = j + 1
        if j == m - 1:
            break
        for _ in range(2):
            for k in range(j + 1):
                w = w - (Q[k] @ w) * Q[k]
        beta[j] = np.linalg.norm(w)
        assert beta[j] > 1e-8  # the test problems are generic: no breakdown
        Q[j + 1] = w / beta[j]
    vals, vecs = eigh_tridiagonal(alpha[:steps], beta[:steps - 1])
    v = vecs[:, 0] @ Q[:steps]
    return vals[0], v / np.linalg.norm(v)


def _prox(A, s_mu1, s_mu2):
    off = np.sign(A) * np.maximum(np.abs(A) - s_mu2, 0.0)
    np.fill_diagonal(off, np.diag(A))
    return off / (1.0 + s_mu1)


def _ref_batch_gradient(X, trip, A, stream, batch, c, prior, pen, u):
    """Stochastic gradient of the kernels: same triplet draws from the reference stream."""
    G = (1.0 - c) * prior - pen * np.outer(u, u)
    for _ in range(batch):
        i, j, l = trip[stream.randint(len(trip))]
        a = X[i] - X[j]
        b = X[i] - X[l]
        if a @ A @ a - b @ A @ b + 1.0 > 0.0:
            G = G + (c / batch) * (np.outer(a, a) - np.outer(b, b))
    return G


def _ref_epro_epoch(X, trip, prior, A, u, seed, eta, T, batch, c, mu1, mu2, lam, eps, m):
    """Algorithm 1 with the prox step (Eq. 18), one epoch, in numpy: returns the average
    of x_1..x_T and x_{T+1}."""
    stream = ReferenceStream(seed, 0)
    total = np.zeros_like(A)
    for _ in range(T):
        total += A
        theta, u = _ref_lanczos(A, u, m)
        pen = lam if eps - theta > 0.0 else 0.0
        G = _ref_batch_gradient(X, trip, A, stream, batch, c, prior, pen, u)
        A = _prox(A - eta * G, eta * mu1, eta * mu2)
    return total / T, A


def _ref_orda(X, trip, prior, x1, u, seed, eta, T, batch, c, mu1, mu2, lam, eps, m,
              at_u=False):
    """Algorithm 2 (ORDA) in numpy, gradient at x_t (the paper) or at u_t (the original
    ORDA); returns x_{T+2}."""
    stream = ReferenceStream(seed, 0)
    x = x1.copy()
    z = x1.copy()
    S = np.zeros_like(x1)
    for t in range(1, T + 2):
        theta_t = 2.0 / (t + 1)
        gamma_t = t ** 1.5 / eta
        a_t = 4.0 * np.sqrt(t + 1) / (t * eta)
        u_t = (1 - theta_t) * x + theta_t * z
        point = u_t if at_u else x
        th, u = _ref_lanczos(point, u, m)
        pen = lam if eps - th > 0.0 else 0.0
        G = _ref_batch_gradient(X, trip, point, stream, batch, c, prior, pen, u)
        S = S + t * G
        x_new = _prox(u_t - G / gamma_t, mu1 / gamma_t, mu2 / gamma_t)
        z = _prox(x1 - (2 * S / (t * (t + 1))) / a_t, mu1 / a_t, mu2 / a_t)
        x = x_new
    return x


# ----------------------------------------------------------------------------- kernels
@pytest.mark.parametrize("eps", [1e-3, 0.5])  # 0.5: the penalty is active in some steps
def test_epro_epoch_kernel_matches_numpy_reference(eps):
    X, trip, prior, A0, u0 = _problem()
    seed, eta, T, batch, c, mu1, mu2, lam, m = 123, 0.05, 12, 3, 0.5, 0.1, 0.02, 2.0, 4
    A = A0.copy()
    avg = np.empty_like(A)
    u = u0.copy()
    counters = np.zeros(2, dtype=np.uint64)
    tables = _tables(X, trip, prior, c, mu1, mu2, lam, eps, batch, m, seed)
    n_active, n_viol = _lmnn.run_sgd(tables, A, avg, u, counters, 0, eta, 0, T)
    ref_avg, ref_last = _ref_epro_epoch(X, trip, prior, A0.copy(), u0.copy(), seed, eta, T,
                                        batch, c, mu1, mu2, lam, eps, m)
    np.testing.assert_allclose(avg, ref_avg, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(A, ref_last, rtol=1e-9, atol=1e-11)
    assert np.array_equal(A, A.T)  # exactly symmetric
    assert 0 < n_active <= T * batch
    if eps == 0.5:
        assert n_viol > 0
    assert counters[0] >= T * batch  # triplet stream advanced


@pytest.mark.parametrize("at_u", [False, True])
def test_orda_kernel_matches_numpy_reference(at_u):
    X, trip, prior, A0, u0 = _problem(seed=1)
    seed, eta, T, batch, c, mu1, mu2, lam, eps, m = 7, 0.3, 10, 2, 0.5, 0.1, 0.02, 2.0, 0.3, 4
    out = np.empty_like(A0)
    u = u0.copy()
    counters = np.zeros(2, dtype=np.uint64)
    tables = _tables(X, trip, prior, c, mu1, mu2, lam, eps, batch, m, seed)
    _lmnn.run_orda(tables, A0, out, u, counters, eta, T, at_u)
    ref = _ref_orda(X, trip, prior, A0, u0.copy(), seed, eta, T, batch, c, mu1, mu2, lam, eps, m,
                    at_u=at_u)
    np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-11)
    other = _ref_orda(X, trip, prior, A0, u0.copy(), seed, eta, T, batch, c, mu1, mu2, lam, eps,
                      m, at_u=not at_u)
    assert not np.allclose(out, other, rtol=1e-6, atol=1e-8)  # the option changes the iterates


def test_orda_gradient_point_option_reaches_the_kernel():
    X, y = _noisy_blobs(n=60)
    fits = [LMNNMetric(solver="epro_orda", orda_gradient_point=p, max_iter=200,
                       random_state=0).fit(X, y) for p in ("x", "u")]
    assert not np.allclose(fits[0].metric_, fits[1].metric_)
    for m in fits:
        assert np.linalg.eigvalsh(m.metric_)[0] >= m.epsilon * (1 - 1e-9)


def test_sgd_kernel_projects_every_iteration():
    X, trip, prior, A0, u0 = _problem(seed=2)
    eps = 0.4  # above the smallest eigenvalues of A0: the projection must act
    w, V = np.linalg.eigh(A0)
    assert w[0] < eps
    A = np.ascontiguousarray((V * np.maximum(w, eps)) @ V.T)  # feasible start, as in fit
    A = 0.5 * (A + A.T)
    u0 = u0 * 0 + 1.0
    avg = np.empty_like(A)
    tables = _tables(X, trip, prior, 0.5, 0.0, 0.0, 1.0, eps, 2, 4, 3)
    n_active, n_viol = _lmnn.run_sgd(tables, A, avg, u0.copy(), np.zeros(2, dtype=np.uint64),
                                     1, 0.05, 0, 5)
    assert n_viol >= 1
    assert np.linalg.eigvalsh(A)[0] >= eps - 1e-10
    assert np.linalg.eigvalsh(avg)[0] >= eps - 1e-10  # average of feasible iterates


def test_kernel_tables_validate_and_swap_triplets():
    """The per-fit tables reject inconsistent shapes and modes; ``set_triplets`` makes the
    next call read the new table exactly as tables built with it."""
    X, trip, prior, A0, u0 = _problem(seed=6)
    args = (0.5, 0.1, 0.02, 1.0, 1e-3, 3, 4, 5)
    tables = _tables(X, trip, prior, *args)
    counters = np.zeros(2, dtype=np.uint64)
    avg = np.empty_like(A0)
    with pytest.raises(ValueError, match="must be \\(d, d\\)"):
        _lmnn.run_sgd(tables, A0[:3, :3].copy(), avg, u0.copy(), counters, 0, 0.1, 0, 2)
    with pytest.raises(ValueError, match="u must be"):
        _lmnn.run_sgd(tables, A0.copy(), avg, u0[:2].copy(), counters, 0, 0.1, 0, 2)
    with pytest.raises(ValueError, match="unknown mode"):
        _lmnn.run_sgd(tables, A0.copy(), avg, u0.copy(), counters, 3, 0.1, 0, 2)
    with pytest.raises(ValueError, match="must be \\(d, d\\)"):
        _lmnn.run_orda(tables, A0, np.empty((2, 2)), u0.copy(), counters, 0.1, 2)
    with pytest.raises(ValueError, match="prior must be"):
        _tables(X, trip, prior[:2, :2].copy(), *args)
    with pytest.raises(ValueError, match="batch >= 1"):
        _tables(X, trip, prior, 0.5, 0.1, 0.02, 1.0, 1e-3, 0, 4, 5)
    with pytest.raises(ValueError, match="non-empty"):
        tables.set_triplets(np.zeros((0, 3), dtype=np.int32))
    other = np.ascontiguousarray(trip[::-1])
    tables.set_triplets(other)
    runs = []
    for tb in (tables, _tables(X, other, prior, *args)):
        A = A0.copy()
        _lmnn.run_sgd(tb, A, avg, u0.copy(), np.zeros(2, dtype=np.uint64), 0, 0.1, 0, 6)
        runs.append(A)
    assert np.array_equal(runs[0], runs[1])


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_kernel_state_is_the_iterate_eigenvector_and_counters(mode):
    """A run split into two calls (carrying A, u, the counters and t0) is bitwise the run
    of one call: the tables hold no state between calls."""
    X, trip, prior, A0, u0 = _problem(seed=7)
    eps = 0.3 if mode == 1 else 1e-3
    w, V = np.linalg.eigh(A0)
    A0 = np.ascontiguousarray((V * np.maximum(w, eps)) @ V.T)
    A0 = 0.5 * (A0 + A0.T)
    tables = _tables(X, trip, prior, 0.5, 0.1, 0.02, 1.0, eps, 3, 4, 9)
    whole, u, counters = A0.copy(), u0.copy(), np.zeros(2, dtype=np.uint64)
    _lmnn.run_sgd(tables, whole, np.empty_like(A0), u, counters, mode, 0.05, 0, 10, 0.3)
    split, u2, counters2 = A0.copy(), u0.copy(), np.zeros(2, dtype=np.uint64)
    for t0, n in ((0, 4), (4, 6)):
        _lmnn.run_sgd(tables, split, np.empty_like(A0), u2, counters2, mode, 0.05, t0, n, 0.3)
    assert np.array_equal(whole, split) and np.array_equal(u, u2)
    assert np.array_equal(counters, counters2)


def test_lanczos_estimate_tracks_lambda_min():
    """With many steps the Lanczos Ritz value equals lambda_min (checked through the epro
    kernel: with eps just above / below lambda_min the penalty fires / does not)."""
    X, trip, prior, A0, u0 = _problem(seed=3)
    lmin = np.linalg.eigvalsh(A0)[0]
    for eps, expected in [(lmin + 1e-6, 1), (lmin - 1e-6, 0)]:
        A = A0.copy()
        tables = _tables(X, trip, prior, 0.5, 0.0, 0.0, 1.0, eps, 1, 6, 0)
        _, n_viol = _lmnn.run_sgd(tables, A, np.empty_like(A), u0.copy(),
                                  np.zeros(2, dtype=np.uint64), 0, 1e-12, 0, 1)
        assert n_viol == expected


def test_triplet_hinge_matches_numpy():
    X, trip, _, A, _ = _problem(seed=4)
    R = np.linalg.cholesky(A)
    total, n_active = _lmnn.triplet_hinge(np.ascontiguousarray(X @ R), trip)
    a = X[trip[:, 0]] - X[trip[:, 1]]
    b = X[trip[:, 0]] - X[trip[:, 2]]
    margins = np.einsum("ij,jk,ik->i", a, A, a) - np.einsum("ij,jk,ik->i", b, A, b) + 1
    assert total == pytest.approx(np.maximum(margins, 0).sum(), rel=1e-12)
    assert n_active == np.sum(margins > 0)


def test_objective_gradient_matches_finite_differences():
    """The kernels' gradient c/N sum_active (aa' - bb') + (1-c) L + mu1 A (+ mu2 sign offdiag)
    is the derivative of the objective recorded in history_ (Eq. 21)."""
    X, trip, prior, A, _ = _problem(seed=5)
    est = LMNNMetric(c=0.4, mu1=0.3, mu2=0.05)
    objective = _objective(est, X, prior)
    a = X[trip[:, 0]] - X[trip[:, 1]]
    b = X[trip[:, 0]] - X[trip[:, 2]]
    active = (np.einsum("ij,jk,ik->i", a, A, a) - np.einsum("ij,jk,ik->i", b, A, b) + 1) > 0
    G = est.c / len(trip) * (a[active].T @ a[active] - b[active].T @ b[active])
    G += (1 - est.c) * prior + est.mu1 * A
    sign = np.sign(A)
    np.fill_diagonal(sign, 0)
    G += est.mu2 * sign
    rng = np.random.RandomState(0)
    for _ in range(3):
        V = rng.randn(*A.shape)
        V = 0.5 * (V + V.T)
        h = 1e-6
        fd = (objective(A + h * V, trip) - objective(A - h * V, trip)) / (2 * h)
        assert fd == pytest.approx(np.sum(G * V), rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("solver", ["sgd", "oneproj"])
def test_baselines_run_on_the_shared_averaged_sgd_loop(monkeypatch, solver):
    """'sgd' and 'oneproj' run on the shared averaged-SGD loop (issue 17): one call with the
    checkpoints 8, 16, 32, ... (the leftover merged into the last), the 'knn' table refreshed before a
    chunk at the previous checkpoint's point, ``n_iter_`` the last ``iteration``."""
    calls, refreshed, recorded = [], [], []
    shared = driver.averaged_sgd
    monkeypatch.setattr(driver, "averaged_sgd",
                        lambda x0, run_chunk, lengths, **kw: calls.append(list(lengths))
                        or shared(x0, run_chunk, lengths, **kw))
    refresh = driver._Run.refresh
    monkeypatch.setattr(driver._Run, "refresh",
                        lambda self, A, n: refreshed.append(A.copy()) or refresh(self, A, n))
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    est = LMNNMetric(solver=solver, n_neighbors=2, max_iter=96, tol=0.0, random_state=0,
                     callback=lambda rec: recorded.append(rec["x"].copy()) and False)
    est.fit(X, y)
    assert calls == [[8, 16, 72]]
    assert est.n_iter_ == est.history_["iteration"][-1] == 96 and est.n_epochs_ == 3
    np.testing.assert_array_equal(est.history_["iteration"], [8, 24, 96])
    assert len(refreshed) == 2
    for before, point in zip(refreshed, recorded[:-1]):
        np.testing.assert_array_equal(before, point)


# ----------------------------------------------------------------------------- searches
def _brute_impostors(X, y, anchors, cand, A, q):
    """Numpy reference: the q nearest differently-labelled candidates of each anchor in A."""
    R = np.linalg.cholesky(A)
    D = np.sum(((X[anchors] @ R)[:, None, :] - (X[cand] @ R)[None, :, :]) ** 2, axis=2)
    D[y[anchors][:, None] == y[cand][None, :]] = np.inf
    return np.sort(D, axis=1)[:, :q]


@pytest.mark.parametrize("small_search", [True, False])  # one chunked pass / per-class search
def test_impostor_search_matches_brute_force(monkeypatch, small_search):
    monkeypatch.setattr(_lmnn_triplets, "_SMALL_SEARCH", 1 << 30 if small_search else 0)
    X, y = _noisy_blobs(n=120, seed=3)
    est = LMNNMetric(n_neighbors=2, n_impostors=3, max_iter=64, random_state=0).fit(X, y)
    A = est.metric_
    y_enc = np.searchsorted(est.classes_, y)
    params = est._resolve_params(X.shape, "knn", np.bincount(y_enc), 0)
    search = _lmnn_triplets.TripletSource(X, y_enc, params, np.random.default_rng(0))
    assert search.exhaustive and search.refreshes and search.layout == (2, 3)
    pairs = search.pairs
    # targets: the 2 nearest same-class points (Euclidean), never the point itself
    assert np.all(y[pairs[:, 0]] == y[pairs[:, 1]]) and np.all(pairs[:, 0] != pairs[:, 1])
    Dx = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=2)
    Dx[y[:, None] != y[None, :]] = np.inf
    np.fill_diagonal(Dx, np.inf)
    got_t = np.sort(Dx[pairs[:, 0], pairs[:, 1]].reshape(-1, 2), axis=1)
    np.testing.assert_allclose(got_t, np.sort(Dx, axis=1)[pairs[::2, 0], :2], rtol=1e-9)
    trip = search.table(A, 10)
    assert np.all(y[trip[:, 0]] != y[trip[:, 2]])
    anchors = trip[::6, 0]
    imp = trip[:, 2].reshape(-1, 6)[:, :3]     # the 3 impostors of the anchor's first pair
    R = np.linalg.cholesky(A)
    got = np.sort(np.sum(((X[anchors] @ R)[:, None, :] - X[imp] @ R) ** 2, axis=2), axis=1)
    ref = _brute_impostors(X, y, anchors, np.arange(len(X)), A, 3)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("q", [1, 3, 10])
def test_select_ksmallest_kernel_matches_numpy(q):
    """The selection kernel against a stable numpy argsort of the masked distances: same
    columns in the same order (ties, here exact duplicate rows, broken by the lower
    column), labels and self-exclusion respected; too few admissible columns is reported."""
    rng = np.random.default_rng(q)
    Zc = rng.normal(size=(60, 4))
    Zc[30:40] = Zc[:10]  # exact duplicates: ties
    Zq = np.vstack([Zc[:20], rng.normal(size=(7, 4))])
    yc = rng.integers(0, 3, size=60)
    yq = yc[:27].copy()
    yq[20:] = rng.integers(0, 3, size=7)
    exclude = np.r_[np.arange(20), np.full(7, 59)]
    D = np.sum((Zq[:, None, :] - Zc[None, :, :]) ** 2, axis=2)
    for labels in (False, True):
        Dm = D.copy()
        if labels:
            Dm[yq[:, None] == yc[None, :]] = np.inf
        Dm[np.arange(27), exclude] = np.inf
        got = _lmnn_triplets.blocked_ksmallest(Zq, Zc, q, yq if labels else None,
                                               yc if labels else None, exclude)
        ref = np.argsort(Dm, axis=1, kind="stable")[:, :q]
        # distinct distances differ far beyond round-off; exact duplicates tie exactly
        np.testing.assert_array_equal(got, ref)
    out = np.empty((1, 3), dtype=np.int64)
    found = _lmnn.select_ksmallest(np.zeros((1, 2)), np.zeros(2), np.zeros(0, np.int64),
                                   np.zeros(0, np.int64), np.zeros(0, np.int64), 3, out)
    assert found == 2 and out[0, 2] == -1
    with pytest.raises(RuntimeError, match="admissible"):
        _lmnn_triplets.blocked_ksmallest(Zq[:2], Zc[:2], 3)


def test_bounded_search_on_large_data_and_auto_strategy():
    """n > search_size: a pool of search_size anchors, per-epoch refreshes of a subset,
    sampled candidates; the result is feasible and reproducible.  'auto' switches to the
    random recipe above search_size."""
    X, y = _noisy_blobs(n=600, seed=4)
    kw = dict(search_size=128, max_iter=200, random_state=0)
    m = LMNNMetric(triplet_strategy="knn", **kw).fit(X, y)
    assert m.triplet_strategy_ == "knn"
    anchors = np.unique(m.triplets_[:, 0])
    assert 128 // 4 <= len(anchors) <= 128
    assert np.all(y[m.triplets_[:, 0]] == y[m.triplets_[:, 1]])
    assert np.all(y[m.triplets_[:, 0]] != y[m.triplets_[:, 2]])
    assert np.linalg.eigvalsh(m.metric_)[0] >= m.epsilon * (1 - 1e-9)
    again = LMNNMetric(triplet_strategy="knn", **kw).fit(X, y)
    assert np.array_equal(m.metric_, again.metric_)
    assert LMNNMetric(**kw).fit(X, y).triplet_strategy_ == "random"
    assert LMNNMetric(search_size=None, max_iter=64).fit(X, y).triplet_strategy_ == "knn"
    assert LMNNMetric(max_iter=64).fit(X, y).triplet_strategy_ == "knn"  # 600 <= 8192


def test_objective_sample_on_large_tables(monkeypatch):
    X, y = _noisy_blobs(n=90, seed=6)
    m = LMNNMetric(max_iter=64, random_state=0).fit(X, y)
    A = np.eye(X.shape[1])  # many active triplets
    exact = _objective(m, X, m.prior_matrix_)(A, m.triplets_)
    monkeypatch.setattr(driver, "_OBJECTIVE_SAMPLE", len(m.triplets_) // 3)
    objective = _objective(m, X, m.prior_matrix_)
    approx = objective(A, m.triplets_)
    assert approx == objective(A, m.triplets_)  # the same sample while the table is unchanged
    assert approx != exact and abs(approx - exact) < 0.5 * exact


# ----------------------------------------------------------------------------- estimator
@pytest.mark.parametrize("solver", ["epro_sgd", "epro_orda", "sgd", "oneproj"])
def test_final_metric_is_feasible_and_factored(solver):
    X, y = _noisy_blobs(n=90)
    eps = 0.05
    est = LMNNMetric(solver=solver, epsilon=eps, max_iter=300, random_state=0).fit(X, y)
    A = est.metric_
    assert np.array_equal(A, A.T)
    assert np.linalg.eigvalsh(A)[0] >= eps - 1e-10
    np.testing.assert_allclose(est.components_.T @ est.components_, A, atol=1e-10)
    np.testing.assert_allclose(est.get_mahalanobis_matrix(), A)
    assert np.isfinite(est.objective_)
    assert est.history_["objective"].shape == (est.n_epochs_,)


@pytest.mark.parametrize("use_full_budget", [False, True])
def test_projection_counts(use_full_budget):
    X, y = _noisy_blobs(n=60)
    T = 1000
    common = dict(max_iter=T, use_full_budget=use_full_budget, random_state=0, tol=0)
    epro = LMNNMetric(solver="epro_sgd", **common).fit(X, y)
    assert epro.n_projections_ == epro.n_epochs_ == 6  # 8 + 16 + ... + 256 = 504 <= 1000
    assert epro.n_projections_ <= np.log2(T / 4)
    assert epro.n_iter_ == (T if use_full_budget else 504)
    orda = LMNNMetric(solver="epro_orda", **common).fit(X, y)
    assert orda.n_projections_ <= np.log2(T / 8)
    sgd = LMNNMetric(solver="sgd", **common).fit(X, y)
    assert sgd.n_projections_ == sgd.n_iter_ == T
    one = LMNNMetric(solver="oneproj", **common).fit(X, y)
    assert one.n_projections_ == 1 and one.n_iter_ == T


@pytest.mark.parametrize("solver", ["epro_sgd", "epro_orda", "sgd", "oneproj"])
def test_history_iteration_counts_gradient_calls(solver):
    """history_["iteration"] is the number of stochastic gradient calls at each record
    (epoch lengths, plus one call per ORDA epoch), and n_iter_ is its last value."""
    X, y = _noisy_blobs(n=60)
    est = LMNNMetric(solver=solver, max_iter=300, tol=0, random_state=0).fit(X, y)
    h = est.history_
    extra = 1 if solver == "epro_orda" else 0
    np.testing.assert_array_equal(h["iteration"], np.cumsum(h["epoch_length"] + extra))
    np.testing.assert_array_equal(h["iteration"], h["n_gradients"])
    assert h["iteration"][-1] == est.n_iter_ == est.max_iter_ == 300   # use_full_budget


@pytest.mark.parametrize("strategy", ["knn", "random"])
def test_learned_metric_beats_euclidean_knn_on_noisy_features(strategy):
    X, y = _noisy_blobs(n=300, seed=1)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    base = KNeighborsClassifier(3).fit(Xtr, ytr).score(Xte, yte)
    est = LMNNMetric(triplet_strategy=strategy, random_state=0).fit(Xtr, ytr)
    learned = KNeighborsClassifier(3).fit(est.transform(Xtr), ytr).score(est.transform(Xte), yte)
    assert learned >= base + 0.1, (base, learned)
    # the noise directions are shrunk relative to the informative ones
    diag = np.diag(est.metric_)
    assert diag[:3].mean() > 2 * diag[3:].mean()


def test_objective_decreases_over_epochs():
    X, y = _noisy_blobs(n=150)
    est = LMNNMetric(triplet_strategy="random", random_state=0).fit(StandardScaler().fit_transform(X), y)
    obj = est.history_["objective"]
    assert obj[-1] < 0.8 * obj[0]


def test_reproducible_and_seed_dependent():
    X, y = _noisy_blobs(n=90)
    a = LMNNMetric(random_state=3, max_iter=400).fit(X, y)
    b = LMNNMetric(random_state=3, max_iter=400).fit(X, y)
    c = LMNNMetric(random_state=4, max_iter=400).fit(X, y)
    assert np.array_equal(a.metric_, b.metric_)
    assert np.array_equal(a.components_, b.components_)
    assert np.array_equal(a.triplets_, b.triplets_)
    assert not np.array_equal(a.metric_, c.metric_)


def test_float32_and_input_not_modified():
    X, y = _noisy_blobs(n=60)
    X32 = X.astype(np.float32)
    before = X32.copy()
    est = LMNNMetric(max_iter=200, random_state=0).fit(X32, y)
    assert np.array_equal(X32, before)
    ref = LMNNMetric(max_iter=200, random_state=0).fit(X32.astype(np.float64), y)
    np.testing.assert_array_equal(est.metric_, ref.metric_)
    assert est.transform(X32).dtype == np.float64


def test_transform_metric_pair_distance_agree():
    X, y = _noisy_blobs(n=60)
    est = LMNNMetric(max_iter=200, random_state=0).fit(X, y)
    Z = est.transform(X)
    pairs = np.stack([X[:10], X[10:20]], axis=1)
    d_pairs = est.pair_distance(pairs)
    np.testing.assert_allclose(d_pairs, np.linalg.norm(Z[:10] - Z[10:20], axis=1), rtol=1e-8)
    np.testing.assert_allclose(est.pair_score(pairs), -d_pairs)
    metric = est.get_metric()
    assert metric(X[0], X[10]) == pytest.approx(d_pairs[0], rel=1e-10)
    knn = KNeighborsClassifier(3, metric=metric, algorithm="brute").fit(X, y)
    knn_t = KNeighborsClassifier(3).fit(Z, y)
    assert np.array_equal(knn.predict(X[:20]), knn_t.predict(Z[:20]))
    # the metric was a closure: the fitted neighbour estimator could not be pickled
    again = pickle.loads(pickle.dumps(knn))
    assert np.array_equal(again.predict(X[:20]), knn.predict(X[:20]))
    with pytest.raises(ValueError, match="pairs must have shape"):
        est.pair_distance(X[:4])


def test_n_components_keeps_top_directions():
    X, y = _noisy_blobs(n=60)
    full = LMNNMetric(max_iter=200, random_state=0).fit(X, y)
    est = LMNNMetric(n_components=2, max_iter=200, random_state=0).fit(X, y)
    assert est.transform(X).shape == (60, 2)
    top = np.linalg.eigvalsh(full.metric_)[::-1][:2]
    np.testing.assert_allclose(np.sum(est.components_ ** 2, axis=1), top, rtol=1e-8)
    assert est.get_feature_names_out().tolist() == ["lmnnmetric0", "lmnnmetric1"]
    with pytest.raises(ValueError, match="n_components=20 must be <= n_features=15"):
        LMNNMetric(n_components=20).fit(X, y)


@pytest.mark.parametrize("strategy", ["knn", "random"])
def test_a_small_class_does_not_cut_the_other_classes_neighbours(strategy):
    """A class of m members offers each of them m - 1 target neighbours.  With 'knn' they
    repeat theirs in turn to fill n_neighbors rows and the other classes keep n_neighbors
    distinct ones (cutting k for every class cost 0.45 to 0.55 points of 3-NN accuracy on
    wine, breast cancer and digits with a 2-member class added); 'random' draws partners
    with repetition anyway.  No warning (as NCA fits any class sizes)."""
    X, y = _noisy_blobs(n=30)
    y_small = y.copy()
    y_small[:3] = 7                       # class 7 has 3 members: 2 neighbours each
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = LMNNMetric(triplet_strategy=strategy, n_neighbors=5, max_iter=64,
                         tol=0.0, random_state=0).fit(X, y_small)
    k = 5
    assert est.n_neighbors_ == k
    T = est.triplets_
    anchors, counts = np.unique(T[:, 0], return_counts=True)
    assert np.all(counts == k * est.n_impostors_)
    assert np.all(T[:, 0] != T[:, 1])
    codes = np.searchsorted(est.classes_, y_small)
    assert np.all(codes[T[:, 0]] == codes[T[:, 1]])
    if strategy == "knn":
        distinct = np.array([len(np.unique(T[T[:, 0] == a, 1])) for a in anchors])
        small = y_small[anchors] == 7
        assert np.all(distinct[small] == 2) and np.all(distinct[~small] == k)


@pytest.mark.parametrize("strategy", ["knn", "random"])
def test_a_one_member_class_is_an_impostor_only(strategy):
    """A class with one member (a rare class in a cross-validation fold) has no target
    pair: its point anchors no triplet and serves as an impostor of the others, as NCA
    fits it (rejecting it broke cross_val_score where NCA works)."""
    X, y = _noisy_blobs(n=30)
    y_rare = y.copy()
    y_rare[0] = 7
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = LMNNMetric(triplet_strategy=strategy, max_iter=64, tol=0.0,
                         random_state=0).fit(X, y_rare)
    T = est.triplets_
    assert not np.any(T[:, :2] == 0)
    assert np.any(T[:, 2] == 0)
    assert len(np.unique(T[:, 0])) == 29
    assert np.all(np.isfinite(est.transform(X)))


@pytest.mark.parametrize("strategy", ["knn", "random"])
def test_huge_sizes_are_clamped_to_the_data_before_allocation(strategy):
    """batch_size, n_neighbors and n_impostors reach the kernels' allocations: values far
    beyond the data (a 2**62 batch overflowed malloc's size and segfaulted) fit as the
    largest meaningful value does."""
    X, y = _noisy_blobs(n=30)
    counts = np.bincount(np.unique(y, return_inverse=True)[1])
    kw = dict(triplet_strategy=strategy, max_iter=64, tol=0.0, random_state=0)
    huge = LMNNMetric(batch_size=2 ** 62, n_neighbors=2 ** 40, n_impostors=2 ** 40,
                      **kw).fit(X, y)
    k, q = counts.max() - 1, len(y) - counts.max()
    assert (huge.n_neighbors_, huge.n_impostors_) == (k, q)
    largest = LMNNMetric(batch_size=len(y) * k * q, n_neighbors=k, n_impostors=q,
                         **kw).fit(X, y)
    np.testing.assert_array_equal(huge.metric_, largest.metric_)


def test_wide_data_learns_in_the_span_of_the_data(monkeypatch):
    """n_features >= n_samples: the metric is learned on the r <= n - 1 dimensional span
    of the centred data (no d x d eigendecomposition, O(n d r) instead of O(d^3) per
    epoch) and lifted back: A = U (B - eps I) U' + eps I, so the d - r directions outside
    the span get eigenvalue epsilon, A == components_.T @ components_, and truncating
    n_components keeps the leading rows."""
    rng = np.random.default_rng(0)
    n, d = 30, 80
    X = rng.standard_normal((n, d))
    X[:, 0] += 2.0 * (np.arange(n) % 2)           # one informative direction
    y = np.arange(n) % 2
    sizes = []
    eigh = np.linalg.eigh
    monkeypatch.setattr(np.linalg, "eigh", lambda a, *args, **kw: sizes.append(
        np.shape(a)[-1]) or eigh(a, *args, **kw))
    est = LMNNMetric(max_iter=200, random_state=0).fit(X, y)
    low = LMNNMetric(n_components=3, max_iter=200, random_state=0).fit(X, y)
    monkeypatch.setattr(np.linalg, "eigh", eigh)
    assert sizes and max(sizes) <= n - 1
    A = est.metric_
    assert A.shape == (d, d) and np.array_equal(A, A.T)
    w = np.linalg.eigvalsh(A)
    np.testing.assert_allclose(w[:d - (n - 1)], est.epsilon, rtol=1e-9)
    assert w[0] >= est.epsilon * (1 - 1e-9)
    np.testing.assert_allclose(est.components_.T @ est.components_, A, atol=1e-12)
    # the same fit; the lift's product (3 rows against 29) may round differently in the last
    # bit: OpenBLAS 0.3.23's generic kernel on a CPU without AVX differed by 2.8e-17
    np.testing.assert_allclose(low.components_, est.components_[:3], rtol=1e-12, atol=1e-15)
    diff = X[:5, None, :] - X[None, 5:10, :]
    Z = est.transform(X)
    np.testing.assert_allclose(np.linalg.norm(Z[:5, None] - Z[None, 5:10], axis=2),
                               np.sqrt(np.einsum("ijk,kl,ijl->ij", diff, A, diff)),
                               rtol=1e-10)
    # the informative direction is stretched against the noise directions
    e0 = np.eye(d)[0]
    assert e0 @ A @ e0 > np.median(np.diag(A))


def test_unspanned_directions_get_the_floor_not_the_start(monkeypatch):
    """Narrow data whose centred rows miss some directions (a constant feature, a complete
    one-hot block): no term of Eq. (21) but the regularizers sees them, so the solver leaves
    them near its start A_0 = I, where they outranked every learned direction in
    components_.  The returned metric gives them epsilon and no coupling to the rest, and
    keeps the distances between training rows the solver learned."""
    X, y = _noisy_blobs(n=60)
    n, p = X.shape
    X = np.hstack([X, np.full((n, 1), 2.5), np.eye(3)[np.arange(n) % 3]])
    d = X.shape[1]
    constant = np.eye(d)[p]
    onehot_sum = np.r_[np.zeros(p + 1), np.ones(3)] / np.sqrt(3)
    unspanned = np.c_[constant, onehot_sum]
    est = LMNNMetric(max_iter=200, random_state=0).fit(X, y)
    A = est.metric_
    np.testing.assert_allclose(A @ unspanned, est.epsilon * unspanned, atol=1e-12)
    low = LMNNMetric(n_components=4, max_iter=200, random_state=0).fit(X, y)
    np.testing.assert_allclose(low.components_ @ unspanned, 0.0, atol=1e-12)
    top = np.linalg.eigvalsh(A)[::-1][:4]
    np.testing.assert_allclose(np.sum(low.components_ ** 2, axis=1), top, rtol=1e-8)

    monkeypatch.setattr(driver, "floor_unspanned", lambda A, unspanned, eps: A)
    start = LMNNMetric(max_iter=200, random_state=0).fit(X, y).metric_
    assert constant @ start @ constant > 0.5            # what the floor replaces
    diff = X[:, None, :] - X[None, :, :]
    np.testing.assert_allclose(np.einsum("ijk,kl,ijl->ij", diff, A, diff),
                               np.einsum("ijk,kl,ijl->ij", diff, start, diff),
                               rtol=1e-9, atol=1e-12)


def test_invalid_inputs_raise_clear_errors():
    X, y = _noisy_blobs(n=30)
    with pytest.raises(ValueError, match="at least 2 classes"):
        LMNNMetric().fit(X, np.zeros(30))
    with pytest.raises(ValueError, match="Every one of the 30 classes has 1 member"), \
            warnings.catch_warnings():
        # recent scikit-learn's target check warns first that y may be continuous
        warnings.filterwarnings("ignore", message="The number of unique classes",
                                category=UserWarning)
        LMNNMetric().fit(X, np.arange(30))
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LMNNMetric().fit(X_nan, y)
    X_inf = X.copy()
    X_inf[1, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        LMNNMetric().fit(X_inf, y)
    with pytest.raises(ValueError, match="solver"):
        LMNNMetric(solver="newton").fit(X, y)
    for name in ("max_iter", "first_epoch_length"):     # C integers: bounded, no overflow
        with pytest.raises(ValueError, match=name):
            LMNNMetric(**{name: 2 ** 70}).fit(X, y)
    with pytest.raises(ValueError, match="max_iter=4 is smaller than the first epoch"):
        LMNNMetric(max_iter=4).fit(X, y)
    with pytest.raises(NotFittedError):
        LMNNMetric().transform(X)
    est = LMNNMetric(max_iter=50).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.transform(X[:, :3])


@pytest.mark.parametrize("kw", [{"batch_size": 1000}, {"batch_size": 10**9},
                                {"batch_size": 1000, "solver": "epro_orda"}])
def test_auto_budget_runs_at_least_the_first_epoch(kw):
    # max_iter='auto' is ceil(draws / batch_size): 6 steps of 1,000 on iris, fewer than the
    # first epoch's 8, and fit raised "max_iter=6 is smaller than the first epoch" although
    # the user set no max_iter
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    est = LMNNMetric(random_state=0, **kw).fit(X, y)
    assert est.max_iter_ == (17 if kw.get("solver") == "epro_orda" else 8)
    assert est.n_iter_ == est.max_iter_


def test_a_first_epoch_of_one_step_does_not_end_the_fit():
    # an epoch of one step averages only its start: its relative change 0 passed the tol
    # test, and the fit stopped after one gradient with the identity metric, no warning
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    est = LMNNMetric(first_epoch_length=1, random_state=0).fit(X, y)
    assert est.n_iter_ > 1
    assert not np.allclose(est.metric_, np.eye(4))


def test_callback_history_and_verbose(capsys):
    X, y = _noisy_blobs(n=60)
    seen = []

    def callback(record):
        seen.append(record)
        return len(seen) == 2

    est = LMNNMetric(max_iter=2000, callback=callback, verbose=1, random_state=0).fit(X, y)
    assert len(seen) == 2 and est.n_epochs_ == 2
    assert seen[0]["x"].shape == (15, 15)
    for key in ("objective", "step_size", "time", "iteration", "n_gradients",
                "relative_change"):
        assert key in est.history_
    assert est.history_["step_size"][1] == pytest.approx(est.history_["step_size"][0] / 2)
    assert "LMNNMetric(solver='epro_sgd')" in capsys.readouterr().out


def test_pickle_roundtrip():
    X, y = _noisy_blobs(n=60)
    est = LMNNMetric(max_iter=100, random_state=0).fit(X, y)
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.transform(X), est.transform(X))


def test_pipeline_in_grid_search():
    X, y = load_wine(return_X_y=True)
    pipe = Pipeline([("scale", StandardScaler()),
                     ("lmnn", LMNNMetric(max_iter=200, random_state=0)),
                     ("knn", KNeighborsClassifier(3))])
    grid = GridSearchCV(pipe, {"lmnn__c": [0.3, 0.7]}, cv=3).fit(X, y)
    assert grid.best_score_ > 0.9


def test_against_sklearn_nca_on_noisy_wine():
    """Peer comparison: on wine + 20 noise features the learned metric is about as good as
    scikit-learn's NeighborhoodComponentsAnalysis for 3-NN (mean over 3 splits)."""
    from sklearn.neighbors import NeighborhoodComponentsAnalysis

    X, y = load_wine(return_X_y=True)
    X = np.hstack([X, np.random.RandomState(0).randn(len(X), 20)])
    ours, nca = [], []
    for split in range(3):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=split,
                                              stratify=y)
        sc = StandardScaler().fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
        m = LMNNMetric(triplet_strategy="random", random_state=0).fit(Xtr, ytr)
        ours.append(KNeighborsClassifier(3).fit(m.transform(Xtr), ytr)
                    .score(m.transform(Xte), yte))
        p = NeighborhoodComponentsAnalysis(random_state=0, max_iter=50).fit(Xtr, ytr)
        nca.append(KNeighborsClassifier(3).fit(p.transform(Xtr), ytr)
                   .score(p.transform(Xte), yte))
    assert np.mean(ours) >= np.mean(nca) - 0.02


def test_example_runs_in_fast_mode(monkeypatch):
    monkeypatch.setenv("SKSTOCH_EXAMPLE_FAST", "1")
    examples = sorted((ROOT / "examples").glob("plot_lmnn_*.py"))
    assert examples, "examples/plot_lmnn_*.py is missing"
    for path in examples:
        runpy.run_path(str(path), run_name="__main__")


def test_bitwise_identical_across_blas_thread_counts():
    """The fit runs with one BLAS thread whatever the caller's limit, so metric_ and
    components_ (whose eigenspace at the epsilon clip is degenerate: many eigenvalues equal
    epsilon) are bitwise identical for 1 and 2 BLAS threads (before: components_ moved by
    2.4% on this problem); the caller's limits are restored; each row's largest entry is
    positive."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from sklearn.datasets import make_classification

    X, y = make_classification(400, 150, n_informative=10, n_classes=3, random_state=0)
    X = StandardScaler().fit_transform(X)
    fits = []
    for threads in (1, 2):
        with threadpoolctl.threadpool_limits(threads):
            before = [lib["num_threads"] for lib in threadpoolctl.threadpool_info()]
            fits.append(LMNNMetric(max_iter=300, random_state=0).fit(X, y))
            assert [lib["num_threads"] for lib in threadpoolctl.threadpool_info()] == before
    one, two = fits
    assert np.sum(np.linalg.eigvalsh(one.metric_) < 1.001 * one.epsilon) > 5   # degenerate
    assert np.array_equal(one.metric_, two.metric_)
    assert np.array_equal(one.components_, two.components_)
    rows = np.arange(one.components_.shape[0])
    assert np.all(one.components_[rows, np.argmax(np.abs(one.components_), axis=1)] > 0)


def test_max_iter_auto_rule_and_explicit_budget():
    """'auto' = ceil(draws / batch_size), draws = 12 n_anchors k max(1, p / 32) clipped to
    [4000, 128000] (p = min(n_features, n_samples - 1)), independent of n_impostors; ints
    are kept."""
    X, y = _noisy_blobs(n=300)
    est = LMNNMetric(random_state=0, tol=0).fit(X, y)
    assert est.batch_size == 16
    assert est.max_iter_ == int(np.ceil(12 * 300 * 3 / 16)) == 675
    assert est.n_iter_ == est.max_iter_  # use_full_budget
    for q in (1, 3, 20):
        assert LMNNMetric(random_state=0, tol=0, n_impostors=q).fit(X, y).max_iter_ == 675
    assert LMNNMetric(random_state=0, tol=0, batch_size=8).fit(X, y).max_iter_ == 1350
    small = LMNNMetric(random_state=0, tol=0).fit(X[:60], y[:60])
    assert small.max_iter_ == 250  # 12 * 60 * 3 = 2160 draws, clipped to 4000
    big_batch = LMNNMetric(random_state=0, tol=0, batch_size=64).fit(X, y)
    assert big_batch.max_iter_ == int(np.ceil(10800 / 64)) == 169  # 12 * 300 * 3 draws
    tiny = LMNNMetric(random_state=0, tol=0, batch_size=64).fit(X[:60], y[:60])
    assert tiny.max_iter_ == int(np.ceil(4000 / 64)) == 63
    # 64 features: twice the draws; wide data counts the span's n_samples - 1 directions
    X64, y64 = _noisy_blobs(n=300, n_noise=61)
    assert LMNNMetric(random_state=0, tol=0).fit(X64, y64).max_iter_ == 2 * 675
    Xw, yw = _noisy_blobs(n=97, n_noise=200)
    wide = LMNNMetric(random_state=0, tol=0, max_iter=8)._resolve_params(
        Xw.shape, "knn", np.bincount(yw), 0)
    assert wide.max_iter == 8
    auto = LMNNMetric(random_state=0)._resolve_params(Xw.shape, "knn", np.bincount(yw), 0)
    assert auto.max_iter == int(np.ceil(12 * 97 * 3 * 3 / 16))   # 96 / 32 = 3
    fixed = LMNNMetric(random_state=0, tol=0, max_iter=700).fit(X, y)
    assert fixed.max_iter_ == fixed.n_iter_ == 700
    with pytest.raises(ValueError, match="max_iter"):
        LMNNMetric(max_iter="many").fit(X, y)


def test_knn_table_refreshed_only_after_enough_draws(monkeypatch):
    """The impostor table is re-searched at an epoch end only once the stochastic gradients
    since the last search drew about one triplet per anchor (n_anchors / batch_size steps):
    with n=300, batch 8 (>= 38 steps) and epochs 8, 16, 32, 64, ... the searches happen after
    epochs 3 (8+16+32=56 steps), 4 and 5, not after epochs 1 and 2."""
    calls = []
    original = _lmnn_triplets.TripletSource._knn_triplets

    def counting(self, A, n_steps, mapped=None):
        calls.append(n_steps)
        return original(self, A, n_steps, mapped)

    monkeypatch.setattr(_lmnn_triplets.TripletSource, "_knn_triplets", counting)
    X, y = _noisy_blobs(n=300)
    est = LMNNMetric(random_state=0, tol=0, max_iter=504, use_full_budget=False,
                     triplet_strategy="knn", batch_size=8).fit(X, y)
    assert est.n_epochs_ == 6  # 8 + 16 + 32 + 64 + 128 + 256
    # the initial table (epoch 1) and refreshes before epochs 4, 5, 6
    assert calls == [8, 64, 128, 256]


def test_max_iter_auto_with_random_triplets():
    X, y = _noisy_blobs(n=300)
    est = LMNNMetric(random_state=0, tol=0, triplet_strategy="random").fit(X, y)
    assert est.max_iter_ == 1000  # 16000 draws of 16
    est = LMNNMetric(random_state=0, tol=0, triplet_strategy="random", batch_size=8,
                     max_iter=100).fit(X, y)
    assert est.max_iter_ == 100


def test_n_impostors_auto():
    """'auto': 10 nearest impostors per target pair for 'knn' (capped by the number of
    differently-labelled points), the paper's 3 random ones for 'random'; ints are kept."""
    X, y = _noisy_blobs(n=150)
    knn = LMNNMetric(random_state=0, max_iter=64).fit(X, y)
    assert knn.triplet_strategy_ == "knn" and knn.n_impostors_ == 10
    assert len(knn.triplets_) == 150 * 3 * 10
    # every anchor's 10 impostors are distinct and differently labelled
    imp = knn.triplets_[:, 2].reshape(150, 3, 10)[:, 0, :]
    assert all(len(set(row)) == 10 for row in imp)
    assert np.all(y[imp] != y[np.arange(150)][:, None])
    rnd = LMNNMetric(random_state=0, max_iter=64, triplet_strategy="random").fit(X, y)
    assert rnd.n_impostors_ == 3 and len(rnd.triplets_) == 150 * 3 * 3
    fixed = LMNNMetric(random_state=0, max_iter=64, n_impostors=4).fit(X, y)
    assert fixed.n_impostors_ == 4 and len(fixed.triplets_) == 150 * 3 * 4
    # two classes where the other class has only 5 members: the impostors are capped at 5
    y2 = np.where(np.arange(150) < 5, 1, 0)
    capped = LMNNMetric(random_state=0, max_iter=64, n_neighbors=2).fit(X, y2)
    assert capped.n_impostors_ == 5
    assert len(capped.triplets_) == 150 * 2 * 5
    with pytest.raises(ValueError, match="n_impostors"):
        LMNNMetric(n_impostors="many").fit(X, y)


def test_grouped_objective_equals_expanded_table(monkeypatch):
    """The 'knn' objective computed from the table's structure (each distance once, exact on
    the whole table) equals the expanded per-triplet hinge, for exhaustive and bounded
    searches (where only the rows used are mapped)."""
    monkeypatch.setattr(driver, "_OBJECTIVE_SAMPLE", 1 << 30)
    for n, size in ((120, 8192), (600, 128)):
        X, y = _noisy_blobs(n=n, seed=7)
        m = LMNNMetric(max_iter=100, random_state=0, triplet_strategy="knn",
                       search_size=size).fit(X, y)
        assert m.n_impostors_ == 10
        grouped = _objective(m, X, m.prior_matrix_, layout=(3, 10))
        expanded = _objective(m, X, m.prior_matrix_)
        for A in (np.eye(X.shape[1]), m.metric_):
            np.testing.assert_allclose(grouped(A, m.triplets_), expanded(A, m.triplets_),
                                       rtol=1e-12)
        assert m.objective_ == pytest.approx(expanded(m.metric_, m.triplets_), rel=1e-12)


def test_auto_step_is_exact_table_mean_for_knn():
    """eta0='auto' = 5 / (c s), s the mean over the initial 'knn' table of the squared
    lengths of the pair and impostor differences (computed from the distinct pairs)."""
    X, y = _noisy_blobs(n=120, seed=8)
    m = LMNNMetric(max_iter=8, random_state=0, c=0.4, tol=0).fit(X, y)
    t = m.triplets_  # max_iter=8: one epoch, no refresh: the initial table
    s = 0.5 * (np.mean(np.sum((X[t[:, 0]] - X[t[:, 1]]) ** 2, axis=1))
               + np.mean(np.sum((X[t[:, 0]] - X[t[:, 2]]) ** 2, axis=1)))
    assert m.eta0_ == pytest.approx(5.0 / (0.4 * s), rel=1e-12)


def test_auto_c_keeps_the_random_recipe_from_collapsing():
    # 4 informative features among 30: with the random recipe's fixed far impostors the pull
    # of c=0.5 wins in every direction and the metric collapses to epsilon I (Euclidean)
    from sklearn.datasets import make_classification
    X, y = make_classification(2000, 30, n_informative=4, n_redundant=0, n_classes=4,
                               random_state=1)
    X = StandardScaler().fit_transform(X)
    fit, held = slice(0, 1000), slice(1000, None)

    def accuracy(transform):
        Z = transform(X)
        return KNeighborsClassifier(3).fit(Z[fit], y[fit]).score(Z[held], y[held])

    half = LMNNMetric(c=0.5, triplet_strategy="random", random_state=0).fit(X[fit], y[fit])
    assert np.linalg.eigvalsh(half.metric_)[-1] < 2 * half.epsilon
    auto = LMNNMetric(triplet_strategy="random", random_state=0).fit(X[fit], y[fit])
    assert 0.5 < auto.c_ <= 0.9
    assert np.linalg.eigvalsh(auto.metric_)[-1] > 10 * auto.epsilon
    assert accuracy(auto.transform) > accuracy(lambda Z: Z) + 0.03
    # the chosen candidate's records only
    assert len(auto.history_["objective"]) == auto.n_epochs_
    assert auto.history_["iteration"][-1] == auto.n_iter_
    # the 'knn' recipe and fixed values keep their c
    assert LMNNMetric(random_state=0, max_iter=8).fit(X[fit], y[fit]).c_ == 0.5
    assert LMNNMetric(c=0.3, triplet_strategy="random", random_state=0,
                      max_iter=8).fit(X[fit], y[fit]).c_ == 0.3


def test_auto_c_keeps_the_candidate_with_the_better_training_accuracy(monkeypatch):
    from sklearn.datasets import make_classification
    X, y = make_classification(1500, 30, n_informative=4, n_redundant=0, n_classes=4,
                               random_state=1)
    X = StandardScaler().fit_transform(X)
    scores = []

    def prefer_first(X, y, A):
        scores.append(A)
        return 1.0 if len(scores) == 1 else 0.5

    monkeypatch.setattr(driver, "loo_knn_accuracy", prefer_first)
    kept = LMNNMetric(triplet_strategy="random", random_state=0).fit(X, y)
    assert len(scores) == 2 and kept.c_ == 0.5
    plain = LMNNMetric(c=0.5, triplet_strategy="random", random_state=0).fit(X, y)
    np.testing.assert_array_equal(kept.metric_, plain.metric_)
    assert len(kept.history_["objective"]) == plain.n_epochs_


# ---------------------------------------------------------------- float32 memory (issue 21.4)
def _f32_problem(n, d=100, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d).astype(np.float32)
    y = (X[:, 0] + rng.randn(n) > 0).astype(int) + (X[:, 1] > 0.5)
    return X, y


def test_float32_blocked_objective_equals_one_shot(monkeypatch):
    """The float32 objective's blocks (forced here) give the one-shot hinge: the same terms
    in the same order, 'random' and 'knn' (grouped) tables, with the cached blocks reused
    while the table is unchanged."""
    X, y = _noisy_blobs(n=600, seed=7)
    X32 = X.astype(np.float32)
    for strategy, layout, size in (("random", None, 8192), ("knn", (3, 10), 128)):
        m = LMNNMetric(max_iter=100, random_state=0, triplet_strategy=strategy,
                       search_size=size).fit(X32, y)
        one_shot = _objective(m, X32, m.prior_matrix_, layout)
        monkeypatch.setattr(driver, "_LEAN_BYTES", 0)
        monkeypatch.setattr(driver, "_LEAN_SPREAD", 0)
        monkeypatch.setattr(driver, "_LEAN_ROWS", 64)
        blocked = _objective(m, X32, m.prior_matrix_, layout)
        for A in (np.eye(X.shape[1]), m.metric_, m.metric_):
            assert blocked(A, m.triplets_) == pytest.approx(one_shot(A, m.triplets_),
                                                            rel=1e-13)
        assert len(blocked._blocks[1]) > 3     # blocks were used
        monkeypatch.undo()


def test_float32_fit_allocates_under_half_of_x_per_row(monkeypatch):
    """A float32 'random' fit (the default above search_size rows, c='auto' fitting two
    candidates) allocates, per row of X, less than half of the row's bytes beyond X (the
    int32 triplet table: 12 k q bytes per row; no n x d float64 table).  The objective's
    sample is shrunk so that its blocked path runs at a test-sized n (as it does from
    98,304 rows with the default sample); fixed working buffers (4,096-row leave-one-out
    sample, 4,096-pair blocks) cancel in the difference of two sizes.  Before this
    change: 1.78x per row (int64 tables and their temporaries, a second table for the
    second c candidate, n x d float64 mapped rows; here 0.28x per row, 0.75x in all at
    40,000 rows, against 1.76x and 4.38x before)."""
    import gc
    import tracemalloc
    monkeypatch.setattr(driver, "_OBJECTIVE_SAMPLE", 1024)
    monkeypatch.setattr(driver, "_LEAN_BYTES", 1 << 20)
    peaks, sizes = [], []
    for n in (20000, 40000):
        X, y = _f32_problem(n)
        est = LMNNMetric(random_state=0, max_iter=64)
        gc.collect()
        tracemalloc.start()
        try:
            est.fit(X, y)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        sizes.append(X.nbytes)
        assert est.triplet_strategy_ == "random" and est.triplets_.dtype == np.int32
    assert est.c_ > 0.5        # the c='auto' check ran both candidates
    assert (peaks[1] - peaks[0]) / (sizes[1] - sizes[0]) < 0.5
    assert peaks[1] < sizes[1]


@pytest.fixture(scope="module")
def fitted_wine():
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return X, LMNNMetric(max_iter=100, random_state=0).fit(X, y)


@pytest.mark.parametrize("attr, value", [
    # before: transform returned a (n,) array, NaN rows, complex or object output, raised
    # AttributeError or numpy's matmul message; get_feature_names_out raised NotFittedError
    ("components_", lambda c: c[0]),
    ("components_", lambda c: np.full_like(c, np.nan)),
    ("components_", lambda c: c.astype(complex)),
    ("components_", lambda c: c.astype(object)),
    ("components_", lambda c: c[:, :3]),
    ("components_", lambda c: c[:0]),
    ("components_", lambda c: "x"),
])
def test_tampered_components_raise_before_transform(fitted_wine, attr, value):
    X, est = fitted_wine
    est = pickle.loads(pickle.dumps(est))
    setattr(est, attr, value(getattr(est, attr)))
    for call in (lambda: est.transform(X[:3]), est.get_feature_names_out):
        with pytest.raises(ValueError, match="inconsistent fitted state"):
            call()


@pytest.mark.parametrize("value", [
    # before: NaN distances, numpy's broadcast / einsum messages, AttributeError
    lambda A: np.full_like(A, np.nan),
    lambda A: A[:3, :3],
    lambda A: "x",
])
def test_tampered_metric_raises_in_pair_distance_and_get_metric(fitted_wine, value):
    X, est = fitted_wine
    est = pickle.loads(pickle.dumps(est))
    est.metric_ = value(est.metric_)
    pairs = np.stack([X[:3], X[3:6]], axis=1)
    # get_mahalanobis_matrix returned the tampered value unchecked
    for call in (lambda: est.pair_distance(pairs), est.get_metric, est.get_mahalanobis_matrix):
        with pytest.raises(ValueError, match="inconsistent fitted state"):
            call()


def test_pair_distance_rejects_strings_complex_and_sparse(fitted_wine):
    """Numeric strings were parsed and complex pairs lost their imaginary part silently; a
    sparse matrix raised numpy's 'setting an array element with a sequence'."""
    import scipy.sparse as sp

    X, est = fitted_wine
    pairs = np.stack([X[:3], X[3:6]], axis=1)
    with pytest.raises(ValueError, match="strings"):
        est.pair_distance(pairs.astype(str))
    with pytest.raises(ValueError, match="[Cc]omplex"):
        est.pair_distance(pairs + 1j)
    with pytest.raises(TypeError, match="sparse"):
        est.pair_distance(sp.csr_matrix(X[:4]))
    np.testing.assert_allclose(est.pair_distance(pairs),
                               [est.get_metric()(a, b) for a, b in pairs])


def test_wide_data_too_large_for_a_square_metric_raises_before_allocating():
    """20 x 200,000 asked numpy for a 298 GiB n_features x n_features array (MemoryError);
    the check happens before any such array exists."""
    X = np.zeros((4, 10**6), dtype=np.float32)
    X[:, 0] = [0.0, 0.1, 5.0, 5.1]
    with pytest.raises(ValueError, match="n_features=1000000"):
        LMNNMetric(max_iter=8, random_state=0).fit(X, [0, 0, 1, 1])


def test_verbose_lines_of_the_c_auto_candidates_name_them(capsys):
    """c='auto' may fit two candidates, each from epoch 0: their progress lines name the
    candidate, then the choice is printed (the two fits' lines were indistinguishable)."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import scale

    X, y = make_classification(400, 10, n_informative=2, flip_y=0.3, random_state=0)
    est = LMNNMetric(triplet_strategy="random", random_state=0, verbose=1).fit(scale(X), y)
    lines = capsys.readouterr().out.splitlines()
    assert est.c_ != 0.5, "this data no longer makes c='auto' fit two candidates"
    assert any(" c=0.5 candidate] epoch=0" in line for line in lines)
    assert any(f" c={est.c_:.4g} candidate] epoch=0" in line for line in lines)
    assert lines[-1].endswith(f"c='auto' keeps c={est.c_:.4g}")


def test_get_metric_function_rejects_bad_points(fitted_wine):
    """The returned metric read anything numpy could cast: complex points lost their imaginary
    part (a ComplexWarning), NaN gave a NaN distance, a (2, d) pair of rows raised numpy's
    'only length-1 arrays' TypeError and a wrong length a matmul mismatch."""
    import scipy.sparse as sp

    X, est = fitted_wine
    metric = est.get_metric()
    d = X.shape[1]
    nan_row = X[1].copy()
    nan_row[0] = np.nan
    for bad, error, match in [
        (X[1] + 1j, ValueError, "v holds complex"),
        (nan_row, ValueError, "v contains NaN"),
        (X[1:3], ValueError, rf"v must have shape \({d},\), got \(2, {d}\)"),
        (X[1, :-1], ValueError, rf"v must have shape \({d},\)"),
        (X[1].astype(str), ValueError, "strings"),
        (sp.csr_matrix(X[1]), TypeError, "v must be a dense array"),
    ]:
        with pytest.raises(error, match=match):
            metric(X[0], bad)
    with pytest.raises(ValueError, match=r"u must have shape"):
        metric(X[0, :2], X[1])
    assert metric(list(X[0]), X[1]) == pytest.approx(est.pair_distance(X[None, :2])[0])
