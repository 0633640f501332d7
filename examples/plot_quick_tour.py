"""
A quick tour of skstoch
=======================

Four skstoch estimators on small problems, each used the scikit-learn way:

1. a variance-reduced linear classifier (:class:`~skstoch.CGVRClassifier`) tuned inside a
   ``Pipeline`` by ``GridSearchCV``, with the convergence history it records;
2. a least-squares fit on an l1 ball (:class:`~skstoch.ConstrainedLasso`) and how the
   coefficients enter as the radius grows;
3. a semi-supervised SVM (:class:`~skstoch.S3VMClassifier`) that learns the two moons from
   ten labels;
4. an ordinal embedding (:class:`~skstoch.OrdinalEmbedding`) that recovers a point cloud
   from "i is closer to j than to k" comparisons only.

Every fit is bitwise reproducible for a given ``random_state`` and every estimator exposes
``n_iter_`` and ``history_``.  Set ``SKSTOCH_EXAMPLE_FAST=1`` for a smaller, faster run.
"""

# %%
# Setup
# -----
import os

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST") == "1"
if FAST:
    matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_diabetes, make_moons  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV, train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skstoch import (  # noqa: E402
    CGVRClassifier,
    ConstrainedLasso,
    OrdinalEmbedding,
    S3VMClassifier,
)
from skstoch.datasets import make_embedding, make_semisupervised, make_triplets  # noqa: E402

# The tour keeps the default iteration budgets and tolerances: every fit below converges
# (a fit that stops on its budget before its tolerance is met raises a ConvergenceWarning
# naming the criterion; read it, then standardize the features or raise ``max_iter``).

# %%
# 1. A linear classifier in a Pipeline, tuned by GridSearchCV
# -----------------------------------------------------------
# ``CGVRClassifier`` minimizes the L2-regularized logistic loss with a conjugate-gradient
# method whose search directions use variance-reduced stochastic gradients.  It is a drop-in
# replacement for :class:`~sklearn.linear_model.LogisticRegression`: here the regularization
# strength ``alpha`` is chosen by cross-validation, and the test accuracy is compared with
# scikit-learn's exact solver at the same regularization (``C = 1 / (n_samples * alpha)``).
X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)

pipe = make_pipeline(StandardScaler(), CGVRClassifier(random_state=0))
search = GridSearchCV(pipe, {"cgvrclassifier__alpha": [1e-4, 1e-3, 1e-2]}, cv=3)
search.fit(X_train, y_train)
best_alpha = search.best_params_["cgvrclassifier__alpha"]
reference = make_pipeline(
    StandardScaler(), LogisticRegression(C=1.0 / (len(X_train) * best_alpha), max_iter=1000)
).fit(X_train, y_train)
print(f"best alpha: {best_alpha:g}")
print(f"test accuracy, skstoch CGVR:         {search.score(X_test, y_test):.3f}")
print(f"test accuracy, sklearn LogisticReg.: {reference.score(X_test, y_test):.3f}")

# %%
# The fitted estimator keeps its convergence history: one record per outer iteration.
cgvr = search.best_estimator_[-1]
objective = np.asarray(cgvr.history_["objective"])
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.semilogy(np.arange(1, len(objective) + 1), objective - objective.min() + 1e-16, marker="o")
ax.set_xlabel("outer iteration")
ax.set_ylabel("objective - best objective seen")
ax.set_title(f"CGVRClassifier, alpha={best_alpha:g} ({cgvr.n_iter_} iterations)")
fig.tight_layout()

# %%
# 2. Least squares on an l1 ball
# ------------------------------
# ``ConstrainedLasso`` minimizes the squared error subject to ``||w||_1 <= radius`` with
# epoch-projection SGD: plain stochastic steps inside an epoch and an exact projection on
# the l1 ball only at the end of each epoch.  Growing the radius traces the lasso path.
X, y = load_diabetes(return_X_y=True)
X = StandardScaler().fit_transform(X)
y = (y - y.mean()) / y.std()
radii = np.linspace(0.05, 1.5, 6 if FAST else 15)
coefs = np.array([
    ConstrainedLasso(radius=r, random_state=0).fit(X, y).coef_ for r in radii
])
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(radii, coefs, marker=".")
ax.plot(radii, radii, "k--", lw=0.8, label="radius")
ax.plot(radii, np.abs(coefs).sum(axis=1), "k:", lw=1.5, label="||coef||_1")
ax.set_xlabel("l1 radius")
ax.set_ylabel("coefficient")
ax.set_title("ConstrainedLasso on diabetes: coefficients vs radius")
ax.legend(loc="upper left", fontsize=8)
fig.tight_layout()

# %%
# 3. Learning from ten labels
# ---------------------------
# ``S3VMClassifier`` trains a kernel SVM on labeled *and* unlabeled points (unlabeled rows
# are marked ``-1`` in ``y``), approximating the kernel with random features so that each
# stochastic step costs O(n_components) whatever the number of samples.  The unlabeled
# points push the decision boundary into the low-density gap between the moons.
X, y = make_moons(300 if FAST else 1000, noise=0.1, random_state=0)
y_semi, labeled = make_semisupervised(y, n_labeled=10, random_state=0)
s3vm = S3VMClassifier(gamma=5.0, C=10.0, random_state=0).fit(X, y_semi)
print(f"S3VM accuracy on all points, from 10 labels: {s3vm.score(X, y):.3f}")

xx, yy = np.meshgrid(np.linspace(-1.5, 2.5, 150), np.linspace(-1.0, 1.5, 120))
zz = s3vm.decision_function(np.c_[xx.ravel(), yy.ravel()]).reshape(xx.shape)
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.contourf(xx, yy, zz, levels=20, cmap="RdBu", alpha=0.5)
ax.contour(xx, yy, zz, levels=[0.0], colors="k")
ax.scatter(X[:, 0], X[:, 1], c="lightgray", s=6, label="unlabeled")
mask = y_semi != -1
ax.scatter(X[mask, 0], X[mask, 1], c=y[mask], cmap="RdBu", edgecolors="k", s=60,
           label="labeled")
ax.set_title("S3VMClassifier: decision function")
ax.legend(loc="lower left", fontsize=8)
fig.tight_layout()

# %%
# 4. An embedding from comparisons only
# -------------------------------------
# ``OrdinalEmbedding`` receives triplets ``(i, j, k)`` meaning "object i is closer to j than
# to k" and finds points that satisfy as many as possible (SVRG with the stabilized
# Barzilai-Borwein step size).  The triplets are drawn from a hidden 2-D point cloud; the
# embedding is defined only up to rotation, reflection, translation and scale, so it is
# aligned to the truth with an orthogonal Procrustes fit before plotting.
n_objects = 40 if FAST else 100
truth = make_embedding(n_objects, 2, random_state=0)
triplets = make_triplets(n_objects, 2000 if FAST else 10_000, embedding=truth, random_state=1)
train, test = train_test_split(triplets, test_size=0.3, random_state=0)
emb = OrdinalEmbedding(n_components=2, random_state=0).fit(train, n_objects=n_objects)
print(f"fraction of held-out triplets satisfied: {emb.score(test):.3f}")

A = emb.embedding_ - emb.embedding_.mean(axis=0)
B = truth - truth.mean(axis=0)
U, s, Vt = np.linalg.svd(A.T @ B)
aligned = A @ (U @ Vt) * (s.sum() / (A**2).sum())
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.scatter(B[:, 0], B[:, 1], s=20, label="hidden points")
ax.scatter(aligned[:, 0], aligned[:, 1], s=20, marker="x", label="embedding (aligned)")
for a, b in zip(aligned, B):
    ax.plot([a[0], b[0]], [a[1], b[1]], color="gray", lw=0.5)
ax.set_title("OrdinalEmbedding from triplets")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# Reproducibility and callbacks
# -----------------------------
# The same ``random_state`` gives bitwise identical fitted attributes, and a ``callback``
# receives each epoch's record and can stop the fit by returning ``True``.
again = OrdinalEmbedding(n_components=2, random_state=0).fit(train, n_objects=n_objects)
print("bitwise identical refit:", np.array_equal(again.embedding_, emb.embedding_))

stopped = OrdinalEmbedding(n_components=2, random_state=0,
                           callback=lambda record: record["epoch"] >= 3)
stopped.fit(train, n_objects=n_objects)
print("epochs run with a callback that stops after epoch 3:", stopped.n_iter_)

if not FAST and matplotlib.get_backend().lower() != "agg":
    plt.show()
