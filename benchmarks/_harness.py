"""Side-by-side benchmark harness: skstoch and peer libraries timed in one process run.

A benchmark script builds a list of :class:`Case` and calls :func:`run_benchmark`::

    from _harness import Case, run_benchmark
    cases = [Case("sklearn lbfgs", "scikit-learn", fit=lambda: LogisticRegression().fit(X, y),
                  evaluate=lambda est: {"accuracy": est.score(X, y)}), ...]
    run_benchmark("cgvr_logistic", "covtype-like, n=20000, d=54", cases, baseline="sklearn lbfgs")

Each case is fitted ``warmup`` times untimed, then ``repeat`` times timed; the table reports
the median (and min/max) wall time, the ratio to the baseline's median, and the metrics of the
last fit.  Results go to ``benchmarks/results/<name>.md`` and ``.json`` with the library
versions and the machine, so a results file always says where its numbers came from.

Peers that cannot be installed next to current scikit-learn run in their own virtual
environment through :func:`run_in_subprocess` (the case then times the peer inside that
process and returns its own timings; see its docstring).

Also here, shared by every family script and by the docs' benchmarks page:

* :data:`QUICK` (``SKSTOCH_BENCH_QUICK=1``): every family benchmark then runs a small version
  of its problems end to end and writes its files to :func:`results_dir` = a temporary folder
  (``SKSTOCH_BENCH_RESULTS`` or ``<tmp>/skstoch-bench-quick``), never to ``results/``;
* :func:`write_results`: the one writer of a results file (stamps date, command, versions and
  machine), used by :func:`run_benchmark` and by the scripts whose tables are not a list of
  timed cases;
* :func:`history_column`: reads a column of an estimator's ``history_`` (or of a callback
  record) by its current name, falling back to the names used before the results contract;
* :func:`with_cpu_time`: wraps a case's ``fit`` so the fitted object carries the CPU time of
  its last fit (``cpu_s_``), for a metric next to the harness's own timings;
* :data:`FAMILIES`: one entry per estimator family (script, result files, commands), from
  which the docs page and ``benchmarks/README.md`` are written.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Callable

RESULTS_DIR = Path(__file__).resolve().parent / "results"

QUICK = os.environ.get("SKSTOCH_BENCH_QUICK", "0") not in ("", "0")
"""Quick mode: small problems, short budgets, files written outside ``results/``."""


def results_dir():
    """Where results files go: ``results/``, or a temporary folder in quick mode."""
    if not QUICK:
        return RESULTS_DIR
    out = Path(os.environ.get("SKSTOCH_BENCH_RESULTS")
               or Path(tempfile.gettempdir()) / "skstoch-bench-quick")
    out.mkdir(parents=True, exist_ok=True)
    return out


# history_ column names before the results contract (issue 17): S3GD recorded
# 'loss_estimate' / 'snapshot_objective' and S3VM 'loss' where every estimator now has
# 'objective'.  The first name present wins.
_HISTORY_ALIASES = {"objective": ("objective", "snapshot_objective", "loss_estimate", "loss")}


def history_column(history, name, default=None):
    """Column ``name`` of a ``history_`` dict (or of one callback record, or of a fitted
    estimator's ``history_``), under its current name or an older one; ``default`` if absent.

    One-vs-rest heads (a list of dicts) return the list of the heads' columns.
    """
    history = getattr(history, "history_", history)
    if isinstance(history, list):
        return [history_column(head, name, default) for head in history]
    for key in _HISTORY_ALIASES.get(name, (name,)):
        if key in history:
            return history[key]
    return default

LIBRARIES = ["skstoch", "numpy", "scipy", "scikit-learn", "cblearn", "skglm", "celer",
             "sklearn-contrib-lightning", "metric-learn", "joblib"]


@dataclass
class Case:
    """One contender.

    Parameters
    ----------
    label : str
        Row name in the table (unique within a benchmark).
    library : str
        Distribution name of the library it comes from (for the versions table).
    fit : callable
        ``fit() -> fitted``; the timed call.
    evaluate : callable
        ``evaluate(fitted) -> dict`` of metrics (untimed).
    external_timing : bool
        When True, ``fit()`` returns ``(fitted, seconds)`` measured elsewhere (a peer run in a
        subprocess with its own interpreter) and that time is used instead of the wall time.
    repeat, warmup : int or None
        Per-case overrides of :func:`run_benchmark`'s ``repeat`` / ``warmup`` (e.g. one timed
        fit for a peer that takes minutes).  None uses the benchmark's values.
    """

    label: str
    library: str
    fit: Callable
    evaluate: Callable = lambda fitted: {}
    external_timing: bool = False
    repeat: int | None = None
    warmup: int | None = None


def library_versions(extra=()):
    """Installed versions of the libraries a benchmark may compare (None if absent)."""
    versions = {}
    for name in list(LIBRARIES) + list(extra):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            try:
                module = __import__(name.replace("-", "_"))
                versions[name] = getattr(module, "__version__", "unknown")
            except ImportError:
                versions[name] = None
    return versions


def machine_info():
    """What the numbers were measured on."""
    info = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import threadpoolctl

        info["blas"] = [
            {k: lib.get(k) for k in ("internal_api", "version", "num_threads")}
            for lib in threadpoolctl.threadpool_info()
        ]
    except ImportError:
        pass
    return info


def time_case(case, *, repeat, warmup):
    """Fit ``warmup`` + ``repeat`` times; return (wall times, CPU times, metrics of the last fit).

    CPU time is this process's (all threads): on a shared machine wall time inflates with the
    load, CPU time much less.  Cases timed externally (a peer in a subprocess) have no CPU time
    here (None).
    """
    for _ in range(warmup):
        case.fit()
    times, cpu_times = [], []
    fitted = None
    for _ in range(repeat):
        start, cpu_start = time.perf_counter(), time.process_time()
        out = case.fit()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        if case.external_timing:
            fitted, elapsed = out
            cpu = None
        else:
            fitted = out
        times.append(elapsed)
        cpu_times.append(cpu)
    return times, cpu_times, dict(case.evaluate(fitted))


def with_cpu_time(fit):
    """Wrap ``fit() -> est`` so that ``est.cpu_s_`` is the process CPU time of the call (all
    threads: on a loaded machine wall time inflates, CPU time much less)."""
    def wrapped():
        c0 = time.process_time()
        est = fit()
        est.cpu_s_ = time.process_time() - c0
        return est
    return wrapped


def _load_average():
    """The 1-minute load average (None where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return None


def _thread_limit(blas_threads):
    """Context manager limiting BLAS / OpenMP thread pools (threadpoolctl) or a no-op."""
    import contextlib

    if blas_threads is None:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        return contextlib.nullcontext()
    return threadpool_limits(limits=int(blas_threads))


def run_benchmark(name, problem, cases, *, repeat=5, warmup=1, baseline=None, notes="",
                  write=True, blas_threads=None):
    """Time every case, print a markdown table, and write results/<name>.md and .json.

    Parameters
    ----------
    name : str
        File stem of the results.
    problem : str
        One-line description of the data and the task.
    cases : list of Case
        Cases that raise ImportError in ``fit`` (a peer not installed) are reported as skipped.
    repeat, warmup : int
        Timed and untimed fits per case.
    baseline : str, optional
        Label of the case the ratios refer to (default: the first case).
    notes : str
        Free text added under the table (settings, caveats).
    write : bool
        Write the results files (False for smoke tests).
    blas_threads : int, optional
        Limit the BLAS and OpenMP thread pools of this process to this many threads while the
        cases run (threadpoolctl; recorded in the results).  Peers run in a subprocess are not
        affected: set OMP_NUM_THREADS / OPENBLAS_NUM_THREADS for them.  None: no limit.

    Returns
    -------
    dict
        The JSON payload.
    """
    rows = []
    for case in cases:
        try:
            with _thread_limit(blas_threads):
                times, cpu_times, metrics = time_case(
                    case, repeat=repeat if case.repeat is None else case.repeat,
                    warmup=warmup if case.warmup is None else case.warmup)
        except ImportError as exc:
            rows.append({"label": case.label, "library": case.library, "skipped": str(exc)})
            print(f"[{name}] {case.label}: skipped ({exc})", flush=True)
            continue
        rows.append({
            "label": case.label,
            "library": case.library,
            "n_timed": len(times),
            "median_s": statistics.median(times),
            "min_s": min(times),
            "max_s": max(times),
            "times_s": times,
            "median_cpu_s": (statistics.median(cpu_times)
                             if None not in cpu_times else None),
            "cpu_times_s": cpu_times,
            "load_average": _load_average(),
            "metrics": metrics,
        })
        print(f"[{name}] {case.label}: median {statistics.median(times):.4g} s {metrics}",
              flush=True)
    timed = [r for r in rows if "median_s" in r]
    base_label = baseline or (timed[0]["label"] if timed else None)
    base = next((r for r in timed if r["label"] == base_label), None)
    for row in timed:
        row["ratio_to_baseline"] = row["median_s"] / base["median_s"] if base else None
    payload = stamp({
        "name": name,
        "problem": problem,
        "baseline": base_label,
        "repeat": repeat,
        "warmup": warmup,
        "blas_threads": blas_threads,
        "notes": notes,
        "results": rows,
    })
    table = to_markdown(payload)
    print(table)
    if write:
        write_results(name, payload, table)
    return payload


def command_line():
    """The command that is running, as the results files record it."""
    return " ".join([Path(sys.executable).name] + sys.argv)


def stamp(payload):
    """Add (where missing) the date, the command, the library versions and the machine."""
    payload.setdefault("date_utc", datetime.now(timezone.utc).isoformat(timespec="seconds"))
    payload.setdefault("command", command_line())
    payload.setdefault("versions", library_versions())
    payload.setdefault("machine", machine_info())
    if QUICK:
        payload["quick"] = True
    return payload


def write_results(name, payload, markdown):
    """Write ``<name>.json`` (the payload, stamped by :func:`stamp`) and ``<name>.md``
    into :func:`results_dir`; return the JSON path."""
    out = results_dir()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(stamp(payload), indent=1, default=float))
    (out / f"{name}.md").write_text(markdown)
    print(f"[{name}] written to {out}", flush=True)
    return path


def to_markdown(payload):
    """The results as a markdown document (table, versions, machine)."""
    metric_names = []
    for row in payload["results"]:
        for key in row.get("metrics", {}):
            if key not in metric_names:
                metric_names.append(key)
    lines = [
        f"# {payload['name']}",
        "",
        f"Problem: {payload['problem']}",
        "",
        f"Median of {payload['repeat']} timed fits after {payload['warmup']} warm-up fit(s) "
        f"(unless a row says otherwise); ratio = median / median of `{payload['baseline']}`; "
        f"median CPU s = process CPU time (empty for peers timed in a subprocess); load = "
        f"1-minute load average when the case finished."
        + (f" BLAS/OpenMP limited to {payload['blas_threads']} thread(s)."
           if payload.get("blas_threads") else ""),
        "",
        "| case | library | median s | min s | max s | ratio | median CPU s | load | "
        + " | ".join(metric_names) + " |",
        "|---|---|---|---|---|---|---|---|" + "---|" * len(metric_names),
    ]
    for row in payload["results"]:
        if "skipped" in row:
            lines.append(f"| {row['label']} | {row['library']} | skipped: {row['skipped']} |")
            continue
        ratio = row.get("ratio_to_baseline")
        metrics = [_fmt(row["metrics"].get(k)) for k in metric_names]
        label = row["label"]
        if row.get("n_timed") is not None and row["n_timed"] != payload["repeat"]:
            label += f" ({row['n_timed']} timed fit(s))"
        lines.append(
            f"| {label} | {row['library']} | {row['median_s']:.4g} | {row['min_s']:.4g} | "
            f"{row['max_s']:.4g} | {_fmt(ratio)} | {_fmt(row.get('median_cpu_s'))} | "
            f"{_fmt(row.get('load_average'))} | " + " | ".join(metrics) + " |"
        )
    versions = ", ".join(f"{k} {v}" for k, v in payload["versions"].items() if v)
    machine = payload["machine"]
    lines += [
        "",
        f"Versions: {versions}.",
        "",
        f"Machine: {machine.get('cpu_model', machine.get('processor'))}, "
        f"{machine.get('cpu_count')} cores, Python {machine.get('python')}, {machine.get('platform')}.",
        "",
        f"Run on {payload['date_utc']} with `{payload['command']}`.",
    ]
    if payload.get("notes"):
        lines += ["", payload["notes"]]
    return "\n".join(lines) + "\n"


def markdown_table(columns, rows):
    """The lines of a markdown table: a header of ``columns``, then ``row[c]`` of each row."""
    return (["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows])


def _fmt(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def run_in_subprocess(python, code, payload, *, timeout=3600):
    """Run ``code`` with another interpreter (a peer's own virtual environment).

    ``code`` reads a JSON object from stdin (``payload``: data as lists, parameters) and prints
    one JSON object on its last stdout line, e.g. ``{"seconds": ..., "metrics": {...}}``; the
    peer times its own fit inside its process, so interpreter start-up is not counted.

    Returns
    -------
    dict
        The parsed last line.
    """
    if not Path(python).exists():
        raise ImportError(f"peer interpreter {python} not found (see benchmarks/README.md)")
    proc = subprocess.run([python, "-c", code], input=json.dumps(payload), text=True,
                          capture_output=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"peer process failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class Family:
    """One estimator family's benchmark: what the docs page shows and how to reproduce it.

    Parameters
    ----------
    title : str
        Section title on the docs page (the estimators).
    script : str
        The family's script in ``benchmarks/``.
    guide : str
        Its user-guide page (``doc/<guide>.rst``).
    peers : str
        The peers it is compared with (one line).
    headline : tuple of str
        Result stems (``results/<stem>.json`` or ``.md``) shown as tables, in this order; the
        family's other result files are listed below them.
    figures : tuple of str
        Image files in ``results/`` shown under the tables.
    quick : tuple of str
        Commands of the quick run (``SKSTOCH_BENCH_QUICK=1``; nothing written to results/).
    full : tuple of str
        Commands that regenerate every results file of the family (from the repository
        root, with the peers installed; see benchmarks/README.md).
    """

    title: str
    script: str
    guide: str
    peers: str
    headline: tuple = ()
    figures: tuple = ()
    quick: tuple = ()
    full: tuple = field(default_factory=tuple)


_PY = "PYTHONPATH=. python benchmarks/"
_QUICK = "SKSTOCH_BENCH_QUICK=1 " + _PY

# results/<key>_*: the key of a results file is the family whose benchmark wrote it
FAMILIES = {
    "cgvr": Family(
        "CGVRClassifier / CGVRRegressor", "bench_cgvr.py", "user_guide/cgvr",
        "scikit-learn LogisticRegression (lbfgs, newton-cholesky, liblinear, saga), "
        "lightning SVRG",
        headline=("cgvr_dense_1e-08", "cgvr_sparse_1e-08"),
        figures=("cgvr_dense_trace.png", "cgvr_sparse_trace.png"),
        quick=(_QUICK + "bench_cgvr.py dense sparse", _QUICK + "bench_cgvr.py trace dense sparse",
               _QUICK + "bench_cgvr.py small"),
        full=(_PY + "bench_cgvr.py dense sparse", _PY + "bench_cgvr.py trace dense sparse",
              _PY + "bench_cgvr.py float32", _PY + "bench_cgvr.py small")),
    "s3gd": Family(
        "S3GDClassifier / S3GDRegressor", "bench_s3gd.py", "user_guide/s3gd",
        "scikit-learn SAG, SAGA, SGDClassifier; lightning SAG, SVRG; l1 models: scikit-learn "
        "Lasso and liblinear, skglm, celer (own environment)",
        headline=("s3gd_dense", "s3gd_sparse", "s3gd_l1", "s3gd_multinomial"),
        figures=("s3gd_dense.png", "s3gd_sparse.png"),
        quick=(_QUICK + "bench_s3gd.py dense sparse", _QUICK + "bench_s3gd.py l1",
               _QUICK + "bench_s3gd.py elasticnet", _QUICK + "bench_s3gd.py multinomial"),
        full=("SKSTOCH_BENCH_BUDGET=10 " + _PY + "bench_s3gd.py sparse dense",
              _PY + "bench_s3gd.py l1", _PY + "bench_s3gd.py elasticnet",
              _PY + "bench_s3gd.py multinomial")),
    "dask": Family(
        "Dask fits: CGVR / S3GD on data larger than one worker", "bench_dask.py", "scaling_out",
        "dask-ml LogisticRegression and LinearRegression (dask-glm lbfgs, admm; own "
        "environment), on the same 2-worker LocalCluster setup and data",
        headline=("dask_logistic", "dask_least_squares"),
        quick=(_QUICK + "bench_dask.py",),
        full=("SKSTOCH_BENCH_PEER_PYTHON=.venv-dask/bin/python " + _PY + "bench_dask.py",)),
    "constrained_lasso": Family(
        "ConstrainedLasso", "bench_constrained_lasso.py", "user_guide/constrained_lasso",
        "scikit-learn ElasticNet, skglm ElasticNet, celer ElasticNet, lightning FISTA (l1 ball); "
        "ConstrainedLassoCV: scikit-learn LassoCV",
        headline=("constrained_lasso_time_to_target", "constrained_lasso_hard_time_to_target"),
        figures=("constrained_lasso_time_to_target.png",
                 "constrained_lasso_hard_time_to_target.png"),
        quick=(_QUICK + "bench_constrained_lasso.py",
               _QUICK + "bench_constrained_lasso.py --only hard",
               _QUICK + "bench_constrained_lasso.py --only dense --stochastic-only",
               _QUICK + "bench_constrained_lasso.py --baselines",
               _QUICK + "bench_constrained_lasso.py --cv",
               _QUICK + "bench_constrained_lasso.py --trace"),
        full=(_PY + "bench_constrained_lasso.py --only dense --repeat 1",
              _PY + "bench_constrained_lasso.py --only sparse --repeat 3",
              _PY + "bench_constrained_lasso.py --only dense --stochastic-only --repeat 3",
              _PY + "bench_constrained_lasso.py --only hard --repeat 1",
              _PY + "bench_constrained_lasso.py --cv")),
    "lmnn": Family(
        "LMNNMetric", "bench_lmnn.py", "user_guide/lmnn",
        "scikit-learn NeighborhoodComponentsAnalysis, metric-learn LMNN (own environment), "
        "Euclidean 3-NN",
        headline=("lmnn_wine_noise_20splits", "lmnn_breast_cancer_noise_20splits",
                  "lmnn_iris_noise_20splits", "lmnn_digits_noise_20splits",
                  "lmnn_digits_10splits", "lmnn_synthetic_5000x200",
                  "lmnn_synthetic_20000x50_pylmnn_20splits", "lmnn_scale"),
        quick=(_QUICK + "bench_lmnn.py", _QUICK + "bench_lmnn.py --repeated"),
        full=(_PY + "bench_lmnn.py --only=wine", _PY + "bench_lmnn.py --only=breast",
              _PY + "bench_lmnn.py --only=digits",
              _PY + "bench_lmnn.py --only=synthetic --no-metric-learn",
              _PY + "bench_lmnn.py --scale-only", _PY + "bench_lmnn.py --repeated",
              _PY + "bench_lmnn.py --repeated --splits=20 --only=noise",
              _PY + "bench_lmnn.py --repeated --splits=20 --only=noise --pylmnn",
              _PY + "bench_lmnn.py --repeated --splits=20 --only=20000 --peer-splits=1 "
              "--pylmnn")),
    "ordinal_embedding": Family(
        "OrdinalEmbedding", "bench_ordinal_embedding.py", "user_guide/ordinal_embedding",
        "cblearn STE, TSTE, GNMDS, CKL, SOE",
        headline=("ordinal_embedding_small_ste", "ordinal_embedding_medium_ste",
                  "ordinal_embedding_large_ste", "ordinal_embedding_table1"),
        figures=("ordinal_embedding_speedup.png",),
        quick=(_QUICK + "bench_ordinal_embedding.py small ste,soe",
               _QUICK + "bench_ordinal_embedding.py large ste",
               _QUICK + "bench_ordinal_embedding.py table1 1 ste",
               _QUICK + "bench_ordinal_embedding.py plot"),
        full=(_PY + "bench_ordinal_embedding.py small",
              _PY + "bench_ordinal_embedding.py medium",
              _PY + "bench_ordinal_embedding.py large ste",
              _PY + "bench_ordinal_embedding.py table1 5",
              _PY + "bench_ordinal_embedding.py plot")),
    "s3vm": Family(
        "S3VMClassifier", "bench_s3vm.py", "user_guide/s3vm",
        "scikit-learn SVC (labeled rows), SelfTrainingClassifier(SVC), LabelSpreading "
        "(rbf, knn), RBFSampler + SGDClassifier",
        headline=("s3vm_accuracy_summary", "s3vm_scaling", "s3vm_diagnostics"),
        quick=(_QUICK + "bench_s3vm.py accuracy scaling diagnostics",),
        full=(_PY + "bench_s3vm.py accuracy", _PY + "bench_s3vm.py scaling",
              _PY + "bench_s3vm.py diagnostics")),
}


def family_of(stem, families=None):
    """The key of the family (of ``families``, default :data:`FAMILIES`) whose benchmark
    writes the results file ``stem``; None if no family claims it."""
    families = FAMILIES if families is None else families
    for key in sorted(families, key=len, reverse=True):
        if stem == key or stem.startswith(key + "_"):
            return key
    return None
