"""Data larger than one worker: skstoch's Dask fits against dask-ml on a LocalCluster.

A ``distributed.LocalCluster`` of 2 worker processes (127.0.0.1, one thread each) whose
per-worker memory limit is below the data's size, so X lives in pieces on both workers; the
data are generated on the workers, chunk by chunk from seeds (``_modes/_dask_problem.make_data``).
The features are Gaussian with unit variances and a spread-out spectrum, as standardized
real features are: ``X = Z A``, ``Z`` i.i.d. standard normal, ``A`` a fixed mixing with
``A^T A = C``, the correlation matrix whose eigenvectors are a Haar-random orthogonal matrix
and whose eigenvalues decay geometrically over three decades before the rescaling to unit
diagonal (condition number of ``C``: 1020 at d = 100, 983 at d = 20).  The same ``X`` for
both problems; labels from a noisy linear model: logistic ``y_i ~ Bernoulli(sigmoid(x_i .
w_true))``, least squares ``y_i = x_i . w_true + 0.5 e_i``, ``w_true`` i.i.d. ``N(0, 4 / d)``.  For each problem and
contender: wall time and distributed passes over the data to relative suboptimality
``(f - f*) / f* <= 1e-6`` (``--target``), f the skstoch objective without intercept and
``alpha = 1 / n`` (scikit-learn's ``C = 1``), ``f*`` from a damped Newton method
(logistic) or the normal equations (least squares) run on the same cluster, neither
contender.  Every objective in the table is recomputed from the coefficients reached
(``_modes/_dask_problem.objectives``), so both sides are judged on the same function.

* skstoch: CGVRClassifier / CGVRRegressor (and S3GDClassifier / S3GDRegressor) fitted on the
  dask arrays; passes and times are the ``passes`` and ``time`` columns of ``history_`` at the
  first outer iteration that reaches the target (a callback then stops the fit).
* dask-ml: LogisticRegression(solver='lbfgs' and 'admm') and LinearRegression (same two),
  ``C`` converted (``_modes/_dask_problem.dask_ml_scale``), ``fit_intercept=False``,
  ``normalize=False`` (dask-glm otherwise rescales the columns, which changes the penalised
  problem); run in the peer's interpreter (``SKSTOCH_BENCH_PEER_PYTHON``, default the running
  one) on its own identical cluster and data (checked by checksums); how its passes are
  counted: ``_modes/_dask_peer.py``.

Usage (from the repository root)::

    PYTHONPATH=. SKSTOCH_BENCH_PEER_PYTHON=.venv-dask/bin/python python benchmarks/bench_dask.py

``--memory-limit`` (bytes per worker) must stay below the data's ``8 n (d + 1)`` bytes and
above half of them plus about 0.5 GB (the worker process itself and the fits' per-chunk
arrays): at ``--n 1000000`` and 0.7 GB a worker ran out of memory in S3GD's fit.

Writes ``results/dask_logistic.{md,json}`` and ``results/dask_least_squares.{md,json}``;
``SKSTOCH_BENCH_QUICK=1`` runs 20,000 x 20 (memory limit then above the data's size) and
writes to a temporary folder.
"""
import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = HERE / "_modes"     # _dask_problem.py, _dask_peer.py
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(MODES))

import numpy as np  # noqa: E402

import _dask_problem as P  # noqa: E402
from _harness import (QUICK, Case, history_column, library_versions,  # noqa: E402
                      run_benchmark, run_in_subprocess)

PEER_PYTHON = os.environ.get("SKSTOCH_BENCH_PEER_PYTHON", sys.executable)

# Workers keep their chunks in memory (no spilling: the limit is what a worker may hold);
# a worker is restarted only near the limit.
DASK_CONFIG = {"distributed.worker.memory.target": False,
               "distributed.worker.memory.spill": False,
               "distributed.worker.memory.pause": False,
               "distributed.worker.memory.terminate": 0.98,
               "distributed.scheduler.work-stealing": True}


def settings(args):
    if QUICK:
        return dict(n=20_000, d=20, chunk_rows=2_500, memory_limit=400e6, max_passes=300,
                    max_rounds=30, max_seconds=20.0)
    return dict(n=args.n, d=args.d, chunk_rows=args.chunk_rows,
                memory_limit=args.memory_limit, max_passes=args.max_passes,
                max_rounds=args.max_rounds, max_seconds=args.max_seconds)


def cluster_kwargs(cfg):
    return dict(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address=":0", memory_limit=int(cfg["memory_limit"]))


def has_dask_fit():
    return importlib.util.find_spec("skstoch._solvers._dask_passes") is not None


def our_estimators(kind, alpha, stop):
    from skstoch import CGVRClassifier, CGVRRegressor, S3GDClassifier, S3GDRegressor

    common = dict(alpha=alpha, fit_intercept=False, random_state=0, callback=stop)
    if kind == "logistic":
        return {"skstoch CGVRClassifier": lambda: CGVRClassifier(tol=1e-12, max_iter=200,
                                                                 **common),
                "skstoch S3GDClassifier": lambda: S3GDClassifier(tol=1e-14, max_iter=500,
                                                                 n_iter_no_change=3,
                                                                 **common)}
    return {"skstoch CGVRRegressor": lambda: CGVRRegressor(tol=1e-12, max_iter=200, **common),
            "skstoch S3GDRegressor": lambda: S3GDRegressor(tol=1e-14, max_iter=500,
                                                           n_iter_no_change=3, **common)}


def to_target(trace, f_star, target_rel):
    """(passes, seconds) at the first trace entry within ``target_rel`` of ``f_star``."""
    i = P.first_reaching(trace["objective"], f_star * (1 + target_rel))
    if i is None:
        return None, None
    return trace["passes"][i], trace["time"][i]


GRAPH_LOG = "skstoch-bench-graph-log"


def _graph_log():
    """A scheduler plugin recording the wall-clock time of every graph a client submits (one
    per ``compute``, i.e. one round trip): the fit's rounds counted from outside skstoch."""
    from distributed.diagnostics.plugin import SchedulerPlugin

    class GraphLog(SchedulerPlugin):
        name = GRAPH_LOG

        def __init__(self):
            self.times = []

        def update_graph(self, scheduler, *args, **kwargs):
            self.times.append(time.time())

    return GraphLog()


def _graph_times(client):
    return client.run_on_scheduler(
        lambda dask_scheduler: list(dask_scheduler.plugins[GRAPH_LOG].times))


def run_ours(kind, X, y, alpha, f_star, target_rel, client):
    """Fit every skstoch contender on the dask arrays; {label: row}."""
    rows = {}
    if not has_dask_fit():
        reason = ("this skstoch has no Dask fit (issue 22 points 1-2: "
                  "skstoch._solvers._dask_passes)")
        return {label: {"skipped": reason} for label in our_estimators(kind, alpha, None)}
    target = f_star * (1 + target_rel)
    stamps = []                 # wall-clock time of each history record

    def stop(record):
        stamps.append(time.time())
        objective = history_column(record, "objective")
        return objective is not None and np.isfinite(objective) and objective <= target

    for label, make in our_estimators(kind, alpha, stop).items():
        # untimed warm-up on one chunk: imports and kernels loaded on the workers
        rows_1 = X.chunks[0][0]
        try:
            make().set_params(max_iter=1, callback=None).fit(X[:rows_1], y[:rows_1])
        except Exception:       # noqa: BLE001 - the timed fit below reports what fails
            pass
        est = make()
        stamps.clear()
        wall_start = time.time()
        start = time.perf_counter()
        try:
            est.fit(X, y)
        except Exception as exc:  # noqa: BLE001 - reported in the table (e.g. KilledWorker)
            rows[label] = {"skipped": f"failed: {type(exc).__name__}: {exc}"[:300]}
            print(f"[dask] {label}: {rows[label]['skipped']}", flush=True)
            continue
        seconds = time.perf_counter() - start
        hist = est.history_
        trace = {"time": list(map(float, history_column(hist, "time"))),
                 "passes": list(map(float, history_column(hist, "passes"))),
                 "objective": list(map(float, history_column(hist, "objective")))}
        graphs = [t for t in _graph_times(client) if t >= wall_start]
        if len(stamps) == len(trace["passes"]):
            trace["rounds"] = [float(sum(t <= stamp for t in graphs)) for stamp in stamps]
        # the rows gathered for the inner loops (most come back with the passes)
        for column in ("gathers", "gathered_rows"):
            values = history_column(hist, column)
            if values is not None:
                trace[column] = list(map(float, values))
        coef = np.ravel(est.coef_)
        rows[label] = dict(trace=trace, seconds=seconds,
                           final_objective=float(P.objectives(kind, X, y, coef, alpha)[0]),
                           n=int(X.shape[0]))
        print(f"[dask] {label}: {seconds:.3g} s, passes {trace['passes'][-1]:.3g}, "
              f"f = {rows[label]['final_objective']!r}", flush=True)
    return rows


def run_peer(problems, cfg):
    payload = {"benchmarks_dir": str(MODES), "cluster": cluster_kwargs(cfg),
               "dask_config": DASK_CONFIG, "problems": problems}
    return run_in_subprocess(PEER_PYTHON, (MODES / "_dask_peer.py").read_text(), payload,
                             timeout=4 * 3600)


def peer_rows(peer_result, name):
    rows = {}
    model = "LogisticRegression" if name == "logistic" else "LinearRegression"
    for solver, trace in peer_result["problems"][name]["solvers"].items():
        row = dict(trace=trace, seconds=trace["seconds"],
                   final_objective=trace["final_objective"])
        rows[f"dask-ml {model}({solver})"] = row
    return rows


def metrics(row, f_star, target_rel):
    """The table's columns for one contender (None: target not reached)."""
    trace = row["trace"]
    i = P.first_reaching(trace["objective"], f_star * (1 + target_rel))
    at = (lambda column: trace[column][i] if i is not None else None)
    out = {"passes to target": at("passes"), "s to target": at("time")}
    # skstoch: graphs its fit submitted to the scheduler (a pass, with the next inner loop's
    # sample when it rides on it, a sample fetched alone, any set-up computation); dask-ml:
    # one per lbfgs evaluation or admm iteration
    out["rounds to target"] = at("rounds") if "rounds" in trace else at("passes")
    if "gathered_rows" in trace:        # skstoch: rows sent to the client for inner loops
        out["gathered rows / n"] = (at("gathered_rows") / row["n"]) if i is not None else None
    if "data_passes" in trace:          # dask-ml admm reads its chunks many times per round
        out["local data passes to target"] = at("data_passes")
    out.update({"passes run": trace["passes"][-1] if trace["passes"] else None,
                "objective reached": row["final_objective"],
                "rel. subopt. reached": (row["final_objective"] - f_star) / f_star})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", default=["logistic", "least_squares"])
    parser.add_argument("--n", type=int, default=2_000_000)
    parser.add_argument("--d", type=int, default=100)
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    parser.add_argument("--memory-limit", type=float, default=1.5e9,
                        help="bytes per worker (below the data's 8 n d bytes)")
    parser.add_argument("--target", type=float, default=1e-6)
    parser.add_argument("--max-passes", type=int, default=500, help="dask-ml lbfgs budget")
    parser.add_argument("--max-rounds", type=int, default=200, help="dask-ml admm budget")
    parser.add_argument("--max-seconds", type=float, default=300.0,
                        help="dask-ml admm wall-time budget")
    parser.add_argument("--no-peer", action="store_true")
    args = parser.parse_args(argv)
    cfg = settings(args)
    try:
        import dask
        from distributed import Client, LocalCluster, wait
    except ImportError as exc:
        print(f"[dask] skipped: {exc} (pip install 'dask[distributed]')", flush=True)
        return

    load_start = os.getloadavg()
    alpha = 1.0 / cfg["n"]
    data_bytes = 8 * cfg["n"] * (cfg["d"] + 1)
    refs, ours, checks = {}, {}, {}
    with dask.config.set(DASK_CONFIG), LocalCluster(**cluster_kwargs(cfg)) as cluster, \
            Client(cluster) as client:
        client.register_plugin(_graph_log())
        for kind in args.problems:
            X, y = P.make_data(kind, cfg["n"], cfg["d"], cfg["chunk_rows"], seed=0)
            X, y = client.persist([X, y])
            wait([X, y])
            checks[kind] = P.checksum(X, y)
            start = time.perf_counter()
            _, f_star = P.reference(kind, X, y, alpha)
            refs[kind] = dict(f_star=f_star, seconds=time.perf_counter() - start)
            print(f"[dask] {kind}: f* = {f_star!r} ({refs[kind]['seconds']:.3g} s)", flush=True)
            ours[kind] = run_ours(kind, X, y, alpha, f_star, args.target, client)
            del X, y

    problems = [dict(name=kind, kind=kind, n=cfg["n"], d=cfg["d"],
                     chunk_rows=cfg["chunk_rows"], seed=0, alpha=alpha,
                     target=refs[kind]["f_star"] * (1 + args.target),
                     solvers=["lbfgs", "admm"], max_passes=cfg["max_passes"],
                     max_rounds=cfg["max_rounds"], max_seconds=cfg["max_seconds"])
                for kind in args.problems]
    peer, peer_error = None, None
    if not args.no_peer:
        try:
            peer = run_peer(problems, cfg)
        except (ImportError, RuntimeError) as exc:
            peer_error = str(exc)[-600:]
            print(f"[dask] peer skipped: {peer_error}", flush=True)

    for kind in args.problems:
        f_star = refs[kind]["f_star"]
        rows = dict(ours[kind])
        if peer is not None:
            if not np.allclose(peer["problems"][kind]["checksum"], checks[kind], rtol=1e-12):
                raise RuntimeError(f"the peer's data differ from ours: "
                                   f"{peer['problems'][kind]['checksum']} != {checks[kind]}")
            rows.update(peer_rows(peer, kind))
        cases = []
        for label, row in rows.items():
            library = "skstoch" if label.startswith("skstoch") else "dask-ml"
            if "skipped" in row:
                cases.append(Case(label, library, fit=_raiser(row["skipped"])))
                continue
            cases.append(Case(label, library, fit=_stored(row), external_timing=True,
                              evaluate=lambda r: metrics(r, f_star, args.target)))
        if peer is None:
            model = "LogisticRegression" if kind == "logistic" else "LinearRegression"
            cases.append(Case(f"dask-ml {model}", "dask-ml",
                              fit=_raiser(peer_error or "not run (--no-peer)")))
        gb = data_bytes / 1e9
        cond = P.feature_condition(cfg["d"], seed=0)
        problem = (f"{'logistic regression' if kind == 'logistic' else 'least squares'}, "
                   f"n={cfg['n']:,}, d={cfg['d']} float64 ({gb:.3g} GB with y; Gaussian "
                   f"features, unit variances, correlation matrix with geometrically "
                   f"decaying spectrum, condition number {cond:.4g}), "
                   f"chunks of {cfg['chunk_rows']:,} rows, LocalCluster 2 workers x 1 thread, "
                   f"memory limit {cfg['memory_limit'] / 1e9:.3g} GB per worker; "
                   f"alpha = 1/n, no intercept; target (f - f*)/f* <= {args.target:g}")
        notes = (f"Time = the whole fit (dask-ml: to the target, where the trace stops it; "
                 f"skstoch: to the target, where a callback stops it); 'passes to target' = "
                 f"distributed passes over X (skstoch: history_['passes'], "
                 f"none for the inner loops, which read gathered rows; dask-ml lbfgs: "
                 f"loss-and-gradient evaluations, admm: iterations, each also reading every "
                 f"chunk 'local data passes' times on its worker); 'rounds' = round trips "
                 f"(skstoch: counted, every graph its fit submitted to the scheduler: a pass with "
                 f"the next inner loop's sample riding on it, a sample fetched alone, set-up "
                 f"computations; "
                 f"'gathered rows / n': rows sent to the client). "
                 f"f* = {f_star!r} ({'damped Newton' if kind == 'logistic' else 'normal equations'}"
                 f" on the cluster, {refs[kind]['seconds']:.3g} s). Data (_dask_problem.make_data): "
                 f"X = Z A, Z i.i.d. N(0, 1), A^T A = C = D^-1/2 Q diag(lam) Q^T D^-1/2, Q "
                 f"Haar-random orthogonal, lam geometric from 1 to 1e-3, D = diag(Q diag(lam) "
                 f"Q^T); cond(C) = {cond:.4g}. Data checksum {checks[kind]}."
                 f" Peer interpreter: {peer['python'] if peer else 'none'}; peer versions: "
                 f"{peer['versions'] if peer else {}}. dask config: {DASK_CONFIG}. The machine "
                 f"was shared with other jobs (load average in the table; 1, 5, 15-minute load "
                 f"averages at the start of the run {_loads(load_start)}, at the end "
                 f"{_loads(os.getloadavg())}).")
        payload = run_benchmark(f"dask_{kind}", problem, cases, repeat=1, warmup=0,
                                baseline=next(iter(rows)), notes=notes, write=False)
        payload["versions"].update(library_versions(("dask", "distributed")))
        if peer:
            payload["peer_versions"] = peer["versions"]
        payload["f_star"] = f_star
        payload["traces"] = {label: row.get("trace") for label, row in rows.items()}
        payload["settings"] = dict(cfg, target=args.target, alpha=alpha,
                                   data_bytes=data_bytes)
        from _harness import to_markdown, write_results
        write_results(f"dask_{kind}", payload, to_markdown(payload))


def _loads(loads):
    return "/".join(f"{x:.1f}" for x in loads)


def _stored(row):
    return lambda: (row, row["seconds"])


def _raiser(reason):
    def fit():
        raise ImportError(reason)
    return fit


if __name__ == "__main__":
    main()
