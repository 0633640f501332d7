"""float32 X is read as float32 by the kernels, never copied to float64 (issue 21.4).

The estimators that read float32 rows natively fit a float32 X to the coefficients of the same
values in float64 (the kernels widen each value to double and accumulate in double), and a fit
allocates far less than a float64 copy of X would take.
"""
import gc
import pickle
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from skstoch import (CGVRClassifier, CGVRRegressor, ConstrainedLasso, ConstrainedLassoCV,
                     S3GDClassifier, S3GDRegressor, S3VMClassifier)
from skstoch._fast._lasso import LassoData, sparse_gram
from skstoch._fast._s3vm import block_features
from skstoch._solvers._lasso_problem import LSProblem, gram_block
from skstoch.utils import make_dataset

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _matrices(rng, n=60, d=9):
    X = rng.randn(n, d).astype(np.float32)
    X[rng.rand(n, d) < 0.5] = 0.0
    X[4] = 0.0   # an empty row
    return X, sp.csr_matrix(X)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_dataset_keeps_float32_without_copy(rng, sparse):
    X = _matrices(rng)[int(sparse)]
    ds = make_dataset(X, float32=True)
    assert ds.dtype == np.float32
    stored = ds.arrays()[0]
    assert np.shares_memory(stored, X.data if sparse else X)
    # the default still converts (kernels that read only float64 rows)
    assert make_dataset(X).dtype == np.float64
    clone = pickle.loads(pickle.dumps(ds))
    assert clone.dtype == np.float32
    w = rng.randn(X.shape[1])
    np.testing.assert_array_equal(clone.margins(w), ds.margins(w))


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_float32_rows_compute_what_float64_rows_do(rng, sparse):
    X32 = _matrices(rng)[int(sparse)]
    ds32, ds64 = make_dataset(X32, float32=True), make_dataset(X32.astype(np.float64))
    w = rng.randn(X32.shape[1])
    r = rng.randn(X32.shape[0])
    # widening float32 to double is exact and the sums run in the same order: same bits
    np.testing.assert_array_equal(ds32.margins(w, 0.5), ds64.margins(w, 0.5))
    out32, out64 = np.zeros(X32.shape[1]), np.zeros(X32.shape[1])
    ds32.add_transpose_product(r, out32, 0, X32.shape[0])
    ds64.add_transpose_product(r, out64, 0, X32.shape[0])
    np.testing.assert_array_equal(out32, out64)
    for i in range(X32.shape[0]):
        assert ds32.py_dot(i, w) == ds64.py_dot(i, w)
        assert ds32.py_sqnorm(i) == ds64.py_sqnorm(i)
        a32, a64 = w.copy(), w.copy()
        ds32.py_axpy(i, -0.3, a32)
        ds64.py_axpy(i, -0.3, a64)
        np.testing.assert_array_equal(a32, a64)
        v32, c32 = ds32.py_row(i)
        v64, c64 = ds64.py_row(i)
        assert v32.dtype == np.float32
        np.testing.assert_array_equal(v32, v64)
        np.testing.assert_array_equal(c32, c64)


def test_float32_rows_in_the_lasso_and_s3vm_kernels(rng):
    X32 = _matrices(rng)[0]
    ds32, ds64 = make_dataset(X32, float32=True), make_dataset(X32.astype(np.float64))
    with pytest.raises(TypeError, match="float32"):
        ds32.require_float64("a float64-only kernel")
    ds64.require_float64("a float64-only kernel")
    n = ds32.n_samples
    LassoData(ds32, np.zeros(n), np.ones(n), 1.0, 1.0, True, 0, 0)   # reads float32 rows
    # the random features of float32 rows are those of their float64 values, bitwise
    m, d = 4, ds32.n_features
    omega, offset = rng.randn(m, d), rng.rand(m)
    rows = np.arange(n, dtype=np.int64)
    out32, out64 = np.empty((n, m)), np.empty((n, m))
    block_features(ds32, rows, omega, offset, out32)
    block_features(ds64, rows, omega, offset, out64)
    np.testing.assert_array_equal(out32, out64)


@pytest.mark.parametrize("subset", [False, True], ids=["all_columns", "working_set"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_float32_gram_block_matches_float64(rng, sparse, subset):
    # the exact solver's Gram matrix: float32 rows widened in blocks (dense) or read in place
    # by a kernel (CSR); the same matrix as from the float64 conversion, up to sum order
    X32 = _matrices(rng, n=3000, d=30)[int(sparse)]
    X64 = X32.astype(np.float64)
    sw = rng.rand(X32.shape[0])
    sw[5] = 0.0
    cols = np.array([2, 3, 7, 11, 29]) if subset else np.arange(X32.shape[1])
    grams = [gram_block(LSProblem(X, make_dataset(X, float32=True), np.zeros(X.shape[0]), sw,
                                  0.0, 1.0, True), cols) for X in (X32, X64)]
    np.testing.assert_allclose(grams[0], grams[1], rtol=1e-12, atol=1e-14)
    if sparse:
        with pytest.raises(ValueError, match="col_pos"):
            sparse_gram(make_dataset(X32, float32=True), np.full(30, 9, dtype=np.int32), sw,
                        np.zeros((5, 5)))


def _problem(n, d, seed=0, density=1.0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d).astype(np.float32)
    if density < 1.0:
        X[rng.rand(n, d) >= density] = 0.0
    margin = X[:, :5].astype(np.float64) @ rng.randn(5)
    y_clf = (margin + 0.5 * rng.randn(n) > 0).astype(int)
    y_reg = margin + 0.1 * rng.randn(n)
    return X, y_clf, y_reg


def _with_float64(X32, sparse):
    """X32 and its float64 copy, both CSR when ``sparse``."""
    X64 = X32.astype(np.float64)
    if sparse:
        return sp.csr_matrix(X32), sp.csr_matrix(X64)
    return X32, X64


def _rel_l2(a, b):
    return np.linalg.norm(np.ravel(a) - np.ravel(b)) / max(np.linalg.norm(np.ravel(b)), 1e-300)


# estimators that read float32 rows natively: (factory, task)
NATIVE = {
    **{f"CGVRClassifier-{s}": (lambda s=s: CGVRClassifier(solver=s, random_state=0), "clf")
       for s in ["cgvr", "cgvr_paper", "cg", "svrg", "minibatch_svrg"]},
    "CGVRClassifier-line_search=full": (
        lambda: CGVRClassifier(line_search="full", random_state=0), "clf"),
    "CGVRClassifier-multinomial": (lambda: CGVRClassifier(random_state=0), "clf3"),
    "CGVRClassifier-ovr-squared_hinge-n_jobs=2": (
        lambda: CGVRClassifier(loss="squared_hinge", n_jobs=2, random_state=0), "clf3"),
    "CGVRRegressor-cgvr": (lambda: CGVRRegressor(solver="cgvr", random_state=0), "reg"),
    "CGVRRegressor-cg": (lambda: CGVRRegressor(solver="cg", random_state=0), "reg"),
    **{f"S3GDClassifier-{s}": (lambda s=s: S3GDClassifier(solver=s, random_state=0), "clf")
       for s in ["hybrid", "s3gd", "ssgd", "svrg", "sgd"]},
    "S3GDClassifier-ovr-n_jobs=2": (
        lambda: S3GDClassifier(multi_class="ovr", n_jobs=2, random_state=0), "clf3"),
    "S3GDClassifier-multinomial": (lambda: S3GDClassifier(random_state=0), "clf3"),
    # an l1 part (every step updates all of W) and batches of a third of the rows
    "S3GDClassifier-multinomial-elasticnet-batch_size=150": (
        lambda: S3GDClassifier(solver="svrg", penalty="elasticnet", alpha=1e-3,
                               batch_size=150, random_state=0), "clf3"),
    "S3GDRegressor-hybrid": (lambda: S3GDRegressor(random_state=0), "reg"),
    "S3GDRegressor-s3gd-elasticnet": (
        lambda: S3GDRegressor(solver="s3gd", penalty="elasticnet", random_state=0), "reg"),
    "S3GDRegressor-cd-l1": (
        lambda: S3GDRegressor(solver="cd", penalty="l1", alpha=1e-2), "reg"),
    "S3GDClassifier-cd-elasticnet": (
        lambda: S3GDClassifier(solver="cd", penalty="elasticnet", alpha=1e-3), "clf"),
}


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", list(NATIVE))
def test_float32_fit_matches_float64_fit(name, sparse):
    factory, task = NATIVE[name]
    X32, y_clf, y_reg = _problem(400, 12, density=0.4 if sparse else 1.0)
    y = {"clf": y_clf, "clf3": y_clf + (X32[:, 1] > 0.5), "reg": y_reg}[task]
    X32, X64 = _with_float64(X32, sparse)
    est32, est64 = factory().fit(X32, y), factory().fit(X64, y)
    assert _rel_l2(est32.coef_, est64.coef_) <= 1e-4
    assert _rel_l2(est32.intercept_, est64.intercept_) <= 1e-4
    assert est32.coef_.dtype == np.float64
    if task == "reg":
        np.testing.assert_allclose(est32.predict(X32), est64.predict(X64), rtol=1e-4,
                                   atol=1e-4 * np.std(y))
    else:
        np.testing.assert_array_equal(est32.predict(X32), est64.predict(X64))


def _fit_peak(est, X, y):
    gc.collect()
    tracemalloc.start()
    try:
        est.fit(X, y)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("factory, task, bound", [
    (lambda: CGVRClassifier(max_iter=3, random_state=0), 1, 0.5),
    (lambda: CGVRRegressor(max_iter=3, random_state=0), 2, 0.5),
    # S3GD's own tables (anchor graph, Gram estimate) take more, but no copy of X
    (lambda: S3GDClassifier(max_iter=3, random_state=0), 1, 1.0),
], ids=["CGVRClassifier", "CGVRRegressor", "S3GDClassifier"])
def test_float32_fit_makes_no_float64_copy(factory, task, bound, sparse):
    # a float64 copy of X alone would be 2x the bytes of the float32 values
    X, *ys = _problem(20000, 50, density=0.5 if sparse else 1.0)
    if sparse:
        X = sp.csr_matrix(X)
        x_bytes = X.data.nbytes + X.indices.nbytes
    else:
        x_bytes = X.nbytes
    factory().fit(X[:50], ys[task - 1][:50])   # imports and one-time caches outside the count
    assert _fit_peak(factory(), X, ys[task - 1]) < bound * x_bytes


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_float32_threaded_full_passes(sparse):
    # 20,000 rows: the full passes run over two fixed row blocks, in threads with n_jobs=2
    X32, y, _ = _problem(20000, 10, seed=1, density=0.5 if sparse else 1.0)
    X32, X64 = _with_float64(X32, sparse)
    threaded = CGVRClassifier(n_jobs=2, random_state=0).fit(X32, y)
    sequential = CGVRClassifier(random_state=0).fit(X64, y)
    assert _rel_l2(threaded.coef_, sequential.coef_) <= 1e-4
    np.testing.assert_array_equal(threaded.predict(X32), sequential.predict(X64))


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("lazy", [True, False], ids=["lazy", "l1"])
@pytest.mark.parametrize("batch", [1, 7, 400])
def test_multinomial_epoch_gathers_the_rows_it_reads(rng, sparse, lazy, batch):
    # a float32 X read in place: the epoch copies the rows of its random order to a buffer,
    # a chunk at a time (batch=400: 400 x 120 entries, more than a chunk); the arithmetic
    # is that of reading them in place, bit for bit
    from skstoch._fast._multinomial import MultinomialTables, svrg_epoch
    n, d, K = 3000, 120, 4
    X = rng.randn(n, d).astype(np.float32)
    if sparse:
        X[rng.rand(n, d) < 0.7] = 0.0
        C = sp.csr_matrix(X)
        rows = (C.data, C.indices, C.indptr.astype(np.int64))
    else:
        rows = (X.ravel(), np.empty(0, np.int32), np.empty(0, np.int64))
    sw = rng.rand(n) + 0.5
    P0 = rng.dirichlet(np.ones(K), size=n)
    BX, B, Bc = rng.randn(n, K) if lazy else np.empty((0, K)), 0.01 * rng.randn(d, K), rng.randn(K)
    order = np.roll(rng.permutation(n), -17)
    out = []
    for gather in (False, True):
        T = MultinomialTables(*rows, d, sw, 2 * n // batch + 3, batch, 0.0 if lazy else 1e-3,
                              1e-2, True, lazy, gather)
        U, c, scale = 0.01 * np.ones((d, K)), np.zeros(K), np.array([1.0, 0.0])
        svrg_epoch(T, order, P0, BX, B, Bc, U, c, scale, 0.05, 0.05)
        out.append((U, c, scale))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)
    assert np.abs(out[0][0] - 0.01).max() > 1e-6     # the epoch moved


def test_multinomial_epoch_gathers_wide_sparse_rows(rng):
    # wide CSR rows with one long row: the buffer is sized by the longest row, not by d
    from skstoch._fast._multinomial import MultinomialTables, svrg_epoch
    n, d, K, batch = 500, 20000, 3, 20
    X = sp.random(n, d, density=0.001, format="csr", dtype=np.float32, random_state=0)
    X = sp.vstack([X[:250], sp.csr_matrix(rng.randn(1, d).astype(np.float32)), X[251:]],
                  format="csr")
    rows = (X.data, X.indices, X.indptr.astype(np.int64))
    sw, P0 = rng.rand(n) + 0.5, rng.dirichlet(np.ones(K), size=n)
    B, Bc = 0.01 * rng.randn(d, K), rng.randn(K)
    order = rng.permutation(n)
    out = []
    for gather in (False, True):
        T = MultinomialTables(*rows, d, sw, 3 * n // batch, batch, 1e-4, 1e-2, True, False,
                              gather)
        U, c, scale = np.zeros((d, K)), np.zeros(K), np.array([1.0, 0.0])
        svrg_epoch(T, order, P0, np.empty((0, K)), B, Bc, U, c, scale, 0.05, 0.05)
        out.append((U, c))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("gather", [False, True], ids=["in_place", "gather"])
def test_multinomial_kernels_read_int32_row_pointers_in_place(rng, gather):
    # scipy's int32 indptr is read as it is stored (an int64 copy took n x 8 bytes): the
    # same rows, so the bits of the int64 pointers in the epochs and the full passes
    from skstoch._fast._multinomial import (MultinomialTables, rows_times,
                                            softmax_gradient, svrg_epoch)
    n, d, K, batch = 900, 40, 3, 5
    X = rng.randn(n, d).astype(np.float32)
    X[rng.rand(n, d) < 0.7] = 0.0
    X[3] = 0.0
    C = sp.csr_matrix(X)
    assert C.indptr.dtype == np.int32
    sw, P0 = rng.rand(n) + 0.5, rng.dirichlet(np.ones(K), size=n)
    BX, B, Bc = rng.randn(n, K), 0.01 * rng.randn(d, K), rng.randn(K)
    y, order = rng.randint(K, size=n).astype(np.intp), rng.permutation(n)
    out = []
    for indptr in (C.indptr.astype(np.int64), C.indptr):
        T = MultinomialTables(C.data, C.indices, indptr, d, sw, 2 * n // batch, batch, 0.0,
                              1e-2, True, True, gather)
        U, c, scale = 0.01 * np.ones((d, K)), np.zeros(K), np.array([1.0, 0.0])
        svrg_epoch(T, order, P0, BX, B, Bc, U, c, scale, 0.05, 0.05)
        Z, G, Gc = np.empty((n, K)), np.empty((d, K)), np.empty(K)
        rows_times(T, U, Z)
        softmax_gradient(T, P0, y, sw, G, Gc)
        out.append((U, c, scale, Z, G, Gc))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(out[1][3], X.astype(np.float64) @ out[1][0], rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_multinomial_full_pass_kernels_match_numpy(rng, sparse):
    # the full passes of a float32 X in place: products with each value widened to double
    from skstoch._fast._multinomial import (MultinomialTables, row_sqnorms, rows_times,
                                            rows_transpose_times, softmax_gradient)
    X32 = _matrices(rng, n=70, d=9)[int(sparse)]
    X64 = X32.astype(np.float64)
    n, d, K = 70, 9, 4
    if sparse:
        rows = (X32.data, X32.indices, X32.indptr.astype(np.int64))
        X64 = X64.toarray()
    else:
        rows = (X32.ravel(), np.empty(0, np.int32), np.empty(0, np.int64))
    T = MultinomialTables(*rows, d, np.ones(0), 0, 1, 0.0, 0.0, False, False)
    M, R = rng.randn(d, K), rng.randn(n, K)
    P, y, s = rng.dirichlet(np.ones(K), size=n), rng.randint(K, size=n), rng.rand(n)
    Z, B, G, Gc, sq = (np.empty((n, K)), np.empty((d, K)), np.empty((d, K)), np.empty(K),
                       np.empty(n))
    rows_times(T, M, Z)
    rows_transpose_times(T, R, B)
    softmax_gradient(T, P, y.astype(np.intp), s, G, Gc)
    row_sqnorms(T, sq)
    Rs = (P - np.eye(K)[y]) * s[:, None]
    for got, want in ((Z, X64 @ M), (B, X64.T @ R), (G, X64.T @ Rs), (Gc, Rs.sum(axis=0)),
                      (sq, (X64 ** 2).sum(axis=1))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("cls", [S3GDClassifier, CGVRClassifier])
def test_float32_multinomial_reads_x_in_place(cls, sparse):
    # multinomial Prox-SVRG used to copy X in a random row order, as float64 (2 x the float32
    # bytes), and CGVR's full passes on a CSR X had scipy widen its values (1 x); the full
    # passes and epochs now read a float32 X in place: the fit's (n, K) tables only
    X, y, _ = _problem(10000, 200, density=0.5 if sparse else 1.0)
    y = y + (X[:, 1] > 0.5)
    if sparse:
        X = sp.csr_matrix(X)
    factory = lambda: cls(max_iter=3, random_state=0)   # noqa: E731
    factory().fit(X[:100], y[:100])
    assert _fit_peak(factory(), X, y) < 0.5 * _x_bytes(X)


@pytest.mark.parametrize("cls, tables", [(CGVRClassifier, 2), (S3GDClassifier, 3)],
                         ids=["CGVRClassifier", "S3GDClassifier"])
def test_float32_multinomial_csr_keeps_only_its_tables(cls, tables):
    # the benchmark's shape (30 stored entries a row: 240 bytes with their indices, against
    # 24 bytes a row for an (n, 3) float64 table): the fit holds the (n, K) tables its
    # algorithm reads (CGVR: the kept snapshot's probabilities and the new pass's; S3GD: the
    # kept P and X B and a trial's P), a few per-row vectors and O(block) temporaries; no
    # one-hot or one-vs-rest targets, residual table or int64 copy of indptr (0.75 x X)
    n, K = 20000, 3
    X, y, _ = _problem(n, 100, density=0.3)
    y = y + (X[:, 1] > 0.5)
    X = sp.csr_matrix(X)
    factory = lambda: cls(max_iter=3, random_state=0)   # noqa: E731
    factory().fit(X[:100], y[:100])
    assert _fit_peak(factory(), X, y) < (tables * K + 5) * 8 * n + 2**19


def test_float32_multinomial_fit_casts_dense_rows_in_blocks():
    # the multinomial model works in numpy: a dense float32 X is widened a block of rows at a
    # time, so the fit takes no more than the fit of a float64 X (no cast of all of X)
    X32, y, _ = _problem(20000, 50)
    y = y + (X32[:, 1] > 0.5)
    X64 = X32.astype(np.float64)
    factory = lambda: CGVRClassifier(max_iter=3, random_state=0)   # noqa: E731
    factory().fit(X32[:100], y[:100])
    assert _fit_peak(factory(), X32, y) < _fit_peak(factory(), X64, y) + 0.25 * X32.nbytes


# ConstrainedLasso: every solver reads float32 rows in place; the exact solver's products with
# X run through the dataset and its Gram matrix is widened by blocks (dense) or built by a
# kernel from the float32 rows (CSR)
LASSO = {
    **{s: dict(solver=s) for s in ["fista", "epro_sgd", "epro_svrg", "sgd", "oneproj",
                                   "epro_sgd_paper"]},
    # at its default budget ORDA stops ~3% from the optimum, where a penalty indicator
    # flipped by a rounding difference moves the result by ~5e-4: given 100 passes
    "epro_orda": dict(solver="epro_orda", max_iter=40000),
    "fista-no_working_set": dict(solver="fista", working_set=False),
    "fista-radius=None": dict(solver="fista", radius=None),
    "epro_svrg-l2_reg": dict(solver="epro_svrg", l2_reg=0.01),
}


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", list(LASSO))
def test_float32_constrained_lasso_matches_float64(name, sparse):
    X32, _, y = _problem(400, 12, seed=2, density=0.4 if sparse else 1.0)
    X32, X64 = _with_float64(X32, sparse)
    sw = np.random.RandomState(0).rand(400) + 0.5
    params = {"radius": 2.0, "random_state": 0, **LASSO[name]}
    est32 = ConstrainedLasso(**params).fit(X32, y, sample_weight=sw)
    est64 = ConstrainedLasso(**params).fit(X64, y, sample_weight=sw)
    assert est32.coef_.dtype == np.float64
    assert _rel_l2(est32.coef_, est64.coef_) <= 1e-4
    assert abs(est32.intercept_ - est64.intercept_) <= 1e-4 * max(abs(est64.intercept_), 1.0)
    assert est32.radius_ == pytest.approx(est64.radius_, rel=1e-10)


def test_float32_constrained_lasso_wide_sparse_working_sets():
    # 600 columns: the exact solver's working sets are column subsets (the CSR Gram kernel
    # maps columns to working-set positions); two targets share the float32 rows
    X32, _, y = _problem(300, 600, seed=3, density=0.05)
    X32, X64 = sp.csr_matrix(X32), sp.csr_matrix(X32.astype(np.float64))
    Y = np.column_stack([y, -2.0 * y + 1.0])
    est32 = ConstrainedLasso(radius=1.0).fit(X32, Y)
    est64 = ConstrainedLasso(radius=1.0).fit(X64, Y)
    assert est32.coef_.shape == (2, 600)
    assert _rel_l2(est32.coef_, est64.coef_) <= 1e-4


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_float32_constrained_lasso_cv_matches_float64(sparse):
    X32, _, y = _problem(300, 10, seed=4, density=0.5 if sparse else 1.0)
    X32, X64 = _with_float64(X32, sparse)
    cv32 = ConstrainedLassoCV(n_radii=6, cv=3).fit(X32, y)
    cv64 = ConstrainedLassoCV(n_radii=6, cv=3).fit(X64, y)
    np.testing.assert_allclose(cv32.radii_, cv64.radii_, rtol=1e-8)
    np.testing.assert_allclose(cv32.mse_path_, cv64.mse_path_, rtol=1e-6)
    assert cv32.radius_ == pytest.approx(cv64.radius_, rel=1e-10)
    assert _rel_l2(cv32.coef_, cv64.coef_) <= 1e-4
    assert cv32.coef_.dtype == np.float64


def _x_bytes(X):
    return X.data.nbytes + X.indices.nbytes if sp.issparse(X) else X.nbytes


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("params", [
    dict(solver="fista"), dict(solver="fista", radius=None), dict(solver="epro_svrg"),
    dict(solver="epro_sgd")], ids=["fista", "fista-radius=None", "epro_svrg", "epro_sgd"])
def test_float32_constrained_lasso_makes_no_float64_copy(params, sparse):
    # 40,000 x 100: X (16 MB dense) dominates the per-row vectors (0.3 MB each)
    X, _, y = _problem(40000, 100, density=0.5 if sparse else 1.0)
    if sparse:
        X = sp.csr_matrix(X)
    params = {"radius": 2.0, "max_iter": 120000 if params["solver"] != "fista" else None,
              "random_state": 0, **params}
    ConstrainedLasso(**params).fit(X[:50], y[:50])
    assert _fit_peak(ConstrainedLasso(**params), X, y) < 0.5 * _x_bytes(X)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_float32_constrained_lasso_cv_copies_folds_only(sparse):
    # a stochastic solver: the folds' training rows are copied (in X's dtype, as
    # scikit-learn's LassoCV does); nothing else of X's size: no float64 copy of X or of a
    # fold, no cast of the test rows
    X, _, y = _problem(20000, 100, density=0.5 if sparse else 1.0)
    if sparse:
        X = sp.csr_matrix(X)
    factory = lambda: ConstrainedLassoCV(n_radii=2, cv=4, solver="epro_svrg",   # noqa: E731
                                         max_iter=40000)
    factory().fit(X[:200], y[:200])
    assert _fit_peak(factory(), X, y) < (0.75 + 0.5) * _x_bytes(X)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_float32_constrained_lasso_cv_reads_folds_in_place(sparse):
    # the exact solver (the default): each fold's fits read all of X in place, the test
    # rows weighted 0; the fold copies took (cv - 1) / cv x X's bytes
    X, _, y = _problem(20000, 100, density=0.5 if sparse else 1.0)
    if sparse:
        X = sp.csr_matrix(X)
    factory = lambda: ConstrainedLassoCV(n_radii=3, cv=4)   # noqa: E731
    factory().fit(X[:200], y[:200])
    assert _fit_peak(factory(), X, y) < 0.5 * _x_bytes(X)


def test_float32_constrained_lasso_cv_csr_per_row_vectors_stay_few():
    # the benchmark's density (30 stored entries a row: 240 bytes with their indices, the
    # bytes of 30 per-row float64 vectors): the in-place folds' fits keep about 12 such
    # vectors (18 before: a float64 copy of the fold weights, the stochastic solvers'
    # weights, the previous FISTA point's image and residual, int64 fold indices)
    X, _, y = _problem(20000, 100, density=0.3)
    X = sp.csr_matrix(X)
    factory = lambda: ConstrainedLassoCV(n_radii=3, cv=4)   # noqa: E731
    factory().fit(X[:200], y[:200])
    assert _fit_peak(factory(), X, y) < 0.5 * _x_bytes(X)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("repeats", [False, True], ids=["kfold", "repeated_indices"])
def test_constrained_lasso_cv_fold_in_place_is_the_fold_copy(monkeypatch, sparse, repeats):
    # the training fold as weights (0 outside it, a repeated index counted twice) is the
    # problem of its copied rows: the same path of validation errors and the same choice
    from skstoch.linear_model import _constrained_lasso
    X, _, y = _problem(300, 10, seed=8, density=0.5 if sparse else 1.0)
    if sparse:
        X = sp.csr_matrix(X)
    sw = np.random.RandomState(1).rand(300) + 0.5
    rng = np.random.RandomState(2)
    cv = ([(rng.randint(0, 200, 250), np.arange(200, 300)),
           (rng.randint(100, 300, 250), np.arange(100))] if repeats else 3)
    fits = []
    for in_place in (False, True):
        monkeypatch.setattr(_constrained_lasso, "_FOLD_IN_PLACE", in_place)
        fits.append(ConstrainedLassoCV(n_radii=6, cv=cv, tol=1e-10).fit(X, y,
                                                                          sample_weight=sw))
    np.testing.assert_allclose(fits[1].mse_path_, fits[0].mse_path_, rtol=1e-7)
    assert fits[1].radius_ == fits[0].radius_
    np.testing.assert_allclose(fits[1].coef_, fits[0].coef_, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("factory, task", [
    (lambda: S3GDRegressor(solver="cd", penalty="l1", alpha=1e-2), 2),
    (lambda: S3GDRegressor(solver="cd", penalty="elasticnet", alpha=1e-2), 2),
    (lambda: S3GDClassifier(solver="cd", penalty="l1", alpha=1e-3), 1),
], ids=["reg-l1", "reg-elasticnet", "clf-l1"])
def test_float32_s3gd_cd_is_the_float64_fit_bitwise(factory, task, sparse):
    # 'cd' reads float32 columns (a working-set cache or a CSC copy, in float32); widening
    # is exact and every sum runs in the same order: the float64 fit, bit for bit
    X32, *ys = _problem(500, 40, seed=5, density=0.4 if sparse else 1.0)
    X32, X64 = _with_float64(X32, sparse)
    est32, est64 = factory().fit(X32, ys[task - 1]), factory().fit(X64, ys[task - 1])
    assert est32.coef_.dtype == np.float64
    np.testing.assert_array_equal(est32.coef_, est64.coef_)
    np.testing.assert_array_equal(est32.intercept_, est64.intercept_)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_float32_s3gd_cd_makes_no_float64_copy(sparse):
    # the working sets' columns are cached in float32 (a sparse solution: a few of them),
    # C-contiguous (dense) or CSC (CSR; a CSC copy of all of X took 1.0 x X's bytes)
    bound = 0.5
    X, _, y = _problem(40000, 100, density=0.5 if sparse else 1.0)
    if sparse:
        X = sp.csr_matrix(X)
    factory = lambda: S3GDRegressor(solver="cd", penalty="l1", alpha=1e-2)   # noqa: E731
    factory().fit(X[:50], y[:50])
    assert _fit_peak(factory(), X, y) < bound * _x_bytes(X)


@pytest.mark.parametrize("alpha", [1e-2, 1e-5], ids=["sparse_solution", "dense_solution"])
def test_s3gd_cd_csc_cache_is_the_full_csc_bitwise(monkeypatch, alpha):
    # CSR X: the columns of the working sets copied to a CSC cache read as the CSC copy of
    # all of X (which the fit falls back to once the cache would hold half of X's entries)
    from skstoch._solvers import _working_set
    X, _, y = _problem(600, 60, seed=7, density=0.3)
    X = sp.csr_matrix(X)
    fits = []
    for share in (0.0, 1.0, 0.5):     # always the full CSC, always the cache, the default
        monkeypatch.setattr(_working_set, "_CSC_CACHE_SHARE", share)
        fits.append(S3GDRegressor(solver="cd", penalty="l1", alpha=alpha).fit(X, y))
    assert np.count_nonzero(fits[0].coef_) > (40 if alpha < 1e-3 else 0)
    for est in fits[1:]:
        np.testing.assert_array_equal(est.coef_, fits[0].coef_)
        assert est.intercept_ == fits[0].intercept_


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("params", [dict(gamma="scale"), dict(gamma="cv", max_iter=20)],
                         ids=["gamma=scale", "gamma=cv"])
def test_float32_s3vm_matches_float64(params, sparse):
    # the random features read float32 rows in place (widened exactly); gamma='scale' sums
    # the variance of a float32 X in float64 blocks; the kNN graph of the manifold term
    # runs on X as given (scikit-learn's NearestNeighbors), float32 or float64
    X32, y, _ = _problem(600, 10, seed=1, density=0.5 if sparse else 1.0)
    y = y.copy()
    y[100:] = -1
    X32, X64 = _with_float64(X32, sparse)
    params = {"random_state": 0, "max_iter": 100, **params}
    est32 = S3VMClassifier(**params).fit(X32, y)
    est64 = S3VMClassifier(**params).fit(X64, y)
    assert est32.gamma_ == pytest.approx(est64.gamma_, rel=1e-12)
    assert est32.alpha_.dtype == np.float64
    assert _rel_l2(est32.alpha_, est64.alpha_) <= 1e-4
    np.testing.assert_allclose(est32.decision_function(X32), est64.decision_function(X64),
                               rtol=1e-4, atol=1e-6)


def test_float32_s3vm_makes_no_float64_copy():
    # the fit's own tables (random features, kNN graph of a node sample) do not scale with
    # X's bytes here; a float64 copy of X would add 2 x X's bytes
    X32, y, _ = _problem(6000, 60, seed=1)
    y = y.copy()
    y[500:] = -1
    factory = lambda: S3VMClassifier(gamma=0.1, random_state=0, max_iter=30)   # noqa: E731
    factory().fit(X32[300:800], y[300:800])
    peak64 = _fit_peak(factory(), X32.astype(np.float64), y)
    assert _fit_peak(factory(), X32, y) < peak64 + 0.25 * X32.nbytes


def _corrupt(kind):
    X = sp.csr_matrix(_problem(40, 6, seed=6, density=0.5)[0])
    if kind == "index_out_of_range":
        X.indices[3] = 6
    elif kind == "negative_index":
        X.indices[3] = -1
    elif kind == "indptr_decreasing":
        X.indptr[5] = X.indptr[7]
    elif kind == "nan":
        X.data[2] = np.nan
    elif kind == "inf":
        X.data[2] = np.inf
    return X


@pytest.mark.parametrize("kind", ["index_out_of_range", "negative_index", "indptr_decreasing",
                                  "nan", "inf"])
@pytest.mark.parametrize("factory", [
    lambda: ConstrainedLasso(radius=1.0), lambda: ConstrainedLasso(solver="epro_svrg"),
    lambda: ConstrainedLassoCV(n_radii=3, cv=2),
    lambda: S3GDRegressor(solver="cd", penalty="l1"),
    lambda: S3VMClassifier(gamma=0.1, max_iter=5, random_state=0),
], ids=["ConstrainedLasso", "ConstrainedLasso-epro_svrg", "ConstrainedLassoCV", "S3GD-cd",
        "S3VMClassifier"])
def test_float32_input_is_validated_as_float64_is(factory, kind):
    # the kernels read a float32 X's arrays in place: its structure and values are checked
    # exactly as for float64 (a ValueError, never a crash or a fit)
    X = _corrupt(kind)
    y = np.where(np.arange(40) % 2 == 0, 1, 0)
    if isinstance(factory(), S3VMClassifier):
        y[20:] = -1
    for data in (X, sp.csr_matrix((X.data.astype(np.float64), X.indices, X.indptr),
                                  shape=X.shape)):
        with pytest.raises(ValueError):
            factory().fit(data, y.astype(float) if not isinstance(factory(), S3VMClassifier)
                          else y)


@pytest.mark.parametrize("strategy", ["knn", "random"])
def test_float32_lmnn_matches_float64(strategy):
    from skstoch import LMNNMetric
    from sklearn.datasets import make_classification
    X, y = make_classification(1500, 20, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=2)
    X32 = ((X - X.mean(0)) / X.std(0)).astype(np.float32)
    est32 = LMNNMetric(triplet_strategy=strategy, random_state=0).fit(X32, y)
    est64 = LMNNMetric(triplet_strategy=strategy, random_state=0).fit(
        X32.astype(np.float64), y)
    # rows widened to double in the kernels and in blocks elsewhere: the float64 fit's values
    np.testing.assert_allclose(est32.metric_, est64.metric_, rtol=1e-4,
                               atol=1e-4 * np.abs(est64.metric_).max())
    assert est32.c_ == est64.c_
    np.testing.assert_allclose(est32.transform(X32), est64.transform(X32), rtol=1e-4,
                               atol=1e-6)


@pytest.mark.parametrize("strategy", ["knn", "random"])
def test_float32_lmnn_makes_no_float64_copy(strategy):
    # the fit's own tables (triplets, mapped rows) are alike for both dtypes; a float64 copy
    # of X would add 2 x X's bytes
    from skstoch import LMNNMetric
    X32, y, _ = _problem(6000, 60, seed=3)
    y = (y > 0).astype(int) + (np.arange(len(y)) % 2)     # 3 classes
    factory = lambda: LMNNMetric(triplet_strategy=strategy, random_state=0,  # noqa: E731
                                 max_iter=64)
    factory().fit(X32[:300], y[:300])
    peak64 = _fit_peak(factory(), X32.astype(np.float64), y)
    assert _fit_peak(factory(), X32, y) < peak64 + 0.25 * X32.nbytes
    if strategy == "knn":
        # transform: the float64 output (n x n_components) and one widened block of rows,
        # no float64 copy of X besides
        est = factory().fit(X32[:600], y[:600])
        X_big = np.random.RandomState(4).randn(40000, X32.shape[1]).astype(np.float32)
        gc.collect()
        tracemalloc.start()
        try:
            Z = est.transform(X_big)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < Z.nbytes + 0.25 * X_big.nbytes
