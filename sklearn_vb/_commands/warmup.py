"""Small fits of every public estimator: ``python -m sklearn_vb compile``.

The numba kernels are compiled on their first call and cached on disk (``cache=True``),
so the first fit of an estimator on a fresh machine spends most of its time compiling.
:func:`compile_kernels` runs one small fit of each estimator (and of the common options
that reach other kernels: Gaussian HMM covariances, Poisson emissions, several sequences,
predictions and scores) so that the cache is filled once, at install time, rather than
during a user's first fit.  :data:`FIRST_FITS` holds one default fit per estimator, the
workload of the start-up benchmark (``benchmarks/bench_startup.py``).

The data are generated with numpy alone and every fit takes well under a second once
the kernels are compiled.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

__all__ = ["FIRST_FITS", "USES", "compile_kernels"]


def _binary(n, p, seed=0):
    """Binary data with two correlated pairs of columns (so every model has structure)."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n, p)) < 0.5).astype(float)
    flip = rng.random((n, p)) < 0.15
    X[:, 1::2] = np.where(flip[:, 1::2], 1.0 - X[:, 0:p - 1:2][:, :X[:, 1::2].shape[1]],
                          X[:, 0:p - 1:2][:, :X[:, 1::2].shape[1]])
    return X


def _markov_symbols(T, n_symbols=4, seed=0):
    """(T, 1) symbols of a sticky two-regime chain."""
    rng = np.random.default_rng(seed)
    regime = np.cumsum(rng.random(T) < 0.05) % 2
    low = rng.integers(0, n_symbols // 2, T)
    high = rng.integers(n_symbols // 2, n_symbols, T)
    return np.where(regime == 0, low, high).reshape(-1, 1)


def _markov_gaussian(T, d=2, seed=0):
    rng = np.random.default_rng(seed)
    regime = np.cumsum(rng.random(T) < 0.05) % 3
    return rng.normal(size=(T, d)) + 3.0 * regime[:, None]


def _lds_data(T, p=4, seed=0):
    rng = np.random.default_rng(seed)
    A = np.array([[0.95, 0.1], [-0.1, 0.9]])
    C = rng.normal(size=(p, 2))
    x = np.zeros(2)
    X = np.empty((T, p))
    for t in range(T):
        x = A @ x + rng.normal(size=2)
        X[t] = C @ x + 0.3 * rng.normal(size=p)
    return X


def _mfa_data(seed=0):
    rng = np.random.default_rng(seed)
    parts = [rng.normal(size=(80, 1)) @ rng.normal(size=(1, 5)) + 6.0 * k for k in range(2)]
    return np.concatenate(parts) + 0.1 * rng.normal(size=(160, 5))


def _crf_data(seed=0):
    rng = np.random.default_rng(seed)
    T = 120
    y = (np.cumsum(rng.random(T) < 0.2) % 2).astype(int)
    X = (rng.random((T, 4)) < np.where(y[:, None] == 1, 0.7, 0.2)).astype(float)
    return X, y, [60, 60]


def fit_hmm_categorical():
    from ..hmm import VBHiddenMarkov

    X = _markov_symbols(300)
    return VBHiddenMarkov(3, n_symbols=4, random_state=0).fit(X, lengths=[150, 150])


def fit_hmm_gaussian():
    from ..hmm import VBHiddenMarkov

    X = _markov_gaussian(300)
    return VBHiddenMarkov(3, emission="gaussian", random_state=0).fit(X, lengths=[150, 150])


def fit_mfa():
    from ..mfa import VBMixtureFactorAnalysers

    return VBMixtureFactorAnalysers(random_state=0).fit(_mfa_data())


def fit_lds():
    from ..lds import VBLinearDynamicalSystem

    return VBLinearDynamicalSystem(n_states=2, random_state=0).fit(_lds_data(150))


def fit_dag():
    from ..dag import VBDiscreteDAG

    rng = np.random.default_rng(0)
    h = rng.integers(0, 2, 200)
    X = np.column_stack([(h * 2 + rng.integers(0, 2, 200)) % 3 for _ in range(3)])
    return VBDiscreteDAG(n_components=2, random_state=0).fit(X)


def fit_sbn():
    from ..sbn import VBSigmoidBeliefNetwork

    return VBSigmoidBeliefNetwork(random_state=0).fit(_binary(100, 4))


def fit_mrf():
    from ..mrf import PairwiseMRF

    return PairwiseMRF().fit(_binary(100, 4).astype(int))


def fit_boltzmann():
    from ..boltzmann import BoltzmannMachine

    return BoltzmannMachine(n_hidden=1, random_state=0).fit(_binary(100, 3))


def fit_crf():
    from ..crf import LinearChainCRF

    X, y, lengths = _crf_data()
    return LinearChainCRF().fit(X, y, lengths=lengths)


#: ``{name: fit()}``: one small fit per public estimator with its default options
FIRST_FITS = {
    "hmm-categorical": fit_hmm_categorical,
    "hmm-gaussian": fit_hmm_gaussian,
    "mfa": fit_mfa,
    "lds": fit_lds,
    "dag": fit_dag,
    "sbn": fit_sbn,
    "mrf": fit_mrf,
    "boltzmann": fit_boltzmann,
    "crf": fit_crf,
}


def _use_hmm():
    from ..hmm import VBHiddenMarkov

    lengths = [150, 150]
    X = _markov_symbols(300)
    est = fit_hmm_categorical()
    est.predict(X, lengths=lengths), est.predict_proba(X, lengths=lengths)
    est.score(X, lengths=lengths), est.score_samples(X, lengths=lengths)
    est.decode(X, lengths=lengths)
    Xg = _markov_gaussian(300)
    for covariance_type in ("full", "diag"):
        est = VBHiddenMarkov(3, emission="gaussian", covariance_type=covariance_type,
                             random_state=0).fit(Xg, lengths=lengths)
        est.predict(Xg, lengths=lengths), est.score(Xg, lengths=lengths)
    counts = np.random.default_rng(0).poisson(3.0, size=(300, 2))
    VBHiddenMarkov(2, emission="poisson", random_state=0).fit(counts, lengths=lengths)


def _use_mfa():
    X = _mfa_data()
    est = fit_mfa()
    est.predict(X), est.predict_proba(X), est.transform(X), est.score(X)


def _use_lds():
    X = _lds_data(150)
    est = fit_lds()
    est.transform(X), est.score(X), est.predict(X), est.score_samples(X)
    est.fit(np.concatenate([X, X[:60]]), lengths=[150, 60])


def _use_dag():
    rng = np.random.default_rng(0)
    h = rng.integers(0, 2, 200)
    X = np.column_stack([(h * 2 + rng.integers(0, 2, 200)) % 3 for _ in range(3)])
    est = fit_dag()
    est.score(X), est.predict_proba(X)


def _use_sbn():
    X = _binary(100, 4)
    est = fit_sbn()
    est.score(X), est.predict_proba(X)


def _use_mrf():
    from ..mrf import PairwiseMRF
    from ..mrf.inference import ExactEngine

    X = _binary(100, 4).astype(int)
    mrf = fit_mrf()
    mrf.score(X)
    # a batch of log partition functions (the sampling scores' likelihoods)
    ExactEngine(mrf.layout_).log_partition(np.stack([mrf.coef_, -mrf.coef_]))
    # 20 binary nodes on a cycle: more joint states than the enumeration limit, so
    # loopy belief propagation (the kernels of larger graphs)
    X = _binary(200, 20).astype(int)
    ring = [(i, (i + 1) % 20) for i in range(20)]
    PairwiseMRF(structure=ring, max_exact_states=2**10).fit(X)


def _use_boltzmann():
    from ..boltzmann import BoltzmannMachine

    X = _binary(100, 3)
    est = fit_boltzmann()
    est.score(X), est.transform(X)
    BoltzmannMachine(n_hidden=2, max_exact_states=2**3, random_state=0).fit(_binary(200, 6))


def _use_crf():
    X, y, lengths = _crf_data()
    est = fit_crf()
    est.predict(X, lengths=lengths), est.predict_proba(X, lengths=lengths)
    est.score(X, y, lengths=lengths)


#: ``{name: run()}``: the fits and predictions that :func:`compile_kernels` runs
USES = {
    "hmm": _use_hmm, "mfa": _use_mfa, "lds": _use_lds, "dag": _use_dag, "sbn": _use_sbn,
    "mrf": _use_mrf, "boltzmann": _use_boltzmann, "crf": _use_crf,
}


def compile_kernels(only=None, verbose=True):
    """Compile (or load from the on-disk cache) the kernels every estimator uses.

    Runs the small fits and predictions of :data:`USES` (``only``: a subset of its
    names).  Returns ``{name: seconds}``.
    """
    names = list(USES) if not only else list(only)
    unknown = set(names) - set(USES)
    if unknown:
        raise ValueError(f"only must name estimators among {sorted(USES)}; got {sorted(unknown)}.")
    seconds = {}
    with warnings.catch_warnings():
        # the tiny problems stop early or keep components the search would remove
        warnings.simplefilter("ignore")
        for name in names:
            start = time.perf_counter()
            USES[name]()
            seconds[name] = time.perf_counter() - start
            if verbose:
                print(f"{name:10s} {seconds[name]:7.1f} s", flush=True)
    return seconds
