"""The feature layout of a pairwise discrete Markov random field.

Minimal (canonical) parameterisation with state 0 as reference: node ``i`` has the
indicator features ``1[x_i = k]``, ``k = 1..K_i - 1``, and edge ``(i, j)``, ``i < j``, the
features ``1[x_i = k, x_j = l]``, ``k, l >= 1``; node blocks first (node order, ``k``
ascending), then edge blocks in lexicographic edge order, ``(k, l)`` in C order.  For
binary nodes these are the Boltzmann-machine features ``x_i`` and ``x_i x_j``.
Minimality makes every distribution strictly positive, the features affinely
independent and the feature covariance positive definite.

The node and edge beliefs are affine in the mean parameters ``kappa = E f``
(``b = V kappa + c``, one row of ``V`` per table cell); :meth:`MRFLayout.cells` holds that
map, from which come the Bethe entropy Hessian (linear response) and pseudo-moment
matching.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np
import scipy.sparse as sp

__all__ = ["MRFLayout", "parse_structure", "is_forest", "unique_rows"]


def parse_structure(structure, n_nodes):
    """Sorted ``(E, 2)`` int64 edge array (``i < j``) from an edge list (any iterable of
    node pairs), a symmetric ``(p, p)`` numpy adjacency array, ``None`` (no edges) or
    ``"complete"``."""
    if structure is None:
        return np.zeros((0, 2), dtype=np.int64)
    if isinstance(structure, str):
        if structure != "complete":
            raise ValueError(f"structure must be None, 'complete', an edge list or a symmetric "
                             f"adjacency matrix, got {structure!r}.")
        i, j = np.triu_indices(n_nodes, 1)
        return np.stack([i, j], axis=1).astype(np.int64)
    arr = np.asarray(structure) if isinstance(structure, np.ndarray) else None
    if arr is not None and arr.ndim == 2 and arr.shape == (n_nodes, n_nodes) and not (
            n_nodes == 2 and _is_pair_list(arr)):
        if arr.dtype == object or not np.all(np.isfinite(arr.astype(float))):
            raise ValueError("structure: the adjacency matrix must be numeric and finite.")
        A = arr.astype(float) != 0
        if not np.array_equal(A, A.T):
            raise ValueError("structure: the adjacency matrix must be symmetric.")
        if np.any(np.diag(A)):
            raise ValueError("structure: the adjacency matrix has a self-loop (non-zero diagonal).")
        i, j = np.nonzero(np.triu(A, 1))
        return np.stack([i, j], axis=1).astype(np.int64)
    fast = _integer_pairs(structure, n_nodes)
    if fast is not None:
        return fast
    edges = []
    for pair in (structure.tolist() if isinstance(structure, np.ndarray) else structure):
        pair = tuple(pair)
        if len(pair) != 2:
            raise ValueError(f"structure: every edge must be a pair of nodes, got {pair!r}.")
        a, b = pair
        if not all(isinstance(v, Integral) or (isinstance(v, float) and float(v).is_integer())
                   for v in (a, b)):
            raise ValueError(f"structure: nodes must be integers, got {pair!r}.")
        a, b = int(a), int(b)
        if not (0 <= a < n_nodes and 0 <= b < n_nodes):
            raise ValueError(f"structure: edge {pair!r} names a node outside 0..{n_nodes - 1}.")
        if a == b:
            raise ValueError(f"structure: self-loop ({a}, {b}) is not allowed.")
        edges.append((min(a, b), max(a, b)))
    if len(set(edges)) != len(edges):
        raise ValueError("structure: duplicate edge.")
    edges.sort()
    return np.asarray(edges, dtype=np.int64).reshape(-1, 2)


def unique_rows(codes, n_states):
    """The distinct rows of the int state codes (sorted lexicographically), the row
    pattern of each row and the count of each pattern, as ``np.unique(codes, axis=0,
    return_inverse=True, return_counts=True)``; rows are keyed by their mixed-radix
    index (node 0 most significant) when it fits in 62 bits."""
    codes = np.asarray(codes, dtype=np.int64)
    K = np.asarray(n_states, dtype=np.int64)
    if codes.shape[1] == 0 or float(np.sum(np.log2(np.maximum(K, 1)))) > 62:
        patterns, inverse, counts = np.unique(codes, axis=0, return_inverse=True,
                                              return_counts=True)
        return patterns, inverse.ravel(), counts
    strides = np.ones(K.size, dtype=np.int64)
    for i in range(K.size - 2, -1, -1):
        strides[i] = strides[i + 1] * K[i + 1]
    keys = codes @ strides
    _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True,
                                          return_counts=True)
    return codes[first], inverse.ravel(), counts


def _integer_pairs(structure, n_nodes):
    """The sorted edge array of a list (or array) of valid pairs of integer nodes,
    checked at once; None when the pairs are not all such (the caller's loop then
    names the offending pair)."""
    if isinstance(structure, np.ndarray):
        arr = structure
    elif isinstance(structure, (list, tuple)) and structure and all(
            type(pair) is tuple and len(pair) == 2 and type(pair[0]) is int and type(pair[1]) is int
            for pair in structure):
        arr = np.array(structure, dtype=np.int64)
    else:
        return None
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] == 0 or arr.dtype.kind not in "iu":
        return None
    lo, hi = np.minimum(arr[:, 0], arr[:, 1]), np.maximum(arr[:, 0], arr[:, 1])
    if lo.min() < 0 or hi.max() >= n_nodes or np.any(lo == hi):
        return None
    key = lo.astype(np.int64) * n_nodes + hi
    order = np.argsort(key, kind="stable")
    if np.any(np.diff(key[order]) == 0):
        return None
    return np.ascontiguousarray(np.stack([lo, hi], axis=1)[order].astype(np.int64))


def _is_pair_list(arr):
    # a 2 x 2 array is read as an adjacency matrix unless it is a list of two edges
    return arr.dtype != bool and not np.array_equal(arr, arr.T)


def is_forest(n_nodes, edges):
    """True when the graph has no cycle (union-find)."""
    parent = list(range(n_nodes))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in edges:
        ra, rb = find(int(a)), find(int(b))
        if ra == rb:
            return False
        parent[ra] = rb
    return True


@dataclass
class _Cells:
    """``b = V kappa + c`` for every node cell and every edge cell."""

    V_node: sp.csr_matrix
    c_node: np.ndarray
    node_index: tuple  # (node, state) of each node cell
    V_edge: sp.csr_matrix
    c_edge: np.ndarray
    edge_index: tuple  # (edge, x_a, x_b) of each edge cell


class MRFLayout:
    """Features, potentials and graph arrays of one pairwise MRF structure.

    Parameters
    ----------
    n_states : (p,) ints >= 2
    edges : (E, 2) sorted edge array (:func:`parse_structure`)
    """

    def __init__(self, n_states, edges):
        self.n_states = np.asarray(n_states, dtype=np.int64)
        self.edges = np.ascontiguousarray(np.asarray(edges, dtype=np.int64).reshape(-1, 2))
        p = self.n_nodes = int(self.n_states.size)
        E = self.n_edges = int(self.edges.shape[0])
        K = self.n_states
        self.Kmax = int(K.max()) if p else 2
        node_sizes = K - 1
        Ka, Kb = K[self.edges[:, 0]], K[self.edges[:, 1]]
        edge_sizes = (Ka - 1) * (Kb - 1)
        self.node_offset = np.concatenate([[0], np.cumsum(node_sizes)]).astype(np.int64)
        n_node_feat = int(self.node_offset[-1])
        self.edge_offset = (n_node_feat + np.concatenate([[0], np.cumsum(edge_sizes)])).astype(np.int64)
        self.n_node_features = n_node_feat
        self.n_features = int(self.edge_offset[-1])
        k = np.arange(self.Kmax, dtype=np.int64)
        # node i, state k >= 1: node_offset[i] + k - 1; edge e, states (k, l) >= 1: its
        # block in C order; -1 beyond the nodes' states
        nf = np.where((k[None, :] >= 1) & (k[None, :] < K[:, None]),
                      self.node_offset[:p, None] + k[None, :] - 1, -1)
        inside = ((k[None, :, None] >= 1) & (k[None, :, None] < Ka[:, None, None])
                  & (k[None, None, :] >= 1) & (k[None, None, :] < Kb[:, None, None]))
        ef = np.where(inside, self.edge_offset[:E, None, None] + (k[None, :, None] - 1)
                      * (Kb[:, None, None] - 1) + k[None, None, :] - 1, -1)
        self.node_feat = np.ascontiguousarray(nf, dtype=np.int64)
        self.edge_feat = np.ascontiguousarray(ef, dtype=np.int64).reshape(E, self.Kmax, self.Kmax)
        # directed edges 2e: a -> b, 2e + 1: b -> a; incoming lists per node
        tgt = np.empty(2 * E, dtype=np.int64)
        tgt[0::2], tgt[1::2] = self.edges[:, 1], self.edges[:, 0]
        order = np.argsort(tgt, kind="stable")
        self.in_dir = np.ascontiguousarray(order.astype(np.int64))
        self.in_ptr = np.concatenate([[0], np.cumsum(np.bincount(tgt, minlength=p))]).astype(np.int64)
        self.degree = np.diff(self.in_ptr)
        # neighbour lists for Gibbs (neighbour node and edge index)
        src = np.empty(2 * E, dtype=np.int64)
        src[0::2], src[1::2] = self.edges[:, 0], self.edges[:, 1]
        self.nbr_ptr = self.in_ptr
        self.nbr_node = np.ascontiguousarray(src[order])
        self.nbr_edge = np.ascontiguousarray((order // 2).astype(np.int64))
        self.forest = is_forest(p, self.edges)
        self._cells = None
        self._states = None

    # -- names and counts -----------------------------------------------------
    @property
    def n_states_total(self):
        """``prod K_i`` as a Python int (the number of joint states)."""
        out = 1
        for k in self.n_states:
            out *= int(k)
        return out

    def feature_names(self):
        K = self.n_states
        names = []
        for i in range(self.n_nodes):
            names += [f"x{i}" if K[i] == 2 else f"x{i}={k}" for k in range(1, K[i])]
        for a, b in self.edges:
            if K[a] == 2 and K[b] == 2:
                names.append(f"x{a}*x{b}")
            else:
                names += [f"x{a}={k}&x{b}={l}" for k in range(1, K[a]) for l in range(1, K[b])]
        return np.asarray(names, dtype=object)

    def is_node_feature(self):
        out = np.zeros(self.n_features, dtype=bool)
        out[:self.n_node_features] = True
        return out

    # -- potentials -------------------------------------------------------------
    def potentials(self, coef):
        """Node and edge log-potential tables ``(p, Kmax)``, ``(E, Kmax, Kmax)`` of ``coef``."""
        ext = np.append(np.asarray(coef, dtype=float), 0.0)
        node = np.ascontiguousarray(ext[self.node_feat])
        edge = np.ascontiguousarray(ext[self.edge_feat])
        return node, edge

    def coef_from_tables(self, node_tab, edge_tab):
        """Canonical ``coef`` and the constant ``c`` with ``ln Z_tables = ln Z(coef) + c`` of
        arbitrary node tables ``phi_i`` and edge tables ``psi_ij``:
        ``w(k, l) = psi(k, l) - psi(k, 0) - psi(0, l) + psi(0, 0)`` and
        ``theta_i(k) = phi_i(k) - phi_i(0) + sum_edges [psi(k, .0) - psi(0, 0)]``."""
        K = self.n_states
        coef = np.zeros(self.n_features)
        const = 0.0
        theta = [np.asarray(node_tab[i][:K[i]], dtype=float).copy() for i in range(self.n_nodes)]
        for e, (a, b) in enumerate(self.edges):
            psi = np.asarray(edge_tab[e], dtype=float)[:K[a], :K[b]]
            w = psi - psi[:, :1] - psi[:1, :] + psi[0, 0]
            coef[self.edge_feat[e, 1:K[a], 1:K[b]].ravel()] = w[1:, 1:].ravel()
            theta[a] += psi[:, 0] - psi[0, 0]
            theta[b] += psi[0, :] - psi[0, 0]
            const += psi[0, 0]
        for i in range(self.n_nodes):
            coef[self.node_feat[i, 1:K[i]]] = theta[i][1:] - theta[i][0]
            const += theta[i][0]
        return coef, const

    # -- data -------------------------------------------------------------------
    def active_features(self, codes):
        """``(N, p + E)`` indices of the features that are 1 in each row of the int codes
        (``n_features`` where none: index of an appended zero)."""
        codes = np.asarray(codes, dtype=np.int64)
        F = self.n_features
        cols = [self.node_feat[i, codes[:, i]] for i in range(self.n_nodes)]
        cols += [self.edge_feat[e, codes[:, a], codes[:, b]] for e, (a, b) in enumerate(self.edges)]
        act = np.stack(cols, axis=1) if cols else np.zeros((codes.shape[0], 0), dtype=np.int64)
        return np.where(act < 0, F, act)

    def statistics(self, codes, weights=None):
        """Sufficient statistics ``S = sum_n w_n f(x_n)``."""
        codes = np.asarray(codes, dtype=np.int64)
        node, state, a, ka, b, kb = self._feature_cells()
        # the indicator of every (node, state >= 1) per row; an edge feature is the
        # product of two of them
        onehot = (codes[:, node] == state).astype(float)
        w = np.ones(codes.shape[0]) if weights is None else np.asarray(weights, dtype=float)
        nf = self.node_feat
        ia, ib = nf[a, ka], nf[b, kb]
        if onehot.shape[1] <= 64:
            # few indicators: every pair's weighted count at once (sums of 0/1 terms,
            # exact for integer weights)
            pair = ((onehot * w[:, None]).T @ onehot)[ia, ib]
        else:
            pair = w @ (onehot[:, ia] * onehot[:, ib])
        return np.concatenate([w @ onehot, pair])

    def energies(self, coef, codes):
        """``coef^T f(x_n)`` per row (coef may be a batch (C, F): then (C, N))."""
        act = self.active_features(codes)
        coef = np.asarray(coef, dtype=float)
        ext = np.concatenate([coef, np.zeros(coef.shape[:-1] + (1,))], axis=-1)
        return ext[..., act].sum(axis=-1)

    # -- enumeration --------------------------------------------------------------
    def all_states(self):
        """``(M, p)`` every joint state (C order, node 0 most significant)."""
        if self._states is None:
            grids = np.indices(tuple(int(k) for k in self.n_states)).reshape(self.n_nodes, -1).T
            self._states = np.ascontiguousarray(grids.astype(np.int64))
        return self._states

    def feature_matrix(self, codes):
        """Dense ``(N, F)`` 0/1 feature matrix."""
        codes = np.asarray(codes, dtype=np.int64)
        # every feature is an indicator of one node state or of a pair of node states,
        # gathered as whole rows of the one-hot codes (an enumeration has 2^p rows), built
        # feature-major
        onehot = np.ascontiguousarray(codes.T)[:, None, :] == np.arange(self.Kmax)[None, :, None]
        node, state, a, ka, b, kb = self._feature_cells()
        out = np.empty((self.n_features, codes.shape[0]))
        out[:self.n_node_features] = onehot[node, state]
        out[self.n_node_features:] = onehot[a, ka] & onehot[b, kb]
        return np.ascontiguousarray(out.T)

    def _feature_cells(self):
        """Per node feature its ``(node, state)``, per edge feature its
        ``(node a, state a, node b, state b)``, in feature order."""
        if getattr(self, "_fcells", None) is None:
            i, k = np.nonzero(self.node_feat >= 0)
            o = np.argsort(self.node_feat[i, k])
            e, ka, kb = np.nonzero(self.edge_feat >= 0)
            q = np.argsort(self.edge_feat[e, ka, kb])
            e, ka, kb = e[q], ka[q], kb[q]
            self._fcells = (i[o], k[o], self.edges[e, 0], ka, self.edges[e, 1], kb)
        return self._fcells

    def feature_assignments(self):
        """``(F, 2)`` nodes and ``(F, 2)`` states of the partial assignment each feature
        indicates (a node feature's second node is -1)."""
        node, state, a, ka, b, kb = self._feature_cells()
        nodes = np.full((self.n_features, 2), -1, dtype=np.int64)
        states = np.zeros((self.n_features, 2), dtype=np.int64)
        n = self.n_node_features
        nodes[:n, 0], states[:n, 0] = node, state
        nodes[n:, 0], states[n:, 0] = a, ka
        nodes[n:, 1], states[n:, 1] = b, kb
        return nodes, states

    # -- cells: beliefs affine in the mean parameters ------------------------------
    def cells(self):
        if self._cells is None:
            self._cells = self._build_cells()
        return self._cells

    def _build_cells(self):
        K, nf, ef = self.n_states, self.node_feat, self.edge_feat
        rows, cols, vals, cn, nidx = [], [], [], [], ([], [])
        r = 0
        for i in range(self.n_nodes):
            for x in range(K[i]):
                if x == 0:
                    for k in range(1, K[i]):
                        rows.append(r); cols.append(nf[i, k]); vals.append(-1.0)  # noqa: E702
                    cn.append(1.0)
                else:
                    rows.append(r); cols.append(nf[i, x]); vals.append(1.0)  # noqa: E702
                    cn.append(0.0)
                nidx[0].append(i); nidx[1].append(x)  # noqa: E702
                r += 1
        V_node = sp.csr_matrix((vals, (rows, cols)), shape=(r, self.n_features))
        rows, cols, vals, ce, eidx = [], [], [], [], ([], [], [])
        r = 0
        for e, (a, b) in enumerate(self.edges):
            for xa in range(K[a]):
                for xb in range(K[b]):
                    terms = []
                    c = 0.0
                    if xa > 0 and xb > 0:
                        terms.append((ef[e, xa, xb], 1.0))
                    elif xa > 0:
                        terms.append((nf[a, xa], 1.0))
                        terms += [(ef[e, xa, l], -1.0) for l in range(1, K[b])]
                    elif xb > 0:
                        terms.append((nf[b, xb], 1.0))
                        terms += [(ef[e, k, xb], -1.0) for k in range(1, K[a])]
                    else:
                        c = 1.0
                        terms += [(nf[a, k], -1.0) for k in range(1, K[a])]
                        terms += [(nf[b, l], -1.0) for l in range(1, K[b])]
                        terms += [(ef[e, k, l], 1.0) for k in range(1, K[a]) for l in range(1, K[b])]
                    for f, v in terms:
                        rows.append(r); cols.append(f); vals.append(v)  # noqa: E702
                    ce.append(c)
                    eidx[0].append(e); eidx[1].append(xa); eidx[2].append(xb)  # noqa: E702
                    r += 1
        V_edge = sp.csr_matrix((vals, (rows, cols)), shape=(r, self.n_features))
        return _Cells(V_node, np.asarray(cn), tuple(np.asarray(v, dtype=np.int64) for v in nidx),
                      V_edge, np.asarray(ce), tuple(np.asarray(v, dtype=np.int64) for v in eidx))

    def moments_from_beliefs(self, node_logb, edge_logb):
        """Mean parameters ``kappa`` read off node and edge beliefs (log tables)."""
        kappa = np.empty(self.n_features)
        m = self.node_feat >= 0
        kappa[self.node_feat[m]] = np.exp(node_logb[m])
        m = self.edge_feat >= 0
        kappa[self.edge_feat[m]] = np.exp(edge_logb[m])
        return kappa

    def beliefs_from_moments(self, kappa):
        """Node tables ``(p, Kmax)`` and edge tables ``(E, Kmax, Kmax)`` (0 beyond a node's
        states) consistent with the mean parameters ``kappa``."""
        c = self.cells()
        node = np.zeros((self.n_nodes, self.Kmax))
        node[c.node_index] = c.V_node @ kappa + c.c_node
        edge = np.zeros((self.n_edges, self.Kmax, self.Kmax))
        edge[c.edge_index] = c.V_edge @ kappa + c.c_edge
        return node, edge

    def edge_block_covariances(self, edge_tables):
        """Per edge ``(i, j)``: the feature indices of node ``i``, node ``j`` and the edge,
        and the covariance of those features under the pair table ``edge_tables[e]``
        (every product of two of them is again one of them or zero, so the block is a
        function of the pair table alone)."""
        out = []
        nf, ef = self.node_feat, self.edge_feat
        for e, (i, j) in enumerate(self.edges):
            Ki, Kj = int(self.n_states[i]), int(self.n_states[j])
            idx = np.concatenate([nf[i, 1:Ki], nf[j, 1:Kj], ef[e, 1:Ki, 1:Kj].ravel()])
            xi, xj = np.divmod(np.arange(Ki * Kj), Kj)
            # the block's features at every state (xi, xj) of the pair
            phi = np.concatenate([xi[:, None] == np.arange(1, Ki)[None],
                                  xj[:, None] == np.arange(1, Kj)[None],
                                  ((xi[:, None] * Kj + xj[:, None])
                                   == (np.arange(1, Ki)[:, None] * Kj + np.arange(1, Kj)[None]).ravel()[None])],
                                 axis=1).astype(float)
            w = np.clip(edge_tables[e, :Ki, :Kj].ravel(), 0.0, None)
            d = phi - w @ phi
            out.append((idx, (d * w[:, None]).T @ d))
        return out

    def uniform_moments(self):
        """Mean parameters of the uniform product distribution."""
        K = self.n_states
        out = np.empty(self.n_features)
        for i in range(self.n_nodes):
            out[self.node_feat[i, 1:K[i]]] = 1.0 / K[i]
        for e, (a, b) in enumerate(self.edges):
            out[self.edge_feat[e, 1:K[a], 1:K[b]].ravel()] = 1.0 / (K[a] * K[b])
        return out

    def bethe_hessian(self, node_logb, edge_logb):
        """Sparse ``J = d lambda / d kappa``, the Hessian of the negative Bethe entropy in
        the mean parameters at the beliefs:
        ``J = sum_edges V_ij^T diag(1/b_ij) V_ij - sum_i (z_i - 1) V_i^T diag(1/b_i) V_i``.
        Its inverse is the linear-response covariance (Welling and Teh 2004)."""
        c = self.cells()
        inv_e = np.exp(-edge_logb[c.edge_index])
        inv_n = np.exp(-node_logb[c.node_index]) * (self.degree[c.node_index[0]] - 1)
        J = (c.V_edge.T @ sp.diags(inv_e) @ c.V_edge) - (c.V_node.T @ sp.diags(inv_n) @ c.V_node)
        return sp.csc_matrix(J)

    def pmm_coef(self, kappa_hat, n_samples=None):
        """Pseudo-moment matching: the parameters whose BP fixed point (uniform messages)
        has the beliefs of ``kappa_hat``: ``phi_i = ln p_i``, ``psi_ij = ln p_ij / (p_i p_j)``,
        in canonical form.  With ``n_samples``, the moments are first mixed with the
        uniform product distribution, weight ``1 / (N + 1)``, so every cell is positive."""
        kappa = np.asarray(kappa_hat, dtype=float)
        if n_samples is not None:
            eta = 1.0 / (float(n_samples) + 1.0)
            kappa = (1 - eta) * kappa + eta * self.uniform_moments()
        node, edge = self.beliefs_from_moments(kappa)
        with np.errstate(divide="ignore"):
            ln_node = np.log(np.maximum(node, 1e-300))
            ln_edge = np.log(np.maximum(edge, 1e-300))
        K = self.n_states
        psi = np.zeros_like(ln_edge)
        for e, (a, b) in enumerate(self.edges):
            psi[e, :K[a], :K[b]] = (ln_edge[e, :K[a], :K[b]] - ln_node[a, :K[a], None]
                                    - ln_node[b, None, :K[b]])
        return self.coef_from_tables(ln_node, psi)[0]
