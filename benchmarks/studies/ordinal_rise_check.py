"""The check after OrdinalEmbedding's plateau stop: how far the returned objective rose above
the best recorded one, against the objective and held-out accuracy of a tight L-BFGS fit.

The paper's solvers ('svrg_sbb', 'svrg', 'sgd', 'gd') return the last iterate.  When a step
overshoots, the objective climbs, the best objective stops improving and the ``tol`` rule
stops as at a plateau; the fit then warns when ``result.extra["rise"]`` (the returned
objective minus the best recorded, over the decrease from the start) is above
``RISE_TOLERANCE`` (``skstoch/_solvers/ordinal.py``).  This records ``rise`` for every
default fit (``random_state=0``) of five losses x five solvers on four ``make_triplets``
draws (80 % of the triplets to fit, 20 % held out), with ``gap``: the fit's objective above
the tight L-BFGS one (``tol=1e-9``, ``max_iter=3000``) over the decrease from the start.
Re-run before changing the threshold.

Run: ``PYTHONPATH=. python benchmarks/studies/ordinal_rise_check.py`` (about a minute);
writes ``benchmarks/studies/results/ordinal_rise_check.md``.
"""
import warnings
from pathlib import Path

from sklearn.exceptions import ConvergenceWarning

from skstoch import OrdinalEmbedding
from skstoch._solvers.ordinal import RISE_TOLERANCE
from skstoch.datasets import make_triplets

DRAWS = [dict(random_state=0), dict(random_state=1, noise=0.1),
         dict(random_state=2, n_components=2, n_objects=200), dict(random_state=3, n_triplets=3000)]
LOSSES = ["ste", "tste", "gnmds", "ckl", "soe"]
SOLVERS = ["lbfgs", "svrg_sbb", "svrg", "sgd", "gd"]


def main():
    lines = [f"# OrdinalEmbedding: rise after a plateau stop (warns above {RISE_TOLERANCE})", "",
             "| draw | loss | solver | stop | warning | rise | gap | held-out | tight L-BFGS |",
             "|---|---|---|---|---|---|---|---|---|"]
    for draw in DRAWS:
        T = make_triplets(**draw)
        n, k = draw.get("n_objects", 100), int(0.8 * len(T))
        train, test = T[:k], T[k:]
        for loss in LOSSES:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                tight = OrdinalEmbedding(loss=loss, tol=1e-9, max_iter=3000,
                                         random_state=0).fit(train, n_objects=n)
            for solver in SOLVERS:
                est = OrdinalEmbedding(loss=loss, solver=solver, random_state=0)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    est.fit(train, n_objects=n)
                h = est.history_["objective"]
                start, best = h[0], min(h.min(), est.objective_)
                rise = (est.objective_ - best) / (start - best)
                gap = (est.objective_ - tight.objective_) / (start - tight.objective_)
                kind = ("rose" if any("rose" in str(w.message) for w in caught) else
                        "budget" if caught else "-")
                stop = "plateau" if est.n_iter_ < est.max_iter else "max_iter"
                lines.append(f"| {draw} | {loss} | {solver} | {stop} | {kind} | {rise:.4f} | "
                             f"{gap:.4f} | {est.score(test):.4f} | {tight.score(test):.4f} |")
                print(lines[-1], flush=True)
    out = Path(__file__).parent / "results" / "ordinal_rise_check.md"
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
