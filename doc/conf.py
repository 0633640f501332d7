"""Sphinx configuration of the skstoch documentation (build: make -C doc html)."""
import os
import sys

sys.path.insert(0, os.path.abspath(".."))

import skstoch  # noqa: E402

project = "skstoch"
version = release = skstoch.__version__
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]
try:
    import sphinx_gallery  # noqa: F401

    extensions.append("sphinx_gallery.gen_gallery")
    sphinx_gallery_conf = {
        "examples_dirs": "../examples",
        "gallery_dirs": "auto_examples",
        "filename_pattern": r"/plot_",
        "ignore_pattern": r"demo\.py",
    }
except ImportError:
    pass
autosummary_generate = True
numpydoc_show_class_members = False
exclude_patterns = ["_build"]
html_theme = "pydata_sphinx_theme"
