"""Dense and CSR row datasets give identical rows, dots and updates."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from skstoch.utils import make_dataset
from skstoch.utils._dataset import _MIN_BLOCK_NNZ, full_margins, full_transpose_product


@pytest.fixture
def matrices(rng):
    X = rng.randn(30, 7)
    X[rng.rand(30, 7) < 0.5] = 0.0
    X[3] = 0.0  # an empty row
    return X, sp.csr_matrix(X)


def test_rows_equal_dense_and_csr(matrices, rng):
    X, Xs = matrices
    dense, sparse = make_dataset(X), make_dataset(Xs)
    assert not dense.is_sparse and sparse.is_sparse
    assert (dense.n_samples, dense.n_features) == (sparse.n_samples, sparse.n_features) == X.shape
    w = rng.randn(7)
    for i in range(X.shape[0]):
        dv, dc = dense.py_row(i)
        sv, sc = sparse.py_row(i)
        np.testing.assert_array_equal(dv, X[i])
        rebuilt = np.zeros(7)
        rebuilt[sc] = sv
        np.testing.assert_array_equal(rebuilt, X[i])
        assert dense.py_dot(i, w) == pytest.approx(X[i] @ w, rel=1e-14, abs=1e-14)
        assert sparse.py_dot(i, w) == pytest.approx(X[i] @ w, rel=1e-14, abs=1e-14)
        assert dense.py_sqnorm(i) == pytest.approx(sparse.py_sqnorm(i), rel=1e-14)
        wd, ws = w.copy(), w.copy()
        dense.py_axpy(i, 0.7, wd)
        sparse.py_axpy(i, 0.7, ws)
        np.testing.assert_allclose(wd, w + 0.7 * X[i], rtol=1e-14)
        np.testing.assert_allclose(ws, wd, rtol=1e-14)
    np.testing.assert_allclose(dense.margins(w, 0.5), X @ w + 0.5, rtol=1e-13)
    np.testing.assert_allclose(sparse.margins(w, 0.5), X @ w + 0.5, rtol=1e-13)


def test_make_dataset_does_not_modify_noncanonical_input():
    # duplicates and unsorted indices: the dataset sums them, the caller's matrix is untouched
    data = np.array([1.0, 2.0, 3.0])
    indices = np.array([2, 0, 2])
    indptr = np.array([0, 3])
    X = sp.csr_matrix((data, indices, indptr), shape=(1, 3))
    before = (X.data.copy(), X.indices.copy())
    ds = make_dataset(X)
    values, cols = ds.py_row(0)
    rebuilt = np.zeros(3)
    np.add.at(rebuilt, cols, values)
    np.testing.assert_array_equal(rebuilt, [2.0, 0.0, 4.0])
    assert len(cols) == 2  # duplicates summed
    np.testing.assert_array_equal(X.data, before[0])
    np.testing.assert_array_equal(X.indices, before[1])


def test_float32_fortran_and_other_sparse_formats(matrices):
    X, _ = matrices
    for variant in [np.asfortranarray(X), X.astype(np.float32), sp.csc_matrix(X), sp.coo_matrix(X)]:
        ds = make_dataset(variant)
        dense = variant.toarray() if sp.issparse(variant) else variant
        expected = np.asarray(dense, dtype=np.float64).sum(axis=1)
        np.testing.assert_allclose(ds.margins(np.ones(7)), expected, rtol=1e-13)


def test_dataset_pickles(matrices):
    for M in matrices:
        ds = make_dataset(M)
        clone = pickle.loads(pickle.dumps(ds))
        np.testing.assert_array_equal(clone.margins(np.arange(7.0)), ds.margins(np.arange(7.0)))


def test_hooks_reject_bad_indices_and_lengths(matrices):
    ds = make_dataset(matrices[0])
    with pytest.raises(IndexError):
        ds.py_row(30)
    with pytest.raises(IndexError):
        ds.py_row(-1)
    with pytest.raises(ValueError, match="wrong length"):
        ds.margins(np.ones(3))
    with pytest.raises(ValueError, match="2-D"):
        make_dataset(np.ones(3))


@pytest.mark.parametrize("n_rows", [40, 2 * _MIN_BLOCK_NNZ // 50 + 7])   # in-line, threaded
def test_full_pass_products_dense_and_csr(rng, n_rows):
    """The row-block products equal ``margins`` bitwise and ``X.T @ r`` to rounding, give the
    same bits for dense and CSR rows and on every call, in the calling thread (small) and in
    threads (large)."""
    X = rng.randn(n_rows, 60)
    X[rng.rand(n_rows, 60) < 0.2] = 0.0
    Xs = sp.csr_matrix(X)
    w, r = rng.randn(60), rng.randn(n_rows)
    products = []
    for ds in (make_dataset(X), make_dataset(Xs)):
        np.testing.assert_array_equal(full_margins(ds, w, 0.5), ds.margins(w, 0.5))
        products.append(full_transpose_product(ds, r))
        np.testing.assert_allclose(products[-1], X.T @ r, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(full_transpose_product(ds, r), products[-1])
    np.testing.assert_array_equal(products[0], products[1])


def test_row_block_hooks_reject_bad_blocks_and_lengths(matrices):
    ds = make_dataset(matrices[1])
    out, w, r = np.zeros(30), np.zeros(7), np.zeros(30)
    for start, end in [(-1, 5), (5, 4), (0, 31)]:
        with pytest.raises(ValueError, match="row block"):
            ds.margins_into(w, 0.0, out, start, end)
        with pytest.raises(ValueError, match="row block"):
            ds.add_transpose_product(r, np.zeros(7), start, end)
    with pytest.raises(ValueError, match="features"):
        ds.margins_into(np.zeros(6), 0.0, out, 0, 30)
    with pytest.raises(ValueError, match="samples"):
        ds.add_transpose_product(np.zeros(29), np.zeros(7), 0, 30)
