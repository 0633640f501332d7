"""Per-epoch trace of Epro-SGD / Epro-SVRG on the benchmark's problems (user guide, round 7-8).

For each budget (in passes over the data) one fit with ``tol=0`` (the whole budget runs) and
``track_objective=True``: ``history_['objective']`` holds the objective of each epoch's
projected output, printed as the relative suboptimality (F - F*) / F*, with the epoch
lengths.  F* = the lower of our FISTA at tol=1e-13 and
scikit-learn's ElasticNet at tol=1e-10, exactly as in bench_constrained_lasso.py (same
``make_data``, radius rule and objective).  No timing: this explains the accuracy of the
benchmark rows (e.g. why more budget can give a worse output), it does not time anything.

Usage (``PYTHONPATH=.``):
    python benchmarks/lasso_epoch_trace.py [--kind dense|sparse] [--scale S]
        [--solver epro_sgd|epro_svrg] [--passes 0.1 0.3 1 3] [--seed 0]
The user guide's round-7 trace is ``--kind dense --scale 0.1`` (100,000 x 100).
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_constrained_lasso import ALPHA, reference_problem  # noqa: E402
from skstoch import ConstrainedLasso  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=["dense", "sparse", "hard"], default="dense")
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--solver", choices=["epro_sgd", "epro_svrg"], default="epro_sgd")
    parser.add_argument("--passes", type=float, nargs="+", default=[0.1, 0.3, 1, 3])
    parser.add_argument("--seed", type=int, default=0, help="random_state of the fits")
    args = parser.parse_args()

    X, y, radius, F, ref, enet = reference_problem(args.kind, args.scale)
    n, d = X.shape
    f_star = min(F(ref.coef_), F(enet.coef_))
    print(f"{args.kind} {n} x {d}, alpha={ALPHA}, radius={radius:.4g}, F*={f_star:.6g}, "
          f"solver={args.solver}, random_state={args.seed}")
    for passes in args.passes:
        budget = int(passes * n)
        kw = {}
        if args.solver == "epro_svrg" and passes < 1.2:
            kw["first_epoch_length"] = max(8, int((passes - 1) * n))
        model = ConstrainedLasso(alpha=ALPHA, radius=radius, solver=args.solver,
                                 max_iter=budget, tol=0, random_state=args.seed,
                                 track_objective=True, **kw).fit(X, y)
        h = model.history_
        per_epoch = [(float(f) - f_star) / f_star for f in h["objective"]]
        lengths = h.get("epoch_length")
        print(f"{passes:g} passes (budget {budget}, used {model.budget_used_}, "
              f"{model.n_epochs_} epochs, lam_={model.lam_:.4g}): "
              f"final {(F(model.coef_) - f_star) / f_star:.3g}")
        print("   per epoch: " + ", ".join(f"{v:.2g}" for v in per_epoch))
        if lengths is not None:
            print("   epoch lengths (steps): "
                  + ", ".join(str(int(v)) for v in np.asarray(lengths)))


if __name__ == "__main__":
    main()
