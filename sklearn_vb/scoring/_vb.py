"""The VB lower bound as a score."""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from .._core.base import VBEMEstimator
from .._core.evidence.protocols import require
from .._core.fingerprint import fingerprint_mismatch
from .._core.numerics import spawn_generators
from ._base import Scorer, prepare_data, resolve_model
from ._cs import cs_value
from ._point_cache import shared_fit_point
from ._result import ScoreResult

__all__ = ["VBScore"]


def _check_training_data(estimator, X, fit_params):
    """``lower_bound_`` bounds ln p(X_train): refuse any other data.  Every estimator of
    the package records its training data's fingerprint in ``fit`` (one without it was
    fitted by an older version and is refused); other objects with a ``lower_bound_``
    (hand-built models) are taken at their word."""
    if not isinstance(estimator, VBEMEstimator):
        return
    fingerprint = getattr(estimator, "_fit_data_fingerprint", None)
    if fingerprint and "states" in fingerprint and fit_params.get("states") is None:
        # the bound conditions on them: without them the score would claim ln p(X)
        raise ValueError(
            f"this {type(estimator).__name__} was fitted with known states (states=): its "
            "lower_bound_ bounds ln p(X, known states); pass the same states= to score "
            "it (every score then estimates that quantity).")
    differs = fingerprint_mismatch(fingerprint, X, fit_params)
    if differs is None:
        return
    name = type(estimator).__name__
    what = (f"X is not the data this {name} was fitted on" if differs == "X"
            else f"{differs} is not the {differs} this {name} was fitted with")
    raise ValueError(
        f"{what}: the 'vb' score is its "
        "lower_bound_, a bound on the log evidence of the training data only.  To bound "
        "ln p(X) for other data, fit a copy on it: score(clone(estimator).fit(X), X, 'vb') "
        "(with the same fit parameters).")


class VBScore(Scorer):
    """``F = lower_bound_`` of a fitted VB estimator: a deterministic lower bound on ln p(X).

    Options
    -------
    n_init : int, default 1
        With ``n_init > 1`` the estimator is cloned and refitted ``n_init - 1`` more times
        (seeds from ``random_state``); the maximum bound is returned (each is a bound).
    init : None or "cs"
        ``"cs"``: start ``q(z)`` at the exact E-step posterior at the MAP point and run
        VBEM from a VBM step (needs the model's ``fit_point``, ``e_step`` and
        ``vb_refine``).  The first bound then equals the CS score and never decreases
        afterwards (Beal 2003, Corollary 2.5), which guarantees ``vb >= cs``.
    max_iter, tol : used with ``init="cs"``.

    Without ``init``, X (and any fit parameters given) must be the data the estimator
    was fitted on: ``lower_bound_`` bounds ln p of that data only, and other data raise
    a ``ValueError``.

    Ranking by ``F`` assumes equal KL gaps across models; the gap usually grows with
    model size, so VB selection leans towards simpler models.
    """

    name = "vb"
    options = {"n_init": 1, "init": None, "max_iter": 1000, "tol": 1e-8}

    def _score(self, estimator, X, fit_params, opts):
        if opts["init"] not in (None, "cs"):
            raise ValueError(f"init must be None or 'cs', got {opts['init']!r}.")
        model = resolve_model(estimator, self.name, required=opts["init"] == "cs")
        log_alias = self._log_alias(model, opts)
        diagnostics = {}
        if opts["init"] == "cs":
            require(model, self.name, "fit_point", "e_step", "log_complete_evidence", "vb_refine")
            data = prepare_data(model, X, fit_params)
            rng = spawn_generators(opts["random_state"], 1)[0]
            theta = shared_fit_point(model, data, estimator, kind="map", rng=rng)
            cs, estep, _ = cs_value(model, theta, data)
            bounds = np.asarray(
                model.vb_refine(data, estep, max_iter=opts["max_iter"], tol=opts["tol"]), dtype=float
            )
            diagnostics.update(cs=cs, lower_bounds=bounds, first_bound=float(bounds[0]))
            value = float(bounds[-1])
        else:
            if not hasattr(estimator, "lower_bound_"):
                raise NotImplementedError("vb needs lower_bound_ (a fitted VB estimator)")
            if hasattr(estimator, "check_data"):
                # refuse malformed X and fit parameters with the estimator's own message
                estimator.check_data(X, **fit_params)
            _check_training_data(estimator, X, fit_params)
            values = [float(estimator.lower_bound_)]
            n_init = int(opts["n_init"])
            if n_init < 1:
                raise ValueError(f"n_init must be >= 1, got {n_init}.")
            if n_init > 1:
                for g in spawn_generators(opts["random_state"], n_init - 1):
                    est = clone(estimator)
                    if "random_state" in est.get_params():
                        est.set_params(random_state=int(g.integers(2**31 - 1)))
                    est.fit(X, **fit_params)
                    values.append(float(est.lower_bound_))
            value = max(values)
            diagnostics["restart_bounds"] = values
            if hasattr(estimator, "converged_"):
                diagnostics["converged"] = bool(estimator.converged_)
        if model is not None and hasattr(model, "n_components"):
            diagnostics["n_components"] = model.n_components
        return ScoreResult(
            method=self.name,
            log_evidence=value,
            bound="lower",
            log_alias_correction=log_alias,
            diagnostics=diagnostics,
        )
