"""Belief propagation on pairwise binary MRFs (Ising models).

* ``mrf-bp-grid-30x30``: damped (0.5) parallel loopy BP in the log domain on a 30 x 30
  Ising grid (900 nodes, 1740 edges, couplings N(0, 0.25), fields N(0, 0.25) in the 0/1
  coding), a fixed 200 sweeps (tolerance 0), time per sweep.
* ``mrf-bp-grid-30x30-vs-pomegranate``: loopy BP to convergence on the same grid against
  pomegranate's ``FactorGraph.predict_proba`` (sum-product on the factor graph with one
  ``Categorical`` per node and one ``JointCategorical`` per edge, float64), the only
  installable library here with loopy sum-product BP: pgmpy's
  ``BeliefPropagationWithMessagePassing`` is for graphs without loops, its
  ``BeliefPropagation`` is an exact junction tree (infeasible at treewidth 30), and
  ``Mplp`` is max-product (MAP, not marginals).  Both run the same algorithm, the
  undamped parallel (flooding) schedule from uniform messages: pomegranate has no
  damping, so ours runs with damping 0 here.  The stopping tests differ and cannot be
  matched: ours stops when no log-message moves by more than 1e-8; pomegranate stops
  when the sum over nodes of KL(previous || current marginal) falls below ``tol``, and
  since it takes ``log(q + 1e-8)`` that sum turns negative once marginals move by less
  than about 1e-4, so even ``tol=0`` (used here, its tightest) stops it there.  Each row
  therefore reports its sweeps, the largest error of its 900 node marginals against the
  BP fixed point (ours run to a residual of 1e-14), the largest difference from the
  other library's marginals, and, on the 4 x 4 grid drawn the same way (exact marginals
  by enumeration), its largest error against the exact marginals next to that of the
  BP fixed point itself (the Bethe error).  Times are of the inference call only (graph
  construction excluded for both); "time per sweep ours/theirs" is in the ratios column.
* ``mrf-bp-tree-30x30-vs-pgmpy``: all 900 node marginals of the same potentials on a
  spanning tree of the grid (every row, joined by the first column), where BP is exact:
  our two-pass flooding schedule against pgmpy's ``BeliefPropagationWithMessagePassing``
  on the equivalent factor graph, time per call.
"""

import contextlib
import io
import time
import warnings

import numpy as np

from .harness import workload


def _ising_grid(side, tree=False, seed=0):
    rng = np.random.default_rng(seed)
    idx = np.arange(side * side).reshape(side, side)
    edges = [(idx[i, j], idx[i, j + 1]) for i in range(side) for j in range(side - 1)]
    if tree:
        edges += [(idx[i, 0], idx[i + 1, 0]) for i in range(side - 1)]
    else:
        edges += [(idx[i, j], idx[i + 1, j]) for i in range(side - 1) for j in range(side)]
    edges = sorted((int(a), int(b)) for a, b in edges)
    coef = rng.normal(scale=0.5, size=side * side + len(edges))
    return edges, coef


def _layout(side, edges):
    from sklearn_vb.mrf.layout import MRFLayout, parse_structure

    return MRFLayout(np.full(side * side, 2), parse_structure(edges, side * side))


@workload("mrf-bp-grid-30x30", per="iteration")
def bp_grid(quick):
    from sklearn_vb.mrf._bp_kernels import bp_run

    side = 10 if quick else 30
    edges, coef = _ising_grid(side)
    L = _layout(side, edges)
    node, edge = L.potentials(coef)
    sweeps = 50 if quick else 200

    def ours():
        msg = np.zeros((2 * L.n_edges, 2)) - np.log(2.0)
        n, _ = bp_run(node, edge, L.n_states, L.edges, L.in_ptr, L.in_dir, msg, 0.5, 0.0, sweeps)
        return int(n)

    return {"sklearn_vb": ours}


def _pomegranate_marginals(L, node, edge):
    """P(x_i = 1) by pomegranate's loopy BP (``tol=0``), its sweeps and the seconds of
    the inference call."""
    import torch
    from pomegranate.distributions import Categorical, JointCategorical
    from pomegranate.factor_graph import FactorGraph

    torch.set_num_threads(1)
    # pomegranate wants normalised tables; constant factors do not change the marginals
    unary = np.exp(node[:, :2] - node[:, :2].max(axis=1, keepdims=True))
    unary /= unary.sum(axis=1, keepdims=True)
    marginals = [Categorical(probs=unary[i][None, :]) for i in range(L.n_nodes)]
    factors = []
    for e in range(L.n_edges):
        table = np.exp(edge[e, :2, :2] - edge[e, :2, :2].max())
        factors.append(JointCategorical(probs=table / table.sum()))
    graph = FactorGraph(factors, marginals, max_iter=1000, tol=0.0, verbose=True)
    for e, (a, b) in enumerate(L.edges):
        graph.add_edge(marginals[a], factors[e])
        graph.add_edge(marginals[b], factors[e])
    missing = torch.zeros((1, L.n_nodes), dtype=torch.bool)
    with warnings.catch_warnings():  # "MaskedTensors are a prototype"
        warnings.simplefilter("ignore")
        X = torch.masked.MaskedTensor(torch.zeros((1, L.n_nodes), dtype=torch.int64),
                                      mask=missing)
    printed = io.StringIO()  # verbose prints one line per sweep: the sweep count
    start = time.perf_counter()
    with contextlib.redirect_stdout(printed):
        out = graph.predict_proba(X)
    seconds = time.perf_counter() - start
    n_sweeps = sum(1 for line in printed.getvalue().splitlines() if line.strip())
    return np.array([float(p[0, 1]) for p in out]), n_sweeps, seconds


def _our_marginals(L, coef, tol, damping=0.0):
    from sklearn_vb.mrf.inference import BPEngine

    start = time.perf_counter()
    r = BPEngine(L, damping=damping, tol=tol, max_iter=5000, warn=False).run(coef)
    seconds = time.perf_counter() - start
    return np.exp(r.node_logb[:, 1]), r.n_iter, seconds


@workload("mrf-bp-grid-30x30-vs-pomegranate", per="call", repeats=3)
def bp_grid_vs_pomegranate(quick):
    from sklearn_vb.mrf.inference import ExactEngine

    side = 10 if quick else 30
    edges, coef = _ising_grid(side)
    L = _layout(side, edges)
    node, edge = L.potentials(coef)
    fixed_point = _our_marginals(L, coef, tol=1e-14)[0]
    small_edges, small_coef = _ising_grid(4)
    small = _layout(4, small_edges)
    small_node, small_edge = small.potentials(small_coef)
    exact = ExactEngine(small).moments(small_coef, covariance=False).kappa[:small.n_nodes]
    bethe_error = float(np.abs(_our_marginals(small, small_coef, tol=1e-14)[0] - exact).max())
    last = {}

    def report(label, p, n_sweeps, seconds, p_small):
        last[label] = p
        metrics = {"n_sweeps": n_sweeps, "ms_per_sweep": 1e3 * seconds / n_sweeps,
                   "max_err_vs_bp_fixed_point": float(np.abs(p - fixed_point).max()),
                   "max_err_vs_exact_4x4": float(np.abs(p_small - exact).max()),
                   "bethe_err_4x4": bethe_error, "elapsed_s": seconds}
        if label != "sklearn_vb" and "sklearn_vb" in last:
            metrics["max_diff_vs_sklearn_vb"] = float(np.abs(p - last["sklearn_vb"]).max())
        return metrics

    def ours():
        p, n, seconds = _our_marginals(L, coef, tol=1e-8)
        return report("sklearn_vb", p, n, seconds, _our_marginals(small, small_coef, 1e-8)[0])

    def pomegranate():
        p, n, seconds = _pomegranate_marginals(L, node, edge)
        p_small = _pomegranate_marginals(small, small_node, small_edge)[0]
        return report("pomegranate", p, n, seconds, p_small)

    def summarize(measurements):
        mine, theirs = measurements
        if mine.status == "ok" and theirs.status == "ok":
            theirs.ratios["time per sweep ours/theirs"] = (
                mine.metrics["ms_per_sweep"] / theirs.metrics["ms_per_sweep"])

    return {"sklearn_vb": ours, "pomegranate": pomegranate}, summarize


@workload("mrf-bp-tree-30x30-vs-pgmpy", per="call", repeats=1, warmup=False)
def bp_tree_vs_pgmpy(quick):
    from sklearn_vb.mrf.inference import BPEngine

    side = 10 if quick else 30
    edges, coef = _ising_grid(side, tree=True)
    L = _layout(side, edges)
    node, edge = L.potentials(coef)

    def ours():
        r = BPEngine(L, tol=1e-12).run(coef)
        return {"n_sweeps": r.n_iter, "marginal_x0": float(np.exp(r.node_logb[0, 1]))}

    def pgmpy_bp():
        from pgmpy.factors.discrete import DiscreteFactor
        from pgmpy.inference import BeliefPropagationWithMessagePassing
        from pgmpy.models import FactorGraph

        names = [f"x{i}" for i in range(L.n_nodes)]
        fg = FactorGraph()
        fg.add_nodes_from(names)
        factors = []
        for i in range(L.n_nodes):
            f = DiscreteFactor([names[i]], [2], np.exp(node[i, :2]))
            factors.append(f)
        for e, (a, b) in enumerate(L.edges):
            f = DiscreteFactor([names[a], names[b]], [2, 2], np.exp(edge[e, :2, :2]).ravel())
            factors.append(f)
        fg.add_factors(*factors)
        for f in factors:
            fg.add_edges_from([(v, f) for v in f.scope()])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = BeliefPropagationWithMessagePassing(fg, check_model=False).query(names)
        return {"marginal_x0": float(res[names[0]].values[1] / res[names[0]].values.sum())}

    return {"sklearn_vb": ours, "pgmpy": pgmpy_bp}
