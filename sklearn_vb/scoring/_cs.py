"""Cheeseman–Stutz and CS-dagger.

``ln p(X)_CS = ln p(s^, X) + l(theta^) - ln p(s^, X | theta^)`` with the completion given
by the exact posterior at ``theta^``; equivalently ``H[p(z | X, theta^)] +
log_complete_evidence(expected stats)``.  For ANY normalised ``theta^`` whose E step is
exact this is a deterministic lower bound on ln p(X) (Beal 2003, Theorem 2.3; the proof
only uses the exactness of the E step).  The bound does not survive the alias correction
or the CS-dagger dimension term.  Beal's CS assumes d = d'; CS-dagger adds
``(d' - d)/2 ln n`` with both dimensions estimated by Beal's Algorithm 6.2.
"""

from __future__ import annotations

import numpy as np

from .._core.evidence.protocols import require
from .._core.numerics import spawn_generators
from ._base import Scorer, prepare_data, resolve_model, variational_posterior
from ._bic import model_dimension
from ._result import ScoreResult

__all__ = ["CSScore", "CSDaggerScore", "cs_value", "CS_ACCURACY"]

#: nats of round-off above which a CS value is refused (evidence differences that
#: decide between models are rarely smaller than a tenth of a nat)
CS_ACCURACY = 0.1


def cs_value(model, theta, data, check=True):
    """CS at a normalised ``theta``: returns (value, estep, log_complete_evidence).

    Both formulas (complete-data evidence plus ``loglik - expected_complete_loglik``,
    and plus the E-step entropy) are evaluated and must agree to 1e-9 relative, plus
    the round-off of the terms that cancel in them when the model reports their size
    (``cs_roundoff_scale``: about ``eps`` times it is lost; 16 ``eps`` bounds the
    observed disagreement with a margin).  When that round-off exceeds
    ``CS_ACCURACY`` nats the value is refused with a ``ValueError`` rather than
    returned inaccurate.
    """
    e = model.e_step(theta, data)
    log_cev = float(model.log_complete_evidence(e.stats))
    v1 = log_cev + e.loglik - e.expected_complete_loglik
    v2 = e.entropy + log_cev
    roundoff = 0.0
    if hasattr(model, "cs_roundoff_scale"):
        scale = model.cs_roundoff_scale(e.stats)
        roundoff = 16.0 * np.finfo(float).eps * scale
        if not roundoff <= CS_ACCURACY:
            raise ValueError(
                f"X has rows too far from the centre of the training data for the CS "
                f"score in float64: its terms cancel from sums of squares of size {scale:.3g}, "
                f"leaving a round-off of about {roundoff:.3g} nats (more than "
                f"{CS_ACCURACY} nats).  Centre and scale X as the training data were.")
    if check and abs(v1 - v2) > 1e-9 * (1.0 + abs(v1)) + roundoff:
        raise RuntimeError(f"the two CS formulas disagree: {v1!r} vs {v2!r}.")
    return float(v1), e, log_cev


class CSScore(Scorer):
    """Cheeseman–Stutz score; ``bound="lower"`` (raw value).

    Options: ``point`` ("map" = EM on the softmax basis from the fitted q(theta)'s
    point plus ``n_init - 1`` seeded, screened restarts, the best objective kept;
    "posterior_mean" = mean of the fitted q(theta)), ``basis``, ``n_init``.  With
    ``random_state=None`` the estimator's ``random_state`` seeds the restarts (and the
    dimension estimates of CS-dagger), so a seeded estimator gets the same value on
    every call.  The MAP point's EM is shared with the other scorers of the same fitted
    estimator, data and seed (see :class:`~sklearn_vb.scoring._bic.BICScore`).
    """

    name = "cs"
    options = {"point": "map", "basis": "softmax", "n_init": 3, "R": 100}

    def _point(self, estimator, model, data, opts, rng):
        if opts["point"] == "map":
            require(model, self.name, "fit_point")
            return self._fit_point(model, data, estimator, kind="map", basis=opts["basis"], rng=rng,
                                   n_init=opts["n_init"], verbose=opts["verbose"])
        if opts["point"] == "posterior_mean":
            q = variational_posterior(estimator, model, data)
            if q is None:
                raise NotImplementedError(f"{self.name} needs variational_posterior_")
            return model.param_space.check(q.mean())
        raise ValueError(f"point must be 'map' or 'posterior_mean', got {opts['point']!r}.")

    def _score(self, estimator, X, fit_params, opts):
        model = resolve_model(estimator, self.name)
        require(model, self.name, "e_step", "log_complete_evidence")
        log_alias = self._log_alias(model, opts)
        data = prepare_data(model, X, fit_params)
        rng = spawn_generators(opts["random_state"], 1)[0]
        theta = self._point(estimator, model, data, opts, rng)
        value, e, log_cev = cs_value(model, theta, data)
        diag = {"loglik": e.loglik, "log_complete_evidence": log_cev, "entropy": e.entropy,
                "expected_complete_loglik": e.expected_complete_loglik, "theta": theta}
        # models whose complete-data evidence is itself approximate say so
        bound = "lower" if getattr(model, "cs_is_bound", True) else "approx"
        if self.name == "cs_dagger":
            require(model, self.name, "n_cases")
            d = model_dimension(model, data, theta, "effective", rng, R=opts["R"],
                                scorer=self.name, kind="incomplete")
            d_c = model_dimension(model, data, theta, "effective", rng, R=opts["R"],
                                  scorer=self.name, kind="complete")
            n = int(model.n_cases(data))
            value += 0.5 * (d_c - d) * np.log(n)
            diag.update(d=d, d_complete=d_c, n=n)
            bound = "approx"
        return ScoreResult(self.name, float(value), bound, log_alias_correction=log_alias,
                           diagnostics=diag)


class CSDaggerScore(CSScore):
    """CS-dagger: CS plus ``(d' - d)/2 ln n`` (no bound)."""

    name = "cs_dagger"
