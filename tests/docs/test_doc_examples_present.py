"""Every public class and function carries a runnable ``Examples`` section.

The public objects are the callables in ``__all__`` of the package and of each of its
public modules and subpackages (all public names of one without ``__all__``: the names
the API reference lists), so a model, scorer or helper added later is checked without
editing this file.  The examples themselves are
run by ``tests/docs/test_docstring_examples.py`` (a doctest per defining module); here we
check that they exist, that they contain code, and that none of it is skipped.
"""

import importlib
import inspect
import pkgutil
import re

import pytest

import sklearn_vb

#: Public callables that legitimately have no example.  Empty: every class (protocols,
#: warnings and exceptions included) and function can show a two-line use.  An entry
#: needs a comment saying why an example is impossible, not merely missing.
NO_EXAMPLE_POSSIBLE = {}

#: Public callables whose example is still to be written (expected failures, xfail);
#: remove an entry when its example is added.  Empty: every public callable has one.
KNOWN_MISSING: set = set()

_EXAMPLES_HEADER = re.compile(r"^[ \t]*Examples[ \t]*\n[ \t]*-{8,}[ \t]*$", re.MULTILINE)
_NEXT_SECTION = re.compile(r"^[ \t]*[A-Z][A-Za-z ]+[ \t]*\n[ \t]*-{3,}[ \t]*$", re.MULTILINE)


def _public_modules():
    """The package, its public top-level modules and subpackages, and the public
    subpackages nested in those (the layout of the API reference)."""
    names = ["sklearn_vb"]
    for info in pkgutil.walk_packages(sklearn_vb.__path__, "sklearn_vb."):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") for p in parts) or parts[-1] == "tests":
            continue
        if len(parts) == 1 or info.ispkg:
            names.append(info.name)
    return sorted(names)


def _public_callables():
    """``{qualified public name: object}``, each object once, under the first module
    (in sorted order) that exports it."""
    out, seen = {}, set()
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        # a module without __all__ exports its public names (as the API reference does)
        names = getattr(module, "__all__", None)
        if names is None:
            names = [n for n in vars(module) if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name)
            if not callable(obj) or id(obj) in seen:
                continue
            if not (getattr(obj, "__module__", "") or "").startswith("sklearn_vb"):
                continue
            seen.add(id(obj))
            out[f"{module_name}.{name}"] = obj
    return out


PUBLIC = _public_callables()


def examples_section(doc):
    """The text of the numpydoc ``Examples`` section of ``doc``, or None."""
    doc = inspect.cleandoc(doc or "")
    match = _EXAMPLES_HEADER.search(doc)
    if match is None:
        return None
    rest = doc[match.end():]
    following = _NEXT_SECTION.search(rest)
    return rest[:following.start()] if following else rest


def test_public_callables_are_found():
    # the discovery itself: estimators, scorers, subpackage helpers and protocols
    for name in ["sklearn_vb.VBHiddenMarkov", "sklearn_vb.scoring.score",
                 "sklearn_vb.scoring.ScoringModel", "sklearn_vb.emissions.EmissionFamily",
                 "sklearn_vb.base.VBEMEstimator", "sklearn_vb.mcmc.VariationalMCMC",
                 "sklearn_vb.bdmc_models.BayesianClustering"]:
        assert name in PUBLIC
    assert len(PUBLIC) > 60


def test_allow_lists_name_public_objects():
    stale = (set(NO_EXAMPLE_POSSIBLE) | KNOWN_MISSING) - set(PUBLIC)
    assert not stale, f"not public (any more): {sorted(stale)}; remove them from the lists"


@pytest.mark.parametrize("text, found", [
    ("Fit.\n\nExamples\n--------\n>>> 1 + 1\n2\n", True),
    ("Fit.\n\n    Examples\n    --------\n    >>> f()\n\n    Notes\n    -----\n    x\n", True),
    ("Fit.\n\n>>> 1 + 1\n2\n", False),                 # code, but no section
    ("Fit.\n\nSee the examples in the gallery.\n", False),
])
def test_examples_section_is_recognised(text, found):
    assert (examples_section(text) is not None) == found


@pytest.mark.parametrize("qualname", sorted(PUBLIC))
def test_public_callable_has_runnable_example(qualname):
    if qualname in NO_EXAMPLE_POSSIBLE:
        pytest.skip(NO_EXAMPLE_POSSIBLE[qualname])
    if qualname in KNOWN_MISSING:
        pytest.xfail("example not written yet")
    section = examples_section(PUBLIC[qualname].__doc__)
    assert section is not None, f"{qualname}: the docstring has no numpydoc 'Examples' section"
    assert ">>>" in section, f"{qualname}: the 'Examples' section holds no code"
    # a skipped example is one nobody runs: it can silently stop working
    assert "+SKIP" not in section, f"{qualname}: an example is marked '# doctest: +SKIP'"


def test_examples_are_collected_as_doctests():
    # tests/docs/test_docstring_examples.py runs the doctests of each module that defines an
    # object; an example that its collection misses (an object defined outside the
    # package's modules, a docstring assigned at run time) would never run
    import doctest

    finder = doctest.DocTestFinder(exclude_empty=True)
    collected = {}
    missing = []
    for qualname, obj in sorted(PUBLIC.items()):
        if qualname in NO_EXAMPLE_POSSIBLE or qualname in KNOWN_MISSING:
            continue
        module_name = obj.__module__
        if module_name not in collected:
            module = importlib.import_module(module_name)
            collected[module_name] = {t.name for t in finder.find(module, module_name)
                                      if t.examples}
        if f"{module_name}.{obj.__qualname__}" not in collected[module_name]:
            missing.append(qualname)
    assert not missing, f"examples the doctest run does not collect: {missing}"
