"""Sphinx configuration of the skstoch documentation.

Build: ``make -C doc html`` (warnings are errors) or
``python -m sphinx -W --keep-going -b html doc doc/_build/html``.

The gallery runs every ``examples/plot_*.py`` during the build.  By default they run in their
fast mode (``SKSTOCH_EXAMPLE_FAST=1``: smaller sizes, the build stays short); export
``SKSTOCH_EXAMPLE_FAST=0`` before the build for the full-size figures (``make -C doc published``
does: that is how the published site is built).

The benchmarks page is generated at build time from ``benchmarks/results/*.json`` (and the
``.md`` files that have no JSON twin, and any images there) by :mod:`_ext.benchmarks_page`.
"""
import os
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent
ROOT = DOC.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOC))

# examples in fast mode unless the caller asked otherwise (read by every example script)
os.environ.setdefault("SKSTOCH_EXAMPLE_FAST", "1")
# examples that save figures to disk write them into the build tree, not into the sources
os.environ.setdefault("SKSTOCH_FIGURES_DIR", str(DOC / "_build" / "example_figures"))

import skstoch  # noqa: E402

project = "skstoch"
author = "the skstoch developers"
copyright = "the skstoch developers, BSD-3-Clause"
version = release = skstoch.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "_ext.benchmarks_page",
    "_ext.reproduction_page",
    "_ext.measured",
    "_ext.plain_docstrings",
    "_ext.mathml",
]
# formulas become MathML at build time: the site renders them offline (no MathJax CDN)
html_math_renderer = "mathml"

templates_path = ["_templates"]
exclude_patterns = ["_build", "_generated", "**/_generated", "Thumbs.db", ".DS_Store"]
root_doc = "index"
default_role = "literal"
nitpicky = False

# -- API reference -------------------------------------------------------------------------
autosummary_generate = True
autodoc_default_options = {"members": False, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- gallery -------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    # run only the plot_* scripts; demo.py (the README's main demo) is shown, never executed
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"(demo|__init__|_reproduction|_cgvr_baselines|_s3gd_baselines|_epro_time)\.py",
    "within_subsection_order": "FileNameSortKey",
    # "Examples using X" under each class of the API reference
    "doc_module": ("skstoch",),
    "backreferences_dir": "gen_modules/backreferences",
    "reference_url": {"skstoch": None},
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "capture_repr": ("_repr_html_", "__repr__"),
    "show_memory": False,
    "min_reported_time": 1,
}

# -- HTML ----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"skstoch {release}"
html_static_path = []
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"getting_started": [], "scaling_out": [], "benchmarks": []}
