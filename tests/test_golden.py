"""Golden test: every public estimator x solver, fitted at a fixed seed on small data, gives
bitwise the fitted attributes, ``history_`` (without wall-clock ``time``) and outputs that
were recorded in ``tests/golden_digests.json``.

It pins behaviour while code moves (issue 17): a refactor keeps every digest.  A change that
cannot keep them (two loops merged that had different guards, a renamed history column)
regenerates the file in a commit of its own that says which cases changed, why and by how
much (the stored ``summary`` numbers show the size of a change):

    python tests/test_golden.py --update            # rewrite every case
    python tests/test_golden.py --update CASE ...   # rewrite the named cases only
    python tests/test_golden.py --diff              # list the cases and paths that differ

BLAS runs on one thread while the cases fit, so that the digests do not depend on the
number of cores (a degenerate eigenspace can rotate with the thread count).
"""
import hashlib
import json
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

import skstoch
from skstoch.datasets import make_semisupervised, make_triplets

from test_reproducibility import _clf_data, fitted_state

GOLDEN = Path(__file__).with_name("golden_digests.json")


# ------------------------------------------------------------------------------ data
def _classification(n_classes=2, sparse=False, n=90, d=6, seed=0):
    return _clf_data(seed, n, d, n_classes, sparse, zero_below=0.5)


def _float32(X, y):
    return X.astype(np.float32), y


def _regression(sparse=False, n_targets=1, n=90, d=6, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    coef = rng.randn(d, n_targets)
    coef[3:] = 0.0
    Y = X @ coef + 0.1 * rng.randn(n, n_targets)
    if sparse:
        X[np.abs(X) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    return X, (Y[:, 0] if n_targets == 1 else Y)


def _semi_supervised(sparse=False, n_labeled=20):
    X, y = _classification(2, sparse=sparse, n=120)
    y_semi, _ = make_semisupervised(y, n_labeled=n_labeled, random_state=0)
    return X, y_semi


def _triplets(quadruplets=False):
    return (make_triplets(n_objects=15, n_triplets=300, n_components=2, random_state=0),)


# ------------------------------------------------------------------------------ cases
def _cases():
    """{case id: (estimator factory, data factory)}: every solver of every estimator, the
    losses and penalties that take other kernel paths, sparse input and warm starts."""
    cases = {}

    def add(name, make, data):
        assert name not in cases, name
        cases[name] = (make, data)

    # CGVR
    cgvr = dict(solver="cgvr", max_iter=6, inner_iter=8, random_state=0)
    for solver in ("cgvr", "cg", "svrg", "minibatch_svrg"):
        add(f"CGVRClassifier-{solver}",
            lambda s=solver: skstoch.CGVRClassifier(**{**cgvr, "solver": s}), _classification)
        add(f"CGVRRegressor-{solver}",
            lambda s=solver: skstoch.CGVRRegressor(**{**cgvr, "solver": s}), _regression)
    for loss in ("squared_hinge", "hinge", "squared_error"):
        add(f"CGVRClassifier-cgvr-{loss}",
            lambda l=loss: skstoch.CGVRClassifier(loss=l, alpha=1e-2, **cgvr), _classification)
    for ls in ("batch", "full"):
        add(f"CGVRClassifier-cgvr-line_search={ls}",
            lambda l=ls: skstoch.CGVRClassifier(line_search=l, **cgvr), _classification)
    for beta in ("FR", "PR", "HS", "DY", "none"):
        for solver in ("cgvr", "cg"):
            add(f"CGVRClassifier-{solver}-beta={beta}", lambda b=beta, s=solver:
                skstoch.CGVRClassifier(beta=b, **{**cgvr, "solver": s}), _classification)
    add("CGVRClassifier-cgvr-options",
        lambda: skstoch.CGVRClassifier(w_selection="random", init="uniform", restart="full",
                                       beta="FR", regularize_intercept=True, safeguard=False,
                                       **cgvr), _classification)
    add("CGVRClassifier-cgvr-multiclass-sparse",
        lambda: skstoch.CGVRClassifier(class_weight="balanced", **cgvr),
        lambda: _classification(3, sparse=True))
    add("CGVRClassifier-cgvr-multiclass-ovr",      # multi_class='ovr' (issue 21.2)
        lambda: skstoch.CGVRClassifier(multi_class="ovr", **cgvr),
        lambda: _classification(3))
    add("CGVRRegressor-cgvr-multioutput-sparse",
        lambda: skstoch.CGVRRegressor(**cgvr), lambda: _regression(sparse=True, n_targets=2))
    add("CGVRClassifier-cgvr-n2000", lambda: skstoch.CGVRClassifier(**cgvr),
        lambda: _classification(2, n=2000, d=10))
    add("CGVRClassifier-cgvr-warm_start",
        lambda: _WarmRefit(skstoch.CGVRClassifier(warm_start=True, **cgvr)), _classification)

    # S3GD
    s3gd = dict(n_anchors=8, max_iter=4, random_state=0)
    for solver in ("hybrid", "s3gd", "svrg", "sgd", "ssgd"):
        add(f"S3GDClassifier-{solver}",
            lambda s=solver: skstoch.S3GDClassifier(solver=s, **s3gd), _classification)
        add(f"S3GDRegressor-{solver}",
            lambda s=solver: skstoch.S3GDRegressor(solver=s, **s3gd), _regression)
    add("S3GDClassifier-s3gd-anchor_epochs", lambda: skstoch.S3GDClassifier(
        solver="hybrid", anchor_epochs=2, **s3gd), _classification)
    for penalty in ("l1", "elasticnet"):
        for solver in ("hybrid", "s3gd"):
            add(f"S3GDRegressor-{solver}-{penalty}",
                lambda p=penalty, s=solver: skstoch.S3GDRegressor(
                    penalty=p, alpha=1e-2, solver=s, **s3gd), _regression)
    for loss in ("squared_hinge", "smooth_hinge"):
        add(f"S3GDClassifier-s3gd-{loss}", lambda l=loss: skstoch.S3GDClassifier(
            loss=l, solver="s3gd", **s3gd), _classification)
    for init_step in (None, "line_search"):
        add(f"S3GDClassifier-hybrid-init_step={init_step}",
            lambda i=init_step: skstoch.S3GDClassifier(solver="hybrid", init_step=i,
                                                       alpha=1e-2, **s3gd),
            _classification)
    add("S3GDClassifier-hybrid-auto-alpha=1e-2",
        lambda: skstoch.S3GDClassifier(solver="hybrid", alpha=1e-2, **s3gd), _classification)
    add("S3GDClassifier-s3gd-adaptive-options", lambda: skstoch.S3GDClassifier(
        solver="s3gd", learning_rate="adaptive", kernel_width="paper", anchor_method="random",
        track_objective=True, **s3gd), _classification)
    # S3GD solver='cd' (working-set coordinate descent, issue 21.1)
    for penalty in ("l1", "elasticnet"):
        add(f"S3GDRegressor-cd-{penalty}", lambda p=penalty: skstoch.S3GDRegressor(
            penalty=p, alpha=1e-2, solver="cd", random_state=0), _regression)
        add(f"S3GDClassifier-cd-{penalty}", lambda p=penalty: skstoch.S3GDClassifier(
            penalty=p, alpha=1e-2, solver="cd", random_state=0), _classification)
    add("S3GDClassifier-cd-l1-multiclass-sparse", lambda: skstoch.S3GDClassifier(
        penalty="l1", alpha=1e-2, solver="cd", random_state=0),
        lambda: _classification(3, sparse=True))
    add("S3GDClassifier-hybrid-multiclass-sparse",   # one-vs-rest, the default before 21.2
        lambda: skstoch.S3GDClassifier(solver="hybrid", class_weight="balanced",
                                       multi_class="ovr", **s3gd),
        lambda: _classification(3, sparse=True))
    # multinomial Prox-SVRG (issue 21.2)
    add("S3GDClassifier-hybrid-multinomial",
        lambda: skstoch.S3GDClassifier(solver="hybrid", **s3gd), lambda: _classification(3))
    add("S3GDClassifier-hybrid-multinomial-sparse",
        lambda: skstoch.S3GDClassifier(solver="hybrid", class_weight="balanced", **s3gd),
        lambda: _classification(3, sparse=True))
    add("S3GDClassifier-svrg-multinomial-elasticnet", lambda: skstoch.S3GDClassifier(
        solver="svrg", penalty="elasticnet", alpha=1e-2, multi_class="multinomial", **s3gd),
        lambda: _classification(3))
    add("S3GDClassifier-s3gd-sparse",
        lambda: skstoch.S3GDClassifier(solver="s3gd", **s3gd),
        lambda: _classification(2, sparse=True))
    for solver in ("hybrid", "s3gd", "ssgd"):   # long enough for the auto inner lengths
        add(f"S3GDClassifier-{solver}-n1200", lambda s=solver: skstoch.S3GDClassifier(
            solver=s, **s3gd), lambda: _classification(2, n=1200, d=8))
    add("S3GDRegressor-hybrid-n1200-sparse",
        lambda: skstoch.S3GDRegressor(solver="hybrid", **s3gd),
        lambda: _regression(sparse=True, n=1200, d=8))
    add("S3GDRegressor-hybrid-multioutput-sparse",
        lambda: skstoch.S3GDRegressor(solver="hybrid", **s3gd),
        lambda: _regression(sparse=True, n_targets=2))
    add("S3GDClassifier-hybrid-warm_start",
        lambda: _WarmRefit(skstoch.S3GDClassifier(solver="hybrid", warm_start=True, **s3gd)),
        _classification)
    # the default: solver='auto' is 'cd' below CD_BELOW_ROWS rows, 'cg' for a multinomial fit
    add("S3GDClassifier-auto", lambda: skstoch.S3GDClassifier(random_state=0), _classification)
    add("S3GDClassifier-auto-multinomial", lambda: skstoch.S3GDClassifier(random_state=0),
        lambda: _classification(3))
    add("S3GDClassifier-auto-multinomial-sparse-float32",
        lambda: skstoch.S3GDClassifier(class_weight="balanced", random_state=0),
        lambda: _float32(*_classification(3, sparse=True)))
    add("S3GDRegressor-auto", lambda: skstoch.S3GDRegressor(random_state=0), _regression)

    # ConstrainedLasso
    for solver in ("auto", "fista", "epro_sgd", "epro_orda", "epro_svrg", "sgd", "oneproj"):
        add(f"ConstrainedLasso-{solver}", lambda s=solver: skstoch.ConstrainedLasso(
            l2_reg=1.0, radius=1.0, solver=s, max_iter=900, random_state=0), _regression)
        add(f"ConstrainedLasso-{solver}-sparse", lambda s=solver: skstoch.ConstrainedLasso(
            l2_reg=0.1, radius=0.5, solver=s, max_iter=900, random_state=0),
            lambda: _regression(sparse=True))
    add("ConstrainedLasso-fista-no_working_set", lambda: skstoch.ConstrainedLasso(
        l2_reg=1.0, radius=1.0, solver="fista", working_set=False, random_state=0), _regression)
    add("ConstrainedLasso-epro_orda-gradient_point=x", lambda: skstoch.ConstrainedLasso(
        l2_reg=1.0, radius=1.0, solver="epro_orda", orda_gradient_point="x", use_full_budget=False,
        max_iter=900, random_state=0), _regression)
    add("ConstrainedLasso-fista-warm_start",
        lambda: _WarmRefit(skstoch.ConstrainedLasso(l2_reg=1.0, radius=1.0, warm_start=True, max_iter=40,
                                              random_state=0)),
        _regression)
    for solver in ("fista", "epro_sgd"):
        add(f"ConstrainedLassoCV-{solver}", lambda s=solver: skstoch.ConstrainedLassoCV(
            l2_reg=1.0, n_radii=3, cv=3, solver=s, max_iter=600, random_state=0), _regression)

    # LMNN
    for solver in ("epro_sgd", "epro_orda", "sgd", "oneproj"):
        add(f"LMNNMetric-{solver}", lambda s=solver: skstoch.LMNNMetric(
            n_neighbors=2, solver=s, max_iter=96, random_state=0),
            lambda: _classification(3))
    add("LMNNMetric-epro_sgd-random-identity", lambda: skstoch.LMNNMetric(
        n_neighbors=2, triplet_strategy="random", prior="identity", max_iter=96,
        random_state=0), lambda: _classification(3))
    add("LMNNMetric-epro_orda-low_rank-gradient_point=u", lambda: skstoch.LMNNMetric(
        n_components=3, n_neighbors=2, solver="epro_orda", orda_gradient_point="u",
        prior="none", max_iter=96, random_state=0), lambda: _classification(3))

    # OrdinalEmbedding
    for solver in ("lbfgs", "svrg_sbb", "svrg", "sgd", "gd"):
        add(f"OrdinalEmbedding-{solver}", lambda s=solver: skstoch.OrdinalEmbedding(
            solver=s, max_iter=6, random_state=0), _triplets)
    for loss in ("tste", "gnmds", "ckl", "soe"):
        for solver in ("lbfgs", "svrg_sbb"):
            add(f"OrdinalEmbedding-{solver}-{loss}",
                lambda l=loss, s=solver: skstoch.OrdinalEmbedding(
                    loss=l, solver=s, max_iter=6, random_state=0), _triplets)
    add("OrdinalEmbedding-svrg_sbb-dense-epsilon=0", lambda: skstoch.OrdinalEmbedding(
        solver="svrg_sbb", inner_update="dense", epsilon=0.0, max_iter=6, random_state=0),
        _triplets)

    # S3VM
    s3vm = dict(n_components=16, batch_size=16, max_iter=20, random_state=0)
    add("S3VMClassifier-default-cv", lambda: skstoch.S3VMClassifier(**s3vm),
        lambda: _semi_supervised(n_labeled=40))
    add("S3VMClassifier-scale", lambda: skstoch.S3VMClassifier(gamma="scale", **s3vm),
        _semi_supervised)
    add("S3VMClassifier-paper-options", lambda: skstoch.S3VMClassifier(
        gamma=0.5, C_star="paper", manifold_weight=0.0, class_balance=False,
        learning_rate="invscaling", store_random_features=False, **s3vm), _semi_supervised)
    for loss in ("squared_hinge", "ramp", "exp"):
        add(f"S3VMClassifier-{loss}", lambda l=loss: skstoch.S3VMClassifier(
            gamma="scale", unlabeled_loss=l, **s3vm), _semi_supervised)
    add("S3VMClassifier-theory-average-restarts", lambda: skstoch.S3VMClassifier(
        gamma="scale", learning_rate="theory", average=True, n_restarts=2, **s3vm),
        _semi_supervised)
    add("S3VMClassifier-sparse", lambda: skstoch.S3VMClassifier(gamma="scale", **s3vm),
        lambda: _semi_supervised(sparse=True))
    return cases


class _WarmRefit:
    """Fit once with ``max_iter`` halved, then again (warm start) with the full budget."""

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, *args):
        full = self.estimator.max_iter
        self.estimator.set_params(max_iter=max(1, full // 2)).fit(*args)
        return self.estimator.set_params(max_iter=full).fit(*args)


CASES = _cases()


# ------------------------------------------------------------------------------ digests
def _outputs(est, args):
    X = args[0]
    out = {}
    if isinstance(est, skstoch.OrdinalEmbedding):
        out["predict"] = est.predict(X)
        return out
    for method in ("predict", "decision_function", "predict_proba", "transform"):
        try:
            out[method] = getattr(est, method)(X)
        except AttributeError:  # absent, or unavailable for this loss
            pass
    return out


def _leaves(obj, path=""):
    """(path, canonical bytes) for every leaf of a nested fitted state."""
    if isinstance(obj, dict):
        for key in sorted(obj, key=str):
            yield from _leaves(obj[key], f"{path}.{key}" if path else str(key))
    elif isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            yield from _leaves(item, f"{path}[{i}]")
    elif sp.issparse(obj):
        obj = obj.tocsr()
        yield from _leaves({"shape": np.array(obj.shape), "indptr": obj.indptr,
                            "indices": obj.indices, "data": obj.data}, path)
    elif isinstance(obj, (np.ndarray, np.generic)):
        arr = np.ascontiguousarray(obj)
        head = f"{arr.dtype.str}{arr.shape}".encode()
        body = pickle.dumps(arr.tolist()) if arr.dtype.kind == "O" else arr.tobytes()
        yield path, head + body
    elif isinstance(obj, float):
        yield path, np.float64(obj).tobytes()
    elif obj is None or isinstance(obj, (bool, int, str)):
        yield path, repr(obj).encode()
    else:
        yield path, pickle.dumps(obj, protocol=4)


def _summary(state, outputs):
    """A few readable numbers, to say by how much a changed case moved."""
    summary = {}
    hist = state.get("history_")
    if hist:
        h = hist[0]
        for key in ("objective", "loss_estimate", "snapshot_objective", "loss"):
            if key in h and len(h[key]):
                summary[f"history[0].{key}[-1]"] = float(np.asarray(h[key])[-1])
                break
    for key in ("coef_", "components_", "embedding_", "radius_"):
        if key in state:
            summary[f"norm({key})"] = float(np.linalg.norm(np.asarray(state[key], float)))
    if "n_iter_" in state:
        summary["n_iter_"] = int(np.max(state["n_iter_"]))
    for method, val in outputs.items():
        summary[f"mean({method})"] = float(np.mean(np.asarray(val, dtype=float)))
    return summary


def compute(case):
    make, data = CASES[case]
    args = data()
    with warnings.catch_warnings(), threadpool_limits(limits=1):
        warnings.simplefilter("ignore")
        fitted = make().fit(*args)
        est = getattr(fitted, "estimator", fitted)
        state = fitted_state(est)
        outputs = _outputs(est, args)
    digests = {path: hashlib.sha256(blob).hexdigest()[:16]
               for path, blob in _leaves({"fitted": state, "outputs": outputs})}
    return {"digests": digests, "summary": _summary(state, outputs)}


def _load():
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case):
    golden = _load()
    assert case in golden, (f"no golden digest for {case}: run "
                            f"`python tests/test_golden.py --update {case}`")
    got = compute(case)
    expected = golden[case]["digests"]
    changed = sorted(p for p in set(expected) | set(got["digests"])
                     if expected.get(p) != got["digests"].get(p))
    assert not changed, (
        f"{case}: {len(changed)} digests changed: {changed[:12]}; summary now "
        f"{got['summary']} vs golden {golden[case]['summary']}")


def test_golden_file_has_no_stale_cases():
    stale = set(_load()) - set(CASES)
    assert not stale, f"golden cases without a test case (remove them): {sorted(stale)}"


def _main(argv):
    golden = _load()
    if argv[:1] == ["--diff"]:
        for case in sorted(CASES):
            got = compute(case)
            exp = golden.get(case, {}).get("digests", {})
            diff = sorted(p for p in set(exp) | set(got["digests"])
                          if exp.get(p) != got["digests"].get(p))
            if diff:
                print(f"{case}: {diff}\n  now    {got['summary']}\n  golden "
                      f"{golden.get(case, {}).get('summary')}")
        return
    if argv[:1] != ["--update"]:
        raise SystemExit(__doc__)
    names = argv[1:] or sorted(CASES)
    unknown = set(names) - set(CASES)
    if unknown:
        raise SystemExit(f"unknown cases: {sorted(unknown)}")
    if not argv[1:]:
        golden = {}
    for case in names:
        golden[case] = compute(case)
        print(case, golden[case]["summary"])
    GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    _main(sys.argv[1:])
