"""Round 7 of the LMNNMetric-iris study (issue 19's last failing defaults row): does a
relative (scale-free) margin inside the default's budgeted SGD close the gap to NCA on
plain iris without costing the other problems?

Question.  Round 1 (``lmnn_iris_plain.py``) found the learned metric's leading direction
right (petal length and width) and its other directions too heavy.  Rounds 1 to 6 varied
the budget, c, the neighbours, rank and eigenvalue rules, editing, target passes, the
loss's shape (smooth, squared, ramp), bagging and whitened targets; every one kept LMNN's
constant unit margin, ``z = ||x_i - x_j||_A^2 - ||x_i - x_l||_A^2 + 1``.  Hypothesis, not
tested before: on iris the classes have very different local scales (setosa tight and
far, versicolor / virginica overlapping), and a margin of one unit in the learned metric
makes the metric grow until the overlapping pair is one unit apart, which inflates the
minor directions along with the leading one.  A relative margin ties each triplet's margin
to its own target distance: the triplet is active when ``(1 + m) ||x_i - x_j||_A^2 -
||x_i - x_l||_A^2 > 0`` and its gradient is ``(1 + m) a a' - b b'`` (a = x_i - x_j,
b = x_i - x_l) instead of ``a a' - b b'``.

Candidates (each paired against ``LMNNMetric()``, the unchanged default, on the same split
and with the same ``random_state=0``): ``relative m`` for m in (0.25, 0.5, 1.0).

Implementation: round 6's private hook of the kernels (commit 71fd48b, re-applied) with a
fifth kind, ``loss=4`` the relative margin, ``sharpness`` = m: ``_weighted_rows`` computes
``||a||_A^2`` (one d x d product per drawn triplet), ``||b||_A^2 = ||a||_A^2 - (z - 1)``,
keeps the triplet if ``(1 + m) ||a||_A^2 - ||b||_A^2 > 0`` and scales its ``a`` row by
``sqrt(1 + m)``, so that the two dsyrk calls of ``_gradient_step`` sum ``(1 + m) a a' -
b b'``; selected through ``skstoch._solvers.lmnn.solve(..., _loss=('relative', m))``,
bound with ``functools.partial`` in place of the ``solve`` that ``skstoch.metric_learning``
calls, as rounds 4 and 6 did.  Only the gradient changes: ``c`` (the 'auto' balance rule),
``eta0`` (the automatic step) and the history's objective stay the hinge's.  No setting of
m gives the hinge (m = 0 is a zero margin), so the check of the hook is that the hinge
default still passes ``tests/test_golden.py`` with the hook in.  The tally of the hook
reads, for this kind, (drawn, hinge-active ``z > 0``, relative-active) triplets; on nested
iris the last epoch's percentages are reported per candidate, as round 6 did.

Diagnostic of the mechanism (pre-registered with this docstring, not part of the gate): on
nested iris, the mean over the fits of the learned metric's eigenvalue ratios
``w_k / w_max`` (k = 2, 3, 4, from ``components_' components_``) and of ``w_max`` per
candidate; the hypothesis predicts smaller ratios for the relative margin than for the
default.  A caveat written down before the runs: with the relative margin the objective
(pull plus hinge) is positively homogeneous of degree one in A, so nothing but the budget,
the step and the floor ``A >= epsilon I`` sets the metric's scale (3-NN reads only its
shape); if the fit shrinks A toward ``epsilon I`` the ratios go to 1 and ``w_max`` falls,
which ``w_max`` shows.

Protocol (no row of the defaults test's CV is used; no choice is made on it): rounds 4 to
6's exactly, the splits of round 2 imported from ``lmnn_iris_shrink.py`` (``PROBLEMS``):
nested iris (two seeds, 200 fits on about 121 rows each, outer test parts never used) and
the training parts of iris, wine, breast cancer and digits, plain and with 20 N(0, 1) noise
features, each split again by 5-fold CV.  Every fit is standardized on its fitting part and
scored by 3-NN accuracy on its held-out part.  Three sets of splits: ``--seed-offset`` 0,
1000, 2000.

Gate, pre-registered (this docstring committed before any set was run): a candidate passes
if its paired gain over ``LMNNMetric()`` on nested iris (the mean of the two nested-iris
problems of a set) is at least +0.6 points on average over the three sets, and its mean
paired difference on every other problem (plain iris, iris + noise, wine, wine + noise,
breast cancer, breast cancer + noise, digits, digits + noise; averaged over the three sets)
is no lower than -0.1 points.  Nothing is run on the defaults row (plain iris 5-fold CV of
``tests/test_defaults.py``) and no default changes whatever the result: a candidate that
passes is run once on the row and reported; the default is decided afterwards.

Before this docstring was committed, the hook was checked on fits outside the study's
splits only: its ('hinge', 1) path gives the default's components_ bit for bit on 3 iris
and 3 wine fits (80% subsamples of the standardized data, random_state 0, 1, 2), where
('relative', 0.5) differs, and tests/test_golden.py passes with it.  No split of the study
has been run.  (This script and the hook's diff were first written by a concurrent
session, branch wt-r7, commits d229369 and 33300bc; they were reviewed here, the
diagnostic's ``w_max`` and the caveat above added, and this session's runs are its own.)

Findings (written after the runs; ``results/lmnn_iris_round7.md``, the gate table, then each
set's tables): no candidate passes the gate; nothing was run on the defaults row and the
library is unchanged (the hook is reverted).  Nested iris, paired gain over ``LMNNMetric()``
(mean of the two nested problems, sets 0 / 1000 / 2000 = mean over the sets, s.e. of that
mean), against the +0.60 required:
- ``relative 0.25``: -0.93 / -1.01 / -1.01 = -0.98 (0.12); worst other problem plain iris
  -1.36 (0.22), and below -0.1 also wine -0.26, breast cancer -0.24, digits -0.24, digits +
  noise -0.17; gains on iris + noise +0.63 (0.18) and breast cancer + noise +0.16;
- ``relative 0.5``: -0.84 / -0.92 / -1.08 = -0.95 (0.12); worst plain iris -1.35 (0.21), also
  digits + noise -0.44, wine -0.32, wine + noise -0.20, breast cancer -0.17, digits -0.14;
  iris + noise +0.79 (0.18);
- ``relative 1``: -0.56 / -0.46 / -0.60 = -0.54 (0.11); worst digits + noise -1.00 (0.11),
  also plain iris -0.92, digits -0.35, wine -0.35, breast cancer -0.28, breast cancer + noise
  -0.19, wine + noise -0.17; iris + noise +1.28 (0.20).
The diagnostic (pre-registered) refutes the mechanism: on nested iris the relative margin
makes the minor directions heavier, not lighter.  The default's eigenvalue ratios w_k / w_max
(k = 2, 3, 4; means over each problem's 200 fits, range over the 6 nested problems) are
0.17-0.18, 0.10 and 0.08 with w_max 2.01-2.02; relative 0.25 gives 0.88-0.90, 0.84-0.86,
0.80-0.82 with w_max 0.18; relative 0.5 0.83-0.86, 0.79-0.81, 0.74-0.77 with w_max 0.19-0.20;
relative 1 0.69-0.72, 0.64-0.67, 0.61-0.63 with w_max 0.24-0.25.  As the caveat above
anticipated, the scale-free objective lets the pull term shrink A about ten-fold within the
budget (it stays far above epsilon = 1e-3); in the last epoch only 5.1, 6.4 and 8.8% of the
drawn triplets are relative-active (80-83% are active for the unit hinge at that small
scale), and the metric ends much closer to isotropic than the default's.  It gains on iris +
noise (the ratios were read on nested iris only, so why is not diagnosed) and loses on the
other problems.  On iris the constant unit margin is not what inflates the minor directions;
not a lever for plain iris.
The three sets took 6.9 CPU minutes of tables (run side by side, 08:02:24 to 08:08:01 UTC,
on the two shared cores with other sessions' jobs).
The kernel hook is not in the library (reverted after the runs): it is the first commit of
this study, commit 5447471 on branch wt-lmnn7b (round 6's 71fd48b plus the 'relative' kind;
``git show 5447471``).  To re-run:
check out that commit's ``skstoch/_fast/_lmnn.pyx`` and ``skstoch/_solvers/lmnn.py``,
rebuild with ``python setup.py build_ext --inplace``, run the commands below, then restore
the two files (``git checkout HEAD -- skstoch``) and rebuild.

Run (under ``nice -n 15``, one BLAS thread), with the hook in place::

    PYTHONPATH=. nice -n 15 python benchmarks/studies/lmnn_iris_round7.py --seed-offset=0
    PYTHONPATH=. nice -n 15 python benchmarks/studies/lmnn_iris_round7.py --seed-offset=1000
    PYTHONPATH=. nice -n 15 python benchmarks/studies/lmnn_iris_round7.py --seed-offset=2000
    PYTHONPATH=. python benchmarks/studies/lmnn_iris_round7.py --gate

Each set writes ``results/lmnn_iris_round7_<offset>.md`` (after every problem); ``--gate``
reads them and writes ``results/lmnn_iris_round7.md`` with the gate table and the three
sets' tables (the one committed file; the per-set files are scratch).
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
LOSSES = {BASE: None, "relative 0.25": ("relative", 0.25), "relative 0.5": ("relative", 0.5),
          "relative 1": ("relative", 1.0)}
ORDER = ["iris_nested1", "iris_nested2", "iris", "iris_noise", "wine", "wine_noise",
         "breast_cancer", "breast_cancer_noise", "digits", "digits_noise"]
_SOLVE = metric_learning.solve
_SGD_EPOCH = driver._Run.sgd_epoch
_EPOCH_TALLY = {}   # c of the fit -> [(drawn, hinge-active, relative-active) per epoch]


def _tallied_epoch(run, A_start, eta, n_steps):
    """_Run.sgd_epoch, recording the hook's tally of this epoch (read only)."""
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
    with ``sink`` (a list) the fit's per-epoch tallies are appended to it."""
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


def eigenvalue_ratios(components):
    """The learned metric's eigenvalues, largest first, over the largest."""
    w = np.sort(np.linalg.eigvalsh(components.T @ components))[::-1]
    return w / w[0]


def evaluate(split, tallies=None, ratios=None, wmax=None):
    Xa, _, ya, _ = split
    out = {}
    for label, loss in LOSSES.items():
        sink = None if tallies is None or loss is None else tallies[label]
        components = fit_components(Xa, ya, loss, sink)
        if ratios is not None:
            ratios[label].append(eigenvalue_ratios(components))
            wmax[label].append(np.linalg.eigvalsh(components.T @ components)[-1])
        out[label] = knn(components, split)
    return out


def table(name, split_list):
    start = time.process_time()
    nested = name.startswith("iris_nested")
    tallies = {lb: [] for lb in LOSSES} if nested else None
    ratios = {lb: [] for lb in LOSSES} if nested else None
    wmax = {lb: [] for lb in LOSSES} if nested else None
    rows = [evaluate(s, tallies, ratios, wmax) for s in split_list]
    cpu = time.process_time() - start
    base = np.array([r[BASE] for r in rows])
    lines = [f"### {name}: {len(rows)} fits, {len(split_list[0][2])} fitting rows, "
             f"{len(split_list[0][3])} held out, {split_list[0][0].shape[1]} features "
             f"({cpu:.0f} CPU s)", "",
             f"| configuration | 3-NN accuracy % | paired diff to {BASE} | s.e. | "
             "last epoch: hinge-active % of drawn | last epoch: relative-active % of "
             "drawn | eigenvalue ratios w_k / w_max, k = 2, 3, 4 | w_max |",
             "|---|---|---|---|---|---|---|---|"]
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
            rel = 100 * counts[:, 2] / counts[:, 0]
            extra = (f"{active.mean():.1f} (range {active.min():.1f}-{active.max():.1f}) | "
                     f"{rel.mean():.1f} (range {rel.min():.1f}-{rel.max():.1f})")
        if ratios is not None:
            extra += " | " + ", ".join(f"{v:.3f}" for v in np.mean(ratios[label], axis=0)[1:])
            extra += f" | {np.mean(wmax[label]):.3g}"
        else:
            extra += " | - | -"
        lines.append(f"| {label} | {100 * acc.mean():.2f} | {diff.mean():+.2f} | {se:.2f} | "
                     f"{extra} |")
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return text


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
    sets = {o: read_set(RESULTS / f"lmnn_iris_round7_{o}.md") for o in offsets
            if (RESULTS / f"lmnn_iris_round7_{o}.md").exists()}
    labels = [lb for lb in LOSSES if lb != BASE]
    lines = ["# LMNNMetric on plain iris, round 7: a relative margin inside the "
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
              "`lmnn_iris_round7_<offset>.md`, a scratch file).", ""]
    for o in sets:
        body = (RESULTS / f"lmnn_iris_round7_{o}.md").read_text().split("\n", 1)[1]
        lines += [f"## Set with seed offset {o}", body]
    text = "\n".join(lines)
    print(text)
    (RESULTS / "lmnn_iris_round7.md").write_text(text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=",".join(ORDER))
    parser.add_argument("--seed-offset", type=int, default=0)
    parser.add_argument("--cap", default="",
                        help="fits kept per problem (prefix=count; + noise included)")
    parser.add_argument("--tag", default="", help="suffix of the result files")
    parser.add_argument("--gate", action="store_true", help="combine the three sets")
    args = parser.parse_args()
    if args.gate:
        return gate()
    names = args.only.split(",")
    caps = {k: int(v) for k, v in (c.split("=") for c in args.cap.split(",") if c)}
    header = (f"# LMNNMetric on plain iris, round 7: a relative margin inside the default's SGD\n\n"
              f"Run with `PYTHONPATH=. python "
              f"benchmarks/studies/lmnn_iris_round7.py --only={args.only} "
              f"--seed-offset={args.seed_offset} --cap={args.cap}`; protocol in the "
              f"script's docstring.\n\n")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"lmnn_iris_round7_{args.seed_offset}{args.tag}.md"
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
