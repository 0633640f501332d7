"""Baselines and stand-in data for the CGVR examples (a helper module, not an example).

* :class:`StochasticLBFGS`: the paper's SLBFGS baseline (its Algorithm 2, the stochastic
  L-BFGS of Moritz, Nishihara & Jordan, AISTATS 2016) in numpy, written for the examples
  only: it is a baseline, not a skstoch solver.  It minimises the objective of
  :class:`skstoch.CGVRClassifier`, ``mean_i loss(y_i, x_i.w + b) + (alpha/2) ||w||^2``, with
  the loss derivatives of skstoch's margin losses.
* ``STAND_INS``: synthetic data of the shape class of the paper's six LIBSVM datasets
  (Table I), which cannot be downloaded here.
* :func:`objective`, :func:`reference_objective` and :func:`gap`: that objective, its
  minimum f* from a tight fit, and the relative suboptimality the convergence plots show.
"""
import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import MinMaxScaler

from skstoch import CGVRClassifier
from skstoch._solvers.cgvr import LOSSES


def objective(loss, X, y, w, b, alpha):
    """``mean_i loss(y_i, x_i.w + b) + (alpha/2) ||w||^2`` with labels ``y == 1`` as +1 and
    the others as -1 (``'squared_error'``: half the squared residual to those +-1)."""
    ys = np.where(y == 1, 1.0, -1.0)
    m = ys * (X @ w + b)
    if loss == "log_loss":
        values = np.logaddexp(0, -m)
    elif loss == "hinge":
        values = np.maximum(0, 1 - m)
    elif loss == "squared_hinge":
        values = np.maximum(0, 1 - m) ** 2
    else:
        values = 0.5 * (X @ w + b - ys) ** 2
    return np.mean(values) + 0.5 * alpha * w @ w


def reference_objective(loss, X, y, alpha, max_iter=300):
    """f* from a tight fit (exact for the smooth models; the best found for the hinge):
    scikit-learn's LogisticRegression for ``'log_loss'``, else CGVRClassifier at tol 1e-10
    within ``max_iter`` outer iterations."""
    if loss == "log_loss":
        lr = LogisticRegression(C=1 / (len(y) * alpha), tol=1e-12, max_iter=10000).fit(X, y)
        return objective(loss, X, y, lr.coef_[0], lr.intercept_[0], alpha)
    ref = CGVRClassifier(loss, alpha=alpha, solver="cgvr", tol=1e-10, max_iter=max_iter,
                         random_state=0).fit(X, y)
    return objective(loss, X, y, ref.coef_[0], ref.intercept_[0], alpha)


def gap(values, f_star):
    """Relative suboptimality ``(f - f*) / |f*|``, floored at 1e-16 for log axes."""
    return np.maximum(np.asarray(values) - f_star, 1e-16) / abs(f_star)


class StochasticLBFGS:
    """SLBFGS (paper Alg. 2): SVRG whose step is ``-eta0 H_r g_t``, with ``H_r`` the L-BFGS
    two-loop recursion on the last ``memory`` pairs ``(s_r, y_r)``: every ``update_every``
    (L) inner steps, ``s_r = v_r - v_{r-1}`` for the averages ``v_r`` of the last L iterates
    and ``y_r = Hessian of f_T(v_r) s_r`` on a fresh batch ``T_r``.  Paper settings:
    ``|S| = |T| = sqrt(n)``, M = 10, L = 10, ``eta0`` in {1e-3, 1e-4, 1e-5}, Option I,
    ``w_0 ~ U[0, 1)``.  ``H_0 = I`` until the first pair; the two-loop recursion scales its
    initial matrix by ``s_r.y_r / y_r.y_r`` (Moritz et al.).  The pairs and the counter of
    inner steps carry over the outer iterations.  ``history_`` has the objective at every
    snapshot ``w_k`` (k = 0..T) and the effective passes (rows read / n) spent to reach it.
    """

    def __init__(self, loss="log_loss", *, alpha=1e-4, eta0=1e-3, max_iter=25, inner_iter=50,
                 memory=10, update_every=10, init="uniform", random_state=0):
        self.loss, self.alpha, self.eta0 = loss, alpha, eta0
        self.max_iter, self.inner_iter = max_iter, inner_iter
        self.memory, self.update_every = memory, update_every
        self.init, self.random_state = init, random_state

    # mean loss and its derivatives over the rows `rows` (None: all) at the point w = (coef, b)
    def _margins(self, X, w, rows):
        Xs = X if rows is None else X[rows]
        return Xs, np.ascontiguousarray(Xs @ w[:-1] + w[-1])

    def _grad(self, X, ys, w, rows):
        Xs, z = self._margins(X, w, rows)
        yb = ys if rows is None else ys[rows]
        dl = self._loss.dloss_array(z, yb) / len(z)
        g = np.empty_like(w)
        g[:-1] = Xs.T @ dl + self.alpha * w[:-1]
        g[-1] = dl.sum()
        return g, z, yb

    def _hessian_product(self, X, ys, w, s, rows):
        Xs, z = self._margins(X, w, rows)
        curv = self._loss.d2loss_array(z, ys[rows]) / len(z)
        q = curv * (Xs @ s[:-1] + s[-1])
        out = np.empty_like(s)
        out[:-1] = Xs.T @ q + self.alpha * s[:-1]
        out[-1] = q.sum()
        return out

    def _direction(self, g):
        """-H_r g by the L-BFGS two-loop recursion (H_0 = I without pairs)."""
        q = g.copy()
        coeffs = []
        for s, y, rho in reversed(self._pairs):
            a = rho * (s @ q)
            q -= a * y
            coeffs.append(a)
        if self._pairs:
            s, y, _ = self._pairs[-1]
            q *= (s @ y) / (y @ y)
        for (s, y, rho), a in zip(self._pairs, reversed(coeffs)):
            q += (a - rho * (y @ q)) * s
        return -q

    def fit(self, X, y):
        # a dense copy: gathering sqrt(n) rows of a CSR matrix costs more than the step
        X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
        self.classes_ = np.unique(y)
        ys = np.where(y == self.classes_[-1], 1.0, -1.0)
        n, d = X.shape
        self._loss = LOSSES[self.loss]()
        rng = np.random.default_rng(self.random_state)
        batch = max(1, int(np.sqrt(n)))
        w = rng.random(d + 1) if self.init == "uniform" else np.zeros(d + 1)
        self._pairs, window, v_prev, step = [], [], None, 0
        objective, passes, read = [], [], 0.0
        for k in range(self.max_iter + 1):
            mu, z, _ = self._grad(X, ys, w, None)        # full gradient at the snapshot
            read += n
            objective.append(self._loss.loss_array(z, ys).mean()
                             + 0.5 * self.alpha * w[:-1] @ w[:-1])
            passes.append(read / n)
            if k == self.max_iter:
                break
            x = w.copy()
            for _ in range(self.inner_iter):
                rows = rng.integers(0, n, batch)
                Xs, yb = X[rows], ys[rows]
                dl = (self._loss.dloss_array(np.ascontiguousarray(Xs @ x[:-1] + x[-1]), yb)
                      - self._loss.dloss_array(np.ascontiguousarray(Xs @ w[:-1] + w[-1]), yb)
                      ) / batch
                g = mu.copy()                 # the SVRG gradient at x on the batch
                g[:-1] += Xs.T @ dl + self.alpha * (x[:-1] - w[:-1])
                g[-1] += dl.sum()
                read += 2 * batch
                x = x + self.eta0 * self._direction(g)
                step += 1
                window.append(x)
                if step % self.update_every == 0:
                    v = np.mean(window[-self.update_every:], axis=0)
                    window = []
                    if v_prev is not None:
                        s = v - v_prev
                        yv = self._hessian_product(X, ys, v, s, rng.integers(0, n, batch))
                        read += batch
                        if s @ yv > 1e-12 * np.sqrt((s @ s) * (yv @ yv)):
                            self._pairs = (self._pairs + [(s, yv, 1.0 / (s @ yv))])[
                                -self.memory:]
                    v_prev = v
            if not np.all(np.isfinite(x)):
                break                                      # diverged: keep the last snapshot
            w = x                                          # Option I
        self.coef_, self.intercept_ = w[None, :-1], w[-1:]
        self.history_ = {"objective": np.array(objective), "passes": np.array(passes)}
        return self

    def decision_function(self, X):
        return np.asarray(X @ self.coef_[0] + self.intercept_[0]).ravel()


# ---------------------------------------------------------------------------------------
# Stand-ins for the paper's datasets (Table I: all binary, from the LIBSVM site)
# ---------------------------------------------------------------------------------------
def _teacher_labels(rng, scores, positive_rate, noise=0.05):
    """Labels from a linear teacher's scores: the top `positive_rate` fraction is positive,
    then a fraction `noise` of the labels is flipped."""
    y = (scores > np.quantile(scores, 1 - positive_rate)).astype(int)
    flip = rng.random(len(y)) < noise
    y[flip] = 1 - y[flip]
    return y


def _one_hot_blocks(rng, n, sizes):
    """Binary CSR matrix: one active column per block (categorical attributes, one-hot
    encoded like a9a's), categories drawn with Zipf-like frequencies."""
    cols, offset = [], 0
    for size in sizes:
        p = 1.0 / np.arange(1, size + 1)
        cols.append(offset + rng.choice(size, n, p=p / p.sum()))
        offset += size
    cols = np.column_stack(cols)
    rows = np.repeat(np.arange(n), len(sizes))
    return sp.csr_matrix((np.ones(cols.size), (rows, cols.ravel())), shape=(n, offset))


def a9a_like(n=32561, seed=0):
    """a9a (32,561 x 123, binary one-hot features, ~14 nonzeros a row, 24% positive): 14
    categorical attributes one-hot encoded into 123 columns; sparse 0/1 CSR."""
    rng = np.random.default_rng(seed)
    sizes = [9, 16, 7, 15, 6, 5, 2, 14, 8, 10, 5, 5, 9, 12]        # sums to 123
    X = _one_hot_blocks(rng, n, sizes)
    return X, _teacher_labels(rng, X @ rng.normal(size=X.shape[1]), 0.24)


def w8a_like(n=49749, seed=0):
    """w8a (49,749 x 300, binary, ~12 nonzeros a row, 3% positive): keyword-presence-like
    features with skewed frequencies; sparse 0/1 CSR."""
    rng = np.random.default_rng(seed)
    freq = 1.0 / np.arange(1, 301) ** 0.7
    freq *= 12 / freq.sum()
    rows = [rng.choice(n, rng.binomial(n, f), replace=False) for f in freq]
    cols = np.repeat(np.arange(300), [len(r) for r in rows])
    X = sp.csr_matrix((np.ones(len(cols)), (np.concatenate(rows), cols)), shape=(n, 300))
    return X, _teacher_labels(rng, X @ rng.normal(size=300), 0.03, noise=0.01)


def _dense(n, d, positive_rate, sep, seed, informative):
    X, y = make_classification(n, d, n_informative=informative, n_redundant=0,
                               weights=[1 - positive_rate], class_sep=sep, flip_y=0.05,
                               random_state=seed)
    return MinMaxScaler((-1, 1)).fit_transform(X), y


def ijcnn1_like(n=49990, seed=0):
    """ijcnn1 (49,990 x 22, dense, 10% positive), scaled to [-1, 1]."""
    return _dense(n, 22, 0.10, 1.0, seed, 8)


def covtype_like(n=581012, seed=0):
    """covtype.binary (581,012 x 54: 10 numeric + 4 + 40 one-hot columns, 49% positive),
    scaled to [-1, 1] like the paper (the one-hot columns become +-1)."""
    rng = np.random.default_rng(seed)
    numeric = rng.normal(size=(n, 10)) @ rng.normal(size=(10, 10))    # correlated
    onehot = _one_hot_blocks(rng, n, [4, 40]).toarray()
    X = np.hstack([numeric, onehot])
    y = _teacher_labels(rng, X @ rng.normal(size=54), 0.49, noise=0.15)
    return MinMaxScaler((-1, 1)).fit_transform(X), y


def susy_like(n=5_000_000, seed=0):
    """SUSY (5,000,000 x 18, dense, 46% positive), scaled to [-1, 1]."""
    return _dense(n, 18, 0.46, 0.8, seed, 8)


def higgs_like(n=11_000_000, seed=0):
    """HIGGS (11,000,000 x 28, dense, 53% positive; linear models are weak on it), scaled
    to [-1, 1]."""
    return _dense(n, 28, 0.53, 0.3, seed, 10)


def dense_stand_in(n, d, *, positive_rate, shift, informative, seed=0, noise=0.05,
                   chunk=1 << 19):
    """Dense two-class data built in place, chunk by chunk, for millions of rows (peak memory
    about the float64 matrix itself; ``make_classification`` plus a scaler copy it several
    times): latent Gaussian rows, the positive class moved by ``shift`` along a random
    direction of the first ``informative`` coordinates, mixed by a random d x d matrix
    (correlated columns), a fraction ``noise`` of the labels flipped, every column scaled
    to [-1, 1] in place (the paper's max-min scaling)."""
    rng = np.random.default_rng(seed)
    mix = rng.normal(size=(d, d)) / np.sqrt(d)
    direction = np.zeros(d)
    direction[:informative] = rng.normal(size=informative)
    direction *= shift / np.linalg.norm(direction)
    X = np.empty((n, d))
    y = (rng.random(n) < positive_rate).astype(int)
    for start in range(0, n, chunk):
        z = rng.standard_normal((min(chunk, n - start), d))
        z += y[start:start + len(z), None] * direction
        np.matmul(z, mix, out=X[start:start + len(z)])
    flip = rng.random(n) < noise
    y[flip] = 1 - y[flip]
    low, high = X.min(axis=0), X.max(axis=0)
    scale = 2.0 / np.where(high > low, high - low, 1.0)
    for start in range(0, n, chunk):
        block = X[start:start + chunk]
        block -= low
        block *= scale
        block -= 1.0
    return X, y


def susy_lean(n=5_000_000, seed=0):
    """SUSY-shaped (5,000,000 x 18, 46% positive, a linear model reaches about 79% accuracy
    without the label noise) by :func:`dense_stand_in`."""
    return dense_stand_in(n, 18, positive_rate=0.46, shift=1.6, informative=8, seed=seed)


def higgs_lean(n=11_000_000, seed=0):
    """HIGGS-shaped (11,000,000 x 28, 53% positive, a linear model reaches about 64%
    accuracy without the label noise) by :func:`dense_stand_in`."""
    return dense_stand_in(n, 28, positive_rate=0.53, shift=0.7, informative=10, seed=seed)


STAND_INS = {"a9a": a9a_like, "w8a": w8a_like, "ijcnn1": ijcnn1_like,
             "covtype": covtype_like, "SUSY": susy_like, "HIGGS": higgs_like}


# ---------------------------------------------------------------------------------------
# Fig. 4 (time): fit time of CGVR and LIBLINEAR to their stopping rules
# ---------------------------------------------------------------------------------------
PAPER_ROWS = {"a9a": 32561, "w8a": 49749, "ijcnn1": 49990, "covtype": 581012,
              "SUSY": 5_000_000, "HIGGS": 11_000_000}
_LEAN = {"SUSY": susy_lean, "HIGGS": higgs_lean}


def paper_dense(name, n, seed=0):
    """The stand-in of dataset `name` with `n` rows as the paper's code saw its data: dense,
    every column max-min scaled to [-1, 1] (the sparse 0/1 a9a and w8a stand-ins become
    +-1); SUSY and HIGGS by the memory-lean :func:`dense_stand_in`."""
    X, y = (_LEAN.get(name) or STAND_INS[name])(n=n, seed=seed)
    if sp.issparse(X):
        X = MinMaxScaler((-1, 1)).fit_transform(X.toarray())
    return np.ascontiguousarray(X, dtype=float), y


def time_methods(alpha, n):
    """The fits of the timing study for the regularisation ``alpha`` (CGVR's
    ``(alpha/2) ||w||^2`` convention) on `n` rows, each to its own stopping rule:

    * ``CGVR paper``: the paper's Algorithm 3 (``solver='cgvr_paper'``, ``w_0 ~ U[0, 1)``),
      T = 25 outer iterations of m = 50, squared hinge, penalised intercept;
    * ``CGVR ours``: the default solver and stopping rule (``tol=1e-4`` on max |grad f|);
    * ``LIBLINEAR paper``: ``liblinear -s 1`` as the authors ran it (L2-loss SVM dual, no
      bias, the command line's eps = 0.1) with the paper's ``C = 1/(2 lambda)`` (which omits
      n: a far less regularised problem);
    * ``LIBLINEAR matched``: the same solver on CGVR's objective, ``C = 1/(n alpha)`` and a
      penalised intercept (``intercept_scaling=1``).
    """
    from sklearn.svm import LinearSVC

    common = dict(alpha=alpha, regularize_intercept=True, random_state=0)
    return {
        "CGVR paper": CGVRClassifier("squared_hinge", solver="cgvr_paper", init="uniform",
                                     max_iter=25, inner_iter=50, tol=0, **common),
        "CGVR ours": CGVRClassifier("squared_hinge", solver="cgvr", **common),
        "LIBLINEAR paper": LinearSVC(C=1 / (2 * alpha), tol=0.1, dual=True, random_state=0,
                                     fit_intercept=False),
        "LIBLINEAR matched": LinearSVC(C=1 / (n * alpha), tol=0.1, dual=True, random_state=0),
    }


def time_fits(X, y, alpha):
    """Fit every method of :func:`time_methods` once; per method the wall and CPU seconds
    of ``fit`` (``time.process_time``: the machine is shared), the iterations, whether
    LIBLINEAR warned that it stopped at its iteration cap (1000), CGVR's objective at the fitted
    point (``mean max(0, 1 - y z)^2 + (alpha/2)(||w||^2 + b^2)``) and the training AUC."""
    import time
    import warnings

    from sklearn.metrics import roc_auc_score

    ys = np.where(y == 1, 1.0, -1.0)
    rows = []
    for method, est in time_methods(alpha, len(y)).items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            wall, cpu = time.perf_counter(), time.process_time()
            est.fit(X, y)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        coef, b = est.coef_[0], float(np.atleast_1d(est.intercept_)[0])
        z = X @ coef + b
        f = np.mean(np.maximum(0.0, 1.0 - ys * z) ** 2) + 0.5 * alpha * (coef @ coef + b * b)
        rows.append({"method": method, "alpha": alpha, "wall_s": wall, "cpu_s": cpu,
                     "n_iter": int(np.max(est.n_iter_)),
                     # LIBLINEAR's warning that it stopped at max_iter=1000 (CGVR's rules
                     # are a fixed T or its own tol)
                     "hit_max_iter": method.startswith("LIBLINEAR") and any(
                         "converge" in str(w.message) for w in caught),
                     "objective": float(f), "train_auc": float(roc_auc_score(y, z))})
        del z
    return rows


def time_study(rows, alphas, on_dataset=None):
    """Run :func:`time_fits` on the stand-in of every dataset in `rows` (name -> number
    of rows) for every alpha, one data set in memory at a time; `on_dataset(results)` is
    called after each data set (to write partial results).  Returns a list of dicts."""
    import gc

    results = []
    for name, n in rows.items():
        X, y = paper_dense(name, n)
        for alpha in alphas:
            for row in time_fits(X, y, alpha):
                results.append({"dataset": name, "n": int(X.shape[0]),
                                "d": int(X.shape[1]), **row})
        del X, y
        gc.collect()
        if on_dataset is not None:
            on_dataset(results)
    return results
