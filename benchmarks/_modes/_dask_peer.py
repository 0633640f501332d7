"""dask-ml side of ``bench_dask.py``, run by the peer's interpreter (its own environment).

Not imported: ``bench_dask.py`` passes this file's text to the peer interpreter
(``_harness.run_in_subprocess``), which reads a JSON payload on stdin (the cluster, the
problems, skstoch's reference optima) and prints one JSON line: for every problem and
dask-ml solver the trace of (time, distributed passes, data passes, objective) and the
coefficients reached.

How passes are counted (dask-ml does not report them):

* ``lbfgs`` (dask-glm's ``lbfgs``: scipy's L-BFGS-B on the full objective): every call of its
  loss-and-gradient function is one distributed pass (one ``compute`` of the loss and the
  gradient over all chunks).  The call also returns the objective, so the trace is exact
  and the fit is stopped at the first call that reaches the target.
* ``admm`` (dask-glm's ``admm``): every iteration is one distributed round in which each
  chunk runs its own L-BFGS-B (up to 250 evaluations) on its rows; data passes = local
  evaluations summed over the chunks / number of chunks (counted on the workers by a
  wrapper of ``local_update``).  The consensus iterate ``z`` is evaluated after every round
  (one extra pass whose time is subtracted from the trace) to stop at the target.
"""
import json
import sys
import time

payload = json.loads(sys.stdin.read())
sys.path.insert(0, payload["benchmarks_dir"])

import dask  # noqa: E402
import numpy as np  # noqa: E402
from distributed import Client, LocalCluster, get_worker, wait  # noqa: E402

import _dask_problem as P  # noqa: E402


class _Stop(Exception):
    pass


def counting_local_update(X, y, beta, z, u, rho, f, fprime, solver=None):
    """dask-glm's ``local_update`` (same solver and budgets), counting evaluations."""
    from scipy.optimize import fmin_l_bfgs_b

    beta, u, z = beta.ravel(), u.ravel(), z.ravel()
    beta, _, info = fmin_l_bfgs_b(f, beta, fprime=fprime, args=(X, y, z, u, rho),
                                  maxiter=200, maxfun=250)
    worker = get_worker()
    worker._skstoch_funcalls = getattr(worker, "_skstoch_funcalls", 0) + info["funcalls"]
    return beta


def _funcalls(client):
    counts = client.run(lambda dask_worker: getattr(dask_worker, "_skstoch_funcalls", 0))
    return int(sum(counts.values()))


def run_lbfgs(est, X, y, scale, target, max_passes):
    import dask_glm.algorithms as algorithms

    trace = {"time": [], "passes": [], "data_passes": [], "objective": [], "coef": None}
    original = algorithms.fmin_l_bfgs_b
    start = [0.0]

    def traced(func, x0, fprime=None, args=(), **kwargs):
        def loss_grad(beta, *a):
            loss, grad = func(beta, *a)
            f = float(loss) / scale
            trace["time"].append(time.perf_counter() - start[0])
            trace["passes"].append(len(trace["time"]))
            trace["data_passes"].append(len(trace["time"]))
            trace["objective"].append(f)
            trace["coef"] = np.array(beta, dtype=float).tolist()
            if f <= target or len(trace["time"]) >= max_passes:
                raise _Stop
            return loss, grad

        try:
            return original(loss_grad, x0, fprime=fprime, args=args, **kwargs)
        except _Stop:
            return np.asarray(trace["coef"]), None, {}

    algorithms.fmin_l_bfgs_b = traced
    try:
        start[0] = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - start[0]
    finally:
        algorithms.fmin_l_bfgs_b = original
    trace["coef"] = np.ravel(est.coef_).tolist()
    return trace, seconds


def run_admm(est, X, y, kind, alpha, target, max_seconds, client):
    import dask_glm.algorithms as algorithms
    from dask_glm.regularizers import L2

    n_chunks = X.numblocks[0]
    trace = {"time": [], "passes": [], "data_passes": [], "objective": [], "coef": None}
    state = {"start": 0.0, "excluded": 0.0, "calls0": _funcalls(client)}

    class TracedL2(L2):
        def proximal_operator(self, beta, t):
            z = super().proximal_operator(beta, t)
            now = time.perf_counter()
            elapsed = now - state["start"] - state["excluded"]
            f = float(P.objectives(kind, X, y, z, alpha)[0])
            calls = _funcalls(client) - state["calls0"]
            state["excluded"] += time.perf_counter() - now
            trace["time"].append(elapsed)
            trace["passes"].append(len(trace["time"]))
            trace["data_passes"].append(calls / n_chunks)
            trace["objective"].append(f)
            trace["coef"] = np.array(z, dtype=float).tolist()
            if f <= target or elapsed >= max_seconds:
                raise _Stop
            return z

    est.set_params(penalty=TracedL2())
    original = algorithms.local_update
    algorithms.local_update = counting_local_update
    try:
        state["start"] = time.perf_counter()
        try:
            est.fit(X, y)
        except _Stop:
            pass
        seconds = time.perf_counter() - state["start"] - state["excluded"]
    finally:
        algorithms.local_update = original
    return trace, seconds


def main():
    import dask_glm
    import dask_ml
    from dask_ml.linear_model import LinearRegression, LogisticRegression

    cluster_kw = payload["cluster"]
    out = {"versions": {"dask-ml": dask_ml.__version__, "dask-glm": dask_glm.__version__,
                        "dask": dask.__version__, "numpy": np.__version__},
           "python": sys.executable, "problems": {}}
    with dask.config.set(payload["dask_config"]), \
            LocalCluster(**cluster_kw) as cluster, Client(cluster) as client:
        import distributed
        out["versions"]["distributed"] = distributed.__version__
        for prob in payload["problems"]:
            kind, alpha = prob["kind"], prob["alpha"]
            X, y = P.make_data(kind, prob["n"], prob["d"], prob["chunk_rows"], prob["seed"])
            X, y = client.persist([X, y])
            wait([X, y])
            result = {"checksum": P.checksum(X, y), "solvers": {}}
            C, scale = P.dask_ml_scale(kind, prob["n"], alpha)
            Model = LogisticRegression if kind == "logistic" else LinearRegression
            # untimed warm-up on one chunk: imports on the workers
            rows_1 = X.chunks[0][0]
            for solver in prob["solvers"]:
                Model(C=C, fit_intercept=False, solver=solver, max_iter=2,
                      solver_kwargs={"normalize": False}).fit(X[:rows_1], y[:rows_1])
            for solver in prob["solvers"]:
                common = dict(penalty="l2", C=C, fit_intercept=False, solver=solver)
                if solver == "lbfgs":
                    est = Model(**common, tol=0.0, max_iter=prob["max_passes"],
                                solver_kwargs={"normalize": False})
                    trace, seconds = run_lbfgs(est, X, y, scale, prob["target"],
                                               prob["max_passes"])
                else:
                    est = Model(**common, max_iter=prob["max_rounds"],
                                solver_kwargs={"normalize": False, "abstol": 0.0,
                                               "reltol": 0.0})
                    trace, seconds = run_admm(est, X, y, kind, alpha, prob["target"],
                                              prob["max_seconds"], client)
                coef = np.asarray(trace["coef"])
                trace["final_objective"] = float(P.objectives(kind, X, y, coef, alpha)[0])
                trace["seconds"] = seconds
                result["solvers"][solver] = trace
                print(f"[dask-ml] {kind} {solver}: {seconds:.3g} s, "
                      f"{len(trace['time'])} passes/rounds, f = {trace['final_objective']!r}",
                      file=sys.stderr, flush=True)
            out["problems"][prob["name"]] = result
            del X, y
    print(json.dumps(out))


main()
