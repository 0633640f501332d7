"""OrdinalEmbedding (SVRG-SBB) against cblearn's STE / TSTE / GNMDS / CKL / SOE.

For each loss and scale: cblearn (L-BFGS, its defaults; SOE with n_init=1) is fitted and its
test triplet error recorded; skstoch is then timed until its test error first reaches that
value (checked after every epoch by a callback whose own time is subtracted), and once more
with its default stopping rule.  Generated noise-free triplets, 10 dimensions.

Usage::

    PYTHONPATH=. /work/venv-bench/bin/python benchmarks/bench_ordinal_embedding.py small
    PYTHONPATH=. /work/venv-bench/bin/python benchmarks/bench_ordinal_embedding.py medium ste,tste
    PYTHONPATH=. /work/venv-bench/bin/python benchmarks/bench_ordinal_embedding.py large ste
    PYTHONPATH=. /work/venv-bench/bin/python benchmarks/bench_ordinal_embedding.py plot
    PYTHONPATH=. /work/venv-bench/bin/python benchmarks/bench_ordinal_embedding.py kernels TAG

``kernels TAG`` times one pass of each compiled kernel (full gradient, loss only, one SVRG
epoch of inner steps) in process CPU time and wall time and writes
``results/ordinal_embedding_kernels_TAG.json``; ``results/ordinal_embedding_kernels.md``
compares every TAG found.
"""
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Case, run_benchmark  # noqa: E402

from skstoch import OrdinalEmbedding  # noqa: E402
from skstoch._comparisons import check_comparisons  # noqa: E402
from skstoch._fast import _ordinal  # noqa: E402
from skstoch.datasets import make_embedding, make_triplets  # noqa: E402

SCALES = {  # name: (n_objects, n_train, n_test, max_iter of skstoch, repeat)
    "small": (100, 10_000, 10_000, 100, 3),
    "medium": (2_000, 1_000_000, 100_000, 100, 1),
    "large": (20_000, 10_000_000, 100_000, 30, 1),
}
DIM = 10
# The hidden embedding must not come from the seed the estimators use: make_embedding(seed)
# is N(0, s^2 I) drawn by np.random.RandomState(seed), and cblearn's random init with
# random_state=0 is RandomState(0).multivariate_normal(0, I), i.e. the same draws up to scale.
# The first version of this script used seed 0 for both, so cblearn started at the answer
# (test error 0.000 after 0 L-BFGS iterations).
DATA_SEED = 12345


def generate(n_objects, n_total, seed=DATA_SEED):
    """Noise-free triplets in chunks (bounded memory for 10M triplets)."""
    E = make_embedding(n_objects, DIM, random_state=seed)
    chunks, rest, k = [], n_total, 0
    while rest > 0:
        size = min(rest, 1_000_000)
        chunks.append(make_triplets(embedding=E, n_triplets=size, random_state=seed + 1 + k)
                      .astype(np.int32))
        rest -= size
        k += 1
    return np.concatenate(chunks)


def error_kernel(T_test, n_objects):
    Q, _, _ = check_comparisons(T_test, n_objects=n_objects)
    out = np.empty(len(Q), dtype=np.int8)
    return lambda X: 1.0 - _ordinal.satisfied(Q, np.ascontiguousarray(X), out) / len(Q)


def cblearn_estimator(loss):
    from cblearn import embedding as cbe

    return {
        "ste": lambda: cbe.STE(DIM, random_state=0),
        "tste": lambda: cbe.TSTE(DIM, random_state=0),
        "gnmds": lambda: cbe.GNMDS(DIM, random_state=0),
        "ckl": lambda: cbe.CKL(DIM, random_state=0),
        "soe": lambda: cbe.SOE(DIM, n_init=1, random_state=0),
    }[loss]()


LARGE_TARGET_ERROR = 0.05   # "large" scale: cblearn STE reached 0.052 at 2,000 objects / 1M


def _to_target_case(label, loss, solver, max_iter, target, test_error):
    """Fit until the test error first reaches ``target["error"]`` (cblearn's; checked after every epoch /
    iteration by a callback whose own time is subtracted); time and error at that point."""

    def fit():
        spent, spent_cpu, reached = [0.0], [0.0], [None]
        start, start_cpu = time.perf_counter(), time.process_time()

        def callback(record):
            t0, c0 = time.perf_counter(), time.process_time()
            err = test_error(record["x"])
            spent[0] += time.perf_counter() - t0
            spent_cpu[0] += time.process_time() - c0
            if err <= target.get("error", -1.0):
                reached[0] = err
                return True
            return False

        est = OrdinalEmbedding(DIM, loss=loss, solver=solver, max_iter=max_iter,
                               random_state=0, callback=callback)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(T_TRAIN[0], n_objects=N_OBJECTS[0])
        est.reached_ = reached[0] is not None
        est.cpu_s_ = time.process_time() - start_cpu - spent_cpu[0]
        return est, time.perf_counter() - start - spent[0]

    return Case(label, "skstoch", fit,
                lambda est: {"test_error": test_error(est.embedding_),
                             "n_iter": int(est.n_iter_),
                             "reached_target": bool(est.reached_),
                             **cpu_metrics(est, target)},
                external_timing=True)


def with_cpu_time(fit):
    """Wrap ``fit() -> est`` so that ``est.cpu_s_`` is the process CPU time of the call (all
    threads: on a loaded machine wall time inflates, CPU time much less)."""
    def wrapped():
        c0 = time.process_time()
        est = fit()
        est.cpu_s_ = time.process_time() - c0
        return est
    return wrapped


def cpu_metrics(est, target):
    out = {"cpu_s": round(est.cpu_s_, 3)}
    if target.get("cpu_s"):
        out["cpu_ratio"] = round(est.cpu_s_ / target["cpu_s"], 4)
    return out


T_TRAIN, N_OBJECTS = [None], [None]


def main(scale, losses):
    n_objects, n_train, n_test, max_iter, repeat = SCALES[scale]
    T = generate(n_objects, n_train + n_test)
    T_train, T_test = T[:n_train], T[n_train:]
    del T
    T_TRAIN[0], N_OBJECTS[0] = T_train, n_objects
    test_error = error_kernel(T_test, n_objects)
    for loss in losses:
        target = {}
        cases = []
        if scale != "large":
            def fit_cb(loss=loss):
                est = cblearn_estimator(loss)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(T_train, n_objects=n_objects)
                target["error"] = test_error(est.embedding_)
                return est

            def eval_cb(est):
                target["cpu_s"] = est.cpu_s_
                return {"test_error": test_error(est.embedding_), "n_iter": int(est.n_iter_),
                        "cpu_s": round(est.cpu_s_, 3), "cpu_ratio": 1.0}

            cases.append(Case(f"cblearn {loss.upper()}", "cblearn", with_cpu_time(fit_cb),
                              eval_cb))
            cases.append(_to_target_case(f"skstoch {loss} lbfgs, to cblearn's test error",
                                         loss, "lbfgs", max_iter, target, test_error))
            cases.append(_to_target_case(f"skstoch {loss} svrg_sbb, to cblearn's test error",
                                         loss, "svrg_sbb", max_iter, target, test_error))

        else:
            # no cblearn run at this scale (its n x n distance matrices do not fit, see
            # `cblearn_probe`): time to a fixed test error instead
            target["error"] = LARGE_TARGET_ERROR
            for solver in ("lbfgs", "svrg_sbb"):
                cases.append(_to_target_case(
                    f"skstoch {loss} {solver}, to test error {LARGE_TARGET_ERROR}", loss,
                    solver, max_iter, target, test_error))

        def fit_ours_default(loss=loss):
            import tracemalloc

            est = OrdinalEmbedding(DIM, loss=loss, max_iter=max_iter, random_state=0)
            tracemalloc.start()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(T_train, n_objects=n_objects)
            est.traced_peak_MB_ = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            return est

        cases.append(Case(f"skstoch {loss} default (lbfgs), max_iter={max_iter}", "skstoch",
                          with_cpu_time(fit_ours_default),
                          lambda est: {"test_error": test_error(est.embedding_),
                                       "n_iter": int(est.n_iter_),
                                       **cpu_metrics(est, target),
                                       "fit_traced_peak_MB": round(est.traced_peak_MB_, 1),
                                       "peak_rss_MB": resource.getrusage(
                                           resource.RUSAGE_SELF).ru_maxrss / 1024}))
        run_benchmark(
            f"ordinal_embedding_{scale}_{loss}",
            f"{n_objects} objects in R^{DIM}, {n_train:,} noise-free training triplets, "
            f"{n_test:,} test triplets; loss {loss}",
            cases, repeat=repeat, warmup=0, baseline=cases[0].label,
            notes=("Data seed 12345, estimators' random_state=0. The 'to cblearn's test error' "
                   "rows stop at the first epoch/iteration whose test error is <= cblearn's "
                   "final test error (reached_target=False: never reached within max_iter; "
                   "the time is then the whole run); their time excludes the per-epoch "
                   "test-error evaluation. cblearn: scipy L-BFGS backend, its default "
                   "max_iter, SOE with n_init=1. peak_rss_MB is the process peak so far "
                   "(includes data generation); fit_traced_peak_MB is the peak of the memory "
                   "allocated through Python/numpy during the default fit (tracemalloc; "
                   "includes the validated int32 copy of the comparisons). cpu_s = process CPU time of the fit (all "
                   "threads; cblearn's BLAS may use both cores), cpu_ratio = cpu_s / cblearn's "
                   "cpu_s. The machine was shared (load average ~9 on 2 cores): wall seconds "
                   f"are inflated; load average when this loss started: "
                   f"{', '.join(f'{v:.1f}' for v in __import__('os').getloadavg())}."),
        )


def plot():
    """Bar chart of cblearn time / skstoch time-to-cblearn's-error from the results files
    (process CPU time where the results record it, wall time otherwise)."""
    import json

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = Path(__file__).resolve().parent / "results"
    losses = ["ste", "tste", "gnmds", "ckl", "soe"]
    scales = [s for s in ("small", "medium")
              if any((results / f"ordinal_embedding_{s}_{loss}.json").exists() for loss in losses)]
    fig, axes = plt.subplots(1, len(scales), figsize=(5.5 * len(scales), 3.8), squeeze=False)
    for ax, scale in zip(axes[0], scales):
        for k, solver in enumerate(["lbfgs", "svrg_sbb"]):
            xs, ys, hatches = [], [], []
            for pos, loss in enumerate(losses):
                path = results / f"ordinal_embedding_{scale}_{loss}.json"
                if not path.exists():
                    continue
                rows = {r["label"]: r for r in json.loads(path.read_text())["results"]}
                row = rows.get(f"skstoch {loss} {solver}, to cblearn's test error")
                if row is None:
                    continue
                xs.append(pos + (k - 0.5) * 0.38)
                # CPU-time ratio where recorded (round 3 on), else the wall-time ratio
                ys.append(1.0 / row["metrics"].get("cpu_ratio", row["ratio_to_baseline"]))
                hatches.append("" if row["metrics"]["reached_target"] else "//")
            bars = ax.bar(xs, ys, width=0.38, label=solver)
            for bar, hatch in zip(bars, hatches):
                bar.set_hatch(hatch)
        ax.axhline(10, color="k", ls=":", lw=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(losses)), [loss.upper() for loss in losses])
        n_objects, n_train = SCALES[scale][:2]
        ax.set(title=f"{n_objects} objects, {n_train:,} triplets",
               ylabel="cblearn time / skstoch time to its error\n(CPU time where recorded)")
        ax.legend(fontsize=8, title="hatched: error not reached", title_fontsize=7)
    fig.tight_layout()
    fig.savefig(results / "ordinal_embedding_speedup.png", dpi=110)


KERNEL_SIZES = [(2_000, 1_000_000), (20_000, 1_000_000)]


def kernels(tag, repeat=3):
    """Per-pass cost of the kernels: min over ``repeat`` of process CPU time and wall time.

    If a module ``skstoch._fast._ordinal_old`` is importable (an earlier ``_ordinal.pyx``
    compiled under that name, never committed), it is timed interleaved with the current
    one, so that both see the same machine load.
    """
    import importlib
    import json
    import os

    from skstoch._fast._comparison_loss import (CKLLoss, GNMDSLoss, SOELoss, STELoss,
                                                TSTELoss)

    modules = {"current": _ordinal}
    try:
        modules = {"previous": importlib.import_module("skstoch._fast._ordinal_old"),
                   "current": _ordinal}
    except ImportError:
        pass
    losses = {"ste": STELoss(), "tste": TSTELoss(9.0), "gnmds": GNMDSLoss(1.0),
              "ckl": CKLLoss(0.05), "soe": SOELoss(0.1)}
    b = 10
    rows = []
    for n_objects, m in KERNEL_SIZES:
        Q, _, _ = check_comparisons(generate(n_objects, m), n_objects=n_objects)
        X = make_embedding(n_objects, DIM, random_state=1) * 3.0
        snap = X + 0.01 * make_embedding(n_objects, DIM, random_state=2)
        G = np.empty_like(X)
        last = np.zeros(n_objects, dtype=np.int64)
        buf = np.empty((2 * b, DIM))
        idx = np.empty(2 * b, dtype=np.int32)
        for name, loss in losses.items():
            res = {"n_objects": n_objects, "n_comparisons": m, "loss": name}
            samples = {}

            def timed(key, fn):
                c0, w0 = time.process_time(), time.perf_counter()
                fn()
                samples.setdefault(key, []).append(
                    (time.process_time() - c0, time.perf_counter() - w0))

            for _ in range(repeat):
                for version, mod in modules.items():
                    timed(f"{version} full_gradient",
                          lambda: mod.full_gradient(loss, Q, snap, G, 1.0 / m))
                    timed(f"{version} loss_only", lambda: mod.loss_sum(loss, Q, snap))
                    x = X.copy()
                    timed(f"{version} svrg_epoch_b10", lambda: mod.stochastic_inner(
                        loss, Q, x, snap, G, 1e-9, m // b, b, 7, 1, last, buf, idx, True))
            for key, vals in samples.items():
                res[key] = (min(v[0] for v in vals), min(v[1] for v in vals))
            rows.append(res)
            print(tag, res, flush=True)
    results = Path(__file__).resolve().parent / "results"
    payload = {"tag": tag, "command": " ".join(sys.argv), "versions": list(modules),
               "load_average": list(os.getloadavg()), "rows": rows}
    (results / f"ordinal_embedding_kernels_{tag}.json").write_text(json.dumps(payload, indent=1))
    lines = ["# ordinal_embedding_kernels", "",
             f"Per-pass cost of the compiled kernels, {DIM} dimensions: min over the runs of "
             "process CPU seconds (wall seconds in parentheses; the machine is shared, CPU "
             "time is the comparable number, and even it varies by up to 2x between runs "
             "under load). full_gradient = loss + gradient over all comparisons; loss_only = "
             "loss over all comparisons; svrg_epoch_b10 = m/10 SVRG inner steps of batch 10 "
             "(one epoch's stochastic part). 'previous' = the kernel module before the "
             "round-3 optimisation, compiled as skstoch._fast._ordinal_old and timed "
             "interleaved with 'current' in the same process.", ""]
    for path in sorted(results.glob("ordinal_embedding_kernels_*.json")):
        data = json.loads(path.read_text())
        keys = [f"{v} {k}" for k in ("full_gradient", "loss_only", "svrg_epoch_b10")
                for v in data["versions"]]
        lines += [f"## {data['tag']}", "", f"`{data['command']}`, load average "
                  f"{', '.join(f'{v:.1f}' for v in data['load_average'])}", "",
                  "| objects | comparisons | loss | " + " | ".join(keys) + " |",
                  "|---" * (3 + len(keys)) + "|"]
        for r in data["rows"]:
            cells = [f"{r[k][0]:.3f} ({r[k][1]:.3f})" if k in r else "-" for k in keys]
            lines.append(f"| {r['n_objects']:,} | {r['n_comparisons']:,} | {r['loss']} | "
                         + " | ".join(cells) + " |")
        lines.append("")
    (results / "ordinal_embedding_kernels.md").write_text("\n".join(lines))


def cblearn_probe(loss="ste"):
    """Try cblearn at the "large" scale under the address-space limit the shell set
    (``ulimit -v``) and record where it stops.  Its gradient builds dense n x n matrices
    (``squareform(pdist(X))`` and a kernel of the same size): 20,000 objects need 3.2 GB for
    each, so the run is capped instead of letting it take the shared machine's memory."""
    import json
    import traceback

    n_objects, n_train, n_test = SCALES["large"][:3]
    T_train = generate(n_objects, n_train + n_test)[:n_train]
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    c0, w0 = time.process_time(), time.perf_counter()
    try:
        est = cblearn_estimator(loss)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(T_train, n_objects=n_objects)
        outcome = f"completed, {est.n_iter_} iterations"
    except MemoryError:
        tb = traceback.extract_tb(sys.exc_info()[2])
        where = [f"{Path(f.filename).name}:{f.lineno} `{f.line}`" for f in tb
                 if "cblearn" in f.filename or "scipy" in f.filename][-3:]
        outcome = "MemoryError at " + " <- ".join(reversed(where))
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    n2 = n_objects * n_objects * 8 / 1e9
    text = (f"# ordinal_embedding_large_cblearn_probe\n\n"
            f"cblearn {loss.upper()} on {n_objects:,} objects, {n_train:,} training triplets "
            f"(the 'large' scale), address space limited to "
            f"{'unlimited' if limit < 0 else f'{limit / 2**30:.1f} GiB'} by `ulimit -v`.\n\n"
            f"Outcome: {outcome} after {cpu:.1f} s CPU ({wall:.1f} s wall).\n\n"
            f"Each cblearn gradient evaluation allocates `squareform(pdist(X))` "
            f"({n2:.1f} GB for n x n float64, plus the condensed {n2 / 2:.1f} GB), a kernel "
            f"matrix of the same size, and per-triplet arrays of {3 * n_train * DIM * 8 / 1e9:.1f}"
            f" GB (3 x m x p float64) with several m x p temporaries, i.e. more than "
            f"{2 * n2 + n2 / 2 + 3 * n_train * DIM * 8 / 1e9:.0f} GB at once.\n\n"
            f"Command: `(ulimit -v N; PYTHONPATH=. python "
            f"benchmarks/bench_ordinal_embedding.py cblearn_probe {loss})`\n")
    print(text)
    results = Path(__file__).resolve().parent / "results"
    (results / "ordinal_embedding_large_cblearn_probe.md").write_text(text)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "cblearn_probe":
        cblearn_probe(*sys.argv[2:3])
        sys.exit()
    if len(sys.argv) > 1 and sys.argv[1] == "plot":
        plot()
        sys.exit()
    if len(sys.argv) > 1 and sys.argv[1] == "kernels":
        kernels(sys.argv[2] if len(sys.argv) > 2 else "current")
        sys.exit()
    scale = sys.argv[1] if len(sys.argv) > 1 else "small"
    losses = sys.argv[2].split(",") if len(sys.argv) > 2 else ["ste", "tste", "gnmds", "ckl",
                                                                "soe"]
    main(scale, losses)
