"""Feature layout and exact inference of linear-chain CRFs.

A :class:`CRFLayout` fixes the structure: ``L`` labels (label 0 is the reference), the
input columns that enter the state features (``state_columns``) and those that enter the
transition features (``transition_columns``), and optionally a constant column in both
sets (``bias``).  The canonical parameter vector holds the state weights ``(L - 1, Gs)``
then the transition weights ``(L - 1, L - 1, Gt)`` in C order, the order of the kernels in
:mod:`sklearn_vb.crf._kernels`:

``lambda^T f(t, x) = sum_i W_s[t_i, :] gs_i + sum_{i < T} W_t[t_i, t_{i+1}, :] gt_i``

(rows and columns for label 0 are zero).  With binary labels these are the features of
Parise and Welling (2006, section 5), ``sum_i t_i g^a(x_i)`` and
``sum_i t_i t_{i+1} g^a(x_i)``.

:class:`CRFData` holds a labelled data set in that layout and :class:`CRFEngine` maps a
parameter vector to the exact conditional log partition functions, feature moments and
covariance summed over the sequences, in the form the shared Newton fit
(:func:`~sklearn_vb.mrf.inference.newton_map`) and the Bethe-Laplace scorer expect.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..mrf.inference import Moments
from ._kernels import crf_log_partition_batch, crf_marginals, crf_moments, crf_viterbi

__all__ = ["CRFLayout", "CRFData", "CRFEngine"]


def _dense(g):
    return np.ascontiguousarray(g.toarray()) if sp.issparse(g) else g


class CRFLayout:
    """The features of a linear-chain CRF (see the module docstring)."""

    def __init__(self, n_labels, n_inputs, state_columns, transition_columns, bias=False):
        self.n_labels = int(n_labels)
        self.n_inputs = int(n_inputs)
        self.state_columns = np.asarray(state_columns, dtype=np.int64)
        self.transition_columns = np.asarray(transition_columns, dtype=np.int64)
        self.bias = bool(bias)
        self.n_state_inputs = self.state_columns.size + self.bias
        self.n_transition_inputs = self.transition_columns.size + self.bias
        L1 = self.n_labels - 1
        self.n_state = L1 * self.n_state_inputs
        self.n_transition = L1 * L1 * self.n_transition_inputs
        self.n_features = self.n_state + self.n_transition

    def is_state_feature(self):
        return np.arange(self.n_features) < self.n_state

    def design(self, X):
        """The state and transition inputs ``gs`` (n, Gs), ``gt`` (n, Gt) of ``X``: dense
        arrays, or CSR matrices when ``X`` is sparse (one-hot window features of a tagger
        have a few non-zeros in thousands of columns, and every product with them then
        costs in proportion to the non-zeros)."""
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=float)
            ones = sp.csr_matrix(np.ones((X.shape[0], int(self.bias))))
            gs = sp.hstack([X[:, self.state_columns], ones], format="csr")
            gt = sp.hstack([X[:, self.transition_columns], ones], format="csr")
            return gs, gt
        X = np.asarray(X, dtype=float)
        ones = np.ones((X.shape[0], int(self.bias)))
        gs = np.ascontiguousarray(np.hstack([X[:, self.state_columns], ones]))
        gt = np.ascontiguousarray(np.hstack([X[:, self.transition_columns], ones]))
        return gs, gt

    def potentials(self, coefs, gs, gt):
        """Log potentials ``U`` (C, n, L) and ``B`` (C, n, L, L) of a batch ``(C, F)``."""
        coefs = np.atleast_2d(np.asarray(coefs, dtype=float))
        C, L, n = coefs.shape[0], self.n_labels, gs.shape[0]
        Ws = coefs[:, :self.n_state].reshape(C * (L - 1), self.n_state_inputs)
        Wt = coefs[:, self.n_state:].reshape(C * (L - 1) ** 2, self.n_transition_inputs)
        U = np.zeros((C, n, L))
        B = np.zeros((C, n, L, L))
        # one matrix product per set (BLAS) for the whole batch
        U[:, :, 1:] = (gs @ Ws.T).reshape(n, C, L - 1).transpose(1, 0, 2)
        B[:, :, 1:, 1:] = (gt @ Wt.T).reshape(n, C, L - 1, L - 1).transpose(1, 0, 2, 3)
        return U, B

    def statistics(self, gs, gt, codes, starts, ends):
        """``S = sum_n f(t_n, x_n)`` of labelled sequences."""
        L = self.n_labels
        onehot = np.zeros((codes.size, L))
        onehot[np.arange(codes.size), codes] = 1.0
        # products with the inputs on the left: a sparse design stays sparse
        S_state = (gs.T @ onehot[:, 1:]).T
        has_next = np.ones(codes.size, dtype=bool)
        has_next[ends - 1] = False
        pos = np.flatnonzero(has_next)
        pair = np.zeros((codes.size, L * L))
        pair[pos, codes[pos] * L + codes[pos + 1]] = 1.0
        S_trans = (gt.T @ pair).T.reshape(L, L, -1)[1:, 1:]
        return np.concatenate([S_state.ravel(), S_trans.ravel()])

    def expected_features(self, node, pair, gs, gt):
        """``sum_n E f`` from label marginals (n, L) and pair marginals (n, L, L) (zero
        rows at the ends of the sequences)."""
        L = self.n_labels
        k_state = (gs.T @ node[:, 1:]).T
        k_trans = (gt.T @ pair.reshape(-1, L * L)).T.reshape(L, L, -1)[1:, 1:]
        return np.concatenate([k_state.ravel(), k_trans.ravel()])

    def feature_names(self, input_names=None):
        names = (list(input_names) if input_names is not None
                 else [f"x{j}" for j in range(self.n_inputs)])
        s_in = [names[j] for j in self.state_columns] + (["1"] if self.bias else [])
        t_in = [names[j] for j in self.transition_columns] + (["1"] if self.bias else [])
        L = self.n_labels
        if L == 2:
            return ([f"state:{a}" for a in s_in] + [f"transition:{a}" for a in t_in])
        out = [f"state[{k}]:{a}" for k in range(1, L) for a in s_in]
        out += [f"transition[{k},{m}]:{a}" for k in range(1, L) for m in range(1, L) for a in t_in]
        return out


@dataclass
class CRFData:
    """A labelled (or unlabelled: ``codes=None``) set of sequences in a layout's form:
    inputs ``gs``, ``gt``, label codes, sequence offsets, the statistics ``S`` and the
    case count ``N`` (total positions)."""

    gs: np.ndarray
    gt: np.ndarray
    codes: np.ndarray | None
    starts: np.ndarray
    ends: np.ndarray
    S: np.ndarray | None
    N: float

    @classmethod
    def build(cls, layout, X, codes, lengths):
        gs, gt = layout.design(X)
        ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
        starts = ends - np.asarray(lengths, dtype=np.int64)
        S = None
        if codes is not None:
            codes = np.ascontiguousarray(codes, dtype=np.int64)
            S = layout.statistics(gs, gt, codes, starts, ends)
        return cls(gs, gt, codes, starts, ends, S, float(gs.shape[0]))

    @property
    def n_sequences(self):
        return self.starts.size


class CRFEngine:
    """Exact inference on the chains of ``data`` for the shared Newton fit and the
    Bethe-Laplace scorer: :meth:`moments` returns ``sum_n ln Z(x_n) / N``,
    ``sum_n E f / N`` and ``sum_n Cov f / N`` (``N = data.N``), so that ``S - N kappa``
    and ``N C + P`` are the gradient and negative Hessian of the conditional log joint.
    On a chain belief propagation is exact and linear response returns the exact
    covariance, so the same engine serves as the "BP" one (converged in one sweep)."""

    name = "exact"

    def __init__(self, layout, data):
        self.layout = layout
        self.data = data

    def _potentials(self, coef):
        U, B = self.layout.potentials(coef, self.data.gs, self.data.gt)
        return U[0], B[0]

    def sequence_log_partition(self, coefs):
        """``ln Z(x_n)`` for a batch ``(C, F)``: (C, n_sequences)."""
        U, B = self.layout.potentials(coefs, self.data.gs, self.data.gt)
        return crf_log_partition_batch(U, B, self.data.starts, self.data.ends)

    def log_partition(self, coefs):
        """``sum_n ln Z(x_n)`` for a batch ``(C, F)``."""
        return self.sequence_log_partition(coefs).sum(axis=1)

    def marginals(self, coef):
        U, B = self._potentials(coef)
        return crf_marginals(U, B, self.data.starts, self.data.ends)

    def viterbi(self, coef):
        U, B = self._potentials(coef)
        return crf_viterbi(U, B, self.data.starts, self.data.ends)

    def value_and_gradient(self, coef):
        """``sum_n ln Z(x_n)`` and ``sum_n E f`` (forward-backward, no covariance)."""
        log_z, node, pair = self.marginals(coef)
        kappa = self.layout.expected_features(node, pair, self.data.gs, self.data.gt)
        return float(log_z.sum()), kappa

    def moments(self, coef, covariance=True):
        N = self.data.N
        info = {"inference": "exact", "bp_converged": True, "bp_iterations": 1}
        if not covariance:
            lz, kappa = self.value_and_gradient(coef)
            return Moments(lz / N, kappa / N, None, info=info)
        U, B = self._potentials(coef)
        # the second-order pass reads dense inputs (its cost, O(n L^2 F^2), dwarfs theirs)
        log_z, kappa, cov = crf_moments(U, B, _dense(self.data.gs), _dense(self.data.gt),
                                        self.data.starts, self.data.ends, True)
        return Moments(float(log_z.sum()) / N, kappa / N, cov / N, info=info)
