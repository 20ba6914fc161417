"""Sphinx configuration for the sklearn_vb documentation (``make doc``)."""

import sklearn_vb

project = "sklearn_vb"
release = version = sklearn_vb.__version__
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
]
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn_vb {version}"
exclude_patterns = ["_build"]
