"""Proposals and annealing starts built from q(theta) that cover every alias copy.

A model whose hidden states or components can be relabelled (an HMM's K states, a
mixture's components, a DAG's hidden values) has a posterior with S relabelled copies
of every mode; q(theta) sits on one of them.  Importance sampling from q, or annealing
that starts at q, is still unbiased for Z, but the mass of the other S - 1 copies is
reached only through rare huge weights, so at any affordable sample size the estimate
lies near ``ln Z - ln S`` with an error bar that does not show it.  The remedy is the
equal-weight mixture of q over its S relabellings (the model's ``alias_posterior``): its
density is exact, so the estimator stays unbiased for Z itself and needs no alias
correction.  It costs S densities of q per draw, hence the cap ``max_aliases``.  A
random subset of the relabellings would not do: the proposal would still miss the
copies left out.  Where the mixture is not available, the result is flagged.
"""

from __future__ import annotations

from .._core.evidence.protocols import has
from ._base import log_alias_count

__all__ = ["ALIAS_OPTIONS", "cover_aliases"]

#: options of the scorers that build a proposal or an annealing start from q(theta)
ALIAS_OPTIONS = {"aliases": "auto", "max_aliases": 24}


def _log_aliases(model):
    if not (has(model, "log_n_aliases") or has(model, "n_aliases")):
        return 0.0
    return log_alias_count(model)


def cover_aliases(model, q, opts, explicit=False):
    """``(proposal base, reason)``: with ``aliases="auto"`` the model's
    ``alias_posterior(q, max_aliases)`` when the model has more than one alias and
    provides it within the cap, else ``q`` with the reason the result is then unreliable
    (None when there is none); ``aliases="none"``: ``q`` as it is, flagged likewise when
    the model has aliases.  An ``explicit`` posterior (the scorer's ``posterior=``
    option) is used as given: covering its aliases is then the caller's choice (e.g.
    ``posterior=model.alias_posterior()``)."""
    mode = opts["aliases"]
    if mode not in ("auto", "none"):
        raise ValueError(f"aliases must be 'auto' or 'none', got {mode!r}.")
    cap = int(opts["max_aliases"])
    if cap < 1:
        raise ValueError(f"max_aliases must be >= 1, got {opts['max_aliases']!r}.")
    if q is None or explicit:
        return q, None
    log_s = _log_aliases(model)
    if log_s <= 1e-12:
        return q, None
    why = "aliases='none'"
    if mode == "auto":
        if not has(model, "alias_posterior"):
            why = f"{type(model).__name__} provides no alias_posterior"
        else:
            try:
                return model.alias_posterior(q, max_components=cap), None
            except ValueError as exc:
                why = f"{exc} (max_aliases={cap})"
    return q, (f"the proposal built from q covers one of the ~exp({log_s:.3g}) relabelled "
               f"copies of the posterior ({why}): the estimate lies near ln Z - ln S and its "
               "error bar does not show it (use aliases='auto' with a larger max_aliases, "
               "a proposal or start from the prior, or posterior=<a mixture over the "
               "aliases>)")
