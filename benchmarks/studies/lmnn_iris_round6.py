"""Round 6 of the LMNNMetric-iris study (issue 19's last failing defaults row): does a ramp
(truncated hinge) inside the default's budgeted SGD, which stops pushing on hopeless
triplets, close the gap to NCA on plain iris without costing the other problems?

Question.  Round 1 (``lmnn_iris_plain.py``) found the learned metric's leading direction
right (petal length and width) and its other directions too heavy.  Hypothesis, not tested
before: on iris the versicolor / virginica overlap makes "hopeless" triplets (an impostor
far inside the target's radius, which no metric resolves); the convex hinge pushes on them
at every draw until the end of the budget, and that push grows the noise directions.
Rounds 3 and 4 tried losses that weigh violated triplets more (softplus, squared hinge);
this round tries one that weighs hopeless triplets less: the ramp ``min([z]_+, s)``, whose
per-triplet gradient weight is ``1[0 < z < s]``, with ``z = ||x_i - x_j||_A^2 -
||x_i - x_l||_A^2 + 1`` (the hinge's weight is ``1[z > 0]``).  The ramp is not convex; a
triplet with ``z >= s`` (its impostor at least ``s - 1`` squared units inside the target's
radius) stops contributing.

Candidates (each paired against ``LMNNMetric()``, the unchanged default, on the same split
and with the same ``random_state=0``): ``ramp s`` for s in (2, 3, 5).

Implementation: round 4's private hook of the kernels (``skstoch/_fast/_lmnn.pyx``:
``Tables(..., loss, sharpness)``; ``_active_batch`` hands the non-hinge kinds to
``_weighted_rows``, which keeps the drawn triplets of weight at least 1e-12 and scales
their two difference rows by ``sqrt(weight)``, here 1) with a fourth kind, ``loss=3`` the
ramp, weight ``1.0 if 0 < z < sharpness else 0.0``, selected through the driver's private
keyword ``skstoch._solvers.lmnn.solve(..., _loss=('ramp', s))``; this script binds it with
``functools.partial`` in place of the ``solve`` that ``skstoch.metric_learning`` calls, as
round 4 did.  Only the gradient changes: ``c`` (the 'auto' balance rule), ``eta0`` (the
automatic step) and the history's objective stay the hinge's.  With s = 1e30 the ramp gives
the hinge's ``components_`` bit for bit (checked on the first 20 fits of nested iris (seed
offset 0) and of wine before this script was written), and the hinge default still passes
``tests/test_golden.py``.  The hook also keeps a tally of the ramp's draws
(``Tables.tally()``: drawn, hinge-active ``z > 0``, zeroed ``z >= s``); on nested iris this
script reads it around each Epro-SGD epoch (a study-side wrap of ``_Run.sgd_epoch``, which
only reads it) and reports, for the kept fit (the c that ``_select_c`` kept, if it ran), the
last epoch's hinge-active and ramp-zeroed triplets as percentages of the drawn ones.

Protocol (no row of the defaults test's CV is used; no choice is made on it): round 4's
exactly, the splits of round 2 imported from ``lmnn_iris_shrink.py`` (``PROBLEMS``):
nested iris (two seeds, 200 fits on about 121 rows each, outer test parts never used) and
the training parts of iris, wine, breast cancer and digits, plain and with 20 N(0, 1) noise
features, each split again by 5-fold CV.  Every fit is standardized on its fitting part and
scored by 3-NN accuracy on its held-out part.  Three sets of splits: ``--seed-offset`` 0,
1000, 2000.  No problem is capped (``--cap`` exists as in round 4, empty by default).

Gate, pre-registered (this docstring committed before any set was run): a candidate passes
if its paired gain over ``LMNNMetric()`` on nested iris (the mean of the two nested-iris
problems of a set) is at least +0.6 points on average over the three sets, and its mean
paired difference on every other problem (plain iris, iris + noise, wine, wine + noise,
breast cancer, breast cancer + noise, digits, digits + noise; averaged over the three sets)
is no lower than -0.1 points.  Nothing is run on the defaults row (plain iris 5-fold CV of
``tests/test_defaults.py``) and no default changes whatever the result: a candidate that
passes is reported to the lead, who decides.

Findings (``results/lmnn_iris_round6.md``, the gate table, each set's tables, then the
post-hoc diagnostic): no candidate passes the gate; nothing was run on the defaults row and
the library is unchanged (the hook is reverted).  Nested iris, paired gain over
``LMNNMetric()`` (mean of the two nested problems, sets 0 / 1000 / 2000 = mean over the
sets, s.e. of that mean), against the +0.60 required:

- ``ramp 2``: -0.06 / +0.04 / -0.02 = -0.01 (0.03); worst other problem digits + noise
  -2.93 (0.14), and below -0.1 also breast cancer + noise -0.83, breast cancer -0.55,
  wine + noise -0.44, digits -0.27; plain iris -0.09; gains on iris + noise +1.66 (0.23);
- ``ramp 3``: +0.02 / +0.00 / +0.02 = +0.01 (0.02); worst digits + noise -1.58 (0.11), also
  breast cancer + noise -0.53, breast cancer -0.33; iris + noise +1.30 (0.21);
- ``ramp 5``: +0.00 / +0.00 / +0.02 = +0.01 (0.02); worst digits + noise -0.72 (0.08), also
  breast cancer + noise -0.27, breast cancer -0.18; iris + noise +0.67 (0.19).

The hypothesis's mechanism is absent on iris at the default's fit.  In the last epoch of the
nested-iris fits 29.5 to 29.7% of the drawn triplets are hinge-active (23.7 to 35.2% per
fit) and the ramp zeroes 0.00% of them on average: at most 0.25% in one fit for s = 2,
below 0.005% in each of the 1200 fits (400 per set) for s = 3 and 5.  Over the whole fit
(the post-hoc ``--diagnose`` run, offset 0 only, added to this script after the three sets
had run; it re-runs the same fits and reads every epoch's tally) the ramp zeroes 0.01 to
0.03% of the drawn triplets (0.02 to 0.10% of the hinge-active ones), nearly all in the
first 8-step epoch from the identity (0.19 to 0.66% of its draws).  The versicolor /
virginica violators sit within one margin unit (z < 2), not deep inside the targets'
radius, so on iris the ramp is nearly the hinge (nested iris within 0.08 points per problem
and set; plain iris -0.03 to -0.09 on average, ramp 2 -0.23 in set 2000).  Where it does
change the fit it trades: it helps iris + noise and costs digits + noise, breast cancer
(plain and + noise) and, for s = 2, wine + noise and digits (the tally was not read on
those problems; presumably the 20 noise features put many triplets deep at the identity
start).  Not a lever for plain iris.  The three sets took 3.3 CPU minutes of tables (71, 67
and 68 s wall, one after the other, 05:38:05 to 05:41:32 UTC); the diagnostic 6 s.

The kernel hook is not in the library (reverted after the runs): it is commit 71fd48b on
branch wt-lmnn6 (``git show 71fd48b``: round 4's 485cd28 plus the 'ramp' kind and
``Tables.tally``).  To re-run: ``git checkout 71fd48b --
skstoch/_fast/_lmnn.pyx skstoch/_solvers/lmnn.py`` (or ``git show 71fd48b | git apply``),
rebuild with ``python setup.py build_ext --inplace``, then run the commands below; restore
the two files afterwards (``git checkout HEAD -- skstoch``) and rebuild.

Run (under ``nice -n 15``, one BLAS thread)::

    PYTHONPATH=. nice -n 15 python benchmarks/studies/lmnn_iris_round6.py --seed-offset=0
    PYTHONPATH=. nice -n 15 python benchmarks/studies/lmnn_iris_round6.py --seed-offset=1000
    PYTHONPATH=. nice -n 15 python benchmarks/studies/lmnn_iris_round6.py --seed-offset=2000
    PYTHONPATH=. nice -n 15 python benchmarks/studies/lmnn_iris_round6.py --diagnose
    PYTHONPATH=. python benchmarks/studies/lmnn_iris_round6.py --gate

Each set writes ``results/lmnn_iris_round6_<offset>.md`` (after every problem),
``--diagnose`` ``results/lmnn_iris_round6_diagnose_<offset>.md``; ``--gate`` reads them and
writes ``results/lmnn_iris_round6.md`` with the gate table, the three sets' tables and the
diagnostic (the one committed file; the per-set files are scratch).
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lmnn_iris_plain import knn  # noqa: E402
from lmnn_iris_shrink import PROBLEMS  # noqa: E402

import skstoch.metric_learning as metric_learning  # noqa: E402
from skstoch import LMNNMetric  # noqa: E402
from skstoch._solvers import lmnn as driver  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
BASE = "LMNNMetric()"
# None: the driver untouched (the default); otherwise solve's private _loss
LOSSES = {BASE: None, "ramp 2": ("ramp", 2.0), "ramp 3": ("ramp", 3.0),
          "ramp 5": ("ramp", 5.0)}
ORDER = ["iris_nested1", "iris_nested2", "iris", "iris_noise", "wine", "wine_noise",
         "breast_cancer", "breast_cancer_noise", "digits", "digits_noise"]
_SOLVE = metric_learning.solve
_SGD_EPOCH = driver._Run.sgd_epoch
_EPOCH_TALLY = {}   # c of the fit -> [(drawn, hinge-active, zeroed) of each epoch]


def _tallied_epoch(run, A_start, eta, n_steps):
    """_Run.sgd_epoch, recording the ramp's tally of this epoch (read only)."""
    before = run.tables.tally()
    out = _SGD_EPOCH(run, A_start, eta, n_steps)
    _EPOCH_TALLY.setdefault(run.params.c, []).append(
        [a - b for a, b in zip(run.tables.tally(), before)])
    return out


def _solve_tallied(*args, _loss, sink, **kwargs):
    """driver.solve with ``_loss``; appends the kept fit's per-epoch tallies to ``sink``."""
    _EPOCH_TALLY.clear()
    driver._Run.sgd_epoch = _tallied_epoch
    try:
        result = driver.solve(*args, _loss=_loss, **kwargs)
    finally:
        driver._Run.sgd_epoch = _SGD_EPOCH
    sink.append(_EPOCH_TALLY[result.extra["c"]])
    return result


def fit_components(Xa, ya, loss, sink=None):
    """components_ of LMNNMetric(random_state=0) with the kernels' gradient weight ``loss``;
    with ``sink`` (a list) the fit's per-epoch ramp tallies are appended to it."""
    if loss is None:
        solve = _SOLVE
    elif sink is None:
        solve = functools.partial(driver.solve, _loss=loss)
    else:
        solve = functools.partial(_solve_tallied, _loss=loss, sink=sink)
    metric_learning.solve = solve
    try:
        return LMNNMetric(random_state=0).fit(Xa, ya).components_
    finally:
        metric_learning.solve = _SOLVE


def evaluate(split, tallies=None):
    Xa, _, ya, _ = split
    out = {}
    for label, loss in LOSSES.items():
        sink = None if tallies is None or loss is None else tallies[label]
        out[label] = knn(fit_components(Xa, ya, loss, sink), split)
    return out


def table(name, split_list):
    start = time.process_time()
    tallies = {lb: [] for lb in LOSSES} if name.startswith("iris_nested") else None
    rows = [evaluate(s, tallies) for s in split_list]
    cpu = time.process_time() - start
    base = np.array([r[BASE] for r in rows])
    lines = [f"### {name}: {len(rows)} fits, {len(split_list[0][2])} fitting rows, "
             f"{len(split_list[0][3])} held out, {split_list[0][0].shape[1]} features "
             f"({cpu:.0f} CPU s)", "",
             f"| configuration | 3-NN accuracy % | paired diff to {BASE} | s.e. | "
             "last epoch: hinge-active % of drawn | last epoch: zeroed by the ramp % of "
             "drawn |",
             "|---|---|---|---|---|---|"]
    for label in LOSSES:
        acc = np.array([r[label] for r in rows])
        diff = 100 * (acc - base)
        se = diff.std(ddof=1) / np.sqrt(len(diff))
        counts = (np.array([fit[-1] for fit in tallies[label]], dtype=float)
                  if tallies and tallies[label] else None)
        if counts is None:
            extra = "- | -"
        else:
            active = 100 * counts[:, 1] / counts[:, 0]
            zeroed = 100 * counts[:, 2] / counts[:, 0]
            extra = (f"{active.mean():.1f} (range {active.min():.1f}-{active.max():.1f}) | "
                     f"{zeroed.mean():.2f} (range {zeroed.min():.2f}-{zeroed.max():.2f})")
        lines.append(f"| {label} | {100 * acc.mean():.2f} | {diff.mean():+.2f} | {se:.2f} | "
                     f"{extra} |")
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return text


def diagnose(offset):
    """Post-hoc diagnostic (not part of the gate): the ramp's tally over every epoch of the
    nested-iris fits of one set (the fits the set ran, run again)."""
    lines = [f"## Diagnostic (post hoc, not part of the gate): the ramp's zeroed triplets "
             f"over the whole fit, nested iris, seed offset {offset}", "",
             "| problem | candidate | epochs | zeroed % of drawn, whole fit | zeroed % of "
             "drawn, first epoch | zeroed % of hinge-active, whole fit | fits with a "
             "zeroed triplet after the first quarter of their epochs |",
             "|---|---|---|---|---|---|---|"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("iris_nested1", "iris_nested2"):
            split_list = PROBLEMS[name](offset)
            for label, loss in LOSSES.items():
                if loss is None:
                    continue
                fits = []
                for Xa, _, ya, _ in split_list:
                    fit_components(Xa, ya, loss, fits)
                whole = np.array([np.sum(f, axis=0) for f in fits], dtype=float)
                first = np.array([f[0] for f in fits], dtype=float)
                late = np.mean([any(e[2] > 0 for e in f[len(f) // 4:]) for f in fits])
                n_ep = [len(f) for f in fits]
                lines.append(
                    f"| {name} | {label} | {min(n_ep)}-{max(n_ep)} | "
                    f"{100 * whole[:, 2].sum() / whole[:, 0].sum():.2f} | "
                    f"{100 * first[:, 2].sum() / first[:, 0].sum():.2f} | "
                    f"{100 * whole[:, 2].sum() / whole[:, 1].sum():.2f} | "
                    f"{100 * late:.0f}% |")
                print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    (RESULTS / f"lmnn_iris_round6_diagnose_{offset}.md").write_text(text)


def read_set(path):
    """{problem: ({label: (paired diff to the default, its s.e.)}, CPU s)} of a set."""
    out, name = {}, None
    for line in path.read_text().splitlines():
        head = re.match(r"### (\w+): .*\((\d+) CPU s\)", line)
        if head:
            name = head.group(1)
            out[name] = ({}, float(head.group(2)))
        elif name and line.startswith("| ") and not line.startswith("| configuration"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            out[name][0][cells[0]] = (float(cells[2]), float(cells[3]))
    return out


def gate():
    offsets = (0, 1000, 2000)
    sets = {o: read_set(RESULTS / f"lmnn_iris_round6_{o}.md") for o in offsets
            if (RESULTS / f"lmnn_iris_round6_{o}.md").exists()}
    labels = [lb for lb in LOSSES if lb != BASE]
    lines = ["# LMNNMetric on plain iris, round 6: the ramp (truncated hinge) inside the "
             "default's SGD\n",
             "Gate (pre-registered in the script's docstring): nested iris gain >= +0.60 "
             "points on average over the three sets, every other problem >= -0.10 points on "
             f"average.  Paired differences to `{BASE}` (points), per set of splits "
             "(seed offsets 0 / 1000 / 2000; `-` not run), their mean over the sets run "
             "and its standard error (from the per-set s.e.).\n",
             "| problem | " + " | ".join(labels) + " |",
             "|---|" + "---|" * len(labels)]
    verdict = {lb: "passes" for lb in labels}

    def parts_of(name):
        return ("iris_nested1", "iris_nested2") if name == "iris nested" else (name,)

    def per_set(o, name, lb):
        if o not in sets or not all(p in sets[o] for p in parts_of(name)):
            return None
        return float(np.mean([sets[o][p][0][lb][0] for p in parts_of(name)]))

    def mean_se(name, lb):
        # the fits of different sets and problems are independent draws
        ses = [sets[o][p][0][lb][1] for o in sets for p in parts_of(name) if p in sets[o]]
        return float(np.sqrt(np.sum(np.square(ses)))) / len(ses)

    for name in ["iris nested"] + ORDER[2:]:
        cells = []
        for lb in labels:
            vals = [per_set(o, name, lb) for o in offsets]
            done = [v for v in vals if v is not None]
            text = " / ".join("-" if v is None else f"{v:+.2f}" for v in vals)
            if not done:
                cells.append(text)
                if verdict[lb] == "passes":
                    verdict[lb] = "incomplete"
                continue
            mean = float(np.mean(done))
            ok = mean >= 0.6 if name == "iris nested" else mean >= -0.1
            if not ok:
                verdict[lb] = "fails"
            elif len(done) < len(vals) and verdict[lb] == "passes":
                verdict[lb] = "incomplete"
            cells.append(text + f" = **{mean:+.2f}** (s.e. {mean_se(name, lb):.2f})"
                         + ("" if ok else " (fails)"))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cpu = sum(c for s in sets.values() for _, c in s.values())
    lines += ["", "Verdict: " + "; ".join(f"{lb}: {v}" for lb, v in verdict.items())
              + f".  CPU time of the tables run: {cpu / 60:.1f} minutes.", "",
              "The per-set tables follow (each set's run writes them to "
              "`lmnn_iris_round6_<offset>.md`, a scratch file).", ""]
    for o in sets:
        body = (RESULTS / f"lmnn_iris_round6_{o}.md").read_text().split("\n", 1)[1]
        lines += [f"## Set with seed offset {o}", body]
    for path in sorted(RESULTS.glob("lmnn_iris_round6_diagnose_*.md")):
        lines.append(path.read_text())
    text = "\n".join(lines)
    print(text)
    (RESULTS / "lmnn_iris_round6.md").write_text(text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=",".join(ORDER))
    parser.add_argument("--seed-offset", type=int, default=0)
    parser.add_argument("--cap", default="",
                        help="fits kept per problem (prefix=count; + noise included)")
    parser.add_argument("--tag", default="", help="suffix of the result files")
    parser.add_argument("--gate", action="store_true", help="combine the three sets")
    parser.add_argument("--diagnose", action="store_true",
                        help="post-hoc: the ramp's tally over whole nested-iris fits")
    args = parser.parse_args()
    if args.gate:
        return gate()
    if args.diagnose:
        return diagnose(args.seed_offset)
    names = args.only.split(",")
    caps = {k: int(v) for k, v in (c.split("=") for c in args.cap.split(",") if c)}
    header = (f"# LMNNMetric on plain iris, round 6: the ramp inside the default's SGD\n\n"
              f"Run with `PYTHONPATH=. python "
              f"benchmarks/studies/lmnn_iris_round6.py --only={args.only} "
              f"--seed-offset={args.seed_offset} --cap={args.cap}`; protocol in the "
              f"script's docstring.\n\n")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"lmnn_iris_round6_{args.seed_offset}{args.tag}.md"
    parts = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            split_list = PROBLEMS[name](args.seed_offset)
            for prefix, count in caps.items():
                if name.startswith(prefix):
                    split_list = split_list[:count]
            parts.append(table(name, split_list))
            # written after every problem, so that a partial run leaves its tables
            out.write_text(header + "\n".join(parts) + (
                f"\nFinished {datetime.now(timezone.utc).isoformat(timespec='seconds')} "
                f"(load average {os.getloadavg()[0]:.1f}).\n" if name == names[-1] else ""))


if __name__ == "__main__":
    main()
