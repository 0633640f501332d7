"""
=====================================================================
Ordinal embedding with SVRG-SBB: the paper's synthetic benchmark
=====================================================================

Reproduces the synthetic experiment of Ma et al. (TKDE 2019, Sec. 5.1, Table I, Figs. 1-3)
with :class:`skstoch.OrdinalEmbedding`:

* 100 objects drawn from N(0, I/20) in R^10, 10,000 noise-free training triplets and 10,000
  test triplets;
* test triplet error against wall time for full-batch gradient descent (``gd``), SGD, SVRG with
  a fixed step and SVRG with the stabilized Barzilai-Borwein step (``svrg_sbb``) for several
  mini-batch sizes, for the four losses of the paper, and full-batch L-BFGS (skstoch's
  default solver, not in the paper);
* the time each solver needs to reach test error 0.15 (the paper's Table I criterion);
* the SBB step size per epoch (Fig. 1);
* a 2-D "city map" embedded from 2,000 triplets next to classical MDS on the true distances
  (Fig. 3 analogue).

Set ``SKSTOCH_EXAMPLE_FAST=1`` for a quick, smaller run.
"""
# %%
import os
import time
import warnings

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST", "0") not in ("", "0")
if FAST:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from scipy.spatial import procrustes
from sklearn.exceptions import ConvergenceWarning

from skstoch import OrdinalEmbedding
from skstoch.datasets import make_triplets

warnings.simplefilter("ignore", ConvergenceWarning)

if FAST:
    n_objects, n_train, dim, epochs = 40, 3000, 5, 15
    losses = ["ste", "gnmds"]
    batch_sizes = [1, 10]
else:
    n_objects, n_train, dim, epochs = 100, 10_000, 10, 60
    losses = ["gnmds", "ckl", "ste", "tste"]
    batch_sizes = [1, 5, 10, 20, 50, 100, 200]

T_all = make_triplets(n_objects, 2 * n_train, dim, random_state=0)
T_train, T_test = T_all[:n_train], T_all[n_train:]

# %%
# Test error against time
# -----------------------
# A callback records the test error after every epoch; the time it spends is subtracted so
# that only the solver is timed (as in the paper).


def test_error(X):
    i, j, k = T_test.T
    return np.mean(np.sum((X[i] - X[j]) ** 2, 1) >= np.sum((X[i] - X[k]) ** 2, 1))


def run(loss, solver, batch_size=10, **params):
    trace, spent = [], [0.0]

    def callback(record):
        t0 = time.perf_counter()
        trace.append((record["time"] - spent[0], test_error(record["x"])))
        spent[0] += time.perf_counter() - t0
        return False

    est = OrdinalEmbedding(dim, loss=loss, solver=solver, batch_size=batch_size,
                           max_iter=epochs, tol=0.0, random_state=0, callback=callback,
                           **params)
    est.fit(T_train)
    return np.array(trace), est


def time_to(trace, level=0.15):
    hit = np.flatnonzero(trace[:, 1] <= level)
    return trace[hit[0], 0] if hit.size else np.inf


results = {}
fig, axes = plt.subplots(1, len(losses), figsize=(4 * len(losses), 3.5), squeeze=False)
for ax, loss in zip(axes[0], losses):
    configs = [("gd", dict(solver="gd")), ("sgd b=10", dict(solver="sgd")),
               ("svrg (fixed) b=10", dict(solver="svrg"))]
    configs += [(f"svrg_sbb b={b}", dict(solver="svrg_sbb", batch_size=b)) for b in batch_sizes]
    configs += [("lbfgs (default)", dict(solver="lbfgs"))]
    for label, kw in configs:
        trace, _ = run(loss, **kw)
        results[loss, label] = time_to(trace)
        ax.plot(trace[:, 0], trace[:, 1], label=label, lw=1,
                ls="--" if label.startswith("lbfgs") else "-")
    ax.axhline(0.15, color="k", ls=":", lw=0.8)
    ax.set(title=loss, xlabel="seconds", ylabel="test triplet error", ylim=(0, 0.5))
axes[0, -1].legend(fontsize=7)
fig.tight_layout()

# %%
# Time to reach test error 0.15 (paper's Table I criterion)
print(f"{'solver':22s}" + "".join(f"{loss:>10s}" for loss in losses))
labels = sorted({label for _, label in results}, key=lambda s: (not s.startswith("svrg_sbb"), s))
for label in labels:
    print(f"{label:22s}" + "".join(f"{results[loss, label]:10.3f}" for loss in losses))
for loss in losses:
    best = min(results[loss, f"svrg_sbb b={b}"] for b in batch_sizes)
    print(f"{loss}: fixed-step SVRG / best mini-batch SVRG-SBB = "
          f"{results[loss, 'svrg (fixed) b=10'] / best:.1f}x")

# %%
# Step size per epoch (Fig. 1)
# ----------------------------
# ``epsilon=0`` is SBB0 (plain BB with an absolute value); a positive epsilon bounds the step.
fig, ax = plt.subplots(figsize=(5, 3.5))
for eps in [0.0, "auto", 1e-2]:
    _, est = run("ste", "svrg_sbb", batch_size=10, epsilon=eps)
    ax.semilogy(est.history_["epoch"], est.history_["step_size"] * n_train,
                label=f"epsilon={eps}")
ax.set(xlabel="epoch", ylabel="m * step size", title="SBB step size (STE)")
ax.legend()
fig.tight_layout()

# %%
# A 2-D map from triplets, next to classical MDS (Fig. 3 analogue)
# ----------------------------------------------------------------
rng = np.random.RandomState(1)
cities = rng.uniform(0, 10, size=(21, 2))
T_map = make_triplets(embedding=cities, n_triplets=2000, random_state=rng)
emb = OrdinalEmbedding(2, loss="gnmds", max_iter=200, random_state=0).fit(T_map)

D2 = np.sum((cities[:, None] - cities[None]) ** 2, axis=-1)
J = np.eye(21) - 1.0 / 21
w, V = np.linalg.eigh(-0.5 * J @ D2 @ J)
mds = V[:, -2:] * np.sqrt(w[-2:])
_, mds_aligned, disparity_mds = procrustes(cities, mds)
ref, oe_aligned, disparity_oe = procrustes(cities, emb.embedding_)
print(f"Procrustes disparity: classical MDS {disparity_mds:.2e}, ordinal embedding "
      f"{disparity_oe:.3f}; triplets satisfied {emb.score(T_map):.3f}")

fig, ax = plt.subplots(figsize=(4.5, 4.5))
ax.scatter(*ref.T, c="k", label="true positions")
ax.scatter(*mds_aligned.T, marker="x", label="classical MDS (distances)")
ax.scatter(*oe_aligned.T, marker="+", s=80, label="ordinal embedding (triplets)")
ax.legend(fontsize=8)
ax.set_title("Procrustes-aligned 2-D embeddings")
fig.tight_layout()

if matplotlib.get_backend().lower() != "agg":
    plt.show()
