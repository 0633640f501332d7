"""Round 3 of the LMNNMetric-iris study (issue 19's last failing defaults row): does a
smooth or squared hinge in LMNN's objective close the gap to NCA on plain iris without
costing the other problems?

Question.  Rounds 1 and 2 (``lmnn_iris_plain.py``, ``lmnn_iris_shrink.py``) found no
training-side rule; round 2 left "a smoothed hinge" untried.  NCA's softmax keeps a
gradient from impostors beyond the margin and gives up on hopeless points; LMNN's hinge
``[1 + d_ij - d_il]_+`` does neither.  Here only the loss changes.

Objective (LMNNMetric's default Eq. (21), ``c = 0.5``, ``mu1 = 1e-4``, ``mu2 = 1e-3``,
``epsilon = 1e-3``, ``prior='pairs'``, 'knn' recipe with ``n_neighbors = 3`` and
``n_impostors = 10``)::

    c/N sum_(i,j,l) loss(1 + d_A(x_i, x_j) - d_A(x_i, x_l)) + (1 - c) tr(A P)
        + mu1/2 ||A||_F^2 + mu2 sum_{p != q} |A_pq|

N the number of triplets, j the 3 nearest same-class points of i (Euclidean, input space,
fixed), l the 10 nearest differently-labelled points of i in the current metric, P the
mean of (x_i - x_j)(x_i - x_j)' over the target pairs.  Solver (deterministic, full
batch, the same for every loss): ``A = L'L + epsilon I`` (so ``A >= epsilon I``), ``L``
started at ``sqrt(1 - epsilon) I`` (``A = I``, LMNNMetric's start), scipy's L-BFGS-B on
``L`` with the triplet table fixed (at most ``MAXITER`` iterations), then the impostors
re-searched in the learned metric, at most ``ROUNDS`` rounds or until the table no longer
changes (LMNNMetric re-searches them at its epoch ends).  The l1 term and the hinge are
used with their subgradients (sign, indicator).

Candidates (each against ``numpy hinge``, the same solver with the plain hinge, paired on
the same split):

- ``softplus s``: ``log(1 + exp(s z)) / s`` for s in (1, 3, 10) (s -> inf is the hinge);
- ``squared hinge``: ``[z]_+ ** 2``.

``LMNNMetric()`` (``random_state=0``, the library's default fit) is the sanity anchor.

Protocol (no row of the defaults test's CV is used; no choice is made on it): the splits
of round 2, imported from ``lmnn_iris_shrink.py`` (``PROBLEMS``): nested iris (two seeds,
200 fits on about 121 rows each, outer test parts never used) and the training parts of
iris, wine, breast cancer and digits, plain and with 20 N(0, 1) noise features, each
split again by 5-fold CV.  Every fit is standardized on its fitting part and scored by 3-NN
accuracy on its held-out part.  Three sets of splits: ``--seed-offset`` 0, 1000, 2000.
To fit the CPU budget (the full-batch fits of breast cancer and digits take seconds each)
only the first fits of the larger problems are kept: ``--cap`` (default
``breast_cancer=10,digits=2``: 10 of 50 and 2 of 20 fits per set, plain and + noise).

Gate, pre-registered before any result across seeds was seen: a candidate passes if its
paired gain over ``numpy hinge`` on nested iris (the mean of the two nested-iris problems
of a set) is at least +0.6 points on average over the three sets, and its mean paired
difference on every other problem (averaged over the three sets) is no lower than -0.1
points.

Findings (``results/lmnn_iris_round3.md``, the gate table then each set's tables):
no candidate passes the gate.  On nested iris the paired gain over ``numpy hinge`` (mean of
the two nested problems, sets 0 / 1000 / 2000) is softplus 1 -0.20 (-0.22 / -0.31 / -0.07),
softplus 3 -0.08, softplus 10 +0.06 (-0.02 / +0.23 / -0.03), squared hinge -0.03 (s.e. per
200 fits 0.13 to 0.29), against the +0.60 required.  The smooth losses also cost elsewhere
(mean over the sets): digits -3.33 (softplus 1), -1.67 (3), -0.87 (10), breast cancer -0.23
to -0.35, wine -0.50 (softplus 1); the squared hinge loses 0.14 on wine and 0.08 to 0.09 on
iris and breast cancer, and gains on digits (+0.56) and breast cancer + noise (+0.35) with
2 to 10 fits per set.  Sanity anchor: ``numpy hinge`` is close to ``LMNNMetric()`` on plain
iris, wine and breast cancer (within 0.6 points per set; nested iris +0.19 on average) but
not elsewhere: it reaches a lower value of Eq. (21) (checked on single splits: 0.14
against LMNNMetric's 0.83 on wine + noise; on iris 0.146 against 0.152) and scores
0.98 to 1.64 points below LMNNMetric on wine + noise and breast cancer + noise and 0.9 to 5.9
on digits and digits + noise, while scoring 0.9 to 1.2 above it on iris + noise: the
default's budgeted SGD stops far from the optimum on those problems, and that early stop,
not the optimum, is what the defaults were validated on.  So this round answers the
question for the objective's optimum; a smooth loss inside the budgeted SGD (compiled
kernels) is not tested here.

Run (each set about 11 CPU minutes; the three sets ran in parallel under ``nice -n 15``,
about 33 minutes wall, 32.1 CPU minutes in all)::

    PYTHONPATH=. nice -n 15 python benchmarks/studies/lmnn_iris_round3.py --seed-offset=0
    PYTHONPATH=. nice -n 15 python benchmarks/studies/lmnn_iris_round3.py --seed-offset=1000
    PYTHONPATH=. nice -n 15 python benchmarks/studies/lmnn_iris_round3.py --seed-offset=2000
    PYTHONPATH=. python benchmarks/studies/lmnn_iris_round3.py --gate

Each set writes ``results/lmnn_iris_round3_<offset>.md`` (after every problem); ``--gate``
reads the three and writes ``results/lmnn_iris_round3.md`` with the gate table and the three
sets' tables (the one committed file; the per-set files are scratch).
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402
from scipy.special import expit  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lmnn_iris_plain import knn  # noqa: E402
from lmnn_iris_shrink import PROBLEMS  # noqa: E402

from skstoch import LMNNMetric  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
C, MU1, MU2, EPS, K, Q = 0.5, 1e-4, 1e-3, 1e-3, 3, 10
MAXITER, ROUNDS = 200, 5
ORDER = ["iris_nested1", "iris_nested2", "iris", "iris_noise", "wine", "wine_noise",
         "breast_cancer", "breast_cancer_noise", "digits", "digits_noise"]


def hinge(z):
    return np.maximum(z, 0.0), (z > 0).astype(float)


def squared_hinge(z):
    p = np.maximum(z, 0.0)
    return p * p, 2.0 * p


def softplus(s):
    def loss(z):
        return np.logaddexp(0.0, s * z) / s, expit(s * z)
    return loss


LOSSES = {"numpy hinge": hinge, "softplus 1": softplus(1.0), "softplus 3": softplus(3.0),
          "softplus 10": softplus(10.0), "squared hinge": squared_hinge}


def sq_dist(Z):
    s = np.sum(Z * Z, axis=1)
    return np.maximum(s[:, None] + s[None, :] - 2.0 * Z @ Z.T, 0.0)


def targets(X, y):
    """The K nearest same-class points of each row (Euclidean, input space)."""
    D = sq_dist(X)
    D[y[:, None] != y[None, :]] = np.inf
    np.fill_diagonal(D, np.inf)
    return np.argsort(D, axis=1, kind="stable")[:, :K]


def impostors(Z, y):
    """The Q nearest differently-labelled points of each row of Z."""
    D = sq_dist(Z)
    D[y[:, None] == y[None, :]] = np.inf
    return np.argsort(D, axis=1, kind="stable")[:, :Q]


def fit_numpy(X, y, loss):
    """Components of A = L'L + EPS I minimizing the module docstring's objective."""
    n, d = X.shape
    T = targets(X, y)
    U = X[:, None, :] - X[T]                                  # (n, K, d)
    P = np.einsum("nka,nkb->ab", U, U) / (n * K)
    Uu = np.sum(U * U, axis=-1)
    off = ~np.eye(d, dtype=bool)
    N = n * K * Q

    Uf = U.reshape(-1, d)

    def objective(flat, V, Vv):
        Vf = V.reshape(-1, d)
        L = flat.reshape(d, d)
        A = L.T @ L + EPS * np.eye(d)
        dt = np.sum((U @ L.T) ** 2, axis=-1) + EPS * Uu        # (n, K)
        di = np.sum((V @ L.T) ** 2, axis=-1) + EPS * Vv        # (n, Q)
        value, w = loss(1.0 + dt[:, :, None] - di[:, None, :])  # (n, K, Q)
        wt, wi = w.sum(axis=2), w.sum(axis=1)
        G = (Uf.T @ (Uf * wt.reshape(-1, 1)) - Vf.T @ (Vf * wi.reshape(-1, 1))) * (C / N)
        G += (1 - C) * P + MU1 * A + MU2 * np.where(off, np.sign(A), 0.0)
        f = (C / N * value.sum() + (1 - C) * np.sum(A * P) + 0.5 * MU1 * np.sum(A * A)
             + MU2 * np.sum(np.abs(A[off])))
        return f, (2.0 * L @ G).ravel()

    L = np.sqrt(1.0 - EPS) * np.eye(d)
    imp = None
    for _ in range(ROUNDS):
        new = impostors(X @ factor(L).T, y)
        if imp is not None and np.array_equal(new, imp):
            break
        imp = new
        V = X[:, None, :] - X[imp]
        res = minimize(objective, L.ravel(), args=(V, np.sum(V * V, axis=-1)), jac=True,
                       method="L-BFGS-B", options={"maxiter": MAXITER})
        L = res.x.reshape(d, d)
    return factor(L)


def factor(L):
    """Components R (R'R = L'L + EPS I) of the metric."""
    d = L.shape[0]
    w, V = np.linalg.eigh(L.T @ L + EPS * np.eye(d))
    return (V * np.sqrt(np.maximum(w, 0.0))).T


def evaluate(split):
    Xa, _, ya, _ = split
    out = {"LMNNMetric() (anchor)": knn(LMNNMetric(random_state=0).fit(Xa, ya).components_,
                                        split)}
    for label, loss in LOSSES.items():
        out[label] = knn(fit_numpy(Xa, ya, loss), split)
    return out


def table(name, split_list):
    start = time.process_time()
    rows = [evaluate(s) for s in split_list]
    cpu = time.process_time() - start
    labels = list(rows[0])
    base = np.array([r["numpy hinge"] for r in rows])
    anchor = np.array([r["LMNNMetric() (anchor)"] for r in rows])
    lines = [f"### {name}: {len(rows)} fits, {len(split_list[0][2])} fitting rows, "
             f"{len(split_list[0][3])} held out, {split_list[0][0].shape[1]} features "
             f"({cpu:.0f} CPU s)", "",
             "| configuration | 3-NN accuracy % | paired diff to numpy hinge | s.e. | "
             "paired diff to LMNNMetric() | s.e. |", "|---|---|---|---|---|---|"]
    for label in labels:
        acc = np.array([r[label] for r in rows])
        d1, d2 = 100 * (acc - base), 100 * (acc - anchor)
        se = lambda v: v.std(ddof=1) / np.sqrt(len(v))  # noqa: E731
        lines.append(f"| {label} | {100 * acc.mean():.2f} | {d1.mean():+.2f} | {se(d1):.2f} | "
                     f"{d2.mean():+.2f} | {se(d2):.2f} |")
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return text


def read_set(path):
    """{problem: ({label: paired diff to numpy hinge}, CPU s)} from a per-set table."""
    out, name = {}, None
    for line in path.read_text().splitlines():
        head = re.match(r"### (\w+): .*\((\d+) CPU s\)", line)
        if head:
            name = head.group(1)
            out[name] = ({}, float(head.group(2)))
        elif name and line.startswith("| ") and not line.startswith("| configuration"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            out[name][0][cells[0]] = float(cells[2])
    return out


def gate():
    sets = {o: read_set(RESULTS / f"lmnn_iris_round3_{o}.md") for o in (0, 1000, 2000)}
    anchor = "LMNNMetric() (anchor)"
    labels = [lb for lb in LOSSES if lb != "numpy hinge"]
    lines = ["# LMNNMetric on plain iris, round 3: smooth and squared hinges\n",
             "Gate (pre-registered in the script's docstring): nested iris gain >= +0.60 "
             "points on average over the three sets, every other problem >= -0.10 points on "
             "average.  Paired differences to `numpy hinge` (points), per set of splits "
             "(seed offsets 0 / 1000 / 2000; `-` not run) and their mean over the sets run.\n",
             "| problem | " + " | ".join(labels) + " | LMNNMetric() (not a candidate) |",
             "|---|" + "---|" * (len(labels) + 1)]
    verdict = {lb: "passes" for lb in labels}

    def per_set(o, name, lb):
        parts = ("iris_nested1", "iris_nested2") if name == "iris nested" else (name,)
        if not all(p in sets[o] for p in parts):
            return None
        return float(np.mean([sets[o][p][0][lb] for p in parts]))

    for name in ["iris nested"] + ORDER[2:]:
        cells = []
        for lb in labels + [anchor]:
            vals = [per_set(o, name, lb) for o in sets]
            done = [v for v in vals if v is not None]
            text = " / ".join("-" if v is None else f"{v:+.2f}" for v in vals)
            if not done or lb == anchor:
                cells.append(text + (f" = {np.mean(done):+.2f}" if done else ""))
                if not done and verdict.get(lb) == "passes":
                    verdict[lb] = "incomplete"
                continue
            mean = float(np.mean(done))
            ok = mean >= 0.6 if name == "iris nested" else mean >= -0.1
            if not ok:
                verdict[lb] = "fails"
            elif len(done) < len(vals) and verdict[lb] == "passes":
                verdict[lb] = "incomplete"
            cells.append(text + f" = **{mean:+.2f}**" + ("" if ok else " (fails)"))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cpu = sum(c for s in sets.values() for _, c in s.values())
    lines += ["", "Verdict: " + "; ".join(f"{lb}: {v}" for lb, v in verdict.items())
              + f".  CPU time of the tables run: {cpu / 60:.1f} minutes.", "",
              "The per-set tables follow (each set's run writes them to "
              "`lmnn_iris_round3_<offset>.md`, a scratch file).", ""]
    for o in sets:
        body = (RESULTS / f"lmnn_iris_round3_{o}.md").read_text().split("\n", 1)[1]
        lines += [f"## Set with seed offset {o}", body]
    text = "\n".join(lines)
    print(text)
    (RESULTS / "lmnn_iris_round3.md").write_text(text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=",".join(ORDER))
    parser.add_argument("--seed-offset", type=int, default=0)
    parser.add_argument("--cap", default="breast_cancer=10,digits=2",
                        help="fits kept per problem (prefix=count; + noise included)")
    parser.add_argument("--tag", default="", help="suffix of the result files")
    parser.add_argument("--gate", action="store_true", help="combine the three sets")
    args = parser.parse_args()
    if args.gate:
        return gate()
    names = args.only.split(",")
    caps = {k: int(v) for k, v in (c.split("=") for c in args.cap.split(",") if c)}
    header = (f"# LMNNMetric on plain iris, round 3: smooth and squared hinges\n\nRun "
              f"with `PYTHONPATH=. python benchmarks/studies/lmnn_iris_round3.py "
              f"--only={args.only} --seed-offset={args.seed_offset} --cap={args.cap}`; "
              f"protocol in the script's docstring.\n\n")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"lmnn_iris_round3_{args.seed_offset}{args.tag}.md"
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
