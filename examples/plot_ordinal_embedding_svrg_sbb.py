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
* Table I as a figure: the CPU time (and the row operations) SVRG-SBB needs to reach test
  error 0.15 against the mini-batch size, next to fixed-step SVRG at the reference-code (or
  probed) step and at a tuned step, with skstoch's lazy inner update and with the paper's
  dense one (``inner_update='dense'``);
* the SBB step size per epoch (Fig. 1);
* a 2-D "city map" embedded from 2,000 triplets by the paper's method (``solver='svrg_sbb'``)
  and by skstoch's default (L-BFGS), next to classical MDS on the true distances (Fig. 3
  analogue);
* a record of each claim with our numbers and a verdict (``examples/_reproduction.py``).

Set ``SKSTOCH_EXAMPLE_FAST=1`` for a quick, smaller run.
"""
# %%
import os
import sys
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

import skstoch  # noqa: E402

# examples/_reproduction.py, next to this file (sphinx-gallery runs examples without __file__)
_file = globals().get("__file__")
sys.path.insert(0, os.path.dirname(os.path.abspath(_file)) if _file else
                os.path.join(os.path.dirname(os.path.dirname(skstoch.__file__)), "examples"))
from _reproduction import claim, record  # noqa: E402
from _reproduction import verdict as verdict_of  # noqa: E402

warnings.simplefilter("ignore", ConvergenceWarning)

if FAST:
    n_objects, n_train, dim, epochs = 40, 3000, 5, 15
    losses = ["ste", "gnmds"]
    batch_sizes = [1, 10, 50]
else:
    n_objects, n_train, dim, epochs = 100, 10_000, 10, 40
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


fig, axes = plt.subplots(1, len(losses), figsize=(4 * len(losses), 3.5), squeeze=False)
for ax, loss in zip(axes[0], losses):
    configs = [("gd", dict(solver="gd")), ("sgd b=10", dict(solver="sgd")),
               ("svrg (fixed) b=10", dict(solver="svrg"))]
    configs += [(f"svrg_sbb b={b}", dict(solver="svrg_sbb", batch_size=b)) for b in batch_sizes]
    configs += [("lbfgs (default)", dict(solver="lbfgs"))]
    for label, kw in configs:
        trace, _ = run(loss, **kw)
        ax.plot(trace[:, 0], trace[:, 1], label=label, lw=1,
                ls="--" if label.startswith("lbfgs") else "-")
    ax.axhline(0.15, color="k", ls=":", lw=0.8)
    ax.set(title=loss, xlabel="seconds", ylabel="test triplet error", ylim=(0, 0.5))
axes[0, -1].legend(fontsize=7)
fig.tight_layout()

# %%
# Test error per epoch: SBB0, SBB-epsilon and fixed-step SVRG (Fig. 2)
# ---------------------------------------------------------------------
# The paper's Fig. 2: SVRG-SBB0 (``epsilon=0``) sees its error rise as its step explodes,
# SVRG-SBB-epsilon (the paper's absolute ``epsilon=0.01``) does not oscillate and beats
# fixed-step SVRG (at the probed step) by clear margins.  Mini-batch 10, every loss.
fig2 = {}
fig, axes = plt.subplots(1, len(losses), figsize=(4 * len(losses), 3.2), squeeze=False)
for ax, loss in zip(axes[0], losses):
    for label, kw in [("SBB0", dict(solver="svrg_sbb", epsilon=0.0)),
                      ("SBB-epsilon", dict(solver="svrg_sbb", epsilon=0.01)),
                      ("SVRG (fixed step)", dict(solver="svrg"))]:
        trace, _ = run(loss, **kw)
        fig2[loss, label] = trace[:, 1]
        ax.plot(np.arange(1, len(trace) + 1), trace[:, 1], label=label)
    ax.set(title=loss, xlabel="epoch", ylabel="test triplet error", ylim=(0, 0.5))
axes[0, 0].legend(fontsize=7)
fig.tight_layout()
sbb0_rises = {loss: fig2[loss, "SBB0"][-1] > fig2[loss, "SBB0"].min() + 0.02 for loss in losses}
eps_steady = {loss: np.max(np.diff(fig2[loss, "SBB-epsilon"]), initial=0.0) <= 0.01
              for loss in losses}
eps_beats = {loss: fig2[loss, "SBB-epsilon"][-1] <= fig2[loss, "SVRG (fixed step)"][-1] - 0.01
             for loss in losses}

# %%
# Table I: time to test error 0.15 against the mini-batch size
# ------------------------------------------------------------
# Each run stops as soon as the test error at an epoch snapshot is at most the threshold (the
# callback stops the fit; its own CPU time is subtracted, the paper times the solver only).
# We plot the median over random initialisations of the process CPU time for SVRG-SBB with
# each batch size ``b``, next to fixed-step SVRG with ``b = 1`` (the paper's "ncvx SVRG") at
# the authors' reference-code step where it is known (STE 5e-4, t-STE 0.05) and otherwise at
# the probed step, and at a tuned step: the best of a grid of multiples of the probed step
# (the paper tuned its baselines' steps; the grid and the factor chosen are printed).  Every
# SVRG run is done twice: ``inner_update='lazy'`` (skstoch's default: each inner step costs
# O(b p)) and ``inner_update='dense'`` (the paper's code: the
# full-gradient term is subtracted from all n rows at every inner step, O(n p)).  Both give
# the same iterates; only the cost differs.
#
# The second row counts row operations instead of seconds (3 per gradient evaluation of a
# triplet, plus n per inner step in dense mode): the cost model of the paper's implementation,
# free of the machine's load.  CKL (Tamuz form) plateaus near test error 0.18 on this data for
# every solver, so its threshold is 0.20.

thresholds = {loss: (0.20 if loss == "ckl" else 0.15) for loss in losses}
trials = 1 if FAST else 3
ref_step = {"ste": 5e-4, "tste": 0.05}     # reference-code steps (paper note, settings table)
modes = ["lazy", "dense"]
grid = [0.5, 1.0, 2.0] if FAST else [0.25, 0.5, 1.0, 2.0, 4.0]


def time_to_threshold(loss, solver, batch_size, seed, inner_update, **params):
    """(CPU seconds, row operations, passes) to the threshold; inf if never reached."""
    level = thresholds[loss]
    spent, hit, start = [0.0], [None], [0.0]
    probed = params.get("eta0") is None or params.get("epsilon", "auto") == "auto"

    def callback(record):
        c0 = time.process_time()
        if test_error(record["x"]) <= level:
            epoch = record["epoch"]
            passes = 3 * epoch + 1 + (1 if probed else 0)
            rows = 3.0 * passes * n_train
            if inner_update == "dense":
                rows += n_objects * epoch * max(n_train // batch_size, 1)
            hit[0] = (c0 - start[0] - spent[0], rows, passes)
        spent[0] += time.process_time() - c0
        return hit[0] is not None

    est = OrdinalEmbedding(dim, loss=loss, solver=solver, batch_size=batch_size,
                           inner_update=inner_update, max_iter=4 * epochs, tol=0.0,
                           random_state=seed, callback=callback, **params)
    start[0] = time.process_time()
    est.fit(T_train)
    return hit[0] if hit[0] is not None else (np.inf, np.inf, np.inf)


results = {}
for loss in losses:
    for mode in modes:
        for seed in range(trials):
            for b in batch_sizes:
                results.setdefault((loss, mode, b), []).append(
                    time_to_threshold(loss, "svrg_sbb", b, seed, mode))
            params = (dict(eta0=ref_step[loss], epsilon=0.0) if loss in ref_step else {})
            results.setdefault((loss, mode, "svrg"), []).append(
                time_to_threshold(loss, "svrg", 1, seed, mode, **params))
            probed = OrdinalEmbedding(dim, loss=loss, solver="svrg", batch_size=1, max_iter=1,
                                      tol=0.0, random_state=seed).fit(T_train).eta0_
            for factor in grid:
                results.setdefault((loss, mode, ("svrg", factor)), []).append(
                    time_to_threshold(loss, "svrg", 1, seed, mode, eta0=factor * probed,
                                      epsilon=0.0))


def tuned_factor(loss):
    """The grid factor with the fewest median passes to the threshold (ties: CPU time)."""
    return min(grid, key=lambda f: (median(loss, "lazy", ("svrg", f), 2),
                                    median(loss, "lazy", ("svrg", f), 0)))


def median(loss, mode, key, column):
    return float(np.median(np.array(results[loss, mode, key])[:, column]))


fig, axes = plt.subplots(2, len(losses), figsize=(3.6 * len(losses), 6.5), squeeze=False)
for c, loss in enumerate(losses):
    for r, (column, ylabel) in enumerate([(0, "CPU seconds to threshold"),
                                          (1, "row operations to threshold")]):
        ax = axes[r, c]
        for mode, color in zip(modes, ["C0", "C3"]):
            ax.plot(batch_sizes, [median(loss, mode, b, column) for b in batch_sizes], "o-",
                    color=color, label=f"SVRG-SBB, {mode} update")
            svrg = median(loss, mode, "svrg", column)
            if np.isfinite(svrg):
                ax.axhline(svrg, color=color, ls="--", lw=1,
                           label=f"fixed-step SVRG b=1, {mode}")
            tuned = median(loss, mode, ("svrg", tuned_factor(loss)), column)
            if np.isfinite(tuned):
                ax.axhline(tuned, color=color, ls=":", lw=1.5,
                           label=f"tuned fixed-step SVRG b=1, {mode}")
        ax.set(xscale="log", yscale="log", xlabel="batch size b", ylabel=ylabel)
        if r == 0:
            step = "ref-code step" if loss in ref_step else "probed step"
            ax.set_title(f"{loss} (<= {thresholds[loss]}; SVRG: {step})", fontsize=9)
handles = {}
for ax in axes[0]:
    for h, label in zip(*ax.get_legend_handles_labels()):
        handles.setdefault(label, h)
axes[0, 0].legend(handles.values(), handles.keys(), fontsize=7)
fig.tight_layout()

print(f"median over {trials} initialisations; ratios = fixed-step SVRG (b=1) / best SBB b")
speedup = {}   # (loss, mode, 'untuned' | 'tuned') -> SVRG rows / best SBB rows
batch_gain = {}   # (loss, mode) -> rows at b=1 / rows at the best b
for loss in losses:
    factor = tuned_factor(loss)
    for mode in modes:
        cpu = {b: median(loss, mode, b, 0) for b in batch_sizes}
        rows = {b: median(loss, mode, b, 1) for b in batch_sizes}
        best_b = min(batch_sizes, key=cpu.get)
        best_rows = min(rows.values())
        speedup[loss, mode, "untuned"] = median(loss, mode, "svrg", 1) / best_rows
        speedup[loss, mode, "tuned"] = median(loss, mode, ("svrg", factor), 1) / best_rows
        batch_gain[loss, mode] = rows[1] / best_rows
        print(f"{loss:6s} {mode:5s}: best b={best_b:3d}  b=1/best {cpu[1] / cpu[best_b]:4.1f}x  "
              f"b={batch_sizes[-1]}/best {cpu[batch_sizes[-1]] / cpu[best_b]:4.1f}x  "
              f"SVRG/best {median(loss, mode, 'svrg', 0) / cpu[best_b]:5.1f}x CPU, "
              f"{speedup[loss, mode, 'untuned']:5.1f}x row operations; tuned SVRG "
              f"(x{factor} probed step) {speedup[loss, mode, 'tuned']:5.1f}x row operations "
              f"(paper: >= 4x)")

# %%
# The convex baseline (Table I's "cvx" row)
# -----------------------------------------
# The paper's "cvx" competitor minimises the same loss as a function of the Gram matrix
# ``G = X X^T`` (its eq. 8) by projected gradient descent: after each full-gradient step ``G``
# is centred and projected onto the positive semidefinite cone (an eigendecomposition:
# negative eigenvalues clipped to 0), with no rank constraint and no regulariser (van der
# Maaten's STE default, lambda = 0), a fixed step and no line search.  It is built here from
# numpy for the two losses that are convex in ``G`` (GNMDS, STE), starts from the same kind of
# small random point, gets the same budget of gradient passes as SVRG-SBB above (3 per epoch,
# ``4 * epochs`` epochs) and the best of a grid of steps.  Its test error is read from the
# rank-p embedding the paper keeps (top p eigenvectors) and, for reference, from ``G`` itself.

cvx_losses = [loss for loss in losses if loss in ("gnmds", "ste")]
cvx_steps = [10.0, 100.0] if FAST else [3.0, 10.0, 30.0, 100.0, 300.0]
centre = np.eye(n_objects) - 1.0 / n_objects


def gram_gradient(loss, G, triplets):
    """Mean loss over ``triplets`` as a function of G and its gradient (symmetric)."""
    i, j, k = triplets.T
    delta = G[j, j] - 2 * G[i, j] - G[k, k] + 2 * G[i, k]     # d2(i, j) - d2(i, k)
    if loss == "ste":
        value, c = np.logaddexp(0.0, delta), 0.5 * (1.0 + np.tanh(0.5 * delta))
    else:
        value, c = np.maximum(0.0, 1.0 + delta), (delta > -1.0).astype(float)
    nn = n_objects * n_objects
    grad = (np.bincount(j * n_objects + j, c, nn) - np.bincount(k * n_objects + k, c, nn)
            - np.bincount(i * n_objects + j, c, nn) - np.bincount(j * n_objects + i, c, nn)
            + np.bincount(i * n_objects + k, c, nn) + np.bincount(k * n_objects + i, c, nn))
    return value.mean(), grad.reshape(n_objects, n_objects) / len(triplets)


def gram_error(G):
    i, j, k = T_test.T
    d = np.diag(G)
    return np.mean(d[j] - 2 * G[i, j] >= d[k] - 2 * G[i, k])


def projected_gradient(loss, step, n_steps, seed=0):
    """Best (rank-p, full-G) test errors over a projected gradient run; hit step or None."""
    X0 = np.random.RandomState(seed).normal(scale=1e-2, size=(n_objects, dim))
    G = X0 @ X0.T
    best_p, best_full, hit = 1.0, 1.0, None
    for t in range(1, n_steps + 1):
        _, grad = gram_gradient(loss, G, T_train)
        G = centre @ (G - step * grad) @ centre
        w, V = np.linalg.eigh(0.5 * (G + G.T))
        w = np.maximum(w, 0.0)
        G = (V * w) @ V.T
        if t % 3 == 0 or t == n_steps:       # read the error 3 times per epoch, like above
            err_p = test_error(V[:, -dim:] * np.sqrt(w[-dim:]))
            best_p, best_full = min(best_p, err_p), min(best_full, gram_error(G))
            if hit is None and err_p <= thresholds[loss]:
                hit = t
    return best_p, best_full, hit


cvx = {}   # loss -> (step, best rank-p error, best full-G error, passes to the threshold)
cvx_budget = 3 * 4 * epochs
for loss in cvx_losses:
    runs = {s: projected_gradient(loss, s, cvx_budget) for s in cvx_steps}
    step = min(runs, key=lambda s: runs[s][0])
    cvx[loss] = (step, *runs[step], runs[100.0][2])     # + passes at van der Maaten's step
    sbb_passes = min(median(loss, "dense", b, 2) for b in batch_sizes)
    print(f"cvx {loss}: best step {step:g} of {cvx_steps}; best test error over "
          f"{cvx_budget} gradient passes {runs[step][0]:.3f} (rank {dim}), "
          f"{runs[step][1]:.3f} (full G); SVRG-SBB reached {thresholds[loss]} in "
          f"{sbb_passes:.0f} passes")

# %%
# Step size per epoch (Fig. 1)
# ----------------------------
# ``epsilon=0`` is SBB0 (plain BB with an absolute value); a positive epsilon bounds the step.
# ``epsilon=0.01`` is the paper's absolute form; ``'auto'`` is skstoch's default.
fig, ax = plt.subplots(figsize=(5, 3.5))
spread = {}   # epsilon -> max / min step over the second half of the epochs
for eps in [0.0, "auto", 1e-2]:
    _, est = run("ste", "svrg_sbb", batch_size=10, epsilon=eps)
    steps = est.history_["step_size"]
    steps = steps[np.isfinite(steps)]
    tail = steps[len(steps) // 2:]
    spread[eps] = float(tail.max() / tail.min())
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
emb = OrdinalEmbedding(2, loss="gnmds", solver="svrg_sbb", epsilon=0.01, max_iter=200,
                       random_state=0).fit(T_map)         # the paper's method
emb_default = OrdinalEmbedding(2, loss="gnmds", random_state=0).fit(T_map)   # L-BFGS

D2 = np.sum((cities[:, None] - cities[None]) ** 2, axis=-1)
J = np.eye(21) - 1.0 / 21
w, V = np.linalg.eigh(-0.5 * J @ D2 @ J)
mds = V[:, -2:] * np.sqrt(w[-2:])
_, mds_aligned, disparity_mds = procrustes(cities, mds)
ref, oe_aligned, disparity_oe = procrustes(cities, emb.embedding_)
_, default_aligned, disparity_default = procrustes(cities, emb_default.embedding_)
print(f"Procrustes disparity: classical MDS {disparity_mds:.2e}, SVRG-SBB {disparity_oe:.3f} "
      f"(triplets satisfied {emb.score(T_map):.3f}), L-BFGS default {disparity_default:.3f} "
      f"({emb_default.score(T_map):.3f})")

fig, ax = plt.subplots(figsize=(4.5, 4.5))
ax.scatter(*ref.T, c="k", label="true positions")
ax.scatter(*mds_aligned.T, marker="x", label="classical MDS (distances)")
ax.scatter(*oe_aligned.T, marker="+", s=80, label="SVRG-SBB, paper (triplets)")
ax.scatter(*default_aligned.T, marker="1", s=80, label="L-BFGS, default (triplets)")
ax.legend(fontsize=8)
ax.set_title("Procrustes-aligned 2-D embeddings")
fig.tight_layout()

# %%
# What this run says about the paper's claims
# -------------------------------------------
# Verdicts follow from the numbers above (the row-operation counts, the paper's cost model,
# are free of the machine's load); the full-mode record is rendered on the "Reproducing the
# papers" page.


def ratios_text(kind, mode="dense"):
    return ", ".join(f"{loss} {speedup[loss, mode, kind]:.1f}x"
                     if np.isfinite(speedup[loss, mode, kind])
                     else f"{loss}: SVRG never reached the threshold" for loss in losses)


def verdict(values, threshold):
    hits = [v >= threshold for v in values]
    return verdict_of(sum(hits), len(hits))


protocol = (f"{n_objects} objects ~ N(0, I/20) in R^{dim}, {n_train} noise-free training and "
            f"{n_train} test triplets; losses {', '.join(losses)}; median of {trials} "
            f"initialisation(s); time to test error {thresholds[losses[0]]} "
            f"(CKL 0.20) counted in row operations of the paper's dense code; SBB batch sizes "
            f"{batch_sizes}; fixed-step SVRG b=1")
tuned_values = [speedup[loss, "dense", "tuned"] for loss in losses]
tuned_lazy = [speedup[loss, "lazy", "tuned"] for loss in losses]
untuned_values = [speedup[loss, "dense", "untuned"] for loss in losses]
gains = [batch_gain[loss, "dense"] for loss in losses]
lazy_gains = [batch_gain[loss, "lazy"] for loss in losses]
claims = [
    claim("Table I: mini-batch SVRG-SBB is at least 4x faster than SVRG for all four models",
          protocol=protocol + " at the reference-code step (STE, t-STE) or the probed step",
          ours=f"SVRG / best SBB: {ratios_text('untuned')}",
          verdict=verdict(untuned_values, 4.0),
          why="holds only where the fixed step is far from the best one (STE's reference "
              "step 5e-4); the SBB step's gain is step selection, not speed per pass"),
    claim("Table I, against a tuned fixed step: SVRG-SBB at least 4x faster than SVRG",
          protocol=protocol + f" at the best of {grid} x the probed step; dense (the "
                              f"paper's code) and lazy (every inner step O(b p)) updates",
          ours=f"tuned SVRG / best SBB, dense: {ratios_text('tuned')}; lazy: "
               f"{ratios_text('tuned', 'lazy')}",
          verdict=(verdict(tuned_values, 4.0) if min(tuned_lazy) >= 4.0 else
                   "partly" if min(tuned_values) >= 4.0 else "refuted"),
          why="in the paper's dense code the gain is the mini-batch's (fewer O(n p) dense "
              "updates); with equal-cost inner steps a tuned fixed step ties or beats the SBB "
              "step (ratio below 1 means tuned SVRG is faster)"),
    claim("Table I: mini-batches (b > 1) speed SVRG-SBB up over b = 1",
          protocol=protocol + ", dense inner update (the paper's code)",
          ours="rows at b=1 / best b: " + ", ".join(
              f"{loss} {g:.1f}x" for loss, g in zip(losses, gains)),
          verdict=verdict(gains, 1.5),
          why="the dense update costs O(n p) per inner step, and b > 1 cuts the steps by b"),
    claim("With skstoch's lazy inner update, the batch size no longer matters",
          protocol=protocol + ", lazy inner update (skstoch's default)",
          ours="rows at b=1 / best b: " + ", ".join(
              f"{loss} {g:.1f}x" for loss, g in zip(losses, lazy_gains)),
          verdict="reproduced" if max(lazy_gains) < 1.5 else "refuted",
          why="an inner step costs O(b p): the mini-batch gain was the dense update's cost",
          algorithm="ours"),
    claim("Table I: cvx (projected gradient on the Gram matrix) does not reach the test "
          "error threshold within the budget, where SVRG-SBB does",
          protocol=protocol + f"; cvx for {', '.join(cvx_losses)} (the losses convex in G): "
                              f"PSD projection by eigenvalue clipping, no rank constraint, "
                              f"lambda=0, {cvx_budget} full gradients (SVRG-SBB's budget), "
                              f"best step of {cvx_steps}, error of the rank-{dim} embedding",
          ours="; ".join(
              f"{loss}: best test error {cvx[loss][1]:.3f} at step {cvx[loss][0]:g} (full G "
              f"{cvx[loss][2]:.3f}), " + ("never reached " + str(thresholds[loss])
                                          if cvx[loss][3] is None else
                                          f"reached {thresholds[loss]} after "
                                          f"{cvx[loss][3]} gradients")
              + " (at step 100: " + ("never" if cvx[loss][4] is None else
                                     f"after {cvx[loss][4]} gradients") + ")"
              + f"; SVRG-SBB best b: {min(median(loss, 'dense', b, 2) for b in batch_sizes):.0f}"
                " passes" for loss in cvx_losses),
          verdict=("reproduced" if all(cvx[loss][3] is None for loss in cvx_losses) else
                   "refuted" if all(cvx[loss][3] is not None for loss in cvx_losses) else
                   "partly"),
          why="step 100 on the mean loss is van der Maaten's default (eta=1 scaled by n/|Q| "
              "on the summed loss, inferred), which the paper used untuned; every cvx step "
              "also costs an O(n^3) eigendecomposition (cheap at n=100), counted here in "
              "passes, not CPU time; CKL and t-STE (non-convex in G) not run"),
    claim("Fig. 2: SVRG-SBB0's test error increases (its step explodes); SVRG-SBB-epsilon does "
          "not oscillate and beats fixed-step SVRG by clear margins",
          protocol=f"{n_objects} objects, {n_train} training / {n_train} test triplets, "
                   f"losses {', '.join(losses)}, b=10, {epochs} epochs, epsilon=0 (SBB0) and "
                   "0.01 (SBB-epsilon), fixed-step SVRG at the probed step; one initialisation",
          ours="; ".join(
              f"{loss}: final test error SBB0 {fig2[loss, 'SBB0'][-1]:.3f} (min "
              f"{fig2[loss, 'SBB0'].min():.3f}), SBB-epsilon {fig2[loss, 'SBB-epsilon'][-1]:.3f}, "
              f"SVRG {fig2[loss, 'SVRG (fixed step)'][-1]:.3f}" for loss in losses),
          verdict=verdict([v for d in (sbb0_rises, eps_steady, eps_beats)
                           for v in d.values()], True),
          why="rules per loss: SBB0 ends more than 0.02 above its best error; SBB-epsilon never "
              "rises by more than 0.01 between epochs; it ends at least 0.01 below fixed-step "
              "SVRG.  Reproduced when all hold for every loss, refuted when none holds; SBB0 rises on "
              f"{sum(sbb0_rises.values())}, SBB-epsilon steady on {sum(eps_steady.values())}, "
              f"beats SVRG on {sum(eps_beats.values())} of {len(losses)} losses"),
    claim("Fig. 1: the SBB-epsilon step stabilises after a few epochs, SBB0 varies widely",
          protocol=f"STE, b=10, {epochs} epochs; max/min step over the second half",
          ours=", ".join(f"epsilon={e}: {v:.2f}" for e, v in spread.items()),
          verdict=("reproduced" if spread[1e-2] <= 2.0 and spread[0.0] >= 4.0 else
                   "partly" if spread[1e-2] <= 2.0 else "refuted"),
          why="epsilon > 0 bounds the step by 1/(m epsilon); whether SBB0 varies widely "
              "depends on the problem (its ratio is shown)"),
    claim("Fig. 3 analogue: SVRG-SBB recovers a 2-D map from triplets",
          protocol="21 random 'cities' in [0, 10]^2, 2,000 triplets, GNMDS, svrg_sbb with "
                   "epsilon=0.01, Procrustes disparity to the true positions (the paper's "
                   "map is from real data; ours is synthetic)",
          ours=f"disparity {disparity_oe:.3f} (classical MDS on distances "
               f"{disparity_mds:.1e}); triplets satisfied {emb.score(T_map):.3f}",
          verdict="partly" if disparity_oe < 0.05 else "refuted",
          why="synthetic analogue of the figure, not the paper's data"),
    claim("skstoch's default (L-BFGS) recovers the same map",
          protocol="as the previous row, OrdinalEmbedding(loss='gnmds') defaults",
          ours=f"disparity {disparity_default:.3f}; triplets satisfied "
               f"{emb_default.score(T_map):.3f}",
          verdict="reproduced" if disparity_default < 0.05 else "refuted",
          why="compares our default with the paper's method on the same data",
          algorithm="ours"),
]
path = record("000", "plot_ordinal_embedding_svrg_sbb.py",
              claims, fast=FAST)
for c in claims:
    print(f"[{c['verdict']}] ({c['algorithm']}) {c['claim']}: {c['ours']}")

if matplotlib.get_backend().lower() != "agg":
    plt.show()
