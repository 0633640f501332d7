"""Paper 001 (Epro-SGD), Fig. 1 (right): "Epro attains a smaller objective than SGD,
OneProj and LogT for the same CPU time", at the paper's dimension.

The paper ran KDD Cup 2010 (algebra): 8.4M rows, 20,216,830 features, very sparse, where
a projection onto the l1 ball of 20M coordinates dominates the CPU time.  The stand-in
(``examples/_epro_time.py``: ``make_problem``) has the paper's 20,216,830 columns and
``--rows`` rows of 30 unit-norm binary entries, the constraint active (``y`` scaled so the
ridge solution has l1 norm four times the radius), the paper's ``alpha = 1``,
``beta = 0.5``, ``T = 2000`` and tuned steps (SGD 0.5, Epro 0.3 / lambda 0.03, OneProj 0.1,
LogT 0.1).  Each method runs at the budgets 8, 16, ..., 2000 (separate runs, CPU seconds by
``time.process_time`` around the fit, objective on all rows outside the timed part; a
method's larger budgets are skipped once one run used twice Epro-SGD's CPU time at 2000).
The example ``examples/plot_constrained_lasso_epro.py`` reads the results in full mode and
records the claim's verdict.

Run (from the repository root; with the defaults 13 minutes wall, 12 minutes of CPU, peak RSS
2.0 GB at nice 15 and load 2-6 on 2026-11-27; ``--reference-only`` then adds F* in 40 s):

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 15 \\
        python benchmarks/studies/epro_cpu_time.py [--features 20216830] [--rows 200000] [--seeds 3]
    PYTHONPATH=. python benchmarks/studies/epro_cpu_time.py --reference-only

Writes ``benchmarks/studies/results/epro_cpu_time.json`` and ``.md`` (after every seed).
"""
import argparse
import json
import os
import platform
import resource
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

from _epro_time import (EPRO, METHODS, make_problem, reference,  # noqa: E402
                        time_study, verdict)

OUT = Path(__file__).resolve().parent / "results" / "epro_cpu_time"
BUDGETS = (8, 16, 32, 64, 125, 250, 500, 1000, 2000)


def markdown(payload):
    word, mean, beaten, per_seed = verdict(payload["results"])
    lines = ["# Epro-SGD vs SGD, OneProj, LogT: objective against CPU time (paper 001, Fig. 1 "
             "right)", "",
             f"{payload['date_utc']}, `{payload['command']}`; {payload['rows']:,} x "
             f"{payload['features']:,} CSR, {payload['nnz']:,} stored entries; load average "
             f"{payload['load_before']} before, {payload['load_after']} after; peak RSS "
             f"{payload['peak_rss_gb']:.1f} GB; {payload['wall_total_s']} s wall in all.", "",
             reference_line(payload),
             f"Verdict: **{word}** (Epro-SGD below: {', '.join(beaten) or 'none'}).", "",
             "| seed | Epro-SGD CPU s at T=2000 | method | objective at that CPU time | "
             "F - F* | budget T reached |", "|---|---|---|---|---|---|"]
    f_star = payload.get("reference", {}).get("f_star")
    for seed, (t, best) in per_seed.items():
        for label, (f, T) in best.items():
            gap = "-" if f_star is None else f"{f - f_star:.3g}"
            lines.append(f"| {seed} | {t:.2f} | {label} | {f:.6g} | {gap} | {T} |")
    lines += ["", "| method | seed | T | CPU s | wall s | projections | objective |",
              "|---|---|---|---|---|---|---|"]
    for r in payload["results"]:
        lines.append(f"| {r['method']} | {r['seed']} | {r['T']} | {r['cpu_s']:.2f} | "
                     f"{r['wall_s']:.2f} | {r['n_projections']} | {r['objective']:.6g} |")
    return "\n".join(lines) + "\n"


def reference_line(payload):
    ref = payload.get("reference")
    if ref is None:
        return "F* not computed (run with `--reference-only`)."
    return (f"F* = {ref['f_star']:.8g} (FISTA, {ref['n_iter']} iterations, {ref['cpu_s']} s "
            f"CPU); the solution's multiplier {ref['multiplier']:.3g} (> 0: the ball binds), "
            f"||w*||_1 = {ref['l1_norm']:.4f}.\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, default=20_216_830)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--reference-only", action="store_true",
                        help="add F* (FISTA) to an existing result file of the same problem")
    args = parser.parse_args(argv)
    import scipy
    import sklearn

    import skstoch

    start = time.perf_counter()
    X, y = make_problem(args.features, args.rows)
    if args.reference_only:
        payload = json.loads(OUT.with_suffix(".json").read_text())
        assert (payload["features"], payload["rows"]) == X.shape[::-1]
        cpu = time.process_time()
        payload["reference"] = dict(reference(X, y),
                                    cpu_s=round(time.process_time() - cpu, 1))
        OUT.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
        OUT.with_suffix(".md").write_text(markdown(payload))
        print(payload["reference"])
        return
    payload = {
        "study": "benchmarks/studies/epro_cpu_time.py",
        "command": "python benchmarks/studies/epro_cpu_time.py "
                   + " ".join(argv if argv is not None else sys.argv[1:]),
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "features": X.shape[1], "rows": X.shape[0], "nnz": int(X.nnz),
        "budgets": list(BUDGETS), "methods": list(METHODS), "epro": EPRO,
        "nice": os.nice(0), "load_before": [round(v, 2) for v in os.getloadavg()],
        "setup_wall_s": round(time.perf_counter() - start, 1),
        "versions": {"skstoch": skstoch.__version__, "numpy": np.__version__,
                     "scipy": scipy.__version__, "scikit-learn": sklearn.__version__},
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
    }

    def write(rows):
        payload.update(results=rows, seeds_done=len({r["seed"] for r in rows}),
                       load_after=[round(v, 2) for v in os.getloadavg()],
                       wall_total_s=round(time.perf_counter() - start, 1),
                       peak_rss_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
        OUT.with_suffix(".md").write_text(markdown(payload))
        print(f"seed done ({payload['wall_total_s']} s wall)", flush=True)

    time_study(X, y, BUDGETS, range(args.seeds), on_seed=write,
               log=lambda s: print(s, flush=True))


if __name__ == "__main__":
    main()
