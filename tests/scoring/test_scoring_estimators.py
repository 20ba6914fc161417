"""Scorers on the package estimators: one-state models, and AIS on categorical HMMs with
the estimator's sparse default prior (Dirichlet concentrations 1/K and 1/V per entry)."""

import io

import numpy as np
import pytest

from sklearn_vb import VBDiscreteDAG, VBHiddenMarkov
from sklearn_vb.datasets import make_hmm_sequences
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb._core.progress import Progress
from sklearn_vb.scoring import UnreliableEstimateWarning

HMM_X = np.array([0, 0, 1, 2, 2, 2, 1, 0, 1, 1, 0, 2])[:, None]
DAG_X = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]])


def _within(est, se, exact):
    err = abs(est - exact)
    return err <= max(0.05, 4 * se) and err <= 0.5


def _simulate_hmm(K, V, lengths, seed):
    r = np.random.default_rng(seed)
    A = 0.6 * np.eye(K) + 0.4 * r.dirichlet(np.ones(K), size=K)
    B = r.dirichlet(np.full(V, 0.3), size=K)
    X, _, L = make_hmm_sequences(np.ones(K) / K, A, B, lengths, random_state=seed)
    return X, L


# ----------------------------------------------------------------------- one-state models


@pytest.mark.parametrize("kind", ["hmm", "dag"])
def test_single_state_models_score_with_every_method(kind):
    """K = 1: the length-1 simplex blocks are constants.  There is no latent uncertainty,
    so VB and CS are exact, IS from q (= the exact posterior) has zero-variance weights
    and AIS agrees with the enumerated evidence."""
    if kind == "hmm":
        est = VBHiddenMarkov(n_components=1, n_symbols=3, random_state=0).fit(HMM_X)
        X = HMM_X
        shapes = {"pi": (1,), "A": (1, 1)}
    else:
        est = VBDiscreteDAG(n_components=1, cardinalities=3, random_state=0).fit(DAG_X)
        X = DAG_X
        shapes = {"cpt[latent]": (1, 1)}
    model = scoring_model_for(est)
    for name, shape in shapes.items():
        assert model.param_space[name].shape == shape and model.param_space[name].dim == 0
    exact = model.log_evidence(model.prepare_data(X))
    res = {m: score(est, X, m, random_state=0, **kw) for m, kw in [
        ("vb", {}), ("bic", {}), ("cs", {}), ("laplace", {}),
        ("is", {"n_samples": 500}), ("ais", {"n_temperatures": 500, "n_chains": 16})]}
    for m, r in res.items():
        assert np.isfinite(r.log_evidence), m
    assert res["vb"].log_evidence == pytest.approx(exact, abs=1e-8)
    assert res["cs"].log_evidence == pytest.approx(exact, abs=1e-8)
    assert res["is"].log_evidence == pytest.approx(exact, abs=1e-8)
    ais = res["ais"]
    assert _within(ais.log_evidence, ais.stderr, exact), (ais.log_evidence - exact, ais.stderr)
    assert res["bic"].diagnostics["d"] == model.n_parameters()


# ------------------------------------------------------------------ AIS on HMM estimators


def test_hmm_ais_matches_enumerated_evidence_under_sparse_prior():
    """Two length-6 sequences, K = 2, V = 5: 2^12 paths, exact evidence by enumeration.
    With the prior floor every estimate lies within 4 of its standard errors of the exact
    value and above the VB bound.  With Beal's Dirichlet proposal Dir(alpha theta) (floor
    0), entries that start near 0 under the Dir(1/5) prior rarely come back, the chains do
    not mix and their spread understates the error: every such run is flagged and warned
    about, whatever its estimate (which, on one machine or another, lands on either side
    of the exact value)."""
    X, L = _simulate_hmm(2, 5, [6, 6], seed=1)
    est = VBHiddenMarkov(n_components=2, n_symbols=5, n_init=3, random_state=0).fit(X, lengths=L)
    model = scoring_model_for(est)
    exact = model.log_evidence(model.prepare_data(X, lengths=L))
    assert est.lower_bound_ < exact - 1.0  # a loose bound: the test has something to show
    kw = dict(lengths=L, n_temperatures=300, n_chains=16, start="prior")
    for seed in range(4):
        ais = score(est, X, "ais", random_state=seed, **kw)
        assert abs(ais.log_evidence - exact) <= 4 * ais.stderr, (ais.log_evidence - exact,
                                                                 ais.stderr)
        assert ais.log_evidence > est.lower_bound_
    for seed in range(2):
        with pytest.warns(UnreliableEstimateWarning, match="dirichlet_floor=0"):
            beal = score(est, X, "ais", dirichlet_floor=0.0, random_state=seed, **kw)
        assert beal.diagnostics["stderr_reliable"] is False
        assert any("dirichlet_floor=0" in r for r in beal.diagnostics["unreliable_reasons"])


def test_hmm_ais_increases_with_temperatures_and_passes_vb():
    """K = 3 states, 10 symbols, 200 frames: the AIS estimate rises with the number of
    temperatures and ends above the VB bound (it is a stochastic lower bound on an evidence
    that VB bounds from below).  Thirty temperatures land tens of nats below the longer
    schedules; between 300 and 1500 the gain is within the noise, so only a drop beyond
    the error bars would be wrong.  With floor 0 the chains freeze and the estimate stays
    far below VB whatever the schedule."""
    X, L = _simulate_hmm(3, 10, [200], seed=5)
    est = VBHiddenMarkov(n_components=3, n_symbols=10, n_init=3, random_state=0).fit(X, lengths=L)
    F = est.lower_bound_
    vals, ses = [], []
    for K in (30, 300, 1500):
        r = score(est, X, "ais", n_temperatures=K, n_chains=4, random_state=0, start="prior")
        vals.append(r.log_evidence)
        ses.append(r.stderr)
    assert vals[1] > vals[0] + 20 and vals[2] > vals[0] + 20, vals
    assert vals[2] > vals[1] - 3 * np.hypot(ses[1], ses[2]), (vals, ses)
    assert vals[2] > F
    assert not r.diagnostics["vb_violation"]
    with pytest.warns(UnreliableEstimateWarning, match="ais evidence estimate is unreliable"):
        frozen = score(est, X, "ais", n_temperatures=300, n_chains=4, random_state=0,
                       dirichlet_floor=0.0, start="prior")
    assert frozen.log_evidence < F - 50
    assert not frozen.diagnostics["reliable"] and frozen.diagnostics["unreliable_reasons"]


def test_stderr_flagged_unreliable_when_weights_collapse():
    X, L = _simulate_hmm(3, 10, [200], seed=5)
    est = VBHiddenMarkov(n_components=3, n_symbols=10, max_iter=500, random_state=0).fit(X, lengths=L)
    with pytest.warns(UnreliableEstimateWarning, match="effective sample size"):
        r = score(est, X, "ais", n_temperatures=20, n_chains=4, random_state=0, start="prior")
    assert r.diagnostics["ess"] < 2
    assert r.diagnostics["stderr_reliable"] is False
    # the delta-method value collapses to sqrt(1 - 1/C); the reported between-run spread
    # of the four single-chain runs does not
    assert r.diagnostics["stderr_delta"] == pytest.approx(np.sqrt(1 - 1 / 4), abs=0.02)
    lw = r.diagnostics["log_weights"]
    assert r.diagnostics["run_estimates"] == pytest.approx(lw)
    assert r.stderr == pytest.approx(np.std(lw, ddof=1) / 2)
    assert r.stderr > 5 * r.diagnostics["stderr_delta"]


# ------------------------------------------------------------------------------- progress


def test_progress_lines_only_for_long_runs():
    t = [0.0]
    out = io.StringIO()
    p = Progress(1, "ais", 100, interval=2.0, stream=out, clock=lambda: t[0])
    for k in range(1, 101):
        t[0] = 0.1 * k  # 10 s in all: a line about every 2 s, then the final line
        p(k, f"running estimate {-k:.1f}")
    lines = out.getvalue().splitlines()
    assert 4 <= len(lines) <= 6
    assert lines[-1].startswith("[ais] |####################| 100/100 (100%)")
    assert "left ~0.0s" in lines[-1] and lines[-1].endswith("running estimate -100.0")
    assert "elapsed 10.0s" in lines[-1]
    quiet = io.StringIO()
    t[0] = 0.0
    p = Progress(1, "ais", 100, stream=quiet, clock=lambda: t[0])
    for k in range(1, 101):
        t[0] = 0.01 * k  # 1 s: silent
        p(k, lambda: 1 / 0)  # never printed, so never evaluated
    assert quiet.getvalue() == ""


def test_bdmc_and_compiled_ais_report_progress(capsys):
    from tests.oracles.reference_models import BetaBernoulli

    model = BetaBernoulli(1, 1)
    X = [1, 0, 1, 1]
    score(model, X, "bdmc", K_grid=(10, 20), gap_tol=-np.inf, n_chains=2, verbose=1, random_state=0)
    out = capsys.readouterr().out
    assert "[bdmc] K=10" in out and "[bdmc] K=20" in out
    est = VBDiscreteDAG(n_components=2, cardinalities=3, random_state=0).fit(DAG_X)
    score(est, DAG_X, "ais", n_temperatures=2048, n_chains=2, verbose=2, random_state=0)
    out = capsys.readouterr().out
    assert "[ais]" in out and "2048/2048 (100%)" in out


def test_structure_search_over_states_from_one():
    """A search over n_components = 1, 2, 3 scores every candidate with every method (the
    K = 1 candidate used to fail for all but vb) and picks the generating size by AIS."""
    import warnings

    from sklearn_vb.model_selection import StructureSearch
    from sklearn_vb.scoring import get_scorer

    X, L = _simulate_hmm(2, 4, [60, 60], seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = StructureSearch(
            VBHiddenMarkov(n_symbols=4, n_init=2, max_iter=200, random_state=0),
            {"n_components": [1, 2, 3]},
            scoring={"vb": "vb", "bic": "bic", "cs": "cs", "is": "is",
                     "ais": get_scorer("ais", n_temperatures=300, n_chains=8)},
            refit="ais", error_score="raise", random_state=0).fit(X, lengths=L)
    res = search.results_
    for name in ("vb", "bic", "cs", "is", "ais"):
        vals = np.asarray(res[f"score_{name}"], dtype=float)
        assert vals.shape == (3,) and np.all(np.isfinite(vals)), name
    # K = 1 has no latent uncertainty: VB, CS and IS agree exactly
    assert res["score_cs"][0] == pytest.approx(res["score_vb"][0], abs=1e-8)
    assert res["score_is"][0] == pytest.approx(res["score_vb"][0], abs=1e-8)
    assert search.best_params_ == {"n_components": 2}
