"""Threads inside one CGVR fit (issue 21.3): wall time of a binary CGVRClassifier fit (defaults)
with n_jobs=1 and n_jobs=2 on a 200k x 100 dense problem and on the sparse rcv1-like problem of
bench_cgvr.py, alternated, three repetitions each, and a check that both give bitwise the same
coefficients.

    PYTHONPATH=. python benchmarks/bench_cgvr.py threads

The full passes (objective, gradient, snapshot) run over fixed row blocks in threads, and each
inner loop on a team of the same threads over fixed blocks of the batch rows and features.
The report also prints the serial fraction s of a one-thread fit (its CPU time outside the
parallel sections, which the kernels time when ``_cgvr.profile_parallel`` is on; the timer
calls add about 4% to the fit's CPU time, shared between both parts) and the Amdahl ceiling
1 / (s + (1 - s) / 2) for two threads: that part holds on a loaded machine, the wall speedup
only on an idle one.
"""
import os
import time

import numpy as np
from sklearn.datasets import make_classification

from skstoch import CGVRClassifier
from skstoch._fast import _cgvr


def serial_fraction(X, y, repeats=3):
    """CPU time of a one-thread fit outside its parallel sections / its CPU time (best of)."""
    best = None
    for _ in range(repeats):
        _cgvr.profile_parallel(True)
        start = time.thread_time()
        CGVRClassifier(n_jobs=1, random_state=0).fit(X, y)
        total = time.thread_time() - start
        parallel = _cgvr.parallel_seconds()
        _cgvr.profile_parallel(False)
        if best is None or total < best[0]:
            best = (total, parallel)
    return (best[0] - best[1]) / best[0]


def report(X, y, desc, repeats=3):
    times = {1: [], 2: []}
    coef = {}
    for _ in range(repeats):
        for n_jobs in (1, 2):
            start = time.perf_counter()
            clf = CGVRClassifier(n_jobs=n_jobs, random_state=0).fit(X, y)
            times[n_jobs].append(time.perf_counter() - start)
            coef.setdefault(n_jobs, clf.coef_)
    assert np.array_equal(coef[1], coef[2]), "n_jobs changed the fit"
    print(f"{desc}, {os.cpu_count()} cpus, load {os.getloadavg()}")
    for n_jobs, t in times.items():
        print(f"n_jobs={n_jobs}: " + " ".join(f"{v:.3f}" for v in t) + " s")
    print(f"speedup (best of {repeats}): {min(times[1]) / min(times[2]):.2f}x")
    s = serial_fraction(X, y, repeats)
    print(f"serial fraction of a one-thread fit: {100 * s:.1f}%, Amdahl ceiling for 2 "
          f"threads: {1 / (s + (1 - s) / 2):.2f}x")


def main(n_samples=200_000, n_features=100, repeats=3):
    from bench_cgvr import sparse_problem
    X, y = make_classification(n_samples, n_features, n_informative=n_features // 2,
                               random_state=0)
    report(X, y, f"{n_samples} x {n_features} dense", repeats)
    report(*sparse_problem(), repeats)


if __name__ == "__main__":
    main()
