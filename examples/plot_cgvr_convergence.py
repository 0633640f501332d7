"""
======================================================================
CGVR: insensitivity to m, convergence vs SVRG and CG, AUC vs LIBLINEAR
======================================================================

Reproduces, on synthetic data shaped like the paper's datasets, the three experiments of
Jin et al. (2019), "Stochastic conjugate gradient algorithm with variance reduction":

* Fig. 1: the final objective after T outer iterations hardly depends on the inner length m;
* Fig. 2: convergence of CGVR against SVRG (fixed step), mini-batch SVRG (what the
  authors' "SLBFGS" code runs), full-batch CG and SGD, as suboptimality against effective
  passes and against time (the paper plots the objective per outer iteration, which hides the
  different costs of an "iteration");
* Fig. 4: test AUC of CGVR (squared hinge) against LIBLINEAR through
  :class:`~sklearn.svm.LinearSVC`, with the correctly matched ``C = 1 / (n alpha)`` (the paper
  used ``C = 1/(2 lambda)``, which omits n).

We also show the paper's own line search on the mini-batch objective
(``line_search='batch'``), which stalls at a noise floor, next to our default
(``line_search='vr'``).
"""
# %%
import os
import time
import warnings

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST", "0") not in ("", "0")
if FAST:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression, SGDClassifier  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import MinMaxScaler  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from skstoch import CGVRClassifier  # noqa: E402

warnings.simplefilter("ignore", ConvergenceWarning)
ALPHA = 1e-4


def dataset(n, d, seed=0):
    """A make_classification problem scaled to [-1, 1] like the paper's preprocessing."""
    X, y = make_classification(n, d, n_informative=max(2, d // 3), flip_y=0.05,
                               random_state=seed)
    return MinMaxScaler((-1, 1)).fit_transform(X), y


def log_objective(X, y, w, b):
    ys = np.where(y == 1, 1.0, -1.0)
    return np.mean(np.logaddexp(0, -ys * (X @ w + b))) + 0.5 * ALPHA * w @ w


# shapes of a9a (d=123), ijcnn1 (d=22), covtype (d=54)
SHAPES = {"a9a-like": (32561, 123), "ijcnn1-like": (49990, 22), "covtype-like": (100000, 54)}
if FAST:
    SHAPES = {"a9a-like": (3000, 123)}

# %%
# Fig. 1: final objective and time after T = 25 outer iterations against m
# ------------------------------------------------------------------------
X, y = dataset(*SHAPES["a9a-like"])
n = X.shape[0]
lr = LogisticRegression(C=1 / (n * ALPHA), tol=1e-12, max_iter=10000).fit(X, y)
f_star = log_objective(X, y, lr.coef_[0], lr.intercept_[0])
ms = [5, 10, 50] if FAST else [5, 10, 50, 100, 150]
T = 5 if FAST else 25
fig1 = {}
for label, kw in [("CGVR (vr line search)", dict()),
                  ("CGVR (paper: batch line search)", dict(line_search="batch",
                                                           safeguard=False)),
                  ("SVRG eta=1e-3", dict(solver="svrg", eta0=1e-3)),
                  ("mini-batch SVRG eta=1e-3", dict(solver="minibatch_svrg", eta0=1e-3))]:
    gaps, times = [], []
    for m in ms:
        t0 = time.perf_counter()
        clf = CGVRClassifier(alpha=ALPHA, inner_iter=m, max_iter=T, tol=0, random_state=0,
                             **kw).fit(X, y)
        times.append(time.perf_counter() - t0)
        gaps.append(max(clf.history_["objective"][-1] - f_star, 1e-16) / f_star)
    fig1[label] = (gaps, times)

fig, axes = plt.subplots(1, 2, figsize=(10, 4))
for label, (gaps, times) in fig1.items():
    axes[0].semilogy(ms, gaps, "o-", label=label)
    axes[1].plot(ms, times, "o-", label=label)
axes[0].set(xlabel="inner iterations m", ylabel="relative suboptimality after T",
            title="Fig. 1: log loss, a9a-like")
axes[1].set(xlabel="inner iterations m", ylabel="fit time (s)")
axes[0].legend(fontsize=7)
fig.tight_layout()

# %%
# Fig. 2: suboptimality against effective passes and time
# --------------------------------------------------------
# Effective passes count rows read / n (a full gradient is one pass). SGD is scikit-learn's
# SGDClassifier (one pass per epoch) with the same objective.
fig, axes = plt.subplots(len(SHAPES), 2, figsize=(10, 3.5 * len(SHAPES)), squeeze=False)
for row, (name, shape) in enumerate(SHAPES.items()):
    X, y = dataset(*shape)
    n = X.shape[0]
    lr = LogisticRegression(C=1 / (n * ALPHA), tol=1e-12, max_iter=10000).fit(X, y)
    f_star = log_objective(X, y, lr.coef_[0], lr.intercept_[0])
    runs = {
        "CGVR (ours, vr)": dict(),
        "CGVR (paper, batch)": dict(line_search="batch", safeguard=False),
        "full-batch CG": dict(solver="cg", max_iter=100 if not FAST else 20),
        "SVRG eta=1e-3": dict(solver="svrg", eta0=1e-3, inner_iter=2 * n),
        "mini-batch SVRG eta=1e-3": dict(solver="minibatch_svrg", eta0=1e-3),
    }
    for label, kw in runs.items():
        kw = {"max_iter": 8 if FAST else 25, **kw}
        clf = CGVRClassifier(alpha=ALPHA, tol=0, random_state=0, **kw).fit(X, y)
        h = clf.history_
        gap = np.maximum(h["objective"] - f_star, 1e-16) / f_star
        axes[row, 0].semilogy(h["passes"], gap, label=label)
        axes[row, 1].semilogy(h["time"], gap, label=label)
    sgd_gap, sgd_t = [], []
    sgd = SGDClassifier(loss="log_loss", alpha=ALPHA, learning_rate="optimal", tol=None,
                        max_iter=1, warm_start=True, random_state=0)
    t0 = time.perf_counter()
    for epoch in range(8 if FAST else 25):
        sgd.partial_fit(X, y, classes=np.array([0, 1])) if epoch else sgd.fit(X, y)
        sgd_t.append(time.perf_counter() - t0)
        sgd_gap.append(max(log_objective(X, y, sgd.coef_[0], sgd.intercept_[0]) - f_star,
                           1e-16) / f_star)
    axes[row, 0].semilogy(np.arange(1, len(sgd_gap) + 1), sgd_gap, label="SGD (sklearn)")
    axes[row, 1].semilogy(sgd_t, sgd_gap, label="SGD (sklearn)")
    axes[row, 0].set(xlabel="effective passes", ylabel="relative suboptimality", title=name)
    axes[row, 1].set(xlabel="time (s)", title=name)
axes[0, 0].legend(fontsize=7)
fig.tight_layout()

# %%
# Fig. 4: test AUC of CGVR (squared hinge) and LIBLINEAR at matched C
# -------------------------------------------------------------------
# alpha grid of the paper, hold-out validation (1/5 of the training part), test 1/3.
names, auc_cgvr, auc_lib, t_cgvr, t_lib = [], [], [], [], []
for name, shape in SHAPES.items():
    X, y = dataset(*shape, seed=1)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=1 / 3, random_state=0)
    X_fit, X_val, y_fit, y_val = train_test_split(X_tr, y_tr, test_size=0.2, random_state=0)
    best = {}
    for alpha in [1e-1, 5e-2, 1e-2, 8e-3, 5e-3]:
        for key, est in [("cgvr", CGVRClassifier("squared_hinge", alpha=alpha,
                                                 regularize_intercept=True, random_state=0)),
                         ("lib", LinearSVC(C=1 / (len(y_fit) * alpha)))]:
            est.fit(X_fit, y_fit)
            auc = roc_auc_score(y_val, est.decision_function(X_val))
            if auc > best.get(key, (-1, None))[0]:
                best[key] = (auc, alpha)
    t0 = time.perf_counter()
    cg = CGVRClassifier("squared_hinge", alpha=best["cgvr"][1], regularize_intercept=True,
                        random_state=0).fit(X_tr, y_tr)
    t_cgvr.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    lib = LinearSVC(C=1 / (len(y_tr) * best["lib"][1])).fit(X_tr, y_tr)
    t_lib.append(time.perf_counter() - t0)
    names.append(name)
    auc_cgvr.append(roc_auc_score(y_te, cg.decision_function(X_te)))
    auc_lib.append(roc_auc_score(y_te, lib.decision_function(X_te)))
    print(f"{name}: test AUC CGVR {auc_cgvr[-1]:.4f} ({t_cgvr[-1]:.2f} s), "
          f"LinearSVC {auc_lib[-1]:.4f} ({t_lib[-1]:.2f} s)")

fig, axes = plt.subplots(1, 2, figsize=(10, 4))
pos = np.arange(len(names))
axes[0].bar(pos - 0.2, auc_cgvr, 0.4, label="CGVR squared hinge")
axes[0].bar(pos + 0.2, auc_lib, 0.4, label="LinearSVC (LIBLINEAR)")
axes[0].set(xticks=pos, xticklabels=names, ylabel="test AUC", ylim=(0.5, 1.0),
            title="Fig. 4: AUC at matched C")
axes[1].bar(pos - 0.2, t_cgvr, 0.4, label="CGVR squared hinge")
axes[1].bar(pos + 0.2, t_lib, 0.4, label="LinearSVC (LIBLINEAR)")
axes[1].set(xticks=pos, xticklabels=names, ylabel="fit time (s)")
axes[0].legend(fontsize=7)
fig.tight_layout()

if matplotlib.get_backend().lower() != "agg":
    plt.show()
