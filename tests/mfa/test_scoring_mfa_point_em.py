"""The point EM of the MFA scoring model on small random problems: the rotation of each
loading matrix onto its principal axes (likelihood unchanged, prior maximised over
rotations), and the accelerated EM (SQUAREM extrapolation of ``em_climb`` in the
unconstrained coordinates, the M step followed by that rotation) against the plain EM:
the objective of every point a run continues from never decreases, and the accelerated
run reaches the optimum the plain EM reaches when run long."""

import warnings

import numpy as np
import pytest

from sklearn_vb.mfa._point import principal_axes
from sklearn_vb.mfa import VBMixtureFactorAnalysers
from sklearn_vb.scoring import scoring_model_for
from sklearn_vb._core.evidence.point_em import em_climb


def _problem(seed):
    """Two or three noisy analysers with two factors each on p = 5 or 6 features, n = 30."""
    rng = np.random.default_rng(seed)
    S, p = 2 + seed % 2, 5 + seed % 2
    X = np.vstack([rng.standard_normal((30 // S, 2)) @ rng.standard_normal((2, p))
                   + 3.0 * rng.standard_normal(p) for _ in range(S)])
    X = X + 0.3 * rng.standard_normal(X.shape)
    est = VBMixtureFactorAnalysers(n_components=S, n_factors=2, search=False, max_iter=60,
                                   random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    model = scoring_model_for(est)
    return model, model.prepare_data(X)


def _climb(model, data, theta, kind, accelerated, max_iter, tol):
    calls = []

    def evaluate(th):
        calls.append(1)
        loglik, e = model._point_loglik_and_stats(th, data)
        return model._objective(th, loglik, kind, "softmax"), e.stats

    trace = []
    run = em_climb(theta, evaluate, lambda st, th: model.point_from_stats(st, th, kind, "softmax"),
                   max_iter, tol, space=model.param_space if accelerated else None, trace=trace)
    assert run.n_iter == len(calls)
    return run, np.array(trace)


@pytest.mark.parametrize("kind", ["map", "ml"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_accelerated_point_em_never_decreases_and_reaches_the_plain_optimum(seed, kind):
    model, data = _problem(seed)
    q = model.variational_posterior()
    saved = 0
    for start in range(2):
        theta = q.mean() if start == 0 else q.sample(np.random.default_rng(10 + seed), 1)
        fast, trace = _climb(model, data, theta, kind, True, 5000, 1e-12)
        # every continued point (EM steps and accepted extrapolations) is at least as
        # good as the one before, up to round-off
        assert np.all(np.diff(trace) >= -1e-10 * (1.0 + np.abs(trace[1:])))
        slow, plain_trace = _climb(model, data, theta, kind, False, 100000, 1e-12)
        assert np.all(np.diff(plain_trace) >= -1e-10 * (1.0 + np.abs(plain_trace[1:])))
        assert fast.converged and slow.converged
        assert abs(fast.objective - slow.objective) <= 1e-6 * abs(slow.objective)
        saved += slow.n_iter - fast.n_iter
    assert saved > 0  # the extrapolation was used and paid


def _rotated(lam, rng):
    out = lam.copy()
    K = lam.shape[-1] - 1
    for s in range(lam.shape[0]):
        R, _ = np.linalg.qr(rng.standard_normal((K, K)))
        out[s, :, :K] = lam[s, :, :K] @ R
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_principal_axes_keep_the_likelihood_and_maximise_the_prior(seed):
    model, data = _problem(seed)
    rng = np.random.default_rng(seed)
    w, lam = model.split(model.variational_posterior().mean())
    lam = lam[0] + 0.5 * rng.standard_normal(lam[0].shape)
    axes = principal_axes(lam)
    K = model.K
    np.testing.assert_array_equal(axes[..., K], lam[..., K])  # centres untouched
    theta, on_axes = model.join(w, lam[None]), model.join(w, axes[None])
    np.testing.assert_allclose(model.log_likelihood(on_axes, data),
                               model.log_likelihood(theta, data), rtol=1e-12)
    for s in range(lam.shape[0]):  # the same column space, orthogonal columns
        np.testing.assert_allclose(axes[s, :, :K] @ axes[s, :, :K].T,
                                   lam[s, :, :K] @ lam[s, :, :K].T, atol=1e-12)
        gram = axes[s, :, :K].T @ axes[s, :, :K]
        np.testing.assert_allclose(gram - np.diag(np.diag(gram)), 0.0, atol=1e-12)
    best = float(model.log_prior(on_axes)[0])
    assert best >= float(model.log_prior(theta)[0]) - 1e-9
    for _ in range(20):  # no rotation does better
        other = model.join(w, _rotated(lam, rng)[None])
        assert float(model.log_prior(other)[0]) <= best + 1e-9
    # loadings already on their axes stay where they are (no permutation or sign flip)
    np.testing.assert_allclose(principal_axes(axes), axes, atol=1e-12)


def test_principal_axes_leave_single_factor_loadings_alone():
    lam = np.random.default_rng(0).standard_normal((2, 4, 2))
    np.testing.assert_array_equal(principal_axes(lam), lam)
