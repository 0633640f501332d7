"""A sparse X is checked once per fit: one O(nnz) integrity check and one canonical-form scan,
however many helpers (validate_data, make_dataset, the S3GD setup) convert it afterwards."""
import pickle
import warnings
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

import skstoch.utils._validation as validation
from skstoch.linear_model import (CGVRClassifier, CGVRRegressor, S3GDClassifier,
                                  S3GDRegressor)
from skstoch.utils import canonical_csr, make_dataset


@pytest.fixture
def counts(monkeypatch):
    seen = Counter()
    integrity, canonical = validation.check_sparse_integrity, validation._csr_is_canonical

    def count_integrity(*args, **kwargs):
        seen["integrity"] += 1
        return integrity(*args, **kwargs)

    def count_canonical(*args, **kwargs):
        seen["canonical"] += 1
        return canonical(*args, **kwargs)

    monkeypatch.setattr(validation, "check_sparse_integrity", count_integrity)
    monkeypatch.setattr(validation, "_csr_is_canonical", count_canonical)
    return seen


def _data(n_classes):
    rng = np.random.RandomState(0)
    X = sp.random(120, 15, density=0.3, format="csr", random_state=rng)
    y = rng.randint(n_classes, size=120) if n_classes else rng.randn(120)
    return X, y


@pytest.mark.parametrize("make, n_classes", [
    (lambda: S3GDClassifier(max_iter=2), 2),
    (lambda: S3GDClassifier(max_iter=2), 3),                    # multinomial
    (lambda: S3GDClassifier(max_iter=2, multi_class="ovr"), 3),
    (lambda: S3GDRegressor(max_iter=2), 0),
    (lambda: CGVRClassifier(max_iter=2), 2),
    (lambda: CGVRClassifier(max_iter=2), 3),                    # multinomial
    (lambda: CGVRRegressor(max_iter=2), 0),
], ids=["s3gd-binary", "s3gd-multinomial", "s3gd-ovr", "s3gd-regressor", "cgvr-binary",
        "cgvr-multinomial", "cgvr-regressor"])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_fit_checks_x_once(counts, make, n_classes, fmt):
    X, y = _data(n_classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make().fit(X.asformat(fmt), y)
    assert counts == {"integrity": 1, "canonical": 1}


def test_canonical_csr_marks_only_its_result(counts):
    X, _ = _data(2)
    Y = canonical_csr(X)
    assert Y is not X and Y.indices is X.indices         # no copy of the arrays
    assert canonical_csr(Y) is Y and make_dataset(Y).n_samples == X.shape[0]
    assert counts == {"integrity": 1, "canonical": 1}
    canonical_csr(X)                                       # the caller's object: checked again
    assert counts == {"integrity": 2, "canonical": 2}


@pytest.mark.parametrize("derive", [lambda Y: pickle.loads(pickle.dumps(Y)),
                                    lambda Y: Y.copy(), lambda Y: Y[:]],
                         ids=["pickled", "copy", "slice"])
def test_derived_matrices_are_checked_again(derive):
    Y = canonical_csr(_data(2)[0])
    Z = derive(Y)
    Z.indices[0] = Z.shape[1]       # corrupted after the check
    with pytest.raises(ValueError, match="corrupted sparse"):
        make_dataset(Z)


@pytest.mark.parametrize("name", ["ConstrainedLasso", "S3VMClassifier"])
def test_other_sparse_fits_check_x_once(counts, name):
    from skstoch import ConstrainedLasso, S3VMClassifier
    X, y = _data(2)
    if name == "S3VMClassifier":     # S3VM checked X once per iteration before (33 checks)
        est, y = S3VMClassifier(max_iter=3), np.where(np.arange(len(y)) < 60, -1, y)
    else:
        est, y = ConstrainedLasso(), _data(0)[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    assert counts == {"integrity": 1, "canonical": 1}


@pytest.mark.parametrize("dtype", [np.uint32, np.int16, np.uint64, np.int8])
def test_any_integer_index_dtype_fits_as_int32(dtype):
    # scipy keeps index arrays of any integer dtype once set; the compiled canonical-form
    # scan accepts int32 / int64 only and raised "Function call with ambiguous argument
    # types" (a TypeError naming no input) in fit and predict
    X, y = _data(2)
    odd = X.copy()
    odd.indices, odd.indptr = X.indices.astype(dtype), X.indptr.astype(np.int64)
    for Est in (CGVRClassifier, S3GDClassifier):
        reference = Est(random_state=0).fit(X, y)
        est = Est(random_state=0).fit(odd, y)
        np.testing.assert_array_equal(est.coef_, reference.coef_)
        np.testing.assert_array_equal(est.decision_function(odd),
                                      reference.decision_function(X))
    assert odd.indices.dtype == dtype      # the caller's matrix is left as it was
