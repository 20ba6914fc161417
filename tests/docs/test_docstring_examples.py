"""The ``Examples`` sections of the package's docstrings run as doctests.

Every module of ``sklearn_vb`` is collected (the API reference is generated from the same
docstrings, so what a reader copies from it has been run).  Examples must stay fast: a
few tiny fits at most.
"""

import doctest
import importlib
import pkgutil
import warnings

import numpy as np
import pytest

import sklearn_vb


def _modules():
    names = ["sklearn_vb"]
    for info in pkgutil.walk_packages(sklearn_vb.__path__, "sklearn_vb."):
        if ".tests" in info.name or info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return sorted(names)


def _doctests(module_name):
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    # the finder keeps only objects defined in the module itself, so an object
    # re-exported by a package is tested once, in the module that defines it
    return [t for t in finder.find(module, module_name) if t.examples]


MODULES = [m for m in _modules() if _doctests(m)]


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_run(module_name):
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures = []
    with warnings.catch_warnings(), np.printoptions(legacy="1.25"):
        warnings.simplefilter("ignore")
        for test in _doctests(module_name):
            result = runner.run(test, out=failures.append)
            assert result.attempted > 0
    assert not failures, "".join(failures)


def test_doctests_are_collected():
    # the collection itself is what this file relies on: docstrings with examples exist
    # in the estimators, the scorers and the data sets
    assert {"sklearn_vb.hmm._estimator", "sklearn_vb.datasets._hmm", "sklearn_vb._core.numerics"} <= set(MODULES)


#: the public objects a new user meets first: each docstring has a runnable example
CORE = [
    "sklearn_vb.VBHiddenMarkov", "sklearn_vb.VBMixtureFactorAnalysers",
    "sklearn_vb.VBLinearDynamicalSystem", "sklearn_vb.VBDiscreteDAG",
    "sklearn_vb.scoring.score", "sklearn_vb.scoring.get_scorer",
    "sklearn_vb.scoring.ScoreResult", "sklearn_vb.scoring.scoring_model_for",
    "sklearn_vb.model_selection.StructureSearch", "sklearn_vb.model_selection.DAGStructureSearch",
    "sklearn_vb.model_selection.SequenceKFold", "sklearn_vb.datasets.make_hmm_sequences",
    "sklearn_vb.datasets.make_lds", "sklearn_vb.datasets.make_beal_dag",
    "sklearn_vb.datasets.make_mixed_dimension_clusters",
] + [f"sklearn_vb.plotting.{name}" for name in importlib.import_module("sklearn_vb.plotting").__all__]


@pytest.mark.parametrize("qualname", CORE)
def test_core_objects_have_runnable_examples(qualname):
    module_name, name = qualname.rsplit(".", 1)
    doc = getattr(importlib.import_module(module_name), name).__doc__ or ""
    assert ">>>" in doc, f"{qualname} has no runnable example in its docstring"
