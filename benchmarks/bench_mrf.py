"""Belief propagation on pairwise binary MRFs (Ising models).

* ``mrf-bp-grid-30x30``: damped (0.5) parallel loopy BP in the log domain on a 30 x 30
  Ising grid (900 nodes, 1740 edges, couplings N(0, 0.25), fields N(0, 0.25) in the 0/1
  coding), a fixed 200 sweeps (tolerance 0), time per sweep.  No installed library offers
  loopy BP on pairwise MRFs (pgmpy's ``BeliefPropagationWithMessagePassing`` is for
  graphs without loops, its ``BeliefPropagation`` is an exact junction tree, infeasible
  at treewidth 30), so this workload has no competitor; see the next one.
* ``mrf-bp-tree-30x30-vs-pgmpy``: all 900 node marginals of the same potentials on a
  spanning tree of the grid (every row, joined by the first column), where BP is exact:
  our two-pass flooding schedule against pgmpy's ``BeliefPropagationWithMessagePassing``
  on the equivalent factor graph, time per call.
"""

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
    from sklearn_vb._mrf_layout import MRFLayout, parse_structure

    return MRFLayout(np.full(side * side, 2), parse_structure(edges, side * side))


@workload("mrf-bp-grid-30x30", per="iteration")
def bp_grid(quick):
    from sklearn_vb._kernels.bp import bp_run

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


@workload("mrf-bp-tree-30x30-vs-pgmpy", per="call", repeats=1, warmup=False)
def bp_tree_vs_pgmpy(quick):
    from sklearn_vb._mrf_inference import BPEngine

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
