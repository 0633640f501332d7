"""Sphinx extension: the ``:measured:`` role marks a number quoted from a result file.

``:measured:`97.6% <reproduction/plot_lmnn_digits.json>``` renders as ``97.6%`` (an
abbreviation whose tooltip names the file) and tells ``tests/test_doc_numbers.py`` where the
number comes from (several files may be listed, separated by commas): ``results/<name>`` is ``benchmarks/results/<name>`` (written by a
benchmark script), ``reproduction/<name>`` is ``doc/reproduction/<name>`` (written by a
gallery example in full mode).  The test fails when the file no longer contains the number,
so a regenerated result cannot leave a stale number in the documentation.
"""
import re
from pathlib import Path

from docutils import nodes

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {"results": ROOT / "benchmarks" / "results", "reproduction": ROOT / "doc" / "reproduction"}
ROLE = re.compile(r":measured:`(?P<text>[^`<]*?)\s*<(?P<source>[^`>]+)>`", re.S)


def resolve(source):
    """``results/x.md`` or ``reproduction/x.json`` -> the file's path (ValueError if neither)."""
    kind, _, name = source.strip().partition("/")
    if kind not in SOURCES or not name or "/" in name:
        raise ValueError(f"measured source must be results/<file> or reproduction/<file>, "
                         f"got {source!r}")
    return SOURCES[kind] / name


def sources(source):
    """The paths of a role's comma-separated sources (the number may be in any of them)."""
    return [resolve(part) for part in source.split(",")]


def measured_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    match = ROLE.match(f":measured:`{text}`")
    if match is None:
        msg = inliner.reporter.error(f"measured: expected 'value <source>', got {text!r}",
                                     line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    value, source = match["text"].strip(), match["source"].strip()
    try:
        sources(source)
    except ValueError as exc:
        msg = inliner.reporter.error(str(exc), line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    return [nodes.abbreviation(value, value, explanation=f"measured: {source}")], []


def setup(app):
    app.add_role("measured", measured_role)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
