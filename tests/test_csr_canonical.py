"""The compiled canonical-CSR check against a row-by-row reference (empty rows included)."""
import numpy as np
import pytest
import scipy.sparse as sp

from skstoch._fast._csr import csr_is_canonical


def _reference(indptr, indices):
    return all(np.all(np.diff(indices[indptr[i]:indptr[i + 1]]) > 0)
               for i in range(len(indptr) - 1))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_csr_is_canonical_matches_reference(dtype):
    rng = np.random.RandomState(0)
    seen = set()
    for _ in range(500):
        r, c = rng.randint(1, 8), rng.randint(1, 8)
        X = sp.random(r, c, density=rng.rand(), format="csr", random_state=rng)
        indices = X.indices.copy()
        if rng.rand() < 0.7 and indices.size:
            indices[rng.randint(indices.size)] = rng.randint(c)
        indptr, indices = X.indptr.astype(dtype), indices.astype(dtype)
        expected = _reference(indptr, indices)
        assert csr_is_canonical(indptr, indices) == expected, (indptr, indices)
        seen.add(expected)
    assert seen == {True, False}


def test_csr_is_canonical_row_boundaries():
    # a fall across a row start (after empty rows) is allowed; one inside a row is not
    indptr = np.array([0, 2, 2, 2, 4, 4], dtype=np.int32)
    assert csr_is_canonical(indptr, np.array([3, 5, 0, 1], dtype=np.int32))
    assert not csr_is_canonical(indptr, np.array([3, 5, 1, 1], dtype=np.int32))
    assert not csr_is_canonical(indptr, np.array([5, 3, 0, 1], dtype=np.int32))
