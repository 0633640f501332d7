"""
LMNN metric learning with a logarithmic number of projections (digits)
======================================================================

The protocol of Fig. 2 of Chen et al. (paper 001), on scikit-learn's digits instead of Cora
(not available offline): the LMNN objective (Eq. 21) against iterations and against time for
Epro-SGD, Epro-ORDA, projected SGD (one projection per iteration) and OneProj (one projection
at the end), with the number of projections each solver performs.  A second figure shows the
learned metric's 2-D projection next to PCA's.

Set ``SKSTOCH_EXAMPLE_FAST=1`` for a quick run on a subsample.
"""
import os
import time

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST", "0") not in ("", "0")
if FAST:
    matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
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

if matplotlib.get_backend().lower() != "agg":
    plt.show()
