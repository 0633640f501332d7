"""
======================================================================
Constrained Lasso: Epro-SGD against its baselines (paper 001, Fig. 1)
======================================================================

Paper 001 (Chen et al.), Fig. 1 protocol on a generated sparse regression problem
(KDD Cup 2010 is not available offline): the objective of eq. 22 with the paper's
``l2_reg = 1`` (its alpha) and ``radius = 0.5``, ``T = 2000`` stochastic gradients and the
paper's tuned steps: Epro-SGD as published (``solver='epro_sgd_paper'``: ``eta0 = 0.3``,
``lam = 0.03``, ``T1 = 8``, whole epochs), projected SGD (``eta0 = 0.5``, a projection every
step), OneProj (``eta0 = 0.1``) and the LogT baseline of Fig. 1 (``eta0 = 0.1``, written
in ``examples/_epro_time.py``: our library has no LogT solver), plus Epro-ORDA as published.

What the figure can test depends on the constraint being **active**: ``y`` is scaled so
that the unconstrained (ridge) solution has l1 norm four times the radius; the exact
solution's Lagrange multiplier is printed (0 would mean the ball changes nothing, and
the comparison of projection strategies would test nothing).  Every method runs from
several seeds (mean and spread shown).  A second panel adds what our defaults do on the
same problem (``solver='epro_sgd'`` with the automatic step and multiplier,
``'epro_svrg'`` and the exact default ``'fista'``).  The example ends with
:func:`record` rows: the paper's claims tested on the paper's algorithms, and an 'ours' row.

The CPU-time claim of Fig. 1 (right) needs the paper's dimension (20,216,830 columns, where
projections are expensive): ``benchmarks/studies/epro_cpu_time.py`` runs it (about 13
minutes, 2 GB); run it before the full mode, which reads its results.
"""
import json
import os
import time

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST", "0") not in ("", "0")
if FAST:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import Ridge

from skstoch import ConstrainedLasso

try:
    import _epro_time
    from _reproduction import ROOT, claim, record
except ImportError:       # run from another directory
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _epro_time
    from _reproduction import ROOT, claim, record

# %%
# A sparse regression problem with unit-norm rows (like the paper's normalized data)
rng = np.random.RandomState(0)
n_samples, n_features = (2_000, 500) if FAST else (20_000, 5_000)
X = sp.random(n_samples, n_features, density=0.01, random_state=rng, format="csr")
X = sp.diags(1.0 / np.maximum(np.sqrt(X.multiply(X).sum(axis=1).A.ravel()), 1e-12)) @ X
X = X.tocsr()
w_true = np.zeros(n_features)
w_true[rng.choice(n_features, 20, replace=False)] = rng.randn(20)
y = X @ w_true + 0.1 * rng.randn(n_samples)

l2_reg, radius = _epro_time.L2_REG, _epro_time.RADIUS    # the paper's alpha (1) and beta (0.5)
# scale y so that the unconstrained ridge solution has l1 norm 4 * radius: the ball binds
# (1/2n)||r||^2 + l2_reg ||w||^2 is scikit-learn's Ridge with alpha = 2 n l2_reg
ridge = Ridge(alpha=2 * n_samples * l2_reg, tol=1e-10)
y = y * (4.0 * radius / np.abs(ridge.fit(X, y).coef_).sum())
ridge_l1 = np.abs(ridge.fit(X, y).coef_).sum()
exact = ConstrainedLasso(l2_reg=l2_reg, radius=radius, solver="fista", tol=1e-12).fit(X, y)
f_star = exact.history_["objective"][-1]
print(f"||w_ridge||_1 = {ridge_l1:.3f} > radius = {radius}: the constraint is active; "
      f"Lagrange multiplier at the solution {exact.lam_:.4g}, "
      f"||w*||_1 = {np.abs(exact.coef_).sum():.4f}, F* = {f_star:.6g}")

# F(w, b*(w)) of eq. 22 with the optimal intercept (as every solver reports it)
objective = _epro_time.Objective(X, y)


# %%
# The paper's methods at the paper's settings, several seeds, each budget a separate run
# (every method's output at T is a feasible point, as in the paper).
seeds = range(3 if FAST else 5)
budgets = np.unique(np.geomspace(32, 2000, 6 if FAST else 9).astype(int))
paper = {
    "Epro-SGD (paper)": dict(solver="epro_sgd_paper"),
    "SGD (paper, projection every step)": dict(solver="sgd", eta0=0.5),
    "OneProj (paper)": dict(solver="oneproj", eta0=0.1, lam=0.03),
    "Epro-ORDA (paper)": dict(solver="epro_orda_paper"),
    # LogT (Zhang et al., ICML 2013) in our reading: projected mini-batch steps (step 0.1),
    # the batch doubling every ceil(L / mu) steps, so O(log T) projections (_epro_time.logt_sgd)
    "LogT (paper's baseline, our reading)": None,
}
ours = {
    "Epro-SGD, our defaults": dict(solver="epro_sgd"),
    "Epro-SVRG (beyond the paper)": dict(solver="epro_svrg"),
}


def run(kw, T, seed):
    coef, _, wall, n_proj = _epro_time.fit(X, y, objective.x_mean, kw, T, seed)
    return objective(coef) - f_star, wall, n_proj


def curves(methods, budgets):
    out = {}
    for label, kw in methods.items():
        out[label] = np.array([[run(kw, T, s) for s in seeds] for T in budgets])
    return out   # (budget, seed, [gap, seconds, projections])


res = curves(paper, budgets)
svrg_budgets = np.unique(np.geomspace(2 * n_samples, 20 * n_samples, 5).astype(int))
res_ours = curves({"Epro-SGD, our defaults": ours["Epro-SGD, our defaults"]}, budgets)
res_ours.update(curves({"Epro-SVRG (beyond the paper)": ours["Epro-SVRG (beyond the paper)"]},
                       svrg_budgets))
start = time.perf_counter()
default_fit = ConstrainedLasso(l2_reg=l2_reg, radius=radius).fit(X, y)   # 'fista', tol 1e-4
fista_time = time.perf_counter() - start
fista_gap = objective(default_fit.coef_) - f_star


def band(ax, x, values, label, style="o-"):
    mean, std = values.mean(axis=1), values.std(axis=1)
    line, = ax.loglog(x, np.maximum(mean, 1e-16), style, label=label)
    ax.fill_between(x, np.maximum(mean - std, 1e-16), mean + std, alpha=0.2,
                    color=line.get_color())


fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
for label, r in res.items():
    proj = int(np.median(r[-1, :, 2]))
    band(axes[0], budgets, r[:, :, 0], f"{label} ({proj} proj. at T={budgets[-1]})")
    band(axes[1], r[:, :, 1].mean(axis=1), r[:, :, 0], label)
for label, r in res_ours.items():
    x = budgets if "SGD" in label else svrg_budgets
    band(axes[2], x, r[:, :, 0], label, "s--")
axes[2].axhline(max(fista_gap, 1e-16), color="k", lw=1,
                label=f"default ConstrainedLasso (fista) {fista_time:.2f} s")
axes[0].set_xlabel("stochastic gradients T")
axes[1].set_xlabel("fit time (s)")
axes[2].set_xlabel("stochastic gradients T (full gradients count n)")
axes[0].set_title("paper's methods and settings")
axes[1].set_title("against time (machine shared, noisy)")
axes[2].set_title("our defaults on the same problem")
for ax in axes:
    ax.set_ylabel("F(w_T) - F*  (mean +- std over seeds)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
fig.suptitle(f"Constrained Lasso, l2_reg={l2_reg}, radius={radius} (active, multiplier "
             f"{exact.lam_:.3g}), {n_samples} x {n_features} sparse, {len(seeds)} seeds")
fig.tight_layout()

# %%
# Fig. 1 (right) at the paper's dimension: objective against CPU time
# ---------------------------------------------------------------------
# The paper's CPU-time panel is dominated by projections onto an l1 ball of 20,216,830
# coordinates (KDD Cup 2010), which the problem above (5,000 columns) cannot show.  The
# study ``benchmarks/studies/epro_cpu_time.py`` builds a CSR stand-in with the paper's
# 20,216,830 columns (``_epro_time.make_problem``: 200,000 unit-norm rows of 30 binary
# entries, the ball active) and fits each method at budgets 8 to 2000, timing each fit with
# ``time.process_time`` in one process; the full mode reads its results (run it first), the
# fast mode runs the same code at 50,000 columns.  Rule, fixed before the run: at the CPU
# time Epro-SGD needs for T = 2000 (per seed), each method's objective is that of its
# largest-budget run that finished within that time (the start w = 0 if none did); Epro's
# mean objective over seeds below each of the other three means -> reproduced, below some ->
# partly, below none -> refuted.
CPU_STUDY = ROOT / "benchmarks" / "studies" / "results" / "epro_cpu_time.json"
if FAST:
    Xc, yc = _epro_time.make_problem(50_000, 5_000)
    cpu_payload = {"results": _epro_time.time_study(Xc, yc, (8, 32, 125, 500, 2000), [0],
                                                    log=lambda s: None),
                   "features": Xc.shape[1], "rows": Xc.shape[0], "nnz": int(Xc.nnz),
                   "command": "(fast mode: the example itself)", "date_utc": "now",
                   "load_before": "not measured", "reference": _epro_time.reference(Xc, yc)}
elif CPU_STUDY.exists():
    cpu_payload = json.loads(CPU_STUDY.read_text())
else:
    cpu_payload = None
CPU_CLAIM = ("Epro attains a smaller objective than the other three for the same CPU time "
             "(Fig. 1 right)")
if cpu_payload is None:
    cpu_claim = claim(CPU_CLAIM, protocol="-", ours="-", verdict="not attempted",
                      why=f"{CPU_STUDY.name} missing: run benchmarks/studies/epro_cpu_time.py "
                          "first", algorithm="paper")
else:
    cpu_rows = cpu_payload["results"]
    word, cpu_mean, beaten, per_seed = _epro_time.verdict(cpu_rows)
    reach = _epro_time.time_to_reach(cpu_rows)
    ref = cpu_payload.get("reference") or {"f_star": 0.0, "multiplier": float("nan")}
    f_star = ref["f_star"]
    f_start = next(r["objective"] for r in cpu_rows if r["T"] == 0)
    fig2, ax2 = plt.subplots(figsize=(7, 4.2))
    for label in _epro_time.METHODS:
        pts = sorted((r["cpu_s"], r["objective"]) for r in cpu_rows
                     if r["method"] == label and r["seed"] == 0 and r["T"] > 0)
        ax2.semilogx(*zip(*pts), "o-", label=label)
    ax2.axhline(f_start, color="grey", lw=1, label="start w = 0")
    ax2.axvline(per_seed[0][0], color="k", lw=1, ls=":", label="Epro-SGD at T=2000")
    ax2.set(xlabel="fit CPU seconds (time.process_time)", ylabel="F(w_T) (all rows)",
            title=f"{cpu_payload['rows']:,} x {cpu_payload['features']:,} CSR, seed 0")
    ax2.legend(fontsize=7)
    ax2.grid(True, which="both", alpha=0.3)
    fig2.tight_layout()
    t_epro = [t for t, _ in per_seed.values()]
    reached = {label: [b[label][1] for _, b in per_seed.values()] for label in _epro_time.METHODS}
    cpu_claim = claim(
        CPU_CLAIM,
        protocol=f"generated CSR {cpu_payload['rows']:,} x {cpu_payload['features']:,} (the "
                 f"paper's KDD Cup 2010 column count; {cpu_payload['nnz']:,} stored entries, "
                 "30 unit-norm binary entries per row, 200-sparse truth, y scaled so "
                 f"||w_ridge||_1 = 4 radius: constraint active, multiplier "
                 f"{ref['multiplier']:.3g}); l2_reg=1, radius=0.5, paper "
                 "steps; each method fitted at T = 8 ... 2000 as separate runs in one process, "
                 "CPU seconds by time.process_time around the fit, objective on all rows "
                 f"outside the timing; {len(per_seed)} seed(s); nice 15 on the shared 2-core "
                 f"machine (load average {cpu_payload['load_before']} at the start); "
                 f"{cpu_payload['command']} ({cpu_payload['date_utc']})",
        ours=f"Epro-SGD needs {np.mean(t_epro):.3g} s CPU for T=2000 (mean over seeds); "
             f"F - F* at that CPU time (F* = {f_star:.8g}; mean over seeds; budget reached): "
             + "; ".join(f"{label}: {cpu_mean[label] - f_star:.3g} (T={min(reached[label])}"
                         + (f"-{max(reached[label])}" if max(reached[label]) >
                            min(reached[label]) else "") + ")"
                         for label in _epro_time.METHODS)
             + "; CPU s to reach Epro-SGD's objective (mean over seeds): "
             + "; ".join(f"{label}: " + (f"{reach[label]:.3g}" if reach[label] is not None
                                          else "not within its runs")
                         for label in _epro_time.METHODS if label != _epro_time.EPRO)
             + f"; the start w = 0 has F(0) - F* = {f_start - f_star:.3g}",
        verdict=word,
        why="Epro-SGD below " + (", ".join(beaten) or "none of the others")
            + (". Caveat: every method's output at Epro-SGD's CPU time lies above the start "
               "w = 0 (with "
              "alpha=1 and 20M columns the ridge term dominates: the solution's multiplier "
              "is tiny and F(0) - F* is below the gaps reached), so the ranking compares "
              "points that the paper's tuned steps leave at the noise level; our estimators "
              "fit an intercept, the paper's Lasso has none" if min(cpu_mean.values()) > f_start
               else "") + ". Our 'sgd' kernel projects "
              "lazily (O(nnz log d) per step on CSR rows), so a projection per step is cheap "
              "here, unlike the paper's O(d) projections; Epro-SGD's epoch projections are "
              "dense. KDD Cup 2010 replaced by generated data with its column count; LogT is our "
              "Python reading of Zhang et al. 2013 (projection on the nonzeros, no estimator "
              "set-up cost), the other three are ConstrainedLasso fits (their validation and "
              "set-up counted)", algorithm="paper")
    print(f"[{word}] CPU time study: {cpu_claim['ours']}")

# %%
# What the figure establishes, as rows of the reproduction page.
final = {label: r[-1, :, 0] for label, r in res.items()}
fmt = {k: f"{v.mean():.3g} +- {v.std():.2g}" for k, v in final.items()}
epro, sgd_, onep, logt_ = (final["Epro-SGD (paper)"], final["SGD (paper, projection every step)"],
                           final["OneProj (paper)"], final["LogT (paper's baseline, our reading)"])
protocol = (f"generated sparse {n_samples} x {n_features} (1% density, unit-norm rows, 20-sparse "
            f"truth, y scaled so ||w_ridge||_1 = 4 radius: constraint active, multiplier "
            f"{exact.lam_:.3g}); l2_reg=1, radius=0.5, T={budgets[-1]}, paper steps "
            f"(Epro 0.3 / lam 0.03 / T1 8, SGD 0.5, OneProj 0.1, LogT 0.1), {len(seeds)} seeds")
smaller = max(epro.mean(), sgd_.mean()) < min(onep.mean(), logt_.mean())
claims = [
    claim("After 2000 iterations Epro and SGD attain smaller objective values than OneProj "
          "and LogT (Fig. 1 left)", protocol=protocol,
          ours="F - F* at T: " + "; ".join(f"{k}: {v}" for k, v in fmt.items()),
          verdict="reproduced" if smaller else "partly" if epro.mean() < onep.mean()
          else "refuted",
          why="mean over seeds at the largest budget; KDD Cup 2010 replaced by generated "
              "data; LogT is our reading of Zhang et al. 2013"),
    claim("Epro uses O(log T) projections where SGD uses T", protocol=protocol,
          ours=f"projections at T={budgets[-1]}: Epro-SGD "
               f"{int(res['Epro-SGD (paper)'][-1, 0, 2])}, SGD "
               f"{int(res['SGD (paper, projection every step)'][-1, 0, 2])}, LogT "
               f"{int(res['LogT (paper' + chr(39) + 's baseline, our reading)'][-1, 0, 2])}",
          verdict="reproduced", why="counted by the estimators (n_projections_)"),
    cpu_claim,
    claim("Our defaults on the same problem", protocol=protocol, algorithm="ours",
          ours=f"Epro-SGD defaults at T={budgets[-1]}: "
               f"{res_ours['Epro-SGD, our defaults'][-1, :, 0].mean():.3g}; Epro-SVRG at "
               f"{svrg_budgets[-1] // n_samples} passes: "
               f"{res_ours['Epro-SVRG (beyond the paper)'][-1, :, 0].mean():.3g}; default "
               f"ConstrainedLasso (fista, tol 1e-4): {fista_gap:.3g} in {fista_time:.2f} s",
          verdict="reproduced", why="F - F* against the tight fista solution"),
]
record("001", "plot_constrained_lasso_epro.py", claims,
       fast=FAST)
for c in claims:
    print(f"[{c['verdict']}] {c['claim']}: {c['ours']}")

if matplotlib.get_backend().lower() != "agg":
    plt.show()
