"""Structure search for discrete DAGs with hidden nodes: :class:`DAGStructureSearch`."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if

from .._core.validation import validate_categorical_data
from ..dag.structure import observed_column_names, parse_structure
from . import _common as C
from ._dag_families import DECOMPOSABLE_METHODS, prepared_family_scores
from ._dag_tabu import TabuClimb
from ._edge_search import EdgeSetSearchBase
from ._search import _best_has

__all__ = ["DAGStructureSearch"]


# --------------------------------------------------------------------------- graphs
class _Graph:
    """Node names, hidden flags and the parent sets of one DAG (sorted index tuples)."""

    arrow = "->"

    def __init__(self, names, hidden, parents, *, presorted=False, named=None):
        self.names = tuple(names)
        self.hidden = tuple(bool(h) for h in hidden)
        # ``presorted``: ``parents`` is already the tuple of sorted index tuples
        self.parents = parents if presorted else tuple(tuple(sorted(p)) for p in parents)
        # ``named``: a cache {parent index tuple: parent names} shared by many graphs
        self._named = named

    @property
    def key(self):
        return self.parents

    def with_parents(self, parents):
        return _Graph(self.names, self.hidden, parents)

    def edges(self):
        return {(p, c) for c, ps in enumerate(self.parents) for p in ps}

    def as_structure(self):
        """The dict ``{child: [parents]}`` for VBDiscreteDAG, every node a key in node
        order, so observed nodes keep their column order."""
        if self._named is None:
            return {n: [self.names[p] for p in ps] for n, ps in zip(self.names, self.parents)}
        return {n: list(self._parent_names(ps)) for n, ps in zip(self.names, self.parents)}

    def _parent_names(self, ps):
        out = self._named.get(ps)
        if out is None:
            out = self._named[ps] = tuple(self.names[p] for p in ps)
        return out

    def reaches(self, src, dst):
        """Whether there is a directed path ``src -> ... -> dst``."""
        children = [[] for _ in self.names]
        for p, c in self.edges():
            children[p].append(c)
        stack, seen = [src], {src}
        while stack:
            u = stack.pop()
            if u == dst:
                return True
            for v in children[u]:
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        return False


def _node_pairs(graph, edges, argname):
    out = set()
    if edges is None:
        return out
    index = {n: i for i, n in enumerate(graph.names)}
    for e in edges:
        if not isinstance(e, (list, tuple)) or len(e) != 2:
            raise ValueError(f"{argname} must hold (parent, child) pairs; got {e!r}.")
        for n in e:
            if n not in index:
                raise ValueError(
                    f"{argname} names unknown node {n!r}; nodes are {list(graph.names)}."
                )
        if e[0] == e[1]:
            raise ValueError(f"{argname} contains a self-loop {e!r}.")
        out.add((index[e[0]], index[e[1]]))
    return out


class _MoveSet:
    """Legal moves under the search constraints: single-edge moves (add, remove,
    reverse) and the joint move "attach", which makes a hidden node without children
    the parent of every observed node it may legally point to.

    A single edge from a childless hidden node is a dead end for any score: the hidden
    node then only mixes one child's distribution, which a table without it already
    fits, so the edge adds parameters and no likelihood.  A hidden node becomes useful
    only with several children whose dependence it explains, hence the joint move;
    the single-edge removals after it drop the children it does not explain.
    """

    def __init__(self, graph, allowed, required, forbidden, max_in_degree, moves):
        self.allowed = allowed  # None = every ordered pair
        self.required = required
        self.forbidden = forbidden
        self.max_in_degree = max_in_degree
        self.moves = moves
        n = len(graph.names)
        self.pairs = [
            (p, c)
            for p in range(n)
            for c in range(n)
            if p != c
            and (p, c) not in forbidden
            and (allowed is None or (p, c) in allowed or (p, c) in required)
        ]

    def _ok_in_degree(self, parents, c):
        return self.max_in_degree is None or len(parents[c]) <= self.max_in_degree

    def _attach(self, graph, h):
        """The observed nodes a childless hidden node ``h`` may become the parent of at
        once (each edge legal, no cycle: ``h`` has no children, so a cycle through the new
        edges would need a path from one of them back to ``h`` in ``graph``)."""
        edges = graph.edges()
        out = []
        for p, c in self.pairs:
            if (p != h or graph.hidden[c] or (c, p) in edges
                    or (self.max_in_degree is not None
                        and len(graph.parents[c]) >= self.max_in_degree)
                    or graph.reaches(c, h)):
                continue
            out.append(c)
        return out

    def neighbours(self, graph):
        edges = graph.edges()
        out = []
        if "attach" in self.moves:
            for h, hidden in enumerate(graph.hidden):
                if not hidden or any(p == h for p, _ in edges):
                    continue
                children = self._attach(graph, h)
                if len(children) >= 2:  # one child is the single-edge "add"
                    parents = list(map(list, graph.parents))
                    for c in children:
                        parents[c].append(h)
                    out.append((("attach", h, tuple(children)), graph.with_parents(parents)))
        for p, c in self.pairs:
            if (p, c) in edges:
                continue
            if "add" in self.moves and (c, p) not in edges:
                parents = list(map(list, graph.parents))
                parents[c].append(p)
                if self._ok_in_degree(parents, c) and not graph.reaches(c, p):
                    out.append((("add", p, c), graph.with_parents(parents)))
        for p, c in sorted(edges):
            if (p, c) in self.required:
                continue
            parents = list(map(list, graph.parents))
            parents[c].remove(p)
            if "remove" in self.moves:
                out.append((("remove", p, c), graph.with_parents(parents)))
            if "reverse" in self.moves and (c, p) in self.pairs:
                rev = list(map(list, parents))
                rev[p].append(c)
                g2 = graph.with_parents(rev)
                if self._ok_in_degree(rev, p) and not g2.with_parents(parents).reaches(p, c):
                    out.append((("reverse", p, c), g2))
        return out

    def check(self, graph, argname):
        edges = graph.edges()
        missing = self.required - edges
        if missing:
            raise ValueError(f"{argname} lacks the required edge(s) {sorted(missing)}.")
        bad = [e for e in edges if e in self.forbidden or (
            self.allowed is not None and e not in self.allowed and e not in self.required)]
        if bad:
            raise ValueError(f"{argname} contains forbidden or disallowed edge(s) {sorted(bad)}.")
        if self.max_in_degree is not None:
            over = [graph.names[c] for c, ps in enumerate(graph.parents) if len(ps) > self.max_in_degree]
            if over:
                raise ValueError(f"{argname}: node(s) {over} exceed max_in_degree={self.max_in_degree}.")

    def random_graph(self, graph, rng, n_moves):
        """A random legal DAG: the required edges plus up to ``n_moves`` random additions."""
        g = graph.with_parents([[p for p in ps if (p, c) in self.required]
                                for c, ps in enumerate(graph.parents)])
        for _ in range(n_moves):
            adds = [(m, h) for m, h in self.neighbours(g) if m[0] == "add"]
            if not adds:
                break
            g = adds[rng.randint(len(adds))][1]
        return g


# --------------------------------------------------------------------------- warm start
class _WarmFromParent:
    """Start a neighbour's VBEM from its parent's posterior.

    The families that did not change start from the parent's q(theta_j) (the
    estimator's ``init_params="posterior"`` with the parent's ``posterior_`` as
    ``init_posterior``); those that did are drawn from their prior, as in a cold
    start: carrying the parent's table over (broadcast across a new parent) would
    leave VBEM at the symmetric point where the child ignores it.  One run
    (``n_init=1``).  Any q(hidden) is a valid starting point, so the final
    ``lower_bound_`` is still a lower bound; only the optimum reached may differ from
    a cold start.  Used only for ``method="vb"`` candidates with the same nodes as
    the parent.  A graph that differs from the parent in more than two families (a
    joint move such as ``"attach"``: little of the parent is left to start from, and a
    newly attached hidden node's fit depends on its start) is fitted cold, with the
    estimator's own ``init_params`` and ``n_init``.
    """

    def __init__(self, parent, graph):
        self.parent = parent
        self.graph = graph

    def __call__(self, est, X, fit_params):
        parent, graph = self.parent, self.graph
        fitted = getattr(parent, "structure_", None)
        if (getattr(est, "method", "vb") != "vb" or not hasattr(parent, "posterior_")
                or fitted is None or tuple(fitted.names) != graph.names
                or tuple(fitted.hidden) != graph.hidden):
            return est
        unchanged = {
            name: parent.posterior_[j]
            for j, name in enumerate(graph.names)
            if tuple(fitted.parents[j]) == graph.parents[j]
        }
        if len(graph.names) - len(unchanged) > 2:
            return est
        return est.set_params(init_params="posterior", init_posterior=unchanged, n_init=1)


# --------------------------------------------------------------------------- search
def _best_predicts_hidden(attr):
    """Availability of ``predict`` / ``predict_proba``: those of the best estimator,
    which by default predict a hidden node, so not after selecting a structure without
    one (the default over the columns of ``X``); ``best_estimator_.predict_proba(X,
    node=...)`` still predicts an observed node from the others."""
    delegated = _best_has(attr)

    def check(self):
        delegated(self)
        structure = getattr(getattr(self, "best_estimator_", None), "structure_", None)
        if structure is not None and not any(structure.hidden):
            raise AttributeError(
                f"{type(self).__name__}.{attr} predicts a hidden node, and the selected "
                f"structure has none; best_estimator_.{attr}(X, node=...) predicts an "
                "observed node from the others.")
        return True

    return check


class DAGStructureSearch(EdgeSetSearchBase):
    """Structure search over discrete DAGs with hidden nodes.

    Two modes:

    ``search="exhaustive"``
        Fit and score every structure in ``structures`` (for example Beal's 136
        bipartite structures, ``[bipartite_structure(c) for c in
        enumerate_bipartite_structures()]`` from :mod:`sklearn_vb.datasets`), exactly
        as :class:`StructureSearch` over a ``structure`` grid.
    ``search="greedy"``
        Hill-climbing over single-edge moves (add, remove, reverse) from
        ``initial_structure`` (default: the estimator's ``structure``; when neither is
        given, the graph without edges over the columns of ``X``), keeping the
        graph acyclic, within ``max_in_degree``, with ``required_edges`` always
        present and ``forbidden_edges`` never; ``allowed_edges`` restricts the edge
        class (for instance hidden -> observed only).  A hidden node without children
        is attached by the joint move ``"attach"`` (see ``moves``): from the empty
        graph the climb weighs the latent-class model of all observed nodes against
        the single observed edges.

        *Fully observed data* (no hidden node, no missing value) *scored by* ``"bic"``,
        ``"bic_map"`` *or* ``"vb"`` (with a prior that is one value for every table: a
        number, ``"uniform"`` or ``"bdeu"``): these scores are sums of one term per
        family (node and parent set), so a move is scored from the counts of the one
        or two families it changes, cached per family, without fitting a model per
        neighbour.  The climb is a tabu search: it takes the best legal move whose
        graph is not among the last ``tabu_length`` graphs visited, through moves
        that do not improve the score too (at most ``tabu_steps`` in a row without a
        new best graph), and ``n_restarts`` further climbs start from the best graph
        so far perturbed by ``2 * n_nodes`` random legal moves.  Only the best graph
        is fitted (``best_estimator_``).

        *Otherwise* (hidden nodes, missing values, other scores) every neighbour is
        fitted and scored (in parallel) and the climb moves to the best one while it
        improves the score by more than ``tol`` nats; ``n_restarts`` further climbs
        start from random legal graphs.  Every structure is fitted once; with
        ``warm_start=True`` and VB, a neighbour's VBEM starts from its parent's
        posterior, which typically needs far fewer iterations: one run (``n_init=1``)
        with the estimator's ``init_params="posterior"`` and the parent's
        ``posterior_`` of the unchanged families as ``init_posterior`` (an exact VBE
        step under the parent's expected log-CPTs; changed families are drawn from
        their prior).  An ``"attach"`` move changes the tables of all the new children
        at once and is fitted cold, with the estimator's own restarts.  A warm-started
        ``best_estimator_`` keeps those parameters, so
        ``clone(best_estimator_).fit(X)`` repeats its fit; set
        ``init_params="random", init_posterior=None`` to refit it from scratch.

    Parameters
    ----------
    estimator : VBDiscreteDAG
        Gives the node set, cardinalities, hidden nodes, prior and fitting options;
        its ``structure`` is the default starting graph.  Without one (and without
        ``initial_structure``) the greedy search starts from the columns of ``X``
        without edges and without hidden nodes, named as VBDiscreteDAG names the columns
        of a table (a DataFrame's string column names, else ``x0``, ``x1``, ...); a
        hidden node needs a structure that names it.
    search : {"greedy", "exhaustive"}, default="greedy"
    structures : list, default=None
        Exhaustive mode: the candidates, each a structure accepted by
        ``VBDiscreteDAG(structure=...)`` or a tuple ``(structure, cardinalities,
        hidden)``.
    initial_structure : structure or None
        Greedy mode: the starting graph (default ``estimator.structure``).
    scoring, alias_correction, refit, n_jobs, random_state, verbose, error_score, memory
        As :class:`StructureSearch`.  The greedy moves follow the selection score
        (the first, or the one ``refit`` names); ``"vb"``, ``"bic"`` and ``"cs"`` are
        the intended choices.
    max_in_degree : int or None
    allowed_edges, required_edges, forbidden_edges : iterables of (parent, child)
        Node names as in the structure.
    moves : tuple, default=("add", "remove", "reverse", "attach")
        The greedy moves.  ``"attach"`` makes a hidden node that has no children the
        parent of every observed node it may legally point to (within
        ``allowed_edges``, ``forbidden_edges``, ``max_in_degree`` and acyclicity), in
        one move scored by a fit of the hidden node with all those children; later
        ``"remove"`` moves drop the children it does not explain.  Without it a hidden
        node is never attached from a graph where it has no children: one edge from it
        explains nothing (a mixture over one child's table is that table), so every
        single edge out of it lowers the score.
    n_restarts : int or "auto", default="auto"
        Further climbs.  ``"auto"``: 10 with a decomposable score (cheap), else 0.
    max_steps : int or None, default=None
        Maximum accepted moves per climb (None: no limit; a climb ends at a local
        optimum, or at the end of its tabu walk).
    tabu_length : int, default=100
        Decomposable scores: the number of most recently visited graphs a move may
        not return to.
    tabu_steps : int or "auto", default="auto"
        Decomposable scores: how many moves in a row the climb makes without finding
        a better graph than its best before it stops (0: plain hill climbing, which
        stops at the first local optimum).  ``"auto"``: 30 with a decomposable score,
        else 0 (the only value the fit-per-neighbour climb takes).
    tol : float, default=1e-6
        Minimum improvement (nats) for a move to be accepted.
    warm_start : bool, default=True

    Attributes
    ----------
    results_ : dict of arrays
        One entry per structure scored (exhaustive: in the given order; greedy: in the
        order first evaluated; greedy with a decomposable score: one per graph the
        climbs visited, the neighbours being scored by their changed families only), with the columns of :class:`StructureSearch` plus
        ``structure`` (greedy: the parent dict), ``n_edges``, ``restart`` and
        ``step`` (greedy).
    path_ : list of dict
        Greedy: the accepted moves ``{"restart", "step", "move", "score",
        "structure"}``, each climb starting with ``move=None`` (a tabu walk also
        accepts moves that lower the score).
    best_structure_ : dict
        The selected structure as ``{child: [parents]}``.
    best_estimator_, best_score_, best_index_, best_params_ : as StructureSearch.
        ``predict`` and ``predict_proba`` (which predict a hidden node by default) are
        those of ``best_estimator_``, available when the selected structure has a
        hidden node.

    Examples
    --------
    Without a structure the greedy search takes its nodes from the columns; here the
    second column copies the first in 90% of the rows and the third is independent:

    >>> import numpy as np
    >>> from sklearn_vb import VBDiscreteDAG
    >>> from sklearn_vb.model_selection import DAGStructureSearch
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, size=300)
    >>> b = np.where(rng.random(300) < 0.9, a, rng.integers(0, 3, size=300))
    >>> X = np.column_stack([a, b, rng.integers(0, 3, size=300)])
    >>> search = DAGStructureSearch(VBDiscreteDAG(), random_state=0).fit(X)
    >>> search.best_structure_
    {'x0': [], 'x1': ['x0'], 'x2': []}

    Two candidate structures for four observed columns with one hidden parent:

    >>> from sklearn_vb import VBDiscreteDAG
    >>> from sklearn_vb.datasets import make_beal_dag
    >>> from sklearn_vb.model_selection import DAGStructureSearch
    >>> X = make_beal_dag(n_samples=100, random_state=0)
    >>> candidates = [{"h": [], 0: ["h"], 1: ["h"], 2: ["h"], 3: ["h"]},
    ...               {"h": [], 0: ["h"], 1: ["h"], 2: [], 3: []}]
    >>> est = VBDiscreteDAG(cardinalities={"h": 2, 0: 5, 1: 5, 2: 5, 3: 5}, hidden="h",
    ...                     n_init=1, random_state=0)
    >>> search = DAGStructureSearch(est, search="exhaustive", structures=candidates,
    ...                             scoring=["vb", "bic"], random_state=0).fit(X)
    >>> sorted(search.results_["n_edges"].tolist())
    [2, 4]
    """

    _parameter_constraints: dict = {
        **EdgeSetSearchBase._parameter_constraints,
        "search": [StrOptions({"greedy", "exhaustive"})],
        "max_in_degree": [Interval(Integral, 0, None, closed="left"), None],
        "allowed_edges": "no_validation",
        "required_edges": "no_validation",
        "forbidden_edges": "no_validation",
        "moves": [tuple, list],
        "n_restarts": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "max_steps": [Interval(Integral, 0, None, closed="left"), None],
        "tabu_length": [Interval(Integral, 0, None, closed="left")],
        "tabu_steps": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "warm_start": ["boolean"],
    }

    def __init__(
        self,
        estimator,
        *,
        search="greedy",
        structures=None,
        initial_structure=None,
        scoring="vb",
        alias_correction="auto",
        max_in_degree=None,
        allowed_edges=None,
        required_edges=(),
        forbidden_edges=(),
        moves=("add", "remove", "reverse", "attach"),
        n_restarts="auto",
        max_steps=None,
        tabu_length=100,
        tabu_steps="auto",
        tol=1e-6,
        warm_start=True,
        refit=True,
        n_jobs=None,
        random_state=None,
        verbose=0,
        error_score=np.nan,
        memory=None,
    ):
        self.estimator = estimator
        self.search = search
        self.structures = structures
        self.initial_structure = initial_structure
        self.scoring = scoring
        self.alias_correction = alias_correction
        self.max_in_degree = max_in_degree
        self.allowed_edges = allowed_edges
        self.required_edges = required_edges
        self.forbidden_edges = forbidden_edges
        self.moves = moves
        self.n_restarts = n_restarts
        self.max_steps = max_steps
        self.tabu_length = tabu_length
        self.tabu_steps = tabu_steps
        self.tol = tol
        self.warm_start = warm_start
        self.refit = refit
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.error_score = error_score
        self.memory = memory

    # ------------------------------------------------------------ delegation
    @available_if(_best_predicts_hidden("predict"))
    def predict(self, X, **params):
        """Call ``predict`` on the best candidate (by default, the most probable state of
        its first hidden node)."""
        return self._check_best("predict").predict(X, **params)

    @available_if(_best_predicts_hidden("predict_proba"))
    def predict_proba(self, X, **params):
        """Call ``predict_proba`` on the best candidate (by default, the posterior of its
        first hidden node)."""
        return self._check_best("predict_proba").predict_proba(X, **params)

    # ------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, **fit_params):
        """Search structures for the data ``X`` (one column per observed node)."""
        if self.search == "exhaustive":
            return self._fit_exhaustive(X, y, fit_params)
        return self._fit_greedy(X, y, fit_params)

    def _fit_exhaustive(self, X, y, fit_params):
        if not self.structures:
            raise ValueError("search='exhaustive' needs a non-empty list of structures.")
        grid = []
        for s in self.structures:
            if isinstance(s, tuple) and len(s) == 3 and isinstance(s[0], dict):
                grid.append({"structure": [s[0]], "cardinalities": [s[1]], "hidden": [s[2]]})
            else:
                grid.append({"structure": [s]})
        return self._fit_grid(X, y, fit_params, grid, _count_edges)

    def _graph_from(self, structure):
        params = self.estimator.get_params()
        parsed = parse_structure(structure, params.get("cardinalities"), params.get("hidden"))
        return _Graph(parsed.names, parsed.hidden, parsed.parents)

    def _empty_graph_over_columns(self, X):
        """The starting graph when neither ``initial_structure`` nor the estimator's
        ``structure`` gives one: no edges, one observed node per column of ``X``, named as
        the estimator names the columns of a table without a structure.  No hidden node:
        the data cannot name one, and a fully observed graph keeps the climb on cached
        family scores."""
        params = self.estimator.get_params()
        if params.get("hidden") not in (None, (), []):
            raise ValueError(
                f"hidden={params['hidden']!r} needs a structure that names the hidden node(s): "
                "give the estimator a structure or the search an initial_structure.")
        # the estimator's own validation of a categorical table: the same errors, and the
        # column names it would read
        probe = clone(self.estimator)
        columns, _ = validate_categorical_data(probe, X, reset=True)
        names = observed_column_names(getattr(probe, "feature_names_in_", None), len(columns))
        graph = self._graph_from({name: [] for name in names})
        extra = [n for n in graph.names if n not in set(names)]
        if extra:
            raise ValueError(
                f"cardinalities names node(s) {extra} that are not columns of X {names}; "
                "hidden nodes need a structure (the estimator's or initial_structure).")
        return graph

    def _fit_greedy(self, X, y, fit_params):
        specs = C.resolve_scoring(self.scoring)
        names = list(specs)
        selection = self.refit if isinstance(self.refit, str) else names[0]
        if selection not in names:
            raise ValueError(f"refit={self.refit!r} is not one of the scores {names}.")
        flags = {n: C.ranking_uses_correction(s, self.alias_correction, n) for n, s in specs.items()}
        bad_moves = set(self.moves) - {"add", "remove", "reverse", "attach"}
        if bad_moves or not self.moves:
            raise ValueError(
                "moves must be a non-empty subset of ('add', 'remove', 'reverse', 'attach'); "
                f"got {self.moves!r}."
            )
        structure = (self.initial_structure if self.initial_structure is not None
                     else self.estimator.get_params().get("structure"))
        start = (self._empty_graph_over_columns(X) if structure is None
                 else self._graph_from(structure))
        moveset = _MoveSet(
            start,
            None if self.allowed_edges is None else _node_pairs(start, self.allowed_edges, "allowed_edges"),
            _node_pairs(start, self.required_edges, "required_edges"),
            _node_pairs(start, self.forbidden_edges, "forbidden_edges"),
            self.max_in_degree,
            tuple(self.moves),
        )
        clash = moveset.required & moveset.forbidden
        if clash:
            raise ValueError(f"edges {sorted(clash)} are both required and forbidden.")
        moveset.check(start, "initial_structure")

        families = self._family_scores(X, y, fit_params, specs, start)
        if families is not None:
            return self._climb_families(X, y, fit_params, specs, names, selection, flags,
                                        start, moveset, families)
        if self.tabu_steps not in ("auto", 0):
            raise ValueError(
                f"tabu_steps={self.tabu_steps!r} needs a decomposable score: fully observed data "
                f"(no hidden node, no missing value) scored by {list(DECOMPOSABLE_METHODS)}.")
        specs_methods = {getattr(sp, "method", None) for sp in specs.values()}
        warm = (self.warm_start and getattr(self.estimator, "method", "vb") == "vb"
                and "vb" in specs_methods)
        n_restarts = 0 if self.n_restarts == "auto" else self.n_restarts
        return self._climb(X, y, fit_params, specs, names, selection, flags, start, moveset,
                           _WarmFromParent if warm else None, n_restarts=n_restarts,
                           max_steps=self.max_steps)

    def _family_scores(self, X, y, fit_params, specs, start):
        """The family-score cache when the search can run on decomposable scores (no
        hidden node, scores among DECOMPOSABLE_METHODS, complete data), else None."""
        # ``y`` is not looked at: the family scores exist only for VBDiscreteDAG (see
        # decomposable_family_scores), whose fit ignores it
        if any(start.hidden) or fit_params or not all(
                getattr(sp, "method", None) in DECOMPOSABLE_METHODS for sp in specs.values()):
            return None
        # the start graph's estimator validates and encodes the data as every candidate's
        # fit would
        est = clone(self.estimator).set_params(structure=start.as_structure())
        try:
            families, structure = prepared_family_scores(est, specs, X, fit_params,
                                                         start.hidden)
        except Exception:
            return None  # the fit-per-neighbour climb reports the failure as usual
        if families is not None and tuple(structure.names) != start.names:
            return None
        return families

    def _climb_families(self, X, y, fit_params, specs, names, selection, flags, start, moveset,
                        families):
        """Tabu search on cached family scores (see the class docstring); every graph
        visited is a row of ``results_`` and only the best one is fitted and scored by
        the scorers."""
        J = len(start.names)
        pair_ok = np.zeros((J, J), dtype=bool)
        for p, c in moveset.pairs:
            pair_ok[p, c] = True
        required = np.zeros((J, J), dtype=bool)
        for p, c in moveset.required:
            required[p, c] = True
        select = families.methods.index(specs[selection].method)
        climb = TabuClimb(
            families, select, pair_ok, required, self.max_in_degree,
            tabu_length=self.tabu_length,
            tabu_steps=30 if self.tabu_steps == "auto" else self.tabu_steps,
            max_steps=self.max_steps, tol=self.tol,
            kinds=[k for k in self.moves if k != "attach"],
        )
        n_restarts = 10 if self.n_restarts == "auto" else self.n_restarts
        entropy = C.base_entropy(self.random_state)
        rng = check_random_state(entropy)
        visits = []

        def on_visit(v):
            if self.verbose >= 2:
                self._log(f"restart {v.restart} step {v.step}: {v.move} "
                          f"{selection}={v.totals[select]:.4f}", level=2)
            visits.append(v)

        best = climb.climb([list(p) for p in start.parents], 0, on_visit)
        for restart in range(1, n_restarts + 1):
            perturbed = climb.perturb([list(p) for p in best.parents], rng, 2 * J)
            found = climb.climb(perturbed, restart, on_visit)
            self._log(f"restart {restart}: {selection}={found.totals[select]:.4f}")
            if found.totals[select] > best.totals[select] + self.tol:
                best = found

        graphs, outs, meta, path = [], [], [], []
        row = set()
        node = start.names
        named = {}  # parent index tuple -> parent names (a climb revisits few families)
        for v in visits:
            move = None
            if v.move is not None:
                kind, p, c = v.move
                move = (kind, node[p], node[c])
            # a visit's parents are already the sorted index tuples that key a graph
            graph = _Graph(node, start.hidden, v.parents, presorted=True, named=named)
            path.append({"restart": v.restart, "step": v.step, "move": move,
                         "score": float(v.totals[select]), "structure": graph.as_structure()})
            if v.parents in row:
                continue
            row.add(v.parents)
            graphs.append(graph)
            meta.append((v.restart, v.step))
            outs.append(_family_out(families, v.totals))
        # the best graph (the first of the highest score, as the ranking takes it) is
        # fitted; its scores stay the family sums, which are the scorers' values
        i = int(np.argmax([o["scores"][selection].log_evidence for o in outs]))
        params = {"structure": graphs[i].as_structure()}
        fitted = C.fit_and_score(clone(self.estimator), params, X, y, fit_params, {},
                                 C.candidate_seed(entropy, params), self.error_score)
        if fitted["fit_error"] is not None:
            raise RuntimeError(f"fitting the best structure failed:\n{fitted['fit_error']}")
        fitted["scores"] = outs[i]["scores"]
        outs[i] = fitted
        return self._finish_climb(outs, graphs, meta, path, specs, names, selection, flags)


def _family_out(families, totals):
    """A ``results_`` row of a graph scored from its family terms (not fitted)."""
    return {"estimator": None, "scores": families.score_results(totals), "fit_time": np.nan,
            "score_time": np.nan, "n_iter": -1, "converged": True, "lower_bound": np.nan,
            "fit_error": None, "score_errors": {}, "alias_missing": [], "seed": -1}


def _count_edges(structure):
    if isinstance(structure, dict):
        return int(sum(len(p or ()) for p in structure.values()))
    if isinstance(structure, np.ndarray):
        return int(np.count_nonzero(structure))
    return len(structure)
