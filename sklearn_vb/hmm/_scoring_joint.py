"""Joint (theta, z) annealing on the categorical HMM: the latent-level methods of
:mod:`sklearn_vb.scoring._joint_anneal`.

Latents are the state of every frame, ``Z`` (C, T).  Only the emission factors form the
tempered ``p(X | z, theta)``; ``p(z | theta)`` is the Markov chain of initial and
transition rows.  The states are drawn by tempered forward filtering, backward sampling
(compiled, all chains at once), the rows from their conjugate Dirichlets with the
emission counts times ``beta``.  The prior draw of the states needs the sequence
boundaries, which :meth:`prepare_data` of the host class records in ``_sequence_bounds``
(starts, ends).
"""

from __future__ import annotations

import numpy as np

from .._core.distributions import dirichlet_sample
from ._joint_kernels import hmm_sample_states_tempered
from ._state import SymbolSequences

__all__ = ["JointCategoricalHMMMixin"]


def _frame_betas(beta, T):
    """The tempering exponent of every frame (``beta`` a number or one per frame)."""
    b = np.ascontiguousarray(np.broadcast_to(np.asarray(beta, dtype=float), (T,)))
    if np.any(~(b >= 0)):
        raise ValueError("beta must be >= 0.")
    return b


class JointCategoricalHMMMixin:
    """Latent-level methods for a categorical HMM scoring model with ``K`` states,
    ``V`` symbols, Dirichlet ``prior_alpha`` blocks ``pi``, ``A``, ``B`` and data
    prepared as :class:`~sklearn_vb.hmm._state.SymbolSequences`."""

    def sample_latents_prior(self, params, n, rng):
        """State paths from ``p(z | theta)`` for the sequences of the last prepared data."""
        if getattr(self, "_known_states_given", False):
            raise ValueError("anneal='joint' on a VBHiddenMarkov does not take known states "
                             "(states=); use the default anneal='theta', which sums over "
                             "the state paths that agree with them.")
        bounds = getattr(self, "_sequence_bounds", None)
        if bounds is None or int(bounds[1].max()) != int(n):
            raise ValueError("sample_latents_prior needs the sequences of the data prepared "
                             "last (prepare_data) and n equal to their number of frames.")
        data = SymbolSequences(symbols=np.zeros(int(n), dtype=np.int64), starts=bounds[0],
                               ends=bounds[1])
        return self.sample_latents(params, data, rng, 0.0)

    def sample_latents(self, params, X, rng, beta=1.0):
        """Every chain's state path drawn exactly from
        ``p(z | theta) prod_t p(x_t | z_t, theta)^beta_t``: (C, T); ``beta`` is a number
        or one exponent per frame."""
        pi = np.ascontiguousarray(params["pi"], dtype=float)
        C, T = pi.shape[0], X.symbols.size
        out = np.empty((C, T), dtype=np.int64)
        with np.errstate(divide="ignore"):
            log_B = np.log(self._emission_probs(params["B"], X))
        hmm_sample_states_tempered(pi, np.ascontiguousarray(params["A"], dtype=float),
                                   np.ascontiguousarray(log_B), X.symbols,
                                   X.starts, X.ends, _frame_betas(beta, T),
                                   rng.random((C, T)), out)
        return out

    def log_complete_likelihood_per_case(self, params, Z, X):
        """``ln p(x_t | z_t, theta)``, the emission factors: (C, T) (0 for a missing
        symbol)."""
        with np.errstate(divide="ignore"):
            log_B = np.log(self._emission_probs(params["B"], X))
        C = log_B.shape[0]
        return log_B[np.arange(C)[:, None], np.asarray(Z, dtype=np.int64), X.symbols[None, :]]

    def sample_params(self, Z, X, rng, beta=1.0):
        """Initial, transition and emission rows from their conjugate Dirichlets given the
        state paths, drawn from ``p(theta) p(z | theta) p(X | z, theta)^beta`` (``beta`` a
        number or one exponent per frame)."""
        Z = np.asarray(Z, dtype=np.int64)
        C, T = Z.shape
        K, V = self.K, self.V
        first = np.zeros(T, dtype=bool)
        first[X.starts] = True
        chain = np.arange(C)[:, None]
        n_pi = np.bincount((chain * K + Z[:, first]).ravel(), minlength=C * K).reshape(C, K)
        inner = ~first[1:]  # transitions inside a sequence
        pair = (chain * K + Z[:, :-1][:, inner]) * K + Z[:, 1:][:, inner]
        n_A = np.bincount(pair.ravel(), minlength=C * K * K).reshape(C, K, K)
        # a missing symbol (V) is counted in an extra column, then dropped
        Vx = V + int(self._has_missing(X))
        emit = (chain * K + Z) * Vx + X.symbols[None, :]
        frame_w = np.broadcast_to(_frame_betas(beta, T), (C, T)).ravel()
        n_B = np.bincount(emit.ravel(), weights=frame_w,
                          minlength=C * K * Vx).reshape(C, K, Vx)[:, :, :V]
        a = self.prior_alpha
        return {"pi": dirichlet_sample(a["pi"][None] + n_pi, rng),
                "A": dirichlet_sample(a["A"][None] + n_A, rng),
                "B": dirichlet_sample(a["B"][None] + n_B, rng)}
