"""encode_classes (the class codes of every classifier fit) equals np.unique + searchsorted."""
import numpy as np
import pytest

from skstoch.base import encode_classes

rng = np.random.RandomState(0)
CASES = [
    rng.randint(0, 2, 1000),
    rng.randint(-5, 5, 500).astype(np.int8),
    np.array([127, -128, 0, 127], dtype=np.int8),
    np.array([2**63 - 1, 2**63 - 2, 2**63 - 1]),
    np.array([-2**63, -2**63 + 4, -2**63]),
    np.array([2**63 - 1, -2**63, 0]),                                   # wide span: np.unique
    np.array([2**64 - 1, 2**64 - 3, 2**63 + 1, 2**63], dtype=np.uint64),
    np.array([2**63, 2**63 - 1], dtype=np.uint64),
    rng.randint(0, 7, 50).astype(np.uint16),
    np.array([3, 3, 9], dtype=np.int32),
    np.array([7]),
    np.array([0.5, 2.0, 0.5]),
    np.array(["b", "a", "b"]),
    np.array([True, False, True]),
]


@pytest.mark.parametrize("y", CASES, ids=[f"{c.dtype}-{i}" for i, c in enumerate(CASES)])
def test_encode_classes_equals_unique_searchsorted(y):
    classes, codes = encode_classes(y)
    expected = np.unique(y)
    assert classes.dtype == expected.dtype
    np.testing.assert_array_equal(classes, expected)
    np.testing.assert_array_equal(codes, np.searchsorted(expected, y))
    assert codes.dtype == np.intp


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_one_vs_rest_equals_where(n_classes):
    from skstoch.base import ClassTargets, one_vs_rest

    codes = np.random.RandomState(1).randint(0, n_classes, 200).astype(np.intp)
    for head in range(n_classes):
        expected = np.where(codes == head, 1.0, -1.0)
        for got in (one_vs_rest(codes, head, n_classes), one_vs_rest(codes, head),
                    ClassTargets(codes, range(n_classes))[head]):
            assert got.dtype == np.float64
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", ["CGVRClassifier", "S3GDClassifier"])
def test_labels_of_mixed_types_are_a_clear_value_error(name):
    # np.unique sorted the labels before check_classification_targets ran: Python's
    # "'<' not supported between instances of 'str' and 'int'"
    import skstoch
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = np.array([1 if v > 0 else "a" for v in X[:, 0]], dtype=object)
    with pytest.raises(ValueError, match="Unknown label type"):
        getattr(skstoch, name)().fit(X, y)
