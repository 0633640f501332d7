"""skstoch main demo: every estimator inside Pipeline / GridSearchCV on bundled or generated data.

Prints one results table (held-out score, refit time of the best pipeline, iterations, best
parameters) and saves the convergence curves recorded in each fitted ``history_`` to
``examples/figures/demo_convergence.png``.

Run: ``python examples/demo.py`` (``SKSTOCH_EXAMPLE_FAST=1`` for a quick smaller run).
"""
import os
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_wine, make_moons
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import skstoch
from skstoch.datasets import make_semisupervised, make_triplets

FAST = os.environ.get("SKSTOCH_EXAMPLE_FAST") == "1"
FIGURES = Path(os.environ.get("SKSTOCH_FIGURES_DIR", Path(__file__).resolve().parent / "figures"))
CV = 3


def _split(X, y, seed=0):
    return train_test_split(X, y, test_size=0.3, random_state=seed, stratify=None)


def linear_demos():
    X_bc, y_bc = load_breast_cancer(return_X_y=True)
    X_db, y_db = load_diabetes(return_X_y=True)
    X_dg, y_dg = load_digits(return_X_y=True)
    if FAST:
        X_dg, y_dg = X_dg[:500], y_dg[:500]
    alphas = [1e-3, 1e-2] if FAST else [1e-4, 1e-3, 1e-2]
    yield ("CGVRClassifier", "breast_cancer",
           make_pipeline(StandardScaler(), skstoch.CGVRClassifier(random_state=0)),
           {"cgvrclassifier__alpha": alphas}, _split(X_bc, y_bc))
    yield ("CGVRRegressor", "diabetes",
           make_pipeline(StandardScaler(), skstoch.CGVRRegressor(random_state=0)),
           {"cgvrregressor__alpha": alphas}, _split(X_db, y_db))
    yield ("S3GDClassifier", "digits (10 classes)",
           make_pipeline(StandardScaler(), skstoch.S3GDClassifier(random_state=0)),
           {"s3gdclassifier__alpha": alphas}, _split(X_dg, y_dg))
    yield ("S3GDRegressor", "diabetes",
           make_pipeline(StandardScaler(), skstoch.S3GDRegressor(random_state=0)),
           {"s3gdregressor__alpha": alphas}, _split(X_db, y_db))
    yield ("ConstrainedLasso", "diabetes",
           make_pipeline(StandardScaler(), skstoch.ConstrainedLasso()),
           {"constrainedlasso__radius": [10.0, 50.0, 200.0]}, _split(X_db, y_db))
    # the radius chosen by its own cross-validated path; the grid search tunes the ridge term
    yield ("ConstrainedLassoCV", "diabetes",
           make_pipeline(StandardScaler(), skstoch.ConstrainedLassoCV(n_radii=10, cv=3)),
           {"constrainedlassocv__l2_reg": [0.0, 1e-2]}, _split(X_db, y_db))


def metric_demo():
    X, y = load_wine(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), skstoch.LMNNMetric(random_state=0),
                         KNeighborsClassifier(n_neighbors=3))
    yield ("LMNNMetric", "wine + 3-NN", pipe, {"lmnnmetric__n_components": [2, None]},
           _split(X, y))


def embedding_demo():
    n_objects = 60 if FAST else 100
    triplets = make_triplets(n_objects, 3000 if FAST else 10_000, 10, random_state=0)
    train, test = train_test_split(triplets, test_size=0.3, random_state=0)
    est = skstoch.OrdinalEmbedding(n_components=10, random_state=0)
    yield ("OrdinalEmbedding", f"{n_objects} objects, noise-free triplets", est,
           {"loss": ["ste", "gnmds"]}, (train, test, None, None), {"n_objects": n_objects})


def semi_supervised_demo():
    X, y = make_moons(600 if FAST else 2000, noise=0.1, random_state=0)
    X_train, X_test, y_train, y_test = _split(X, y)
    y_semi, _ = make_semisupervised(y_train, n_labeled=20, random_state=0)
    # GridSearchCV's default scoring is S3VMClassifier.score: accuracy on the labeled rows of
    # each validation fold (its unlabeled rows, -1, are not counted)
    pipe = make_pipeline(StandardScaler(), skstoch.S3VMClassifier(random_state=0))
    yield ("S3VMClassifier", "moons, 20 labels", pipe,
           {"s3vmclassifier__gamma": ["scale", 2.0, 5.0]}, (X_train, X_test, y_semi, y_test))


def run(name, data_name, estimator, grid, data, fit_params=None, scoring=None):
    X_train, X_test, y_train, y_test = data
    search = GridSearchCV(estimator, grid, cv=CV, scoring=scoring, n_jobs=1)
    search.fit(X_train, y_train, **(fit_params or {}))
    best = search.best_estimator_
    score = best.score(X_test) if y_test is None else best.score(X_test, y_test)
    model = best.steps[-2][1] if name == "LMNNMetric" else (
        best.steps[-1][1] if hasattr(best, "steps") else best)
    return {
        "estimator": name,
        "data": data_name,
        "test score": score,
        "refit s": search.refit_time_,
        "n_iter_": getattr(model, "n_iter_", ""),
        "best params": ", ".join(f"{k.split('__')[-1]}={v}" for k, v in search.best_params_.items()),
        "history": getattr(model, "history_", None),
    }


def print_table(rows):
    cols = ["estimator", "data", "test score", "refit s", "n_iter_", "best params"]
    cells = [[_fmt(row[c]) for c in cols] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(cols)]
    line = lambda values: "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths)) + " |"
    print(line(cols))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells:
        print(line(r))


def _fmt(value):
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (np.integer, np.floating)):
        return _fmt(value.item())
    return str(value)


def plot_histories(rows):
    import matplotlib

    if FAST or not os.environ.get("DISPLAY"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = []
    for row in rows:
        history = row["history"]
        if isinstance(history, list):
            history = history[0] if history else None
        if isinstance(history, dict) and len(history.get("objective", [])) > 1:
            curves.append((row["estimator"], history))
    n = len(curves)
    if n == 0:
        return None
    ncols = 3
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(4 * ncols, 3 * nrows), squeeze=False)
    for ax, (name, history) in zip(axes.ravel(), curves):
        objective = np.asarray(history["objective"], dtype=float)
        ax.plot(np.arange(1, len(objective) + 1), objective, marker=".")
        if np.all(objective > 0):
            ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("epoch / outer iteration")
        ax.set_ylabel("training objective")
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    fig.tight_layout()
    FIGURES.mkdir(parents=True, exist_ok=True)
    path = FIGURES / "demo_convergence.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def main():
    demos = [*linear_demos(), *metric_demo(), *embedding_demo(), *semi_supervised_demo()]
    rows = []
    for demo in demos:
        start = time.perf_counter()
        rows.append(run(*demo))
        print(f"  {demo[0]}: done in {time.perf_counter() - start:.2f} s", flush=True)
    print()
    print_table(rows)
    path = plot_histories(rows)
    if path is not None:
        print(f"\nconvergence curves saved to {path}")
    return rows


if __name__ == "__main__":
    main()
