"""Loading columns switched off in one component only: decoupled (zero means, no
covariance with the other columns) and solved in closed form by the loading update."""

import copy
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.mfa.kernels import loading_posterior
from sklearn_vb.mfa import VBMixtureFactorAnalysers
from sklearn_vb.mfa._vbem import sufficient_statistics


def _problem(seed, n=80, p=8):
    """Three clusters with 1, 3 and 2 intrinsic dimensions: ARD switches different
    numbers of columns off in each component."""
    rng = np.random.default_rng(seed)
    return np.vstack([c + rng.normal(size=(n, k)) @ rng.normal(size=(k, p))
                      + 0.3 * rng.normal(size=(n, p)) for c, k in ((0, 1), (6, 3), (-6, 2))])


def _fit(X, **kw):
    params = dict(n_components=3, search=False, random_state=0, max_iter=300)
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return VBMixtureFactorAnalysers(**params).fit(X)


@pytest.fixture(scope="module", params=[0, 1])
def decoupled(request):
    X = _problem(request.param)
    m = _fit(X, n_factors=5, prune_factors=True, tol=1e-6, random_state=request.param)
    assert not m._vb_.active.all()  # some column is decoupled in some component
    return m, m._check_fit_data(X)


def test_decoupled_columns_are_exactly_decoupled(decoupled):
    m, data = decoupled
    st = m._vb_
    dead = ~st.active
    K = dead.shape[1]
    for s, j in zip(*np.nonzero(dead)):
        assert np.all(st.lam_mean[s, :, j] == 0.0)
        assert np.all(st.xbar[:, s, j] == 0.0)
        others = np.r_[0:j, j + 1:K + 1]
        assert np.all(st.lam_cov[s, :, j, others] == 0.0)
        assert np.all(st.sigma[s, j, np.r_[0:j, j + 1:K]] == 0.0)


def test_compressed_loading_update_equals_the_full_solve(decoupled):
    m, data = decoupled
    st = m._vb_
    Nk, W, C, D = sufficient_statistics(m._vb_, data)
    e_nu = st.a_tilde / st.b_tilde
    args = (W, C, st.psi, e_nu, st.nu_star, st.mu_star)
    full = loading_posterior(*args)
    compressed = loading_posterior(*args, st.active)
    for a, b in zip(full, compressed):
        assert np.allclose(a, b, rtol=1e-10, atol=1e-13)


def test_compressed_iterations_give_the_uncompressed_bound(decoupled):
    """Ten VBEM iterations (every step) with the loading update on the active
    columns only, and the same iterations solving every column: the bounds agree to
    1e-10 and never decrease."""
    m, data = decoupled
    runs = []
    for compress in (True, False):
        mm = copy.deepcopy(m)
        mm.bound_check = "steps"
        if not compress:
            mm._vb_.active = np.ones_like(mm._vb_.active)
        trace = [mm._lower_bound(data)]
        for it in range(1, 11):
            value, restarted = mm._one_iteration(data, it, trace[-1])
            assert not restarted
            trace.append(value)
        runs.append(np.array(trace))
        assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    assert np.allclose(runs[0], runs[1], rtol=1e-10, atol=0.0)


def test_decoupling_never_lowers_the_bound():
    """Every step of the fits, the decoupling move among them, is checked
    (bound_check="steps"); with and without decoupling the fits reach the same F."""
    X = _problem(2)
    on = _fit(X, n_factors=5, bound_check="steps", tol=1e-6)
    off = _fit(X, n_factors=5, bound_check="steps", tol=1e-6, compress_factors=False)
    assert np.all(np.diff(on.lower_bounds_) >= -1e-9 * np.abs(on.lower_bounds_[1:]))
    assert not on._vb_.active.all() and off._vb_.active is None
    assert on.lower_bound_ >= off.lower_bound_ - 1e-6 * abs(off.lower_bound_)


def test_decoupled_fit_is_reproducible():
    X = _problem(3)
    a = _fit(X, n_factors=5, random_state=4)
    b = _fit(X, n_factors=5, random_state=4)
    assert np.array_equal(a.lower_bounds_, b.lower_bounds_)
    assert np.array_equal(a._vb_.active, b._vb_.active)
