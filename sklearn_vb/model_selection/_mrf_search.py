"""Structure search over undirected edge sets of pairwise MRFs: :class:`MRFStructureSearch`."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..datasets import enumerate_undirected_graphs
from ..mrf import prior_precision_vector
from ..mrf.edge_gains import CompleteGraphFeatures, predicted_gains
from ..mrf.layout import MRFLayout, parse_structure
from . import _common as C
from ._edge_search import EdgeSetSearchBase

__all__ = ["MRFStructureSearch", "enumerate_undirected_graphs"]


class _UGraph:
    """An undirected graph on nodes ``0..p-1`` (sorted ``(i, j)``, ``i < j``, edges)."""

    arrow = "--"

    def __init__(self, n_nodes, edges):
        self.names = tuple(range(int(n_nodes)))
        self._edges = frozenset((min(a, b), max(a, b)) for a, b in edges)
        self._key = None

    @property
    def key(self):
        # looked up for every neighbour at every step: sorted once
        if self._key is None:
            self._key = tuple(sorted(self._edges))
        return self._key

    def edges(self):
        return set(self._edges)

    def with_edges(self, edges):
        """The graph on the same nodes with ``edges`` (sorted pairs, ``i < j``)."""
        g = _UGraph.__new__(_UGraph)
        g.names, g._edges, g._key = self.names, frozenset(edges), None
        return g

    def as_structure(self):
        return [tuple(e) for e in self.key]

    def degree(self):
        d = np.zeros(len(self.names), dtype=np.int64)
        for a, b in self._edges:
            d[a] += 1
            d[b] += 1
        return d


def _pairs(n_nodes, edges, argname):
    if edges is None:
        return set()
    try:
        parsed = parse_structure(list(edges), n_nodes)
    except ValueError as exc:
        raise ValueError(f"{argname}: {exc}") from exc
    return {tuple(e) for e in parsed.tolist()}


class _UndirectedMoves:
    """Single-edge additions and removals within ``max_degree``, keeping ``required``
    edges and never adding ``forbidden`` ones."""

    def __init__(self, n_nodes, required, forbidden, max_degree, moves):
        self.required, self.forbidden = required, forbidden
        self.max_degree, self.moves = max_degree, moves
        self.pairs = [(i, j) for i in range(n_nodes) for j in range(i + 1, n_nodes)
                      if (i, j) not in forbidden]

    def neighbours(self, graph):
        edges = graph.edges()
        deg = graph.degree()
        out = []
        if "add" in self.moves:
            for i, j in self.pairs:
                if (i, j) in edges:
                    continue
                if self.max_degree is not None and max(deg[i], deg[j]) >= self.max_degree:
                    continue
                out.append((("add", i, j), graph.with_edges(edges | {(i, j)})))
        if "remove" in self.moves:
            for e in sorted(edges - self.required):
                out.append((("remove",) + e, graph.with_edges(edges - {e})))
        return out

    def check(self, graph, argname):
        edges = graph.edges()
        missing = self.required - edges
        if missing:
            raise ValueError(f"{argname} lacks the required edge(s) {sorted(missing)}.")
        bad = sorted(edges & self.forbidden)
        if bad:
            raise ValueError(f"{argname} contains forbidden edge(s) {bad}.")
        if self.max_degree is not None and np.any(graph.degree() > self.max_degree):
            raise ValueError(f"{argname} exceeds max_degree={self.max_degree}.")

    def random_graph(self, graph, rng, n_moves):
        g = graph.with_edges(self.required)
        for _ in range(n_moves):
            adds = [h for m, h in self.neighbours(g) if m[0] == "add"]
            if not adds:
                break
            g = adds[rng.randint(len(adds))]
        return g


class _WarmFromParent:
    """Start a neighbour's Newton fit from its parent's parameters: the shared features
    keep their values, a new edge starts at 0 (``init="coef"``); or, when the screen
    predicted the move, from the parent's MAP plus the Newton step of the neighbour's
    posterior there (one Newton iteration fewer)."""

    def __init__(self, parent, graph, predictions=None, move_index=None):
        self.parent, self.graph = parent, graph
        self.predictions, self.move_index = predictions, move_index

    def __call__(self, est, X, fit_params):
        parent = self.parent
        if parent is None or not hasattr(parent, "coef_"):
            return est
        layout = MRFLayout(parent.n_states_, parse_structure(self.graph.as_structure(),
                                                             len(self.graph.names)))
        coef = None
        if self.predictions is not None:
            coef = self.predictions.start(self.move_index, layout)
        if coef is None or not np.all(np.isfinite(coef)):
            known = dict(zip(parent.feature_names_, parent.coef_))
            coef = np.array([known.get(name, 0.0) for name in layout.feature_names()])
        return est.set_params(init="coef", init_coef=coef)


class _EdgeGainScreen:
    """Predicted changes of the Laplace evidence of single-edge moves from the fitted
    parent (``predicted_gains`` of ``sklearn_vb/mrf/edge_gains.py``), for the climb's screen;
    the statistics of every pair of columns are computed once, at the first call."""

    def __init__(self, X, width, margin):
        self.X, self.width, self.margin = X, int(width), float(margin)
        self.features = None
        self.last = None  # (parent, predictions, graph key -> move index)

    def warm_factory(self, parent, graph):
        """``_WarmFromParent`` for a neighbour, from the Newton step of the last
        prediction when it was made from ``parent``."""
        if self.last is not None and self.last[0] is parent and graph.key in self.last[2]:
            return _WarmFromParent(parent, graph, self.last[1], self.last[2][graph.key])
        return _WarmFromParent(parent, graph)

    def __call__(self, parent, neighbours):
        self.last = None
        pred = self._predict(parent, [m for m, _ in neighbours])
        if pred is None:
            return None
        self.last = (parent, pred, {g.key: k for k, (_, g) in enumerate(neighbours)})
        return pred.gains

    def _predict(self, parent, moves):
        if getattr(parent, "point", None) != "map" or getattr(parent, "inference_", None) != "exact":
            return None
        var = parent.prior_variance
        if isinstance(var, dict):
            new_precision = 1.0 / float(var.get("edge", 1.0))
        elif np.ndim(var) == 0:
            new_precision = 1.0 / float(var)
        else:  # one variance per feature of one structure: none for a new edge
            return None
        if self.features is None:
            self.features = CompleteGraphFeatures.from_codes(
                parent.n_states_, parent.check_data(self.X), parent.max_exact_states)
        precision = prior_precision_vector(var, parent.layout_)
        return predicted_gains(parent, self.features, moves, precision, new_precision)


def _count_edges(structure):
    if isinstance(structure, np.ndarray):
        return int(np.count_nonzero(np.triu(structure, 1)))
    if structure is None:
        return 0
    if isinstance(structure, str):
        return -1
    return len(structure)


class MRFStructureSearch(EdgeSetSearchBase):
    """Structure search over the undirected edge sets of a :class:`~sklearn_vb.PairwiseMRF`.

    ``search="exhaustive"`` fits and scores every graph in ``structures`` (default: all
    ``2 ** (p (p - 1) / 2)`` graphs on the ``p`` columns of ``X``,
    :func:`enumerate_undirected_graphs`), as :class:`StructureSearch` over a
    ``structure`` grid.  ``search="greedy"`` climbs over single-edge additions and
    removals from ``initial_structure`` (default: the estimator's ``structure``), within
    ``max_degree``, keeping ``required_edges`` and never adding ``forbidden_edges``; the
    hill climber, restarts, parallelism and result tables are those of
    :class:`DAGStructureSearch`.  With ``warm_start=True`` a neighbour's Newton fit starts
    from its parent's parameters (a new edge at 0).  With ``screen`` the climb fits only
    the ``screen`` neighbours whose change of the Laplace evidence, predicted to second
    order from the current graph's fit (``sklearn_vb/mrf/edge_gains.py``: the score test
    of an added edge, the quadratic loss of a removed one), is largest; when none of them
    improves, it fits the others predicted above ``-screen_margin`` nats before it stops.
    The prediction needs the current graph's exact moments: on graphs fitted by belief
    propagation every neighbour is fitted.

    Parameters
    ----------
    estimator : PairwiseMRF
    search : {"greedy", "exhaustive"}, default="greedy"
    structures : list of edge lists or None
    initial_structure : edge list or None
    scoring : default="bethe_laplace"
        Any score of :mod:`sklearn_vb.scoring` (``"bethe_laplace"`` with options through
        :func:`sklearn_vb.scoring.get_scorer`, ``"bic"``, ``"laplace"``, ``"ais"`` ...).
    max_degree : int or None
    required_edges, forbidden_edges : iterables of node pairs
    moves : tuple, default=("add", "remove")
    n_restarts, max_steps, tol, warm_start : as :class:`DAGStructureSearch`.
    screen : int >= 1 or None, default=2
        How many neighbours, predicted best, each step fits; None fits them all.
    screen_margin : float >= 0, default=2.0
        Before the climb stops, the neighbours predicted to lose less than this (nats)
        are fitted too (the prediction is accurate to hundredths of a nat on such
        small moves).
    refit, n_jobs, random_state, verbose, error_score, memory : as
        :class:`DAGStructureSearch`.

    Attributes
    ----------
    results_, path_, best_structure_ (sorted edge list), best_estimator_, best_score_,
    best_index_, best_params_ : as :class:`DAGStructureSearch`.

    Notes
    -----
    Structure scoring of Markov random fields by the Bethe-Laplace (BP-LR) approximation
    of the evidence is Parise & Welling (2006), §2; their §4 compares it with BIC and AIS
    on Boltzmann machines.

    Examples
    --------
    Three binary variables of which only the first two interact:

    >>> import numpy as np
    >>> from sklearn_vb import PairwiseMRF
    >>> from sklearn_vb.model_selection import MRFStructureSearch
    >>> rng = np.random.RandomState(0)
    >>> X = (rng.rand(200, 3) < 0.5).astype(int)
    >>> X[:, 1] = np.where(rng.rand(200) < 0.9, X[:, 0], 1 - X[:, 0])
    >>> search = MRFStructureSearch(PairwiseMRF(), search="exhaustive").fit(X)
    >>> search.best_structure_                  # best of the 8 graphs on 3 nodes
    [(0, 1)]
    """

    _parameter_constraints: dict = {
        **EdgeSetSearchBase._parameter_constraints,
        "search": [StrOptions({"greedy", "exhaustive"})],
        "max_degree": [Interval(Integral, 0, None, closed="left"), None],
        "required_edges": "no_validation",
        "forbidden_edges": "no_validation",
        "moves": [tuple, list],
        "n_restarts": [Interval(Integral, 0, None, closed="left")],
        "max_steps": [Interval(Integral, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "screen": [Interval(Integral, 1, None, closed="left"), None],
        "screen_margin": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, estimator, *, search="greedy", structures=None, initial_structure=None,
                 scoring="bethe_laplace", alias_correction="auto", max_degree=None,
                 required_edges=(), forbidden_edges=(), moves=("add", "remove"), n_restarts=0,
                 max_steps=100, tol=1e-6, warm_start=True, screen=2, screen_margin=2.0,
                 refit=True, n_jobs=None, random_state=None, verbose=0, error_score=np.nan,
                 memory=None):
        self.estimator = estimator
        self.search = search
        self.structures = structures
        self.initial_structure = initial_structure
        self.scoring = scoring
        self.alias_correction = alias_correction
        self.max_degree = max_degree
        self.required_edges = required_edges
        self.forbidden_edges = forbidden_edges
        self.moves = moves
        self.n_restarts = n_restarts
        self.max_steps = max_steps
        self.tol = tol
        self.warm_start = warm_start
        self.screen = screen
        self.screen_margin = screen_margin
        self.refit = refit
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.error_score = error_score
        self.memory = memory

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, **fit_params):
        """Search edge sets for the data ``X`` (one column per node)."""
        shape = np.shape(X)
        if len(shape) != 2:
            raise ValueError(f"X must be a 2-D array (n_samples, n_nodes); got shape {shape}. "
                             "Reshape your data with X.reshape(-1, 1) for a single node.")
        p = shape[1]
        if self.search == "exhaustive":
            structures = (enumerate_undirected_graphs(p) if self.structures is None
                          else list(self.structures))
            if not structures:
                raise ValueError("search='exhaustive' needs a non-empty list of structures.")
            grid = [{"structure": [s]} for s in structures]
            return self._fit_grid(X, y, fit_params, grid, _count_edges)
        specs = C.resolve_scoring(self.scoring)
        names = list(specs)
        selection = self.refit if isinstance(self.refit, str) else names[0]
        if selection not in names:
            raise ValueError(f"refit={self.refit!r} is not one of the scores {names}.")
        flags = {n: C.ranking_uses_correction(s, self.alias_correction, n) for n, s in specs.items()}
        if not self.moves or set(self.moves) - {"add", "remove"}:
            raise ValueError(f"moves must be a non-empty subset of ('add', 'remove'); got {self.moves!r}.")
        init = (self.initial_structure if self.initial_structure is not None
                else self.estimator.get_params().get("structure"))
        start = _UGraph(p, [tuple(e) for e in parse_structure(init, p).tolist()])
        required = _pairs(p, self.required_edges, "required_edges")
        forbidden = _pairs(p, self.forbidden_edges, "forbidden_edges")
        clash = required & forbidden
        if clash:
            raise ValueError(f"edges {sorted(clash)} are both required and forbidden.")
        moveset = _UndirectedMoves(p, required, forbidden, self.max_degree, tuple(self.moves))
        moveset.check(start, "initial_structure")
        screener = (None if self.screen is None
                    else _EdgeGainScreen(X, self.screen, self.screen_margin))
        warm = None
        if self.warm_start:
            warm = _WarmFromParent if screener is None else screener.warm_factory
        self._climb(X, y, fit_params, specs, names, selection, flags, start, moveset, warm,
                    screener=screener)
        return self
