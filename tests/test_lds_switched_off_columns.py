"""The LDS scoring model treats input columns that ARD switched off (precision at the
estimator's cap) as absent: BIC and BICp count neither their coefficients in the
dimension nor their prior density at zero (1/2 ln(cap / 2 pi) nats each)."""

import warnings

import numpy as np
import pytest
from scipy.stats import gamma

from sklearn_vb import VBLinearDynamicalSystem
from sklearn_vb.datasets import make_lds, make_lds_params
from sklearn_vb.lds import SWITCHED_OFF_PRECISION
from sklearn_vb.scoring import score, scoring_model_for


@pytest.fixture(scope="module")
def small_lds():
    """The golden small LDS: ARD switches both intercept columns off."""
    params = make_lds_params(n_states=1, n_outputs=2, random_state=0)
    X, _ = make_lds(params, [20], random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = VBLinearDynamicalSystem(n_states=1, max_iter=100, random_state=0).fit(X)
    return model, X


def test_switched_off_columns_are_absent_from_the_scoring_model(small_lds):
    model, X = small_lds
    assert model.beta_[-1] >= SWITCHED_OFF_PRECISION
    assert model.delta_[-1] >= SWITCHED_OFF_PRECISION
    sm = scoring_model_for(model)
    assert sm.ds == 0 and sm.do == 0
    k, p = 1, 2
    assert sm.n_parameters() == k * k + p * k + p
    assert [b.name for b in sm.param_space.blocks] == ["A", "C", "rho"]
    # the posterior is q's marginal over the coordinates present
    q = sm.variational_posterior()
    draws = q.sample(np.random.default_rng(0), 3)
    assert set(draws) == {"A", "C", "rho"}
    assert np.all(np.isfinite(sm.log_likelihood(draws, sm.prepare_data(X))))


def test_bic_and_bicp_are_consistent_when_a_column_is_switched_off(small_lds):
    """BICp - BIC is ln p(theta_hat) over the coordinates present: a switched-off
    coefficient does not add 1/2 ln(1e8 / 2 pi) ~ 8.3 nats to it (three of them did,
    about 25 nats), and BIC does not charge 1/2 ln n for it."""
    model, X = small_lds
    bic = score(model, X, "bic")
    bicp = score(model, X, "bicp")
    assert bic.diagnostics["d"] == bicp.diagnostics["d"] == 5
    assert bic.diagnostics["loglik"] == pytest.approx(bicp.diagnostics["loglik"], abs=1e-6)
    lp = bicp.diagnostics["log_prior"]
    assert bicp.log_evidence - bic.log_evidence == pytest.approx(lp, abs=1e-6)
    # ln p(theta_hat) of the present coordinates, recomputed by hand
    sm = scoring_model_for(model)
    theta = bicp.diagnostics["theta"]
    a, b = sm.a0, sm.b0
    rho = theta["rho"][0]
    by_hand = 0.0
    for j, lam in enumerate(sm.prior_ab):
        by_hand += np.sum(0.5 * np.log(lam / (2 * np.pi)) - 0.5 * lam * theta["A"][0][:, j] ** 2)
    for j, lam in enumerate(sm.prior_cd):
        prec = lam * rho
        by_hand += np.sum(0.5 * np.log(prec / (2 * np.pi)) - 0.5 * prec * theta["C"][0][:, j] ** 2)
    by_hand += np.sum(gamma.logpdf(rho, a, scale=1.0 / b))
    assert lp == pytest.approx(by_hand, rel=1e-8)
    assert lp < 0.5 * np.log(SWITCHED_OFF_PRECISION / (2 * np.pi))
