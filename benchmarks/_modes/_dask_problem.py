"""The data, the objectives and the reference optima of ``bench_dask.py``.

Imported by the benchmark (skstoch's interpreter) and by the dask-ml peer (its own
interpreter, see ``benchmarks/README.md``): only numpy and dask, so both processes build the
same arrays on their own cluster (checked by :func:`checksum`) and evaluate the same
objective.  The data: :func:`make_data` (features with a spread-out spectrum, correlation
matrix of condition number about 1e3, see :data:`SPECTRUM_RANGE`).

The objectives are skstoch's, without intercept (``fit_intercept=False`` everywhere: dask-glm
penalises the intercept, skstoch does not; without one both minimise the same function):

* logistic: ``f(w) = (1/n) sum_i log(1 + exp(-s_i x_i . w)) + (alpha/2) ||w||^2``,
  ``s_i = 2 y_i - 1``, ``y_i`` in {0, 1};
* least squares: ``f(w) = (1/n) sum_i (y_i - x_i . w)^2 / 2 + (alpha/2) ||w||^2``.

dask-glm minimises ``sum_i loss_i + lamduh ||w||^2 / 2`` with ``lamduh = 1 / C`` and
``loss_i = log(1 + exp(x_i . w)) - y_i x_i . w`` (logistic) or ``(y_i - x_i . w)^2``
(Normal); :func:`dask_ml_scale` gives ``C`` and the factor between its objective and ``f``.
"""
import dask
import dask.array as da
import numpy as np

# Features: Gaussian with a spread-out spectrum, as standardized real features are (correlated,
# eigenvalues over several decades), from a standard construction: a random correlation
# matrix with a prescribed spectrum.  C = D^-1/2 Q diag(lam) Q^T D^-1/2, Q a Haar-random
# orthogonal matrix (QR of a Gaussian matrix, signs fixed), lam geometric from 1 to
# 1 / SPECTRUM_RANGE, D the diagonal of Q diag(lam) Q^T (unit variances, as after
# standardization); cond(C) = 1020 at d = 100 (983 at d = 20).  Not chosen by trying
# contenders on it.
SPECTRUM_RANGE = 1e3


def mixing(d, seed=0):
    """``A`` (d, d) with ``A^T A = C`` (above): rows ``z A`` of i.i.d. standard normal ``z``
    have correlation matrix ``C``.  numpy only (same in both interpreters)."""
    rng = np.random.default_rng([seed, 1])
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    Q = Q * np.sign(np.diag(R))
    lam = SPECTRUM_RANGE ** (-np.arange(d) / max(d - 1, 1))
    scale = np.sqrt(((Q ** 2) * lam).sum(axis=1))       # sqrt of diag(Q diag(lam) Q^T)
    return (np.sqrt(lam)[:, None] * Q.T) / scale[None, :]


def feature_condition(d, seed=0):
    """Condition number of the features' correlation matrix ``C`` (exact, from ``A``)."""
    A = mixing(d, seed)
    eig = np.linalg.eigvalsh(A.T @ A)
    return float(eig[-1] / eig[0])


def make_data(kind, n, d, chunk_rows, seed=0):
    """``(X, y)`` as lazy dask arrays (rows chunked by ``chunk_rows``, every column in a
    chunk), generated on the workers when computed, chunk by chunk from ``seed``.

    ``X = Z A`` (:func:`mixing`), ``Z`` i.i.d. standard normal; ``w_true`` i.i.d.
    ``N(0, 4 / d)``; logistic: ``y_i ~ Bernoulli(1 / (1 + exp(-x_i . w_true)))``; least
    squares: ``y_i = x_i . w_true + 0.5 e_i``, ``e_i`` standard normal."""
    rng = da.random.default_rng(seed)
    Z = rng.standard_normal((n, d), chunks=(chunk_rows, d))
    X = Z @ mixing(d, seed)
    w_true = np.random.default_rng(seed).standard_normal(d) * (2.0 / np.sqrt(d))
    margin = X @ w_true
    if kind == "logistic":
        u = rng.random(n, chunks=chunk_rows)
        y = (u < 1.0 / (1.0 + da.exp(-margin))).astype(np.float64)
    elif kind == "least_squares":
        y = margin + 0.5 * rng.standard_normal(n, chunks=chunk_rows)
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return X, y


def checksum(X, y):
    """A few sums identifying the data (compared across the two interpreters)."""
    sx, sy, sxy = dask.compute(X.sum(), y.sum(), (X[:, 0] * y).sum())
    return [float(sx), float(sy), float(sxy)]


def _chunk_pairs(X, y):
    xs = X.to_delayed().ravel().tolist()
    ys = y.to_delayed().ravel().tolist()
    if len(xs) != len(ys):
        raise ValueError("X must be chunked along rows only, like y")
    return list(zip(xs, ys))


def _sum_over_chunks(func, X, y, *args):
    parts = [dask.delayed(func)(xc, yc, *args) for xc, yc in _chunk_pairs(X, y)]
    return dask.delayed(_tree_sum)(parts).compute()


def _tree_sum(parts):
    total = parts[0]
    for part in parts[1:]:
        total = tuple(a + b for a, b in zip(total, part))
    return total


def _loss_sums(Xc, yc, W, kind):
    M = Xc @ W                                        # (rows, K)
    if kind == "logistic":
        losses = np.logaddexp(0.0, M) - yc[:, None] * M
    else:
        losses = 0.5 * (yc[:, None] - M) ** 2
    return (losses.sum(axis=0),)


def objectives(kind, X, y, W, alpha):
    """``f(w)`` for every column ``w`` of ``W`` (d, K): one pass over the data."""
    W = np.atleast_2d(np.asarray(W, dtype=np.float64).T).T
    (sums,) = _sum_over_chunks(_loss_sums, X, y, W, kind)
    return sums / X.shape[0] + 0.5 * alpha * (W ** 2).sum(axis=0)


def _newton_parts(Xc, yc, w):
    m = Xc @ w
    p = 1.0 / (1.0 + np.exp(-m))
    loss = np.logaddexp(0.0, m) - yc * m
    return (loss.sum(), Xc.T @ (p - yc), (Xc * (p * (1 - p))[:, None]).T @ Xc)


def _normal_parts(Xc, yc):
    return (Xc.T @ Xc, Xc.T @ yc, float(yc @ yc))


def reference(kind, X, y, alpha, max_iter=50):
    """The minimiser and minimum of ``f``: damped Newton (logistic: one pass per step, the
    gradient and Hessian summed over the chunks, to a Newton decrement below 1e-20) or the
    normal equations (least squares: one pass).  Neither contender is used."""
    n, d = X.shape
    if kind == "least_squares":
        xtx, xty, _ = _sum_over_chunks(lambda a, b: _normal_parts(a, b), X, y)
        w = np.linalg.solve(xtx / n + alpha * np.eye(d), xty / n)
        return w, float(objectives(kind, X, y, w, alpha)[0])
    w = np.zeros(d)
    f = None
    for _ in range(max_iter):
        loss, grad, hess = _sum_over_chunks(_newton_parts, X, y, w)
        f = loss / n + 0.5 * alpha * w @ w
        grad = grad / n + alpha * w
        hess = hess / n + alpha * np.eye(d)
        step = np.linalg.solve(hess, grad)
        decrement = float(grad @ step)
        if decrement < 1e-20:              # f within ~1e-20 of its minimum
            break
        t = 1.0
        while t > 1e-4:
            f_new = float(objectives(kind, X, y, w - t * step, alpha)[0])
            if f_new <= f - 0.25 * t * decrement:
                break
            t *= 0.5
        else:                              # rounding: no decrease left to find
            break
        w = w - t * step
    return w, float(objectives(kind, X, y, w, alpha)[0])


def dask_ml_scale(kind, n, alpha):
    """``(C, scale)``: dask-ml's ``C`` for skstoch's ``alpha``, and its objective / ``f``."""
    if kind == "logistic":
        return 1.0 / (n * alpha), float(n)
    return 1.0 / (2.0 * n * alpha), 2.0 * n


def first_reaching(values, target):
    """Index of the first value <= target, or None."""
    for i, value in enumerate(values):
        if value <= target:
            return i
    return None
