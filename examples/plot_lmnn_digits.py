"""
LMNN metric learning with a logarithmic number of projections (digits)
======================================================================

The protocol of Fig. 2 of Chen et al. (paper 001), on scikit-learn's digits instead of Cora
(not available offline): the LMNN objective (Eq. 21) against iterations and against time for
Epro-SGD, Epro-ORDA, projected SGD (one projection per iteration) and OneProj (one projection
at the end), with the number of projections each solver performs.  A second figure shows the
learned metric's 2-D projection next to PCA's; a third, held-out 3-NN accuracy over several
splits: the paper's recipe gives metrics below Euclidean 3-NN on digits, our defaults and
NCA do not.  The last cell records each claim with its verdict.

Set ``SKSTOCH_EXAMPLE_FAST=1`` for a quick run on a subsample.
"""
import os
import sys
import time

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST", "0") not in ("", "0")
if FAST:
    matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from skstoch import LMNNMetric  # noqa: E402

# %%
# Data: standardized digits, 75% / 25% split (a subsample in fast mode).
X, y = load_digits(return_X_y=True)
if FAST:
    X, y = X[:400], y[:400]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0,
                                                    stratify=y)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
max_iter = 500 if FAST else 4000

# %%
# The four solvers of the paper on the same problem: the same triplets (the paper's random
# recipe, drawn once, so that the objective is one fixed function) and the same budget of
# ``max_iter`` stochastic gradients of ``batch_size=16`` triplets.  Epro-SGD and Epro-ORDA
# follow the paper's budget rule (whole epochs only, ``use_full_budget=False``), so they use
# about half of ``max_iter``.  ``epro_orda (u_t)`` is Epro-ORDA with the stochastic gradient
# at ORDA's extrapolated point u_t instead of x_t (``orda_gradient_point='u'``).
#
# As in the paper, every method gets its own step size (and penalty ``lam`` for the three
# penalized solvers): the one with the lowest training objective after a quarter of the
# budget, from ``eta0`` in {1, 3, 10} x the automatic step and ``lam`` in {1, 10, 30, 100}.  One
# shared step would not be a fair comparison: ORDA's inner step is ``eta / t^1.5``, so at the
# automatic (SGD-calibrated) step it barely moves, and projected SGD tolerates larger steps
# than the unprojected epochs, which leave the feasible set between projections unless
# ``lam`` is large (the default ``lam=1`` was chosen for k-NN accuracy, not for the objective).
# BLAS runs on one thread, so that the CPU times compare the algorithms rather than
# OpenBLAS's idle threads (on a busy machine they multiplied Epro's CPU time by about 7).
solvers = {"epro_sgd": {}, "epro_orda": {}, "epro_orda (u_t)": {"orda_gradient_point": "u"},
           "sgd": {}, "oneproj": {}}
common = dict(triplet_strategy="random", use_full_budget=False, tol=0, random_state=0)
auto_eta0 = LMNNMetric(max_iter=8, **common).fit(X_train, y_train).eta0_
tuned = {}
with threadpool_limits(limits=1):
    for name, extra in solvers.items():
        solver = name.split()[0]
        lams = [1.0] if solver == "sgd" else [1.0, 10.0, 30.0, 100.0]
        trials = [(LMNNMetric(solver=solver, max_iter=max_iter // 4, eta0=f * auto_eta0,
                              lam=lam, **common, **extra).fit(X_train, y_train).objective_,
                   f, lam)
                  for f in (1, 3, 10) for lam in lams]
        tuned[name] = min(trials)[1:]
        print(f"{name:15s} eta0 = {tuned[name][0]:2d} x auto, lam = {tuned[name][1]:5.1f}")


def cpu_clock(times):
    """A callback recording the process CPU time of every history record (the paper's
    Fig. 2 plots CPU time; ``history_['time']`` is wall-clock time)."""
    start = time.process_time()

    def callback(record):
        times.append(time.process_time() - start)
        return False

    return callback


fits, cpu = {}, {}
with threadpool_limits(limits=1):
    for name, extra in solvers.items():
        f, lam = tuned[name]
        cpu[name] = []
        fits[name] = LMNNMetric(solver=name.split()[0], max_iter=max_iter,
                                eta0=f * auto_eta0, lam=lam, callback=cpu_clock(cpu[name]),
                                **common, **extra).fit(X_train, y_train)

fig, (ax_it, ax_time) = plt.subplots(1, 2, figsize=(11, 4))
for solver, est in fits.items():
    h = est.history_
    label = f"{solver} ({est.n_projections_} projections)"
    ax_it.plot(h["n_gradients"], h["objective"], marker="o", label=label)
    ax_time.plot(cpu[solver], h["objective"], marker="o", label=label)
ax_it.set(xscale="log", yscale="log", xlabel="stochastic gradient calls",
          ylabel="objective (Eq. 21)", title="Objective vs iterations")
ax_time.set(xscale="log", yscale="log", xlabel="CPU seconds", ylabel="objective (Eq. 21)",
            title="Objective vs CPU time")
ax_it.legend()
fig.tight_layout()

for solver, est in fits.items():
    acc = KNeighborsClassifier(3).fit(est.transform(X_train), y_train).score(
        est.transform(X_test), y_test)
    print(f"{solver:15s} objective={est.objective_:.4f} projections={est.n_projections_:5d} "
          f"gradient calls={est.n_iter_:5d} CPU s={cpu[solver][-1]:.3f} "
          f"3-NN accuracy={acc:.4f}")

# %%
# What to look for.  The projection counts are the paper's: at most log2(T/4) for Epro-SGD
# (8 here), log2(T/8) for Epro-ORDA, T for projected SGD, 1 for OneProj.  Per iteration,
# projected SGD reaches the lowest objective (it restores feasibility at every step).  Per
# CPU second the Epro solvers are ahead (full run, measured: Epro-SGD reached 1.25 in
# 0.1 s, projected SGD needed about 0.4 s for the same value), because an Epro iteration
# costs a few d x d mat-vecs while an SGD iteration adds a (partial) eigendecomposition:
# this is the paper's claim (Fig. 2, right), and the gap grows with d.  Projected SGD
# still ends lowest here because d=64 makes its projections cheap (and its baseline uses
# LAPACK's partial eigensolver, stronger than the paper's full SVD).  With the automatic
# step and the default ``lam=1`` for every solver, Epro-SGD ended at 3.3, Epro-ORDA at 13,
# and OneProj's projected average rose late in the run (its iterates drift out of
# ``A >= epsilon I`` and the single final projection pays for it).  The paper's statement that Epro "converges
# after 1024 iterations" is not reproduced: with step sizes that move A at all (the paper's
# 1e-5 does not on standardized data), no solver has converged after 4,000 iterations.

# %%
# The learned metric (default settings: k-NN triplets at this size) restricted to its two leading
# directions, next to the first two principal components.
lmnn = LMNNMetric(n_components=2, random_state=0).fit(X_train, y_train)
pca = PCA(n_components=2).fit(X_train)
fig2, axes = plt.subplots(1, 2, figsize=(11, 5))
for ax, (name, Z) in zip(axes, [("PCA", pca.transform(X_test)),
                                ("LMNNMetric (top 2 directions)", lmnn.transform(X_test))]):
    ax.scatter(Z[:, 0], Z[:, 1], c=y_test, cmap="tab10", s=12)
    ax.set_title(name)
fig2.tight_layout()

# %%
# Accuracy, honestly.  The paper reports no accuracy (its Fig. 2 is the objective only), and
# a lower objective on the paper's recipe (random triplets, the objective-tuned steps above)
# need not give a better k-NN metric: on standardized digits Euclidean 3-NN is already very
# strong (98.2% in the full-data measurement, where the paper-recipe metrics gave 92 to
# 97%).  We refit each solver with its tuned settings, our defaults (k-NN triplets) and NCA on
# ``n_splits`` stratified splits and compare held-out 3-NN accuracy with Euclidean 3-NN.
from sklearn.model_selection import StratifiedShuffleSplit  # noqa: E402
from sklearn.neighbors import NeighborhoodComponentsAnalysis  # noqa: E402

try:  # examples/_reproduction.py: sphinx-gallery runs examples from examples/ without __file__
    import _reproduction  # noqa: E402
except ImportError:  # run from another directory
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _reproduction  # noqa: E402

X_all, y_all = load_digits(return_X_y=True)
if FAST:
    X_all, y_all = X_all[:400], y_all[:400]
n_splits = 2 if FAST else 5
methods = {"Euclidean": None, "NCA": "nca", "defaults": "ours",
           **{name: name for name in solvers}}
accuracy = {name: [] for name in methods}
splits = StratifiedShuffleSplit(n_splits, test_size=0.25, random_state=0).split(X_all, y_all)
with threadpool_limits(limits=1):
    for train, test in splits:
        sc = StandardScaler().fit(X_all[train])
        Xtr, Xte = sc.transform(X_all[train]), sc.transform(X_all[test])
        ytr, yte = y_all[train], y_all[test]
        for name, kind in methods.items():
            if kind is None:
                model = None
            elif kind == "nca":
                model = NeighborhoodComponentsAnalysis(random_state=0).fit(Xtr, ytr)
            elif kind == "ours":
                model = LMNNMetric(random_state=0).fit(Xtr, ytr)
            else:
                f, lam = tuned[name]
                model = LMNNMetric(solver=name.split()[0], max_iter=max_iter,
                                   eta0=f * auto_eta0, lam=lam, **common,
                                   **solvers[name]).fit(Xtr, ytr)
            Ztr, Zte = (Xtr, Xte) if model is None else (model.transform(Xtr),
                                                         model.transform(Xte))
            accuracy[name].append(KNeighborsClassifier(3).fit(Ztr, ytr).score(Zte, yte))
mean = {name: float(np.mean(a)) for name, a in accuracy.items()}
std = {name: float(np.std(a, ddof=1)) for name, a in accuracy.items()}
fig3, ax = plt.subplots(figsize=(8, 4))
names = list(methods)
ax.bar(names, [mean[n] for n in names], yerr=[std[n] for n in names], capsize=3,
       color=["grey", "tab:green", "tab:blue"] + ["tab:orange"] * len(solvers))
ax.axhline(mean["Euclidean"], color="grey", ls="--", lw=1)
ax.set(ylim=(min(mean.values()) - 0.05, 1.0), ylabel="held-out 3-NN accuracy",
       title=f"digits, mean +- std over {n_splits} splits (orange: the paper's recipe)")
ax.tick_params(axis="x", rotation=30)
fig3.tight_layout()
for name in names:
    print(f"{name:15s} 3-NN accuracy {mean[name]:.4f} +- {std[name]:.4f}")

# %%
# The paper's claims as we tested them (written to ``doc/reproduction/`` in full mode).
h_sgd = fits["epro_sgd"].history_
target = float(h_sgd["objective"][-1])


def cpu_to_reach(name, value):
    """CPU seconds at the first record whose objective is <= value (None: never)."""
    hit = np.flatnonzero(fits[name].history_["objective"] <= value)
    return float(cpu[name][hit[0]]) if hit.size else None


reach = {name: cpu_to_reach(name, target) for name in solvers}
others = {n: t for n, t in reach.items() if n != "epro_sgd"}
faster = all(t is None or t > reach["epro_sgd"] for t in others.values())


best_objective = min(float(fits[n].history_["objective"].min()) for n in solvers)


def gap_after(name, n_grad=1024):
    """Relative gap to the best objective any solver reached, at the first record after
    n_grad stochastic gradients (the last record if the run is shorter)."""
    h = fits[name].history_
    at = min(int(np.searchsorted(h["n_gradients"], n_grad)), len(h["objective"]) - 1)
    return float((h["objective"][at] - best_objective) / abs(best_objective))


gap = {name: gap_after(name) for name in solvers}
if max_iter < 2048:
    converged_verdict = "not attempted"
elif gap["epro_sgd"] < 0.01 and all(gap[n] >= 0.01 for n in solvers if "epro" not in n):
    converged_verdict = "reproduced"
else:
    converged_verdict = "refuted"
protocol = (f"digits {'subsample 400' if FAST else '1797'} x 64 standardized, 75/25 split; "
            f"paper's random recipe (k=3 partners, 3 impostors), batch 16, T={max_iter}, "
            "use_full_budget=False, per-solver eta0 and lam tuned on the training objective")
claims = [
    _reproduction.claim(
        "Epro needs only O(log T) projections (SGD one per iteration, OneProj one)",
        protocol=protocol,
        ours={n: int(fits[n].n_projections_) for n in solvers},
        verdict="reproduced" if fits["epro_sgd"].n_projections_ <= np.log2(max_iter)
        else "refuted",
        why="projection counts of the fits"),
    _reproduction.claim(
        "Epro reaches its objective in less computation time than the other solvers "
        "(Fig. 2 right)",
        protocol=protocol + "; CPU seconds, one BLAS thread",
        ours={"objective_epro_sgd": target,
              "cpu_s_to_reach": {n: reach[n] for n in solvers}},
        verdict="reproduced" if faster else "partly",
        why="CPU time at the first record at or below Epro-SGD's final objective (None: "
            "never reached); d=64 makes the baselines' projections cheap"),
    _reproduction.claim(
        "Epro converges after 1024 iterations, the other algorithms need more",
        protocol=protocol,
        ours={"best_objective_any_solver": best_objective,
              "relative_gap_after_1024": gap},
        verdict=converged_verdict,
        why="relative gap to the best objective reached by any solver, at the first record "
            "after 1024 stochastic gradients (< 1% counts as converged); not attempted when "
            "the budget is below 2048 (fast mode)"),
    _reproduction.claim(
        "Sanity check (not a paper number): the paper's method (Epro-SGD on the paper's "
        "recipe) gives 3-NN accuracy >= Euclidean",
        protocol=protocol + f"; mean over {n_splits} stratified splits",
        ours={n: round(mean[n], 4) for n in ["Euclidean", "NCA", *solvers]},
        verdict="reproduced" if mean["epro_sgd"] >= mean["Euclidean"] else "refuted",
        why="held-out 3-NN accuracy of Epro-SGD (the other solvers' numbers beside it); the "
            "paper reports no accuracy"),
    _reproduction.claim(
        "Our defaults (k-NN triplets, automatic step and budget) give 3-NN accuracy "
        ">= Euclidean",
        protocol="same splits, LMNNMetric(random_state=0)",
        ours={n: round(mean[n], 4) for n in ["Euclidean", "NCA", "defaults"]},
        verdict="reproduced" if mean["defaults"] >= mean["Euclidean"] else "refuted",
        why="held-out 3-NN accuracy", algorithm="ours"),
]
print(_reproduction.record("001", "plot_lmnn_digits.py", claims, fast=FAST))

if matplotlib.get_backend().lower() != "agg":
    plt.show()
