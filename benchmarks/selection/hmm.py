"""HMM panel: the number of hidden states.

Problems
    ``thesis-3.5.1``: Beal (2003) §3.5.1, 21 sequences over {a, b, c} from (abc)*,
    (acb)* and (a*b*)* (:func:`~sklearn_vb.datasets.make_structure_discovery_sequences`);
    a perfect model has 7 states.  Held out: another draw of the same kind.
    ``categorical-K{2..5}`` / ``gaussian-K{2..5}``: generated sticky HMMs (self-transition
    0.8; categorical: 6 symbols, each state puts 0.6 on its own symbol; Gaussian: 2-D unit
    covariance means on a circle of radius 2.5); held out: independent sequences of the
    same model.
Methods
    ``sklearn_vb``: the default, ``StructureSearch(VBHiddenMarkov(), {"n_components":
    1..K_max}, scoring="vb")``; the gap to the truth is the alias-corrected VB score of
    the chosen K minus that of the true K (both from the same search).
    ``hmmlearn EM + BIC``: ``CategoricalHMM`` / ``GaussianHMM(covariance_type="full")``
    for every K (best of 3 seeds by likelihood), K by BIC; its gap is -BIC/2 at the
    chosen K minus at the true K.
"""

from __future__ import annotations

import numpy as np

from .common import Outcome, Problem, check_size, size_distance

#: per size: (sequences, length) of training and held-out data, seeds, largest K tried
_SIZES = {
    "guard": {"n_seq": 10, "seq_len": 100, "seeds": (0, 1, 2), "k_true": (2, 3),
              "thesis_seeds": (0, 1), "extra_k": 2},
    "quick": {"n_seq": 10, "seq_len": 100, "seeds": (0, 1), "k_true": (2, 4),
              "thesis_seeds": (0,), "extra_k": 2},
    "full": {"n_seq": 20, "seq_len": 100, "seeds": (0, 1, 2, 3, 4), "k_true": (2, 3, 4, 5),
             "thesis_seeds": (0, 1, 2, 3, 4), "extra_k": 3},
}
THESIS_K, THESIS_GRID = 7, tuple(range(1, 11))
N_SYMBOLS = 6


def _sticky_transmat(K, rng):
    T = 0.2 * rng.dirichlet(np.ones(K), size=K) if K > 1 else np.zeros((1, 1))
    T[np.arange(K), np.arange(K)] += 0.8 if K > 1 else 1.0
    return T / T.sum(axis=1, keepdims=True)


def _params(kind, K, seed):
    rng = np.random.default_rng([seed, K, 0 if kind == "categorical" else 1])
    start = np.full(K, 1.0 / K)
    trans = _sticky_transmat(K, rng)
    if kind == "categorical":
        emis = np.full((K, N_SYMBOLS), 0.4 / (N_SYMBOLS - 1))
        symbols = rng.permutation(N_SYMBOLS)[:K]
        emis[np.arange(K), symbols] = 0.6
        return start, trans, emis
    angle = 2 * np.pi * np.arange(K) / K + rng.uniform(0, 2 * np.pi)
    means = 2.5 * np.column_stack([np.cos(angle), np.sin(angle)])
    return start, trans, (means, np.tile(np.eye(2), (K, 1, 1)))


def _generated(kind, K, cfg):
    from sklearn_vb.datasets import make_hmm_sequences

    def make(seed):
        start, trans, emis = _params(kind, K, seed)
        lengths = [cfg["seq_len"]] * cfg["n_seq"]
        X, _, lens = make_hmm_sequences(start, trans, emis, lengths, random_state=seed)
        Xt, _, lt = make_hmm_sequences(start, trans, emis, lengths, random_state=seed + 10**6)
        return {"X": X, "lengths": list(lens), "X_test": Xt, "lengths_test": list(lt),
                "emission": kind, "grid": tuple(range(1, K + cfg["extra_k"] + 1)),
                "n_symbols": N_SYMBOLS}

    return Problem(f"{kind}-K{K}", K, cfg["seeds"], make)


def _thesis(cfg):
    from sklearn_vb.datasets import make_structure_discovery_sequences

    def make(seed):
        X, lengths, _ = make_structure_discovery_sequences(random_state=seed)
        Xt, lt, _ = make_structure_discovery_sequences(random_state=seed + 10**6)
        return {"X": X, "lengths": list(lengths), "X_test": Xt, "lengths_test": list(lt),
                "emission": "categorical", "grid": THESIS_GRID, "n_symbols": 3}

    return Problem("thesis-3.5.1", THESIS_K, cfg["thesis_seeds"], make)


def problems(size):
    cfg = _SIZES[check_size(size)]
    out = [_thesis(cfg)]
    for kind in ("categorical", "gaussian"):
        out += [_generated(kind, K, cfg) for K in cfg["k_true"]]
    return out


def ours(problem, data, seed):
    from sklearn_vb import VBHiddenMarkov
    from sklearn_vb.model_selection import StructureSearch

    est = VBHiddenMarkov(emission=data["emission"], random_state=seed)
    if data["emission"] == "categorical":
        est.set_params(n_symbols=data["n_symbols"])
    search = StructureSearch(est, {"n_components": list(data["grid"])}, scoring="vb",
                             random_state=seed).fit(data["X"], lengths=data["lengths"])
    K = int(search.best_params_["n_components"])
    scores = np.asarray(search.results_["score_vb"], dtype=float)
    grid = np.asarray(search.results_["param_n_components"], dtype=int)
    gap = float(search.best_score_ - scores[grid == problem.truth][0])
    heldout = search.best_estimator_.score(data["X_test"], lengths=data["lengths_test"])
    return Outcome(K, K == problem.truth, size_distance(K, problem.truth), heldout, gap)


def hmmlearn_bic(problem, data, seed, n_starts=3):
    from hmmlearn import hmm

    X, lengths = data["X"], data["lengths"]
    fits = {}
    for K in data["grid"]:
        best = None
        for s in range(n_starts):
            if data["emission"] == "categorical":
                m = hmm.CategoricalHMM(n_components=K, n_features=data["n_symbols"], n_iter=200,
                                       random_state=1000 * seed + s)
            else:
                m = hmm.GaussianHMM(n_components=K, covariance_type="full", n_iter=200,
                                    random_state=1000 * seed + s)
            m.fit(X, lengths)
            ll = m.score(X, lengths)
            if best is None or ll > best[0]:
                best = (ll, m)
        fits[K] = (best[1].bic(X, lengths), best[1])
    K = min(fits, key=lambda k: fits[k][0])
    gap = float(-0.5 * fits[K][0] + 0.5 * fits[problem.truth][0])
    m = fits[K][1]
    heldout = m.score(data["X_test"], data["lengths_test"]) / len(data["X_test"])
    return Outcome(K, K == problem.truth, size_distance(K, problem.truth), heldout, gap)


METHODS = {"sklearn_vb": ours, "hmmlearn EM + BIC": hmmlearn_bic}
