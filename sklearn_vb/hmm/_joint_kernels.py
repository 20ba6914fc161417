"""Numba kernel of joint (theta, z) annealing on categorical HMMs: forward filtering,
backward sampling of every chain's state path under emissions raised to ``beta``.

The tempered conditional of the states, ``p(z | theta) prod_t p(x_t | z_t, theta)^beta``,
is again a Markov chain: the forward pass filters with the emission factors
``B[k, x_t]^beta``, normalised at every frame, and the states are drawn backwards from
``alpha_t(j) A[j, z_{t+1}]`` (Carter & Kohn 1994; Beal 2003, §3.3 for the forward pass).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["hmm_sample_states_tempered"]


@njit(cache=True, nogil=True)
def hmm_sample_states_tempered(pi, A, log_B, obs, starts, ends, betas, uniforms, out):
    """``out[c, t]``: one exact draw of the state path of every sequence for every chain.

    ``pi`` (C, K), ``A`` (C, K, K) and ``log_B`` (C, K, V) are each chain's parameters;
    ``betas`` (T,) is the exponent of every frame's emission; ``uniforms`` (C, T) drive
    the inverse-CDF draws (one per frame).
    """
    C, K = pi.shape
    width = 0
    for s in range(starts.shape[0]):
        width = max(width, ends[s] - starts[s])
    alpha = np.empty((max(width, 1), K))
    w = np.empty(K)
    for c in range(C):
        for s in range(starts.shape[0]):
            a, b = starts[s], ends[s]
            for t in range(a, b):
                i = t - a
                top = -np.inf
                for k in range(K):  # emission^beta in log space, rescaled by its max
                    w[k] = betas[t] * log_B[c, k, obs[t]] if betas[t] > 0.0 else 0.0
                    top = max(top, w[k])
                tot = 0.0
                for k in range(K):
                    if i == 0:
                        pred = pi[c, k]
                    else:
                        pred = 0.0
                        for j in range(K):
                            pred += alpha[i - 1, j] * A[c, j, k]
                    v = pred * math.exp(w[k] - top)
                    alpha[i, k] = v
                    tot += v
                for k in range(K):
                    alpha[i, k] /= tot
            nxt = -1
            for t in range(b - 1, a - 1, -1):
                i = t - a
                tot = 0.0
                for k in range(K):
                    v = alpha[i, k] if nxt < 0 else alpha[i, k] * A[c, k, nxt]
                    w[k] = v
                    tot += v
                u = uniforms[c, t] * tot
                acc = 0.0
                pick = K - 1
                for k in range(K):
                    acc += w[k]
                    if u < acc:
                        pick = k
                        break
                out[c, t] = pick
                nxt = pick
