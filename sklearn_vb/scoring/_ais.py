"""Placeholder."""

from ._base import Scorer, resolve_model


class AISScore(Scorer):
    name = "ais"
    options = {"n_temperatures": 1000, "n_chains": 16}

    def _score(self, estimator, X, fit_params, opts):
        resolve_model(estimator, self.name)
        raise NotImplementedError("ais is not available yet")

class ReverseAISScore(Scorer):
    name = "rais"
    options = {"n_temperatures": 1000, "n_chains": 16}

    def _score(self, estimator, X, fit_params, opts):
        resolve_model(estimator, self.name)
        raise NotImplementedError("rais is not available yet")

class BDMCScore(Scorer):
    name = "bdmc"
    options = {"n_temperatures": 1000, "n_chains": 16}

    def _score(self, estimator, X, fit_params, opts):
        resolve_model(estimator, self.name)
        raise NotImplementedError("bdmc is not available yet")
