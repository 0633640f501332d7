"""The problem of ConstrainedLasso (paper 001, eq. 22): weighted least squares with a ridge
term under an l1-ball constraint, with the intercept eliminated exactly.

    F(w, b) = 1/(2 S) sum_i s_i (x_i.w + b - y_i)^2 + alpha ||w||^2,  ||w||_1 <= radius

:class:`LSProblem` holds the full-pass quantities every solver of the family needs
(objective, gradient, optimal intercept, Frank-Wolfe gap, multiplier estimates, row
curvatures); :func:`centered_matvecs` and :func:`gram_block` are the centered design and its
Gram matrix, never formed; :func:`sparse_gram_block` also returns a CSR X's columns.
"""
import math

import numpy as np
import scipy.sparse as sp

from .._fast._lasso import sparse_gram, sparse_gram_columns
from .._fast._s3gd import row_sqnorms
from ..utils._dataset import (WIDEN_ELEMENTS, dataset_matrix, full_margins,
                              full_transpose_product)
from ..utils._validation import max_abs
from ._projections import project_l1_ball
from ._step_size import row_curvature, squared_row_norms


def scale_error(X, what):
    """The ValueError raised when the scale of X makes the least-squares quantities
    overflow float64 (instead of a hang, a division by zero or a NaN fit)."""
    return ValueError(
        f"X is too large in magnitude for float64 (max |X| = {max_abs(X):.3g}): {what} "
        f"overflowed. Scale X, e.g. with sklearn.preprocessing.MaxAbsScaler or "
        f"StandardScaler, so that its squared row norms stay well below 1e308.")


def frank_wolfe_gap(grad, w, radius):
    """grad.w + radius ||grad||_inf: the Frank-Wolfe duality gap of the l1 ball at a
    feasible w, an upper bound on F(w) - F* for a convex F with gradient ``grad`` at w."""
    return float(grad @ w) + radius * float(np.max(np.abs(grad), initial=0.0))


def negligible_weights_to_zero(sw):
    """``sw`` with the weights below ``eps / n`` of the largest set to 0.

    Together they change no weighted sum in which the largest weight enters by more than
    float64's resolution, but when the heavy rows are fitted exactly (one weight 1e300 among
    ones: its row alone decides the objective) they alone set the scale of the Gram matrix,
    about 1e-300, far below the rounding of the heavy rows' centring (1e-16): the Lipschitz
    estimate is then rounding noise and FISTA's step overflows.  Weights of ordinary range
    are returned unchanged (the same array).
    """
    if sw.size == 0:
        return sw
    small = sw < float(sw.max()) * (np.finfo(np.float64).eps / sw.size)
    # weights that are already +0.0 (a fold's test rows, fitted in place) need no copy
    return (np.where(small, 0.0, sw) if sw.max() > 0 and np.any(sw[small].view(np.uint64))
            else sw)


class LSProblem:
    """Full-pass quantities of one output: objective, gradient, optimal intercept, gap.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    dataset : RowDataset
        The rows of X for the kernels.  When it stores float32 rows (a float32 X, read
        without a float64 copy), every product with X runs through it: each value is
        widened to double and the sums are taken in double.
    y, sample_weight : ndarray of shape (n_samples,)
    alpha, radius : float
    fit_intercept : bool
    with_xty : bool, default=False
        Also compute ``xty = Xc^T W yc / S`` (the exact solver's linear term); for a float64
        CSR X in the same pass over X as the column means (``X^T [s, s * yc]``).
    """

    def __init__(self, X, dataset, y, sample_weight, alpha, radius, fit_intercept,
                 with_xty=False):
        self.X = X
        self.dataset = dataset
        self.y = np.asarray(y, dtype=np.float64)
        sw = negligible_weights_to_zero(np.asarray(sample_weight, dtype=np.float64))
        self.sw = sw
        self.S = float(sw.sum())
        self.alpha = float(alpha)
        self.radius = float(radius)
        self.fit_intercept = bool(fit_intercept)
        self.float32 = dataset.dtype == np.float32
        self.xty = None
        with np.errstate(over="ignore", invalid="ignore"):
            self.y_mean = float(sw @ self.y) / self.S if fit_intercept else 0.0
            yc = self.y - self.y_mean
            u = sw * yc if with_xty else None
            if fit_intercept and with_xty and sp.issparse(X) and not self.float32:
                # one pass over a CSR X for both products (scipy applies X^T to the two
                # columns entry by entry in the same order as to one: each column as by
                # rmatvec).  Not for dense X: X^T [a, b] (gemm) took 3-5% longer than two
                # X^T a (gemv) on 1e6 x 100
                both = self.rmatvec2(np.column_stack([sw, u]))
                self.x_mean = both[:, 0] / self.S
                xtu = both[:, 1]
            else:
                self.x_mean = (self.rmatvec(sw) / self.S if fit_intercept
                               else np.zeros(X.shape[1]))
                xtu = self.rmatvec(u) if with_xty else None
            if with_xty:
                # the centered product Xc^T u = X^T u - x_mean sum(u), as centered_matvecs
                self.xty = (xtu - self.x_mean * float(u.sum())) / self.S
            # objective at w = 0 with the optimal intercept: the scale of tolerances
            self.f_zero = 0.5 * float(sw @ (yc * yc)) / self.S
        if not np.all(np.isfinite(self.x_mean)):
            raise scale_error(X, "the weighted column means of X")
        if not (math.isfinite(self.y_mean) and math.isfinite(self.f_zero)):
            raise ValueError(
                f"y is too large in magnitude for float64 (max |y| = "
                f"{float(np.max(np.abs(self.y), initial=0.0)):.3g}): the weighted sum of "
                f"squared residuals at w = 0 overflowed. Scale y (e.g. divide it by its "
                f"standard deviation).")
        self._row_sq = None
        self._cweight = None

    @property
    def cweight(self):
        """c_i = n s_i / S (made when a stochastic solver first reads it): it makes the
        uniformly sampled row's gradient unbiased."""
        if self._cweight is None:
            self._cweight = np.ascontiguousarray(self.sw * (self.X.shape[0] / self.S))
        return self._cweight

    def matvec(self, v):
        """``X @ v`` in float64 (a float32 X through its dataset: no float64 copy)."""
        if self.float32:
            return full_margins(self.dataset, v)
        return np.asarray(self.X @ v).ravel()

    def rmatvec(self, u):
        """``X.T @ u`` in float64 (a float32 X through its dataset: no float64 copy)."""
        if self.float32:
            return full_transpose_product(self.dataset, u)
        return np.asarray(self.X.T @ u, dtype=np.float64).ravel()

    def rmatvec2(self, U):
        """``X.T @ U`` for a float64 CSR X and U of shape (n_samples, m), one pass over X."""
        return np.asarray(self.X.T @ U, dtype=np.float64)

    def optimal_intercept(self, w):
        """The intercept minimizing F(w, .) (0 without ``fit_intercept``)."""
        return self.y_mean - float(self.x_mean @ w) if self.fit_intercept else 0.0

    def residual(self, w, b):
        return self.dataset.margins(np.ascontiguousarray(w, dtype=np.float64), b) - self.y

    def objective(self, w, b):
        r = self.residual(w, b)
        return 0.5 * float(self.sw @ (r * r)) / self.S + self.alpha * float(w @ w)

    def gradient(self, w, b):
        """Gradient in w at (w, b)."""
        r = self.residual(w, b)
        return self.rmatvec(self.sw * r) / self.S + 2.0 * self.alpha * w

    def gap(self, w, grad=None):
        """Frank-Wolfe duality gap at (w, optimal intercept): an upper bound on the
        suboptimality F(w) - F* for any feasible w (exact convexity bound)."""
        if grad is None:
            grad = self.gradient(w, self.optimal_intercept(w))
        return frank_wolfe_gap(grad, w, self.radius)

    def relative_gap(self, gap):
        """The stopping criterion of every solver: the gap divided by F(0) (the objective
        at w = 0 with its optimal intercept, half the weighted variance of y); an upper
        bound on (F(w) - F*) / F(0)."""
        if self.f_zero > 0:
            return gap / self.f_zero
        return 0.0 if gap <= 0 else math.inf

    def criteria(self, w, b=None):
        """``objective``, ``gap`` and ``relative_gap`` at (w, b) (b: the optimal intercept
        given w when None), from one residual pass and one transposed pass over X."""
        if b is None:
            b = self.optimal_intercept(w)
        r = self.residual(w, b)
        f = 0.5 * float(self.sw @ (r * r)) / self.S + self.alpha * float(w @ w)
        grad = self.rmatvec(self.sw * r) / self.S + 2.0 * self.alpha * w
        if self.fit_intercept:
            # the gradient at the optimal intercept: the residuals have weighted mean 0
            grad -= self.x_mean * (float(self.sw @ r) / self.S)
        gap = frank_wolfe_gap(grad, w, self.radius)
        return {"objective": f, "gap": gap, "relative_gap": self.relative_gap(gap)}

    def multiplier(self, w, grad=None):
        """Estimate of the constraint's Lagrange multiplier at a feasible w.

        At the optimum, -grad_j = nu sign(w_j) on the support, so nu = -grad.w / ||w||_1;
        0 when w is strictly inside the ball (the constraint is then inactive there).
        """
        norm1 = float(np.abs(w).sum())
        if not self.radius > 0 or norm1 < self.radius * (1.0 - 1e-9):
            return 0.0
        if grad is None:
            grad = self.gradient(w, self.optimal_intercept(w))
        return max(0.0, -float(grad @ w) / norm1)

    def multiplier_estimate(self, w):
        """The multiplier of the exact penalty for an Epro-SGD/ORDA epoch that starts at
        the feasible w (lam='auto').

        ``nu_step``: the multiplier implied by the projection of one exact line-search
        (Cauchy) step along -grad, t = g.g / g.H g (one more pass over X), i.e. the soft
        threshold that brings w - t g back onto the ball, divided by t (0 when the step
        stays inside the ball: the constraint looks inactive).  Strictly inside the ball
        (e.g. the start w = 0) it is the estimate; :meth:`multiplier` is 0 there even when
        the constraint is active at the optimum, and an epoch with lam = 0 is plain ridge SGD
        whose projected average is a different estimator (round 7).  On the boundary: the
        smaller of ``nu_step`` and :meth:`multiplier` (both equal the Lagrange multiplier at
        the optimum; a lam above it pulls the averaged iterate inside the ball, which the
        projection cannot undo, so the estimate errs low).
        """
        norm1 = float(np.abs(w).sum())
        if not self.radius > 0:
            return 0.0
        grad = self.gradient(w, self.optimal_intercept(w))
        on_boundary = norm1 >= self.radius * (1.0 - 1e-9)
        gg = float(grad @ grad)
        if not gg > 0:
            return 0.0
        mv, _ = centered_matvecs(self)
        Xg = mv(grad)
        gHg = float(self.sw @ (Xg * Xg)) / self.S + 2.0 * self.alpha * gg
        if not (gHg > 0 and math.isfinite(gHg)):
            return 0.0
        nu = step_multiplier(w, grad, self.radius, gg / gHg)
        if on_boundary:
            nu = min(nu, self.multiplier(w, grad))
        return nu

    def row_curvature(self, reduce):
        """``reduce`` ('max' or 'mean') over rows of c_i (||x_i||^2 + [fit_intercept]) +
        2 alpha: the inverse of a safe SGD step ('max'); the trace of the Hessian divided
        by n, an upper bound on its largest eigenvalue ('mean').

        Computed in float64 (a float32 X near its maximum would overflow in float32);
        raises ValueError naming the scale of X when it overflows float64.
        """
        if self._row_sq is None:
            if self.float32:
                self._row_sq = np.empty(self.X.shape[0])
                row_sqnorms(self.dataset, self._row_sq)    # one compiled pass, no copy of X
            else:
                self._row_sq = squared_row_norms(self.X)
        value = row_curvature(self._row_sq, self.cweight, intercept=self.fit_intercept,
                              ridge=2.0 * self.alpha, reduce=reduce)
        if not (math.isfinite(value) and (reduce == "max" or value > 0)):
            raise scale_error(self.X, "the squared row norms (the step-size bound)")
        return value


def step_multiplier(w, grad, radius, t):
    """The constraint's multiplier implied by one projected-gradient step from w:
    P(w - t grad) soft-thresholds w - t grad by theta; nu = theta / t (0 when w - t grad is
    inside the ball).  At the optimum it equals the Lagrange multiplier for every t > 0."""
    z = w - t * grad
    if not radius > 0 or np.abs(z).sum() <= radius:
        return 0.0
    p = project_l1_ball(z, radius)
    nz = p != 0
    theta = float(np.max(np.abs(z[nz]) - np.abs(p[nz]))) if np.any(nz) else \
        float(np.max(np.abs(z)))
    return max(theta, 0.0) / t


def constant_columns(problem, centred_gram_diagonal=None, chunk_elems=WIDEN_ELEMENTS):
    """The columns that take one value on every row of non-zero weight, with an intercept
    (none without: there a constant column is a feature).  Their centred values are exactly
    0, but the centred products (``X v - x_mean.v``, the Gram matrix) leave rounding noise
    there, which the exact path followed to any size (a constant X gave ConstrainedLassoCV
    a largest radius of 1.8e17 and coefficients of 1e9).  One pass over X in row chunks of
    about ``chunk_elems`` entries (column maxima and minima of the weighted rows; a CSR X's
    implicit zeros count where a column stores fewer entries than there are rows).

    ``centred_gram_diagonal`` (the diagonal of :func:`gram_block`, when already formed)
    restricts the pass to the columns whose centred variance is within 1000 times the
    rounding of its one-pass formula (n eps times the second moment): a constant column's
    is only that rounding, and ordinary data have no such column, so no pass at all (the
    pass cost 60% of the Gram matrix's time at 1e6 x 100)."""
    sw, d = problem.sw, problem.X.shape[1]
    if not problem.fit_intercept:
        return np.zeros(d, dtype=bool)
    if centred_gram_diagonal is not None:
        rounding = 1e3 * np.count_nonzero(sw) * np.finfo(np.float64).eps
        candidates = np.flatnonzero(centred_gram_diagonal <= rounding * (
            centred_gram_diagonal + problem.x_mean ** 2))
        constant = np.zeros(d, dtype=bool)
        if candidates.size:
            constant[candidates] = _constant_among(problem, candidates, chunk_elems)
        return constant
    return _constant_among(problem, None, chunk_elems)


def _constant_among(problem, cols, chunk_elems):
    """:func:`constant_columns` of the columns ``cols`` (None: all)."""
    X, sw = problem.X, problem.sw
    n = X.shape[0]
    sparse = sp.issparse(X)
    if sparse:
        X = dataset_matrix(problem.dataset)   # canonical: one stored entry per cell at most
    d = X.shape[1] if cols is None else len(cols)
    hi, lo = np.full(d, -np.inf), np.full(d, np.inf)
    stored = np.zeros(d, dtype=np.int64)
    per_row = max(X.nnz / max(n, 1), 1.0) if sparse else d
    step = max(1, int(chunk_elems // per_row))
    for start in range(0, n, step):
        block = X[start:start + step]
        weighted = sw[start:start + step] > 0
        if not weighted.all():
            block = block[weighted]
        if cols is not None:
            block = block[:, cols]
        if block.shape[0] == 0:
            continue
        if sparse:
            np.maximum.at(hi, block.indices, block.data)
            np.minimum.at(lo, block.indices, block.data)
            stored += np.bincount(block.indices, minlength=d)
        else:
            np.maximum(hi, block.max(axis=0), out=hi)
            np.minimum(lo, block.min(axis=0), out=lo)
    if sparse:
        implicit = stored < np.count_nonzero(sw > 0)
        hi[implicit] = np.maximum(hi[implicit], 0.0)
        lo[implicit] = np.minimum(lo[implicit], 0.0)
    return hi == lo


def centered_matvecs(problem):
    """Centered design operator Xc v and Xc^T u (Xc = X - 1 x_mean^T), never formed."""
    xm = problem.x_mean

    def mv(v):
        z = problem.matvec(v)
        z -= float(xm @ v)
        return z

    def rmv(u):
        return problem.rmatvec(u) - xm * float(u.sum())

    return mv, rmv


def gram_block(problem, cols, chunk_elems=1 << 22):
    """Centered, weighted Gram matrix of the columns ``cols``:
    Xc[:, cols]^T W Xc[:, cols] / S  with  Xc = X - 1 x_mean^T  (never formed).

    Dense X: row chunks of at most ``chunk_elems`` entries (BLAS syrk per chunk), so the
    extra memory is O(chunk + k^2) even for a column subset or sample weights.  A float32 X
    is never copied to float64: dense, widened in row chunks of ``WIDEN_ELEMENTS`` entries;
    CSR, read row by row in place by a compiled kernel (products and sums in double).
    """
    X, sw, S = problem.X, problem.sw, problem.S
    k = len(cols)
    all_cols = k == X.shape[1]
    unit = bool(np.all(sw == sw[0]))
    if sp.issparse(X) and X.dtype == np.float32:
        G = _sparse_gram_blocks(problem, cols)
    elif sp.issparse(X):
        Xs = (X if all_cols else X[:, cols]).astype(np.float64, copy=False)
        Xw = Xs.multiply(sw[:, None]).tocsr() if not unit else Xs * sw[0]
        G = np.asarray((Xs.T @ Xw).todense())
    else:
        G = np.zeros((k, k))
        if X.dtype == np.float32:
            chunk_elems = min(chunk_elems, WIDEN_ELEMENTS)
        step = max(1, chunk_elems // max(k, 1))
        root = np.sqrt(sw)
        # a float32 X read in place with rows of weight 0 (ConstrainedLassoCV's folds): only
        # the weighted rows are widened
        skip = X.dtype == np.float32 and not unit and not np.all(sw > 0)
        for start in range(0, X.shape[0], step):
            block = X[start:start + step]
            w = root[start:start + step]
            if skip:
                keep = w > 0
                block, w = block[keep], w[keep]
            if not all_cols:
                block = block[:, cols]
            block = block.astype(np.float64, copy=False)   # float32 X: accumulate in double
            if unit:
                Xb = block if sw[0] == 1.0 else block * root[0]
            else:
                Xb = block * w[:, None]
            G += Xb.T @ Xb
    G /= S
    xm = problem.x_mean[cols]
    G -= np.outer(xm, xm)
    return G


def _sparse_gram_blocks(problem, cols):
    """``X[:, cols]^T W X[:, cols]`` of a float32 CSR X from its dataset's rows in one
    compiled pass (each value widened to double, sums in double; no float64 copy of X)."""
    ds = problem.dataset
    col_pos = np.full(ds.n_features, -1, dtype=np.int32)
    col_pos[cols] = np.arange(len(cols), dtype=np.int32)
    G = np.zeros((len(cols), len(cols)))
    sparse_gram(ds, col_pos, np.ascontiguousarray(problem.sw), G)
    return G


def sparse_gram_block(problem, cols):
    """:func:`gram_block` of a CSR X (float64 or float32 rows, read in place) and the
    columns themselves, ``X[:, cols]`` as a float64 CSR matrix, from one compiled pass
    over the rows (scipy's column indexing and product took three passes)."""
    ds, n = problem.dataset, problem.X.shape[0]
    col_pos = np.full(ds.n_features, -1, dtype=np.int32)
    col_pos[cols] = np.arange(len(cols), dtype=np.int32)
    G = np.zeros((len(cols), len(cols)))
    indptr, indices, values = sparse_gram_columns(ds, col_pos, np.ascontiguousarray(problem.sw),
                                                  G)
    G /= problem.S
    xm = problem.x_mean[cols]
    G -= np.outer(xm, xm)
    return G, sp.csr_matrix((values, indices, indptr), shape=(n, len(cols)))
