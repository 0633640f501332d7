"""CGVR vs scikit-learn (and lightning's SVRG): time to reach a relative suboptimality of the
L2-regularised logistic objective (issue 3).

Objective (all solvers, no intercept so that every library solves the same problem)::

    f(w) = (1/n) sum_i log(1 + exp(-y_i x_i.w)) + (alpha/2) ||w||^2,   alpha = 1e-4
    (LogisticRegression with C = 1/(n alpha), lightning SVRGClassifier(alpha=alpha))

f* comes from newton-cholesky (dense) or lbfgs (sparse) at tol=1e-14.  For every solver we
walk up a ladder of tolerances (untimed), keep the cheapest setting whose solution reaches
(f - f*)/f* <= target, then time that setting with the harness.  Problems:

(a) dense make_classification(200000, 100, n_informative=30, random_state=0)
(b) sparse rcv1-like: 100000 x 50000 CSR, density 0.1%, rows l2-normalised, labels from a
    sparse linear teacher with 5% label noise.

Run: ``PYTHONPATH=. python benchmarks/bench_cgvr.py [dense] [sparse]`` (peers from the bench
environment, see benchmarks/README.md) writes ``results/cgvr_<problem>_<target>.md/.json``.
``... bench_cgvr.py trace dense sparse`` draws time-vs-suboptimality curves (one fit per
tolerance rung for every solver, CGVR from its ``history_`` plus its setup time) into
``results/cgvr_<problem>_trace.png`` (and ``.json``); ``... trace replot dense sparse`` redraws
the PNGs from the committed JSONs.  ``SKSTOCH_BENCH_QUICK=1`` (quick mode) shrinks the problems
and writes to a temporary folder, e.g. ``SKSTOCH_BENCH_QUICK=1 PYTHONPATH=. python
benchmarks/bench_cgvr.py trace dense sparse``.  Printed reports: ``multinomial``, ``threads``
and ``float32`` (float32 X read in place: the fit's allocation beyond X and the coefficient
difference against float64, 200,000 x 100, dense and CSR: the rows of
``_modes/_bench_float32.ROWS``).  ``small``: default fits on the bundled classification
datasets against ``LogisticRegression()`` (``results/cgvr_small.md``).
"""
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import normalize

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "_modes"))   # the modes' modules
from _harness import (QUICK, RESULTS_DIR, Case, history_column, run_benchmark,  # noqa: E402
                      stamp, to_markdown, write_results)

from skstoch import CGVRClassifier  # noqa: E402

ALPHA = 1e-4
TARGETS = (1e-4, 1e-8)
TOLS = [1.0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12]
warnings.simplefilter("ignore", ConvergenceWarning)


def dense_problem():
    n = 5000 if QUICK else 200000
    X, y = make_classification(n, 100, n_informative=30, random_state=0)
    return X, y, f"dense make_classification({n}, 100, n_informative=30)"


def sparse_problem():
    n, d = (5000, 2000) if QUICK else (100000, 50000)
    rng = np.random.RandomState(0)
    nnz = int(n * d * 0.001)
    rows = rng.randint(0, n, nnz)
    cols = rng.randint(0, d, nnz)        # O(nnz) draws (scipy's sp.random permutes n*d)
    X = sp.csr_matrix((rng.exponential(1.0, nnz), (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    X = normalize(X)
    w_true = np.zeros(d)
    support = rng.choice(d, d // 10, replace=False)
    w_true[support] = rng.randn(d // 10) * 10
    y = np.where(X @ w_true + 0.1 * rng.randn(n) > 0, 1, 0)
    flip = rng.rand(n) < 0.05
    y[flip] = 1 - y[flip]
    return X, y, f"sparse rcv1-like CSR {n}x{d}, density 0.1%, l2-normalised rows"


def objective(X, ys, w):
    return np.mean(np.logaddexp(0, -ys * (X @ w))) + 0.5 * ALPHA * w @ w


def coef_of(est):
    return np.ravel(np.asarray(est.coef_))


def contenders(X, y):
    n = X.shape[0]
    C = 1.0 / (n * ALPHA)
    sqn = np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X) else \
        np.einsum("ij,ij->i", X, X)
    eta = 1.0 / (sqn.max() + 4 * ALPHA)    # 1 / (4 L), L = max ||x_i||^2 / 4 + alpha

    def sk(solver):
        def make(tol):
            return lambda: LogisticRegression(C=C, solver=solver, tol=tol, max_iter=100000,
                                              fit_intercept=False).fit(X, y)
        return make

    def cgvr(tol):
        return lambda: CGVRClassifier(alpha=ALPHA, tol=tol, max_iter=1000, fit_intercept=False,
                                      random_state=0).fit(X, y)

    def lightning(tol):
        def fit():
            from lightning.classification import SVRGClassifier
            return SVRGClassifier(loss="log", alpha=ALPHA, eta=eta, n_inner=1.0, tol=tol,
                                  max_iter=200, random_state=0).fit(X, y)
        return fit

    out = [("skstoch CGVR", "skstoch", cgvr),
           ("sklearn lbfgs", "scikit-learn", sk("lbfgs")),
           ("sklearn newton-cholesky", "scikit-learn", sk("newton-cholesky")),
           ("sklearn liblinear", "scikit-learn", sk("liblinear")),
           ("sklearn saga", "scikit-learn", sk("saga")),
           ("lightning SVRG", "sklearn-contrib-lightning", lightning)]
    if sp.issparse(X):
        # newton-cholesky forms the dense d x d Hessian: minutes at d = 5000 already
        out = [c for c in out if c[0] != "sklearn newton-cholesky"]
    return out


def run_problem(tag, X, y, desc):
    ys = np.where(y == 1, 1.0, -1.0)
    ref_solver = "lbfgs" if sp.issparse(X) else "newton-cholesky"
    ref = LogisticRegression(C=1 / (X.shape[0] * ALPHA), solver=ref_solver, tol=1e-14,
                             max_iter=100000, fit_intercept=False).fit(X, y)
    fstar = objective(X, ys, coef_of(ref))
    for target in TARGETS:
        cases, found = [], {}
        for label, lib, make in contenders(X, y):
            chosen = None
            for tol in TOLS:
                try:
                    t0 = time.perf_counter()
                    est = make(tol)()
                    elapsed = time.perf_counter() - t0
                except ImportError:      # peer not installed: the harness lists it as skipped
                    cases.append(Case(label, lib, make(tol)))
                    found[label] = "not installed"
                    chosen = False
                    break
                sub = (objective(X, ys, coef_of(est)) - fstar) / fstar
                if sub <= target:
                    chosen = tol
                    break
                if elapsed > (20 if not QUICK else 2):      # give up on slow ladders
                    break
            if chosen is False:
                continue
            if chosen is None:
                print(f"[{tag} {target:g}] {label}: target not reached on the ladder")
                found[label] = "not reached"
                continue
            found[label] = chosen

            def evaluate(est, X=X, ys=ys):
                sub = (objective(X, ys, coef_of(est)) - fstar) / fstar
                n_iter = int(np.max(getattr(est, "n_iter_", -1)))
                metrics = {"rel_subopt": float(sub), "n_iter": n_iter}
                passes = history_column(est, "passes") if isinstance(est, CGVRClassifier) \
                    else None
                if passes is not None:
                    metrics["passes"] = float(passes[-1])
                return metrics
            cases.append(Case(f"{label} (tol={chosen:g})", lib, make(chosen), evaluate))
        baseline = next((c.label for c in cases if c.label.startswith("sklearn lbfgs")),
                        cases[0].label)
        notes = (f"alpha={ALPHA} (C = 1/(n alpha)), no intercept, f* = {fstar:.15g} from "
                 f"{ref_solver} at tol=1e-14. Each solver's tol is the smallest rung of "
                 f"{TOLS} needed to reach relative suboptimality <= {target:g} (chosen: "
                 f"{found}). CGVR: defaults (PR+, VR line search, m=50, batch=sqrt(n)); "
                 f"passes = rows read / n. lightning SVRG: eta = 1/(4L), n_inner = n.")
        run_benchmark(f"cgvr_{tag}_{target:g}", f"{desc}; time to rel. subopt {target:g}",
                      cases, repeat=1 if QUICK else 3, warmup=0, baseline=baseline,
                      notes=notes)


def trace_problem(tag, X, y, desc):
    """Time vs relative suboptimality: each solver fitted once per rung of the tol ladder
    (one timed fit each), CGVR from the per-outer-iteration history of one fit."""
    ys = np.where(y == 1, 1.0, -1.0)
    ref_solver = "lbfgs" if sp.issparse(X) else "newton-cholesky"
    ref = LogisticRegression(C=1 / (X.shape[0] * ALPHA), solver=ref_solver, tol=1e-14,
                             max_iter=100000, fit_intercept=False).fit(X, y)
    fstar = objective(X, ys, coef_of(ref))
    curves, overheads = {}, {}
    for label, lib, make in contenders(X, y):
        if label == "sklearn newton-cholesky" and sp.issparse(X):
            continue     # densifies the d x d Hessian: minutes even on the small problem
        pts = []
        if label == "skstoch CGVR":
            def stop(rec):   # trace until 1e-12 below f* (tol stays unreachably small)
                return (history_column(rec, "objective") - fstar) / fstar <= 1e-12
            t0 = time.perf_counter()
            est = CGVRClassifier(alpha=ALPHA, tol=1e-12, max_iter=200, fit_intercept=False,
                                 random_state=0, callback=stop).fit(X, y)
            total = time.perf_counter() - t0
            h = est.history_
            # history_ times start after validation and dataset setup: charge the whole
            # overhead (fit wall time minus the last record's time) to every point, so the
            # curve is an upper bound of what a user would wait for a fit stopped there
            overhead = max(total - float(h["time"][-1]), 0.0)
            sub = (np.asarray(history_column(h, "objective")) - fstar) / fstar
            pts = [(float(t) + overhead, float(max(v, 1e-16))) for t, v in zip(h["time"], sub)]
            overheads[label] = overhead
            curves[label] = pts
            continue
        for tol in TOLS:
            try:
                t0 = time.perf_counter()
                est = make(tol)()
                elapsed = time.perf_counter() - t0
            except ImportError:
                break
            sub = (objective(X, ys, coef_of(est)) - fstar) / fstar
            pts.append((elapsed, float(max(sub, 1e-16))))
            if sub <= 1e-10 or elapsed > (30 if not QUICK else 2):
                break
        if pts:
            curves[label] = pts
    data = trace_payload(tag, desc, fstar, curves, overheads)
    path = write_results(data["name"], data, to_markdown(data))
    plot_trace(data, path.with_suffix(".png"))
    for label, pts in curves.items():
        print(tag, label, " ".join(f"{t:.3g}s:{v:.1e}" for t, v in pts[:40]))


def trace_payload(tag, desc, fstar, curves, overheads):
    """The trace in the harness's results layout (so the docs' benchmarks page and
    ``to_markdown`` render it): one row per solver whose time is that of the first point
    (cheapest ``tol`` rung, or CGVR outer iteration) at relative suboptimality <= 1e-8; the
    raw curves are kept under ``curves``."""
    rows = []
    for label, pts in curves.items():
        lib = next((lb for name, lb in LIBRARIES if label.startswith(name)), "")
        first = {t: next((s for s, v in pts if v <= t), None) for t in TARGETS}
        metrics = {f"t_to_{t:g}_s": first[t] for t in TARGETS}
        metrics["best_rel_subopt"] = min(v for _, v in pts)
        metrics["points"] = len(pts)
        t8 = first[TARGETS[-1]]
        if t8 is None:
            rows.append({"label": label, "library": lib, "skipped":
                         f"{TARGETS[-1]:g} not reached: best {metrics['best_rel_subopt']:.2g} "
                         f"after {max(s for s, _ in pts):.3g} s"})
            continue
        rows.append({"label": label, "library": lib, "n_timed": 1, "median_s": t8,
                     "min_s": t8, "max_s": t8, "times_s": [t8], "metrics": metrics})
    base = next((r for r in rows if r["label"] == "sklearn lbfgs" and "median_s" in r), None)
    for row in rows:
        if "median_s" in row:
            row["ratio_to_baseline"] = row["median_s"] / base["median_s"] if base else None
    return stamp({
        "name": f"cgvr_{tag}_trace",
        "problem": f"{desc}; time-vs-suboptimality trace, rows: time to rel. subopt "
                   f"{TARGETS[-1]:g}",
        "baseline": "sklearn lbfgs", "repeat": 1, "warmup": 0, "blas_threads": None,
        "notes": (f"alpha={ALPHA} (C = 1/(n alpha)), no intercept, f* = {fstar:.15g}. "
                  "Peers: one full fit per rung of the tol ladder "
                  f"{TOLS} (stopping after 1e-10 or a 30 s fit), each point = (fit wall "
                  "time, relative suboptimality); CGVR: the per-outer-iteration history_ of "
                  "one fit, every point charged the fit's whole validation/setup overhead "
                  f"({', '.join(f'{v:.3g} s' for v in overheads.values())}). The plot is "
                  f"cgvr_{tag}_trace.png. Single fits on a 2-core machine, possibly shared (see the load column)."),
        "results": rows,
        "f_star": fstar, "alpha": ALPHA, "curves": curves,
        "cgvr_setup_overhead_s": overheads,
    })


LIBRARIES = (("skstoch", "skstoch"), ("sklearn", "scikit-learn"),
             ("lightning", "sklearn-contrib-lightning"))
COLORS = {"skstoch CGVR": "C0", "sklearn lbfgs": "C1", "sklearn newton-cholesky": "C2",
          "sklearn liblinear": "C3", "sklearn saga": "C4", "lightning SVRG": "C5"}


def plot_trace(data, path):
    """Draw one trace JSON (as written by ``trace_problem``) to ``path`` (log-log axes: the
    solvers' times span three decades)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for label, pts in data["curves"].items():
        t, v = zip(*pts)
        ax.loglog(t, v, "s-" if label == "skstoch CGVR" else "o-", label=label, ms=4,
                  color=COLORS.get(label), lw=2 if label == "skstoch CGVR" else 1)
    for target in TARGETS:
        ax.axhline(target, color="gray", lw=0.6, ls=":")
    ax.set_xlabel("wall time (s), one fit per point")
    ax.set_ylabel("relative suboptimality (f - f*) / f*")
    ax.set_title(data["problem"].split(";")[0] + f", alpha={data['alpha']:g}", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    which = sys.argv[1:] or ["dense", "sparse"]
    if {"multinomial", "threads", "float32", "small"} & set(which):   # reports (user guide)
        if "small" in which:
            from _bench_cgvr_small import main as small
            small()
        if "float32" in which:
            from _bench_float32 import run_all
            run_all()
        if "multinomial" in which:
            from _bench_cgvr_multinomial import main as multinomial
            multinomial()
        if "threads" in which:
            from _bench_cgvr_threads import main as threads
            threads()
        sys.exit(0)
    if "replot" in which:     # redraw the committed trace JSONs without refitting
        import json
        for tag in ("dense", "sparse"):
            out = RESULTS_DIR / f"cgvr_{tag}_trace"
            if tag in which and out.with_suffix(".json").exists():
                data = json.loads(out.with_suffix(".json").read_text())
                if "results" not in data:      # written before trace_payload existed
                    data = trace_payload(tag, data["problem"], data["f_star"],
                                         data["curves"], data["cgvr_setup_overhead_s"])
                plot_trace(data, f"{out}.png")
        sys.exit(0)
    if "trace" in which:
        for tag, make_problem in (("dense", dense_problem), ("sparse", sparse_problem)):
            if tag in which:
                trace_problem(tag, *make_problem())
        sys.exit(0)
    if "dense" in which:
        run_problem("dense", *dense_problem())
    if "sparse" in which:
        run_problem("sparse", *sparse_problem())
