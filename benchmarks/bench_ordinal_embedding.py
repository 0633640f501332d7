"""OrdinalEmbedding (SVRG-SBB and L-BFGS) against cblearn's STE / TSTE / GNMDS / CKL / SOE.

For each loss and scale: cblearn (L-BFGS, its defaults; SOE with n_init=1) is fitted and its
test triplet error recorded; skstoch is then timed until its test error first reaches that
value (checked after every epoch by a callback whose own time is subtracted), and once more
with its default stopping rule.  Generated noise-free triplets, 10 dimensions.

Modes (from the repository root, peers from the bench environment)::

    PYTHONPATH=. python benchmarks/bench_ordinal_embedding.py small [LOSSES]    # 100 objects
    PYTHONPATH=. python benchmarks/bench_ordinal_embedding.py medium [LOSSES]   # 2,000 objects
    PYTHONPATH=. python benchmarks/bench_ordinal_embedding.py large ste         # 20,000 objects
    PYTHONPATH=. python benchmarks/bench_ordinal_embedding.py plot              # speed-up chart
    PYTHONPATH=. python benchmarks/bench_ordinal_embedding.py table1 [TRIALS] [LOSSES]
    PYTHONPATH=. python benchmarks/bench_ordinal_embedding.py defaults [SEEDS]  # default solver
    (ulimit -v N; PYTHONPATH=. python benchmarks/bench_ordinal_embedding.py cblearn_probe ste)

``LOSSES`` is a comma-separated subset of ste,tste,gnmds,ckl,soe.  The scales write
``results/ordinal_embedding_<scale>_<loss>.md/.json``; ``plot`` draws
``results/ordinal_embedding_speedup.png`` from them; ``table1`` runs paper 000's Table I
protocol (time and gradient evaluations to test error 0.15 for every solver, lazy and dense
inner update; see :func:`table1`) into ``results/ordinal_embedding_table1.md/.json``;
``defaults`` compares the default solver ('lbfgs') with the paper's ('svrg_sbb') at the
default budget (every other parameter at its default) on ``make_triplets()`` data, the
protocol of ``tests/test_defaults.py``, in one run: objective, held-out accuracy, CPU time,
iterations and warnings, into ``results/ordinal_embedding_defaults.md/.json``;
``cblearn_probe`` runs cblearn at the large scale under an address-space limit and prints where
it stops (its n x n matrices do not fit: the reason the large scale has no cblearn row).

Quick mode (``SKSTOCH_BENCH_QUICK=1``): 2,000 training / 2,000 test triplets at every scale,
at most 20 iterations, one trial and a short epoch budget for ``table1``; files go to a
temporary folder.
"""
import json
import os
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import (QUICK, Case, results_dir, run_benchmark, stamp,  # noqa: E402
                      with_cpu_time, write_results)

from skstoch import OrdinalEmbedding  # noqa: E402
from skstoch.datasets import make_embedding, make_triplets  # noqa: E402

SCALES = {  # name: (n_objects, n_train, n_test, max_iter of skstoch, repeat)
    "small": (100, 10_000, 10_000, 100, 3),
    "medium": (2_000, 1_000_000, 100_000, 100, 1),
    "large": (20_000, 10_000_000, 100_000, 30, 1),
}
if QUICK:
    SCALES = {name: (n_objects, 2_000, 2_000, 20, 1)
              for name, (n_objects, *_) in SCALES.items()}
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


def error_kernel(T_test, n_objects=None):
    """``error(X)``: the fraction of test triplets (i, j, k), read "i is closer to j than to
    k", that the embedding ``X`` does not satisfy strictly (ties count as errors, as in
    ``OrdinalEmbedding.score``); numpy, so that it scores any library's embedding."""
    i, j, k = (np.ascontiguousarray(T_test[:, c]) for c in range(3))

    def error(X):
        X = np.asarray(X, dtype=np.float64)
        d_ij = np.einsum("ij,ij->i", X[i] - X[j], X[i] - X[j])
        d_ik = np.einsum("ij,ij->i", X[i] - X[k], X[i] - X[k])
        return float(np.mean(~(d_ij < d_ik)))

    return error


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
                   "cpu_s. On a shared machine wall seconds "
                   f"are inflated; load average when this loss started: "
                   f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}."),
        )


def plot():
    """Bar chart of cblearn time / skstoch time-to-cblearn's-error from the results files
    (process CPU time where the results record it, wall time otherwise)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = results_dir()
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
                ratio = None if row is None else row["metrics"].get(
                    "cpu_ratio", row.get("ratio_to_baseline"))
                if not ratio:    # no cblearn time (cblearn not installed): no bar
                    continue
                xs.append(pos + (k - 0.5) * 0.38)
                # CPU-time ratio where recorded (round 3 on), else the wall-time ratio
                ys.append(1.0 / ratio)
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
    plt.close(fig)


def cblearn_probe(loss="ste"):
    """Try cblearn at the "large" scale under the address-space limit the shell set
    (``ulimit -v``) and print where it stops.  Its gradient builds dense n x n matrices
    (``squareform(pdist(X))`` and a kernel of the same size): 20,000 objects need 3.2 GB for
    each, so the run is capped instead of letting it take the shared machine's memory."""
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

# -- paper 000 Table I protocol (mode "table1") ---------------------------------------------
#
# Paper 000's Table I protocol for OrdinalEmbedding: time and gradient evaluations to test
# error 0.15, for every loss and solver, with the lazy (ours) and the dense (the paper's) inner
# update.
#
# Setting (paper note R1): 100 objects drawn from N(0, I/20) in R^10, 10,000 noise-free training
# triplets and 10,000 test triplets (disjoint by index), embedding in R^10, m = |Q| inner samples
# per SVRG epoch (m / b steps of size b eta).  The hidden embedding and the triplets are fixed
# (seed 12345); each trial changes the estimator's ``random_state`` (initialisation and sampling).
#
# Each run stops as soon as the test triplet error, evaluated at every epoch snapshot (the
# authors' scripts evaluate once per epoch too), is at most the threshold.  We record
#
# * ``cpu``: process CPU seconds of the fit up to that snapshot, minus the time spent in the
#   evaluating callback (the paper times the solver only), and ``wall`` likewise;
# * ``ifo``: gradient evaluations up to that snapshot divided by |Q| ("passes"): an SVRG epoch
#   costs 3 (full gradient + 2 per sampled comparison), the start's full gradient 1 (SVRG,
#   GD, and any probed fit), the curvature probe's second point 1 (only when ``eta0`` or
#   ``epsilon`` is probed), a GD iteration 1, an SGD epoch 1.
#
# Solvers: ``gd`` (probed fixed step), ``sgd`` (b = 1, probed step), fixed-step ``svrg`` with
# b = 1 (the paper's "ncvx SVRG") at the authors' reference-code step where the paper note gives
# one (STE 5e-4, t-STE 0.05; none is known for GNMDS and CKL, which use the probed step), at the
# probed step, and at the best step of a grid (0.25, 0.5, 1, 2, 4 times the probed step, chosen
# per loss and update mode by median passes then median CPU time), and ``svrg_sbb`` (our
# defaults: probed ``eta0``, ``epsilon='auto'``) with b in {1, 5, 10, 20, 50, 100, 200}.  Every
# SVRG variant runs with ``inner_update='lazy'`` and ``'dense'``.  CKL (Tamuz form) plateaus
# near test error 0.18 on this data for every solver, so its threshold is 0.20.
#
# Run ``bench_ordinal_embedding.py table1 [n_trials] [losses]`` (5 trials, every loss by
# default); writes ``results/ordinal_embedding_table1.md`` and ``.json``.

T1_OBJECTS, T1_TRAIN, T1_TEST = 100, 10_000, 10_000
LOSSES = ["gnmds", "ckl", "ste", "tste"]
THRESHOLD = {"gnmds": 0.15, "ckl": 0.20, "ste": 0.15, "tste": 0.15}
BATCH_SIZES = [1, 5, 10, 20, 50, 100, 200]
MODES = ["lazy", "dense"]
REF_STEP = {"ste": 5e-4, "tste": 0.05}        # paper note, table of settings (ref-code)
GRID = [0.5, 1.0, 2.0] if QUICK else [0.25, 0.5, 1.0, 2.0, 4.0]
MAX_EPOCHS = 30 if QUICK else 200    # 600 passes for SVRG; GD / SGD get 600 passes
FULL_PASSES_PER_EPOCH = {"svrg": 1, "svrg_sbb": 1, "sgd": 0, "gd": 1}   # snapshot / iteration
SAMPLED_PASSES_PER_EPOCH = {"svrg": 2, "svrg_sbb": 2, "sgd": 1, "gd": 0}  # m sampled gradients


def full_passes(solver, epoch, probed):
    """Full gradient passes a fit runs up to its record of ``epoch``: the start's (SVRG, GD,
    and any probed fit), the probe's second point, one per epoch.
    ``tests/test_harness.py`` checks them against the passes a fit runs."""
    start = 1 if probed or FULL_PASSES_PER_EPOCH[solver] else 0
    return start + (1 if probed else 0) + FULL_PASSES_PER_EPOCH[solver] * epoch


def passes_to(solver, epoch, probed):
    """Gradient evaluations / |Q| up to the record of ``epoch`` (the ``ifo`` column)."""
    return full_passes(solver, epoch, probed) + SAMPLED_PASSES_PER_EPOCH[solver] * epoch

_T1 = {}   # the Table I data, generated on first use: train, test error function


def _table1_data():
    if not _T1:
        E = make_embedding(T1_OBJECTS, DIM, random_state=DATA_SEED)
        T = make_triplets(embedding=E, n_triplets=T1_TRAIN + T1_TEST,
                          random_state=DATA_SEED + 1)
        _T1["train"], _T1["error"] = T[:T1_TRAIN], error_kernel(T[T1_TRAIN:])
    return _T1["train"], _T1["error"]


def time_to_threshold(loss, solver, seed, *, batch_size=1, inner_update="lazy", eta0=None,
                      epsilon="auto"):
    """(cpu seconds, wall seconds, passes, eta0 used) to the threshold; inf if never."""
    T_train, test_error = _table1_data()
    level = THRESHOLD[loss]
    probed = eta0 is None or epsilon == "auto"
    spent_cpu, spent_wall, hit = [0.0], [0.0], [None]
    start = [0.0, 0.0]

    def callback(record):
        c0, w0 = time.process_time(), time.perf_counter()
        if test_error(record["x"]) <= level:
            epoch = record["epoch"]
            hit[0] = (c0 - start[0] - spent_cpu[0], w0 - start[1] - spent_wall[0],
                      passes_to(solver, epoch, probed), epoch)
        spent_cpu[0] += time.process_time() - c0
        spent_wall[0] += time.perf_counter() - w0
        return hit[0] is not None

    max_iter = MAX_EPOCHS if solver in ("svrg", "svrg_sbb") else 3 * MAX_EPOCHS
    est = OrdinalEmbedding(DIM, loss=loss, solver=solver, batch_size=batch_size,
                           inner_update=inner_update, eta0=eta0, epsilon=epsilon,
                           max_iter=max_iter, tol=0.0, random_state=seed, callback=callback)
    start[0], start[1] = time.process_time(), time.perf_counter()
    diverged = False
    try:
        est.fit(T_train, n_objects=T1_OBJECTS)
    except FloatingPointError:   # DivergenceError: the fixed step was too large
        diverged = True
    cpu, wall, passes, epochs = hit[0] if hit[0] is not None else (np.inf,) * 4
    # row operations of the implementation: every gradient evaluation of a triplet reads and
    # writes 3 rows; the dense update writes all n rows once per inner step (paper's code)
    rows = 3.0 * passes * T1_TRAIN
    if solver in ("svrg", "svrg_sbb") and inner_update == "dense":
        rows += T1_OBJECTS * epochs * max(T1_TRAIN // batch_size, 1)
    return {"cpu": cpu, "wall": wall, "ifo": passes, "epochs": epochs, "rowops": rows,
            "diverged": diverged, "eta0": None if diverged else est.eta0_}


def summarise(runs):
    arr = {k: np.array([r[k] for r in runs], dtype=float)
           for k in ("cpu", "wall", "ifo", "rowops")}
    reached = int(np.sum(np.isfinite(arr["cpu"])))
    out = {"reached": reached, "n": len(runs),
           "diverged": int(sum(r.get("diverged", False) for r in runs))}
    for k, v in arr.items():
        out[k + "_median"] = float(np.median(v))
        out[k + "_min"] = float(np.min(v))
        out[k + "_max"] = float(np.max(v))
    return out


def run_loss(loss, trials):
    rows = {}   # label -> list of runs
    for seed in range(trials):
        print(f"  {loss} trial {seed}", flush=True)
        rows.setdefault("gd", []).append(time_to_threshold(loss, "gd", seed))
        rows.setdefault("sgd b=1", []).append(time_to_threshold(loss, "sgd", seed))
        # the probed fixed step of this seed (one epoch; the same for both update modes)
        probed_step = OrdinalEmbedding(DIM, loss=loss, solver="svrg", max_iter=1, tol=0.0,
                                       random_state=seed).fit(_table1_data()[0]).eta0_
        for mode in MODES:
            probed = time_to_threshold(loss, "svrg", seed, inner_update=mode)
            rows.setdefault(f"svrg b=1 probed step [{mode}]", []).append(probed)
            if loss in REF_STEP:
                rows.setdefault(f"svrg b=1 ref-code step [{mode}]", []).append(
                    time_to_threshold(loss, "svrg", seed, inner_update=mode,
                                      eta0=REF_STEP[loss], epsilon=0.0))
            for f in GRID:
                rows.setdefault(f"svrg b=1 step x{f:g} [{mode}]", []).append(
                    time_to_threshold(loss, "svrg", seed, inner_update=mode,
                                      eta0=f * probed_step, epsilon=0.0))
            for b in BATCH_SIZES:
                rows.setdefault(f"svrg_sbb b={b} [{mode}]", []).append(
                    time_to_threshold(loss, "svrg_sbb", seed, batch_size=b, inner_update=mode))
    summary = {label: summarise(runs) for label, runs in rows.items()}
    for mode in MODES:   # tuned fixed step: best grid factor by (median passes, median cpu)
        best = min(GRID, key=lambda f: (summary[f"svrg b=1 step x{f:g} [{mode}]"]["ifo_median"],
                                        summary[f"svrg b=1 step x{f:g} [{mode}]"]["cpu_median"]))
        summary[f"svrg b=1 tuned step [{mode}]"] = dict(
            summary[f"svrg b=1 step x{best:g} [{mode}]"], factor=best)
    return rows, summary


def _fmt_cell(s, key):
    if s["reached"] == 0:
        return "n.r."
    cell = f"{s[key + '_median']:.3g}" if key != "ifo" else f"{s['ifo_median']:.0f}"
    if key == "rowops":
        cell = f"{s['rowops_median'] / 1e6:.2f}"
    if s["reached"] < s["n"]:
        cell += f" ({s['reached']}/{s['n']})"
    return cell


def misses(s):
    if s["reached"] == s["n"]:
        return ""
    return " (diverged)" if s["diverged"] == s["n"] - s["reached"] else ""


def ratios(summary, loss, mode):
    """Speed-ups of the best mini-batch SVRG-SBB over the fixed-step SVRG baselines."""
    sbb = {b: summary[f"svrg_sbb b={b} [{mode}]"] for b in BATCH_SIZES}
    best_b = min(BATCH_SIZES, key=lambda b: sbb[b]["cpu_median"])
    best = sbb[best_b]
    out = {"best_b": best_b, "best_cpu": best["cpu_median"], "best_ifo": best["ifo_median"],
           "b1_over_best_cpu": sbb[1]["cpu_median"] / best["cpu_median"],
           "b200_over_best_cpu": sbb[200]["cpu_median"] / best["cpu_median"],
           "sbb_cpu_by_b": {b: sbb[b]["cpu_median"] for b in BATCH_SIZES},
           "sbb_ifo_by_b": {b: sbb[b]["ifo_median"] for b in BATCH_SIZES}}
    baselines = {"probed": f"svrg b=1 probed step [{mode}]",
                 "tuned": f"svrg b=1 tuned step [{mode}]"}
    if loss in REF_STEP:
        baselines["ref"] = f"svrg b=1 ref-code step [{mode}]"
    best_rows_b = min(BATCH_SIZES, key=lambda b: sbb[b]["rowops_median"])
    out["best_b_rowops"] = best_rows_b
    out["sbb_rowops_by_b"] = {b: sbb[b]["rowops_median"] for b in BATCH_SIZES}
    out["b1_over_best_rowops"] = sbb[1]["rowops_median"] / sbb[best_rows_b]["rowops_median"]
    for name, label in baselines.items():
        s = summary[label]
        out[f"svrg_{name}_over_best_cpu"] = s["cpu_median"] / best["cpu_median"]
        out[f"svrg_{name}_over_best_ifo"] = s["ifo_median"] / best["ifo_median"]
        out[f"svrg_{name}_over_best_rowops"] = (s["rowops_median"]
                                                / sbb[best_rows_b]["rowops_median"])
    return out


def table1_markdown(payload):
    losses = payload["losses"]
    lines = [f"# {payload['title']}", "", payload["problem"], "",
             f"Trials: {payload['trials']} (estimator seeds 0..{payload['trials'] - 1}); "
             f"median over trials; `(k/n)`: reached in only k of n trials (the median then "
             f"counts the misses as infinite); `n.r.`: never reached within "
             f"{MAX_EPOCHS} SVRG epochs / {3 * MAX_EPOCHS} GD or SGD passes; `(diverged)`: "
             f"every miss was a divergence of the fixed step.", "",
             f"Load average at start / end: {payload['loadavg_start']} / "
             f"{payload['loadavg_end']}.  Versions: {payload['versions']}.  Machine: "
             f"{payload['machine'].get('cpu_model')}, {payload['machine'].get('cpu_count')} "
             f"cores.  Run on {payload['date_utc']} with `{payload['command']}`.", ""]
    thresholds = ", ".join(f"{loss} <= {THRESHOLD[loss]}" for loss in losses)
    for key, title in (("cpu", "Process CPU seconds to the threshold"),
                       ("wall", "Wall seconds to the threshold"),
                       ("ifo", "Gradient evaluations / |Q| (passes) to the threshold"),
                       ("rowops", "Millions of row operations to the threshold (3 per "
                                  "gradient evaluation, plus n = 100 per inner step in dense "
                                  "mode: the paper's cost model)")):
        lines += [f"## {title} ({thresholds})", "",
                  "| solver | " + " | ".join(losses) + " |",
                  "|---|" + "---|" * len(losses)]
        labels = []
        for label in payload["summary"][losses[0]]:
            if " step x" in label:
                continue
            labels.append(label)
        for loss in losses[1:]:
            for label in payload["summary"][loss]:
                if label not in labels and " step x" not in label:
                    labels.append(label)
        for label in labels:
            cells = []
            for loss in losses:
                s = payload["summary"][loss].get(label)
                cell = "-" if s is None else _fmt_cell(s, key) + misses(s)
                if s is not None and "factor" in s and key == "cpu":
                    cell += f" (x{s['factor']:g})"
                cells.append(cell)
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Speed-ups of the best mini-batch SVRG-SBB (by median CPU time)", "",
              "| loss | mode | best b | b=1 / best | b=200 / best | SVRG ref-code step / best "
              "(cpu, passes) | SVRG probed step / best (cpu, passes) | SVRG tuned step / best "
              "(cpu, passes) |", "|---|---|---|---|---|---|---|---|"]
    for loss in losses:
        for mode in MODES:
            r = payload["ratios"][loss][mode]
            ref = (f"{r['svrg_ref_over_best_cpu']:.2g}x, {r['svrg_ref_over_best_ifo']:.2g}x"
                   if "svrg_ref_over_best_cpu" in r else "no ref-code value")
            lines.append(
                f"| {loss} | {mode} | {r['best_b']} | {r['b1_over_best_cpu']:.2f}x | "
                f"{r['b200_over_best_cpu']:.2f}x | {ref} | "
                f"{r['svrg_probed_over_best_cpu']:.2g}x, {r['svrg_probed_over_best_ifo']:.2g}x | "
                f"{r['svrg_tuned_over_best_cpu']:.2g}x, {r['svrg_tuned_over_best_ifo']:.2g}x |")
    lines += ["", "## The same in the paper's cost model (row operations of the dense "
              "update, counted)", "",
              "| loss | mode | best b | b=1 / best | SVRG ref-code step / best | "
              "SVRG probed step / best | SVRG tuned step / best |", "|---|---|---|---|---|---|---|"]
    for loss in losses:
        for mode in MODES:
            r = payload["ratios"][loss][mode]
            ref = (f"{r['svrg_ref_over_best_rowops']:.2g}x" if "svrg_ref_over_best_rowops" in r
                   else "no ref-code value")
            lines.append(
                f"| {loss} | {mode} | {r['best_b_rowops']} | {r['b1_over_best_rowops']:.2f}x | "
                f"{ref} | {r['svrg_probed_over_best_rowops']:.2g}x | "
                f"{r['svrg_tuned_over_best_rowops']:.2g}x |")
    lines.append("")
    return "\n".join(lines)


def table1(trials=5, losses=None):
    """Paper 000's Table I protocol: see the section comment above."""
    losses = losses or LOSSES
    warnings.simplefilter("ignore", ConvergenceWarning)
    load0 = os.getloadavg()
    time_to_threshold("ste", "svrg_sbb", 0)   # warm-up (imports, page faults)
    all_runs, summary, rat = {}, {}, {}
    for loss in losses:
        all_runs[loss], summary[loss] = run_loss(loss, trials)
        rat[loss] = {mode: ratios(summary[loss], loss, mode) for mode in MODES}
    payload = stamp({
        "name": "ordinal_embedding_table1",
        "title": "OrdinalEmbedding: paper 000 Table I protocol (time to test error 0.15)",
        "problem": (f"{T1_OBJECTS} objects ~ N(0, I/20) in R^{DIM}, {T1_TRAIN} noise-free "
                    f"training and {T1_TEST} test triplets (data seed {DATA_SEED}); embedding "
                    f"in R^{DIM}; m = |Q|, m/b inner steps per SVRG epoch; error checked at "
                    f"every epoch snapshot; CKL threshold 0.20 (plateau near 0.18)."),
        "trials": trials, "losses": losses,
        "loadavg_start": [round(v, 2) for v in load0],
        "loadavg_end": [round(v, 2) for v in os.getloadavg()],
        "ref_steps": REF_STEP, "grid": GRID, "thresholds": THRESHOLD,
        "summary": summary, "ratios": rat, "runs": all_runs,
    })
    md = table1_markdown(payload)
    write_results(payload["name"], payload, md)
    print(md)


def defaults(seeds=3):
    """Default solver vs SVRG-SBB at the default budget, same data, one run (see above)."""
    rows = []
    load0 = os.getloadavg()
    for seed in range(seeds):
        T = make_triplets(random_state=seed)    # 100 objects in R^10, 10,000 triplets
        train, test = T[:8000], T[8000:]
        for n_components in (2, 10):
            for loss in ("ste", "tste", "gnmds", "ckl", "soe"):
                for solver in ("lbfgs", "svrg_sbb"):
                    est = OrdinalEmbedding(n_components, loss=loss, solver=solver,
                                           random_state=0)
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        c0, w0 = time.process_time(), time.perf_counter()
                        est.fit(train, n_objects=100)
                        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
                    rows.append({"seed": seed, "n_components": n_components, "loss": loss,
                                 "solver": solver, "objective": float(est.objective_),
                                 "test_accuracy": float(est.score(test)), "cpu_s": cpu,
                                 "wall_s": wall, "n_iter": int(est.n_iter_),
                                 "warnings": len(caught)})
    agg = {}
    for r in rows:
        agg.setdefault((r["n_components"], r["loss"], r["solver"]), []).append(r)
    lines = ["| p | loss | solver | objective | test accuracy | CPU s | iterations | warnings |",
             "|---|---|---|---|---|---|---|---|"]
    for (p, loss, solver), rs in agg.items():
        mean = lambda k: np.mean([r[k] for r in rs])   # noqa: E731
        lines.append(f"| {p} | {loss} | {solver} | {mean('objective'):.4f} | "
                     f"{mean('test_accuracy'):.4f} | {mean('cpu_s'):.3f} | "
                     f"{mean('n_iter'):.0f} | {sum(r['warnings'] for r in rs)} |")
    payload = stamp({
        "name": "ordinal_embedding_defaults",
        "title": "OrdinalEmbedding: default solver (lbfgs) vs svrg_sbb at the default budget",
        "problem": ("make_triplets(random_state=seed): 100 objects in R^10, first 8,000 "
                    "triplets to train, last 2,000 to test; every parameter at its default "
                    "but n_components (2, the default, and 10, the data's) and solver; "
                    f"means over {seeds} data seeds"),
        "loadavg_start": [round(v, 2) for v in load0],
        "loadavg_end": [round(v, 2) for v in os.getloadavg()],
        "rows": rows,
    })
    md = "\n".join([f"# {payload['title']}", "", payload["problem"], "",
                    f"Load average at start / end: {payload['loadavg_start'][0]} / "
                    f"{payload['loadavg_end'][0]} (shared 2-core machine: CPU times are "
                    f"comparable only within this run)", ""] + lines) + "\n"
    write_results(payload["name"], payload, md)
    print(md)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "defaults":
        defaults(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
        sys.exit()
    if len(sys.argv) > 1 and sys.argv[1] == "cblearn_probe":
        cblearn_probe(*sys.argv[2:3])
        sys.exit()
    if len(sys.argv) > 1 and sys.argv[1] == "plot":
        plot()
        sys.exit()
    if len(sys.argv) > 1 and sys.argv[1] == "table1":
        table1(int(sys.argv[2]) if len(sys.argv) > 2 else (1 if QUICK else 5),
               sys.argv[3].split(",") if len(sys.argv) > 3 else None)
        sys.exit()
    scale = sys.argv[1] if len(sys.argv) > 1 else "small"
    losses = sys.argv[2].split(",") if len(sys.argv) > 2 else ["ste", "tste", "gnmds", "ckl",
                                                                "soe"]
    main(scale, losses)
