"""Stopping rules of the MFA birth/death search: epochs end on a relative change of F,
the search after a full pass of rejected births, the final polish on the predicted
remaining gain; the bound never decreases within an epoch."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.mfa import VBMixtureFactorAnalysers


def _problem(seed, n=70):
    rng = np.random.default_rng(seed)
    p = int(rng.integers(3, 6))
    centres = rng.normal(scale=5.0, size=(3, p))
    return np.vstack([c + rng.normal(size=(n, 1)) @ rng.normal(size=(1, p))
                      + 0.3 * rng.normal(size=(n, p)) for c in centres])


def _fit(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return VBMixtureFactorAnalysers(**kw).fit(X)


@pytest.fixture(scope="module", params=[0, 1])
def search(request):
    """A default search with every coordinate step checked (bound_check='steps':
    VBEM steps, deaths aside, extrapolations, rotations, column removals and the
    partial iterations of the births)."""
    X = _problem(request.param)
    return X, _fit(X, random_state=request.param, bound_check="steps")


def _epochs(m):
    h = m.search_history_
    for e in np.unique(h["epoch"]):
        sel = (h["epoch"] == e) & np.isin(h["event"], ["iter", "birth", "polish", "death"])
        yield e, h["event"][sel], h["bound"][sel]


def test_bound_never_decreases_within_an_epoch(search):
    X, m = search
    for _, events, bounds in _epochs(m):
        # a death restarts the trace (a structure change)
        start = np.flatnonzero(events == "death")
        run = bounds[start[-1]:] if start.size else bounds
        assert np.all(np.diff(run) >= -1e-9 * np.abs(run[1:]))
    assert np.all(np.diff(m.lower_bounds_) >= -1e-9 * np.abs(m.lower_bounds_[1:]))


def test_first_epoch_ends_on_the_relative_change(search):
    """One component (no agitation rule): the first epoch ends at the first iteration
    that raises F by less than epoch_rtol |F| (or by less than tol)."""
    X, m = search
    _, events, bounds = next(_epochs(m))
    d = np.diff(bounds)
    stop = np.maximum(m.epoch_rtol * np.abs(bounds[1:]), m.tol)
    assert d[-1] < stop[-1]
    assert np.all(d[:-1] >= stop[:-1])


def test_search_stops_after_a_pass_of_rejections(search):
    """The search stops at the end of the first pass without an accepted birth: every
    birth after the last accepted one is rejected, each parent at most once."""
    X, m = search
    moves = m.search_history_["moves"]
    last = max([i for i, mv in enumerate(moves) if mv[2]], default=-1)
    tail = moves[last + 1:]
    assert not any(mv[2] for mv in tail)
    parents = [mv[1] for mv in tail]
    assert len(parents) == len(set(parents))
    assert m.converged_
    # with max_tries=2 the search goes on after that pass
    more = _fit(X, random_state=m.random_state, max_tries=2)
    assert more.n_births_proposed_ > m.n_births_proposed_


def test_polish_converges_by_the_remaining_gain(search):
    """The final polish ends converged only when the last change of F and the gain
    predicted from the recent increments are below tol."""
    from sklearn_vb.base import predicted_remaining_gain

    X, m = search
    h = m.search_history_
    polish = h["epoch"] == h["epoch"].max()
    # (a refit of the final size kept as the result converges by the same rule)
    assert h["event"][polish][0] in ("polish", "refit")
    trace = list(m.lower_bounds_)
    assert m.converged_
    assert trace[-1] - trace[-2] < m.tol
    assert predicted_remaining_gain(trace, window=3, block=10) < m.tol


def test_polish_cut_short_is_not_converged():
    X = _problem(0)
    # the warning names the limit the fit ran into: the polish's, not max_iter
    with pytest.warns(ConvergenceWarning, match="polish_iter=2 iterations of the final polish"):
        m = VBMixtureFactorAnalysers(random_state=0, polish_iter=2, tol=1e-9).fit(X)
    assert not m.converged_
    assert m.n_iter_ < m.max_iter
    with pytest.warns(ConvergenceWarning, match="max_iter=5 iterations"):
        VBMixtureFactorAnalysers(random_state=0, max_iter=5).fit(X)


def test_search_is_reproducible():
    X = _problem(1)
    a = _fit(X, random_state=5)
    b = _fit(X, random_state=5)
    assert a.lower_bound_ == b.lower_bound_
    assert a.search_history_["moves"] == b.search_history_["moves"]
    assert np.array_equal(a.lower_bounds_, b.lower_bounds_)
