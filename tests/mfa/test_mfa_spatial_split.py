"""The spatial split birth operator of the VBMixtureFactorAnalysers search (Beal 2003,
Section 4.3.2): children are copies of the parent with centres ``μ ± d``, followed by a
VBE step."""

import copy
import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_vb.mfa import VBMixtureFactorAnalysers
from sklearn_vb.mfa._vbem import log_weights


def _clusters(seed=0, p=4, n=100):
    rng = np.random.default_rng(seed)
    centres = 8.0 * np.eye(4, p)
    return np.vstack([c + rng.normal(size=(n, p)) for c in centres])


def _fit(X, cls=VBMixtureFactorAnalysers, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return cls(**kw).fit(X)


class _Recording(VBMixtureFactorAnalysers):
    """Keeps the state and the exact bound on entry to every birth, and checks the
    operator itself on the state it leaves."""

    def _birth(self, data, parent):
        st = self._vb_
        before = copy.deepcopy(dataclasses.replace(st, stats_cache=None))
        self.births_.append((before, self._lower_bound(data)))
        S = st.resp.shape[1]
        super()._birth(data, parent)
        st = self._vb_
        K = st.sigma.shape[-1]
        others = np.setdiff1d(np.arange(S), [parent])
        # copies of the parent, centres symmetric about its centre, α̂ halved
        for child in (parent, S):
            np.testing.assert_array_equal(st.lam_cov[child], before.lam_cov[parent])
            np.testing.assert_array_equal(st.lam_mean[child, :, :K],
                                          before.lam_mean[parent, :, :K])
            np.testing.assert_array_equal(st.b_tilde[child], before.b_tilde[parent])
            assert st.alpha_hat[child] == 0.5 * before.alpha_hat[parent]
        np.testing.assert_allclose(st.lam_mean[parent, :, K] + st.lam_mean[S, :, K],
                                   2.0 * before.lam_mean[parent, :, K], atol=1e-12)
        assert not np.allclose(st.lam_mean[parent, :, K], before.lam_mean[parent, :, K])
        np.testing.assert_array_equal(st.lam_mean[others], before.lam_mean[others])
        # q(s) is the VBE update for the new positions, not the parent's split in two
        ell = log_weights(self._vb_, data.Z)
        r = np.exp(ell - ell.max(axis=1, keepdims=True))
        np.testing.assert_allclose(st.resp, r / r.sum(axis=1, keepdims=True),
                                   rtol=1e-10, atol=1e-12)
        self.n_checked_ += 1

    def fit(self, X, y=None):
        self.births_ = []
        self.n_checked_ = 0
        return super().fit(X, y)


@pytest.mark.parametrize("partial", [100, 0])
def test_spatial_search_finds_the_clusters(partial):
    X = _clusters()
    m = _fit(X, split="spatial", birth_partial_iter=partial, random_state=0)
    assert m.n_components_ == 4
    assert m.n_births_accepted_ >= 3
    # every cluster has its own component
    labels = m.predict(X)
    assert len({tuple(np.unique(labels[i * 100:(i + 1) * 100])) for i in range(4)}) == 4


@pytest.mark.parametrize("partial", [100, 0])
def test_spatial_births_accepted_only_when_the_bound_rises(partial):
    X = _clusters(seed=1, p=3)
    m = _fit(X, cls=_Recording, split="spatial", birth_partial_iter=partial,
             prune_factors=False, random_state=1)
    moves = m.search_history_["moves"]
    assert len(moves) == len(m.births_) == m.n_checked_ == m.n_births_proposed_
    accepted = [mv for mv in moves if mv[2]]
    rejected = [mv for mv in moves if not mv[2]]
    assert accepted and rejected
    for _, _, ok, F_before, F_after in moves:
        assert (F_after > F_before) == ok
    # the recorded F before a birth is the exact bound of the state it starts from
    for (_, bound), mv in zip(m.births_, moves):
        assert bound == pytest.approx(mv[3], rel=0, abs=1e-9 * abs(bound))


def _assert_same_state(a, b):
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, tuple):  # (ids, masses) of the shrinking-death rule
            for u, v in zip(x, y):
                np.testing.assert_array_equal(u, v)
        else:
            np.testing.assert_array_equal(x, y, err_msg=field.name)


def test_rejected_spatial_birth_restores_the_state_exactly():
    X = _clusters(seed=2, p=5)
    m = _fit(X, cls=_Recording, split="spatial", prune_factors=False, random_state=2)
    moves = m.search_history_["moves"]
    n_compared = 0
    for i in range(len(moves) - 1):
        if not moves[i][2]:
            # nothing happens between a rejection and the next proposal (no pruning)
            (state, bound), (state_next, bound_next) = m.births_[i], m.births_[i + 1]
            assert bound_next == bound
            _assert_same_state(state, state_next)
            n_compared += 1
    assert n_compared >= 3


def test_responsibility_split_is_the_default():
    X = _clusters(seed=3, p=3, n=40)
    default = _fit(X, random_state=3)
    explicit = _fit(X, split="responsibility", random_state=3)
    assert explicit.lower_bound_ == default.lower_bound_
    assert explicit.n_components_ == default.n_components_
    np.testing.assert_array_equal(explicit.means_, default.means_)
    np.testing.assert_array_equal(explicit.loadings_, default.loadings_)
    np.testing.assert_array_equal(explicit.noise_variance_, default.noise_variance_)
    spatial = _fit(X, split="spatial", random_state=3)
    assert spatial.search_history_["moves"] != default.search_history_["moves"]


def test_spatial_split_is_reproducible():
    X = _clusters(seed=4, p=3, n=40)
    a = _fit(X, split="spatial", random_state=7)
    b = _fit(X, split="spatial", random_state=7)
    assert a.lower_bound_ == b.lower_bound_
    np.testing.assert_array_equal(a.means_, b.means_)
    assert a.search_history_["moves"] == b.search_history_["moves"]


def test_invalid_split_names_the_parameter():
    with pytest.raises(InvalidParameterError, match="'split'"):
        VBMixtureFactorAnalysers(split="random").fit(_clusters(n=10))
