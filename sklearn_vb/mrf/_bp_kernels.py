"""Belief propagation on pairwise discrete Markov random fields (log domain).

Graph arrays shared by every kernel (built by :class:`sklearn_vb.mrf.layout.MRFLayout`):

* ``K`` (p,): states per node; ``node_pot`` (p, Kmax) and ``edge_pot`` (E, Kmax, Kmax)
  the log potentials, ``edge_pot[e, x_a, x_b]`` for edge ``e = (a, b)``, ``a < b``;
* directed edge ``d = 2 e`` is ``a -> b`` and ``d = 2 e + 1`` is ``b -> a``, so the
  reverse of ``d`` is ``d ^ 1``; ``in_ptr`` (p + 1,) / ``in_dir`` (2E,) list the directed
  edges that end at each node (CSR);
* messages ``msg`` (2E, Kmax): ``msg[d, x]`` is the log message into the target node of
  ``d``, normalised to log-sum-exp 0 over the target's states.

Parallel ("flooding") schedule: every message of a sweep is computed from the messages of
the previous sweep, then damped in the log domain (``m <- (1 - a) m_new + a m_old``) and
renormalised.  On a forest the undamped flooding schedule is exact after as many sweeps
as the longest path has edges (Pearl 1988); on loopy graphs its fixed points are the
stationary points of the Bethe free energy (Yedidia, Freeman and Weiss 2001).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["bp_run", "bp_beliefs", "lr_propagation", "gibbs_sweeps"]


@njit(cache=True)
def _node_totals(node_pot, K, in_ptr, in_dir, msg, tot):
    p = K.shape[0]
    for i in range(p):
        for x in range(K[i]):
            tot[i, x] = node_pot[i, x]
        for t in range(in_ptr[i], in_ptr[i + 1]):
            d = in_dir[t]
            for x in range(K[i]):
                tot[i, x] += msg[d, x]


@njit(cache=True)
def _endpoints(edges, d):
    e = d >> 1
    if d & 1 == 0:
        return e, edges[e, 0], edges[e, 1]
    return e, edges[e, 1], edges[e, 0]


@njit(cache=True)
def _pot(edge_pot, e, d, xs, xt):
    """Edge log potential of directed edge ``d`` for source state ``xs`` and target ``xt``."""
    if d & 1 == 0:
        return edge_pot[e, xs, xt]
    return edge_pot[e, xt, xs]


@njit(cache=True)
def bp_run(node_pot, edge_pot, K, edges, in_ptr, in_dir, msg, damping, tol, max_iter):
    """Damped parallel BP from the messages in ``msg`` (updated in place).

    Returns ``(n_sweeps, residual)``, the residual being the largest change
    ``max |m_new - m_old|`` of the undamped update in the last sweep; converged when it is
    below ``tol``.
    """
    p = K.shape[0]
    n_dir = msg.shape[0]
    Kmax = msg.shape[1]
    tot = np.zeros((p, Kmax))
    new = np.zeros((n_dir, Kmax))
    buf = np.empty(Kmax)
    residual = np.inf
    it = 0
    while it < max_iter:
        it += 1
        _node_totals(node_pot, K, in_ptr, in_dir, msg, tot)
        residual = 0.0
        for d in range(n_dir):
            e, s, t = _endpoints(edges, d)
            r = d ^ 1
            Ks, Kt = K[s], K[t]
            for xt in range(Kt):
                mx = -np.inf
                for xs in range(Ks):
                    v = tot[s, xs] - msg[r, xs] + _pot(edge_pot, e, d, xs, xt)
                    buf[xs] = v
                    if v > mx:
                        mx = v
                acc = 0.0
                for xs in range(Ks):
                    acc += np.exp(buf[xs] - mx)
                new[d, xt] = mx + np.log(acc)
            # normalise to log-sum-exp 0
            mx = -np.inf
            for xt in range(Kt):
                if new[d, xt] > mx:
                    mx = new[d, xt]
            acc = 0.0
            for xt in range(Kt):
                acc += np.exp(new[d, xt] - mx)
            c = mx + np.log(acc)
            for xt in range(Kt):
                new[d, xt] -= c
                diff = abs(new[d, xt] - msg[d, xt])
                if diff > residual:
                    residual = diff
        if damping > 0.0:
            for d in range(n_dir):
                t = _endpoints(edges, d)[2]
                Kt = K[t]
                mx = -np.inf
                for xt in range(Kt):
                    v = (1.0 - damping) * new[d, xt] + damping * msg[d, xt]
                    new[d, xt] = v
                    if v > mx:
                        mx = v
                acc = 0.0
                for xt in range(Kt):
                    acc += np.exp(new[d, xt] - mx)
                c = mx + np.log(acc)
                for xt in range(Kt):
                    new[d, xt] -= c
        for d in range(n_dir):
            for x in range(Kmax):
                msg[d, x] = new[d, x]
        if residual < tol:
            break
    return it, residual


@njit(cache=True)
def bp_beliefs(node_pot, edge_pot, K, edges, in_ptr, in_dir, msg, node_logb, edge_logb):
    """Log node and edge beliefs from the messages (written into ``node_logb``,
    ``edge_logb``; entries beyond a node's states are ``-inf``) and the Bethe log partition
    function in its message form ``ln Z_B = sum_edges ln Z_ij - sum_i (z_i - 1) ln Z_i``
    (``Z_i``, ``Z_ij`` the normalisers of the unnormalised beliefs)."""
    p = K.shape[0]
    E = edges.shape[0]
    Kmax = node_pot.shape[1]
    tot = np.zeros((p, Kmax))
    _node_totals(node_pot, K, in_ptr, in_dir, msg, tot)
    log_z = 0.0
    for i in range(p):
        mx = -np.inf
        for x in range(K[i]):
            if tot[i, x] > mx:
                mx = tot[i, x]
        acc = 0.0
        for x in range(K[i]):
            acc += np.exp(tot[i, x] - mx)
        lz = mx + np.log(acc)
        for x in range(Kmax):
            node_logb[i, x] = tot[i, x] - lz if x < K[i] else -np.inf
        z = in_ptr[i + 1] - in_ptr[i]
        log_z -= (z - 1) * lz
    for e in range(E):
        a, b = edges[e, 0], edges[e, 1]
        mx = -np.inf
        for xa in range(Kmax):
            for xb in range(Kmax):
                edge_logb[e, xa, xb] = -np.inf
        for xa in range(K[a]):
            ca = tot[a, xa] - msg[2 * e + 1, xa]
            for xb in range(K[b]):
                v = ca + tot[b, xb] - msg[2 * e, xb] + edge_pot[e, xa, xb]
                edge_logb[e, xa, xb] = v
                if v > mx:
                    mx = v
        acc = 0.0
        for xa in range(K[a]):
            for xb in range(K[b]):
                acc += np.exp(edge_logb[e, xa, xb] - mx)
        lz = mx + np.log(acc)
        for xa in range(K[a]):
            for xb in range(K[b]):
                edge_logb[e, xa, xb] -= lz
        log_z += lz
    return log_z


@njit(cache=True)
def _total_derivatives(K, in_ptr, in_dir, node_feat, cols, dm, dtot):
    """``dtot[i, x, c]``: derivative of node i's log total in state x with respect to
    feature ``cols[c]`` (its own indicator plus the incoming message derivatives ``dm``)."""
    for i in range(K.shape[0]):
        for x in range(K[i]):
            for c in range(cols.shape[0]):
                dtot[i, x, c] = 1.0 if node_feat[i, x] == cols[c] else 0.0
        for q in range(in_ptr[i], in_ptr[i + 1]):
            d = in_dir[q]
            for x in range(K[i]):
                for c in range(cols.shape[0]):
                    dtot[i, x, c] += dm[d, x, c]


@njit(cache=True)
def lr_propagation(node_pot, edge_pot, K, edges, in_ptr, in_dir, msg, node_feat, edge_feat,
                   cols, n_features, damping, tol, max_iter):
    """Linear response by propagation: the derivatives of the BP beliefs' mean parameters
    with respect to the parameters ``cols``, ``C_LR[:, cols]`` (n_features, len(cols)).

    Differentiates the log-message update at the fixed point ``msg``:
    ``dm_{s->t}(x_t) = E_{r(x_s | x_t)}[dphi_s + dpsi_st + sum_{k in N(s)\\t} dm_{k->s}]``
    centred by the message's own normalisation, ``r`` the conditional of the edge belief;
    iterated (with BP's damping) to its fixed point.  Returns ``(C_cols, n_sweeps,
    residual)``."""
    p = K.shape[0]
    E = edges.shape[0]
    n_dir = msg.shape[0]
    Kmax = msg.shape[1]
    nc = cols.shape[0]
    tot = np.zeros((p, Kmax))
    _node_totals(node_pot, K, in_ptr, in_dir, msg, tot)
    # r[d, xt, xs]: conditional of the source state given the target state
    r = np.zeros((n_dir, Kmax, Kmax))
    for d in range(n_dir):
        e, s, t = _endpoints(edges, d)
        rv = d ^ 1
        for xt in range(K[t]):
            mx = -np.inf
            for xs in range(K[s]):
                v = tot[s, xs] - msg[rv, xs] + _pot(edge_pot, e, d, xs, xt)
                r[d, xt, xs] = v
                if v > mx:
                    mx = v
            acc = 0.0
            for xs in range(K[s]):
                r[d, xt, xs] = np.exp(r[d, xt, xs] - mx)
                acc += r[d, xt, xs]
            for xs in range(K[s]):
                r[d, xt, xs] /= acc
    dm = np.zeros((n_dir, Kmax, nc))
    new = np.zeros((n_dir, Kmax, nc))
    dtot = np.zeros((p, Kmax, nc))
    it = 0
    residual = np.inf
    while it < max_iter:
        it += 1
        _total_derivatives(K, in_ptr, in_dir, node_feat, cols, dm, dtot)
        residual = 0.0
        for d in range(n_dir):
            e, s, t = _endpoints(edges, d)
            rv = d ^ 1
            for c in range(nc):
                mean = 0.0
                for xt in range(K[t]):
                    acc = 0.0
                    for xs in range(K[s]):
                        if d & 1 == 0:
                            f = edge_feat[e, xs, xt]
                        else:
                            f = edge_feat[e, xt, xs]
                        dp = 1.0 if f == cols[c] else 0.0
                        acc += r[d, xt, xs] * (dtot[s, xs, c] - dm[rv, xs, c] + dp)
                    new[d, xt, c] = acc
                    mean += np.exp(msg[d, xt]) * acc
                for xt in range(K[t]):
                    v = new[d, xt, c] - mean
                    diff = abs(v - dm[d, xt, c])
                    if diff > residual:
                        residual = diff
                    new[d, xt, c] = (1.0 - damping) * v + damping * dm[d, xt, c]
        for d in range(n_dir):
            for x in range(Kmax):
                for c in range(nc):
                    dm[d, x, c] = new[d, x, c]
        if residual < tol:
            break
    # derivatives of the belief moments
    _total_derivatives(K, in_ptr, in_dir, node_feat, cols, dm, dtot)
    out = np.zeros((n_features, nc))
    node_logb = np.empty((p, Kmax))
    edge_logb = np.empty((E, Kmax, Kmax))
    bp_beliefs(node_pot, edge_pot, K, edges, in_ptr, in_dir, msg, node_logb, edge_logb)
    for i in range(p):
        for c in range(nc):
            mean = 0.0
            for x in range(K[i]):
                mean += np.exp(node_logb[i, x]) * dtot[i, x, c]
            for x in range(1, K[i]):
                out[node_feat[i, x], c] = np.exp(node_logb[i, x]) * (dtot[i, x, c] - mean)
    for e in range(E):
        a, b = edges[e, 0], edges[e, 1]
        for c in range(nc):
            mean = 0.0
            for xa in range(K[a]):
                for xb in range(K[b]):
                    dv = ((dtot[a, xa, c] - dm[2 * e + 1, xa, c])
                          + (dtot[b, xb, c] - dm[2 * e, xb, c])
                          + (1.0 if edge_feat[e, xa, xb] == cols[c] else 0.0))
                    mean += np.exp(edge_logb[e, xa, xb]) * dv
            for xa in range(1, K[a]):
                for xb in range(1, K[b]):
                    dv = ((dtot[a, xa, c] - dm[2 * e + 1, xa, c])
                          + (dtot[b, xb, c] - dm[2 * e, xb, c])
                          + (1.0 if edge_feat[e, xa, xb] == cols[c] else 0.0))
                    out[edge_feat[e, xa, xb], c] = np.exp(edge_logb[e, xa, xb]) * (dv - mean)
    return out, it, residual


@njit(cache=True)
def gibbs_sweeps(node_pot, edge_pot, K, nbr_ptr, nbr_node, nbr_edge, x, n_samples, n_burnin,
                 thin, seed):
    """Single-site Gibbs sampler (systematic scan); ``x`` (p,) int64 is the start state.

    ``nbr_ptr``/``nbr_node``/``nbr_edge``: CSR neighbour lists with the edge index of each
    neighbour.  Returns ``(n_samples, p)`` states, one every ``thin`` sweeps after
    ``n_burnin`` sweeps."""
    np.random.seed(seed)
    p = K.shape[0]
    Kmax = node_pot.shape[1]
    out = np.empty((n_samples, p), dtype=np.int64)
    logp = np.empty(Kmax)
    total = n_burnin + n_samples * thin
    k = 0
    for sweep in range(total):
        for i in range(p):
            mx = -np.inf
            for v in range(K[i]):
                s = node_pot[i, v]
                for q in range(nbr_ptr[i], nbr_ptr[i + 1]):
                    j = nbr_node[q]
                    e = nbr_edge[q]
                    if i < j:
                        s += edge_pot[e, v, x[j]]
                    else:
                        s += edge_pot[e, x[j], v]
                logp[v] = s
                if s > mx:
                    mx = s
            acc = 0.0
            for v in range(K[i]):
                logp[v] = np.exp(logp[v] - mx)
                acc += logp[v]
            u = np.random.random() * acc
            v = 0
            c = logp[0]
            while c < u and v < K[i] - 1:
                v += 1
                c += logp[v]
            x[i] = v
        if sweep >= n_burnin and (sweep - n_burnin + 1) % thin == 0:
            for i in range(p):
                out[k, i] = x[i]
            k += 1
    return out
