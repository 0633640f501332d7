"""The benchmark harness times cases, computes ratios and reports skipped peers."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from _harness import Case, run_benchmark, to_markdown  # noqa: E402


def test_run_benchmark_ratios_and_skips(capsys):
    calls = []

    def missing_peer():
        raise ImportError("peer not installed")

    cases = [
        Case("fast", "numpy", fit=lambda: calls.append("fast") or sum(range(10**5)) or 1,
         evaluate=lambda f: {"score": 1.0}),
        Case("external", "numpy", fit=lambda: (2, 0.5), external_timing=True),
        Case("peer", "cblearn", fit=missing_peer),
    ]
    payload = run_benchmark("smoke", "toy", cases, repeat=3, warmup=2, baseline="external",
                            write=False)
    assert calls.count("fast") == 5  # 2 warm-up + 3 timed
    rows = {r["label"]: r for r in payload["results"]}
    assert rows["external"]["median_s"] == 0.5 and rows["external"]["ratio_to_baseline"] == 1.0
    assert rows["fast"]["ratio_to_baseline"] == rows["fast"]["median_s"] / 0.5
    assert "skipped" in rows["peer"]
    # CPU time is recorded for in-process fits only; a subprocess peer's is not ours to measure
    assert rows["fast"]["median_cpu_s"] >= 0 and len(rows["fast"]["cpu_times_s"]) == 3
    assert rows["external"]["median_cpu_s"] is None
    table = to_markdown(payload)
    assert "| fast | numpy |" in table and "skipped: peer not installed" in table
    assert payload["versions"]["numpy"] and payload["machine"]["cpu_count"]


# -- the accessor, the writer, quick mode, and the families the docs page shows -----------

import json  # noqa: E402
import os  # noqa: E402
import shlex  # noqa: E402
import subprocess  # noqa: E402

import pytest  # noqa: E402

import _harness  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_history_column_prefers_objective_and_falls_back_to_old_names():
    class Fitted:
        history_ = {"loss_estimate": [3.0, 2.0], "time": [0.1, 0.2]}

    assert _harness.history_column({"objective": [1.0], "loss": [9.0]}, "objective") == [1.0]
    assert _harness.history_column({"snapshot_objective": [2.0], "loss_estimate": [3.0]},
                                   "objective") == [2.0]
    assert _harness.history_column(Fitted(), "objective") == [3.0, 2.0]
    assert _harness.history_column({"loss": 0.5}, "objective") == 0.5       # a callback record
    assert _harness.history_column([{"objective": [1]}, {"loss": [2]}], "objective") == [[1], [2]]
    assert _harness.history_column(Fitted(), "time") == [0.1, 0.2]
    assert _harness.history_column(Fitted(), "passes", default="none") == "none"


def test_with_cpu_time_marks_the_object_its_fit_returns():
    class Fitted:
        pass

    fitted = Fitted()
    assert _harness.with_cpu_time(lambda: fitted)() is fitted
    assert isinstance(fitted.cpu_s_, float) and fitted.cpu_s_ >= 0.0


def test_quick_mode_writes_outside_results(tmp_path, monkeypatch):
    monkeypatch.setattr(_harness, "QUICK", True)
    monkeypatch.setenv("SKSTOCH_BENCH_RESULTS", str(tmp_path / "quick"))
    before = sorted(p.name for p in _harness.RESULTS_DIR.iterdir())
    path = _harness.write_results("toy_table", {"name": "toy_table", "rows": [1]}, "# toy\n")
    assert path == tmp_path / "quick" / "toy_table.json"
    payload = json.loads(path.read_text())
    assert payload["quick"] is True and payload["command"] and payload["date_utc"]
    assert payload["versions"]["numpy"] and payload["machine"]["cpu_count"]
    assert (tmp_path / "quick" / "toy_table.md").read_text() == "# toy\n"
    assert sorted(p.name for p in _harness.RESULTS_DIR.iterdir()) == before
    monkeypatch.setattr(_harness, "QUICK", False)
    assert _harness.results_dir() == _harness.RESULTS_DIR


def test_every_results_file_belongs_to_a_family_and_every_headline_exists():
    results = _harness.RESULTS_DIR
    stray = [p.name for p in results.iterdir() if _harness.family_of(p.stem) is None]
    assert not stray, f"results files no family benchmark writes: {stray}"
    scripts = {p.name for p in (ROOT / "benchmarks").glob("bench_*.py")}
    assert scripts == {f.script for f in _harness.FAMILIES.values()}   # one script per family
    for key, family in _harness.FAMILIES.items():
        assert (ROOT / "doc" / f"{family.guide}.rst").exists(), family.guide
        for stem in family.headline:
            assert _harness.family_of(stem) == key
            assert (results / f"{stem}.md").exists() or (results / f"{stem}.json").exists(), stem
        for name in family.figures:
            assert (results / name).exists(), name
        for command in family.quick + family.full:
            assert f"benchmarks/{family.script}" in command, command
        assert all(c.startswith("SKSTOCH_BENCH_QUICK=1 ") for c in family.quick)


def test_no_script_rewrites_a_private_module_constant():
    for path in (ROOT / "benchmarks").rglob("*.py"):
        text = path.read_text()
        # an assignment to an attribute of an skstoch module (monkeypatching its internals)
        assert "import skstoch.semi_supervised as" not in text, path.name
        for line in text.splitlines():
            stripped = line.strip()
            assert not (stripped.startswith(("ss.", "_ss.", "skstoch.")) and "=" in stripped
                        and "==" not in stripped), f"{path.name}: {stripped}"


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(_harness.FAMILIES))
def test_family_benchmark_runs_in_quick_mode(family, tmp_path):
    if os.environ.get("SKSTOCH_BENCH_SMOKE", "0") in ("", "0"):
        pytest.skip("the quick benchmark runs take about a minute of CPU per family (several "
                    "minutes of wall time on a loaded machine): set SKSTOCH_BENCH_SMOKE=1 "
                    "(benchmarks/README.md)")
    env = dict(os.environ, SKSTOCH_BENCH_RESULTS=str(tmp_path), MPLBACKEND="Agg")
    for command in _harness.FAMILIES[family].quick:
        words = shlex.split(command)     # VAR=value ... python benchmarks/<script> args
        env.update(dict(w.split("=", 1) for w in words[:words.index("python")]))
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        args = words[words.index("python") + 1:]
        proc = subprocess.run([sys.executable] + args, cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=1800)
        assert proc.returncode == 0, f"{command}\n{proc.stderr[-3000:]}"
    written = list(tmp_path.glob(f"{family}_*.json"))
    assert written, f"{family}: the quick run wrote no results file"
    assert all(json.loads(p.read_text()).get("quick") for p in written
               if isinstance(json.loads(p.read_text()), dict))


@pytest.mark.parametrize("solver", ["gd", "sgd", "svrg", "svrg_sbb"])
@pytest.mark.parametrize("probed", [True, False])
def test_ordinal_table1_counts_the_passes_fits_run(monkeypatch, solver, probed):
    """Table I's ``ifo`` column is a cost model, not a count: its full passes must be the
    ones a fit runs (the step probe once cost two where it now costs one)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from test_ordinal_embedding import _CountingKernels

    import bench_ordinal_embedding as bench
    from skstoch import OrdinalEmbedding
    from skstoch._solvers import ordinal
    from skstoch.datasets import make_triplets

    counting = _CountingKernels()
    monkeypatch.setattr(ordinal, "_ordinal", counting)
    counted = {}

    def callback(record):
        counted[record["epoch"]] = sum(kind == "gradient" for kind, _ in counting.passes)

    steps = {} if probed else {"eta0": 1e-3, "epsilon": 1e-3}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)     # tol=0: a fixed budget
        OrdinalEmbedding(loss="ste", solver=solver, max_iter=3, tol=0.0, random_state=0,
                         callback=callback, **steps).fit(make_triplets(random_state=0)[:2000],
                                                         n_objects=100)
    modelled = {epoch: bench.full_passes(solver, epoch, probed) for epoch in counted}
    assert counted == modelled
