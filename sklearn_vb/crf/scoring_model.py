"""ScoringModel for a fitted :class:`~sklearn_vb.LinearChainCRF`.

The evidence is the conditional one, ``p(t_1..t_N | x_1..x_N, structure)`` (Parise and
Welling 2006, section 5): theta = one real block ``"coef"`` (the canonical weights) with
the estimator's independent Gaussian prior, and the likelihood

``ln p(t | x, lambda) = lambda^T S - sum_n ln Z(lambda, x_n)``,  ``S = sum_n f(t_n, x_n)``,

exact by the forward algorithm, batched over parameter draws.  The data are the
estimator's inputs with the labels and the sequence delimiters as fit parameters:
``score(crf, X, "laplace", y=y, lengths=lengths)``.  The case count is the number of
labelled positions (the package's rule for sequence models), so ``"bic"`` penalises
``(F / 2) ln(total positions)``.

For the Bethe-Laplace scorer the model provides the same hooks as the pairwise MRF
(:mod:`sklearn_vb.mrf.scoring_model`), with the exact chain engine in the role of both
the exact and the BP one: on a chain belief propagation is exact and its linear response
is the exact covariance ``sum_n Cov_{t | x_n} f``, so every variant of ``"bethe_laplace"``
is Laplace-Exact.
"""

from __future__ import annotations

import numpy as np

from .._core.evidence.params import ParamBlock, ParamSpace
from .._core.evidence.protocols import ScoringModelMixin
from ..mrf.inference import log_prior, newton_map
from ..mrf.scoring_model import GaussianWeightsMixin
from ._estimator import crf_prior_precision
from ._layout import CRFData, CRFEngine

__all__ = ["CRFScoringModel"]


class CRFScoringModel(GaussianWeightsMixin, ScoringModelMixin):
    """The scoring view of a fitted LinearChainCRF (conditional evidence of its
    structure: which state and transition features it includes)."""

    model_label = "the CRF"

    def __init__(self, estimator):
        self.estimator = estimator
        self.layout = estimator.layout_
        F = self.layout.n_features
        self.precision = crf_prior_precision(estimator.prior_variance, self.layout)
        self.ml_precision = np.full(F, 1.0 / float(estimator.ml_prior_variance))
        # the model without features has no parameters: its evidence is its likelihood
        self.param_space = ParamSpace([ParamBlock("coef", (F,), "real")] if F else [])
        self._cache = {}

    # -- data ---------------------------------------------------------------------------
    def prepare_data(self, X, y=None, lengths=None, sequence_ids=None):
        if isinstance(X, CRFData):
            return X
        if y is None:
            raise ValueError("the CRF evidence is p(y | X): pass the labels as y=.")
        data = self.estimator.check_data(X, y, lengths=lengths, sequence_ids=sequence_ids)
        return data

    def engine(self, data):
        return CRFEngine(self.layout, data)

    def exact_engine(self, data=None):
        if data is None:
            raise ValueError("the CRF's engine needs the data (its partition functions depend "
                             "on the inputs).")
        return self.engine(data)

    def bp_engine(self, warn=True, data=None):
        """Belief propagation on a chain is the exact forward-backward."""
        return self.exact_engine(data)

    def inference_tractable(self):
        return True

    def n_aliases(self):
        return 1

    # -- G0 -------------------------------------------------------------------------------
    def log_likelihood(self, params, X):
        coefs = np.atleast_2d(params["coef"])
        return coefs @ X.S - self.engine(X).log_partition(coefs)

    def log_likelihood_per_case(self, params, X):
        """Per sequence: ``ln p(t_n | x_n, lambda)`` (C, n_sequences)."""
        coefs = np.atleast_2d(params["coef"])
        eng = self.engine(X)
        U, B = self.layout.potentials(coefs, X.gs, X.gt)
        pos = np.arange(X.codes.size)
        nxt = np.minimum(pos + 1, pos.size - 1)
        unary = U[:, pos, X.codes]
        pair = B[:, pos, X.codes, X.codes[nxt]]
        pair[:, X.ends - 1] = 0.0
        seq = np.repeat(np.arange(X.n_sequences), X.ends - X.starts)
        energy = np.stack([np.bincount(seq, weights=r, minlength=X.n_sequences)
                           for r in unary + pair])
        return energy - eng.sequence_log_partition(coefs)

    def log_joint_gradient(self, params_single, X):
        coef = np.asarray(params_single["coef"], dtype=float).reshape(-1)
        lz, kappa = self.engine(X).value_and_gradient(coef)
        val = coef @ X.S - lz + float(log_prior(coef, self.precision))
        return val, {"coef": (X.S - kappa - self.precision * coef)[None]}

    # -- point estimates --------------------------------------------------------------------
    def map_fit(self, X, kind="map", inference="exact", init="fitted"):
        """Newton's method on the exact conditional log joint (from the estimator's
        weights), cached per data set and kind."""
        key = (id(X), kind)
        if key in self._cache and self._cache[key][0] is X:
            return self._cache[key][1]
        eng = self.engine(X)
        P = self.precision if kind == "map" else self.ml_precision
        coef0 = np.zeros(self.layout.n_features)
        if isinstance(init, str):
            if init == "fitted" and kind == self.estimator.point:
                coef0 = np.asarray(self.estimator.coef_, dtype=float).copy()
        else:
            coef0 = np.asarray(init, dtype=float)
        res = newton_map(eng, X.S, X.N, P, coef0, 100, 1e-12)
        res.engine = eng
        self._cache[key] = (X, res)
        return res

    def fit_point(self, X, kind="map", basis=None, rng=None, n_init=1, inference="exact", **ignored):
        if kind not in ("map", "ml"):
            raise ValueError(f"kind must be 'map' or 'ml', got {kind!r}.")
        return {"coef": self.map_fit(X, kind).coef[None].copy()}

    def bethe_map(self, X, init="fitted"):
        return self.map_fit(X, "map", "bp", init)

    # -- moments -----------------------------------------------------------------------------
    def exact_moments(self, params_single, X):
        """``sum_n ln Z(x_n)``, ``sum_n E f`` and ``sum_n Cov f`` at one parameter vector."""
        m = self.engine(X).moments(np.asarray(params_single["coef"], dtype=float).reshape(-1))
        return m.log_partition * X.N, m.kappa * X.N, m.cov * X.N

    # -- G5 / G6 -----------------------------------------------------------------------------
    def _laplace_gaussian(self, X):
        res = self.map_fit(X, "map")
        C = res.moments.cov
        return res.coef, np.linalg.inv(X.N * C + np.diag(self.precision)), C
