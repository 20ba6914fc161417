"""Pages generated at build time from files the code writes.

The included pieces go to ``_generated/`` (excluded as documents); the API overview is
``_api_sections.rst`` next to ``api.rst``, which includes it.

* ``_generated/benchmarks_results.rst``: every ``benchmarks/results/*.json`` rendered by
  :mod:`benchmarks.report` (included by ``benchmarks.rst``);
* ``api/<module>.rst``: a page per public module with an autosummary table of its classes
  and functions, whose pages go to ``generated/`` (the names in ``__all__`` of the package
  and of each public subpackage, each listed once, so models and modules added later
  appear without editing a page); ``_api_sections.rst``: the overview of those pages;
* ``_generated/scorers_table.rst``: every registered scoring method;
* ``generated/reproduce/<name>.rst``: every Markdown report ``reproduce/<name>.md``
  converted to reStructuredText (listed by ``reproduction.rst``).  Reports written as
  ``.rst`` are used as they are.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import shutil
import sys
from pathlib import Path

from md2rst import markdown_to_rst

DOC = Path(__file__).resolve().parents[1]
ROOT = DOC.parent


def _write_if_changed(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def write_benchmarks(doc=DOC):
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from benchmarks.report import RESULTS_DIR, rst_page

    images = doc / "_generated" / "benchmarks"
    images.mkdir(parents=True, exist_ok=True)
    for png in RESULTS_DIR.glob("*.png"):
        target = images / png.name
        if not target.is_file() or target.read_bytes() != png.read_bytes():
            shutil.copyfile(png, target)
    _write_if_changed(doc / "_generated" / "benchmarks_results.rst",
                      rst_page(image_prefix="/_generated/benchmarks/"))


def write_reproduction_reports(doc=DOC):
    """Convert ``reproduce/*.md`` and return the generated document names."""
    out_dir = doc / "generated" / "reproduce"
    names = []
    for md in sorted((doc / "reproduce").glob("*.md")):
        if md.stem.upper() == "README":
            continue
        rst = markdown_to_rst(
            md.read_text(),
            image_prefix="/reproduce/",
            link_doc=lambda url: "/generated/reproduce/" + Path(url).stem,
            title=md.stem.replace("_", " "),
        )
        _write_if_changed(out_dir / f"{md.stem}.rst", rst)
        names.append(md.stem)
    if out_dir.is_dir():
        for stale in out_dir.glob("*.rst"):
            if stale.stem not in names:
                stale.unlink()
    return names


#: Sections of the API reference in this order; public modules not named here follow.
API_SECTIONS = [
    ("sklearn_vb", "Estimators"),
    ("sklearn_vb.base", "The VBEM loop"),
    ("sklearn_vb.emissions", "HMM emission families"),
    ("sklearn_vb.scoring", "Scoring"),
    ("sklearn_vb.model_selection", "Model selection"),
    ("sklearn_vb.datasets", "Data sets"),
    ("sklearn_vb.plotting", "Plotting"),
]


def _public_names(module):
    """Classes and functions, and the constants (named in ``__all__``, or upper-case
    names of a module without one): the constants become ``:data:`` targets."""
    listed = getattr(module, "__all__", None)
    names = listed if listed is not None else [n for n in vars(module) if not n.startswith("_")]
    out = []
    for name in names:
        obj = getattr(module, name, None)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            out.append((name, obj))
        elif (listed is not None or name.isupper()) and not name.startswith("_") and not (
                inspect.ismodule(obj) or callable(obj)):
            out.append((name, _Constant(module.__name__, (name, id(obj)))))
    return out


class _Constant:
    """Stands for a module-level constant in :func:`api_sections` (its value may be shared)."""

    def __init__(self, module, key):
        self.__module__ = module
        self.key = key


def api_sections():
    """``[(module name, title, [(name, object)])]`` of every public class and function."""
    import sklearn_vb

    modules = [m for m, _ in API_SECTIONS]
    titles = dict(API_SECTIONS)
    for info in sorted(pkgutil.iter_modules(sklearn_vb.__path__), key=lambda i: i.name):
        name = f"sklearn_vb.{info.name}"
        if not info.name.startswith("_") and name not in modules:
            modules.append(name)
    seen = set()
    sections = []
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        entries = []
        for obj_name, obj in _public_names(module):
            key = getattr(obj, "key", id(obj)) if isinstance(obj, _Constant) else id(obj)
            if key in seen or not (obj.__module__ or "").startswith("sklearn_vb"):
                continue
            seen.add(key)
            entries.append((obj_name, obj))
        if entries:
            title = titles.get(name) or name
            sections.append((name, title, entries))
    return sections


def write_api(doc=DOC):
    """One page per module under ``api/`` (its objects' pages are its children, so the API
    pages' sidebar is grouped by module) and the overview included by ``api.rst``: each
    module's title, first paragraph and a table of its objects.  Returns the pages written."""
    overview, pages = [], []
    for module, title, entries in api_sections():
        first = (inspect.getdoc(importlib.import_module(module)) or "").split("\n\n")[0]
        blurb = [first, ""] if module != "sklearn_vb" and first else []
        names = [f"   {n}" for n, _ in entries]
        page = f"api/{module}"
        pages.append(page)
        # ``module`` (not ``currentmodule``) on the module's page: the target of :mod: links
        _write_if_changed(doc / f"{page}.rst", "\n".join([
            title, "=" * (len(title) + 2), "", f".. module:: {module}", "", *blurb,
            ".. autosummary::", "   :toctree: ../generated/", "", *names, ""]))
        overview += [title, "-" * (len(title) + 2), "", f".. currentmodule:: {module}", "",
                     f":mod:`{module}`" + (f": {first}" if blurb else ""), "",
                     ".. autosummary::", "", *names, ""]
    overview[:0] = [".. toctree::", "   :hidden:", "", *[f"   {p}" for p in pages], ""]
    _write_if_changed(doc / "_api_sections.rst", "\n".join(overview))
    keep = {f"{module}.rst" for module, _, _ in api_sections()}
    for stale in (doc / "api").glob("*.rst"):
        if stale.name not in keep:
            stale.unlink()
    return pages


def defined_in_package(obj):
    """Whether a class member is sklearn_vb's own (not scikit-learn's or Python's).

    scikit-learn's estimator methods (``get_params``, ``set_params``, the
    ``set_*_request`` methods of metadata routing) are documented by scikit-learn;
    the class pages name them without repeating their docstrings.
    """
    for attr in ("fget", "__func__"):
        obj = getattr(obj, attr, None) or obj
    return (getattr(obj, "__module__", None) or "").startswith("sklearn_vb")


def class_members():
    """``{class path: {"own": [...], "foreign": [...]}}`` for every class of the API pages.

    The public methods of each class (as listed under the module that documents it),
    split by :func:`defined_in_package`; plain lists, so that Sphinx can cache them
    in its configuration (``autosummary_context``).
    """
    table = {}
    for module, _, entries in api_sections():
        for name, obj in entries:
            if not inspect.isclass(obj):
                continue
            own, foreign = [], []
            for member in dir(obj):
                if member.startswith("_"):
                    continue
                value = getattr(obj, member, None)
                if inspect.isroutine(value):
                    (own if defined_in_package(value) else foreign).append(member)
            table[f"{module}.{name}"] = {"own": own, "foreign": foreign}
    return table


def constant_docs():
    """``{constant path: {"doc": ..., "value": ...}}`` for the constants of the API pages.

    The text is the constant's ``#:`` comment in the module that assigns it (autodoc
    would look in the public module that re-exports it, find none, and show the
    docstring of the value's type); the value is its ``repr`` when that is short.
    """
    from sphinx.pycode import ModuleAnalyzer

    table = {}
    for module, _, entries in api_sections():
        for name, obj in entries:
            if not isinstance(obj, _Constant):
                continue
            value = getattr(importlib.import_module(module), name)
            doc = []
            for mod in sorted(m for m in list(sys.modules) if m.startswith("sklearn_vb")):
                if getattr(sys.modules[mod], name, None) is value:
                    try:
                        found = ModuleAnalyzer.for_module(mod).find_attr_docs().get(("", name))
                    except Exception:  # a module without source
                        found = None
                    if found:
                        doc = [line for line in found if line.strip()]
                        break
            text = repr(value)
            table[f"{module}.{name}"] = {"doc": " ".join(doc),
                                         "value": text if len(text) <= 70 else ""}
    return table


def skip_foreign_members(app, what, name, obj, skip, options):
    """autodoc: render the routines and properties sklearn_vb defines, not inherited ones."""
    if what == "class" and (inspect.isroutine(obj) or isinstance(obj, property)):
        if not defined_in_package(obj):
            return True
    return None


def write_scorers_table(doc=DOC):
    from sklearn_vb.scoring import SCORERS

    out = [".. list-table::", "   :header-rows: 1", "", "   * - method", "     - class",
           "     - summary"]
    for method, cls in SCORERS.items():
        summary = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
        out += [f"   * - ``{method}``", f"     - ``{cls.__module__}.{cls.__name__}``",
                f"     - {summary or ' '}"]
    _write_if_changed(doc / "_generated" / "scorers_table.rst", "\n".join(out) + "\n")


def write_reproduction_toc(doc=DOC):
    """The toctree of the reports: ``reproduce/*.rst`` as they are, converted ``*.md``."""
    converted = write_reproduction_reports(doc)
    native = sorted(p.stem for p in (doc / "reproduce").glob("*.rst")
                    if p.stem.upper() != "README")
    entries = [f"reproduce/{n}" for n in native]
    entries += [f"generated/reproduce/{n}" for n in converted if n not in native]
    if entries:
        text = "\n".join([".. toctree::", "   :maxdepth: 1", "", *[f"   {e}" for e in entries]])
    else:
        text = ("No report has been written yet; ``python -m sklearn_vb reproduce --help`` "
                "lists the experiments.")
    _write_if_changed(doc / "_generated" / "reproduce_toc.rst", text + "\n")


#: Titles of one identifier this long may be wider than the page's column at 1280 px.
LONG_TITLE = 20
_BREAK = re.compile(r"([_.])|(?<=[a-z])(?=[A-Z])")


def break_long_titles(app, doctree, docname):
    """Let a long identifier in a section title wrap after its underscores and dots and
    between the words of a CamelCase name.

    A zero-width space at each of those places in the rendered heading (the page
    titles of the sidebar, the search index and ``<title>`` are taken before this and
    keep the plain name): ``make_structure_discovery_sequences`` would otherwise run past
    its column, or be broken inside a word.
    """
    from docutils import nodes

    for title in doctree.findall(nodes.title):
        text = title.astext()
        if len(text) < LONG_TITLE or any(c.isspace() for c in text):
            continue
        for child in list(title.findall(nodes.Text)):
            broken = _BREAK.sub(lambda m: (m.group(1) or "") + "\u200b", child.astext())
            child.parent.replace(child, nodes.Text(broken))


def _generate(app):
    doc = Path(app.srcdir)
    # autosummary (connected after this) writes the object pages the module pages list
    app.config.autosummary_generate = [f"{page}.rst" for page in write_api(doc)]
    write_scorers_table(doc)
    write_benchmarks(doc)
    write_reproduction_toc(doc)


def setup(app):
    app.connect("builder-inited", _generate, priority=100)
    app.connect("autodoc-skip-member", skip_foreign_members)
    app.connect("doctree-resolved", break_long_titles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
