"""Check of LMNNMetric's ``c='auto'`` on fresh draws of the two large generators of
``bench_lmnn.py`` (training-side: none of these draws is a benchmark test set).

``c='auto'`` matters only for the 'random' recipe (``n_samples > search_size``): there it
may fit a second candidate c > 0.5 and keep the one with the better leave-one-out 3-NN
accuracy on training rows.  For each generator and seed 1..4 (the benchmarks use seed 0 for
the scale problem and seeds 0..19 of another generator call for the 20,000 x 50 one):
``make_classification`` with ``n_train + 2,000`` rows, standardized on the first
``n_train``, fitted there with ``c=0.5`` and ``c='auto'``, 3-NN accuracy on the last 2,000.

Run: ``PYTHONPATH=. python benchmarks/studies/lmnn_auto_c_check.py`` (about a minute of CPU);
writes ``benchmarks/studies/results/lmnn_auto_c_check.md``.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402

from skstoch import LMNNMetric  # noqa: E402

GENERATORS = {
    # like the scale problem (bench_lmnn.py --scale-only), at 30,000 training rows
    "30,000 x 100, 20 informative, 5 classes": dict(n=30_000, n_features=100,
                                                    n_informative=20, n_classes=5),
    # like the repeated 20,000 x 50 problem (15,000 training rows)
    "15,000 x 50, 5 informative, 4 classes, no redundant": dict(
        n=15_000, n_features=50, n_informative=5, n_redundant=0, n_classes=4),
}


def run(seeds=(1, 2, 3, 4)):
    lines = ["| problem | seed | Euclidean % | c=0.5 % | c='auto' % | c_ | CPU s c=0.5 | "
             "CPU s auto |", "|---|---|---|---|---|---|---|---|"]
    for label, spec in GENERATORS.items():
        spec = dict(spec)
        n = spec.pop("n")
        diffs = []
        for seed in seeds:
            X, y = make_classification(n + 2000, random_state=seed, **spec)
            X = (X - X[:n].mean(0)) / X[:n].std(0)
            fit, held = slice(0, n), slice(n, None)

            def acc(Z):
                return KNeighborsClassifier(3).fit(Z[fit], y[fit]).score(Z[held], y[held])

            row = {"eu": acc(X)}
            for c in (0.5, "auto"):
                cpu = time.process_time()
                m = LMNNMetric(random_state=0, c=c).fit(X[fit], y[fit])
                row[c] = (acc(m.transform(X)), m.c_, time.process_time() - cpu)
            diffs.append(row["auto"][0] - row[0.5][0])
            lines.append(f"| {label} | {seed} | {100 * row['eu']:.2f} | "
                         f"{100 * row[0.5][0]:.2f} | {100 * row['auto'][0]:.2f} | "
                         f"{row['auto'][1]:.3f} | {row[0.5][2]:.3f} | {row['auto'][2]:.3f} |")
            print(lines[-1], flush=True)
        diffs = np.array(diffs)
        lines.append(f"| {label} | mean auto - 0.5 | | | {100 * diffs.mean():+.2f} "
                     f"(s.e. {100 * diffs.std(ddof=1) / np.sqrt(len(diffs)):.2f}) | | | |")
    return lines


if __name__ == "__main__":
    start = datetime.now(timezone.utc).isoformat(timespec="seconds")
    load = round(os.getloadavg()[0], 2)
    lines = run()
    text = "\n".join(
        ["# LMNNMetric c='auto' against c=0.5 on fresh draws (3-NN on 2,000 held-out rows)",
         "", *lines, "",
         f"Run on {start} with `python benchmarks/studies/lmnn_auto_c_check.py`; load "
         f"average at the start {load}; one BLAS thread.", ""])
    print(text)
    out = Path(__file__).resolve().parent / "results" / "lmnn_auto_c_check.md"
    out.write_text(text)
