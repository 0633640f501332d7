"""
=======================================================================
CGVR: fit time against LIBLINEAR, from 32,561 rows to millions (Fig. 4)
=======================================================================

Tests the time half of Fig. 4 of Jin et al. (2019), "Stochastic conjugate gradient algorithm
with variance reduction": "LIBLINEAR runs faster than CGVR on a9a, w8a and ijcnn1, whose
sample sizes are less than 100,000; on SUSY and HIGGS, with millions of data points, CGVR
runs faster, where it only iterates 25 times" (the squared hinge, LIBLINEAR's default
model).

One fit of each method to its own stopping rule on stand-ins with the shapes of the paper's
six data sets (the LIBSVM files cannot be downloaded here), dense and scaled to [-1, 1] as
the authors' code did, squared hinge, lambda = 0.1 (the only setting of the authors'
LIBLINEAR result file): the paper's CGVR (``solver='cgvr_paper'``, T = 25, m = 50), CGVR's
default, and LIBLINEAR ``-s 1`` (scikit-learn's bundled liblinear,
``LinearSVC(dual=True)``) with the command line's eps = 0.1, at the paper's
``C = 1/(2 lambda)`` (no bias, as the authors ran it) and at the matched ``C = 1/(n lambda)``
(CGVR's objective). Fitting millions of rows takes many minutes of CPU, so the full mode
reads the results of ``benchmarks/studies/cgvr_liblinear_time.py`` (run it first); the fast
mode runs the same code (``examples/_cgvr_baselines.py``: ``time_study``) on a few thousand
rows. CPU seconds are the measure: the machine is shared.
"""
# %%
import json
import os

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST", "0") not in ("", "0")
if FAST:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

try:  # examples/_cgvr_baselines.py; sphinx-gallery runs examples from examples/ without __file__
    from _cgvr_baselines import PAPER_ROWS, time_study  # noqa: E402
    from _reproduction import ROOT, claim, record  # noqa: E402
except ImportError:  # run from another directory
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _cgvr_baselines import PAPER_ROWS, time_study  # noqa: E402
    from _reproduction import ROOT, claim, record  # noqa: E402

TIME_STUDY = ROOT / "benchmarks" / "studies" / "results" / "cgvr_liblinear_time.json"
SMALL, LARGE = ("a9a", "w8a", "ijcnn1"), ("SUSY", "HIGGS")      # the claim's two halves
TIME_METHODS = ("CGVR paper", "CGVR ours", "LIBLINEAR paper", "LIBLINEAR matched")
if FAST:
    time_payload = {"results": time_study(
        {name: min(n, 10000 if n > 10 ** 6 else 1000) for name, n in PAPER_ROWS.items()},
        [0.1]), "command": "(fast mode: the example itself)", "date_utc": "now",
        "load_before": "not measured", "rows": {}}
elif TIME_STUDY.exists():
    time_payload = json.loads(TIME_STUDY.read_text())
    if not set(SMALL + LARGE) <= {r["dataset"] for r in time_payload.get("results", [])}:
        time_payload = None                  # an interrupted study without the claim's sets
else:
    time_payload = None
# %%
# CPU seconds of each fit
# -----------------------
if time_payload is not None:
    time_rows = time_payload["results"]
    time_sets = list(dict.fromkeys(r["dataset"] for r in time_rows))
    time_alphas = sorted({r["alpha"] for r in time_rows}, reverse=True)
    cpu = {(r["dataset"], r["alpha"], r["method"]): r["cpu_s"] for r in time_rows}
    shape = {r["dataset"]: (r["n"], r["d"]) for r in time_rows}
    fig, ax = plt.subplots(figsize=(10, 4))
    pos = np.arange(len(time_sets))
    for i, method in enumerate(TIME_METHODS):
        ax.bar(pos + (i - 1.5) * 0.2, [cpu[name, time_alphas[0], method] for name in time_sets],
               0.2, label=method)
    ax.set(xticks=pos, xticklabels=[f"{name}\n{shape[name][0]:,} x {shape[name][1]}"
                                    for name in time_sets],
           yscale="log", ylabel="fit CPU seconds",
           title=f"Fig. 4 (time): squared hinge, lambda={time_alphas[0]:g}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    for r in time_rows:
        print(f"{r['dataset']:8s} {r['n']:>10,} x {r['d']:<3d} {r['method']:18s} "
              f"CPU {r['cpu_s']:8.2f} s  wall {r['wall_s']:8.2f} s  iterations {r['n_iter']}"
              f"  objective {r['objective']:.6g}  AUC {r['train_auc']:.4f}")

# %%
# Claim and verdict
# -----------------
# Rule, fixed before the run: "LIBLINEAR faster below 100,000 rows" holds when LIBLINEAR's
# fit CPU time is below CGVR's on a9a, w8a and ijcnn1; "CGVR faster at millions of rows"
# when CGVR's is below LIBLINEAR's on SUSY and HIGGS. Reproduced when both hold, partly
# when one does. The paper's row pits the paper's CGVR against LIBLINEAR as the authors ran
# it (their C); our row pits CGVR's default against LIBLINEAR on the same objective.
claims = []
TIME_CLAIM = ("Fig. 4 (time): LIBLINEAR is faster on data sets below 100,000 rows, CGVR "
              "faster on SUSY and HIGGS (millions of rows)")
for cgvr, liblinear, algorithm in (("CGVR paper", "LIBLINEAR paper", "paper"),
                                   ("CGVR ours", "LIBLINEAR matched", "ours")):
    if time_payload is None:
        claims.append(claim(TIME_CLAIM, protocol="-", ours="-", verdict="not attempted",
                            why=f"{TIME_STUDY.name} missing or incomplete: run "
                                "benchmarks/studies/cgvr_liblinear_time.py first",
                            algorithm=algorithm))
        continue
    a = time_alphas[0]
    small_ok = all(cpu[d, a, liblinear] < cpu[d, a, cgvr] for d in SMALL)
    large_ok = all(cpu[d, a, cgvr] < cpu[d, a, liblinear] for d in LARGE)
    capped = [f"{name} {shape[name][0]:,} of {PAPER_ROWS[name]:,}" for name in time_sets
              if shape[name][0] < PAPER_ROWS[name]]
    by = {(r["dataset"], r["method"]): r for r in time_rows if r["alpha"] == a}
    claims.append(claim(
        TIME_CLAIM,
        protocol="stand-ins shaped like the paper's data sets (rows x columns: "
                 + ", ".join(f"{name} {shape[name][0]:,} x {shape[name][1]}"
                             for name in time_sets)
                 + (f"; rows capped: {', '.join(capped)}" if capped else "")
                 + f"), dense, scaled to [-1, 1]; squared hinge, lambda={a:g}; one fit each "
                 f"in one process, CPU seconds (time.process_time) at nice 15 on the shared "
                 f"2-core machine (load average {time_payload['load_before']} at the start); "
                 f"{cgvr}: " + ("T=25, m=50, batch sqrt(n)" if cgvr == "CGVR paper" else
                                "default solver, tol=1e-4 on max |grad f|")
                 + f"; {liblinear}: LinearSVC(dual=True) (liblinear -s 1), eps=0.1, "
                 + ("C=1/(2 lambda), no bias (the authors' settings)"
                    if liblinear == "LIBLINEAR paper" else
                    "C=1/(n lambda), penalised bias (CGVR's objective)")
                 + f"; {time_payload['command']} ({time_payload['date_utc']})",
        ours=", ".join(f"{name}: CGVR {cpu[name, a, cgvr]:.3g} s vs LIBLINEAR "
                       f"{cpu[name, a, liblinear]:.3g} s"
                       + (" (LIBLINEAR at its 1000-iteration cap)"
                          if by[name, liblinear]["hit_max_iter"] else "")
                       for name in time_sets),
        verdict="reproduced" if small_ok and large_ok else (
            "partly" if small_ok or large_ok else "refuted"),
        why=("LIBLINEAR faster on a9a, w8a, ijcnn1: " + ("yes" if small_ok else "no")
             + "; CGVR faster on SUSY and HIGGS: " + ("yes" if large_ok else "no")
             + (". At the paper's C = 1/(2 lambda) (a problem about n times less "
                "regularised than CGVR's) LIBLINEAR's dual coordinate descent ran "
                + ", ".join(f"{name} {by[name, liblinear]['n_iter']}" for name in time_sets)
                + " passes (CGVR: 25 outer iterations). The paper's CGVR timings include "
                "finite-difference gradients (its Eq. 51: 2d objective evaluations per "
                "gradient); ours are analytic"
                if liblinear == "LIBLINEAR paper" else
                ". Both minimise the same objective; objectives reached: "
                + ", ".join(f"{name} {by[name, cgvr]['objective']:.6g} vs "
                            f"{by[name, liblinear]['objective']:.6g}" for name in time_sets))),
        algorithm=algorithm))
record("004", "plot_cgvr_liblinear_time.py", claims, fast=FAST)
for c in claims:
    print(f"[{c['algorithm']}] {c['verdict']}: {c['ours'][:200]}")

if matplotlib.get_backend().lower() != "agg":
    plt.show()
