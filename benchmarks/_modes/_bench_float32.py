"""float32 X without a float64 copy (issue 21.4): tracemalloc peak (bytes allocated during the
fit, X itself not counted), best wall time of alternated fits and the largest coefficient
difference of an estimator on float32 X against the same values in float64.

    PYTHONPATH=. python benchmarks/_bench_float32.py [Estimator] [dense|csr] [n] [d]

Defaults: CGVRClassifier, dense, 200,000 x 100 (X: 80 MB in float32).  CSR: about 30% of the
entries kept.  Timings on a loaded machine are noisy: read the ratio of one run.
"""
import os
import sys
import time
import tracemalloc

import numpy as np
import scipy.sparse as sp

import skstoch


def _data(n, d, sparse):
    rng = np.random.RandomState(0)
    X32 = rng.randn(n, d).astype(np.float32)
    if sparse:
        X32[rng.rand(n, d) > 0.3] = 0.0
    y = (X32[:, 0] + rng.randn(n) > 0).astype(int)
    X64 = X32.astype(np.float64)
    if sparse:
        X32, X64 = sp.csr_matrix(X32), sp.csr_matrix(X64)
    x_bytes = X32.data.nbytes + X32.indices.nbytes if sparse else X32.nbytes
    return X32, X64, y, x_bytes


def main(name="CGVRClassifier", layout="dense", n=200_000, d=100, repeats=3):
    X32, X64, y, x_bytes = _data(n, d, layout == "csr")
    cls = getattr(skstoch, name)
    cls(random_state=0).fit(X32[:100], y[:100])   # imports and caches outside the counts
    peak, coef = {}, {}
    for key, X in (("float64", X64), ("float32", X32)):
        tracemalloc.start()
        coef[key] = cls(random_state=0).fit(X, y).coef_
        peak[key] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    times = {"float64": [], "float32": []}
    for _ in range(repeats):
        for key, X in (("float64", X64), ("float32", X32)):
            start = time.perf_counter()
            cls(random_state=0).fit(X, y)
            times[key].append(time.perf_counter() - start)
    print(f"{name}, {layout} {n} x {d}, X (float32) {x_bytes / 1e6:.1f} MB, "
          f"{os.cpu_count()} cpus, load {os.getloadavg()}")
    for key in ("float32", "float64"):
        print(f"{key} X: peak allocation during fit {peak[key] / x_bytes:.3f} x X's bytes, "
              f"best time {min(times[key]):.3f} s")
    print(f"time float32 / float64: {min(times['float32']) / min(times['float64']):.2f}; "
          f"max |coef32 - coef64| = {np.max(np.abs(coef['float32'] - coef['float64'])):.3g}")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(*(args[:2] + [int(a) for a in args[2:4]]))
