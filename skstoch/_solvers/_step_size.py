"""Step-size rules shared by the solvers."""
import numpy as np
import scipy.sparse as sp

from ..utils._dataset import float64_row_blocks, rows_per_block


def stabilized_bb_step(dx, dg, *, inner_iter, epsilon, previous):
    """Stabilized Barzilai-Borwein step of paper 000 (eq. 14 with the 1/m factor of eq. 17).

    ``eta = ||dx||^2 / (m (|<dx, dg>| + epsilon ||dx||^2))`` with ``dx`` the change of the
    snapshot and ``dg`` the change of the full gradient between two epochs and ``m`` the number
    of inner iterations.  ``epsilon = 0`` is the paper's SBB0 (BB with an absolute value);
    ``epsilon > 0`` bounds the step by ``1 / (m epsilon)`` (eq. 15).

    Guards (paper note §2.2): when ``dx`` is zero, or ``epsilon = 0`` and the curvature
    ``<dx, dg>`` vanishes, or the result is not finite and positive, the previous step is kept.

    Returns
    -------
    step : float
    used_previous : bool
        True when a guard kept the previous step.
    """
    dx = np.ravel(dx)
    dg = np.ravel(dg)
    sq = float(dx @ dx)
    denom = inner_iter * (abs(float(dx @ dg)) + epsilon * sq)
    if sq == 0.0 or denom == 0.0:
        return previous, True
    step = sq / denom
    if not np.isfinite(step) or step <= 0.0:
        return previous, True
    return step, False


def rayleigh_power_iteration(matvec, v0, n_iter=30, rtol=0.0):
    """Largest eigenvalue of a symmetric positive semi-definite operator by power iteration.

    ``matvec(v)`` applies the operator; ``v0`` (overwritten) is the start.  Returns the
    Rayleigh quotient after ``n_iter`` products (a lower bound; 0 if the iterate vanishes,
    inf if it overflows),
    or earlier, once two successive quotients differ by at most ``rtol`` times the last
    (``rtol > 0``).
    """
    v = v0
    lam = 0.0
    # an operator near the float64 maximum overflows here: return inf (the callers check
    # for it) instead of a garbage quotient and a warning per product
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(n_iter):
            norm = np.linalg.norm(v)
            if not np.isfinite(norm) and np.all(np.isfinite(v)):
                # the squares overflow from entries of about 1e154 on: scale v first
                v = v / np.max(np.abs(v))
                norm = np.linalg.norm(v)
            if norm == 0:
                break
            if not np.isfinite(norm):
                return np.inf
            v /= norm
            u = matvec(v)
            previous, lam = lam, float(v @ u)
            if not np.isfinite(lam):
                return np.inf
            v = u
            if rtol > 0.0 and abs(lam - previous) <= rtol * lam:
                break
    return lam


def squared_row_norms(X):
    """||x_i||^2 of every row of a dense or CSR ``X``, accumulated in float64 (the squares
    of a float32 X near its maximum overflow float32, not float64); inf where they overflow.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        if sp.issparse(X):
            # row sums of squares from a running sum (a few times faster than bincount over
            # repeated row ids; absolute error ~ eps * sum, enough for a step bound)
            data = X.data.astype(np.float64, copy=False)
            csum = np.concatenate([[0.0], np.cumsum(data * data)])
            return csum[X.indptr[1:]] - csum[X.indptr[:-1]]
        return np.einsum("ij,ij->i", X, X, dtype=np.float64)


def row_curvature(row_sqnorms, weights, *, intercept=False, ridge=0.0, reduce="max"):
    """Curvature of a sampled squared-loss row: weights_i (||x_i||^2 + [intercept]) + ridge.

    ``reduce="max"``: its largest value, the inverse of an SGD step that is stable for every
    row (the safe row step); ``reduce="mean"``: its mean, the trace of the full objective's
    Hessian divided by n, an upper bound on the Hessian's largest eigenvalue.  ``weights``
    are the sampling weights (c_i = n s_i / S, so that a uniformly sampled row is unbiased),
    ``intercept`` adds the intercept's unit feature, ``ridge`` the ridge term's curvature.
    The value may be inf when the rows overflow (the caller names the cause).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        if reduce == "max":
            return float(np.max(weights * (row_sqnorms + intercept), initial=0.0)) + ridge
        return float(weights @ (row_sqnorms + intercept)) / row_sqnorms.shape[0] + ridge


def safe_sgd_step(max_curvature, alpha=0.0):
    """1 / ``max_curvature`` (1 when it is 0), and at most 0.49 / alpha for a ridge term
    alpha ||w||^2 (no factor 1/2), so that the ridge contraction 1 - 2 eta alpha stays
    positive (at least 0.02)."""
    step = 1.0 / max_curvature if max_curvature > 0 else 1.0
    if alpha > 0:
        step = min(step, 0.49 / alpha)
    return step


def expected_batch_smoothness(L, L_max, n, batch):
    """Expected smoothness of mini-batches of ``batch`` samples drawn without replacement
    (b-nice sampling, Gower et al. 2019, Prop. 3.8):
    ``L_b = [n (b - 1) L + (n - b) L_max] / (b (n - 1))``, with ``L`` the smoothness of the
    average loss and ``L_max`` the largest per-sample smoothness (``L_max`` when n = 1)."""
    if n > 1:
        return (n * (batch - 1) * L + (n - batch) * L_max) / (batch * (n - 1))
    return L_max


def intercept_gram_bound(lam, mean_norm, mean_w, s2):
    """Upper bound of the largest eigenvalue of the Gram matrix ``[X, s 1]^T S [X, s 1] / n``
    of the data with an intercept column scaled by ``s`` (``s2 = s^2``).

    The matrix is ``[[G, s m], [s m^T, s^2 mean_w]]`` with ``lam = lambda_max(G)``,
    ``G = X^T S X / n``, ``mean_norm = ||m||``, ``m = X^T s / n``, ``mean_w`` the mean weight;
    its largest eigenvalue is at most that of the 2 x 2 matrix of the block norms.
    """
    off = np.sqrt(s2) * mean_norm
    tr = lam + s2 * mean_w
    with np.errstate(over="ignore", invalid="ignore"):
        det = lam * s2 * mean_w - off * off
        bound = 0.5 * (tr + np.sqrt(max(tr * tr - 4.0 * det, 0.0)))
    if np.isfinite(bound):
        return bound
    # the products overflow from entries of |X| about 1e77 on: the same eigenvalue as
    # (a + c) / 2 + hypot((a - c) / 2, b)
    return 0.5 * tr + float(np.hypot(0.5 * (lam - s2 * mean_w), off))


def strongly_convex_sgd_schedule(L_max, mu, n):
    """``(eta0, mu)`` of per-sample SGD steps ``eta_t = 1 / (1 / eta0 + mu t)`` over a pass
    of ``n`` samples.

    ``eta0 = 1 / (2 L_max)`` is the classical safe step of per-sample SGD on an
    ``L_max``-smooth loss; ``mu`` (a strong convexity estimate) gives the ``1 / (mu t)``
    schedule of strongly convex SGD, and is raised to ``1 / (eta0 n)`` so that the step at
    least halves over the pass.
    """
    eta0 = 1.0 / (2.0 * max(L_max, 1e-12))
    return eta0, max(mu, 1.0 / (eta0 * n))


GRAM_SUBSAMPLE = 20_000   # rows of gram_spectrum's estimate
GRAM_EXACT_MAX = 500      # up to this many features: exact eigenvalue of the subsample Gram


def gram_spectrum(X, sw, seed, rtol=1e-3):
    """Largest eigenvalue of ``X^T diag(sw) X / n``, ``||X^T sw / n||`` and ``mean(sw)``.

    Estimated on a uniform subsample of ``GRAM_SUBSAMPLE`` rows (all rows when n is
    smaller): an unbiased estimate of the matrix, whose largest eigenvalue is biased
    upwards (lambda_max is convex), so a step derived from it errs on the safe side.  Up to
    ``GRAM_EXACT_MAX`` features the subsample Gram matrix is formed and its eigenvalue is
    exact; above, :func:`rayleigh_power_iteration` (successive quotients within ``rtol``, at
    most 100 products) started from the weighted mean row plus a random part (for
    non-negative data such as text the mean row is close to the top eigenvector, and the
    iteration stops after a few products).  A non-finite estimate is returned as ``inf``.
    X is read in float64 blocks of about ``WIDEN_ELEMENTS`` entries (:func:`rows_per_block`;
    for a sparse X, stored entries): a float32 X is widened a block at a time and the Gram
    matrix's weighted rows are formed a block at a time, so the memory beyond X is a block,
    not a copy of X (the power iteration, which reads the subsample many times, gathers it
    once).  The blocks also keep a dense X's products in cache.
    """
    n, d = X.shape
    rng = np.random.RandomState(seed % (2**32))
    rows = np.sort(rng.choice(n, GRAM_SUBSAMPLE, replace=False)) if n > GRAM_SUBSAMPLE else None
    ws = sw if rows is None else sw[rows]
    s = ws.shape[0]
    exact = d <= GRAM_EXACT_MAX
    source, picked = (X[rows], None) if rows is not None and not exact else (X, rows)
    step = rows_per_block(source)

    def block_sum(product):
        """``product(Xb, positions)`` summed over the float64 row blocks of the subsample
        (one block, X itself, for a float64 X of at most ``step`` rows)."""
        if picked is None and s <= step and source.dtype == np.float64:
            return product(source, slice(None))
        return sum(product(block, positions)
                   for positions, block in float64_row_blocks(source, rows=picked))

    mean_row = block_sum(lambda Xb, b: np.asarray(Xb.T @ ws[b]).ravel())
    mean_norm = float(np.linalg.norm(mean_row)) / s
    if exact:
        root = np.sqrt(ws)

        def gram(Xb, b):
            if sp.issparse(Xb):
                Y = sp.diags(root[b]) @ Xb
                return (Y.T @ Y).toarray()
            Y = Xb * root[b, np.newaxis]
            return Y.T @ Y          # symmetric rank-k product (much faster than a general one)
        G = block_sum(gram)
        G /= s
        lam = float(np.linalg.eigvalsh(G)[-1]) if np.all(np.isfinite(G)) else np.inf
    else:
        v = rng.standard_normal(d)
        v /= np.linalg.norm(v)
        mnorm = mean_norm * s
        if mnorm > 0.0 and np.isfinite(mnorm):
            v = mean_row / mnorm + 0.1 * v
        lam = rayleigh_power_iteration(
            lambda u: block_sum(lambda Xb, b: np.asarray(Xb.T @ (ws[b] * (Xb @ u))).ravel()) / s,
            v, 100, rtol)
        lam = lam if np.isfinite(lam) else np.inf
    return max(lam, 0.0), mean_norm, float(ws.mean())


def probe_curvature(gradient, x0, *, relative_step=1e-4):
    """Curvature ``|<dx, dg>| / |dx|^2`` along a small step down the gradient at ``x0``.

    ``dx = -delta g0`` with ``delta = relative_step * max(|x0|, 1e-12) / |g0|``, and ``dg`` the
    change of the gradient over it: the denominator of a Barzilai-Borwein step probed before
    the first iteration (paper 000 gives no first step; OrdinalEmbedding uses it for ``eta0``
    and ``epsilon='auto'``).

    Parameters
    ----------
    gradient : callable
        ``gradient(x) -> (value, grad)``; called twice.
    x0 : ndarray
        The starting point.
    relative_step : float
        Length of the probe step relative to ``|x0|``.

    Returns
    -------
    kappa : float
        The curvature, or 0 when the probe is degenerate (zero or non-finite gradient,
        non-finite curvature).
    """
    _, g0 = gradient(x0)
    gnorm = np.linalg.norm(g0)
    if gnorm == 0.0 or not np.isfinite(gnorm):
        return 0.0
    delta = relative_step * max(np.linalg.norm(x0), 1e-12) / gnorm
    dx = -delta * g0
    _, g1 = gradient(x0 + dx)
    sq = float(np.vdot(dx, dx))
    kappa = abs(float(np.vdot(dx, g1 - g0))) / sq
    return kappa if np.isfinite(kappa) else 0.0


def curvature_step(kappa, epsilon):
    """The stabilized BB step ``1 / (kappa + epsilon)`` at a probed curvature ``kappa``
    (eq. 14 of paper 000 with ``|<dx, dg>| / |dx|^2 = kappa``, before the ``1/m`` of eq. 17).

    Returns 1 when ``kappa + epsilon`` is not positive and finite (a degenerate probe).
    """
    denom = kappa + epsilon
    return 1.0 / denom if denom > 0.0 and np.isfinite(denom) else 1.0


def decaying_step(eta0, iteration, decay):
    """The step ``eta0 / (1 + decay * iteration)`` of a decaying SGD schedule."""
    return eta0 / (1.0 + decay * iteration)


def step_schedule(learning_rate, eta0, power_t, theta, n_iter):
    """The steps gamma_0, ..., gamma_{T-1} of a stochastic functional-gradient schedule.

    ``"constant"``: ``eta0``; ``"invscaling"``: ``eta0 / (t + 1)^power_t``; ``"theory"``:
    ``theta / T^(3/4)`` (paper 003, Theorems 1-2), which must be at most 1 (ValueError
    otherwise).
    """
    if learning_rate == "theory" and theta > n_iter ** 0.75:
        raise ValueError(
            f"learning_rate='theory' uses step theta / T^(3/4), which must be at most 1: "
            f"theta={theta} is larger than T^(3/4)={n_iter ** 0.75:.4g} for T={n_iter}."
        )
    t = np.arange(n_iter, dtype=np.float64)
    if learning_rate == "constant":
        return np.full(n_iter, float(eta0))
    if learning_rate == "invscaling":
        return eta0 / (t + 1.0) ** power_t
    return np.full(n_iter, theta / n_iter ** 0.75)


def row_loss_step(n_rows, weight, *, row_step=0.2, cap=0.02):
    """Constant step for a loss weighted ``weight`` as a mean over ``n_rows`` rows.

    ``min(cap, row_step * n_rows / weight)``: each row (weight ``weight / n_rows``) gets the
    loss step ``row_step``, and the step is at most ``cap`` (with shrinkage ``1 - step`` per
    iteration, a memory of about ``1 / cap`` iterations).
    """
    return min(cap, row_step * n_rows / weight)


def cap_steps(steps, curvature):
    """``min(steps, 1 / (1 + curvature))``: the update ``f <- (1 - g) f - g grad`` of a term of
    curvature ``curvature`` (plus the unit-curvature regulariser) is stable for
    ``g (1 + curvature) < 2``; the cap keeps every step within that with a margin of 2."""
    return np.minimum(steps, 1.0 / (1.0 + curvature))
