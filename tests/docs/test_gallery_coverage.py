"""Every script of ``examples/`` (the documentation's gallery) runs in its quick mode in the suite.

The gallery build of ``make doc`` runs the same quick modes; this keeps a new example from
reaching the gallery without a test that calls its ``main(["--quick", ...])``.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
TESTS = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
         for p in (ROOT / "tests").rglob("test_*.py") if p != Path(__file__).resolve()}


def test_the_gallery_is_not_empty():
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_quick_mode_runs_in_a_test(example):
    # a test file that names the script and calls main with --quick
    callers = [name for name, text in TESTS.items()
               if re.search(rf"\b{re.escape(example.stem)}\b", text) and '"--quick"' in text]
    assert callers, f"no test runs examples/{example.name} in quick mode"
