"""Round 6: does the optional Laplacian (manifold) term of S3VMClassifier close the gaps to
LabelSpreading(knn)?  Round-4 protocol (bench_s3vm.py accuracy: 12 settings, 10 label draws,
the same draws for every method, paired differences to the best peer), S3VM with
manifold_weight in WEIGHTS (n_neighbors=10, everything else default).

The default weight is chosen by a training-side criterion only: labeled cross-validation
(3 folds over the labeled rows of the first CV_DRAWS draws; the held-out labels become
unlabeled rows of the fit), mean accuracy over the 12 settings. Test accuracies never enter
the choice.

Run: PYTHONPATH=. python benchmarks/s3vm_manifold.py  -> results/s3vm_manifold.md/.json
"""
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_s3vm import N_DRAWS, datasets, paired_summary, scale_gamma, semi_models  # noqa: E402

from skstoch import S3VMClassifier  # noqa: E402
from skstoch.datasets import make_semisupervised  # noqa: E402

WEIGHTS = [0.0, 10.0, 30.0, 100.0]
CV_DRAWS = 3
CV_FOLDS = 3
RESULTS = Path(__file__).resolve().parent / "results"


def ours(gamma, mw):
    return S3VMClassifier(gamma=gamma, random_state=0, manifold_weight=mw)


def labeled_cv(Xtr, ys, gamma, mw):
    lab = np.flatnonzero(ys != -1)
    skf = StratifiedKFold(CV_FOLDS, shuffle=True, random_state=0)
    correct = 0
    for fit_idx, val_idx in skf.split(lab, ys[lab]):
        yf = ys.copy()
        yf[lab[val_idx]] = -1
        m = ours(gamma, mw).fit(Xtr, yf)
        correct += int(np.sum(m.predict(Xtr[lab[val_idx]]) == ys[lab[val_idx]]))
    return correct / lab.shape[0]


def main():
    warnings.simplefilter("ignore")
    rows, cv = [], {}
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for name, (X, y) in datasets().items():
        X = StandardScaler().fit_transform(X)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
        gamma = scale_gamma(Xtr)
        for n_labeled in (10, 50):
            setting = f"{name}_{n_labeled}labels"
            draws = [make_semisupervised(ytr, n_labeled=n_labeled, random_state=s)[0]
                     for s in range(N_DRAWS)]
            per_draw, peers, mine = {}, [], []
            for label, lib, factory in semi_models(gamma):
                if lib == "skstoch":
                    continue
                per_draw[label] = np.array([factory(Xtr, ys).score(Xte, yte) for ys in draws])
                peers.append(label)
            for mw in WEIGHTS:
                label = f"S3VM manifold_weight={mw:g}"
                t = time.process_time()
                per_draw[label] = np.array([ours(gamma, mw).fit(Xtr, ys).score(Xte, yte)
                                            for ys in draws])
                cpu = time.process_time() - t
                mine.append(label)
                cv[(setting, mw)] = float(np.mean([labeled_cv(Xtr, ys, gamma, mw)
                                                   for ys in draws[:CV_DRAWS]]))
                print(setting, label, f"{100 * per_draw[label].mean():.2f}",
                      f"cv={cv[(setting, mw)]:.3f} cpu={cpu:.1f}s", flush=True)
            for row in paired_summary(per_draw, peers, mine):
                row["setting"] = setting
                row["labeled_cv"] = cv[(setting, float(row["case"].split("=")[1]))]
                rows.append(row)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    cv_mean = {mw: float(np.mean([cv[(s, w)] for (s, w) in cv if w == mw])) for mw in WEIGHTS}
    chosen = max(WEIGHTS, key=lambda w: (round(cv_mean[w], 4), -w))
    write(rows, cv_mean, chosen, cpu, wall)


def write(rows, cv_mean, chosen, cpu, wall):
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "s3vm_manifold.json").write_text(json.dumps(
        {"rows": rows, "cv_mean": {str(k): v for k, v in cv_mean.items()}, "chosen": chosen,
         "cpu_s": cpu, "wall_s": wall}, indent=1))
    lines = ["# s3vm_manifold", "",
             "Optional Laplacian term (manifold_weight = gamma_M, absolute; n_neighbors=10), round-4 "
             "protocol: test accuracy (%) over 10 label draws, paired diff to the best peer "
             "(+- se). `cv` = labeled 3-fold CV accuracy (first 3 draws; training side only).",
             "", "| setting | manifold_weight | S3VM | best peer | peer | diff +- se | target | cv |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        target = "met" if r["target_met"] else (
            "missed (within 2 se)" if r["within_noise_of_target"] else "missed")
        lines.append(f"| {r['setting']} | {r['case'].split('=')[1]} | {r['ours_mean']:.2f} +- "
                     f"{r['ours_std']:.1f} | {r['best_peer']} | {r['peer_mean']:.2f} | "
                     f"{r['diff_mean']:+.2f} +- {r['diff_se']:.2f} | {target} | "
                     f"{r['labeled_cv']:.3f} |")
    lines += ["", "Tally (target: diff >= -0.5):", ""]
    for mw in cv_mean:
        sub = [r for r in rows if r["case"].endswith(f"={mw:g}")]
        met = sum(r["target_met"] for r in sub)
        worse = sum((not r["within_noise_of_target"]) for r in sub)
        sig_worse = sum(r["significant"] and r["diff_mean"] < 0 for r in sub)
        lines.append(f"- manifold_weight={mw:g}: met {met}/12, missed beyond 2 se {worse}, "
                     f"significantly below the best peer {sig_worse}; mean labeled CV "
                     f"{cv_mean[mw]:.4f}; mean test accuracy "
                     f"{np.mean([r['ours_mean'] for r in sub]):.2f}")
    lines += ["", f"Chosen by labeled CV (highest mean CV accuracy, ties to the smaller weight): "
              f"manifold_weight={chosen:g}.", "",
              f"Whole run: {wall:.0f} s wall, {cpu:.0f} s CPU (2 shared cores).", "",
              "Run: `PYTHONPATH=. python benchmarks/s3vm_manifold.py`"]
    (RESULTS / "s3vm_manifold.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
