"""Work units of Beal's Chapter 6 experiments: one structure scored on one data set.

Shared by ``reproduce dag`` and ``reproduce ais``.  A data set is the prefix of length n
of one stream of 10240 cases drawn from the true structure (Beal 2003, §6.4: nested data
sets); the stream, and for the multi-draw study the true parameters, depend only on the
run's seed and the draw.
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np

from ..dag import VBDiscreteDAG
from ..datasets import (
    BEAL_TRUE_CODE,
    beal_true_parameters,
    bipartite_structure,
    enumerate_bipartite_structures,
    make_beal_dag,
    random_beal_parameters,
)
from ..scoring import score, scoring_model_for

__all__ = ["STRUCTURES", "TRUE_CODE", "code_name", "parse_code", "draw_data", "fit_scores",
           "ais_scores", "rank_of_truth", "n_connected_hidden", "SINGLE"]

#: the 136 structures of the class (parent-set codes) and the true one
STRUCTURES = [tuple(c) for c in enumerate_bipartite_structures()]
TRUE_CODE = tuple(BEAL_TRUE_CODE)
#: draw label of the single instance with the thesis's printed parameters
SINGLE = "beal"


def code_name(code):
    """``(1, 3, 3, 2) -> "1332"`` (the key used in work units and reports)."""
    return "".join(str(int(c)) for c in code)


def parse_code(name):
    return tuple(int(c) for c in name)


def n_connected_hidden(code):
    """Hidden nodes with at least one child (each adds ½ ln n to CS†, Beal §6.5.2)."""
    return sum(any(c >> h & 1 for c in code) for h in range(2))


@lru_cache(maxsize=8)
def _stream(seed, draw, n_max):
    if draw == SINGLE:
        params = beal_true_parameters()
        data_seed = np.random.SeedSequence([seed, 0])
    else:
        ss = np.random.SeedSequence([seed, 1, int(draw)])
        p_seed, data_seed = ss.spawn(2)
        params = random_beal_parameters(np.random.RandomState(np.random.MT19937(p_seed)))
    X = make_beal_dag(n_max, parameters=params, random_state=np.random.RandomState(
        np.random.MT19937(data_seed)))
    X.setflags(write=False)
    return X, params


def draw_data(seed, draw, n, n_max=10240):
    """The first ``n`` cases of the stream of ``draw`` (``"beal"``: the thesis's
    parameters; an integer: parameters drawn from the uniform Dirichlet prior)."""
    X, _ = _stream(int(seed), draw, int(n_max))
    return X[:n]


def _fit(code, X, method, seed, n_init, max_iter, tol_per_case, sample_weight=None, **kwargs):
    n = X.shape[0] if sample_weight is None else float(np.sum(sample_weight))
    est = VBDiscreteDAG(*bipartite_structure(code), method=method, n_init=n_init,
                        max_iter=max_iter, tol=tol_per_case * n, random_state=seed,
                        bound_check="off", **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # iteration caps are recorded, not warned
        return est.fit(X, sample_weight=sample_weight)


def _patterns(X):
    """Distinct rows and their counts: fitting these with ``sample_weight`` gives the
    same fit as the full data (the estimator compresses patterns itself) and spares
    every restart the compression of n rows."""
    U, counts = np.unique(X, axis=0, return_counts=True)
    return U, counts.astype(float)


def fit_scores(code, X, seed, n_init=3, max_iter=1000, tol_per_case=1e-6, extras=False):
    """MAP, BIC, BICp, CS, CS† (from one EM fit) and VB (from one VBEM fit) of one
    structure, as in Beal §6.4: EM and VBEM each with ``n_init`` restarts from the same
    prior draws of the tables, stopped at ``max_iter`` iterations or when the objective
    gains less than ``tol_per_case * n``.

    The EM estimate is the MAP estimate on the natural basis (eq. 6.23), which with the
    uniform prior is the ML estimate.  Scores are raw; ``ln_S`` is the alias correction
    (added to BIC, BICp, CS, CS† and VB for the corrected columns).

    ``extras=True`` adds the two fixes beyond the thesis: ``vb_uncapped`` (VBEM run on
    until converged when the capped run was stopped by ``max_iter``) and ``vb_from_cs``
    (VBEM started from the Cheeseman–Stutz point, ``q(theta) = Dir(lambda + N_hat)``,
    whose bound is at least CS by Beal's Corollary 2.5).
    """
    n = X.shape[0]
    U, w = _patterns(X)
    # with the uniform prior the MAP estimate on the natural basis (eq. 6.23) is the ML
    # estimate and its EM objective differs from ML's by a constant: the same iterations
    # and estimate, without evaluating the prior at every iteration
    em = _fit(code, U, "ml", seed, n_init, max_iter, tol_per_case, w)
    model = scoring_model_for(em)
    theta = {b: np.asarray(t, dtype=float)[None] for b, t in zip(model.block_names, em.cpts_)}
    loglik = float(em.log_likelihood_)
    d = int(em.n_parameters_)
    bic = loglik - 0.5 * d * np.log(n)
    bicp = bic + float(model.log_prior(theta)[0])
    cs = float(em.lower_bound_)  # the CS value at the EM estimate (exact E step there)
    vb = _fit(code, U, "vb", seed, n_init, max_iter, tol_per_case, w)
    out = {"map": loglik, "bic": bic, "bicp": bicp, "cs": cs,
           "cs_dagger": cs + 0.5 * n_connected_hidden(code) * np.log(n),
           "vb": float(vb.lower_bound_), "ln_S": float(vb.log_alias_count_), "d": d,
           "em_iter": int(em.n_iter_), "vb_iter": int(vb.n_iter_),
           "vb_converged": bool(vb.converged_)}
    if extras:
        if vb.converged_:
            out["vb_uncapped"] = out["vb"]
        else:
            vb_long = _fit(code, U, "vb", seed, n_init, 100 * max_iter, tol_per_case, w)
            out["vb_uncapped"] = float(vb_long.lower_bound_)
        start = {name: np.asarray(lam, float) + np.asarray(cnt, float) for name, lam, cnt
                 in zip(em.structure_.names, em.prior_, em.expected_counts_)}
        vb_cs = _fit(code, U, "vb", seed, 1, 100 * max_iter, tol_per_case, w,
                     init_params="posterior", init_posterior=start)
        out["vb_from_cs"] = float(vb_cs.lower_bound_)
    return out


def ais_scores(code, X, seed, n_temperatures=16384, n_runs=5, strength=(3000.0, 0.0),
               floor=0.0, e_tau=0.2):
    """AIS from the prior along Beal's schedule (eq. 6.73) with ``n_runs`` independent
    runs: the pooled estimate AIS^(n_runs) (log of the mean weight, eq. 6.61), every
    run's log-weight, and the Metropolis–Hastings acceptance overall and by quarter of
    the schedule.  ``strength = (alpha0, kappa)`` sets the Dirichlet proposal strength
    ``alpha0 + kappa n beta``; Beal's kernel is ``(3000, 0)`` with ``floor=0``."""
    holder = _fit(code, X[: min(len(X), 10)], "vb", 0, 1, 1, 1e-6)  # only its structure is used
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = score(holder, X, "ais", start="prior", schedule="beal", e_tau=e_tau,
                  n_temperatures=int(n_temperatures), n_chains=int(n_runs), n_runs=int(n_runs),
                  kernel="compiled", dirichlet_strength=tuple(float(s) for s in strength),
                  dirichlet_floor=floor, random_state=int(seed))
    quarters = [float(v) for v in r.diagnostics["acceptance_by_quarter"]]
    return {"ais": float(r.log_evidence),
            "ais_runs": [float(v) for v in r.diagnostics["log_weights"]],
            "acceptance": float(np.mean(quarters)), "acceptance_by_quarter": quarters}


def rank_of_truth(values, true_index):
    """1 + the number of structures scoring strictly higher than the true one
    (``values[true_index]``; Beal §6.4.1); NaN scores count as lower."""
    v = np.asarray(values, dtype=float)
    return int(1 + np.sum(v > v[true_index]))
