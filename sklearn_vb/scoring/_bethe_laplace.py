"""The Bethe-Laplace evidence of a pairwise MRF (Parise and Welling 2006).

Laplace's method around a point ``lambda^`` (Parise and Welling 2006, eq. 8):

``ln p(X) ~ lambda^T S - N ln Z + ln p(lambda) + (F/2) ln 2 pi - 1/2 ln det(N C + P)``

with the six terms T1 ``lambda^T S``, T2 ``-N ln Z``, T3 ``ln p(lambda)``, T4
``(F/2) ln 2 pi``, T5 ``-(F/2) ln N`` and T6 ``-1/2 ln det(C + P/N)`` (``P`` the prior
precision, ``C`` the feature covariance).  The intractable pieces come from belief
propagation: with ``gradient="bp"`` the point is the BP-MAP (the maximiser of the
surrogate ``lambda^T S - N ln Z_B + ln p``), ``ln Z`` is the Bethe ``ln Z_B`` and ``C``
the linear-response covariance ``C_LR = d^2 ln Z_B / d lambda^2`` - the exact Laplace
approximation of the Bethe surrogate posterior; with ``gradient="exact"`` the point is
the exact MAP and ``ln Z`` exact ("BP-LR-ExactGrad").  ``covariance`` chooses ``C``:
linear response, exact, none (T6 dropped, T1-T5) or ``"auto"``, which drops T6 when the
BP point's bias ``z = sqrt(d^T A d)`` (``d = lambda^_BP - lambda^_ref``, ``A = N C + P``)
exceeds ``z_max`` posterior standard deviations: the paper's rule for when the BP-LR
estimate deteriorates at large N.

``gradient="exact", covariance="exact"`` is the exact Laplace approximation
("Laplace-Exact").

The defaults (``gradient="auto"``, ``covariance=None``) take the exact Laplace
approximation whenever ``ln Z`` is exact (the joint states can be enumerated within the
estimator's ``max_exact_states``, or the graph is a forest): the Bethe surrogate can put
the BP-MAP far from the exact MAP when couplings are strong, with no sign of trouble in
BP itself, and then misranks structures by hundreds of nats.  Only on larger loopy graphs
is the BP-LR estimate used, and there it is checked first (:meth:`BetheLaplaceScore.
_bp_reliability`): BP must converge, ``N C_LR + P`` must be positive definite and the
linear-response covariance of each edge's features must agree with the covariances the
BP pair belief and the data's pair table give them.  When a check fails
the score warns (:class:`~sklearn_vb.scoring.UnreliableEstimateWarning`) and returns
``nan``, which the structure searches rank below every graph with a usable score: no
value is more honest than a Bethe value known to be off, and none of the estimates that
need no ``ln Z`` is on the scale of the evidences of the other graphs.
"""

from __future__ import annotations


import numpy as np
import scipy.sparse.linalg as spla

from .._core.evidence.protocols import require
from ..mrf.inference import LOG_2PI, log_prior, lr_logdet
from ._base import Scorer, prepare_data, resolve_model
from ._result import ScoreResult, UnreliableEstimateWarning
from .._core.warn import warn_at_caller

__all__ = ["BetheLaplaceScore", "LR_BELIEF_DIVERGENCE_MAX", "LR_DATA_DIVERGENCE_MAX"]

#: the largest summed divergences between the linear-response covariances of the edges'
#: features and those of the BP pair beliefs, and of the data's pair tables
#: (:meth:`BetheLaplaceScore._bp_reliability`), at which the default score uses BP-LR;
#: calibrated against exact Laplace on real binary tables
#: (benchmarks/results/mrf_default_score.md)
LR_BELIEF_DIVERGENCE_MAX = 0.35
LR_DATA_DIVERGENCE_MAX = 3.0


def _block_divergence(layout, cov, kappa):
    """Summed over the edges: the symmetrised KL divergence between ``N(0, cov[block])``
    and ``N(0, C_block)``, ``C_block`` the covariance of the edge's features under the
    pair table of the mean parameters ``kappa`` (an edge whose table has an empty cell,
    hence a singular block, is skipped)."""
    _, tables = layout.beliefs_from_moments(kappa)
    div = 0.0
    for idx, c_pair in layout.edge_block_covariances(tables):
        try:
            r = np.linalg.solve(c_pair, cov[np.ix_(idx, idx)])
            div += 0.5 * float(np.trace(r) + np.trace(np.linalg.inv(r)) - 2 * idx.size)
        except np.linalg.LinAlgError:
            continue
    return div


class BetheLaplaceScore(Scorer):
    """Bethe-Laplace approximation to ``ln p(X | structure)`` of a pairwise MRF.

    Options
    -------
    gradient : {"auto", "bp", "exact"}, default "auto"
        The point: BP-MAP (Bethe moments in the Newton steps) or exact MAP; "auto" is
        "exact" when ``ln Z`` is exact (an enumerable graph or a forest), else "bp".
    covariance : {None, "linear_response", "exact", "none", "auto"}, default None
        None: "exact" when ``gradient="auto"`` chose the exact point; else
        "linear_response", checked (with ``gradient="auto"``) for reliability (BP convergence, positive definiteness, agreement with the data's
        pair tables; a failed check warns with
        :class:`~sklearn_vb.scoring.UnreliableEstimateWarning` and gives ``nan``).
        "auto" drops T6 when the BP point is biased (see the module docstring).
    log_partition : {"auto", "exact", "bethe"}, default "auto"
        ``ln Z`` at the point; "auto": Bethe with ``gradient="bp"``, exact with
        ``gradient="exact"``.
    bias_reference : {"auto", "exact", "pl"}, default "auto"
        Reference point of ``covariance="auto"``: the exact MAP ("exact", when
        tractable; ``z_max = 1``) or the pseudo-likelihood MAP ("pl", any size;
        ``z_max = sqrt(2 F)``); "auto" takes the exact one when tractable.
    z_max : float or None, default None
    allow_unconverged : bool, default False
        Return the value even when BP did not converge (``nan`` otherwise).
    terms : {"laplace", "map", "bic"}, default "laplace"
        Which terms are summed: all six; T1 + T2 + T3 (the penalised likelihood at the
        point, the paper's "MAP" score); or T1 + T2 + T5 (BIC at the point).  With
        ``gradient="bp"`` the last two are the BP versions of those baselines, usable
        on any graph where BP converges.

    ``diagnostics``: ``terms`` (T1-T6), ``lambda_hat``, ``inference``,
    ``log_partition`` and, when both exist, ``log_partition_exact`` and
    ``log_partition_bethe``; ``bp_converged``, ``bp_iterations``, ``newton_iterations``,
    ``newton_fallbacks``, ``A_eigenvalue_range``, ``lr_not_pd``, ``bp_bias_sd``,
    ``covariance_term_included``, ``covariance`` (the variant used) and, when the default
    checks found the BP-LR estimate unusable, ``unreliable_reasons``.
    """

    name = "bethe_laplace"
    options = {"gradient": "auto", "covariance": None, "log_partition": "auto",
               "bias_reference": "auto", "z_max": None, "allow_unconverged": False,
               "terms": "laplace"}

    def _check(self, opts):
        choices = {"gradient": ("auto", "bp", "exact"),
                   "covariance": (None, "linear_response", "exact", "none", "auto"),
                   "log_partition": ("auto", "exact", "bethe"),
                   "bias_reference": ("auto", "exact", "pl"),
                   "terms": ("laplace", "map", "bic")}
        for k, allowed in choices.items():
            if opts[k] not in allowed:
                raise ValueError(f"{k} must be one of {allowed}, got {opts[k]!r}.")

    def _score(self, estimator, X, fit_params, opts):
        self._check(opts)
        model = resolve_model(estimator, self.name)
        require(model, self.name, "bethe_map", "map_fit", "bp_engine", "exact_engine")
        data = prepare_data(model, X, fit_params)
        L = model.layout
        P = model.precision
        N, S, F = float(data.N), data.S, L.n_features
        tractable = model.inference_tractable()
        gradient, cov_kind = opts["gradient"], opts["covariance"]
        if gradient == "auto":
            gradient = "exact" if tractable else "bp"
        checked = cov_kind is None and opts["gradient"] == "auto" and gradient == "bp"
        if cov_kind is None:
            cov_kind = "exact" if opts["gradient"] == "auto" and gradient == "exact" else "linear_response"
        diag = {"inference": gradient}
        if gradient == "bp":
            res = model.bethe_map(data)
        else:
            if not tractable:
                raise NotImplementedError(f"{self.name} with gradient='exact' needs exact "
                                          "inference (an enumerable graph or a forest)")
            res = model.map_fit(data, "map", "exact")
        coef = res.coef
        diag.update(lambda_hat=coef, newton_iterations=res.n_iter,
                    newton_fallbacks=res.n_fallbacks, newton_converged=res.converged)
        # BP at the point: the variants built on BP need its convergence, and an explicitly
        # chosen variant reports the Bethe ln Z next to the exact one; the default exact
        # Laplace score skips it (loopy BP on a dense graph costs more than enumeration)
        need_bp = (gradient == "bp" or cov_kind in ("linear_response", "auto")
                   or opts["log_partition"] == "bethe")
        m_bp = None
        if need_bp or not (opts["gradient"] == "auto" and opts["covariance"] is None):
            bp = model.bp_engine(warn=need_bp, data=data)
            m_bp = bp.moments(coef, covariance=cov_kind in ("linear_response", "auto"))
            diag.update(bp_converged=bool(m_bp.info["bp_converged"]),
                        bp_iterations=m_bp.info["bp_iterations"],
                        log_partition_bethe=m_bp.log_partition)
        m_ex = None
        if tractable:  # the exact Newton fit already holds the exact moments at its optimum
            m_ex = res.moments if gradient == "exact" else model.exact_engine(data=data).moments(coef)
        if m_ex is not None:
            diag["log_partition_exact"] = m_ex.log_partition
        lp_kind = opts["log_partition"]
        if lp_kind == "auto":
            lp_kind = "bethe" if gradient == "bp" else "exact"
        if lp_kind == "exact" and m_ex is None:
            raise NotImplementedError(f"{self.name} with log_partition='exact' needs exact inference")
        lnz = m_ex.log_partition if lp_kind == "exact" else m_bp.log_partition
        diag["log_partition"] = lnz
        T1, T2, T3 = float(coef @ S), -N * lnz, float(log_prior(coef, P))
        T4, T5 = 0.5 * F * LOG_2PI, -0.5 * F * float(np.log(N))
        if cov_kind == "auto":
            cov_kind, z = self._auto_covariance(model, data, coef, m_bp, opts, tractable)
            diag["bp_bias_sd"] = z
        diag["covariance"] = cov_kind
        diag["covariance_term_included"] = cov_kind != "none"
        T6, lr_not_pd = 0.0, False
        if cov_kind != "none":
            m = m_ex if cov_kind == "exact" else m_bp
            ld, ev = self._logdet(m, N, P)
            if ev is not None:
                diag["A_eigenvalue_range"] = (float(ev[0]), float(ev[-1]))
            lr_not_pd = not np.isfinite(ld)
            T6 = float(-0.5 * ld - T5)
        diag["lr_not_pd"] = lr_not_pd
        diag["terms"] = {"T1": T1, "T2": T2, "T3": T3, "T4": T4, "T5": T5, "T6": T6}
        value = {"laplace": T1 + T2 + T3 + T4 + T5 + T6, "map": T1 + T2 + T3,
                 "bic": T1 + T2 + T5}[opts["terms"]]
        if lr_not_pd and opts["terms"] == "laplace":
            value = np.nan
        if not diag.get("bp_converged", True) and need_bp and not opts["allow_unconverged"]:
            value = np.nan
        if checked:
            reasons = self._bp_reliability(model, data, m_bp, diag)
            if reasons:
                diag["unreliable_reasons"] = reasons
                warn_at_caller(
                    f"{self.name}: the BP-LR evidence of this {F}-feature graph is unreliable ("
                    + "; ".join(reasons) + "); the score is nan. Exact Laplace needs a graph "
                    "with at most max_exact_states joint states (raise the estimator's "
                    "max_exact_states) or a forest.", UnreliableEstimateWarning)
                value = np.nan
        return ScoreResult(self.name, float(value), "approx", diagnostics=diag)

    @staticmethod
    def _bp_reliability(model, data, m_bp, diag):
        """Why the BP-LR estimate at the BP-MAP cannot be trusted (empty if it can).

        BP did not converge; ``N C_LR + P`` is not positive definite; or the
        linear-response covariance of some edge's features disagrees with another value
        of it.  The node and edge features of an edge ``(i, j)`` are indicators of the
        pair ``(x_i, x_j)``, so their covariance is a function of a pair table alone, and
        two such tables are at hand for free: the BP pair belief at the point, which an
        accurate ``C_LR`` reproduces (Welling and Teh 2004), and the data's pair table,
        which the fit reproduces up to the prior's shrinkage.  Where the Bethe
        approximation fails (strong, loopy couplings) ``C_LR`` parts from the first, or
        the BP-MAP runs off to couplings whose shrinkage parts it from the second.  Each
        disagreement is the symmetrised Kullback-Leibler divergence of the two zero-mean
        Gaussians, summed over the edges (``LR_BELIEF_DIVERGENCE_MAX``,
        ``LR_DATA_DIVERGENCE_MAX``)."""
        reasons = []
        if not diag["bp_converged"]:
            reasons.append("belief propagation did not converge")
        if diag["lr_not_pd"]:
            reasons.append("the linear-response covariance is not positive definite")
        layout = model.layout
        if reasons or m_bp.cov is None or not hasattr(layout, "edge_block_covariances"):
            return reasons
        checks = (("belief", "the BP pair beliefs", m_bp.kappa, LR_BELIEF_DIVERGENCE_MAX),
                  ("data", "the data's pair tables", data.S / data.N, LR_DATA_DIVERGENCE_MAX))
        for key, label, kappa, limit in checks:
            div = _block_divergence(layout, m_bp.cov, kappa)
            diag[f"lr_{key}_divergence"] = div
            if not div <= limit:
                reasons.append(f"the linear-response covariances of the edges' features differ "
                               f"from those of {label} by a divergence of {div:.3g} (limit "
                               f"{limit:g})")
        return reasons

    @staticmethod
    def _logdet(m, N, P):
        """``ln det(N C + P)`` and its eigenvalues (dense), or the sparse form."""
        if m.cov is not None:
            if not np.all(np.isfinite(m.cov)):
                return np.nan, None
            ev = np.linalg.eigvalsh(N * m.cov + np.diag(P))
            if not ev.size:  # no parameters: nothing to integrate
                return 0.0, None
            return (float(np.sum(np.log(ev))) if ev[0] > 0 else np.nan), ev
        return lr_logdet(m.J, N, P), None

    def _auto_covariance(self, model, data, coef, m_bp, opts, tractable):
        ref = opts["bias_reference"]
        if ref == "auto":
            ref = "exact" if tractable else "pl"
        if ref == "exact":
            ref_coef = model.map_fit(data, "map", "exact").coef
            z_max = 1.0 if opts["z_max"] is None else float(opts["z_max"])
        else:
            ref_coef = model.pseudo_likelihood_map(data)
            z_max = np.sqrt(2.0 * coef.size) if opts["z_max"] is None else float(opts["z_max"])
        d = coef - ref_coef
        if m_bp.cov is not None:
            A = data.N * m_bp.cov + np.diag(model.precision)
            z = float(np.sqrt(max(d @ A @ d, 0.0)))
        else:
            z = float(np.sqrt(max(data.N * d @ spla.spsolve(m_bp.J.tocsc(), d)
                                  + d @ (model.precision * d), 0.0)))
        if z > 1.0:
            warn_at_caller(
                f"bethe_laplace: the BP point lies {z:.2g} posterior standard deviations from the "
                f"{ref} reference, outside the regime where BP-LR is accurate; prefer the exact "
                "variants (gradient='exact') when the graph is tractable.", UserWarning)
        return ("linear_response" if z <= z_max else "none"), z
