"""SQUAREM extrapolation of the MFA fixed point and the convergence test."""

import copy
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.mfa import VBMixtureFactorAnalysers


def _problem(seed, n=120, p=6):
    rng = np.random.default_rng(seed)
    parts = []
    for c in range(3):
        k = 1 + c % 2
        A = rng.normal(size=(p, k)) * 1.5
        parts.append(rng.normal(size=(n, k)) @ A.T + 0.4 * rng.normal(size=(n, p)) + 4 * c)
    return np.vstack(parts)


def _fit(X, **kw):
    params = dict(search=False, n_components=3, random_state=0, max_iter=150)
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return VBMixtureFactorAnalysers(**params).fit(X)


def test_pack_unpack_is_the_identity():
    X = _problem(0)
    m = _fit(X, max_iter=10)
    data = m._check_fit_data(X)
    before = copy.deepcopy(m._vb_)
    F = m._lower_bound(data)
    assert m._unpack_hyperparameters(m._pack_hyperparameters(), data)
    after = m._vb_
    for name, a, b in (("lam_mean", after.lam_mean, before.lam_mean),
                       ("lam_cov", after.lam_cov, before.lam_cov),
                       ("lam_logdet", after.lam_logdet, before.lam_logdet),
                       ("b_tilde", after.b_tilde, before.b_tilde),
                       ("alpha_hat", after.alpha_hat, before.alpha_hat),
                       ("psi", after.psi, before.psi), ("nu_star", after.nu_star, before.nu_star)):
        assert np.allclose(a, b, rtol=1e-10, atol=1e-12), name
    assert m._lower_bound(data) == pytest.approx(F, rel=1e-10)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "optimize", [True, ["noise", "mean_prior", "ard_prior", "alpha_prior"]], ids=["default", "all"]
)
def test_extrapolation_never_lowers_the_bound(seed, optimize):
    """bound_check='steps' checks every step of the plain iterations; the base loop
    checks the bound after every extrapolation against the plain iterate before it."""
    X = _problem(seed)
    m = _fit(X, optimize_hyperparameters=optimize, n_factors=4, standardize=bool(seed % 2),
             bound_check="steps", tol=1e-6)
    assert np.all(np.diff(m.lower_bounds_) >= -1e-9 * np.abs(m.lower_bounds_[1:]))
    assert m.extrapolations_["accepted"] >= 1


def test_extrapolation_reaches_the_plain_optimum_in_fewer_iterations():
    """Over four problems: the accelerated run ends at the plain run's optimum on at
    least three, and on those it reaches that optimum in fewer iterations in total.
    (On one problem alone, which basin each run ends in and by how many iterations one
    beats the other depend on the floating-point path.)"""
    fast_steps, plain_steps = 0, 0
    same = 0
    for seed in (0, 2, 4, 10):
        X = _problem(seed)
        fast = _fit(X, n_factors=4, tol=1e-4, max_iter=3000)
        plain = _fit(X, n_factors=4, tol=1e-4, max_iter=3000, acceleration=None)
        assert fast.converged_ and plain.converged_
        target = plain.lower_bound_ - 1e-6 * abs(plain.lower_bound_)
        if fast.lower_bound_ < target:
            continue
        same += 1
        # iterations to the plain run's optimum (not n_iter_, which includes the
        # iterations the stopping rule needs to see that the gains have ended)
        fast_steps += int(np.argmax(fast.lower_bounds_ >= target))
        plain_steps += int(np.argmax(plain.lower_bounds_ >= target))
    assert same >= 3
    assert fast_steps < plain_steps
