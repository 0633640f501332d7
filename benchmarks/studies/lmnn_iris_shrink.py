"""Round 2 of the LMNNMetric-iris study (issue 19's last failing defaults row): rules that
shrink the learned metric's minor directions, judged on training-side splits of iris, wine,
breast cancer and digits, plain and with 20 added N(0, 1) noise features.

The first round (``lmnn_iris_plain.py``) found the gap in LMNN's objective: the leading
direction is NCA's, the other three weigh too much.  Candidates here (each against the
default fit of the same split, paired):

- ``trace t``: a trace (nuclear-norm on the PSD cone) term, the prior ``L`` replaced by
  ``L + t * tr(L) / d * I`` (what NCA's softmax does to useless directions, in LMNN's
  linear form; the epoch-end projection clips the directions it empties at epsilon).
- ``two passes``: Weinberger & Saul's multi-pass recipe: the target neighbours searched
  again in the learned metric (a second default fit on ``X @ components_.T``, composed).
- ``shrink s``: the default metric's eigenvalues ``w`` replaced by ``max(w - s * w_max,
  epsilon)`` after the fit; ``power p``: by ``w ** p`` (``p = 3`` is round 1's diagnostic).
- ``LOO ...``: the candidate with the best leave-one-out 3-NN accuracy on the fitting rows
  (exact, all rows; ties keep the default, then the milder candidate), the criterion of
  ``c='auto'``: a rule a fit could run on its own training data.
- ``--set=b``: the pull term (``prior='identity'``, ``'none'``) and Wilson editing (a refit
  without the fitting rows that leave-one-out 3-NN gets wrong, in the Euclidean or in the
  learned metric: NCA's softmax gives up on hopeless points, LMNN's hinge does not).
- ``--set=c``: the rule pre-registered from sets a and b, ``LOO power``: the power p in
  (1, 2, 3) of the ratio form ``max(w_max (w / w_max) ** p, epsilon)`` (the largest
  eigenvalue and the scale kept) with the most leave-one-out 3-NN hits on the fitting rows,
  ties to the smaller p.
- ``--set=d``: two passes at the cost of one (each pass half the default budget).

Findings (``results/lmnn_iris_shrink.md``; the user guide's "How the defaults were chosen"
quotes them): a trace term, the pull term and editing do not help iris; the fixed shrinkages
(shrink 0.1 / 0.2, power 2 / 3) help nested iris (+0.5 to +1.4 points) but cost digits and
digits + noise (-0.32 to -1.34); two passes help nested iris and digits but cost breast
cancer and wine + noise (down to -0.26) and double the fit; at the cost of one fit (set d)
they lose their iris gain (-0.01) and 0.42 points on wine + noise.  ``LOO power`` passed the
validation gate on three sets of splits (seed offsets 0, 1000 and 2000: no problem below
-0.1 points on average; nested iris +0.4 on average, -0.2 to +0.9 per set of 200 fits), was
implemented inside the fit (``eigen_power='auto'``, 'knn' recipe only, about 0.5 ms, 8 to
12% of a wine + noise fit), and run once on the defaults row: 143 of 150 (0.9533, the row
needs 0.955), breast cancer's row 549 of 569 (0.9649, was 0.9719), wine and digits
unchanged.  It does not fix the row, so it was reverted; the defaults are unchanged.

Not tried: a smoothed hinge (it needs the compiled kernels).  The margin is no separate
lever: with ``A = m B``, Eq. (21) with margin m is m times Eq. (21) in B with margin 1,
``mu1`` multiplied by m and ``epsilon`` divided by m (``mu2`` unchanged), and k-NN does not
see the scale of the metric.

Protocol (no test row of the defaults test's CV is used; no choice was made on it):

- ``iris nested (seed s)``: as in round 1 (outer ``RepeatedStratifiedKFold(10, 2,
  random_state=s)``, inner ``StratifiedKFold(10)`` on each 135-row outer training part:
  200 fits on about 121 rows, outer test parts never used).
- every other problem: the training parts of ``StratifiedShuffleSplit(n_outer,
  test_size=0.25, random_state=0)``, each split by ``StratifiedKFold(5, shuffle=True,
  random_state=100 + part)``; ``+ noise``: 20 N(0, 1) columns drawn per outer part (seed
  ``part``) before the split.

Every fit is standardized on its fitting part and scored by 3-NN accuracy on its held-out
part; the tables give the mean paired difference to the default (points) and its standard
error over the fits.

Run: ``PYTHONPATH=. python benchmarks/studies/lmnn_iris_shrink.py [--set=a|b|c|d]
[--only=NAME,...] [--seed-offset=N] [--tag=TAG]`` (set a on all ten problems: about 5 CPU
minutes, 3.7 of them digits; set c about 1.5); writes
``benchmarks/studies/results/lmnn_iris_shrink.md`` (or ``..._<tag>.md`` with ``--tag``).
Committed, one section per run in ``lmnn_iris_shrink.md``: set a with offsets 0 and 1000,
set b, set c with offsets 0, 1000, 2000, set d with offset 3000.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine  # noqa: E402
from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lmnn_iris_plain import _scaled, knn, loo_hits, nested_iris  # noqa: E402

import skstoch._solvers.lmnn as lmnn_driver  # noqa: E402
from skstoch import LMNNMetric  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
LOADERS = {"iris": load_iris, "wine": load_wine, "breast_cancer": load_breast_cancer,
           "digits": load_digits}
# outer parts per problem (5 inner fits each)
N_OUTER = {"iris": 20, "wine": 20, "breast_cancer": 10, "digits": 4}
TRACES = (0.125, 0.25, 0.5, 1.0)
SHRINKS = (0.05, 0.1, 0.2)
POWERS = (2.0, 3.0)


@contextlib.contextmanager
def trace_prior(t):
    """Fits inside use the prior L + t tr(L) / d I (the study's trace term)."""
    original = lmnn_driver.pair_scatter

    def with_trace(X, pairs):
        L = original(X, pairs)
        return L + (t * np.trace(L) / L.shape[0]) * np.eye(L.shape[0])

    lmnn_driver.pair_scatter = with_trace
    try:
        yield
    finally:
        lmnn_driver.pair_scatter = original


def splits(name, noise, offset=0):
    X, y = LOADERS[name](return_X_y=True)
    out = []
    outer = StratifiedShuffleSplit(n_splits=N_OUTER[name], test_size=0.25,
                                   random_state=offset)
    for part, (train, _) in enumerate(outer.split(X, y)):
        Xt, yt = X[train], y[train]
        if noise:
            rng = np.random.default_rng(offset + part)
            Xt = np.hstack([Xt, rng.normal(size=(len(Xt), 20))])
        inner = StratifiedKFold(5, shuffle=True, random_state=offset + 100 + part)
        out += [_scaled(Xt, yt, a, b) for a, b in inner.split(Xt, yt)]
    return out


def spectral(C, fn, eps=1e-3):
    """Components of the metric with eigenvalues fn(w) (w those of C' C), clipped at eps."""
    w, V = np.linalg.eigh(C.T @ C)
    w = np.maximum(fn(np.maximum(w, eps)), eps)
    return (V * np.sqrt(w)).T


def loo_choice(Xa, ya, candidates):
    """The first candidate (label, components) with the most leave-one-out 3-NN hits."""
    hits = [loo_hits(Xa @ C.T, ya)[0].sum() for _, C in candidates]
    return candidates[int(np.argmax(hits))][1]


def edited(Xa, ya, C):
    """Rows whose leave-one-out 3-NN in the metric of C is right (Wilson's editing)."""
    return loo_hits(Xa @ C.T, ya)[0]


def evaluate_b(split):
    """Set b: the pull term (``prior``) and the triplets of hopeless anchors."""
    Xa, _, ya, _ = split

    def lmnn(X=Xa, y=ya, **params):
        return LMNNMetric(random_state=0, **params).fit(X, y).components_

    fit = {"default": lmnn()}
    fit["prior='identity'"] = lmnn(prior="identity")
    fit["prior='none'"] = lmnn(prior="none")
    for label, C in (("edited (Euclidean)", np.eye(Xa.shape[1])),
                     ("edited (learned)", fit["default"])):
        keep = edited(Xa, ya, C)
        fit[label] = lmnn(Xa[keep], ya[keep]) if np.bincount(ya[keep]).min() >= 4 \
            else fit["default"]
    for label in ("prior='identity'", "edited (Euclidean)", "edited (learned)"):
        fit[f"LOO {label}"] = loo_choice(Xa, ya, [("default", fit["default"]),
                                                  (label, fit[label])])
    return {label: knn(R, split) for label, R in fit.items()}


def sharpened_components(A, power, eps=1e-3):
    """Components of A with the ratios of its eigenvalues to the largest raised to
    ``power``: ``max(w_max (w / w_max) ** power, eps)`` (the largest and the scale kept)."""
    w, V = np.linalg.eigh(A)
    w = np.maximum(w, eps)
    return (V * np.sqrt(np.maximum(w[-1] * (w / w[-1]) ** power, eps))).T


def evaluate_c(split):
    """Set c: the pre-registered rule 'LOO power' (the power p in (1, 2, 3) of the ratio
    form above whose metric gets the most leave-one-out 3-NN hits on the fitting rows,
    ties to the smaller p; it was implemented inside the fit, run once on the defaults
    row, and reverted) against the default; 'chose p' rows give the share of fits where
    it kept p."""
    Xa, _, ya, _ = split
    A = LMNNMetric(random_state=0).fit(Xa, ya).metric_
    fits = {p: sharpened_components(A, p) for p in (1.0, 2.0, 3.0)}
    hits = [loo_hits(Xa @ fits[p].T, ya)[0].sum() for p in fits]
    chosen = (1.0, 2.0, 3.0)[int(np.argmax(hits))]
    out = {"default": knn(fits[1.0], split), "LOO power (ratio form)": knn(fits[chosen], split)}
    for p in fits:
        out[f"chose {p:g} (share, not accuracy)"] = float(chosen == p)
    return out


def evaluate_d(split):
    """Set d: two passes at the cost of one (each pass half the default budget; the
    second fits on ``X @ components_.T``, i.e. target neighbours searched in the learned
    metric, and is composed with the first)."""
    Xa, _, ya, _ = split
    first = LMNNMetric(random_state=0).fit(Xa, ya)
    half = max(1, first.max_iter_ // 2)
    C1 = LMNNMetric(random_state=0, max_iter=half).fit(Xa, ya).components_
    C2 = LMNNMetric(random_state=0, max_iter=half).fit(Xa @ C1.T, ya).components_
    C = first.components_
    full = LMNNMetric(random_state=0).fit(Xa @ C.T, ya).components_ @ C
    return {"default": knn(C, split), "two passes, half budget each": knn(C2 @ C1, split),
            "two passes": knn(full, split)}


def evaluate(split):
    Xa, _, ya, _ = split

    def lmnn(X=Xa):
        return LMNNMetric(random_state=0).fit(X, ya).components_

    fit = {"default": lmnn()}
    for t in TRACES:
        with trace_prior(t):
            fit[f"trace {t:g}"] = lmnn()
    first = fit["default"]
    fit["two passes"] = lmnn(Xa @ first.T) @ first
    for s in SHRINKS:
        fit[f"shrink {s:g}"] = spectral(first, lambda w, s=s: w - s * w.max())
    for p in (1.5,) + POWERS:
        fit[f"power {p:g}"] = spectral(first, lambda w, p=p: w ** p)
    fit["Euclidean"] = np.eye(Xa.shape[1])
    options = {
        "LOO trace {0, .125, .25, .5, 1}": ["default"] + [f"trace {t:g}" for t in TRACES],
        "LOO shrink {0, .05, .1, .2}": ["default"] + [f"shrink {s:g}" for s in SHRINKS],
        "LOO power {1, 2, 3}": ["default"] + [f"power {p:g}" for p in POWERS],
        "LOO two passes": ["default", "two passes"],
    }
    for label, names in options.items():
        fit[label] = loo_choice(Xa, ya, [(n, fit[n]) for n in names])
    return {label: knn(R, split) for label, R in fit.items()}


def table(name, split_list, evaluate=evaluate):
    start = time.process_time()
    rows = [evaluate(s) for s in split_list]
    labels = list(rows[0])
    base = np.array([r[labels[0]] for r in rows])     # the first configuration
    lines = [f"### {name}: {len(rows)} fits, {len(split_list[0][2])} fitting rows, "
             f"{len(split_list[0][3])} held out, {split_list[0][0].shape[1]} features "
             f"({time.process_time() - start:.0f} CPU s)", "",
             f"| configuration | 3-NN accuracy % | paired diff to {labels[0]} | s.e. |",
             "|---|---|---|---|"]
    for label in labels:
        acc = np.array([r[label] for r in rows])
        diff = 100 * (acc - base)
        if "share" in label:
            lines.append(f"| {label} | {100 * acc.mean():.1f} | | |")
            continue
        lines.append(f"| {label} | {100 * acc.mean():.2f} | {diff.mean():+.2f} | "
                     f"{diff.std(ddof=1) / np.sqrt(len(diff)):.2f} |")
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return text


PROBLEMS = {
    "iris_nested1": lambda offset: nested_iris(1 + offset),
    "iris_nested2": lambda offset: nested_iris(2 + offset),
}
for _name in LOADERS:
    for _tag, _noise in (("", False), ("_noise", True)):
        PROBLEMS[_name + _tag] = lambda offset, n=_name, noise=_noise: splits(n, noise, offset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=",".join(PROBLEMS))
    parser.add_argument("--tag", default="")
    parser.add_argument("--set", default="a", choices=("a", "b", "c", "d"),
                        help="a: trace, two passes, shrink, power; b: prior, editing; "
                             "c: the pre-registered 'LOO power' rule; d: two passes at "
                             "the cost of one")
    parser.add_argument("--seed-offset", type=int, default=0,
                        help="fresh splits (and noise draws): seeds shifted by this")
    args = parser.parse_args()
    names = args.only.split(",")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = {"a": evaluate, "b": evaluate_b, "c": evaluate_c, "d": evaluate_d}[args.set]
        parts = [table(n, PROBLEMS[n](args.seed_offset), fn) for n in names]
    header = (f"# LMNNMetric on plain iris, round 2: shrinking the minor directions\n\nRun on "
              f"{datetime.now(timezone.utc).isoformat(timespec='seconds')} with `PYTHONPATH=. "
              f"python benchmarks/studies/lmnn_iris_shrink.py --set={args.set} --only={args.only} "
              f"--seed-offset={args.seed_offset}` (load "
              f"average {os.getloadavg()[0]:.1f} at the end); protocol in the script's "
              f"docstring.\n\n")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"lmnn_iris_shrink{'_' + args.tag if args.tag else ''}.md"
    out.write_text(header + "\n".join(parts))


if __name__ == "__main__":
    main()
