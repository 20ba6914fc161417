"""Warnings name the user's line, not a frame inside the package or scikit-learn."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.model_selection import StructureSearch

X = np.random.default_rng(0).standard_normal((80, 2))


def _caught(category, call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    found = [w for w in caught if issubclass(w.category, category)]
    assert found, f"no {category.__name__} was issued"
    return found


def test_a_fit_that_stops_at_max_iter_warns_at_the_callers_line():
    est = VBHiddenMarkov(3, emission="gaussian", max_iter=2, random_state=0)
    for w in _caught(ConvergenceWarning, lambda: est.fit(X)):
        assert w.filename == __file__


def test_inside_a_pipeline_the_warning_still_names_the_callers_line():
    pipe = make_pipeline(StandardScaler(),
                         VBHiddenMarkov(3, emission="gaussian", max_iter=2, random_state=0))
    for w in _caught(ConvergenceWarning, lambda: pipe.fit(X)):
        assert w.filename == __file__


def test_a_search_warning_names_the_callers_line():
    search = StructureSearch(VBHiddenMarkov(emission="gaussian", max_iter=200, random_state=0),
                             {"n_components": [1, 0]}, error_score=np.nan)
    for w in _caught(FitFailedWarning, lambda: search.fit(X)):
        assert w.filename == __file__
