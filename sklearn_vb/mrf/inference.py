"""Inference for pairwise MRFs: exact enumeration, belief propagation with the Bethe free
energy and linear response, and the Newton MAP fit shared by the estimator and the scorers.

An *engine* maps a parameter vector to ``(ln Z, kappa = E f, C = Cov f)``:

* :class:`ExactEngine` enumerates the joint states (``prod K_i`` rows);
* :class:`BPEngine` runs damped loopy BP in the log domain (undamped flooding on forests,
  where it is exact) and returns the Bethe log partition function ``ln Z_B``, the belief
  moments ``kappa_B = d ln Z_B / d lambda`` and the linear-response covariance
  ``C_LR = d kappa_B / d lambda = J^-1`` (Welling and Teh 2004), ``J`` the Hessian of the
  negative Bethe entropy in the mean parameters.  ``ln Z_B`` is a smooth function of the
  parameters at a stable fixed point whose gradient is ``kappa_B`` and whose Hessian is
  ``C_LR``, so a Laplace approximation built on it is self-consistent.

:func:`newton_map` maximises ``t(lambda) = lambda^T S - N ln Z(lambda) + ln p(lambda)``
(Gaussian prior of precision ``P``) by damped Newton steps with ``A = N C + P``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.linalg import cho_solve
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from ._bp_kernels import bp_beliefs, bp_run, gibbs_sweeps, lr_propagation
from ._exact_kernels import (assignment_cells, covariance_block, energy_table, exp_table,
                             log_partitions, marginal_table, transform_plan)
from .._core.warn import warn_at_caller

__all__ = ["BPConvergenceWarning", "ExactEngine", "BPEngine", "Moments", "newton_map",
           "grouped_prior_precision", "lbfgs_minimize", "log_prior", "lr_logdet",
           "sample_states"]

LOG_2PI = float(np.log(2 * np.pi))
#: above this many features the BP engine keeps J sparse and never forms C_LR
DENSE_LR_MAX_FEATURES = 500


class BPConvergenceWarning(ConvergenceWarning):
    """Loopy belief propagation did not reach its tolerance (also after the retry with
    stronger damping); the Bethe quantities are then unreliable."""


@dataclass
class Moments:
    log_partition: float
    kappa: np.ndarray
    cov: np.ndarray | None = None  # dense feature covariance (exact or LR)
    J: sp.spmatrix | None = None  # sparse inverse covariance (BP only)
    info: dict = field(default_factory=dict)


def grouped_prior_precision(prior_variance, n_features, first_group, names):
    """Per-feature prior precision of a log-linear model from a scalar, an array of
    length ``n_features``, or a dict ``{names[0]: v, names[1]: v}`` giving one variance
    to the features where ``first_group`` (a boolean mask) is True and one to the others
    (a missing name means variance 1)."""
    if isinstance(prior_variance, dict):
        unknown = set(prior_variance) - set(names)
        if unknown:
            raise ValueError(f"prior_variance: unknown keys {sorted(unknown)}; use "
                             f"{names[0]!r} and {names[1]!r}.")
        var = np.where(first_group, float(prior_variance.get(names[0], 1.0)),
                       float(prior_variance.get(names[1], 1.0)))
    else:
        var = np.asarray(prior_variance, dtype=float)
        if var.ndim == 0:
            var = np.full(n_features, float(var))
        elif var.shape != (n_features,):
            raise ValueError(f"prior_variance must be a number, a dict or an array of length "
                             f"{n_features} (the number of features), got shape {var.shape}.")
    if not np.all(np.isfinite(var)) or np.any(var <= 0):
        raise ValueError("prior_variance must be positive and finite.")
    return 1.0 / var


def sample_states(layout, coef, n_samples, rng, method="auto", max_exact_states=2**16,
                  n_burnin=1000, thin=10):
    """Joint state codes ``(n_samples, n_nodes)`` of the MRF with canonical parameters
    ``coef``: exact by enumeration (``method="exact"``, or ``"auto"`` when there are at
    most ``max_exact_states`` joint states), else by single-site Gibbs sampling
    (``"gibbs"``, approximate: ``n_burnin`` sweeps, then one draw every ``thin`` sweeps).
    ``rng`` is a ``RandomState``."""
    small = layout.n_states_total <= max_exact_states
    if method == "auto":
        method = "exact" if small else "gibbs"
    if method == "exact":
        if not small:
            raise ValueError("method='exact' needs at most max_exact_states joint states.")
        gen = np.random.default_rng(rng.randint(2**31 - 1))
        return ExactEngine(layout).sample(coef, n_samples, gen)
    if method != "gibbs":
        raise ValueError(f"method must be 'auto', 'exact' or 'gibbs', got {method!r}.")
    node, edge = layout.potentials(coef)
    x0 = np.array([rng.randint(k) for k in layout.n_states], dtype=np.int64)
    return gibbs_sweeps(node, edge, layout.n_states, layout.nbr_ptr, layout.nbr_node,
                        layout.nbr_edge, x0, int(n_samples), int(n_burnin), int(thin),
                        int(rng.randint(2**31 - 1)))


def log_prior(coef, precision):
    """``ln N(coef; 0, diag(1/precision))`` with its normaliser; batched over rows."""
    coef = np.asarray(coef, dtype=float)
    return (0.5 * np.sum(np.log(precision)) - 0.5 * precision.size * LOG_2PI
            - 0.5 * np.sum(precision * coef**2, axis=-1))


class ExactEngine:
    """Exact ``ln Z``, moments and covariance by enumeration of the joint states.

    The energies and the marginals of every partial assignment come from zeta
    transforms over the table of joint states (:mod:`sklearn_vb.mrf._exact_kernels`),
    ``O(M p)`` for ``M`` states instead of the ``O(M F^2)`` of a feature matrix; the
    covariance of any two features, also of edges the layout lacks
    (:meth:`assignment_moments`), is read off that table."""

    name = "exact"

    def __init__(self, layout):
        self.layout = layout
        K = np.ascontiguousarray(layout.n_states, dtype=np.int64)
        self._shape = K
        strides, plan, up, down = transform_plan(K)
        self._strides = strides
        self._plan = (K, strides) + plan
        self._up, self._down = up, down
        self._nodes, self._assigned = layout.feature_assignments()
        self._cells = assignment_cells(self._nodes, self._assigned, strides)
        self._Phi = None
        self._last = None  # (coef, ln Z, marginal table, kappa) of the last call

    @property
    def states(self):
        """``(M, p)`` every joint state (the order of the probabilities)."""
        return self.layout.all_states()

    @property
    def Phi(self):
        """``(M, F)`` features of every joint state (built on first use)."""
        if self._Phi is None:
            self._Phi = self.layout.feature_matrix(self.states)
        return self._Phi

    def log_partition(self, coefs):
        """``ln Z`` for a batch ``(C, F)`` of parameter vectors."""
        coefs = np.ascontiguousarray(np.atleast_2d(coefs), dtype=float)
        return log_partitions(coefs, self._cells, self._shape, self._strides, self._plan[2:],
                              self._up)

    def _table(self, coef):
        """``(coef, ln Z, m, kappa)`` with the normalised marginal table ``m``; the
        energies are transformed in place, no copy of an ``M``-table is made."""
        coef = np.asarray(coef, dtype=float)
        last = self._last
        if last is not None and np.array_equal(last[0], coef):
            return last
        m = np.empty(self.layout.n_states_total)
        energy_table(np.ascontiguousarray(coef), self._cells, *self._plan, self._up, m)
        mx = exp_table(m, m)
        marginal_table(m, *self._plan, self._down)
        total = m[0]
        m *= 1.0 / total
        self._last = (coef.copy(), float(mx + np.log(total)), m, m[self._cells])
        return self._last

    def probabilities(self, coef):
        """Probabilities of the joint states (the order of :attr:`states`) and ``ln Z``."""
        coef = np.ascontiguousarray(coef, dtype=float)
        pi = np.empty(self.layout.n_states_total)
        energy_table(coef, self._cells, *self._plan, self._up, pi)
        mx = exp_table(pi, pi)
        total = float(np.sum(pi))
        pi /= total
        return pi, float(mx + np.log(total))

    def moments(self, coef, covariance=True):
        # a Newton step evaluates its accepted point twice (line search, then with the
        # covariance): the tables of the last point are kept
        _, lz, m, kappa = self._table(coef)
        cov = None
        if covariance:
            F = kappa.size
            cov = np.empty((F, F))
            covariance_block(m, self._strides, self._nodes, self._assigned, kappa, self._nodes,
                             self._assigned, kappa, cov)
        return Moments(lz, kappa.copy(), cov, info={"inference": "exact"})

    def assignment_moments(self, coef, nodes, states):
        """Means of the indicators of the partial assignments ``(nodes[r], states[r])``
        (rows of two entries, node -1 where unused; states >= 1), their covariance with
        the layout's features ``(n, F)`` and among themselves ``(n, n)``, at ``coef``."""
        _, _, m, kappa = self._table(coef)
        nodes = np.ascontiguousarray(nodes, dtype=np.int64)
        states = np.ascontiguousarray(states, dtype=np.int64)
        mean = m[assignment_cells(nodes, states, self._strides)]
        cross = np.empty((nodes.shape[0], kappa.size))
        covariance_block(m, self._strides, nodes, states, mean, self._nodes, self._assigned, kappa,
                         cross)
        own = np.empty((nodes.shape[0], nodes.shape[0]))
        covariance_block(m, self._strides, nodes, states, mean, nodes, states, mean, own)
        return mean, cross, own

    def sample(self, coef, n_samples, rng):
        pi, _ = self.probabilities(coef)
        idx = rng.choice(pi.size, size=n_samples, p=pi / pi.sum())
        return np.stack(np.unravel_index(idx, tuple(self._shape)), axis=1).astype(np.int64)


@dataclass
class BPResult:
    log_partition: float
    kappa: np.ndarray
    node_logb: np.ndarray
    edge_logb: np.ndarray
    messages: np.ndarray
    converged: bool
    n_iter: int
    residual: float
    retried: bool


class BPEngine:
    """Loopy BP (damped parallel schedule in the log domain), the Bethe log partition
    function and linear response.

    ``schedule="auto"`` uses undamped flooding on forests (exact) and damping
    ``damping`` elsewhere.  Messages are kept between calls (warm starts along an
    optimisation path).  When BP misses ``tol`` within ``max_iter`` sweeps it is run again
    from its last messages with damping 0.9 and five times the sweeps; if that also fails
    a :class:`BPConvergenceWarning` is issued and the result says ``converged=False``.
    """

    name = "bp"

    def __init__(self, layout, damping=0.5, tol=1e-10, max_iter=2000, schedule="auto",
                 lr="matrix", warn=True):
        self.layout = layout
        self.tree = layout.forest and schedule in ("auto", "tree")
        self.damping = 0.0 if self.tree else float(damping)
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.lr = lr
        self.warn = warn
        self.messages = None
        self.n_runs = 0
        self.n_unconverged = 0
        self.n_retries = 0
        self.last = None

    def _fresh_messages(self):
        L = self.layout
        msg = np.zeros((2 * L.n_edges, L.Kmax))
        for d in range(2 * L.n_edges):
            t = L.edges[d >> 1, 1 - (d & 1)]
            k = L.n_states[t]
            msg[d, :k] = -np.log(k)
            msg[d, k:] = 0.0
        return msg

    def run(self, coef, messages=None):
        L = self.layout
        node, edge = L.potentials(coef)
        if messages is None:
            messages = self.messages if self.messages is not None else self._fresh_messages()
        msg = np.ascontiguousarray(messages, dtype=float).copy()
        args = (node, edge, L.n_states, L.edges, L.in_ptr, L.in_dir, msg)
        n_iter, res = bp_run(*args, self.damping, self.tol, self.max_iter)
        retried = False
        if not res < self.tol and not self.tree:
            retried = True
            self.n_retries += 1
            n2, res = bp_run(*args, 0.9, self.tol, 5 * self.max_iter)
            n_iter += n2
        converged = bool(res < self.tol)
        self.n_runs += 1
        if not converged:
            self.n_unconverged += 1
            if self.warn:
                warn_at_caller(
                    f"belief propagation did not converge: residual {res:.3g} > bp_tol="
                    f"{self.tol:g} after {n_iter} sweeps (damping {self.damping:g}, then 0.9); "
                    "the Bethe quantities are unreliable (strong or frustrated couplings). "
                    "Use exact inference when the graph is small, or increase bp_max_iter.",
                    BPConvergenceWarning)
        node_logb = np.empty((L.n_nodes, L.Kmax))
        edge_logb = np.empty((L.n_edges, L.Kmax, L.Kmax))
        lz = bp_beliefs(node, edge, L.n_states, L.edges, L.in_ptr, L.in_dir, msg, node_logb,
                        edge_logb)
        kappa = L.moments_from_beliefs(node_logb, edge_logb)
        self.messages = msg
        self.last = BPResult(float(lz), kappa, node_logb, edge_logb, msg, converged, int(n_iter),
                             float(res), retried)
        return self.last

    def log_partition(self, coefs):
        return np.array([self.run(c).log_partition for c in np.atleast_2d(coefs)])

    def covariance_propagation(self, coef, columns=None, result=None):
        """``C_LR[:, columns]`` by the propagation form (all columns by default), at the
        fixed point ``result`` of ``coef`` (run here when not given)."""
        L = self.layout
        r = result if result is not None else self.run(coef)
        node, edge = L.potentials(coef)
        cols = np.arange(L.n_features) if columns is None else np.asarray(columns, dtype=np.int64)
        out, _, _ = lr_propagation(node, edge, L.n_states, L.edges, L.in_ptr, L.in_dir,
                                   r.messages, L.node_feat, L.edge_feat,
                                   np.ascontiguousarray(cols), L.n_features, self.damping,
                                   self.tol, 5 * self.max_iter)
        return out

    def moments(self, coef, covariance=True):
        r = self.run(coef)
        info = {"inference": "bp", "bp_converged": r.converged, "bp_iterations": r.n_iter,
                "bp_residual": r.residual, "bp_retried": r.retried, "tree": self.tree}
        m = Moments(r.log_partition, r.kappa, info=info)
        if covariance:
            J = self.layout.bethe_hessian(r.node_logb, r.edge_logb)
            if self.layout.n_features > DENSE_LR_MAX_FEATURES:
                m.J = J
            elif self.lr == "propagation":
                C = self.covariance_propagation(coef, result=r)
                m.cov = 0.5 * (C + C.T)
            else:
                try:
                    C = np.linalg.inv(J.toarray())
                except np.linalg.LinAlgError:
                    C = np.full((J.shape[0],) * 2, np.nan)
                m.cov = 0.5 * (C + C.T)
                m.J = J
        return m


def lr_logdet(J, N, precision):
    """``ln det(N J^-1 + P) = -ln det J + ln det P + ln det(J + N P^-1)`` by two sparse LU
    factorisations (never forming ``J^-1``); ``nan`` when ``J`` is not positive definite
    (a sign of the LU diagonal is negative)."""
    def logdet_spd(M):
        lu = spla.splu(sp.csc_matrix(M))
        d = lu.U.diagonal()
        if np.any(d <= 0):
            return np.nan
        return float(np.sum(np.log(d)))
    ld_J = logdet_spd(J)
    ld_B = logdet_spd(J + sp.diags(N / precision))
    return -ld_J + float(np.sum(np.log(precision))) + ld_B


def _solve(m, N, precision, g):
    """``A^-1 g`` and ``ln det A`` for ``A = N C + P`` (dense C), or by the sparse form
    ``(N I + P^1/2 J P^1/2) u = P^1/2 J g``, ``step = P^-1/2 u`` (sparse J only)."""
    if m.cov is not None:
        A = N * m.cov + np.diag(precision)
        L = np.linalg.cholesky(A)  # LinAlgError when A is not positive definite
        step = cho_solve((L, True), g, check_finite=False)
        return step, 2.0 * float(np.sum(np.log(np.diag(L))))
    sq = np.sqrt(precision)
    Ps = sp.diags(sq)
    M = sp.csc_matrix(N * sp.identity(len(g)) + Ps @ m.J @ Ps)
    u = spla.spsolve(M, sq * (m.J @ g))
    ld = lr_logdet(m.J, N, precision)
    if not np.isfinite(ld):
        raise np.linalg.LinAlgError("J is not positive definite")
    return u / sq, ld


@dataclass
class NewtonResult:
    coef: np.ndarray
    objective: float
    moments: Moments
    n_iter: int
    converged: bool
    n_fallbacks: int
    logdet_A: float
    decrement: float
    objectives: list


def lbfgs_minimize(fun, x0, **options):
    """``scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", options=options)``
    with BLAS on one thread: the small dense products of L-BFGS-B and of the objectives
    here run several times slower when a threaded BLAS competes for loaded cores."""
    with threadpool_limits(1, user_api="blas"):
        return minimize(fun, x0, jac=True, method="L-BFGS-B", options=options)


def newton_map(engine, S, N, precision, coef0, max_iter=100, tol=1e-10, verbose=0):
    """Maximise ``t = coef^T S - N ln Z(coef) + ln p(coef)`` from ``coef0``.

    Damped Newton steps ``A^-1 grad t`` with Armijo backtracking; stops when the Newton
    decrement ``grad^T A^-1 grad / 2`` is below ``tol`` nats.  When ``A`` has no Cholesky
    factor (a linear-response covariance at an unstable BP fixed point) the step is an
    L-BFGS run on ``t`` instead (counted in ``n_fallbacks``).  ``t`` never decreases along
    the accepted steps (``objectives``).
    """
    S = np.asarray(S, dtype=float)
    P = np.asarray(precision, dtype=float)
    coef = np.asarray(coef0, dtype=float).copy()

    def t_of(c, lz):
        return float(c @ S - N * lz + log_prior(c, P))

    m = engine.moments(coef)
    t = t_of(coef, m.log_partition)
    history = [t]
    n_fallbacks, converged, it, dec, ld = 0, False, 0, np.inf, np.nan
    while it < max_iter:
        g = S - N * m.kappa - P * coef
        try:
            step, ld = _solve(m, N, P, g)
        except (np.linalg.LinAlgError, ValueError, RuntimeError):
            step = None
        if step is None or not np.all(np.isfinite(step)):
            n_fallbacks += 1

            def neg(c):
                mm = engine.moments(c, covariance=False)
                return (-t_of(c, mm.log_partition), -(S - N * mm.kappa - P * c))

            res = lbfgs_minimize(neg, coef, maxiter=200, gtol=1e-9, ftol=1e-15)
            it += 1
            if -res.fun >= t:
                coef = res.x
            m = engine.moments(coef)
            t = t_of(coef, m.log_partition)
            history.append(t)
            ld = np.nan
            continue
        dec = 0.5 * float(g @ step)
        if verbose:
            print(f"[mrf] Newton {it}: t = {t:.10g}, decrement {dec:.3g}", flush=True)
        if dec < tol:
            # one last full step: Newton converges quadratically, so it takes the point
            # from ~sqrt(tol) to rounding accuracy (the Laplace log-determinant depends
            # on the point to first order)
            converged = True
            cand = coef + step
            mc = engine.moments(cand)
            tc = t_of(cand, mc.log_partition)
            if tc >= t - 1e-12 * max(1.0, abs(t)):
                coef, m, t = cand, mc, tc
                g = S - N * m.kappa - P * coef
                try:
                    ld = _solve(m, N, P, g)[1]
                except (np.linalg.LinAlgError, ValueError, RuntimeError):
                    ld = np.nan
            break
        s = 1.0
        accepted = False
        for _ in range(40):
            cand = coef + s * step
            mc = engine.moments(cand, covariance=False)
            tc = t_of(cand, mc.log_partition)
            if tc >= t + 1e-4 * s * 2 * dec or (dec < 1e-6 and tc >= t - 1e-12 * abs(t)):
                accepted = True
                break
            s *= 0.5
        it += 1
        if not accepted:
            break
        coef = cand
        m = engine.moments(coef)
        t = t_of(coef, m.log_partition)
        history.append(t)
    if not converged or not np.isfinite(ld):
        g = S - N * m.kappa - P * coef
        try:
            step, ld = _solve(m, N, P, g)
            dec = 0.5 * float(g @ step)
            converged = converged or dec < tol
        except (np.linalg.LinAlgError, ValueError, RuntimeError):
            ld = np.nan
    return NewtonResult(coef, t, m, it, converged, n_fallbacks, ld, dec, history)
