"""Fits and predictions of CGVR and S3GD estimators on ``dask.array.Array`` data.

The mixins sit before the linear bases in the estimators' MRO: a Dask array X goes to
:meth:`DaskFitMixin._fit_dask` (every O(n) pass on the Dask workers, see
:mod:`skstoch._solvers.dask_fit`, and :mod:`skstoch._solvers.dask_multinomial` for the
multinomial log loss), anything else to the in-memory fit.  Dask is imported
only when the input is a Dask array.
"""
import copy
from functools import partial
from numbers import Number

import numpy as np
from sklearn.utils._available_if import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ..base import balanced_class_weights, check_class_weights, ravel_column_vector
from ..utils import atomic_fit
from ..utils._validation import check_sample_weight, rescale_sample_weight


# The Notes paragraphs of the estimators' docstrings (one text per family)
_COMMON_NOTES = """\
    ``fit`` also takes a ``dask.array.Array`` X (dense chunks, or scipy.sparse CSR
    chunks holding all the columns), with ``y`` and ``sample_weight`` as Dask arrays
    (or array-likes).  The Dask workers then do every O(n) pass: each pass maps the
    compiled full-gradient kernel over the row chunks (objective, gradient and the per-row
    loss derivatives, which stay on the workers) and sums the ``d + 2`` numbers of each
    chunk by a tree of tasks; the client receives only that sum and a sample of rows drawn
    from the counter-based generator, on which the compiled inner loop runs.  A sample
    holds at most ``max(batch_size, min(n_samples // 4, budget // row_bytes))`` rows:
    a quarter of the rows and at most ``budget`` bytes (256 MiB; set it with
    ``dask.config.set({"skstoch.gather-budget": "1 GiB"})`` or the environment variable
    ``DASK_SKSTOCH__GATHER_BUDGET``), where ``row_bytes``, the bytes a gathered row costs
    the client with its target, weight and loss derivative, is measured on the workers
    in the first pass: ``8 (n_features + 3)`` for dense chunks, the mean of
    ``12 nnz + 28`` over the rows for CSR ones (so the budget bounds a CSR sample's
    expected size).  The first pass's sample is therefore fetched right after it.  The
    fit runs on the current ``distributed.Client`` if there is one, else on Dask's
    default scheduler; persist X first (``X = X.persist()``) when it fits in the
    cluster's memory, otherwise every pass reads it from its source.  The stopping rule
    uses the exact distributed objective and gradient, so the fit reaches the in-memory
    fit's optimum (not its iterates); it is reproducible for a given chunking and
    ``random_state``, and a worker lost during the fit only makes Dask recompute its
    chunks.  ``history_['passes']`` then counts the
    distributed passes over X (one per outer iteration), ``history_['gathers']`` and
    ``history_['gathered_rows']`` the samples fetched (one per pass, a second one for the
    retry of a rejected iteration) and their rows (each sample within the budget).
    ``predict``, ``decision_function`` and ``predict_proba`` of a Dask array return Dask
    arrays, computed chunk by chunk."""

CGVR_DASK_NOTES = _COMMON_NOTES + """

    CGVR on Dask data: each inner loop draws its batches from a gathered sample of
    ``min(inner_iter * batch, cap)`` rows, ``cap`` the sample bound above (the in-memory
    kernel on that sample, with the full gradient and loss derivatives of the snapshot);
    the safeguard's batch doubling stops at ``cap`` rows, and further rejected iterations
    halve the step cap.  A small budget only makes the inner loops' batches come from a
    smaller sample: the stop still uses the exact gradient.  ``solver='cg'`` (full-batch
    CG) gathers no sample: each iteration is one distributed pass for the gradient and one
    for the line search, which keeps the margins ``X w`` and ``X p`` on the workers
    (16 bytes per row) and evaluates each trial step (with the next ones it may try) in one
    round trip over them, the strong-Wolfe search of the in-memory fit; the pass counts
    are those of the in-memory fit.  ``line_search='full'`` (a search on f at every inner
    step of the compiled inner loop, which holds all margins: on a cluster, one
    distributed pass per inner step) raises ValueError."""

S3GD_DASK_NOTES = _COMMON_NOTES + """

    S3GD estimators on Dask data run Prox-SVRG (``solver`` 'auto', 'hybrid' or 'svrg',
    without the SGD warm-up, the line-search start and the anchor epochs) for every
    penalty: per epoch one distributed pass (the exact snapshot gradient and objective,
    recorded with ``objective_kind='snapshot'``) and ``n_inner`` steps whose mini-batches
    are drawn from a gathered sample (the bound above).  With an l1 part
    (``penalty='l1'`` or ``'elasticnet'``) the steps are the proximal steps of the
    in-memory Prox-SVRG kernel (``w <- soft(v, eta lam1) / (1 + eta lam2)``); so
    ``solver='auto'``, which in memory picks coordinate descent ('cd') for an l1 part,
    means 'hybrid' (Prox-SVRG) on Dask data for every penalty.  ``n_inner='auto'`` is one
    pass's worth of steps (as in memory), at most 32 sweeps of the sample: when the byte
    budget makes the sample smaller than ``n_samples / 32``, an epoch makes fewer steps,
    so the client's work per distributed pass stays bounded on large data (more epochs;
    the exact snapshot gradient and objective keep the fit going to the optimum and
    decide the stop).
    ``eta0='auto'`` is ``1 / (4 L_b)`` with ``L_max = c max_i s_i (||x_i||^2 + 1)`` from the
    first pass and ``lambda_max([X, 1]^T S [X, 1] / n)`` estimated on the first sample.
    ``solver='cd'`` reads a column of X at every coordinate step (row chunks give none)
    and raises ValueError; so do 's3gd' and ``anchor_epochs > 0`` (an anchor graph over
    X in memory), 'ssgd' (k-means strata of X) and 'sgd' (no full pass: it stops at its
    noise floor, and the cluster would only ship rows to the client)."""


MULTINOMIAL_DASK_NOTES = """

    With more than two classes and the log loss the Dask fit is the multinomial model, one
    objective over all classes, whenever the same parameters fit it in memory
    (``multi_class='multinomial'``, or 'auto' where ``multi_class`` says it is: for
    S3GDClassifier not with an l1 part, whose 'auto' is one-vs-rest on any input).
    Each pass runs the in-memory driver's multinomial full pass (margins and gradient by
    BLAS, softmax in NumPy) on every chunk and sums its ``n_classes (n_features + 1) + 2``
    numbers by the same tree.  A sample is rows only (X's row, class, weight): the client
    computes the snapshot probabilities of its rows, so a multinomial ``row_bytes`` counts
    ``16 + 16 n_classes`` bytes besides X's row (the class and the weight, and two vectors
    of ``n_classes`` floats the client keeps per row).  CGVR runs its multinomial inner
    loops on the sample (``solver='cg'`` and ``line_search='full'`` raise ValueError);
    S3GD runs multinomial Prox-SVRG's compiled epochs over a random order of the sample (one
    pass's worth of steps, at most 32 sweeps of it) with its safeguard and stop on the
    exact objective of each epoch's iterate, one distributed pass per epoch; its
    ``eta0='auto'`` takes ``lambda_max`` from the first sample and bounds
    ``max_i s_i (||x_i||^2 + s2)`` from the first pass."""


def is_dask_array(X):
    """True for a ``dask.array.Array`` (checked without importing dask)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "chunks") \
        and hasattr(X, "to_delayed")


def _rows_like(a, X, name):
    """``a`` (array-like or Dask array) as a Dask array chunked as X's rows."""
    import dask.array as da

    if is_dask_array(a) and a.ndim and any(np.isnan(c) for c in a.chunks[0]):
        raise ValueError(f"{name} has unknown chunk sizes; call "
                         f"{name}.compute_chunk_sizes() first.")
    if not is_dask_array(a):
        a = np.asarray(a)
    if a.ndim == 0 or a.shape[0] != X.shape[0]:
        raise ValueError(f"{name} has {a.shape[0] if a.ndim else 0} samples but X has "
                         f"{X.shape[0]}: they must match.")
    if not is_dask_array(a):
        a = da.from_array(a, chunks=(X.chunks[0],) + (-1,) * (a.ndim - 1))
    if a.chunks[0] != X.chunks[0]:
        a = a.rechunk((X.chunks[0],) + (-1,) * (a.ndim - 1))
    return a


def _numbers(a, name):
    """``a`` unless its dtype holds strings, objects or complex numbers: the in-memory
    checks refuse strings and complex numbers, and ``astype(float64)`` on the workers would
    parse numeric strings and drop imaginary parts.  Objects are refused too, where memory
    accepts numbers in them: their values are only known chunk by chunk."""
    kind = np.dtype(a.dtype).kind
    if kind == "c":
        raise ValueError(f"{name} holds complex numbers; Complex data not supported.")
    if kind == "O":
        raise ValueError(f"{name} is a Dask array of dtype object; cast it to numbers "
                         f"first, e.g. {name}.astype(float).")
    if kind not in "biuf":
        raise ValueError(f"{name} must hold numbers, got dtype {a.dtype}.")
    return a


def _predict_block(method, tail, dtype, block):
    """``method`` on one row chunk; a chunk of 0 rows (after boolean filtering) gives an
    empty result, which the in-memory checks would refuse."""
    if block.shape[0] == 0:
        return np.empty((0,) if tail is None else (0, tail), dtype=dtype)
    return method(block)


def _check_dask_X(est, X):
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got a Dask array with {X.ndim} dimension(s).")
    if any(np.isnan(c) for c in X.chunks[0]) or any(np.isnan(c) for c in X.chunks[1]):
        raise ValueError("X has unknown chunk sizes; call X.compute_chunk_sizes() first.")
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X has shape {X.shape}; at least one sample and one feature are "
                         "required.")
    kind = np.dtype(X.dtype).kind
    if kind not in "biuf":
        raise ValueError(f"X must hold numbers, got a Dask array of dtype {X.dtype}.")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})    # the kernels read whole rows
    est.n_features_in_ = int(X.shape[1])
    est.__dict__.pop("feature_names_in_", None)
    return X


class DaskFitMixin:
    """``fit`` of a Dask array: validation, targets, weights and the loop over heads; the
    family supplies ``_dask_check()`` and ``_dask_solve(...)``."""

    @atomic_fit
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Training data.  A ``dask.array.Array`` (dense or scipy.sparse CSR chunks) is
            fitted on the Dask workers (see the estimator's Notes).
        y : array-like or dask array of shape (n_samples,) or (n_samples, n_targets)
            Target values.
        sample_weight : array-like or dask array of shape (n_samples,), default=None
            Per-sample weights.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        if not is_dask_array(X):
            return super().fit(X, y, sample_weight=sample_weight)
        self._validate_params()
        self._dask_check()
        # an (n, 1) y is raveled with a DataConversionWarning, as in memory
        return self._fit_dask(X, ravel_column_vector(y if is_dask_array(y) else np.asarray(y)),
                              sample_weight)

    def _fit_dask(self, X, y, sample_weight):
        import dask.array as da

        X = _check_dask_X(self, X)
        y = _rows_like(y, X, "y")
        if isinstance(sample_weight, Number):
            # a number weighs every row alike: unit weights, after the in-memory checks
            check_sample_weight(sample_weight, np.empty((1, 1)))
            sample_weight = None
        sw = (da.ones(X.shape[0], chunks=(X.chunks[0],)) if sample_weight is None
              else _numbers(_rows_like(sample_weight, X, "sample_weight"),
                            "sample_weight").astype(np.float64))
        if sw.ndim != 1:
            raise ValueError("sample_weight must be 1-D.")
        targets, sw, extra = self._dask_targets(y, sw)
        if sample_weight is not None or getattr(self, "class_weight", None) is not None:
            # only relative weights matter; sums of extreme ones underflow or overflow
            sw = rescale_sample_weight(sw)
        fitted = self._dask_fit_targets(X, targets, sw, extra)
        fitted.update(extra)
        self._set_fitted(fitted)
        return self

    def _dask_fit_targets(self, X, targets, sw, extra):
        """The fitted attributes of one problem per target (one-vs-rest class or output)."""
        n_heads = len(targets)
        coef_init, intercept_init = self._warm_start_arrays(n_heads, X.shape[1])
        states = self._warm_start_states(n_heads)
        seed = self._draw_seed()
        results, histories = [], []
        for k, target in enumerate(targets):
            monitor = self._make_monitor(self._solver_name(X))
            results.append(self._dask_solve(X, target, sw, seed, k, monitor, coef_init[k],
                                            float(intercept_init[k]), states[k]))
            histories.append(monitor.history())
        fitted = self._stack_heads(results, histories, seed)
        fitted.update(self._dask_extras(results, X))
        return fitted

    def _dask_map(self, name, X, shape_tail, dtype):
        """The method ``name`` applied to every row chunk of the Dask array X, lazily."""
        check_is_fitted(self)
        X = _check_dask_predict_X(self, X)
        # the tasks carry a copy of the fitted model without the callback (which need not
        # pickle to worker processes)
        model = copy.copy(self)
        model.callback = None
        method = partial(_predict_block, getattr(model, name), shape_tail, dtype)
        if shape_tail:
            return X.map_blocks(method, dtype=dtype, chunks=(X.chunks[0], shape_tail),
                                meta=np.empty((0, 0), dtype=dtype))
        return X.map_blocks(method, dtype=dtype, drop_axis=1, chunks=(X.chunks[0],),
                            meta=np.empty((0,), dtype=dtype))


def _check_dask_predict_X(est, X):
    if X.ndim != 2 or X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has shape {X.shape}, but {type(est).__name__} is expecting "
                         f"{est.n_features_in_} features as input.")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X


class DaskClassifierMixin(DaskFitMixin):
    """Dask fits and lazy predictions of the linear classifiers: one-vs-rest heads, or
    one multinomial problem over all classes (the family's ``_multinomial``, fitted by
    ``_dask_solve_multinomial`` after ``_dask_check_multinomial``)."""

    def _dask_targets(self, y, sw):
        import dask.array as da

        if y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {y.shape}.")
        classes = da.unique(y).compute()
        check_classification_targets(classes)
        if len(classes) < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes in the data, "
                f"but the data contains only one class: {np.asarray(classes[0]).item()!r}.")
        self._dask_check_classes(len(classes))
        codes = y.map_blocks(lambda b: np.searchsorted(classes, b), dtype=np.intp)   # lazy
        class_weight = getattr(self, "class_weight", None)
        if class_weight is not None:
            if class_weight == "balanced":
                # weighted class counts, of weights rescaled so that their sums stay finite
                weights = balanced_class_weights(da.bincount(
                    codes, weights=rescale_sample_weight(sw), minlength=len(classes)).compute())
            else:
                from sklearn.utils import compute_class_weight
                weights = check_class_weights(
                    compute_class_weight(class_weight, classes=classes, y=classes), classes)
            sw = sw * codes.map_blocks(lambda c: weights[c], dtype=np.float64)
        if self._multinomial(len(classes)):
            # one multinomial problem, whose target is the class index
            return [codes], sw, {"classes_": classes}
        heads = [1] if len(classes) == 2 else range(len(classes))
        targets = [da.where(y == classes[k], 1.0, -1.0) for k in heads]
        return targets, sw, {"classes_": classes}

    def _dask_check_classes(self, n_classes):
        """The family's checks of a fit of ``n_classes`` classes (ValueError naming a
        setting the Dask fit does not support)."""
        check = getattr(self, "_check_multi_class", None)
        if check is not None:
            check()
        if self._multinomial(n_classes):
            self._dask_check_multinomial()

    def _dask_fit_targets(self, X, targets, sw, extra):
        """The multinomial model (log loss, more than two classes): one problem over all
        classes, as in memory; one-vs-rest heads otherwise."""
        n_classes = len(extra["classes_"])
        if not self._multinomial(n_classes):
            return super()._dask_fit_targets(X, targets, sw, extra)
        warm = getattr(self, "warm_start", False) and hasattr(self, "coef_")
        coef_init, intercept_init = self._warm_start_arrays(n_classes, X.shape[1])
        state = self._warm_start_states(1)[0]
        seed = self._draw_seed()
        monitor = self._make_monitor(self._solver_name(X))
        result = self._dask_solve_multinomial(
            X, targets[0], sw, n_classes, seed, monitor, coef_init if warm else None,
            intercept_init if warm else None, state)
        fitted = {"coef_": np.asarray(result.x, dtype=np.float64),
                  "intercept_": np.asarray(result.intercept, dtype=np.float64),
                  "n_iter_": int(result.n_iter), "history_": monitor.history(),
                  "seed_": seed}
        fitted.update(self._dask_extras([result], X))
        return fitted

    def decision_function(self, X):
        """Signed distance to the hyperplane(s).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray or dask array of shape (n_samples,) or (n_samples, n_classes)
            A Dask array (computed lazily, chunk by chunk) for a Dask array X.
        """
        if not is_dask_array(X):
            return super().decision_function(X)
        check_is_fitted(self)
        n = len(self.classes_)
        return self._dask_map("decision_function", X, n if n > 2 else None, np.float64)

    def predict(self, X):
        """Predicted class labels.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray or dask array of shape (n_samples,)
            A Dask array (computed lazily, chunk by chunk) for a Dask array X.
        """
        if not is_dask_array(X):
            return super().predict(X)
        check_is_fitted(self)
        return self._dask_map("predict", X, None, np.asarray(self.classes_).dtype)

    @available_if(lambda self: getattr(self, "loss", None) == "log_loss")
    def predict_proba(self, X):
        """Class probabilities (``loss='log_loss'`` only).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray or dask array of shape (n_samples, n_classes)
            A Dask array (computed lazily, chunk by chunk) for a Dask array X.
        """
        if not is_dask_array(X):
            return super().predict_proba(X)
        check_is_fitted(self)
        return self._dask_map("predict_proba", X, len(self.classes_), np.float64)


class DaskRegressorMixin(DaskFitMixin):
    """Dask fits and lazy predictions of the linear regressors (one head per target)."""

    def _dask_targets(self, y, sw):
        if y.ndim not in (1, 2):
            raise ValueError(f"y must be 1-D or 2-D, got shape {y.shape}.")
        if y.ndim == 2 and y.shape[1] == 0:
            raise ValueError(f"y has 0 columns (shape {y.shape}): a regressor needs at least "
                             f"one target.")
        y = _numbers(y, "y").astype(np.float64)
        if y.ndim == 1:
            return [y], sw, {}
        return [y[:, k] for k in range(y.shape[1])], sw, {}

    def _fit_dask(self, X, y, sample_weight):
        super()._fit_dask(X, y, sample_weight)
        if np.ndim(y) == 1:
            self.coef_ = self.coef_[0]
            self.intercept_ = float(self.intercept_[0])
        return self

    def predict(self, X):
        """Predict with the linear model.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray or dask array of shape (n_samples,) or (n_samples, n_targets)
            A Dask array (computed lazily, chunk by chunk) for a Dask array X.
        """
        if not is_dask_array(X):
            return super().predict(X)
        check_is_fitted(self)
        tail = self.coef_.shape[0] if np.ndim(self.coef_) == 2 else None
        return self._dask_map("predict", X, tail, np.float64)
