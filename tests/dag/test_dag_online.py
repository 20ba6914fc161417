"""Online (stochastic natural-gradient) VB of VBDiscreteDAG: ``partial_fit`` and
``learning_method="online"``.

The natural-gradient step is checked against a closed form built here from scratch
(expected family counts by enumerating every completion of the unobserved nodes of each
row, Dirichlet KLs from scipy); a step of length 1 on all rows against one VBEM
iteration; chunks of a memory-mapped file against the same chunks in memory; the online
fit against batch VBEM on held-out data.
"""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import digamma, gammaln, logsumexp

from sklearn_vb import VBDiscreteDAG
from sklearn_vb.datasets import make_beal_dag
from sklearn_vb.scoring import score

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

# two hidden nodes, one a parent of the other, and observed nodes with one or two parents
PARENTS = {"h1": [], "h2": ["h1"], "a": ["h1"], "b": ["h2"], "c": ["h2", "a"]}
CARDS = {"h1": 2, "h2": 3, "a": 3, "b": 2, "c": 3}
HIDDEN = ["h1", "h2"]


def toy_rows(n, seed, missing=0.15):
    """Rows of (a, b, c) drawn from a random DAG of the structure above, with missing
    values (NaN) at the rate ``missing``."""
    rng = np.random.default_rng(seed)
    theta = {name: rng.dirichlet(np.ones(CARDS[name]),
                                 size=int(np.prod([CARDS[p] for p in PARENTS[name]])))
             for name in PARENTS}
    states = {}
    for name in PARENTS:  # the dict is in topological order
        row = np.zeros(n, dtype=int)
        for p in PARENTS[name]:
            row = row * CARDS[p] + states[p]
        cdf = np.cumsum(theta[name][row], axis=1)
        states[name] = np.minimum((rng.random(n)[:, None] >= cdf).sum(axis=1), CARDS[name] - 1)
    X = np.column_stack([states[v] for v in ("a", "b", "c")]).astype(float)
    X[rng.random(X.shape) < missing] = np.nan
    return X


def toy(**kw):
    return VBDiscreteDAG(PARENTS, CARDS, HIDDEN, random_state=0, **kw)


def posterior(model):
    return np.concatenate([t.ravel() for t in model.posterior_])


# ---------------------------------------------------------------------------
# a step of length one is a VBEM iteration
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
def test_step_of_length_one_on_all_rows_is_one_vbem_iteration(weighted):
    X = toy_rows(150, seed=0)
    n = X.shape[0]
    w = np.random.default_rng(1).uniform(0.2, 3.0, n) if weighted else None
    total = float(w.sum()) if weighted else n
    common = dict(n_init=1, acceleration=None)
    start = toy(**common, max_iter=1).fit(X, sample_weight=w)
    one = toy(**common, max_iter=2).fit(X, sample_weight=w)
    two = toy(**common, max_iter=3).fit(X, sample_weight=w)
    # learning_offset=0: rho_1 = (0 + 1)^(-0.7) = 1
    online = toy(learning_offset=0.0, total_samples=total, batch_size=n)
    online.partial_fit(X, sample_weight=w)
    assert online.n_batch_iter_ == 2
    assert_allclose(posterior(online), posterior(one), rtol=1e-10, atol=0)
    # the step moved q(theta): the comparison is not of two copies of the start
    assert np.max(np.abs(posterior(one) - posterior(start))) > 1e-2
    # learning_decay=0: rho = 1 at every step, two steps are two iterations
    online = toy(learning_decay=0.0, total_samples=total, batch_size=n)
    online.partial_fit(X, sample_weight=w).partial_fit(X, sample_weight=w)
    assert_allclose(posterior(online), posterior(two), rtol=1e-10, atol=0)
    # fit in online mode: one epoch of one minibatch (the rows in a random order)
    epoch = toy(**common, learning_method="online", learning_offset=0.0, batch_size=n,
                max_iter=1).fit(X, sample_weight=w)
    assert_allclose(posterior(epoch), posterior(one), rtol=1e-10, atol=0)
    # ... and its lower_bound_ is the exact bound of that q(theta), as after the VBE
    # step that ends the batch iteration
    assert epoch.lower_bound_ == pytest.approx(one.lower_bound_, rel=1e-10)
    for a, b in zip(epoch.expected_counts_, one.expected_counts_):
        assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------
# the natural-gradient step against a closed form built from scratch
# ---------------------------------------------------------------------------


def enumerated_vbe(model, X):
    """Expected family counts (one table per node, in node order) and sum_i ln Z_i of
    the rows of ``X`` under the model's exp E[ln theta], summing over every completion
    of the hidden and missing values of each row."""
    s = model.structure_
    names = list(s.names)
    elog = [digamma(a) - digamma(a.sum(axis=1, keepdims=True)) for a in model.posterior_]
    counts = [np.zeros_like(a) for a in model.posterior_]
    observed = [names.index(v) for v in ("a", "b", "c")]
    total_log_z = 0.0
    for row in X:
        free = [j for j in range(len(names))
                if j not in observed or np.isnan(row[observed.index(j)])]
        completions, potentials = [], []
        for values in itertools.product(*[range(s.cardinalities[j]) for j in free]):
            state = np.zeros(len(names), dtype=int)
            for j, v in zip(observed, row):
                if not np.isnan(v):
                    state[j] = int(v)
            state[free] = values
            cells = []
            for j in range(len(names)):
                l = 0
                for p in s.parents[j]:
                    l = l * s.cardinalities[p] + state[p]
                cells.append((j, l, state[j]))
            completions.append(cells)
            potentials.append(sum(elog[j][l, k] for j, l, k in cells))
        potentials = np.array(potentials)
        log_z = logsumexp(potentials)
        total_log_z += log_z
        for cells, pot in zip(completions, potentials):
            for j, l, k in cells:
                counts[j][l, k] += np.exp(pot - log_z)
    return counts, total_log_z


def dirichlet_kl(alpha, prior):
    """sum over rows of KL(Dir(alpha_row) || Dir(prior_row))."""
    a0, l0 = alpha.sum(axis=1), prior.sum(axis=1)
    e = digamma(alpha) - digamma(a0)[:, None]
    return float(np.sum(gammaln(a0) - gammaln(l0))
                 + np.sum(gammaln(prior) - gammaln(alpha) + (alpha - prior) * e))


def test_natural_gradient_step_is_the_convex_combination():
    X1, X2 = toy_rows(40, seed=2), toy_rows(25, seed=3)
    offset, decay, total = 3.0, 0.6, 812.5
    model = toy(learning_offset=offset, learning_decay=decay, total_samples=total)
    model.partial_fit(X1)
    before = [a.copy() for a in model.posterior_]
    counts, log_z = enumerated_vbe(model, X2)
    c = total / X2.shape[0]
    model.partial_fit(X2)
    rho = (offset + 2) ** (-decay)  # the second step: n_batch_iter_ was 2
    assert model.n_batch_iter_ == 3
    for j, name in enumerate(model.structure_.names):
        target = model.prior_[j] + c * counts[j]
        expected = (1 - rho) * before[j] + rho * target
        assert_allclose(model.posterior_[j], expected, rtol=1e-10, err_msg=name)
        # neither end point: the step is a real mixture
        assert not np.allclose(model.posterior_[j], target, rtol=1e-6), name
        assert not np.allclose(model.posterior_[j], before[j], rtol=1e-6), name
        # the fitted tables follow q(theta); the counts are the minibatch's, scaled
        assert_allclose(model.cpts_[j], expected / expected.sum(axis=1, keepdims=True),
                        rtol=1e-10)
        assert_allclose(model.expected_counts_[j], c * counts[j], rtol=1e-10, atol=1e-12)
    # the stream's bound estimate: total / n_b * sum ln Z under q before the step,
    # minus the KL of q after it
    kl = sum(dirichlet_kl(a, p) for a, p in zip(model.posterior_, model.prior_))
    assert model.lower_bound_ == pytest.approx(c * log_z - kl, rel=1e-10)


def test_online_fit_lower_bound_is_the_exact_bound_of_its_q():
    X = toy_rows(60, seed=4)
    model = toy(learning_method="online", batch_size=16, max_iter=4, n_init=1).fit(X)
    _, log_z = enumerated_vbe(model, X)
    kl = sum(dirichlet_kl(a, p) for a, p in zip(model.posterior_, model.prior_))
    assert model.lower_bound_ == pytest.approx(log_z - kl, rel=1e-10)
    assert len(model.lower_bounds_) == model.n_iter_ <= 4
    # 4 minibatches per epoch, counted from 1
    assert model.n_batch_iter_ == 4 * model.n_iter_ + 1


# ---------------------------------------------------------------------------
# streams of chunks
# ---------------------------------------------------------------------------


def test_partial_fit_over_memmap_chunks_equals_in_memory_chunks(tmp_path):
    X = toy_rows(300, seed=5)
    path = tmp_path / "rows.dat"
    stored = np.memmap(path, dtype=X.dtype, mode="w+", shape=X.shape)
    stored[:] = X
    stored.flush()
    del stored
    rows = np.memmap(path, dtype=X.dtype, mode="r", shape=X.shape)  # read-only
    chunks = [slice(0, 130), slice(130, 190), slice(190, 300)]
    params = dict(batch_size=50, total_samples=300)
    streamed, in_memory = toy(**params), toy(**params)
    for chunk in chunks:
        streamed.partial_fit(rows[chunk])
        in_memory.partial_fit(np.array(X[chunk]))
    # 130 + 60 + 110 rows in minibatches of at most 50: 3 + 2 + 3 steps
    assert streamed.n_batch_iter_ == 9 and streamed.n_iter_ == 8
    assert_allclose(posterior(streamed), posterior(in_memory), rtol=1e-12)
    assert_allclose(streamed.lower_bounds_, in_memory.lower_bounds_, rtol=1e-12)
    assert_array_equal(np.asarray(rows), X)


def test_fitted_api_after_partial_fit():
    X = toy_rows(100, seed=6)
    model = toy(batch_size=40, total_samples=1000).partial_fit(X)
    assert model.n_batch_iter_ == 4  # minibatches of 40, 40 and 20 rows
    assert model.lower_bounds_.shape == (3,) and model.lower_bound_ == model.lower_bounds_[-1]
    assert not model.converged_
    assert np.isfinite(model.score(X))
    assert model.predict(X).shape == (100,)
    assert_allclose(model.predict_proba(X, node="h2").sum(axis=1), 1.0)
    assert model.sample(7)[0].shape == (7, 3)
    assert np.isfinite(model.bic(X))
    assert model.log_likelihood_ == pytest.approx(float(np.sum(model.score_samples(X))),
                                                  rel=1e-12)
    # lower_bound_ is an estimate for a stream, not a bound on the evidence of X
    with pytest.raises(ValueError, match="not the data"):
        score(model, X, "vb")
    # a fit begins a new history: the steps of a later partial_fit follow its own
    model.set_params(max_iter=3).fit(X)
    model.partial_fit(X[:30])
    assert model.lower_bounds_.shape == (1,) and model.n_iter_ == 1


def test_later_chunks_must_match_the_first():
    X = toy_rows(50, seed=7)
    model = toy().partial_fit(X)
    with pytest.raises(ValueError, match="features"):
        model.partial_fit(np.hstack([X, X]))
    bad = X.copy()
    bad[0, 0] = 3  # node a has 3 states
    with pytest.raises(ValueError, match="'a'"):
        model.partial_fit(bad)


def test_warm_started_batch_fit_after_partial_fit_begins_with_a_vbe_step():
    X = toy_rows(120, seed=8)
    streamed = toy(batch_size=30, total_samples=5000, acceleration=None, max_iter=5)
    streamed.partial_fit(X)
    start = {name: a.copy() for name, a in zip(streamed.structure_.names, streamed.posterior_)}
    streamed.set_params(warm_start=True).fit(X)
    # the same run from the same q(theta): init_posterior starts with the VBE step
    fresh = toy(init_params="posterior", init_posterior=start, n_init=1,
                acceleration=None, max_iter=5).fit(X)
    assert_allclose(posterior(streamed), posterior(fresh), rtol=1e-10)
    assert streamed.lower_bound_ == pytest.approx(fresh.lower_bound_, rel=1e-10)


# ---------------------------------------------------------------------------
# online fit
# ---------------------------------------------------------------------------


def test_online_fit_reaches_batch_held_out_likelihood():
    X = make_beal_dag(n_samples=6000, random_state=0)
    X_test = make_beal_dag(n_samples=4000, random_state=1)
    params = dict(n_components=3, n_init=2, random_state=0)
    batch = VBDiscreteDAG(**params).fit(X)
    online = VBDiscreteDAG(**params, learning_method="online", batch_size=200,
                           max_iter=100).fit(X)
    assert online.converged_
    held_batch, held_online = batch.score(X_test), online.score(X_test)
    assert held_online >= held_batch - 0.005 * abs(held_batch)
    # the bound of the final q(theta) on the training data, below batch VBEM's optimum
    # by little
    assert online.lower_bound_ <= batch.lower_bound_ + 1e-6 * abs(batch.lower_bound_)
    assert online.lower_bound_ >= batch.lower_bound_ - 0.005 * abs(batch.lower_bound_)
    assert len(online.lower_bounds_) == online.n_iter_


def test_online_fit_is_reproducible_and_leaves_inputs_alone():
    X = toy_rows(200, seed=9)
    w = np.random.default_rng(0).uniform(0.0, 2.0, X.shape[0])
    X_copy, w_copy = X.copy(), w.copy()
    params = dict(learning_method="online", batch_size=32, max_iter=5, n_init=2)
    a = toy(**params).fit(X, sample_weight=w)
    b = toy(**params).fit(X, sample_weight=w)
    c = toy(**params).set_params(random_state=1).fit(X, sample_weight=w)
    assert_array_equal(posterior(a), posterior(b))
    assert_array_equal(a.lower_bounds_, b.lower_bounds_)
    assert not np.allclose(posterior(a), posterior(c), rtol=1e-9)
    p = toy(batch_size=32).partial_fit(X, sample_weight=w)
    q = toy(batch_size=32).partial_fit(X, sample_weight=w)
    assert_array_equal(posterior(p), posterior(q))
    assert_array_equal(X, X_copy)
    assert_array_equal(w, w_copy)
    assert p.n_batch_iter_ == 8  # 200 rows of positive weight in minibatches of 32


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
    X = toy_rows(20, seed=10)
    with pytest.raises(ValueError, match=name):
        toy(**{name: value}).partial_fit(X)
    with pytest.raises(ValueError, match=name):
        toy(**{"learning_method": "online", name: value}).fit(X)


@pytest.mark.parametrize("method", ["map", "ml"])
def test_online_needs_vb(method):
    X = toy_rows(20, seed=10)
    with pytest.raises(ValueError, match="method"):
        toy(method=method).partial_fit(X)
    with pytest.raises(ValueError, match="method"):
        toy(method=method, learning_method="online").fit(X)
    # a point estimate is not continued by partial_fit
    fitted = toy(method=method, max_iter=3).fit(X).set_params(method="vb")
    with pytest.raises(ValueError, match="point estimate"):
        fitted.partial_fit(X)


def test_all_zero_weights_are_refused():
    X = toy_rows(20, seed=10)
    with pytest.raises(ValueError, match="(?i)sample.weight"):
        toy().partial_fit(X, sample_weight=np.zeros(20))
    model = toy().partial_fit(X)
    with pytest.raises(ValueError, match="(?i)sample.weight"):
        model.partial_fit(X, sample_weight=np.zeros(20))
