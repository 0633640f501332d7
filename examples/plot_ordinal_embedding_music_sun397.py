"""
==========================================================================
Ordinal embedding: synthetic analogues of the music and SUN397 experiments
==========================================================================

The paper of :class:`skstoch.OrdinalEmbedding` (Ma et al., TKDE 2019) tests SVRG-SBB on two
real data sets that cannot be downloaded here: the aset400 music-artist survey (Sec. 5.3,
Fig. 4) and SUN397 image retrieval (Sec. 5.4, Table II, Fig. 5).  This example builds
analogues with the same protocol from what ships with skstoch and scikit-learn, and runs the
paper's method (``solver='svrg_sbb'``) against its baselines on them:

* **music analogue (Fig. 4)**: 400 "artists" in 9 "genres" (Gaussian clusters in R^9, an
  artist drawn around its genre's centre), 9,107 triplets answered from the hidden distances
  with Gaussian response noise (human judgments; the paper's triplets were a web survey),
  80% / 20% train / test, ``p = 9``, the same random start for every method; test triplet
  error per epoch for SGD, fixed-step SVRG, projected gradient descent on the Gram matrix
  (the paper's convex route), SVRG-SBB0 (``epsilon=0``) and SVRG-SBB-epsilon with b = 1 and
  b = 10, for the four losses (projected GD only for the two convex in the Gram matrix);
* **SUN397 analogue (Table II, Fig. 5)**: scikit-learn's bundled digits stand in for the
  image features (64 pixels instead of 1,600 PCA'd deep features; 10 classes instead of 18):
  60 training and 40 test images per class, 70,000 triplets from the training labels (i and j
  of one class, k of another; 60,000 to fit, as the reference code) with 5% or 10% of them
  swapped (j <-> k), an embedding in ``R^10`` (one dimension per class, as the paper's
  ``R^18``), an RBF-kernel regularised least-squares map from pixels to the embedding to
  place the test images, and retrieval of the training images by each test image:
  Precision@K and Recall@K (K = 40..100) and MAP truncated at 40, as the paper defines them;
* beside the paper's rows, SVRG-SBB with skstoch's stabilizer (``epsilon='auto'``) and
  skstoch's default solver (L-BFGS) on the same data;
* a record of each claim with our numbers and a verdict (``examples/_reproduction.py``).

Set ``SKSTOCH_EXAMPLE_FAST=1`` for a quick, smaller run.
"""
# %%
import os
import sys
import time
import warnings

import matplotlib

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST", "0") not in ("", "0")
if FAST:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning

from skstoch import OrdinalEmbedding
from skstoch.datasets import make_triplets

import skstoch  # noqa: E402

# examples/_reproduction.py, next to this file (sphinx-gallery runs examples without __file__)
_file = globals().get("__file__")
sys.path.insert(0, os.path.dirname(os.path.abspath(_file)) if _file else
                os.path.join(os.path.dirname(os.path.dirname(skstoch.__file__)), "examples"))
from _reproduction import claim, record  # noqa: E402
from _reproduction import verdict as verdict_of  # noqa: E402

warnings.simplefilter("ignore", ConvergenceWarning)
started = time.perf_counter()


def seed_mean(values, axis=None, reduce=np.nanmean):
    """The mean (or ``reduce``) over the seeds whose fit did not diverge: NaN, without
    numpy's empty-slice warning, where every seed diverged."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return reduce(values, axis=axis)


def shown(value):
    """A metric as printed: 'diverged' for a method whose fit diverged in every seed."""
    return "diverged" if np.isnan(value) else f"{value:.3f}"


EPSILON = 0.01     # the paper's absolute SBB stabilizer (its reference code: 1e-5 to 2.5e-2)
if FAST:
    losses = ["gnmds", "ste"]
    n_artists, n_genres, n_music, music_dim, music_epochs, music_seeds = 60, 4, 1500, 4, 6, 1
    per_class, n_sun_classes, n_sun, sun_fit, sun_epochs, sun_seeds = (30, 10), 4, 3000, 2500, 5, 1
    noises, sun_batches = [0.1], [1, 10]
else:
    losses = ["gnmds", "ckl", "ste", "tste"]
    n_artists, n_genres, n_music, music_dim, music_epochs, music_seeds = 400, 9, 9107, 9, 30, 5
    per_class, n_sun_classes, n_sun, sun_fit, sun_epochs, sun_seeds = (60, 40), 10, 70_000, \
        60_000, 30, 3
    noises, sun_batches = [0.05, 0.10], [1, 5, 10, 20]
AUTO = "SBB, epsilon='auto' b=1"     # skstoch's stabilizer: 0.05 x the probed curvature
CONVEX = ("gnmds", "ste")      # the losses convex in the Gram matrix (the paper's "cvx" route)

# %%
# The convex route: projected gradient descent on the Gram matrix
# ----------------------------------------------------------------
# The paper's "cvx" competitor minimises the loss as a function of ``G = X X^T`` (its eq. 8)
# by gradient steps followed by a projection onto the centred positive semidefinite cone
# (eigenvalues clipped at 0), with a fixed step, no line search and no regulariser; the
# embedding it reports is the top-p part of ``G``.  It starts from the same points as the
# other methods and gets 3 gradient steps per epoch (the paper's equal-gradient budget).  The
# paper used the default step of van der Maaten's code untuned: ``eta = 1`` on the summed
# loss scaled by ``n / |Q|``, that is a step of ``n`` (the number of objects) on our mean loss
# (inferred).  We run that step and, apart, a tuned one: the best of ``{4n, 16n}`` and ``n``
# by training triplet error on the first seed, then kept for the other seeds.


def gram_gradient(loss, G, triplets):
    """Gradient of the mean loss over ``triplets`` as a function of G (GNMDS or STE)."""
    n = len(G)
    i, j, k = triplets.T
    delta = G[j, j] - 2 * G[i, j] - G[k, k] + 2 * G[i, k]     # d2(i, j) - d2(i, k)
    c = 0.5 * (1.0 + np.tanh(0.5 * delta)) if loss == "ste" else (delta > -1.0) * 1.0
    nn = n * n
    grad = (np.bincount(j * n + j, c, nn) - np.bincount(k * n + k, c, nn)
            - np.bincount(i * n + j, c, nn) - np.bincount(j * n + i, c, nn)
            + np.bincount(i * n + k, c, nn) + np.bincount(k * n + i, c, nn))
    return grad.reshape(n, n) / len(triplets)


def projected_gd(loss, triplets, X0, step, n_steps, every=3):
    """The rank-p embedding of G every ``every`` steps (once per epoch), as a list."""
    return list(_projected_gd(loss, triplets, X0, step, n_steps, every))


def _projected_gd(loss, triplets, X0, step, n_steps, every):
    n, p = X0.shape
    centre = np.eye(n) - 1.0 / n
    G = X0 @ X0.T
    for t in range(1, n_steps + 1):
        G = centre @ (G - step * gram_gradient(loss, G, triplets)) @ centre
        w, V = np.linalg.eigh(0.5 * (G + G.T))
        w = np.maximum(w, 0.0)
        G = (V * w) @ V.T
        if t % every == 0:
            yield V[:, -p:] * np.sqrt(w[-p:])


def triplet_error(X, triplets):
    i, j, k = triplets.T
    return float(np.mean(np.sum((X[i] - X[j]) ** 2, 1) >= np.sum((X[i] - X[k]) ** 2, 1)))


def cvx_steps(loss, triplets, X0, n_steps, tuned):
    """{'default': embeddings at step n, 'tuned': at the tuned step}; ``tuned`` caches the
    step chosen per loss (on the first call) by training triplet error."""
    n = len(X0)
    runs = {"default": projected_gd(loss, triplets, X0, float(n), n_steps)}
    if loss not in tuned:
        grid = {f: projected_gd(loss, triplets, X0, f * n, n_steps) for f in (4.0, 16.0)}
        grid[1.0] = runs["default"]
        tuned[loss] = min(grid, key=lambda f: triplet_error(grid[f][-1], triplets))
        runs["tuned"] = grid[tuned[loss]]
    else:
        runs["tuned"] = (runs["default"] if tuned[loss] == 1.0 else
                         projected_gd(loss, triplets, X0, tuned[loss] * n, n_steps))
    return runs


def fit_trace(triplets, X0, evaluate, loss, solver, epochs, **params):
    """(value of ``evaluate`` after every epoch, steps per epoch, failed) of one fit."""
    trace, steps = [], []

    def callback(rec):
        trace.append(evaluate(rec["x"]))
        steps.append(rec.get("step_size", np.nan))
        return False

    # every method runs all its epochs (no stopping rule: the window exceeds the budget)
    est = OrdinalEmbedding(X0.shape[1], loss=loss, solver=solver, max_iter=epochs, tol=0.0,
                           n_iter_no_change=epochs + 1, init=X0, random_state=0,
                           callback=callback, **params)
    try:
        est.fit(triplets, n_objects=len(X0))
        failed = False
    except FloatingPointError:     # skstoch's DivergenceError: a non-finite iterate
        failed = True
    return trace, np.asarray(steps, dtype=float), failed


def music_methods(loss):
    methods = {"SGD": dict(solver="sgd", batch_size=1),
               "SVRG (fixed step)": dict(solver="svrg", batch_size=1),
               "SVRG-SBB0": dict(solver="svrg_sbb", batch_size=1, epsilon=0.0),
               "SBB-epsilon b=1": dict(solver="svrg_sbb", batch_size=1, epsilon=EPSILON),
               "SBB-epsilon b=10": dict(solver="svrg_sbb", batch_size=10, epsilon=EPSILON),
               AUTO: dict(solver="svrg_sbb", batch_size=1, epsilon="auto")}
    return methods


# %%
# Music-artist analogue (Fig. 4): test error per epoch
# -----------------------------------------------------
# The survey's answers are noisy and not explained by any low-dimensional embedding; we
# answer each triplet from hidden genre-structured points with Gaussian noise on
# ``d^2(i, k) - d^2(i, j)`` (standard deviation 0.5 of the mean squared distance 2), which
# leaves about a fifth of the triplets inconsistent with the hidden points.


def music_data(seed):
    rng = np.random.RandomState(seed)
    centres = rng.normal(0.0, 1.0 / np.sqrt(music_dim), size=(n_genres, music_dim))
    genre = rng.randint(n_genres, size=n_artists)
    hidden = centres[genre] + rng.normal(0.0, 0.5 / np.sqrt(music_dim),
                                         size=(n_artists, music_dim))
    hidden *= np.sqrt(2.0 / np.mean(np.sum((hidden[:, None] - hidden[None]) ** 2, -1)))
    T = make_triplets(embedding=hidden, n_triplets=n_music, noise=0.5,
                      noise_kind="gaussian", random_state=rng)
    agreement = 1.0 - triplet_error(hidden, T)     # answers consistent with the hidden points
    n_train = int(0.8 * n_music)
    X0 = rng.uniform(0.0, 1.0, size=(n_artists, music_dim))   # the reference code's rand(N, p)
    return T[:n_train], T[n_train:], X0, agreement


music = {}     # (loss, method) -> list over seeds of test-error traces
sbb0_steps, sbb0_failed = {}, {}
music_tuned = {}    # loss -> the tuned cvx step factor
for seed in range(music_seeds):
    T_train, T_test, X0, agreement = music_data(seed)
    test_err = lambda X: triplet_error(X, T_test)  # noqa: E731
    for loss in losses:
        for name, kw in music_methods(loss).items():
            trace, steps, failed = fit_trace(T_train, X0, test_err, loss,
                                             epochs=music_epochs, **kw)
            trace = trace + [np.nan] * (music_epochs + 1 - len(trace))   # diverged: no epochs
            music.setdefault((loss, name), []).append(trace[:music_epochs + 1])
            if name == "SVRG-SBB0":
                finite = steps[np.isfinite(steps)]
                sbb0_steps.setdefault(loss, []).append(float(finite.max()) if finite.size
                                                       else np.inf)
                sbb0_failed.setdefault(loss, []).append(failed)
        if loss in CONVEX:
            runs = cvx_steps(loss, T_train, X0, 3 * music_epochs, music_tuned)
            for kind, name in [("default", "projected GD (cvx)"),
                               ("tuned", "projected GD (cvx, tuned step)")]:
                music.setdefault((loss, name), []).append(
                    [test_err(X0)] + [test_err(X) for X in runs[kind]])
print(f"music analogue: {n_artists} artists, {n_genres} genres, triplets agreeing with the "
      f"hidden points: {agreement:.3f}")

early = min(5, music_epochs)       # "the initial epochs"
fig, axes = plt.subplots(1, len(losses), figsize=(4 * len(losses), 3.4), squeeze=False)
music_mean = {}
for ax, loss in zip(axes[0], losses):
    for (lo, name), traces in music.items():
        if lo != loss:
            continue
        curve = seed_mean(np.array(traces, dtype=float), axis=0)
        music_mean[loss, name] = curve
        ax.plot(np.arange(len(curve)), curve, label=name,
                ls="--" if "cvx" in name else "-")
    ax.axvline(early, color="k", ls=":", lw=0.8)
    ax.set(title=f"{loss} (music analogue)", xlabel="epoch", ylabel="test triplet error",
           ylim=(0.1, 0.6))
axes[0, 0].legend(fontsize=7)
fig.tight_layout()


def at(loss, name, epoch):
    values = np.array(music[loss, name], dtype=float)[:, epoch]
    return float(seed_mean(values)), float(seed_mean(values, reduce=np.nanstd))


baselines = ["SGD", "SVRG (fixed step)"]
faster, faster_auto = {}, {}   # loss -> SBB (best b) below every baseline at epoch `early`
for loss in losses:
    sbb = min(at(loss, f"SBB-epsilon b={b}", early)[0] for b in (1, 10))
    others = baselines + (["projected GD (cvx)"] if loss in CONVEX else [])
    # faster: at least 0.01 (one point of test error) below every baseline; less is a tie
    faster[loss] = all(sbb <= at(loss, name, early)[0] - 0.01 for name in others)
    faster_auto[loss] = all(at(loss, AUTO, early)[0] <= at(loss, name, early)[0] - 0.01
                            for name in others)
    for epoch in (early, music_epochs):
        print(f"{loss:5s} test error at epoch {epoch}: " + ", ".join(
            f"{name} {at(loss, name, epoch)[0]:.3f}+-{at(loss, name, epoch)[1]:.3f}"
            for name in others + ["SVRG-SBB0", "SBB-epsilon b=1", "SBB-epsilon b=10", AUTO]))

# %%
# SUN397 analogue (Table II, Fig. 5): retrieval from a label-triplet embedding
# ----------------------------------------------------------------------------
# Triplets come from the training labels only; the pixels are used only by the map that
# places the test images (RBF kernel of width the mean squared distance, ridge 0.1: the
# reference code's settings).  Each test image ranks the training images by distance in the
# embedding; Precision@K and Recall@K average over the test images, and AP sums p(s) dr(s)
# over the top 40 (so the best possible MAP is 40 / 60 with 60 training images per class).

digits_X, digits_y = load_digits(return_X_y=True)
digits_X = digits_X / 16.0
Ks = np.arange(40, 101, 10)


def sun_data(seed, noise):
    rng = np.random.RandomState(seed)
    train, test = [], []
    for c in range(n_sun_classes):
        idx = rng.permutation(np.flatnonzero(digits_y == c))
        train.append(idx[:per_class[0]])
        test.append(idx[per_class[0]:sum(per_class)])
    train, test = np.concatenate(train), np.concatenate(test)
    labels = digits_y[train]
    n = len(train)
    i = rng.randint(n, size=n_sun)
    same = [np.flatnonzero(labels == c) for c in range(n_sun_classes)]
    other = [np.flatnonzero(labels != c) for c in range(n_sun_classes)]
    j = np.array([rng.choice(same[labels[a]][same[labels[a]] != a]) for a in i])
    k = np.array([rng.choice(other[labels[a]]) for a in i])
    T = np.c_[i, j, k]
    swap = rng.uniform(size=n_sun) < noise
    T[swap] = T[swap][:, [0, 2, 1]]
    X0 = rng.uniform(0.0, 1.0, size=(n, n_sun_classes))
    return train, test, T[:sun_fit], X0


def rls_map(F_train, E_train, F_test, ridge=0.1):
    """RBF-kernel regularised least squares from features to the embedding."""
    def sqdist(A, B):
        return np.sum(A ** 2, 1)[:, None] + np.sum(B ** 2, 1)[None] - 2 * A @ B.T
    width = np.mean(sqdist(F_train, F_train))
    K = np.exp(-sqdist(F_train, F_train) / width)
    coef = np.linalg.solve(K + ridge * np.eye(len(K)), E_train)
    return np.exp(-sqdist(F_test, F_train) / width) @ coef


def retrieval(E_train, E_test, y_train, y_test, n_ap=40):
    """(MAP@40, Precision@K, Recall@K for K in ``Ks``) of test queries against training."""
    d = np.sum((E_test[:, None] - E_train[None]) ** 2, -1)
    order = np.argsort(d, axis=1, kind="stable")
    hits = (y_train[order] == y_test[:, None]).astype(float)
    n_rel = hits.sum(1, keepdims=True)
    tp = np.cumsum(hits, 1)
    precision = tp / np.arange(1, hits.shape[1] + 1)
    ap = np.sum(precision[:, :n_ap] * hits[:, :n_ap] / n_rel, 1)
    Kc = np.minimum(Ks, hits.shape[1]) - 1
    return float(ap.mean()), precision[:, Kc].mean(0), (tp[:, Kc] / n_rel).mean(0)


def sun_methods():
    methods = {"ncvx Batch (GD)": dict(solver="gd"),
               "ncvx SGD": dict(solver="sgd", batch_size=1),
               "ncvx SVRG (fixed step)": dict(solver="svrg", batch_size=1),
               "SVRG-SBB0": dict(solver="svrg_sbb", batch_size=1, epsilon=0.0)}
    for b in sun_batches:
        methods[f"SBB-epsilon b={b}"] = dict(solver="svrg_sbb", batch_size=b, epsilon=EPSILON)
    methods[AUTO] = dict(solver="svrg_sbb", batch_size=1, epsilon="auto")
    methods["L-BFGS (skstoch default)"] = dict(solver="lbfgs")
    return methods


sun = {}     # (noise, loss, method) -> list over seeds of (MAP, P@K, R@K)
sun_tuned = {}   # noise -> loss -> the tuned cvx step factor
sun_sbb0 = {}    # (noise, loss) -> list over seeds of (largest SBB0 step, diverged)
for noise in noises:
    for seed in range(sun_seeds):
        train, test, T_fit, X0 = sun_data(seed, noise)
        y_train, y_test = digits_y[train], digits_y[test]

        def score(E):
            if not np.all(np.isfinite(E)):
                return (np.nan, np.full(len(Ks), np.nan), np.full(len(Ks), np.nan))
            return retrieval(E, rls_map(digits_X[train], E, digits_X[test]), y_train, y_test)

        for loss in losses:
            for name, kw in sun_methods().items():
                final = {}

                def keep(X):
                    final["x"] = X.copy()
                    return 0.0
                _, steps, failed = fit_trace(T_fit, X0, keep, loss, epochs=sun_epochs, **kw)
                if name == "SVRG-SBB0":
                    finite = steps[np.isfinite(steps)]
                    sun_sbb0.setdefault((noise, loss), []).append(
                        (float(finite.max()) if finite.size else np.inf, failed))
                E = final.get("x") if not failed else np.full_like(X0, np.nan)
                sun.setdefault((noise, loss, name), []).append(score(E))
            if loss in CONVEX:
                if seed == 0:      # the tuned step on the first seed only (eigh is O(n^3))
                    runs = cvx_steps(loss, T_fit, X0, 3 * sun_epochs, sun_tuned.setdefault(
                        noise, {}))
                    sun.setdefault((noise, loss, "cvx, tuned step (seed 0)"), []).append(
                        score(runs["tuned"][-1]))
                else:
                    runs = {"default": projected_gd(loss, T_fit, X0, float(len(X0)),
                                                    3 * sun_epochs)}
                sun.setdefault((noise, loss, "cvx (projected GD)"), []).append(
                    score(runs["default"][-1]))
        print(f"SUN397 analogue: noise {noise:.0%}, seed {seed} done after "
              f"{time.perf_counter() - started:.0f} s", flush=True)
chance = 1.0 / n_sun_classes


def summary(noise, loss, name):
    rows = sun[noise, loss, name]
    maps = np.array([r[0] for r in rows])
    p_at = np.array([r[1] for r in rows])
    r_at = np.array([r[2] for r in rows])
    return maps, p_at, r_at


k60 = int(np.flatnonzero(Ks == 60)[0])
names = list(sun_methods()) + ["cvx (projected GD)", "cvx, tuned step (seed 0)"]
for noise in noises:
    print(f"\nTable II analogue, {noise:.0%} swapped triplets: MAP / P@60 (mean +- std over "
          f"{sun_seeds} seed(s); chance precision {chance:.3f})")
    print(f"{'method':26s}" + "".join(f"{loss:>22s}" for loss in losses))
    for name in names:
        cells = []
        for loss in losses:
            if (noise, loss, name) not in sun:
                cells.append(f"{'-':>22s}")
                continue
            maps, p_at, _ = summary(noise, loss, name)
            if np.all(np.isnan(maps)):
                cells.append(f"{'diverged':>22s}")
                continue
            cells.append(f"{seed_mean(maps):7.3f}+-{seed_mean(maps, reduce=np.nanstd):.3f} / "
                         f"{seed_mean(p_at[:, k60]):.3f}")
        print(f"{name:26s}" + "".join(cells))

fig, axes = plt.subplots(1, len(losses), figsize=(4 * len(losses), 3.4), squeeze=False)
for ax, loss in zip(axes[0], losses):
    for name in names:
        if (noises[-1], loss, name) in sun:
            ax.plot(Ks, seed_mean(summary(noises[-1], loss, name)[2], 0), marker="o", ms=3,
                    label=name, ls="--" if name.startswith(("cvx", "L-BFGS")) else "-")
    ax.set(title=f"{loss}, {noises[-1]:.0%} noise (digits)", xlabel="K", ylabel="Recall@K")
axes[0, 0].legend(fontsize=6)
fig.tight_layout()

# %%
# What this run says about the paper's claims
# -------------------------------------------
sbb_names = [f"SBB-epsilon b={b}" for b in sun_batches]
others = ["ncvx Batch (GD)", "ncvx SGD", "ncvx SVRG (fixed step)", "SVRG-SBB0"]


def mean_metric(noise, loss, name, which):
    maps, p_at, r_at = summary(noise, loss, name)
    values = {"map": maps, "p60": p_at[:, k60]}.get(which)
    return float(seed_mean(values)) if values is not None else seed_mean(r_at, 0)


best_map, best_p60, best_recall, margins = {}, {}, {}, []
for noise in noises:
    for loss in losses:
        sbb_map = max(mean_metric(noise, loss, n, "map") for n in sbb_names)
        rival = max(others, key=lambda n: np.nan_to_num(mean_metric(noise, loss, n, "map")))
        rival_map = mean_metric(noise, loss, rival, "map")
        spread = seed_mean([seed_mean(summary(noise, loss, n)[0], reduce=np.nanstd)
                            for n in sbb_names + [rival]], reduce=np.nanmax)
        best_map[noise, loss] = sbb_map >= rival_map - spread
        margins.append(f"{loss} {noise:.0%}: SBB-eps {sbb_map:.3f} vs {rival} {rival_map:.3f}")
        sbb_p = max(mean_metric(noise, loss, n, "p60") for n in sbb_names)
        best_p60[noise, loss] = sbb_p >= max(np.nan_to_num(mean_metric(noise, loss, n, "p60"))
                                            for n in others) - spread
        sbb_r = np.max([mean_metric(noise, loss, n, "recall") for n in sbb_names], 0)
        rival_r = np.max([np.nan_to_num(mean_metric(noise, loss, n, "recall"))
                          for n in others], 0)
        best_recall[noise, loss] = bool(np.all(sbb_r >= rival_r - spread))


def verdict(flags):
    flags = list(flags)
    return verdict_of(sum(flags), len(flags))


cvx_p60 = {(noise, loss): mean_metric(noise, loss, "cvx (projected GD)", "p60")
           for noise in noises for loss in losses if loss in CONVEX}
cvx_tuned_p60 = {key: mean_metric(*key, "cvx, tuned step (seed 0)", "p60") for key in cvx_p60}
batch_p60 = {(noise, loss): mean_metric(noise, loss, "ncvx Batch (GD)", "p60")
             for noise in noises for loss in losses}
near_chance = {key: v < 1.5 * chance for key, v in cvx_p60.items()}
lbfgs_map = {(noise, loss): mean_metric(noise, loss, "L-BFGS (skstoch default)", "map")
             for noise in noises for loss in losses}
sbb0_cells = [(noise, loss) for noise in noises for loss in losses
              if loss == "tste" or (loss == "ste" and noise >= 0.1)] or \
    [(noises[-1], losses[-1])]
sbb_best_map = {(noise, loss): max(mean_metric(noise, loss, n, "map") for n in sbb_names)
                for noise in noises for loss in losses}

# a fit whose objective grew beyond 1e4 times its start raises DivergenceError: its seed is
# left out of the means, and the protocols count such seeds
DIVERGED = ("; means over the seeds whose fit did not diverge (DivergenceError: the objective "
            "grew beyond 1e4 times its start or stopped being finite); diverged: {}")
music_protocol = (
    f"SYNTHETIC ANALOGUE of the aset400 data (not downloadable): {n_artists} objects in "
    f"{n_genres} Gaussian clusters in R^{music_dim}, {n_music} triplets answered from the hidden "
    f"distances with Gaussian response noise (sd 0.5, {agreement:.0%} agree with the hidden "
    f"points), 80/20 split, p={music_dim}, the same uniform [0,1) start for every method; "
    f"{music_epochs} epochs (paper: up to 1000), {music_seeds} seeds (paper: 50); SBB-epsilon "
    f"epsilon={EPSILON}, SGD/SVRG at the probed step, projected GD on the Gram matrix "
    f"(GNMDS, STE only) at step n (van der Maaten's default, inferred; tuned: best of n, 4n, "
    f"16n on seed 0, chosen {music_tuned}); 'initial epochs' read at epoch {early}"
    + DIVERGED.format(", ".join(
        f"{name} {loss} {k}/{len(traces)}" for (loss, name), traces in music.items()
        if (k := int(np.sum(np.isnan([trace[-1] for trace in traces]))))) or "none"))
sun_protocol = (
    f"SYNTHETIC ANALOGUE of SUN397 (not downloadable): scikit-learn digits (64 pixels, not "
    f"1,600-D deep features; {n_sun_classes} classes, not 18), {per_class[0]} train / "
    f"{per_class[1]} test images per class, {n_sun:,} label triplets (i, j same class, k "
    f"other), {sun_fit:,} fitted, {', '.join(f'{n:.0%}' for n in noises)} swapped; "
    f"p={n_sun_classes}; RBF-kernel RLS map (ridge 0.1) places the test images; test images "
    f"query the training images; {sun_epochs} epochs (reference code: 100), {sun_seeds} seeds; "
    f"epsilon={EPSILON}; cvx = projected GD on the Gram matrix for GNMDS and STE only, at "
    f"step n (van der Maaten's default, inferred), tuned on seed 0: best of n, 4n, 16n"
    + DIVERGED.format(", ".join(
        f"{name} {loss} {noise:.0%} {k}/{len(rows)}" for (noise, loss, name), rows in sun.items()
        if (k := int(np.sum(np.isnan([row[0] for row in rows]))))) or "none"))
claims = [
    claim("Fig. 4 (music artists): SBB-epsilon's test error decays faster than SGD, SVRG and "
          "projected GD in the initial epochs",
          protocol=music_protocol,
          ours="; ".join(
              f"{loss} at epoch {early}: SBB-eps b=1 {at(loss, 'SBB-epsilon b=1', early)[0]:.3f}"
              f"+-{at(loss, 'SBB-epsilon b=1', early)[1]:.3f}, b=10 "
              f"{at(loss, 'SBB-epsilon b=10', early)[0]:.3f}, SGD {at(loss, 'SGD', early)[0]:.3f}"
              f", SVRG {at(loss, 'SVRG (fixed step)', early)[0]:.3f}"
              + (f", projected GD {at(loss, 'projected GD (cvx)', early)[0]:.3f} (tuned step "
                 f"{at(loss, 'projected GD (cvx, tuned step)', early)[0]:.3f})"
                 if loss in CONVEX else "") for loss in losses),
          verdict=verdict(faster.values()),
          why=f"rule: the better SBB-epsilon (b=1 or 10) has a mean test error at epoch "
              f"{early} at least 0.01 below every baseline's, per loss; holds for "
              f"{sum(faster.values())} of {len(losses)} losses (synthetic data, not the "
              f"survey); projected GD at the paper's untuned step, its tuned step shown apart; "
              f"the paper gives no epsilon, and 0.01 caps an epoch's move m eta at 1 / epsilon "
              f"= 100 gradients, which binds here (see the epsilon='auto' row)"),
    claim("SVRG-SBB with skstoch's stabilizer (epsilon='auto', 0.05 x the probed curvature) "
          "on the music analogue: faster than SGD, SVRG and projected GD in the initial epochs",
          protocol=music_protocol + "; b=1",
          ours="; ".join(
              f"{loss} at epoch {early}: {at(loss, AUTO, early)[0]:.3f}+-"
              f"{at(loss, AUTO, early)[1]:.3f} (SBB0 {at(loss, 'SVRG-SBB0', early)[0]:.3f}); "
              f"at epoch {music_epochs}: {at(loss, AUTO, music_epochs)[0]:.3f}, SBB0 "
              f"{at(loss, 'SVRG-SBB0', music_epochs)[0]:.3f}, SBB-eps 0.01 "
              f"{at(loss, 'SBB-epsilon b=1', music_epochs)[0]:.3f}, SGD "
              f"{at(loss, 'SGD', music_epochs)[0]:.3f}, SVRG "
              f"{at(loss, 'SVRG (fixed step)', music_epochs)[0]:.3f}" for loss in losses),
          verdict=verdict(faster_auto.values()),
          why=f"same rule as the previous row; holds for {sum(faster_auto.values())} of "
              f"{len(losses)} losses; the errors at the end of the budget are shown too "
              f"(the music claim is about the initial epochs)",
          algorithm="ours"),
    claim("Fig. 4 (music artists): SVRG-SBB0 fails (step about 1e35)",
          protocol=music_protocol + "; SVRG-SBB0 = epsilon 0, b=1",
          ours="; ".join(
              f"{loss}: largest SBB0 step {max(sbb0_steps[loss]):.1e} (m * step "
              f"{max(sbb0_steps[loss]) * int(0.8 * n_music):.1e}), diverged in "
              f"{sum(sbb0_failed[loss])}/{music_seeds} seeds, test error at the end "
              f"{seed_mean(music_mean[loss, 'SVRG-SBB0'][-1]):.3f} vs SBB-eps "
              f"{music_mean[loss, 'SBB-epsilon b=1'][-1]:.3f}" for loss in losses),
          verdict=verdict(any(sbb0_failed[loss]) or max(sbb0_steps[loss]) > 1e10
                          for loss in losses),
          why="rule: a loss counts when SBB0 diverges (non-finite iterate) or its step exceeds "
              "1e10 in some seed; the blow-up needs <dx, dg> near 0, which depends on the data"),
    claim("Table II / Fig. 5 (SUN397): non-convex SVRG-SBB-epsilon gives the best MAP, "
          "precision and recall",
          protocol=sun_protocol + f"; baselines ncvx Batch (GD), SGD, fixed-step SVRG at the "
                                  f"probed step, SBB0; SBB-epsilon b in {sun_batches}",
          ours="MAP " + "; ".join(margins) + "; P@60 best in "
               f"{sum(best_p60.values())}/{len(best_p60)}, Recall@40..100 best in "
               f"{sum(best_recall.values())}/{len(best_recall)} (loss, noise) cells",
          verdict=verdict(list(best_map.values()) + list(best_p60.values())
                          + list(best_recall.values())),
          why="rule: the best SBB-epsilon batch size is within one seed-std of, or above, the "
              "best of the other non-convex solvers for MAP, P@60 and every Recall@K, per "
              "loss and noise level"),
    claim("Table II (SUN397): the convex route (and ncvx Batch) is about chance",
          protocol=sun_protocol + f"; 'about chance': P@60 below 1.5 x chance ({chance:.2f})",
          ours="P@60 cvx: " + ", ".join(f"{loss} {noise:.0%} {v:.3f}"
                                        for (noise, loss), v in cvx_p60.items())
               + "; cvx at the tuned step (seed 0): " + ", ".join(
                   f"{loss} {noise:.0%} {v:.3f} (x{sun_tuned[noise][loss]:g} n)"
                   for (noise, loss), v in cvx_tuned_p60.items())
               + "; ncvx Batch: " + ", ".join(f"{loss} {noise:.0%} {shown(v)}"
                                              for (noise, loss), v in batch_p60.items()),
          verdict=verdict(near_chance.values()),
          why="the verdict is on cvx at the paper's untuned step, with the same gradient "
              "budget and the top-p part of G as the paper; a tuned step is shown apart (the "
              "Batch rows are shown, the verdict is on cvx)"),
    claim("Table II (SUN397): SVRG-SBB0 fails (precision at chance) for t-STE at 5% and 10% "
          "noise and for STE at 10%",
          protocol=sun_protocol + "; SVRG-SBB0 = epsilon 0, b=1; 'at chance': P@60 below "
                                  f"1.5 x chance ({chance:.2f})",
          ours="; ".join(
              f"{loss} {noise:.0%}: P@60 SBB0 {mean_metric(noise, loss, 'SVRG-SBB0', 'p60'):.3f}"
              f" (SBB-eps b=1 {mean_metric(noise, loss, 'SBB-epsilon b=1', 'p60'):.3f}), "
              f"largest SBB0 step {max(v[0] for v in sun_sbb0[noise, loss]):.1e}, diverged "
              f"in {sum(v[1] for v in sun_sbb0[noise, loss])}/{sun_seeds} seeds"
              for noise, loss in sbb0_cells),
          verdict=verdict(mean_metric(*key, "SVRG-SBB0", "p60") < 1.5 * chance
                          for key in sbb0_cells),
          why="the cells where the paper's SBB0 is at chance (0.0555); SBB0 is a weaker "
              "solver here, not a failed one"),
    claim("SVRG-SBB with skstoch's stabilizer (epsilon='auto') on the SUN397 analogue: "
          "MAP against the paper's epsilon=0.01",
          protocol=sun_protocol + "; b=1",
          ours="MAP auto / best SBB-eps 0.01: " + "; ".join(
              f"{loss} {noise:.0%} {mean_metric(noise, loss, AUTO, 'map'):.3f} / "
              f"{sbb_best_map[noise, loss]:.3f}" for noise in noises for loss in losses),
          verdict=verdict(mean_metric(*key, AUTO, "map") >= sbb_best_map[key] - 0.02
                          for key in sbb_best_map),
          why="rule: within 0.02 MAP of the paper's stabilizer or above, per loss and noise",
          algorithm="ours"),
    claim("skstoch's default (L-BFGS) on the SUN397 analogue matches SVRG-SBB-epsilon's MAP",
          protocol=sun_protocol + f"; OrdinalEmbedding(solver='lbfgs', max_iter={sun_epochs})",
          ours="MAP L-BFGS / best SBB-eps: " + "; ".join(
              f"{loss} {noise:.0%} {lbfgs_map[noise, loss]:.3f} / "
              f"{sbb_best_map[noise, loss]:.3f}" for noise in noises for loss in losses),
          verdict=verdict(lbfgs_map[key] >= sbb_best_map[key] - 0.02 for key in lbfgs_map),
          why="rule: within 0.02 MAP of the best SBB-epsilon, per loss and noise level",
          algorithm="ours"),
]
path = record("000", "plot_ordinal_embedding_music_sun397.py",
              claims, fast=FAST)
for c in claims:
    print(f"[{c['verdict']}] ({c['algorithm']}) {c['claim']}: {c['ours']}")
print(f"total time {time.perf_counter() - started:.0f} s")

if matplotlib.get_backend().lower() != "agg":
    plt.show()
