"""The result object every scorer returns."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ScoreResult", "BOUND_KINDS", "UnreliableEstimateWarning"]

BOUND_KINDS = ("lower", "stochastic_lower", "stochastic_upper", "interval", "approx")


class UnreliableEstimateWarning(UserWarning):
    """A Monte Carlo evidence estimate or its standard error cannot be trusted.

    Raised by the sampling scorers (``"is"``, ``"ais"``, ``"rais"``, ``"vmcmc"``) when the
    effective sample size is tiny, independent runs disagree beyond their own error bars,
    or the estimate falls below a known lower bound by more than its error bar.  The
    message says which, and what to increase; ``diagnostics["unreliable_reasons"]`` of the
    result holds the same reasons.

    Examples
    --------
    Turn it into an error to stop a pipeline on an untrustworthy estimate:

    >>> import warnings
    >>> from sklearn_vb.scoring import UnreliableEstimateWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", UnreliableEstimateWarning)
    ...     issubclass(UnreliableEstimateWarning, UserWarning)
    True
    """


@dataclass(frozen=True)
class ScoreResult:
    """A log-evidence estimate ``ln p(X | m)`` in nats, total over the data set.

    The kinds of guarantee in ``bound`` are those of Grosse, Ghahramani & Adams (2015),
    §4: a deterministic lower bound (the VB bound, Beal 2003, §2.3), stochastic lower
    bounds (importance sampling and AIS, §4.1), stochastic upper bounds (reverse AIS,
    §4.2) and the bidirectional interval (§4.3).

    Attributes
    ----------
    method : str
        Scorer name (``"vb"``, ``"bic"``, ``"ais"``, ...).
    log_evidence : float
        The raw estimate, never alias-corrected.  All guarantees (``bound``) refer to it.
    bound : str
        ``"lower"`` (deterministic lower bound), ``"stochastic_lower"``,
        ``"stochastic_upper"``, ``"interval"`` (BDMC) or ``"approx"`` (no guarantee).
    log_alias_correction : float
        ``ln S`` when an alias correction was requested, else 0.  Adding it to a bound
        gives an approximation, not a bound.
    stderr : float or None
        Standard error of ``log_evidence`` (stochastic scorers).
    interval : tuple or None
        ``(lower, upper)`` for BDMC.
    n_eff : float or None
        Effective sample size of the weights.
    diagnostics : dict
        Scorer-specific diagnostics.

    Examples
    --------
    >>> import math
    >>> from sklearn_vb.scoring import ScoreResult
    >>> res = ScoreResult("vb", -10.0, "lower", log_alias_correction=math.log(2))
    >>> round(res.corrected, 4)
    -9.3069
    """

    method: str
    log_evidence: float
    bound: str
    log_alias_correction: float = 0.0
    stderr: float | None = None
    interval: tuple | None = None
    n_eff: float | None = None
    diagnostics: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.bound not in BOUND_KINDS:
            raise ValueError(f"bound must be one of {BOUND_KINDS}, got {self.bound!r}.")

    @property
    def corrected(self) -> float:
        """``log_evidence + log_alias_correction``."""
        return self.log_evidence + self.log_alias_correction
