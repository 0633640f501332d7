"""Semi-supervised kernel SVM trained by triply stochastic functional gradients.

Reference: X. Geng, B. Gu, X. Li, W. Shi, G. Zheng, H. Huang, "Scalable Semi-Supervised SVM
via Triply Stochastic Gradients", IJCAI 2019 (arXiv 1907.11584), Algorithms 1 and 2.

The front end: it validates the input, resolves the parameters into a
:class:`~skstoch._solvers.tsg.TSGParams` and calls the driver
:func:`skstoch._solvers.tsg.solve` (the gamma="cv" selection calls the same driver).
"""
import sys
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ._solvers import FitMonitor, row_loss_step, step_schedule, tsg
from ._solvers._tsg_gamma_cv import select_gamma
from .utils import AtomicFitMixin, check_allocation, seed_from_random_state, validate_data
from .utils._dataset import float64_row_blocks
from .utils._validation import (check_fitted_array, check_squared_distances, fitted_n_heads,
                                fitted_state_error, is_integer, is_positive_real, max_abs)
from .utils._warnings import warn

# random features cached automatically when they take less than this many bytes
_AUTO_CACHE_BYTES = 256 * 2**20
# unlabeled rows used for the balance constraint and the convergence test (all when fewer)
_PROBE_SIZE = 2048
# n_restarts="auto": fits after the first while none has converged (3 in all at most)
_AUTO_RETRIES = 2

__all__ = ["S3VMClassifier", "labeled_accuracy_score", "labeled_accuracy_scorer"]


def _unlabeled_mask(y, name="y"):
    """True where ``y`` is -1 (unlabeled); a string array holds no -1, so no row there.

    The string ``'-1'`` is refused rather than read as a class: it marks unlabeled rows only
    by mistake (scikit-learn's SelfTrainingClassifier refuses string ``y`` for this reason)."""
    y = np.asarray(y)
    if y.ndim == 0:
        raise ValueError(f"{name} must be a 1-D array of labels, got a scalar ({y!r})")
    if y.dtype.kind in "USO":
        marker = (y == "-1") | (y == b"-1") if y.dtype.kind == "O" else (
            y == ("-1" if y.dtype.kind == "U" else b"-1"))
        if np.any(marker):
            raise ValueError(
                f"{name} contains the string '-1' ({int(np.sum(marker))} rows): unlabeled rows "
                f"are marked with the integer -1; use an object array holding -1 for them and "
                f"string labels for the others (as SelfTrainingClassifier documents).")
    if y.dtype.kind in "US":
        return np.zeros(y.shape[0], dtype=bool)
    return np.asarray(y == -1, dtype=bool).reshape(-1)


def _labels(y_labeled):
    """The labeled rows' labels; booleans held in an object array (beside -1, as
    make_semisupervised returns a boolean y) as a boolean array: scikit-learn's label
    checks call an object array of booleans 'unknown'."""
    if y_labeled.dtype.kind == "O" and all(isinstance(v, (bool, np.bool_))
                                            for v in y_labeled):
        return y_labeled.astype(bool)
    return y_labeled


def _reject_missing_labels(y):
    """NaN, None or pandas.NA in ``y``: the usual way to write a missing label in pandas,
    but the unlabeled marker here is -1 (scikit-learn's semi-supervised convention); the
    generic "contains NaN" / "Unknown label type" errors would not say so."""
    if not hasattr(y, "__len__") or isinstance(y, str):
        return
    pd = sys.modules.get("pandas")
    try:
        values = np.asarray(y)
    except (TypeError, ValueError):
        return
    if values.dtype.kind == "f":
        missing = np.isnan(values)
    elif values.dtype.kind == "O":
        missing = (np.asarray(pd.isna(values), dtype=bool) if pd is not None else
                   np.array([v is None or (isinstance(v, float) and v != v)
                             for v in values.ravel()], dtype=bool))
    else:
        return
    if np.any(missing):
        raise ValueError(
            f"y holds {int(np.sum(missing))} missing labels (NaN / None): S3VMClassifier "
            f"marks unlabeled rows with -1 (scikit-learn's semi-supervised convention, as "
            f"LabelSpreading and SelfTrainingClassifier); replace them with -1, for example "
            f"y.fillna(-1) for a pandas Series.")


def labeled_accuracy_score(y_true, y_pred, *, sample_weight=None):
    """Accuracy on the labeled rows of a semi-labelled ``y_true`` (rows with -1 are ignored).

    scikit-learn's semi-supervised convention marks unlabeled rows with ``y == -1``; their
    class is unknown, so they are neither right nor wrong. This is
    :func:`sklearn.metrics.accuracy_score` restricted to the rows where ``y_true != -1``.
    :meth:`S3VMClassifier.score` uses it, so ``GridSearchCV`` and ``cross_val_score`` with
    their default scoring work on semi-labelled ``y``; :data:`labeled_accuracy_scorer` is the
    same metric as a scorer for any estimator (``scoring=labeled_accuracy_scorer``).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, -1 for unlabeled rows.
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    sample_weight : array-like of shape (n_samples,), default=None

    Returns
    -------
    score : float
        Fraction (weighted by ``sample_weight``) of the labeled rows predicted right.

    Raises
    ------
    ValueError
        If ``y_true`` has no labeled row (the accuracy is undefined).

    Examples
    --------
    >>> from skstoch.semi_supervised import labeled_accuracy_score
    >>> labeled_accuracy_score([0, 1, -1, -1], [0, 1, 0, 0])
    1.0
    """
    from sklearn.metrics import accuracy_score

    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    labeled = ~_unlabeled_mask(y_true, "y_true")
    if y_pred.ndim == 0 or y_true.shape[0] != y_pred.shape[0]:
        raise ValueError(f"y_true and y_pred have different lengths: {y_true.shape[0]} and "
                         f"{y_pred.shape[:1]}")
    # a column vector is read as accuracy_score reads it; other 2-D labels are refused
    y_true, y_pred = column_or_1d(y_true), column_or_1d(y_pred)
    if not labeled.any():
        raise ValueError("y_true has no labeled rows (every entry is -1, the marker of "
                         "unlabeled rows): the accuracy on labeled rows is undefined.")
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight)
        if sample_weight.shape != (labeled.shape[0],):
            raise ValueError(f"sample_weight must be a 1-D array with one weight per row of "
                             f"y_true ({labeled.shape[0]}), got shape {sample_weight.shape}")
        sample_weight = sample_weight[labeled]
    return float(accuracy_score(_labels(y_true[labeled]), y_pred[labeled],
                                sample_weight=sample_weight))


def _make_labeled_accuracy_scorer():
    from sklearn.metrics import make_scorer

    return make_scorer(labeled_accuracy_score)


#: :func:`labeled_accuracy_score` as a scikit-learn scorer (``scoring=`` of GridSearchCV,
#: cross_validate, ...): accuracy on the rows whose label is not -1.
labeled_accuracy_scorer = _make_labeled_accuracy_scorer()


def _float32_variance(X):
    """The variance of all entries of a float32 X (dense or CSR), summed in float64 a block
    of rows at a time: numpy would compute it in float32 with a temporary of X's size."""
    if hasattr(X, "toarray"):
        data = X.data
        total = X.shape[0] * X.shape[1]
        mean = float(np.sum(data, dtype=np.float64)) / total
        return float(np.einsum("i,i->", data, data, dtype=np.float64)) / total - mean ** 2
    mean = sum(float(Xb.sum()) for _, Xb in float64_row_blocks(X)) / max(X.size, 1)
    return sum(float(((Xb - mean) ** 2).sum()) for _, Xb in float64_row_blocks(X)) / \
        max(X.size, 1)


def _entries_vary(X):
    """Whether the entries of X (dense or CSR) are not all equal: a variance of 0 then
    underflowed."""
    if hasattr(X, "toarray"):
        if X.nnz < X.shape[0] * X.shape[1]:     # zeros are entries too
            return bool(np.any(X.data != 0))
        X = X.data
    return X.size > 0 and X.min() != X.max()


def _head_targets(y_enc, n_classes):
    """+-1 targets of the heads, (n, n_heads): one head (class 1 positive) for two classes,
    else one-vs-rest per class (``y_enc`` are class indices)."""
    if n_classes == 2:
        return np.ascontiguousarray(np.where(y_enc == 1, 1.0, -1.0)[:, None])
    return np.where(y_enc[:, None] == np.arange(n_classes)[None, :], 1.0, -1.0)


def _check_feature_magnitude(X, gamma):
    """Reject X whose random-feature arguments omega . x (omega ~ N(0, 2 gamma I)) would
    overflow float64, bounding |omega_j| by 40 standard deviations: the fit would end in
    non-finite coefficients and blame the step size."""
    largest = max_abs(X)
    with np.errstate(over="ignore"):
        bound = np.float64(largest) * (40.0 * np.sqrt(2.0 * gamma)) * X.shape[1]
    if not np.isfinite(bound):
        raise ValueError(
            f"X is too large in magnitude for gamma={gamma:.3g} (max |X| = {largest:.3g}): "
            "the random features' arguments omega . x would overflow float64; scale X "
            "(e.g. with StandardScaler).")


def _fit_sigmoid_slope(scores, Y):
    """argmin_a 1/2 a^2 + sum log(1 + exp(-y a f)) over a in [1e-3, 1e3] (scores, Y: (n_l, K))."""
    from scipy.optimize import minimize_scalar

    margins = (scores * Y).ravel()

    def objective(a):
        return 0.5 * a * a + np.logaddexp(0.0, -a * margins).sum()

    res = minimize_scalar(objective, bounds=(1e-3, 1e3), method="bounded",
                          options={"xatol": 1e-6})
    return float(res.x)


class S3VMClassifier(ClassifierMixin, AtomicFitMixin, BaseEstimator):
    """Semi-supervised kernel SVM by triply stochastic gradients (default: TSGS3VM + Laplacian).

    The default (``solver="tsg_laplacian"``) is *not* the paper's method: it minimises
    TSGS3VM's objective (Geng et al., IJCAI 2019) plus a Laplacian (manifold) term, under a
    class-balance constraint with an intercept, with ``C* = 0.3 C`` ramped up over the first
    30 % of the iterations. ``solver="tsgs3vm"`` runs the paper's objective and C* rule
    exactly (Algorithm 1, errata fixed).

    With ``f(x) = sum_i alpha_i^T phi_i(x) + b``, the default solves

    .. math::

        \\min_{f \\in \\mathcal{H},\\, b} \\frac12 \\|f - b\\|_{\\mathcal{H}}^2
        + \\frac{C}{n_l} \\sum_{(x, y) \\in L} \\max(0, 1 - y f(x))
        + C^* \\, \\mathbb{E}_{x \\sim U}\\, u(f(x))
        + \\gamma_M \\frac{1}{|E|} \\sum_{(a, c) \\in E} (f(x_a) - f(x_c))^2

        \\text{s.t.} \\quad \\frac{1}{|P|} \\sum_{x \\in P} f(x)
        = \\frac{1}{n_l} \\sum_{(x, y) \\in L} y

    where ``u`` is ``unlabeled_loss`` (symmetric hinge ``max(0, 1 - |r|)`` by default),
    ``C* = 0.3 C`` (``C_star="auto"``), ``E`` the directed ``n_neighbors``-nearest-neighbour
    graph of the labeled rows and the unlabeled pool, ``gamma_M = manifold_weight`` (30),
    ``P`` the probe set (up to 2048 unlabeled rows) and ``b = intercept_`` (one per head). U is
    the unlabeled pool (``unlabeled_pool`` rows drawn once), L the labeled rows (at most
    ``unlabeled_pool`` of them drawn once). ``solver="tsgs3vm"`` solves the paper's

    .. math::

        \\min_{f \\in \\mathcal{H}} \\frac12 \\|f\\|_{\\mathcal{H}}^2
        + \\frac{C}{n_l} \\sum_{(x, y) \\in L} \\max(0, 1 - y f(x))
        + C^* \\, \\mathbb{E}_{x \\sim U}\\, u(f(x)),
        \\qquad C^* = C \\, n_l / n_u

    over all labeled and unlabeled rows, with no Laplacian term, no balance constraint, no
    intercept, no C* warm-up, no averaging and no restarts (``manifold_weight``,
    ``n_neighbors``, ``class_balance``, ``C_star_warmup``, ``unlabeled_pool``, ``average`` and
    ``n_restarts`` are ignored). Both use the RBF kernel ``exp(-gamma ||x - x'||^2)``, the
    budget (``n_components``, ``batch_size``, ``max_iter``), the step (``learning_rate``,
    ``eta0``) and the stopping rule (``tol``) given; the paper's own budget is
    ``n_components="sqrt", max_iter="one_pass", tol=None``.

    Each iteration samples a batch of labeled
    points, a batch of unlabeled points and a fresh block of random Fourier features (three
    sources of randomness; the default adds a batch of graph edges), and adds one block of
    coefficients while shrinking the older ones
    (Algorithm 1). The features of block ``i`` are a pure function of ``(seed_, i)`` in
    skstoch's counter-based generator, so prediction regenerates them bit for bit
    (Algorithm 2) and the model stores only ``alpha_`` (``max_iter * n_components`` numbers
    per head), unless ``store_random_features`` caches them.

    Following scikit-learn's semi-supervised convention, rows with ``y == -1`` are unlabeled
    and ``classes_`` holds the labels of the labeled rows only. **Labels {-1, +1} are therefore
    not usable as is**: every -1 would be read as unlabeled; encode them as {0, 1} first.

    Parameters
    ----------
    C : float or "auto", default="auto"
        Weight of the *mean* labeled hinge loss (the paper's objective), so each labeled row
        weighs ``C / n_labeled``. "auto" is ``10 * n_labeled``: every labeled row weighs 10,
        as in ``SVC(C=10)``; a float is used as given (``SVC(C=c)`` on n_l rows is
        ``C = c * n_l`` here).
    solver : {"tsg_laplacian", "tsgs3vm"}, default="tsg_laplacian"
        The objective (see above): "tsg_laplacian" (default) is TSGS3VM's objective plus the
        Laplacian term, the balance constraint and the intercept, with the C* warm-up, pools,
        optional averaging and restarts; "tsgs3vm" is the paper's objective and C* rule
        exactly (``manifold_weight``, ``n_neighbors``, ``class_balance``, ``C_star_warmup``,
        ``unlabeled_pool``, ``average`` and ``n_restarts`` are then ignored).
    C_star : float or {"auto", "equal", "paper"}, default="auto"
        Weight of the expected unlabeled loss. With ``solver="tsgs3vm"``, "auto" is the
        paper's rule ``C * n_labeled / n_unlabeled``. Otherwise "auto" is ``0.3 * C`` (the unlabeled term
        weighs 0.3 of the labeled one: best on our benchmark among 0.3 C and C, and less prone
        to collapse); "equal" uses ``C``; "paper" is the paper's rule
        ``C * n_labeled / n_unlabeled``, which in practice turns the unlabeled term off
        (its weight is 1e-2 to 1e-5 of the labeled one). ``0`` gives the supervised
        random-feature SVM of Dai et al. (2014).
    gamma : float, "scale" or "cv", default="cv"
        RBF kernel coefficient. "scale" is ``1 / (n_features * X.var())`` as in ``SVC``.
        "cv" (the default; the paper cross-validates gamma) picks among "scale" x 1/4, 1/2,
        1, 2 and 4 (wider and narrower kernels) by stratified 3-fold cross-validation over
        the labeled rows (held-out labels become unlabeled rows; score: held-out mean hinge
        loss; exact ties go to the widest kernel, i.e. the smallest gamma).
        It runs only when there are at least 20 labeled rows, at least 3 per class and some
        unlabeled rows; otherwise it falls back to "scale" at no extra cost. When it runs it
        costs 15 extra fits (5 values x 3 folds) with the same parameters, budget
        (``max_iter``, ``n_restarts``) and seed before the final fit; on more than 2048 rows
        the CV runs on a uniform random subsample of 2048 rows drawn from the seed (labeled
        and unlabeled rows drawn separately, each kind keeping at least half when it has
        that many), so its cost does not grow with n: about 16 times the time of
        ``gamma="scale"`` on small data, about 3 times from 10^4 rows on (2M x 20 half
        labeled: 33 s CPU in all); pass ``gamma="scale"`` to skip it. On the development protocol
        the CV raised mean accuracy from 97.03 % ('scale') to 97.32 % with the grid 1/4..4,
        lowering no setting (user guide). The chosen value is ``gamma_``, the CV losses ``gamma_cv_scores_``.
    unlabeled_loss : {"hinge", "squared_hinge", "ramp", "exp"}, default="hinge"
        Unlabeled loss u: symmetric hinge max(0, 1 - |r|) (the paper's experiments), its
        square, the symmetric ramp of Collobert et al. with plateau at ``ramp_s``, or the
        smooth ``exp(-5 r^2)``. Derivatives are the corrected ones (see the user guide).
    ramp_s : float, default=-0.3
        Ramp parameter s < 0 (only for ``unlabeled_loss="ramp"``).
    n_components : int or "sqrt", default=64
        Random features per iteration (m). "sqrt" is the paper's ``ceil(sqrt(n_samples))``.
    batch_size : int, default=256
        Labeled and unlabeled points sampled (with replacement) per iteration, each side.
    max_iter : int or "one_pass", default=300
        Number of iterations T (blocks). "one_pass" is the paper's ``ceil(n_samples /
        batch_size)``; training costs O(batch_size * n_components * d * T^2), so one pass
        over millions of points is expensive (see the user guide).
    learning_rate : {"constant", "invscaling", "theory"}, default="constant"
        Step-size schedule: ``eta0`` (the paper's experiments), ``eta0 / (t + 1)^power_t``,
        or the paper's theory ``theta / T^(3/4)``. Every step must lie in (0, 1].
    eta0 : float or "auto", default="auto"
        Initial (constant) step size, in (0, 1]. "auto" is ``min(0.02, 0.2 * n_labeled / C,
        0.2 * n_pool / C_star)``, ``n_pool`` the unlabeled rows the batches are drawn from
        (``min(n_unlabeled, unlabeled_pool)``; ``n_unlabeled`` for ``solver="tsgs3vm"``):
        0.02 at the default C (the shrinkage keeps about 50 blocks, so the fit is stationary
        after ~150 iterations whatever the number of labels), and the loss step per labeled
        row ``eta0 * C / n_labeled`` and per unlabeled row ``eta0 * C_star / n_pool`` is at
        most 0.2 for larger C or C_star. A step too large for C and C_star makes f overflow
        float64: ``DivergenceError`` (a ``ValueError``).
    power_t : float, default=0.5
        Exponent of "invscaling".
    theta : float, default=1.0
        Constant of the "theory" schedule; needs ``theta <= T^(3/4)``.
    store_random_features : bool or "auto", default="auto"
        Keep the random features (``max_iter * n_components * (n_features + 1)`` floats) to
        predict faster; False regenerates them from the seed (the paper's O(T m) memory).
        "auto" caches them when they take less than 256 MiB.
    class_balance : bool, default=True
        Enforce the balance constraint ``mean f(x) over unlabeled rows = mean y over labeled
        rows`` (per head) of Chapelle & Zien (2005): every feature block is centred on the
        probe set (the unlabeled rows, or 2048 of them drawn once when there are more) and
        the model gets the intercept ``intercept_``. Not in the paper (which has neither an
        intercept nor a balance constraint and can put every unlabeled point in one class);
        False is the paper's model.
    C_star_warmup : float in [0, 1], default=0.3
        Ramp ``C_star`` linearly from 0 over this fraction of ``max_iter`` (annealing, as in
        Joachims' TSVM), so the labeled term shapes f before the non-convex unlabeled term
        acts; 0 uses ``C_star`` from the first iteration (the paper).
    tol : float or None, default=1e-3
        Stopping criterion: the history column ``probe_change``, the fraction of probe rows
        (unlabeled rows, see ``unlabeled_pool``) whose predicted class changed since the
        previous record. The fit stops at the first record where ``probe_change`` is below
        ``max(tol, 1.5 / n_probe)`` at this record and at the previous one (the floor allows
        one changed row per record on probe sets of fewer than ``1.5 / tol`` rows), not
        before the ``C_star`` warm-up ends nor before ``2 / eta0`` iterations (the memory of
        the constant step). A ConvergenceWarning is raised when ``max_iter`` is reached
        first (saying that the test never ran when ``max_iter`` is below its first
        iteration). None runs ``max_iter`` iterations (the paper), and so does 0 (it has no
        floor, and no change is below 0), without a warning. Needs unlabeled rows.
    record_every : int, default=10
        Record the history, print (verbose), call the callback and test convergence every
        ``record_every`` iterations and after the last one.
    unlabeled_pool : int or None, default=8192
        Unlabeled rows drawn once (without replacement, from the seed) to sample the
        unlabeled batches from; f is cached on them, so an iteration costs
        ``O(pool * n_components * d)`` whatever n. Its first 2048 rows are the probe set of
        the balance constraint and the convergence test. None samples from all unlabeled
        rows (the paper), which costs ``O(batch_size * i * n_components * d)`` at iteration
        i once there are too many rows to cache f on. The labeled rows get the same bound:
        when there are more than ``unlabeled_pool``, that many are drawn once and are the
        labeled rows of the fit (batches, cached f, kNN graph, objective estimate and
        calibration; the balance target ``mean_l y`` uses every label), so the cost of a fit
        is linear in n whatever the labeled fraction.
    n_restarts : int or "auto", default="auto"
        Fits with different seeds (restart r uses ``seed + r * 0x9E3779B97F4A7C15``); the
        one with the lowest training objective estimate is kept (``restart_objectives_``),
        a standard remedy for the non-convex unlabeled term. Costs ``n_restarts`` fits;
        ignored without unlabeled term. "auto" fits once and, while no fit has passed the
        stopping test (``tol``) by ``max_iter`` but the last one came near it, up to twice
        more with the next seeds, keeping the converged fit (else the lowest objective
        estimate): a fit whose probe labels keep changing a little has its boundary in a
        dense region (a local minimum of the unlabeled term) or has not finished moving it
        there (on 10^5 two-moons rows with 20 labels, 5 of 20 seeds, see the user guide).
        "Near" means ``probe_change`` below 10 times the test's threshold
        ``max(tol, 1.5 / n_probe)`` at two consecutive records after the test's minimum
        iteration; a fit whose labels keep flipping more than that is dominated by its own
        stochastic noise (a boundary through dense data, e.g. 15-20 % of the probe labels
        per record on the half-labeled 20-D rows of the scaling benchmark), which any seed
        reproduces, so it is not refitted. It costs nothing when the first fit converges;
        it does not retry when ``tol`` is None or 0, when ``max_iter`` is below the
        test's minimum (``max(C_star_warmup * max_iter, 2 / eta0)``) or after the
        ``callback`` stopped the fit, and the gamma CV's fold fits are never retried.
    average : bool, default=False
        Return the average of the iterates instead of the last one: polynomial-decay
        averaging (Shamir & Zhang 2013; after t iterates the average moves toward the t-th
        by ``4 / (t + 3)``, which puts 94% of the weight on the last half of the
        iterates), maintained online at the cost of one more ``alpha``-sized array. It
        averages out the SGD and random-feature noise of the constant step; the
        convergence test still watches the last iterate. Not in the paper.
    manifold_weight : float, default=30.0
        Weight gamma_M of a Laplacian (manifold) regularizer as in LapSVM (Belkin,
        Niyogi & Sindhwani 2006): ``manifold_weight`` times the mean
        of ``(f(x_a) - f(x_b))^2`` over the directed ``n_neighbors``-nearest-neighbour graph
        of the labeled rows and the unlabeled pool (built once with
        ``sklearn.neighbors.NearestNeighbors``; O((n_l + pool) k) memory, never n x n).
        Its gradient is estimated on ``batch_size`` edges drawn per iteration (a fourth
        source of randomness), with f on the same random-feature blocks. Not in the paper:
        0 is the paper's objective and builds no graph. The default 30 was chosen on a
        development protocol disjoint from the benchmark (highest mean accuracy among 0, 10,
        30, 100; see the user guide). Every step is capped at ``1 / (1 + L_M)`` with
        ``L_M = 4 gamma_M max_edge (1 - exp(-gamma ||x_a - x_b||^2))``, the term's curvature
        bound, so large weights cannot make the iteration diverge.
    n_neighbors : int, default=10
        k of the graph (used only when ``manifold_weight > 0``).
    random_state : int, RandomState instance or None, default=None
        Seeds the counter-based generator that draws batches and features.
    verbose : int, default=0
        Print one line per record.
    callback : callable or None, default=None
        Called with each record; a true return value stops the fit.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Labels of the labeled rows.
    alpha_ : ndarray of shape (n_iter_, n_heads, n_components_)
        Coefficients of the feature blocks (one head for two classes, else one per class).
    n_iter_ : int
        Number of iterations run, i.e. of blocks fitted (the last ``history_["iteration"]``).
    n_components_ : int
    gamma_ : float
    gamma_cv_scores_ : ndarray of shape (5,) or None
        Held-out hinge losses of gamma="cv" for "scale" x 1/4, 1/2, 1, 2, 4 (None when not
        run).
    C_ : float
        The labeled weight used.
    C_star_ : float
        The unlabeled weight used.
    eta0_ : float
        The first step size: ``eta0`` (resolved when "auto"), or ``theta / T^(3/4)`` with
        ``learning_rate="theory"``.  Every step is in ``step_sizes_``.
    intercept_ : ndarray of shape (n_heads,)
        Added to f: ``mean_l y - sum_i alpha_i^T mu_i`` with the balance constraint (mu_i the
        mean of block i's features on the probe set), else 0.
    step_sizes_ : ndarray of shape (n_iter_,)
        The step of each iteration.
    seed_ : int
        Seed of the counter-based generator (of the kept restart); features of block i are
        regenerated from (seed_, i).
    restart_objectives_ : ndarray of shape (n_runs,)
        Training objective estimate of each fit made (``n_restarts``, or 1 to 3 with
        "auto"): ``1/2 sum_i ||alpha_i||^2`` (the norm
        of f in the space of its random features) ``+ C`` mean labeled hinge on all labeled
        rows ``+ C*`` mean unlabeled loss on the probe set.
    n_labeled_, n_unlabeled_ : int
    random_weights_ : ndarray of shape (n_iter_, n_components_, n_features_in_) or None
        Cached frequencies omega (None when regenerated).
    random_offset_ : ndarray of shape (n_iter_, n_components_) or None
    calibration_slope_ : float
        Slope a of the sigmoid ``P = 1 / (1 + exp(-a f))`` fitted on the labeled rows
        (``predict_proba``).
    history_ : dict of ndarray
        One entry per record (every ``record_every`` iterations and after the last one; of
        the kept restart): ``iteration`` (blocks fitted so far; ``n_iter_`` is the last one);
        ``objective``, the batch estimate of the objective's two data terms at ``f`` before
        the iteration's block is added: ``C`` times the mean labeled hinge on the iteration's
        labeled batch plus ``C_star`` times the mean unlabeled loss on its unlabeled batch
        (means over the batch and the heads; the full ``C_star``, also during the warm-up).
        It leaves out ``1/2 ||f||^2`` and the Laplacian term, so it is not the restart
        objective of ``restart_objectives_``. Then ``labeled_loss`` and ``unlabeled_loss``
        (the two terms), ``manifold_loss`` (the Laplacian term on the iteration's batch of
        edges; only when ``manifold_weight > 0``), ``step_size``, ``probe_change`` (fraction
        of probe labels changed since the previous record; nan at the first record and
        without a probe set) and ``time`` (seconds since ``fit`` started, the gamma CV
        included).
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    Differences from the paper (``solver="tsg_laplacian"``; ``solver="tsgs3vm"`` keeps only
    the budget, step, stopping and gamma choices below): the Laplacian term
    (``manifold_weight=30`` on a kNN graph, a fourth source of randomness); the class-balance
    constraint and the intercept
    (``class_balance=True``; the paper has neither); ``C="auto"`` scales with the number of
    labels; the default ``C_star`` is 0.3 C (the paper's rule ``"paper"`` switches the
    unlabeled term off) ramped up over the first 30% of the iterations; the step is 0.02;
    unlabeled batches come from a bounded random pool of the unlabeled rows; the default runs
    at most 300 iterations of 64 features, stopped by a label-flip test, rather than one pass
    of ``sqrt(n)`` features, and a fit that fails that test but came near it is retried with
    other seeds (``n_restarts="auto"``); ``gamma`` is cross-validated over the labeled rows by
    default (``gamma="cv"``, a 5-point grid scored by the held-out hinge, as the paper's CV but
    automatic and only from 20 labels on);
    more than two classes are handled by one-vs-rest heads that share batches and features
    (the paper is binary); ``predict_proba`` is a Platt calibration on the labeled rows (the
    paper has none).

    References
    ----------
    .. [1] X. Geng, B. Gu, X. Li, W. Shi, G. Zheng and H. Huang, "Scalable Semi-Supervised
       SVM via Triply Stochastic Gradients", IJCAI 2019, pp. 2364-2370 (arXiv:1907.11584).
    .. [2] O. Chapelle and A. Zien, "Semi-Supervised Classification by Low Density
       Separation", AISTATS 2005 (the class-balance constraint).

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from skstoch import S3VMClassifier
    >>> from skstoch.datasets import make_semisupervised
    >>> X, y = make_moons(500, noise=0.1, random_state=0)
    >>> y_semi, _ = make_semisupervised(y, n_labeled=10, random_state=0)
    >>> clf = S3VMClassifier(gamma=5.0, random_state=0).fit(X, y_semi)
    >>> clf.score(X, y) > 0.95
    True
    """

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "solver": [StrOptions({"tsg_laplacian", "tsgs3vm"})],
        "C_star": [Interval(Real, 0, None, closed="left"), StrOptions({"auto", "equal", "paper"})],
        "gamma": [Interval(Real, 0, None, closed="neither"), StrOptions({"scale", "cv"})],
        "unlabeled_loss": [StrOptions({"hinge", "squared_hinge", "ramp", "exp"})],
        "ramp_s": [Interval(Real, None, 0, closed="neither")],
        "n_components": [Interval(Integral, 1, None, closed="left"), StrOptions({"sqrt"})],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), StrOptions({"one_pass"})],
        "learning_rate": [StrOptions({"constant", "invscaling", "theory"})],
        "eta0": [Interval(Real, 0, 1, closed="right"), StrOptions({"auto"})],
        "power_t": [Interval(Real, 0, None, closed="left")],
        "theta": [Interval(Real, 0, None, closed="neither")],
        "store_random_features": ["boolean", StrOptions({"auto"})],
        "class_balance": ["boolean"],
        "C_star_warmup": [Interval(Real, 0, 1, closed="both")],
        "tol": [Interval(Real, 0, None, closed="left"), None],
        "record_every": [Interval(Integral, 1, None, closed="left")],
        "unlabeled_pool": [Interval(Integral, 1, None, closed="left"), None],
        "n_restarts": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "average": ["boolean"],
        "manifold_weight": [Interval(Real, 0, None, closed="left")],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "callback": [callable, None],
    }

    def __init__(self, C="auto", *, solver="tsg_laplacian", C_star="auto", gamma="cv", unlabeled_loss="hinge",
                 ramp_s=-0.3, n_components=64, batch_size=256, max_iter=300,
                 learning_rate="constant", eta0="auto", power_t=0.5, theta=1.0,
                 store_random_features="auto", class_balance=True, C_star_warmup=0.3,
                 tol=1e-3, record_every=10, unlabeled_pool=8192, n_restarts="auto",
                 average=False, manifold_weight=30.0, n_neighbors=10, random_state=None,
                 verbose=0, callback=None):
        self.C = C
        self.solver = solver
        self.C_star = C_star
        self.gamma = gamma
        self.unlabeled_loss = unlabeled_loss
        self.ramp_s = ramp_s
        self.n_components = n_components
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.power_t = power_t
        self.theta = theta
        self.store_random_features = store_random_features
        self.class_balance = class_balance
        self.C_star_warmup = C_star_warmup
        self.tol = tol
        self.record_every = record_every
        self.unlabeled_pool = unlabeled_pool
        self.n_restarts = n_restarts
        self.average = average
        self.manifold_weight = manifold_weight
        self.n_neighbors = n_neighbors
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    # -- labels --------------------------------------------------------------------------------
    def _split_labels(self, y):
        y = np.asarray(y)
        # a string array cannot hold the integer -1: every row is labeled (use an object
        # array with -1 for unlabeled rows, as SelfTrainingClassifier documents)
        unlabeled = _unlabeled_mask(y)
        y_lab = _labels(y[~unlabeled])
        if y_lab.shape[0] == 0:
            raise ValueError(
                "y has no labeled rows: every entry is -1 (the marker of unlabeled rows). "
                "S3VMClassifier needs labeled rows of at least 2 classes."
            )
        check_classification_targets(y_lab)
        classes, y_enc = np.unique(y_lab, return_inverse=True)
        if classes.shape[0] < 2:
            hint = ""
            if unlabeled.any():
                hint = (" Note that -1 marks unlabeled rows: with labels {-1, +1} every -1 is "
                        "read as unlabeled; encode the classes as {0, 1} instead.")
            raise ValueError(
                f"S3VMClassifier needs labeled rows of at least 2 classes, but the labeled rows "
                f"contain only one class: {np.asarray(classes[0]).item()!r}.{hint}"
            )
        return unlabeled, classes, y_enc

    # -- fit -------------------------------------------------------------------------------------
    def fit(self, X, y):
        """Fit the model on labeled and unlabeled rows.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (dense or CSR).  float32 is read in place by the kernels (each
            value widened to double; no float64 copy of X).
        y : array-like of shape (n_samples,)
            Labels, with -1 for unlabeled rows.

        Returns
        -------
        self : S3VMClassifier
        """
        self._validate_params()
        monitor = FitMonitor(type(self).__name__, verbose=self.verbose, callback=self.callback)
        _reject_missing_labels(y)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             order="C")
        unlabeled, classes, y_enc = self._split_labels(y)
        if self.solver == "tsg_laplacian" and self.manifold_weight > 0:
            check_squared_distances(
                X, "needed by the kNN graph of the Laplacian term (manifold_weight > 0)",
                "scale X (e.g. with StandardScaler) or set manifold_weight=0")
        problem = tsg.TSGProblem(
            X=X, labeled_rows=np.flatnonzero(~unlabeled).astype(np.int64),
            Y=_head_targets(y_enc, classes.shape[0]),
            unlabeled_rows=np.flatnonzero(unlabeled).astype(np.int64),
            seed=seed_from_random_state(self.random_state))
        n_l, n_u = problem.labeled_rows.shape[0], problem.unlabeled_rows.shape[0]
        if n_u == 0:
            warn("y contains no unlabeled samples (-1): S3VMClassifier fits a supervised "
                 "random-feature SVM (C_star is not used).", UserWarning)
        # a regenerated feature block is (n_components, width): sparse X keeps only the
        # columns that hold an entry
        width = X.shape[1] if not hasattr(X, "toarray") else max(1, np.unique(X.indices).size)
        gamma, cv_scores = self._resolve_gamma(problem, y_enc, width)
        _check_feature_magnitude(X, gamma)
        params, eta0 = self._resolve(X.shape, n_l, n_u, gamma, width=width)
        result = tsg.solve(problem, params, monitor)
        # tol=0 never stops early (no change is below 0): a fixed budget, as tol=None
        if params.tol and n_u > 0 and not monitor.stopped_by_callback:
            T = params.step_sizes.shape[0]
            if not tsg.can_converge(params):
                small = (" (eta0='auto' is below 0.02 when C or C_star is large)"
                         if self.eta0 == "auto" and eta0 < 0.02 else "")
                warn(
                    f"S3VMClassifier did not converge: the stopping test never ran, because "
                    f"max_iter={T} is below its first iteration, max(C_star_warmup * "
                    f"max_iter, 2 / first step) = {tsg.min_stop_iter(params):.4g} (first "
                    f"step {params.step_sizes[0]:.3g}{small}). Increase max_iter to at least "
                    f"that or the step, or pass tol=None for a fixed budget.",
                    ConvergenceWarning)
            else:
                monitor.finish(converged=result.converged, criterion=result.criterion_name,
                               value=result.criterion, tol=params.tol, max_iter=T)
        fitted = dict(
            classes_=classes, n_labeled_=n_l, n_unlabeled_=n_u, C_=params.C,
            C_star_=params.C_star, gamma_=gamma, gamma_cv_scores_=cv_scores,
            n_components_=params.n_components, eta0_=float(params.step_sizes[0]),
            seed_=result.extra["seed"],
            restart_objectives_=result.extra["restart_objectives"], n_iter_=result.n_iter,
            intercept_=result.intercept, alpha_=result.x,
            step_sizes_=result.extra["step_sizes"],
            random_weights_=result.extra["random_weights"],
            random_offset_=result.extra["random_offset"], history_=monitor.history(),
            # Platt slope on the labeled rows (for predict_proba), from f kept by the fit
            calibration_slope_=_fit_sigmoid_slope(result.extra["f_labeled"],
                                                  result.extra["Y_labeled"]))
        for name, value in fitted.items():
            setattr(self, name, value)
        return self

    def _resolve_gamma(self, problem, y_enc, width):
        """gamma_ and the CV losses (None unless gamma="cv" ran)."""
        if self.gamma not in ("scale", "cv"):
            return float(self.gamma), None
        X = problem.X
        if X.dtype == np.float32:
            var = _float32_variance(X)
        elif hasattr(X, "toarray"):
            var = float(X.multiply(X).mean() - X.mean() ** 2)   # as SVC
        else:
            var = float(X.var())
        if not np.isfinite(var):
            raise ValueError("X is too large: the feature variance used by gamma='scale' "
                             "overflows float64; scale X (e.g. StandardScaler).")
        with np.errstate(divide="ignore", over="ignore"):
            scale = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
        if not np.isfinite(scale) or (var == 0 and _entries_vary(X)):
            raise ValueError(
                f"X is too small in magnitude for gamma={self.gamma!r} (max |X| = "
                f"{max_abs(X):.3g}): its variance ({var:.3g}) underflows float64, so "
                f"1 / (n_features * X.var()) cannot be computed; scale X (e.g. with "
                f"StandardScaler).")
        if self.gamma == "scale":
            return scale, None

        def make_params(n_l, n_u, gamma):
            # the fold fits are never retried (n_restarts="auto"): the CV cost stays bounded
            return self._resolve(X.shape, n_l, n_u, gamma, retries=False, width=width)[0]

        return select_gamma(problem, y_enc, scale, make_params)

    def _resolve(self, shape, n_l, n_u, gamma, retries=True, width=None):
        """The driver parameters for ``n_l`` labeled and ``n_u`` unlabeled rows of an X of
        shape ``shape``, and eta0 (``retries=False``: none, whatever ``n_restarts``)."""
        n_samples, n_features = shape
        C = 10.0 * n_l if self.C == "auto" else float(self.C)
        paper = self.solver == "tsgs3vm"
        if n_u == 0:
            C_star = 0.0
        elif self.C_star == "auto":
            C_star = C * n_l / n_u if paper else 0.3 * C
        elif self.C_star == "equal":
            C_star = C
        elif self.C_star == "paper":
            C_star = C * n_l / n_u
        else:
            C_star = float(self.C_star)
        m = (int(np.ceil(np.sqrt(n_samples))) if self.n_components == "sqrt"
             else int(self.n_components))
        T = (int(np.ceil(n_samples / self.batch_size)) if self.max_iter == "one_pass"
             else int(self.max_iter))
        # eta0="auto": each labeled row, and each unlabeled row the batches are drawn from,
        # gets the loss step 0.2 at most, and the step is at most 0.02 (a memory of about 50
        # blocks, so the fit is stationary by ~150 blocks)
        if self.eta0 == "auto":
            eta0 = row_loss_step(n_l, C)
            if C_star > 0:
                pool = None if paper else self.unlabeled_pool
                eta0 = min(eta0, row_loss_step(n_u if pool is None else min(n_u, pool), C_star))
        else:
            eta0 = float(self.eta0)
        if self.store_random_features == "auto":
            cache = T * m * (n_features + 1) * 8 <= _AUTO_CACHE_BYTES
        else:
            cache = bool(self.store_random_features)
        # at least one block of m coefficients and one step size per iteration, and the
        # cached blocks or the one regenerated block (of ``width`` used columns)
        width = n_features if width is None else width
        blocks = T * m * (n_features + 1) if cache else m * (width + 1)
        n_restarts = 1 if paper or self.n_restarts == "auto" else int(self.n_restarts)
        retries = _AUTO_RETRIES if retries and not paper and self.n_restarts == "auto" else 0
        # a fit holds at most 3 runs: the best, the best converged and the one running
        held = min(3, n_restarts + retries)
        check_allocation(8 * (held * (T * (m + 1) + blocks) + 3 * int(self.batch_size)),
                         f"max_iter={T}, n_components={m}, batch_size={self.batch_size}, "
                         f"n_features={n_features}, n_restarts={self.n_restarts}")
        params = tsg.TSGParams(
            C=C, C_star=C_star, loss=self.unlabeled_loss, ramp_s=float(self.ramp_s),
            step_sizes=step_schedule(self.learning_rate, eta0, self.power_t, self.theta, T),
            batch_size=int(self.batch_size), n_components=m, kernel_gamma=gamma,
            cache_features=cache, balance=False if paper else bool(self.class_balance),
            probe_size=_PROBE_SIZE, tol=None if self.tol is None else float(self.tol),
            record_every=int(self.record_every),
            warmup=0.0 if paper else float(self.C_star_warmup),
            pool_size=None if paper else self.unlabeled_pool,
            average=False if paper else bool(self.average),
            manifold_weight=0.0 if paper else float(self.manifold_weight),
            n_neighbors=int(self.n_neighbors),
            n_restarts=n_restarts, retries=retries)
        return params, eta0

    # -- prediction ------------------------------------------------------------------------------
    def random_block(self, i):
        """The random features (omega of shape (n_components_, n_features_in_), offset of shape
        (n_components_,)) of block ``i``, regenerated from ``(seed_, i)``."""
        check_is_fitted(self)
        self._check_fitted_state(self.n_features_in_)
        if not is_integer(i):
            raise TypeError(f"block index i must be an integer, got {i!r}")
        if not 0 <= i < self.n_iter_:
            raise ValueError(f"block index i={i} out of range [0, {self.n_iter_})")
        check_allocation(8 * self.n_components_ * (self.n_features_in_ + 1),
                         f"n_components_={self.n_components_}, "
                         f"n_features_in_={self.n_features_in_}")
        return tsg.random_block(self.seed_, i, self.gamma_, self.n_components_,
                                self.n_features_in_)

    def decision_function(self, X):
        """f(x) of each head (Algorithm 2: features regenerated from the seed or cached).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) for two classes (positive means
            ``classes_[1]``), else (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                          order="C", reset=False)
        self._check_fitted_state(X.shape[1])
        cache = [None if a is None else np.ascontiguousarray(a)
                 for a in (self.random_weights_, self.random_offset_)]
        out = tsg.decision_values(X, np.ascontiguousarray(self.alpha_), self.intercept_,
                                  seed=int(self.seed_), kernel_gamma=float(self.gamma_),
                                  omega=cache[0], offset=cache[1])
        if not np.all(np.isfinite(out)):
            # the fitted arrays are finite (checked), so the features' arguments overflowed
            raise ValueError(
                "X is too large in magnitude: the random features' arguments omega . x "
                "overflow float64 (cos(inf) is NaN) for some rows; scale X as it was scaled "
                "for fit.")
        return out[:, 0] if out.shape[1] == 1 else out

    def _check_fitted_state(self, n_features):
        """The fitted arrays agree with each other and with X (the kernels index unchecked):
        a tampered or truncated state raises ValueError before any kernel runs."""
        def bad(what):
            return fitted_state_error(self, what)

        if not isinstance(self.classes_, np.ndarray):
            raise bad(f"classes_ is a {type(self.classes_).__name__}, expected an ndarray")
        n_heads = fitted_n_heads(self)
        T, m = self.n_iter_, self.n_components_
        if not all(is_integer(v) and v >= 1 for v in (T, m)):
            raise bad(f"n_iter_={T!r} and n_components_={m!r} must be positive integers")
        check_fitted_array(self, "alpha_", (T, n_heads, m), finite=True)
        check_fitted_array(self, "intercept_", (n_heads,), finite=True)
        slope = self.calibration_slope_
        if not is_positive_real(slope):
            raise bad(f"calibration_slope_={slope!r} must be a positive finite number")
        n_in = self.n_features_in_
        if not is_integer(n_in) or n_in < 1:
            raise bad(f"n_features_in_={n_in!r} must be a positive integer")
        if n_features != self.n_features_in_:
            raise bad("X and n_features_in_ disagree")
        omega, offset = self.random_weights_, self.random_offset_
        if (omega is None) != (offset is None):
            raise bad("random_weights_ and random_offset_ are cached together or not at all")
        if omega is not None and (
                check_fitted_array(self, "random_weights_", (None, m, n_features),
                                   finite=True).shape[0] < T
                or check_fitted_array(self, "random_offset_", (None, m),
                                      finite=True).shape[0] < T):
            raise bad(f"random_weights_ / random_offset_ hold fewer than n_iter_={T} blocks")
        seed, gamma = self.seed_, self.gamma_
        if not is_integer(seed) or not 0 <= int(seed) < 2**64:
            raise bad("seed_ must be an integer in [0, 2**64)")
        if not is_positive_real(gamma):
            raise bad(f"gamma_={gamma!r} must be a positive finite number")

    def predict(self, X):
        """Predicted class: sign of f for two classes (f = 0 gives ``classes_[0]``), else argmax.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]

    def predict_proba(self, X):
        """Class probabilities from a sigmoid calibration of f fitted on the labeled rows.

        ``P(classes_[1]) = 1 / (1 + exp(-a f))`` with one slope ``a > 0`` (``calibration_slope_``)
        fitted by L2-regularised logistic regression without intercept on the labeled rows'
        decision values (Platt scaling with the intercept fixed at 0, so the most probable class
        is always the predicted one); for more classes the one-vs-rest sigmoids share the slope
        and are normalised to sum to one. With few labeled rows the calibration is rough: it is
        fitted in-sample on them.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        scores = self.decision_function(X)
        scores = scores[:, None] if scores.ndim == 1 else scores
        p = 0.5 * (1.0 + np.tanh(0.5 * self.calibration_slope_ * scores))   # stable sigmoid
        if p.shape[1] == 1:
            return np.column_stack([1.0 - p[:, 0], p[:, 0]])
        total = p.sum(axis=1, keepdims=True)
        return p / np.where(total > 0, total, 1.0)

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def score(self, X, y, sample_weight=None):
        """Accuracy on the labeled rows of ``y``: rows with ``y == -1`` are ignored.

        The semi-supervised counterpart of ``ClassifierMixin.score``
        (:func:`labeled_accuracy_score`), so ``GridSearchCV`` and ``cross_val_score`` with their
        default scoring rank models on the held-out *labeled* rows of a semi-labelled ``y``.
        On a fully labelled ``y`` it is the usual accuracy.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            True labels, -1 for unlabeled rows.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float

        Raises
        ------
        ValueError
            If ``y`` has no labeled row.
        """
        return labeled_accuracy_score(y, self.predict(X), sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
