"""The fixed costs of a fit, paid by every fit of a structure search: what is made once
per class, once per fit, or not at all.

Each test counts the calls of the costly piece (making scikit-learn's constraint
objects, copying the fitted state, the KL divergences of q(theta)) and checks that the
saving changes nothing a user sees (error messages, fitted values).
"""

import warnings

import numpy as np
import pytest
import sklearn.utils._param_validation as param_validation
from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

import sklearn_vb._core.base as base
from sklearn_vb import VBHiddenMarkov
from sklearn_vb.hmm._vbem import kl_terms


def _frames(seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(-3, 1, (100, 1)), rng.normal(3, 1, (100, 1))])


def _fit(**params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return VBHiddenMarkov(emission="gaussian", random_state=0, **params).fit(
            _frames(), lengths=[100, 100])


def test_parameter_constraints_are_made_once_per_class(monkeypatch):
    calls = []
    real = param_validation.make_constraint

    def counting(constraint):
        calls.append(constraint)
        return real(constraint)

    monkeypatch.setattr(param_validation, "make_constraint", counting)
    monkeypatch.setattr(base, "make_constraint", counting, raising=False)
    base.__dict__.get("_MADE_CONSTRAINTS", {}).clear()
    _fit(n_components=2, max_iter=2)
    assert calls, "the first fit of the class makes the constraint objects"
    calls.clear()
    _fit(n_components=3, max_iter=2, tol=1e-3)
    assert calls == []


@pytest.mark.parametrize("params", [{"n_components": 0}, {"tol": -1.0},
                                    {"n_components": 0, "tol": -1.0},
                                    {"init_params": "nonsense"}])
def test_invalid_parameters_give_scikit_learns_message(params):
    est = VBHiddenMarkov(emission="gaussian", **params)
    with pytest.raises(InvalidParameterError) as expected:
        validate_parameter_constraints(est._parameter_constraints, est.get_params(deep=False),
                                       caller_name="VBHiddenMarkov")
    with pytest.raises(InvalidParameterError) as raised:
        est.fit(_frames(), lengths=[100, 100])
    assert str(raised.value) == str(expected.value)


def test_a_single_run_is_kept_without_copying_its_state(monkeypatch):
    copies = []
    real = base.VBEMEstimator._get_state

    def counting(self):
        copies.append(1)
        return real(self)

    monkeypatch.setattr(base.VBEMEstimator, "_get_state", counting)
    one = _fit(n_components=2, max_iter=5)
    assert copies == []
    two = _fit(n_components=2, max_iter=5, n_init=2)
    assert copies, "with two runs the better one is copied aside"
    # the single run's fitted model is whole: its attributes and its bound agree
    assert one.means_.shape == two.means_.shape == (2, 1)
    np.testing.assert_allclose(sorted(one.means_.ravel()), [-3, 3], atol=0.5)
    assert np.isfinite(one.score(_frames(), lengths=[100, 100]))


def test_fitted_kl_terms_are_those_of_the_last_vbe_step(monkeypatch):
    m = _fit(n_components=2, max_iter=1)
    family_type = type(m._family)
    calls = []
    real = family_type.kl

    def counting(self, post, prior):
        calls.append(1)
        return real(self, post, prior)

    monkeypatch.setattr(family_type, "kl", counting)
    m = _fit(n_components=3, max_iter=4, tol=0.0)
    # one KL per VBE step (the bound); none more for the fitted attributes
    assert len(calls) == m.n_iter_
    kl = kl_terms(m._family, m._hyper("posterior"), m._hyper("prior"))
    terms = m.lower_bound_terms_
    assert (terms["kl_startprob"], terms["kl_transmat"], terms["kl_emission"]) == kl
    assert m.lower_bound_ == pytest.approx(terms["log_normaliser"] - sum(kl), rel=1e-12)


def test_fitted_kl_terms_follow_a_replaced_posterior():
    """With several runs the kept state is a copy, not the arrays of the last VBE step:
    the KL terms are then computed for it."""
    m = _fit(n_components=3, max_iter=6, n_init=3)
    kl = kl_terms(m._family, m._hyper("posterior"), m._hyper("prior"))
    terms = m.lower_bound_terms_
    assert (terms["kl_startprob"], terms["kl_transmat"], terms["kl_emission"]) == kl


def test_data_moments_are_computed_once_per_fit(monkeypatch):
    family_type = type(_fit(n_components=2, max_iter=1)._family)
    calls = []
    real = family_type.data_moments

    def counting(self, X):
        calls.append(1)
        return real(self, X)

    monkeypatch.setattr(family_type, "data_moments", counting)
    _fit(n_components=2, max_iter=1)
    assert len(calls) == 1


def test_a_family_overriding_summarise_is_still_asked():
    from sklearn_vb.emissions import emission_family

    base_family = emission_family("gaussian", "full")
    asked = []

    class Summarising(type(base_family)):
        def summarise(self, X):
            asked.append(1)
            return super().summarise(X)

    X = _frames()
    attributes, summary = Summarising().fit_attributes_and_summary(X, VBHiddenMarkov())
    assert asked == [1]
    expected = base_family.summarise(X)
    np.testing.assert_array_equal(summary.mean, expected.mean)
