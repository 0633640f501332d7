"""Every gallery example runs in its fast mode (SKSTOCH_EXAMPLE_FAST=1), so the gallery cannot
rot.  One test per ``examples/plot_*.py`` file (the glob picks up new examples by itself);
the README's main demo ``examples/demo.py`` is run by tests/test_readme.py."""
import runpy
import sys
import warnings
from pathlib import Path

import pytest

from conftest import load_module

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))

matplotlib = pytest.importorskip("matplotlib", reason="the examples plot with matplotlib")


def test_examples_are_found():
    names = {path.name for path in EXAMPLES}
    assert "plot_quick_tour.py" in names


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_in_fast_mode(path, monkeypatch, tmp_path):
    source = path.read_text()
    # sphinx-gallery layout: a docstring title first, then "# %%" cells
    assert source.lstrip().startswith(('"""', "'''", 'r"""')), f"{path.name}: no docstring title"
    assert "# %%" in source, f"{path.name}: no '# %%' cells (sphinx-gallery style)"
    monkeypatch.setenv("SKSTOCH_EXAMPLE_FAST", "1")
    monkeypatch.setenv("SKSTOCH_FIGURES_DIR", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)  # anything written relative to the cwd lands in tmp_path
    monkeypatch.setattr(sys, "argv", [str(path)])
    # the examples' helper modules as after another test imported one of them: _reproduction
    # importable, examples/ not on sys.path, the other helpers not imported (an example that
    # put examples/ on sys.path only when _reproduction failed to import then failed)
    examples = str(ROOT / "examples")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != examples])
    for helper in (ROOT / "examples").glob("_*.py"):
        monkeypatch.delitem(sys.modules, helper.stem, raising=False)
    monkeypatch.setitem(sys.modules, "_reproduction",
                        load_module(ROOT / "examples" / "_reproduction.py"))
    import matplotlib.pyplot as plt

    plt.close("all")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # e.g. "FigureCanvasAgg is non-interactive"
        runpy.run_path(str(path), run_name="__main__")
    try:
        n_figures = len(plt.get_fignums())
        saved = [p for p in tmp_path.rglob("*") if p.suffix in (".png", ".svg", ".pdf")]
        assert n_figures > 0 or saved, f"{path.name} made no figure"
    finally:
        plt.close("all")


def test_cgvr_examples_slbfgs_baseline_is_lbfgs_on_the_cgvr_objective():
    """The SLBFGS baseline of the CGVR examples: its two-loop direction is -H g for the BFGS
    inverse Hessian built from its pairs, and it minimises CGVRClassifier's objective."""
    import numpy as np
    from sklearn.datasets import make_classification

    from skstoch import CGVRClassifier

    baselines = load_module(ROOT / "examples" / "_cgvr_baselines.py")
    X, y = make_classification(400, 8, random_state=0)
    X /= np.abs(X).max(axis=0)
    ref = CGVRClassifier("log_loss", alpha=1e-2, tol=1e-10, max_iter=300).fit(X, y)
    model = baselines.StochasticLBFGS("log_loss", alpha=1e-2, eta0=0.1, max_iter=40).fit(X, y)
    assert len(model._pairs) == model.memory
    assert model.history_["objective"][-1] <= ref.history_["objective"][-1] + 1e-8
    s, yv, _ = model._pairs[-1]
    H = (s @ yv) / (yv @ yv) * np.eye(len(s))
    for s, yv, rho in model._pairs:
        V = np.eye(len(s)) - rho * np.outer(yv, s)
        H = V.T @ H @ V + rho * np.outer(s, s)
    g = np.random.default_rng(0).normal(size=len(s))
    np.testing.assert_allclose(model._direction(g), -H @ g, rtol=1e-8, atol=1e-12)


def test_quick_tour_runs_without_convergence_warnings_and_does_not_silence_them(
        monkeypatch, tmp_path):
    """The gallery's first page is what a new user copies: it silenced ConvergenceWarning
    for "small-alpha candidates ... that do" warn, which none did any more (fast and full
    mode), teaching users to hide the warning."""
    path = ROOT / "examples" / "plot_quick_tour.py"
    source = path.read_text()
    assert "filterwarnings" not in source and "simplefilter" not in source
    from sklearn.exceptions import ConvergenceWarning

    monkeypatch.setenv("SKSTOCH_EXAMPLE_FAST", "1")
    monkeypatch.setenv("SKSTOCH_FIGURES_DIR", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    import matplotlib.pyplot as plt

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("error", ConvergenceWarning)
        runpy.run_path(str(path), run_name="__main__")
    plt.close("all")
