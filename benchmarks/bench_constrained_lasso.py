"""ConstrainedLasso against scikit-learn ElasticNet/Lasso, skglm, celer and lightning FISTA.

Problem: F(w, b) = 1/(2n) ||Xw + b - y||^2 + alpha ||w||^2 s.t. ||w||_1 <= radius, with
radius = ||w_enet||_1 of scikit-learn's ElasticNet at a penalty chosen so the solution is
sparse; both forms then have the same optimum (KKT), so every contender's coefficients are
scored by the relative suboptimality (F(P(w)) - F*) / F* of our objective after projecting
onto the ball (the penalized solvers may overshoot the radius by their tolerance).

Each case is one fit at a given budget / tolerance; the table gives its time and accuracy
(time to a target = the fastest row of a method whose rel_subopt is below the target).

Usage: python benchmarks/bench_constrained_lasso.py [--scale S]   (S = 1: the issue's sizes,
dense 1,000,000 x 100 and sparse 200,000 x 20,000 at 0.1% density; smaller S shrinks n and d)

Options (each documented in ``--help``):

* ``--only dense|sparse|hard``: one problem; ``hard`` (a correlated, badly scaled sparse
  design) is not part of the default run and has its own summary file;
* ``--only dense --stochastic-only`` runs only our stochastic solvers (Epro-SGD at 0.1, 0.3, 1
  and 3 passes, Epro-SVRG at 1.125, 2.5 and 5 passes, both at their defaults) on the dense
  problem, with the epochs and passes each fit used, and compares them with the peers' times
  from the last full run (results/constrained_lasso_dense<suffix>.json, not re-run: about 25
  minutes at --repeat 1); it writes results/constrained_lasso_dense_stochastic<suffix>.md/.json;
* ``--baselines``: Epro-SGD against the paper's projected-SGD baseline (``solver='sgd'``) on
  the sparse problem (prints the table; writes only with ``--write``);
* ``--cv``: ``ConstrainedLassoCV()`` against scikit-learn's ``LassoCV()`` (the same 5 folds), one fit each on standardized make_regression(100,000 x 100, 20
  informative, noise 50) times ``--scale``, scored by held-out R²
  (results/constrained_lasso_cv<suffix>.md/.json);
* ``--trace``: no timing; the per-epoch relative suboptimality of Epro-SGD / Epro-SVRG fits
  (``track_objective=True``), which explains why more budget can give a worse output
  (``--kind``, ``--solver``, ``--passes``, ``--seed``; the user guide's trace is
  ``--trace --kind dense --scale 0.1``).

Quick mode (``SKSTOCH_BENCH_QUICK=1``): scale 0.01 unless ``--scale`` is given, one timed fit,
files in a temporary folder.
"""
import argparse
import os
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import (QUICK, Case, history_column, results_dir, run_benchmark,  # noqa: E402
                      with_cpu_time)

from sklearn.linear_model import ElasticNet  # noqa: E402

from skstoch import ConstrainedLasso  # noqa: E402
from skstoch._solvers import project_l1_ball  # noqa: E402

ALPHA = 0.01   # ridge strength of our form; ElasticNet(A, l1_ratio=rho): A (1 - rho) / 2


def make_data(kind, scale, seed=0):
    rng = np.random.RandomState(seed)
    if kind == "dense":
        n, d = int(1_000_000 * scale), 100
        X = rng.randn(n, d)
    elif kind == "sparse":
        n, d = int(200_000 * scale), int(20_000 * scale)
        # rows with Binomial(d, 0.001) entries at uniform columns, N(0, 1) values (built
        # directly: scipy.sparse.random draws without replacement over all n*d cells)
        counts = rng.binomial(d, 0.001, size=n)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        indices = rng.randint(0, d, size=indptr[-1]).astype(np.int32)
        X = sp.csr_matrix((rng.randn(indptr[-1]), indices, indptr), shape=(n, d))
        X.sum_duplicates()     # canonical CSR: sorted, duplicate cells merged
    elif kind == "hard":
        # correlated, badly scaled sparse design: latent rows as above with 10 nonzeros on average,
        # each column the sum of three neighbouring latent columns (weights 1, 0.9, 0.8:
        # adjacent columns correlate at 0.66, next-but-one at 0.33), then column scales
        # exp(N(0, 1)) (squared column norms spread over about 4 orders of magnitude)
        n, d = int(200_000 * scale), int(20_000 * scale)
        counts = rng.binomial(d, 10.0 / d, size=n)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        indices = rng.randint(0, d, size=indptr[-1]).astype(np.int32)
        B = sp.csr_matrix((rng.randn(indptr[-1]), indices, indptr), shape=(n, d))
        B.sum_duplicates()
        T = sp.diags([np.ones(d), 0.9 * np.ones(d - 1), 0.8 * np.ones(d - 2)], [0, 1, 2],
                     format="csr")
        X = (B @ T) @ sp.diags(np.exp(rng.randn(d)))
        X = sp.csr_matrix(X)
        X.sum_duplicates()
        X.sort_indices()
    w = np.zeros(d)
    support = rng.choice(d, max(5, d // 20), replace=False)
    w[support] = rng.randn(support.size)
    y = np.asarray(X @ w).ravel() + 0.5 * rng.randn(n) + 1.0
    return X, y


def reference_problem(kind, scale):
    """The benchmark problem and its reference solutions.

    The radius is the l1 norm of the ElasticNet solution at a tenth of the smallest l1
    penalty that zeroes it (ridge part ``2 ALPHA``); ``ref`` is our FISTA at tol 1e-13.
    ``F(coef, intercept=None)`` is the objective at the projected ``coef`` (intercept: its
    optimum given ``coef`` unless given).  Returns ``X, y, radius, F, ref, enet``.
    """
    X, y = make_data(kind, scale)
    n = X.shape[0]
    l1_max = float(np.max(np.abs(np.asarray(X.T @ (y - y.mean())).ravel()))) / n
    l1_pen = 0.1 * l1_max
    A = l1_pen + 2 * ALPHA
    enet = ElasticNet(alpha=A, l1_ratio=l1_pen / A, tol=1e-10, max_iter=100000).fit(X, y)
    radius = float(np.abs(enet.coef_).sum())
    ref = ConstrainedLasso(l2_reg=ALPHA, radius=radius, solver="fista", tol=1e-13,
                           max_iter=100000).fit(X, y)

    def F(coef, intercept=None):
        coef = project_l1_ball(np.asarray(coef, dtype=np.float64).ravel(), radius)
        Xw = np.asarray(X @ coef).ravel()
        b = float(np.mean(y - Xw)) if intercept is None else intercept
        r = Xw + b - y
        return 0.5 * float(r @ r) / n + ALPHA * float(coef @ coef)

    return X, y, radius, F, ref, enet


def cpu_metric(model):
    return {"cpu_s (last fit)": round(float(getattr(model, "cpu_s_", float("nan"))), 3)}


METHODS = ["skstoch epro_sgd", "skstoch epro_orda", "skstoch epro_svrg", "skstoch fista",
           "sklearn ElasticNet", "skglm ElasticNet", "celer ElasticNet", "lightning FISTA"]
TARGETS = (1e-3, 1e-6)


def method_of(label):
    return next(m for m in METHODS if label.startswith(m))


def time_to_target(payload):
    """Per method and target: (wall, cpu) of the case with the smallest median wall time
    whose rel_subopt <= target, or None."""
    out = {}
    for method in METHODS:
        rows = [r for r in payload["results"]
                if "median_s" in r and method_of(r["label"]) == method]
        if not rows:
            continue
        out[method] = {}
        for target in TARGETS:
            ok = [r for r in rows if r["metrics"]["rel_subopt"] <= target]
            best = min(ok, key=lambda r: r["median_s"]) if ok else None
            out[method][target] = None if best is None else (
                best["median_s"], best["metrics"].get("cpu_s (last fit)"))
    return out


def suffix(scale):
    """Results of a smaller problem (--scale) go to their own files."""
    return "" if scale == 1 else f"_scale{scale:g}"


def write_summary(payloads, scale, repeat, stem="time_to_target"):
    results = results_dir()
    lines = ["# constrained_lasso: time to target", "",
             "Time (median of the timed fits, seconds) of the fastest setting of each method "
             "whose relative suboptimality (F(P(w)) - F*) / F* is below the target; F* from "
             "a high-precision reference (our FISTA at tol=1e-13 and scikit-learn's ElasticNet "
             "at tol=1e-10, the lower).  '-' = no setting reached it.  Full tables: "
             "constrained_lasso_dense.md, constrained_lasso_sparse.md; plot: "
             "constrained_lasso_time_to_target.png.", "",
             "2-core machine, possibly shared (the load average of each run is given per "
             "problem; above 2, wall time is inflated by waiting for a core): "
             "median wall time of the timed fits after 1 warm-up fit each (the warm-up also "
             "compiles skglm's numba code), and the process CPU time of the last timed fit "
             "where recorded.  Each peer ran at several tolerances and each of our "
             "stochastic solvers at several budgets; a method's time to a target is its "
             f"fastest setting that reaches it.  scale={scale}.", ""]
    for kind, payload in payloads.items():
        ttt = time_to_target(payload)
        lines += [f"## {kind}: {payload['problem']}", "",
                  f"Load average during the run: {payload.get('load', 'not recorded')}.", "",
                  "| method | " + " | ".join(f"time to {t:g} (s, wall / cpu)" for t in TARGETS)
                  + " | ratio to fastest peer at " + " | ratio at ".join(f"{t:g}" for t in TARGETS)
                  + " |",
                  "|---|" + "---|" * (2 * len(TARGETS))]
        peers = [m for m in ttt if not m.startswith("skstoch")]
        best = {t: min([ttt[m][t][0] for m in peers if ttt[m][t] is not None], default=None)
                for t in TARGETS}

        def cell(v):
            if v is None:
                return "-"
            return f"{v[0]:.3g} / {v[1]:.3g}" if v[1] is not None else f"{v[0]:.3g}"

        for method, times in ttt.items():
            cells = [cell(times[t]) for t in TARGETS]
            ratios = [f"{times[t][0] / best[t]:.2f}" if times[t] is not None and best[t]
                      else "-" for t in TARGETS]
            lines.append(f"| {method} | " + " | ".join(cells + ratios) + " |")
        lines.append("")
    (results / f"constrained_lasso_{stem}{suffix(scale)}.md").write_text("\n".join(lines))
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, len(payloads), figsize=(6 * len(payloads), 4.5))
    axes = np.atleast_1d(axes)
    for ax, (kind, payload) in zip(axes, payloads.items()):
        for method in METHODS:
            rows = sorted([r for r in payload["results"] if "median_s" in r and
                           method_of(r["label"]) == method], key=lambda r: r["median_s"])
            if not rows:
                continue
            ax.plot([r["median_s"] for r in rows],
                    [max(r["metrics"]["rel_subopt"], 1e-16) for r in rows], "o-",
                    label=method, color=f"C{METHODS.index(method)}")
        for t in TARGETS:
            ax.axhline(t, color="gray", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("fit time (s, median)")
        ax.set_ylabel("relative suboptimality")
        ax.set_title(kind + ": " + payload["problem"].split(",")[0])
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(results / f"constrained_lasso_{stem}{suffix(scale)}.png", dpi=90)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--scale", type=float, default=0.01 if QUICK else 1.0,
                        help="problem size relative to the issue's (default 1; 0.01 in quick "
                             "mode)")
    parser.add_argument("--repeat", type=int, default=1 if QUICK else 3)
    parser.add_argument("--only", choices=["dense", "sparse", "hard", "none"], default=None,
                        help="'hard': a correlated, badly scaled sparse design (not part of "
                             "the default run; its own summary file)")
    parser.add_argument("--baselines", action="store_true",
                        help="sparse problem only: Epro-SGD against the paper's projected-SGD "
                             "baseline (lazy O(nnz log d) steps on CSR rows); prints the table "
                             "(with --write: results/constrained_lasso_sparse_baselines.md)")
    parser.add_argument("--write", action="store_true",
                        help="with --baselines: write its results files")
    parser.add_argument("--trace", action="store_true",
                        help="no timing: per-epoch relative suboptimality of Epro-SGD / "
                             "Epro-SVRG fits on --kind (prints only)")
    parser.add_argument("--kind", choices=["dense", "sparse", "hard"], default="dense",
                        help="with --trace: the problem")
    parser.add_argument("--solver", choices=["epro_sgd", "epro_svrg"], default="epro_sgd",
                        help="with --trace: the solver")
    parser.add_argument("--passes", type=float, nargs="+", default=[0.1, 0.3, 1, 3],
                        help="with --trace: budgets in passes over the data")
    parser.add_argument("--seed", type=int, default=0, help="with --trace: random_state")
    parser.add_argument("--stochastic-only", action="store_true",
                        help="with --only dense|sparse: our stochastic solvers only, compared "
                             "with the peers of the last full run of that problem (its JSON); "
                             "writes results/constrained_lasso_<kind>_stochastic.md/.json")
    parser.add_argument("--cv", action="store_true",
                        help="ConstrainedLassoCV() against scikit-learn's LassoCV() (writes "
                             "results/constrained_lasso_cv<suffix>.md)")
    parser.add_argument("--summary-only", action="store_true",
                        help="rewrite the time-to-target summary and plot from the JSON files")
    args = parser.parse_args()
    if args.trace:
        run_trace(args)
        return
    if args.baselines:
        run_baselines(args)
        return
    if args.cv:
        run_cv(args)
        return
    if args.summary_only:
        args.only = "none"
    payloads = {}
    results = results_dir()
    if args.stochastic_only:
        if args.only not in ("dense", "sparse"):
            parser.error("--stochastic-only needs --only dense or --only sparse")
        run_kind(args.only, args)
        return
    if args.only == "hard":
        payload = run_kind("hard", args)
        write_summary({"hard": payload}, args.scale, args.repeat, stem="hard_time_to_target")
        return
    for kind in ("dense", "sparse"):
        if args.only and kind != args.only:
            path = results / f"constrained_lasso_{kind}{suffix(args.scale)}.json"
            if path.exists():    # keep the other kind's last results in the summary
                import json
                payloads[kind] = json.loads(path.read_text())
            continue
        payloads[kind] = run_kind(kind, args)
    write_summary(dict(sorted(payloads.items())), args.scale, args.repeat)


def run_cv(args):
    """Cross-validated radius against cross-validated penalty: fit time and held-out R²."""
    from sklearn.datasets import make_regression
    from sklearn.linear_model import LassoCV
    from sklearn.model_selection import KFold, train_test_split
    from sklearn.preprocessing import StandardScaler

    from skstoch import ConstrainedLassoCV

    n = max(int(100_000 * args.scale), 500)
    X, y = make_regression(n, 100, n_informative=20, noise=50, random_state=0)
    X = StandardScaler().fit_transform(X)
    X, X_test, y, y_test = train_test_split(X, y, test_size=0.2, random_state=0)
    folds = KFold(5, shuffle=True, random_state=0)

    contenders = [("skstoch ConstrainedLassoCV()", "skstoch",
                   lambda: ConstrainedLassoCV(cv=folds)),
                  ("sklearn LassoCV()", "scikit-learn", lambda: LassoCV(cv=folds))]
    cases = [Case(label, library, with_cpu_time(lambda make=make: make().fit(X, y)),
                  lambda model: {"test_r2": model.score(X_test, y_test)})
             for label, library, make in contenders]
    run_benchmark(f"constrained_lasso_cv{suffix(args.scale)}",
                  f"dense make_regression({n}, 100, n_informative=20, noise=50), "
                  f"standardized; 80% to fit, R² on the other 20%",
                  cases, repeat=args.repeat, warmup=1, baseline="sklearn LassoCV()",
                  blas_threads=1,
                  notes="Each library's defaults (100 radii from 1e-3 r_max; 100 alphas from "
                        "1e-3 alpha_max) on the same KFold(5, shuffle=True, random_state=0). "
                        "celer 0.7.4's LassoCV cannot be built under scikit-learn 1.9 (it "
                        "passes the removed n_alphas); skglm has no cross-validated Lasso.")


def run_kind(kind, args):
    if True:
        X, y, radius, F, ref, enet = reference_problem(kind, args.scale)
        n, d = X.shape
        A, rho = enet.alpha, enet.l1_ratio   # the peers solve this penalized problem
        f_star = min(F(ref.coef_), F(enet.coef_))

        stochastic_only = getattr(args, "stochastic_only", False)

        def evaluate(model):
            coef = model.coef_
            out = {"rel_subopt": (F(coef) - f_star) / f_star,
                   "l1_norm/radius": float(np.abs(coef).sum()) / radius,
                   **cpu_metric(model)}
            if stochastic_only:     # what the epoch solver used (stall stopping, budgets)
                out["epochs"] = int(model.n_epochs_)
                out["passes used"] = round(model.budget_used_ / n, 3)
            return out

        cases = []
        hard = kind == "hard"
        passes_sgd = {"dense": (0.1, 0.3, 1, 3) if stochastic_only else (0.1, 0.3, 1),
                      "sparse": (0.5, 1, 1.5, 2, 3), "hard": (1, 3)}[kind]
        for passes in passes_sgd:
            cases.append(Case(
                f"skstoch epro_sgd {passes:g} passes", "skstoch",
                fit=with_cpu_time(lambda p=passes: ConstrainedLasso(
                    l2_reg=ALPHA, radius=radius, solver="epro_sgd", max_iter=int(p * n),
                    tol=0, random_state=0, track_objective=False).fit(X, y)),
                evaluate=evaluate))
        # 'epro_svrg' (beyond the paper): the budget counts each epoch's full gradient as n
        # gradients, so 1.0625 passes = one full gradient + one epoch of n/16 steps
        svrg_passes = ((1.125, 2.5, 5) if hard or (stochastic_only and kind == "dense")
                       else (1.0625, 1.125, 2.5))
        for passes in svrg_passes:
            cases.append(Case(
                f"skstoch epro_svrg {passes:g} passes", "skstoch",
                fit=with_cpu_time(lambda p=passes: ConstrainedLasso(
                    l2_reg=ALPHA, radius=radius, solver="epro_svrg", max_iter=int(p * n),
                    first_epoch_length=max(8, int((p - 1) * n)) if p < 1.2 else None,
                    tol=0, random_state=0, track_objective=False).fit(X, y)),
                evaluate=evaluate))
        # the candidates of solver='auto' at their default budget and tolerance (what a user
        # gets): max_iter=None (10 passes for the stochastic solvers), tol=1e-4
        for solver in ("epro_sgd", "epro_svrg"):
            cases.append(Case(
                f"skstoch {solver} defaults (max_iter=None, tol=1e-4)", "skstoch",
                fit=with_cpu_time(lambda s=solver: ConstrainedLasso(
                    l2_reg=ALPHA, radius=radius, solver=s, random_state=0).fit(X, y)),
                evaluate=evaluate))
        if stochastic_only:
            return run_stochastic_only(kind, args, cases, n, d, radius, f_star)
        if kind == "dense":
            # Epro-ORDA is O(d) per step on CSR rows (dense dual averages): about 40 s per
            # pass on the sparse problem, so it is benchmarked on the dense one only
            for passes in (0.3, 1):
                cases.append(Case(
                    f"skstoch epro_orda {passes:g} passes", "skstoch",
                    fit=with_cpu_time(lambda p=passes: ConstrainedLasso(
                        l2_reg=ALPHA, radius=radius, solver="epro_orda", max_iter=int(p * n),
                        tol=0, random_state=0, track_objective=False).fit(X, y)),
                    evaluate=evaluate))
        for tol in (1e-3, 1e-6):
            cases.append(Case(f"skstoch fista tol={tol:g}", "skstoch",
                              fit=with_cpu_time(lambda t=tol: ConstrainedLasso(
                                  l2_reg=ALPHA, radius=radius, solver="fista",
                                  tol=t).fit(X, y)),
                              evaluate=evaluate))
        # each peer at several tolerances, so that its time to a target is its fastest
        # setting that reaches it (intermediate tolerances 1e-3 and 3e-4 included)
        for tol in ((1e-4,) if hard else (1e-2, 1e-3, 3e-4, 1e-4, 1e-6)):
            if kind == "sparse" and tol == 1e-6:
                continue    # sklearn's tol=1e-2 already reaches 1e-8 here (12 s a fit)
            cases.append(Case(f"sklearn ElasticNet tol={tol:g}", "scikit-learn",
                              fit=with_cpu_time(lambda t=tol: ElasticNet(
                                  alpha=A, l1_ratio=rho, tol=t, max_iter=100000).fit(X, y)),
                              evaluate=evaluate))
        try:
            from skglm import ElasticNet as SkglmEnet
            for tol in ((1e-3, 3e-4, 1e-6) if hard else (1e-2, 1e-3, 3e-4, 1e-4, 1e-6)):
                cases.append(Case(f"skglm ElasticNet tol={tol:g}", "skglm",
                                  fit=with_cpu_time(lambda t=tol: SkglmEnet(
                                      alpha=A, l1_ratio=rho, tol=t,
                                      max_iter=1000).fit(X, y)),
                                  evaluate=evaluate))
        except ImportError:
            pass
        try:
            from celer import ElasticNet as CelerEnet
            for tol in ((1e-4,) if hard else (1e-2, 1e-4, 1e-6)):
                cases.append(Case(f"celer ElasticNet tol={tol:g}", "celer",
                                  fit=with_cpu_time(lambda t=tol: CelerEnet(
                                      alpha=A, l1_ratio=rho, tol=t).fit(X, y)),
                                  evaluate=evaluate))
        except ImportError:
            pass
        try:
            from lightning.regression import FistaRegressor
            # lightning's squared loss is 1/2 sum (no 1/n) and it has no intercept: center
            # the data first (dense only: centering would densify the CSR matrix); C = 1/n,
            # alpha = radius, and penalty='l1-ball' has no ridge term, so it solves the
            # alpha=0 problem; we score its coefficients on ours as they are.
            if kind == "dense":
                Xc, yc = X - X.mean(axis=0), y - y.mean()
                for it in (3, 10):
                    cases.append(Case(
                        f"lightning FISTA l1-ball (no ridge) max_iter={it}",
                        "sklearn-contrib-lightning",
                        fit=with_cpu_time(lambda m=it: FistaRegressor(
                            C=1.0 / n, alpha=radius, penalty="l1-ball",
                            max_iter=m).fit(Xc, yc)),
                        evaluate=evaluate))
        except ImportError:
            pass
        desc = (f"{kind} {n} x {d}" + (f" (density {X.nnz / (n * d):.4f})" if sp.issparse(X)
                                      else "") +
                f", alpha={ALPHA}, radius={radius:.4g} (= ||w_enet||_1), F*={f_star:.6g}")
        load_before = os.getloadavg()[0]
        payload = run_benchmark(
            f"constrained_lasso_{kind}{suffix(args.scale)}", desc, cases, repeat=args.repeat, warmup=1,
            baseline="sklearn ElasticNet tol=0.0001",
            notes=f"scale={args.scale}; 2-core machine, possibly shared "
                  f"(1-minute load average {load_before:.1f} at the start, "
                  f"{os.getloadavg()[0]:.1f} at the end); cpu_s = process CPU time of the "
                  f"last timed fit; command: python benchmarks/bench_constrained_lasso.py "
                  f"--only {kind} --scale {args.scale} --repeat {args.repeat}")
        payload["load"] = f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
        path = results_dir() / f"constrained_lasso_{kind}{suffix(args.scale)}.json"
        import json
        path.write_text(json.dumps(payload, indent=1, default=float))
        return payload


def run_stochastic_only(kind, args, cases, n, d, radius, f_star):
    """Our stochastic solvers alone; the peers' fastest times to each target are read from
    the last full run of the same problem (not re-run) and cited under the table."""
    import json
    results = results_dir()
    full = (Path(__file__).resolve().parent / "results" /
            f"constrained_lasso_{kind}{suffix(args.scale)}.json")
    peer_lines = []
    if full.exists():
        old = json.loads(full.read_text())
        ttt = time_to_target(old)
        for target in TARGETS:
            peers = [(m, ttt[m][target]) for m in ttt
                     if not m.startswith("skstoch") and ttt[m][target] is not None]
            if peers:
                m, (wall, cpu) = min(peers, key=lambda p: p[1][0])
                peer_lines.append((target, m, wall, cpu))
        cited = (f"peers from {full.name} (run {old.get('date_utc', '?')}, "
                 f"not re-run; its problem: {old['problem']})")
    else:
        cited = f"{full.name} not found: no peer comparison"
    load_before = os.getloadavg()[0]
    name = f"constrained_lasso_{kind}_stochastic{suffix(args.scale)}"
    desc = (f"{kind} {n} x {d}, alpha={ALPHA}, radius={radius:.4g} (= ||w_enet||_1), "
            f"F*={f_star:.6g}; our stochastic solvers only")
    payload = run_benchmark(
        name, desc, cases, repeat=args.repeat, warmup=1, baseline=cases[0].label,
        notes=f"scale={args.scale}; shared 2-core machine (1-minute load average "
              f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end); cpu_s = "
              f"process CPU time of the last timed fit; epochs / passes used = what the last "
              f"fit used (the defaults stop when an epoch no longer lowers the objective by "
              f"tol); command: python benchmarks/bench_constrained_lasso.py --only {kind} "
              f"--stochastic-only --scale {args.scale:g} --repeat {args.repeat}")
    payload["load"] = f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    ours = time_to_target(payload)
    lines = ["", "## Against the peers of the last full run", "", cited + ".", ""]
    if peer_lines:
        lines += ["| target | fastest peer (wall / cpu s) | " +
                  " | ".join(f"{m} (wall / cpu s, ratio)" for m in ours) + " |",
                  "|---|---|" + "---|" * len(ours)]
    for target, m, wall, cpu in peer_lines:
        cells = []
        for method in ours:
            v = ours[method][target]
            cells.append("-" if v is None else f"{v[0]:.3g} / {v[1]:.3g} ({v[0] / wall:.2f}x)")
        lines.append(f"| {target:g} | {m} {wall:.3g} / {cpu:.3g} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Time to a target = the fastest row (median wall time) of a method whose "
                 "rel_subopt is below it; ratio = that wall time / the peer's.")
    md = results / f"{name}.md"
    md.write_text(md.read_text() + "\n".join(lines) + "\n")
    (results / f"{name}.json").write_text(json.dumps(payload, indent=1, default=float))
    print("\n".join(lines))
    return payload


def run_baselines(args):
    """Epro-SGD against projected SGD (a projection after every step, the paper's 'SGD'
    baseline) on the sparse problem, same budgets; F* from our FISTA at tol=1e-13."""
    X, y, radius, F, ref, _ = reference_problem("sparse", args.scale)
    n, d = X.shape
    f_star = F(ref.coef_)

    def evaluate(model):
        return {"rel_subopt": (F(model.coef_) - f_star) / f_star,
                "n_projections": int(model.n_projections_)}

    cases = []
    for solver in ("epro_sgd", "sgd"):
        for passes in (0.5, 1, 3):
            cases.append(Case(
                f"skstoch {solver} {passes:g} passes", "skstoch",
                fit=lambda s=solver, p=passes: ConstrainedLasso(
                    l2_reg=ALPHA, radius=radius, solver=s, max_iter=int(p * n), tol=0,
                    random_state=0, track_objective=False).fit(X, y),
                evaluate=evaluate))
    cases.append(Case("skstoch fista tol=1e-06", "skstoch",
                      fit=lambda: ConstrainedLasso(l2_reg=ALPHA, radius=radius, solver="fista",
                                                   tol=1e-6).fit(X, y),
                      evaluate=evaluate))
    desc = (f"sparse {n} x {d} (density {X.nnz / (n * d):.4f}), alpha={ALPHA}, "
            f"radius={radius:.4g} (= ||w_enet||_1), F*={f_star:.6g}")
    return run_benchmark(
        "constrained_lasso_sparse_baselines", desc, cases, repeat=args.repeat, warmup=0,
        baseline="skstoch epro_sgd 1 passes", write=args.write,
        notes=f"scale={args.scale}; no warm-up fit; 2-core machine, possibly shared "
              f"(see the load column); command: python benchmarks/"
              f"bench_constrained_lasso.py --baselines --scale {args.scale} "
              f"--repeat {args.repeat}")


def run_trace(args):
    """Per-epoch relative suboptimality (F - F*) / F* of the projected output of each epoch
    (``history_`` objective, ``track_objective=True``) for each budget, with the epoch lengths;
    no timing.  F* as in the benchmark (the lower of our FISTA and scikit-learn's ElasticNet)."""
    X, y, radius, F, ref, enet = reference_problem(args.kind, args.scale)
    n, d = X.shape
    f_star = min(F(ref.coef_), F(enet.coef_))
    print(f"{args.kind} {n} x {d}, alpha={ALPHA}, radius={radius:.4g}, F*={f_star:.6g}, "
          f"solver={args.solver}, random_state={args.seed}")
    for passes in args.passes:
        budget = int(passes * n)
        kw = {}
        if args.solver == "epro_svrg" and passes < 1.2:
            kw["first_epoch_length"] = max(8, int((passes - 1) * n))
        model = ConstrainedLasso(l2_reg=ALPHA, radius=radius, solver=args.solver,
                                 max_iter=budget, tol=0, random_state=args.seed,
                                 track_objective=True, **kw).fit(X, y)
        per_epoch = [(float(f) - f_star) / f_star
                     for f in history_column(model, "objective")]
        lengths = history_column(model, "epoch_length")
        print(f"{passes:g} passes (budget {budget}, used {model.budget_used_}, "
              f"{model.n_epochs_} epochs): final {(F(model.coef_) - f_star) / f_star:.3g}")
        print("   per epoch: " + ", ".join(f"{v:.2g}" for v in per_epoch))
        if lengths is not None:
            print("   epoch lengths (steps): "
                  + ", ".join(str(int(v)) for v in np.asarray(lengths)))


if __name__ == "__main__":
    main()
