"""Small HMM fits, where a fit's fixed costs (start, validation) weigh as much as its
iterations: the setup of the HiddenMarkovModels.jl comparison (JOSS, 2024).

One-dimensional Gaussian states, 50 sequences of 100 frames drawn from a random HMM
with K = 2..10 states (10 sequences in a quick run).  Every library makes one complete
``fit`` from its own default start (ours: one k-means labelling; hmmlearn: k-means means;
pomegranate: its k-means; dynamax: ``initialize(method="kmeans")``), so the time of a
call is the whole cost a structure search pays per candidate.

* ``hmm-small-kNN``: exactly 5 iterations in every library (``tol`` that never stops
  a run), as in the JOSS table.  Ours is variational Bayes, ``VBHiddenMarkov(emission=
  "gaussian", max_iter=5, tol=0)``; hmmlearn runs both its maximum likelihood
  ``GaussianHMM`` (the JOSS comparison's) and its ``VariationalGaussianHMM``;
  pomegranate's ``DenseHMM`` and dynamax's ``GaussianHMM`` are maximum likelihood EM.
* ``hmm-small-converge-kNN`` (K = 2, 5, 10): each library until the change of its
  objective (our bound, their log-likelihood) falls below 1e-4 nats, at most 1000
  iterations; the metrics give the iterations run and the objective per frame (a bound
  for ours, a log-likelihood for the others: not comparable numbers).  dynamax's
  ``fit_em`` has no stopping rule and is left out.

Times are per call (the whole fit), every library on one thread where it lets itself be
told (threadpoolctl for OpenMP and BLAS, ``torch.set_num_threads(1)``; not JAX); JAX's
compilation falls in the warm-up call, the model object being reused.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .bench_hmm import pomegranate_gaussian_fit
from .harness import workload

N_SEQUENCES, LENGTH, FIXED_ITER = 50, 100, 5
CONVERGE_TOL, CONVERGE_MAX_ITER = 1e-4, 1000
SIZES = tuple(range(2, 11))
CONVERGE_SIZES = (2, 5, 10)


def small_data(K, n_sequences, seed=0):
    """Frames (n_sequences * 100, 1) and lengths of a random HMM with K unit-variance
    one-dimensional Gaussian states (means drawn from N(0, 3^2))."""
    from sklearn_vb.datasets import make_hmm_sequences

    rng = np.random.default_rng([seed, K])
    startprob = rng.dirichlet(np.ones(K))
    transmat = rng.dirichlet(np.ones(K), size=K)
    means = 3.0 * rng.normal(size=(K, 1))
    X, _, lengths = make_hmm_sequences(startprob, transmat, (means, np.ones((K, 1, 1))),
                                       [LENGTH] * n_sequences, random_state=seed)
    return X, np.asarray(lengths)


def _timed(fit, after=None):
    """Run ``fit()`` (returning the iterations run and a fitted object), timing it
    alone; ``after(fitted)`` adds metrics outside the timing."""
    from threadpoolctl import threadpool_limits

    # one thread for every library, as in the JOSS comparison (and because the OpenMP
    # threads of scikit-learn's k-means, which hmmlearn starts from, wait on each other
    # on a busy machine); set outside the timing, it costs milliseconds
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        n_iter, fitted = fit()
        elapsed = time.perf_counter() - start
    out = {"n_iter": int(n_iter), "elapsed_s": elapsed}
    if after is not None:
        out.update(after(fitted))
    return out


def _candidates(K, X, lengths, max_iter, tol, with_dynamax):
    T = X.shape[0]

    def ours():
        from sklearn_vb import VBHiddenMarkov

        def fit():
            m = VBHiddenMarkov(n_components=K, emission="gaussian", max_iter=max_iter,
                               tol=tol, random_state=0).fit(X, lengths=lengths)
            return m.n_iter_, m

        return _timed(fit, lambda m: {"bound_per_frame": m.lower_bound_ / T})

    def hmmlearn(variational):
        def run():
            from hmmlearn.hmm import GaussianHMM
            from hmmlearn.vhmm import VariationalGaussianHMM

            cls = VariationalGaussianHMM if variational else GaussianHMM

            def fit():
                # hmmlearn stops when the gain is below tol: -inf never stops early
                m = cls(n_components=K, covariance_type="diag", n_iter=max_iter,
                        tol=-np.inf if tol == 0 else tol, random_state=0).fit(X, lengths)
                return len(m.monitor_.history), m

            return _timed(fit, lambda m: {"loglik_per_frame": m.monitor_.history[-1] / T})

        return run

    def pomegranate():
        import torch

        torch.set_num_threads(1)
        data = torch.tensor(X.reshape(len(lengths), -1, 1))

        def fit():
            return pomegranate_gaussian_fit(data, K, "diag", max_iter, tol)

        def loglik(m):
            return {"loglik_per_frame": float(m.log_probability(data).sum()) / T}

        return _timed(fit, loglik)

    def dynamax():
        import jax.random as jr
        from dynamax.hidden_markov_model import GaussianHMM

        emissions = X.reshape(len(lengths), -1, 1)
        # one model object for all calls: its compiled functions are reused
        hmm = GaussianHMM(K, 1)

        def fit():
            params, props = hmm.initialize(jr.PRNGKey(0), method="kmeans",
                                           emissions=emissions)
            params, lls = hmm.fit_em(params, props, emissions, num_iters=max_iter,
                                     verbose=False)
            lls.block_until_ready()
            return max_iter, lls

        return _timed(fit, lambda lls: {"loglik_per_frame": float(lls[-1]) / T})

    out = {"sklearn_vb": ours, "hmmlearn-em": hmmlearn(False), "hmmlearn-vb": hmmlearn(True),
           "pomegranate-em": pomegranate}
    if with_dynamax:
        out["dynamax-em"] = dynamax
    return out


def _register_fixed(K):
    @workload(f"hmm-small-k{K:02d}", per="call", repeats=7, stem="hmm_small")
    def fixed(quick):
        X, lengths = small_data(K, 10 if quick else N_SEQUENCES)
        return _candidates(K, X, lengths, FIXED_ITER, 0.0, with_dynamax=True)

    return fixed


def _register_converge(K):
    @workload(f"hmm-small-converge-k{K:02d}", per="call", repeats=3, stem="hmm_small")
    def converge(quick):
        X, lengths = small_data(K, 10 if quick else N_SEQUENCES)
        return _candidates(K, X, lengths, CONVERGE_MAX_ITER, CONVERGE_TOL, with_dynamax=False)

    return converge


for _K in SIZES:
    _register_fixed(_K)
for _K in CONVERGE_SIZES:
    _register_converge(_K)
