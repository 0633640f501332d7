"""S3GD against SAG, SAGA, SGDClassifier (scikit-learn) and lightning's SAG / SVRG.

Problem: L2-regularised logistic regression without intercept,
``F(w) = (1/n) sum_i log(1 + exp(-y_i x_i.w)) + alpha/2 ||w||^2``, alpha in {1e-5, 1e-3}, on

* ``dense``: a covtype-like ``make_classification`` problem, 54 features (20 informative,
  10 redundant, 4 clusters per class, 5% flipped labels), standardised, rows scaled to unit norm
  (the paper's preprocessing); full size 500,000 x 54;
* ``sparse``: a text-like CSR problem, 50,000 columns, ~50 non-zeros per row (positive values,
  unit-norm rows), labels from a sparse linear model with 5% flips; full size 100,000 x 50,000.

Metric: wall time (including S3GD's anchor graph) until the relative suboptimality
``(F(w) - F*) / F*`` first drops below 1e-3, 1e-5 and 1e-6; ``F*`` from scikit-learn's L-BFGS at
tol 1e-10.  skstoch records the iterate after every epoch through its callback (objective
evaluated afterwards, untimed); its default records the first (warm-up) pass after 1/16, 1/8,
1/4, 1/2 and all of it.  Peers are observed in two ways: re-run with growing ``max_iter``
(1, 2, 3, 4, 6, 9, ...; the first run reaching the target gives the time), and, at the same
granularity as ours, ``SGDClassifier.partial_fit`` on doubling chunks of a once-shuffled copy
(shuffle timed) and lightning SAG in one fit observed through its callback (``n_inner=1/16``).  skstoch's converging
contenders and the two chunked peers are run ``SKSTOCH_BENCH_REPEAT`` (3) times and the
median is reported; the others once (2 cores shared with other jobs), so ratios carry timing
noise of ~10-30%.  Note: lightning's SAG fills its gradient memory with one full pass at
``w = 0`` before its first inner step, so its first callback comes after 1 + 1/16 passes of
gradient work; its iterate there is close to ``-grad F(0) / alpha``.
Contenders: S3GD ``solver='hybrid'`` (no anchor graph) with ``init_step=None`` (one SGD
warm-up pass, then Prox-SVRG), ``init_step='auto'`` (round 11: an exact line-search start
replaces the warm-up when the Hessian at zero is well conditioned, ``c lambda_max <= alpha``)
and ``init_step='line_search'`` (the start always, then Prox-SVRG), the same with one S3GD
anchor epoch first (``anchor_epochs=1``), the paper's constant-step S3GD (noise floor) and its
decaying-step option.  A plot of
suboptimality against time goes to ``results/s3gd_<problem>.png``.

Run: PYTHONPATH=. python benchmarks/bench_s3gd.py [dense|sparse|l1|elasticnet|multinomial]
(dense and sparse by default; ``l1``: l1 models against skglm and celer, see
``_modes/_bench_s3gd_l1.py``; ``elasticnet``: the same with ``l1_ratio=0.5``;
``multinomial``: the multinomial log loss against LogisticRegression, see
``_modes/_bench_s3gd_multinomial.py``).  Results:
``benchmarks/results/s3gd_<problem>.md`` / ``.json`` / ``.png``.  Environment:
``SKSTOCH_BENCH_SCALE`` shrinks n (and d for sparse), ``SKSTOCH_BENCH_BUDGET`` is the seconds
per contender (120), ``SKSTOCH_BENCH_REPEAT`` the runs of the converging contenders (3),
``SKSTOCH_BENCH_ONLY`` a comma-separated list of label substrings to run.  Quick mode
(``SKSTOCH_BENCH_QUICK=1``): scale 0.01, 2 s per contender, one run, files in a temporary
folder.
"""
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.preprocessing import StandardScaler, normalize

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "_modes"))   # the modes' modules
from _harness import QUICK, stamp, write_results  # noqa: E402

from skstoch import S3GDClassifier  # noqa: E402

SCALE = float(os.environ.get("SKSTOCH_BENCH_SCALE", "0.01" if QUICK else "1"))
TARGETS = (1e-3, 1e-5, 1e-6)
BUDGET = float(os.environ.get("SKSTOCH_BENCH_BUDGET", "2" if QUICK else "120"))  # s per contender
REPEAT = int(os.environ.get("SKSTOCH_BENCH_REPEAT", "1" if QUICK else "3"))  # runs, converging cases
# comma-separated substrings of contender labels to run (all by default)
ONLY = [o for o in os.environ.get("SKSTOCH_BENCH_ONLY", "").split(",") if o]


def dense_problem(seed=0):
    n = int(500_000 * SCALE)
    X, y = make_classification(n, 54, n_informative=20, n_redundant=10,
                               n_clusters_per_class=4, flip_y=0.05, random_state=seed)
    return normalize(StandardScaler().fit_transform(X)), y, f"covtype-like dense {n} x 54"


def sparse_problem(seed=0):
    rng = np.random.RandomState(seed)
    n, d, nnz_row = int(100_000 * SCALE), int(50_000 * max(SCALE, 0.2)), 50
    cols = rng.randint(0, d, size=(n, nnz_row))
    vals = rng.exponential(1.0, size=(n, nnz_row))
    X = sp.csr_matrix((vals.ravel(), cols.ravel(), np.arange(0, n * nnz_row + 1, nnz_row)),
                      shape=(n, d))
    X.sum_duplicates()
    X = normalize(X)
    w_true = np.zeros(d)
    support = rng.choice(d, d // 20, replace=False)
    w_true[support] = rng.randn(len(support)) * 10
    margin = X @ w_true
    y = (margin > np.median(margin)).astype(int)
    flip = rng.rand(n) < 0.05
    y[flip] = 1 - y[flip]
    return X, y, f"text-like sparse {n} x {d}, {nnz_row} nnz/row"


def objective(X, ys, w, alpha):
    z = ys * (X @ w)
    return float(np.mean(np.logaddexp(0, -z)) + 0.5 * alpha * w @ w)


def reference_optimum(X, y, ys, alpha):
    lr = LogisticRegression(C=1 / (alpha * X.shape[0]), fit_intercept=False, tol=1e-10,
                            max_iter=10_000).fit(X, y)
    return objective(X, ys, lr.coef_.ravel(), alpha)


_FSTAR = []   # F* of the problem being run (for the early stop of the skstoch traces)


def skstoch_trace(make, X, y):
    """Times at which each epoch ended and the iterates (one fit, callback snapshots)."""
    snaps = []
    t0 = time.perf_counter()
    c0 = time.process_time()

    def cb(record):
        elapsed = time.perf_counter() - t0
        snaps.append((elapsed, time.process_time() - c0, record["x"]))
        # stop at the budget, or once an exact objective is far below the last target
        exact = record["objective"] if record["objective_kind"] != "estimate" else None
        done = exact is not None and _FSTAR and exact - _FSTAR[0] <= 1e-2 * TARGETS[-1] * _FSTAR[0]
        return elapsed > BUDGET or done

    est = make(cb)
    t0 = time.perf_counter()
    c0 = time.process_time()
    est.fit(X, y)
    return snaps


def rerun_trace(make, X, y):
    """Peers: fit with max_iter = 1, 2, 3, 5, 8, ... until the budget is spent."""
    snaps, spent, it = [], 0.0, 1
    while spent < BUDGET:
        est = make(it)
        t0, c0 = time.perf_counter(), time.process_time()
        est.fit(X, y)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        spent += dt
        snaps.append((dt, dc, np.asarray(est.coef_, dtype=float).ravel().copy()))
        if np.max(getattr(est, "n_iter_", it)) < it:
            break   # it stopped on its own: longer runs repeat this fit (and max_iter overflows)
        it = max(it + 1, int(it * 1.5))
    return snaps


CHUNKS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1)   # the first-pass records of S3GD's default warm-up


def partial_fit_trace(make, X, y):
    """SGDClassifier observed at S3GD's granularity through its own API.

    The data are shuffled once (timed), then ``partial_fit`` runs on the doubling chunks 1/16,
    1/8, 1/4, 1/2 and the rest of the first pass (``classes`` on the first call), then on the
    whole shuffled copy (one epoch per call) until the budget is spent; the coefficients are
    copied after every call.  ``partial_fit`` continues its ``t_`` counter across calls, so
    the 'optimal' schedule is the one of a single pass (checked: chunked calls equal one call
    on the same rows to 4e-15).
    """
    snaps = []
    t0, c0 = time.perf_counter(), time.process_time()
    n = X.shape[0]
    perm = np.random.RandomState(0).permutation(n)
    Xs, ys = X[perm], y[perm]
    classes = np.unique(y)
    est = make()
    bounds = [0] + [int(round(f * n)) for f in CHUNKS]
    for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        est.partial_fit(Xs[lo:hi], ys[lo:hi], **({"classes": classes} if i == 0 else {}))
        snaps.append((time.perf_counter() - t0, time.process_time() - c0,
                      est.coef_.ravel().copy()))
    while time.perf_counter() - t0 < BUDGET:
        est.partial_fit(Xs, ys)
        snaps.append((time.perf_counter() - t0, time.process_time() - c0,
                      est.coef_.ravel().copy()))
    return snaps


def lightning_callback_trace(make, X, y):
    """lightning SAG in one fit, observed through its callback at S3GD's granularity.

    ``make(callback)`` builds the estimator with ``n_inner=1/16`` (an outer iteration, and a
    callback call, every n/16 samples; the iterates are those of ``n_inner=1``, checked to
    2e-13); the coefficients are copied after 1/16, 1/8, 1/4, 1/2 and then every whole pass.
    Before the first chunk lightning computes every sample's gradient at w = 0 (one full
    pass to initialise the SAG memory), which the times include.
    Returning True stops the fit at the budget.
    """
    snaps, count = [], [0]
    keep = {1, 2, 4, 8}

    def cb(est):
        count[0] += 1
        elapsed = time.perf_counter() - t0
        if count[0] in keep or count[0] % 16 == 0:
            snaps.append((elapsed, time.process_time() - c0,
                          np.asarray(est.coef_, dtype=float).ravel().copy()))
        return True if elapsed > BUDGET else None

    est = make(cb)
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(X, y)
    return snaps


def time_to_targets(snaps, X, ys, alpha, fstar):
    """First (wall, cpu) time at which each target is reached, the best gap, the curve."""
    out, best = {}, np.inf
    curve = []
    for t, c, w in snaps:
        rel = (objective(X, ys, w, alpha) - fstar) / fstar
        best = min(best, rel)
        curve.append((t, rel))
        for tgt in TARGETS:
            if tgt not in out and rel <= tgt:
                out[tgt] = (t, c)
    return out, best, curve


def contenders(alpha, n, sparse_input):
    epochs = 200
    s3 = dict(alpha=alpha, fit_intercept=False, random_state=0, tol=0, n_iter_no_change=10**6,
              max_iter=epochs)
    # 'auto' runs 'cd' on a dense X: the Prox-SVRG rows name their solver
    hybrid = dict(s3, solver="hybrid")
    cases = [
        ("Prox-SVRG (S3GDClassifier) init_step=None (SGD warm-up pass, then Prox-SVRG; default of rounds 6-10)",
         "skstoch", lambda cb: S3GDClassifier(callback=cb, init_step=None, **hybrid),
         skstoch_trace),
        ("Prox-SVRG (S3GDClassifier) init_step='auto' (line-search start instead of the warm-up when "
         "c lambda_max <= alpha)", "skstoch",
         lambda cb: S3GDClassifier(callback=cb, init_step="auto", **hybrid), skstoch_trace),
        ("Prox-SVRG (S3GDClassifier) init_step='line_search' (always; then Prox-SVRG, no warm-up)", "skstoch",
         lambda cb: S3GDClassifier(callback=cb, init_step="line_search", **hybrid), skstoch_trace),
        ("Prox-SVRG (S3GDClassifier) warmup_epochs=0 (from 0, round-3 default)", "skstoch",
         lambda cb: S3GDClassifier(callback=cb, warmup_epochs=0, **hybrid), skstoch_trace),
        ("S3GD epoch then Prox-SVRG (S3GDClassifier anchor_epochs=1)", "skstoch",
         lambda cb: S3GDClassifier(callback=cb, anchor_epochs=1, **hybrid), skstoch_trace),
        ("S3GD paper (solver='s3gd', constant step)", "skstoch",
         lambda cb: S3GDClassifier(callback=cb, solver="s3gd", **s3), skstoch_trace),
        ("S3GD paper, decaying ('adaptive') step", "skstoch",
         lambda cb: S3GDClassifier(callback=cb, solver="s3gd", learning_rate="adaptive",
                                   **{**s3, "tol": 1e-9, "n_iter_no_change": 2,
                                      "track_objective": True}), skstoch_trace),
        ("sklearn SAG", "scikit-learn",
         lambda it: LogisticRegression(solver="sag", C=1 / (alpha * n), fit_intercept=False,
                                       tol=1e-14, max_iter=it, random_state=0), rerun_trace),
        ("sklearn SAGA", "scikit-learn",
         lambda it: LogisticRegression(solver="saga", C=1 / (alpha * n), fit_intercept=False,
                                       tol=1e-14, max_iter=it, random_state=0), rerun_trace),
        ("sklearn SGDClassifier", "scikit-learn",
         lambda it: SGDClassifier(loss="log_loss", alpha=alpha, fit_intercept=False, tol=None,
                                  max_iter=it, random_state=0), rerun_trace),
        ("sklearn SGDClassifier (partial_fit chunks)", "scikit-learn",
         lambda: SGDClassifier(loss="log_loss", alpha=alpha, fit_intercept=False,
                               random_state=0), partial_fit_trace),
    ]
    try:
        from lightning.classification import SAGClassifier, SVRGClassifier
        cases += [
            ("lightning SAG", "sklearn-contrib-lightning",
             lambda it: SAGClassifier(loss="log", alpha=alpha, max_iter=it, tol=1e-14,
                                      random_state=0), rerun_trace),
            ("lightning SAG (callback chunks)", "sklearn-contrib-lightning",
             lambda cb: SAGClassifier(loss="log", alpha=alpha, max_iter=16 * epochs,
                                      n_inner=1 / 16, tol=1e-14, random_state=0,
                                      callback=cb), lightning_callback_trace),
        ]
        if not sparse_input:
            cases.append(
                ("lightning SVRG", "sklearn-contrib-lightning",
                 lambda it: SVRGClassifier(loss="log", alpha=alpha, eta=1.0, n_inner=1.0,
                                           max_iter=it, tol=1e-14, random_state=0),
                 rerun_trace))
    except ImportError:
        pass
    return cases


def run(problem_name):
    X, y, desc = dense_problem() if problem_name == "dense" else sparse_problem()
    ys = 2.0 * y - 1
    rows, payload = [], stamp({"name": f"s3gd_{problem_name}", "problem": desc, "results": []})
    for alpha in (1e-5, 1e-3):
        fstar = reference_optimum(X, y, ys, alpha)
        _FSTAR[:] = [fstar]
        for label, lib, make, tracer in contenders(alpha, X.shape[0], sp.issparse(X)):
            if ONLY and not any(o in label for o in ONLY):
                continue
            # medians of REPEAT runs for every contender observed at the 1/16-pass
            # granularity (times of 20-60 ms, where one sample is too noisy)
            runs = REPEAT if ("hybrid" in label or "defaults" in label
                              or "warmup_epochs" in label or "init_step" in label
                              or tracer in (partial_fit_trace, lightning_callback_trace)) else 1
            hits = []
            for _ in range(runs):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    snaps = tracer(make, X, y)
                hit, best, curve = time_to_targets(snaps, X, ys, alpha, fstar)
                hits.append(hit)
            # median over the runs (a target missed by a run counts as infinitely late)
            med = {tgt: float(np.median([h.get(tgt, (np.inf,))[0] for h in hits]))
                   for tgt in TARGETS}
            cpu = {tgt: float(np.median([h.get(tgt, (np.inf, np.inf))[1] for h in hits]))
                   for tgt in TARGETS}
            res = {"alpha": alpha, "label": label, "library": lib, "best_rel_subopt": best,
                   "runs": runs, "load_avg": os.getloadavg()[0],
                   **{f"t_{tgt:g}": (None if not np.isfinite(med[tgt]) else med[tgt])
                      for tgt in TARGETS},
                   **{f"cpu_{tgt:g}": (None if not np.isfinite(cpu[tgt]) else cpu[tgt])
                      for tgt in TARGETS}, "curve": curve}
            payload["results"].append(res)
            print(alpha, label, {k: v for k, v in res.items() if k != "curve"}, flush=True)
        group = [r for r in payload["results"] if r["alpha"] == alpha]
        fastest = {tgt: min((r[f"t_{tgt:g}"] for r in group if r[f"t_{tgt:g}"] is not None),
                            default=None) for tgt in TARGETS}
        for r in group:
            cells = []
            for tgt in TARGETS:
                t, c = r[f"t_{tgt:g}"], r[f"cpu_{tgt:g}"]
                cells.append("not reached" if t is None else
                             f"{t:.2f} s ({t / fastest[tgt]:.2f}x) [cpu {c:.2f}]")
            rows.append(f"| {alpha:g} | {r['label']} | {r['runs']} | " + " | ".join(cells)
                        + f" | {r['best_rel_subopt']:.1e} | {r['load_avg']:.1f} |")
    name = payload["name"]
    md = [f"# {name}: L2 logistic regression, {desc}", "",
          "Time to relative suboptimality (ratio to the fastest contender at that alpha and "
          "target); `best` is the lowest relative suboptimality seen within the budget "
          f"({BUDGET:g} s per contender). Produced by `benchmarks/bench_s3gd.py`.", "",
          "Cells: wall time (ratio to the fastest wall time) [process CPU time, all threads]. "
          "`runs`: the time is the median over that many runs (skstoch's converging "
          "contenders and the chunked peers; one run otherwise). Chunk schedule of the "
          "first pass, same for S3GD's warm-up, SGDClassifier.partial_fit and lightning SAG "
          "(n_inner=1/16): records after 1/16, 1/8, 1/4, 1/2 and 1 pass, then every pass; "
          "lightning's SAG also makes one full gradient pass at w=0 before its first chunk "
          "(it fills its gradient memory), included in its times. `load`: the 1-minute load average of the machine "
          "(2 cores, shared) when the contender finished.", "",
          "| alpha | contender | runs | time to 1e-3 | time to 1e-5 | time to 1e-6 | best | load |",
          "|---|---|---|---|---|---|---|---|", *rows, "",
          f"Machine: {json.dumps(payload['machine'])}", "",
          f"Versions: {json.dumps(payload['versions'])}", "",
          f"Run on {payload['date_utc']} with `{payload['command']}`.", ""]
    path = write_results(name, payload, "\n".join(md))
    plot(payload, path.with_suffix(".png"), desc)
    print("\n".join(md))


def plot(payload, path, desc):
    """Relative suboptimality against wall time, one panel per alpha, saved to ``path``."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    alphas = sorted({r["alpha"] for r in payload["results"]})
    labels = list(dict.fromkeys(r["label"] for r in payload["results"]))
    # one colour per contender, the same in every panel: tab20's ten dark hues, then its
    # light ones (tab10 repeats after ten contenders)
    tab20 = plt.get_cmap("tab20").colors
    colors = dict(zip(labels, tab20[::2] + tab20[1::2]))
    legend_height = 0.18 * ((len(labels) + 1) // 2) + 0.1   # inches, two columns
    height = 4.2 + legend_height
    fig, axes = plt.subplots(1, len(alphas), figsize=(6 * len(alphas), height), squeeze=False)
    for ax, alpha in zip(axes[0], alphas):
        for r in payload["results"]:
            if r["alpha"] != alpha or not r["curve"]:
                continue
            t, rel = np.array(r["curve"]).T
            style = "-" if r["library"] == "skstoch" else "--"
            ax.loglog(t, np.maximum(rel, 1e-12), style, marker=".", color=colors[r["label"]],
                      label=r["label"])
        for tgt in TARGETS:
            ax.axhline(tgt, color="grey", lw=0.5)
        ax.set_title(f"alpha={alpha:g}", fontsize=9)
        ax.set_xlabel("wall time incl. preprocessing (s)")
        ax.set_ylabel("(F - F*) / F*")
    # the legend goes below the panels, where it hides no curve
    entries = {}
    for ax in axes[0]:
        entries.update(zip(*reversed(ax.get_legend_handles_labels())))
    fig.legend(list(entries.values()), list(entries), loc="lower center", ncol=2, fontsize=7,
               frameon=False)
    fig.suptitle(desc, fontsize=9)
    fig.tight_layout(rect=(0, legend_height / height, 1, 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    for name in (sys.argv[1:] or ["dense", "sparse"]):
        if name == "l1":   # l1 models against skglm, celer, scikit-learn (issue 21.1)
            from _bench_s3gd_l1 import run as run_l1
            run_l1()
        elif name == "elasticnet":   # the same problems, elastic-net penalty (issue 21.1)
            from _bench_s3gd_l1 import run as run_l1
            run_l1(l1_ratio=0.5)
        elif name == "multinomial":   # against LogisticRegression lbfgs (issue 21.2)
            from _bench_s3gd_multinomial import run as run_multinomial
            run_multinomial("dense")
            run_multinomial("sparse")
        else:
            run(name)
