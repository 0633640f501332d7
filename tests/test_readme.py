"""The README's two fresh-machine commands stay true: the files they name exist, CI runs the
same install and test commands, and the main demo runs (fast mode)."""
import re
import runpy
import warnings
from pathlib import Path

import pytest
from sklearn.exceptions import ConvergenceWarning

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_readme_starts_with_demo_and_test_commands():
    demo, tests = _readme_commands()[:2]
    assert 'pip install ".[examples]"' in demo and "examples/demo.py" in demo
    assert (ROOT / "examples" / "demo.py").exists()
    assert 'pip install -e ".[test]"' in tests and "python -m pytest" in tests
    head = (ROOT / "README.md").read_text().splitlines()[:12]
    assert any("examples/demo.py" in line for line in head)


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'pip install -e ".[test]"' in ci
    assert "python -m pytest" in ci


@pytest.mark.slow
def test_main_demo_runs_every_estimator(monkeypatch, tmp_path, capsys):
    import skstoch

    monkeypatch.setenv("SKSTOCH_EXAMPLE_FAST", "1")
    monkeypatch.setenv("SKSTOCH_FIGURES_DIR", str(tmp_path))
    namespace = runpy.run_path(str(ROOT / "examples" / "demo.py"), run_name="demo")
    with warnings.catch_warnings():
        # the defaults converge on the demo's data: a first run shows no ConvergenceWarning
        warnings.simplefilter("error", ConvergenceWarning)
        rows = namespace["main"]()
    fitted = {row["estimator"] for row in rows}
    public = {name for name in skstoch.__all__ if name[0].isupper()}
    assert public <= fitted
    for row in rows:
        assert 0.0 <= row["test score"] <= 1.0 or row["estimator"].endswith(("Regressor", "Lasso"))
    assert (tmp_path / "demo_convergence.png").stat().st_size > 0
    out = capsys.readouterr().out
    assert "| estimator" in out


def test_main_demo_does_not_silence_warnings():
    """The demo is what a first-time user runs and copies: it must not hide warnings (it
    wrapped every search in simplefilter("ignore", ConvergenceWarning), which hid nothing by
    now but taught users to silence them)."""
    source = (ROOT / "examples" / "demo.py").read_text()
    assert "simplefilter" not in source and "filterwarnings" not in source
