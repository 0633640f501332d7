"""
======================================================================
Constrained Lasso: Epro-SGD against its baselines, and the radius path
======================================================================

Paper 001 (Chen et al.), Fig. 1 protocol on a generated sparse regression problem
(KDD Cup 2010 is not available offline): the objective of eq. 22 with the paper's
``alpha = 1`` and ``radius = 0.5`` against the number of stochastic gradients and against
time, for Epro-SGD, projected SGD (a projection every step), OneProj and Epro-ORDA, with
the number of l1-ball projections each used.  Epro-SVRG (``solver='epro_svrg'``) is
**not** one of the paper's algorithms: it is our variance-reduced variant of the same
epoch-projection loop (one full gradient per epoch, prox-SVRG steps inside, one projection
per epoch), drawn dashed for comparison; its budget counts each full gradient as
``n_samples`` stochastic gradients, so its first point starts after one pass.  The second
figure is the constrained path (coefficients against the radius) next to scikit-learn's
Lasso path.
"""
import os
import time

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST", "0") not in ("", "0")
if FAST:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import lasso_path

from skstoch import ConstrainedLasso

# %%
# A sparse regression problem with unit-norm rows (like the paper's normalized data)
rng = np.random.RandomState(0)
n_samples, n_features = (2_000, 500) if FAST else (20_000, 5_000)
X = sp.random(n_samples, n_features, density=0.01, random_state=rng, format="csr")
X = sp.diags(1.0 / np.maximum(np.sqrt(X.multiply(X).sum(axis=1).A.ravel()), 1e-12)) @ X
w_true = np.zeros(n_features)
w_true[rng.choice(n_features, 20, replace=False)] = rng.randn(20)
y = X @ w_true + 0.1 * rng.randn(n_samples)

alpha, radius = 1.0, 0.5
exact = ConstrainedLasso(l2_reg=alpha, radius=radius, solver="fista", tol=1e-12).fit(X, y)
f_star = exact.history_["objective"][-1]


def objective(model):
    r = X @ model.coef_ + model.intercept_ - y
    return 0.5 * np.mean(r * r) + alpha * model.coef_ @ model.coef_


# %%
# Objective against the number of stochastic gradients and against time.  Each budget T
# is a separate run (as in the paper, every method's output at T is a feasible point).
budgets = np.unique(np.geomspace(64, 4 * n_samples, 8 if FAST else 12).astype(int))
solvers = {"epro_sgd": "Epro-SGD", "sgd": "SGD (projection every step)",
           "oneproj": "OneProj", "epro_orda": "Epro-ORDA",
           "epro_svrg": "Epro-SVRG (beyond the paper)"}
results = {}
for solver in solvers:
    rows = []
    # Epro-SVRG needs one full gradient (n_samples) plus at least 8 steps per epoch
    for T in (budgets[budgets >= n_samples + n_samples // 16] if solver == "epro_svrg"
              else budgets):
        model = ConstrainedLasso(l2_reg=alpha, radius=radius, solver=solver, max_iter=int(T),
                                 random_state=0, tol=0, track_objective=False)
        start = time.perf_counter()
        model.fit(X, y)
        rows.append((T, time.perf_counter() - start, objective(model) - f_star,
                     model.n_projections_))
    results[solver] = np.array(rows)

fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for solver, label in solvers.items():
    T, sec, gap, proj = results[solver].T
    style = "s--" if solver == "epro_svrg" else "o-"
    axes[0].loglog(T, np.maximum(gap, 1e-16), style, label=f"{label} ({int(proj[-1])} proj.)")
    axes[1].loglog(sec, np.maximum(gap, 1e-16), style, label=label)
axes[0].set_xlabel("stochastic gradients T")
axes[1].set_xlabel("fit time (s)")
for ax in axes:
    ax.set_ylabel("F(w_T) - F*")
    ax.grid(True, which="both", alpha=0.3)
axes[0].legend(fontsize=8)
fig.suptitle(f"Constrained Lasso, alpha={alpha}, radius={radius}, "
             f"{n_samples} x {n_features} sparse")
fig.tight_layout()

# %%
# The constrained path (coefficients against the radius) and Lasso's path
# (coefficients against the l1 norm of its solution): with ``alpha = 0`` they coincide.
Xd = X[:, :50].toarray() if FAST else X[:, :200].toarray()
yd = Xd @ (rng.randn(Xd.shape[1]) * (rng.rand(Xd.shape[1]) < 0.1)) + 0.1 * rng.randn(n_samples)
Xc, yc = Xd - Xd.mean(0), yd - yd.mean()
# lasso_path's default grid, given explicitly (scikit-learn 1.6 takes no integer alphas)
alpha_max = np.abs(Xc.T @ yc).max() / len(yc)
alphas, coefs, _ = lasso_path(Xc, yc, alphas=np.geomspace(alpha_max, 1e-3 * alpha_max, 30))
l1 = np.abs(coefs).sum(axis=0)
radii = np.linspace(0, l1.max(), 25)
model = ConstrainedLasso(solver="fista", tol=1e-10, warm_start=True)
path = []
for r in radii:
    path.append(model.set_params(radius=r).fit(Xd, yd).coef_.copy())
path = np.array(path)
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
axes[0].plot(radii, path)
axes[0].set_xlabel("radius (ConstrainedLasso, alpha=0)")
axes[1].plot(l1, coefs.T)
axes[1].set_xlabel("||w||_1 of the Lasso solution (sklearn lasso_path)")
axes[0].set_ylabel("coefficients")
fig.tight_layout()

if matplotlib.get_backend().lower() != "agg":
    plt.show()
