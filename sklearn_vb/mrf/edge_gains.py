"""Predicted changes of the Laplace log evidence of a pairwise MRF for single-edge moves.

At the MAP ``lambda^`` of a graph with exact inference, the Laplace evidence

``L = lambda^T S - N ln Z - 1/2 lambda^T P lambda + 1/2 ln det P - 1/2 ln det A``,
``A = N C + P``,

changes under one more edge block ``b`` (its weights at 0) by, to second order in the
new weights (the Rao score test of the evidence),

``dL_add ~ 1/2 g^T H^-1 g + 1/2 ln det P_b - 1/2 ln det H``,

``g = S_b - N E[f_b]`` the gradient of the new weights (the old ones are at their
optimum) and ``H = A_bb - A_bo A_oo^-1 A_ob`` the Schur complement of the old block in
the enlarged ``A`` (``det A_new = det A_oo det H``); both need only the moments of the
current model.  Removing block ``b`` changes it by

``dL_remove ~ -1/2 w_b^T B^-1 w_b - 1/2 ln det P_b - 1/2 ln det B``,  ``B = (A^-1)_bb``,

the optimum of the quadratic model with ``w_b`` forced to 0 (``det A_-b = det A det B``).
The approximation is exact in the limit of small moves, so it ranks the weak edges a
search weighs near its end well; a search uses it to choose which neighbours to fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .inference import ExactEngine
from .layout import MRFLayout

__all__ = ["CompleteGraphFeatures", "EdgeMovePredictions", "predicted_gains"]


@dataclass
class CompleteGraphFeatures:
    """The edge features of every pair of nodes: their data statistics ``S`` (indexed
    like the complete graph's features), the partial assignment each indicates
    (``nodes``, ``states``: :meth:`MRFLayout.feature_assignments`), whether the joint
    states can be enumerated (``enumerable``) and each pair's feature block."""

    layout: MRFLayout
    S: np.ndarray
    N: float
    enumerable: bool
    blocks: dict  # (i, j) -> feature indices of the complete layout
    nodes: np.ndarray
    states: np.ndarray

    @classmethod
    def from_codes(cls, n_states, codes, max_states):
        p = len(n_states)
        pairs = np.array([(i, j) for i in range(p) for j in range(i + 1, p)],
                         dtype=np.int64).reshape(-1, 2)
        layout = MRFLayout(n_states, pairs)
        S = layout.statistics(codes)
        K = layout.n_states
        blocks = {(int(a), int(b)): layout.edge_feat[e, 1:K[a], 1:K[b]].ravel()
                  for e, (a, b) in enumerate(pairs)}
        nodes, states = layout.feature_assignments()
        return cls(layout, S, float(codes.shape[0]), layout.n_states_total <= max_states, blocks,
                   nodes, states)


@dataclass
class EdgeMovePredictions:
    """``gains[k]``: the predicted change of the Laplace evidence of move ``k`` (nan
    where the quadratic model has no maximum); ``steps[k]``: the Newton step of the
    enlarged (or reduced) posterior from the parent's MAP, as ``(delta of the parent's
    weights, the added block's weights)`` (``None`` for the block of a removal)."""

    gains: np.ndarray
    steps: list
    parent_names: np.ndarray
    moves: list

    def start(self, k, layout):
        """The weights, in the order of ``layout`` (the graph after move ``k``), at which
        the Newton fit of that graph starts: the parent's MAP plus the Newton step."""
        step = self.steps[k]
        if step is None:
            return None
        delta, block = step
        values = dict(zip(self.parent_names, delta))
        names = layout.feature_names()
        if block is not None:
            kind, a, b = self.moves[k]
            K = layout.n_states
            e = int(np.flatnonzero((layout.edges[:, 0] == a) & (layout.edges[:, 1] == b))[0])
            values.update(zip(names[layout.edge_feat[e, 1:K[a], 1:K[b]].ravel()], block))
        return np.array([values.get(n, 0.0) for n in names])


def predicted_gains(estimator, features, moves, precision, new_edge_precision):
    """Predicted changes of the Laplace log evidence (:class:`EdgeMovePredictions`) of
    the moves ``("add", i, j)`` and ``("remove", i, j)`` from the fitted ``estimator`` (a
    :class:`PairwiseMRF` with exact inference, ``point="map"``); ``None`` when the
    prediction does not apply (another inference, no enumerated features).
    ``precision`` is the prior precision of the estimator's features,
    ``new_edge_precision`` that of an added edge's."""
    engine = getattr(estimator, "_engine_", None)
    if (not isinstance(engine, ExactEngine) or not features.enumerable
            or estimator.feature_covariance_ is None):
        return None
    layout = estimator.layout_
    P_old = np.asarray(precision, dtype=float)
    coef = estimator.coef_
    N = float(estimator.n_samples_)
    A = N * estimator.feature_covariance_ + np.diag(P_old)
    try:
        cho = cho_factor(A, lower=True)
    except np.linalg.LinAlgError:
        return None
    gains = np.full(len(moves), np.nan)
    steps = [None] * len(moves)
    adds = [(k, m) for k, m in enumerate(moves) if m[0] == "add"]
    if adds:
        cols = np.concatenate([features.blocks[(m[1], m[2])] for _, m in adds])
        # the new features' means and covariances under the parent, from its marginals
        kappa_n, C_no, C_nn = engine.assignment_moments(coef, features.nodes[cols],
                                                        features.states[cols])
        g = features.S[cols] - N * kappa_n
        Y = cho_solve(cho, N * C_no.T)                 # A_oo^-1 A_ob, (F, n_new)
        if cols.size == len(adds):  # one feature per edge (binary nodes): H is a scalar
            Pn = float(new_edge_precision)
            H = N * np.diag(C_nn) + Pn - N * np.einsum("kf,fk->k", C_no, Y)
            with np.errstate(invalid="ignore", divide="ignore"):
                gk = 0.5 * g**2 / H + 0.5 * np.log(Pn) - 0.5 * np.log(H)
            for c, (k, m) in enumerate(adds):
                if H[c] > 0:
                    gains[k] = gk[c]
                    w = np.array([g[c] / H[c]])
                    steps[k] = (coef - Y[:, c] * w[0], w)
            adds = []
        start = 0
        for k, m in adds:
            b = features.blocks[(m[1], m[2])].size
            sl = slice(start, start + b)
            start += b
            Pb = np.full(b, float(new_edge_precision))
            H = N * C_nn[sl, sl] + np.diag(Pb) - N * C_no[sl] @ Y[:, sl]
            try:
                Lh = np.linalg.cholesky(0.5 * (H + H.T))
            except np.linalg.LinAlgError:
                continue
            z = np.linalg.solve(Lh, g[sl])
            gains[k] = (0.5 * float(z @ z) + 0.5 * float(np.sum(np.log(Pb)))
                        - float(np.sum(np.log(np.diag(Lh)))))
            w = np.linalg.solve(Lh.T, z)               # H^-1 g
            steps[k] = (coef - Y[:, sl] @ w, w)
    removes = [(k, m) for k, m in enumerate(moves) if m[0] == "remove"]
    if removes:
        Ainv = cho_solve(cho, np.eye(A.shape[0]))
        index = {(int(a), int(b)): e for e, (a, b) in enumerate(layout.edges)}
        K = layout.n_states
        if np.all(K == 2):  # one feature per edge: B is a scalar, all removals at once
            ks = np.array([k for k, _ in removes])
            idx = layout.edge_feat[[index[(m[1], m[2])] for _, m in removes], 1, 1]
            B = Ainv[idx, idx]
            ok = B > 0
            root = np.sqrt(np.where(ok, B, 1.0))
            z = coef[idx] / root
            gk = -0.5 * z * z - 0.5 * np.log(P_old[idx]) - np.log(root)
            gains[ks[ok]] = gk[ok]
            for c in np.flatnonzero(ok):
                steps[ks[c]] = (coef - Ainv[:, idx[c]] * (z[c] / root[c]), None)
            removes = []
        for k, m in removes:
            e = index[(m[1], m[2])]
            a, b = layout.edges[e]
            idx = layout.edge_feat[e, 1:K[a], 1:K[b]].ravel()
            B = Ainv[np.ix_(idx, idx)]
            try:
                Lb = np.linalg.cholesky(0.5 * (B + B.T))
            except np.linalg.LinAlgError:
                continue
            z = np.linalg.solve(Lb, coef[idx])
            gains[k] = (-0.5 * float(z @ z) - 0.5 * float(np.sum(np.log(P_old[idx])))
                        - float(np.sum(np.log(np.diag(Lb)))))
            # the optimum of the quadratic model with the block at 0
            steps[k] = (coef - Ainv[:, idx] @ np.linalg.solve(Lb.T, z), None)
    return EdgeMovePredictions(gains, steps, layout.feature_names(), list(moves))
