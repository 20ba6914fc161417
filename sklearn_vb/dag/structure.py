"""Structure handling for discrete DAGs: parsing, CPT layout, pattern compression,
the enumeration index used by the inference kernel, and exact-evidence oracles.

Everything here is independent of the estimator so that the scoring layer and the
tests can use it directly.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from scipy.special import gammaln, logsumexp

from .kernels import log_dirichlet_integral_flat

__all__ = [
    "DAGStructure",
    "CPTLayout",
    "PatternData",
    "observed_column_names",
    "parse_structure",
    "prepare_patterns",
    "log_dirichlet_integral",
    "exact_log_evidence",
    "parameter_count",
    "family_prior_value",
]

#: default refusal threshold on the number of joint configurations of the
#: unobserved nodes of one case (hidden nodes plus missing values).
MAX_CONFIGURATIONS = 2**20
#: default refusal threshold on the total number of enumeration rows.
MAX_ROWS = 2 * 10**7


@dataclass(frozen=True)
class DAGStructure:
    """A DAG over named nodes.

    ``parents[j]`` is the ordered tuple of parent indices of node ``j``;
    ``cardinalities[j]`` is the number of states (``None``: learned from data, only
    for observed nodes); ``hidden[j]`` says whether node ``j`` is never observed.
    Observed nodes, in node order, are the columns of ``X``.
    """

    names: tuple
    parents: tuple
    cardinalities: tuple
    hidden: tuple
    order: tuple  # a topological order

    @property
    def n_nodes(self):
        return len(self.names)

    @property
    def observed(self):
        return tuple(j for j in range(self.n_nodes) if not self.hidden[j])

    @property
    def hidden_nodes(self):
        return tuple(j for j in range(self.n_nodes) if self.hidden[j])

    def index(self, name):
        """Node index of ``name`` (a node name, or an int index if names are not ints)."""
        if name in self.names:
            return self.names.index(name)
        if isinstance(name, Integral) and not isinstance(name, bool):
            if not all(isinstance(n, Integral) for n in self.names) and 0 <= name < self.n_nodes:
                return int(name)
        raise ValueError(f"node={name!r} is not a node of the structure; nodes are {list(self.names)}.")

    def query_index(self, node):
        """Index of the node a query is about: ``node``, or the first hidden node when it is
        ``None``."""
        if node is None:
            if not self.hidden_nodes:
                raise ValueError("node=None needs a hidden node; this structure has none.")
            return self.hidden_nodes[0]
        return self.index(node)

    def children(self, j):
        return tuple(c for c in range(self.n_nodes) if j in self.parents[c])

    def with_cardinalities(self, cards):
        return DAGStructure(self.names, self.parents, tuple(int(c) for c in cards), self.hidden, self.order)

    def parent_dict(self):
        return {self.names[j]: [self.names[p] for p in self.parents[j]] for j in range(self.n_nodes)}


def _topological_order(names, parents):
    n = len(names)
    indeg = [len(p) for p in parents]
    children = [[] for _ in range(n)]
    for j, ps in enumerate(parents):
        for p in ps:
            children[p].append(j)
    ready = [j for j in range(n) if indeg[j] == 0]
    order = []
    while ready:
        j = ready.pop(0)
        order.append(j)
        for c in children[j]:
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    if len(order) != n:
        # report one cycle: walk parents among the remaining nodes
        remaining = set(range(n)) - set(order)
        start = min(remaining)
        path, seen = [start], {start}
        node = start
        while True:
            node = next(p for p in parents[node] if p in remaining)
            if node in seen:
                cycle = path[path.index(node):] + [node]
                break
            path.append(node)
            seen.add(node)
        cyc = " <- ".join(repr(names[c]) for c in cycle)
        raise ValueError(f"structure has a cycle ({cyc}); a Bayesian network must be acyclic.")
    return tuple(order)


def _add_node(names, lookup, name):
    if isinstance(name, (list, dict, set, np.ndarray)):
        raise ValueError(f"structure: node names must be hashable scalars; got {name!r}.")
    if name not in lookup:
        lookup[name] = len(names)
        names.append(name)
    return lookup[name]


def observed_column_names(feature_names, n_columns):
    """The node names of the columns of ``X`` when no structure names them: the column
    names of a table with string column names (``feature_names_in_``), else ``x0``,
    ``x1``, ..."""
    if feature_names is not None:
        return [str(v) for v in feature_names]
    return [f"x{i}" for i in range(int(n_columns))]


def parse_structure(structure, cardinalities=None, hidden=None, *, observed_names=None, n_components=2):
    """Parse the user's description of a DAG into a :class:`DAGStructure`.

    structure
        ``None`` (latent-class model: one hidden node ``"latent"`` with
        ``n_components`` states, parent of every observed column), a dict
        ``{child: [parents...]}``, a list of ``(parent, child)`` edges, or a square
        numpy array ``A`` with ``A[i, j] != 0`` meaning ``i -> j``.
    cardinalities
        dict ``{node: r}``, a sequence in node order, or an int for every node;
        ``None`` entries (or ``cardinalities=None``) mean "learn the categories of
        this observed node from the data".
    hidden
        the names of the hidden nodes (an iterable, or a single name).
    observed_names
        with ``structure=None``, the names of the observed columns.
    """
    names: list = []
    lookup: dict = {}
    parent_lists: dict = {}
    if structure is None:
        if hidden not in (None, (), []):
            raise ValueError("hidden must be None when structure=None (the latent-class model "
                             "has one hidden node, 'latent').")
        if observed_names is None:
            raise ValueError("structure=None needs the observed column names.")
        observed_names = list(observed_names)
        latent = "latent"
        while latent in observed_names:
            latent = "_" + latent
        names = [latent] + observed_names
        parents = [()] + [(0,)] * len(observed_names)
        if isinstance(cardinalities, dict):
            cards = [n_components] + [cardinalities.get(n) for n in observed_names]
        elif cardinalities is None or (isinstance(cardinalities, Integral) and not isinstance(cardinalities, bool)):
            cards = [n_components] + [cardinalities] * len(observed_names)
        else:
            cards = list(cardinalities)
            if len(cards) != len(observed_names):
                raise ValueError(
                    f"cardinalities has {len(cards)} entries but X has {len(observed_names)} "
                    "observed columns (structure=None: one entry per column).")
            cards = [n_components] + cards
        hidden_flags = [True] + [False] * len(observed_names)
        return _finish(names, parents, cards, hidden_flags)

    if isinstance(structure, dict):
        for child, ps in structure.items():
            _add_node(names, lookup, child)
        for child, ps in structure.items():
            if ps is None:
                ps = ()
            if isinstance(ps, (str, Integral)):
                ps = (ps,)
            plist = []
            for p in ps:
                pi = _add_node(names, lookup, p)
                if pi in plist:
                    raise ValueError(f"structure: parent {p!r} listed twice for node {child!r}.")
                plist.append(pi)
            parent_lists[lookup[child]] = plist
    elif isinstance(structure, np.ndarray) or (
        hasattr(structure, "shape") and hasattr(structure, "__array__")
    ):
        A = np.asarray(structure)
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"structure given as an adjacency matrix must be square; got shape {A.shape}.")
        names = list(range(A.shape[0]))
        lookup = {n: n for n in names}
        for j in names:
            parent_lists[j] = [int(i) for i in np.flatnonzero(A[:, j])]
    elif isinstance(structure, (list, tuple)):
        for e in structure:
            if not isinstance(e, (list, tuple)) or len(e) != 2:
                raise ValueError(
                    f"structure given as an edge list must hold (parent, child) pairs; got {e!r}.")
            p, c = e
            pi = _add_node(names, lookup, p)
            ci = _add_node(names, lookup, c)
            parent_lists.setdefault(ci, [])
            if pi in parent_lists[ci]:
                raise ValueError(f"structure: edge {p!r} -> {c!r} listed twice.")
            parent_lists[ci].append(pi)
    else:
        raise ValueError(
            "structure must be None, a dict {child: parents}, a list of (parent, child) edges "
            f"or a square adjacency array; got {type(structure).__name__}.")

    # isolated nodes named only in cardinalities or hidden
    if isinstance(cardinalities, dict):
        for n in cardinalities:
            if n not in lookup:
                if isinstance(structure, np.ndarray):
                    raise ValueError(f"cardinalities names unknown node {n!r}; nodes are {names}.")
                _add_node(names, lookup, n)
    hidden_names = _as_name_list(hidden)
    for h in hidden_names:
        if h not in lookup:
            raise ValueError(f"hidden names unknown node {h!r}; nodes are {names}.")
    parents = [tuple(parent_lists.get(j, ())) for j in range(len(names))]
    for j, ps in enumerate(parents):
        if j in ps:
            raise ValueError(f"structure has a cycle (self-loop on {names[j]!r}).")

    if cardinalities is None:
        cards = [None] * len(names)
    elif isinstance(cardinalities, dict):
        cards = [cardinalities.get(n) for n in names]
    elif isinstance(cardinalities, Integral) and not isinstance(cardinalities, bool):
        cards = [int(cardinalities)] * len(names)
    else:
        cards = list(cardinalities)
        if len(cards) != len(names):
            raise ValueError(
                f"cardinalities has {len(cards)} entries but the structure has {len(names)} "
                f"nodes {names}; give one per node or a dict.")
    hidden_flags = [n in hidden_names for n in names]
    return _finish(names, parents, cards, hidden_flags)


def _as_name_list(hidden):
    if hidden is None:
        return []
    if isinstance(hidden, (str, Integral)):
        return [hidden]
    return list(hidden)


def _finish(names, parents, cards, hidden_flags):
    clean = []
    for n, c, h in zip(names, cards, hidden_flags):
        if c is None:
            if h:
                raise ValueError(f"cardinalities: hidden node {n!r} needs a number of states.")
            clean.append(None)
            continue
        if isinstance(c, bool) or not isinstance(c, (Integral, np.integer)) or c < 1:
            raise ValueError(f"cardinalities: node {n!r} must have a positive integer number of "
                             f"states; got {c!r}.")
        clean.append(int(c))
    order = _topological_order(names, parents)
    return DAGStructure(tuple(names), tuple(parents), tuple(clean), tuple(bool(h) for h in hidden_flags), order)


def family_prior_value(prior, ess, q, r):
    """The Dirichlet hyperparameter shared by every entry of a family's table with ``q``
    parent configurations and ``r`` states, for a prior given as one value for all
    families: a positive number, ``"uniform"`` (1) or ``"bdeu"`` (``ess / (q r)``).
    None for per-node tables (their shape is tied to one parent set)."""
    if isinstance(prior, str):
        return 1.0 if prior == "uniform" else float(ess) / (q * r)
    if isinstance(prior, Real) and not isinstance(prior, bool):
        return float(prior)
    return None


def parameter_count(structure):
    """Naive number of free parameters, eq. (6.24): sum_j (r_j - 1) q_j."""
    r = structure.cardinalities
    return int(sum((r[j] - 1) * math.prod(r[p] for p in structure.parents[j]) for j in range(structure.n_nodes)))


class CPTLayout:
    """Flat layout of all CPTs of a structure whose cardinalities are known."""

    def __init__(self, structure):
        if any(c is None for c in structure.cardinalities):
            raise ValueError("CPTLayout needs every cardinality.")
        self.structure = structure
        J = structure.n_nodes
        r = np.array(structure.cardinalities, dtype=np.int64)
        q = np.array([math.prod(int(r[p]) for p in structure.parents[j]) for j in range(J)], dtype=np.int64)
        self.r, self.q = r, q
        sizes = q * r
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.size = int(self.offsets[-1])
        self.n_rows = int(q.sum())
        self.row_ptr = np.concatenate([[0], np.cumsum(np.repeat(r, q))]).astype(np.int64)
        # flat index of node j's entry = offsets[j] + states @ coef[:, j]
        coef = np.zeros((J, J), dtype=np.int64)
        for j in range(J):
            coef[j, j] = 1
            stride = int(r[j])
            for p in reversed(structure.parents[j]):
                coef[p, j] = stride
                stride *= int(r[p])
        self.coef = coef
        # node of every flat entry and row of every entry
        self.entry_node = np.repeat(np.arange(J), sizes)
        self.entry_row = np.repeat(np.arange(self.n_rows), np.repeat(r, q))

    def split(self, flat):
        """Flat vector -> list of (q_j, r_j) tables (copies)."""
        return [
            np.array(flat[self.offsets[j]:self.offsets[j + 1]]).reshape(self.q[j], self.r[j])
            for j in range(len(self.r))
        ]

    def join(self, tables, name="tables"):
        """List of (q_j, r_j) tables -> flat vector, with shape checks."""
        out = np.empty(self.size)
        for j, t in enumerate(tables):
            t = np.asarray(t, dtype=float)
            shape = (int(self.q[j]), int(self.r[j]))
            if t.shape != shape:
                raise ValueError(
                    f"{name}: node {self.structure.names[j]!r} needs a table of shape {shape} "
                    f"(parent configurations x states); got {t.shape}.")
            out[self.offsets[j]:self.offsets[j + 1]] = t.ravel()
        return out

    def row_sums(self, flat):
        return np.add.reduceat(flat, self.row_ptr[:-1])


@dataclass
class PatternData:
    """Compressed data plus the enumeration index of :mod:`sklearn_vb.dag.kernels`."""

    patterns: np.ndarray    # (U, n_observed) codes, -1 for missing
    weights: np.ndarray     # (U,)
    inverse: np.ndarray     # (n,) pattern of every input row
    idx: np.ndarray         # (R, J) flat CPT entries per configuration row
    states: np.ndarray      # (R, J) state of every node per configuration row
    row_start: np.ndarray   # (U + 1,)

    @property
    def n_patterns(self):
        return self.patterns.shape[0]


def unique_rows(a):
    """``np.unique(a, axis=0, return_inverse=True)`` of a 2-D integer or boolean array:
    the distinct rows in lexicographic order (first column most significant) and the
    row of each input row.  Rows are sorted by one int64 mixed-radix code of their
    columns (far faster than NumPy's sort of rows as records), which gives the same
    order; when the code would overflow, the code of the leading columns is first
    replaced by its rank among the distinct values, which keeps the order."""
    a = np.asarray(a)
    if a.ndim != 2 or a.size == 0 or a.dtype.kind not in "biu":
        return np.unique(a, axis=0, return_inverse=True)
    x = a.astype(np.int64)
    lo = x.min(axis=0)
    span = x.max(axis=0) - lo + 1
    key = np.zeros(a.shape[0], dtype=np.int64)
    bound = 1  # key < bound
    for c in range(a.shape[1]):
        if bound * int(span[c]) >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            bound = int(key.max()) + 1
        key = key * span[c] + (x[:, c] - lo[c])
        bound *= int(span[c])
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return a[first], inverse


def prepare_patterns(codes, weights, layout, *, max_configurations=MAX_CONFIGURATIONS, max_rows=MAX_ROWS,
                     compress=True):
    """Compress integer ``codes`` (n, n_observed; -1 = missing) to distinct patterns
    and build the enumeration index over each pattern's unobserved nodes."""
    s = layout.structure
    codes = np.asarray(codes, dtype=np.int64)
    n = codes.shape[0]
    weights = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if compress:
        patterns, inverse = unique_rows(codes)
        inverse = inverse.reshape(-1)
        pw = np.bincount(inverse, weights=weights, minlength=patterns.shape[0])
    else:
        patterns, inverse, pw = codes.copy(), np.arange(n), weights.copy()
    observed = np.array(s.observed, dtype=np.int64)
    hidden = np.array(s.hidden_nodes, dtype=np.int64)
    J = s.n_nodes
    r = layout.r
    # group patterns by missingness mask so each group shares one configuration grid
    missing = patterns < 0
    mask_keys, group = (unique_rows(missing) if len(patterns)
                        else (np.zeros((0, len(observed)), bool), np.zeros(0, np.int64)))
    group = np.asarray(group).reshape(-1)
    perm = np.argsort(group, kind="stable")
    patterns, pw = patterns[perm], pw[perm]
    rank = np.empty_like(perm)
    rank[perm] = np.arange(perm.size)
    inverse = rank[inverse]
    group = group[perm]
    idx_parts, state_parts, sizes = [], [], []
    total_rows = 0
    for g in range(mask_keys.shape[0]):
        members = np.flatnonzero(group == g)
        miss = mask_keys[g]
        free = np.sort(np.concatenate([hidden, observed[miss]])).astype(np.int64)
        present = observed[~miss]
        n_conf = math.prod(int(r[f]) for f in free)
        if n_conf > max_configurations:
            what = [s.names[f] for f in free]
            raise ValueError(
                f"the joint space of the unobserved nodes {what} has {n_conf} configurations, "
                f"more than max_configurations={max_configurations}; exact inference by enumeration "
                "is refused (reduce hidden nodes/states or missing values).")
        total_rows += n_conf * members.size
        if total_rows > max_rows:
            raise ValueError(
                f"enumeration needs more than {max_rows} configuration rows "
                f"({members.size} patterns x {n_conf} configurations in one group); refusing.")
        grid = np.indices([int(r[f]) for f in free]).reshape(len(free), -1).T if len(free) else np.zeros((1, 0), np.int64)
        st = np.empty((members.size, n_conf, J), dtype=np.int64)
        st[:, :, present] = patterns[members][:, ~miss][:, None, :]
        st[:, :, free] = grid[None, :, :]
        st = st.reshape(-1, J)
        idx_parts.append(st @ layout.coef + layout.offsets[:-1])
        state_parts.append(st.astype(np.int32))
        sizes.append(np.full(members.size, n_conf, dtype=np.int64))
    if idx_parts:
        idx = np.ascontiguousarray(np.concatenate(idx_parts))
        states = np.concatenate(state_parts)
        row_start = np.concatenate([[0], np.cumsum(np.concatenate(sizes))]).astype(np.int64)
    else:
        idx = np.zeros((0, J), np.int64)
        states = np.zeros((0, J), np.int32)
        row_start = np.zeros(1, np.int64)
    return PatternData(patterns, np.ascontiguousarray(pw, dtype=float), inverse, idx, states, row_start)


def log_dirichlet_integral(prior, counts, layout):
    """Complete-data log marginal likelihood sum_{j,l} [lnB(lambda_jl + N_jl) - lnB(lambda_jl)]
    (thesis eqs. 6.7-6.10); ``prior`` and ``counts`` are flat vectors, counts may be real."""
    return float(log_dirichlet_integral_flat(np.asarray(prior, float), np.asarray(counts, float), layout.row_ptr))


def _compositions(n, k):
    """All k-tuples of non-negative ints summing to n, as an array (stars and bars)."""
    if k == 1:
        return np.array([[n]], dtype=np.int64)
    out = []
    for bars in itertools.combinations(range(n + k - 1), k - 1):
        prev = -1
        row = []
        for b in bars:
            row.append(b - prev - 1)
            prev = b
        row.append(n + k - 1 - prev - 1)
        out.append(row)
    return np.array(out, dtype=np.int64)


def exact_log_evidence(prior, layout, patterns_data, *, max_terms=2 * 10**6):
    """ln p(y | m) by summing, over every completion of the unobserved values, the
    product of Dirichlet integrals (grouped by distinct data pattern).  Pattern weights must be
    integers.  Exponential cost: a test oracle for tiny data only."""
    pdata = patterns_data
    w = pdata.weights
    if not np.allclose(w, np.round(w)):
        raise ValueError("exact_log_evidence needs integer case weights.")
    w = np.round(w).astype(np.int64)
    P = layout.size
    n_terms = 1
    for u in range(pdata.n_patterns):
        H = int(pdata.row_start[u + 1] - pdata.row_start[u])
        n_terms *= math.comb(int(w[u]) + H - 1, H - 1)
        if n_terms > max_terms:
            raise ValueError(f"exact_log_evidence would need more than max_terms={max_terms} terms.")
    counts = np.zeros((1, P))
    log_coef = np.zeros(1)
    for u in range(pdata.n_patterns):
        a, b = pdata.row_start[u], pdata.row_start[u + 1]
        H = int(b - a)
        E = np.zeros((H, P))
        for h in range(H):
            np.add.at(E[h], pdata.idx[a + h], 1.0)
        C = _compositions(int(w[u]), H)
        lc = gammaln(w[u] + 1) - gammaln(C + 1).sum(axis=1)
        add = C @ E
        counts = (counts[:, None, :] + add[None, :, :]).reshape(-1, P)
        log_coef = (log_coef[:, None] + lc[None, :]).ravel()
    prior = np.asarray(prior, float)
    starts = layout.row_ptr[:-1]
    post = prior[None, :] + counts
    lnb_post = np.add.reduceat(gammaln(post), starts, axis=1) - gammaln(np.add.reduceat(post, starts, axis=1))
    lnb_prior = np.add.reduceat(gammaln(prior), starts) - gammaln(np.add.reduceat(prior, starts))
    terms = log_coef + (lnb_post - lnb_prior[None, :]).sum(axis=1)
    return float(logsumexp(terms))
