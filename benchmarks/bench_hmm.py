"""Variational Bayesian HMMs against hmmlearn (time per VBEM iteration).

Both libraries start from the same priors and the same initial posterior (no k-means or
random initialisation inside the timed fit) and run the same fixed number of iterations.

* ``hmm-categorical-small``: K=3, M=6, one sequence of T=2000 symbols, against
  ``hmmlearn.vhmm.VariationalCategoricalHMM`` with implementation "log" and "scaling".
* ``hmm-categorical-large``: K=10, M=50, 100 sequences of 1000 symbols.
* ``hmm-gaussian-full`` / ``hmm-gaussian-diag``: K=10, D=5, 100 sequences of 1000 frames,
  against ``hmmlearn.vhmm.VariationalGaussianHMM`` and pomegranate's ``DenseHMM`` (maximum
  likelihood EM in PyTorch on one thread; it starts from its own k-means, whose cost is
  spread over its iterations, and stops early only if the likelihood falls).
"""

import warnings

import numpy as np

from .harness import workload


def _categorical_data(K, M, lengths, seed=0):
    from sklearn_vb.datasets import make_hmm_sequences

    rng = np.random.default_rng(seed)
    startprob = rng.dirichlet(np.ones(K))
    transmat = rng.dirichlet(np.ones(K), size=K) + 2 * np.eye(K)
    transmat /= transmat.sum(axis=1, keepdims=True)
    emission = rng.dirichlet(np.full(M, 0.3), size=K)
    X, _, lengths = make_hmm_sequences(startprob, transmat, emission, lengths, random_state=seed)
    post = {
        "startprob": rng.uniform(0.5, 2.0, K),
        "transmat": rng.uniform(1.0, 10.0, (K, K)) * X.shape[0] / K**2,
        "emissionprob": rng.uniform(1.0, 10.0, (K, M)) * X.shape[0] / (K * M),
    }
    return X, lengths, post


def _categorical_candidates(K, M, X, lengths, post, n_iter):
    def ours():
        from sklearn_vb import VBHiddenMarkov

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = VBHiddenMarkov(K, n_symbols=M, max_iter=n_iter, tol=0.0, init_params="posterior",
                               init_posterior=post).fit(X, lengths=lengths)
        return m.n_iter_

    def hmmlearn(implementation):
        def run():
            from hmmlearn.vhmm import VariationalCategoricalHMM

            m = VariationalCategoricalHMM(n_components=K, n_features=M, n_iter=n_iter, tol=-np.inf,
                                          init_params="", params="ste", implementation=implementation)
            m.startprob_prior_ = np.full(K, 1.0 / K)
            m.transmat_prior_ = np.full((K, K), 1.0 / K)
            m.emissionprob_prior_ = np.full((K, M), 1.0 / M)
            m.startprob_posterior_ = post["startprob"].copy()
            m.transmat_posterior_ = post["transmat"].copy()
            m.emissionprob_posterior_ = post["emissionprob"].copy()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m.fit(X, lengths)
            return len(m.monitor_.history)

        return run

    return {"sklearn_vb": ours, "hmmlearn-log": hmmlearn("log"), "hmmlearn-scaling": hmmlearn("scaling")}


@workload("hmm-categorical-small")
def categorical_small(quick):
    K, M = 3, 6
    X, lengths, post = _categorical_data(K, M, [2000])
    return _categorical_candidates(K, M, X, lengths, post, 10 if quick else 100)


@workload("hmm-categorical-large")
def categorical_large(quick):
    K, M = 10, 50
    X, lengths, post = _categorical_data(K, M, [1000] * (10 if quick else 100))
    return _categorical_candidates(K, M, X, lengths, post, 5 if quick else 30)


def pomegranate_gaussian_fit(data, K, covariance_type, max_iter, tol):
    """Fit pomegranate's ``DenseHMM`` of K Gaussian states to the torch tensor ``data``
    (sequences, frames, features); returns (EM iterations run, model).  pomegranate
    does not report its iteration count, so its M step is counted."""
    from pomegranate.distributions import Normal
    from pomegranate.hmm import DenseHMM

    m = DenseHMM([Normal(covariance_type=covariance_type) for _ in range(K)],
                 max_iter=max_iter, tol=tol, verbose=False)
    iterations = [0]
    m_step = m.from_summaries

    def counted_m_step():
        iterations[0] += 1
        return m_step()

    m.from_summaries = counted_m_step
    m.fit(data)
    return max(iterations[0], 1), m


def _gaussian(covariance_type, quick):
    from sklearn_vb.datasets import make_hmm_sequences

    K, D = 10, 5
    rng = np.random.default_rng(0)
    startprob = rng.dirichlet(np.ones(K))
    transmat = rng.dirichlet(np.ones(K), size=K) + 3 * np.eye(K)
    transmat /= transmat.sum(axis=1, keepdims=True)
    means = rng.normal(scale=4.0, size=(K, D))
    covars = np.tile(np.eye(D), (K, 1, 1))
    X, _, lengths = make_hmm_sequences(startprob, transmat, (means, covars),
                                       [1000] * (10 if quick else 100), random_state=0)
    T = X.shape[0]
    n_iter = 5 if quick else 20
    m0 = X.mean(axis=0)
    beta0, nu0 = 1.0, D + 1.0
    if covariance_type == "full":
        S0 = nu0 * np.cov(X, rowvar=False)
        scale = np.tile(T / K * np.eye(D), (K, 1, 1))
    else:
        S0 = nu0 * X.var(axis=0)
        scale = np.full((K, D), T / K)
    post = {
        "startprob": np.full(K, 1.0 + len(lengths) / K),
        "transmat": np.full((K, K), T / K**2) + np.eye(K),
        "means": X[rng.choice(T, K, replace=False)],
        "beta": np.full(K, T / K),
        "dof": np.full(K, T / K),
        "scale": scale,
    }

    def ours():
        from sklearn_vb import VBHiddenMarkov

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = VBHiddenMarkov(K, emission="gaussian", covariance_type=covariance_type,
                               means_prior=m0, beta_prior=beta0, dof_prior=nu0, scale_prior=S0,
                               max_iter=n_iter, tol=0.0, init_params="posterior",
                               init_posterior=post).fit(X, lengths=lengths)
        return m.n_iter_

    def hmmlearn(implementation):
        def run():
            from hmmlearn.vhmm import VariationalGaussianHMM

            m = VariationalGaussianHMM(n_components=K, covariance_type=covariance_type, n_iter=n_iter,
                                       tol=-np.inf, init_params="", params="stmc",
                                       implementation=implementation)
            m.n_features = D
            m.startprob_prior_ = np.full(K, 1.0 / K)
            m.transmat_prior_ = np.full((K, K), 1.0 / K)
            m.startprob_posterior_ = post["startprob"].copy()
            m.transmat_posterior_ = post["transmat"].copy()
            m.means_prior_ = np.tile(m0, (K, 1))
            m.beta_prior_ = np.full(K, beta0)
            m.dof_prior_ = np.full(K, nu0)
            m.scale_prior_ = np.broadcast_to(S0, (K,) + S0.shape).copy()
            m.means_posterior_ = post["means"].copy()
            m.beta_posterior_ = post["beta"].copy()
            m.dof_posterior_ = post["dof"].copy()
            m.scale_posterior_ = post["scale"].copy()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m.fit(X, lengths)
            return len(m.monitor_.history)

        return run

    def pomegranate():
        import torch

        torch.set_num_threads(1)
        data = torch.tensor(X.reshape(len(lengths), -1, D))
        return pomegranate_gaussian_fit(data, K, covariance_type, n_iter, 0.0)[0]

    return {"sklearn_vb": ours, "hmmlearn-log": hmmlearn("log"), "hmmlearn-scaling": hmmlearn("scaling"),
            "pomegranate-em": pomegranate}


@workload("hmm-gaussian-full")
def gaussian_full(quick):
    return _gaussian("full", quick)


@workload("hmm-gaussian-diag")
def gaussian_diag(quick):
    return _gaussian("diag", quick)
