"""Partial (children-only) VBEM updates after a birth of VBMixtureFactorAnalysers."""

import copy
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.mfa._search import children_iteration
from sklearn_vb.datasets import make_mixed_dimension_clusters
from sklearn_vb.mfa import VBMixtureFactorAnalysers
from sklearn_vb.mfa._vbem import update_factors, update_responsibilities


def _fit(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return VBMixtureFactorAnalysers(**kw).fit(X)


def _random_problem(seed):
    rng = np.random.default_rng(seed)
    p = int(rng.integers(3, 7))
    centres = rng.normal(scale=4.0, size=(3, p))
    X = np.vstack([c + rng.normal(size=(60, 2)) @ rng.normal(size=(2, p))
                   + 0.3 * rng.normal(size=(60, p)) for c in centres])
    return X


def _split(seed, **kw):
    """A short fixed-structure fit of a random problem, then a birth of component 0;
    returns the estimator, its data and the children's indices."""
    X = _random_problem(seed)
    m = _fit(X, n_components=2, search=False, max_iter=8, random_state=seed, **kw)
    data = m._check_fit_data(X)
    update_factors(m._vb_, data)
    update_responsibilities(m._vb_, data)
    S = m._vb_.resp.shape[1]
    m._search_rng = np.random.RandomState(seed)
    m._birth(data, 0)
    return m, data, [0, S]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_children_iterations_never_lower_the_bound(seed):
    """Every partial iteration is a set of exact coordinate maximisations: F (the
    complete bound, all components) never decreases, the other components' posteriors
    do not move, and each row's responsibilities still sum to one."""
    m, data, children = _split(seed)
    st = m._vb_
    others = [s for s in range(st.resp.shape[1]) if s not in children]
    def other_posteriors():
        return [x[others].copy() for x in (st.lam_mean, st.lam_cov, st.b_tilde, st.sigma)]

    frozen = other_posteriors()
    frozen_resp = st.resp[:, others].copy()
    trace = [m._lower_bound(data)]
    for _ in range(25):
        children_iteration(st, data.Z, children)
        trace.append(m._lower_bound(data))
    d = np.diff(trace)
    assert np.all(d >= -1e-9 * np.abs(np.asarray(trace[1:])))
    assert trace[-1] - trace[0] > 1.0  # the children really moved
    for now, then in zip(other_posteriors(), frozen):
        assert np.array_equal(now, then)
    assert np.array_equal(st.resp[:, others], frozen_resp)
    assert np.allclose(st.resp.sum(axis=1), 1.0)


@pytest.mark.parametrize("seed", [0, 3])
def test_constrained_responsibilities_are_the_exact_maximiser(seed):
    """After a partial iteration the children's split of their joint responsibility
    maximises F: moving any fraction of it from one child to the other lowers F."""
    m, data, children = _split(seed)
    for _ in range(3):
        children_iteration(m._vb_, data.Z, children)
    best = m._lower_bound(data)
    rng = np.random.default_rng(seed)
    a, b = children
    for _ in range(5):
        mm = copy.deepcopy(m)
        r = mm._vb_.resp.copy()
        t = rng.uniform(-0.2, 0.2, size=r.shape[0])
        move = np.clip(t, -r[:, b], r[:, a])  # keep both non-negative
        r[:, a] -= move
        r[:, b] += move
        mm._vb_.resp = r
        assert mm._lower_bound(data) <= best + 1e-9 * abs(best)


@pytest.fixture(scope="module")
def clusters():
    X, _ = make_mixed_dimension_clusters(n_samples_per_cluster=60, random_state=1)
    return X


def test_partial_rejections_compare_exact_bounds(clusters):
    """Every proposal is accepted exactly when its final F exceeds the F before the
    split, and a rejection restores the state: the next target is the same F.  The
    partial phase makes most rejections: fewer full iterations in the birth epochs
    than without it."""
    m = _fit(clusters, random_state=0, max_tries=2, bound_check="steps",
             birth_partial_reject=True)
    moves = m.search_history_["moves"]
    assert len(moves) >= 3 and m.n_partial_iter_ > 0
    for i, (_, _, ok, before, after) in enumerate(moves):
        assert (after > before) == ok
        if i and not moves[i - 1][2]:
            assert before == moves[i - 1][3]
    full = _fit(clusters, random_state=0, max_tries=2, birth_partial_iter=0)
    assert full.n_partial_iter_ == 0

    def birth_iterations(fit):
        h = fit.search_history_
        return np.sum(np.isin(h["epoch"], [e for (e, _, _, _, _) in h["moves"]]))

    assert birth_iterations(m) < birth_iterations(full)


def test_search_with_partial_births_is_deterministic(clusters):
    a = _fit(clusters, random_state=3, max_tries=1, birth_partial_reject=True)
    b = _fit(clusters, random_state=3, max_tries=1, birth_partial_reject=True)
    assert a.lower_bound_ == b.lower_bound_
    assert a.search_history_["moves"] == b.search_history_["moves"]
    assert a.n_partial_iter_ == b.n_partial_iter_


@pytest.mark.parametrize("seed", [0, 1])
def test_children_iteration_caches_the_statistics_of_the_new_state(seed):
    """The statistics a partial iteration leaves in the cache (the others' kept, the
    children's recomputed) equal those computed afresh from the updated q(s), q(x|s),
    and the bound read from the cache equals the bound computed without it."""
    from sklearn_vb.mfa.kernels import sufficient_statistics

    m, data, children = _split(seed)
    st = m._vb_
    m._lower_bound(data)  # fills the cache of the state after the split
    for _ in range(3):
        children_iteration(st, data.Z, children, np.zeros(data.n_features), data.psi_floor)
        cache = st.stats_cache
        assert cache.matches(st.resp, st.xbar, st.sigma, data.Z)
        fresh = sufficient_statistics(data.Z, st.resp, st.xbar, st.sigma)
        for got, want in zip(cache.stats, fresh):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
        cached_bound = m._lower_bound(data)
        st.stats_cache = None
        assert m._lower_bound(data) == pytest.approx(cached_bound, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ard_rate_update", ["fixed-point", "exact"])
def test_partial_bound_equals_the_complete_bound(seed, ard_rate_update):
    """The bound of the partial states computed from the children's terms alone
    (PartialBound) equals the complete bound at every partial iteration, with Ψ and
    b* re-estimated as in the search, and never decreases."""
    from sklearn_vb.mfa._search import PartialBound

    m, data, children = _split(seed, ard_rate_update=ard_rate_update)
    st = m._vb_
    exact = [m._lower_bound(data)]
    bound = PartialBound(st, data.Z, children, data.log_jacobian)
    assert bound(st) == pytest.approx(exact[0], rel=1e-10, abs=1e-9)
    for _ in range(6):
        children_iteration(st, data.Z, children, bound.residuals, data.psi_floor, 0.0,
                           ard_rate_update)
        cheap = bound(st)
        st.stats_cache = None  # the complete bound from scratch
        exact.append(m._lower_bound(data))
        assert cheap == pytest.approx(exact[-1], rel=1e-10, abs=1e-9)
    assert np.all(np.diff(exact) >= -1e-9 * np.abs(np.asarray(exact[1:])))
    assert exact[-1] - exact[0] > 1.0
