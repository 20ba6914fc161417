"""Record, and compare, every number the package produces on a fixed set of problems.

A change of shape (a refactor) must leave these numbers unchanged.  Run from the
repository root with the package importable::

    python tests/golden/values.py record before.json
    ... change ...
    python tests/golden/values.py record after.json
    python tests/golden/values.py compare before.json after.json --rtol 1e-10

Recorded: every estimator's ``lower_bound_`` on the demo data sets (and a few more
configurations), and every scorer's value on small fitted models of each family and on
the conjugate reference models.  The fits are seeded, so two runs of the same code give
the same numbers bit for bit.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

# run as a script, the repository root is not on the path; the conjugate oracles live in
# tests/oracles
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def _estimator_bounds():
    from sklearn_vb import (VBDiscreteDAG, VBHiddenMarkov, VBLinearDynamicalSystem,
                            VBMixtureFactorAnalysers)
    from sklearn_vb.datasets import (BEAL_TRUE_CODE, bipartite_structure, make_beal_dag,
                                     make_hmm_sequences, make_lds, make_lds_params,
                                     make_mixed_dimension_clusters)

    out = {}
    seed = 0
    startprob = np.array([1.0, 0.0, 0.0])
    transmat = np.array([[0.8, 0.2, 0.0], [0.0, 0.8, 0.2], [0.2, 0.0, 0.8]])
    emission = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7]])
    X, _, lengths = make_hmm_sequences(startprob, transmat, emission, np.full(20, 50),
                                       random_state=seed)
    for k in range(1, 6):
        m = VBHiddenMarkov(n_components=k, n_symbols=4, n_init=3, max_iter=300,
                           random_state=seed).fit(X, lengths=lengths)
        out[f"hmm_categorical_k{k}"] = m.lower_bound_
        out[f"hmm_categorical_k{k}_score"] = m.score(X, lengths=lengths)
    rng = np.random.default_rng(1)
    means = np.array([[0.0, 0.0], [3.0, 1.0], [-2.0, 3.0]])
    z = make_hmm_sequences(np.ones(3) / 3, transmat, np.eye(3), np.full(10, 60),
                           random_state=1)[1]
    Xg = means[z] + rng.normal(size=(len(z), 2)) * 0.7
    for cov in ("full", "diag"):
        for k in (2, 3, 4):
            m = VBHiddenMarkov(n_components=k, emission="gaussian", covariance_type=cov,
                               n_init=2, max_iter=300, random_state=seed)
            m.fit(Xg, lengths=np.full(10, 60))
            out[f"hmm_gaussian_{cov}_k{k}"] = m.lower_bound_
            out[f"hmm_gaussian_{cov}_k{k}_score"] = m.score(Xg, lengths=np.full(10, 60))

    Xm, _ = make_mixed_dimension_clusters(n_samples_per_cluster=150, dims=(1, 2, 3),
                                          n_features=8, random_state=seed)
    m = VBMixtureFactorAnalysers(n_init=2, random_state=seed).fit(Xm)
    out["mfa_search"] = m.lower_bound_
    out["mfa_search_components"] = m.n_components_
    for k in range(1, 4):
        m = VBMixtureFactorAnalysers(n_components=k, search=False, n_init=2,
                                     random_state=seed).fit(Xm)
        out[f"mfa_k{k}"] = m.lower_bound_
        out[f"mfa_k{k}_score"] = m.score(Xm)

    params = make_lds_params(n_states=3, n_outputs=8, random_state=seed)
    L = np.full(4, 200)
    Xl, _ = make_lds(params, L, random_state=seed)
    m = VBLinearDynamicalSystem(n_states=6, max_iter=200, random_state=seed).fit(Xl, lengths=L)
    out["lds_ard6"] = m.lower_bound_
    out["lds_ard6_score"] = m.score(Xl, lengths=L)
    for k in (1, 3):
        m = VBLinearDynamicalSystem(n_states=k, ard=False, max_iter=200, random_state=seed)
        out[f"lds_fixed{k}"] = m.fit(Xl, lengths=L).lower_bound_

    Xd = make_beal_dag(4000, random_state=seed)
    parents, cards, hidden = bipartite_structure(BEAL_TRUE_CODE)
    m = VBDiscreteDAG(parents, cards, hidden, n_init=2, tol=1e-6 * 4000, random_state=seed)
    out["dag_true_structure"] = m.fit(Xd).lower_bound_
    out["dag_true_structure_score"] = m.score(Xd)
    for method in ("map", "ml"):
        try:
            m = VBDiscreteDAG(parents, cards, hidden, method=method, n_init=2,
                              random_state=seed).fit(Xd[:500])
            out[f"dag_{method}"] = m.score(Xd[:500])
        except TypeError:
            pass
    return out


def _small_models():
    """(name, fitted estimator, X, fit params) for every family."""
    from sklearn_vb import (VBDiscreteDAG, VBHiddenMarkov, VBLinearDynamicalSystem,
                            VBMixtureFactorAnalysers)
    from sklearn_vb.datasets import make_lds, make_lds_params

    rng = np.random.default_rng(3)
    out = []
    Xh = np.array([0, 0, 1, 2, 2, 2, 1, 0, 1, 1, 0, 2, 2, 2, 0, 0])[:, None]
    out.append(("hmm_cat", VBHiddenMarkov(n_components=2, n_symbols=3, n_init=2,
                                          random_state=0).fit(Xh, lengths=[8, 8]),
                Xh, {"lengths": [8, 8]}))
    Xg = np.concatenate([rng.normal(-2, 1, (15, 2)), rng.normal(2, 1, (15, 2))])
    for cov in ("full", "diag"):
        out.append((f"hmm_{cov}", VBHiddenMarkov(n_components=2, emission="gaussian",
                                                 covariance_type=cov, random_state=0)
                    .fit(Xg, lengths=[15, 15]), Xg, {"lengths": [15, 15]}))
    Xm = np.concatenate([rng.normal(-2, 1, (20, 3)), rng.normal(2, 1, (20, 3))])
    out.append(("mfa", VBMixtureFactorAnalysers(n_components=2, search=False,
                                                random_state=0).fit(Xm), Xm, {}))
    params = make_lds_params(n_states=1, n_outputs=2, random_state=0)
    Xl, _ = make_lds(params, [20], random_state=0)
    out.append(("lds", VBLinearDynamicalSystem(n_states=1, max_iter=100, random_state=0)
                .fit(Xl), Xl, {}))
    Xd = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2], [1, 1], [1, 0]])
    out.append(("dag", VBDiscreteDAG(n_components=2, cardinalities=3, n_init=2,
                                     random_state=0).fit(Xd), Xd, {}))
    return out


SCORE_OPTIONS = {
    "vb": {}, "bic": {}, "bicp": {}, "laplace": {}, "cs": {}, "cs_dagger": {},
    "is": {"n_samples": 200},
    "ais": {"n_temperatures": 100, "n_chains": 4},
    "rais": {"n_temperatures": 100, "n_chains": 4},
    "bdmc": {"n_temperatures": 100, "n_chains": 4},
    "vmcmc": {"n_samples": 200},
}


def _score_all(name, est, X, fit_params, out):
    from sklearn_vb.scoring import SCORERS, score

    for method in SCORERS:
        options = {k: v for k, v in SCORE_OPTIONS.get(method, {}).items()
                   if k in SCORERS[method].all_option_defaults()}
        key = f"score_{name}_{method}"
        try:
            r = score(est, X, method, random_state=0, **options, **fit_params)
            out[key] = r.log_evidence
            if r.stderr is not None and np.isfinite(r.stderr):
                out[key + "_stderr"] = r.stderr
        except Exception as exc:  # the failure itself is a recorded outcome
            out[key] = f"error {type(exc).__name__}"


def _reference_models():
    from tests.oracles import reference_models as ref
    # keys R1..R7 are kept as recorded; they are the reference problems beta-bernoulli,
    # dirichlet-categorical, gaussian-mean, linear-regression, latent-class, discrete-hmm
    # and gaussian-mixture-1d of tests/scoring/test_scoring_reference.py, in that order
    X4 = np.column_stack([[[1, 0], [0, 1], [1, 1]], [1, -1, 0.5]])
    return [
        ("R1", ref.BetaBernoulli(1, 1), [1] * 7 + [0] * 3, {}),
        ("R2", ref.DirichletCategorical([1, 1, 1]), [0, 0, 0, 2, 2], {}),
        ("R3", ref.GaussianMean(0.0, 1.0, 1.0), [0.5, 1.5], {}),
        ("R4", ref.BayesianLinearRegression(2, alpha=1.0, beta=1.0), X4, {}),
        ("R5", ref.LatentClassModel(2, (3, 3), 1.0),
         [[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]], {}),
        ("R6", ref.DiscreteHMM(2, 3, 1.0), [0, 0, 1, 2, 2, 2, 1, 0], {"lengths": [4, 4]}),
        ("R7", ref.GaussianMixture1D(2, 4.0, 1.0), [-2.1, -1.7, 1.9, 2.4, 0.3], {}),
    ]


def record(path):
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    out = {f"bound_{k}": v for k, v in _estimator_bounds().items()}
    for name, est, X, fp in _small_models():
        out[f"bound_small_{name}"] = est.lower_bound_
        _score_all(name, est, X, fp, out)
    for name, model, X, fp in _reference_models():
        data = model.prepare_data(X, **fp)
        out[f"exact_{name}"] = model.log_evidence(data)
        fitted = None
        if hasattr(model, "fit_vb"):
            # latent-variable oracles restart from random responsibilities: seed them
            try:
                fitted = model.fit_vb(data, random_state=0)
            except TypeError:
                fitted = model.fit_vb(data)
        if fitted is not None:
            _score_all(name, fitted, X, fp, out)
    out = {k: (float(v) if isinstance(v, (int, float, np.floating, np.integer)) else v)
           for k, v in out.items()}
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print(f"{len(out)} values in {time.perf_counter() - t0:.1f} s -> {path}")


def compare(path_a, path_b, rtol=1e-10):
    a, b = json.load(open(path_a)), json.load(open(path_b))
    bad = 0
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key, "missing"), b.get(key, "missing")
        if isinstance(va, float) and isinstance(vb, float):
            ok = abs(va - vb) <= rtol * max(abs(va), abs(vb), 1e-300) or va == vb
        else:
            ok = va == vb
        if not ok:
            bad += 1
            print(f"DIFFERS {key}: {va!r} vs {vb!r}")
    print(f"{len(set(a) | set(b))} values compared, {bad} differ (rtol {rtol})")
    return bad


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(sys.argv[2])
    else:
        rtol = float(sys.argv[sys.argv.index("--rtol") + 1]) if "--rtol" in sys.argv else 1e-10
        sys.exit(1 if compare(sys.argv[2], sys.argv[3], rtol) else 0)
