"""The browser check of the built site (doc/check_site.py) finds what it claims to find.

It runs on a tiny hand-written site, so it needs no documentation build; it is skipped
when Chromium is not installed, and the script itself then skips cleanly.
"""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "doc" / "check_site.py"


def _load():
    spec = importlib.util.spec_from_file_location("check_site", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360606060000000050001a5f645400000000049454e44ae426082"
)


def _site(root, broken):
    root.mkdir()
    (root / "fig.png").write_bytes(PNG)
    extra = ('<img src="missing.png"><a href="nowhere.html">x</a><a href="b.html#nope">y</a>'
             '<a href="c.html">c</a>') if broken else ""
    # the theme's header: one row (4rem) on every page but c.html, where it wraps
    header = '<style>:root {{ --pst-header-height: 4rem; }}</style><header style="height: {}">x</header>'
    (root / "index.html").write_text(
        f'<html><body>{header.format("4rem")}<main><h1 id="top">Site</h1><p>text</p><img src="fig.png">'
        f'<a href="b.html#sec">b</a>{extra}</main></body></html>')
    (root / "b.html").write_text(
        '<html><body><main><h1>B</h1><p id="sec">section</p>'
        '<a href="index.html#top">back</a></main></body></html>')
    # a formula left as TeX (its MathJax, off the site, does not load: a closed loopback
    # port), and a title too wide for 1280 px
    (root / "c.html").write_text(
        '<html><head><script src="http://127.0.0.1:9/mathjax/tex-chtml.js">'
        '</script></head><body>' + header.format("8rem") + '<main>'
        '<h1 style="white-space: nowrap">' + "Title " * 300 + '</h1>'
        '<p><span class="math">\\(x^2\\)</span></p></main></body></html>')
    # a search page whose results appear after load, as Sphinx's does
    (root / "search.html").write_text(
        "<html><body><main><h1>Search</h1><ul id='search-results'></ul></main><script>"
        "setTimeout(() => { document.getElementById('search-results').innerHTML = "
        "'<li>hit</li>'; }, 300);</script></body></html>")


def test_skips_cleanly_without_chromium(tmp_path, monkeypatch, capsys):
    module = _load()
    _site(tmp_path / "site", broken=False)
    monkeypatch.setattr(module, "find_chromium", lambda: None)
    assert module.main([str(tmp_path / "site")]) == 0
    assert "skipped" in capsys.readouterr().out


@pytest.mark.skipif(_load().find_chromium() is None, reason="Chromium is not installed")
def test_finds_broken_images_links_anchors_formulas_and_titles(tmp_path):
    module = _load()
    _site(tmp_path / "good", broken=False)
    assert module.check(tmp_path / "good", verbose=False) == []
    _site(tmp_path / "bad", broken=True)
    problems = module.check(tmp_path / "bad", verbose=False)
    assert any("image did not load: missing.png" in p for p in problems)
    assert any("broken link to nowhere.html" in p for p in problems)
    assert any("b.html#nope: no such anchor" in p for p in problems)
    assert any(p.startswith("c.html: formula not typeset: \\(x^2\\)") for p in problems)
    assert any(p.startswith("c.html: MathJax loaded from outside the site") for p in problems)
    assert any(p.startswith("c.html: title wider than its box at 1280 px") for p in problems)
    assert any(p.startswith("c.html: the header wraps onto a second row") for p in problems)
    assert len(problems) == 7, problems
