"""Threads inside one CGVR fit (issue 21.3): wall time of a binary CGVRClassifier fit (defaults)
with n_jobs=1 and n_jobs=2 on a 200k x 100 dense problem and on the sparse rcv1-like problem of
bench_cgvr.py, alternated, five repetitions each (in five rounds), and a check that both give
bitwise the same coefficients.

    PYTHONPATH=. python benchmarks/bench_cgvr.py threads

The full passes (objective, gradient, snapshot) run over fixed row blocks in threads, and each
inner loop on a team of the same threads over fixed blocks of the batch rows and features.
The report also prints the serial fraction s of a one-thread fit (its CPU time outside the
parallel sections, which the kernels time when ``_cgvr.profile_parallel`` is on; the timer
calls add about 4% to the fit's CPU time, shared between both parts) and the Amdahl ceiling
1 / (s + (1 - s) / 2) for two threads: that part holds on a loaded machine, the wall speedup
only on an idle one.  For the fastest fit of each n_jobs it prints the wall time of its
sections (the full passes and the inner loops, the rest is validation and bookkeeping) and,
for n_jobs=2, the share of its wall time the caller of each inner-loop team waited at the
team's barriers (a few percent when both threads have a core; about 0.5 when the scheduler
put both on one core, after which the next inner loops run alone).  The report is also
written to ``results/cgvr_threads.{md,json}``.
"""
import os
import time

import numpy as np
from sklearn.datasets import make_classification

from skstoch import CGVRClassifier
from skstoch._fast import _cgvr
from skstoch._solvers import cgvr as _driver


def serial_fraction(X, y, repeats=3):
    """CPU time of a one-thread fit outside its parallel sections / its CPU time (best of)."""
    best = None
    for _ in range(repeats):
        _cgvr.profile_parallel(True)
        start = time.thread_time()
        CGVRClassifier(n_jobs=1, random_state=0).fit(X, y)
        total = time.thread_time() - start
        parallel = _cgvr.parallel_seconds()
        _cgvr.profile_parallel(False)
        if best is None or total < best[0]:
            best = (total, parallel)
    return (best[0] - best[1]) / best[0]


def timed_fit(X, y, n_jobs):
    """Wall time of a fit and of its sections: (total, full passes, inner loops, the wait
    shares of the inner-loop teams, coef_, the steps at which their callers went on alone
    (-1: never))."""
    sec = {"full": 0.0, "inner": 0.0, "waits": [], "bailed": []}
    full_gradient, cgvr_inner = _driver._Run.full_gradient, _driver._cgvr.cgvr_inner

    def full(run, x):
        start = time.perf_counter()
        out = full_gradient(run, x)
        sec["full"] += time.perf_counter() - start
        return out

    def inner(tables, *args):
        start = time.perf_counter()
        out = cgvr_inner(tables, *args)
        sec["inner"] += time.perf_counter() - start
        sec["waits"].append(tables.wait_share)
        sec["bailed"].append(tables.bailed_at)
        return out

    _driver._Run.full_gradient, _driver._cgvr.cgvr_inner = full, inner
    try:
        start = time.perf_counter()
        clf = CGVRClassifier(n_jobs=n_jobs, random_state=0).fit(X, y)
        total = time.perf_counter() - start
    finally:
        _driver._Run.full_gradient, _driver._cgvr.cgvr_inner = full_gradient, cgvr_inner
    return total, sec["full"], sec["inner"], sec["waits"], clf.coef_, sec["bailed"]


def report(X, y, desc, repeats=3, s=None):
    """Print the report of one problem and return its row of the results file; ``s`` is
    the serial fraction of a one-thread fit (None: measured here)."""
    fits = {1: [], 2: []}
    for _ in range(repeats):
        for n_jobs in (1, 2):
            fits[n_jobs].append(timed_fit(X, y, n_jobs))
    assert np.array_equal(fits[1][0][4], fits[2][0][4]), "n_jobs changed the fit"
    print(f"{desc}, {os.cpu_count()} cpus, load {os.getloadavg()}")
    best = {}
    for n_jobs, runs in fits.items():
        print(f"n_jobs={n_jobs}: " + " ".join(f"{r[0]:.3f}" for r in runs) + " s")
        best[n_jobs] = min(runs, key=lambda r: r[0])
        total, full, inner, waits, _, bailed = best[n_jobs]
        print(f"  fastest: full passes {full:.3f} s, inner loops {inner:.3f} s "
              f"({len(waits)}), rest {total - full - inner:.3f} s"
              + (", team wait shares " + " ".join(f"{w:.2f}" for w in waits)
                 if n_jobs > 1 else ""))
    alone = [b for r in fits[2] for b in r[5] if b >= 0]
    if alone:
        # a team whose caller waited or worked too little in its first steps runs the rest
        # of that inner loop on one thread (the machine was busy)
        print(f"  n_jobs=2: {len(alone)} of {sum(len(r[5]) for r in fits[2])} inner loops "
              f"went on alone (at steps {' '.join(map(str, alone))})")
    speedup = best[1][0] / best[2][0]
    print(f"speedup (best of {repeats}): {speedup:.2f}x")
    if s is None:
        s = serial_fraction(X, y, repeats)
    ceiling = 1 / (s + (1 - s) / 2)
    print(f"serial fraction of a one-thread fit: {100 * s:.1f}%, Amdahl ceiling for 2 "
          f"threads: {ceiling:.2f}x")
    return {"problem": desc, "load": round(os.getloadavg()[0], 2),
            "n_jobs=1 s": round(best[1][0], 3), "n_jobs=2 s": round(best[2][0], 3),
            "speedup": round(speedup, 2), "serial %": round(100 * s, 1),
            "ceiling": round(ceiling, 2),
            "n_jobs=1 full/inner/rest s": _sections(best[1]),
            "n_jobs=2 full/inner/rest s": _sections(best[2])}


def _sections(fit):
    total, full, inner = fit[:3]
    return " / ".join(f"{v:.3f}" for v in (full, inner, total - full - inner))


def write(rows, repeats):
    """results/cgvr_threads.{json,md}: one row per problem."""
    from _harness import markdown_table, write_results
    keys = list(rows[0])
    lines = ["# cgvr_threads", "",
             "Binary CGVRClassifier() fit (defaults, random_state=0), n_jobs=1 against n_jobs=2, "
             f"alternated, best of {repeats} wall times; coefficients checked bitwise equal. "
             "speedup = best n_jobs=1 / best n_jobs=2 (it holds only on an idle machine: see "
             "load, the 1-minute load average); serial % = CPU share of a one-thread fit "
             "outside its parallel sections; ceiling = the Amdahl bound 1 / (s + (1 - s) / 2); "
             "full/inner/rest = wall seconds of the fastest fit in full passes, inner loops "
             "and the rest (validation, bookkeeping).  Each problem runs several rounds: the "
             "row is the round with the median speedup, the last column lists every round's.",
             ""] + markdown_table(keys, rows)
    write_results("cgvr_threads", {"name": "cgvr_threads", "repeat": repeats, "results": rows},
                  "\n".join(lines) + "\n")


def rounds_row(X, y, desc, repeats, rounds):
    """``rounds`` reports of one problem: the row of the round with the median speedup, with
    every round's speedup (the scheduling of two threads on a virtual machine varies)."""
    s = serial_fraction(X, y, repeats)     # CPU shares: the same in every round
    runs = [report(X, y, desc, repeats, s) for _ in range(rounds)]
    row = sorted(runs, key=lambda r: r["speedup"])[len(runs) // 2]
    return {**row, "speedup of each round": " ".join(f"{r['speedup']:.2f}" for r in runs)}


def main(n_samples=200_000, n_features=100, repeats=5, rounds=5):
    from bench_cgvr import sparse_problem
    X, y = make_classification(n_samples, n_features, n_informative=n_features // 2,
                               random_state=0)
    rows = [rounds_row(X, y, f"{n_samples} x {n_features} dense", repeats, rounds),
            rounds_row(*sparse_problem(), repeats, rounds)]
    write(rows, repeats)


if __name__ == "__main__":
    main()
