"""Threads inside one CGVR fit (issue 21.3): wall time of a binary CGVRClassifier fit with
n_jobs=1 and n_jobs=2 on a 200k x 100 dense problem, alternated, three repetitions each, and
a check that both give bitwise the same coefficients.

    PYTHONPATH=. python benchmarks/bench_cgvr.py threads

The full passes (objective, gradient, snapshot: about 60% of a fit here) run over fixed row
blocks in threads; the inner loop stays sequential, so the ceiling with 2 threads is about
1.4x.  Run it on an idle machine: a loaded one shows no speedup.
"""
import os
import time

import numpy as np
from sklearn.datasets import make_classification

from skstoch import CGVRClassifier


def main(n_samples=200_000, n_features=100, repeats=3):
    X, y = make_classification(n_samples, n_features, n_informative=n_features // 2,
                               random_state=0)
    times = {1: [], 2: []}
    coef = {}
    for _ in range(repeats):
        for n_jobs in (1, 2):
            start = time.perf_counter()
            clf = CGVRClassifier(n_jobs=n_jobs, random_state=0).fit(X, y)
            times[n_jobs].append(time.perf_counter() - start)
            coef.setdefault(n_jobs, clf.coef_)
    assert np.array_equal(coef[1], coef[2]), "n_jobs changed the fit"
    print(f"{n_samples} x {n_features} dense, {os.cpu_count()} cpus, load {os.getloadavg()}")
    for n_jobs, t in times.items():
        print(f"n_jobs={n_jobs}: " + " ".join(f"{v:.3f}" for v in t) + " s")
    print(f"speedup (best of {repeats}): {min(times[1]) / min(times[2]):.2f}x")


if __name__ == "__main__":
    main()
