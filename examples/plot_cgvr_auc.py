"""
=====================================================================
CGVR: test AUC against SGD, SVRG, mini-batch SVRG and CG (Fig. 3)
=====================================================================

Reproduces, on synthetic data shaped like the paper's datasets, the generalisation
experiment of Jin et al. (2019), "Stochastic conjugate gradient algorithm with variance
reduction", Fig. 3: the average test AUC of CGVR and its counterparts on the paper's four
models (ridge on +-1 labels, logistic, hinge, squared hinge).

The protocol is the paper's (Sec. IV-E): features scaled to [-1, 1], 1/3 of the rows for
testing, 1/5 of the rest for validation; every method gets T = 25 outer iterations (m = 50
inner steps for the variance-reduced ones); the regularisation ``alpha`` is chosen from the
paper's grid {0.1, 0.05, 0.01, 0.008, 0.005} and the learning rate of SGD, SVRG and
mini-batch SVRG (what the authors' "SLBFGS" code runs) from {1e-3, 1e-4, 1e-5} by the
validation AUC; the test AUC is averaged over random splits.  SGD is scikit-learn's
:class:`~sklearn.linear_model.SGDClassifier` at a constant rate (the authors' code ran
full-batch gradient descent with momentum under that name).

The claim is tested on the paper's algorithm (``solver='cgvr_paper'``, ``w_0 ~ U[0, 1)``);
our default (``solver='cgvr'``) is a separate row.  Set ``SKSTOCH_EXAMPLE_FAST=1`` for a
quick, smaller run.
"""
# %%
import os
import warnings

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST", "0") not in ("", "0")
if FAST:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import MinMaxScaler  # noqa: E402

from skstoch import CGVRClassifier  # noqa: E402

warnings.simplefilter("ignore", ConvergenceWarning)

MODELS = {"ridge": "squared_error", "logistic": "log_loss", "hinge": "hinge",
          "sqhinge": "squared_hinge"}
# shapes of a9a (d=123) and ijcnn1 (d=22), two of the paper's six datasets
SHAPES = {"a9a-like": (32561, 123), "ijcnn1-like": (49990, 22)}
ALPHAS = [1e-1, 5e-2, 1e-2, 8e-3, 5e-3]
RATES = [1e-3, 1e-4, 1e-5]
SPLITS = 3
T = 25
if FAST:
    SHAPES = {"a9a-like": (2000, 123)}
    ALPHAS, RATES, SPLITS, T = [1e-2, 1e-3], [1e-3], 1, 5


def dataset(n, d, seed=0):
    """A make_classification problem scaled to [-1, 1] like the paper's preprocessing."""
    X, y = make_classification(n, d, n_informative=max(2, d // 3), flip_y=0.05,
                               random_state=seed)
    return MinMaxScaler((-1, 1)).fit_transform(X), y


def cgvr(loss, **kw):
    return lambda alpha, rate: CGVRClassifier(loss, alpha=alpha, max_iter=T, tol=0,
                                              random_state=0, **kw)


def methods(loss):
    """Method name -> (factory(alpha, rate), whether it has a learning rate to tune)."""
    return {
        "CGVR (paper)": (cgvr(loss, solver="cgvr_paper", init="uniform"), False),
        "CGVR (ours)": (cgvr(loss, solver="cgvr"), False),
        "CG": (cgvr(loss, solver="cg", init="uniform"), False),
        "SVRG": (lambda a, r: cgvr(loss, solver="svrg", eta0=r, init="uniform")(a, r), True),
        "mini-batch SVRG ('SLBFGS')": (
            lambda a, r: cgvr(loss, solver="minibatch_svrg", eta0=r, init="uniform")(a, r),
            True),
        "SGD (sklearn)": (
            lambda a, r: SGDClassifier(loss=loss, alpha=a, learning_rate="constant", eta0=r,
                                       max_iter=T, tol=None, random_state=0), True),
    }


# %%
# Hold-out selection and test AUC
# -------------------------------
# For each split, model and method: the (alpha, rate) pair with the best validation AUC is
# refitted on the whole training part and scored on the test part.  At the paper's rates
# (at most 1e-3) and T x m = 25 x 50 steps, SVRG and mini-batch SVRG barely move from
# ``w_0 ~ U[0, 1)`` (test AUC near 0.5): the paper's variance-reduced baselines are
# step-starved, and the real competitors are full-batch CG and SGD (which starts from 0).
test_auc = {}      # (dataset, model, method) -> [test AUC per split]
for name, shape in SHAPES.items():
    X, y = dataset(*shape, seed=1)
    for split in range(SPLITS):
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=1 / 3, random_state=split)
        X_fit, X_val, y_fit, y_val = train_test_split(X_tr, y_tr, test_size=0.2,
                                                      random_state=split)
        for model, loss in MODELS.items():
            for method, (make, tuned) in methods(loss).items():
                grid = [(a, r) for a in ALPHAS for r in (RATES if tuned else [None])]
                val = [roc_auc_score(y_val, make(a, r).fit(X_fit, y_fit).decision_function(X_val))
                       for a, r in grid]
                a, r = grid[int(np.argmax(val))]
                score = roc_auc_score(y_te, make(a, r).fit(X_tr, y_tr).decision_function(X_te))
                test_auc.setdefault((name, model, method), []).append(score)
    for model in MODELS:
        print(f"{name} {model}: " + ", ".join(
            f"{method} {np.mean(test_auc[name, model, method]):.4f}"
            for method in methods("hinge")))

# %%
# Average test AUC per model (Fig. 3)
# -----------------------------------
labels = list(methods("hinge"))
fig, axes = plt.subplots(1, len(SHAPES), figsize=(7 * len(SHAPES), 4), squeeze=False)
for ax, name in zip(axes[0], SHAPES):
    pos = np.arange(len(MODELS))
    width = 0.8 / len(labels)
    for i, method in enumerate(labels):
        means = [np.mean(test_auc[name, model, method]) for model in MODELS]
        stds = [np.std(test_auc[name, model, method]) for model in MODELS]
        ax.bar(pos + (i - len(labels) / 2 + 0.5) * width, means, width, yerr=stds,
               label=method)
    low = min(np.mean(v) for k, v in test_auc.items() if k[0] == name)
    ax.set(xticks=pos, xticklabels=list(MODELS), ylabel="mean test AUC",
           ylim=(max(0.0, low - 0.05), 1.0), title=f"Fig. 3: {name}, {SPLITS} split(s)")
axes[0, 0].legend(fontsize=7)
fig.tight_layout()

# %%
# Claims and verdicts
# -------------------
# Rule, fixed before looking at the numbers: "CGVR outperforms its counterparts" holds for a
# (dataset, model) cell when CGVR's mean test AUC is at least the best counterpart's minus
# 0.001 (below that the splits' spread dominates); "significantly" would need a margin larger
# than the spread over splits, which is reported.
try:  # examples/_reproduction.py: sphinx-gallery runs examples from examples/ without __file__
    from _reproduction import claim, record  # noqa: E402
except ImportError:  # run from another directory
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _reproduction import claim, record  # noqa: E402

COUNTERPARTS = [m for m in labels if not m.startswith("CGVR")]


def cells(method):
    """(cells where `method` is within 0.001 of the best counterpart, total, text)."""
    wins, text = 0, []
    for name in SHAPES:
        for model in MODELS:
            mine = np.mean(test_auc[name, model, method])
            best = max(COUNTERPARTS, key=lambda m: np.mean(test_auc[name, model, m]))
            other = np.mean(test_auc[name, model, best])
            wins += mine >= other - 1e-3
            text.append(f"{name} {model}: {mine:.4f} vs {best} {other:.4f}")
    return wins, len(SHAPES) * len(MODELS), "; ".join(text)


def verdict(n_ok, n_all):
    return "reproduced" if n_ok == n_all else ("partly" if n_ok else "refuted")


spread = max(np.std(v) for v in test_auc.values())
protocol = (f"{', '.join(f'{k} {v}' for k, v in SHAPES.items())} (make_classification, "
            f"5% label noise, scaled to [-1, 1]); {SPLITS} random split(s) 1/3 test, 1/5 of "
            f"the rest validation; T={T}, m=50; alpha from {ALPHAS}, rate of SGD / SVRG / "
            f"mini-batch SVRG from {RATES}, chosen by validation AUC")
claims = []
for method, algorithm in (("CGVR (paper)", "paper"), ("CGVR (ours)", "ours")):
    wins, total, text = cells(method)
    claims.append(claim(
        "Fig. 3: CGVR's AUC beats SGD, SVRG, SLBFGS and CG on six datasets",
        protocol=protocol, ours=f"{method} as good as the best counterpart (within 0.001) "
                                f"on {wins}/{total} cells: {text}",
        verdict=verdict(wins, total),
        why=f"rule: mean test AUC >= best counterpart - 0.001 per (dataset, model); the "
            f"largest std over splits is {spread:.4f} (a 'significant' win needs more); "
            f"{len(SHAPES)} synthetic stand-ins, not the paper's six datasets",
        algorithm=algorithm))
record("Jin, Zhang, Huang & Geng, Stochastic conjugate gradient algorithm with variance "
       "reduction, IEEE TNNLS 30(5), 2019", "plot_cgvr_auc.py", claims, fast=FAST)
for c in claims:
    print(f"[{c['algorithm']}] {c['verdict']}: {c['ours'][:300]}")

if matplotlib.get_backend().lower() != "agg":
    plt.show()
