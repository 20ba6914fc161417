"""Laplace approximation in the unconstrained basis.

``ln p(X) ~ t(phi^) + (d/2) ln 2 pi - 1/2 ln det A``, ``A = -grad^2 t(phi^)``, with
``t(phi) = ln p(theta(phi)) + ln|det d theta/d phi| + l(theta(phi))``.  Exact for Gaussian
posteriors in real parameters.  Weaknesses: a large-sample argument (poor for small n),
not invariant to reparameterisation, poor for bounded parameters in their natural basis,
counts only the mass near one mode (aliasing), and the volume term diverges under
parameter degeneracy (then ``nan`` with ``diagnostics["degenerate"] = True``).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from .._kernels._constants import LOG_2PI
from ._base import Scorer, prepare_data, resolve_model
from ._numerics import spawn_generators
from ._result import ScoreResult
from .protocols import require

__all__ = ["LaplaceScore", "fd_gradient", "fd_hessian"]


def _t(model, data, phis):
    params, logdet = model.param_space.from_unconstrained(np.atleast_2d(phis))
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.asarray(model.log_prior(params) + model.log_likelihood(params, data) + logdet,
                       dtype=float)
    return np.where(np.isnan(v), -np.inf, v)


def fd_gradient(f, phi, rel_step=1e-6):
    d = phi.size
    h = rel_step * np.maximum(1.0, np.abs(phi))
    E = np.diag(h)
    vals = f(np.concatenate([phi + E, phi - E]))
    return (vals[:d] - vals[d:]) / (2 * h)


def fd_hessian(f, phi, rel_step=1e-4):
    """Central-difference Hessian; all points in one batched call of ``f``."""
    d = phi.size
    h = rel_step * np.maximum(1.0, np.abs(phi))
    E = np.diag(h)
    pts = [phi[None], phi + E, phi - E]
    pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
    for i, j in pairs:
        pts.append(np.stack([phi + E[i] + E[j], phi + E[i] - E[j],
                             phi - E[i] + E[j], phi - E[i] - E[j]]))
    v = f(np.concatenate(pts))
    f0, fp, fm = v[0], v[1:1 + d], v[1 + d:1 + 2 * d]
    H = np.diag((fp - 2 * f0 + fm) / h**2)
    off = v[1 + 2 * d:].reshape(-1, 4)
    for (i, j), q in zip(pairs, off):
        H[i, j] = H[j, i] = (q[0] - q[1] - q[2] + q[3]) / (4 * h[i] * h[j])
    return H


class LaplaceScore(Scorer):
    """Laplace approximation around the MAP in the unconstrained basis (``hessian="fd"``).

    Options: ``n_init`` (EM restarts for the initial point), ``rel_step`` (Hessian
    finite-difference step), ``newton_steps`` (polishing steps after BFGS).
    """

    name = "laplace"
    options = {"n_init": 3, "rel_step": 1e-4, "newton_steps": 5, "hessian": "fd"}

    def _score(self, estimator, X, fit_params, opts):
        if opts["hessian"] not in ("fd", "block_diagonal"):
            raise ValueError(f"hessian must be 'fd' or 'block_diagonal', got {opts['hessian']!r}.")
        model = resolve_model(estimator, self.name)
        require(model, self.name, "log_prior", "log_likelihood", "fit_point")
        log_alias = self._log_alias(model, opts)
        data = prepare_data(model, X, fit_params)
        rng = spawn_generators(opts["random_state"], 1)[0]
        space = model.param_space
        theta0 = model.fit_point(data, kind="map", rng=rng, n_init=opts["n_init"])
        phi = space.to_unconstrained(theta0)[0]
        f = lambda P: _t(model, data, P)  # noqa: E731
        if not np.isfinite(f(phi)[0]):
            raise ValueError("laplace: the objective is not finite at the initial point.")
        res = minimize(lambda p: -f(p)[0], phi, jac=lambda p: -fd_gradient(f, p), method="BFGS",
                       options={"gtol": 1e-9, "maxiter": 500})
        phi = res.x if res.fun <= -f(phi)[0] else phi
        for _ in range(int(opts["newton_steps"])):
            g = fd_gradient(f, phi)
            A = -fd_hessian(f, phi, opts["rel_step"])
            try:
                step = np.linalg.solve(A, g)
            except np.linalg.LinAlgError:
                break
            cand = phi + step
            if f(cand)[0] >= f(phi)[0] - 1e-12:
                phi = cand
            if np.max(np.abs(step)) < 1e-10:
                break
        A = -fd_hessian(f, phi, opts["rel_step"])
        if opts["hessian"] == "block_diagonal":
            mask = np.zeros_like(A, dtype=bool)
            for b in space.blocks:
                sl = space.slices[b.name]
                mask[sl, sl] = True
            A = np.where(mask, A, 0.0)
        A = 0.5 * (A + A.T)
        ev = np.linalg.eigvalsh(A)
        d = phi.size
        t_hat = float(f(phi)[0])
        diag = {"t_hat": t_hat, "phi_hat": phi, "eigenvalues": ev, "d": d, "degenerate": False}
        if ev[0] <= 1e-10 * max(ev[-1], 0.0) or ev[0] <= 0:
            diag["degenerate"] = True
            value = float("nan")
        else:
            value = t_hat + 0.5 * d * LOG_2PI - 0.5 * float(np.sum(np.log(ev)))
        return ScoreResult(self.name, value, "approx", log_alias_correction=log_alias,
                           diagnostics=diag)
