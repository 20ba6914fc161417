"""Placeholder."""

from ._base import Scorer, resolve_model


class VMCMCScore(Scorer):
    name = "vmcmc"
    options = {"n_temperatures": 1000, "n_chains": 16}

    def _score(self, estimator, X, fit_params, opts):
        resolve_model(estimator, self.name)
        raise NotImplementedError("vmcmc is not available yet")
