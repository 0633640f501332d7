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
# The four solvers of the paper on the same problem (same triplets: the paper's random
# recipe, so that the objective is one fixed function), same step size and budget.
# Epro-SGD follows the paper's budget rule (whole epochs only), so it uses about half
# of ``max_iter``.
# ``epro_orda (u_t)`` is Epro-ORDA with the stochastic gradient at ORDA's extrapolated
# point u_t instead of x_t (``orda_gradient_point='u'``).
solvers = {"epro_sgd": {}, "epro_orda": {}, "epro_orda (u_t)": {"orda_gradient_point": "u"},
           "sgd": {}, "oneproj": {}}
fits = {}
for name, extra in solvers.items():
    fits[name] = LMNNMetric(solver=name.split()[0], triplet_strategy="random",
                            max_iter=max_iter, use_full_budget=False, tol=0, random_state=0,
                            **extra).fit(X_train, y_train)

fig, (ax_it, ax_time) = plt.subplots(1, 2, figsize=(11, 4))
for solver, est in fits.items():
    h = est.history_
    label = f"{solver} ({est.n_projections_} projections)"
    ax_it.plot(h["n_gradients"], h["objective"], marker="o", label=label)
    ax_time.plot(h["time"], h["objective"], marker="o", label=label)
ax_it.set(xscale="log", xlabel="stochastic gradient calls", ylabel="objective (Eq. 21)",
          title="Objective vs iterations")
ax_time.set(xscale="log", xlabel="seconds", ylabel="objective (Eq. 21)",
            title="Objective vs CPU time")
ax_it.legend()
fig.tight_layout()

for solver, est in fits.items():
    acc = KNeighborsClassifier(3).fit(est.transform(X_train), y_train).score(
        est.transform(X_test), y_test)
    print(f"{solver:15s} objective={est.objective_:.4f} projections={est.n_projections_:5d} "
          f"gradient calls={est.n_iter_:5d} 3-NN accuracy={acc:.4f}")

# %%
# The learned metric (default settings: k-NN triplets at this size) restricted to its two leading
# directions, next to the first two principal components.
lmnn = LMNNMetric(n_components=2, max_iter=max_iter, random_state=0).fit(X_train, y_train)
pca = PCA(n_components=2).fit(X_train)
fig2, axes = plt.subplots(1, 2, figsize=(11, 5))
for ax, (name, Z) in zip(axes, [("PCA", pca.transform(X_test)),
                                ("LMNNMetric (top 2 directions)", lmnn.transform(X_test))]):
    ax.scatter(Z[:, 0], Z[:, 1], c=y_test, cmap="tab10", s=12)
    ax.set_title(name)
fig2.tight_layout()

if matplotlib.get_backend().lower() != "agg":
    plt.show()
