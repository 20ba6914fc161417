"""The birth search of a maximum-likelihood mixture of factor analysers
(``method="ml"``, ``search=True``): the BIC-penalised ML MFA that Beal (2003), §4.6.2,
compares VB with.

The thesis grows the ML model by the search of its VB model: "The same heuristics were
used for model search in both types of model, as described in section 4.3", with

* births by the same splits as the variational search (``split``,
  ``split_direction``; :func:`~sklearn_vb.mfa._birth_death.propose_birth` chooses the
  direction), each candidate fitted by EM, its epoch ending on the change of the
  responsibilities (``agitation_tol``) as a VB epoch does;
* the order in which components are split by "the empirical KL divergence to measure the
  quality of each analyser's fit to its local data (see Ueda et al., 2000)"
  (:func:`empirical_kl`, largest first) instead of the component bound ``F_s``;
* no deaths ("there is no mechanism for component death in the ML MFA model") and no
  pruning: every analyser keeps all its ``k`` factors;
* the end after passes through every component without an accepted birth
  (``max_tries``; the thesis: three).

The thesis does not state the acceptance rule in so many words, but its discussion of
why the ML search returned more components than VB says which it is: an epoch-ending
criterion that stops "just as soon as the penalised likelihood reaches what it was
before we added the last component" would be "a purely exploratory search", i.e. a birth
is judged by the BIC-penalised likelihood ``ln p(Y | θ) - (D/2) ln n`` (eqs. 4.88,
4.89).  So a birth is accepted when the log-likelihood after its epoch exceeds that
before the split by more than the penalty of one more analyser,
``(1 + p + p k - k (k - 1) / 2) ln(n) / 2`` (:meth:`PointBirthSearch.birth_target`):
every accepted state has a lower BIC than the one before, and the result (the last
accepted state, polished by EM at its size, which only raises the likelihood) has the
smallest BIC of every model the search passed through, rejected candidates included
(EM never lowers the likelihood within an epoch, so a candidate that ends below its
target was below it throughout).
"""

from __future__ import annotations

import numpy as np

from . import kernels as _k
from ._birth_death import BirthDeathSearch, propose_birth
from ._point import em_e_step, fa_free_parameters
from ._structure import divide_responsibilities, split_displacement
from ._vbem import component_log_densities, n_loading_columns

__all__ = ["PointBirthSearch", "empirical_kl", "point_birth", "run_search"]


def empirical_kl(st, data):
    """The empirical KL divergence of each analyser of the point state ``st`` to its
    local data (Ueda et al. 2000), shape (S,): ``Σ_n w_ns ln(w_ns / p(y_n | s))`` with
    ``w_ns = r_ns / Σ_m r_ms`` the analyser's share of row ``n``, the density of the
    rows' observed entries.  Large when an analyser spreads its density thinly over
    its points (a poor local fit)."""
    Y = data.Z if data.missing is None else np.where(data.missing.mask > 0, data.Z, np.nan)
    dens = component_log_densities(st, Y)
    w = st.resp / np.maximum(st.resp.sum(axis=0), 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0.0, w * (np.log(w) - dens), 0.0)
    return terms.sum(axis=0)


def point_birth(st, data, parent, rng, principal, spatial, hardness,
                partial_updates_follow=False, kind="ml"):
    """Split component index ``parent`` of the point state ``st`` into two children, at
    ``parent`` and at the new last index, as :func:`~sklearn_vb.mfa._structure.birth`
    splits a variational state: centres ``μ ± d`` (:func:`split_displacement`), the
    parent's loadings and half its weight each.  Then the E step at the new point
    (``kind``: the EM objective's ``method``); after the responsibility split (complete
    data only) the children's responsibilities are replaced by the division of the
    parent's by the hyperplane normal to ``d`` (:func:`divide_responsibilities`) and the
    other components keep theirs, so that the M step that follows fits each child to
    its side.  Returns whether the split went along the parent's strongest loading
    column.  ``partial_updates_follow`` is ignored (the EM search has none)."""
    d, principal = split_displacement(st, parent, rng, principal)
    K = st.lam_mean.shape[-1] - 1
    centre = st.lam_mean[parent, :, K].copy()
    old_resp = st.resp
    S = st.weights.shape[0]
    order = np.r_[np.arange(S), parent]
    weights = st.weights[order]
    weights[[parent, S]] *= 0.5
    lam = st.lam_mean[order]
    lam[parent, :, K] = centre + d
    lam[S, :, K] = centre - d
    ids = st.ids[order]
    ids[parent], ids[S] = st.next_id, st.next_id + 1
    st.weights, st.lam_mean, st.lam_cov, st.ids = weights, lam, st.lam_cov[order], ids
    st.next_id += 2
    em_e_step(st, data, kind)
    if not spatial and data.missing is None:
        r_a, r_b = divide_responsibilities(data.Z, centre, old_resp[:, parent], d, False,
                                           hardness)
        resp = np.concatenate([old_resp, r_b[:, None]], axis=1)
        resp[:, parent] = r_a
        st.resp = resp
        st.stats = _k.sufficient_statistics(data.Z, resp, st.xbar, st.sigma)
    return principal


class PointBirthSearch(BirthDeathSearch):
    """The birth search of a point fit (module docstring): the variational search's
    epochs, splits and stopping rule, with EM in every epoch, the empirical-KL order of
    the candidates, no deaths or pruning, births accepted on the BIC-penalised
    likelihood, and no fixed-size refits (``refit_final`` is not used)."""

    prunes = False
    settles_children = False

    def __init__(self, estimator, data, control):
        super().__init__(estimator, data, control)
        self.n_factors = n_loading_columns(estimator.n_factors, data.n_features)
        self.log_n = float(np.log(data.n_samples))

    def n_parameters(self, n_components):
        """``D`` of eq. 4.89 with ``n_components`` analysers of ``k`` factors each."""
        return fa_free_parameters([self.n_factors] * int(n_components), self.data.n_features)

    def bic(self, log_likelihood, n_components):
        """``-2 ln p(Y | θ) + D ln n`` (lower is better, as ``bic`` of the estimator)."""
        return -2.0 * log_likelihood + self.n_parameters(n_components) * self.log_n

    def run(self):
        """The first EM epoch at the starting number of components, birth epochs until a
        pass through the candidates accepts none (``max_tries``), ``max_components`` or
        ``max_iter``, then EM on the final structure (``polish_iter``).  Returns the
        trace of the result and whether the search converged."""
        control, log = self.control, self.log
        control.searching = True
        try:
            trace, _ = self.run_epoch(log.epoch, "iter")
            trace, converged = self.birth_epochs(trace)
            return self.polish(trace, converged)
        finally:
            control.searching = False

    def run_epoch(self, epoch, event, agitation_tol=None, max_iter=None, target=None,
                  relative=True):
        """An EM epoch of the variational search's kind that ends only once the
        log-likelihood has plateaued: an iteration adds less than ``epoch_rtol`` times
        its magnitude, or less than ``tol``, or ``max_iter_epoch``.  Neither the
        agitation rule (the thesis's rule for ending an epoch) nor the early verdicts of
        :func:`~sklearn_vb.mfa._birth_death.birth_verdict` end it (``agitation_tol`` and
        ``target`` are not used): with well-separated clusters the responsibilities are
        settled at 0 or 1 while EM still moves the loadings and Ψ by hundreds of nats,
        and an epoch ended there carries its unfinished optimisation into the next
        birth, which is then credited with it (the thesis names this as a possible
        cause of its ML search returning more components than VB)."""
        return super().run_epoch(epoch, event, 0.0, max_iter, None, relative)

    def candidate_order(self):
        """The ids of the current components, the largest empirical KL divergence
        (:func:`empirical_kl`) first."""
        st = self.est._vb_
        return list(st.ids[np.argsort(-empirical_kl(st, self.data), kind="stable")])

    def propose(self, parent):
        """Split component index ``parent`` (:func:`point_birth`)."""
        kind = self.est.method

        def split(*args, **kwargs):
            return point_birth(*args, kind=kind, **kwargs)

        propose_birth(self.est, self.data, parent, split)

    def birth_target(self, value, n_components):
        """The log-likelihood a birth from ``n_components`` must exceed: ``value`` (the
        log-likelihood before the split) plus the BIC penalty ``(ΔD / 2) ln n`` of the
        extra analyser."""
        gain = self.n_parameters(n_components + 1) - self.n_parameters(n_components)
        return value + 0.5 * gain * self.log_n

    def fitted_attributes(self):
        """As the variational search's, and ``search_history_["bic"]``: the BIC of the
        state at every entry of the history."""
        out = super().fitted_attributes()
        history = out["search_history_"]
        history["bic"] = np.array([self.bic(F, S) for F, S in
                                   zip(history["bound"], history["n_components"])])
        return out


def run_search(estimator, data, control):
    """The search of ``estimator`` on ``data`` (the variational birth/death search, or
    :class:`PointBirthSearch` for a point fit); sets the attributes that describe it and
    returns the trace of the result and whether the search converged."""
    kind = PointBirthSearch if estimator._point_fitted else BirthDeathSearch
    search = kind(estimator, data, control)
    result = search.run()
    for name, value in search.fitted_attributes().items():
        setattr(estimator, name, value)
    return result
