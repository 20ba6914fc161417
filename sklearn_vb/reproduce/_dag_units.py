"""Work units of Beal's Chapter 6 experiments: one structure scored on one data set.

Shared by ``reproduce dag`` and ``reproduce ais``.  A data set is the prefix of length n
of one stream of 10240 cases drawn from the true structure (Beal 2003, §6.4: nested data
sets); the stream, and for the multi-draw study the true parameters, depend only on the
run's seed and the draw.
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np
from sklearn.utils import check_random_state

from .._core.distributions import dirichlet_log_pdf
from ..dag import VBDiscreteDAG, alias_count
from ..dag.fit_kernels import em_restarts, vbem_restarts
from ..dag.kernels import pattern_log_normalisers
from ..dag.structure import log_dirichlet_integral, parameter_count
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
    """Distinct rows and their counts, in the order of ``np.unique(X, axis=0)``: fitting
    these with ``sample_weight`` gives the same fit as the full data (the estimator
    compresses patterns itself) and spares every restart the compression of n rows.
    Rows of small non-negative integers are ranked by one mixed-radix code (first column
    most significant, so the order is lexicographic) instead of a sort of row views."""
    X = np.asarray(X)
    if (X.ndim == 2 and X.shape[0] and np.issubdtype(X.dtype, np.integer) and X.min() >= 0
            and np.prod(X.max(axis=0) + 1.0) < 2.0 ** 62):
        dims = tuple(int(v) + 1 for v in X.max(axis=0))
        keys, counts = np.unique(np.ravel_multi_index(X.T, dims), return_counts=True)
        U = np.stack(np.unravel_index(keys, dims), axis=1).astype(X.dtype)
    else:
        U, counts = np.unique(X, axis=0, return_counts=True)
    return U, counts.astype(float)


def _fit_data(code, U, w):
    """The estimator's own fit data of one structure (patterns, enumeration index, CPT
    layout, prior) and the unfitted estimator that built them."""
    est = VBDiscreteDAG(*bipartite_structure(code), method="ml", bound_check="off")
    est._validate_params()
    return est._check_fit_data(U, sample_weight=w), est


def _starts(est, data, seed, n_init):
    """The starting log tables of the ``n_init`` restarts of ``VBDiscreteDAG.fit`` with
    ``random_state=seed`` (EM and VBEM start from the same prior draws)."""
    random_state = check_random_state(seed)
    rows = []
    for _ in range(n_init):
        est._initialize(data, random_state)  # method "ml": the start is ln theta
        rows.append(est._log_theta_)
    return np.ascontiguousarray(np.array(rows, dtype=float))


def _em(data, starts, max_iter, tol):
    pd, P = data.pdata, data.layout.size
    counts, theta, entropy = np.empty(P), np.empty(P), np.empty(pd.n_patterns)
    bound, n_iter, converged = em_restarts(starts, data.layout.row_ptr, pd.idx, pd.row_start,
                                           pd.weights, int(max_iter), float(tol), counts, theta,
                                           entropy)
    return counts, theta, entropy, int(n_iter)


def _vbem(data, starts, max_iter, tol):
    pd = data.pdata
    alpha = np.empty(data.layout.size)
    bound, n_iter, converged = vbem_restarts(starts, data.prior, data.layout.row_ptr, pd.idx,
                                             pd.row_start, pd.weights, int(max_iter), float(tol),
                                             alpha)
    return float(bound), int(n_iter), bool(converged), alpha


@lru_cache(maxsize=512)
def _structure_constants(code):
    """``(d, ln S)`` of a structure: naive parameter count (eq. 6.24) and the log of the
    number of aliases (§6.3.2); they do not depend on the data."""
    structure, cards, hidden = bipartite_structure(code)
    est = VBDiscreteDAG(structure, cards, hidden)
    est._validate_params()
    data = est._check_fit_data(np.zeros((1, len(code)), dtype=np.int64))
    s = est._structure
    return parameter_count(s), math.log(alias_count(s, data.prior, data.layout))


def fit_scores(code, X, seed, n_init=3, max_iter=1000, tol_per_case=1e-6, extras=False):
    """MAP, BIC, BICp, CS, CS† (from one EM fit) and VB (from one VBEM fit) of one
    structure, as in Beal §6.4: EM and VBEM each with ``n_init`` restarts from the same
    prior draws of the tables, stopped at ``max_iter`` iterations or when the objective
    gains less than ``tol_per_case * n``.

    The fits are those of :class:`~sklearn_vb.VBDiscreteDAG` (``method="ml"`` and
    ``"vb"`` with its SQUAREM acceleration, ``random_state=seed``), run as one compiled
    call each on the distinct patterns of ``X`` (:mod:`sklearn_vb.dag.fit_kernels`).
    The EM estimate is the MAP estimate on the natural basis (eq. 6.23), which with the
    uniform prior is the ML estimate: the same iterations and estimate, its objective
    differing from ML's by a constant.  Scores are raw; ``ln_S`` is the alias correction
    (added to BIC, BICp, CS, CS† and VB for the corrected columns).

    ``extras=True`` adds the two fixes beyond the thesis: ``vb_uncapped`` (VBEM run on
    until converged when the capped run was stopped by ``max_iter``) and ``vb_from_cs``
    (VBEM started from the Cheeseman–Stutz point, ``q(theta) = Dir(lambda + N_hat)``,
    whose bound is at least CS by Beal's Corollary 2.5).
    """
    n = X.shape[0]
    U, w = _patterns(X)
    data, est = _fit_data(code, U, w)
    tol = tol_per_case * float(np.sum(w))
    starts = _starts(est, data, seed, n_init)
    layout, pd = data.layout, data.pdata
    counts, theta, entropy, em_iter = _em(data, starts, max_iter, tol)
    with np.errstate(divide="ignore"):
        log_theta = np.log(theta)
    log_z = np.empty(pd.n_patterns)
    pattern_log_normalisers(log_theta, pd.idx, pd.row_start, log_z)
    loglik = float(np.dot(pd.weights, log_z))
    d, ln_S = _structure_constants(tuple(int(c) for c in code))
    bic = loglik - 0.5 * d * np.log(n)
    log_prior = 0.0
    for t, a in zip(layout.split(theta), layout.split(data.prior)):
        log_prior += float(dirichlet_log_pdf(t, a).sum())
    bicp = bic + log_prior
    # Cheeseman-Stutz at the EM estimate (the last E step is exact there; Form B)
    cs = log_dirichlet_integral(data.prior, counts, layout) + float(np.dot(pd.weights, entropy))
    vb, vb_iter, vb_converged, alpha = _vbem(data, starts, max_iter, tol)
    out = {"map": loglik, "bic": bic, "bicp": bicp, "cs": cs,
           "cs_dagger": cs + 0.5 * n_connected_hidden(code) * np.log(n),
           "vb": vb, "ln_S": ln_S, "d": d, "em_iter": em_iter, "vb_iter": vb_iter,
           "vb_converged": vb_converged}
    if extras:
        if vb_converged:
            out["vb_uncapped"] = out["vb"]
        else:
            out["vb_uncapped"] = _vbem(data, starts, 100 * max_iter, tol)[0]
        start = {name: np.asarray(lam, float) + np.asarray(cnt, float) for name, lam, cnt
                 in zip(data.layout.structure.names, layout.split(data.prior),
                        layout.split(counts))}
        vb_cs = _fit(code, U, "vb", seed, 1, 100 * max_iter, tol_per_case, w,
                     init_params="posterior", init_posterior=start)
        out["vb_from_cs"] = float(vb_cs.lower_bound_)
    return out


def ais_scores(code, X, seed, n_temperatures=16384, n_runs=5, strength=(3000.0, 0.0),
               floor=0.0, e_tau=0.2, hysteresis=False):
    """AIS from the prior along Beal's schedule (eq. 6.73) with ``n_runs`` independent
    runs: the pooled estimate AIS^(n_runs) (log of the mean weight, eq. 6.61), every
    run's log-weight, and the Metropolis–Hastings acceptance overall and by quarter of
    the schedule.  ``strength = (alpha0, kappa)`` sets the Dirichlet proposal strength
    ``alpha0 + kappa n beta``; Beal's kernel is ``(3000, 0)`` with ``floor=0``.

    ``hysteresis=True`` adds Beal's backward pass (§6.5.1) from each run's final state
    (``"hysteresis"``: every run's backward log-weight, both pooled estimates, their gap
    ``backward - forward`` and the per-stretch ratio differences of
    :func:`~sklearn_vb.scoring._ais.hysteresis_check`); the forward runs then use
    another seed stream than without it."""
    holder = _fit(code, X[: min(len(X), 10)], "vb", 0, 1, 1, 1e-6)  # only its structure is used
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = score(holder, X, "ais", start="prior", schedule="beal", e_tau=e_tau,
                  n_temperatures=int(n_temperatures), n_chains=int(n_runs), n_runs=int(n_runs),
                  kernel="compiled", dirichlet_strength=tuple(float(s) for s in strength),
                  dirichlet_floor=floor, random_state=int(seed), hysteresis=bool(hysteresis))
    quarters = [float(v) for v in r.diagnostics["acceptance_by_quarter"]]
    out = {"ais": float(r.log_evidence),
           "ais_runs": [float(v) for v in r.diagnostics["log_weights"]],
           "acceptance": float(np.mean(quarters)), "acceptance_by_quarter": quarters}
    if hysteresis:
        h = r.diagnostics["hysteresis"]
        out["hysteresis"] = {
            "backward_runs": [float(v) for v in h["backward_log_weights"]],
            "forward": float(h["forward_estimate"]), "backward": float(h["backward_estimate"]),
            "gap": float(h["gap"]),
            "profile": [float(v) for v in h["ratio_difference_profile"]]}
    return out


def rank_of_truth(values, true_index):
    """1 + the number of structures scoring strictly higher than the true one
    (``values[true_index]``; Beal §6.4.1); NaN scores count as lower."""
    v = np.asarray(values, dtype=float)
    return int(1 + np.sum(v > v[true_index]))
