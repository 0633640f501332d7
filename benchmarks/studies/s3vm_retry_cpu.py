"""CPU of S3VMClassifier's default fit on the half-labeled 20-D rows of bench_s3vm.py, with
the retry rule of n_restarts="auto" before and after the stop-gap condition, in one process.

"before" sets ``tsg.RETRY_NEAR = inf`` (refit while no fit converged, the rule of the previous
release, bitwise); "after" is the current rule (refit only a fit that came within RETRY_NEAR x
the stopping threshold). Same data as bench_s3vm.py's half-labeled child: X ~ N(0, I) of 20
columns, y = [x0 + x1^2 / 2 > 0.5], half the rows labeled, accuracy on 10,000 more rows.

Established (2026-11-27 13:38-14:07 UTC, nice -n 15, load about 10): CPU s before / after
44.3 / 26.7 at 1e5 (accuracy 0.8296 both), 45.1 / 26.9 at 4e5 (0.8090 / 0.7976), 45.8 / 28.1
at 2e6 (0.8385 / 0.8377); 3 fits before, 1 after, all warn (n_iter_ 300).

Run: PYTHONPATH=. nice -n 15 python benchmarks/studies/s3vm_retry_cpu.py [n ...]
(default 100000 400000).
"""
import sys
import time
import warnings

import numpy as np

from skstoch import S3VMClassifier
from skstoch._solvers import tsg


def main(sizes):
    print("| n | rule | CPU s | accuracy | n_iter_ | fits | warnings |")
    print("|---|---|---|---|---|---|---|")
    after = tsg.RETRY_NEAR
    for n in sizes:
        rng = np.random.default_rng(0)
        X = rng.standard_normal((n + 10_000, 20))
        y = (X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.5).astype(int)
        X, Xte, y, yte = X[:n], X[n:], y[:n], y[n:]
        ys = np.where(rng.random(n) < 0.5, -1, y)
        for label, near in (("before", np.inf), ("after", after)):
            tsg.RETRY_NEAR = near
            cpu = time.process_time()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model = S3VMClassifier(random_state=0).fit(X, ys)
            cpu = time.process_time() - cpu
            print(f"| {n} | {label} | {cpu:.1f} | {model.score(Xte, yte):.4f} | "
                  f"{model.n_iter_} | {model.restart_objectives_.shape[0]} | {len(caught)} |",
                  flush=True)
    tsg.RETRY_NEAR = after


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100_000, 400_000])
