"""Data generators for examples, tests and benchmarks (no download needed).

Arguments are checked as scikit-learn's ``make_*`` generators check theirs (an
``InvalidParameterError``, a ``ValueError``, naming the argument), and the sizes before
anything is allocated.
"""
from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from .utils import check_allocation

# bytes per triplet while make_triplets draws them: the (n, 3) rows, one round of (n, 3)
# candidates and the per-row temporaries (masks, margins, noise)
_BYTES_PER_TRIPLET = 160


@validate_params(
    {"n_objects": [Interval(Integral, 0, None, closed="left")],
     "n_components": [Interval(Integral, 1, None, closed="left")],
     "scale": [Interval(Real, 0, None, closed="left"), None],
     "random_state": ["random_state"]},
    prefer_skip_nested_validation=True)
def make_embedding(n_objects=100, n_components=10, *, scale=None, random_state=None):
    """Hidden points drawn from ``N(0, scale^2 I)``.

    The defaults are the synthetic setting of Ma et al., "Fast Stochastic Ordinal Embedding
    with Variance Reduction and Adaptive Step Size" (TKDE 2019, section 5.1): 100 points in
    R^10 with variance 1/20, so the mean squared distance between two points is 1.

    Parameters
    ----------
    n_objects : int, default=100
        Number of points.
    n_components : int, default=10
        Dimension of the points.
    scale : float, default=None
        Standard deviation of every coordinate; None: ``sqrt(1 / (2 * n_components))``
        (mean squared distance 1).
    random_state : int, RandomState instance or None, default=None
        Seeds the draw.

    Returns
    -------
    embedding : ndarray of shape (n_objects, n_components)
    """
    check_allocation(8 * int(n_objects) * int(n_components),
                     f"n_objects={n_objects}, n_components={n_components}")
    rng = check_random_state(random_state)
    if scale is None:
        scale = np.sqrt(1.0 / (2.0 * n_components))
    return rng.normal(0.0, scale, size=(n_objects, n_components))


@validate_params(
    {"n_objects": [Interval(Integral, 3, None, closed="left")],
     "n_triplets": [Interval(Integral, 1, None, closed="left")],
     "n_components": [Interval(Integral, 1, None, closed="left")],
     "embedding": ["array-like", None],
     "noise": [Interval(Real, 0, None, closed="left")],
     "noise_kind": [StrOptions({"flip", "gaussian"})],
     "response": [StrOptions({"order", "boolean", "count"})],
     "return_embedding": ["boolean"],
     "random_state": ["random_state"]},
    prefer_skip_nested_validation=True)
def make_triplets(n_objects=100, n_triplets=10_000, n_components=10, *, embedding=None,
                  noise=0.0, noise_kind="flip", response="order", return_embedding=False,
                  random_state=None):
    """Random triplets (i, j, k) with i, j, k distinct, answered from a hidden embedding.

    A triplet's truth is ``d(i, j) < d(i, k)`` in the embedding.

    Parameters
    ----------
    n_objects, n_triplets, n_components : int
        Sizes (``n_objects`` and ``n_components`` only when ``embedding`` is None).
    embedding : ndarray of shape (n_objects, n_components), optional
        The hidden points (default: :func:`make_embedding`).
    noise : float
        ``noise_kind="flip"``: probability that an answer is flipped, in [0, 1] (the
        noisy setting of Ma et al., TKDE 2019, section 5.3);
        ``"gaussian"``: standard deviation of noise added to d^2(i,k) - d^2(i,j).
    noise_kind : {"flip", "gaussian"}, default="flip"
        How ``noise`` perturbs the answers (see ``noise``).
    response : {"order", "boolean", "count"}
        cblearn's formats: ``"order"`` returns only the triplets, reordered so that every
        row reads "i is closer to j than to k"; ``"boolean"`` returns (triplets, y) with
        y True when the row as written is correct; ``"count"`` returns y in {+1, -1}.
    return_embedding : bool
        Also return the hidden embedding.
    random_state : int, RandomState or None

    Returns
    -------
    triplets : ndarray of shape (n_triplets, 3), int
    y : ndarray of shape (n_triplets,), only for "boolean" and "count"
    embedding : ndarray, only if ``return_embedding``
    """
    if noise_kind == "flip" and noise > 1:
        raise ValueError(f"noise is a flip probability with noise_kind='flip': it must be in "
                         f"[0, 1], got {noise}")
    check_allocation(_BYTES_PER_TRIPLET * int(n_triplets), f"n_triplets={n_triplets}")
    rng = check_random_state(random_state)
    if embedding is None:
        embedding = make_embedding(n_objects, n_components, random_state=rng)
    embedding = np.asarray(embedding, dtype=np.float64)
    if embedding.ndim != 2:
        raise ValueError(f"embedding must be a 2-D array of shape (n_objects, n_components), "
                         f"got shape {embedding.shape}")
    if not np.all(np.isfinite(embedding)):
        raise ValueError("embedding contains NaN or infinity")
    n_objects = embedding.shape[0]
    if n_objects < 3:
        raise ValueError(f"n_objects must be >= 3 for triplets, got {n_objects}")
    triplets = _distinct_index_rows(rng, n_objects, n_triplets, 3)
    i, j, k = triplets.T
    margin = (np.sum((embedding[i] - embedding[k]) ** 2, axis=1)
              - np.sum((embedding[i] - embedding[j]) ** 2, axis=1))
    if noise_kind == "gaussian":
        correct = margin + rng.normal(0.0, noise, size=n_triplets) > 0
    else:
        correct = (margin > 0) ^ (rng.uniform(size=n_triplets) < noise)
    if response == "order":
        out = (np.where(correct[:, None], triplets, triplets[:, [0, 2, 1]]),)
    elif response == "boolean":
        out = (triplets, correct)
    else:
        out = (triplets, np.where(correct, 1, -1))
    if return_embedding:
        out = out + (embedding,)
    return out[0] if len(out) == 1 else out


def _distinct_index_rows(rng, n_objects, n_rows, width):
    """Rows of ``width`` distinct indices in [0, n_objects), drawn uniformly."""
    rows = np.empty((n_rows, width), dtype=np.intp)
    todo = np.arange(n_rows)
    while todo.size:
        cand = rng.randint(0, n_objects, size=(todo.size, width))
        ok = np.ones(todo.size, dtype=bool)
        for a in range(width):
            for b in range(a + 1, width):
                ok &= cand[:, a] != cand[:, b]
        rows[todo[ok]] = cand[ok]
        todo = todo[~ok]
    return rows


@validate_params(
    {"y": ["array-like"],
     "n_labeled": [Interval(Integral, 1, None, closed="left"), None],
     "labeled_fraction": [Interval(Real, 0, 1, closed="right"), None],
     "stratify": ["boolean"],
     "random_state": ["random_state"]},
    prefer_skip_nested_validation=True)
def make_semisupervised(y, *, n_labeled=None, labeled_fraction=None, stratify=True,
                        random_state=None):
    """Mark all but a few rows as unlabeled (-1), scikit-learn's semi-supervised convention.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Full labels (must not contain -1).
    n_labeled : int, optional
        Number of rows that keep their label.
    labeled_fraction : float, optional
        Fraction of rows that keep their label (one of the two must be given).
    stratify : bool
        Keep at least one labeled row per class and classes in proportion (exactly
        ``n_labeled`` rows in all: rounded shares that add up to more or fewer give up or
        take the row their rounding moved furthest).
    random_state : int, RandomState or None

    Returns
    -------
    y_semi : ndarray of shape (n_samples,)
        Copy of y with unlabeled rows set to -1.
    labeled_mask : ndarray of bool
    """
    rng = check_random_state(random_state)
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array of labels, got shape {y.shape}")
    n = y.shape[0]
    if np.any(y == -1):
        raise ValueError("y already contains -1, the marker of unlabeled rows")
    if y.dtype.kind in "UO" and np.any(y == "-1"):
        raise ValueError("y contains the string '-1': the marker of unlabeled rows is the "
                         "integer -1, so the output would hold both; rename that class")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity")
    if (n_labeled is None) == (labeled_fraction is None):
        raise ValueError("give exactly one of n_labeled and labeled_fraction")
    if n_labeled is None:     # labeled_fraction in (0, 1]: validate_params checked it
        n_labeled = max(1, int(round(labeled_fraction * n)))
    classes = np.unique(y)
    if n_labeled > n:
        raise ValueError(f"n_labeled={n_labeled} is more than the {n} rows of y")
    if stratify and n_labeled < len(classes):
        raise ValueError(f"n_labeled={n_labeled} is fewer than the {len(classes)} classes: "
                         "stratify=True labels at least one row of each class")
    if stratify:
        members = [np.flatnonzero(y == c) for c in classes]
        shares = _stratified_shares(np.array([m.size for m in members]), n_labeled)
        labeled = np.concatenate([rng.choice(m, size=k, replace=False)
                                  for m, k in zip(members, shares)])
    else:
        labeled = rng.choice(n, size=n_labeled, replace=False)
    mask = np.zeros(n, dtype=bool)
    mask[labeled] = True
    y_semi = np.array(y, copy=True)
    # dtypes that cannot hold -1: strings and booleans (True would stand for -1) go to
    # object, unsigned integers (-1 would wrap around or raise) to int64
    if y_semi.dtype.kind in "USb":
        y_semi = y_semi.astype(object)
    elif y_semi.dtype.kind == "u":
        y_semi = y_semi.astype(np.int64)
    y_semi[~mask] = -1
    return y_semi, mask


def _stratified_shares(sizes, n_labeled):
    """Labeled rows per class: in proportion to ``sizes``, at least one, ``n_labeled`` in all."""
    ideal = n_labeled * sizes / sizes.sum()
    shares = np.minimum(np.maximum(1, np.round(ideal)), sizes).astype(np.intp)
    while shares.sum() > n_labeled:
        shares[np.argmax(np.where(shares > 1, shares - ideal, -np.inf))] -= 1
    while shares.sum() < n_labeled:
        shares[np.argmax(np.where(shares < sizes, ideal - shares, -np.inf))] += 1
    return shares
