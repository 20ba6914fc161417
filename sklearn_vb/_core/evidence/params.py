"""Parameter spaces and the unconstrained basis in which the samplers move.

A parameter batch (``Params``) is a ``dict`` mapping block names to arrays with a leading
batch axis of size ``C``: block ``b`` of shape ``s`` is stored as ``(C,) + s``.

The unconstrained map ``phi -> theta`` per constraint:

* ``"real"``: identity, ``ln|det| = 0``;
* ``"positive"``: ``theta = exp(phi)``, ``ln|det| = sum phi``;
* ``"simplex"`` (last axis, length ``K >= 1``): additive log-ratio with the last coordinate as
  reference, ``theta_k = exp(phi_k) / (1 + sum_{j<K} exp(phi_j))``,
  ``theta_K = 1 / (1 + sum_j exp(phi_j))``, ``phi in R^{K-1}``, and
  ``ln|det d theta_{1:K-1} / d phi| = sum_{k=1}^{K} ln theta_k``.

The ``K``-logit softmax is deliberately not used: its redundant coordinate makes the
Jacobian singular and Metropolis moves in it non-reversible.  A simplex of length 1 (for
example the initial distribution of a one-state HMM) is the constant 1: zero free
coordinates, log-density 0 and log-Jacobian 0, so it contributes nothing to any score.  Densities of simplex
blocks are always with respect to Lebesgue measure on the first ``K-1`` coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ParamBlock", "ParamSpace", "batch_size", "take", "concat_params", "where_params"]

CONSTRAINTS = ("real", "positive", "simplex")


@dataclass(frozen=True)
class ParamBlock:
    """One named block of parameters.

    Parameters
    ----------
    name : str
    shape : tuple of int
        Event shape of one parameter value (without the batch axis).  For a
        ``"simplex"`` block the last axis is the simplex (e.g. ``(K, V)`` = K rows).
    constraint : {"real", "positive", "simplex"}

    Examples
    --------
    Two rows of three probabilities have four free coordinates:

    >>> import numpy as np
    >>> from sklearn_vb.scoring import ParamBlock
    >>> block = ParamBlock("transmat", (2, 3), "simplex")
    >>> block.size, block.dim
    (6, 4)
    >>> value = np.array([[[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]])     # a batch of one
    >>> phi = block.to_unconstrained(value)
    >>> bool(np.allclose(block.from_unconstrained(phi)[0], value))
    True
    """

    name: str
    shape: tuple
    constraint: str = "real"

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        if self.constraint not in CONSTRAINTS:
            raise ValueError(
                f"constraint of block {self.name!r} must be one of {CONSTRAINTS}, "
                f"got {self.constraint!r}."
            )
        if any(s < 1 for s in self.shape):
            raise ValueError(f"shape of block {self.name!r} must be positive, got {self.shape}.")
        if self.constraint == "simplex" and len(self.shape) == 0:
            raise ValueError(
                f"simplex block {self.name!r} needs a last (simplex) axis, got shape {self.shape}."
            )

    @property
    def constant(self):
        """True for a simplex of length 1: the value is fixed at 1 (no free coordinate,
        zero-dimensional; its density is taken as 1 and its Jacobian as 1)."""
        return self.constraint == "simplex" and self.shape[-1] == 1

    @property
    def n_rows(self):
        """Number of simplex rows (product of the leading axes); 1 for a vector."""
        return int(np.prod(self.shape[:-1])) if self.shape else 1

    @property
    def size(self):
        """Number of constrained values."""
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def dim(self):
        """Number of unconstrained (free) coordinates."""
        if self.constraint == "simplex":
            return self.n_rows * (self.shape[-1] - 1)
        return self.size

    # -- per-block transforms (batch axis first) -------------------------------------
    def to_unconstrained(self, value):
        """``phi`` of shape ``(C, dim)`` for a batch ``value`` of shape ``(C,) + shape``:
        the value itself (real), its logarithm (positive), or the log-ratios to the last
        entry of each row (simplex)."""
        value = np.asarray(value, dtype=float)
        C = value.shape[0]
        if self.constraint == "real":
            return value.reshape(C, -1).copy()
        if self.constraint == "positive":
            with np.errstate(divide="ignore"):
                return np.log(value).reshape(C, -1)
        with np.errstate(divide="ignore"):
            logv = np.log(value)
        phi = logv[..., :-1] - logv[..., -1:]
        return phi.reshape(C, -1)

    def from_unconstrained(self, phi):
        """``(value, log_det_jac)``: the inverse of :meth:`to_unconstrained` for ``phi``
        of shape ``(C, dim)``, and ``ln|det d theta / d phi|`` of shape ``(C,)``."""
        phi = np.asarray(phi, dtype=float)
        C = phi.shape[0]
        if self.constraint == "real":
            return phi.reshape((C,) + self.shape).copy(), np.zeros(C)
        if self.constraint == "positive":
            return np.exp(phi).reshape((C,) + self.shape), np.sum(phi, axis=1)
        K = self.shape[-1]
        p = phi.reshape((C,) + self.shape[:-1] + (K - 1,))
        full = np.concatenate([p, np.zeros(p.shape[:-1] + (1,))], axis=-1)
        m = np.max(full, axis=-1, keepdims=True)
        log_theta = full - (m + np.log(np.sum(np.exp(full - m), axis=-1, keepdims=True)))
        theta = np.exp(log_theta)
        logdet = np.sum(log_theta.reshape(C, -1), axis=1)
        return theta, logdet

    def pullback(self, value, grad):
        """Vector-Jacobian product: the gradient in ``phi`` (C, dim) of a function whose
        gradient in the constrained ``value`` is ``grad`` (both of shape (C,) + shape).

        For a simplex row the function is read as a function of all ``K`` entries
        (``d theta_k / d phi_j = theta_k (delta_kj - theta_j)``), so ``grad`` may be the
        gradient of any smooth extension off the simplex, e.g. ``N_k / theta_k``.
        """
        value = np.asarray(value, dtype=float)
        grad = np.asarray(grad, dtype=float)
        C = value.shape[0]
        if self.constraint == "real":
            return grad.reshape(C, -1).copy()
        if self.constraint == "positive":
            return (value * grad).reshape(C, -1)
        mean = np.sum(value * grad, axis=-1, keepdims=True)
        return (value[..., :-1] * (grad[..., :-1] - mean)).reshape(C, -1)

    def log_det_jacobian_gradient(self, value):
        """Gradient in ``phi`` (C, dim) of this block's ``ln|det d theta / d phi|``:
        0 (real), 1 (positive), ``1 - K theta_j`` (simplex, from ``sum_k ln theta_k``)."""
        value = np.asarray(value, dtype=float)
        C = value.shape[0]
        if self.constraint == "real":
            return np.zeros((C, self.dim))
        if self.constraint == "positive":
            return np.ones((C, self.dim))
        return (1.0 - self.shape[-1] * value[..., :-1]).reshape(C, -1)

    def check_value(self, value, C=None):
        """``value`` as a float array; ValueError unless its shape is ``(C,) + shape``."""
        value = np.asarray(value, dtype=float)
        if value.shape[1:] != self.shape:
            raise ValueError(
                f"params[{self.name!r}] must have shape (C,) + {self.shape}, got {value.shape}."
            )
        return value


class ParamSpace:
    """An ordered list of :class:`ParamBlock` with the unconstrained transforms described
    in the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.scoring import ParamBlock, ParamSpace
    >>> space = ParamSpace([ParamBlock("weights", (3,), "simplex"),
    ...                     ParamBlock("rate", (2,), "positive")])
    >>> space.size                                   # 2 + 2 free coordinates
    4
    >>> params, log_det = space.from_unconstrained(np.zeros((1, 4)))
    >>> params["weights"].round(3).tolist(), params["rate"].tolist()
    ([[0.333, 0.333, 0.333]], [[1.0, 1.0]])
    """

    def __init__(self, blocks):
        blocks = list(blocks)
        names = [b.name for b in blocks]
        if len(set(names)) != len(names):
            raise ValueError(f"block names must be unique, got {names}.")
        self.blocks = blocks
        self._by_name = {b.name: b for b in blocks}
        offs = np.cumsum([0] + [b.dim for b in blocks])
        self.slices = {b.name: slice(int(offs[i]), int(offs[i + 1])) for i, b in enumerate(blocks)}
        coffs = np.cumsum([0] + [b.size for b in blocks])
        self.flat_slices = {
            b.name: slice(int(coffs[i]), int(coffs[i + 1])) for i, b in enumerate(blocks)
        }

    def __repr__(self):
        inner = ", ".join(f"{b.name}{b.shape}:{b.constraint}" for b in self.blocks)
        return f"ParamSpace({inner})"

    def __getitem__(self, name):
        return self._by_name[name]

    @property
    def names(self):
        return [b.name for b in self.blocks]

    @property
    def size(self):
        """``D``, the number of unconstrained coordinates."""
        return sum(b.dim for b in self.blocks)

    @property
    def flat_size(self):
        return sum(b.size for b in self.blocks)

    def check(self, params):
        """Validate a batch; returns it with float arrays and its batch size."""
        if not isinstance(params, dict):
            raise ValueError(f"params must be a dict of arrays, got {type(params).__name__}.")
        missing = [n for n in self.names if n not in params]
        if missing:
            raise ValueError(f"params is missing blocks {missing}.")
        out = {b.name: b.check_value(params[b.name]) for b in self.blocks}
        sizes = {v.shape[0] for v in out.values()}
        if len(sizes) != 1:
            raise ValueError(f"all blocks of params must share one batch size, got {sizes}.")
        return out

    def to_unconstrained(self, params):
        """``phi`` of shape ``(C, D)``."""
        return np.concatenate(
            [b.to_unconstrained(params[b.name]) for b in self.blocks], axis=1
        )

    def from_unconstrained(self, phi):
        """``(params, log_det_jac)`` with ``log_det_jac = ln|det d theta / d phi|`` of shape (C,)."""
        phi = np.atleast_2d(np.asarray(phi, dtype=float))
        if phi.shape[1] != self.size:
            raise ValueError(f"phi must have {self.size} columns, got shape {phi.shape}.")
        params = {}
        logdet = np.zeros(phi.shape[0])
        for b in self.blocks:
            v, ld = b.from_unconstrained(phi[:, self.slices[b.name]])
            params[b.name] = v
            logdet = logdet + ld
        return params, logdet

    def log_det_jacobian(self, params):
        """``ln|det d theta / d phi|`` evaluated at constrained values."""
        out = 0.0
        for b in self.blocks:
            v = np.asarray(params[b.name], dtype=float)
            C = v.shape[0]
            if b.constraint == "positive":
                out = out + np.sum(np.log(v).reshape(C, -1), axis=1)
            elif b.constraint == "simplex":
                out = out + np.sum(np.log(v).reshape(C, -1), axis=1)
            else:
                out = out + np.zeros(C)
        return out

    def gradient_to_unconstrained(self, params, grads, log_det=True):
        """The gradient in ``phi`` (C, D) of ``f(theta(phi)) [+ ln|det d theta / d phi|]``
        from the gradient ``grads`` (block name -> array like ``params``) of ``f`` in the
        constrained values: the chain rule through every block's transform, plus (with
        ``log_det=True``) the gradient of the log-Jacobian."""
        parts = []
        for b in self.blocks:
            g = b.pullback(params[b.name], grads[b.name])
            if log_det:
                g = g + b.log_det_jacobian_gradient(params[b.name])
            parts.append(g)
        return np.concatenate(parts, axis=1)

    def flatten(self, params):
        """Constrained values concatenated, shape ``(C, flat_size)``."""
        return np.concatenate(
            [np.asarray(params[b.name], dtype=float).reshape(len(params[b.name]), -1)
             for b in self.blocks],
            axis=1,
        )

    def unflatten(self, flat):
        """The inverse of :meth:`flatten`: a dict of blocks from ``(C, flat_size)`` values."""
        flat = np.atleast_2d(np.asarray(flat, dtype=float))
        C = flat.shape[0]
        return {b.name: flat[:, self.flat_slices[b.name]].reshape((C,) + b.shape).copy()
                for b in self.blocks}


def batch_size(params):
    """The common leading dimension of a parameter batch."""
    return int(next(iter(params.values())).shape[0])


def take(params, idx):
    """Sub-batch ``params[idx]`` (idx an int, slice, or index array); keeps the batch axis."""
    if isinstance(idx, (int, np.integer)):
        idx = [int(idx)]
    return {k: np.asarray(v)[idx] for k, v in params.items()}


def concat_params(batches):
    """Concatenate parameter batches along the batch axis."""
    batches = list(batches)
    return {k: np.concatenate([b[k] for b in batches], axis=0) for k in batches[0]}


def where_params(mask, new, old):
    """Per-chain select: ``new`` where ``mask`` (shape (C,)) else ``old``."""
    out = {}
    for k in old:
        m = mask.reshape((-1,) + (1,) * (np.ndim(old[k]) - 1))
        out[k] = np.where(m, new[k], old[k])
    return out
