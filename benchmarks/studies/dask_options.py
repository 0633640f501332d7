"""The options issue 22 added to Dask fits, against the in-memory fits (relative objective
gap, distributed passes, iterations): S3GD with penalty='l1' / 'elasticnet' (Prox-SVRG on
Dask, coordinate descent in memory) and CGVR ``solver='cg'``, on 200,000 x 20 Gaussian
features (a third of the true coefficients zero), chunks of 25,000 rows persisted on a
``LocalCluster`` of 2 worker processes (127.0.0.1).  The list in ``doc/scaling_out.rst``
("What runs on Dask data") comes from this script::

    PYTHONPATH=. python benchmarks/studies/dask_options.py

Times are printed for information only (one run; they depend on the machine's load).
"""
import time
import warnings

import dask
import dask.array as da
import distributed
import numpy as np

from skstoch import CGVRClassifier, CGVRRegressor, S3GDClassifier, S3GDRegressor

N, D, CHUNK = 200_000, 20, 25_000


def make_data(task, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((N, D))
    w = rng.standard_normal(D)
    w[: D // 3] = 0
    z = X @ w + 0.5 * rng.standard_normal(N)
    return X, ((z > 0).astype(int) if task == "clf" else z + 1.0)


def objective(est, X, y, lam1, lam2):
    w = np.ravel(est.coef_)
    p = X @ w + float(np.ravel(est.intercept_)[0])
    if hasattr(est, "classes_"):
        loss = np.logaddexp(0, -np.where(y == est.classes_[1], 1.0, -1.0) * p)
    else:
        loss = 0.5 * (p - y) ** 2
    return loss.mean() + lam1 * np.abs(w).sum() + 0.5 * lam2 * w @ w


S3GD_STOP = dict(tol=1e-10, n_iter_no_change=3)
# label, estimator, task, parameters, (lam1, lam2) of the objective
CASES = [
    ("S3GDClassifier l1", S3GDClassifier, "clf",
     dict(penalty="l1", alpha=1e-3, **S3GD_STOP), (1e-3, 0.0)),
    ("S3GDRegressor elasticnet", S3GDRegressor, "reg",
     dict(penalty="elasticnet", alpha=1e-2, l1_ratio=0.5, **S3GD_STOP), (5e-3, 5e-3)),
    ("CGVRClassifier cg", CGVRClassifier, "clf", dict(solver="cg", alpha=1e-3, tol=1e-8),
     (0.0, 1e-3)),
    ("CGVRRegressor cg", CGVRRegressor, "reg", dict(solver="cg", alpha=1e-3, tol=1e-8),
     (0.0, 1e-3)),
]


def main():
    warnings.simplefilter("ignore")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        for label, Est, task, kw, (lam1, lam2) in CASES:
            X, y = make_data(task)
            kw = dict(kw, random_state=0, max_iter=500)
            start = time.perf_counter()
            local = Est(**kw).fit(X, y)
            t_local = time.perf_counter() - start
            Xd, yd = dask.persist(da.from_array(X, chunks=(CHUNK, D)),
                                  da.from_array(y, chunks=(CHUNK,)))
            start = time.perf_counter()
            dist = Est(**kw).fit(Xd, yd)
            t_dist = time.perf_counter() - start
            f_local = objective(local, X, y, lam1, lam2)
            f_dist = objective(dist, X, y, lam1, lam2)
            hist, hist_local = dist.history_, local.history_
            local_passes = hist_local["passes"][-1] if "passes" in hist_local else "-"
            print(f"{label}: gap {(f_dist - f_local) / abs(f_local):.1e}; Dask: "
                  f"{hist['passes'][-1]:.0f} passes, {dist.n_iter_} iterations, "
                  f"{hist['gathered_rows'][-1]} rows gathered, {t_dist:.1f} s; in memory: "
                  f"{local_passes} passes, {local.n_iter_} iterations, {t_local:.1f} s",
                  flush=True)


if __name__ == "__main__":
    main()
