"""Driver of multinomial Prox-SVRG, used by :class:`~skstoch.S3GDClassifier` for the log loss
with more than two classes (``multi_class='multinomial'``, the default for ``'hybrid'`` and
``'svrg'``).

``solve`` minimises over ``W`` (K, d) and ``b`` (K,)::

    F(W, b) = (1/n) sum_i s_i [log sum_k exp(z_ik) - z_{i y_i}]
              + lam1 ||W||_1 + (lam2/2) ||W||_F^2,        z_ik = x_i . w_k + b_k

(scikit-learn's multinomial ``LogisticRegression``; ``b`` unpenalised) by Prox-SVRG (Xiao &
Zhang 2014): each epoch is one pass of proximal mini-batch steps along variance-reduced
gradients in the compiled kernel (``skstoch._fast._multinomial``) over the rows in a random
order drawn once, read from a random offset (each row once per epoch), around the snapshot
of a full pass (exact objective, data gradient and probabilities of every row).  A float64
X is copied once in that order (read sequentially) and its full passes run in NumPy/BLAS;
a float32 X is read in place by the fused-type kernels (the epochs, which copy the rows of
the order a chunk at a time to a small buffer, and the full passes: ``rows_times``,
``rows_transpose_times``), each value widened to double, so a float32 fit allocates no
copy of X.  The step is ``2 / L_b``, eight
times Prox-SVRG's ``1 / (4 L_b)`` (``L_b`` as in the binary driver, with the curvature bound
1/2 of the softmax log loss; measured: user guide, "Multinomial log loss"), made safe by a
safeguard: an epoch whose exact objective does not decrease is undone and halves the step.
The stop is the binary driver's plateau rule, on the exact objective of each epoch's iterate.
On a Dask array the same epochs (``run_epochs``, ``inner_epoch``) run on gathered samples
(:mod:`.dask_multinomial`).
"""
import numpy as np
import scipy.sparse as sp

from .._fast._multinomial import (MultinomialTables, row_sqnorms, rows_times,
                                  rows_transpose_times, softmax_gradient, svrg_epoch)
from ..utils._validation import canonical_csr
from . import cgvr_multinomial
from ._monitor import DivergenceError
from ._result import SolverResult
from ._stationarity import SOFTMAX_ROUNDING, column_moments, gradient_ratio, warn_if_far
from ._step_size import expected_batch_smoothness, gram_spectrum, intercept_gram_bound
from ._stopping import Plateau
from .cgvr import CGVRParams
from .cgvr_multinomial import _row_pointers, _softmax_losses

__all__ = ["solve", "solve_cg"]

CURVATURE = 0.5        # ||diag(p) - p p^T||_2 <= 1/2
# eta0='auto' is 1 / (_STEP_FACTOR L_b), 8x Prox-SVRG's safe 1 / (4 L_b) (measured: user
# guide, "Multinomial log loss"); an epoch that does not decrease F is rejected and halves it
_STEP_FACTOR = 0.5
_MAX_REJECTED = 40
_CRITERION = "relative objective improvement of the last epoch"


# the line-search and safeguard settings of full-batch CG: CGVRClassifier's defaults
_CG_SETTINGS = dict(beta="PR+", line_search="full", inner_iter=1, batch_size=1, c1=1e-4,
                    c2=0.1, step_init=1.0, step_max=np.inf, ls_max_iter=20, zoom_max_iter=20,
                    restart="h", w_selection="last", init="zeros", eta0=1e-3,
                    regularize_intercept=False, safeguard=True)


def solve_cg(X, y, sample_weight, n_classes, params, monitor, seed, coef_init=None,
             intercept_init=None):
    """Fit the multinomial model with the l2 penalty (``params.lam1`` 0) by full-batch
    nonlinear CG, the driver of ``CGVRClassifier(solver='cg')``
    (:func:`.cgvr_multinomial.solve`): the same parameters and result as :func:`solve`;
    it stops when ``max |grad F| <= params.tol``, within ``params.max_iter`` CG steps."""
    if params.lam1 != 0.0:
        raise ValueError("full-batch CG fits the l2 penalty only; got an l1 part")
    cg = CGVRParams(loss="log_loss", alpha=params.lam2, solver="cg",
                    fit_intercept=params.fit_intercept, max_iter=params.max_iter,
                    tol=params.tol, **_CG_SETTINGS)
    return cgvr_multinomial.solve(X, y, sample_weight, n_classes, cg, monitor, seed,
                                  coef_init=coef_init, intercept_init=intercept_init)


def _softmax_lse(Z):
    """Row-wise softmax of Z (in place) and its log-sum-exp."""
    m = Z.max(axis=1, keepdims=True)
    Z -= m
    np.exp(Z, out=Z)
    s = Z.sum(axis=1, keepdims=True)
    Z /= s
    return Z, (m + np.log(s))[:, 0]


class _Problem:
    """Data, targets, weights and penalty of one multinomial fit; :meth:`snapshot` is the
    full pass."""

    def __init__(self, X, y, sample_weight, n_classes, params):
        self.X = X
        self.n, self.d = X.shape
        self.K = n_classes
        self.y = np.asarray(y, dtype=np.intp)
        self.sw = np.ascontiguousarray(sample_weight, dtype=np.float64)
        self.params = params
        if sp.issparse(X):
            self.rows = (X.data, X.indices.astype(np.int32, copy=False),
                         _row_pointers(X))
        else:
            self.rows = (X.ravel(), np.empty(0, np.int32), np.empty(0, np.int64))
        # float32 rows: every product with X runs in the kernels (numpy and scipy would
        # widen all of X to float64 in each product with a float64 operand)
        self.tables = (MultinomialTables(*self.rows, self.d, self.sw, 0, 1, 0.0, 0.0, False,
                                         False) if X.dtype == np.float32 else None)

    def times(self, M):
        """``X @ M`` (n, K) for a (d, K) ``M``."""
        if self.tables is None:
            return np.asarray(self.X @ M)
        out = np.empty((self.n, M.shape[1]))
        rows_times(self.tables, np.ascontiguousarray(M, dtype=np.float64), out)
        return out

    def transpose_times(self, R):
        """``X.T @ R`` (d, K), C-ordered, for an (n, K) ``R``."""
        if self.tables is None:
            return np.ascontiguousarray(self.X.T @ R)
        out = np.empty((self.d, R.shape[1]))
        rows_transpose_times(self.tables, np.ascontiguousarray(R, dtype=np.float64), out)
        return out

    def row_sqnorms(self):
        """``||x_i||^2`` of every row, accumulated in float64."""
        X = self.X
        if self.tables is not None:
            out = np.empty(self.n)
            row_sqnorms(self.tables, out)
            return out
        return (np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X)
                else np.einsum("ij,ij->i", X, X))

    def penalty(self, W):
        p = self.params
        return p.lam1 * float(np.abs(W).sum()) + 0.5 * p.lam2 * float(np.vdot(W, W))

    def full_pass(self, W, c):
        """Objective, probabilities P (n, K) and data gradients B (d, K), Bc (K,) at
        (W, c)."""
        n = self.n
        P = self.times(W)
        P += c
        losses = _softmax_losses(P, self.y)     # the margins' memory holds P
        loss = float(self.sw @ losses) / n
        if self.tables is not None:    # float32 rows: the gradient without the (n, K) R
            B, Bc = np.empty((self.d, self.K)), np.empty(self.K)
            softmax_gradient(self.tables, P, self.y, np.divide(self.sw, n, out=losses), B, Bc)
            if not self.params.fit_intercept:
                Bc[:] = 0.0
            return loss + self.penalty(W), P, B, Bc
        R = P.copy()
        R[np.arange(n), self.y] -= 1.0
        R *= (self.sw / n)[:, None]
        B = self.transpose_times(R)
        Bc = R.sum(axis=0) if self.params.fit_intercept else np.zeros(self.K)
        return loss + self.penalty(W), P, B, Bc

    def probabilities(self, W, c):
        """The softmax probabilities (n, K) of the rows at (W, c)."""
        Z = self.times(W)
        Z += c
        return _softmax_lse(Z)[0]

    def steps(self, seed, batch, step_factor=_STEP_FACTOR, n=None, row_max=None):
        """``(eta, eta_c)``: ``eta0`` (float) or ``2 / L_b`` with the binary driver's ``L_b``
        for the curvature bound 1/2; the intercept moves by ``eta s2`` (the intercept feature
        scaled to ``sqrt(s2)``, see ``s3gd._Run.batch_smoothness``).  ``n`` and
        ``row_max(s2) = max_i s_i (||x_i||^2 + s2)`` are this problem's unless given (a
        Dask fit: those of all rows, the spectrum estimated on a gathered sample)."""
        p = self.params
        if p.eta0 != "auto":
            return float(p.eta0), float(p.eta0)
        lam, mean_norm, mean_w = gram_spectrum(self.X, self.sw, seed)
        if p.fit_intercept:
            s2 = lam if lam > 0 else 1.0
            lam_aug = intercept_gram_bound(lam, mean_norm, mean_w, s2)
        else:
            s2, lam_aug = 1.0, lam
        if row_max is None:
            sq = self.row_sqnorms()

            def row_max(s2):
                return float(np.max(self.sw * (sq + s2)))

        L_max = CURVATURE * row_max(s2 if p.fit_intercept else 0.0)
        L = min(CURVATURE * lam_aug, L_max)
        L_b = max(expected_batch_smoothness(L, L_max, self.n if n is None else n, batch)
                  + p.lam2, 1e-12)
        eta = 1.0 / (step_factor * L_b)
        if not (np.isfinite(eta * s2) and eta > 0.0):
            raise DivergenceError(
                f"The automatic step (eta0='auto') of the multinomial fit is {eta:.3g}: the "
                f"scale of X (largest weighted squared row norm {row_max(0.0):.3g}) "
                f"overflows float64. Rescale X (e.g. StandardScaler) or pass a float eta0.")
        return eta, eta * s2


def _as_float64(X):
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        X.sort_indices()
        return X
    return np.ascontiguousarray(X, dtype=np.float64)


def _in_place(X):
    """A float32 X as the kernels read it, sharing its values: C-ordered, or checked
    canonical CSR."""
    return canonical_csr(X) if sp.issparse(X) else np.ascontiguousarray(X)


def solve(X, y, sample_weight, n_classes, params, monitor, seed, coef_init=None,
          intercept_init=None, step_factor=_STEP_FACTOR):
    """Fit the multinomial model by Prox-SVRG epochs (see the module docstring).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        float32: read in place; else copied in a random row order, as float64.
    y, sample_weight : ndarray of shape (n_samples,)
        Classes encoded 0..K-1 and weights.
    n_classes : int
    params : skstoch._solvers.s3gd.S3GDParams
    monitor : FitMonitor
        One record per epoch.
    seed : int
    coef_init, intercept_init : ndarray or None
        Warm start (K, d) and (K,).
    step_factor : float
        ``eta0='auto'`` is ``1 / (step_factor L_b)`` (the default 0.5 is the measured one,
        the user guide's table; the study is in git history:
        ``git show e14db7d:benchmarks/studies/s3gd_multinomial_step.py``).

    Returns
    -------
    SolverResult
        ``x`` the (K, d) coefficients, ``intercept`` the (K,) intercepts, ``n_iter`` the
        epochs run, ``extra["step_size"]`` the step.
    """
    rng = np.random.Generator(np.random.Philox(key=[seed, 2**32 + 11]))
    # the rows once in a random order: each epoch reads them from a random offset.  A float64
    # X is copied in that order (read sequentially, about twice as fast as a random order);
    # a float32 X is read in place, the epochs gathering the rows of the order by chunks
    perm = rng.permutation(X.shape[0])
    if X.dtype == np.float32:
        rows = perm
        prob = _Problem(_in_place(X), y, sample_weight, n_classes, params)
    else:
        rows = np.arange(X.shape[0], dtype=np.intp)
        prob = _Problem(_as_float64(X[perm]), np.asarray(y)[perm],
                        np.asarray(sample_weight)[perm], n_classes, params)
    n, d, K = prob.n, prob.d, n_classes
    W = np.zeros((d, K))
    c = np.zeros(K)
    if coef_init is not None:
        W[:] = np.asarray(coef_init, dtype=np.float64).T
        if params.fit_intercept:
            c[:] = intercept_init
    batch = min(params.batch_size, n)
    n_steps = -(-n // batch)
    lazy = params.lam1 == 0.0
    # a trial step overflows the margins before the safeguard rejects it
    with np.errstate(over="ignore", invalid="ignore"):
        eta, eta_c = prob.steps(seed, batch, step_factor)
        tables = MultinomialTables(*prob.rows, d, prob.sw, n_steps, batch, params.lam1,
                                   params.lam2, params.fit_intercept, lazy,
                                   prob.tables is not None)

        def epoch_step(kept, eta, eta_c):
            order = np.roll(rows, -int(rng.integers(n)))
            return inner_epoch(tables, order, kept, kept.P, kept.BX, eta, eta_c, lazy)

        def stationarity(kept):
            """The gradient ratio at the kept snapshot (one more full pass, from zero)."""
            _, _, B0, Bc0 = prob.full_pass(np.zeros((d, K)), np.zeros(K))
            return gradient_ratio((kept.B + params.lam2 * kept.W, kept.Bc), (B0, Bc0), kept.W,
                                  params.lam1, column_moments(prob.X), params.fit_intercept,
                                  negligible=SOFTMAX_ROUNDING)

        # the first snapshot is not held here: its (n, K) tables go once it is replaced
        return run_epochs(_Snapshot(prob, W, c, lazy), epoch_step,
                          lambda W, c: _Snapshot(prob, W, c, lazy, trial=True), eta, eta_c,
                          params, monitor, stationarity=stationarity)


def inner_epoch(tables, order, kept, P0, BX, eta, eta_c, lazy):
    """One epoch of the compiled kernel from the snapshot ``kept`` (``P0`` and ``BX``: its
    probabilities and ``X B`` of the rows ``tables`` holds): the new ``(W, c)``."""
    U, c = kept.W.copy(), kept.c.copy()
    scale = np.array([1.0, 0.0])
    svrg_epoch(tables, order, P0, BX, kept.B, kept.Bc, U, c, scale, eta, eta_c)
    return (scale[0] * U + scale[1] * kept.B if lazy else U), c


def run_epochs(kept, epoch_step, snapshot, eta, eta_c, params, monitor, columns=dict,
               stationarity=None):
    """The epochs from the snapshot ``kept``: ``epoch_step(kept, eta, eta_c) -> (W, c)``,
    ``snapshot(W, c)`` its full pass (``objective``, ``W``, ``c``, ``B``, ``Bc``), the
    safeguard, the records (plus ``columns()``) and the plateau stop (shared with the Dask
    fit); after a plateau stop, ``stationarity(kept)`` gives the gradient ratio of
    :func:`._stationarity.warn_if_far` (None: not checked)."""
    plateau = Plateau(params.tol, params.n_iter_no_change)
    n_iter, converged, rejected = 0, False, 0
    with np.errstate(over="ignore", invalid="ignore"):
        for epoch in range(params.max_iter):
            W, c = epoch_step(kept, eta, eta_c)
            n_iter = epoch + 1
            trial = snapshot(W, c)
            previous = kept.objective
            if trial.objective <= previous + 1e-12 * abs(previous):
                take_over = getattr(trial, "take_over", None)
                if take_over is not None:
                    take_over(kept)
                kept, counts = trial, True
            else:    # the safeguard: keep the previous iterate, halve the step
                trial = None     # its (n, K) tables go now
                rejected += 1
                eta, eta_c, counts = 0.5 * eta, 0.5 * eta_c, False
                if rejected > _MAX_REJECTED:
                    raise DivergenceError(
                        f"{monitor.solver_name} diverged: {rejected} epochs did not decrease "
                        f"the objective; decrease eta0.")
            stop = monitor.record(x=kept.W.T.copy(), iteration=n_iter, pass_fraction=1.0,
                                  step_size=eta, solver="svrg", objective=kept.objective,
                                  objective_kind="exact", rejected_epochs=rejected,
                                  **columns())
            if plateau.update(kept.objective, counts):
                converged = True
                break
            if stop:
                break
    monitor.finish(converged=converged, criterion=_CRITERION,
                   value=float(plateau.rel_improvement), tol=params.tol,
                   max_iter=params.max_iter)
    if converged and stationarity is not None:
        warn_if_far(stationarity(kept), monitor.solver_name, params.tol)
    return SolverResult(x=np.ascontiguousarray(kept.W.T), intercept=kept.c.copy(),
                        n_iter=n_iter, converged=converged,
                        criterion=float(plateau.rel_improvement), criterion_name=_CRITERION,
                        extra={"step_size": eta})


class _Snapshot:
    """An iterate with its full pass: exact objective, probabilities and data gradients
    (and ``BX = X B`` for the lazy kernel); a non-finite objective is ``inf``.

    ``BX`` of a trial snapshot (``trial=True``) is made when it replaces the kept one
    (:meth:`take_over`), after that one's (n, K) tables went: a fit holds three such
    tables at most (the kept ``P`` and ``BX``, the trial's ``P``), not four."""

    def __init__(self, prob, W, c, lazy, trial=False):
        self.W, self.c, self._prob, self._lazy = W, c, prob, lazy
        objective, self.P, self.B, self.Bc = prob.full_pass(W, c)
        self.objective = objective if np.isfinite(objective) else np.inf
        self.BX = None
        if not trial:
            self._make_bx()

    def _make_bx(self):
        lazy, prob = self._lazy, self._prob
        self.BX = (np.ascontiguousarray(prob.times(self.B))
                   if lazy and np.isfinite(self.objective) else np.empty((0, prob.K)))

    def take_over(self, kept):
        """Become the kept snapshot: ``kept``'s tables go, then this one's ``BX`` is made."""
        kept.P = kept.BX = None
        self._make_bx()
