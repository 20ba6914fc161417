"""Effective dimension by perturbation of the log-likelihood vector (Beal 2003,
Algorithm 6.2)."""

from __future__ import annotations

import numpy as np

from .._core.evidence.params import take
from .._core.evidence.protocols import has

__all__ = ["effective_dimension"]

#: largest ``J J^T`` (bytes) built for the exact rank; larger problems perturb instead
GRAM_MAX_BYTES = 512 * 2**20


def effective_dimension(model, X, theta, rng, kind="incomplete", R=100, eps=1e-4, rtol=1e-6):
    """Estimate the dimension ``d`` (``kind="incomplete"``) or ``d'`` (``"complete"``).

    Beal (2003), Algorithm 6.2: perturb ``theta`` ``R`` times (at least as many times as
    the unconstrained space has dimensions, since the rank of ``R`` perturbations cannot
    exceed ``R``) by small spherical steps and take the rank of the matrix ``C_ir`` of per-case log-likelihoods.  Two
    refinements of the seed algorithm, both exact in the limit ``eps -> 0``: the steps are
    made in the unconstrained basis, and each column is a central difference
    ``(l_i(phi + eps u_r) - l_i(phi - eps u_r)) / (2 eps)``, which removes the constant
    column (hence no ``- 1``) and the second-order terms, so the singular values beyond the
    rank are ``O(eps^2)`` and a relative threshold ``rtol`` separates them cleanly.

    ``kind="complete"`` needs ``model.random_completion(X, rng)`` and
    ``model.log_complete_joint_per_case(params, Z, X)`` (ln p(s_i, y_i | theta) per case);
    ``"incomplete"`` needs ``model.log_likelihood_per_case``.

    A model with ``per_case_gradient_gram(theta, X, completion=None)`` (the ``(n, n)``
    inner products of its exact per-case gradients in the unconstrained basis) gets the
    rank of those gradients directly when ``n <= D`` (and ``J J^T`` fits in
    ``GRAM_MAX_BYTES``): the same rank in the limit ``eps -> 0``, without the
    ``2 D`` likelihood evaluations, which for a large model (D in the tens of thousands)
    cost hundreds of fits.  The rank of ``n`` per-case gradients cannot exceed ``n``.

    Examples
    --------
    A binary hidden parent of a single five-valued child: the complete-data model has
    the naive count of free parameters, the observed data only four for that child.

    >>> import numpy as np
    >>> from sklearn_vb import VBDiscreteDAG
    >>> from sklearn_vb.datasets import bipartite_structure, make_beal_dag
    >>> from sklearn_vb.scoring import effective_dimension, scoring_model_for
    >>> X = make_beal_dag(1000, random_state=0)
    >>> est = VBDiscreteDAG(*bipartite_structure((1, 0, 0, 0)), random_state=0).fit(X)
    >>> model = scoring_model_for(est)
    >>> data = model.prepare_data(X)
    >>> theta = model.fit_point(data, rng=np.random.default_rng(0))
    >>> rng = np.random.default_rng(0)
    >>> effective_dimension(model, data, theta, rng), model.n_parameters()
    (16, 22)
    >>> effective_dimension(model, data, theta, rng, kind="complete")
    22
    """
    if kind not in ("incomplete", "complete"):
        raise ValueError(f"kind must be 'incomplete' or 'complete', got {kind!r}.")
    space = model.param_space
    phi0 = space.to_unconstrained(take(theta, 0) if _batched(theta) else theta)[0]
    D = phi0.size
    n = int(model.n_cases(X)) if has(model, "n_cases") else None
    if (has(model, "per_case_gradient_gram") and n is not None and n <= D
            and 8.0 * n * n <= GRAM_MAX_BYTES):
        return _gram_rank(model, X, theta, rng, kind, rtol)
    # the rank of R perturbations is at most R: fewer than D would cap the estimate
    R = max(int(R), D)
    U = rng.standard_normal((R, D))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    phis = np.concatenate([phi0 + eps * U, phi0 - eps * U], axis=0)
    params, _ = space.from_unconstrained(phis)
    if kind == "incomplete":
        if not has(model, "log_likelihood_per_case"):
            raise NotImplementedError("effective_dimension needs log_likelihood_per_case")
        L = np.asarray(model.log_likelihood_per_case(params, X), dtype=float)
    else:
        for m in ("random_completion", "log_complete_joint_per_case"):
            if not has(model, m):
                raise NotImplementedError(f"effective_dimension needs {m}")
        Z = model.random_completion(X, rng)
        L = np.asarray(model.log_complete_joint_per_case(params, Z, X), dtype=float)
    G = (L[:R] - L[R:]) / (2.0 * eps)  # (R, n)
    s = _singular_values(G)
    if s.size == 0 or s[0] == 0:
        return 0
    return int(np.sum(s > rtol * s[0]))


def _gram_rank(model, X, theta, rng, kind, rtol):
    """The rank of the exact per-case gradients ``J`` (n, D) from the model's ``J J^T``:
    the limit ``eps -> 0`` of the perturbation estimate when ``n <= D``, where that
    estimate needs ``2 D`` likelihood evaluations.  A singular value ``s`` counts when
    ``s > rtol s_max``, i.e. an eigenvalue of ``J J^T`` above ``rtol^2`` of the largest
    (and above its round-off, about ``n eps``)."""
    single = take(theta, 0) if _batched(theta) else theta
    completion = None
    if kind == "complete":
        if not has(model, "random_completion"):
            raise NotImplementedError("effective_dimension needs random_completion")
        completion = model.random_completion(X, rng)
    G = np.asarray(model.per_case_gradient_gram(single, X, completion=completion), dtype=float)
    lam = np.linalg.eigvalsh(0.5 * (G + G.T))
    if lam.size == 0 or lam[-1] <= 0:
        return 0
    tol = max(rtol * rtol, 100.0 * G.shape[0] * np.finfo(float).eps) * lam[-1]
    return int(np.sum(lam > tol))


def _batched(theta):
    return all(np.ndim(v) >= 1 for v in theta.values())


def _singular_values(G):
    """Singular values of a wide ``G`` (R, n), n >> R, from the R x R triangular factor
    of ``G^T = Q R`` (backward stable, unlike the eigenvalues of ``G G^T``, and several
    times faster than a direct SVD of the wide matrix)."""
    if G.shape[1] > 2 * G.shape[0]:
        G = np.linalg.qr(G.T, mode="r")
    return np.linalg.svd(G, compute_uv=False)
