"""Subchains of long sequences for online VB of the HMM: sampling them, the buffered
windows around them, their statistics and the automatic buffer.

Foti, Xu, Laird & Fox (2014), "Stochastic variational inference for hidden Markov
models".  When the data are one long sequence (or a few), the minibatches of online VB
(:mod:`._online`) are subchains of ``L`` frames.  The local step of a subchain is the
forward-backward pass over a *window*, the subchain extended by ``B`` buffer frames on
each side (clipped to its sequence): the buffers only condition the subchain's
posterior, which approaches that of the whole chain as ``B`` grows; their statistics
are discarded (the kernel's counted ranges, :func:`~.forward_backward.forward_backward_counted`).

Which statistics a subchain owns.  Every frame t owns its emission statistic and one
"arrival": the start statistic if t is the first frame of its sequence, otherwise the
transition t-1 -> t.  A subchain owns those of its frames, so its window always holds
the frame before the subchain (a one-frame left buffer at least).

Sampling, exactly unbiased.  A sequence of T > L frames offers T + L - 1 positions: the
L-frame stretches starting at -(L - 1), ..., T - 1, clipped to the sequence (shorter
subchains at its ends).  Every frame is then in exactly L positions.  A sequence of
T <= L frames offers L positions that are all the whole sequence, so again every frame
is in L of them.  With P positions in all, each of the n subchains of a step drawn
uniformly (with replacement), the expected statistics of the step are
``n L / P`` times the statistics of all the data, so the factor ``P / (n L)`` makes them
unbiased for every statistic at once: emissions (T frames, ``T / (expected frames
sampled)``), transitions (T - 1 arrivals, ``(T - 1) / (expected transitions
sampled)``) and the start (frame 0 of every sequence).  The ratio with the *realised*
counts (Foti et al.'s ``T / (L n)`` for subchains that are never clipped) would be
biased near the ends of a sequence; the one factor is exact.  In particular q(pi) only
learns from subchains that contain a sequence's first frame, as often as any other
frame is sampled.

A window that begins inside its sequence starts from the stationary distribution of
the posterior-mean transition matrix (the marginal of a frame far from the start), not
from q(pi), which describes only the first frame.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._online import sequence_frames
from ._state import HMMStats
from ._vbem import expected_log_params
from ._blas_threads import forward_backward_blas
from .forward_backward import forward_backward_counted

__all__ = ["BUFFER_TOL", "Subchains", "WindowPass", "auto_buffer_pass", "n_positions",
           "positions_subchains", "sample_subchains", "stationary", "window_pass"]

#: ``buffer_length="auto"``: the buffer is doubled until the state marginals at the
#: edges of every subchain change by less than this (max abs over states and subchains)
BUFFER_TOL = 1e-4

#: ``buffer_length="auto"``: the first buffer tried
BUFFER_START = 8


class Subchains(NamedTuple):
    """Subchains of a minibatch: frames ``first[i] .. stop[i] - 1`` (indices into the
    concatenated frames) of sequence ``seq[i]``, and the factor that makes their
    statistics unbiased for those of all the data."""

    seq: np.ndarray
    first: np.ndarray
    stop: np.ndarray
    scale: float


def _positions_per_sequence(lengths, subchain_length):
    lengths = np.asarray(lengths, dtype=np.int64)
    return np.where(lengths > subchain_length, lengths + subchain_length - 1, subchain_length)


def n_positions(lengths, subchain_length):
    """P, the number of subchain positions of sequences of ``lengths`` (see the module
    docstring)."""
    return int(_positions_per_sequence(lengths, subchain_length).sum())


def positions_subchains(positions, starts, lengths, subchain_length, n_drawn=None):
    """The subchains at ``positions`` (integers in [0, P)), scaled as a minibatch of
    ``n_drawn`` (default: their number) uniform draws."""
    L = int(subchain_length)
    lengths = np.asarray(lengths, dtype=np.int64)
    per_seq = _positions_per_sequence(lengths, L)
    bounds = np.cumsum(per_seq)
    positions = np.asarray(positions, dtype=np.int64)
    seq = np.searchsorted(bounds, positions, side="right")
    offset = positions - (bounds[seq] - per_seq[seq])
    T = lengths[seq]
    long = T > L
    begin = np.where(long, offset - (L - 1), 0)
    first = np.maximum(begin, 0)
    stop = np.where(long, np.minimum(begin + L, T), T)
    base = np.asarray(starts, dtype=np.int64)[seq]
    n = positions.shape[0] if n_drawn is None else int(n_drawn)
    return Subchains(seq, base + first, base + stop, float(bounds[-1]) / (n * L))


def sample_subchains(starts, lengths, subchain_length, n_subchains, rng):
    """``n_subchains`` subchains at positions drawn uniformly with replacement from
    ``rng`` (a RandomState)."""
    P = n_positions(lengths, subchain_length)
    return positions_subchains(rng.randint(0, P, size=n_subchains), starts, lengths,
                               subchain_length)


def stationary(transmat_counts):
    """Stationary distribution of the row-normalised transition counts (the left
    eigenvector of eigenvalue 1, solved as a linear system)."""
    A = transmat_counts / transmat_counts.sum(axis=1, keepdims=True)
    K = A.shape[0]
    # pi (A - I) = 0 with sum(pi) = 1: replace one equation by the normalisation
    M = (A - np.eye(K)).T
    M[-1] = 1.0
    rhs = np.zeros(K)
    rhs[-1] = 1.0
    try:
        p = np.linalg.solve(M, rhs)
    except np.linalg.LinAlgError:  # reducible chain: any start is as good
        return np.full(K, 1.0 / K)
    p = np.clip(p, 1e-300, None)
    return p / p.sum()


class WindowPass(NamedTuple):
    """The local step of a minibatch of subchains with buffers."""

    stats: HMMStats  # statistics owned by the subchains, unscaled
    log_norm: float  # sum over subchain frames of ln p(x_t | x of the window before t)
    marginals: np.ndarray  # (n_window_frames, K) q(s_t), zero outside the subchains
    frames: np.ndarray  # (n_window_frames,) frame of the data of every window frame
    first: np.ndarray  # (n,) first subchain frame of every window, in window frames
    last: np.ndarray  # (n,) last subchain frame of every window, in window frames


def window_pass(family, posterior, prior, data, sub, buffer_length):
    """Forward-backward on the windows of the subchains ``sub`` with buffers of
    ``buffer_length`` frames, under the exp E[ln theta] of ``posterior``.

    All windows go through the kernel in one call, with a per-frame emission table so
    that the kernel's emission counts are the marginals of every window frame."""
    B = int(buffer_length)
    seq_first = data.starts[sub.seq]
    seq_stop = data.ends[sub.seq]
    w0 = np.maximum(sub.first - max(B, 1), seq_first)  # the arrival of the first frame
    w1 = np.minimum(sub.stop + B, seq_stop)
    frames, lens = sequence_frames(w0, w1 - w0, np.arange(w0.shape[0]))
    new_starts = np.cumsum(lens) - lens
    new_ends = new_starts + lens
    c0 = new_starts + (sub.first - w0)
    c1 = new_starts + (sub.stop - w0)
    X = data.X[frames]
    Lpi, LA, LE = expected_log_params(family, posterior)
    table = np.array(family.frame_log_table(LE, X), dtype=float, order="C")
    # a window that begins inside its sequence starts from the stationary distribution:
    # its first frame has a table row of its own, which takes the difference of starts
    inside = w0 > seq_first
    if np.any(inside):
        log_stat = np.log(stationary(posterior.transmat))
        table[new_starts[inside]] += log_stat - Lpi
    rows = np.arange(frames.shape[0], dtype=np.int64)
    with forward_backward_blas(table, rows, new_starts, new_ends):
        out = forward_backward_counted(Lpi, LA, table, rows, new_starts, new_ends, c0, c1, True)
    _, frame_log_norm, start, trans, marginals = out
    # the per-frame form of the emission statistics (the kernel's counts of a table
    # with one row per frame, as in stats_from_vbe for continuous emissions)
    stats = HMMStats(start=start, trans=trans,
                     emission=family.stats(marginals, X, prior.emission, LE))
    inner = np.zeros(frames.shape[0], dtype=bool)
    inner[_ranges(c0, c1)] = True
    return WindowPass(stats, float(frame_log_norm[inner].sum()), marginals, frames, c0,
                      c1 - 1)


def _ranges(c0, c1):
    """Concatenated ``arange(c0[i], c1[i])``."""
    lens = c1 - c0
    return np.repeat(c0 - (np.cumsum(lens) - lens), lens) + np.arange(int(lens.sum()))


def auto_buffer_pass(family, posterior, prior, data, sub, buffer_start):
    """:func:`window_pass` with the buffer grown from ``buffer_start`` by doubling until
    the marginals at the first and last frame of every subchain move by less than
    :data:`BUFFER_TOL` (Foti et al. 2014, section 4) or the windows are whole sequences.
    Returns the pass with the larger buffer of the last comparison and the smaller one
    (where the next step starts)."""
    B = max(int(buffer_start), 1)
    # beyond this every window is its whole sequence
    B_max = int(max(np.max(sub.first - data.starts[sub.seq]),
                    np.max(data.ends[sub.seq] - sub.stop), 1))
    prev = window_pass(family, posterior, prior, data, sub, min(B, B_max))
    while True:
        if B >= B_max:
            return prev, B_max
        B2 = min(2 * B, B_max)
        cur = window_pass(family, posterior, prior, data, sub, B2)
        change = max(np.max(np.abs(cur.marginals[cur.first] - prev.marginals[prev.first])),
                     np.max(np.abs(cur.marginals[cur.last] - prev.marginals[prev.last])))
        if change < BUFFER_TOL:
            return cur, B
        B, prev = B2, cur
