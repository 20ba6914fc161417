"""Sphinx-gallery hooks for the examples of ``examples/``.

The examples are command-line scripts: ``main(argv)`` parses ``--quick``, fits, prints and
saves its figures with ``Figure.savefig`` (then closes them), and the test suite calls
``main`` directly.  In the documentation build they run unchanged:

* :func:`reset_argv` passes ``--quick`` unless ``SKLEARN_VB_GALLERY=full`` is set, so the
  gallery builds in CI time;
* while the extension is active, ``Figure.savefig`` records the figure instead of writing
  the example's own file (the build never writes into ``examples/``), and
  :func:`scrape_saved_figures` writes every recorded figure, plus any figure still open,
  as the gallery's images.
"""

from __future__ import annotations

import os

from sphinx_gallery.scrapers import figure_rst

_recorded = []
_original_savefig = None


def reset_argv(gallery_conf, script_vars):
    """Command-line arguments of every example: its quick mode unless a full build is asked."""
    return [] if os.environ.get("SKLEARN_VB_GALLERY") == "full" else ["--quick"]


def _recording_savefig(fig, *args, **kwargs):
    if not any(f is fig for f in _recorded):
        _recorded.append(fig)


def scrape_saved_figures(block, block_vars, gallery_conf):
    """Write the figures that a code block saved or left open as gallery images."""
    import matplotlib.pyplot as plt

    figures = list(_recorded)
    _recorded.clear()
    for num in plt.get_fignums():
        fig = plt.figure(num)
        if not any(f is fig for f in figures):
            figures.append(fig)
    paths = []
    for fig, path in zip(figures, block_vars["image_path_iterator"]):
        _original_savefig(fig, path, dpi=90)
        paths.append(path)
    plt.close("all")
    if not paths:
        return ""
    return figure_rst(paths, gallery_conf["src_dir"])


def _install(app):
    global _original_savefig
    from matplotlib.figure import Figure

    if _original_savefig is None:
        _original_savefig = Figure.savefig
        Figure.savefig = _recording_savefig


def _uninstall(app, exception):
    global _original_savefig
    from matplotlib.figure import Figure

    if _original_savefig is not None:
        Figure.savefig = _original_savefig
        _original_savefig = None


def setup(app):
    app.connect("builder-inited", _install, priority=100)  # before the gallery runs
    app.connect("build-finished", _uninstall)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
