"""The multinomial log loss on a Dask array against the same fit in memory (issue 22).

A ``LocalCluster`` of 2 worker processes (one thread each, 127.0.0.1) holds ``X`` (n x d
standard normal) and ``y = argmax(X W_true + Gumbel noise)`` with K classes, generated on
the workers chunk by chunk and persisted (the workers import skstoch before the timings).
``CGVRClassifier`` and ``S3GDClassifier`` (their defaults, ``random_state=0``, or
``--tol``) fit the Dask arrays and, in memory, the same data computed on the client.  Reported per fit: seconds, outer iterations (epochs),
distributed passes (in memory: the driver's own pass count for CGVR, the epochs for S3GD),
the objective ``f`` (computed in NumPy from the coefficients), its relative gap to the
in-memory fit and its suboptimality against ``f*`` from scikit-learn's lbfgs
``LogisticRegression`` (same objective: ``C = 1 / (n alpha)``, tol 1e-12).

Run (from the repository root)::

    PYTHONPATH=. python benchmarks/studies/dask_multinomial.py --n 100000 --d 50 --k 5
"""
import argparse
import time
import warnings

import numpy as np


def objective(coef, intercept, X, y, alpha):
    Z = X @ coef.T + intercept
    lse = np.logaddexp.reduce(Z, axis=1)
    return float(np.mean(lse - Z[np.arange(len(y)), y])) + 0.5 * alpha * float(
        np.vdot(coef, coef))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=50)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--chunk-rows", type=int, default=12_500)
    parser.add_argument("--tol", type=float, default=None, help="tol of both estimators "
                        "(default: each estimator's default)")
    args = parser.parse_args()
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    from skstoch import CGVRClassifier, S3GDClassifier

    warnings.simplefilter("ignore", ConvergenceWarning)
    n, d, K = args.n, args.d, args.k
    alpha = 1.0 / n
    kw = {} if args.tol is None else {"tol": args.tol}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(__import__, "skstoch.linear_model")     # not timed: the workers' imports
        rs = da.random.RandomState(0)
        Xd = rs.standard_normal((n, d), chunks=(args.chunk_rows, d))
        W_true = np.random.RandomState(1).standard_normal((d, K)) * 2.0 / np.sqrt(d)
        G = rs.gumbel(size=(n, K), chunks=(args.chunk_rows, K))
        yd = da.argmax(Xd @ W_true + G, axis=1)
        Xd, yd = dask.persist(Xd, yd)
        X, y = dask.compute(Xd, yd)
        t = time.perf_counter()
        ref = LogisticRegression(C=1.0 / (n * alpha), tol=1e-12, max_iter=10_000).fit(X, y)
        f_star = objective(ref.coef_, ref.intercept_, X, y, alpha)
        print(f"n={n} d={d} K={K} chunks of {args.chunk_rows} rows; f* = {f_star:.12g} "
              f"(lbfgs, {time.perf_counter() - t:.1f} s); estimator options {kw}")
        print(f"{'fit':<26}{'seconds':>9}{'iters':>7}{'passes':>8}{'gathered':>10}"
              f"{'f':>20}{'gap to memory':>15}{'(f - f*)/f*':>13}")
        for Est in (CGVRClassifier, S3GDClassifier):
            rows = {}
            for where, (Xf, yf) in (("memory", (X, y)), ("dask", (Xd, yd))):
                t = time.perf_counter()
                est = Est(random_state=0, **kw).fit(Xf, yf)
                seconds = time.perf_counter() - t
                hist = est.history_
                passes = hist["passes"][-1] if "passes" in hist else est.n_iter_
                gathered = hist["gathered_rows"][-1] if "gathered_rows" in hist else 0
                f = objective(est.coef_, est.intercept_, X, y, alpha)
                rows[where] = (seconds, est.n_iter_, passes, gathered, f)
            f_mem = rows["memory"][4]
            for where, (seconds, n_iter, passes, gathered, f) in rows.items():
                print(f"{Est.__name__ + ' ' + where:<26}{seconds:>9.2f}{n_iter:>7}"
                      f"{passes:>8.1f}{gathered:>10}{f:>20.12g}"
                      f"{abs(f - f_mem) / f_mem:>15.2e}{(f - f_star) / f_star:>13.2e}")


if __name__ == "__main__":
    main()
