"""Online (stochastic natural-gradient) VB of VBMixtureFactorAnalysers with a fixed
number of components: ``partial_fit`` and ``learning_method="online"``.

A step of length 1 on all rows is checked against the sweep of the batch update
functions in the same order; the natural-gradient step against a closed form built here
from raw sums (the expected statistics of the local step, the natural parameters of
every row of q(Λ̃), the Dirichlet counts and the noise estimate); chunks of a
memory-mapped file against the same chunks in memory; the online fit against batch
VBEM on held-out data.
"""

import copy
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.mfa import VBMixtureFactorAnalysers
from sklearn_vb.mfa._estimator import _fit_data
from sklearn_vb.mfa._hyper import update_ard_rate
from sklearn_vb.mfa._vbem import (update_ard, update_factors, update_loadings, update_noise,
                                  update_responsibilities, update_weights)
from sklearn_vb.scoring import score

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

# the fields of q(θ) and of the re-estimated hyperparameters (Ψ, b*) in a state
GLOBAL = ("lam_mean", "lam_cov", "lam_logdet", "alpha_hat", "b_tilde", "psi", "b_star")


def clusters(n, seed, p=5):
    """Three clusters of ``n`` rows each, on two-dimensional subspaces of R^p (the
    same clusters for every ``seed``, which draws the rows)."""
    rng = np.random.default_rng(seed)
    parts = []
    for c, centre in enumerate((0.0, 6.0, -6.0)):
        A = np.random.default_rng(100 + c).normal(size=(2, p))
        parts.append(rng.normal(size=(n, 2)) @ A + 0.3 * rng.normal(size=(n, p)) + centre)
    return np.concatenate(parts)


def model(**kw):
    params = dict(n_components=3, search=False, n_factors=3, random_state=0)
    params.update(kw)
    return VBMixtureFactorAnalysers(**params)


def state(m):
    return {name: np.array(getattr(m._vb_, name), dtype=float) for name in GLOBAL}


def assert_same_state(a, b, rtol):
    for name in GLOBAL:
        assert_allclose(a[name], b[name], rtol=rtol, atol=1e-12, err_msg=name)


def fit_data(m, X):
    """``X`` in the fitting units of the fitted model ``m``."""
    from dataclasses import replace
    return replace(m._units_, Z=(X - m._units_.shift) / m._units_.scale)


def sweep(m, X):
    """The batch update functions in the order of an online step, on a copy of the
    state of ``m``: q(x|s), q(s), q(Λ̃), q(π), q(ν), Ψ, b*."""
    st, data = copy.deepcopy(m._vb_), fit_data(m, X)
    for update in (update_factors, update_responsibilities, update_loadings):
        update(st, data)
    update_weights(st)
    update_ard(st, data)
    update_noise(st, data)
    update_ard_rate(st, 0.0, "fixed-point")
    return {name: np.array(getattr(st, name), dtype=float) for name in GLOBAL}


# ---------------------------------------------------------------------------
# a step of length one is the sweep of the batch updates
# ---------------------------------------------------------------------------


def test_step_of_length_one_on_all_rows_is_one_sweep_of_the_batch_updates():
    X = clusters(50, seed=0)
    n = X.shape[0]
    base = model(rotations=False, prune_factors=False, acceleration=None, max_iter=3).fit(X)
    one, two = sweep(base, X), None
    # learning_offset=0: rho_1 = 1
    online = copy.deepcopy(base).set_params(learning_offset=0.0, total_samples=n, batch_size=n)
    online.partial_fit(X)
    assert online.n_batch_iter_ == 2
    assert_same_state(state(online), one, rtol=1e-10)
    # the step moved q(θ): the comparison is not of two copies of the start
    assert np.max(np.abs(one["lam_mean"] - state(base)["lam_mean"])) > 1e-3
    # learning_decay=0: rho = 1 at every step, two steps are two sweeps
    twice = copy.deepcopy(base).set_params(learning_decay=0.0, total_samples=n, batch_size=n)
    twice.partial_fit(X)
    two = sweep(twice, X)
    twice.partial_fit(X)
    assert_same_state(state(twice), two, rtol=1e-10)
    # the public attributes follow the state (original units)
    assert_allclose(online.noise_variance_, one["psi"] * online.feature_scale_ ** 2, rtol=1e-12)
    assert_allclose(online.weights_, one["alpha_hat"] / one["alpha_hat"].sum(), rtol=1e-12)
    # fit in online mode: one epoch of one minibatch (rows in a random order) from the
    # start of init_params is one step from that start, as partial_fit takes it
    epoch = model(learning_method="online", learning_offset=0.0, batch_size=n,
                  max_iter=1).fit(X)
    first = model(learning_offset=0.0, total_samples=n, batch_size=n).partial_fit(X)
    assert_same_state(state(epoch), state(first), rtol=1e-10)


# ---------------------------------------------------------------------------
# the natural-gradient step against a closed form from raw sums
# ---------------------------------------------------------------------------


def test_natural_gradient_step_is_the_convex_combination():
    X1, X2 = clusters(30, seed=1), clusters(12, seed=2)
    offset, decay, total = 3.0, 0.6, 2000.0
    m = model(learning_offset=offset, learning_decay=decay, total_samples=total)
    m.partial_fit(X1)
    st, Z = copy.deepcopy(m._vb_), fit_data(m, X2)
    # the local step of the minibatch under q(θ) before the step (the batch functions)
    update_factors(st, Z)
    update_responsibilities(st, Z)
    r, xbar, sigma, Y = st.resp, st.xbar, st.sigma, Z.Z
    S, p, K1 = st.lam_mean.shape
    K = K1 - 1
    c = total / Y.shape[0]
    # expected statistics from raw sums: W_s = Σ_i r_is E[x̃ x̃ᵀ], C_s = Σ_i r_is y_i E[x̃]ᵀ
    W = np.zeros((S, K1, K1))
    C = np.zeros((S, p, K1))
    D = np.zeros((S, p))
    for s in range(S):
        for i in range(Y.shape[0]):
            xt = np.append(xbar[i, s], 1.0)
            second = np.outer(xt, xt)
            second[:K, :K] += sigma[s]
            W[s] += r[i, s] * second
            C[s] += r[i, s] * np.outer(Y[i], xt)
            D[s] += r[i, s] * Y[i] ** 2
    Nk = r.sum(axis=0)
    e_nu = st.a_tilde / st.b_tilde
    before_precision = np.linalg.inv(m._vb_.lam_cov)
    before_shift = np.einsum("sqkl,sql->sqk", before_precision, m._vb_.lam_mean)
    alpha_before, psi_before = m._vb_.alpha_hat.copy(), m._vb_.psi.copy()
    m.partial_fit(X2)
    rho = (offset + 2) ** (-decay)  # the second step: n_batch_iter_ was 2
    assert m.n_batch_iter_ == 3
    after = m._vb_
    after_precision = np.linalg.inv(after.lam_cov)
    for s in range(S):
        for q in range(p):
            prior = np.diag(np.append(e_nu[s], st.nu_star[q]))
            target = prior + c * W[s] / st.psi[q]
            target_shift = c * C[s, q] / st.psi[q]
            target_shift[K] += st.nu_star[q] * st.mu_star[q]
            expected = (1 - rho) * before_precision[s, q] + rho * target
            assert_allclose(after_precision[s, q], expected, rtol=1e-8, atol=1e-8)
            assert_allclose(after_precision[s, q] @ after.lam_mean[s, q],
                            (1 - rho) * before_shift[s, q] + rho * target_shift,
                            rtol=1e-8, atol=1e-8)
            # neither end point: the step is a real mixture
            assert not np.allclose(after_precision[s, q], target, rtol=1e-4)
    alpha_target = st.alpha_star / S + c * Nk
    assert_allclose(after.alpha_hat, (1 - rho) * alpha_before + rho * alpha_target, rtol=1e-10)
    # q(ν) from the new q(Λ̃) with the b* of before; then Ψ, then b* (fixed point)
    sq = after.lam_mean[:, :, :K] ** 2 + np.diagonal(after.lam_cov, axis1=-2, axis2=-1)[:, :, :K]
    assert_allclose(after.b_tilde, st.b_star + 0.5 * sq.sum(axis=1), rtol=1e-10)
    second = after.lam_cov + np.einsum("sqk,sql->sqkl", after.lam_mean, after.lam_mean)
    residual = (c * D.sum(axis=0) - 2 * c * np.einsum("sqk,sqk->q", after.lam_mean, C)
                + c * np.einsum("sqkl,slk->q", second, W))
    psi_target = np.maximum(residual / total, Z.psi_floor)
    assert_allclose(after.psi, (1 - rho) * psi_before + rho * psi_target, rtol=1e-9)
    assert after.b_star == pytest.approx(st.a_star / np.mean(after.a_tilde / after.b_tilde),
                                         rel=1e-12)


# ---------------------------------------------------------------------------
# streams of chunks
# ---------------------------------------------------------------------------


def test_partial_fit_over_memmap_chunks_equals_in_memory_chunks(tmp_path):
    X = clusters(100, seed=3)[np.random.default_rng(3).permutation(300)]
    path = tmp_path / "rows.dat"
    stored = np.memmap(path, dtype=X.dtype, mode="w+", shape=X.shape)
    stored[:] = X
    stored.flush()
    del stored
    rows = np.memmap(path, dtype=X.dtype, mode="r", shape=X.shape)  # read-only
    chunks = [slice(0, 130), slice(130, 190), slice(190, 300)]
    params = dict(batch_size=50, total_samples=300)
    streamed, in_memory = model(**params), model(**params)
    for chunk in chunks:
        streamed.partial_fit(rows[chunk])
        in_memory.partial_fit(np.array(X[chunk]))
    # 130 + 60 + 110 rows in minibatches of at most 50: 3 + 2 + 3 steps
    assert streamed.n_batch_iter_ == 9 and streamed.n_iter_ == 8
    assert_same_state(state(streamed), state(in_memory), rtol=1e-12)
    assert_allclose(streamed.lower_bounds_, in_memory.lower_bounds_, rtol=1e-12)
    assert_array_equal(np.asarray(rows), X)


def test_fitted_api_after_partial_fit():
    X = clusters(40, seed=4)[np.random.default_rng(4).permutation(120)]
    m = model(batch_size=50, total_samples=1000).partial_fit(X)
    assert m.n_batch_iter_ == 4  # minibatches of 50, 50 and 20 rows
    assert m.lower_bounds_.shape == (3,) and m.lower_bound_ == m.lower_bounds_[-1]
    assert not m.converged_
    assert np.isfinite(m.score(X))
    assert m.predict(X).shape == (120,) and m.labels_.shape == (120,)
    assert_allclose(m.predict_proba(X).sum(axis=1), 1.0)
    assert m.transform(X).shape[0] == 120
    assert np.isfinite(m.bic(X))
    # lower_bound_ is an estimate for a stream, not a bound on the evidence of X
    with pytest.raises(ValueError, match="not the data"):
        score(m, X, "vb")
    # a later chunk must have the same features
    with pytest.raises(ValueError, match="features"):
        m.partial_fit(X[:, :3])
    # a fit begins a new history: the steps of a later partial_fit follow its own
    m.set_params(max_iter=5).fit(X)
    m.partial_fit(X[:30])
    assert m.lower_bounds_.shape == (1,)


def test_warm_started_batch_fit_after_partial_fit_begins_with_a_local_pass():
    X, other = clusters(40, seed=5), clusters(40, seed=6)
    m = model(total_samples=5000, batch_size=40, rotations=False, prune_factors=False,
              acceleration=None, max_iter=3)
    m.partial_fit(other)  # the stored q(s) are of other rows, as many as X has
    reference = copy.deepcopy(m)
    m.set_params(warm_start=True).fit(X)
    # the same run after an explicit local pass on X (in the units the fit takes from X)
    data = _fit_data(X, reference.standardize, reference.psi_min)
    update_factors(reference._vb_, data)
    update_responsibilities(reference._vb_, data)
    reference._stale_locals = False
    reference.set_params(warm_start=True).fit(X)
    assert_same_state(state(m), state(reference), rtol=1e-10)


# ---------------------------------------------------------------------------
# online fit
# ---------------------------------------------------------------------------


def test_online_fit_reaches_batch_held_out_likelihood():
    X, X_test = clusters(600, seed=7), clusters(300, seed=8)
    batch = model(n_factors=None).fit(X)
    online = model(n_factors=None, learning_method="online", batch_size=100, max_iter=50,
                   tol=1e-3).fit(X)
    assert online.converged_
    held_batch, held_online = batch.score(X_test), online.score(X_test)
    assert held_online >= held_batch - 0.005 * abs(held_batch)
    # the bound of the final q(θ) on the training data, below batch VBEM's by little
    assert online.lower_bound_ <= batch.lower_bound_ + 1e-6 * abs(batch.lower_bound_)
    assert online.lower_bound_ >= batch.lower_bound_ - 0.01 * abs(batch.lower_bound_)
    assert len(online.lower_bounds_) == online.n_iter_


def test_online_fit_is_reproducible_and_leaves_inputs_alone():
    X = clusters(40, seed=9)
    X_copy = X.copy()
    params = dict(learning_method="online", batch_size=16, max_iter=4)
    a, b = model(**params).fit(X), model(**params).fit(X)
    c = model(**params, random_state=1).fit(X)
    assert_same_state(state(a), state(b), rtol=0)
    assert_array_equal(a.lower_bounds_, b.lower_bounds_)
    assert not np.allclose(state(a)["lam_mean"], state(c)["lam_mean"], rtol=1e-9)
    p = model(batch_size=16).partial_fit(X)
    assert_array_equal(X, X_copy)
    assert p.n_batch_iter_ == 9  # 120 rows in minibatches of 16


# ---------------------------------------------------------------------------
# arguments
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, value", [
    ("learning_method", "minibatch"),
    ("learning_decay", 1.5),
    ("learning_decay", -0.1),
    ("learning_offset", -1.0),
    ("batch_size", 0),
    ("batch_size", 2.5),
    ("total_samples", 0),
    ("total_samples", -3.0),
])
def test_bad_arguments_are_named(name, value):
    X = clusters(10, seed=10)
    with pytest.raises(ValueError, match=name):
        model(**{name: value}).partial_fit(X)
    with pytest.raises(ValueError, match=name):
        model(**{"learning_method": "online", name: value}).fit(X)


@pytest.mark.parametrize("method", ["map", "ml"])
def test_online_needs_vb(method):
    X = clusters(10, seed=10)
    with pytest.raises(ValueError, match="method"):
        model(method=method).partial_fit(X)
    with pytest.raises(ValueError, match="method"):
        model(learning_method="online", method=method).fit(X)


def test_online_needs_fixed_components():
    X = clusters(10, seed=10)
    with pytest.raises(ValueError, match="search=False"):
        model(learning_method="online", search=True).fit(X)
    # with the search (the default) there is no partial_fit, and the error says why
    searching = VBMixtureFactorAnalysers(3)
    assert not hasattr(searching, "partial_fit")
    with pytest.raises(AttributeError, match="partial_fit") as error:
        searching.partial_fit(X)
    assert "search=False" in str(error.value.__cause__)
    assert hasattr(searching.set_params(search=False), "partial_fit")


def test_a_point_estimate_is_not_continued():
    X = clusters(10, seed=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = model(method="ml", max_iter=3).fit(X)
    with pytest.raises(ValueError, match="point estimate"):
        fitted.set_params(method="vb").partial_fit(X)
