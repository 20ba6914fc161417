"""Degenerate but valid data: fits finish with finite bounds that never decrease; data in
other units give the same fit; missing DAG values are marginalised exactly."""

import itertools
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_vb import VBDiscreteDAG, VBHiddenMarkov, VBLinearDynamicalSystem, VBMixtureFactorAnalysers

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

RNG = np.random.default_rng(11)
CLUSTERS = np.concatenate([RNG.normal(m, 1.0, size=(30, 2)) for m in (-4.0, 0.0, 4.0)])


def _fit(est, X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, **kw)


def _assert_sound(est):
    bounds = np.asarray(est.lower_bounds_, dtype=float)
    assert np.all(np.isfinite(bounds)) and np.isfinite(est.lower_bound_)
    assert np.all(np.diff(bounds) >= -1e-8 * np.maximum(1.0, np.abs(bounds[1:])))


GAUSSIAN = {
    "hmm-full": lambda: VBHiddenMarkov(3, emission="gaussian", max_iter=60, random_state=0),
    "hmm-diag": lambda: VBHiddenMarkov(3, emission="gaussian", covariance_type="diag", max_iter=60,
                                       random_state=0),
    "mfa": lambda: VBMixtureFactorAnalysers(n_components=2, search=False, max_iter=60, random_state=0),
    "lds": lambda: VBLinearDynamicalSystem(n_states=2, max_iter=30, random_state=0),
}


@pytest.mark.parametrize("name", sorted(GAUSSIAN))
@pytest.mark.parametrize("kind", ["constant-column", "duplicated-rows", "rank-one", "all-constant"])
def test_degenerate_gaussian_data(name, kind):
    X = CLUSTERS.copy()
    if kind == "constant-column":
        X[:, 1] = 2.5
    elif kind == "duplicated-rows":
        X = np.repeat(X[:15], 6, axis=0)
    elif kind == "rank-one":  # every point on a line: singular sample covariance
        X = np.outer(X[:, 0], [1.0, -2.0])
    else:
        X = np.full_like(X, 3.0)
    _assert_sound(_fit(GAUSSIAN[name](), X))


@pytest.mark.parametrize("name", ["hmm-full", "hmm-diag", "mfa"])
def test_rescaled_data_give_the_same_fit(name):
    """X * c: the bound moves by the Jacobian -n D ln c, the fitted structure does not.

    The bounds are compared iteration by iteration: a ``tol`` test that holds within
    round-off may end one fit a few iterations before another."""
    n, D = CLUSTERS.shape
    fits = {c: _fit(GAUSSIAN[name](), CLUSTERS * c) for c in (1e-6, 1.0, 1e6)}
    base = fits[1.0]
    for c, est in fits.items():
        k = min(len(est.lower_bounds_), len(base.lower_bounds_))
        np.testing.assert_allclose(est.lower_bounds_[:k] + n * D * np.log(c),
                                   base.lower_bounds_[:k], rtol=0.0, atol=1e-6)
        np.testing.assert_array_equal(est.predict(CLUSTERS * c), base.predict(CLUSTERS))


def test_categorical_hmm_unseen_symbol_and_emptied_states():
    X = np.tile([0, 1, 0, 1, 2], 20)[:, None]
    est = _fit(VBHiddenMarkov(6, n_symbols=4, max_iter=200, random_state=0), X)
    _assert_sound(est)
    # more states than the data need: some empty out (occupancy below one frame)
    assert est.n_effective_components_ < 6
    # symbol 3 was never seen: it is still a valid symbol of the alphabet
    assert np.isfinite(est.score(np.array([[3], [0], [3]])))
    assert np.all(est.emissionprob_[:, 3] > 0)


def test_gaussian_hmm_single_frame_sequences_and_duplicates():
    X = np.repeat(CLUSTERS[::10], 3, axis=0)
    est = _fit(VBHiddenMarkov(2, emission="gaussian", max_iter=50, random_state=0), X,
               lengths=np.ones(X.shape[0], dtype=int))
    _assert_sound(est)


# ------------------------------------------------------------------------- DAG
CHAIN = {"h": [], "a": ["h"], "b": ["h"], "c": ["a"]}


def _dag(**kw):
    return VBDiscreteDAG(CHAIN, cardinalities={"h": 2, "a": 2, "b": 3, "c": 2}, hidden="h",
                         max_iter=40, n_init=1, random_state=0, **kw)


def test_dag_node_that_never_varies_and_duplicated_rows():
    X = np.column_stack([RNG.integers(0, 2, 40), np.zeros(40), RNG.integers(0, 2, 40)])
    _assert_sound(_fit(_dag(), X))
    learned = _fit(VBDiscreteDAG(n_components=2, max_iter=40, n_init=1, random_state=0), X)
    _assert_sound(learned)
    assert learned.cardinalities_["x1"] == 1
    # duplicated rows are the same data as weights 2
    twice = _fit(_dag(), np.repeat(X, 2, axis=0))
    weighted = _dag()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted.fit(X, sample_weight=np.full(40, 2.0))
    assert twice.lower_bound_ == pytest.approx(weighted.lower_bound_, rel=1e-10)


def _completions(X):
    """Every completion of the missing (NaN or -1) entries of X, for cardinalities (2, 3, 2)."""
    cards = (2, 3, 2)
    holes = [(i, j) for i in range(X.shape[0]) for j in range(X.shape[1])
             if np.isnan(X[i, j]) or X[i, j] == -1]
    for values in itertools.product(*[range(cards[j]) for _, j in holes]):
        Y = X.copy()
        for (i, j), v in zip(holes, values):
            Y[i, j] = v
        yield Y


def test_dag_missing_values_are_marginalised_exactly():
    X = np.array([[0, 2, 1], [1, np.nan, 0], [np.nan, 1, np.nan], [1, 0, -1], [0, -1, 1]], dtype=float)
    est = _fit(_dag(), np.array([[0, 2, 1], [1, 0, 0], [1, 1, 1], [0, 0, 0]], dtype=float))
    # the evidence of the incomplete data is the sum over completions (all terms enumerated)
    direct = est.exact_log_evidence(X)
    enumerated = logsumexp([est.exact_log_evidence(Y) for Y in _completions(X)])
    assert direct == pytest.approx(enumerated, abs=1e-9)
    # so is each row's likelihood under the fitted tables
    for i in range(X.shape[0]):
        row = X[i:i + 1]
        want = logsumexp([est.score_samples(Y)[0] for Y in _completions(row)])
        assert est.score_samples(row)[0] == pytest.approx(want, abs=1e-12)
    # -1 and NaN mean the same
    np.testing.assert_allclose(est.score_samples(np.where(np.isnan(X), -1, X)), est.score_samples(X))
    # the VB bound with missing values stays below the exact evidence
    fitted = _fit(_dag(), X)
    assert fitted.lower_bound_ <= fitted.exact_log_evidence(X) + 1e-9


def test_rescaled_outputs_give_the_same_lds_fit():
    """Y * c: C, D scale by c and the noise precisions by 1 / c^2 under the default
    priors, so every bound of the trace moves by the Jacobian -T p ln c and the same
    states stay active.  Without the rotation step: its search amplifies round-off
    (a relative change of 1e-13 in Y, or Y * 2, moves the bound by 1e-3 nats within
    three iterations of its start), which would hide what is tested here."""
    from sklearn_vb.datasets import make_lds, make_lds_params

    params = make_lds_params(n_states=2, n_outputs=4, random_state=1)
    Y, _ = make_lds(params, [150], random_state=1)
    T, p = Y.shape
    fits = {c: _fit(VBLinearDynamicalSystem(n_states=3, max_iter=60, rotations=False,
                                            random_state=0), Y * c)
            for c in (1e-6, 1.0, 1e6)}
    base = fits[1.0]
    assert base.noise_prior_rate_ != 1.0  # the optimised prior, not the start
    for c, est in fits.items():
        shifted = np.asarray(est.lower_bounds_) + T * p * np.log(c)
        np.testing.assert_allclose(shifted, base.lower_bounds_, rtol=0, atol=1e-6)
        assert est.n_states_ == base.n_states_
        np.testing.assert_array_equal(est.active_states_, base.active_states_)
        np.testing.assert_allclose(est.C_mean_, c * base.C_mean_, rtol=1e-6)
        np.testing.assert_allclose(est.noise_precision_mean_ * c**2, base.noise_precision_mean_,
                                   rtol=1e-6)
    # an explicit rate is used as given (absolute): the rescaled fit then differs
    explicit = [_fit(VBLinearDynamicalSystem(n_states=3, max_iter=60, rotations=False,
                                             noise_rate=1.0, random_state=0), Y * c)
                for c in (1e-6, 1.0)]
    assert abs(explicit[0].lower_bound_ + T * p * np.log(1e-6) - explicit[1].lower_bound_) > 1e-3


def test_default_lds_noise_rate_is_the_mean_output_variance():
    Y = RNG.normal(size=(50, 3)) * [1.0, 2.0, 3.0]
    est = VBLinearDynamicalSystem(n_states=1, max_iter=1, hyperparameter_schedule=None,
                                  random_state=0)
    _fit(est, Y)
    assert est.noise_prior_rate_ == pytest.approx(np.mean(Y.var(axis=0)), rel=1e-12)
    _fit(est, np.full((20, 2), 3.0))  # constant outputs: the values' mean square
    assert est.noise_prior_rate_ == pytest.approx(9.0)
