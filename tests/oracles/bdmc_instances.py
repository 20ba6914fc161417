"""Tiny instances with exact evidence shared by the tests of the sequential, nested,
Chib-style and harmonic-mean estimators."""

import numpy as np

from sklearn_vb import VBDiscreteDAG
from sklearn_vb.bdmc_models import (
    BayesianBinaryAttributes,
    BayesianClustering,
    binary_attributes_log_evidence,
    clustering_log_evidence,
)
from tests.oracles.reference_models import GaussianMean


def gaussian_mean(prior_sd=1.0, n=10, seed=0):
    """A fitted conjugate Gaussian-mean model (no latents: kernel moves) and its exact
    evidence."""
    model = GaussianMean(0, prior_sd, 1)
    X = 0.8 + np.random.default_rng(seed).standard_normal(n)
    return model.fit_vb(X), X, model.log_evidence(model.prepare_data(X)), None


def clustering(n=8, seed=1, mean_sd=2.0):
    gen = BayesianClustering(2, mean_sd=mean_sd)
    Y, params, Z = gen.simulate(n, 2, random_state=seed)
    est = BayesianClustering(2, mean_sd=mean_sd, random_state=0).fit(Y)
    return (est, Y, clustering_log_evidence(Y, 2, mean_sd, 1.0),
            ({k: v[None] for k, v in params.items()}, Z))


def binary(n=5, seed=2):
    gen = BayesianBinaryAttributes(2, noise_sd=0.7)
    Y, params, Z = gen.simulate(n, 2, random_state=seed)
    est = BayesianBinaryAttributes(2, noise_sd=0.7, random_state=0).fit(Y)
    return est, Y, binary_attributes_log_evidence(Y, 2, 1.0, 0.7), ({k: v[None] for k, v in params.items()}, Z)


def latent_class_dag(n=10, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, 2))
    X[: n // 2, 1] = X[: n // 2, 0]
    est = VBDiscreteDAG({"s": [], "y1": ["s"], "y2": ["s"]}, {"s": 2, "y1": 3, "y2": 3}, ["s"],
                        random_state=0, n_init=2).fit(X)
    return est, X, est.exact_log_evidence(X), None
