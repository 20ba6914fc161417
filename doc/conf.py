"""Sphinx configuration for the sklearn_vb documentation (``make doc``).

``make doc`` builds with ``-W`` (every warning is an error).  The gallery runs every script
of ``examples/`` in its quick mode; ``SKLEARN_VB_GALLERY=full make doc`` runs the full
experiments, and ``SKLEARN_VB_GALLERY=skip`` builds without running them.
"""

import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_sphinxext"))

import sklearn_vb  # noqa: E402
from vb_pages import class_members, constant_docs  # noqa: E402

project = "sklearn_vb"
copyright = "the sklearn_vb developers"
release = version = sklearn_vb.__version__
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    # MathJax 3 copied into _static/mathjax: formulas render without the network
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "numpydoc",
    "vb_gallery",
    "vb_pages",
    "sphinx_gallery.gen_gallery",
]
# the API pages api/<module>.rst are generated (vb_pages), which then names them here
# for autosummary to scan
autosummary_generate = []
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
numpydoc_xref_param_type = False
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn_vb {version}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # a search icon (Ctrl+K opens the same search box) rather than a search field, which at
    # 1280 px wrapped the header onto a second row
    "navbar_persistent": ["search-button"],
}
html_show_sourcelink = False
# pages without sub-pages: no empty "Section Navigation" column (the tables get its width)
html_sidebars = {page: [] for page in ("getting_started", "scores", "limits", "benchmarks",
                                       "architecture", "extending")}
# "fit()" rather than "VBHiddenMarkov.fit()" in a page's table of contents (it fits the
# right-hand column)
toc_object_entries_show_parents = "hide"
templates_path = ["_templates"]
# _templates/autosummary/class.rst: a table of the methods, then each method's docstring
# and _templates/autosummary/data.rst: a constant with its ``#:`` comment
autosummary_context = {"vb_members": class_members(), "vb_constants": constant_docs()}
exclude_patterns = ["_build", "_generated", "_api_sections.rst", "reproduce/README*",
                    "**/GALLERY_HEADER.rst"]
# every cross-reference must resolve (``make doc`` also passes -n)
nitpicky = True
# Types for which no inventory is available offline (see _inv/README): NumPy and pandas
# publish none in Debian's packages; they appear in signatures' type hints.
nitpick_ignore = [
    ("py:class", "numpy.ndarray"),
    ("py:class", "np.ndarray"),
    ("py:class", "pandas.DataFrame"),
]
# The inventories are shipped in _inv/ (from Debian's documentation packages), so the
# build needs no network; the links point to each project's online documentation.
intersphinx_mapping = {
    "python": ("https://docs.python.org/3/", "_inv/python.inv"),
    "scipy": ("https://docs.scipy.org/doc/scipy/", "_inv/scipy.inv"),
    "sklearn": ("https://scikit-learn.org/stable/", "_inv/sklearn.inv"),
}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    # every script of examples/ is an example (they are not named plot_*)
    "filename_pattern": r"\.py$",
    "ignore_pattern": r"__init__\.py|/_",
    "plot_gallery": "False" if os.environ.get("SKLEARN_VB_GALLERY") == "skip" else "True",
    "reset_argv": "vb_gallery.reset_argv",
    "image_scrapers": ("vb_gallery.scrape_saved_figures",),
    "abort_on_example_error": True,
    "download_all_examples": False,
    "show_memory": False,
    "min_reported_time": 1,
    "doc_module": ("sklearn_vb",),
    "backreferences_dir": "generated/backreferences",
    "reference_url": {"sklearn_vb": None},
    "remove_config_comments": True,
    # its pages load their table scripts from a CDN, which an offline reader lacks
    "write_computation_times": False,
}
