"""Variational Bayesian mixtures of factor analysers against scikit-learn's mixtures.

Each candidate chooses its own number of components on the training data and is
scored on held-out data (mean log-likelihood per row, higher is better):

* ``sklearn_vb``: ``VBMixtureFactorAnalysers`` with the birth/death search from one
  component (the structure is chosen by the bound F; ARD chooses the factors), one
  pass over the candidates (``max_tries=1``), epochs ending when F changes by less
  than 0.1 nats and at most 200 polishing iterations (the other search settings
  are the defaults: birth epochs also end on progress relative to the birth, and a
  rejected parent is not proposed again within the pass);
* ``sklearn-bgmm``: ``BayesianGaussianMixture`` with full covariances, a
  Dirichlet-process prior and a generous ``n_components`` (unused ones shrink away);
* ``sklearn-gmm-bic``: ``GaussianMixture`` (full covariances) for every
  ``n_components`` in a range, keeping the lowest BIC.

Workloads (timed per call, i.e. per complete model selection):

* ``mfa-synthetic``: N=2000 training rows (and 2000 held out), p=10, five clusters of
  intrinsic dimension 1, 2, 2, 3 and 4;
* ``mfa-digits``: scikit-learn's bundled 8x8 digits (1797 x 64), 2/3 train, 1/3 held out,
  every candidate with one BLAS and OpenMP thread (``threadpoolctl``);
* ``mfa-digits-default-threads``: the same with the machine's default thread pools (our
  VBEM limits BLAS to one thread itself; scikit-learn's mixtures use every core).

Every call also records the process CPU time (all threads); ``cpu_s`` is its median
over the timed calls and the ratio ``cpu ours / this`` compares the CPU times, which
a loaded machine disturbs less than the wall-clock times (a sweep whose BLAS threads
wait for a shared core loses more wall time than a single-threaded fit).

The default noise floor (``psi_min="auto"``, the pixels' rounding noise) is used on
the digits too.  The extra
metrics are ``heldout_loglik`` and ``n_components`` (and the number of
effective factors for ours).  Run ``python -m benchmarks 'mfa*' --output mfa``.
"""

import statistics
import time
import warnings

import numpy as np

from .harness import workload


def _candidates(X_train, X_test, k_range, n_factors, bgmm_components, psi_min="auto"):
    def ours():
        from sklearn_vb import VBMixtureFactorAnalysers

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = VBMixtureFactorAnalysers(
                n_factors=n_factors, random_state=0, max_tries=1, psi_min=psi_min,
                tol=0.1, polish_iter=200,
            ).fit(X_train)
        return {
            "n_iter": int(m.n_iter_),
            "heldout_loglik": float(m.score(X_test)),
            "n_components": int(m.n_components_),
            "mean_factors": float(np.mean(m.n_factors_per_component_)),
        }

    def bgmm():
        from sklearn.mixture import BayesianGaussianMixture

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = BayesianGaussianMixture(
                n_components=bgmm_components, covariance_type="full", max_iter=500,
                weight_concentration_prior_type="dirichlet_process", random_state=0,
            ).fit(X_train)
        return {
            "n_iter": int(m.n_iter_),
            "heldout_loglik": float(m.score(X_test)),
            "n_components": int(np.sum(m.weights_ * X_train.shape[0] >= 1.0)),
        }

    def gmm_bic():
        from sklearn.mixture import GaussianMixture

        best, best_bic, n_iter = None, np.inf, 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k in k_range:
                m = GaussianMixture(k, covariance_type="full", random_state=0).fit(X_train)
                n_iter += m.n_iter_
                bic = m.bic(X_train)
                if bic < best_bic:
                    best, best_bic = m, bic
        return {
            "n_iter": int(n_iter),
            "heldout_loglik": float(best.score(X_test)),
            "n_components": int(best.n_components),
        }

    return {"sklearn_vb": ours, "sklearn-bgmm": bgmm, "sklearn-gmm-bic": gmm_bic}


def _with_cpu_time(candidates, threads):
    """The candidates run under ``threadpool_limits(threads)`` (None: the machine's
    default), each call's process CPU time recorded; and the summary that adds the
    median CPU time per candidate (``cpu_s``) and the CPU-time ratio ours / this."""
    from threadpoolctl import threadpool_limits

    cpu = {label: [] for label in candidates}

    def timed(label, func):
        def call():
            with threadpool_limits(threads):
                start = time.process_time()
                out = func()
                cpu[label].append(time.process_time() - start)
            return out
        return call

    def summarize(measurements):
        ours = None
        for m in measurements:
            # the last entry is the last timed call's; the warm-up's is left out
            times = cpu[m.label][1:] if len(cpu[m.label]) > 1 else cpu[m.label]
            if m.status != "ok" or not times:
                continue
            m.metrics["cpu_s"] = statistics.median(times)
            m.metrics["threads"] = "1" if threads == 1 else "default"
            if ours is None:
                ours = m.metrics["cpu_s"]
            else:
                m.ratios["cpu ours / this"] = ours / m.metrics["cpu_s"]

    return {label: timed(label, f) for label, f in candidates.items()}, summarize


@workload("mfa-synthetic", per="call")
def mfa_synthetic(quick):
    from sklearn_vb.datasets import make_mixed_dimension_clusters

    n = 100 if quick else 400
    dims = (1, 2, 2, 3, 4)
    X, _ = make_mixed_dimension_clusters(
        n_samples_per_cluster=2 * n, dims=dims, n_features=10, random_state=0
    )
    rng = np.random.default_rng(0)
    perm = rng.permutation(X.shape[0])
    X_train, X_test = X[perm[: len(perm) // 2]], X[perm[len(perm) // 2:]]
    return _candidates(X_train, X_test, range(1, 5 if quick else 13), None, 15)


def _digits(quick):
    from sklearn.datasets import load_digits

    X = load_digits().data.astype(float)
    rng = np.random.default_rng(0)
    perm = rng.permutation(X.shape[0])
    if quick:
        perm = perm[:450]
    cut = 2 * len(perm) // 3
    X_train, X_test = X[perm[:cut]], X[perm[cut:]]
    # with psi_min=1e-5 (the former default) border pixels inked in only a few
    # training images are explained entirely by loadings, their noise variance drops
    # to the floor and the held-out log-likelihood collapses (-2.2e4 per image); the
    # default floor (each pixel's rounding noise, 1/12) avoids that.
    return _candidates(
        X_train, X_test, range(1, 4 if quick else 21), 6 if quick else 10, 10 if quick else 30,
    )


@workload("mfa-digits", per="call")
def mfa_digits(quick):
    return _with_cpu_time(_digits(quick), 1)


@workload("mfa-digits-default-threads", per="call")
def mfa_digits_default_threads(quick):
    return _with_cpu_time(_digits(quick), None)
