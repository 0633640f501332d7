"""Rounds 9-10: cost of the default gamma="cv" (one fit each, wall and process CPU time).

(a) 10^6 two moons, 20 labels: the CV does not run (< 30 labels) and the default fit is the
    gamma='scale' fit; also gamma=5 as in s3vm_scaling (the 10^6 target).
(b) 10^5 two moons, 50 labels: default (CV runs: 15 extra fits with the round-10 grid, 9 in
    round 9) vs gamma='scale'.

Run: PYTHONPATH=. python benchmarks/s3vm_default_cv_cost.py   (writes results/s3vm_default_cv_cost.md)
"""
import os
import time
import warnings

import numpy as np
from sklearn.datasets import make_moons

from skstoch import S3VMClassifier
from skstoch.datasets import make_semisupervised

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(est, X, ys):
    t, c = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, ys)
    return est, time.perf_counter() - t, time.process_time() - c


def main():
    Xte, yte = make_moons(10_000, noise=0.1, random_state=1)
    rows = []
    for n, n_lab, settings in [(10**6, 20, [("default (cv)", {}), ("gamma='scale'", {"gamma": "scale"}),
                                             ("gamma=5 (s3vm_scaling)", {"gamma": 5.0})]),
                               (10**5, 50, [("default (cv)", {}), ("gamma='scale'", {"gamma": "scale"})])]:
        X, y = make_moons(n, noise=0.1, random_state=0)
        ys, _ = make_semisupervised(y, n_labeled=n_lab, random_state=0)
        for name, kw in settings:
            est, wall, cpu = timed(S3VMClassifier(random_state=0, **kw), X, ys)
            ran = est.gamma_cv_scores_ is not None
            status = "yes" if ran else ("no (fallback)" if not kw else "not requested")
            rows.append((n, n_lab, name, wall, cpu, est.gamma_, status,
                         est.score(Xte, yte), os.getloadavg()[0]))
            print(rows[-1], flush=True)
    lines = ["# s3vm_default_cv_cost", "",
             "Two moons (noise 0.1), test on 10,000; one fit per row (random_state=0); "
             "wall and process CPU seconds; load = 1-minute load average after the fit.", "",
             "| n | labels | gamma | wall s | CPU s | gamma_ | CV ran | accuracy | load |",
             "|---|---|---|---|---|---|---|---|---|"]
    for n, nl, name, wall, cpu, g, ran, acc, load in rows:
        lines.append(f"| {n:.0e} | {nl} | {name} | {wall:.3f} | {cpu:.3f} | {g:.4g} | {ran} | "
                     f"{acc:.4f} | {load:.2f} |")
    lines += ["", "Run with `PYTHONPATH=. python benchmarks/s3vm_default_cv_cost.py`."]
    with open(os.path.join(HERE, "results", "s3vm_default_cv_cost.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
