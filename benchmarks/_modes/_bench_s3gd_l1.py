"""The l1 and elasticnet modes of ``bench_s3gd.py`` (issue 21.1): time to a relative
suboptimality of 1e-6 of l1-penalised least squares and logistic regression, dense (n >> d) and
sparse wide, for S3GD (``solver='cd'``, the default for l1 penalties, and ``'hybrid'``, the
default before), scikit-learn, skglm and celer, in one run.

The elasticnet mode (``run(l1_ratio=0.5)``, results ``s3gd_elasticnet``) fits the same
problems with the penalty ``alpha (l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2)``, ``alpha =
alpha_max / 20`` with scikit-learn's ``alpha_max`` of the elastic net (that of the lasso divided
by ``l1_ratio``); contenders: S3GD's default for it (``solver='auto'`` runs ``'cd'``),
scikit-learn ``ElasticNet`` and ``LogisticRegression(l1_ratio, solver='saga')``, skglm
``ElasticNet`` and ``SparseLogisticRegression(alpha, l1_ratio)`` (logistic datafit with its
``L1_plus_L2`` penalty), celer ``ElasticNet`` (celer's logistic regression is l1 only).

Every contender is fitted once per ``tol`` of a decreasing list, until a fit is within the
target of a reference optimum (an untimed skstoch cd fit at tol 1e-10) or takes longer than
``SKSTOCH_BENCH_BUDGET`` s (60); each fit is timed (wall and process CPU time), its objective
computed here by one formula, and the time to the target is the shortest time among the
fits that reached it.  ``F*`` is the lowest objective of all fits and the reference.
skglm and celer run in a subprocess of the interpreter ``SKSTOCH_BENCH_PEER_PYTHON`` (default:
this one, e.g. the ``.venv-bench`` of ``benchmarks/README.md``), which times its own fits; skglm is fitted once
untimed first (numba compilation).

Problems (``SKSTOCH_BENCH_L1_SMALL=1``: the small sizes; ``SKSTOCH_BENCH_QUICK=1``: 5,000
rows, 100 dense or 2,000 sparse features):

* dense: Gaussian X, n x d = 100,000 x 500 (small 20,000 x 200), 10% of the features in the
  true model;
* sparse: 50,000 x 20,000 with 0.2% stored entries (small 10,000 x 4,000), 100 true features;

regression with an intercept (``Lasso(alpha)``), logistic regression without (celer's has
none), ``alpha = alpha_max / 20``; the objectives are ``(1/n) sum (x.w + b - y)^2 / 2 +
alpha ||w||_1`` (scikit-learn's ``Lasso``) and ``(1/n) sum log(1 + exp(-y x.w)) + alpha
||w||_1`` (scikit-learn ``C = 1 / (n alpha)``), with the elastic-net penalty above in the
elasticnet mode.
"""
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from _harness import QUICK, run_in_subprocess, stamp, write_results

SMALL = os.environ.get("SKSTOCH_BENCH_L1_SMALL", "0") not in ("", "0")
# (n, d) dense and (n, d, density) sparse: quick, small, full
SIZES = ((5_000, 100), (5_000, 2_000, 0.002)) if QUICK else (
    ((20_000, 200), (10_000, 4_000, 0.002)) if SMALL else
    ((100_000, 500), (50_000, 20_000, 0.002)))
PEER_PYTHON = os.environ.get("SKSTOCH_BENCH_PEER_PYTHON", sys.executable)
TARGET = 1e-6
CD = "skstoch cd (default for l1)"   # solver='auto' runs 'cd' for l1 penalties
CD_ENET = "skstoch cd (default for elasticnet)"   # and for elasticnet with l1_ratio > 0
TOLS = {
    CD: [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8],
    CD_ENET: [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8],
    "skstoch hybrid": [1e-4, 1e-6, 1e-8],
    "sklearn": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8],
    "skglm": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8],
    "celer": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8],
}
RATIO = 1 / 20     # alpha = alpha_max * RATIO
_PEER_VERSIONS = {}
BUDGET = float(os.environ.get("SKSTOCH_BENCH_BUDGET", "60"))   # s: a slower fit ends a sweep


def make_problem(kind, task, seed=0, l1_ratio=1.0):
    rng = np.random.RandomState(seed)
    if kind == "dense":
        n, d = SIZES[0]
        X = rng.randn(n, d)
        k = d // 10
    else:
        n, d, density = SIZES[1]
        X = sp.random(n, d, density=density, format="csr", random_state=rng,
                      data_rvs=lambda size: rng.randn(size))
        k = 100
    w = np.zeros(d)
    w[rng.choice(d, k, replace=False)] = rng.randn(k) * 3
    margin = np.asarray(X @ w).ravel()
    if task == "regression":
        y = margin + 0.5 * np.std(margin) * rng.randn(n) + 1.0
        alpha_max = np.abs(np.asarray(X.T @ (y - y.mean()))).max() / n
    else:
        y = (margin + 0.5 * np.std(margin) * rng.randn(n) > 0).astype(float)
        alpha_max = np.abs(np.asarray(X.T @ (y - 0.5))).max() / n
    alpha_max /= l1_ratio   # scikit-learn's alpha_max of the elastic net
    desc = (f"{kind} {n} x {d}" + ("" if kind == "dense" else f", {X.nnz / n / d:.2%} stored")
            + f", {task}" + ("" if l1_ratio == 1 else f", l1_ratio = {l1_ratio:g}")
            + f", alpha = alpha_max/{1 / RATIO:g}")
    return X, y, alpha_max * RATIO, desc


def penalty(coef, alpha, l1_ratio=1.0):
    """``alpha (l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2)``."""
    return alpha * (l1_ratio * np.abs(coef).sum() + 0.5 * (1 - l1_ratio) * float(coef @ coef))


def objective(X, y, task, alpha, coef, intercept, l1_ratio=1.0):
    p = np.asarray(X @ coef).ravel() + intercept
    if task == "regression":
        return 0.5 * float(np.mean((p - y) ** 2)) + penalty(coef, alpha, l1_ratio)
    return float(np.mean(np.logaddexp(0, -(2 * y - 1) * p))) + penalty(coef, alpha, l1_ratio)


def _reached(X, y, task, alpha, fit, fref, l1_ratio=1.0):
    f = objective(X, y, task, alpha, np.ravel(fit["coef"]), fit["intercept"], l1_ratio)
    return (f - fref) / abs(fref) <= TARGET


def _makers(task, alpha, n):
    """The l1 mode's in-process contenders: ``{label: make(tol)}``."""
    from sklearn.linear_model import Lasso, LogisticRegression

    from skstoch import S3GDClassifier, S3GDRegressor
    return {
        CD: lambda tol: (
            S3GDRegressor(penalty="l1", alpha=alpha, solver="cd", tol=tol, max_iter=200)
            if task == "regression" else
            S3GDClassifier(penalty="l1", alpha=alpha, solver="cd", tol=tol, max_iter=200,
                           fit_intercept=False)),
        "skstoch hybrid": lambda tol: (
            S3GDRegressor(penalty="l1", alpha=alpha, solver="hybrid", tol=tol, max_iter=100,
                          random_state=0)
            if task == "regression" else
            S3GDClassifier(penalty="l1", alpha=alpha, solver="hybrid", tol=tol, max_iter=100,
                           random_state=0, fit_intercept=False)),
        "sklearn": lambda tol: (
            Lasso(alpha=alpha, tol=tol, max_iter=100_000) if task == "regression" else
            LogisticRegression(penalty="l1", C=1 / (n * alpha), solver="liblinear", tol=tol,
                               fit_intercept=False, max_iter=10_000)),
    }


def _makers_enet(task, alpha, n, l1_ratio):
    """The elasticnet mode's in-process contenders: S3GD's default (``solver='auto'``, which
    runs ``'cd'``) and scikit-learn."""
    from sklearn.linear_model import ElasticNet, LogisticRegression

    from skstoch import S3GDClassifier, S3GDRegressor
    enet = dict(penalty="elasticnet", alpha=alpha, l1_ratio=l1_ratio)
    return {
        CD_ENET: lambda tol: (
            S3GDRegressor(**enet, tol=tol) if task == "regression" else
            S3GDClassifier(**enet, tol=tol, fit_intercept=False)),
        "sklearn": lambda tol: (
            ElasticNet(alpha=alpha, l1_ratio=l1_ratio, tol=tol, max_iter=100_000)
            if task == "regression" else
            LogisticRegression(l1_ratio=l1_ratio, C=1 / (n * alpha), solver="saga", tol=tol,
                               fit_intercept=False, max_iter=1_000)),
    }


def _ours(X, y, task, alpha, fref, l1_ratio=1.0):
    n = X.shape[0]
    fits = []
    makers = (_makers(task, alpha, n) if l1_ratio == 1 else
              _makers_enet(task, alpha, n, l1_ratio))
    for label, make in makers.items():
        with warnings.catch_warnings():   # untimed: first-call costs (imports, thread pools)
            warnings.simplefilter("ignore")
            make(TOLS[label][0]).fit(X[:500], y[:500])
        for tol in TOLS[label]:
            est = make(tol)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0, c0 = time.perf_counter(), time.process_time()
                est.fit(X, y)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            fits.append({"label": label, "tol": tol, "seconds": wall, "cpu": cpu,
                         "coef": np.ravel(est.coef_),
                         "intercept": float(np.ravel(est.intercept_)[0])})
            print(f"  {label} tol={tol:g}: {wall:.3f} s", flush=True)
            # tighter tols take longer: the sweep stops at the first fit within the target
            # of the reference optimum (or past the budget)
            if _reached(X, y, task, alpha, fits[-1], fref, l1_ratio) or wall > BUDGET:
                break
    return fits


_PEER_CODE = r"""
import json, sys, time, warnings
import numpy as np, scipy.sparse as sp
warnings.simplefilter("ignore")
import skglm, celer
p = json.loads(sys.stdin.read())
if p["sparse"]:
    X = sp.load_npz(p["path_X"]).tocsr()
else:
    X = np.load(p["path_X"])
y = np.load(p["path_y"])
alpha, task, n, r = p["alpha"], p["task"], X.shape[0], p["l1_ratio"]
def make(lib, tol):
    if task == "regression":
        if r < 1:
            return (skglm.ElasticNet(alpha=alpha, l1_ratio=r, tol=tol) if lib == "skglm"
                    else celer.ElasticNet(alpha=alpha, l1_ratio=r, tol=tol))
        return (skglm.Lasso(alpha=alpha, tol=tol) if lib == "skglm"
                else celer.Lasso(alpha=alpha, tol=tol))
    # celer's LogisticRegression is l1 only (not run with r < 1)
    return (skglm.SparseLogisticRegression(alpha=alpha, l1_ratio=r, tol=tol, fit_intercept=False)
            if lib == "skglm" else celer.LogisticRegression(C=1 / (n * alpha), tol=tol))
libs = ("skglm", "celer") if task == "regression" or r == 1 else ("skglm",)
yy = y if task == "regression" else 2 * y - 1
for lib in libs:   # skglm: numba compilation, untimed
    make(lib, 1e-4).fit(X[:500], yy[:500])
fits = []
for lib in libs:
    for tol in p["tols"][lib]:
        est = make(lib, tol)
        t0, c0 = time.perf_counter(), time.process_time()
        est.fit(X, yy)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        fits.append({"label": lib, "tol": tol, "seconds": wall, "cpu": cpu,
                     "coef": np.ravel(est.coef_).tolist(),
                     "intercept": float(np.ravel(getattr(est, "intercept_", 0.0))[0])})
        w, b = np.ravel(est.coef_), fits[-1]["intercept"]
        pr = np.asarray(X @ w).ravel() + b
        f = (0.5 * np.mean((pr - y) ** 2) if task == "regression"
             else np.mean(np.logaddexp(0, -yy * pr))) + alpha * (
                 r * np.abs(w).sum() + 0.5 * (1 - r) * w @ w)
        if (f - p["fref"]) / abs(p["fref"]) <= p["target"] or wall > p["budget"]:
            break
print(json.dumps({"fits": fits, "versions": {"skglm": skglm.__version__,
                                              "celer": celer.__version__}}))
"""


def _peers(X, y, task, alpha, fref, l1_ratio=1.0):
    with tempfile.TemporaryDirectory() as tmp:
        path_X = str(Path(tmp) / ("X.npz" if sp.issparse(X) else "X.npy"))
        if sp.issparse(X):
            sp.save_npz(path_X, X)
        else:
            np.save(path_X, X)
        path_y = str(Path(tmp) / "y.npy")
        np.save(path_y, y)
        payload = {"path_X": path_X, "path_y": path_y, "sparse": sp.issparse(X),
                   "alpha": alpha, "task": task, "fref": fref, "target": TARGET,
                   "l1_ratio": l1_ratio,
                   "budget": BUDGET,
                   "tols": {"skglm": TOLS["skglm"], "celer": TOLS["celer"]}}
        out = run_in_subprocess(PEER_PYTHON, _PEER_CODE, payload)
    _PEER_VERSIONS.update(out["versions"])
    for f in out["fits"]:
        f["coef"] = np.asarray(f["coef"])
    return out["fits"]


def _reference_optimum(X, y, task, alpha, l1_ratio=1.0):
    """The objective of an untimed skstoch cd fit at tol 1e-10 (the sweeps' early stop;
    the reported F* is the lowest objective of all fits, this one included)."""
    from skstoch import S3GDClassifier, S3GDRegressor
    pen = (dict(penalty="l1") if l1_ratio == 1 else
           dict(penalty="elasticnet", l1_ratio=l1_ratio))
    est = (S3GDRegressor(**pen, alpha=alpha, solver="cd", tol=1e-10, max_iter=500)
           if task == "regression" else
           S3GDClassifier(**pen, alpha=alpha, solver="cd", tol=1e-10, max_iter=500,
                          fit_intercept=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return objective(X, y, task, alpha, np.ravel(est.coef_), float(np.ravel(est.intercept_)[0]),
                     l1_ratio)


def run_cell(kind, task, l1_ratio=1.0):
    X, y, alpha, desc = make_problem(kind, task, l1_ratio=l1_ratio)
    print(desc, flush=True)
    fref = _reference_optimum(X, y, task, alpha, l1_ratio)
    fits = _ours(X, y, task, alpha, fref, l1_ratio)
    try:
        fits += _peers(X, y, task, alpha, fref, l1_ratio)
    except (ImportError, RuntimeError) as err:
        print(f"peers skipped: {err}", flush=True)
    for f in fits:
        f["objective"] = objective(X, y, task, alpha, f["coef"], f["intercept"], l1_ratio)
    fstar = min([f["objective"] for f in fits] + [fref])
    rows = []
    for label in dict.fromkeys(f["label"] for f in fits):
        mine = [f for f in fits if f["label"] == label]
        for f in mine:
            f["rel_subopt"] = (f["objective"] - fstar) / abs(fstar)
        hit = [f for f in mine if f["rel_subopt"] <= TARGET]
        best = min(hit, key=lambda f: f["seconds"]) if hit else None
        rows.append({"label": label, "t_target": best and best["seconds"],
                     "cpu_target": best and best["cpu"], "tol": best and best["tol"],
                     "best_rel_subopt": min(f["rel_subopt"] for f in mine),
                     "fits": [{k: v for k, v in f.items() if k != "coef"} for f in mine]})
    return {"problem": desc, "alpha": alpha, "fstar": fstar, "rows": rows,
            "load_avg": os.getloadavg()[0]}


def run(l1_ratio=1.0):
    """The l1 mode (``l1_ratio=1``) or the elasticnet mode (``l1_ratio < 1``)."""
    cells = [run_cell(kind, task, l1_ratio) for kind in ("dense", "sparse")
             for task in ("regression", "logistic")]
    name = ("s3gd_l1" if l1_ratio == 1 else "s3gd_elasticnet") + ("_small" if SMALL else "")
    payload = stamp({"name": name, "target": TARGET, "cells": cells, "l1_ratio": l1_ratio,
                     "peer_versions": dict(_PEER_VERSIONS)})
    md = markdown(payload)
    write_results(name, payload, md)
    print(md)


def markdown(payload):
    """The ``.md`` twin of a ``s3gd_l1`` or ``s3gd_elasticnet`` payload (its ``notes``, e.g.
    the machine's load, at the end)."""
    name = payload["name"]
    enet = payload.get("l1_ratio", 1.0) < 1
    ref_label, mode = (CD_ENET, "elasticnet") if enet else (CD, "l1")
    peers = ("skglm (and celer for regression; its logistic regression is l1 only)" if enet
             else "skglm and celer")
    md = [f"# {name}: time to {TARGET:g} relative suboptimality, "
          + (f"elastic-net models (l1_ratio = {payload['l1_ratio']:g})" if enet
             else "l1 models"), "",
          "Each contender is fitted once untimed on 500 rows, then at a decreasing list of "
          "`tol` (one fit each, timed) until a fit is within the target of a reference "
          "optimum; the time is the shortest fit whose objective is within the target of F* "
          "(the lowest objective of all fits). Wall times on a loaded shared machine are "
          "inflated by waiting for a core; CPU time (process, all threads) is less so. "
          f"Ratio: to `{ref_label}`. Produced by "
          f"`benchmarks/bench_s3gd.py {mode}` (see `benchmarks/_modes/_bench_s3gd_l1.py`). "
          f"{peers} run in the peer interpreter; skglm's numba compilation is not timed. "
          "skstoch's full gradients run in 2 row-block threads: CPU time is given too.", ""]
    for cell in payload["cells"]:
        ref = next((r["t_target"] for r in cell["rows"] if r["label"] == ref_label), None)
        md += [f"## {cell['problem']}", "",
               f"load average when done: {cell['load_avg']:.1f}", "",
               "| contender | time to target | ratio to skstoch cd | CPU time | tol | best |",
               "|---|---|---|---|---|---|"]
        for r in cell["rows"]:
            t = r["t_target"]
            if t is None:
                cells = "not reached |  |  | "
            else:
                ratio = f"{t / ref:.2f}x" if ref else ""
                cells = f"{t:.3f} s | {ratio} | {r['cpu_target']:.3f} s | {r['tol']:g}"
            md.append(f"| {r['label']} | {cells} | {r['best_rel_subopt']:.1e} |")
        md.append("")
    md += [f"Machine: {json.dumps(payload['machine'])}", "",
           f"Versions: {json.dumps(payload['versions'])}, peers "
           f"{json.dumps(payload['peer_versions'])}", "",
           f"Run on {payload['date_utc']} with `{payload['command']}`.", ""]
    if payload.get("notes"):
        md += [payload["notes"], ""]
    return "\n".join(md)
