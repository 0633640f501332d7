"""OrdinalEmbedding (SVRG-SBB) against cblearn's STE / TSTE / GNMDS / CKL / SOE.

For each loss and scale: cblearn (L-BFGS, its defaults; SOE with n_init=1) is fitted and its
test triplet error recorded; skstoch is then timed until its test error first reaches that
value (checked after every epoch by a callback whose own time is subtracted), and once more
with its default stopping rule.  Generated noise-free triplets, 10 dimensions.

Usage::

    PYTHONPATH=. /work/venv-bench/bin/python benchmarks/bench_ordinal_embedding.py small
    PYTHONPATH=. /work/venv-bench/bin/python benchmarks/bench_ordinal_embedding.py medium ste,tste
    PYTHONPATH=. /work/venv-bench/bin/python benchmarks/bench_ordinal_embedding.py large ste
"""
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Case, run_benchmark  # noqa: E402

from skstoch import OrdinalEmbedding  # noqa: E402
from skstoch._comparisons import check_comparisons  # noqa: E402
from skstoch._fast import _ordinal  # noqa: E402
from skstoch.datasets import make_embedding, make_triplets  # noqa: E402

SCALES = {  # name: (n_objects, n_train, n_test, max_iter of skstoch, repeat)
    "small": (100, 10_000, 10_000, 100, 3),
    "medium": (2_000, 1_000_000, 100_000, 100, 1),
    "large": (20_000, 10_000_000, 100_000, 60, 1),
}
DIM = 10


def generate(n_objects, n_total, seed=0):
    """Noise-free triplets in chunks (bounded memory for 10M triplets)."""
    E = make_embedding(n_objects, DIM, random_state=seed)
    chunks, rest, k = [], n_total, 0
    while rest > 0:
        size = min(rest, 1_000_000)
        chunks.append(make_triplets(embedding=E, n_triplets=size, random_state=seed + 1 + k)
                      .astype(np.int32))
        rest -= size
        k += 1
    return np.concatenate(chunks)


def error_kernel(T_test, n_objects):
    Q, _, _ = check_comparisons(T_test, n_objects=n_objects)
    out = np.empty(len(Q), dtype=np.int8)
    return lambda X: 1.0 - _ordinal.satisfied(Q, np.ascontiguousarray(X), out) / len(Q)


def cblearn_estimator(loss):
    from cblearn import embedding as cbe

    return {
        "ste": lambda: cbe.STE(DIM, random_state=0),
        "tste": lambda: cbe.TSTE(DIM, random_state=0),
        "gnmds": lambda: cbe.GNMDS(DIM, random_state=0),
        "ckl": lambda: cbe.CKL(DIM, random_state=0),
        "soe": lambda: cbe.SOE(DIM, n_init=1, random_state=0),
    }[loss]()


def main(scale, losses):
    n_objects, n_train, n_test, max_iter, repeat = SCALES[scale]
    T = generate(n_objects, n_train + n_test)
    T_train, T_test = T[:n_train], T[n_train:]
    test_error = error_kernel(T_test, n_objects)
    for loss in losses:
        target = {}
        cases = []
        if scale != "large":
            def fit_cb(loss=loss):
                est = cblearn_estimator(loss)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(T_train, n_objects=n_objects)
                target["error"] = test_error(est.embedding_)
                return est

            cases.append(Case(f"cblearn {loss.upper()}", "cblearn", fit_cb,
                              lambda est: {"test_error": test_error(est.embedding_),
                                           "n_iter": int(est.n_iter_)}))

        def fit_ours_to_target(loss=loss):
            spent, reached = [0.0], [None]

            def callback(record):
                t0 = time.perf_counter()
                err = test_error(record["x"])
                spent[0] += time.perf_counter() - t0
                if err <= target.get("error", -1.0):
                    reached[0] = err
                    return True
                return False

            est = OrdinalEmbedding(DIM, loss=loss, max_iter=max_iter, random_state=0,
                                   callback=callback)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(T_train, n_objects=n_objects)
            est.reached_ = reached[0] is not None
            return est, time.perf_counter() - start - spent[0]

        if scale != "large":
            cases.append(Case(f"skstoch {loss} svrg_sbb, to cblearn's test error", "skstoch",
                              fit_ours_to_target,
                              lambda est: {"test_error": test_error(est.embedding_),
                                           "n_iter": int(est.n_iter_),
                                           "reached_target": bool(est.reached_)},
                              external_timing=True))

        def fit_ours_default(loss=loss):
            est = OrdinalEmbedding(DIM, loss=loss, max_iter=max_iter, random_state=0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(T_train, n_objects=n_objects)
            return est

        cases.append(Case(f"skstoch {loss} svrg_sbb, max_iter={max_iter}", "skstoch",
                          fit_ours_default,
                          lambda est: {"test_error": test_error(est.embedding_),
                                       "n_iter": int(est.n_iter_),
                                       "peak_rss_MB": resource.getrusage(
                                           resource.RUSAGE_SELF).ru_maxrss / 1024}))
        run_benchmark(
            f"ordinal_embedding_{scale}_{loss}",
            f"{n_objects} objects in R^{DIM}, {n_train:,} noise-free training triplets, "
            f"{n_test:,} test triplets; loss {loss}",
            cases, repeat=repeat, warmup=0, baseline=cases[0].label,
            notes=("skstoch's time to target excludes the per-epoch test-error evaluation. "
                   "cblearn: scipy L-BFGS backend, default max_iter=1000, SOE with n_init=1. "
                   "peak_rss_MB is the process peak so far (includes data generation)."),
        )


if __name__ == "__main__":
    scale = sys.argv[1] if len(sys.argv) > 1 else "small"
    losses = sys.argv[2].split(",") if len(sys.argv) > 2 else ["ste", "tste", "gnmds", "ckl",
                                                                "soe"]
    main(scale, losses)
