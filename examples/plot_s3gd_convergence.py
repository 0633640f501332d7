"""
================================================================
S3GD: objective versus time, anchor count and gradient quality
================================================================

Reproduces the protocol of the S3GD paper (Mu, Liu & Fan) on data that ships with
scikit-learn or is generated (the paper's nine datasets are not bundled): L2 logistic
regression with the paper's ``lambda = 1e-3`` and its penalised constant feature (a column
of ones, ``fit_intercept=False``), rows standardised and scaled to unit norm, mini-batches
of 10, 100 anchors, k_in = 20 for S3GD and 50 for Prox-SVRG, and the class-balanced
objective (eq. 46, ``class_weight='balanced'``) on the two imbalanced sets.

1. the paper's step rule (47) run for every method: the largest step of the grid
   {0.1, 1, 5, 10} whose averaged objective is within 1% of the optimum;
2. the training objective against CPU time (the paper's Fig. 4) for SGD, stratified SGD,
   Prox-SVRG, SCV and S3GD, each with its own rule-(47) step, over several seeds (median and
   min-max band), with our default estimator beside them, and a verdict on the paper's
   "S3GD is best on 6 of 9 datasets";
3. the sweep over the number of anchors (Fig. 7/8);
4. the Pearson correlation between the stochastic gradient and the exact gradient (Fig. 6);
5. the inner-loop length k_in = 20 against 50 (Fig. 9).

It ends by recording the claims with our verdicts (``examples/_reproduction.py``).  Set
``SKSTOCH_EXAMPLE_FAST=1`` for a much smaller run.
"""
import os
import time
import warnings

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST", "0") not in ("", "0")
if FAST:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from skstoch import S3GDClassifier  # noqa: E402
from skstoch._solvers._anchor_graph import build_anchor_graph  # noqa: E402

try:
    from _reproduction import claim, record
    from _s3gd_baselines import LAMBDA, datasets, objective, protocol, scv_fit, weights
except ImportError:  # run from another directory (sphinx-gallery runs it from examples/)
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _reproduction import claim, record
    from _s3gd_baselines import LAMBDA, datasets, objective, protocol, scv_fit, weights

warnings.simplefilter("ignore", ConvergenceWarning)
N_BIG = 1_500 if FAST else 20_000
EPOCHS = 3 if FAST else 15
SEEDS = [0, 1] if FAST else [0, 1, 2, 3, 4]
BUDGET = 0.15 if FAST else 1.5      # seconds of CPU time per run in section 2
GRID = [0.1, 1.0, 5.0, 10.0]        # the paper's step grid
ITERS, LAST = (3_000, 600) if FAST else (20_000, 2_500)   # rule (47): 40,000 / 5,000 in the paper


def optimum(X, y, balanced):
    kw, _ = protocol(balanced)
    s = weights(y, balanced)
    lr = LogisticRegression(C=1 / (kw["alpha"] * X.shape[0]), fit_intercept=False, tol=1e-10,
                            max_iter=10_000).fit(X, y, sample_weight=s)
    return objective(X, y, s, kw["alpha"], lr.coef_[0])


METHODS = {"sgd": dict(solver="sgd"), "ssgd": dict(solver="ssgd"),
           "svrg (k_in=50)": dict(solver="svrg", n_inner=50),
           "scv": None, "s3gd": dict(solver="s3gd", n_inner=20, anchor_method="kmeans")}


def run_method(label, X, y, balanced, eta, epochs, seed, budget=np.inf):
    """(objectives, CPU times) of one run with the paper's step ``eta`` (per epoch of n
    samples, exact objective; the clock includes the setup such as the anchor graph)."""
    if METHODS[label] is None:
        iters = int(np.ceil(epochs * X.shape[0] / 10))
        return scv_fit(X, y, balanced, eta, iters, seed, budget, record_every=None)
    kw, factor = protocol(balanced)
    start = time.process_time()
    times = []

    def clock(record):
        times.append(time.process_time() - start)
        return times[-1] > budget

    clf = S3GDClassifier(eta0=eta * factor, max_iter=epochs, tol=0, n_iter_no_change=10**6,
                         track_objective=True, random_state=seed, callback=clock,
                         **kw, **METHODS[label])
    with np.errstate(all="ignore"):
        clf.fit(X, y)
    return list(clf.history_["objective"]), times


# %%
# 1. The step-size rule (47), for every method
# --------------------------------------------
# For each method, the largest step ``eta`` of the grid {0.1, 1, 5, 10} (in the paper's units)
# whose objective averaged over the last iterations is at most ``(1 + 0.01) F*`` (eq. 47);
# the paper runs 40,000 iterations (mini-batch steps) and averages over the last 5,000; we run
# 20,000 and average the per-epoch objectives covering the last 2,500 (3,000 and 600 in fast
# mode); a run that diverges is unstable.  When no step passes, the smallest is kept.
data = list(datasets(N_BIG))
fig, axes = plt.subplots(1, len(data), figsize=(4 * len(data), 3.4))
STEPS = {}
for ax, (name, X, y, balanced) in zip(axes, data):
    fstar = optimum(X, y, balanced)
    epochs = int(np.ceil(ITERS * 10 / X.shape[0]))
    tail = max(1, int(np.ceil(LAST * 10 / X.shape[0])))
    for label in METHODS:
        avg = []
        for eta in GRID:
            try:
                objs, _ = run_method(label, X, y, balanced, eta, epochs, seed=0)
                f = float(np.mean(objs[-tail:]))
            except FloatingPointError:        # diverged (DivergenceError)
                f = np.inf
            avg.append((f - fstar) / fstar if np.isfinite(f) else np.inf)
        stable = [eta for eta, r in zip(GRID, avg) if r <= 0.01]
        STEPS[name, label] = max(stable) if stable else None
        print(f"rule (47), {name}, {label}: averaged (F - F*)/F* = "
              + ", ".join(f"{r:.1e}" for r in avg) + f" -> eta* = {STEPS[name, label]}")
        ax.loglog(GRID, np.where(np.isfinite(avg), np.maximum(avg, 1e-12), 10.0), "o-",
                  label=f"{label} (eta*={STEPS[name, label]})")
    ax.axhline(0.01, color="grey", lw=0.8, ls="--")
    ax.set_title(f"{name}: rule (47)", fontsize=9)
    ax.set_xlabel("step eta (paper units)")
    ax.legend(fontsize=6)
axes[0].set_ylabel("averaged (F - F*) / F*  (10 = diverged)")
fig.tight_layout()


def step_of(name, label):
    return STEPS[name, label] if STEPS[name, label] is not None else GRID[0]


# %%
# 2. Objective against CPU time, each method with its rule-(47) step
# -------------------------------------------------------------------
# Every run gets the same CPU-time budget (callback stop); the curves are the median over
# the seeds of ``F(w) - F*`` with the min-max band.  SCV runs in numpy (the others in
# Cython), so its times are pessimistic; its objective per epoch is fair.
# ``ours (defaults)`` is ``S3GDClassifier`` with the protocol's objective and otherwise
# default parameters (``solver='auto'``: ``'cd'``, coordinate descent, on every set here, all
# dense float64; ``'hybrid'``, one SGD pass then Prox-SVRG, is the default on sparse or float32
# data from 5,000 rows).
# "Best" on a dataset is the lowest median objective at the end of the budget among the
# paper's five methods.
fig, axes = plt.subplots(1, len(data), figsize=(4 * len(data), 3.5))
BEST, FINAL = {}, {}
GRID_T = np.linspace(0, BUDGET, 60)[1:]
for ax, (name, X, y, balanced) in zip(axes, data):
    fstar = optimum(X, y, balanced)
    labels = list(METHODS) + ["ours (defaults)"]
    for label in labels:
        curves = []
        for seed in SEEDS:
            if label == "ours (defaults)":
                kw, _ = protocol(balanced)
                start, times = time.process_time(), []
                clf = S3GDClassifier(track_objective=True, random_state=seed,
                                     callback=lambda r: times.append(
                                         time.process_time() - start) and False, **kw)
                clf.fit(X, y)
                objs = list(clf.history_["objective"])
            else:
                try:
                    objs, times = run_method(label, X, y, balanced, step_of(name, label),
                                             10**4, seed, BUDGET)
                except FloatingPointError:
                    objs, times = [np.inf], [BUDGET]
            gap = np.maximum(np.asarray(objs, float) - fstar, 1e-12)
            # the objective reached by each time of the grid (step function of the records)
            pos = np.searchsorted(np.asarray(times), GRID_T, side="right") - 1
            # before the first record the iterate is w = 0, where F = log 2 (weights sum to n)
            curves.append(np.where(pos >= 0, gap[np.maximum(pos, 0)], np.log(2) - fstar))
        curves = np.array(curves)
        line, = ax.semilogy(GRID_T, np.median(curves, axis=0), label=label,
                            ls="--" if label == "ours (defaults)" else "-")
        ax.fill_between(GRID_T, curves.min(axis=0), curves.max(axis=0),
                        color=line.get_color(), alpha=0.2)
        FINAL[name, label] = float(np.median(curves[:, -1]))
    paper_methods = {lab: FINAL[name, lab] for lab in METHODS}
    BEST[name] = min(paper_methods, key=paper_methods.get)
    print(f"{name}: median F - F* at {BUDGET} s: "
          + ", ".join(f"{lab} {FINAL[name, lab]:.1e}" for lab in labels)
          + f"; best paper method: {BEST[name]}")
    ax.set_title(name, fontsize=9)
    ax.set_xlabel("CPU time (s)")
axes[0].set_ylabel("F(w) - F*  (median, min-max over seeds)")
axes[0].legend(fontsize=6)
fig.tight_layout()
s3gd_best = [name for name in BEST if BEST[name] == "s3gd"]
ours_best = [name for name, *_ in data
             if FINAL[name, "ours (defaults)"] <= min(FINAL[name, lab] for lab in METHODS)]
ALPHA = 2 * LAMBDA     # the unweighted sets below
STEP_S3GD = step_of(data[0][0], "s3gd")
STEP_SVRG = step_of(data[0][0], "svrg (k_in=50)")

# %%
# 2. Number of anchors
# --------------------
# Final suboptimality after a fixed number of epochs and fit time against m (paper Fig. 7/8).
name, X, y, _ = data[0]
fstar = optimum(X, y, False)
ms = [10, 50] if FAST else [10, 30, 100, 300]
gaps, times = [], []
for m in ms:
    t0 = time.perf_counter()
    clf = S3GDClassifier(alpha=ALPHA, solver="s3gd", eta0=1.0, n_anchors=m, max_iter=EPOCHS,
                         tol=0, n_iter_no_change=10**6, track_objective=True,
                         fit_intercept=False, n_inner=20, random_state=0).fit(X, y)
    times.append(time.perf_counter() - t0)
    gaps.append(clf.history_["objective"][-1] - fstar)
fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.2))
a1.loglog(ms, gaps, "o-")
a1.set_xlabel("anchors m")
a1.set_ylabel("F(w) - F* after %d epochs" % EPOCHS)
a2.plot(ms, times, "o-")
a2.set_xlabel("anchors m")
a2.set_ylabel("fit time (s)")
fig.suptitle(name)
fig.tight_layout()

# %%
# 3. Gradient correlation along the run
# -------------------------------------
# Unweighted objective here (the paper's Fig. 6 runs the plain objective at eta = 0.1).
# At the iterates of an S3GD run (callback), with the snapshot at the start of each epoch,
# the Pearson correlation of the mini-batch gradient (SGD) and of the semi-stochastic gradient
# (S3GD) with the exact gradient, averaged over 20 random mini-batches.
name, Xb, y, _ = data[3]
ys = 2.0 * y - 1
graph = build_anchor_graph(Xb, n_anchors=100, random_state=0)
Z = Xb[graph.anchor_indices]
iterates = []
S3GDClassifier(alpha=ALPHA, solver="s3gd", eta0=0.1, max_iter=EPOCHS * 2, tol=0,
               n_iter_no_change=10**6, fit_intercept=False, random_state=0,
               callback=lambda r: iterates.append(r["x"].copy()) and False).fit(Xb, y)
rng = np.random.RandomState(0)
corr = {"sgd": [], "s3gd": []}
for wt, w in zip(iterates[:-1], iterates[1:]):
    dl = -ys * expit(-ys * (Xb @ w))
    full = Xb.T @ dl / len(y) + ALPHA * w
    approx = np.sum(graph.weights * (-ys[:, None] * expit(-ys[:, None] * (Z @ wt)[graph.neighbors])),
                    axis=1)
    gH = Xb.T @ approx / len(y)
    c_sgd, c_s3 = [], []
    for _ in range(5 if FAST else 20):
        idx = rng.choice(len(y), 10, replace=False)
        g_sgd = Xb[idx].T @ dl[idx] / 10 + ALPHA * w
        g_s3 = Xb[idx].T @ (dl[idx] - approx[idx]) / 10 + gH + ALPHA * w
        c_sgd.append(np.corrcoef(g_sgd, full)[0, 1])
        c_s3.append(np.corrcoef(g_s3, full)[0, 1])
    corr["sgd"].append(np.mean(c_sgd))
    corr["s3gd"].append(np.mean(c_s3))
fig, ax = plt.subplots(figsize=(5, 3.2))
for label, c in corr.items():
    ax.plot(np.arange(1, len(c) + 1), c, "o-", label=label)
ax.set_xlabel("epoch")
ax.set_ylabel("corr(g, grad F)")
ax.set_title(name)
ax.legend()
fig.tight_layout()

# %%
# 5. Inner-loop length k_in = 20 against 50 (Fig. 9)
# --------------------------------------------------
# The paper uses k_in = 20 for S3GD and 50 for SVRG and reports similar curves for both
# lengths (held-out objective on CIFAR10).  Here on the covtype-like problem (20,000 rows in full mode)
# split 75/25: training and held-out objective after each epoch, each method with its
# rule-(47) step from section 1.
name, X, y, _ = data[0]
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)


def logistic_objective(X, y, w, b):
    z = (2.0 * y - 1) * (X @ w + b)
    return np.mean(np.logaddexp(0, -z)) + 0.5 * ALPHA * w @ w


fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.4))
held_out = {}    # (solver, k_in) -> final held-out objective
for solver in ("s3gd", "svrg"):
    for k_in, style in ((20, "-"), (50, "--")):
        snaps = []
        eta = STEP_S3GD if solver == "s3gd" else STEP_SVRG
        clf = S3GDClassifier(alpha=ALPHA, solver=solver, eta0=eta, n_inner=k_in,
                             max_iter=EPOCHS, tol=0, n_iter_no_change=10**6, random_state=0,
                             fit_intercept=False,
                             callback=lambda r: snaps.append(r["x"].copy()) and False)
        clf.fit(Xtr, ytr)
        b = 0.0          # the constant feature is a column of X
        tr = [logistic_objective(Xtr, ytr, w, b) for w in snaps]
        te = [logistic_objective(Xte, yte, w, b) for w in snaps]
        ep = np.arange(1, len(snaps) + 1)
        a1.semilogy(ep, tr, style, label=f"{solver}, k_in={k_in}")
        a2.semilogy(ep, te, style, label=f"{solver}, k_in={k_in}")
        held_out[solver, k_in] = te[-1]
        print(f"k_in={k_in} {solver}: final train {tr[-1]:.6f}, held-out {te[-1]:.6f}")
a1.set_title(f"{name}: training objective", fontsize=9)
a2.set_title("held-out objective", fontsize=9)
for a in (a1, a2):
    a.set_xlabel("epoch")
a1.legend(fontsize=7)
fig.tight_layout()

# %%
# Verdicts
# --------
n_sets = len(data)
stable_steps = {label: [STEPS[name, label] for name, *_ in data] for label in METHODS}
others = [max(STEPS[n, lab] or 0 for lab in ("sgd", "ssgd", "scv")) for n, *_ in data]
n_at_least = sum((STEPS[n, "s3gd"] or 0) >= o for (n, *_), o in zip(data, others))
n_above = sum((STEPS[n, "s3gd"] or 0) > o for (n, *_), o in zip(data, others))
ours_tol = [name for name, *_ in data if FINAL[name, "ours (defaults)"] <= 1e-4]
corr_wins = sum(a > b for a, b in zip(corr["s3gd"], corr["sgd"]))
gap_spread = max(gaps) / max(min(gaps), 1e-16)
time_growth = times[-1] / times[0]
k_in_diff = {solver: abs(held_out[solver, 20] - held_out[solver, 50])
             / held_out[solver, 50] for solver in ("s3gd", "svrg")}
record(
    "002",
    "plot_s3gd_convergence.py",
    [
        claim("S3GD is the best method on 6 of the 9 datasets (Fig. 4, objective vs CPU time)",
              protocol=f"{n_sets} datasets we can run ({', '.join(n for n, *_ in data)}; the "
                       "paper's nine are not bundled), logistic + lambda=1e-3, constant feature, "
                       "eq. (46) weights on the imbalanced sets, p=10, m=100, k_in 20/50, each "
                       f"method at its rule-(47) step, {len(SEEDS)} seeds, {BUDGET} s CPU each; "
                       "best = lowest median objective at the end of the budget",
              ours=f"S3GD best on {len(s3gd_best)}/{n_sets}; best per dataset: "
                   + ", ".join(f"{k}: {v}" for k, v in BEST.items()),
              verdict=("reproduced" if 3 * len(s3gd_best) >= 2 * n_sets
                       else "partly" if s3gd_best else "refuted"),
              why="measured on bundled/generated stand-ins, not the paper's datasets"),
        claim("SVRG and S3GD are the most stable methods: they tolerate the largest steps "
              "(Fig. 2, rule 47)",
              protocol=f"rule (47) on the grid {GRID}, {ITERS} iterations, last {LAST} averaged",
              ours="; ".join(f"{label}: {steps}" for label, steps in stable_steps.items()),
              verdict=("reproduced" if n_at_least == n_sets and 2 * n_above >= n_sets
                       else "partly" if n_at_least else "refuted"),
              why=f"S3GD's largest step passing (47) is at least that of SGD, SSGD and SCV "
                  f"on {n_at_least}/{n_sets} datasets, larger on {n_above}/{n_sets} (None: "
                  "no step of the grid passes; counted as 0)"),
        claim("Fig. 6: S3GD's semi-stochastic gradient correlates with the exact gradient "
              "better than SGD's mini-batch gradient (like SVRG's)",
              protocol=f"{data[3][0]}, unweighted objective, S3GD at eta=0.1, 100 anchors, "
                       f"{EPOCHS * 2} epochs; Pearson correlation with the exact gradient at "
                       "each epoch's iterate, mean over random mini-batches of 10",
              ours="S3GD " + " ".join(f"{c:.2f}" for c in corr["s3gd"]) + " | SGD "
                   + " ".join(f"{c:.2f}" for c in corr["sgd"])
                   + f"; S3GD higher at {corr_wins}/{len(corr['sgd'])} epochs",
              verdict=("reproduced" if corr_wins == len(corr["sgd"])
                       else "partly" if 2 * corr_wins >= len(corr["sgd"]) else "refuted"),
              why="rule: higher at every epoch (reproduced), at half of them (partly); SVRG's "
                  "correlation (the paper's third curve) is not computed here"),
        claim("Figs. 7-8: S3GD is robust to the number of anchors m, and its time grows "
              "sub-linearly in m",
              protocol=f"{data[0][0]}, unweighted objective, eta=1, k_in=20, {EPOCHS} epochs, "
                       f"m in {ms}",
              ours="F - F* " + ", ".join(f"m={m}: {g:.1e}" for m, g in zip(ms, gaps))
                   + "; fit time " + ", ".join(f"{t:.2f} s" for t in times),
              verdict=("reproduced" if gap_spread <= 10 and time_growth < ms[-1] / ms[0]
                       else "partly" if gap_spread <= 10 or time_growth < ms[-1] / ms[0]
                       else "refuted"),
              why=f"rule: final gap within 10x over m (here {gap_spread:.1f}x) and time growing "
                  f"less than m ({time_growth:.1f}x for {ms[-1] // ms[0]}x the anchors)"),
        claim("Fig. 9: k_in = 20 and k_in = 50 give similar curves for S3GD and SVRG",
              protocol=f"{data[0][0]} split 75/25, each method at its rule-(47) step, "
                       f"{EPOCHS} epochs, held-out objective",
              ours="; ".join(f"{solver}: k_in=20 {held_out[solver, 20]:.6f}, k_in=50 "
                             f"{held_out[solver, 50]:.6f}" for solver in ("s3gd", "svrg")),
              verdict=("reproduced" if max(k_in_diff.values()) <= 0.01
                       else "partly" if min(k_in_diff.values()) <= 0.01 else "refuted"),
              why="rule: final held-out objectives within 1% for both methods (reproduced), "
                  "for one (partly)"),
        claim("Our default (coordinate descent below 5,000 rows; from 5,000 rows one SGD pass, "
              "then Prox-SVRG with an automatic step; stop at tol=1e-4) needs no step tuning "
              "and converges within the budget",
              protocol="same objective and budget as the Fig. 4 row; default parameters "
                       "otherwise (no rule-(47) search)",
              ours="median F - F* at the end: " + ", ".join(
                  f"{n}: {FINAL[n, 'ours (defaults)']:.1e}" for n, *_ in data)
                   + f"; below 1e-4 on {len(ours_tol)}/{n_sets}; lowest of all six curves on "
                   f"{len(ours_best)}/{n_sets} (it stops at tol, the tuned Prox-SVRG runs on)",
              verdict=("reproduced" if len(ours_tol) == n_sets
                       else "partly" if ours_tol else "refuted"),
              why="a separate row: our default is not the paper's algorithm",
              algorithm="ours"),
    ],
    fast=FAST,
)

if matplotlib.get_backend().lower() != "agg":
    plt.show()
