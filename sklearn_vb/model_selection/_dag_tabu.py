"""Tabu search over DAGs under a decomposable score.

Moves are single-edge additions, removals and reversals; a move changes one family
(two for a reversal), so its score change is the difference of cached family terms
(:class:`~sklearn_vb.model_selection._dag_families.FamilyScores`) and only the changed
families' columns of the gain tables are recomputed after a move.  All legal moves are
ranked by that change; the climb takes the best one whose graph is not among the last
``tabu_length`` graphs visited.  While the best move improves the score it is plain
best-improvement hill climbing; at a local optimum the climb goes on through the best
non-tabu move (which may lower the score, or keep it: reversing a covered edge walks
the equivalence class) for up to ``tabu_steps`` moves without a new best graph, and
returns the best graph it visited.  Further climbs (``n_restarts``) start from the best
graph so far perturbed by a few random legal moves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._dag_kernels import best_move, legal_moves

__all__ = ["TabuClimb", "Visit"]

_KINDS = ("add", "remove", "reverse")


@dataclass(slots=True)
class Visit:
    """One graph on the path of a climb."""

    parents: tuple  # sorted parent index tuples, one per node
    totals: np.ndarray  # every method's score
    restart: int
    step: int
    move: tuple | None = None  # (kind, parent, child) in node indices


class TabuClimb:
    """Tabu search from a start graph over the legal moves of a constraint set.

    ``pair_ok[p, c]``: the edge ``p -> c`` may exist; ``required[p, c]``: it must;
    ``max_in_degree``: None or the parent-count limit; ``kinds``: the move kinds used.
    ``select`` is the index of the selection score in ``scores.methods``.
    """

    def __init__(self, scores, select, pair_ok, required, max_in_degree, *, tabu_length,
                 tabu_steps, max_steps, tol, kinds=_KINDS):
        self.scores = scores
        self.select = select
        self.pair_ok = np.asarray(pair_ok, dtype=bool)
        self.required = np.asarray(required, dtype=bool)
        self.max_in_degree = max_in_degree
        self.tabu_length = tabu_length
        self.tabu_steps = tabu_steps
        self.max_steps = max_steps
        self.tol = tol
        self.kinds = tuple(k in kinds for k in _KINDS)
        self._kinds = np.array(self.kinds, dtype=bool)
        J = self.pair_ok.shape[0]
        self.J = J
        # the nodes that may be added to each family, in index order
        self._candidates = [[p for p in range(J) if p != c and self.pair_ok[p, c]]
                            for c in range(J)]
        # (family, parents) -> its gain columns, kept across restarts
        self._columns = {}
        # Zobrist keys: a graph's hash is the XOR of its edges' keys, updated per move
        self._zobrist = np.random.default_rng(0x5EED).integers(
            0, 2**63 - 1, size=(J, J), dtype=np.int64)

    # ------------------------------------------------------------ state
    def _set_state(self, parents):
        self._set_graph(parents, scored=True)

    def _set_graph(self, parents, scored):
        """The graph ``parents``, with its family scores and gain tables (``scored``) or
        only the legality pattern of the gains (:meth:`_set_structure`)."""
        J = self.J
        self._scored = scored
        self.parents = [tuple(sorted(p)) for p in parents]
        self.E = np.zeros((J, J), dtype=bool)
        for c, ps in enumerate(self.parents):
            self.E[list(ps), c] = True
        if scored:
            self.fam = np.array([self.scores.local(c, ps) for c, ps in enumerate(self.parents)])
        self.add_gain = np.full((J, J), -np.inf)
        self.rem_gain = np.full((J, J), -np.inf)
        for c in range(J):
            if scored:
                self._refresh(c)
            else:
                self._mark(c)
        self.hash = int(np.bitwise_xor.reduce(self._zobrist[self.E])) if self.E.any() else 0

    def _refresh(self, c):
        """Gains of adding each node to / removing each parent from family ``c``."""
        key = (c, self.parents[c])
        cols = self._columns.get(key)
        if cols is None:
            cols = self._columns[key] = self._gain_columns(c)
        self.add_gain[:, c], self.rem_gain[:, c] = cols

    def _gain_columns(self, c):
        """The add and remove gain columns of family ``c`` with its current parents (they
        depend on that family alone, so a climb that comes back to it reuses them)."""
        s, ps = self.select, self.parents[c]
        base = self.fam[c, s]
        full = self.max_in_degree is not None and len(ps) >= self.max_in_degree
        rem = list(ps)
        add = [] if full else [p for p in self._candidates[c] if p not in ps]
        sets = [ps[:i] + ps[i + 1:] for i in range(len(ps))]
        sets += [tuple(sorted(ps + (p,))) for p in add]
        values = self.scores.select_values(c, sets, s) - base
        col_add = np.full(self.J, -np.inf)
        col_rem = np.full(self.J, -np.inf)
        col_rem[rem] = values[:len(rem)]
        col_add[add] = values[len(rem):]
        return col_add, col_rem

    def _set_structure(self, parents):
        """The graph ``parents`` without its scores: the gain tables only mark the legal
        additions (0) and the rest (-inf), which is all a random walk reads of them."""
        self._set_graph(parents, scored=False)

    def _mark(self, c):
        """The legality pattern of :meth:`_gain_columns` for family ``c``: every gain
        there is finite (a family term is a finite number), so an addition is legal
        exactly where its gain would be finite."""
        ps = self.parents[c]
        full = self.max_in_degree is not None and len(ps) >= self.max_in_degree
        self.add_gain[:, c] = -np.inf
        self.rem_gain[:, c] = -np.inf
        if not full:
            self.add_gain[[p for p in self._candidates[c] if p not in ps], c] = 0.0
        self.rem_gain[list(ps), c] = 0.0

    def _set_family(self, c, ps):
        self.parents[c] = tuple(sorted(ps))
        if not self._scored:
            self._mark(c)
            return
        self.fam[c] = self.scores.local(c, self.parents[c])
        self._refresh(c)

    def apply(self, kind, p, c):
        z = self._zobrist
        if kind == "add":
            self.E[p, c] = True
            self.hash ^= int(z[p, c])
            self._set_family(c, self.parents[c] + (p,))
        elif kind == "remove":
            self.E[p, c] = False
            self.hash ^= int(z[p, c])
            self._set_family(c, tuple(x for x in self.parents[c] if x != p))
        else:
            self.E[p, c], self.E[c, p] = False, True
            self.hash ^= int(z[p, c]) ^ int(z[c, p])
            self._set_family(c, tuple(x for x in self.parents[c] if x != p))
            self._set_family(p, self.parents[p] + (c,))

    def total(self):
        return self.fam.sum(axis=0)

    # ------------------------------------------------------------ moves
    def _move_args(self):
        return (self.E, self.add_gain, self.rem_gain, self.pair_ok, self.required,
                -1 if self.max_in_degree is None else self.max_in_degree, self._kinds,
                self._zobrist, self.hash)

    def moves(self):
        """Every legal move as arrays (kind index, parent, child, gain, hash after)."""
        return legal_moves(*self._move_args())

    # ------------------------------------------------------------ search
    def climb(self, start, restart, on_visit):
        """Climb from ``start`` (parent index lists); ``on_visit(Visit)`` sees every
        graph on the path.  Returns the best Visit."""
        self._set_state(start)
        # the hashes of the last tabu_length graphs, a ring (order does not matter)
        ring = np.empty(max(self.tabu_length, 1), dtype=np.int64)
        ring[0], n_ring = self.hash, 1
        best = Visit(tuple(self.parents), self.total(), restart, 0)
        on_visit(best)
        since_best = 0
        step = 0
        while self.max_steps is None or step < self.max_steps:
            banned = ring[:n_ring] if self.tabu_length else ring[:0]
            n_legal, kind, p, c, gain, _ = best_move(*self._move_args(), banned)
            if n_legal == 0 or kind < 0:
                break
            if gain <= self.tol and since_best >= self.tabu_steps:
                break
            step += 1
            move = (_KINDS[kind], int(p), int(c))
            self.apply(*move)
            ring[step % ring.size] = self.hash
            n_ring = min(n_ring + 1, ring.size)
            visit = Visit(tuple(self.parents), self.total(), restart, step, move)
            on_visit(visit)
            if visit.totals[self.select] > best.totals[self.select] + self.tol:
                best, since_best = visit, 0
            else:
                since_best += 1
        return best

    def perturb(self, parents, rng, n_moves):
        """``parents`` after ``n_moves`` random legal moves (the walk reads which moves
        are legal, not their gains, so no family along it is scored)."""
        self._set_structure(parents)
        for _ in range(n_moves):
            kind, p, c, gain, h = self.moves()
            if gain.size == 0:
                break
            i = rng.randint(gain.size)
            self.apply(_KINDS[kind[i]], int(p[i]), int(c[i]))
        return [list(ps) for ps in self.parents]
