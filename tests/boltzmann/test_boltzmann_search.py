"""Choosing the number of hidden units of a Boltzmann machine by evidence, and the
hidden-unit study of ``reproduce mrf`` in quick mode."""

import warnings

import numpy as np
import pytest

from sklearn_vb import BoltzmannMachine
from sklearn_vb.model_selection import StructureSearch
from sklearn_vb.reproduce._mrf_hidden import HIDDEN_STUDY, QUICK, dataset
from sklearn_vb.reproduce._runner import run_experiment


def test_search_over_hidden_units_finds_the_hidden_unit():
    X = dataset(dict(QUICK, seed=0), 1, 200, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = StructureSearch(BoltzmannMachine(random_state=0), {"n_hidden": [0, 1]},
                                 scoring=["hidden_laplace", "bic"], random_state=0).fit(X)
    res = search.results_
    # the data come from an RBM with one hidden unit: Laplace prefers it, BIC does not
    assert search.best_params_ == {"n_hidden": 1}
    assert res["score_bic"][0] > res["score_bic"][1]
    assert search.best_estimator_.n_hidden_ == 1


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return run_experiment(HIDDEN_STUDY, quick=True, verbose=0, out=tmp_path_factory.mktemp("h"))


def test_quick_study(study):
    s = study.summary
    e = s["errors"]
    # near the truth on the fits of the quick mode (5 visible units, N = 200)
    assert e["Laplace"]["mean_abs"] < 1.0
    # CS and VB lie below the evidence; the bound is never above AIS
    assert e["CS"]["mean"] < 0 and e["VB"]["mean"] < 0
    assert e["VB"]["raw_above_ais"] == 0
    # Laplace chooses the number of hidden units the AIS evidence chooses
    assert s["agreement_with_ais"]["Laplace"] == 1.0
    # tiny model against quadrature: Laplace exact to a few hundredths, CS and VB below
    t = s["tiny"]["30"]
    assert t["Laplace"]["mean_abs"] < 0.05 and t["CS"]["mean"] < -0.5 and t["VB"]["mean"] < -0.5
    assert s["tiny_vb_above_exact"] == 0
    assert "Hidden units" in study.report and "mrf_hidden_error.png" in study.report
