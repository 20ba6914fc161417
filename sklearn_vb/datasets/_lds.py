"""Data generators for linear dynamical system tests and examples (Beal 2003, §5.4)."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from ..lds.kalman import simulate_lds

__all__ = ["make_lds", "make_lds_params", "make_lds_input_experiment"]


def _random_rotation(rng, k):
    Q, R = np.linalg.qr(rng.standard_normal((k, k)))
    return Q * np.sign(np.diag(R))


def make_lds_params(n_states=3, n_outputs=8, n_inputs=0, *, eigenvalues=None,
                    noise_std=1.0, random_state=None):
    """Random LDS parameters in the style of the thesis's synthetic experiments.

    A has the given (real) eigenvalues, default evenly spaced in [0.65, 0.9], and a
    random rotation (A = V diag(eig) V'); the entries of C are drawn from a mixture
    of two unit-variance Gaussians at +-2 (kept away from zero, so every state
    dimension contributes to the outputs); B and D have N(0, 1) entries; the output
    noise has standard deviation ``noise_std``.

    Returns a dict with ``A, B, C, D, R`` (R diagonal covariance as a vector).

    Examples
    --------
    >>> from sklearn_vb.datasets import make_lds_params
    >>> params = make_lds_params(2, 4, 0, random_state=0)
    >>> sorted(params)[:5], params["A"].shape, params["C"].shape
    (['A', 'B', 'C', 'D', 'R'], (2, 2), (4, 2))
    """
    rng = check_random_state(random_state)
    k, p, d = n_states, n_outputs, n_inputs
    if eigenvalues is None:
        eigenvalues = np.linspace(0.65, 0.9, k) if k > 1 else np.array([0.8])
    eigenvalues = np.asarray(eigenvalues, dtype=float)
    if eigenvalues.shape != (k,):
        raise ValueError(f"eigenvalues must have n_states={k} entries.")
    V = _random_rotation(rng, k)
    A = (V * eigenvalues) @ V.T
    signs = np.where(rng.random_sample((p, k)) < 0.5, -2.0, 2.0)
    C = signs + rng.standard_normal((p, k))
    B = rng.standard_normal((k, d))
    D = rng.standard_normal((p, d))
    R = np.full(p, float(noise_std) ** 2)
    return {"A": A, "B": B, "C": C, "D": D, "R": R}


def make_lds(params, lengths, U=None, *, random_state=None):
    """Sample sequences from x_t = A x_{t-1} + B u_t + w_t, y_t = C x_t + D u_t + v_t
    with ``w_t ~ N(0, I)``, ``v_t ~ N(0, diag(R))`` and ``x_0 ~ N(0, I)``.

    Returns ``(X, states)`` of shapes (sum(lengths), p) and (sum(lengths), k).

    Examples
    --------
    >>> from sklearn_vb.datasets import make_lds, make_lds_params
    >>> X, states = make_lds(make_lds_params(2, 4, 0, random_state=0), [100, 50], random_state=0)
    >>> X.shape, states.shape
    ((150, 4), (150, 2))
    """
    rng = check_random_state(random_state)
    lengths = np.atleast_1d(np.asarray(lengths, dtype=np.int64))
    if np.any(lengths < 1):
        raise ValueError("lengths must be positive.")
    A, C = np.asarray(params["A"], float), np.asarray(params["C"], float)
    B = np.asarray(params.get("B", np.zeros((A.shape[0], 0))), float)
    D = np.asarray(params.get("D", np.zeros((C.shape[0], 0))), float)
    N = int(lengths.sum())
    k, p = A.shape[0], C.shape[0]
    if U is None:
        U = np.zeros((N, B.shape[1]))
    U = np.asarray(U, dtype=float)
    if U.shape != (N, B.shape[1]):
        raise ValueError(f"U must have shape ({N}, {B.shape[1]}); got {U.shape}.")
    ends = np.cumsum(lengths)
    starts = ends - lengths
    x0 = rng.standard_normal((len(lengths), k))
    w = rng.standard_normal((N, k))
    v = rng.standard_normal((N, p))
    states, X = simulate_lds(
        np.ascontiguousarray(A), np.ascontiguousarray(U @ B.T), np.ascontiguousarray(C),
        np.ascontiguousarray(U @ D.T), np.sqrt(np.asarray(params["R"], float)), x0, w, v,
        starts, ends,
    )
    return X, states


def make_lds_input_experiment(n_samples=100, *, n_outputs=4, random_state=None):
    """The input-driven experiment of thesis §5.4.2.

    k = 2 states (A eigenvalues 0.65, 0.7), p = 4 outputs, three inputs: two
    phase-lagged sinusoids of period 50 and U(0, 1) noise.  B = 0 (inputs do not drive
    the states); the first two columns of D are U(-10, 10), the third is zero.

    Returns ``(X, U, states, params)``.

    Examples
    --------
    >>> from sklearn_vb.datasets import make_lds_input_experiment
    >>> X, U, states, params = make_lds_input_experiment(50, random_state=0)
    >>> X.shape, U.shape, states.shape, sorted(params)
    ((50, 4), (50, 3), (50, 2), ['A', 'B', 'C', 'D', 'R'])
    """
    rng = check_random_state(random_state)
    params = make_lds_params(2, n_outputs, 0, eigenvalues=[0.65, 0.7], random_state=rng)
    t = np.arange(n_samples)
    U = np.column_stack([
        np.sin(2 * np.pi * t / 50.0),
        np.sin(2 * np.pi * t / 50.0 + np.pi / 2),
        rng.random_sample(n_samples),
    ])
    params["B"] = np.zeros((2, 3))
    D = rng.uniform(-10, 10, size=(n_outputs, 3))
    D[:, 2] = 0.0
    params["D"] = D
    X, states = make_lds(params, [n_samples], U, random_state=rng)
    return X, U, states, params
