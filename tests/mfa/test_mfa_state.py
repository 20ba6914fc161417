"""The MFA keeps its state in typed containers read by attribute (mfa/_state.py)."""

import copy
import pickle

import numpy as np

from sklearn_vb.mfa import VBMixtureFactorAnalysers
from sklearn_vb.mfa._state import (BoundTerms, MFACompleteStats, MFAData, MFAPointState,
                                   MFAState)
from sklearn_vb.mfa._vbem import bound_terms
from sklearn_vb.scoring import scoring_model_for

from tests.mfa._mfa_problems import two_cluster_data


def _fit(**params):
    X = two_cluster_data(0)
    return VBMixtureFactorAnalysers(n_components=2, search=False, max_iter=15,
                                    random_state=0, **params).fit(X), X


def test_fitted_state_is_typed_and_holds_no_training_bookkeeping():
    m, X = _fit()
    st = m._vb_
    assert isinstance(st, MFAState)
    assert st.resp.shape == (X.shape[0], 2) and st.lam_mean.shape[:2] == (2, X.shape[1])
    # the statistics cache refers to the training data and is not part of the model
    assert st.stats_cache is None and st.prev_mass is None
    again = pickle.loads(pickle.dumps(m))._vb_
    assert isinstance(again, MFAState)
    np.testing.assert_array_equal(again.lam_cov, st.lam_cov)
    np.testing.assert_array_equal(m.score_samples(X), pickle.loads(pickle.dumps(m)).score_samples(X))


def test_snapshot_restores_the_state_after_a_change():
    m, X = _fit()
    before = copy.deepcopy(m._vb_)
    snapshot = m._snapshot()
    m._vb_.psi = 2.0 * m._vb_.psi
    m._vb_.lam_mean = np.zeros_like(m._vb_.lam_mean)
    m._restore(snapshot)
    np.testing.assert_array_equal(m._vb_.psi, before.psi)
    np.testing.assert_array_equal(m._vb_.lam_mean, before.lam_mean)


def test_bound_terms_are_named_and_sum_to_the_bound():
    m, X = _fit()
    data = m._check_fit_data(X)
    t = bound_terms(m._vb_, data)
    assert isinstance(t, BoundTerms)
    total = t.pi + sum(np.sum(v) for v in (t.nu, t.loading, t.assign, t.factor, t.lik))
    assert np.isclose(total + data.log_jacobian, m.lower_bound_, rtol=0, atol=1e-8)
    assert set(m.bound_terms_) == {"pi", "nu", "loading", "assign", "factor", "lik", "jacobian"}


def test_point_fit_state_is_typed():
    m, X = _fit(method="map")
    assert isinstance(m._vb_, MFAPointState) and m._point_fitted
    assert m._vb_.stats is None  # the E step's statistics of the training data
    assert np.isclose(m._vb_.objective, m.lower_bound_)


def test_scoring_model_data_and_statistics_are_typed():
    m, X = _fit()
    model = scoring_model_for(m)
    data = model.prepare_data(X)
    assert isinstance(data, MFAData) and model.prepare_data(data) is data
    np.testing.assert_allclose(data.Z, (X - m.feature_shift_) / m.feature_scale_)
    e = model.e_step(model.variational_posterior().mean(), data)
    assert isinstance(e.stats, MFACompleteStats)
    assert e.stats.n == X.shape[0] and np.isclose(e.stats.Nk.sum(), X.shape[0])
