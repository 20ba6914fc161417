"""Laplace approximation in the unconstrained basis.

``ln p(X) ~ t(phi^) + (d/2) ln 2 pi - 1/2 ln det A``, ``A = -grad^2 t(phi^)``, with
``t(phi) = ln p(theta(phi)) + ln|det d theta/d phi| + l(theta(phi))``.  Exact for Gaussian
posteriors in real parameters.  Weaknesses: a large-sample argument (poor for small n),
not invariant to reparameterisation, poor for bounded parameters in their natural basis,
counts only the mass near one mode (aliasing), and the volume term diverges under
parameter degeneracy (then ``nan`` with ``diagnostics["degenerate"] = True``).

Gradients of ``t`` come from the model when it has them (``log_joint_gradient``: the
gradient of ``ln p(theta) + l(theta)`` in the constrained values, pulled back through the
transforms by :meth:`~sklearn_vb._core.evidence.params.ParamSpace.gradient_to_unconstrained`;
or ``objective_and_gradient``: ``t`` and its gradient in ``phi`` directly), otherwise
from central differences of ``t``.  The Hessian is then a difference of gradients,
one column at a time (exact gradients), or the classical second difference of ``t``
evaluated in batches of bounded size (no gradients).
"""

from __future__ import annotations

import os

import numpy as np
from scipy.optimize import minimize

from .._core.evidence.protocols import has, require
from .._core.kernels.constants import LOG_2PI
from .._core.numerics import spawn_generators
from .._core.progress import Progress
from ._base import Scorer, prepare_data, resolve_model
from ._point_cache import shared_fit_point
from ._result import ScoreResult

__all__ = ["LaplaceScore", "fd_gradient", "fd_hessian", "laplace_memory_estimate"]

#: the memory cap (MB) of a Laplace score when ``max_memory_mb`` is not given (lowered to
#: the machine's available memory when that is smaller)
DEFAULT_MAX_MEMORY_MB = 1024.0
_MB = 2.0**20
#: default relative steps of the Hessian's differences (see LaplaceScore, ``rel_step``)
_FORWARD_REL_STEP = 1e-6
_CENTRAL_REL_STEP = 1e-4
_F8 = 8.0


def _t(model, data, phis):
    params, logdet = model.param_space.from_unconstrained(np.atleast_2d(phis))
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.asarray(model.log_prior(params) + model.log_likelihood(params, data) + logdet,
                       dtype=float)
    return np.where(np.isnan(v), -np.inf, v)


def _steps(phi, rel_step):
    return rel_step * np.maximum(1.0, np.abs(phi))


def _in_batches(f, points, batch):
    """``f`` over the rows of ``points`` evaluated ``batch`` rows at a time."""
    return np.concatenate([f(points[i:i + batch]) for i in range(0, len(points), batch)])


def fd_gradient(f, phi, rel_step=1e-6, batch=None):
    """Central-difference gradient of the batched ``f``; ``2 d`` evaluations of ``f``,
    at most ``batch`` points per call (all at once by default)."""
    d = phi.size
    h = _steps(phi, rel_step)
    vals = np.empty(2 * d)
    step = int(batch) if batch else 2 * d
    for lo in range(0, 2 * d, step):
        idx = np.arange(lo, min(lo + step, 2 * d))
        pts = np.repeat(phi[None], idx.size, axis=0)
        j = idx % d
        pts[np.arange(idx.size), j] += np.where(idx < d, h[j], -h[j])
        vals[idx] = f(pts)
    return (vals[:d] - vals[d:]) / (2 * h)


def fd_hessian(f, phi, rel_step=1e-4, index=None, batch=None, progress=None):
    """Central-difference Hessian of the batched ``f`` on the coordinates ``index`` (all
    by default): ``1 + 2 m + 2 m (m - 1)`` evaluations for ``m`` coordinates, at most
    ``batch`` points (rows of ``phi``'s length) per call of ``f`` (all in one call by
    default); ``progress(done)`` is called with the number of coordinate pairs done (of
    ``m (m - 1) / 2``).  Returns the ``(m, m)`` matrix."""
    d = phi.size
    index = np.arange(d) if index is None else np.asarray(index, dtype=np.int64)
    m = index.size
    h = _steps(phi, rel_step)
    hi = h[index]
    E = np.zeros((m, d))
    E[np.arange(m), index] = hi
    batch = int(batch) if batch else 1 + 2 * m + 2 * m * max(m - 1, 0)
    batch = max(batch, 4)
    f0 = f(phi[None])[0]
    pm = _in_batches(f, np.concatenate([phi + E, phi - E]), batch)
    H = np.diag((pm[:m] - 2 * f0 + pm[m:]) / hi**2)
    rows, cols = np.triu_indices(m, 1)
    per_call = max(1, batch // 4)
    signs = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]], dtype=float)
    for lo in range(0, rows.size, per_call):
        r, c = rows[lo:lo + per_call], cols[lo:lo + per_call]
        pts = (phi[None, None] + signs[None, :, 0, None] * E[r][:, None]
               + signs[None, :, 1, None] * E[c][:, None])
        q = f(pts.reshape(-1, d)).reshape(-1, 4)
        H[r, c] = H[c, r] = (q[:, 0] - q[:, 1] - q[:, 2] + q[:, 3]) / (4 * hi[r] * hi[c])
        if progress is not None:
            progress(min(lo + per_call, rows.size))
    return H


def _available_memory_mb():
    """MemAvailable of /proc/meminfo (Linux), else physical memory, else None."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / _MB
    except (AttributeError, ValueError, OSError):
        return None


def _block_dims(space, hessian):
    if hessian == "block_diagonal":
        return [b.dim for b in space.blocks if b.dim > 0]
    return [space.size]


def laplace_memory_estimate(space, n_cases, hessian="full", exact_gradient=True, batch=1):
    """Estimated peak memory (bytes) of a Laplace score beyond the data and the model.

    The Hessian (``8 d^2`` bytes, or the sum over blocks for ``"block_diagonal"``) three
    times (the matrix, its symmetrised copy and the eigen-solver's work space); one
    evaluation's work space of about ``64 n`` doubles; without exact gradients,
    ``batch`` points of ``t`` per call, each with its unconstrained and constrained
    values twice and one double per case (``n = n_cases``)."""
    d = space.size
    hess = 3 * _F8 * sum(m * m for m in _block_dims(space, hessian))
    work = _F8 * 64 * max(1, n_cases) + 4 * _F8 * d
    if exact_gradient:
        return hess + work
    per_point = _F8 * (2 * d + 2 * space.flat_size + max(1, n_cases))
    return hess + work + batch * per_point


class _Target:
    """``t(phi)`` and its gradient for one model and data set, counting evaluations."""

    def __init__(self, model, data, gradient, batch):
        self.model, self.data, self.batch = model, data, int(batch)
        self.space = model.param_space
        self.n_values = 0  # points at which t alone was evaluated
        self.n_gradients = 0  # exact gradient evaluations (one E step each)
        self._last = None  # (phi, t, gradient) of the last gradient evaluation
        if gradient == "auto":
            gradient = ("exact" if has(model, "log_joint_gradient")
                        or has(model, "objective_and_gradient") else "fd")
        if gradient == "exact":
            require(model, "laplace with gradient='exact'",
                    "log_joint_gradient" if not has(model, "objective_and_gradient")
                    else "objective_and_gradient")
        self.kind = gradient

    def values(self, phis):
        phis = np.atleast_2d(phis)
        self.n_values += phis.shape[0]
        return _in_batches(lambda P: _t(self.model, self.data, P), phis, self.batch)

    def value_and_gradient(self, phi):
        """``(t(phi), grad t(phi))``: exact, or central differences of ``t``.  The last
        point's result is remembered (the Hessian's forward differences and the Newton
        step that follows both need the gradient at the same point)."""
        last = self._last
        if last is not None and np.array_equal(last[0], phi):
            return last[1], last[2].copy()
        t, g = self._value_and_gradient(phi)
        self._last = (np.array(phi, dtype=float), t, g)
        return t, g.copy()

    def _value_and_gradient(self, phi):
        if self.kind == "fd":
            t = float(self.values(phi[None])[0])
            return t, fd_gradient(self.values, phi, batch=self.batch)
        self.n_gradients += 1
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if has(self.model, "log_joint_gradient"):
                theta, logdet = self.space.from_unconstrained(phi[None])
                val, grads = self.model.log_joint_gradient(theta, self.data)
                t = float(val + logdet[0])
                g = self.space.gradient_to_unconstrained(theta, grads)[0]
            else:
                t, g = self.model.objective_and_gradient(phi, self.data)
        if not np.isfinite(t) or not np.all(np.isfinite(g)):
            return -np.inf, np.zeros_like(phi)
        return float(t), np.asarray(g, dtype=float)

    def hessian_blocks(self, phi, slices, rel_step, differences, verbose=0):
        """``[(slice, H_block)]``: the Hessian of ``t`` on each diagonal block."""
        out = []
        if self.kind == "fd":
            for sl in slices:
                m = sl.stop - sl.start
                progress = Progress(verbose, f"laplace: Hessian {sl.start}:{sl.stop}, pairs "
                                    "of second differences", m * (m - 1) // 2)
                H = fd_hessian(self.values, phi, rel_step, np.arange(sl.start, sl.stop),
                               self.batch, progress)
                out.append((sl, H))
            return out
        h = _steps(phi, rel_step)
        g0 = self.value_and_gradient(phi)[1] if differences == "forward" else None
        for sl in slices:
            m = sl.stop - sl.start
            H = np.empty((m, m))
            progress = Progress(verbose, f"laplace: Hessian {sl.start}:{sl.stop}, columns "
                                f"({differences} differences of exact gradients)", m)
            for c, j in enumerate(range(sl.start, sl.stop)):
                e = np.zeros_like(phi)
                e[j] = h[j]
                gp = self.value_and_gradient(phi + e)[1][sl]
                if differences == "forward":
                    H[:, c] = (gp - g0[sl]) / h[j]
                else:
                    H[:, c] = (gp - self.value_and_gradient(phi - e)[1][sl]) / (2 * h[j])
                progress(c + 1)
            out.append((sl, 0.5 * (H + H.T)))
        return out


def _newton_step(blocks, g):
    step = np.zeros_like(g)
    for sl, H in blocks:
        step[sl] = np.linalg.solve(-H, g[sl])
    return step


class LaplaceScore(Scorer):
    """Laplace approximation around the MAP in the unconstrained basis.

    Options
    -------
    n_init : int, default 3
        EM restarts of the model's ``fit_point`` for the initial point.
    gradient : {"auto", "exact", "fd"}, default "auto"
        ``"exact"``: the model's gradient (Fisher's identity from its exact E step, or a
        closed form); ``"fd"``: central differences of ``t``; ``"auto"``: exact when
        the model provides it.
    hessian : {"full", "block_diagonal"}, default "full"
        ``"block_diagonal"`` keeps only the diagonal blocks of the parameter blocks
        (memory ``sum_b d_b^2`` instead of ``d^2``; with ``gradient="fd"`` also far fewer
        evaluations), an approximation for very large models.  ``"fd"`` is accepted as
        an alias of ``"full"``.
    differences : {"forward", "central"}, default "forward"
        Differences of exact gradients for the Hessian: ``d + 1`` (forward, the
        gradient at the point reused by the Newton step) or ``2 d`` (central) gradient
        evaluations.  Forward differences of exact gradients with a small step have a
        truncation error linear in the step and a round-off of about ``eps |g| / h``;
        at ``rel_step=1e-6`` both are far below the error of evaluating the Hessian at
        the climb's end instead of the mode (forward and central differences agree far
        inside the default Newton tolerance on HMMs with hundreds of parameters).
    rel_step : float or None, default None
        Relative step of the differences (``rel_step * max(1, |phi_i|)``); None:
        1e-6 for forward differences of exact gradients, 1e-4 for central differences
        and for the second differences of ``t`` without exact gradients.
    climb_iter : int or None, default None
        At most this many L-BFGS iterations (one gradient each) from the model's MAP
        point before the Newton steps; ``None``: ``min(500, 2 d)``, at most the cost of
        one Hessian.
    newton_steps : int, default 5
        At most this many damped Newton steps after the climb, each followed by a new
        Hessian unless its Newton decrement ``g^T A^-1 g`` (twice the gain the quadratic
        model predicts) is below ``newton_tol``: the Hessian then stays the one of the
        previous iterate, whose difference from the Hessian at the mode is of the order
        of that last step (``newton_tol=0`` always recomputes it).
    newton_tol : float, default 1e-5
    max_memory_mb : float or None, default None
        Memory cap; ``None`` means 1024 MB, or the machine's available memory if that is
        less.  The estimated peak (:func:`laplace_memory_estimate`) is checked before
        anything is computed: a request that cannot fit raises a ``MemoryError`` naming
        this option; without exact gradients the batch of likelihood evaluations is
        sized to fit.

    Cost (``d`` free parameters, ``C_g`` one gradient = one exact E step, about one VB
    iteration; ``C_l`` one likelihood evaluation): the model's ``fit_point``, a
    quasi-Newton climb (L-BFGS, typically a few to a few dozen gradients from the MAP
    point), then per Newton step and for the final Hessian ``d + 1`` gradients
    (``2 d`` central): about ``d (1 + n_newton) C_g`` in all, memory ``O(d^2)``
    (``O(sum_b d_b^2)`` block-diagonal).  Without exact gradients each gradient costs
    ``2 d C_l`` and each Hessian ``2 d^2 C_l``, evaluated in batches bounded by the
    memory cap.  ``verbose >= 1`` prints progress lines for stages that last more than a
    few seconds.
    """

    name = "laplace"
    options = {"n_init": 3, "rel_step": None, "newton_steps": 5, "newton_tol": 1e-5,
               "hessian": "full", "gradient": "auto", "differences": "forward",
               "max_memory_mb": None, "climb_iter": None}

    def _check_options(self, opts):
        if opts["hessian"] not in ("full", "fd", "block_diagonal"):
            raise ValueError("hessian must be 'full' or 'block_diagonal', got "
                             f"{opts['hessian']!r}.")
        if opts["gradient"] not in ("auto", "exact", "fd"):
            raise ValueError(f"gradient must be 'auto', 'exact' or 'fd', got "
                             f"{opts['gradient']!r}.")
        if opts["rel_step"] is not None and not (np.isscalar(opts["rel_step"])
                                                 and float(opts["rel_step"]) > 0):
            raise ValueError(f"rel_step must be a positive number or None, got "
                             f"{opts['rel_step']!r}.")
        if opts["differences"] not in ("central", "forward"):
            raise ValueError(f"differences must be 'central' or 'forward', got "
                             f"{opts['differences']!r}.")
        cap = opts["max_memory_mb"]
        if cap is not None and not (np.isscalar(cap) and float(cap) > 0):
            raise ValueError(f"max_memory_mb must be a positive number or None, got {cap!r}.")

    def _memory_plan(self, model, data, opts, exact):
        """The batch size of likelihood evaluations under the memory cap, or a
        ``MemoryError`` naming ``max_memory_mb``."""
        space = model.param_space
        hessian = "block_diagonal" if opts["hessian"] == "block_diagonal" else "full"
        available = _available_memory_mb()
        cap = opts["max_memory_mb"]
        cap_mb = (float(cap) if cap is not None
                  else min(DEFAULT_MAX_MEMORY_MB, available or DEFAULT_MAX_MEMORY_MB))
        n = model.n_cases(data)
        need = laplace_memory_estimate(space, n, hessian, exact, batch=1) / _MB
        advice = ("" if hessian == "block_diagonal"
                  else " or hessian='block_diagonal' (memory sum_b d_b^2)")
        if need > cap_mb:
            raise MemoryError(
                f"laplace: the estimated memory {need:.0f} MB (d = {space.size} free "
                f"parameters, n = {n} cases) exceeds max_memory_mb={cap_mb:.0f}; pass a "
                f"larger max_memory_mb{advice}.")
        if available is not None and need > available:
            raise MemoryError(
                f"laplace: the estimated memory {need:.0f} MB exceeds the machine's "
                f"available memory ({available:.0f} MB); lower it with{advice or ' fewer parameters'}.")
        if exact:
            return 1, need
        per_point = (laplace_memory_estimate(space, n, hessian, False, batch=2)
                     - laplace_memory_estimate(space, n, hessian, False, batch=1)) / _MB
        batch = int(max(4, min(1 << 16, (cap_mb - need) // max(per_point, 1e-12) + 1)))
        return batch, need + (batch - 1) * per_point

    def _score(self, estimator, X, fit_params, opts):
        self._check_options(opts)
        model = resolve_model(estimator, self.name)
        require(model, self.name, "log_prior", "log_likelihood", "fit_point")
        log_alias = self._log_alias(model, opts)
        data = prepare_data(model, X, fit_params)
        space = model.param_space
        exact = opts["gradient"] == "exact" or (opts["gradient"] == "auto" and (
            has(model, "log_joint_gradient") or has(model, "objective_and_gradient")))
        batch, need_mb = self._memory_plan(model, data, opts, exact)
        target = _Target(model, data, opts["gradient"], batch)
        report = Progress(opts["verbose"], "laplace", 1)
        rng = spawn_generators(opts["random_state"], 1)[0]

        report.message(f"d = {space.size} free parameters, gradient {target.kind!r}, "
                       f"estimated memory {need_mb:.0f} MB; MAP point (EM) ...")
        theta0 = shared_fit_point(model, data, estimator, kind="map", rng=rng,
                                  n_init=opts["n_init"])
        phi = space.to_unconstrained(theta0)[0]
        t0 = float(target.values(phi[None])[0])
        if not np.isfinite(t0):
            raise ValueError("laplace: the objective is not finite at the initial point.")

        climb_iter = (min(500, 2 * space.size) if opts["climb_iter"] is None
                      else int(opts["climb_iter"]))
        report.message(f"quasi-Newton climb (at most {climb_iter} iterations) ...")

        def neg(p):
            t, g = target.value_and_gradient(p)
            return (np.inf, np.zeros_like(p)) if not np.isfinite(t) else (-t, -g)

        res = minimize(neg, phi, jac=True, method="L-BFGS-B",
                       options={"maxiter": climb_iter, "gtol": 1e-9, "ftol": 1e-13})
        if np.isfinite(res.fun) and res.fun <= -t0:
            phi = res.x

        if opts["hessian"] == "block_diagonal":
            slices = [space.slices[b.name] for b in space.blocks if b.dim > 0]
        else:
            slices = [slice(0, space.size)]

        rel_step = opts["rel_step"]
        if rel_step is None:
            forward = target.kind != "fd" and opts["differences"] == "forward"
            rel_step = _FORWARD_REL_STEP if forward else _CENTRAL_REL_STEP

        def hessian(p):
            return target.hessian_blocks(p, slices, rel_step, opts["differences"],
                                         opts["verbose"])

        blocks = hessian(phi)
        n_newton, decrements = 0, []
        for _ in range(int(opts["newton_steps"])):
            t, g = target.value_and_gradient(phi)
            try:
                step = _newton_step(blocks, g)
            except np.linalg.LinAlgError:
                break
            decrement = float(g @ step)  # twice the gain the quadratic model predicts
            decrements.append(decrement)
            if not np.isfinite(decrement) or decrement <= 0:
                break
            # backtracking: far from the mode (flat, strongly non-quadratic directions
            # such as a nearly empty state's rows) the full step can overshoot
            scale, moved = 1.0, False
            for _ in range(30):
                cand = phi + scale * step
                gain = float(target.values(cand[None])[0]) - t
                if gain >= 0.25 * scale * decrement or (
                        decrement < opts["newton_tol"] and gain >= -1e-12 * abs(t)):
                    phi, moved = cand, True
                    break
                scale *= 0.5
            if not moved:
                break
            n_newton += 1
            if decrement < opts["newton_tol"] and scale == 1.0:
                # the step left is negligible: the Hessian here differs from the one
                # at the previous iterate by O(|step|)
                break
            blocks = hessian(phi)
        ld, ev_all, degenerate = 0.0, [], False
        for _, H in blocks:
            A = -0.5 * (H + H.T)
            ev = np.linalg.eigvalsh(A)
            ev_all.append(ev)
            if ev[0] <= 1e-10 * max(ev[-1], 0.0) or ev[0] <= 0:
                degenerate = True
            else:
                ld += float(np.sum(np.log(ev)))
        ev = np.sort(np.concatenate(ev_all)) if ev_all else np.zeros(0)
        d = phi.size
        t_hat = float(target.values(phi[None])[0])
        diag = {"t_hat": t_hat, "phi_hat": phi, "eigenvalues": ev, "d": d,
                "degenerate": degenerate, "gradient": target.kind,
                "hessian": "block_diagonal" if len(slices) > 1 or (
                    opts["hessian"] == "block_diagonal") else "full",
                "n_gradient_evaluations": target.n_gradients,
                "n_likelihood_evaluations": target.n_values, "newton_steps": n_newton,
                "newton_decrements": decrements,
                "memory_estimate_mb": float(need_mb)}
        value = (float("nan") if degenerate
                 else t_hat + 0.5 * d * LOG_2PI - 0.5 * ld)
        report.message(f"done: {target.n_gradients} gradients, {target.n_values} "
                       f"likelihood evaluations, {n_newton} Newton steps")
        return ScoreResult(self.name, value, "approx", log_alias_correction=log_alias,
                           diagnostics=diag)
