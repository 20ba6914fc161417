"""Each estimator hands the scoring layer its own ScoringModel."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from sklearn_vb import VBDiscreteDAG, VBLinearDynamicalSystem, VBMixtureFactorAnalysers
from sklearn_vb.datasets import (BEAL_TRUE_CODE, bipartite_structure, make_beal_dag, make_lds,
                                 make_lds_params, make_mixed_dimension_clusters)
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.dag.scoring_model import DAGScoringModel
from sklearn_vb.lds.scoring_model import LDSScoringModel
from sklearn_vb.mfa.scoring_model import MFAScoringModel


def fitted_dag():
    X = make_beal_dag(150, random_state=0)
    est = VBDiscreteDAG(*bipartite_structure(BEAL_TRUE_CODE), n_init=1, random_state=0).fit(X)
    return est, X, {}


def fitted_lds():
    params = make_lds_params(2, 3, random_state=0)
    X, _ = make_lds(params, [40, 30], random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBLinearDynamicalSystem(n_states=2, max_iter=50, random_state=0).fit(X, lengths=[40, 30])
    return est, X, {"lengths": [40, 30]}


def fitted_mfa():
    X, _ = make_mixed_dimension_clusters(40, dims=(1, 2), n_features=4, random_state=0)
    est = VBMixtureFactorAnalysers(n_components=2, search=False, random_state=0).fit(X)
    return est, X, {}


@pytest.mark.parametrize("make, model_class", [
    (fitted_dag, DAGScoringModel), (fitted_lds, LDSScoringModel), (fitted_mfa, MFAScoringModel),
])
def test_scoring_model_is_the_estimators_own(make, model_class):
    est, X, fit_params = make()
    model = scoring_model_for(est)
    assert isinstance(model, model_class)
    # the likelihood at the posterior mean is the estimator's plug-in log-likelihood
    data = model.prepare_data(X, **fit_params) if hasattr(model, "prepare_data") else X
    mean = model.variational_posterior().mean()  # a batch of one parameter set
    loglik = float(model.log_likelihood(mean, data)[0])
    assert loglik == pytest.approx(est.score(X, **fit_params) * len(X), rel=1e-8)
    vb = score(est, X, "vb", **fit_params)
    assert vb.log_evidence == est.lower_bound_
    bic = score(est, X, "bic", **fit_params)
    assert np.isfinite(bic.log_evidence)


@pytest.mark.parametrize("est", [VBDiscreteDAG(), VBLinearDynamicalSystem(), VBMixtureFactorAnalysers()])
def test_scoring_model_needs_a_fitted_estimator(est):
    with pytest.raises(NotFittedError):
        scoring_model_for(est)
