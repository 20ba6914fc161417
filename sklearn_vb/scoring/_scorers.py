"""The table of scorers by method name, and the one-call :func:`score`."""

from __future__ import annotations

from ._ais import AISScore, BDMCScore, ReverseAISScore
from ._base import Scorer
from ._bethe_laplace import BetheLaplaceScore
from ._boltzmann import HiddenLaplaceScore, HiddenVBBoundScore
from ._bic import BICMAPScore, BICpScore, BICScore
from ._cms import CMSScore
from ._hme import HMEScore
from ._cs import CSDaggerScore, CSScore
from ._is import ISScore
from ._laplace import LaplaceScore
from ._map import MAPScore
from ._nested_sampling import NestedSamplingScore
from ._shme import SHMEScore
from ._smc import SMCScore
from ._vb import VBScore
from ._vmcmc import VMCMCScore

__all__ = ["SCORERS", "get_scorer", "score"]

#: method name -> scorer class
SCORERS = {
    "vb": VBScore,
    "map": MAPScore,
    "bic": BICScore,
    "bic_map": BICMAPScore,
    "bicp": BICpScore,
    "laplace": LaplaceScore,
    "cs": CSScore,
    "cs_dagger": CSDaggerScore,
    "is": ISScore,
    "ais": AISScore,
    "rais": ReverseAISScore,
    "bdmc": BDMCScore,
    "vmcmc": VMCMCScore,
    "smc": SMCScore,
    "shme": SHMEScore,
    "nested_sampling": NestedSamplingScore,
    "cms": CMSScore,
    "hme": HMEScore,
    "bethe_laplace": BetheLaplaceScore,
    "hidden_laplace": HiddenLaplaceScore,
    "hidden_vb": HiddenVBBoundScore,
}


def get_scorer(method, **options):
    """A configured scorer: ``get_scorer("ais", n_temperatures=1000)(estimator, X, **fit_params)``.

    ``method`` may also be an existing scorer instance, returned unchanged when no
    options are given (re-configured copy otherwise).

    Examples
    --------
    >>> from sklearn_vb.scoring import get_scorer
    >>> type(get_scorer("bic")).__name__
    'BICScore'
    """
    if isinstance(method, Scorer):
        if not options:
            return method
        return type(method)(**{**method.params, **options})
    if not isinstance(method, str) or method not in SCORERS:
        raise ValueError(f"method must be one of {sorted(SCORERS)}, got {method!r}.")
    return SCORERS[method](**options)


def score(estimator, X, method="vb", *, alias_correction=False, random_state=None, n_jobs=None,
          **options_and_fit_params):
    """Estimate ln p(X | m) for a fitted ``estimator`` with ``method``.

    Keywords naming an option of the scorer configure it; every other keyword is a fit
    parameter (``lengths=``, ``sequence_ids=``, ``U=``) passed to the model.

    Returns
    -------
    ScoreResult

    Examples
    --------
    >>> from sklearn_vb import VBHiddenMarkov
    >>> from sklearn_vb.datasets import make_hmm_sequences
    >>> from sklearn_vb.scoring import score
    >>> X, _, lengths = make_hmm_sequences(
    ...     [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]], [[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]],
    ...     [100] * 5, random_state=0)
    >>> hmm = VBHiddenMarkov(n_components=2, random_state=0).fit(X, lengths=lengths)
    >>> vb = score(hmm, X, "vb")
    >>> vb.bound, vb.log_evidence == hmm.lower_bound_
    ('lower', True)
    >>> cs = score(hmm, X, "cs", lengths=lengths)     # Cheeseman-Stutz, also a lower bound
    >>> cs.bound, bool(cs.log_evidence <= vb.log_evidence)
    ('lower', True)
    """
    scorer_cls = SCORERS[method] if isinstance(method, str) and method in SCORERS else None
    if scorer_cls is None:
        raise ValueError(f"method must be one of {sorted(SCORERS)}, got {method!r}.")
    allowed = scorer_cls.all_option_defaults()
    options = {k: v for k, v in options_and_fit_params.items() if k in allowed}
    fit_params = {k: v for k, v in options_and_fit_params.items() if k not in allowed}
    scorer = scorer_cls(alias_correction=alias_correction, random_state=random_state,
                        n_jobs=n_jobs, **options)
    return scorer(estimator, X, **fit_params)
