"""The S3GD examples' protocol and SCV baseline (a helper module, not an example).

* :func:`prepare`, :func:`datasets`, :func:`protocol`, :func:`weights`, :func:`objective`:
  the paper's objective (logistic loss, Tikhonov ``lambda = 1e-3``, a penalised constant
  feature, eq. (46) class weights on imbalanced sets) on the stand-ins we can run.
* :func:`scv_fit`: the paper's SCV baseline (Wang et al. 2013) in numpy; with
  ``control_variate=False`` the same loop is plain mini-batch SGD (the SCV run without its
  control variate, for timing the control variate alone).
"""
import time

import numpy as np
from scipy.special import expit
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.preprocessing import StandardScaler, normalize
from sklearn.utils.class_weight import compute_sample_weight

LAMBDA = 1e-3                       # the paper's Tikhonov weight: penalty lambda ||w||^2


def prepare(X):
    X = normalize(StandardScaler().fit_transform(X))
    return np.hstack([X, np.ones((X.shape[0], 1))])   # the paper's constant feature


def datasets(n_big):
    """(name, X, y, balanced): eq. (46) class weights on the imbalanced sets; the two
    generated sets have ``n_big`` rows."""
    X, y = make_classification(n_big, 54, n_informative=20, n_redundant=10,
                               n_clusters_per_class=4, flip_y=0.05, random_state=0)
    yield "covtype-like", prepare(X), y, False
    X, y = make_classification(n_big, 22, n_informative=10, weights=[0.9], flip_y=0.02,
                               random_state=1)
    yield "ijcnn-like (1:9)", prepare(X), y, True
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast_cancer", prepare(X), y, False
    X, y = load_digits(return_X_y=True)
    largest = np.bincount(y).argmax()
    yield "digits (largest class vs rest)", prepare(X), (y == largest).astype(int), True


def protocol(balanced):
    """Our parameters for the paper's objective: without class weights ``F = mean loss +
    lambda ||w||^2`` is ``alpha = 2 lambda`` and the same step; with eq. (46), whose
    weights sum to 2n, our rescaled objective is half the paper's: ``alpha = lambda`` and
    our step is twice the paper's (``step_factor``)."""
    if balanced:
        return dict(alpha=LAMBDA, class_weight="balanced", fit_intercept=False), 2.0
    return dict(alpha=2 * LAMBDA, fit_intercept=False), 1.0


def weights(y, balanced):
    return compute_sample_weight("balanced", y) if balanced else np.ones(len(y))


def objective(X, y, s, alpha, w):
    z = (2.0 * y - 1) * (X @ w)
    return float(np.mean(s * np.logaddexp(0, -z)) + 0.5 * alpha * w @ w)


def scv_fit(X, y, balanced, eta, iters, seed, budget=np.inf, record_every=None,
            control_variate=True):
    """SCV (Wang et al. 2013), built from numpy: mini-batch gradient with the control variate
    of the second-order Taylor expansion of the logistic loss at margin 0,
    ``h_i'(w) = x_i (x_i.w / 4 - y_i / 2)``, whose mean needs only the weighted first and
    second moments of the data (O(d^2) per step).  ``control_variate=False`` drops the
    control variate (and its moments): the same loop is then mini-batch SGD.  Returns the
    objective records and times."""
    kw, factor = protocol(balanced)
    alpha, eta = kw["alpha"], eta * factor
    s, ys = weights(y, balanced), 2.0 * y - 1
    n, d = X.shape
    t0 = time.process_time()
    if control_variate:
        mean_y = X.T @ (s * ys) / n
        second = (X.T * s) @ X / n
    rng = np.random.RandomState(seed)
    w = np.zeros(d)
    record_every = record_every or max(1, n // 10)
    objs, times = [], []
    for it in range(1, iters + 1):
        idx = rng.randint(0, n, 10)
        Xi, si, yi = X[idx], s[idx], ys[idx]
        m = Xi @ w
        if control_variate:
            g = Xi.T @ (si * (-yi * expit(-yi * m) - (m / 4 - yi / 2))) / 10
            g += second @ w / 4 - mean_y / 2
        else:
            g = Xi.T @ (si * (-yi * expit(-yi * m))) / 10
        w = (w - eta * g) / (1 + eta * alpha)
        if not np.all(np.isfinite(w)) or np.abs(w).max() > 1e6:
            return objs + [np.inf], times + [time.process_time() - t0]
        if it % record_every == 0:
            times.append(time.process_time() - t0)
            objs.append(objective(X, y, s, alpha, w))
            if times[-1] > budget:
                break
    return objs, times
