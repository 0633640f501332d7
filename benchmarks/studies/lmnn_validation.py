"""Training-side validation of LMNNMetric's defaults (no test row is ever used).

This is the protocol behind the "How the defaults were chosen" tables of
``doc/user_guide/lmnn.rst``.  For each problem of ``bench_lmnn.py --repeated`` (wine, breast
cancer, iris and digits + 20 noise features, digits, the synthetic 20,000 x 50 problem) and
the synthetic 5,000 x 200 problem with 20 informative features we take the *training parts*
of the benchmark's repeated stratified 75/25 splits (split i of data draw i, as
``bench_lmnn.repeated_draws`` with 20 splits: ``StratifiedShuffleSplit(random_state=0)``),
and split each of the first ``n_outer`` training parts again ``n_inner`` times
(``StratifiedShuffleSplit(n_inner, test_size=0.2, random_state=100 + outer)``).  Every
configuration is fitted on the fitting part (standardized on itself) and scored by 3-NN
accuracy on the held-out 20%.  The benchmark's test rows are never touched, so choosing a
default here does not tune it on the numbers the benchmark reports.

Per configuration the table gives the mean held-out accuracy with its standard error, the
mean *paired* difference to the defaults on the same fits with its standard error (the
fits share data, so the paired difference is far less noisy than the two means), the median
CPU seconds of one fit (process time; one BLAS thread), and the budget ``max_iter_`` used.
All configurations are fitted split by split, interleaved, so a change in the machine's
load hits them alike.  Peers on the same fits: Euclidean 3-NN, scikit-learn's
NeighborhoodComponentsAnalysis (``--no-nca`` skips it) and, with ``--metric-learn``,
metric-learn's LMNN in its own interpreter (see ``bench_lmnn.py``).

Configurations (changes to the defaults): ``n_impostors`` 3 / 5 / 20 (default 'auto' = 10
for the 'knn' recipe), ``batch_size`` 8 / 32 (``max_iter='auto'`` counts triplet draws, so
these keep the number of draws), ``c`` 0.25 / 0.75, ``n_neighbors=5``, ``mu2=0``,
``triplet_strategy='random'`` (the paper's recipe), and the budget in draws x 0.5 / x 2
(``max_iter`` = 0.5 / 2 times the default's ``max_iter_`` on the same fit); ``--tag=r7`` added
``c`` 0.6 / 0.7 / 0.8, ``triplet_strategy='knn'`` alone and with ``c`` 0.7 / 0.8, and floors on
the budget (``draws>=8000`` / ``16000`` / ``32000``: ``max_iter`` at least 500 / 1000 / 2000
steps of 16); ``--tag=r8`` (``--seed-offset=500``) compared the defaults' budget, which
grows with the number of features (``max(1, p / 32)`` times 12 draws per target pair), with
the former 12 draws per pair (``draws 12/pair (no width)``), and on iris + noise
(``--outer=20 --seed-offset=900``) the budget x 2 / 4 / 8; ``--tag=r9``
(``--seed-offset=1100``) chose ``c='auto'``: the former ``c=0.5`` and the margin of its rule
``c / (1 - c) = margin / rho`` (1.0 / 2.0 / 3.0; the default 1.4), on the two synthetic
problems (the others have rho >= 8, hence c = 0.5 for every margin up to 8).  In that run
the rule applied to both recipes (``default`` is the rule with margin 1.4): it gained 7.4
points (s.e. 2.2) with the 'random' recipe on the 20,000 x 50 problem and lost 8.0 (s.e.
1.2) with the 'knn' recipe on the 5,000 x 200 one, so 'auto' keeps c = 0.5 for 'knn'; for
'random' the final 'auto' fits 0.5 and the rule's value and keeps the better leave-one-out
3-NN accuracy on training rows (``--configs=default,c=0.5 --tag=r9final``; fresh draws of
the large generators: ``lmnn_auto_c_check.py``).  NCA is not run on the
20,000-row problem (O(n^2) memory).

Run (from the repository root)::

    PYTHONPATH=. python benchmarks/studies/lmnn_validation.py          # all problems
    PYTHONPATH=. python benchmarks/studies/lmnn_validation.py --only=digits --outer=10 --inner=2
    PYTHONPATH=. python benchmarks/studies/lmnn_validation.py --only=wine --configs=default,batch_size=8

Default sizes: 10 outer x 2 inner = 20 fits per configuration for wine, breast cancer and
digits and iris (+ noise), 2 x 1 = 2 fits for the synthetic 5,000 x 200 problem, 4 x 1 for
the 20,000 x 50 one (``--only=`` wine, breast, iris, digits_noise, digits, synthetic,
synthetic20k; a full name selects only that problem, a part of one every problem containing it).
``--outer`` / ``--inner`` override them, ``--configs`` selects configurations by label,
``--seed-offset=N`` draws other inner splits (``random_state = N + part``, default 100: the
splits on which the defaults were chosen; another offset gives fresh validation splits, not
used for any choice yet) and ``--tag=NAME`` appends ``_NAME`` to the result file names.
Results: ``benchmarks/studies/results/lmnn_validation_<problem>[_<tag>].md`` and ``.json``
(``--no-write``: print only).

Established: LMNNMetric's current defaults; no single change to them raised the
held-out accuracy by more than two standard errors on any problem (``doc/user_guide/lmnn.rst``,
"How the defaults were chosen").  Re-run it (with a fresh
``--seed-offset``) before changing a default of LMNNMetric.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.model_selection import StratifiedShuffleSplit  # noqa: E402
from sklearn.neighbors import NeighborhoodComponentsAnalysis  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _harness import library_versions, machine_info  # noqa: E402
from bench_lmnn import (ML_PYTHON, _problems, _repeated_problems, knn_accuracy,  # noqa: E402
                        repeated_splits)

from skstoch import LMNNMetric  # noqa: E402
from skstoch._solvers import _lmnn_triplets as _triplets  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parent / "results"

SHORT = {"lmnn_wine_noise": "wine", "lmnn_breast_cancer_noise": "breast",
         "lmnn_iris_noise": "iris", "lmnn_digits_noise": "digits_noise",
         "lmnn_digits": "digits", "lmnn_synthetic_5000x200": "synthetic",
         "lmnn_synthetic_20000x50": "synthetic20k"}
SIZES = {"wine": (10, 2), "breast": (10, 2), "iris": (10, 2), "digits_noise": (10, 2),
         "digits": (10, 2), "synthetic": (2, 1), "synthetic20k": (4, 1)}
# The benchmark's repeated comparison runs 20 splits; the study uses the training parts of
# the first n_outer of them.
N_BENCH_SPLITS = 20

# A configuration key that sets the margin of c='auto' (a module constant) for its fits.
_MARGIN = "_auto_c_margin"

# label -> parameters, or a function of the default model fitted on the same split
CONFIGS = {
    "default": {},
    "n_impostors=3": {"n_impostors": 3},
    "n_impostors=5": {"n_impostors": 5},
    "n_impostors=20": {"n_impostors": 20},
    "batch_size=8": {"batch_size": 8},
    "batch_size=32": {"batch_size": 32},
    "c=0.25": {"c": 0.25},
    "c=0.75": {"c": 0.75},
    "n_neighbors=5": {"n_neighbors": 5},
    "mu2=0": {"mu2": 0.0},
    "triplet_strategy='random'": {"triplet_strategy": "random"},
    "c=0.6": {"c": 0.6},
    "c=0.7": {"c": 0.7},
    "c=0.8": {"c": 0.8},
    "triplet_strategy='knn'": {"triplet_strategy": "knn"},
    "c=0.7+knn": {"c": 0.7, "triplet_strategy": "knn"},
    "c=0.8+knn": {"c": 0.8, "triplet_strategy": "knn"},
    # a floor on the budget in draws (max_iter = draws / batch_size, batch_size 16)
    "draws>=8000": lambda default: {"max_iter": max(default.max_iter_, 500)},
    "draws>=16000": lambda default: {"max_iter": max(default.max_iter_, 1000)},
    "draws>=32000": lambda default: {"max_iter": max(default.max_iter_, 2000)},
    # round 8: the budget without the width factor max(1, p / 32) of max_iter='auto'
    # (12 draws per target pair whatever the number of features)
    "draws 12/pair (no width)": lambda default: {"max_iter": _draws_without_width(default)},
    "budget x0.5": lambda default: {"max_iter": max(8, round(0.5 * default.max_iter_))},
    "budget x2": lambda default: {"max_iter": 2 * default.max_iter_},
    "budget x4": lambda default: {"max_iter": 4 * default.max_iter_},
    "budget x8": lambda default: {"max_iter": 8 * default.max_iter_},
    # round 9: c='auto' (the default since round 9) against the former c=0.5, and the
    # margin of its rule c / (1 - c) = margin / rho (module constant _AUTO_C_MARGIN, 1.4)
    "c=0.5": {"c": 0.5},
    "c auto margin 1.0": {_MARGIN: 1.0},
    "c auto margin 2.0": {_MARGIN: 2.0},
    "c auto margin 3.0": {_MARGIN: 3.0},
    "c auto + knn": {"triplet_strategy": "knn"},
}

def _draws_without_width(default):
    """max_iter of the 'knn' budget rule before round 8 (no width factor) for the fit
    ``default`` (exhaustive 'knn': every point is an anchor of k x q triplets)."""
    k, q = default.n_neighbors_, default.n_impostors_
    n_anchors = len(default.triplets_) // (k * q)
    draws = int(np.clip(12 * n_anchors * k, 4000, 128000))
    return -(-draws // default.batch_size)


_ML_SCRIPT = r"""
import sys, time, json, numpy as np
from metric_learn import LMNN
from sklearn.neighbors import KNeighborsClassifier
d = np.load(sys.argv[1])
out = []
for i in range(int(d["n"])):
    Xa, Xb, ya, yb = d[f"Xa{i}"], d[f"Xb{i}"], d[f"ya{i}"], d[f"yb{i}"]
    cpu = time.process_time()
    m = LMNN(n_neighbors=3, random_state=0).fit(Xa, ya)
    cpu = time.process_time() - cpu
    acc = KNeighborsClassifier(3).fit(m.transform(Xa), ya).score(m.transform(Xb), yb)
    out.append({"accuracy": acc, "cpu_s": cpu})
print(json.dumps(out))
"""


def inner_splits(draw, n_outer, n_inner, seed_offset=100):
    """Fitting / held-out parts inside the benchmark's training parts (split i of
    ``bench_lmnn.repeated_draws(draw, N_BENCH_SPLITS)``), standardized on the fitting part:
    list of (Xa, Xb, ya, yb)."""
    out = []
    for outer, (X, y, mask) in enumerate(_draws(draw, n_outer)):
        Xt, yt = X[mask], y[mask]
        sss = StratifiedShuffleSplit(n_splits=n_inner, test_size=0.2,
                                     random_state=seed_offset + outer)
        for fit_rows, held_out in sss.split(Xt, yt):
            scaler = StandardScaler().fit(Xt[fit_rows])
            out.append((scaler.transform(Xt[fit_rows]), scaler.transform(Xt[held_out]),
                        yt[fit_rows], yt[held_out]))
    return out


def _draws(draw, n_outer):
    """The first ``n_outer`` splits of the benchmark's repeated comparison."""
    out = []
    for i in range(n_outer):
        X, y = draw(i)
        out.append((X, y, repeated_splits(X, y, N_BENCH_SPLITS)[i]))
    return out


def _metric_learn(splits, timeout=3600):
    if not os.path.exists(ML_PYTHON):
        raise ImportError(f"metric-learn interpreter {ML_PYTHON} not found")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "splits.npz")
        arrays = {"n": len(splits)}
        for i, (Xa, Xb, ya, yb) in enumerate(splits):
            arrays.update({f"Xa{i}": Xa, f"Xb{i}": Xb, f"ya{i}": ya, f"yb{i}": yb})
        np.savez(path, **arrays)
        script = os.path.join(tmp, "run.py")
        Path(script).write_text(_ML_SCRIPT)
        out = subprocess.run([ML_PYTHON, script, path], capture_output=True, text=True,
                             timeout=timeout, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])


def _summary(acc, cpu, base_acc=None, extra=None):
    acc = np.asarray(acc, dtype=float)
    row = {"n_fits": len(acc), "acc_mean": float(acc.mean()),
           "acc_stderr": float(acc.std(ddof=1) / np.sqrt(len(acc))) if len(acc) > 1 else None,
           "cpu_s_median": float(np.median(cpu)) if cpu is not None else None}
    if base_acc is not None:
        diff = acc - np.asarray(base_acc, dtype=float)
        row["diff_to_default"] = float(diff.mean())
        row["diff_stderr"] = (float(diff.std(ddof=1) / np.sqrt(len(diff)))
                              if len(diff) > 1 else None)
    row.update(extra or {})
    return row


def validate(problem, draw, n_outer, n_inner, configs, nca=True, metric_learn=False,
             seed_offset=100):
    splits = inner_splits(draw, n_outer, n_inner, seed_offset)
    runs = {label: {"acc": [], "cpu": [], "max_iter": [], "n_iter": [], "c": []}
            for label in configs}
    peers = {"Euclidean 3-NN": {"acc": [], "cpu": None}}
    if nca:
        peers["sklearn NCA"] = {"acc": [], "cpu": []}
    for number, (Xa, Xb, ya, yb) in enumerate(splits):
        split = (Xa, Xb, ya, yb)
        default = None
        for label, spec in configs.items():
            params = dict(spec(default) if callable(spec) else spec)
            margin = params.pop(_MARGIN, _triplets._AUTO_C_MARGIN)
            saved, _triplets._AUTO_C_MARGIN = _triplets._AUTO_C_MARGIN, margin
            try:
                cpu = time.process_time()
                model = LMNNMetric(random_state=0, **params).fit(Xa, ya)
                cpu = time.process_time() - cpu
            finally:
                _triplets._AUTO_C_MARGIN = saved
            if label == "default":
                default = model
            run = runs[label]
            run["acc"].append(knn_accuracy(model.transform, split))
            run["cpu"].append(cpu)
            run["max_iter"].append(model.max_iter_)
            run["n_iter"].append(model.n_iter_)
            run["c"].append(model.c_)
        peers["Euclidean 3-NN"]["acc"].append(knn_accuracy(lambda Z: Z, split))
        if nca:
            cpu = time.process_time()
            model = NeighborhoodComponentsAnalysis(random_state=0).fit(Xa, ya)
            peers["sklearn NCA"]["cpu"].append(time.process_time() - cpu)
            peers["sklearn NCA"]["acc"].append(knn_accuracy(model.transform, split))
        print(f"  {problem}: fit {number + 1}/{len(splits)}", file=sys.stderr, flush=True)
    if metric_learn:
        try:
            ml = _metric_learn(splits)
            peers["metric-learn LMNN"] = {"acc": [r["accuracy"] for r in ml],
                                          "cpu": [r["cpu_s"] for r in ml]}
        except (ImportError, subprocess.SubprocessError) as exc:
            print(f"  metric-learn skipped: {exc}", file=sys.stderr)
    base = runs["default"]["acc"] if "default" in runs else None
    table = {}
    for label, run in runs.items():
        table[label] = _summary(run["acc"], run["cpu"], base,
                                {"max_iter_median": int(np.median(run["max_iter"])),
                                 "n_iter_median": int(np.median(run["n_iter"])),
                                 "c_median": float(np.median(run["c"]))})
    for label, run in peers.items():
        table[label] = _summary(run["acc"], run["cpu"], base)
    return {"problem": problem, "n_outer": n_outer, "n_inner": n_inner,
            "seed_offset": seed_offset,
            "n_fits": len(splits), "fit_rows": int(len(splits[0][2])),
            "held_out_rows": int(len(splits[0][3])), "n_features": int(splits[0][0].shape[1]),
            "rows": table}


def _pct(value, signed=False):
    if value is None:
        return ""
    return f"{100 * value:+.2f}" if signed else f"{100 * value:.2f}"


def to_markdown(result, description, command):
    lines = [f"# LMNNMetric training-side validation: {result['problem']}", "",
             f"Problem: {description}.", "",
             f"{result['n_fits']} fits per configuration ({result['n_outer']} training parts of "
             f"the benchmark's repeated 75/25 splits x {result['n_inner']} stratified 80/20 "
             f"inner splits, random_state {result['seed_offset']} + part; "
             f"{result['fit_rows']} fitting rows, {result['held_out_rows']} "
             "held-out rows, no benchmark test row used).  Accuracy: 3-NN on the held-out "
             "rows, in %, mean with standard error; diff: mean paired difference to the "
             "defaults on the same fits (points), with its standard error; CPU: median "
             "process seconds of one fit (one BLAS thread).", "",
             "| configuration | accuracy % | s.e. | diff to default | s.e. | CPU s | max_iter_ "
             "| c_ |",
             "|---|---|---|---|---|---|---|---|"]
    for label, row in result["rows"].items():
        lines.append(
            f"| {label} | {_pct(row['acc_mean'])} | {_pct(row['acc_stderr'])} | "
            f"{_pct(row.get('diff_to_default'), True)} | {_pct(row.get('diff_stderr'))} | "
            f"{'' if row['cpu_s_median'] is None else format(row['cpu_s_median'], '.4f')} | "
            f"{row.get('max_iter_median', '')} | "
            f"{'' if row.get('c_median') is None else format(row['c_median'], '.3f')} |")
    lines += ["", f"Run on {result['date']} with `{command}`; load average at the start "
              f"{result['load']}.", "",
              "Versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()
                                      if v) + ".", "",
              f"Machine: {result['machine']}.", ""]
    return "\n".join(lines)


def main(argv):
    def option(name, default=None):
        values = [a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")]
        return values[-1] if values else default

    only = option("only")
    outer, inner = option("outer"), option("inner")
    chosen = option("configs")
    configs = CONFIGS
    if chosen:
        labels = chosen.split(",")
        unknown = [label for label in labels if label not in CONFIGS]
        if unknown:
            raise SystemExit(f"unknown configuration(s) {unknown}; known: {list(CONFIGS)}")
        if "default" not in labels:
            labels = ["default"] + labels
        configs = {label: CONFIGS[label] for label in labels}
    seed_offset = int(option("seed-offset", 100))
    tag = option("tag", "")
    command = "python benchmarks/studies/lmnn_validation.py " + " ".join(argv)
    problems = [(name, description, draw) for name, description, draw, _ in
                _repeated_problems()]
    problems += [(name, description, (lambda i, data=data: data))
                 for name, description, data in _problems() if "synthetic" in name]
    for name, description, draw in problems:
        short = SHORT[name]
        # a full short name (e.g. 'synthetic') selects only that problem
        if only and (only != short if only in SHORT.values() else only not in short):
            continue
        n_outer, n_inner = SIZES[short]
        n_outer = int(outer) if outer else n_outer
        n_inner = int(inner) if inner else n_inner
        start = time.perf_counter()
        load = os.getloadavg()[0]
        # NCA's memory and time grow as n^2: not run on the 20,000-row problem
        result = validate(short, draw, n_outer, n_inner, configs,
                          nca="--no-nca" not in argv and short != "synthetic20k",
                          metric_learn="--metric-learn" in argv,
                          seed_offset=seed_offset)
        result.update(date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      load=round(load, 2), wall_s=round(time.perf_counter() - start, 1),
                      versions=library_versions(), command=command)
        info = machine_info()
        result["machine"] = (f"{info.get('cpu_model', info['processor'])}, "
                             f"{info['cpu_count']} cores, Python {info['python']}, "
                             f"{info['platform']}")
        text = to_markdown(result, description, command.strip())
        print(text, flush=True)
        if "--no-write" not in argv:
            RESULTS_DIR.mkdir(exist_ok=True)
            stem = RESULTS_DIR / f"lmnn_validation_{short}{'_' + tag if tag else ''}"
            stem.with_suffix(".md").write_text(text)
            stem.with_suffix(".json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
