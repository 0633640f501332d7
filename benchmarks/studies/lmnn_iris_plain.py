"""Why NCA beats LMNNMetric's defaults on plain iris, and whether a training-side choice
closes the gap (the LMNNMetric-iris row of ``tests/test_defaults.py``, issue 19).

Training-side harnesses only: no row of the defaults test's CV is scored as a test row of
that CV, and no choice below was made on it.

- ``iris nested (seed s)``: outer ``RepeatedStratifiedKFold(10, 2, random_state=s)`` on iris;
  inside each 135-row outer training part ``StratifiedKFold(10, shuffle=True,
  random_state=200 + part)``, so fits see about 121 rows (the defaults test fits 120); the
  outer test parts are never used.  200 fits per seed.
- ``iris inner``: the training parts of ``StratifiedShuffleSplit(20, test_size=0.25,
  random_state=0)`` (112 rows), each split by ``RepeatedStratifiedKFold(5, 2,
  random_state=100 + part)``: fits on 89 rows.  200 fits.
- ``breast_cancer inner`` / ``wine inner``: the same protocol (``RepeatedStratifiedKFold(5,
  1)``, 10 / 20 outer parts): the side effects of the rank rule on the other datasets.

Every fit is standardized on its fitting part and scored by 3-NN accuracy on its held-out
part.  Configurations: LMNNMetric(random_state=0) with one change; ``budget xK`` is ``max_iter
= K * max_iter_`` of the default fit; ``top r`` keeps the r leading rows of the default
fit's ``components_`` (what ``n_components=r`` returns); ``A^3`` (a diagnostic, not an
estimator) cubes the eigenvalues of the default metric.  Selections inside the fit (leave-
one-out 3-NN on the fitting rows, the criterion of ``c='auto'``): ``LOO c in {0.5, 0.25}``
keeps the fit with the higher training LOO accuracy (ties: 0.5); ``LOO rank, z`` keeps the
leading r components (r in 1, 2, 3, 4, 6, 8, 12, ..., n_features) with the best training LOO
accuracy (ties: share of the 3 neighbours with the query's label, then the larger r), but
only if it beats all components by z standard errors of a sign test on the queries where
they disagree.

Run: ``PYTHONPATH=. python benchmarks/studies/lmnn_iris_plain.py`` (about 2 CPU minutes
with NCA; 7.5 minutes wall at load 8); writes ``benchmarks/studies/results/lmnn_iris_plain.md``.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402
import warnings  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_iris, load_wine  # noqa: E402
from sklearn.model_selection import (RepeatedStratifiedKFold, StratifiedKFold,  # noqa: E402
                                     StratifiedShuffleSplit)
from sklearn.neighbors import KNeighborsClassifier, NeighborhoodComponentsAnalysis  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skstoch import LMNNMetric  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "lmnn_iris_plain.md"


def nested_iris(seed):
    X, y = load_iris(return_X_y=True)
    out = []
    outer = RepeatedStratifiedKFold(n_splits=10, n_repeats=2, random_state=seed)
    for part, (train, _) in enumerate(outer.split(X, y)):
        Xt, yt = X[train], y[train]
        inner = StratifiedKFold(10, shuffle=True, random_state=200 + part)
        out += [_scaled(Xt, yt, a, b) for a, b in inner.split(Xt, yt)]
    return out


def inner_splits(loader, n_outer, n_repeats):
    X, y = loader(return_X_y=True)
    out = []
    outer = StratifiedShuffleSplit(n_splits=n_outer, test_size=0.25, random_state=0)
    for part, (train, _) in enumerate(outer.split(X, y)):
        Xt, yt = X[train], y[train]
        inner = RepeatedStratifiedKFold(n_splits=5, n_repeats=n_repeats,
                                        random_state=100 + part)
        out += [_scaled(Xt, yt, a, b) for a, b in inner.split(Xt, yt)]
    return out


def _scaled(X, y, a, b):
    scaler = StandardScaler().fit(X[a])
    return scaler.transform(X[a]), scaler.transform(X[b]), y[a], y[b]


def loo_hits(Z, y, k=3):
    """Per-row leave-one-out k-NN correctness and the share of the k neighbours with the
    row's label (ties of the vote to the smallest label)."""
    D = np.sum((Z[:, None, :] - Z[None, :, :]) ** 2, axis=-1)
    np.fill_diagonal(D, np.inf)
    near = y[np.argsort(D, axis=1, kind="stable")[:, :k]]
    votes = (near[:, :, None] == np.arange(y.max() + 1)).sum(axis=1)
    return np.argmax(votes, axis=1) == y, np.mean(near == y[:, None], axis=1)


def candidate_ranks(d):
    ranks = {2 ** j for j in range(8) if 2 ** j < d} | {3 * 2 ** j for j in range(7)
                                                          if 3 * 2 ** j < d}
    return sorted(ranks) + [d]


def loo_rank(X, y, C, z):
    """The rank kept by the 'LOO rank, z' rule (module docstring)."""
    stats = {r: loo_hits(X @ C[:r].T, y) for r in candidate_ranks(C.shape[0])}
    best = max(stats, key=lambda r: (stats[r][0].sum(), stats[r][1].sum(), r))
    hit_best, hit_full = stats[best][0], stats[C.shape[0]][0]
    wins, losses = np.sum(hit_best & ~hit_full), np.sum(~hit_best & hit_full)
    return best if wins - losses >= z * np.sqrt(max(wins + losses, 1)) \
        else C.shape[0]


def knn(R, split):
    Xa, Xb, ya, yb = split
    return KNeighborsClassifier(3).fit(Xa @ R.T, ya).score(Xb @ R.T, yb)


def evaluate(split, nca=True):
    Xa, _, ya, _ = split
    fit = {}

    def lmnn(**params):
        return LMNNMetric(random_state=0, **params).fit(Xa, ya)

    default = lmnn()
    fit["default"] = default.components_
    for label, params in [("c=0.25", {"c": 0.25}), ("c=0.75", {"c": 0.75}),
                          ("n_neighbors=5", {"n_neighbors": 5}), ("mu2=0", {"mu2": 0.0}),
                          ("budget x4", {"max_iter": 4 * default.max_iter_}),
                          ("budget x16", {"max_iter": 16 * default.max_iter_})]:
        fit[label] = lmnn(**params).components_
    for r in (1, 2):
        fit[f"top {r}"] = default.components_[:r]
    w, V = np.linalg.eigh(default.metric_)
    fit["A^3 (diagnostic)"] = (V * np.sqrt(np.maximum(w, 1e-12) ** 3)).T
    fit["Euclidean"] = np.eye(Xa.shape[1])
    if nca:
        fit["sklearn NCA"] = NeighborhoodComponentsAnalysis(random_state=0).fit(Xa, ya) \
            .components_
    loo = {c: loo_hits(Xa @ fit[c].T, ya)[0].sum() for c in ("default", "c=0.25")}
    fit["LOO c in {0.5, 0.25}"] = fit["c=0.25" if loo["c=0.25"] > loo["default"]
                                      else "default"]
    for z in (0.0, 1.0, 1.5):
        fit[f"LOO rank, z={z}"] = default.components_[:loo_rank(Xa, ya, default.components_,
                                                                 z)]
    return {label: knn(R, split) for label, R in fit.items()}


def table(name, splits, nca=True):
    start = time.process_time()
    rows = [evaluate(s, nca) for s in splits]
    labels = list(rows[0])
    base = np.array([r["default"] for r in rows])
    lines = [f"### {name}: {len(rows)} fits, {len(splits[0][2])} fitting rows, "
             f"{len(splits[0][3])} held out ({time.process_time() - start:.0f} CPU s)", "",
             "| configuration | 3-NN accuracy % | s.e. | paired diff to default | s.e. |",
             "|---|---|---|---|---|"]
    for label in labels:
        acc = np.array([r[label] for r in rows])
        diff = acc - base
        se = lambda v: 100 * v.std(ddof=1) / np.sqrt(len(v))  # noqa: E731
        lines.append(f"| {label} | {100 * acc.mean():.2f} | {se(acc):.2f} | "
                     f"{100 * diff.mean():+.2f} | {se(diff):.2f} |")
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return text


def main():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # NCA's convergence warnings on some fits
        parts = [table(f"iris nested (seed {s})", nested_iris(s)) for s in (1, 2, 3)]
        parts.append(table("iris inner", inner_splits(load_iris, 20, 2)))
        parts.append(table("breast_cancer inner", inner_splits(load_breast_cancer, 10, 1)))
        parts.append(table("wine inner", inner_splits(load_wine, 20, 1)))
    header = (f"# LMNNMetric on plain iris: training-side study\n\nRun on "
              f"{datetime.now(timezone.utc).isoformat(timespec='seconds')} with `PYTHONPATH=. "
              f"python benchmarks/studies/lmnn_iris_plain.py` (load average "
              f"{os.getloadavg()[0]:.1f} at the end); protocol in the script's docstring.\n\n")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(header + "\n".join(parts))


if __name__ == "__main__":
    main()
