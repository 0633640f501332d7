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
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Callable

RESULTS_DIR = Path(__file__).resolve().parent / "results"

LIBRARIES = ["skstoch", "numpy", "scipy", "scikit-learn", "cblearn", "skglm",
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
    payload = {
        "name": name,
        "problem": problem,
        "baseline": base_label,
        "repeat": repeat,
        "warmup": warmup,
        "blas_threads": blas_threads,
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "versions": library_versions(),
        "machine": machine_info(),
        "notes": notes,
        "results": rows,
    }
    table = to_markdown(payload)
    print(table)
    if write:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        (RESULTS_DIR / f"{name}.json").write_text(json.dumps(payload, indent=2, default=float))
        (RESULTS_DIR / f"{name}.md").write_text(table)
    return payload


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
