"""Variational MCMC: effective samples per second against random-walk Metropolis and
emcee, on the 50-parent logistic belief network and on a discrete HMM.

Run ``python -m benchmarks.bench_vmcmc [--quick] [--out PREFIX]``; writes
``results/vmcmc[_quick].json`` and ``.md`` (or ``PREFIX[_quick].json`` and ``.md``).  The
sigmoid belief network runs on the compiled engine of ``VariationalMCMC``, the HMM on its
Python kernels (the ``engine`` column).  Every sampler targets the same posterior: our kernels through
:class:`~sklearn_vb.mcmc.VariationalMCMC` (4 chains), emcee's ``EnsembleSampler``
(stretch move, ``2 D + 2`` walkers, vectorised) on the same log posterior in the
unconstrained basis (log prior + exact log likelihood + log Jacobian).  ESS is
:func:`~sklearn_vb.mcmc.effective_sample_size` per coordinate (emcee's walkers taken
as chains), reported as the minimum and median over coordinates; rates are ESS per
wall-clock second in one run, the VB fit not included.  Not registered with
``python -m benchmarks`` (it times whole samplers, not iterations).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from sklearn_vb import VBHiddenMarkov, VBSigmoidBeliefNetwork
from sklearn_vb.mcmc import VariationalMCMC, effective_sample_size
from sklearn_vb.scoring import scoring_model_for

RESULTS = Path(__file__).parent / "results"


def sbn_workload(p=50, n=1000, seed=0):
    rng = np.random.default_rng(seed)
    U = (rng.random((n, p)) < 0.5).astype(float)
    w = rng.uniform(0.0, 1.0, p)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(0.5 + U @ w)))).astype(float)
    cols = [f"x{i}" for i in range(p)]
    X = pd.DataFrame(np.column_stack([U, y]), columns=cols + ["y"])
    est = VBSigmoidBeliefNetwork({"y": cols, **{c: [] for c in cols}}, n_init=1, tol=1e-6,
                                 random_state=seed).fit(X)
    return est, X


def hmm_workload(T=300, seed=0):
    rng = np.random.default_rng(seed)
    A = np.array([[0.9, 0.1], [0.2, 0.8]])
    B = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    z, xs = 0, []
    for _ in range(T):
        xs.append(rng.choice(3, p=B[z]))
        z = rng.choice(2, p=A[z])
    X = np.array(xs)[:, None]
    est = VBHiddenMarkov(n_components=2, n_symbols=3, random_state=seed).fit(X)
    return est, X


def _rates(draws, seconds):
    ess = effective_sample_size(draws)
    return {"ess_min": float(ess.min()), "ess_median": float(np.median(ess)), "seconds": seconds,
            "ess_min_per_s": float(ess.min() / seconds),
            "ess_median_per_s": float(np.median(ess) / seconds)}


def run_ours(est, X, kernel, n_samples, rw_step=None, seed=0):
    t0 = time.perf_counter()
    s = VariationalMCMC(est, kernel, n_samples=n_samples, burn_in=n_samples // 10, n_chains=4,
                        rw_step=rw_step, random_state=seed).fit(X)
    out = _rates(s.samples_phi_, time.perf_counter() - t0)
    out["acceptance"] = {k: float(v) for k, v in s.acceptance_.items()}
    out["engine"] = s.engine_
    return out


def run_emcee(est, X, n_steps, seed=0):
    import emcee

    model = scoring_model_for(est)
    data = model.prepare_data(X)
    space = model.param_space
    q = model.variational_posterior()
    rng = np.random.default_rng(seed)

    def log_post(phi):
        params, log_det = space.from_unconstrained(np.atleast_2d(phi))
        lp = model.log_prior(params) + model.log_likelihood(params, data) + log_det
        return np.where(np.isfinite(lp), lp, -np.inf)

    D = space.size
    walkers = 2 * D + 2
    start = space.to_unconstrained(q.sample(rng, walkers))
    sampler = emcee.EnsembleSampler(walkers, D, log_post, vectorize=True)
    sampler.random_state = np.random.RandomState(int(rng.integers(2**31))).get_state()
    t0 = time.perf_counter()
    sampler.run_mcmc(start, n_steps + n_steps // 10, progress=False)
    seconds = time.perf_counter() - t0
    chain = sampler.get_chain(discard=n_steps // 10)  # (steps, walkers, D)
    out = _rates(np.transpose(chain, (1, 0, 2)), seconds)
    out["acceptance"] = {"stretch": float(np.mean(sampler.acceptance_fraction))}
    out["walkers"] = walkers
    out["engine"] = "emcee"
    return out


def main(quick=False, out=None, emcee_steps=None):
    sizes = {"n_samples": 500 if quick else 2000, "emcee_steps": 500 if quick else 2000}
    if emcee_steps is not None:
        sizes["emcee_steps"] = int(emcee_steps)
    results = {"quick": quick, **sizes, "workloads": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        workloads = {f"sbn_{10 if quick else 50}_parents": (sbn_workload(10 if quick else 50), 0.1),
                     "hmm_2x3_T300": (hmm_workload(), None)}
    for name, ((est, X), rw_step) in workloads.items():
        rows = {}
        for kernel in ("mixture", "block", "independence", "random_walk"):
            rows[kernel] = run_ours(est, X, kernel, sizes["n_samples"], rw_step)
            print(name, kernel, rows[kernel], flush=True)
        rows["emcee"] = run_emcee(est, X, sizes["emcee_steps"])
        print(name, "emcee", rows["emcee"], flush=True)
        for row in rows.values():
            for ref in ("random_walk", "emcee"):
                row[f"ratio_vs_{ref}"] = row["ess_min_per_s"] / rows[ref]["ess_min_per_s"]
        results["workloads"][name] = {"dimension": int(scoring_model_for(est).param_space.size),
                                      "rw_step": rw_step, "samplers": rows}
    prefix = Path(out) if out is not None else RESULTS / "vmcmc"
    prefix = prefix.with_name(prefix.name + ("_quick" if quick else ""))
    prefix.parent.mkdir(parents=True, exist_ok=True)
    prefix.with_suffix(".json").write_text(json.dumps(results, indent=1))
    lines = ["# Variational MCMC: effective samples per second", "",
             f"{sizes['n_samples']} draws x 4 chains per kernel (burn-in 10 %), emcee "
             f"{sizes['emcee_steps']} steps x (2D+2) walkers; ESS per coordinate, min over "
             "coordinates; ratio = ESS_min/s over the reference's.", "",
             "| workload | D | sampler | engine | acceptance | ESS min | ESS median | seconds | "
             "ESS_min/s | vs random walk | vs emcee |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, wl in results["workloads"].items():
        for k, r in wl["samplers"].items():
            acc = ", ".join(f"{a} {b:.2f}" for a, b in r["acceptance"].items())
            lines.append(f"| {name} | {wl['dimension']} | {k} | {r['engine']} | {acc} | {r['ess_min']:.0f} | "
                         f"{r['ess_median']:.0f} | {r['seconds']:.1f} | {r['ess_min_per_s']:.2f} | "
                         f"{r['ratio_vs_random_walk']:.2f} | {r['ratio_vs_emcee']:.2f} |")
    prefix.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=None, help="path prefix of the result files")
    parser.add_argument("--emcee-steps", type=int, default=None,
                        help="emcee steps instead of the mode's (an ESS rate needs fewer)")
    args = parser.parse_args()
    main(args.quick, args.out, args.emcee_steps)
