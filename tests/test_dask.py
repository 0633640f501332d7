"""Scale-out: GridSearchCV and cross_validate over every public estimator through joblib's
Dask backend on a dask.distributed LocalCluster with separate worker processes (127.0.0.1
only) give the same best parameters and scores as the local run (issue 10).

The estimators are pickled to the worker processes and fitted there; with a fixed
``random_state`` the fits are bitwise reproducible, so the scores must be equal, not close.
"""
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from test_reproducibility import NAMES, data, make

distributed = pytest.importorskip("distributed")
joblib = pytest.importorskip("joblib")

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]

# one small grid per estimator (2 values of a parameter that changes the fit)
GRIDS = {
    "CGVRClassifier": {"alpha": [1e-3, 1e-1]},
    "CGVRRegressor": {"alpha": [1e-3, 1e1]},
    "ConstrainedLasso": {"radius": [0.3, 3.0]},
    "ConstrainedLassoCV": {"n_radii": [2, 3]},
    "LMNNMetric": {"c": [0.2, 0.8]},
    "OrdinalEmbedding": {"n_components": [1, 2]},
    "S3GDClassifier": {"alpha": [1e-4, 1e-1]},
    "S3GDRegressor": {"alpha": [1e-4, 1e1]},
    "S3VMClassifier": {"C": [0.1, 10.0]},
}


def _search_args(name):
    args = data(name)
    fit_params = {}
    if name == "OrdinalEmbedding":
        # every fold must know all objects (its score rejects unseen indices)
        fit_params["n_objects"] = int(args[0].max()) + 1
    return args, fit_params


def _estimator(name):
    est = make(name, random_state=0)
    if name == "LMNNMetric":
        from sklearn.neighbors import KNeighborsClassifier
        from sklearn.pipeline import make_pipeline

        return make_pipeline(est, KNeighborsClassifier(3)), {
            f"lmnnmetric__{k}": v for k, v in GRIDS[name].items()}
    return est, GRIDS[name]


def _run(name, backend_kwargs=None):
    est, grid = _estimator(name)
    args, fit_params = _search_args(name)
    cv = KFold(3, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if backend_kwargs is None:
            search = GridSearchCV(est, grid, cv=cv, n_jobs=1).fit(*args, **fit_params)
            cvr = cross_validate(est, *args, cv=cv, n_jobs=1, params=fit_params or None)
        else:
            with joblib.parallel_backend("dask", **backend_kwargs):
                search = GridSearchCV(est, grid, cv=cv, n_jobs=-1).fit(*args, **fit_params)
                cvr = cross_validate(est, *args, cv=cv, n_jobs=-1,
                                     params=fit_params or None)
    return (search.best_params_, search.cv_results_["mean_test_score"],
            search.cv_results_["split0_test_score"], cvr["test_score"])


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"),
                                           os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = env["PYTHONPATH"]   # inherited by the spawned workers
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address=None, protocol="tcp",
                           silence_logs=40, worker_dashboard_address=None)
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def test_cluster_runs_separate_processes_on_localhost(client):
    workers = client.scheduler_info()["workers"]
    assert len(workers) == 2
    assert all(addr.startswith("tcp://127.0.0.1:") for addr in workers)
    pids = set(client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids
    # the workers import the same skstoch as this process
    import skstoch

    files = set(client.run(lambda: __import__("skstoch").__file__).values())
    assert files == {skstoch.__file__}


@pytest.mark.parametrize("name", NAMES)
def test_grid_search_and_cross_validate_on_dask_equal_local(client, name):
    local = _run(name)
    remote = _run(name, backend_kwargs={})
    assert remote[0] == local[0], (remote[0], local[0])
    for got, want in zip(remote[1:], local[1:]):
        np.testing.assert_array_equal(got, want)
    assert np.all(np.isfinite(local[1]))
