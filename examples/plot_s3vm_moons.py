"""
=======================================================================
Semi-supervised SVM by triply stochastic gradients on moons and circles
=======================================================================

:class:`skstoch.S3VMClassifier` trains a kernel S3VM (RBF kernel through random Fourier features
drawn fresh at every iteration) from a handful of labels and many unlabeled points. Its default
(``solver="tsg_laplacian"``) adds a Laplacian term, a class-balance constraint, an intercept and
its own C* rule to the paper's TSGS3VM; ``solver="tsgs3vm"`` is the paper's method exactly. This
example shows

1. decision boundaries on two moons and two circles with 10 labels: the paper's TSGS3VM, our
   default, ``SVC`` on the labeled points only, ``LabelSpreading`` and
   ``SelfTrainingClassifier(SVC)``;
2. the same comparison over several label draws, with the spread;
3. fit time against the number of points (the paper's Fig. 2);
4. test error against iterations (the paper's Fig. 4) for the paper's method, against the
   paper's FRS3VM baseline (one fixed block of random features) on the same objective.

It ends by recording the paper's claims with our verdicts (``examples/_reproduction.py``).
Set ``SKSTOCH_EXAMPLE_FAST=1`` for a quick run with smaller sizes and fewer label draws.
"""
import os
import time
from pathlib import Path

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST", "0") not in ("", "0")
if FAST:
    matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_circles, make_moons
from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier
from sklearn.svm import SVC

from skstoch import S3VMClassifier
from skstoch.datasets import make_semisupervised

try:
    from _reproduction import claim, record
except ImportError:  # run from another directory (sphinx-gallery runs it from examples/)
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _reproduction import claim, record

N = 300 if FAST else 1000
N_DRAWS = 3 if FAST else 10

# %%
# Decision boundaries with 10 labels
# ----------------------------------
# The unlabeled loss ``max(0, 1 - |f(x)|)`` pushes the boundary away from dense regions; the
# supervised SVC only sees the 10 labeled points.
problems = {
    "moons": (make_moons(N, noise=0.1, random_state=0), 5.0),
    "circles": (make_circles(N, noise=0.05, factor=0.5, random_state=0), 5.0),
}
models = {
    # the paper's objective and C* rule (C* = C n_l / n_u), default budget and step
    "TSGS3VM (paper)": lambda g: S3VMClassifier(solver="tsgs3vm", gamma=g, random_state=0),
    # our default: + Laplacian term, balance constraint, intercept, C* = 0.3 C
    "S3VMClassifier (default)": lambda g: S3VMClassifier(gamma=g, random_state=0),
    "SVC (labeled only)": lambda g: SVC(C=10.0, gamma=g),
    "LabelSpreading (knn)": lambda g: LabelSpreading(kernel="knn", n_neighbors=7),
    # SVC probabilities by Platt scaling (what SVC(probability=True) did; deprecated in 1.9)
    "SelfTraining(SVC)": lambda g: SelfTrainingClassifier(CalibratedClassifierCV(
        SVC(C=10.0, gamma=g), ensemble=False, cv=3)),
}


def fit_model(name, model, X, y_semi, labeled):
    if name.startswith("SVC"):
        return model.fit(X[labeled], y_semi[labeled])
    # LabelSpreading divides by zero-probability rows far from every label (a harmless nan
    # it then replaces); keep its RuntimeWarning out of the output
    with np.errstate(divide="ignore", invalid="ignore"):
        return model.fit(X, y_semi)


def predict(model, X):
    with np.errstate(divide="ignore", invalid="ignore"):   # LabelSpreading, as above
        return model.predict(X)


fig, axes = plt.subplots(len(problems), len(models), figsize=(17, 6.5), squeeze=False)
for row, (pname, ((X, y), gamma)) in enumerate(problems.items()):
    y_semi, labeled = make_semisupervised(y, n_labeled=10, random_state=1)
    xx, yy = np.meshgrid(np.linspace(X[:, 0].min() - 0.3, X[:, 0].max() + 0.3, 120),
                         np.linspace(X[:, 1].min() - 0.3, X[:, 1].max() + 0.3, 120))
    grid = np.c_[xx.ravel(), yy.ravel()]
    for col, (mname, make) in enumerate(models.items()):
        model = fit_model(mname, make(gamma), X, y_semi, labeled)
        acc = np.mean(predict(model, X) == y)
        ax = axes[row, col]
        ax.contourf(xx, yy, predict(model, grid).reshape(xx.shape), alpha=0.25, cmap="coolwarm")
        ax.scatter(X[~labeled, 0], X[~labeled, 1], c="lightgray", s=5)
        ax.scatter(X[labeled, 0], X[labeled, 1], c=y[labeled], cmap="coolwarm", s=60,
                   edgecolor="k")
        ax.set_title(f"{mname}\n{pname}: accuracy {acc:.3f}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
fig.tight_layout()

# %%
# Several label draws (test accuracy, mean and spread)
# ----------------------------------------------------
# One draw of 10 labels decides a lot on these problems: the same methods over ``N_DRAWS``
# label draws, scored on a separate test set of 1,000 points.
draw_acc = {p: {m: [] for m in models} for p in problems}
for pname, ((X, y), gamma) in problems.items():
    make_data = make_moons if pname == "moons" else make_circles
    kwargs = {"noise": 0.1} if pname == "moons" else {"noise": 0.05, "factor": 0.5}
    Xt, yt = make_data(1000, random_state=100, **kwargs)
    for draw in range(N_DRAWS):
        y_semi, labeled = make_semisupervised(y, n_labeled=10, random_state=draw)
        for mname, make in models.items():
            model = fit_model(mname, make(gamma), X, y_semi, labeled)
            draw_acc[pname][mname].append(np.mean(predict(model, Xt) == yt))
fig, axes = plt.subplots(1, len(problems), figsize=(12, 4), squeeze=False)
for ax, (pname, accs) in zip(axes[0], draw_acc.items()):
    ax.boxplot([accs[m] for m in models], showmeans=True)
    ax.set_xticks(range(1, len(models) + 1))
    ax.set_xticklabels([m.replace(" (", "\n(") for m in models], fontsize=7)
    ax.set_ylabel("test accuracy")
    ax.set_title(f"{pname}, 10 labels, {N_DRAWS} label draws")
fig.tight_layout()
for pname, accs in draw_acc.items():
    for mname, a in accs.items():
        print(f"{pname:8s} {mname:26s} {np.mean(a):.3f} +- {np.std(a):.3f}")

# %%
# Fit time against the number of points (paper Fig. 2)
# ----------------------------------------------------
# Memory stays O(T m) for the model; time grows like the number of feature evaluations on the
# sampled batches, not like n^2. LabelSpreading with the rbf kernel builds an n x n matrix.
sizes = [300, 1000, 3000] if FAST else [1000, 4000, 16000, 64000, 256000]
MAX_ITER = 25 if FAST else 300
times = {"S3VMClassifier": [], "TSGS3VM (paper)": [], "LabelSpreading (knn)": []}
for n in sizes:
    X, y = make_moons(n, noise=0.1, random_state=0)
    y_semi, _ = make_semisupervised(y, n_labeled=20, random_state=0)
    # tol=None: exactly MAX_ITER iterations at every n (the cost, not the stopping rule)
    for name, model in [("S3VMClassifier", S3VMClassifier(gamma=5.0, max_iter=MAX_ITER,
                                                          tol=None, random_state=0)),
                        ("TSGS3VM (paper)", S3VMClassifier(solver="tsgs3vm", gamma=5.0,
                                                           max_iter=MAX_ITER, tol=None,
                                                           random_state=0)),
                        ("LabelSpreading (knn)", LabelSpreading(kernel="knn", n_neighbors=7))]:
        start = time.perf_counter()
        model.fit(X, y_semi)
        times[name].append(time.perf_counter() - start)
fig, ax = plt.subplots(figsize=(5, 4))
for name, t in times.items():
    ax.loglog(sizes, t, "o-", label=name)
ax.set_xlabel("number of training points n")
ax.set_ylabel("fit time (s)")
ax.set_title("Fit time vs n (two moons, 20 labels)")
ax.legend()

# %%
# Test error against iterations, TSGS3VM vs FRS3VM (paper Figs. 3-4)
# ------------------------------------------------------------------
# The paper's method (``solver="tsgs3vm"``: its objective, C* = C n_l / n_u, no intercept)
# refitted with increasing ``max_iter``; with a seed and a constant step a shorter fit is
# exactly a prefix of a longer one (``tol=None`` runs exactly ``max_iter``). FRS3VM reuses ONE
# block of ceil(sqrt(n)) random features at every iteration and runs plain SGD on their
# weights for the same objective, the same C, C*, step (eta0 = 0.02) and batch (256): a few
# lines of numpy below. Several label draws.
X, y = make_moons(N * 2, noise=0.1, random_state=0)
Xt, yt = make_moons(2000, noise=0.1, random_state=1)
budgets = [8, 16, 32, 64, 128, 256, 512]
n_draws_iter = 3 if FAST else 5
m = int(np.ceil(np.sqrt(len(X))))


def frs3vm_errors(X, y_semi, C, C_star, eta, B, seed):
    """Test error of FRS3VM after each budget (fixed features, SGD on the paper's objective)."""
    rng = np.random.RandomState(seed)
    omega = rng.normal(scale=np.sqrt(2 * 5.0), size=(2, m))
    b = rng.uniform(0, 2 * np.pi, m)

    def phi(Z):
        return np.sqrt(2.0 / m) * np.cos(Z @ omega + b)

    lab, unl = np.flatnonzero(y_semi != -1), np.flatnonzero(y_semi == -1)
    yl = np.where(y_semi[lab] == 1, 1.0, -1.0)
    w = np.zeros(m)
    errors = []
    for it in range(1, max(budgets) + 1):
        il, iu = rng.randint(len(lab), size=B), rng.randint(len(unl), size=B)
        Pl, Pu = phi(X[lab[il]]), phi(X[unl[iu]])
        fl, fu = Pl @ w, Pu @ w
        gl = np.where(yl[il] * fl < 1, -yl[il], 0.0)
        gu = np.where(np.abs(fu) < 1, -np.sign(fu), 0.0)
        w -= eta * (w + C * (gl @ Pl) / B + C_star * (gu @ Pu) / B)
        if it in budgets:
            errors.append(np.mean((phi(Xt) @ w > 0) != yt))
    return errors


tsg_err, fr_err = [], []
for draw in range(n_draws_iter):
    y_semi, _ = make_semisupervised(y, n_labeled=10, random_state=draw)
    errs = []
    for T in budgets:
        clf = S3VMClassifier(solver="tsgs3vm", gamma=5.0, max_iter=T, tol=None,
                             random_state=0).fit(X, y_semi)
        errs.append(1.0 - clf.score(Xt, yt))
    tsg_err.append(errs)
    fr_err.append(frs3vm_errors(X, y_semi, clf.C_, clf.C_star_, clf.eta0_, 256, draw))
tsg_err, fr_err = np.array(tsg_err), np.array(fr_err)

fig, ax = plt.subplots(figsize=(5, 4))
for errs, style, label in ((tsg_err, "o-", "TSGS3VM (paper)"),
                           (fr_err, "s--", f"FRS3VM (fixed {m} features)")):
    ax.errorbar(budgets, errs.mean(axis=0), yerr=errs.std(axis=0), fmt=style, capsize=3,
                label=label)
ax.set_xscale("log")
ax.set_xlabel("iterations (batch 256)")
ax.set_ylabel(f"test error (mean +- std, {n_draws_iter} label draws)")
ax.set_title("Test error vs iterations (two moons, 10 labels)")
ax.legend()

# %%
# The paper's claims and our verdicts
# -----------------------------------
# Claims are tested on the paper's method (``solver="tsgs3vm"``); what our default does on the
# same protocol is a separate row. Verdicts are computed from the numbers above.
# iterations to converge: the first budget from which the test error stays within 1 point of
# the error at the largest budget, per draw
conv_iter = [budgets[min(k for k in range(len(budgets)) if np.all(e[k:] <= e[-1] + 0.01))]
             for e in tsg_err]
median_conv = float(np.median(conv_iter))
peers = ["LabelSpreading (knn)", "SelfTraining(SVC)"]


def mean_acc(pname, mname):
    return float(np.mean(draw_acc[pname][mname]))


def summary(mname):
    return "; ".join(f"{p} {mean_acc(p, mname):.3f} +- {np.std(draw_acc[p][mname]):.3f}"
                     for p in problems)


best_peer = {p: max(mean_acc(p, q) for q in peers) for p in problems}
paper_close = all(mean_acc(p, "TSGS3VM (paper)") >= best_peer[p] - 0.01 for p in problems)
paper_above_svc = all(mean_acc(p, "TSGS3VM (paper)") >= mean_acc(p, "SVC (labeled only)")
                      for p in problems)
ours_close = all(mean_acc(p, "S3VMClassifier (default)") >= best_peer[p] - 0.01
                 for p in problems)
protocol_draws = (f"moons and circles, n={N}, 10 labels, {N_DRAWS} label draws, 1,000 test "
                  "points; gamma=5 for every kernel method; S3VM budget: the estimator's "
                  "defaults (64 features x up to 300 iterations, batch 256, eta0=0.02)")
tsg_final, fr_final = tsg_err[:, -1], fr_err[:, -1]
tsg_wins = int(np.sum(tsg_final <= fr_final))
from _reproduction import ROOT  # noqa: E402  (the repository root; no __file__ in the gallery)

bench = ROOT / "benchmarks" / "results" / "s3vm_accuracy_summary.md"
bench_line = next((line for line in bench.read_text().splitlines()
                   if "target met on" in line), "") if bench.exists() else ""
claims = [
    claim("TSGS3VM generalises like other semi-supervised methods (Fig. 3)",
          protocol=protocol_draws + ". The paper's S3VM baselines (BLS3VM, S3VMlight, QN-S3VM) "
          "are not available offline; peers are LabelSpreading(knn) and SelfTraining(SVC)",
          ours="TSGS3VM " + summary("TSGS3VM (paper)") + " | LabelSpreading "
          + summary("LabelSpreading (knn)") + " | SelfTraining " + summary("SelfTraining(SVC)")
          + " | SVC labeled only " + summary("SVC (labeled only)"),
          verdict=("reproduced" if paper_close else "partly" if paper_above_svc
                   else "refuted"),
          why="reproduced: within 1 point of the best peer on both problems; partly: only "
              "above the supervised SVC; refuted: below it. With the paper's C* = C n_l / n_u "
              f"the unlabeled term weighs 10/{N - 10} of the labeled one here."),
    claim("TSGS3VM converges to a good result in about 64-128 iterations (Fig. 4)",
          protocol=f"two moons, n={2 * N}, 10 labels, {n_draws_iter} label draws, batch 256, "
          f"64 features per iteration, eta0=0.02, budgets {budgets}; converged = first budget "
          "from which the test error stays within 1 point of the error at 512 iterations",
          ours=f"iterations to converge per draw {conv_iter} (median {median_conv:g})",
          verdict=("reproduced" if max(conv_iter) <= 128 else "partly" if median_conv <= 128
                   else "refuted"),
          why="every draw <= 128: reproduced; the median <= 128: partly (some draws need "
              "more); else refuted"),
    claim("TSGS3VM beats FRS3VM (fixed random features) at equal budget (Fig. 3)",
          protocol=f"the paper's objective for both, same C, C*, step and batch, "
                   f"{max(budgets)} iterations, FRS3VM with ceil(sqrt(n)) = {m} fixed features, "
                   f"{n_draws_iter} label draws",
          ours=f"test error TSGS3VM {tsg_final.mean():.3f} +- {tsg_final.std():.3f}, FRS3VM "
               f"{fr_final.mean():.3f} +- {fr_final.std():.3f}; TSGS3VM <= FRS3VM on "
               f"{tsg_wins}/{n_draws_iter} draws",
          verdict=("reproduced" if tsg_wins * 3 >= 2 * n_draws_iter
                   and tsg_final.mean() <= fr_final.mean()
                   else "partly" if tsg_final.mean() <= fr_final.mean() + 0.01
                   else "refuted"),
          why="reproduced: not worse on at least 2/3 of the draws and on average; partly: on "
              "average within 1 point"),
    claim("Fig. 2: TSGS3VM's running time scales to large training sets (one million "
          "samples), where other S3VM solvers run out of memory",
          protocol=f"two moons, 20 labels, n in {sizes}, gamma=5, {MAX_ITER} iterations "
                   "(tol=None), solver='tsgs3vm'; wall time of one fit on a shared machine",
          ours="fit time " + ", ".join(f"n={n}: {t:.2f} s" for n, t in
                                       zip(sizes, times["TSGS3VM (paper)"]))
               + f"; growth {times['TSGS3VM (paper)'][-1] / times['TSGS3VM (paper)'][0]:.1f}x "
                 f"for {sizes[-1] // sizes[0]}x the rows",
          verdict=("partly" if times["TSGS3VM (paper)"][-1] / times["TSGS3VM (paper)"][0]
                   <= sizes[-1] / sizes[0] / 4 else "refuted"),
          why="rule: the time at a fixed number of iterations grows clearly sublinearly in n "
              "(partly: at most a quarter of the growth in rows; refuted otherwise); the "
              "paper's S3VM baselines "
              "(BLS3VM, S3VMlight, BGS3VM) are not available offline, so 'faster than the "
              "other solvers' is not tested, and the largest n run here is "
              f"{sizes[-1]:,} (benchmarks/results/s3vm_scaling.md runs the default to 10^6)"),
    claim("Our default (TSGS3VM + Laplacian, balance, intercept, C* = 0.3 C) matches the best "
          "peer", algorithm="ours", protocol=protocol_draws,
          ours="default " + summary("S3VMClassifier (default)"),
          verdict="reproduced" if ours_close else "partly",
          why="within 1 point of the best peer on both problems: reproduced; else partly"),
    claim("Our default is within 0.5 points of the best peer on 12 of 12 benchmark settings",
          algorithm="ours",
          protocol="benchmarks/bench_s3vm.py accuracy: 6 datasets x {10, 50} labels, 10 label "
                   "draws (benchmarks/results/s3vm_accuracy_summary.md)",
          ours=bench_line or "results file not found",
          verdict=("reproduced" if "12 of 12" in bench_line else "not attempted"
                   if not bench_line else "partly"),
          why="read from the benchmark's result file, regenerated by "
              "`PYTHONPATH=. python benchmarks/bench_s3vm.py accuracy`"),
]
record("003",
       "plot_s3vm_moons.py", claims, fast=FAST)
for c in claims:
    print(f"[{c['algorithm']}] {c['verdict']:12s} {c['claim']}: {c['ours']}")

if not FAST and matplotlib.get_backend().lower() != "agg":
    plt.show()
