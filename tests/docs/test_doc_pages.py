"""The pieces of the documentation site that are generated or converted at build time.

The full Sphinx build (``make doc``, with ``-W``) runs in ``.ci/run``; these tests check
the generators quickly: what they produce parses as reStructuredText without a single
warning, the README's speed table is the one the results files give, the API reference
lists every public class and function, and every example has the title the gallery needs.
"""

import ast
import importlib
import inspect
import re
import sys
from pathlib import Path

import docutils.core
import docutils.nodes
import docutils.utils
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "doc"
sys.path.insert(0, str(DOC / "_sphinxext"))
sys.path.insert(0, str(ROOT))

from md2rst import inline, markdown_to_rst  # noqa: E402

from benchmarks import report  # noqa: E402


def _parse_strict(rst):
    """Parse with docutils; any warning (level 2) raises."""
    settings = {"halt_level": 2, "report_level": 2, "warning_stream": False,
                "file_insertion_enabled": False, "raw_enabled": False}
    docutils.core.publish_doctree(rst, settings_overrides=settings)


def _strip_sphinx_roles(rst):
    # plain docutils does not know Sphinx's roles and directives
    rst = re.sub(r":doc:`([^`<]*?)\s*<[^>]+>`", r"\1", rst)
    return rst.replace(".. code-block:: text", "::")


MARKDOWN = """# AIS on the DAG class (n = 480)

Runs with `n_temperatures=16384` and **5 runs**; see [the thesis](https://example.org/x)
and [the MFA report](mfa.md).  Values like lower_bound_ and a*b or |x| stay text.

* total wall time: **503.5 s**
* rank of the true structure: ais 34, vb 104
  continued on a second line
  - a nested item with `code`

| stretch | beta start | acceptance |
|---|---:|---|
| 1 | 0.0000 | 0.123 |
| 2 | 0.0110 |

## Settings

```python
score(est, X, "ais")
```

![bound against size](dag_scores.png)

1. first
2. second
---
Closing paragraph with _emphasis_ and *more*.
"""


def test_markdown_report_converts_without_warnings():
    rst = markdown_to_rst(MARKDOWN, image_prefix="/reproduce/",
                          link_doc=lambda url: "/generated/reproduce/" + Path(url).stem)
    assert ".. list-table::" in rst and ".. code-block:: text" in rst
    assert ".. image:: /reproduce/dag_scores.png" in rst
    assert ":doc:`the MFA report </generated/reproduce/mfa>`" in rst
    assert "lower\\_bound\\_" in rst          # a trailing underscore is not a reference
    _parse_strict(_strip_sphinx_roles(rst.replace(".. image:: /reproduce/", ".. image:: ")))


def test_markdown_document_without_heading_gets_the_title():
    rst = markdown_to_rst("just text", title="dag ais")
    assert rst.splitlines()[:2] == ["dag ais", "=" * 9]
    _parse_strict(rst)


@pytest.mark.parametrize("text, expected", [
    ("`a`", "\\ ``a``\\ "),
    ("x**bold**y", "x\\ **bold**\\ y"),
    ("a_b_", "a\\_b\\_"),
    ("[t](https://u.org)", "\\ `t <https://u.org>`__\\ "),
])
def test_inline_markup(text, expected):
    assert inline(text) == expected


@pytest.mark.parametrize("md", sorted((ROOT / "benchmarks" / "results").glob("*.md")),
                         ids=lambda p: p.name)
def test_benchmark_markdown_reports_convert(md):
    # the reports the code writes today are Markdown tables like these
    _parse_strict(markdown_to_rst(md.read_text(), title=md.stem))


def test_benchmarks_page_parses_and_covers_every_results_file():
    rst = report.rst_page()
    _parse_strict("Benchmarks\n==========\n\n" + rst)
    for path in (ROOT / "benchmarks" / "results").glob("*.json"):
        assert f"benchmarks/results/{path.stem}.json" in rst


def test_benchmark_tables_drop_the_columns_no_measurement_fills():
    result = {"workload": "w", "per": "iteration", "measurements": [
        {"label": "ours", "status": "ok", "median_s": 1.0, "metrics": {}},
        {"label": "theirs", "status": "ok", "median_s": 2.0, "ratio_ours_over_theirs": 0.5,
         "metrics": {}},
    ]}
    table = "\n".join(report._workload_table(result))
    header = table.split("   * - ours")[0]
    for kept in ("library", "status", "median (s)", "ours ÷ theirs"):
        assert kept in header
    for dropped in ("first call (s)", "ms per iteration", "ratios", "metrics"):
        assert dropped not in header
    # every row has as many cells as the header
    rows = table.split("   * - ")[1:]
    assert len({row.count("     - ") for row in rows}) == 1


def test_benchmark_figures_each_in_their_own_section(tmp_path):
    for name in ("selection.json", "selection_quick.json", "scaling.json"):
        (tmp_path / name).write_text("{}")
    for name in ("selection.png", "selection_quick.png", "scaling.png", "scaling_memory.png"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in report.figures("selection", tmp_path)] == ["selection.png"]
    assert [p.name for p in report.figures("selection_quick", tmp_path)] == [
        "selection_quick.png"]
    assert [p.name for p in report.figures("scaling", tmp_path)] == [
        "scaling.png", "scaling_memory.png"]
    page = report.rst_page(image_prefix="/img/")
    for png in (ROOT / "benchmarks" / "results").glob("*.png"):
        assert page.count(f"/img/{png.name}") == 1, png.name


def test_every_section_with_ratios_has_its_figure():
    """A results file whose measurements have ratios ours / theirs shows a figure above
    its table (``python -m benchmarks.figures`` draws the missing ones)."""
    from benchmarks import figures, harness

    results_dir = ROOT / "benchmarks" / "results"
    for source in results_dir.glob("*.json"):
        if source.stem in figures._NO_RATIO_FIGURE:
            continue
        try:
            results = harness.load_results(source)
        except (KeyError, TypeError):
            continue
        if any(m.ratio_ours_over_theirs for r in results for m in r["measurements"]):
            assert report.figures(source.stem, results_dir), (
                f"{source.name} has ratios but no figure: run python -m benchmarks.figures")


def test_ratio_figure_draws_one_bar_per_ratio(tmp_path):
    from benchmarks import figures
    from benchmarks.harness import Measurement

    results = [{"workload": "w", "measurements": [
        Measurement("sklearn_vb", "ok", median_s=1.0),
        Measurement("peer", "ok", median_s=4.0, ratio_ours_over_theirs=0.25),
        Measurement("broken peer", "error")]}]
    assert figures.ratio_figure(results, tmp_path / "w.png").stat().st_size > 0
    assert figures.ratio_figure(results[:0], tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()


def test_readme_speed_table_is_generated_from_the_results():
    text = (ROOT / "README.md").read_text()
    assert report.README_START in text and report.README_END in text
    assert report.update_readme(check=True), (
        "README.md's speed table differs from benchmarks/results: run "
        "python -m benchmarks.report --readme")
    table = report.readme_speed_table()
    assert table.count("\n") == len(report.README_ROWS) + 1


def test_api_reference_lists_every_public_class_and_function():
    import vb_pages

    listed = {id(obj) for _, _, entries in vb_pages.api_sections() for _, obj in entries}
    for module_name in ["sklearn_vb", "sklearn_vb.scoring", "sklearn_vb.model_selection",
                        "sklearn_vb.emissions", "sklearn_vb.plotting"]:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                assert id(obj) in listed, f"{module_name}.{name} is not in the API reference"


def test_api_reference_has_a_page_per_module(tmp_path):
    import vb_pages

    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "sklearn_vb.gone.rst").write_text("a module no longer public")
    pages = vb_pages.write_api(tmp_path)
    modules = [module for module, _, _ in vb_pages.api_sections()]
    assert pages == [f"api/{module}" for module in modules]
    assert sorted(p.name for p in (tmp_path / "api").iterdir()) == sorted(
        f"{module}.rst" for module in modules)
    hmm = (tmp_path / "api" / "sklearn_vb.rst").read_text()
    assert ".. module:: sklearn_vb\n" in hmm and "   :toctree: ../generated/" in hmm
    assert "   VBHiddenMarkov" in hmm
    overview = (tmp_path / "_api_sections.rst").read_text()
    toctree = overview.split("\n\n")[1].split()
    assert toctree == pages
    # the overview links each object and names each module without declaring either
    assert ".. module::" not in overview and ":toctree:" not in overview.split("\n\n", 2)[2]
    assert all(f":mod:`{module}`" in overview for module in modules)


def test_scorers_table_lists_every_method(tmp_path):
    import vb_pages
    from sklearn_vb.scoring import SCORERS

    vb_pages.write_scorers_table(tmp_path)
    text = (tmp_path / "_generated" / "scorers_table.rst").read_text()
    _parse_strict(text)
    for method in SCORERS:
        assert f"``{method}``" in text


def test_reproduction_toc_takes_markdown_and_rst_reports(tmp_path):
    import vb_pages

    (tmp_path / "reproduce").mkdir()
    (tmp_path / "reproduce" / "hmm.md").write_text("# HMM\n\nsome text\n")
    (tmp_path / "reproduce" / "dag.rst").write_text("DAG\n===\n")
    vb_pages.write_reproduction_toc(tmp_path)
    toc = (tmp_path / "_generated" / "reproduce_toc.rst").read_text()
    assert "reproduce/dag" in toc and "generated/reproduce/hmm" in toc
    assert (tmp_path / "generated" / "reproduce" / "hmm.rst").read_text().startswith("HMM")
    (tmp_path / "reproduce" / "hmm.md").unlink()
    (tmp_path / "reproduce" / "dag.rst").unlink()
    vb_pages.write_reproduction_toc(tmp_path)
    assert "toctree" not in (tmp_path / "_generated" / "reproduce_toc.rst").read_text()
    assert not (tmp_path / "generated" / "reproduce" / "hmm.rst").exists()


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.py")),
                         ids=lambda p: p.name)
def test_examples_have_a_gallery_title_and_quick_mode(example):
    source = example.read_text()
    doc = ast.get_docstring(ast.parse(source), clean=False)
    lines = doc.splitlines()
    assert len(lines) > 1 and set(lines[1]) == {"="} and len(lines[1]) >= len(lines[0])
    assert '"--quick"' in source


def test_getting_started_code_is_valid_python():
    text = (DOC / "getting_started.rst").read_text()
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:    .*\n|\n)+)", text)
    assert len(blocks) >= 5
    for block in blocks:
        compile("\n".join(line[4:] for line in block.splitlines()), "getting_started", "exec")


def test_long_identifier_titles_wrap_between_words():
    import vb_pages

    rst = ("make_structure_discovery_sequences\n==================================\n\ntext\n\n"
           "VBMixtureFactorAnalysers\n------------------------\n\nShort title\n-----------\n")
    doctree = docutils.core.publish_doctree(rst, settings_overrides={"report_level": 5})
    vb_pages.break_long_titles(None, doctree, "page")
    titles = [t.astext() for t in doctree.findall(docutils.nodes.title)]
    assert titles == ["make_\u200bstructure_\u200bdiscovery_\u200bsequences",
                      "VBMixture\u200bFactor\u200bAnalysers", "Short title"]
