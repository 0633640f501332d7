"""Round 10: should gamma="cv" also try NARROWER kernels than 'scale'?

Development protocol ONLY (the datasets, split seed and label seeds 100-104 of
s3vm_default_selection.py, disjoint from bench_s3vm.py). The current default grid
(``_GAMMA_CV_FACTORS`` = scale x {1/4, 1/2, 1}) can only go wider than 'scale'. Candidate grids
that can also go narrower are scored with the estimator's OWN CV code path: every draw fits
``S3VMClassifier(gamma="cv")`` once with ``_GAMMA_CV_FACTORS`` temporarily set to the union
{1/4, 1/2, 1, 2, 4}, which yields the held-out hinge of every factor (each factor's 3 fold fits
do not depend on the other factors, so a sub-grid's scores are exactly what the estimator would
compute with that sub-grid). A grid picks its lowest held-out hinge; ties go to the widest
kernel (smallest gamma), except that the CURRENT grid is evaluated with the estimator's actual
code (ties -> the largest factor, 'scale'); the number of exact ties is reported. Each factor's
final fit (gamma = factor x scale, as the estimator's final fit) is scored on the test split.
The 10-label settings fall back to 'scale' for every grid (< 30 labels) and are included in the
mean as in round 8.

Adoption rule (fixed before the run, brief of round 10): a grid replaces the current default
only if it raises the development mean and loses more than 0.5 points on no setting versus the
current default.

Run (per dataset, so the CPU lock is not held for long, then the report):
  PYTHONPATH=. python benchmarks/s3vm_gamma_grid_dev.py run <dataset>   (one of dev_datasets())
  PYTHONPATH=. python benchmarks/s3vm_gamma_grid_dev.py report
-> results/s3vm_gamma_grid_dev.md/.json (raw per-draw data in results/s3vm_gamma_grid_dev_raw/)
"""
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).parent))
from s3vm_default_selection import SEEDS, dev_datasets  # noqa: E402

import skstoch.semi_supervised as ss  # noqa: E402
from skstoch import S3VMClassifier  # noqa: E402
from skstoch.datasets import make_semisupervised  # noqa: E402

UNION = (0.25, 0.5, 1.0, 2.0, 4.0)
CURRENT = (0.25, 0.5, 1.0)
GRIDS = {
    "current {1/4,1/2,1}": CURRENT,
    "{1/4,1/2,1,2,4}": (0.25, 0.5, 1.0, 2.0, 4.0),
    "{1/2,1,2,4}": (0.5, 1.0, 2.0, 4.0),
    "{1/4,1/2,1,2}": (0.25, 0.5, 1.0, 2.0),
}
RESULTS = Path(__file__).parent / "results"
RAW = RESULTS / "s3vm_gamma_grid_dev_raw"


def run_dataset(name):
    X, y = dev_datasets()[name]
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=1, stratify=y)
    g = 1.0 / (Xtr.shape[1] * Xtr.var())
    out = {"dataset": name, "scale": g, "settings": {}}
    saved = ss._GAMMA_CV_FACTORS
    for n_labeled in (10, 50):
        draws = []
        for s in SEEDS:
            ys = make_semisupervised(ytr, n_labeled=n_labeled, random_state=s)[0]
            rec = {"seed": s}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if n_labeled >= 30:
                    ss._GAMMA_CV_FACTORS = UNION
                    try:
                        w, c = time.time(), time.process_time()
                        m = S3VMClassifier(random_state=0).fit(Xtr, ys)   # gamma="cv"
                        rec["cv_wall"], rec["cv_cpu"] = time.time() - w, time.process_time() - c
                    finally:
                        ss._GAMMA_CV_FACTORS = saved
                    assert m.gamma_cv_scores_ is not None and len(m.gamma_cv_scores_) == 5
                    rec["cv_hinge"] = [float(v) for v in m.gamma_cv_scores_]
                    accs = []
                    for f in UNION:
                        w, c = time.time(), time.process_time()
                        mf = S3VMClassifier(gamma=f * g, random_state=0).fit(Xtr, ys)
                        accs.append(100 * mf.score(Xte, yte))
                        if f == 1.0:
                            rec["fit_wall"] = time.time() - w
                            rec["fit_cpu"] = time.process_time() - c
                    rec["test_acc"] = accs
                else:
                    m = S3VMClassifier(random_state=0).fit(Xtr, ys)   # falls back to 'scale'
                    assert m.gamma_cv_scores_ is None and m.gamma_ == g
                    rec["test_acc_scale"] = 100 * m.score(Xte, yte)
            draws.append(rec)
            print(name, n_labeled, rec, flush=True)  # noqa: T201
        out["settings"][str(n_labeled)] = draws
    RAW.mkdir(exist_ok=True)
    (RAW / f"{name}.json").write_text(json.dumps(out, indent=1))


def pick(scores, grid, current):
    idx = [UNION.index(f) for f in grid]
    best = min(scores[i] for i in idx)
    tied = [UNION[i] for i in idx if scores[i] == best]
    # current grid: the estimator's code (ties -> largest factor); new grids: widest kernel
    return (max(tied) if current else min(tied)), len(tied) > 1


def report():
    rows, ties, cost = [], {k: 0 for k in GRIDS}, []
    for name in dev_datasets():
        data = json.loads((RAW / f"{name}.json").read_text())
        for n_labeled, draws in data["settings"].items():
            per = {}
            for label, grid in GRIDS.items():
                accs, picks = [], []
                for rec in draws:
                    if "cv_hinge" in rec:
                        f, tie = pick(rec["cv_hinge"], grid, grid == CURRENT)
                        ties[label] += tie
                        accs.append(rec["test_acc"][UNION.index(f)])
                        picks.append(f)
                    else:
                        accs.append(rec["test_acc_scale"])
                        picks.append(1.0)
                per[label] = (np.array(accs), picks)
            for rec in draws:
                if "cv_wall" in rec:
                    cost.append((rec["cv_wall"], rec["cv_cpu"], rec["fit_wall"], rec["fit_cpu"]))
            rows.append((f"{name}_{n_labeled}labels", per))
    cur = "current {1/4,1/2,1}"
    lines = ["# s3vm_gamma_grid_dev", "",
             "Round 10, development protocol only (s3vm_default_selection.py's 7 datasets, split "
             "seed 1, label seeds 100-104; disjoint from bench_s3vm.py). gamma='cv' = labeled "
             "stratified 3-fold CV scored by the held-out hinge, at >= 30 labels (10-label "
             "settings fall back to 'scale' for every grid). Grids are multiples of 'scale'. "
             "Test accuracy (%), mean over 5 label draws; diff = grid - current default "
             "(paired, +- se over draws); picks = chosen factor per draw.", ""]
    header = "| setting | " + " | ".join(GRIDS) + " |"
    lines += [header, "|---" * (len(GRIDS) + 1) + "|"]
    summary = {}
    for label in GRIDS:
        means = [per[label][0].mean() for _, per in rows]
        diffs = [(per[label][0] - per[cur][0]) for _, per in rows]
        summary[label] = {"mean": float(np.mean(means)),
                          "worst_diff": float(min(d.mean() for d in diffs)),
                          "fits_per_cv": 3 * len(GRIDS[label])}
    for setting, per in rows:
        cells = []
        for label in GRIDS:
            a, picks = per[label]
            p = ",".join(f"{v:g}" for v in picks)
            if label == cur:
                cells.append(f"{a.mean():.2f} ({p})")
            else:
                d = a - per[cur][0]
                cells.append(f"{a.mean():.2f}, {d.mean():+.2f} +- "
                             f"{d.std(ddof=1) / np.sqrt(len(d)):.2f} ({p})")
        lines.append(f"| {setting} | " + " | ".join(cells) + " |")
    # oracle: best single factor per setting (not a rule; shows what the grid could reach)
    lines += ["", "| grid | dev mean | worst per-setting diff vs current | fits per CV "
              "(extra fits before the final fit) | exact hinge ties | adopt? |",
              "|---|---|---|---|---|---|"]
    base = summary[cur]["mean"]
    for label, s in summary.items():
        adopt = "(current)" if label == cur else (
            "yes" if s["mean"] > base and s["worst_diff"] >= -0.5 else "no")
        s["adopt"] = adopt
        lines.append(f"| {label} | {s['mean']:.3f} | {s['worst_diff']:+.2f} | "
                     f"{s['fits_per_cv']} | {ties[label]} | {adopt} |")
    c = np.array(cost)
    per_fit = c[:, 1].sum() / (len(c) * 15)
    lines += ["", f"Cost: one CV fit over the 5-factor union (15 fold fits + 1 final fit) took "
              f"median {np.median(c[:, 0]):.2f} s wall / {np.median(c[:, 1]):.2f} s CPU; one "
              f"gamma='scale' fit median {np.median(c[:, 2]):.3f} s wall / "
              f"{np.median(c[:, 3]):.3f} s CPU. A grid of k "
              f"factors costs 3k extra fits: 9 (current), 12 (4 factors), 15 (5 factors).",
              "", "Adoption rule (fixed before the run): raise the dev mean and lose more than "
              "0.5 points on no setting versus the current default.", "",
              "Run: `for d in moons_n0.15 moons_n0.05 circles_n0.08 digits_2v5 digits_0v6 "
              "digits_5v9 digits_7v9; do PYTHONPATH=. python benchmarks/s3vm_gamma_grid_dev.py "
              "run $d; done; PYTHONPATH=. python benchmarks/s3vm_gamma_grid_dev.py report`"]
    (RESULTS / "s3vm_gamma_grid_dev.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "s3vm_gamma_grid_dev.json").write_text(json.dumps(
        {"summary": summary, "ties": ties, "per_fit_cpu_estimate": per_fit}, indent=1))
    print("\n".join(lines))  # noqa: T201


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run_dataset(sys.argv[2])
    else:
        report()
