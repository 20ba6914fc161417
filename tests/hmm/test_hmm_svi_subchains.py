"""Online VB of VBHiddenMarkov over subchains of long sequences (``subchain_length``,
``buffer_length``; Foti, Xu, Laird & Fox 2014).

A step whose subchain is the whole sequence with rho = 1 against one VBEM iteration;
the buffered subchains' marginals against the full-chain forward-backward under the
same q(theta); the scaled statistics averaged over every subchain position against
those of the whole data; a subchain fit of one long sequence against batch VBEM on
held-out data.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.datasets import make_hmm_sequences
from sklearn_vb.hmm import _subchains as sc
from sklearn_vb.hmm._vbem import frame_marginals, stats_from_vbe, vbe

from .test_hmm_online import (FAMILIES, ONE_START, assert_same_posterior,
                              posterior, sequences)


def fitted(family, X, lengths, max_iter=3):
    """A model a few VBEM iterations in (a q(theta) that is not the start)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return VBHiddenMarkov(**FAMILIES[family], n_components=3,
                              init_params=ONE_START[family], max_iter=max_iter,
                              acceleration=None, random_state=0).fit(X, lengths=lengths)


def parts(model, X, lengths):
    data = model._sequence_data(X, lengths, None, reset=False)
    return model._family, model._hyper("prior"), model._hyper("posterior"), data


def flat(family, stats):
    """The statistics as one vector (start, transitions, every emission field that is
    set: the per-dimension counts of missing values are None without any)."""
    emission = [np.ravel(getattr(stats.emission, name))
                for name in stats.emission.__dataclass_fields__
                if getattr(stats.emission, name) is not None]
    return np.concatenate([stats.start, stats.trans.ravel(), *emission])


# ---------------------------------------------------------------------------
# a subchain that is the whole sequence, rho = 1: one VBEM iteration
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", list(FAMILIES))
def test_whole_sequence_subchain_step_is_one_vbem_iteration(family):
    X, lengths = sequences(family, [300], seed=0)
    common = dict(FAMILIES[family], n_components=3, init_params=ONE_START[family],
                  random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = VBHiddenMarkov(**common, max_iter=1).fit(X)
        one = VBHiddenMarkov(**common, max_iter=2, acceleration=None).fit(X)
    for L in (300, 1000):
        online = VBHiddenMarkov(**common, learning_offset=0.0, learning_decay=0.0,
                                batch_size=1, subchain_length=L).partial_fit(X)
        assert online.n_batch_iter_ == 2  # one pass in expectation is one step here
        assert_same_posterior(posterior(online, family), posterior(one, family), rtol=1e-10)
    moved = max(np.max(np.abs(posterior(one, family)[k] - posterior(start, family)[k]))
                for k in posterior(one, family))
    assert moved > 1e-3


# ---------------------------------------------------------------------------
# the buffers: local marginals approach the full chain's
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["categorical", "gaussian-full"])
def test_buffered_marginals_approach_the_full_chain(family):
    X, lengths = sequences(family, [600], seed=1)
    model = fitted(family, X, lengths, max_iter=8)
    fam, prior, post, data = parts(model, X, lengths)
    full = frame_marginals(fam, post, data)
    sub = sc.sample_subchains(data.starts, data.lengths, 20, 12, np.random.RandomState(0))

    def error(local):
        inner = np.concatenate([np.arange(a, b + 1) for a, b in zip(local.first, local.last)])
        return np.max(np.abs(local.marginals[inner] - full[local.frames[inner]]))

    errors = [error(sc.window_pass(fam, post, prior, data, sub, B)) for B in (0, 2, 8, 32)]
    assert errors[0] > 1e-3  # without a buffer the subchains' posteriors are off
    assert errors[-1] < 1e-6
    assert all(b <= a + 1e-12 for a, b in zip(errors, errors[1:]))
    local, B = sc.auto_buffer_pass(fam, post, prior, data, sub, 1)
    assert error(local) < 1e-4
    assert 1 <= B < 600


# ---------------------------------------------------------------------------
# the scaling is unbiased: every position, exact local posteriors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("subchain_length", [1, 4, 25, 200])
def test_scaled_statistics_average_to_the_full_statistics(family, subchain_length):
    # sequences longer and shorter than the subchains, one of a single frame
    X, lengths = sequences(family, [60, 9, 1, 31], seed=2)
    model = fitted(family, X, lengths)
    fam, prior, post, data = parts(model, X, lengths)
    whole = flat(fam, stats_from_vbe(fam, vbe(fam, post, data)[0], data, prior.emission))
    P = sc.n_positions(data.lengths, subchain_length)
    every = sc.positions_subchains(np.arange(P), data.starts, data.lengths, subchain_length)
    # a buffer longer than every sequence: each window is its whole sequence
    local = sc.window_pass(fam, post, prior, data, every, 100)
    assert_allclose(every.scale * flat(fam, local.stats), whole, rtol=1e-10, atol=1e-10)
    # whatever the buffer, every transition and start is owned once: the scaled counts
    # total the data's numbers of transitions and sequences
    for B in (0, 2):
        short = sc.window_pass(fam, post, prior, data, every, B).stats
        assert every.scale * short.trans.sum() == pytest.approx(len(X) - len(lengths), rel=1e-12)
        assert every.scale * short.start.sum() == pytest.approx(len(lengths), rel=1e-12)
    # one draw is not the average (the check can fail)
    one = sc.positions_subchains(np.arange(1), data.starts, data.lengths, subchain_length)
    if subchain_length < 60:
        single = sc.window_pass(fam, post, prior, data, one, 100)
        assert not np.allclose(one.scale * flat(fam, single.stats), whole, rtol=1e-3)


def test_subchain_positions_cover_every_frame_equally_often():
    lengths = np.array([50, 3, 12])
    starts = np.cumsum(lengths) - lengths
    for L in (1, 5, 12, 40):
        P = sc.n_positions(lengths, L)
        sub = sc.positions_subchains(np.arange(P), starts, lengths, L)
        cover = np.zeros(lengths.sum())
        for a, b in zip(sub.first, sub.stop):
            assert 1 <= b - a <= max(L, 1)
            cover[a:b] += 1
        assert np.all(cover == L)
        assert sub.scale == pytest.approx(1.0 / L)


# ---------------------------------------------------------------------------
# one long sequence: subchain SVI against batch VBEM on held-out data
# ---------------------------------------------------------------------------


def long_gaussian(T, seed):
    X, _, _ = make_hmm_sequences([0.5, 0.3, 0.2],
                                 [[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.9]],
                                 (np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]]),
                                  np.stack([np.eye(2)] * 3)), [T], random_state=seed)
    return X


@pytest.mark.parametrize("seed", [0, 1])
def test_subchain_fit_of_one_long_sequence_matches_batch_vbem(seed):
    X, X_test = long_gaussian(20000, seed), long_gaussian(5000, seed + 100)
    common = dict(n_components=3, emission="gaussian", random_state=seed)
    batch = VBHiddenMarkov(**common).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svi = VBHiddenMarkov(**common, learning_method="online", subchain_length=50,
                             batch_size=10, max_iter=5).fit(X)
    ref = batch.score(X_test)
    assert abs(svi.score(X_test) - ref) < 0.01 * abs(ref)
    assert svi.n_batch_iter_ > 100  # it took many small steps, not whole-sequence ones
    assert svi.buffer_length_ >= 1


# ---------------------------------------------------------------------------
# arguments, reproducibility, inputs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, name", [
    (dict(subchain_length=0), "subchain_length"),
    (dict(subchain_length=2.5), "subchain_length"),
    (dict(subchain_length="long"), "subchain_length"),
    (dict(subchain_length=10, buffer_length=-1), "buffer_length"),
    (dict(subchain_length=10, buffer_length="grow"), "buffer_length"),
    (dict(subchain_length=10, buffer_length=1.5), "buffer_length"),
])
def test_bad_arguments_raise_naming_them(kwargs, name):
    X = long_gaussian(200, 0)
    with pytest.raises(ValueError, match=name):
        VBHiddenMarkov(emission="gaussian", learning_method="online", **kwargs).fit(X)
    with pytest.raises(ValueError, match=name):
        VBHiddenMarkov(emission="gaussian", **kwargs).partial_fit(X)


def test_subchain_length_needs_online_learning():
    X = long_gaussian(200, 0)
    with pytest.raises(ValueError, match="subchain_length"):
        VBHiddenMarkov(emission="gaussian", subchain_length=10).fit(X)
    # partial_fit always learns online
    VBHiddenMarkov(emission="gaussian", subchain_length=10).partial_fit(X)


@pytest.mark.parametrize("buffer_length", ["auto", 3])
def test_reproducible_and_input_untouched(buffer_length):
    X = long_gaussian(3000, 3)
    X_before = X.copy()
    kw = dict(n_components=3, emission="gaussian", learning_method="online",
              subchain_length=30, batch_size=4, buffer_length=buffer_length, max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = VBHiddenMarkov(**kw, random_state=7).fit(X)
        b = VBHiddenMarkov(**kw, random_state=7).fit(X)
        c = VBHiddenMarkov(**kw, random_state=8).fit(X)
    np.testing.assert_array_equal(X, X_before)
    assert_same_posterior(posterior(a, "gaussian-full"), posterior(b, "gaussian-full"), rtol=0)
    assert not np.allclose(a.means_posterior_, c.means_posterior_, rtol=1e-8)
    p = VBHiddenMarkov(**kw, random_state=7).partial_fit(X).partial_fit(X)
    q = VBHiddenMarkov(**kw, random_state=7).partial_fit(X).partial_fit(X)
    assert_same_posterior(posterior(p, "gaussian-full"), posterior(q, "gaussian-full"), rtol=0)
    np.testing.assert_array_equal(X, X_before)
