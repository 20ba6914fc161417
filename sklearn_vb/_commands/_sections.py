"""The demo sections, in the order they run."""

from __future__ import annotations

import numpy as np

from .bernoulli_mixture import VBBernoulliMixture
from ..dag import VBDiscreteDAG
from ..datasets import (BEAL_TRUE_CODE, bipartite_structure, enumerate_bipartite_structures,
                        make_beal_dag, make_hmm_sequences, make_lds, make_lds_params,
                        make_mixed_dimension_clusters)
from ..hmm import VBHiddenMarkov
from ..lds import VBLinearDynamicalSystem
from ..mfa import VBMixtureFactorAnalysers
from ._format import print_size_table, print_trace, timed_fits


def bernoulli_mixture_section(seed):
    """The shared VBEM core on its smallest model: a VB mixture of Bernoullis."""
    rng = np.random.default_rng(seed)
    true_k, n, d = 3, 300, 12
    means = rng.uniform(0.05, 0.95, size=(true_k, d))
    z = rng.integers(0, true_k, n)
    X = (rng.random((n, d)) < means[z]).astype(float)
    print(f"data: {n} binary vectors of length {d} from {true_k} clusters")
    model = timed_fits(lambda: VBBernoulliMixture(n_components=true_k, n_init=3, random_state=seed).fit(X))
    print_trace(model)
    rows = []
    for k in range(1, 7):
        fitted = VBBernoulliMixture(n_components=k, n_init=3, random_state=seed).fit(X)
        rows.append((k, fitted.lower_bound_, f"{fitted.n_iter_} iterations"))
    best = int(np.argmax([r[1] for r in rows]))
    print_size_table("components", rows, best, truth=true_k)


def hmm_section(seed):
    """VBHiddenMarkov: how many hidden states does a symbol sequence support?"""
    startprob = np.array([1.0, 0.0, 0.0])
    transmat = np.array([[0.8, 0.2, 0.0], [0.0, 0.8, 0.2], [0.2, 0.0, 0.8]])
    emission = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7]])
    lengths = np.full(20, 50)
    X, _, lengths = make_hmm_sequences(startprob, transmat, emission, lengths, random_state=seed)
    print(f"data: {len(lengths)} symbol sequences of length 50 from a 3-state HMM over 4 symbols")

    def fit(k, n_init=3):
        return VBHiddenMarkov(n_components=k, n_symbols=4, n_init=n_init, max_iter=300,
                              random_state=seed).fit(X, lengths=lengths)

    model = timed_fits(lambda: fit(3))
    print_trace(model)
    big = fit(8, n_init=2)
    print(f"fitted with 8 states, VB keeps {big.n_effective_components_} in use "
          "(the others stay at their prior)")
    rows = [(k, m.lower_bound_, f"{m.n_effective_components_} states in use")
            for k, m in ((k, fit(k)) for k in range(1, 6))]
    print_size_table("states", rows, int(np.argmax([r[1] for r in rows])), truth=3)


def mfa_section(seed):
    """VBMixtureFactorAnalysers: components and their dimensions found by birth/death search."""
    X, _ = make_mixed_dimension_clusters(n_samples_per_cluster=150, dims=(1, 2, 3),
                                         n_features=8, random_state=seed)
    print(f"data: {X.shape[0]} points in {X.shape[1]} dimensions: a line, a plane and a 3-d blob")
    model = timed_fits(lambda: VBMixtureFactorAnalysers(n_init=2, random_state=seed).fit(X))
    print_trace(model, label="lower bound of the best of 2 searches (across birth/death epochs)")
    print(f"birth/death search found {model.n_components_} components with "
          f"{sorted(model.n_factors_per_component_.tolist())} factors kept by ARD (true: [1, 2, 3])")
    rows = []
    for k in range(1, 6):
        fitted = VBMixtureFactorAnalysers(n_components=k, search=False, n_init=2,
                                          random_state=seed).fit(X)
        rows.append((k, fitted.lower_bound_,
                     f"factors per component {fitted.n_factors_per_component_.tolist()}"))
    print_size_table("components", rows, int(np.argmax([r[1] for r in rows])), truth=3)


def lds_section(seed):
    """VBLinearDynamicalSystem: ARD switches off unneeded state dimensions."""
    params = make_lds_params(n_states=3, n_outputs=8, random_state=seed)
    lengths = np.full(4, 200)
    X, _ = make_lds(params, lengths, random_state=seed)
    print(f"data: {len(lengths)} sequences of length 200, 8 outputs, from a 3-dimensional state space")
    model = timed_fits(lambda: VBLinearDynamicalSystem(n_states=6, max_iter=200,
                                                       random_state=seed).fit(X, lengths=lengths))
    print_trace(model)
    print(f"fitted with 6 state dimensions, ARD keeps {model.n_effective_states_} (true: 3)")
    # The size sweep switches ARD off so that each candidate keeps its dimension; with ARD
    # (and its pruning move) every candidate above 3 would shrink back to 3 by itself.
    rows = []
    for k in range(1, 6):
        fitted = VBLinearDynamicalSystem(n_states=k, ard=False, max_iter=200, random_state=seed)
        fitted.fit(X, lengths=lengths)
        rows.append((k, fitted.lower_bound_, "fixed dimension (ARD off)"))
    print_size_table("state dims", rows, int(np.argmax([r[1] for r in rows])), truth=3)


def dag_section(seed):
    """VBDiscreteDAG: ranking hidden-variable structures of Beal's experiment class."""
    n = 4000
    X = make_beal_dag(n, random_state=seed)
    codes = enumerate_bipartite_structures()
    print(f"data: {n} cases of 4 five-valued observed nodes with 2 binary hidden parents; "
          f"{len(codes)} candidate structures in the class")

    def fit(code):
        parents, cardinalities, hidden = bipartite_structure(code)
        model = VBDiscreteDAG(parents, cardinalities, hidden, n_init=2, tol=1e-6 * n,
                              random_state=seed)
        return model.fit(X)

    model = timed_fits(lambda: fit(BEAL_TRUE_CODE))
    print_trace(model)
    rng = np.random.default_rng(seed)
    others = [codes[i] for i in rng.choice(len(codes), size=8, replace=False)
              if tuple(codes[i]) != tuple(BEAL_TRUE_CODE)][:7]
    rows = []
    for code in [BEAL_TRUE_CODE] + others:
        fitted = model if code is BEAL_TRUE_CODE else fit(code)
        rows.append((str(tuple(code)), fitted.lower_bound_ + fitted.log_alias_count_,
                     f"{fitted.n_parameters_} parameters"))
    print("VB bound + ln(aliases) of the true structure and 7 random members of the class")
    print("(a structure is the parent-set code of each observed node: bit h = hidden node h):")
    print_size_table("structure", rows, int(np.argmax([r[1] for r in rows])),
                     truth=str(tuple(BEAL_TRUE_CODE)))


SECTIONS = {
    "core": ("VBEM core: VB mixture of Bernoullis", bernoulli_mixture_section),
    "hmm": ("VBHiddenMarkov: number of hidden states", hmm_section),
    "mfa": ("VBMixtureFactorAnalysers: components and factors", mfa_section),
    "lds": ("VBLinearDynamicalSystem: state dimension by ARD", lds_section),
    "dag": ("VBDiscreteDAG: structures with hidden nodes", dag_section),
}
