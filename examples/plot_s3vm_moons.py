"""
=======================================================================
Semi-supervised SVM by triply stochastic gradients on moons and circles
=======================================================================

:class:`skstoch.S3VMClassifier` trains a kernel S3VM (RBF kernel through random Fourier features
drawn fresh at every iteration) from a handful of labels and many unlabeled points. This
example shows

1. decision boundaries on two moons and two circles with 10 labels, against ``SVC`` on the
   labeled points only, ``LabelSpreading`` and ``SelfTrainingClassifier(SVC)``;
2. fit time against the number of points (the paper's Fig. 2);
3. test error against iterations (the paper's Fig. 4) and against the paper's FRS3VM baseline
   (one fixed block of random features reused at every iteration).

Set ``SKSTOCH_EXAMPLE_FAST=1`` for a quick run with smaller sizes.
"""
import os
import time

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST", "0") not in ("", "0")
if FAST:
    matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_circles, make_moons
from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier
from sklearn.svm import SVC

from skstoch import S3VMClassifier
from skstoch.datasets import make_semisupervised

N = 200 if FAST else 1000
MAX_ITER = 25 if FAST else 300

# %%
# Decision boundaries with 10 labels
# ----------------------------------
# The unlabeled loss ``max(0, 1 - |f(x)|)`` pushes the boundary away from dense regions; the
# supervised SVC only sees the 10 labeled points.
problems = {
    "moons": (make_moons(N, noise=0.1, random_state=0), 5.0),
    "circles": (make_circles(N, noise=0.05, factor=0.5, random_state=0), 5.0),
}
models = {
    # default C="auto" = 10 n_l on the mean hinge: every labeled row weighs 10, as SVC(C=10)
    "S3VMClassifier": lambda g: S3VMClassifier(gamma=g, max_iter=MAX_ITER, random_state=0),
    "SVC (labeled only)": lambda g: SVC(C=10.0, gamma=g),
    "LabelSpreading (knn)": lambda g: LabelSpreading(kernel="knn", n_neighbors=7),
    "SelfTraining(SVC)": lambda g: SelfTrainingClassifier(SVC(C=10.0, gamma=g, probability=True,
                                                              random_state=0)),
}
fig, axes = plt.subplots(len(problems), len(models), figsize=(14, 6.5), squeeze=False)
for row, (pname, ((X, y), gamma)) in enumerate(problems.items()):
    y_semi, labeled = make_semisupervised(y, n_labeled=10, random_state=1)
    xx, yy = np.meshgrid(np.linspace(X[:, 0].min() - 0.3, X[:, 0].max() + 0.3, 120),
                         np.linspace(X[:, 1].min() - 0.3, X[:, 1].max() + 0.3, 120))
    grid = np.c_[xx.ravel(), yy.ravel()]
    for col, (mname, make) in enumerate(models.items()):
        model = make(gamma)
        if mname.startswith("SVC"):
            model.fit(X[labeled], y[labeled])
        else:
            model.fit(X, y_semi)
        acc = np.mean(model.predict(X) == y)
        ax = axes[row, col]
        ax.contourf(xx, yy, model.predict(grid).reshape(xx.shape), alpha=0.25, cmap="coolwarm")
        ax.scatter(X[~labeled, 0], X[~labeled, 1], c="lightgray", s=5)
        ax.scatter(X[labeled, 0], X[labeled, 1], c=y[labeled], cmap="coolwarm", s=60,
                   edgecolor="k")
        ax.set_title(f"{mname}\n{pname}: accuracy {acc:.3f}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
fig.tight_layout()

# %%
# Fit time against the number of points (paper Fig. 2)
# ----------------------------------------------------
# Memory stays O(T m) for the model; time grows like the number of feature evaluations on the
# sampled batches, not like n^2. LabelSpreading with the rbf kernel builds an n x n matrix.
sizes = [300, 1000, 3000] if FAST else [1000, 4000, 16000, 64000, 256000]
times = {"S3VMClassifier": [], "LabelSpreading (knn)": []}
for n in sizes:
    X, y = make_moons(n, noise=0.1, random_state=0)
    y_semi, _ = make_semisupervised(y, n_labeled=20, random_state=0)
    for name, model in [("S3VMClassifier", S3VMClassifier(gamma=5.0, max_iter=MAX_ITER,
                                                          random_state=0)),
                        ("LabelSpreading (knn)", LabelSpreading(kernel="knn", n_neighbors=7))]:
        start = time.perf_counter()
        model.fit(X, y_semi)
        times[name].append(time.perf_counter() - start)
fig, ax = plt.subplots(figsize=(5, 4))
for name, t in times.items():
    ax.loglog(sizes, t, "o-", label=name)
ax.set_xlabel("number of training points n")
ax.set_ylabel("fit time (s)")
ax.set_title("Fit time vs n (two moons, 20 labels)")
ax.legend()

# %%
# Test error against iterations, TSGS3VM vs FRS3VM (paper Figs. 3-4)
# ------------------------------------------------------------------
# We refit with increasing ``max_iter``. With a seed, a constant step and no C* warm-up
# (``C_star_warmup=0``; the default ramps C* over the first 30% of ``max_iter``, which would
# make each budget a different schedule) a shorter fit is exactly a prefix of a longer one.
# FRS3VM reuses ONE block of ceil(sqrt(n)) random features at every iteration and runs plain
# SGD on their weights; a few lines of numpy below. Both use the same C (10 n_l), C_star
# (0.3 C) and step (the default eta0 = 0.02); ``tol=None`` runs exactly ``max_iter``.
X, y = make_moons(N * 2, noise=0.1, random_state=0)
Xt, yt = make_moons(2000, noise=0.1, random_state=1)
y_semi, _ = make_semisupervised(y, n_labeled=10, random_state=1)
budgets = [5, 10, 25] if FAST else [5, 10, 20, 40, 80, 160, 320]
tsg_err = []
for T in budgets:
    clf = S3VMClassifier(gamma=5.0, max_iter=T, tol=None, C_star_warmup=0.0,
                         random_state=0).fit(X, y_semi)
    tsg_err.append(1.0 - clf.score(Xt, yt))

# FRS3VM: fixed features phi(x) = sqrt(2/m) cos(x omega + b), m = ceil(sqrt(n)), SGD on the
# same objective (labeled hinge + symmetric hinge on unlabeled), same step and batch size.
rng = np.random.RandomState(0)
m = int(np.ceil(np.sqrt(len(X))))
omega = rng.normal(scale=np.sqrt(2 * 5.0), size=(2, m))
b = rng.uniform(0, 2 * np.pi, m)


def phi(Z):
    return np.sqrt(2.0 / m) * np.cos(Z @ omega + b)


lab, unl = np.flatnonzero(y_semi != -1), np.flatnonzero(y_semi == -1)
yl = np.where(y_semi[lab] == 1, 1.0, -1.0)
w = np.zeros(m)
fr_err = []
C, C_star = 10.0 * len(lab), 3.0 * len(lab)
eta, B = 0.02, 256
for it in range(1, max(budgets) + 1):
    il, iu = rng.randint(len(lab), size=B), rng.randint(len(unl), size=B)
    Pl, Pu = phi(X[lab[il]]), phi(X[unl[iu]])
    fl, fu = Pl @ w, Pu @ w
    gl = np.where(yl[il] * fl < 1, -yl[il], 0.0)
    gu = np.where(np.abs(fu) < 1, -np.sign(fu), 0.0)
    w -= eta * (w + C * (gl @ Pl) / B + C_star * (gu @ Pu) / B)
    if it in budgets:
        fr_err.append(np.mean((phi(Xt) @ w > 0) != yt))

fig, ax = plt.subplots(figsize=(5, 4))
ax.plot(budgets, tsg_err, "o-", label="TSGS3VM (S3VMClassifier)")
ax.plot(budgets, fr_err, "s--", label=f"FRS3VM (fixed {m} features)")
ax.set_xscale("log")
ax.set_xlabel("iterations (batch 256)")
ax.set_ylabel("test error")
ax.set_title("Test error vs iterations (two moons, 10 labels)")
ax.legend()

if not FAST and matplotlib.get_backend().lower() != "agg":
    plt.show()
