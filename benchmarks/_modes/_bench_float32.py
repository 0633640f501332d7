"""float32 X without a float64 copy (issue 21.4): tracemalloc peak (bytes allocated during the
fit, X itself not counted), best wall time of alternated fits and the largest coefficient
difference of an estimator on float32 X against the same values in float64.

    PYTHONPATH=. python benchmarks/_modes/_bench_float32.py [Estimator] [dense|csr] [n] [d]

Defaults: CGVRClassifier, dense, 200,000 x 100 (X: 80 MB in float32).  CSR: about 30% of the
entries kept.  Estimator: a class of skstoch fitted with ``random_state=0``, or a key of
:data:`SPECS` (other parameters, regression or 3-class targets).  :func:`run_all` runs the
rows of ``bench_cgvr.py float32``.  Timings on a loaded machine are noisy:
read the ratio of one run.  :func:`main` prints its report and returns it as a dict (the row
of ``results/cgvr_float32``, written by ``bench_cgvr.py float32``).
"""
import os
import sys
import time
import tracemalloc

import numpy as np
import scipy.sparse as sp

import skstoch


# name -> (class, parameters, target: "binary", "regression" or "3 classes", timed repeats)
SPECS = {
    "ConstrainedLasso": ("ConstrainedLasso", dict(radius=2.0), "regression", 3),
    "ConstrainedLasso-epro_svrg": ("ConstrainedLasso", dict(radius=2.0, solver="epro_svrg"),
                                   "regression", 3),
    "ConstrainedLassoCV": ("ConstrainedLassoCV", dict(n_radii=5, cv=3), "regression", 1),
    "S3GDRegressor-cd": ("S3GDRegressor", dict(solver="cd", penalty="l1", alpha=1e-2),
                         "regression", 3),
    # multinomial log loss (the default for more than two classes)
    "CGVRClassifier-multinomial": ("CGVRClassifier", {}, "3 classes", 3),
    "S3GDClassifier-multinomial": ("S3GDClassifier", {}, "3 classes", 1),
    # its 'coefficients': metric_ (rows of _bench_lmnn_float32.py)
    "LMNNMetric": ("LMNNMetric", {}, "3 classes", 3),
}

# the rows of ``bench_cgvr.py float32`` (estimator, layout)
ROWS = ([("CGVRClassifier", layout) for layout in ("dense", "csr")]
        + [("S3GDClassifier", "dense")]
        + [(name, layout) for name in ("CGVRClassifier-multinomial",
                                       "S3GDClassifier-multinomial", "ConstrainedLasso",
                                       "ConstrainedLasso-epro_svrg", "S3GDRegressor-cd",
                                       "ConstrainedLassoCV")
           for layout in ("dense", "csr")])


def _data(n, d, sparse, target="binary"):
    rng = np.random.RandomState(0)
    X32 = rng.randn(n, d).astype(np.float32)
    if sparse:
        X32[rng.rand(n, d) > 0.3] = 0.0
    y = (X32[:, 0] + rng.randn(n) > 0).astype(int)
    if target == "3 classes":
        y = y + (X32[:, 1] > 0.5)
    elif target == "regression":
        y = X32[:, :5].astype(np.float64) @ np.arange(1.0, 6.0) + rng.randn(n)
    X64 = X32.astype(np.float64)
    if sparse:
        X32, X64 = sp.csr_matrix(X32), sp.csr_matrix(X64)
    x_bytes = X32.data.nbytes + X32.indices.nbytes if sparse else X32.nbytes
    return X32, X64, y, x_bytes


def main(name="CGVRClassifier", layout="dense", n=200_000, d=100, repeats=3):
    cls_name, params, target, repeats = SPECS.get(name, (name, {}, "binary", repeats))
    X32, X64, y, x_bytes = _data(n, d, layout == "csr", target)
    cls = getattr(skstoch, cls_name)

    def make():
        return cls(random_state=0, **params)

    make().fit(X32[:300], y[:300])   # imports and caches outside the counts
    peak, coef = {}, {}
    for key, X in (("float64", X64), ("float32", X32)):
        tracemalloc.start()
        est = make().fit(X, y)
        coef[key] = est.metric_ if hasattr(est, "metric_") else est.coef_
        peak[key] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    times = {"float64": [], "float32": []}
    for _ in range(repeats):
        for key, X in (("float64", X64), ("float32", X32)):
            start = time.perf_counter()
            make().fit(X, y)
            times[key].append(time.perf_counter() - start)
    print(f"{name}, {layout} {n} x {d}, X (float32) {x_bytes / 1e6:.1f} MB, "
          f"{os.cpu_count()} cpus, load {os.getloadavg()}")
    for key in ("float32", "float64"):
        print(f"{key} X: peak allocation during fit {peak[key] / x_bytes:.3f} x X's bytes, "
              f"best time {min(times[key]):.3f} s")
    ratio = min(times["float32"]) / min(times["float64"])
    diff = float(np.max(np.abs(coef["float32"] - coef["float64"])))
    rel = float(np.linalg.norm(coef["float32"] - coef["float64"])
                / max(np.linalg.norm(coef["float64"]), 1e-300))
    print(f"time float32 / float64: {ratio:.2f}; "
          f"max |coef32 - coef64| = {diff:.3g}; relative l2 difference {rel:.3g}")
    return {"estimator": name, "layout": layout, "n": n, "d": d,
            "x_float32_mb": round(x_bytes / 1e6, 1),
            "peak_float32_x": round(peak["float32"] / x_bytes, 3),
            "peak_float64_x": round(peak["float64"] / x_bytes, 3),
            "time_float32_s": round(min(times["float32"]), 3),
            "time_float64_s": round(min(times["float64"]), 3),
            "time_ratio": round(ratio, 2), "max_abs_coef_diff": float(f"{diff:.3g}"),
            "rel_coef_diff": float(f"{rel:.3g}")}


if __name__ == "__main__":
    args = sys.argv[1:]
    main(*(args[:2] + [int(a) for a in args[2:4]]))


def run_all():
    """Every row of :data:`ROWS`, written by :func:`write_report`."""
    write_report([main(name, layout) for name, layout in ROWS])


COLUMNS = ("estimator", "layout", "x_float32_mb", "peak_float32_x", "peak_float64_x",
           "time_float32_s", "time_float64_s", "time_ratio", "rel_coef_diff")


def write_report(rows):
    """``results/cgvr_float32.{json,md}``: the rows of :func:`main` (one per estimator and
    layout) with the date, command, versions and machine."""
    from _harness import markdown_table, write_results
    lines = ["# float32 X read in place (issue 21.4)", "",
             "Peak allocation during fit (tracemalloc, X itself not counted) in units of the "
             "float32 X's bytes (data + indices for CSR), for a float32 X and for its float64 "
             "conversion; best wall time of alternated fits (2-core machine, possibly "
             "shared: read the ratio); relative l2 difference of the coefficients.", ""]
    lines += markdown_table(COLUMNS, rows)
    write_results("cgvr_float32", {"name": "cgvr_float32", "results": rows},
                  "\n".join(lines) + "\n")
