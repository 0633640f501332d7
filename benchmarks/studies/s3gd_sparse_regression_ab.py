"""S3GD's default ('cd') against skglm on the sparse regression problem of ``bench_s3gd.py l1``
and ``elasticnet``, where one run of those modes gave close times: seven alternated fits each
at the tol with which each reached 1e-6 relative suboptimality in those runs (ours 1e-4;
skglm 1e-5 for the lasso, 1e-4 for the elastic net), median wall and CPU time.

    PYTHONPATH=. python benchmarks/studies/s3gd_sparse_regression_ab.py

Run it with the peers' interpreter (skglm), one BLAS thread, on an idle machine; it prints
the medians and their ratios and writes ``studies/results/s3gd_sparse_regression_ab.json``.
"""
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "_modes")]
from _bench_s3gd_l1 import make_problem  # noqa: E402

from skstoch import S3GDRegressor  # noqa: E402

REPEATS = 7
# (l1_ratio, our tol, skglm's tol): the tols of the committed s3gd_l1 / s3gd_elasticnet runs
CASES = [(1.0, 1e-4, 1e-5), (0.5, 1e-4, 1e-4)]


def timed(make, X, y):
    wall, cpu = time.perf_counter(), time.process_time()
    make().fit(X, y)
    return time.perf_counter() - wall, time.process_time() - cpu


def main():
    import skglm
    rows = []
    for l1_ratio, ours_tol, skglm_tol in CASES:
        X, y, alpha, desc = make_problem("sparse", "regression", l1_ratio=l1_ratio)
        pen = (dict(penalty="l1") if l1_ratio == 1 else
               dict(penalty="elasticnet", l1_ratio=l1_ratio))
        makers = {
            "skstoch cd": lambda: S3GDRegressor(**pen, alpha=alpha, solver="cd", tol=ours_tol,
                                                max_iter=200),
            "skglm": lambda: (skglm.Lasso(alpha=alpha, tol=skglm_tol) if l1_ratio == 1 else
                              skglm.ElasticNet(alpha=alpha, l1_ratio=l1_ratio, tol=skglm_tol)),
        }
        for make in makers.values():
            make().fit(X, y)      # untimed: numba compilation, first-call costs
        times = {name: [] for name in makers}
        for _ in range(REPEATS):
            for name, make in makers.items():
                times[name].append(timed(make, X, y))
        med = {name: np.median(np.array(t), axis=0) for name, t in times.items()}
        row = {"problem": desc, "l1_ratio": l1_ratio, "load": round(os.getloadavg()[0], 2),
               **{f"{name} wall / cpu s": [round(v, 4) for v in m] for name, m in med.items()},
               "skglm / ours wall": round(med["skglm"][0] / med["skstoch cd"][0], 2),
               "skglm / ours cpu": round(med["skglm"][1] / med["skstoch cd"][1], 2)}
        print(row)
        rows.append(row)
    out = HERE / "results" / "s3gd_sparse_regression_ab.json"
    out.write_text(json.dumps({"repeats": REPEATS, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
