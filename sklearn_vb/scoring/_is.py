"""Placeholder."""

from ._base import Scorer, resolve_model


class ISScore(Scorer):
    name = "is"
    options = {"n_temperatures": 1000, "n_chains": 16}

    def _score(self, estimator, X, fit_params, opts):
        resolve_model(estimator, self.name)
        raise NotImplementedError("is is not available yet")
