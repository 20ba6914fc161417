"""The bimodal experiment of de Freitas, Højen-Sørensen, Jordan & Russell (2001), §5.2
(Figs. 14-16): one child with a hidden and an observed parent.

* Model: the child ``y`` has the parents ``h`` (hidden) and ``x`` (observed), entering
  as -1/+1 (``parent_coding="spin"``: relabelling ``h`` flips the sign of its weight,
  which is where the second mode comes from; with 0/1 parents this posterior has one
  mode); generating weights 2 (``h``) and -1 (``x``), the parents' Bernoulli means 0.6
  and 0.5 and the child's bias 2, all three known (``fixed_bias``); ``n`` cases; prior
  ``N(3, 10 I)`` on the two weights.
* Exact posterior: ``ln p(w) + ln p(y, x | w)`` (``h`` summed out per case) on a
  regular grid; its modes are the basins of steepest ascent on the grid, and the exact
  mode masses, means, variances and kurtoses are grid sums.
* q: the paper's sequential VB (``method="sequential"``; with one hidden node per case
  its q(h) is their mean field); the batch VBEM's q is summarised beside it.
* Samplers: random-walk Metropolis, the independence sampler with the VB q (the
  paper's "naive variational MCMC"), the mixture of the two, and the independence
  sampler with adaptation at regeneration times; ``n_mcmc`` iterations each from a
  draw of q, no burn-in, ``repeats`` chains with different seeds.
* Fig. 5: random-walk Metropolis on the same posterior with three proposal variances
  (``fig5_rw_steps`` standard deviations), ``repeats`` chains each.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from ..mcmc import VariationalMCMC
from ..sbn import VBSigmoidBeliefNetwork
from ..scoring import scoring_model_for

__all__ = ["BIMODAL_SAMPLERS", "bimodal_data", "bimodal_network", "exact_grid",
           "mode_labels", "moments", "run_bimodal"]

STRUCTURE = {"y": ["h", "x"], "h": [], "x": []}
BIMODAL_SAMPLERS = {"random_walk": dict(kernel="random_walk"),
                    "independence": dict(kernel="independence"),
                    "mixture": dict(kernel="mixture"),
                    "regeneration": dict(kernel="independence", adapt="regeneration")}


def bimodal_data(n, seed):
    rng = np.random.default_rng(seed)
    h = rng.random(n) < 0.6
    x = rng.random(n) < 0.5
    y = rng.random(n) < expit(2.0 + 2.0 * (2.0 * h - 1) - (2.0 * x - 1))
    return pd.DataFrame({"x": x, "y": y}).astype(float)


def bimodal_network(config, seed, method="batch"):
    return VBSigmoidBeliefNetwork(
        STRUCTURE, hidden=["h"], prior_variance=float(config["bimodal_prior_variance"]),
        prior_mean=float(config["bimodal_prior_mean"]),
        fixed_bias={"y": 2.0, "h": float(logit(0.6)), "x": 0.0}, parent_coding="spin",
        n_init=3, tol=1e-8, random_state=seed, method=method)


def exact_grid(model, data, lo, hi, n_points):
    """Normalised posterior probabilities of the grid cells (n_points, n_points) and
    the axis (the same for both weights)."""
    axis = np.linspace(lo, hi, int(n_points))
    A, B = np.meshgrid(axis, axis, indexing="ij")
    params = {"w[y]": np.column_stack([A.ravel(), B.ravel()])}
    lp = model.log_prior(params) + model.log_likelihood(params, data)
    p = np.exp(lp - lp.max())
    return (p / p.sum()).reshape(A.shape), axis


def mode_labels(P):
    """Basin of steepest ascent of every grid cell: each cell points at its highest
    3 x 3 neighbour, pointers are followed to the local maxima (pointer jumping).
    Returns the label grid (basins sorted by mass, 0 = heaviest) and the masses."""
    n1, n2 = P.shape
    pad = np.pad(P, 1, constant_values=-1.0)
    idx = np.arange(n1 * n2).reshape(n1, n2)
    pidx = np.pad(idx, 1, constant_values=-1)
    best_val, best_idx = P.copy(), idx.copy()
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            v = pad[1 + di:1 + di + n1, 1 + dj:1 + dj + n2]
            i = pidx[1 + di:1 + di + n1, 1 + dj:1 + dj + n2]
            better = v > best_val
            best_val = np.where(better, v, best_val)
            best_idx = np.where(better, i, best_idx)
    ptr = best_idx.ravel()
    while True:
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            break
        ptr = nxt
    roots, lab = np.unique(ptr, return_inverse=True)
    mass = np.bincount(lab, weights=P.ravel())
    order = np.argsort(-mass)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[lab].reshape(P.shape), mass[order], roots[order]


def moments(values, weights=None):
    """Mean, variance and kurtosis (E[(w - mean)^4] / var^2, 3 for a Gaussian) per
    column."""
    w = np.full(values.shape[0], 1.0 / values.shape[0]) if weights is None else weights
    mean = w @ values
    c = values - mean
    var = w @ c**2
    return mean, var, (w @ c**4) / var**2


def _cells(samples, axis):
    h = axis[1] - axis[0]
    k = np.clip(np.rint((samples - axis[0]) / h).astype(int), 0, axis.size - 1)
    return k[:, 0], k[:, 1]


def run_bimodal(config, seed):
    """One data set, the exact grid summaries and every sampler's summaries."""
    X = bimodal_data(int(config["bimodal_n"]), seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = bimodal_network(config, seed, "sequential").fit(X)
        batch = bimodal_network(config, seed, "batch").fit(X)
    model = scoring_model_for(est)
    data = model.prepare_data(X)
    lo, hi, npts = config["bimodal_grid"]
    P, axis = exact_grid(model, data, lo, hi, npts)
    labels, masses, roots = mode_labels(P)
    A, B = np.meshgrid(axis, axis, indexing="ij")
    flat = np.column_stack([A.ravel(), B.ravel()])
    mean, var, kurt = moments(flat, P.ravel())
    n_modes = int(min(2, masses.size))
    exact = {"mode_mass": [float(m) for m in masses[:n_modes]],
             "mode_location": [flat[r].tolist() for r in roots[:n_modes]],
             "mean": mean.tolist(), "variance": var.tolist(), "kurtosis": kurt.tolist(),
             "n_basins": int(masses.size)}
    j = est.structure_.index("y")
    q = {"mean": est.coef_[j][1:].tolist(), "cov": est.covariances_[j][1:, 1:].tolist()}
    qm, qv = np.array(q["mean"]), np.diag(np.array(q["cov"]))
    q_summary = {"mean": qm.tolist(), "variance": qv.tolist(), "kurtosis": [3.0, 3.0],
                 "mode": int(labels[_cells(qm[None], axis)][0])}
    jb = batch.structure_.index("y")
    bm = batch.coef_[jb][1:]
    q_batch = {"mean": bm.tolist(), "variance": np.diag(batch.covariances_[jb][1:, 1:]).tolist(),
               "kurtosis": [3.0, 3.0], "mode": int(labels[_cells(bm[None], axis)][0]),
               "lower_bound": float(batch.lower_bound_)}
    out = {"exact": exact, "q": q, "q_summary": q_summary, "q_batch": q_batch,
           "lower_bound": float(est.lower_bound_),
           "grid_axis": [float(lo), float(hi), int(npts)],
           "grid_log_p": np.round(np.log(np.maximum(P, 1e-300)), 3).tolist(), "samplers": {}}
    for name, kw in BIMODAL_SAMPLERS.items():
        runs = []
        for r in range(int(config["bimodal_repeats"])):
            s = VariationalMCMC(est, nu=float(config["nu"]), n_samples=int(config["bimodal_n_mcmc"]),
                                burn_in=0, n_chains=1, rw_step=float(config["bimodal_rw_step"]),
                                random_state=seed + 1000 * r + 1, **kw).fit(X)
            W = s.samples_["w[y]"][0]
            runs.append({**_chain_summary(s, W, labels, axis, n_modes),
                         "samples": np.round(W[::5], 3).tolist() if r == 0 else None})
        out["samplers"][name] = runs
    out["fig5"] = _fig5(est, X, config, seed, labels, axis, n_modes)
    return out


def _chain_summary(sampler, W, labels, axis, n_modes):
    """One chain's draws ``W`` of the fitted ``sampler``: the mass of each mode (the
    mode labels of the grid cells), the draws' moments and the acceptance rates."""
    m, v, k = moments(W)
    lab = labels[_cells(W, axis)]
    return {"mode_mass": [float(np.mean(lab == i)) for i in range(n_modes)],
            "mean": m.tolist(), "variance": v.tolist(), "kurtosis": k.tolist(),
            "acceptance": {a: float(b) for a, b in sampler.acceptance_.items()}}


def _fig5(est, X, config, seed, labels, axis, n_modes):
    """Random-walk Metropolis with each proposal standard deviation of
    ``fig5_rw_steps``: mode masses, moments and acceptance per chain, and the first
    chain's draws of the hidden parent's weight."""
    out = {}
    for step in config.get("fig5_rw_steps", []):
        runs = []
        for r in range(int(config["bimodal_repeats"])):
            s = VariationalMCMC(est, "random_walk", n_samples=int(config["bimodal_n_mcmc"]),
                                burn_in=0, n_chains=1, rw_step=float(step),
                                random_state=seed + 1000 * r + 7).fit(X)
            W = s.samples_["w[y]"][0]
            runs.append({**_chain_summary(s, W, labels, axis, n_modes),
                         "w_h": np.round(W[::2, 0], 3).tolist() if r == 0 else None})
        out[f"{float(step):g}"] = runs
    return out
