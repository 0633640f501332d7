"""Memory bounds (issue 10): peak memory of ``fit`` grows linearly in the number of samples
(comparisons, for OrdinalEmbedding) for every estimator whose method allows it; no n x n
allocation anywhere.

``tracemalloc`` sees every NumPy allocation (NumPy reports its buffers to it), including the
ones made inside the kernels' Python wrappers.  For each estimator the peak over a fit is
measured at n and 4n: a linear method grows about 4x (plus a constant), an n x n buffer
would grow 16x; and at 4n the peak must stay far below the 8 (4n)^2 bytes of one n x n
float64 matrix.
"""
import gc
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import skstoch
from skstoch.datasets import make_triplets

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

N_SMALL, FACTOR = 600, 4


def _clf(n, d=8, seed=0, n_classes=2):
    rng = np.random.RandomState(seed)
    y = np.arange(n) % n_classes
    X = rng.randn(n, d)
    X[:, 0] += 2.0 * y
    return X, y


def _reg(n, d=8, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    return X, X @ rng.randn(d)


def _semi(n):
    X, y = _clf(n)
    y = y.copy()
    y[np.arange(n) % 3 != 0] = -1   # keeps rows 0, 3, 6, ...: both classes
    return X, y


def _sparse(data):
    X, y = data
    X = X.copy()
    X[np.abs(X) < 0.8] = 0.0
    return sp.csr_matrix(X), y


# name -> (estimator factory, data(n))
CASES = {
    "CGVRClassifier": (lambda: skstoch.CGVRClassifier(max_iter=3, inner_iter=10,
                                                      random_state=0), _clf),
    "CGVRClassifier[sparse]": (lambda: skstoch.CGVRClassifier(max_iter=3, inner_iter=10,
                                                              random_state=0),
                               lambda n: _sparse(_clf(n))),
    "CGVRRegressor": (lambda: skstoch.CGVRRegressor(max_iter=3, inner_iter=10,
                                                    random_state=0), _reg),
    "ConstrainedLasso[fista]": (lambda: skstoch.ConstrainedLasso(solver="fista", max_iter=50),
                                _reg),
    "ConstrainedLasso[epro_sgd]": (lambda: skstoch.ConstrainedLasso(
        solver="epro_sgd", max_iter=2000, random_state=0), _reg),
    "ConstrainedLassoCV": (lambda: skstoch.ConstrainedLassoCV(n_radii=3, cv=2, max_iter=30),
                           _reg),
    "LMNNMetric[random]": (lambda: skstoch.LMNNMetric(triplet_strategy="random", max_iter=200,
                                                      random_state=0), _clf),
    "LMNNMetric[knn]": (lambda: skstoch.LMNNMetric(max_iter=200, random_state=0), _clf),
    "OrdinalEmbedding": (lambda: skstoch.OrdinalEmbedding(max_iter=3, random_state=0),
                         lambda n: (make_triplets(n_objects=50, n_triplets=4 * n,
                                                  random_state=0),)),
    "OrdinalEmbedding[objects]": (lambda: skstoch.OrdinalEmbedding(max_iter=3, random_state=0),
                                  lambda n: (make_triplets(n_objects=n // 2, n_triplets=4000,
                                                           random_state=0),)),
    "S3GDClassifier": (lambda: skstoch.S3GDClassifier(n_anchors=20, max_iter=3,
                                                      random_state=0), _clf),
    "S3GDRegressor": (lambda: skstoch.S3GDRegressor(n_anchors=20, max_iter=3,
                                                    random_state=0), _reg),
    "S3GDClassifier[ssgd]": (lambda: skstoch.S3GDClassifier(solver="ssgd", max_iter=3,
                                                            random_state=0), _clf),
    "S3VMClassifier": (lambda: skstoch.S3VMClassifier(n_components=16, max_iter=10,
                                                      random_state=0), _semi),
}


def peak_fit_bytes(make, args):
    """Peak traced memory during ``make().fit(*args)`` (input already allocated)."""
    est = make()
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(*args)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak


def input_bytes(args):
    total = 0
    for a in args:
        if sp.issparse(a):
            total += a.data.nbytes + a.indices.nbytes + a.indptr.nbytes
        else:
            total += np.asarray(a).nbytes
    return total


@pytest.fixture(autouse=True)
def _small_working_memory(monkeypatch):
    """LMNNMetric's blocked neighbour search caps its distance blocks at a working memory
    (64 MB by default, like scikit-learn's ``working_memory``); at these test sizes a whole
    n x n block fits under that cap.  A 1 MB cap makes an n x n term visible, so the test
    checks the design (memory O(block x n)), not the size of the default cap."""
    from skstoch._solvers import _lmnn_triplets

    monkeypatch.setattr(_lmnn_triplets, "_WORKING_MEMORY_MB", 1)


@pytest.mark.parametrize("name", sorted(CASES))
def test_peak_memory_linear_in_n(name):
    make, make_data = CASES[name]
    n1, n2 = N_SMALL, FACTOR * N_SMALL
    d1, d2 = make_data(n1), make_data(n2)
    p1, p2 = peak_fit_bytes(make, d1), peak_fit_bytes(make, d2)
    ratio = p2 / max(p1, 1)
    print(f"\n[memory] {name}: peak {p1 / 1e6:.2f} MB at n={n1}, {p2 / 1e6:.2f} MB at "
          f"n={n2} (x{ratio:.2f}; input {input_bytes(d2) / 1e6:.2f} MB)")
    # linear: at most FACTOR x (plus slack for constant terms); an n x n term gives FACTOR^2
    assert ratio < 1.5 * FACTOR, f"{name}: peak grew x{ratio:.1f} for x{FACTOR} samples"
    # and far below one n x n float64 matrix at the larger size
    assert p2 < 8 * n2 * n2 / 10, f"{name}: peak {p2} bytes is an n x n allocation"
    # a small multiple of the input: no hidden copy per epoch
    assert p2 < 40 * input_bytes(d2) + 4e6, f"{name}: peak {p2} bytes"


def test_cd_copies_dense_columns_once():
    # 'cd' copies the working sets' columns of a dense X into a cache that grows to all of
    # them with the l2 penalty: the copy step made an X[:, missing] temporary beside the
    # old and the grown cache, a peak of 2.0 times X's size (now below 1.25 plus a few
    # columns)
    rng = np.random.RandomState(0)
    X = rng.randn(300, 4000)
    y = (X[:, :20].sum(axis=1) > 0).astype(int)
    est = skstoch.S3GDClassifier(solver="cd", random_state=0)
    gc.collect()
    tracemalloc.start()
    try:
        est.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.4 * X.nbytes, peak / X.nbytes


@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_hybrid_setup_and_check_read_x_in_blocks(layout):
    # eta0='auto' (the Gram matrix of up to 20,000 rows: X times the weights' roots) and the
    # check after a plateau stop (column variances, 4,096 rows at a time) made copies of X:
    # a peak of 1.06 (dense) and 2.14 (CSR) times X's size on 12,000 x 200; both now read
    # X in blocks of 2^16 entries (WIDEN_ELEMENTS)
    X, y = _clf(12_000, d=200)
    if layout == "csr":
        X, y = _sparse((X, y))
    est = skstoch.S3GDClassifier(solver="hybrid", random_state=0)
    peak = peak_fit_bytes(lambda: est, (X, y))
    assert est.n_iter_ < est.max_iter        # a plateau stop: the check ran
    assert peak < 0.75 * input_bytes((X,)), peak / input_bytes((X,))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_wide_sparse_x_is_read_in_blocks_of_stored_entries(monkeypatch, dtype):
    # blocks of 2^16 entries counted as rows times width held one row of a CSR X wider than
    # 2^16 columns: eta0='auto' on the 100,000 x 50,000 text-like benchmark (50 stored
    # entries per row) sliced its 20,000-row subsample row by row in every product
    # of the power iteration (5.8 s of a 6 s fit), and float64_row_blocks widened a
    # float32 one row at a time
    from skstoch._solvers._step_size import gram_spectrum
    from skstoch.utils._dataset import float64_row_blocks
    rng = np.random.RandomState(0)
    n, width, per_row = 2_000, 70_000, 7
    X = sp.csr_matrix((rng.rand(n * per_row).astype(dtype), rng.randint(0, width, n * per_row),
                       np.arange(0, n * per_row + 1, per_row)), shape=(n, width))
    X.sum_duplicates()
    slices = []
    original = type(X).__getitem__

    def counting(self, key):
        slices.append(key)
        return original(self, key)
    monkeypatch.setattr(type(X), "__getitem__", counting)
    lam, _, _ = gram_spectrum(X, np.ones(X.shape[0]), 0, rtol=1e-9)
    # 2,000 rows of 7 stored entries fit one block (2^14 entries): X itself (float64) or
    # one slice per product (float32)
    assert all(key == slice(0, len(slices) and slices[0].stop) for key in slices), slices[:3]
    assert (len(slices) > 0) == (dtype == np.float32)
    gram = (X @ X.T).toarray() / X.shape[0]     # the same nonzero eigenvalues as X^T X / n
    assert np.isclose(lam, np.linalg.eigvalsh(gram)[-1], rtol=1e-3)
    assert len(list(float64_row_blocks(X))) == 1
