"""Every gallery example runs in its fast mode (SKSTOCH_EXAMPLE_FAST=1), so the gallery cannot
rot.  One test per ``examples/plot_*.py`` file (the glob picks up new examples by itself);
the README's main demo ``examples/demo.py`` is run by tests/test_readme.py."""
import runpy
import sys
import warnings
from pathlib import Path

import pytest

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
