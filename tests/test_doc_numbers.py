"""Measured numbers in the documentation come from the result files that produce them.

* In the reStructuredText pages (``doc/*.rst``, ``doc/user_guide/*.rst``) a measured number
  is written ``:measured:`97.6% <reproduction/plot_lmnn_digits.json>``` (``doc/_ext/measured.py``).
  Every number in the role's text must appear, at the precision quoted, in that file, and
  the file must be one a command regenerates: a ``benchmarks/results/`` file of a benchmark
  family (``benchmarks/_harness.py``) or a gallery record (``doc/reproduction/*.json``,
  which holds its command).
* In docstrings, examples' prose and the READMEs, a paragraph that cites ``benchmarks/results/<file>`` or
  ``doc/reproduction/<file>`` quotes measurements (numbers with ``%``, ``x`` or ``s``) that
  must appear in the cited file(s).

The files are read as they are now, so a benchmark or example run that changes a number makes
this test fail until the text quoting it is updated.
"""
import ast
import json
import re
from pathlib import Path

import pytest

from conftest import load_module

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "doc"


measured = load_module(DOC / "_ext" / "measured.py")

NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.?\d+(?:[eE][-+]?\d+)?")


def numbers(text):
    """(value, tolerance) of every number written in ``text``, at the precision written."""
    out = []
    for token in NUMBER.findall(text):
        mantissa, _, exponent = token.replace(",", "").lower().partition("e")
        decimals = len(mantissa.partition(".")[2])
        scale = 10.0 ** int(exponent) if exponent else 1.0
        out.append((float(mantissa) * scale, 0.5 * 10.0 ** -decimals * scale * (1 + 1e-9)))
    return out


def file_values(path):
    return [v for v, _ in numbers(path.read_text())]


def found(value, tol, values, percent=False, times=False):
    """``value`` (quoted with ``tol``) is one of ``values`` rounded, or a fraction quoted in
    %, or (``times``: quoted as ``Nx``) the inverse of a ratio column (a speed-up)."""
    return any(abs(v - value) <= tol or (percent and abs(100 * v - value) <= tol)
               or (times and v > 0 and abs(1 / v - value) <= tol) for v in values)


def missing_numbers(text, paths):
    values = [v for p in paths for v in file_values(p)]
    bad = []
    for match in re.finditer(NUMBER, text):
        (value, tol), = numbers(match.group())
        after = text[match.end():match.end() + 2].lstrip()
        if not found(value, tol, values, after.startswith("%"), after.startswith("x")):
            bad.append(match.group())
    return bad


def regenerable(path):
    """The command that rewrites ``path``, or None."""
    if path.parent == measured.SOURCES["reproduction"]:
        return json.loads(path.read_text()).get("command")
    harness = load_module(ROOT / "benchmarks" / "_harness.py")
    family = harness.family_of(path.stem)
    return family and harness.FAMILIES[family].full


def rst_pages():
    return sorted(DOC.glob("*.rst")) + sorted((DOC / "user_guide").glob("*.rst"))


ROLES = [(page, m) for page in rst_pages() for m in measured.ROLE.finditer(page.read_text())]


def test_roles_are_found():
    assert ROLES, "no :measured: number in the documentation"


@pytest.mark.parametrize("page, match", ROLES, ids=[
    f"{p.stem}:{m['text'].strip()}" for p, m in ROLES])
def test_measured_number_is_in_its_source(page, match):
    paths = measured.sources(match["source"])
    for path in paths:
        assert path.exists(), f"{page.name}: {path.name} does not exist"
        assert regenerable(path), f"{page.name}: no command regenerates {path.name}"
    text = match["text"]
    assert numbers(text), f"{page.name}: {text!r} quotes no number"
    bad = missing_numbers(text, paths)
    assert not bad, (f"{page.name}: {bad} of {text!r} not in {match['source']} "
                     f"(stale? update the text from the current file)")


CITATION = re.compile(r"(?:benchmarks/results|doc/reproduction)/[\w.-]+\.(?:md|json)")
MEASUREMENT = re.compile(r"(\d*\.?\d+)\s*(?:%|x\b|s\b)")


def cited_paragraphs():
    """(where, paragraph, cited files) for the READMEs, docstrings and examples' comments."""
    out = []
    for path in [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]:
        for paragraph in re.split(r"\n\s*\n", path.read_text()):
            files = CITATION.findall(paragraph)
            if files:
                out.append((f"{path.relative_to(ROOT)}", paragraph, files))
    for path in sorted((ROOT / "skstoch").rglob("*.py")) + sorted((ROOT / "examples").glob("*.py")):
        texts = []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    texts.append(doc)
        texts.append("\n".join(line.strip().lstrip("#") for line in path.read_text().splitlines()
                               if line.strip().startswith("#")))
        for text in texts:
            # paragraphs; in numpydoc sections each unindented line starts an entry
            for paragraph in re.split(r"\n\s*\n|\n(?=\S)", text):
                files = CITATION.findall(paragraph)
                if files:
                    out.append((f"{path.relative_to(ROOT)}", paragraph, files))
    return out


CITED = cited_paragraphs()


@pytest.mark.parametrize("where, paragraph, files", CITED,
                         ids=[f"{w}:{f[0].rsplit('/', 1)[1]}" for w, _, f in CITED])
def test_cited_measurements_are_in_the_cited_file(where, paragraph, files):
    paths = [ROOT / f for f in files]
    for p in paths:
        assert p.exists(), f"{where} cites {p.relative_to(ROOT)}, which does not exist"
        assert regenerable(p), f"{where}: no command regenerates {p.relative_to(ROOT)}"
    quoted = " ".join(m.group(0) for m in MEASUREMENT.finditer(
        CITATION.sub("", paragraph)))
    bad = missing_numbers(quoted, paths)
    assert not bad, f"{where}: {bad} not in {files} (paragraph: {paragraph!r})"


def test_checks_can_fail(tmp_path):
    source = tmp_path / "x.md"
    source.write_text("| a | 0.9763 | 12.4 s | 3.1e-05 |\n")
    assert missing_numbers("97.6% and 0.98 and 12.4 s and 3.1e-5", [source]) == []
    assert missing_numbers("97.7% and 12.5 s and 3e-4", [source]) == ["97.7", "12.5", "3e-4"]
    source.write_text("| ratio | 0.0169 |\n")
    assert missing_numbers("59x", [source]) == [] and missing_numbers("59", [source]) == ["59"]
    with pytest.raises(ValueError):
        measured.resolve("benchmarks/x.md")
