"""Cross-check of VBHiddenMarkov against hmmlearn's variational HMMs.

Started from the same priors and the same initial posterior, both libraries run the
same VBEM iterations, so the bound histories must agree:

* categorical: exactly (to 1e-8 relative), with both of hmmlearn's implementations;
* Gaussian, full covariance: after adding the -D/2 ln 2 pi per frame that hmmlearn
  leaves out of its emission log-likelihood;
* Gaussian, diagonal covariance: hmmlearn's "diag" model puts a Wishart with a diagonal
  scale matrix on the precision (its E ln|Lambda| is sum_i psi((nu - i)/2) + ...), which
  is not the per-dimension Normal-Gamma model used here (sum_d psi(nu/2) + ...).  The two
  coincide for one feature, which is what is compared.
"""

import warnings

import numpy as np
import pytest

hmmlearn_vhmm = pytest.importorskip("hmmlearn.vhmm")

from sklearn_vb.hmm import VBHiddenMarkov  # noqa: E402

N_ITER = 12


def run_ours(n_iter, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return VBHiddenMarkov(max_iter=n_iter, tol=0.0, init_params="posterior", **kwargs)


def run_hmmlearn(model, X, lengths):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, lengths)
    return model


@pytest.mark.parametrize("implementation", ["log", "scaling"])
def test_categorical_bound_matches_hmmlearn(implementation):
    rng = np.random.default_rng(0)
    K, M = 3, 5
    lengths = np.array([40, 25, 35])
    X = rng.integers(0, M, size=(lengths.sum(), 1))
    post = {
        "startprob": rng.uniform(0.5, 3, K),
        "transmat": rng.uniform(0.5, 30, (K, K)),
        "emissionprob": rng.uniform(0.5, 30, (K, M)),
    }
    pi0, A0, C0 = 0.7, 0.4, 0.3
    ref = hmmlearn_vhmm.VariationalCategoricalHMM(
        n_components=K, n_features=M, n_iter=N_ITER, tol=-np.inf, init_params="", params="ste",
        implementation=implementation,
    )
    ref.startprob_prior_ = np.full(K, pi0)
    ref.transmat_prior_ = np.full((K, K), A0)
    ref.emissionprob_prior_ = np.full((K, M), C0)
    ref.startprob_posterior_ = post["startprob"].copy()
    ref.transmat_posterior_ = post["transmat"].copy()
    ref.emissionprob_posterior_ = post["emissionprob"].copy()
    run_hmmlearn(ref, X, lengths)

    ours = run_ours(
        N_ITER + 1, n_components=K, n_symbols=M, startprob_prior=pi0, transmat_prior=A0,
        emissionprob_prior=C0, init_posterior=post,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours.fit(X, lengths=lengths)
    # hmmlearn's history holds the bounds of its iterations, each evaluated before its
    # VBM step (the posteriors after 0 .. N_ITER - 1 VBM steps), as ours are
    history = np.array(ref.monitor_.history)
    assert len(history) >= 2
    np.testing.assert_allclose(ours.lower_bounds_[N_ITER - len(history):N_ITER], history, rtol=1e-8)
    # after N_ITER VBM steps both hold the same posterior
    np.testing.assert_allclose(ours.transmat_posterior_, ref.transmat_posterior_, rtol=1e-8)
    np.testing.assert_allclose(ours.emissionprob_posterior_, ref.emissionprob_posterior_, rtol=1e-8)
    np.testing.assert_allclose(ours.startprob_posterior_, ref.startprob_posterior_, rtol=1e-8)


@pytest.mark.parametrize("covariance_type,D", [("full", 3), ("diag", 1)])
def test_gaussian_bound_matches_hmmlearn(covariance_type, D):
    rng = np.random.default_rng(1)
    K = 3
    lengths = np.array([60, 40])
    T = lengths.sum()
    X = rng.normal(size=(T, D)) + 3.0 * rng.integers(0, 3, size=(T, 1))
    m0 = X.mean(axis=0)
    beta0, nu0 = 0.8, D + 1.5
    if covariance_type == "full":
        S0 = np.eye(D) * 2.0 + 0.3
        scale_post = np.stack([np.eye(D) * (10 + 5 * k) + 1.0 for k in range(K)])
    else:
        S0 = np.full(D, 2.0)
        scale_post = rng.uniform(10, 30, (K, D))
    post = {
        "startprob": rng.uniform(0.5, 3, K),
        "transmat": rng.uniform(0.5, 30, (K, K)),
        "means": X[rng.choice(T, K, replace=False)],
        "beta": rng.uniform(5, 40, K),
        "dof": rng.uniform(5, 40, K),
        "scale": scale_post,
    }
    ref = hmmlearn_vhmm.VariationalGaussianHMM(
        n_components=K, covariance_type=covariance_type, n_iter=N_ITER, tol=-np.inf,
        init_params="", params="stmc", implementation="scaling",
    )
    ref.n_features = D
    ref.startprob_prior_ = np.full(K, 1.0 / K)
    ref.transmat_prior_ = np.full((K, K), 1.0 / K)
    ref.startprob_posterior_ = post["startprob"].copy()
    ref.transmat_posterior_ = post["transmat"].copy()
    ref.means_prior_ = np.tile(m0, (K, 1))
    ref.beta_prior_ = np.full(K, beta0)
    ref.dof_prior_ = np.full(K, nu0)
    ref.scale_prior_ = np.broadcast_to(S0, (K,) + S0.shape).copy()
    ref.means_posterior_ = post["means"].copy()
    ref.beta_posterior_ = post["beta"].copy()
    ref.dof_posterior_ = post["dof"].copy()
    ref.scale_posterior_ = post["scale"].copy()
    run_hmmlearn(ref, X, lengths)

    ours = run_ours(
        N_ITER + 1, n_components=K, emission="gaussian", covariance_type=covariance_type,
        means_prior=m0, beta_prior=beta0, dof_prior=nu0, scale_prior=S0, init_posterior=post,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours.fit(X, lengths=lengths)
    missing_constant = -0.5 * T * D * np.log(2 * np.pi)
    history = np.array(ref.monitor_.history) + missing_constant
    np.testing.assert_allclose(ours.lower_bounds_[N_ITER - len(history):N_ITER], history, rtol=1e-8)
    np.testing.assert_allclose(ours.means_posterior_, ref.means_posterior_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ours.scale_posterior_, ref.scale_posterior_, rtol=1e-8)
    np.testing.assert_allclose(ours.dof_posterior_, ref.dof_posterior_, rtol=1e-10)
