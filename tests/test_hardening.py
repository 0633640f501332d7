"""Hostile sparse input and input policy (issue 18.1, 18.5, 18.6).

Every case runs in a forked child under an address-space cap and a wall-clock limit
(tests/_isolation.py), so a crash or a hang is a failure naming the case.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from _isolation import describe, run_isolated
from test_fuzz import CORRUPTIONS, SPECS, _base, _triplets, corrupt_sparse, make_estimator

SPARSE = sorted(n for n, spec in SPECS.items() if spec[1] in ("clf", "reg", "semi"))
FEATURES = sorted(n for n, spec in SPECS.items() if spec[1] != "ordinal")


def _data(name, seed=0, sparsity=0.5):
    task = SPECS[name][1]
    if task == "ordinal":    # triplets (X) and no responses
        return _triplets(np.random.default_rng(seed)), None
    X, y = _base("clf" if task == "metric" else task, np.random.default_rng(seed))
    X[np.abs(X) < sparsity] = 0.0
    return X, y


_WARMED = set()


def warm_up(name):
    """Fit ``name`` once in this process, so the lazy imports of its first fit are paid here
    and not again in every forked child."""
    if name not in _WARMED:
        X, y = _data(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _first_method(make_estimator(name).fit(X, y))(X)
            if name in SPARSE:
                _first_method(make_estimator(name).fit(sp.csr_matrix(X), y))(sp.csr_matrix(X))
        _WARMED.add(name)


def _first_method(est):
    for meth in ("decision_function", "transform", "predict"):
        if hasattr(est, meth):
            return getattr(est, meth)
    raise AssertionError(type(est).__name__)  # pragma: no cover


def _corrupted_outcomes(name, stage, kinds):
    """{kind: (exception type, message) or 'accepted' or a crash description}: all kinds in
    one forked child, each kind in its own child again when that one crashes (to name it)."""
    X, y = _data(name)

    def case():
        out = {}
        for kind in kinds:
            bad = corrupt_sparse(X, kind)
            saved = (bad.data.copy(), bad.indices.copy(), bad.indptr.copy())
            est = make_estimator(name)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if stage == "fit":
                        est.fit(bad, y)
                    else:
                        _first_method(est.fit(X, y))(bad)
                out[kind] = "accepted"
            except Exception as exc:  # noqa: BLE001 - judged by the test
                out[kind] = (type(exc).__name__, str(exc))
            if not all(np.array_equal(u, v) for u, v in
                       zip(saved, (bad.data, bad.indices, bad.indptr))):
                out[kind] = "the caller's matrix was modified"
        return out

    result = run_isolated(case)
    if result["status"] == "ok":
        return result["value"]
    if len(kinds) == 1:
        return {kinds[0]: describe(result)}
    merged = {}
    for kind in kinds:
        merged.update(_corrupted_outcomes(name, stage, [kind]))
    return merged


@pytest.mark.parametrize("stage", ["fit", "predict"])
@pytest.mark.parametrize("name", FEATURES)
def test_corrupted_sparse_is_a_value_error(name, stage):
    warm_up(name)
    outcomes = _corrupted_outcomes(name, stage, CORRUPTIONS)
    bad = []
    for kind in CORRUPTIONS:
        got = outcomes[kind]
        if not (isinstance(got, tuple) and got[0] == "ValueError"
                and ("sparse" in got[1] or name == "LMNNMetric")):
            bad.append(f"{name} {stage} {kind}: {got}")
    assert not bad, "\n".join(bad)


def _non_canonical(X):
    """X as CSR with every value split in two duplicates, columns in decreasing order in each
    row, and scipy's cached flag wrongly saying canonical."""
    A = sp.csr_matrix(X)
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    idx = np.concatenate([A.indices, A.indices])
    vals = np.concatenate([0.75 * A.data, 0.25 * A.data])
    r = np.concatenate([rows, rows])
    order = np.lexsort((-idx, r))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=A.shape[0]))])
    B = sp.csr_matrix((vals[order], idx[order], indptr), shape=A.shape)
    B.has_canonical_format = True
    return B


@pytest.mark.parametrize("name", SPARSE)
def test_non_canonical_sparse_fits_as_its_canonical_form(name):
    X, y = _data(name, sparsity=0.3)
    B = _non_canonical(X)
    C = B.copy()
    C.has_sorted_indices = False
    C.has_canonical_format = False
    C.sum_duplicates()
    saved = (B.data.copy(), B.indices.copy())
    outs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for M in (B, C):
            est = make_estimator(name).fit(M, y)
            outs.append((_first_method(est)(X), _first_method(est)(M)))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert np.array_equal(saved[0], B.data) and np.array_equal(saved[1], B.indices)


WEIGHTED = sorted(n for n, spec in SPECS.items() if spec[1] in ("clf", "reg"))
REGRESSORS = sorted(n for n, spec in SPECS.items() if spec[1] == "reg")
MAX_RUNTIME_WARNINGS = 5


@pytest.mark.parametrize("where", ["fit_X", "predict_X", "sample_weight", "y"])
@pytest.mark.parametrize("name", FEATURES)
def test_numeric_strings_are_rejected(name, where):
    if where == "sample_weight" and name not in WEIGHTED:
        pytest.skip("no sample_weight")
    if where == "y" and name not in REGRESSORS:
        pytest.skip("string labels are valid classes")
    warm_up(name)
    X, y = _data(name)

    def case():
        est = make_estimator(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if where == "fit_X":
                est.fit(X.astype(str), y)
            elif where == "sample_weight":
                est.fit(X, y, sample_weight=np.ones(len(y)).astype(str))
            elif where == "y":
                est.fit(X, y.astype(str))
            else:
                _first_method(est.fit(X, y))(X.astype(str))

    result = run_isolated(case)
    assert result["status"] == "raised", f"{name} {where}: {describe(result)}"
    assert result["exc_type"] in ("ValueError", "TypeError"), describe(result)
    assert "string" in result["message"], result["message"]


@pytest.mark.parametrize("scale", [1e-320, 1e-200, 0.1, 3.0, 1e250])
@pytest.mark.parametrize("name", WEIGHTED)
def test_uniform_weights_of_any_scale_fit_as_unit_weights(name, scale):
    # bitwise: 0.1 and 3.0 differed in the last bits (ConstrainedLassoCV 2.6e-14 relative
    # at 3.0, CGVRClassifier 4e-13 at 0.1), the rounding of n / sum(weights)
    warm_up(name)
    X, y = _data(name)

    def case():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            a = make_estimator(name).fit(X, y, sample_weight=np.full(len(y), scale))
            b = make_estimator(name).fit(X, y)
        return _first_method(a)(X), _first_method(b)(X)

    result = run_isolated(case)
    assert result["status"] == "ok", f"{name}: {describe(result)}"
    np.testing.assert_array_equal(*result["value"])
    assert result["runtime_warnings"] <= MAX_RUNTIME_WARNINGS


@pytest.mark.parametrize("weight", [np.inf, np.nan, -2.0, -0.5])
@pytest.mark.parametrize("name", sorted(n for n, spec in SPECS.items() if spec[1] == "clf"))
def test_bad_class_weight_is_named(name, weight):
    # class weights multiply sample_weight after its checks: inf, nan and negative ones
    # reached the solvers (DivergenceError "decrease the step size", kernel argument errors,
    # "every sample has weight zero", or 214 iterations and then a divergence)
    X, y = _data(name)
    est = make_estimator(name).set_params(class_weight={0: weight, 1: 1.0})
    with pytest.raises(ValueError, match=r"class_weight must be finite and non-negative, "
                                         r"got \{0: "):
        est.fit(X, y)


@pytest.mark.parametrize("name", REGRESSORS)
def test_sparse_y_is_refused_as_ridge_refuses_it(name):
    X, y = _data(name)
    with pytest.raises(TypeError, match="Sparse data was passed for y, but dense data is "
                                        "required"):
        make_estimator(name).fit(X, sp.csr_matrix(y[:, None]))


@pytest.mark.parametrize("weight, message", [(np.nan, "contains NaN"),
                                             (np.inf, "contains infinity")])
@pytest.mark.parametrize("name", WEIGHTED)
def test_a_number_as_sample_weight_must_be_finite(name, weight, message):
    # scikit-learn fills a number in unchecked: inf fitted as unit weights, nan raised
    # "every sample has weight zero"
    X, y = _data(name)
    with pytest.raises(ValueError, match=message):
        make_estimator(name).fit(X, y, sample_weight=weight)


@pytest.mark.parametrize("name", REGRESSORS)
def test_a_missing_target_in_an_object_y_is_named(name):
    # None in an object y passes scikit-learn's check and became NaN: the error was
    # "y is too large in magnitude for float64 (max |y| = nan)"
    X, y = _data(name)
    y = y.astype(object)
    y[-1] = None
    with pytest.raises(ValueError, match="Input y contains NaN"):
        make_estimator(name).fit(X, y)


@pytest.mark.parametrize("name", REGRESSORS)
def test_a_target_whose_squares_overflow_is_named(name):
    # CGVR and S3GD raised "the objective became inf at record 0; decrease the step size
    # (eta0 / learning rate)": no step had been taken, and 'cg' has no eta0
    X, y = _data(name)
    with pytest.raises(ValueError, match=r"y is too large in magnitude .*max \|y\| = "):
        make_estimator(name).fit(X, y * 1e160)


@pytest.mark.parametrize("where", ["fit", "predict", "y"])
@pytest.mark.parametrize("name", FEATURES)
def test_huge_finite_inputs_give_finite_outputs_or_a_clear_error(name, where):
    if where == "y" and name not in REGRESSORS:
        pytest.skip("a classifier's y holds class labels: huge values are only a regressor's "
                    "target")
    warm_up(name)
    X, y = _data(name)

    def case():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            if where == "fit":
                est = make_estimator(name).fit(X * 1e300, y)
                return _first_method(est)(X * 1e300)
            if where == "y":
                return _first_method(make_estimator(name).fit(X, y * 1e300))(X)
            return _first_method(make_estimator(name).fit(X, y))(X * 1e300)

    result = run_isolated(case)
    assert result["status"] in ("ok", "raised"), f"{name} {where}: {describe(result)}"
    if result["status"] == "raised":
        assert result["exc_type"] in ("ValueError", "TypeError", "DivergenceError"), \
            describe(result)
    else:
        assert np.all(np.isfinite(result["value"])), f"{name} {where}: non-finite output"
    assert result["runtime_warnings"] <= MAX_RUNTIME_WARNINGS, result["runtime_warnings"]


def test_check_allocation_names_the_input_and_size():
    from skstoch.utils import check_allocation

    check_allocation(1024, "n_components=1")
    with pytest.raises(ValueError, match=r"n_components=2\*\*60 implies allocating .*EiB|PiB"):
        check_allocation(8 * 2 ** 60, "n_components=2**60")


@pytest.mark.parametrize("case", ["ordinal_large_index", "ordinal_n_components",
                                  "s3vm_n_components", "lasso_cv_n_radii"])
def test_user_controlled_sizes_are_guarded(case):
    import skstoch

    rng = np.random.default_rng(0)
    X, y = _base("clf", rng)

    def run():
        if case == "ordinal_large_index":
            skstoch.OrdinalEmbedding(max_iter=2).fit(np.array([[0, 1, 2 * 10 ** 9]]))
        elif case == "ordinal_n_components":
            skstoch.OrdinalEmbedding(n_components=2 ** 40, max_iter=2).fit(
                np.array([[0, 1, 2], [1, 2, 0]]))
        elif case == "s3vm_n_components":
            yy = y.copy()
            yy[::3] = -1
            skstoch.S3VMClassifier(n_components=2 ** 40, max_iter=5).fit(X, yy)
        else:
            skstoch.ConstrainedLassoCV(n_radii=2 ** 40, cv=2).fit(X, X[:, 0])

    result = run_isolated(run, timeout=30)
    assert result["status"] == "raised", f"{case}: {describe(result)}"
    assert isinstance(result.get("exc"), ValueError), describe(result)
    named = {"ordinal_large_index": "n_objects", "ordinal_n_components": "n_components",
             "s3vm_n_components": "n_components",
             "lasso_cv_n_radii": "n_radii"}[case]
    assert named in result["message"], result["message"]


@pytest.mark.parametrize("split", ["test_beyond_n", "test_negative", "test_empty",
                                   "train_float"])
def test_user_cv_with_bad_indices_is_a_value_error(split):
    import skstoch

    X, y = _base("reg", np.random.default_rng(0))
    train, test = np.arange(20), np.arange(20, 30)
    if split == "test_beyond_n":
        test = np.arange(20, 35)
    elif split == "test_negative":
        test = np.array([-1, 25])
    elif split == "test_empty":
        test = np.array([], dtype=int)
    else:
        train = np.array([0.5, 1.0])
    with pytest.raises(ValueError, match="cv|fold|index|indices|split"):
        skstoch.ConstrainedLassoCV(n_radii=3, cv=[(train, test)], max_iter=50).fit(X, y)


TAMPER_CHECKED = sorted(SPECS)


@pytest.mark.parametrize("name", TAMPER_CHECKED)
def test_tampered_fitted_state_is_a_clear_error(name):
    """Every fitted array truncated (first axis, last axis), cast to float32 or replaced by a
    scalar: each method either works or raises ValueError/TypeError (issue 18.4)."""
    warm_up(name)
    X, y = _data(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make_estimator(name).fit(X, y)
    methods = [m for m in SPECS[name][2] if hasattr(est, m)]
    attrs = [k for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")
             and isinstance(v, np.ndarray) and v.size > 1]

    def case():
        out = []
        for attr in attrs:
            for how in ("first_axis", "last_axis", "scalar", "float32"):
                v = getattr(est, attr)
                setattr(est, attr, v[:-1] if how == "first_axis" else v[..., :-1]
                        if how == "last_axis" else v.astype(np.float32) if how == "float32"
                        else v.ravel()[:1].reshape(()))
                for meth in methods:
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            (est.score(X, y) if meth == "score" and y is not None
                             else getattr(est, meth)(X))
                    except (ValueError, TypeError):
                        pass
                    except Exception as exc:  # noqa: BLE001 - the failure reported
                        out.append(f"{attr} {how} {meth}: {type(exc).__name__}: {exc}")
                setattr(est, attr, v)
        return out

    result = run_isolated(case)
    assert result["status"] == "ok", f"{name}: {describe(result)}"
    assert result["value"] == [], "\n".join(result["value"])
