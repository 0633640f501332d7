"""Base classes shared by the estimator families.

The linear bases own everything that is the same for every linear model of the suite
(validation, label encoding, one-vs-rest, sample and class weights, warm start, fitted
attributes, probabilities).  A subclass implements ``_fit_problem(problem) -> SolverResult``
(one binary or single-output problem, solved by its driver) and, where the problems of one
fit share work, ``_prepare_fit`` (computed once, handed to every problem as
``problem.shared``) and ``_fitted_extras`` (attributes derived from the results).  Nothing is
stored on the estimator before every problem is solved: the fitted attributes are set
together at the end.
"""
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model._base import LinearClassifierMixin, SparseCoefMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils import assert_all_finite, compute_class_weight
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import Interval
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._solvers import FitMonitor
from .utils import (AtomicFitMixin, check_sample_weight, make_dataset, seed_from_random_state,
                    validate_data)
from .utils._validation import (check_finite_numbers, check_fitted_shapes, fitted_attribute,
                                fitted_n_heads, rescale_sample_weight)
from .utils._warnings import warn

STOCHASTIC_SOLVER_CONSTRAINTS = {
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="left")],
    "verbose": ["verbose"],
    "random_state": ["random_state"],
    "callback": [callable, None],
}


class StochasticSolverMixin(AtomicFitMixin):
    """Helpers for estimators with ``max_iter``, ``tol``, ``verbose``, ``random_state`` and
    ``callback`` (merge ``STOCHASTIC_SOLVER_CONSTRAINTS`` into ``_parameter_constraints``).

    Every ``fit`` / ``partial_fit`` defined by a subclass is atomic (:class:`AtomicFitMixin`):
    when it raises (bad input found late, divergence, an exception or ``KeyboardInterrupt``
    from the callback) the estimator is restored to its state before the call.
    """

    # the ConvergenceWarning suggests standardizing X (False: X holds no features)
    _scale_hint = True

    def _make_monitor(self, solver_name=None, label=None):
        name = solver_name or type(self).__name__
        return FitMonitor(name, verbose=self.verbose, callback=self.callback, label=label,
                          scale_hint=self._scale_hint)

    def _draw_seed(self):
        return seed_from_random_state(self.random_state)


def ravel_column_vector(y):
    """An (n, 1) target becomes (n,) with a ``DataConversionWarning``, as in SGDRegressor."""
    if y.ndim == 2 and y.shape[1] == 1:
        warn("A column-vector y was passed when a 1d array was expected. Please change the "
             "shape of y to (n_samples,), for example using ravel().", DataConversionWarning)
        return y.ravel()
    return y


def regression_targets(y):
    """A regressor's validated y as float64 (``ravel_column_vector``); a sparse y is refused
    as Ridge refuses it (``validate_data(multi_output=True)`` lets it through).  A missing
    value of an object y (None) becomes NaN here, after scikit-learn's check: it is refused
    as Ridge refuses it."""
    if sp.issparse(y):
        raise TypeError("Sparse data was passed for y, but dense data is required. Use "
                        "'.toarray()' to convert to a dense numpy array.")
    y = np.asarray(y, dtype=np.float64)
    assert_all_finite(y, input_name="y")
    return ravel_column_vector(y)


def check_class_weights(weights, classes):
    """The per-class weights ``class_weight`` gives: finite and non-negative (they multiply
    sample_weight after its own checks)."""
    bad = ~(np.isfinite(weights) & (weights >= 0))
    if np.any(bad):
        given = {np.asarray(classes[k]).item(): float(weights[k]) for k in np.flatnonzero(bad)}
        raise ValueError(f"class_weight must be finite and non-negative, got {given}")
    return weights


def balanced_class_weights(weighted_counts):
    """``class_weight='balanced'`` from each class's sum of sample weights: ``total /
    (n_classes * class total)``, scikit-learn's ``n_samples / (n_classes * count)`` with the
    samples counted by their weights (as LogisticRegression does), so that a weight of 2 is
    the sample twice.  A class whose samples all weigh 0 gets weight 0."""
    weighted_counts = np.asarray(weighted_counts, dtype=np.float64)
    safe = np.where(weighted_counts > 0, weighted_counts, 1.0)
    weights = weighted_counts.sum() / (len(weighted_counts) * safe)
    return np.where(weighted_counts > 0, weights, 0.0)


class ClassTargets:
    """The one-vs-rest targets (+1 for class ``heads[k]``, -1 else) of the class codes,
    each made when read: a multinomial fit reads ``codes`` and builds none of the
    (n_samples,) float arrays."""

    def __init__(self, codes, heads):
        self.codes, self.heads = codes, list(heads)

    def __len__(self):
        return len(self.heads)

    def __getitem__(self, k):
        return one_vs_rest(self.codes, self.heads[k])


def one_vs_rest(codes, head, n_classes=None):
    """+1.0 where ``codes == head``, -1.0 elsewhere (float64): one gather from a table of
    the ``n_classes`` codes (default ``codes.max() + 1``), not a compare and a select."""
    if n_classes is None:
        n_classes = int(codes.max()) + 1 if codes.size else head + 1
    table = np.full(max(n_classes, head + 1), -1.0)
    table[head] = 1.0
    return table.take(codes)


def encode_classes(y):
    """``(np.unique(y), np.searchsorted(np.unique(y), y))`` of a 1-d ``y``, bitwise; integer
    labels of a span up to about 2 n are counted in one O(n) pass (no sort)."""
    if y.ndim == 1 and y.dtype.kind in "iu" and y.size:
        lo, hi = y.min(), y.max()
        span = int(hi) - int(lo)
        if span <= 2 * y.shape[0] + 1024:
            # in intp, wrapping: the offsets are exact (0..span) for every integer dtype
            base = np.array(lo).astype(np.intp)
            offsets = y.astype(np.intp, copy=False) - base
            present = np.bincount(offsets, minlength=span + 1) > 0
            codes = np.cumsum(present) - 1
            return (np.flatnonzero(present) + base).astype(y.dtype), codes[offsets]
    # unique + searchsorted: np.unique(return_inverse=True) argsorts y, several times slower
    classes = np.unique(y)
    return classes, np.searchsorted(classes, y)


def normalize_sample_weight(sample_weight):
    """Rescale non-negative weights to sum to n_samples.

    The objectives are written ``(1/n) sum_i s_i loss_i + penalty``; with weights summing to n
    this is the weighted mean ``sum_i s_i loss_i / sum_i s_i``, so an integer weight is the same
    as repeating the sample and only the relative weights matter (as in scikit-learn's
    ElasticNet).  Unit weights are unchanged; weights of extreme scale (uniform 1e-320) are
    first divided by their maximum, so that their sum neither underflows nor overflows.
    """
    sample_weight = rescale_sample_weight(sample_weight)
    total = sample_weight.sum()
    if not total > 0:
        raise ValueError("sample_weight (times class_weight) must have a positive sum; "
                         "every sample has weight zero.")
    return sample_weight * (sample_weight.shape[0] / total)


class _LinearProblem:
    """One binary or single-output problem handed to ``_fit_problem``.

    Attributes
    ----------
    dataset : RowDataset
        Rows of X for the kernels (shared by all problems of a fit).
    X : ndarray or CSR matrix
        The validated X (for BLAS/sparse full passes).
    y : ndarray of float64
        Targets: +1/-1 for classification, real values for regression.
    sample_weight : ndarray of float64
        Per-sample weights (class weights already folded in).
    coef_init, intercept_init : ndarray, float
        Warm start (zeros otherwise).
    seed : int
        Seed of the counter-based generator; ``stream`` distinguishes the problems of one fit.
    stream : int
    monitor : FitMonitor
    shared : object
        What ``_prepare_fit`` computed once for every problem of the fit (None by default).
    state : object
        The solver state this problem's previous fit returned (``SolverResult.state``) when
        warm starting, else None.
    """

    def __init__(self, dataset, X, y, sample_weight, coef_init, intercept_init, seed, stream,
                 monitor, shared=None, state=None):
        self.dataset = dataset
        self.X = X
        self.y = y
        self.sample_weight = sample_weight
        self.coef_init = coef_init
        self.intercept_init = intercept_init
        self.seed = seed
        self.stream = stream
        self.monitor = monitor
        self.shared = shared
        self.state = state


class BaseLinearModel(StochasticSolverMixin, BaseEstimator):
    """Shared fit machinery of the linear estimators (not public).

    Subclasses implement ``_fit_problem(problem) -> SolverResult`` (``x`` the coefficients,
    ``intercept`` the intercept) and may override ``_prepare_fit``, ``_fitted_extras``,
    ``_solver_name(X)`` and ``_reads_float32``.
    """

    # fitted attributes that only some fits set, removed before a fit sets its own: a refit
    # keeps none of an earlier fit's (the anchor graph of an earlier solver='s3gd')
    _CONDITIONAL_ATTRIBUTES = ("solver_state_",)

    def _set_fitted(self, fitted):
        """Set the fitted attributes ``fitted`` (a dict), dropping the previous fit's."""
        for name in self._CONDITIONAL_ATTRIBUTES:
            self.__dict__.pop(name, None)
        self.__dict__.update(fitted)

    def _reads_float32(self, X):
        """Whether this fit's kernels read a float32 X as it is (``problem.dataset`` then
        stores float32 rows; no float64 copy of X).  False: X is converted to float64."""
        return False

    def _solver_name(self, X):
        """The estimator and solver that messages name (``X``: the data of the fit)."""
        solver = getattr(self, "solver", None)
        return f"{type(self).__name__}(solver={solver!r})" if solver else type(self).__name__

    def _prepare_fit(self, X, sample_weights, seed):
        """Work shared by every problem of one fit (``problem.shared``); none by default."""
        return None

    def _fitted_extras(self, results, shared):
        """Fitted attributes beyond coef_, intercept_, n_iter_, history_ and seed_."""
        return {}

    def _run_problems(self, X, targets, sample_weights, coef_init, intercept_init,
                      head_labels=None):
        """Solve one problem per row of ``targets`` (threads when ``n_jobs`` allows) and
        return the fitted attributes (a dict; nothing is set on the estimator here).
        ``head_labels`` name the problems in verbose lines when there are several."""
        seed = self._draw_seed()
        shared = self._prepare_fit(X, sample_weights, seed)
        dataset = make_dataset(X, float32=self._reads_float32(X))
        n_problems = len(targets)
        states = self._warm_start_states(n_problems)
        labels = head_labels if n_problems > 1 and head_labels else [None] * n_problems
        monitors = [self._make_monitor(self._solver_name(X), label) for label in labels]
        problems = [
            _LinearProblem(dataset, X, targets[k], sample_weights[k], coef_init[k],
                           float(intercept_init[k]), seed, k, monitors[k], shared, states[k])
            for k in range(n_problems)
        ]
        n_jobs = getattr(self, "n_jobs", None)
        if n_problems == 1 or n_jobs in (None, 1):
            results = [self._fit_problem(p) for p in problems]
        else:
            # threads whatever backend a search made active: its 'dask' or 'loky' workers
            # would get pickled heads, whose shared fit state holds a lock (the fit hung)
            results = Parallel(n_jobs=n_jobs, backend="threading")(
                delayed(self._fit_problem)(p) for p in problems
            )
        fitted = self._stack_heads(results, [m.history() for m in monitors], seed)
        if any(r.state is not None for r in results):
            fitted["solver_state_"] = [r.state for r in results]
        fitted.update(self._fitted_extras(results, shared))
        return fitted

    @staticmethod
    def _stack_heads(results, histories, seed):
        """The fitted attributes of one solver result per head (class or output): stacked
        coefficients and intercepts, the largest ``n_iter``, the histories (one dict for
        one head) and the seed."""
        return {
            "coef_": np.vstack([np.asarray(r.x, dtype=np.float64) for r in results]),
            "intercept_": np.array([float(r.intercept) for r in results]),
            "n_iter_": int(max(r.n_iter for r in results)),
            "history_": histories[0] if len(results) == 1 else histories,
            "seed_": seed,
        }

    def _warm_start_states(self, n_problems):
        """The solver states of the previous fit, one per problem, when warm starting."""
        previous = getattr(self, "solver_state_", None)
        if (getattr(self, "warm_start", False) and previous is not None
                and len(previous) == n_problems):
            return list(previous)
        return [None] * n_problems

    def _warm_start_arrays(self, n_problems, n_features):
        if getattr(self, "warm_start", False) and getattr(self, "coef_", None) is not None:
            # only a previous fit of the same shape (same features, same number of heads or
            # outputs) is a start; a reshape of other-shaped coefficients would be garbage
            coef, intercept = self.coef_, fitted_attribute(self, "intercept_")
            # numbers, finite (a tampered start would reach the solver); sparse after sparsify()
            check_finite_numbers(self, "coef_", coef)
            check_finite_numbers(self, "intercept_", intercept)
            coef = np.atleast_2d(coef.toarray() if sp.issparse(coef) else
                                 np.asarray(coef, dtype=np.float64)).astype(np.float64)
            intercept = np.atleast_1d(np.asarray(intercept, dtype=np.float64))
            if coef.shape == (n_problems, n_features) and intercept.shape == (n_problems,):
                return coef, intercept.copy()
        return np.zeros((n_problems, n_features)), np.zeros(n_problems)


class BaseLinearClassifier(LinearClassifierMixin, SparseCoefMixin, BaseLinearModel):
    """Linear classifier base: binary problems with labels +1/-1, one-vs-rest for more classes.

    Expects parameters ``class_weight`` and, optionally, ``n_jobs`` and ``warm_start``.
    ``predict_proba`` is available when ``loss == "log_loss"``.
    """

    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (dense or CSR).  float32 X is used without a copy where the
            estimator's kernels read float32 (the user guide lists them), else converted
            to float64.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        self._validate_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             order="C")
        if not (y.ndim == 1 and y.dtype.kind in "iu"):
            # 1-d integer labels are 'binary' or 'multiclass' (nothing to check); before
            # np.unique, whose sort fails on labels of mixed types
            check_classification_targets(y)
        classes, y_encoded = encode_classes(y)
        n_classes = len(classes)
        if n_classes < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes in the data, "
                f"but the data contains only one class: {np.asarray(classes[0]).item()!r}."
            )
        sample_weight = check_sample_weight(sample_weight, X)
        class_weight = getattr(self, "class_weight", None)
        if class_weight is not None:
            if class_weight == "balanced":
                weights = balanced_class_weights(
                    np.bincount(y_encoded, weights=sample_weight, minlength=n_classes))
            else:
                weights = check_class_weights(
                    compute_class_weight(class_weight, classes=classes, y=y), classes)
            sample_weight = sample_weight * weights[y_encoded]
        sample_weight = normalize_sample_weight(sample_weight)
        heads = [1] if n_classes == 2 else range(n_classes)
        if self._multinomial(n_classes):    # one problem: its driver reads the class codes
            targets = ClassTargets(y_encoded, heads)
        else:
            targets = [one_vs_rest(y_encoded, k, n_classes) for k in heads]
        coef_init, intercept_init = self._warm_start_arrays(len(targets), X.shape[1])
        fitted = self._run_problems(X, targets, [sample_weight] * len(targets), coef_init,
                                    intercept_init, [f"class={classes[k]}" for k in heads])
        fitted["classes_"] = classes
        self._set_fitted(fitted)
        return self

    def decision_function(self, X):
        """Signed distance to the hyperplane(s) (scikit-learn's, after our input checks).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", reset=False)
        check_fitted_shapes(self, (fitted_n_heads(self), X.shape[1]), "classes_")
        # scikit-learn's decision_function, without its second validate_data: on the array
        # validated above that one warns "X does not have valid feature names" after a
        # DataFrame fit
        scores = safe_sparse_dot(X, self.coef_.T, dense_output=True) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def _multinomial(self, n_classes):
        """Whether ``n_classes`` classes are fitted as one multinomial problem (then
        ``predict_proba`` is the softmax); one-vs-rest here."""
        return False

    @available_if(lambda self: getattr(self, "loss", None) == "log_loss")
    def predict_proba(self, X):
        """Class probabilities (``loss="log_loss"`` only): for more than two classes the
        softmax of a multinomial model, else the one-vs-rest sigmoids normalised (as
        ``SGDClassifier``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p1 = _sigmoid(scores)
            return np.column_stack([1.0 - p1, p1])
        if self._multinomial(scores.shape[1]):
            return softmax(scores)
        proba = _sigmoid(scores)
        total = proba.sum(axis=1, keepdims=True)
        uniform = total == 0
        total[uniform] = 1.0
        proba /= total
        proba[uniform[:, 0]] = 1.0 / proba.shape[1]
        return proba

    @available_if(lambda self: getattr(self, "loss", None) == "log_loss")
    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def softmax(Z):
    """Row-wise softmax (the probabilities of a multinomial model)."""
    Z = np.array(Z, dtype=np.float64)
    Z -= Z.max(axis=1, keepdims=True)
    np.exp(Z, out=Z)
    Z /= Z.sum(axis=1, keepdims=True)
    return Z


def _sigmoid(z):
    out = np.empty_like(z, dtype=np.float64)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


class BaseLinearRegressor(RegressorMixin, BaseLinearModel):
    """Linear regressor base: one problem per output column (multi-output y allowed)."""

    def _check_targets(self, Y, sample_weight):
        """ValueError when the objective at w = 0, b = 0 overflows: its squared errors are
        those of y (else the first record's inf blamed the step size)."""
        with np.errstate(over="ignore"):
            f_zero = 0.5 * (sample_weight @ np.square(Y)) / Y.shape[0]
        if not np.all(np.isfinite(f_zero)):
            raise ValueError(
                f"y is too large in magnitude for float64 (max |y| = "
                f"{float(np.max(np.abs(Y))):.3g}): the squared errors overflow. Scale y (e.g. "
                "divide it by its standard deviation, or use TransformedTargetRegressor).")

    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (dense or CSR).  float32 X is used without a copy where the
            estimator's kernels read float32 (the user guide lists them), else converted
            to float64.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        self._validate_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             order="C", multi_output=True, y_numeric=True)
        y = regression_targets(y)
        single = y.ndim == 1
        Y = y.reshape(-1, 1) if single else y
        sample_weight = normalize_sample_weight(check_sample_weight(sample_weight, X))
        self._check_targets(Y, sample_weight)
        targets = [np.ascontiguousarray(Y[:, k]) for k in range(Y.shape[1])]
        coef_init, intercept_init = self._warm_start_arrays(len(targets), X.shape[1])
        fitted = self._run_problems(X, targets, [sample_weight] * len(targets), coef_init,
                                    intercept_init, [f"output={k}" for k in range(len(targets))])
        if single:
            fitted["coef_"] = fitted["coef_"][0]
            fitted["intercept_"] = float(fitted["intercept_"][0])
        self._set_fitted(fitted)
        return self

    def predict(self, X):
        """Predict with the linear model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_targets)
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                          reset=False)
        coef = np.asarray(fitted_attribute(self, "coef_"))
        check_fitted_shapes(self, (coef.shape[0] if coef.ndim == 2 else 0, X.shape[1]))
        return X @ coef.T + self.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        return tags
